"""Where the async client's time on pyreqwest goes: the library, the way the SDK calls it, and the SDK's own plumbing.

    python benchmarks/pyreqwest_split.py                       # nginx, N = 4,000 calls a run, 3 rounds
    python benchmarks/pyreqwest_split.py --quick --server fake  # no nginx: the CI smoke test

One task calls in a loop (C=1) on three stacks, rounds interleaved:

- ``pyreqwest floor``: the library used directly, as in ``concurrency.py``
  (one request, ``json.loads``, the hand loop building ``Pet`` objects);
- ``library as the SDK calls it``: the same request made exactly as
  ``_transports.pyreqwest`` makes it (the SDK's client settings, its four
  headers, a per-request timeout, a streamed response, the response headers
  converted, the body taken in one piece) and parsed by the SDK's parser;
- ``sdk``: ``AsyncAnimalStoreClient(backend="pyreqwest").list_pets``.

For each: wall time, this process's CPU and the main thread's CPU per call;
the difference is the other threads: pyreqwest's own (its Tokio runtime),
and with ``--server fake`` the fake store's too. The gaps
between the stacks say what the library costs, what the SDK's way of calling
it costs, and what the SDK's plumbing (building and checking the request,
the attempt, the finished response) costs, on each thread. It measures; it
has no targets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import concurrency  # the benchmark next to this one: its server and floor

from animalstore_client import AsyncAnimalStoreClient, Pet

KEY = concurrency.KEY


def stacks(url: str) -> dict[str, Callable[[], Awaitable[Any]]] | None:
    """The three stacks as ``make() -> (call, close)``, or None when pyreqwest cannot be imported."""
    try:
        import pyreqwest.client as library
    except ImportError:  # not installed (the [pyreqwest] extra)
        return None
    from animalstore_client._core.serde import loads, structure
    from animalstore_client._transports.pyreqwest import _raw_pairs

    target = f"{url}/pets?limit=100"
    # The headers the SDK sends for this call, in the form its transport hands pyreqwest.
    sdk_headers = [
        ("accept", "application/json"),
        ("accept-encoding", "gzip, deflate"),
        ("user-agent", "animalstore-client-python/1.1.0 pyreqwest/0.15.1 Python/3.11"),
        ("authorization", f"Bearer {KEY}"),
    ]

    async def floor() -> Any:
        client = library.ClientBuilder().build()
        headers = {"Authorization": f"Bearer {KEY}"}

        async def call() -> object:
            response = await client.get(target).headers(headers).build().send()
            return concurrency.hand_loop(json.loads(bytes(await response.bytes())))

        return call, client.close

    async def as_the_sdk() -> Any:
        builder = library.ClientBuilder()
        builder.gzip(False).deflate(False).brotli(False).zstd(False)
        builder.follow_redirects(False).default_cookie_store(False).referer(False)
        builder.no_proxy()
        builder.max_connections(100).pool_idle_timeout(timedelta(seconds=15))
        builder.connect_timeout(timedelta(seconds=5)).read_timeout(timedelta(seconds=30))
        builder.pool_timeout(timedelta(seconds=30))
        client = builder.build()

        async def call() -> object:
            opened = client.request("GET", target).headers(sdk_headers).timeout(timedelta(seconds=59.9))
            stream = opened.build_streamed()
            response = await stream.__aenter__()
            try:
                _raw_pairs(response)
                response.get_header("content-length")
                body = bytes(await response.body_reader.bytes())
            finally:
                await stream.__aexit__(None, None, None)
            return structure(loads(body), list[Pet])

        return call, client.close

    async def sdk() -> Any:
        client = AsyncAnimalStoreClient(KEY, base_url=url, backend="pyreqwest")
        return (lambda: client.list_pets(limit=100)), client.aclose

    return {"pyreqwest floor": floor, "library as the SDK calls it": as_the_sdk, "sdk": sdk}


def measure(make: Callable[[], Awaitable[Any]], n: int) -> tuple[float, float, float]:
    """Wall, process CPU and main-thread CPU per call, in microseconds, over ``n`` calls after a warm-up."""

    async def main() -> tuple[float, float, float]:
        call, close = await make()
        for _ in range(max(20, n // 10)):
            await call()
        wall, cpu, mine = time.perf_counter(), time.process_time(), time.thread_time()
        for _ in range(n):
            await call()
        wall, cpu, mine = time.perf_counter() - wall, time.process_time() - cpu, time.thread_time() - mine
        await close()
        return wall / n * 1e6, cpu / n * 1e6, mine / n * 1e6

    return asyncio.run(main())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="200 calls a run, one round")
    parser.add_argument("-n", type=int, default=None, help="calls per run (default 4,000)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3)")
    parser.add_argument("--server", choices=["nginx", "fake"], default="nginx")
    args = parser.parse_args()
    n = args.n or (200 if args.quick else 4_000)
    rounds = args.rounds or (1 if args.quick else 3)
    if args.server == "nginx" and not shutil.which("nginx") and not os.path.exists("/usr/sbin/nginx"):
        print("nginx is not installed (Debian: apt-get install -y nginx): nothing measured.")
        return 0
    server = concurrency.nginx() if args.server == "nginx" else concurrency.fake_server()
    with server as (url, _):
        if args.server == "nginx" and hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2:
            os.sched_setaffinity(0, {1})  # nginx has CPU 0
        contenders = stacks(url)
        if contenders is None:
            print("pyreqwest cannot be imported here (install the [pyreqwest] extra): nothing measured.")
            return 0
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in contenders}
        for _ in range(rounds):
            for name, make in contenders.items():
                runs[name].append(measure(make, n))
    median = {name: tuple(statistics.median(run[i] for run in got) for i in range(3)) for name, got in runs.items()}
    print(f"async C=1, {n} calls a run, {rounds} round(s), medians, microseconds per call ({args.server})")
    print(f"{'':30} {'wall':>8} {'process':>8} {'main':>8} {'others':>8}")
    for name, (wall, cpu, mine) in median.items():
        print(f"{name:30} {wall:8.1f} {cpu:8.1f} {mine:8.1f} {cpu - mine:8.1f}")
    names = list(median)
    for before, after, what in (
        (names[0], names[1], "the SDK's way of calling the library"),
        (names[1], names[2], "the SDK's plumbing"),
    ):
        cpu = median[after][1] - median[before][1]
        mine = median[after][2] - median[before][2]
        print(f"{what}: {cpu:+.1f} us CPU a call ({mine:+.1f} main thread, {cpu - mine:+.1f} other threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
