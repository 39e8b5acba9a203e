# Generated from _deadline_async.py by scripts/unasync.py: do not edit; regenerate with `python scripts/unasync.py`.
"""A network backend for httpcore that holds every socket operation to the call's total deadline.

Used only under the SDK's own httpx client (see ``HttpxTransport``).
"""

from __future__ import annotations

import select
import socket
import ssl
import sys
import time
from typing import Any

import httpcore
import httpx

from ._sending import within

__all__ = ["hold_to_deadline"]

_NO_TIMEOUT: float | None = None


# How long one poll() answers for the pool's other idle connections. httpcore
# asks each idle connection in turn, in one pass over its pool; a pass takes
# well under this, and a connection that read or wrote since is asked again.
_READINESS_LIFETIME = 0.001


class _Readiness:
    """Whether a read would not block, for every connection of one pool, from one ``poll()``.

    httpcore asks every idle connection "is it readable?" (has the server
    closed it?) each time it places a request or takes a connection back,
    while it holds the pool's lock. One ``poll()`` per connection is one
    system call each, and with threads each one hands the GIL to a thread
    that then waits for that lock: at 100 threads that was 70 to 140 calls
    and twice as many thread switches per request. One ``poll()`` over the
    pool answers the whole pass.
    """

    __slots__ = ("_ready", "_streams", "_taken_at")

    def __init__(self) -> None:
        self._streams: dict[_DeadlineStream, None] = {}
        self._ready: set[_DeadlineStream] = set()
        self._taken_at = -1.0

    def add(self, stream: _DeadlineStream) -> None:
        self._streams[stream] = None

    def discard(self, stream: _DeadlineStream) -> None:
        self._streams.pop(stream, None)

    def readable(self, stream: _DeadlineStream) -> bool:
        now = time.monotonic()
        if not stream.probed or now - self._taken_at > _READINESS_LIFETIME:
            self._take(now)
        if stream not in self._ready:
            return False
        # A "yes" is asked again of the socket alone: a stale one would make
        # httpcore close a connection it may already have handed to another
        # thread. A stale "no" only widens, by the answer's lifetime, the race
        # every pool has with a server closing an idle connection.
        return _readable_now(stream.fileno())

    def _take(self, now: float) -> None:
        ready: set[_DeadlineStream] = set()
        by_fd: dict[int, _DeadlineStream] = {}
        for stream in tuple(self._streams):  # a copy: another thread may connect meanwhile
            stream.probed = True
            fd = stream.fileno()
            if fd < 0:  # closed: the next read is the end
                ready.add(stream)
            else:
                by_fd[fd] = stream
        if _HAS_POLL:
            poll = select.poll()
            for fd in by_fd:
                poll.register(fd, select.POLLIN)
            ready.update(by_fd[fd] for fd, _ in poll.poll(0))
        elif by_fd:
            readable, _, _ = select.select(list(by_fd), [], [], 0)
            ready.update(by_fd[fd] for fd in readable)
        self._ready = ready
        self._taken_at = now


_HAS_POLL = sys.platform != "win32" and hasattr(select, "poll")


def _readable_now(fd: int) -> bool:
    """Whether one socket has data or its peer's close waiting, asked now."""
    if fd < 0:  # closed: the next read is the end
        return True
    if _HAS_POLL:
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        return bool(poll.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read, write and handshake ends by the call's deadline.

    httpcore applies ``timeout`` per socket operation, so a server trickling a
    byte a second, or sending ``100 Continue`` for ever, never trips it; here
    each operation gets at most what is left of the deadline, and none starts
    once it has passed.
    """

    __slots__ = ("_readiness", "_socket", "_stream", "probed")

    def __init__(self, stream: httpcore.NetworkStream, readiness: _Readiness) -> None:
        self._stream = stream
        self._readiness = readiness
        self._socket: socket.socket | None = stream.get_extra_info("socket")
        self.probed = False
        """Whether the last readiness poll saw this connection as it is now (no read or write since)."""
        if self._socket is not None:
            readiness.add(self)

    def fileno(self) -> int:
        """The socket's descriptor; -1 once closed."""
        return -1 if self._socket is None else self._socket.fileno()

    def read(self, max_bytes: int, timeout: float | None = _NO_TIMEOUT) -> bytes:
        # Cleared before and after: a poll taken while this read waited saw data it then consumed.
        self.probed = False
        try:
            return self._stream.read(max_bytes, within(timeout, httpcore.ReadTimeout))
        finally:
            self.probed = False

    def write(self, buffer: bytes, timeout: float | None = _NO_TIMEOUT) -> None:
        self.probed = False
        try:
            self._stream.write(buffer, within(timeout, httpcore.WriteTimeout))
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
        stream = self._stream.start_tls(ssl_context, server_hostname, within(timeout, httpcore.ConnectTimeout))
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
        self._readiness = _Readiness()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = _NO_TIMEOUT,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        timeout = within(timeout, httpcore.ConnectTimeout)
        stream = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream, self._readiness)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = _NO_TIMEOUT,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        timeout = within(timeout, httpcore.ConnectTimeout)
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
