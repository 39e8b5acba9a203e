# Generated from _deadline_async.py by scripts/unasync.py: do not edit; regenerate with `python scripts/unasync.py`.
"""A network backend for httpcore that holds every socket operation to the call's total deadline.

Used only under the SDK's own httpx client (see ``HttpxTransport``).
"""

from __future__ import annotations

import socket
import ssl
from typing import Any

import httpcore
import httpx

from ._readiness import Readiness
from ._sending import DEADLINE, within

__all__ = ["hold_to_deadline"]

_NO_TIMEOUT: float | None = None


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read, write and handshake ends by the call's deadline.

    httpcore applies ``timeout`` per socket operation, so a server trickling a
    byte a second, or sending ``100 Continue`` for ever, never trips it; here
    each operation gets at most what is left of the deadline, and none starts
    once it has passed.
    """

    __slots__ = ("_readiness", "_socket", "_stream", "probed", "unread_since_write")

    def __init__(self, stream: httpcore.NetworkStream, readiness: Readiness) -> None:
        self._stream = stream
        self._readiness = readiness
        self._socket: socket.socket | None = stream.get_extra_info("socket")
        self.probed = False
        """Whether the last readiness poll saw this connection as it is now (no read or write since)."""
        self.unread_since_write = False
        """Whether nothing was read since the last write: an answer now came before the request did."""
        if self._socket is not None:
            readiness.add(self)

    def fileno(self) -> int:
        """The socket's descriptor; -1 once closed."""
        return -1 if self._socket is None else self._socket.fileno()

    def read(self, max_bytes: int, timeout: float | None = _NO_TIMEOUT) -> bytes:
        # Cleared before and after: a poll taken while this read waited saw data it then consumed.
        self.probed = False
        self.unread_since_write = False
        try:
            return self._stream.read(max_bytes, within(timeout, httpcore.ReadTimeout, DEADLINE.get()))
        finally:
            self.probed = False

    def write(self, buffer: bytes, timeout: float | None = _NO_TIMEOUT) -> None:
        self.probed = False
        self.unread_since_write = True
        try:
            self._stream.write(buffer, within(timeout, httpcore.WriteTimeout, DEADLINE.get()))
        finally:
            self.probed = False

    def close(self) -> None:
        self._readiness.discard(self)
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = _NO_TIMEOUT,
    ) -> httpcore.NetworkStream:
        # The TCP stream is done with either way: wrapped on success, abandoned on failure.
        self._readiness.discard(self)
        stream = self._stream.start_tls(
            ssl_context, server_hostname, within(timeout, httpcore.ConnectTimeout, DEADLINE.get())
        )
        return _DeadlineStream(stream, self._readiness)

    def get_extra_info(self, info: str) -> Any:
        # httpcore asks every idle connection "is_readable" each time it places
        # a request or takes one back; anyio's streams answer by building a
        # dict of every socket attribute (half the client's CPU at 100 calls in
        # flight), and one poll() per connection is a system call each. The
        # pool's sockets answer together, in one poll().
        if info == "is_readable" and self._socket is not None:
            return self._readiness.readable(self)
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend with `_DeadlineStream` connections."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend
        self._readiness = Readiness()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = _NO_TIMEOUT,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        timeout = within(timeout, httpcore.ConnectTimeout, DEADLINE.get())
        stream = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream, self._readiness)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = _NO_TIMEOUT,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        timeout = within(timeout, httpcore.ConnectTimeout, DEADLINE.get())
        stream = self._backend.connect_unix_socket(path, timeout, socket_options)
        return _DeadlineStream(stream, self._readiness)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def hold_to_deadline(client: httpx.Client) -> bool:
    """Put `_DeadlineBackend` under every connection pool of the SDK's own client.

    httpx offers no argument for a network backend, so this reaches into two
    private attributes (``_pool`` of each httpx transport, ``_network_backend``
    of each httpcore pool, proxies included); ``tests/test_limits.py`` fails
    if a new httpx moves them. Returns whether every pool was reached.
    """
    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    held = True
    for transport in transports:
        if transport is None:  # a NO_PROXY entry
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, httpcore.NetworkBackend):
            setattr(pool, "_network_backend", _DeadlineBackend(backend))  # noqa: B010
        else:
            held = False
    return held
