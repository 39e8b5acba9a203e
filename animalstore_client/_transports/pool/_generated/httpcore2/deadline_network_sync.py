# Generated from _transports/pool/deadline_network_async.py by scripts/unasync.py, over httpcore2 for the httpx2 backend: do not edit;
# regenerate with `python scripts/unasync.py`.
"""A network backend for httpcore2 that holds every socket operation to the call's total deadline.

Used only under the SDK's own httpx client (see ``HttpxTransport``). It also
knows the socket under each connection it opened (`_transports.sockets`): a
forked child closes its copies of them, and a pool whose event loop ended
closes them without the loop.
"""

from __future__ import annotations

import ssl
from typing import Any

import httpcore2

from animalstore_client._core.deadline import within
from animalstore_client._core.exchange import RUNNING, WRITING, running_deadline
from animalstore_client._transports.pool.wait import connect_tcp_sync
from animalstore_client._transports.sockets import Sockets, opening_sync

__all__ = ["DeadlineBackend", "tls_holds_unread"]

_NO_TIMEOUT: float | None = None
_CONNECT_ERRORS = (httpcore2.ConnectTimeout, httpcore2.ConnectError)
"""What a name lookup that does not answer in time, or fails, raises (the sync side looks names up itself)."""


class _DeadlineStream(httpcore2.NetworkStream):
    """A connection whose every read, write and handshake ends by the call's deadline.

    httpcore2 applies ``timeout`` per socket operation, so a server trickling a
    byte a second, or sending ``100 Continue`` for ever, never trips it; here
    each operation gets at most what is left of the deadline, and none starts
    once it has passed.
    """

    __slots__ = ("_deadline", "_sockets", "_stream", "unread_since_write")

    def __init__(self, stream: httpcore2.NetworkStream, sockets: Sockets) -> None:
        self._stream = stream
        self._sockets = sockets
        """The backend's sockets, this connection's among them (`DeadlineBackend.abandon`, and a fork)."""
        sockets.add(stream.get_extra_info("socket"))
        self.unread_since_write = False
        """Whether nothing was read since the last write: an answer now came before the request did."""
        self._deadline: float | None = None
        """The deadline of the call whose request was written last: what every read until the next write is for."""

    def read(self, max_bytes: int, timeout: float | None = _NO_TIMEOUT) -> bytes:
        # An HTTP/1.1 connection reads only the answer to the request it wrote last: that call's deadline, kept
        # at the write, holds the body's reads too, so a body is read with no context set around each chunk.
        self.unread_since_write = False
        return self._stream.read(max_bytes, within(timeout, httpcore2.ReadTimeout, self._deadline))

    def write(self, buffer: bytes, timeout: float | None = _NO_TIMEOUT) -> None:
        self.unread_since_write = True
        exchange = RUNNING.get()
        deadline = None
        if exchange is not None:
            # From the first byte the service may act on it; past the deadline, nothing is written. An empty write
            # (h11's end of a message without a body) writes no byte; a proxy's CONNECT (httpcore2 writes a request's
            # head in one piece, and the SDK never sends that method) goes to the proxy, not the service.
            if exchange.phase < WRITING and buffer and buffer[:8] != b"CONNECT ":
                exchange.first_byte()
            deadline = exchange.deadline
        self._deadline = deadline
        self._stream.write(buffer, within(timeout, httpcore2.WriteTimeout, deadline))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = _NO_TIMEOUT,
    ) -> httpcore2.NetworkStream:
        try:
            timeout = within(timeout, httpcore2.ConnectTimeout, running_deadline())
        except httpcore2.ConnectTimeout:
            self.close()  # nothing else holds the TCP connection yet to close it
            raise
        # A fork waits until the TLS socket is known: the sync side's `ssl.SSLSocket` took the plain socket's
        # descriptor, so the plain one, known already, no longer closes the child's copy.
        with opening_sync():
            stream = self._stream.start_tls(ssl_context, server_hostname, timeout)
            # The TLS stream over it is the connection now; its socket may be another object (the sync side's
            # `ssl.SSLSocket`, which took the plain socket's descriptor).
            return _DeadlineStream(stream, self._sockets)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # Asked of an idle connection before it is reused (httpcore2's has_expired): bytes received since
            # its answer make it unfit, wherever they wait. The network stream answers for the socket (and the
            # SDK's asyncio backend for what its protocol holds); a TLS layer may hold more, read off the socket
            # with the answer's last record (anyio's, under trio), which the socket no longer shows.
            return bool(self._stream.get_extra_info("is_readable")) or tls_holds_unread(
                self._stream.get_extra_info("ssl_object")
            )
        return self._stream.get_extra_info(info)


def tls_holds_unread(ssl_object: object) -> bool:
    """Whether an idle connection's TLS layer holds bytes received and not yet read (or the peer's close).

    ``ssl_object`` is what the network stream gives as ``ssl_object``: an
    ``ssl.SSLObject`` over memory buffers (anyio's TLS stream, asyncio's and
    uvloop's TLS transports), whatever a blocking socket's TLS layer is, or
    ``None`` in the clear. ``pending()`` counts what is decrypted and unread.
    A record still encrypted waits in the SSLObject's incoming buffer, which
    only the TLS layer's owner holds (anyio's is private): reading one byte
    through the public ``read`` decrypts it if it is whole. That read takes
    from no one: the connection is idle, and whatever it finds makes the
    connection unfit, so it is closed, never read again. Nothing whole there,
    the read raises ``SSLWantReadError`` and leaves the layer as it was. A
    blocking socket's TLS layer is only asked ``pending()``: reading it would
    wait, and it takes from the socket no more than it decrypts.
    """
    if ssl_object is None:
        return False
    try:
        pending = getattr(ssl_object, "pending", None)
        if pending is not None and pending() > 0:
            return True
        if isinstance(ssl_object, ssl.SSLObject):
            ssl_object.read(1)
            return True  # a whole record nobody asked for (or b"": the peer's close_notify)
    except ssl.SSLWantReadError:
        return False  # nothing whole: at most part of a record, as the socket may hold part of an answer
    except Exception:  # noqa: BLE001  # an alert or a bad record: the connection is not fit either
        return True
    return False


def _opening() -> None:
    """Report to the running exchange that the SDK's own network code opens its connection: from here, what this
    code reports is all that happened (a failure before the first write wrote nothing). Reported here, not before
    the pool is called: a mock patched in above this code (respx) reports nothing, and is no evidence."""
    exchange = RUNNING.get()
    if exchange is not None:
        exchange.opening()


class DeadlineBackend(httpcore2.NetworkBackend):
    """httpcore2's network backend with `_DeadlineStream` connections."""

    def __init__(self, backend: httpcore2.NetworkBackend) -> None:
        self._backend = backend
        self._sockets = Sockets()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = _NO_TIMEOUT,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore2.NetworkStream:
        _opening()
        timeout = within(timeout, httpcore2.ConnectTimeout, running_deadline())
        with opening_sync():  # a fork waits until the socket is known (`_transports.sockets`)
            stream = connect_tcp_sync(
                self._backend,
                host,
                port,
                timeout,
                local_address,
                socket_options,
                _CONNECT_ERRORS,
            )
            return _DeadlineStream(stream, self._sockets)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = _NO_TIMEOUT,
        socket_options: Any = None,
    ) -> httpcore2.NetworkStream:
        _opening()
        timeout = within(timeout, httpcore2.ConnectTimeout, running_deadline())
        with opening_sync():  # as connect_tcp
            stream = self._backend.connect_unix_socket(path, timeout, socket_options)
            return _DeadlineStream(stream, self._sockets)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)

    def abandon(self) -> None:
        """Close every open connection without its event loop, which has ended.

        The SDK's asyncio backend does it itself (closing the socket, then the
        transport); under another backend (anyio's, for trio and uvloop) the
        socket of each connection is closed (`_transports.sockets.Sockets.close`;
        uvloop's are libuv's, and left to it).
        """
        abandon = getattr(self._backend, "abandon", None)
        if abandon is not None:
            abandon()
            return
        self._sockets.close()
