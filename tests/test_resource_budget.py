"""What one client can hold at most (docs/limits-and-safety.md), each driven to its line on the pairs it applies to.

A header flood is `tests/test_header_limits.py`'s, a resolver that never answers `tests/test_lookups.py`'s; here, a
slow drip of header bytes (every pair: the deadline holds) and a server that accepts every connection and never
answers, under many calls at once (the sockets held stay within the pool's limit, on every async backend).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from animalstore_client import APITimeoutError, AsyncAnimalStoreClient
from animalstore_client._core.defaults import DEFAULT_LIMITS

from .conftest import ALL_VARIANTS, API_KEY, ClientFactory, on_library, scaled
from .servers import LoopbackServer
from .timing import OVERSHOOT, ReferenceTimer, Stopwatch

TOTAL = 1.0
LONG = 3.0
"""The many calls' deadline: time for the pool to fill up to its line first, on a busy machine too."""
POOL: int = DEFAULT_LIMITS.max_connections or 0
"""The connections the SDK's pool holds at most (0 would fail every check below: the pool must be bounded)."""


def _drip(conn: socket.socket) -> bool:
    """An answer's head, one byte every 20 ms, never finished (bounded: 10 s, or until the client hangs up)."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nx-drip: ")
    ends = time.monotonic() + 10
    while time.monotonic() < ends:
        try:
            conn.sendall(b"a")
        except OSError:
            return False
        time.sleep(0.02)  # the drip's own pace, not a wait for the client: bounded by `ends`
    return False


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_slow_drip_of_header_bytes_ends_by_the_deadline(make_client: ClientFactory) -> None:
    """A head trickling a byte every 20 ms (each read well within its timeout) is cut off at total_timeout."""
    with LoopbackServer([_drip]) as server:
        client = make_client(base_url=server.base_url, total_timeout=TOTAL, max_retries=0)
        with Stopwatch() as watch, pytest.raises(APITimeoutError):
            client.list_pets()
    watch.assert_within(TOTAL + OVERSHOOT)


class _Silent:
    """A server on 127.0.0.1 that accepts every connection, reads what comes, and never answers; it counts the
    connections open at once until `stop_counting` (at the first call's end: from then on, a slot a client freed
    may be taken again before this server has read the close). Its thread ends when it is closed (every wait in
    it is bounded)."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=4096)
        self._listener.settimeout(0.1)
        self.port = self._listener.getsockname()[1]
        self.most = 0
        self.counting = True
        self._open: list[socket.socket] = []
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="silent server", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        import selectors

        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            while not self._closed.is_set():
                for key, _ in selector.select(0.1):
                    if key.fileobj is self._listener:
                        try:
                            conn, _ = self._listener.accept()
                        except OSError:
                            continue
                        conn.setblocking(False)
                        self._open.append(conn)
                        selector.register(conn, selectors.EVENT_READ)
                        if self.counting:
                            self.most = max(self.most, len(self._open))
                    else:
                        peer = key.fileobj
                        assert isinstance(peer, socket.socket)
                        try:
                            data = peer.recv(65536)
                        except OSError:
                            data = b""
                        if not data:  # the client hung up: one connection fewer
                            selector.unregister(peer)
                            self._open.remove(peer)
                            peer.close()

    def stop_counting(self) -> None:
        self.counting = False

    def close(self) -> None:
        self._closed.set()
        self._thread.join(10)
        for conn in self._open:
            conn.close()
        self._listener.close()


@pytest.fixture
def silent() -> Iterator[_Silent]:
    server = _Silent()
    yield server
    server.close()


ASYNC_BACKENDS = [
    "httpx",
    on_library("httpx2", "httpx2"),
    on_library("aiohttp", "aiohttp"),
    on_library("pyreqwest", "pyreqwest"),
]
"""The async backends whose pool the SDK sizes: its own pool and its own aiohttp session at `DEFAULT_LIMITS`, its
pyreqwest clients at `_transports.pyreqwest.MAX_CONNECTIONS`."""


def _pool_of(backend: str) -> int:
    if backend == "pyreqwest":
        from animalstore_client._transports.pyreqwest import MAX_CONNECTIONS

        return MAX_CONNECTIONS
    return POOL


@pytest.mark.parametrize("backend", ASYNC_BACKENDS)
def test_many_calls_to_a_server_that_never_answers_hold_at_most_the_pools_sockets(
    backend: Any, silent: _Silent
) -> None:
    """More calls at once than the pool's connections, to a server that accepts and never answers: the client never
    holds more connections than its pool's limit, every call ends with APITimeoutError, and the first by its
    deadline."""
    pool = _pool_of(backend)
    calls = scaled(POOL + 500, least=POOL + 50)

    ended: list[float] = []

    async def main() -> tuple[list[BaseException], float, float]:
        async with AsyncAnimalStoreClient(
            API_KEY, base_url=f"http://127.0.0.1:{silent.port}/v1", backend=backend, total_timeout=LONG, max_retries=0
        ) as client:

            async def call() -> BaseException:
                try:
                    await client.list_pets()
                except APITimeoutError as exc:
                    silent.stop_counting()
                    ended.append(time.monotonic())
                    return exc
                raise AssertionError("a server that never answers answered")

            with ReferenceTimer() as timer:
                began = time.monotonic()
                errors = await asyncio.gather(*(call() for _ in range(calls)))
                late = timer.lateness()
            return list(errors), began, late

    errors, began, late = asyncio.run(main())
    assert len(errors) == calls
    # The promise is the deadline's: the first call ends by it (and the margin, load given back). The others end
    # as the loop unwinds the calls before them (a few hundred microseconds of CPU each, and more on a busy
    # machine): a duration no promise bounds, so not asserted; each single call's deadline is test_limits'.
    first = min(ended)
    assert first - began < LONG + OVERSHOOT + late, f"{first - began:.3f} s; the timer ran {late:.3f} s late"
    assert silent.most <= pool
    assert silent.most > pool // 4, f"the pool was not driven to its line ({silent.most})"
