"""httpcore's network backend on asyncio's own transports and protocols: the default backend's on asyncio.

httpcore's own async backend goes through anyio, which costs a cancel scope
per read and write (the timeout) and builds a dict of socket attributes for
each ``get_extra_info``; on asyncio's own loops this backend does the same
job with a protocol that buffers what arrives and one timer per wait
(docs/performance.md has the profile and the figures). It runs on uvloop
too; under trio the default backend keeps anyio's. Only httpcore's public
``AsyncNetworkBackend``/``AsyncNetworkStream`` interface is implemented, and
every failure is httpcore's exception for it, as anyio's backend raises.

anyio's backend is the reference: tests/test_network_backends.py runs every
hostile-server, TLS, early-answer and upload scenario over both and expects
the same outcome. Two things it does that asyncio does not by itself are
done here: writing ends with the connection (a reset or close wakes a
waiting write, and the next write raises httpcore's ``WriteError``, which
httpcore takes as its cue to read the server's early answer), and names are
resolved without the loop's default thread pool (IP literals and
``localhost`` need no lookup; other names go to a resolver thread pool of the
SDK's own, made anew in a forked child, where the loop's pool still counts
the parent's threads as idle and a lookup would wait for ever).
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
from collections import deque
from typing import Any, cast

import httpcore

from animalstore_client._transports.pool.resolver import interleaved, resolve
from animalstore_client._transports.sockets import opening_sync

__all__ = ["AsyncioBackend", "for_running_loop"]

_PAUSE_AT = 256 * 1024
"""Bytes buffered unread at which the socket stops being read, until the reader catches up."""
_WRITE_SLICE = 64 * 1024
"""The most written before waiting for the transport to drain."""
_TIMED_OUT = object()
_HAS_POLL = hasattr(select, "poll")


class _Protocol(asyncio.Protocol):
    """What arrives on one connection, buffered until read; and whether writing must wait."""

    __slots__ = (
        "_buffered",
        "_chunks",
        "_drained",
        "_eof",
        "_error",
        "_lost",
        "_owner",
        "_paused_reading",
        "_paused_writing",
        "_waiter",
        "loop",
        "plain",
        "sock",
        "transport",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, owner: AsyncioBackend) -> None:
        self.loop = loop
        self._owner = owner
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._eof = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[Any] | None = None
        self._drained: asyncio.Future[Any] | None = None
        self._paused_reading = False
        self._paused_writing = False
        self._lost = False
        self.transport: asyncio.Transport | None = None
        self.sock: socket.socket | None = None
        self.plain: asyncio.BaseTransport | None = None
        """The transport over `sock` (under the TLS layer, for https): what releases the socket."""
        """The socket connected under the transport, made by this backend (`_AsyncioStream.abandon` closes it)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport: create_connection's

    def data_received(self, data: bytes) -> None:
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered >= _PAUSE_AT and not self._paused_reading:
            reading = self._reading()
            if reading is not None:
                self._paused_reading = True
                reading.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return False  # close the transport: an HTTP/1.1 client has nothing more to send once the server is done

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner.forget(self)
        self._eof = True
        self._lost = True
        self._error = exc
        self._wake()
        # Writing ends with the connection: asyncio never resumes writing on a lost one, so a
        # writer waiting for that (or about to) would wait out its whole timeout, or for ever.
        self._paused_writing = False
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

    def _reading(self) -> asyncio.ReadTransport | None:
        """The transport whose reading `_PAUSE_AT` pauses: the socket's, under the TLS layer too.

        Pausing the TLS layer instead would leave records piling up in its buffer, and
        uvloop's drops what that buffer holds when the peer closes without a TLS
        close_notify (its ``eof_received``). With the socket paused, the TLS layer
        decrypts and hands on all it has at once, and sees the peer's close only after
        the bytes before it: the same on every loop.
        """
        # A stream transport either way (create_connection's); uvloop's are not asyncio's subclasses.
        return cast("asyncio.ReadTransport | None", self.plain if self.plain is not None else self.transport)

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
            if self._paused_reading and self._buffered < _PAUSE_AT // 2:
                reading = self._reading()
                if reading is not None:
                    self._paused_reading = False
                    reading.resume_reading()
            return chunk
        if self._error is not None:
            raise httpcore.ReadError(str(self._error) or type(self._error).__name__) from self._error
        return b""  # the peer closed: httpcore reads this as the server's disconnect

    async def drain(self, timeout: float | None) -> None:
        if self._paused_writing:
            drained = self._drained = self.loop.create_future()
            if await _within(self.loop, drained, timeout) is _TIMED_OUT:
                self._drained = None
                raise httpcore.WriteTimeout("the request could not be written within the write timeout")
        if self._lost:
            # What was written may never have left: httpcore reads the server's early answer
            # (a 401 or 413 sent before it closed) on a WriteError, as it does over anyio.
            raise httpcore.WriteError(self.why_ended())

    def has_unread(self) -> bool:
        """Whether anything arrived that no read took yet: bytes, or the peer's close."""
        return bool(self._chunks) or self._eof

    def ended(self) -> bool:
        """Whether the peer closed its side, or the connection was lost."""
        return self._eof

    def lost(self) -> bool:
        """Whether the connection is gone (a reset, or closed after the peer's close): nothing more can be written."""
        return self._lost

    def abandon(self) -> None:
        """Close this connection without its event loop: the loop is closed, or this is a forked child.

        The socket goes first, so that nothing done to the transport after it
        reaches the loop's selector (in a forked child, that selector is the
        parent's too: unregistering the socket there would unregister it for
        the parent). The transport is then aborted, so the loop holds no open
        transport for the socket's number, which a new socket may reuse.
        """
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
        release = getattr(self.plain, "_call_connection_lost", None)
        if release is not None:
            with contextlib.suppress(Exception):
                release(None)

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
    """One connection: a transport (plain or TLS) and the protocol buffering what it receives.

    ``sock`` is the socket this backend made and connected itself, so that
    `abandon` can close it when the event loop that owns the transport is
    gone (asyncio's transport hands out only a wrapper that cannot be closed).
    """

    __slots__ = ("_protocol", "_socket", "_transport")

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol, sock: socket.socket) -> None:
        self._transport = transport
        self._protocol = protocol
        self._socket = sock

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._protocol.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        protocol = self._protocol
        transport = self._transport
        view = memoryview(buffer)
        for start in range(0, len(view), _WRITE_SLICE):
            # Checked before every slice: the server may answer and close (or reset) while a
            # large body is still going out, and a closed transport drops writes silently (or,
            # under TLS, raises asyncio's own errors).
            if protocol.ended() or transport.is_closing():
                raise httpcore.WriteError(protocol.why_ended())
            # In slices, each drained: a TLS transport passes one large write straight down, and
            # flow control (so the write timeout) would never reach this protocol.
            try:
                transport.write(view[start : start + _WRITE_SLICE])
            except Exception as exc:  # asyncio's, whatever they are, become httpcore's
                raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc
            await protocol.drain(timeout)

    async def aclose(self) -> None:
        if self._protocol.lost():  # asyncio closed the socket already, and aborting again can raise
            return
        # No TLS close_notify exchange (anyio's backend, as httpcore uses it, sends none either).
        try:
            self._transport.abort()
        except RuntimeError:
            if self._protocol.loop.is_closed():  # the socket is closed without the loop
                self.abandon()
        except Exception:  # noqa: BLE001  # a transport asyncio is closing already: closed enough
            return

    def abandon(self) -> None:
        """Close the connection now, without the event loop: only once that loop is closed (or gone) for good."""
        self._protocol.abandon()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = self._protocol.loop
        if self._protocol.has_unread():
            # Bytes before the handshake are no server's answer: read after it, they would pass
            # for the authenticated response (anyio's TLS layer refuses them too).
            self._transport.abort()
            raise httpcore.ConnectError("the server sent data (or closed) before the TLS handshake")
        try:
            transport = await loop.start_tls(
                self._transport,
                self._protocol,
                ssl_context,
                server_hostname=server_hostname,
                ssl_handshake_timeout=timeout if timeout is not None and timeout > 0 else None,
            )
        except Exception as exc:  # ssl's, the OS's and asyncio's own all become httpcore's
            self._transport.abort()
            if isinstance(exc, (TimeoutError, ConnectionAbortedError)) and "handshake" in str(exc).lower():
                raise httpcore.ConnectTimeout(str(exc)) from exc
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        if transport is None:  # the loop closed under it
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        self._protocol.transport = transport  # what is written to and closed from now on: the TLS layer
        return _AsyncioStream(transport, self._protocol, self._socket)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # Asked of an idle connection as the pool takes it or hands it on: anything received
            # since its answer ended (the server's close, or bytes it should not have sent), by the
            # loop already or still in the kernel (a busy loop may not have read it yet).
            return self._protocol.has_unread() or _readable_now(self._socket)
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
    """httpcore's network backend on the running asyncio loop's transports (`for_running_loop` says which loops).

    It knows the connections it opened that are still open, so that they can
    be closed without their loop (`abandon`): when the loop that owned them is
    closed, and in a forked child, where the parent's connections must not be
    read (the child's copy of the loop would read the parent's answers).
    """

    def __init__(self) -> None:
        self._open: set[_Protocol] = set()
        self._lock = threading.Lock()
        _BACKENDS.add(self)

    def track(self, protocol: _Protocol) -> None:
        """A connection being opened: this backend's to abandon until it closes."""
        with self._lock:
            self._open.add(protocol)

    def forget(self, protocol: _Protocol) -> None:
        """A connection closed: it is no longer this backend's to abandon."""
        with self._lock:
            self._open.discard(protocol)

    def after_fork(self) -> None:
        """In a forked child: a lock of its own (a parent thread may have held this one), then `abandon`."""
        self._lock = threading.Lock()
        self.abandon()

    def abandon(self) -> None:
        """Close every connection this backend opened, without their event loop (see `_Protocol.abandon`)."""
        with self._lock:
            protocols = list(self._open)
            self._open.clear()
        for protocol in protocols:
            protocol.abandon()

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
        # Its own task, so that the timeout cancels the connecting and nothing else; and not
        # asyncio.wait_for, which on 3.11 can return a connection for a cancelled call.
        connecting = loop.create_task(_connect(self, loop, host, port, local))
        timed_out: list[bool] = []

        def time_out() -> None:
            timed_out.append(True)
            connecting.cancel()

        timer = None if timeout is None else loop.call_later(timeout, time_out)
        try:
            transport, protocol = await connecting
        except asyncio.CancelledError:
            current = asyncio.current_task()
            cancelling = getattr(current, "cancelling", None)  # 3.11+: whether the caller is being cancelled
            if not timed_out or (cancelling is not None and cancelling()):
                _abort_when_connected(connecting)  # the caller was cancelled: nothing may stay open
                raise
            raise httpcore.ConnectTimeout(f"no connection to {host}:{port} within the connect timeout") from None
        except Exception as exc:  # refused, unreachable, a name that is not one: httpcore's
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        finally:
            if timer is not None:
                timer.cancel()
        sock = protocol.sock
        try:
            if sock is None or transport.is_closing():
                raise ConnectionResetError("the server closed the connection as it was opened")
            for option in socket_options or ():
                sock.setsockopt(*option)
        except OSError as exc:
            transport.abort()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return _AsyncioStream(transport, protocol, sock)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


_HAPPY_EYEBALLS_DELAY = 0.25
"""Seconds before the next address of a host is tried alongside (RFC 8305's figure, as anyio's backend uses)."""


async def _connect(
    backend: AsyncioBackend, loop: asyncio.AbstractEventLoop, host: str, port: int, local: tuple[str, int] | None
) -> tuple[asyncio.Transport, _Protocol]:
    """A connection to the first of ``host``'s addresses that answers, tried as RFC 8305 says (Happy Eyeballs).

    The next address is tried alongside once the last one has had `_HAPPY_EYEBALLS_DELAY`
    seconds, or at once when it fails. Written here rather than asyncio's
    ``happy_eyeballs_delay=``, whose race leaves a connected socket open when the
    caller is cancelled (Python 3.11): every attempt that does not win, and every
    one if the caller is cancelled, is closed here.
    """
    infos = await resolve(host, port)
    attempts: dict[asyncio.Task[Any], _Protocol] = {}
    pending: set[asyncio.Task[Any]] = set()
    errors: list[BaseException] = []
    won: asyncio.Task[Any] | None = None
    try:
        for family, _, _, _, address in interleaved(infos):
            protocol = _Protocol(loop, backend)
            attempt = loop.create_task(_open(backend, loop, protocol, family, address, local))
            attempts[attempt] = protocol
            pending.add(attempt)
            won = await _first_to_connect(pending, errors, _HAPPY_EYEBALLS_DELAY)
            if won is not None:
                break
        while won is None and pending:
            won = await _first_to_connect(pending, errors, None)
        if won is None:
            raise errors[-1] if errors else OSError(f"{host} has no address to connect to")
        transport, _ = won.result()
        return transport, attempts[won]
    finally:
        for attempt in attempts:
            if attempt is not won:
                attempt.cancel()
                _abort_when_connected(attempt)


async def _open(
    backend: AsyncioBackend,
    loop: asyncio.AbstractEventLoop,
    protocol: _Protocol,
    family: int,
    address: Any,
    local: tuple[str, int] | None,
) -> tuple[asyncio.Transport, _Protocol]:
    """A transport over a socket made and connected here, so that this backend holds the socket itself.

    What ``loop.create_connection(host, port)`` does for one address, with the
    socket kept (`_AsyncioStream.abandon`): closed here if anything fails or the
    attempt is cancelled before the transport owns it.
    """
    with opening_sync():  # made and tracked as one step: a fork never finds it in between
        sock = protocol.sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        backend.track(protocol)  # from now: a fork while it connects must find it too
    try:
        sock.setblocking(False)
        if local is not None:
            sock.bind(local)
        await loop.sock_connect(sock, address)
        transport, _ = await loop.create_connection(lambda: protocol, sock=sock)
    except BaseException:
        backend.forget(protocol)
        sock.close()
        raise
    protocol.plain = transport
    return transport, protocol


_BACKENDS: weakref.WeakSet[AsyncioBackend] = weakref.WeakSet()
"""Every backend of this process, for a forked child to abandon their connections."""


def _after_fork_in_child() -> None:
    """A child must not read the parent's connections: they are closed here, before its loop runs again.

    The child's copy of an event loop shares its selector with the parent,
    so a connection of the parent's still registered there would have its
    answers read by the child first. Closing the child's copy of each socket
    leaves the parent's untouched.
    """
    for backend in list(_BACKENDS):
        backend.after_fork()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


async def _first_to_connect(
    pending: set[asyncio.Task[Any]], errors: list[BaseException], delay: float | None
) -> asyncio.Task[Any] | None:
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


def _abort_when_connected(connecting: asyncio.Task[Any]) -> None:
    """Close the connection ``connecting`` made, now or once it is made: its caller has gone."""

    def abort(task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is None:
            task.result()[0].abort()

    connecting.add_done_callback(abort)


def _readable_now(sock: Any) -> bool:
    """Whether the kernel holds data or the peer's close for ``sock`` (gone: ``True``, its next read ends)."""
    if sock is None:
        return True
    try:
        fd = sock.fileno()
    except (OSError, ValueError):
        return True
    if fd < 0:
        return True
    if _HAS_POLL:
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        return bool(poll.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


def for_running_loop() -> AsyncioBackend | None:
    """This backend when the running loop is asyncio's own or uvloop's; ``None`` under trio or another loop.

    uvloop runs asyncio's transport and protocol interface, which is all this
    backend uses, and its TLS transport is held to the same rule as asyncio's
    (`_Protocol._reading`): the same stray-answer check and early answers on
    both (tests/test_network_backends.py runs its scenarios on each).
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # trio
        return None
    return AsyncioBackend() if isinstance(loop, asyncio.BaseEventLoop) or _is_uvloop(loop) else None


def _is_uvloop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` is uvloop's (or made from it), told without importing uvloop."""
    return any(cls.__name__ == "Loop" and cls.__module__ == "uvloop.loop" for cls in type(loop).__mro__)
