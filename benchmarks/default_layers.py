"""Where the default async backend's time goes, layer by layer, and what its asyncio network backend buys.

    python benchmarks/default_layers.py                 # in memory, then against nginx (apt-get install -y nginx)
    python benchmarks/default_layers.py --quick --server fake   # tiny counts, no nginx (the CI smoke test)

Part 1 runs the same ``GET /v1/pets?limit=100`` through each layer of the
default backend over an in-memory network stream that answers at once (no
socket, no waiting), so each figure is the Python run per call, one task and
100 tasks at a time: JSON and ``Pet``s alone (the floors' parsing), h11
alone, httpcore's ``AsyncHTTP11Connection``, httpcore's ``AsyncHTTPConnection``
(what the SDK's pool holds, so respx can mock it), the SDK's pool, the pool
on the deadline backend, and the whole SDK call. Part 2 runs the SDK's pool
on the deadline backend against a server, with anyio's network backend
(httpcore's own) and with the SDK's asyncio one, at 1 and 100 in flight:
the measurement behind using the asyncio backend when the loop is asyncio's.
docs/performance.md reads these figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import h11
import httpcore
from concurrency import KEY, PETS, fake_server, hand_loop, nginx  # the servers and the floor it measures with

from animalstore_client import AsyncAnimalStoreClient
from animalstore_client._transports.pool import httpcore_async as _httpcore_async
from animalstore_client._transports.pool.asyncio_network import AsyncioBackend
from animalstore_client._transports.pool.deadline_network_async import AsyncDeadlineBackend
from animalstore_client._transports.pool.pool_async import AsyncConnectionPool

BODY = json.dumps(PETS).encode()
ANSWER = (
    b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Mon, 01 Jan 2026 00:00:00 GMT\r\n"
    b"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: keep-alive\r\n"
    b'ETag: "abc-123"\r\nAccept-Ranges: bytes\r\n\r\n' % len(BODY)
) + BODY
HEADERS = [
    (b"Host", b"127.0.0.1:8080"),
    (b"Accept", b"application/json"),
    (b"Accept-Encoding", b"gzip, deflate"),
    (b"User-Agent", b"animalstore-client python"),
    (b"Authorization", b"Bearer " + KEY.encode()),
]
TIMEOUTS = {"timeout": {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}}


class _MemoryStream(httpcore.AsyncNetworkStream):
    """A connection whose server answers every request at once, in one read."""

    def __init__(self) -> None:
        self._pending = b""

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data, self._pending = self._pending, b""
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._pending = ANSWER

    async def aclose(self) -> None:
        return None

    def get_extra_info(self, info: str) -> Any:
        return False if info == "is_readable" else None


class _MemoryBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        return _MemoryStream()


def _h11_cycle() -> Callable[[], object]:
    connection = h11.Connection(h11.CLIENT)

    def cycle() -> object:
        connection.send(h11.Request(method=b"GET", target=b"/v1/pets?limit=100", headers=HEADERS))
        connection.send(h11.EndOfMessage())
        connection.receive_data(ANSWER)
        events = [connection.next_event() for _ in range(3)]
        connection.start_next_cycle()
        return events

    return cycle


async def _through(handler: Any, url: httpcore.URL) -> bytes:
    response = await handler.handle_async_request(httpcore.Request(b"GET", url, headers=HEADERS, extensions=TIMEOUTS))
    try:
        return b"".join([chunk async for chunk in response.aiter_stream()])
    finally:
        await response.aclose()


def _pool(backend: httpcore.AsyncNetworkBackend) -> AsyncConnectionPool:
    return AsyncConnectionPool(
        ssl.create_default_context(), backend, max_connections=1000, max_keepalive_connections=100, keepalive_expiry=5.0
    )


def _per_task(calls: int, tasks: int) -> int:
    """The calls each of ``tasks`` makes of ``calls``: at least one (a quick run's ``calls`` is below ``tasks``)."""
    return max(1, calls // tasks)


async def _cpu_per_call(call: Callable[[], Awaitable[object]], calls: int, tasks: int, warm: int = 3) -> float:
    """Process CPU per call (µs), ``tasks`` at a time, after ``warm`` calls per task."""

    async def worker(count: int) -> None:
        for _ in range(count):
            await call()

    await asyncio.gather(*(worker(warm) for _ in range(tasks)))
    started = time.process_time()
    await asyncio.gather(*(worker(_per_task(calls, tasks)) for _ in range(tasks)))
    return (time.process_time() - started) / (_per_task(calls, tasks) * tasks) * 1e6


async def in_memory(calls: int, rounds: int, warm: int) -> list[tuple[str, float, float]]:
    """Part 1: each layer's CPU per call in memory, one task and 100 tasks (medians over rounds)."""
    url = httpcore.URL("http://127.0.0.1:8080/v1/pets?limit=100")
    origin = httpcore.Origin(b"http", b"127.0.0.1", 8080)
    memory = cast("httpcore.AsyncNetworkBackend", _MemoryBackend())
    cycle = _h11_cycle()
    http11 = [httpcore.AsyncHTTP11Connection(origin, _MemoryStream()) for _ in range(100)]
    connections = [httpcore.AsyncHTTPConnection(origin, network_backend=memory) for _ in range(100)]
    pool, deadline_pool = _pool(memory), _pool(AsyncDeadlineBackend(memory))
    _httpcore_async._direct_backend = lambda: memory  # noqa: SLF001  # the SDK on the memory backend
    client = AsyncAnimalStoreClient(KEY, base_url="http://127.0.0.1:8080/v1")

    async def parse() -> object:
        return hand_loop(json.loads(BODY))

    async def h11_alone() -> object:
        return cycle()

    def rotating(handlers: list[Any]) -> Callable[[], Awaitable[object]]:
        # One connection per task at a time, as a pool would give them.
        free = list(handlers)

        async def call() -> object:
            handler = free.pop()
            try:
                return await _through(handler, url)
            finally:
                free.append(handler)

        return call

    layers: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("json.loads + Pets (the floors' parsing)", parse),
        ("h11 alone: one request/response cycle", h11_alone),
        ("httpcore AsyncHTTP11Connection", rotating(http11)),
        ("httpcore AsyncHTTPConnection (the pool's)", rotating(connections)),
        ("the SDK's pool", lambda: _through(pool, url)),
        ("the SDK's pool on the deadline backend", lambda: _through(deadline_pool, url)),
        ("the whole SDK call, list_pets(limit=100)", lambda: client.list_pets(limit=100)),
    ]
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in layers}
    for _ in range(rounds):
        for name, call in layers:
            one, many = await _cpu_per_call(call, calls, 1, warm), await _cpu_per_call(call, calls, 100, warm)
            figures[name].append((one, many))
    await client.aclose()
    return [
        (name, statistics.median(one for one, _ in runs), statistics.median(many for _, many in runs))
        for name, runs in figures.items()
    ]


def on_a_server(base_url: str, calls: int, rounds: int, warm: int) -> list[tuple[str, int, float, float]]:
    """Part 2: the SDK's pool on the deadline backend, anyio's network backend against asyncio's."""
    url = httpcore.URL(f"{base_url}/pets?limit=100")
    host = f"{url.host.decode()}:{url.port}".encode()
    headers = [(b"Host", host), *HEADERS[1:]]

    async def run(network: str, tasks: int) -> tuple[float, float]:
        anyio_backend = cast("httpcore.AsyncNetworkBackend", httpcore.AnyIOBackend())  # typed apart from its base
        inner = AsyncioBackend() if network == "asyncio" else anyio_backend
        pool = _pool(AsyncDeadlineBackend(inner))

        async def call() -> object:
            request = httpcore.Request(b"GET", url, headers=headers, extensions=TIMEOUTS)
            response = await pool.handle_async_request(request)
            try:
                body = b"".join([chunk async for chunk in response.aiter_stream()])
            finally:
                await response.aclose()
            return hand_loop(json.loads(body))

        wall = time.perf_counter()
        cpu = await _cpu_per_call(call, calls, tasks, warm)
        rate = _per_task(calls, tasks) * tasks / (time.perf_counter() - wall)
        await pool.aclose()
        return rate, cpu

    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for _ in range(rounds):
        for tasks in (1, 100):
            for network in ("anyio", "asyncio"):
                results.setdefault((network, tasks), []).append(asyncio.run(run(network, tasks)))
    return [
        (network, tasks, statistics.median(r for r, _ in runs), statistics.median(c for _, c in runs))
        for (network, tasks), runs in results.items()
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts: figures only")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server", choices=["nginx", "fake"], default="nginx", help="fake: the SDK's fake store")
    args = parser.parse_args()
    # Quick: one call per task, and no warm-up (the figures are not read; the calls it makes run the same code).
    calls, rounds, warm = (1, 1, 0) if args.quick else (3000, args.rounds, 3)
    print("Part 1, in memory: CPU per call (µs), medians of", rounds, "round(s)")
    print(f"{'layer':52}{'1 task':>10}{'100 tasks':>11}")
    for name, one, many in asyncio.run(in_memory(calls, rounds, warm)):
        print(f"{name:52}{one:>10.1f}{many:>11.1f}")
    print(f"\nPart 2, against {args.server}: the SDK's pool, anyio's network backend and asyncio's")
    print(f"{'network backend':18}{'in flight':>10}{'req/s':>9}{'CPU/call':>10}")
    try:
        if args.server == "nginx" and hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2:
            os.sched_setaffinity(0, {1})  # nginx has CPU 0
        with nginx() if args.server == "nginx" else fake_server() as (base_url, _cpu):
            for network, tasks, rate, cpu in on_a_server(base_url, calls, rounds, warm):
                print(f"{network:18}{tasks:>10}{rate:>9,.0f}{cpu:>8.0f}µs")
    except (AssertionError, OSError, RuntimeError) as exc:
        print(f"nginx is not installed ({type(exc).__name__}): part 2 is not measured; apt-get install -y nginx")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
