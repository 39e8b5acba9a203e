"""httpcore's network backend on asyncio's own transports and protocols (and uvloop's): the default backend's.

Faster than httpcore's anyio backend (a cancel scope per read and write; docs/performance.md), which stays the
reference: tests/test_network_backends.py runs every scenario over both, and every failure is httpcore's, as
anyio's. What it guarantees beyond speed: docs/architecture.md, "The network backend". Names are resolved on the
SDK's lookup threads (`pool.resolver`), not the loop's default pool, which a forked child inherits with the
parent's threads counted as idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import socket
import ssl
import threading
import weakref
from typing import Any, cast

import httpcore

from animalstore_client._transports.lookups import settle
from animalstore_client._transports.pool.resolver import interleaved, resolve
from animalstore_client._transports.sockets import check_transport_table, opening_sync

__all__ = ["AsyncioBackend", "for_running_loop"]

_ROOM = 64 * 1024  # what one read from the socket may fill (httpcore reads 64 KiB)
_PAUSE_AT = 256 * 1024  # bytes buffered unread at which the socket stops being read
_WRITE_SLICE = 64 * 1024  # the most written before waiting for the transport to drain
_TIMED_OUT = object()
_HAS_POLL = hasattr(select, "poll")


class _Connection(asyncio.BufferedProtocol, httpcore.AsyncNetworkStream):
    """One connection: asyncio's buffered protocol for its transport (plain, then TLS), and httpcore's stream.

    The transport receives into a buffer the connection keeps (a plain protocol gets a new 256 KiB ``bytes`` per
    read); what arrived and is unread is ``_buffer[_start:_end]``.
    """

    __slots__ = (
        "_buffer",
        "_drained",
        "_end",
        "_error",
        "_owner",
        "_paused_reading",
        "_paused_writing",
        "_start",
        "_waiter",
        "ended",
        "loop",
        "lost",
        "plain",
        "sock",
        "transport",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, owner: AsyncioBackend) -> None:
        self.loop = loop
        self._owner = owner
        self._buffer: memoryview = memoryview(bytearray(0))  # made at the first read (a failed connect needs none)
        self._start = self._end = 0
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[Any] | None = None
        self._drained: asyncio.Future[Any] | None = None
        self._paused_reading = self._paused_writing = False
        self.ended = False  # the peer closed its side, or the connection was lost
        self.lost = False  # the connection is gone (a reset, or closed after the peer's close): nothing more is written
        self.transport: asyncio.Transport | None = None
        self.sock: socket.socket | None = None  # made by this backend, under the transport (`abandon` closes it)
        self.plain: asyncio.BaseTransport | None = None  # the transport over `sock`, under any TLS layer

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport: create_connection's

    def get_buffer(self, sizehint: int) -> memoryview:
        start, end, size = self._start, self._end, len(self._buffer)
        if start == end and size == _ROOM:
            self._start = self._end = end = 0  # all was read: the room starts at the front again
        elif size - end < _ROOM // 2 or start == end:
            # Too little room behind what is unread, or no buffer yet, or one grown for a slow reader: the unread
            # bytes move to a new buffer (the transport may hold a view of the old), with as much room again or more.
            unread = end - start
            buffer = memoryview(bytearray(unread + max(_ROOM, unread)))
            buffer[:unread] = self._buffer[start:end]
            self._buffer, self._start, self._end = buffer, 0, unread
            end = unread
        return self._buffer[end:]

    def buffer_updated(self, nbytes: int) -> None:
        self._end += nbytes
        if self._end - self._start >= _PAUSE_AT and not self._paused_reading:
            self._read_socket(False)
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # close the transport: an HTTP/1.1 client has nothing more to send once the server is done

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner.forget(self)
        self.ended = self.lost = True
        self._error = exc
        self._wake()
        # Writing ends with the connection: asyncio never resumes writing on a lost one (a writer would wait for ever).
        self.resume_writing()

    def pause_writing(self) -> None:
        self._paused_writing = True

    def resume_writing(self) -> None:
        self._paused_writing = False
        drained, self._drained = self._drained, None
        settle(drained, None)

    def _read_socket(self, resume: bool) -> None:
        """Pause (at `_PAUSE_AT` unread) or resume the socket's transport, under any TLS layer: paused at the TLS
        layer, records pile up there, and uvloop drops them when the peer closes without a TLS close_notify."""
        # A stream transport either way (create_connection's); uvloop's are not asyncio's subclasses.
        reading = cast("asyncio.ReadTransport | None", self.plain if self.plain is not None else self.transport)
        if reading is not None:
            self._paused_reading = not resume
            reading.resume_reading() if resume else reading.pause_reading()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        settle(waiter, None)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._start == self._end and not self.ended:
            waiter = self._waiter = self.loop.create_future()
            if await _within(self.loop, waiter, timeout) is _TIMED_OUT:
                self._waiter = None
                raise httpcore.ReadTimeout("no data arrived within the read timeout")
        start = self._start
        if start < self._end:
            stop = min(self._end, start + max_bytes)
            self._start = stop
            if self._paused_reading and self._end - stop < _PAUSE_AT // 2:
                self._read_socket(True)
            return self._buffer[start:stop].tobytes()  # all that arrived (up to max_bytes): one read for many pieces
        if self._error is not None:
            raise httpcore.ReadError(str(self._error) or type(self._error).__name__) from self._error
        return b""  # the peer closed: httpcore reads this as the server's disconnect

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        transport = cast("asyncio.Transport", self.transport)
        view = memoryview(buffer)
        for start in range(0, len(view), _WRITE_SLICE):
            # Checked before every slice: the server may answer and close (or reset) while a
            # large body is still going out, and a closed transport drops writes silently (or,
            # under TLS, raises asyncio's own errors).
            if self.ended or transport.is_closing():
                raise httpcore.WriteError(self.why_ended())
            # In slices, each drained: a TLS transport passes one large write straight down, and
            # flow control (so the write timeout) would never reach this protocol.
            try:
                transport.write(view[start : start + _WRITE_SLICE])
            except Exception as exc:  # asyncio's, whatever they are, become httpcore's
                raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc
            if self._paused_writing:
                drained = self._drained = self.loop.create_future()
                if await _within(self.loop, drained, timeout) is _TIMED_OUT:
                    self._drained = None
                    raise httpcore.WriteTimeout("the request could not be written within the write timeout")
            if self.lost:
                # What was written may never have left: httpcore reads the server's early answer
                # (a 401 or 413 sent before it closed) on a WriteError, as it does over anyio.
                raise httpcore.WriteError(self.why_ended())

    def has_unread(self) -> bool:
        """Whether anything arrived that no read took yet: bytes, or the peer's close."""
        return self._start < self._end or self.ended

    async def aclose(self) -> None:
        if self.lost:  # asyncio closed the socket already, and aborting again can raise
            return
        # No TLS close_notify exchange (anyio's backend, as httpcore uses it, sends none either).
        try:
            cast("asyncio.Transport", self.transport).abort()
        except RuntimeError:
            if self.loop.is_closed():  # the socket is closed without the loop; a fork waits (as in `abandon`'s caller)
                with opening_sync():
                    self.abandon()
        except Exception:  # noqa: BLE001  # a transport asyncio is closing already: closed enough
            return

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        plain = cast("asyncio.Transport", self.transport)
        if self.has_unread():
            # Bytes before the handshake are no server's answer: read after it, they would pass
            # for the authenticated response (anyio's TLS layer refuses them too).
            plain.abort()
            raise httpcore.ConnectError("the server sent data (or closed) before the TLS handshake")
        try:
            transport = await self.loop.start_tls(
                plain,
                self,
                ssl_context,
                server_hostname=server_hostname,
                ssl_handshake_timeout=timeout if timeout is not None and timeout > 0 else None,
            )
        except Exception as exc:  # ssl's, the OS's and asyncio's own all become httpcore's
            plain.abort()
            if isinstance(exc, (TimeoutError, ConnectionAbortedError)) and "handshake" in str(exc).lower():
                raise httpcore.ConnectTimeout(str(exc)) from exc
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        if transport is None:  # the loop closed under it
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        self.transport = transport  # what is written to and closed from now on: the TLS layer
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # Asked of an idle connection as the pool takes it or hands it on: anything received
            # since its answer ended (the server's close, or bytes it should not have sent), by the
            # loop already or still in the kernel (a busy loop may not have read it yet).
            return self.has_unread() or _readable_now(self.sock)
        if info == "socket":
            return self.sock
        if info == "ssl_object":
            return cast("asyncio.Transport", self.transport).get_extra_info("ssl_object")
        return None  # nothing else is read (httpcore's addresses reach no caller of the SDK)

    def abandon(self) -> None:
        """Close this connection without its event loop (closed, or a forked child's): the socket first, so that
        nothing done to the transport reaches the selector (a child's is the parent's too), then the transport."""
        if self.sock is not None:
            self.sock.close()
        transport = self.transport
        if transport is None:
            return  # still connecting: the socket was all there was
        if not self.loop.is_closed():
            try:
                transport.abort()
            except Exception:  # noqa: BLE001  # abort stopped half-way (a write buffered on the closed socket)
                pass
            else:
                return
        # A closed loop (or an abort stopped half-way) cannot run the callback that lets the transport
        # go of its socket, and the transport would warn, when collected, of a socket left open.
        with contextlib.suppress(Exception):  # checked at import (check_transport_table)
            self.plain._call_connection_lost(None)  # type: ignore[union-attr]  # noqa: SLF001  # pyright: ignore

    def why_ended(self) -> str:
        """What ended the connection, for a write refused on it."""
        return str(self._error) if self._error else "the connection is closed"


async def _within(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], timeout: float | None) -> object:
    """``future``'s result, or ``_TIMED_OUT`` after ``timeout`` seconds: one timer, no task or cancel scope."""
    if timeout is None:
        return await future
    timer = loop.call_later(timeout, settle, future, _TIMED_OUT)
    try:
        return await future
    finally:
        timer.cancel()


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend on asyncio's transports; it knows its open connections, to close them without
    their loop (`abandon`): once that loop is closed, and in a forked child, whose loop would read the parent's."""

    def __init__(self) -> None:
        self._open: set[_Connection] = set()
        self._lock = threading.Lock()
        _BACKENDS.add(self)

    def track(self, connection: _Connection) -> None:
        with self._lock:
            self._open.add(connection)

    def forget(self, connection: _Connection) -> None:
        with self._lock:
            self._open.discard(connection)

    def after_fork(self) -> None:
        """In a forked child: a lock of its own (a parent thread may have held this one), then `abandon`."""
        self._lock = threading.Lock()
        self.abandon()

    def abandon(self) -> None:
        """Close every connection this backend opened, without their event loop (see `_Connection.abandon`)."""
        with self._lock:
            connections = list(self._open)
            self._open.clear()
        for connection in connections:
            connection.abandon()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = None if local_address is None else (local_address, 0)
        # Its own task, waited for at most the timeout, so that a timeout and the caller's cancellation stay
        # apart; not asyncio.wait_for, which on 3.11 can return a connection for a cancelled call.
        connecting = loop.create_task(_connect(self, loop, host, port, local))
        try:
            done, _ = await asyncio.wait((connecting,), timeout=timeout)
        except BaseException:  # the caller was cancelled: nothing may stay open, made by now or later
            _abort_when_connected(connecting)
            raise
        if not done:
            _abort_when_connected(connecting)
            raise httpcore.ConnectTimeout(f"no connection to {host}:{port} within the connect timeout")
        try:
            connection = connecting.result()
        except Exception as exc:  # refused, unreachable, a name that is not one: httpcore's
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        transport = cast("asyncio.Transport", connection.transport)
        try:
            if connection.sock is None or transport.is_closing():
                raise ConnectionResetError("the server closed the connection as it was opened")
            for option in socket_options or ():
                connection.sock.setsockopt(*option)
        except OSError as exc:
            transport.abort()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return connection

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


_HAPPY_EYEBALLS_DELAY = 0.25  # seconds before the next address is tried alongside (RFC 8305's, as anyio's)


async def _connect(
    backend: AsyncioBackend, loop: asyncio.AbstractEventLoop, host: str, port: int, local: tuple[str, int] | None
) -> _Connection:
    """A connection to the first of ``host``'s addresses that answers, tried as RFC 8305 says (Happy Eyeballs).

    Not asyncio's ``happy_eyeballs_delay=``, whose race leaves a connected socket open when the caller is
    cancelled (Python 3.11): here every attempt that does not win is closed.
    """
    infos = await resolve(host, port)
    attempts: list[asyncio.Task[_Connection]] = []
    pending: set[asyncio.Task[_Connection]] = set()
    errors: list[BaseException] = []
    won: asyncio.Task[_Connection] | None = None
    try:
        for family, _, _, _, address in interleaved(infos):
            attempt = loop.create_task(_open(backend, loop, family, address, local))
            attempts.append(attempt)
            pending.add(attempt)
            won = await _first_to_connect(pending, errors, _HAPPY_EYEBALLS_DELAY)
            if won is not None:
                break
        while won is None and pending:
            won = await _first_to_connect(pending, errors, None)
        if won is None:
            raise errors[-1] if errors else OSError(f"{host} has no address to connect to")
        return won.result()
    finally:
        for attempt in attempts:
            if attempt is not won:
                _abort_when_connected(attempt)


async def _open(
    backend: AsyncioBackend, loop: asyncio.AbstractEventLoop, family: int, address: Any, local: tuple[str, int] | None
) -> _Connection:
    """``loop.create_connection`` for one address, over a socket made and kept here, closed if the attempt fails."""
    connection = _Connection(loop, backend)
    with opening_sync():  # made and tracked as one step: a fork never finds it in between
        sock = connection.sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        backend.track(connection)  # from now: a fork while it connects must find it too
    try:
        sock.setblocking(False)
        if local is not None:
            sock.bind(local)
        await loop.sock_connect(sock, address)
        connection.plain, _ = await loop.create_connection(lambda: connection, sock=sock)
    except BaseException:
        backend.forget(connection)
        sock.close()
        raise
    return connection


_BACKENDS: weakref.WeakSet[AsyncioBackend] = weakref.WeakSet()  # for a forked child to abandon their connections


def _after_fork_in_child() -> None:
    """The child closes its copies of the parent's connections before its loop runs again: that loop shares its
    selector with the parent's, and would read the parent's answers first. The parent's sockets stay untouched."""
    for backend in list(_BACKENDS):
        backend.after_fork()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)
check_transport_table()


async def _first_to_connect(
    pending: set[asyncio.Task[_Connection]], errors: list[BaseException], delay: float | None
) -> asyncio.Task[_Connection] | None:
    """The first of ``pending`` to connect; ``None`` after ``delay`` seconds, after a failure, or once none is left."""
    while pending:
        done, _ = await asyncio.wait(pending, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
        if not done:
            return None  # the delay passed: the next address starts alongside
        for attempt in done:
            pending.discard(attempt)
            if attempt.cancelled():
                continue
            error = attempt.exception()
            if error is None:
                return attempt
            errors.append(error)
        if delay is not None:
            return None  # a failure: the next address starts at once
    return None


def _abort_when_connected(connecting: asyncio.Task[_Connection]) -> None:
    """Stop ``connecting``, and close the connection it made, now or once it is made: its caller has gone."""
    connecting.cancel()

    def abort(task: asyncio.Task[_Connection]) -> None:
        if not task.cancelled() and task.exception() is None:
            cast("asyncio.Transport", task.result().transport).abort()

    connecting.add_done_callback(abort)


def _readable_now(sock: socket.socket | None) -> bool:
    """Whether the kernel holds data or the peer's close for ``sock`` (gone: ``True``, its next read ends)."""
    fd = -1 if sock is None else sock.fileno()  # a closed socket's is -1
    if fd < 0:
        return True
    if _HAS_POLL:  # select() fails past descriptor 1023
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        return bool(poll.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


def for_running_loop() -> AsyncioBackend | None:
    """This backend when the running loop is asyncio's own or uvloop's; ``None`` under trio or another loop."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # trio
        return None
    # uvloop's (or a subclass) is told without importing uvloop.
    uvloop = any(cls.__name__ == "Loop" and cls.__module__ == "uvloop.loop" for cls in type(loop).__mro__)
    return AsyncioBackend() if uvloop or isinstance(loop, asyncio.BaseEventLoop) else None
