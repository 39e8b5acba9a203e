"""A real HTTP/1.1 server on 127.0.0.1 in front of a `FakeAnimalStore`: its connections, held within bounds, and served.

Standard library only: ``_http1`` reads each request and puts each answer
into bytes, and each connection's bytes come and go through a ``_peer.Peer``.
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
import socket
import ssl
import sys
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from ._control import control as answer_control
from ._control import is_control
from ._http1 import HEAD_LIMIT, Refused, Request, RequestReader, answer_bytes, split_target, wants_close
from ._messages import FakeResponse, error_response
from ._peer import Gone, Peer

if TYPE_CHECKING:
    from ._store import FakeAnimalStore

__all__ = ["MAX_CONNECTIONS", "FakeServer", "make_server", "running_server"]

MAX_CONNECTIONS = 1024
"""Connections held at once; a newcomer beyond it makes the longest-idle one (or the oldest slow request) give way."""
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
_RETRYABLE_ACCEPT = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
_BUSY_BODY = error_response(503, "too_many_connections", "The fake store holds too many connections; retry.").content
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)


class FakeServer:
    """An HTTP/1.1 server on 127.0.0.1:``port`` answering from a `FakeAnimalStore` (over TLS with ``tls``).

    It binds at once (``server_address`` holds the port), serves in
    `serve_forever` on the calling thread, and stops when another thread
    calls `shutdown`; `server_close` releases the port.

    It answers whatever arrives: chunked bodies are read as bodies; a bad or
    contradictory ``Content-Length``, a body too large or too slow, a header
    section over 64 KiB, an unsupported HTTP version or a malformed request
    line or target gets a 4xx (or 505) Error body and a closed connection
    (so the next bytes are never taken for a request); a client silent for
    10 s is disconnected. With ``control`` the control API answers under
    ``/_fake/`` (see ``_control``); without it, that is refused with 403.
    See the module docstring for the bounds it keeps.
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
        self._peers: set[Peer] = set()
        self._idle: dict[Peer, None] = {}  # insertion order: the longest idle first
        self._reading: dict[Peer, None] = {}  # requests still arriving, the oldest first

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
        if sys.is_finalizing():
            # A server left running until the interpreter ends (its context collected at exit): the
            # serving thread, a daemon, never runs again, so waiting for it would hang the exit.
            return
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
        peer = Peer(loop, over_tls=self.tls is not None, registry=self._peers, buffered=2 * HEAD_LIMIT)
        try:
            await loop.connect_accepted_socket(
                lambda: peer, sock, ssl=self.tls, ssl_handshake_timeout=self.request_timeout if self.tls else None
            )
        except (TimeoutError, OSError):  # a refused certificate, a reset, a handshake too slow
            sock.close()
            return
        try:
            await self._converse(peer, address)
        except Gone:
            pass
        except Exception as exc:  # noqa: BLE001 (a fake that crashes must still answer, once)
            if not peer.lost:
                with contextlib.suppress(Gone):
                    answer = error_response(500, "internal_error", f"The fake store failed: {type(exc).__name__}")
                    await self._send(peer, answer, "GET", close=True)
            self._loop_error(loop, {"message": "unexpected error", "exception": exc})
        finally:
            self._idle.pop(peer, None)
            transport = peer.transport
            if transport is not None and not transport.is_closing():
                transport.close()  # after what is still buffered is sent...
                loop.call_later(self.write_timeout, transport.abort)  # ...or given up on, if the client won't read it

    async def _converse(self, peer: Peer, address: Any) -> None:
        """Serve the connection's requests in turn until it closes."""
        loop = peer.loop
        while True:
            if not await self._next_request(peer):
                return
            deadline = loop.time() + self.request_timeout
            request: Request | None = None
            self._reading[peer] = None
            try:
                reader = RequestReader(peer, deadline, self.request_timeout)
                request = await reader.head()
                body = await reader.body(request, keep=self._keeps_body(request))
                path, query = split_target(request)
            except Refused as exc:
                self._reading.pop(peer, None)
                evicted, peer.evicted = peer.evicted, False
                answer = error_response(exc.status, exc.code, exc.message, {"Connection": "close"})
                method = request.method if request is not None else "GET"
                self._log(address, request if request is not None else exc.line, answer.status)
                await self._send(peer, answer, method, close=True)
                if not evicted:  # one that gave way frees its slot at once
                    await peer.linger(self.linger)
                return
            finally:
                self._reading.pop(peer, None)
                peer.evicted = False  # too late to matter once the request has arrived
            close = wants_close(request)
            if is_control(path):
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
                    if fault == "timeout":  # unanswered until the client gives up or the time runs out
                        await peer.hold(self.unanswered)
                    peer.reset()
                    return
                answer = reply
                delay = self.store.next_delay()
                if delay > 0:
                    await asyncio.sleep(delay)
            self._log(address, request, answer.status)
            await self._send(peer, answer, request.method, close=close, keep_alive=request.version == (1, 0))
            if close:
                await peer.linger(self.linger)
                return

    async def _next_request(self, peer: Peer) -> bool:
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

    def _keeps_body(self, request: Request) -> bool:
        """Whether the body is worth holding: a control request's, or one with a key the store accepts.

        The store answers any other request 401 (or with an injected fault)
        whatever its body, so that body is read off the connection and
        dropped as it comes: a page's cross-site POSTs cannot make the
        server hold megabytes.
        """
        try:
            path, _ = split_target(request)
        except Refused:
            return False  # refused after the body is read, for the same reason
        return is_control(path) or self.store.authorized(dict(request.fields))

    # --- answering -----------------------------------------------------------------------------

    async def _send(
        self, peer: Peer, answer: FakeResponse, method: str, *, close: bool, keep_alive: bool = False
    ) -> None:
        data = answer_bytes(answer, method, close=close, keep_alive=keep_alive)
        await peer.send(data, peer.loop.time() + self.write_timeout)

    def _log(self, address: Any, request: Request | str, status: int) -> None:
        if self.quiet:
            return
        host = str(cast("tuple[object, ...]", address)[0]) if isinstance(address, tuple) and address else "-"
        line = (
            f"{request.method} {request.target[:200]} HTTP/{request.version[0]}.{request.version[1]}"
            if isinstance(request, Request)
            else request
        )
        shown = status or "-"
        stamp = time.strftime("%d/%b/%Y %H:%M:%S")
        print(f'{host} - - [{stamp}] "{line}" {shown} -', file=sys.stderr, flush=True)


make_server = FakeServer
"""The name ``__main__`` and the tests make a server by."""


@contextmanager
def running_server(
    store: FakeAnimalStore, port: int = 0, *, control: bool = False, tls: ssl.SSLContext | None = None
) -> Generator[str]:
    """Run a `FakeServer` in a background thread; yield its base URL; stop it on exit."""
    server = FakeServer(store, port, control=control, tls=tls)
    thread = threading.Thread(target=server.serve_forever, name="FakeAnimalStore server", daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.port}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
