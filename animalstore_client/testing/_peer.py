"""One connection of the fake store's server: its bytes read and written with deadlines and flow control, and its ends.

No HTTP here: ``_http1`` reads requests through `Peer.more` and `Peer.take`,
and the server writes answers with `Peer.send`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import cast

__all__ = ["Gone", "Peer"]

_LINGER_BYTES = 64 * 1024 * 1024
"""Bytes drained after the last answer, at most (a refused 8 MiB body fits; the time limit comes first on loopback)."""


class Gone(Exception):
    """The client closed, reset or fell silent: close without answering."""


def _settle(waiter: asyncio.Future[bool], value: bool) -> None:
    if not waiter.done():
        waiter.set_result(value)


class Peer(asyncio.Protocol):
    """One connection's incoming bytes, read with deadlines, and flow control both ways.

    No task is made per read: a waiter future is settled by new bytes, by
    the end of the connection, or by a timer at the deadline.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, *, over_tls: bool, registry: set[Peer], buffered: int) -> None:
        self.loop = loop
        self.over_tls = over_tls
        self._registry = registry  # the server's open connections, until each is lost
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.lost = False
        self._buffered = buffered  # bytes held before reading pauses, unless a reader needs more room at once
        self._ceiling = buffered
        self._reading_paused = False
        self._writing_paused = False
        self._read_waiter: asyncio.Future[bool] | None = None
        self._write_waiter: asyncio.Future[bool] | None = None
        self.evicted = False

    # --- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)
        self._registry.add(self)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self._reading_paused and len(self.buffer) >= self._ceiling and self.transport is not None:
            self._reading_paused = True
            self.transport.pause_reading()
        if self._read_waiter is not None:
            _settle(self._read_waiter, True)

    def eof_received(self) -> bool:
        self.eof = True
        if self._read_waiter is not None:
            _settle(self._read_waiter, True)
        # Keep the write side open: a client that half-closes after its request still reads the answer.
        return not self.over_tls

    def connection_lost(self, exc: Exception | None) -> None:
        self._registry.discard(self)
        self.eof = self.lost = True
        for waiter in (self._read_waiter, self._write_waiter):
            if waiter is not None:
                _settle(waiter, True)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._write_waiter is not None:
            _settle(self._write_waiter, True)

    # --- what the connection's task calls -------------------------------------------------

    async def more(self, deadline: float, *, room: int = 0) -> bool:
        """Wait until bytes arrive or the connection ends (True), or ``deadline`` passes (False).

        ``room`` is how many bytes the caller needs buffered at once (a body),
        so reading is not paused before they fit.
        """
        if self.eof:
            return True
        self._ceiling = max(self._buffered, room)
        if self._reading_paused and len(self.buffer) < self._ceiling and self.transport is not None:
            self._reading_paused = False
            self.transport.resume_reading()
        waiter: asyncio.Future[bool] = self.loop.create_future()
        self._read_waiter = waiter
        timer = self.loop.call_at(deadline, _settle, waiter, False)
        try:
            arrived = await waiter
        finally:
            timer.cancel()
            self._read_waiter = None
        return arrived

    def evict(self) -> None:
        """Give way to a newer connection: wake the reader, which sees `evicted` and refuses the request with 503."""
        self.evicted = True
        if self._read_waiter is not None:
            _settle(self._read_waiter, True)

    def take(self, size: int) -> bytes:
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    async def send(self, data: bytes, deadline: float) -> None:
        """Write ``data``; raise `Gone` if the client leaves it unread past ``deadline`` or is gone."""
        if self.transport is None or self.transport.is_closing():
            raise Gone
        self.transport.write(data)
        while self._writing_paused and not self.lost:
            waiter: asyncio.Future[bool] = self.loop.create_future()
            self._write_waiter = waiter
            timer = self.loop.call_at(deadline, _settle, waiter, False)
            try:
                if not await waiter:
                    raise Gone
            finally:
                timer.cancel()
                self._write_waiter = None
        if self.lost:
            raise Gone

    def reset(self) -> None:
        """Close with a TCP reset, as a crashed or refusing peer does (SO_LINGER 0)."""
        if self.transport is None:
            return
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    async def hold(self, seconds: float) -> None:
        """Leave the connection unanswered until the client closes it or ``seconds`` pass."""
        deadline = self.loop.time() + seconds
        while not self.eof and await self.more(deadline):
            self.buffer.clear()

    async def linger(self, seconds: float) -> None:
        """Close without a reset: say we are done, then drain what the client still sends, for ``seconds``.

        Closing a socket with unread bytes sends a TCP reset, which can
        destroy the answer before the client reads it.
        """
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if not transport.can_write_eof():
            return
        with contextlib.suppress(OSError):
            transport.write_eof()
        deadline = self.loop.time() + seconds
        drained = len(self.buffer)
        self.buffer.clear()
        while not self.eof and drained < _LINGER_BYTES and await self.more(deadline):
            drained += len(self.buffer)
            self.buffer.clear()
