"""A network backend for httpcore that holds every socket operation to the call's total deadline.

It also knows the socket under each connection it opened (`_transports.sockets`): a forked child closes its
copies, and a pool whose event loop ended closes them without the loop.
"""

from __future__ import annotations

import ssl
from typing import Any

import httpcore

from animalstore_client._core.deadline import within
from animalstore_client._core.exchange import RUNNING, WRITING, running_deadline
from animalstore_client._transports.pool.wait import connect_tcp_async
from animalstore_client._transports.sockets import Sockets, opening_async

__all__ = ["AsyncDeadlineBackend", "tls_holds_unread"]

# What a name lookup that does not answer in time, or fails, raises (the sync side looks names up itself).
_CONNECT_ERRORS = (httpcore.ConnectTimeout, httpcore.ConnectError)


class _AsyncDeadlineStream(httpcore.AsyncNetworkStream):
    """A connection whose every read, write and handshake ends by the call's deadline.

    httpcore applies ``timeout`` per socket operation, so a server trickling a
    byte a second, or sending ``100 Continue`` for ever, never trips it; here
    each operation gets at most what is left of the deadline, and none starts
    once it has passed.
    """

    __slots__ = ("_deadline", "_sockets", "_stream", "unread_since_write")

    def __init__(self, stream: httpcore.AsyncNetworkStream, sockets: Sockets) -> None:
        self._stream = stream
        self._sockets = sockets  # the backend's, this connection's among them
        sockets.add(stream.get_extra_info("socket"))
        self.unread_since_write = False  # if so, an answer read now came before the request did
        self._deadline: float | None = None  # the last request's call's: every read until the next write is for it

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        # An HTTP/1.1 connection reads only the answer to the request it wrote last: that call's deadline, kept
        # at the write, holds the body's reads too, so a body is read with no context set around each chunk.
        self.unread_since_write = False
        return await self._stream.read(max_bytes, within(timeout, httpcore.ReadTimeout, self._deadline))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.unread_since_write = True
        exchange = RUNNING.get()
        deadline = None
        if exchange is not None:
            # From the first byte the service may act on it; past the deadline, nothing is written. An empty write
            # (h11's end of a message without a body) writes no byte; a proxy's CONNECT (httpcore writes a request's
            # head in one piece, and the SDK never sends that method) goes to the proxy, not the service.
            if exchange.phase < WRITING and buffer and buffer[:8] != b"CONNECT ":
                exchange.first_byte()
            deadline = exchange.deadline
        self._deadline = deadline
        await self._stream.write(buffer, within(timeout, httpcore.WriteTimeout, deadline))

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            timeout = within(timeout, httpcore.ConnectTimeout, running_deadline())
        except httpcore.ConnectTimeout:
            await self.aclose()  # nothing else holds the TCP connection yet to close it
            raise
        # A fork waits until the TLS socket is known: the sync side's `ssl.SSLSocket` took the plain socket's
        # descriptor, so the plain one, known already, no longer closes the child's copy.
        with opening_async():
            stream = await self._stream.start_tls(ssl_context, server_hostname, timeout)
            return _AsyncDeadlineStream(stream, self._sockets)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # Asked of an idle connection before it is reused (httpcore's has_expired): bytes received since
            # its answer make it unfit, wherever they wait. The network stream answers for the socket (and the
            # SDK's asyncio backend for what its protocol holds); a TLS layer may hold more, read off the socket
            # with the answer's last record (anyio's, under trio), which the socket no longer shows.
            return bool(self._stream.get_extra_info("is_readable")) or tls_holds_unread(
                self._stream.get_extra_info("ssl_object")
            )
        return self._stream.get_extra_info(info)


def tls_holds_unread(ssl_object: object) -> bool:
    """Whether an idle connection's TLS layer (the stream's ``ssl_object``) holds bytes unread, or the peer's close.

    An ``ssl.SSLObject`` over memory buffers may hold a whole record still encrypted, which only a public
    ``read(1)`` reveals: it takes from no one, the connection being idle and closed if anything is found. A
    blocking socket's TLS layer is only asked ``pending()``: reading it would wait (docs/architecture.md).
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


class AsyncDeadlineBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with `_AsyncDeadlineStream` connections."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend) -> None:
        self._backend = backend
        self._sockets = Sockets()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        _opening()
        timeout = within(timeout, httpcore.ConnectTimeout, running_deadline())
        with opening_async():  # a fork waits until the socket is known (`_transports.sockets`)
            stream = await connect_tcp_async(
                self._backend, host, port, timeout, local_address, socket_options, _CONNECT_ERRORS
            )
            return _AsyncDeadlineStream(stream, self._sockets)

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)

    def abandon(self) -> None:
        """Close every open connection without its event loop, which has ended: the SDK's asyncio backend does
        it itself; under anyio's the socket of each is closed (uvloop's are libuv's, and left to it)."""
        abandon = getattr(self._backend, "abandon", None)
        if abandon is not None:
            abandon()
            return
        self._sockets.close()
