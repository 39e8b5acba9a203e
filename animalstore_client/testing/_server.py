"""A real HTTP/1.1 server on 127.0.0.1 in front of a `FakeAnimalStore` (standard library only).

One thread runs an asyncio event loop that holds every connection, so idle
or slow clients cost a socket and a few kilobytes each, never a thread.
Whatever arrives gets an answer with a status line and a JSON Error body, or
a clean close; nothing leaves a traceback or a parked connection. The bounds:

==========================  ==============================================================
Connections                 at most `MAX_CONNECTIONS` (1,024) at once; at the limit (or when
                            the process runs out of descriptors) the connection idle the
                            longest is closed; with none idle, the oldest request still
                            arriving gets 503; with every connection being answered, the
                            newcomer gets 503
Waiting for a request       10 s of silence, then the connection closes (no answer)
A whole request             head and body within 10 s of its first byte, else 408
Request line and headers    64 KiB and 100 fields at most, else 431
HTTP version                1.0 and 1.1; any other gets 505
Body                        1 MiB (413 from the store); over 8 MiB is not read (413); the
                            body of a request without an accepted key (401) is read off
                            the connection as it comes and dropped, never held whole
A chunk-size line           1 KiB
An answer the client        10 s to take it, then the connection is dropped
won't read
A ``timeout`` fault         holds the connection until the client closes, 30 s at most
==========================  ==============================================================
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import re
import socket
import ssl
import struct
import sys
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from email.utils import formatdate
from typing import TYPE_CHECKING, Any, NamedTuple, cast
from urllib.parse import urlsplit

from ._control import CONTROL_PREFIX
from ._control import control as answer_control
from ._messages import MAX_BODY_BYTES, FakeResponse, error_response, reason_phrase

if TYPE_CHECKING:
    from ._store import FakeAnimalStore

__all__ = ["MAX_CONNECTIONS", "FakeServer", "make_server", "running_server"]

MAX_CONNECTIONS = 1024
"""Connections held at once; a newcomer beyond it makes the longest-idle one (or the oldest slow request) give way."""
_READ_LIMIT = 8 * MAX_BODY_BYTES
"""Bodies declared larger than this are not read at all: the answer is 413 and the connection closes."""
_HEAD_LIMIT = 64 * 1024
"""Bytes of request line and header fields (and of trailer fields) a request may have; more is 431."""
_MAX_FIELDS = 100
"""Header fields (and trailer fields) a request may have; more is 431."""
_IDLE_TIMEOUT = 10.0
"""Seconds a connection may wait silently for its next request's first byte; then it closes, unanswered."""
_REQUEST_TIMEOUT = 10.0
"""Seconds from a request's first byte until its head and body must all have arrived; then 408."""
_WRITE_TIMEOUT = 10.0
"""Seconds a client may leave an answer unread before the connection is dropped."""
_UNANSWERED = 30.0
"""Seconds a "timeout" connection fault holds a connection unanswered, at most."""
_LINGER = 2.0
"""Seconds a connection is drained after its last answer before it closes, so the client reads the answer."""
_LINGER_BYTES = 64 * 1024 * 1024
"""Bytes drained after the last answer, at most (a refused 8 MiB body fits; the time limit comes first on loopback)."""
_LENGTH = re.compile(rb"[0-9]{1,19}")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VERSION = re.compile(rb"HTTP/([0-9])\.([0-9])")
_ANY_VERSION = re.compile(rb"HTTP/[0-9]+(?:\.[0-9]+)?")
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_FORBIDDEN_IN_FIELDS = re.compile(rb"[\r\x00]")
_UNSAFE_IN_HEADER = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_RETRYABLE_ACCEPT = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
_BUSY_BODY = error_response(503, "too_many_connections", "The fake store holds too many connections; retry.").content
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)


class _Refused(Exception):
    """The request cannot be served: answer ``status`` and close the connection."""

    def __init__(self, status: int, code: str, message: str, line: str = "-") -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.line = line
        """The request line, for the log, when no request could be parsed."""


class _Gone(Exception):
    """The client closed, reset or fell silent: close without answering."""


class _Request(NamedTuple):
    method: str
    target: str
    version: tuple[int, int]
    fields: list[tuple[str, str]]
    """Header fields with lower-case names, in the order received."""

    def values(self, name: str) -> list[str]:
        return [value for field, value in self.fields if field == name]

    def tokens(self, name: str) -> set[str]:
        return {token.strip().lower() for value in self.values(name) for token in value.split(",")}


def _settle(waiter: asyncio.Future[bool], value: bool) -> None:
    if not waiter.done():
        waiter.set_result(value)


class _Peer(asyncio.Protocol):
    """One connection's incoming bytes, read with deadlines, and flow control both ways.

    No task is made per read: a waiter future is settled by new bytes, by
    the end of the connection, or by a timer at the deadline.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, *, over_tls: bool, registry: set[_Peer]) -> None:
        self.loop = loop
        self.over_tls = over_tls
        self._registry = registry  # the server's open connections, until each is lost
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.lost = False
        self._ceiling = 2 * _HEAD_LIMIT
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
        self._ceiling = max(2 * _HEAD_LIMIT, room)
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
        if self.evicted:
            raise _Refused(503, "too_many_connections", "The fake store holds too many connections; retry.")
        return arrived

    def evict(self) -> None:
        """Give way to a newer connection: the request still arriving is refused with 503."""
        self.evicted = True
        if self._read_waiter is not None:
            _settle(self._read_waiter, True)

    def take(self, size: int) -> bytes:
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    async def send(self, data: bytes, deadline: float) -> None:
        """Write ``data``; raise `_Gone` if the client leaves it unread past ``deadline`` or is gone."""
        if self.transport is None or self.transport.is_closing():
            raise _Gone
        self.transport.write(data)
        while self._writing_paused and not self.lost:
            waiter: asyncio.Future[bool] = self.loop.create_future()
            self._write_waiter = waiter
            timer = self.loop.call_at(deadline, _settle, waiter, False)
            try:
                if not await waiter:
                    raise _Gone
            finally:
                timer.cancel()
                self._write_waiter = None
        if self.lost:
            raise _Gone

    def reset(self) -> None:
        """Close with a TCP reset, as a crashed or refusing peer does (SO_LINGER 0)."""
        if self.transport is None:
            return
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()


def _phrase(status: int) -> str:
    return reason_phrase(status, "Unknown")


class FakeServer:
    """An HTTP/1.1 server on 127.0.0.1:``port`` answering from a `FakeAnimalStore`.

    It binds at once (``server_address`` holds the port), serves in
    `serve_forever` on the calling thread, and stops when another thread
    calls `shutdown`; `server_close` releases the port. See the module
    docstring for the bounds it keeps.
    """

    def __init__(
        self,
        store: FakeAnimalStore,
        port: int = 0,
        *,
        quiet: bool = True,
        control: bool = False,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.store = store
        self.quiet = quiet
        self.control = control
        self.tls = tls
        # The bounds are read when the server is made, so a test can change them for one server.
        self.max_connections = MAX_CONNECTIONS
        self.idle_timeout = _IDLE_TIMEOUT
        self.request_timeout = _REQUEST_TIMEOUT
        self.write_timeout = _WRITE_TIMEOUT
        self.unanswered = _UNANSWERED
        self.linger = _LINGER
        # A short backlog (socketserver's is 5) drops connections when a test opens a
        # hundred at once; the kernel then retries them a second later.
        self.socket = socket.create_server(("127.0.0.1", port), backlog=1024)
        self.socket.setblocking(False)
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        self._state = threading.Lock()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._peers: set[_Peer] = set()
        self._idle: dict[_Peer, None] = {}  # insertion order: the longest idle first
        self._reading: dict[_Peer, None] = {}  # requests still arriving, the oldest first

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def connections(self) -> int:
        """Connections held now (for tests and benchmarks)."""
        return len(self._connections)

    # --- running and stopping -----------------------------------------------------------------

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Serve until `shutdown` is called from another thread (or Ctrl+C on this one)."""
        loop = asyncio.new_event_loop()
        with self._state:
            if self._stopping.is_set():
                loop.close()
                self._stopped.set()
                return
            self._loop = loop
        loop.set_exception_handler(self._loop_error)
        main = loop.create_task(self._main())
        try:
            loop.run_until_complete(main)
        finally:
            try:
                pending = asyncio.all_tasks(loop)  # after Ctrl+C: the tasks the interrupted loop left
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                if main.done() and not main.cancelled():
                    main.exception()  # seen here: the KeyboardInterrupt already propagates
            finally:
                with self._state:
                    self._loop = None
                loop.close()
                self._stopped.set()

    def shutdown(self) -> None:
        """Stop `serve_forever` and wait for it to return; every connection is closed."""
        self._stopping.set()
        with self._state:
            loop, wake = self._loop, self._wake
            if loop is None:
                return
            with contextlib.suppress(RuntimeError):  # the loop just closed
                loop.call_soon_threadsafe(lambda: wake.set() if wake is not None else None)
        self._stopped.wait()

    def server_close(self) -> None:
        """Release the listening socket (after `shutdown`, or instead of serving)."""
        self.socket.close()

    async def _main(self) -> None:
        wake = asyncio.Event()
        with self._state:
            self._wake = wake
        if self._stopping.is_set():
            return
        accepting = asyncio.ensure_future(self._accept())
        try:
            await wake.wait()
        finally:
            accepting.cancel()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(accepting, *self._connections, return_exceptions=True)
            for peer in list(self._peers):  # closing ones with answers still unsent too
                if peer.transport is not None:
                    peer.transport.abort()
            for _ in range(3):  # their connection_lost callbacks (a TLS one takes a step more)
                await asyncio.sleep(0)

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # Connections end in every way a network allows; none of that is worth a traceback.
        if not self.quiet:
            exc = context.get("exception")
            detail = f"{type(exc).__name__}: {exc}" if exc is not None else ""
            print(f"FakeAnimalStore: {context.get('message', 'error')} {detail}".rstrip(), file=sys.stderr)

    # --- connections -------------------------------------------------------------------------

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if self.socket.fileno() < 0:  # server_close() while serving
                return
            try:
                sock, address = await loop.sock_accept(self.socket)
            except OSError as exc:
                if exc.errno in _RETRYABLE_ACCEPT:
                    # Out of descriptors: make one connection give way, and let it close before accepting again.
                    await asyncio.sleep(0.001 if self._evict() else 0.05)
                continue
            if len(self._connections) >= self.max_connections and not self._evict():
                self._refuse(sock)
                continue
            task = loop.create_task(self._connection(sock, address))
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)

    def _evict(self) -> bool:
        """Make room: close the longest-idle connection, else refuse the oldest request still arriving.

        A slow sender's request gets 503 and ends; a request already being
        answered is never cut. False when every connection is being answered.
        """
        for peer in self._idle:
            del self._idle[peer]
            if peer.transport is not None:
                peer.transport.close()
            return True
        for peer in self._reading:
            del self._reading[peer]
            peer.evict()
            return True
        return False

    def _refuse(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            if self.tls is None:
                sock.send(_BUSY)
                sock.shutdown(socket.SHUT_WR)
        sock.close()

    async def _connection(self, sock: socket.socket, address: Any) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(OSError):
            # Headers and body go out in one write; this keeps the kernel from holding a small answer back.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = _Peer(loop, over_tls=self.tls is not None, registry=self._peers)
        try:
            await loop.connect_accepted_socket(
                lambda: peer, sock, ssl=self.tls, ssl_handshake_timeout=self.request_timeout if self.tls else None
            )
        except (OSError, asyncio.TimeoutError):  # a refused certificate, a reset, a handshake too slow
            sock.close()
            return
        try:
            await self._converse(peer, address)
        except _Gone:
            pass
        except Exception as exc:  # noqa: BLE001 (a fake that crashes must still answer, once)
            if not peer.lost:
                with contextlib.suppress(_Gone):
                    answer = error_response(500, "internal_error", f"The fake store failed: {type(exc).__name__}")
                    await self._send(peer, answer, "GET", close=True)
            self._loop_error(loop, {"message": "unexpected error", "exception": exc})
        finally:
            self._idle.pop(peer, None)
            transport = peer.transport
            if transport is not None and not transport.is_closing():
                transport.close()  # after what is still buffered is sent...
                loop.call_later(self.write_timeout, transport.abort)  # ...or given up on, if the client won't read it

    async def _converse(self, peer: _Peer, address: Any) -> None:
        """Serve the connection's requests in turn until it closes."""
        loop = peer.loop
        while True:
            if not await self._next_request(peer):
                return
            deadline = loop.time() + self.request_timeout
            request: _Request | None = None
            self._reading[peer] = None
            try:
                request = await self._read_head(peer, deadline)
                body = await self._read_body(peer, request, deadline, keep=self._keeps_body(request))
                path, query = _split_target(request)
            except _Refused as exc:
                self._reading.pop(peer, None)
                evicted, peer.evicted = peer.evicted, False
                answer = error_response(exc.status, exc.code, exc.message, {"Connection": "close"})
                method = request.method if request is not None else "GET"
                self._log(address, request if request is not None else exc.line, answer.status)
                await self._send(peer, answer, method, close=True)
                if not evicted:  # one that gave way frees its slot at once
                    await self._linger(peer)
                return
            finally:
                self._reading.pop(peer, None)
                peer.evicted = False  # too late to matter once the request has arrived
            close = _wants_close(request)
            if path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/"):
                answer = answer_control(
                    self.store,
                    request.method,
                    path,
                    request.fields,
                    body,
                    enabled=self.control,
                    port=self.port,
                    tls=self.tls is not None,
                )
            else:
                headers = dict(request.fields)
                try:
                    # Served at once, answered late: a slow answer may follow a stored pet.
                    reply, fault = self.store.exchange(request.method, path, query, headers, body)
                except Exception as exc:  # noqa: BLE001 (a fake that crashes must still answer)
                    reply, fault, close = (
                        error_response(500, "internal_error", f"The fake store failed: {type(exc).__name__}"),
                        None,
                        True,
                    )
                if fault is not None or reply is None:
                    self._log(address, request, 0)
                    await self._drop(peer, fault)
                    return
                answer = reply
                delay = self.store.next_delay()
                if delay > 0:
                    await asyncio.sleep(delay)
            self._log(address, request, answer.status)
            await self._send(peer, answer, request.method, close=close, keep_alive=request.version == (1, 0))
            if close:
                await self._linger(peer)
                return

    async def _next_request(self, peer: _Peer) -> bool:
        """Wait, as an idle connection, for the next request's first byte; False if none comes."""
        deadline = peer.loop.time() + self.idle_timeout
        self._idle[peer] = None
        try:
            while True:
                while peer.buffer.startswith((b"\r", b"\n")):  # empty lines before a request are allowed
                    del peer.buffer[:1]
                if peer.buffer:
                    return True
                if peer.eof or not await peer.more(deadline):
                    return False
        finally:
            self._idle.pop(peer, None)

    async def _read_head(self, peer: _Peer, deadline: float) -> _Request:
        scanned = 0
        while True:
            end = _HEAD_END.search(peer.buffer, max(0, scanned - 3))
            if end is not None and end.end() <= _HEAD_LIMIT:
                return _parse_head(peer.take(end.end()))
            scanned = len(peer.buffer)
            if scanned > _HEAD_LIMIT:
                line_end = peer.buffer.find(b"\n", 0, _HEAD_LIMIT)
                if line_end == -1:
                    raise _Refused(414, "uri_too_long", f"The request line is longer than {_HEAD_LIMIT} bytes.")
                raise _Refused(
                    431,
                    "request_header_fields_too_large",
                    f"The request line and header fields are larger than {_HEAD_LIMIT} bytes.",
                )
            if peer.eof:
                raise _Refused(400, "incomplete_request", "The connection closed before the request was complete.")
            if not await peer.more(deadline):
                raise self._late()

    def _late(self) -> _Refused:
        return _Refused(408, "request_timeout", f"The request took longer than {self.request_timeout:g} s to arrive.")

    def _keeps_body(self, request: _Request) -> bool:
        """Whether the body is worth holding: a control request's, or one with a key the store accepts.

        The store answers any other request 401 (or with an injected fault)
        whatever its body, so that body is read off the connection and
        dropped as it comes: a page's cross-site POSTs cannot make the
        server hold megabytes.
        """
        try:
            path, _ = _split_target(request)
        except _Refused:
            return False  # refused after the body is read, for the same reason
        if path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/"):
            return True
        return self.store.authorized(dict(request.fields))

    async def _read_body(self, peer: _Peer, request: _Request, deadline: float, *, keep: bool = True) -> bytes:
        """The request's body, framed by Content-Length or chunked; ``keep=False`` reads it and returns ``b""``."""
        codings = request.values("transfer-encoding")
        lengths = request.values("content-length")
        if codings and lengths:
            raise _Refused(400, "invalid_framing", "Content-Length and Transfer-Encoding must not both be sent.")
        if codings:
            if [c.strip().lower() for c in ",".join(codings).split(",")] != ["chunked"]:
                raise _Refused(400, "invalid_framing", "The only transfer coding accepted is chunked.")
            await self._continue(peer, request, deadline)
            return await self._read_chunked(peer, deadline, keep=keep)
        if not lengths:
            return b""
        if len(lengths) > 1 or not _LENGTH.fullmatch(lengths[0].strip().encode("latin-1")):
            shown = ", ".join(lengths)[:40]
            raise _Refused(400, "invalid_content_length", f"Content-Length must be one decimal number, got {shown!r}.")
        length = int(lengths[0])
        if length > _READ_LIMIT:
            raise _Refused(413, "payload_too_large", f"The body is {length} bytes; the limit is {MAX_BODY_BYTES}.")
        if length:
            await self._continue(peer, request, deadline)
        if not keep:
            await self._skip(peer, length, deadline)
            return b""
        return await self._read_exact(peer, length, deadline)

    async def _continue(self, peer: _Peer, request: _Request, deadline: float) -> None:
        """Send ``100 Continue`` to a client that waits for it before its body."""
        if request.version >= (1, 1) and "100-continue" in request.tokens("expect") and not peer.buffer:
            await peer.send(b"HTTP/1.1 100 Continue\r\n\r\n", deadline)

    async def _read_exact(self, peer: _Peer, length: int, deadline: float) -> bytes:
        while len(peer.buffer) < length:
            if peer.eof:
                raise _Refused(400, "incomplete_body", "The connection closed before the body was complete.")
            if not await peer.more(deadline, room=length):
                raise self._late()
        return peer.take(length)

    async def _skip(self, peer: _Peer, length: int, deadline: float) -> None:
        """Read ``length`` bytes and drop them as they arrive: at most a buffer's worth is held at once."""
        while True:
            taken = min(length, len(peer.buffer))
            del peer.buffer[:taken]
            length -= taken
            if not length:
                return
            if peer.eof:
                raise _Refused(400, "incomplete_body", "The connection closed before the body was complete.")
            if not await peer.more(deadline):
                raise self._late()

    async def _read_line(self, peer: _Peer, deadline: float, limit: int) -> bytes:
        while True:
            end = peer.buffer.find(b"\n", 0, limit + 1)
            if end != -1:
                return peer.take(end + 1).rstrip(b"\r\n")
            if len(peer.buffer) > limit:
                raise _Refused(400, "invalid_chunk", f"A chunk-size or trailer line is longer than {limit} bytes.")
            if peer.eof:
                raise _Refused(400, "incomplete_body", "The connection closed before the body was complete.")
            if not await peer.more(deadline):
                raise self._late()

    async def _read_chunked(self, peer: _Peer, deadline: float, *, keep: bool = True) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            size_text = (await self._read_line(peer, deadline, 1024)).split(b";", 1)[0].strip()
            if not _CHUNK_SIZE.fullmatch(size_text):
                shown = size_text[:20].decode("latin-1")
                raise _Refused(400, "invalid_chunk", f"A chunk size must be hexadecimal, got {shown!r}.")
            size = int(size_text, 16)
            if size == 0:
                trailer = 0
                for _ in range(_MAX_FIELDS + 1):  # trailer fields, ignored, bounded as header fields are
                    line = await self._read_line(peer, deadline, _HEAD_LIMIT)
                    if not line:
                        return b"".join(parts)
                    trailer += len(line)
                    if trailer > _HEAD_LIMIT:
                        break
                raise _Refused(431, "request_header_fields_too_large", "The trailer fields are too large.")
            total += size
            if total > _READ_LIMIT:
                raise _Refused(413, "payload_too_large", f"The body exceeds the limit of {MAX_BODY_BYTES} bytes.")
            if keep:
                parts.append(await self._read_exact(peer, size, deadline))
            else:
                await self._skip(peer, size, deadline)
            if await self._read_line(peer, deadline, 1024):
                raise _Refused(400, "invalid_chunk", "A chunk's data must end with CRLF.")

    # --- answering -----------------------------------------------------------------------------

    async def _send(
        self, peer: _Peer, answer: FakeResponse, method: str, *, close: bool, keep_alive: bool = False
    ) -> None:
        lines = [
            f"HTTP/1.1 {answer.status} {_phrase(answer.status)}",
            "Server: FakeAnimalStore",
            f"Date: {formatdate(time.time(), usegmt=True)}",
        ]
        named = {name.lower() for name in answer.headers}
        for name, value in answer.headers.items():
            # Values come from the store and checked fault arguments; this is the last guard against a split header.
            lines.append(f"{name}: {_UNSAFE_IN_HEADER.sub(' ', value)}")
        lines.append(f"Content-Length: {len(answer.content)}")
        if "connection" not in named:
            if close:
                lines.append("Connection: close")
            elif keep_alive:
                lines.append("Connection: keep-alive")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        await peer.send(head if method == "HEAD" else head + answer.content, peer.loop.time() + self.write_timeout)

    async def _linger(self, peer: _Peer) -> None:
        """Close without a reset: say we are done, then drain what the client still sends, for a while.

        Closing a socket with unread bytes sends a TCP reset, which can
        destroy the answer before the client reads it.
        """
        transport = peer.transport
        if transport is None or transport.is_closing():
            return
        if not transport.can_write_eof():
            return
        with contextlib.suppress(OSError):
            transport.write_eof()
        deadline = peer.loop.time() + self.linger
        drained = len(peer.buffer)
        peer.buffer.clear()
        while not peer.eof and drained < _LINGER_BYTES and await peer.more(deadline):
            drained += len(peer.buffer)
            peer.buffer.clear()

    async def _drop(self, peer: _Peer, fault: str | None) -> None:
        """Carry out a connection fault: reset now, or after holding the connection unanswered."""
        if fault == "timeout":
            # Unanswered until the client gives up (its close ends the wait) or the time runs out.
            deadline = peer.loop.time() + self.unanswered
            while not peer.eof and await peer.more(deadline):
                peer.buffer.clear()
        peer.reset()

    def _log(self, address: Any, request: _Request | str, status: int) -> None:
        if self.quiet:
            return
        host = str(cast("tuple[object, ...]", address)[0]) if isinstance(address, tuple) and address else "-"
        line = (
            f"{request.method} {request.target[:200]} HTTP/{request.version[0]}.{request.version[1]}"
            if isinstance(request, _Request)
            else request
        )
        shown = status or "-"
        stamp = time.strftime("%d/%b/%Y %H:%M:%S")
        print(f'{host} - - [{stamp}] "{line}" {shown} -', file=sys.stderr, flush=True)


def _parse_head(head: bytes) -> _Request:
    try:
        return _parse_lines([line.removesuffix(b"\r") for line in head.split(b"\n")])
    except _Refused as exc:
        exc.line = repr(head.split(b"\n", 1)[0].rstrip(b"\r")[:200].decode("latin-1"))[1:-1]
        raise


def _parse_lines(lines: list[bytes]) -> _Request:
    while lines and not lines[-1]:
        lines.pop()
    parts = lines[0].split()
    if len(parts) != 3:
        shown = lines[0][:60].decode("latin-1")
        raise _Refused(400, "invalid_request_line", f"A request line is 'METHOD target HTTP/1.1', got {shown!r}.")
    raw_method, raw_target, raw_version = parts
    version = _VERSION.fullmatch(raw_version)
    if version is None or version.group(1) != b"1":
        shown = raw_version[:20].decode("latin-1")
        if version is not None or _ANY_VERSION.fullmatch(raw_version):
            raise _Refused(505, "http_version_not_supported", f"Only HTTP/1.0 and HTTP/1.1 are served, got {shown!r}.")
        raise _Refused(400, "invalid_request_line", f"The HTTP version must be HTTP/1.1, got {shown!r}.")
    if not _TOKEN.fullmatch(raw_method):
        shown = raw_method[:20].decode("latin-1")
        raise _Refused(400, "invalid_request_line", f"The method must be a token, got {shown!r}.")
    fields: list[tuple[str, str]] = []
    for line in lines[1:]:
        if len(fields) >= _MAX_FIELDS:
            raise _Refused(
                431, "request_header_fields_too_large", f"A request may have at most {_MAX_FIELDS} header fields."
            )
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name) or _FORBIDDEN_IN_FIELDS.search(value):
            shown = line[:40].decode("latin-1")
            raise _Refused(400, "invalid_header", f"A header field must be 'Name: value', got {shown!r}.")
        fields.append((name.decode("ascii").lower(), value.strip(b" \t").decode("latin-1")))
    minor = 1 if version.group(2) != b"0" else 0
    return _Request(raw_method.decode("ascii"), raw_target.decode("latin-1"), (1, minor), fields)


def _split_target(request: _Request) -> tuple[str, str]:
    """The path and query of the request target (origin-form, absolute-form, or ``*`` for OPTIONS)."""
    target = request.target
    if target.startswith("/"):
        path, _, query = target.partition("#")[0].partition("?")
        return path, query
    if target.lower().startswith(("http://", "https://")):
        try:
            url = urlsplit(target)
            url.port  # noqa: B018 (raises ValueError for a port that is no port)
        except ValueError as exc:
            raise _Refused(400, "invalid_target", f"The request target is not a valid URL: {exc}.") from None
        return url.path or "/", url.query
    if target == "*" and request.method == "OPTIONS":
        return target, ""
    raise _Refused(400, "invalid_target", f"The request target must start with '/', got {target[:40]!r}.")


def _wants_close(request: _Request) -> bool:
    tokens = request.tokens("connection")
    if request.version == (1, 0):
        return "keep-alive" not in tokens
    return "close" in tokens


def make_server(
    store: FakeAnimalStore,
    port: int = 0,
    *,
    quiet: bool = True,
    control: bool = False,
    tls: ssl.SSLContext | None = None,
) -> FakeServer:
    """A `FakeServer` on 127.0.0.1:``port`` answering from ``store`` (over TLS with ``tls``).

    It answers whatever arrives: chunked bodies are read as bodies; a bad or
    contradictory ``Content-Length``, a body too large or too slow, a header
    section over 64 KiB, an unsupported HTTP version or a malformed request
    line or target gets a 4xx (or 505) Error body and a closed connection
    (so the next bytes are never taken for a request); a client silent for
    10 s is disconnected. With ``control`` the control API answers under
    ``/_fake/`` (see ``_control``); without it, that is refused with 403.
    """
    return FakeServer(store, port, quiet=quiet, control=control, tls=tls)


@contextmanager
def running_server(
    store: FakeAnimalStore, port: int = 0, *, control: bool = False, tls: ssl.SSLContext | None = None
) -> Generator[str]:
    """Run ``make_server`` in a background thread; yield its base URL; stop it on exit."""
    server = make_server(store, port, control=control, tls=tls)
    thread = threading.Thread(target=server.serve_forever, name="FakeAnimalStore server", daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.port}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
