"""httpcore's network backend on asyncio's own transports and protocols: the default backend's on asyncio.

httpcore's own async backend goes through anyio, which costs a cancel scope
per read and write (the timeout) and builds a dict of socket attributes for
each ``get_extra_info``; on asyncio (or uvloop) this backend does the same
job with a protocol that buffers what arrives and one timer per wait
(docs/performance.md has the profile and the figures). Under trio the
default backend keeps anyio's. Only httpcore's public
``AsyncNetworkBackend``/``AsyncNetworkStream`` interface is implemented, and
every failure is httpcore's exception for it, as anyio's backend raises.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections import deque
from typing import Any

import httpcore

__all__ = ["AsyncioBackend"]

_PAUSE_AT = 256 * 1024
"""Bytes buffered unread at which the socket stops being read, until the reader catches up."""
_TIMED_OUT = object()


class _Protocol(asyncio.Protocol):
    """What arrives on one connection, buffered until read; and whether writing must wait."""

    __slots__ = (
        "_buffered",
        "_chunks",
        "_drained",
        "_eof",
        "_error",
        "_paused_reading",
        "_paused_writing",
        "_waiter",
        "loop",
        "transport",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._eof = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[Any] | None = None
        self._drained: asyncio.Future[Any] | None = None
        self._paused_reading = False
        self._paused_writing = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport: create_connection's

    def data_received(self, data: bytes) -> None:
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered >= _PAUSE_AT and not self._paused_reading and self.transport is not None:
            self._paused_reading = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return False  # close the transport: an HTTP/1.1 client has nothing more to send once the server is done

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        self._error = exc
        self._wake()
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def pause_writing(self) -> None:
        self._paused_writing = True

    def resume_writing(self) -> None:
        self._paused_writing = False
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def read(self, max_bytes: int, timeout: float | None) -> bytes:
        if not self._chunks and not self._eof:
            waiter = self._waiter = self.loop.create_future()
            if await _within(self.loop, waiter, timeout) is _TIMED_OUT:
                self._waiter = None
                raise httpcore.ReadTimeout("no data arrived within the read timeout")
        chunks = self._chunks
        if chunks:
            chunk = chunks.popleft()
            while chunks and len(chunk) + len(chunks[0]) <= max_bytes:  # one read for what arrived in pieces
                chunk += chunks.popleft()
            if len(chunk) > max_bytes:
                chunks.appendleft(chunk[max_bytes:])
                chunk = chunk[:max_bytes]
            self._buffered -= len(chunk)
            if self._paused_reading and self._buffered < _PAUSE_AT // 2 and self.transport is not None:
                self._paused_reading = False
                self.transport.resume_reading()
            return chunk
        if self._error is not None:
            raise httpcore.ReadError(str(self._error) or type(self._error).__name__) from self._error
        return b""  # the peer closed: httpcore reads this as the server's disconnect

    async def drain(self, timeout: float | None) -> None:
        if not self._paused_writing:
            return
        drained = self._drained = self.loop.create_future()
        if await _within(self.loop, drained, timeout) is _TIMED_OUT:
            raise httpcore.WriteTimeout("the request could not be written within the write timeout")

    def has_unread(self) -> bool:
        """Whether anything arrived that no read took yet: bytes, or the peer's close."""
        return bool(self._chunks) or self._eof

    def ended(self) -> bool:
        """Whether the peer closed its side, or the connection was lost."""
        return self._eof

    def why_ended(self) -> str:
        """What ended the connection, for a write refused on it."""
        return str(self._error) if self._error else "the connection is closed"


async def _within(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], timeout: float | None) -> object:
    """``future``'s result, or ``_TIMED_OUT`` after ``timeout`` seconds: one timer, no task or cancel scope."""
    if timeout is None:
        return await future
    timer = loop.call_later(timeout, _time_out, future)
    try:
        return await future
    finally:
        timer.cancel()


def _time_out(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(_TIMED_OUT)


class _AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection: a transport (plain or TLS) and the protocol buffering what it receives."""

    __slots__ = ("_protocol", "_socket", "_transport")

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol, sock: Any) -> None:
        self._transport = transport
        self._protocol = protocol
        self._socket = sock

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._protocol.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        protocol = self._protocol
        if protocol.ended() or self._transport.is_closing():
            raise httpcore.WriteError(protocol.why_ended())
        try:
            self._transport.write(buffer)
        except (OSError, RuntimeError) as exc:
            raise httpcore.WriteError(str(exc)) from exc
        await protocol.drain(timeout)

    async def aclose(self) -> None:
        # No TLS close_notify exchange (anyio's backend, as httpcore uses it, sends none either).
        self._transport.abort()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = self._protocol.loop
        try:
            transport = await loop.start_tls(
                self._transport,
                self._protocol,
                ssl_context,
                server_hostname=server_hostname,
                ssl_handshake_timeout=timeout if timeout is not None and timeout > 0 else None,
            )
        except (ssl.SSLError, OSError) as exc:
            self._transport.abort()
            if isinstance(exc, (TimeoutError, ConnectionAbortedError)) and "handshake" in str(exc).lower():
                raise httpcore.ConnectTimeout(str(exc)) from exc
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        if transport is None:  # the loop closed under it
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        self._protocol.transport = transport  # what pausing reads must pause from now on: the TLS layer
        return _AsyncioStream(transport, self._protocol, self._socket)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # Asked of an idle connection as the pool takes it: anything the loop received on it
            # since its answer ended (the server's close, or bytes it should not have sent).
            return self._protocol.has_unread()
        if info == "socket":
            return self._socket
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend on the running asyncio loop's transports (asyncio's own loop or uvloop)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        protocol = _Protocol(loop)
        local = None if local_address is None else (local_address, 0)
        try:
            transport, _ = await asyncio.wait_for(
                loop.create_connection(lambda: protocol, host, port, local_addr=local), timeout
            )
        except asyncio.TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"no connection to {host}:{port} within the connect timeout") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        sock = transport.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _AsyncioStream(transport, protocol, sock)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
