"""The asyncio network backend under the default pool, and the pool's checks, against a server that misbehaves.

Each case here was found by attacking the change that brought the SDK's own
pool: bytes in the clear before a TLS handshake, bytes a server sends past an
answer while the next request waits for the connection, bytes the kernel
holds that a busy loop has not read, and a server that closes as it accepts.
Servers are plain sockets on 127.0.0.1, every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any

import httpcore
import pytest

from animalstore_client._transports.pool import asyncio_network as _asyncio_backend
from animalstore_client._transports.pool._generated.deadline_network_sync import DeadlineBackend
from animalstore_client._transports.pool._generated.pool_sync import ConnectionPool
from animalstore_client._transports.pool.asyncio_network import AsyncioBackend
from animalstore_client._transports.pool.deadline_network_async import AsyncDeadlineBackend
from animalstore_client._transports.pool.pool_async import AsyncConnectionPool

from .conftest import on_httpx2
from .servers import Turns
from .tls import client_context

BOUND = 5.0
TIMEOUTS = {"connect": BOUND, "read": BOUND, "write": BOUND, "pool": BOUND}
STRAY = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nFORGED"


@contextmanager
def _server(handler: Callable[[socket.socket, int], None]) -> Generator[int]:
    """A server on 127.0.0.1 running ``handler(connection, index)`` on a thread per connection; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    connections: list[socket.socket] = []

    def accept() -> None:
        index = 0
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.settimeout(BOUND)
            connections.append(conn)
            threading.Thread(target=_quietly, args=(handler, conn, index), daemon=True).start()
            index += 1

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        for conn in connections:
            conn.close()


def _quietly(handler: Callable[[socket.socket, int], None], conn: socket.socket, index: int) -> None:
    with contextlib.suppress(OSError):  # the client closed: what the case is about
        handler(conn, index)


def _read_head(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    return data


def _answer(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def _request(port: int) -> httpcore.Request:
    host = f"127.0.0.1:{port}"
    headers = [(b"Host", host.encode())]
    return httpcore.Request(b"GET", f"http://{host}/", headers=headers, extensions={"timeout": TIMEOUTS})


def _answer_then_stray(turns: Turns) -> Callable[[socket.socket, int], None]:
    """Answer the first request; once the client has read it, send an answer nobody asked for (the first
    connection's only: the second's client never reads past its answer); answer later requests properly."""

    def handler(conn: socket.socket, index: int) -> None:
        _read_head(conn)
        conn.sendall(_answer(b"first-%d" % index))
        if index == 0:
            turns.wait_for_the_answer()
            conn.sendall(STRAY)
            turns.acted()
        while _read_head(conn):
            conn.sendall(_answer(b"later-%d" % index))

    return handler


def test_bytes_before_the_tls_handshake_are_refused() -> None:
    """Bytes in the clear that arrived before the handshake are no server's answer: the connection is refused.

    Read after the handshake they would pass for the authenticated response (an attacker on
    the path could write them); anyio's TLS layer refuses them as well.
    """

    def clear_text_first(conn: socket.socket, index: int) -> None:
        conn.sendall(_answer(b"[]"))
        time.sleep(1)

    async def run() -> None:
        with _server(clear_text_first) as port:
            stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=BOUND)
            await asyncio.sleep(0.1)  # the loop reads the clear-text bytes
            with pytest.raises(httpcore.ConnectError, match="before the TLS handshake"):
                await stream.start_tls(client_context(), server_hostname="localhost", timeout=BOUND)

    asyncio.run(run())


def test_a_connection_handed_to_a_waiting_request_is_checked_async() -> None:
    """A connection given straight to a queued request is checked as a take would: stray bytes are not its answer."""

    async def run() -> None:
        turns = Turns(BOUND)
        with _server(_answer_then_stray(turns)) as port:
            pool = AsyncConnectionPool(
                ssl.create_default_context(),
                AsyncDeadlineBackend(AsyncioBackend()),
                max_connections=1,
                max_keepalive_connections=1,
                keepalive_expiry=None,
            )

            async def call() -> bytes:
                response = await pool.handle_async_request(_request(port))
                try:
                    return await response.aread()
                finally:
                    await response.aclose()

            first = await pool.handle_async_request(_request(port))
            queued = asyncio.ensure_future(call())
            await asyncio.sleep(0.01)  # the second request waits for the only connection
            assert await first.aread() == b"first-0"
            turns.answered()
            await turns.server_acted()  # the stray answer arrived, and the loop has read it
            await first.aclose()
            assert await asyncio.wait_for(queued, BOUND) == b"first-1"  # a new connection's answer
            await pool.aclose()

    asyncio.run(run())


def test_a_connection_handed_to_a_waiting_request_is_checked_sync() -> None:
    """The same on the sync pool: the waiting thread gets a fresh connection, not the stray answer."""
    turns = Turns(BOUND)
    with _server(_answer_then_stray(turns)) as port:
        pool = ConnectionPool(
            ssl.create_default_context(),
            DeadlineBackend(httpcore.SyncBackend()),
            max_connections=1,
            max_keepalive_connections=1,
            keepalive_expiry=None,
        )
        got: list[bytes] = []

        def call() -> None:
            response = pool.handle_request(_request(port))
            try:
                got.append(response.read())
            finally:
                response.close()

        first = pool.handle_request(_request(port))
        waiting = threading.Thread(target=call)
        waiting.start()
        time.sleep(0.05)
        assert first.read() == b"first-0"
        turns.answered()
        turns.wait_for_the_server()  # the stray answer is in the kernel's buffer
        first.close()
        waiting.join(BOUND)
        assert got == [b"first-1"]
        pool.close()


def test_an_idle_connection_reads_as_readable_when_the_kernel_holds_bytes_a_busy_loop_has_not_read() -> None:
    """The asyncio stream asks the kernel too: a loop busy with other work has not read what arrived."""

    turns = Turns(BOUND)

    def stray_later(conn: socket.socket, index: int) -> None:
        turns.wait_for_the_answer()  # the client saw nothing to read yet
        conn.sendall(STRAY)
        turns.acted()
        time.sleep(1)

    async def run() -> None:
        with _server(stray_later) as port:
            stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=BOUND)
            assert not stream.get_extra_info("is_readable")
            turns.answered()
            turns.wait_for_the_server()  # blocking: the loop is busy, so the bytes reach the kernel, not the protocol
            assert stream.get_extra_info("is_readable")
            await stream.aclose()

    asyncio.run(run())


def test_a_server_closing_as_it_accepts_is_a_connect_error() -> None:
    """Whatever the timing of a close on accept, the backend raises httpcore's ConnectError or gives a stream."""

    def close_at_once(conn: socket.socket, index: int) -> None:
        conn.close()

    async def busy() -> None:
        while True:
            time.sleep(0.001)  # a loop with other work, which widens the window
            await asyncio.sleep(0)

    async def run() -> None:
        with _server(close_at_once) as port:
            other = asyncio.ensure_future(busy())
            outcomes: set[str] = set()
            for _ in range(50):
                try:
                    stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=BOUND)
                except httpcore.ConnectError:
                    outcomes.add("ConnectError")
                else:
                    outcomes.add("stream")
                    await stream.aclose()
            other.cancel()
        assert outcomes <= {"ConnectError", "stream"}

    asyncio.run(run())


def test_a_name_that_cannot_be_a_host_is_a_connect_error() -> None:
    """A host label over 63 characters fails to encode: httpcore's ConnectError, as anyio's backend raises."""

    async def run() -> None:
        with pytest.raises(httpcore.ConnectError):
            await AsyncioBackend().connect_tcp("a" * 64 + ".example", 80, timeout=BOUND)

    asyncio.run(run())


def test_a_cancelled_connect_leaves_no_connection_open() -> None:
    """A call cancelled while its connection opens raises CancelledError; a connection made meanwhile is closed."""
    accepted: list[socket.socket] = []

    def hold(conn: socket.socket, index: int) -> None:
        accepted.append(conn)
        time.sleep(2)

    async def run() -> None:
        with _server(hold) as port:
            for _ in range(20):
                task = asyncio.ensure_future(AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=BOUND))
                await asyncio.sleep(0)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            await asyncio.sleep(0.2)  # the closes reach the server
            for conn in accepted:
                conn.settimeout(1)
                assert conn.recv(1) == b""  # closed by the client

    asyncio.run(run())


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop has no Windows release")
def test_uvloop_gets_the_sdks_backend_and_trio_anyios() -> None:
    """asyncio's own loops and uvloop get the SDK's backend (issue 49); trio, which has no asyncio loop, anyio's."""
    uvloop = pytest.importorskip("uvloop", reason="uvloop is not installed: nothing to check")
    trio = pytest.importorskip("trio")

    async def chosen() -> object:
        return _asyncio_backend.for_running_loop()

    assert isinstance(asyncio.run(chosen()), AsyncioBackend)
    assert isinstance(uvloop.run(chosen()), AsyncioBackend)
    assert trio.run(chosen) is None


@pytest.mark.parametrize("library", ["httpcore", on_httpx2("httpcore2")])
def test_httpcore_still_asks_is_readable_of_an_idle_connection(library: str) -> None:
    """httpcore's (and httpcore2's) idle check asks the stream ``get_extra_info("is_readable")``, which we answer.

    The query is undocumented in httpcore's network-stream interface (a private
    reach, docs/architecture.md): an httpcore that stops asking would leave a
    server-closed idle connection in the pool, and fails here by name.
    """
    core: Any = importlib.import_module(library)
    asked: list[str] = []

    class Stream(core.AsyncNetworkStream):  # type: ignore[misc]
        async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

        async def write(self, buffer: bytes, timeout: float | None = None) -> None:
            return None

        async def aclose(self) -> None:
            return None

        def get_extra_info(self, info: str) -> Any:
            asked.append(info)
            return info == "is_readable"

    async def main() -> bool:
        connection = core.AsyncHTTP11Connection(core.Origin(b"http", b"example.org", 80), Stream())
        response = await connection.handle_async_request(
            core.Request(b"GET", "http://example.org/", headers=[(b"Host", b"example.org")])
        )
        await response.aread()
        await response.aclose()
        return bool(connection.has_expired())

    assert asyncio.run(main()), "httpcore no longer reads a readable idle connection as expired"
    assert "is_readable" in asked, f"{library} {core.__version__} no longer asks is_readable (asked {asked})"


def test_asyncios_transports_still_release_their_socket_through_call_connection_lost() -> None:
    """The private method the backend calls on a transport whose loop closed is still there (docs/architecture.md).

    Were it gone, an abandoned connection's transport would warn, when collected, of a socket left open.
    """
    import asyncio.selector_events

    transport_class = getattr(asyncio.selector_events, "_SelectorTransport", None)  # untyped: private to asyncio
    assert callable(getattr(transport_class, "_call_connection_lost", None)), (
        f"Python {sys.version_info[:2]} no longer has _SelectorTransport._call_connection_lost"
    )


def _run_on(loop: str, main: Callable[[], Any]) -> None:
    if loop == "uvloop":
        importlib.import_module("uvloop").run(main())
    else:
        asyncio.run(main())


LOOPS = ["asyncio", pytest.param("uvloop", marks=pytest.mark.skipif(sys.platform == "win32", reason="no uvloop"))]


@pytest.mark.parametrize("loop", LOOPS)
def test_a_connection_receives_every_answer_into_the_one_buffer_it_keeps(loop: str) -> None:
    """Answer after answer on one connection lands in the same buffer: no allocation the size of a read per call
    (a plain protocol is handed a new 256 KiB bytes of each read, which glibc maps and unmaps every time)."""

    def answers(conn: socket.socket, index: int) -> None:
        while _read_head(conn):
            conn.sendall(_answer(b"x" * 7000))

    async def run() -> None:
        with _server(answers) as port:
            stream: Any = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=BOUND)
            buffers = set()
            for _ in range(5):
                await stream.write(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", timeout=BOUND)
                received = b""
                while not received.endswith(b"x" * 7000):
                    received += await stream.read(65536, timeout=BOUND)
                buffers.add(id(stream._buffer.obj))  # the bytearray under the view the transport receives into
            await stream.aclose()
            assert len(buffers) == 1

    _run_on(loop, run)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_body_larger_than_the_buffer_read_slowly_arrives_whole_the_socket_paused_and_resumed(loop: str) -> None:
    """4 MiB sent at once and read 4 KiB at a time, once 256 KiB wait unread: the socket's reading is paused at that
    mark, resumed as the reader catches up, and every byte arrives once, in order, then the peer's close."""
    body = bytes(range(256)) * (16 * 1024)

    def flood(conn: socket.socket, index: int) -> None:
        conn.sendall(body)
        conn.shutdown(socket.SHUT_WR)
        conn.recv(1)  # until the client closes

    async def run() -> None:
        with _server(flood) as port:
            stream: Any = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=BOUND)
            loop = asyncio.get_running_loop()
            ends = loop.time() + BOUND
            while not stream._paused_reading and loop.time() < ends:  # bounded: until the buffer reaches the mark
                await asyncio.sleep(0.001)
            assert stream._paused_reading, "reading was never paused with 256 KiB unread"
            received = bytearray()
            while chunk := await stream.read(4096, timeout=BOUND):
                received += chunk
            assert not stream._paused_reading
            await stream.aclose()
            assert received == body

    _run_on(loop, run)


def test_the_import_checks_of_the_asyncio_reaches_fail_loudly_when_asyncio_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`check_transport_table`, run when the asyncio network layer and the aiohttp transport are imported, passes
    on this Python and names what is gone when asyncio's transports lose ``_call_connection_lost``."""
    import asyncio.selector_events

    from animalstore_client import AnimalStoreError
    from animalstore_client._transports.sockets import check_transport_table

    check_transport_table()
    monkeypatch.delattr(asyncio.selector_events._SelectorTransport, "_call_connection_lost")  # type: ignore[attr-defined]
    with pytest.raises(AnimalStoreError, match="_call_connection_lost"):
        check_transport_table()


_POOL = "animalstore_client._transports.pool"
_IS_READABLE_CHECKS = [
    pytest.param(("httpcore", "AsyncHTTP11Connection", f"{_POOL}.httpcore_async"), id="httpcore-async"),
    pytest.param(("httpcore", "HTTP11Connection", f"{_POOL}._generated.httpcore_sync"), id="httpcore-sync"),
    on_httpx2(("httpcore2", "AsyncHTTP11Connection", f"{_POOL}._generated.httpcore2.httpcore2_async")),
    on_httpx2(("httpcore2", "HTTP11Connection", f"{_POOL}._generated.httpcore2.httpcore2_sync")),
]


@pytest.mark.parametrize("checked", _IS_READABLE_CHECKS)
def test_the_pool_refuses_an_httpcore_that_no_longer_asks_is_readable(checked: tuple[str, str, str]) -> None:
    """Each pool's import checks that its httpcore's (or httpcore2's) idle check still asks ``is_readable`` (which
    the SDK's stream answers): one without the query fails the import by name, not at the first dead connection."""
    library, connection, module = checked
    code = (
        f"import {library}\n"
        "def has_expired(self): return False\n"
        f"{library}.{connection}.has_expired = has_expired\n"
        "try:\n"
        f"    import {module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert "no longer asks" in out.stdout
    assert "is_readable" in out.stdout
