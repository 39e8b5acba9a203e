"""Requests per second against a server that is not the bottleneck: every backend beside its library's floor.

    python benchmarks/concurrency.py            # N = 5,000 per run, 5 rounds; exits 1 if a target is missed
    python benchmarks/concurrency.py --quick    # tiny counts, 10 in flight for 100; targets reported, not enforced
    python benchmarks/concurrency.py --quick --server fake  # no nginx: the CI smoke test that keeps this working
    python benchmarks/concurrency.py --uvloop   # the async stacks on uvloop (pip install uvloop), for comparison
    python benchmarks/concurrency.py --httpx2-ab -n 2000 --rounds 8  # sdk httpx2 against sdk httpx alone, A/B

The server is nginx (Debian: ``apt-get install -y nginx``), started here on
127.0.0.1 with a generated configuration that serves a canned page of 100
pets, pinned to CPU 0 while this process runs on CPU 1. Without nginx the
script says how to install it and measures nothing (exit 0).

Each stack is measured as requests/s, client CPU per request (this process's
CPU time over the run), p50/p99 latency, and nginx's share of its core (to
show it is not the limit). The floor of a library is that library used
directly, with ``json.loads`` and a hand-written loop building the SDK's
``Pet`` objects with no checks. Rounds are interleaved; each ratio is the
median over rounds of the ratio within a round. ``sdk httpx`` is the
default backend (the SDK's own pool over httpcore): besides its own floor it
is held to the fastest pure-Python floors, aiohttp's and urllib3's, in rate
and p99 at 1 and 100 in flight. ``sdk httpx2`` (``backend="httpx2"``, the
same pool over httpcore2) must reach the default's ratio to those floors
within 5 %. ``sdk pyreqwest`` is held to its floor, and, with many in
flight, to the default (threads) and to aiohttp (asyncio). pyreqwest and
httpx2 (extras, not dependencies) are measured when they can be imported;
their stacks and targets are left out, saying so, when not. urllib3 is no
SDK backend (removed in 2.0): its floor is measured only as the reference
speed for threads.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import urllib3

from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient, Pet, PetStatus

try:
    import pyreqwest.client as pyreqwest_client
except ImportError:  # not installed (an extra)
    pyreqwest_client = None  # type: ignore[assignment]
try:
    import httpx2
except ImportError:  # not installed (an extra)
    httpx2 = None  # type: ignore[assignment]

PETS = [
    {"id": i, "name": f"pet-{i}", "categoryId": i % 7, "status": ("available", "pending", "sold")[i % 3]}
    for i in range(1, 101)
]
KEY = "bench-key"
_STATUSES = {member.value: member for member in PetStatus}


def hand_loop(data: list[dict[str, Any]]) -> list[Pet]:
    """The floor's parsing: the SDK's own Pet objects built with no checks."""
    statuses = _STATUSES
    return [Pet(d["id"], d["name"], d["categoryId"], statuses.get(d.get("status"))) for d in data]  # type: ignore[arg-type]


@dataclass
class Result:
    """One run of one stack."""

    seconds: float
    cpu: float
    latencies: list[float] = field(repr=False)
    server_cpu: float

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


# --- nginx -------------------------------------------------------------------------------------

CONFIG = """
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 10000000;
    keepalive_timeout 120s;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {tmp};
        location = /v1/pets {{ default_type application/json; try_files /pets.json =404; }}
    }}
}}
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


@contextmanager
def nginx() -> Generator[tuple[str, Callable[[], float]], None, None]:
    """Start nginx on CPU 0; yield its base URL and a function giving its workers' CPU seconds."""
    binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    assert binary is not None
    tmp = Path(tempfile.mkdtemp(prefix="animalstore-nginx-"))
    tmp.chmod(0o755)  # nginx's worker may run as another user
    (tmp / "pets.json").write_text(json.dumps(PETS))
    port = _free_port()
    (tmp / "nginx.conf").write_text(CONFIG.format(tmp=tmp, port=port))
    command = [binary, "-c", str(tmp / "nginx.conf"), "-p", str(tmp)]
    if shutil.which("taskset"):
        command = ["taskset", "-c", "0", *command]
    process = subprocess.Popen(command, stderr=subprocess.PIPE)
    # A SIGTERM (timeout, kill) unwinds like Ctrl-C, so the finally below stops nginx.
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError(f"nginx did not start: {process.stderr.read() if process.stderr else b''!r}")
        workers = _children(process.pid) or [process.pid]
        yield f"http://127.0.0.1:{port}/v1", lambda: sum(_cpu_seconds(pid) for pid in workers)
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)


# --- the contenders ----------------------------------------------------------------------------


MANY = 100
"""The many calls in flight each stack is measured at (besides one), where the targets are set."""
QUICK_MANY = 10
"""``--quick``'s many in flight: every stack still runs its code for calls in flight together."""

LOOP: dict[str, Callable[[], asyncio.AbstractEventLoop] | None] = {"factory": None}
"""The event loop the async stacks run on: asyncio's own, or uvloop's with --uvloop."""


def run_async(
    make: Callable[[], Awaitable[tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[None]]]]],
    n: int,
    concurrency: int,
    server_cpu: Callable[[], float],
    warm_up: int | None = None,
) -> Result:
    """``n`` calls, ``concurrency`` in flight, on a fresh event loop and a fresh client.

    Each task makes at least one call (a quick run's ``n`` may be below ``concurrency``), after
    ``warm_up`` calls (by default `_warm_up`'s count).
    """
    per_task, warm = max(1, n // concurrency), _warm_up(n, concurrency) if warm_up is None else warm_up

    async def main() -> Result:
        call, close = await make()
        latencies: list[float] = []

        async def worker(count: int, record: bool) -> None:
            for _ in range(count):
                started = time.perf_counter()
                await call()
                if record:
                    latencies.append(time.perf_counter() - started)

        # Warm up at the same concurrency: the pool opens its connections here,
        # not inside the measurement (that surge is not the steady state).
        await asyncio.gather(*(worker(warm, False) for _ in range(concurrency)))
        cpu, server, wall = time.process_time(), server_cpu(), time.perf_counter()
        await asyncio.gather(*(worker(per_task, True) for _ in range(concurrency)))
        wall, cpu, server = time.perf_counter() - wall, time.process_time() - cpu, server_cpu() - server
        await close()
        return Result(wall, cpu, latencies, server / wall)

    factory = LOOP["factory"]
    if factory is None:
        return asyncio.run(main())
    with asyncio.Runner(loop_factory=factory) as runner:
        result: Result = runner.run(main())
        return result


def _warm_up(n: int, concurrency: int) -> int:
    """Calls per worker before measuring: a tenth of the run, and at least two each."""
    return max(2, n // 10 // concurrency, 20 // concurrency)


def run_sync(
    make: Callable[[], tuple[Callable[[], object], Callable[[], None]]],
    n: int,
    concurrency: int,
    server_cpu: Callable[[], float],
    warm_up: int | None = None,
) -> Result:
    """``n`` calls from ``concurrency`` threads sharing one fresh client: at least one each; warm-up as `run_async`."""
    per_thread, warm_calls = max(1, n // concurrency), _warm_up(n, concurrency) if warm_up is None else warm_up
    call, close = make()
    latencies: list[float] = []
    lock = threading.Lock()

    def worker(count: int, record: bool = True) -> None:
        mine = []
        for _ in range(count):
            started = time.perf_counter()
            call()
            mine.append(time.perf_counter() - started)
        if record:
            with lock:
                latencies.extend(mine)

    # Warm up at the same concurrency, so that every thread's connection is open before measuring.
    warm = [threading.Thread(target=worker, args=(warm_calls, False)) for _ in range(concurrency)]
    for thread in warm:
        thread.start()
    for thread in warm:
        thread.join()
    threads = [threading.Thread(target=worker, args=(per_thread,)) for _ in range(concurrency)]
    cpu, server, wall = time.process_time(), server_cpu(), time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall, cpu, server = time.perf_counter() - wall, time.process_time() - cpu, server_cpu() - server
    close()
    return Result(wall, cpu, latencies, server / wall)


def async_stacks(url: str) -> dict[str, Callable[[], Awaitable[Any]]]:
    """The async contenders: SDK on aiohttp, httpx and pyreqwest, and each library's floor."""
    target = f"{url}/pets?limit=100"

    async def sdk(backend: str) -> Any:
        client = AsyncAnimalStoreClient(KEY, base_url=url, backend=backend)  # type: ignore[arg-type]
        return (lambda: client.list_pets(limit=100)), client.aclose

    async def aiohttp_floor() -> Any:
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000))

        async def call() -> object:
            async with session.get(target, headers={"Authorization": f"Bearer {KEY}"}) as response:
                return hand_loop(json.loads(await response.read()))

        return call, session.close

    async def httpx_floor() -> Any:
        http = httpx.AsyncClient(limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100))

        async def call() -> object:
            return hand_loop(json.loads((await http.get(target, headers={"Authorization": f"Bearer {KEY}"})).content))

        return call, http.aclose

    async def pyreqwest_floor() -> Any:
        assert pyreqwest_client is not None
        client = pyreqwest_client.ClientBuilder().build()
        headers = {"Authorization": f"Bearer {KEY}"}

        async def call() -> object:
            response = await client.get(target).headers(headers).build().send()
            return hand_loop(json.loads(bytes(await response.bytes())))

        return call, client.close

    stacks: dict[str, Callable[[], Awaitable[Any]]] = {
        "sdk aiohttp": lambda: sdk("aiohttp"),
        "aiohttp floor": aiohttp_floor,
        "sdk httpx": lambda: sdk("httpx"),
        "httpx floor": httpx_floor,
    }
    if pyreqwest_client is not None:
        stacks["sdk pyreqwest"] = lambda: sdk("pyreqwest")
        stacks["pyreqwest floor"] = pyreqwest_floor
    if httpx2 is not None:
        stacks["sdk httpx2"] = lambda: sdk("httpx2")
    return stacks


def sync_stacks(url: str) -> dict[str, Callable[[], Any]]:
    """The sync contenders: SDK on httpx and pyreqwest, each library's floor, and urllib3's (the threads' reference)."""
    target = f"{url}/pets?limit=100"
    headers = {"Authorization": f"Bearer {KEY}"}

    def sdk(backend: str) -> Any:
        client = AnimalStoreClient(KEY, base_url=url, backend=backend)  # type: ignore[arg-type]
        return (lambda: client.list_pets(limit=100)), client.close

    def urllib3_floor() -> Any:
        manager = urllib3.PoolManager(maxsize=100)
        return (lambda: hand_loop(json.loads(manager.request("GET", target, headers=headers).data))), manager.clear

    def httpx_floor() -> Any:
        http = httpx.Client(limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100))
        return (lambda: hand_loop(json.loads(http.get(target, headers=headers).content))), http.close

    def pyreqwest_floor() -> Any:
        assert pyreqwest_client is not None
        client = pyreqwest_client.SyncClientBuilder().build()
        return (
            lambda: hand_loop(json.loads(bytes(client.get(target).headers(headers).build().send().bytes())))
        ), client.close

    stacks: dict[str, Callable[[], Any]] = {
        "urllib3 floor": urllib3_floor,
        "sdk httpx": lambda: sdk("httpx"),
        "httpx floor": httpx_floor,
    }
    if pyreqwest_client is not None:
        stacks["sdk pyreqwest"] = lambda: sdk("pyreqwest")
        stacks["pyreqwest floor"] = pyreqwest_floor
    if httpx2 is not None:
        stacks["sdk httpx2"] = lambda: sdk("httpx2")
    return stacks


# --- targets -------------------------------------------------------------------------------------


@dataclass
class Check:
    """One target: a ratio measured against its bound."""

    name: str
    value: float
    bound: float
    at_least: bool

    @property
    def ok(self) -> bool:
        return self.value >= self.bound if self.at_least else self.value <= self.bound


def _ratio(rounds: list[dict[str, Result]], a: str, b: str, measure: Callable[[Result], float]) -> float:
    return statistics.median(measure(r[a]) / measure(r[b]) for r in rounds)


def main() -> int:
    """Measure, print the table and the targets; the exit status says whether every target was met."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts; targets reported, not enforced")
    parser.add_argument("-n", type=int, default=5000, help="calls per run (default 5,000)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--server",
        choices=["nginx", "fake"],
        default="nginx",
        help="fake: the SDK's own fake store in this process (a smoke test: it is the bottleneck)",
    )
    parser.add_argument("--uvloop", action="store_true", help="run the async stacks on uvloop (pip install uvloop)")
    parser.add_argument(
        "--httpx2-ab",
        action="store_true",
        help="only sdk httpx2 against sdk httpx, interleaved, the order swapped every round (noisy machines)",
    )
    args = parser.parse_args()
    if args.uvloop and (problem := _use_uvloop()) is not None:
        print(problem)
        return 2
    if pyreqwest_client is None:
        print("pyreqwest cannot be imported here (the [pyreqwest] extra): its stacks and targets are left out.")
    if httpx2 is None:
        print("httpx2 cannot be imported here (the [httpx2] extra): its stack and targets are left out.")
    n, rounds = (min(args.n, 400), 1) if args.quick else (args.n, args.rounds)
    # A quick run's many in flight are QUICK_MANY: its figures are not read, and each of its 14 stacks at 100 in
    # flight cost a third of a CPU-second (100 connections, or 100 threads), the run's three quarters.
    many = QUICK_MANY if args.quick else MANY
    # A quick run's figures are not read, so it skips the warm-up (the calls it measures run the same code):
    # warmed up, httpx's floor at 100 in flight costs seconds of CPU, its pool checking each idle connection.
    warm_up = 0 if args.quick else None
    if args.server == "fake":
        server = fake_server()
    elif shutil.which("nginx") or Path("/usr/sbin/nginx").exists():
        if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2:
            os.sched_setaffinity(0, {1})  # nginx has CPU 0
        server = nginx()
    else:
        print("nginx is not installed, so nothing was measured: apt-get install -y nginx (Debian), then run again.")
        return 0
    if args.httpx2_ab:
        with server as (url, server_cpu):
            return _httpx2_ab(url, server_cpu, n, rounds, warm_up, many)
    results: dict[str, list[dict[str, Result]]] = {}
    with server as (url, server_cpu):
        for _ in range(rounds):
            for concurrency in (1, many):
                # One dict per setting per round: its stacks' results, each on a fresh client.
                made_async, made_sync = async_stacks(url), sync_stacks(url)
                results.setdefault(f"async C={concurrency}", []).append(
                    {name: run_async(make, n, concurrency, server_cpu, warm_up) for name, make in made_async.items()}
                )
                results.setdefault(f"sync C={concurrency}", []).append(
                    {name: run_sync(make, n, concurrency, server_cpu, warm_up) for name, make in made_sync.items()}
                )
    missed = _report(results, n, rounds, many)
    return 1 if missed and not args.quick and args.server == "nginx" else 0


def _httpx2_ab(url: str, server_cpu: Callable[[], float], n: int, rounds: int, warm_up: int | None, many: int) -> int:
    """``sdk httpx2`` over ``sdk httpx`` in req/s, each round both in turn (the first swapped every round).

    The same pool over httpcore2 and over httpcore: with nothing else between
    them, a machine's drift cancels out within each round.
    """
    if httpx2 is None:
        return 0  # main said why
    ratios: dict[str, list[float]] = {}
    pair = ["sdk httpx", "sdk httpx2"]
    for index in range(rounds):
        order = pair if index % 2 == 0 else pair[::-1]
        for concurrency in (1, many):
            async_made = async_stacks(url)
            rates = {name: run_async(async_made[name], n, concurrency, server_cpu, warm_up).rate for name in order}
            ratios.setdefault(f"async C={concurrency}", []).append(rates["sdk httpx2"] / rates["sdk httpx"])
            sync_made = sync_stacks(url)
            rates = {name: run_sync(sync_made[name], n, concurrency, server_cpu, warm_up).rate for name in order}
            ratios.setdefault(f"sync C={concurrency}", []).append(rates["sdk httpx2"] / rates["sdk httpx"])
    for key, values in ratios.items():
        spread = f"{min(values):.2f} to {max(values):.2f}"
        print(f"{key}: sdk httpx2 / sdk httpx, req/s: median {statistics.median(values):.2f} (rounds: {spread})")
    print(f"N={n}, {rounds} round(s), Python {sys.version.split()[0]}")
    return 0


def _report(results: dict[str, list[dict[str, Result]]], n: int, rounds: int, many: int) -> list[Check]:
    """Print the table, the targets and the information; return the targets missed."""
    print(f"{'stack':<34}{'req/s':>9}{'CPU/req':>10}{'p50':>9}{'p99':>9}{'nginx CPU':>11}")
    for key, per_round in results.items():
        for name in per_round[0]:
            runs = [r[name] for r in per_round]
            rate = statistics.median(r.rate for r in runs)
            cpu = statistics.median(r.cpu / len(r.latencies) for r in runs)
            p50 = statistics.median(r.percentile(0.5) for r in runs)
            p99 = statistics.median(r.percentile(0.99) for r in runs)
            share = statistics.median(r.server_cpu for r in runs)
            print(
                f"{key + ' ' + name:<34}{rate:>9,.0f}{cpu * 1e6:>8.0f}µs{p50 * 1e3:>7.2f}ms"
                f"{p99 * 1e3:>7.2f}ms{share:>10.0%}"
            )
    checks = _checks(results, many)
    print()
    for check in checks:
        sign = ">=" if check.at_least else "<="
        print(f"{check.name:<62}{check.value:>7.2f}  {sign} {check.bound:<5} {'ok' if check.ok else 'MISSED'}")
    print("\nfor information (no target):")
    for name, value in _information(results, many):
        print(f"{name:<62}{value:>7.2f}")
    missed = [c for c in checks if not c.ok]
    print(f"\n{len(checks)} targets, {len(missed)} missed; N={n}, {rounds} round(s), Python {sys.version.split()[0]}")
    return missed


@contextmanager
def fake_server() -> Generator[tuple[str, Callable[[], float]], None, None]:
    """The SDK's fake store on 127.0.0.1, serving the same page; its CPU is this process's."""
    from animalstore_client.testing import FakeAnimalStore

    store = FakeAnimalStore(api_keys=[KEY], pets=PETS)
    with store.serve() as url:
        yield url, lambda: 0.0


def _use_uvloop() -> str | None:
    """Run the async stacks on uvloop from now on; or say why that cannot be."""
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        return "--uvloop needs uvloop: pip install uvloop"
    LOOP["factory"] = uvloop.new_event_loop
    return None


def _checks(results: dict[str, list[dict[str, Result]]], many: int) -> list[Check]:
    def rate(r: Result) -> float:
        return r.rate

    def cpu(r: Result) -> float:
        return r.cpu / len(r.latencies)

    checks = []
    for c in (1, many):
        a, s = results[f"async C={c}"], results[f"sync C={c}"]
        checks.append(
            Check(
                f"async C={c}: sdk aiohttp / aiohttp floor, req/s",
                _ratio(a, "sdk aiohttp", "aiohttp floor", rate),
                0.80,
                True,
            )
        )
        checks.append(
            Check(
                f"async C={c}: sdk httpx / httpx floor, CPU per request",
                _ratio(a, "sdk httpx", "httpx floor", cpu),
                1.05,
                False,
            )
        )
        checks.append(
            Check(
                f"sync C={c}: sdk httpx / httpx floor, CPU per request",
                _ratio(s, "sdk httpx", "httpx floor", cpu),
                1.05,
                False,
            )
        )
        if pyreqwest_client is not None:
            bound = 0.85 if c == many else 0.80
            for side, per_round in (("async", a), ("sync", s)):
                checks.append(
                    Check(
                        f"{side} C={c}: sdk pyreqwest / pyreqwest floor, req/s",
                        _ratio(per_round, "sdk pyreqwest", "pyreqwest floor", rate),
                        bound,
                        True,
                    )
                )
    checks.extend(_default_backend_checks(results, many))
    if httpx2 is not None:
        checks.extend(_httpx2_checks(results, many))
    if pyreqwest_client is not None:
        a, s = results[f"async C={many}"], results[f"sync C={many}"]
        checks.append(
            Check(
                f"sync C={many}: sdk pyreqwest / sdk default, req/s",
                _ratio(s, "sdk pyreqwest", "sdk httpx", rate),
                2.0,
                True,
            )
        )
        checks.append(
            Check(
                f"async C={many}: sdk pyreqwest / sdk aiohttp, req/s",
                _ratio(a, "sdk pyreqwest", "sdk aiohttp", rate),
                1.15,
                True,
            )
        )
    return checks


def _default_backend_checks(results: dict[str, list[dict[str, Result]]], many: int) -> list[Check]:
    """The default backend (``sdk httpx``: the SDK's own pool over httpcore) against the fastest pure-Python floors.

    Most users never pass ``backend=``: at 1 and 100 in flight it must reach seven tenths of
    aiohttp's floor (async) and eight tenths of urllib3's (sync, 100 threads), with a p99 within
    3x of theirs; one thread must stay at least level with urllib3's floor.
    """

    def rate(r: Result) -> float:
        return r.rate

    def p99(r: Result) -> float:
        return r.percentile(0.99)

    checks = []
    for c in (1, many):
        a, s = results[f"async C={c}"], results[f"sync C={c}"]
        checks.append(
            Check(
                f"async C={c}: sdk default / aiohttp floor, req/s",
                _ratio(a, "sdk httpx", "aiohttp floor", rate),
                0.70,
                True,
            )
        )
        checks.append(
            Check(
                f"sync C={c}: sdk default / urllib3 floor, req/s",
                _ratio(s, "sdk httpx", "urllib3 floor", rate),
                0.80 if c == many else 1.0,
                True,
            )
        )
    a, s = results[f"async C={many}"], results[f"sync C={many}"]
    checks.append(
        Check(
            f"async C={many}: sdk default / aiohttp floor, p99",
            _ratio(a, "sdk httpx", "aiohttp floor", p99),
            3.0,
            False,
        )
    )
    checks.append(
        Check(
            f"sync C={many}: sdk default / urllib3 floor, p99",
            _ratio(s, "sdk httpx", "urllib3 floor", p99),
            3.0,
            False,
        )
    )
    return checks


def _httpx2_checks(results: dict[str, list[dict[str, Result]]], many: int) -> list[Check]:
    """``backend="httpx2"`` (the same pool over httpcore2) reaches the default backend's ratio to the floors within 5 %.

    Both are divided by the same floor in each round, so the ratio of the two ratios is ``sdk httpx2 / sdk httpx``.
    """

    def rate(r: Result) -> float:
        return r.rate

    return [
        Check(f"{side} C={c}: sdk httpx2 / sdk httpx (their floor ratios), req/s", ratio, 0.95, True)
        for c in (1, many)
        for side in ("async", "sync")
        for ratio in [_ratio(results[f"{side} C={c}"], "sdk httpx2", "sdk httpx", rate)]
    ]


def _information(results: dict[str, list[dict[str, Result]]], many: int) -> list[tuple[str, float]]:
    """Ratios shown but not enforced: each fast backend against the bare httpx floor (once targets)."""

    def rate(r: Result) -> float:
        return r.rate

    shown = []
    for key, fast in (
        (f"async C={many}", "sdk aiohttp"),
        (f"async C={many}", "sdk pyreqwest"),
        (f"sync C={many}", "sdk pyreqwest"),
    ):
        if fast in results[key][0]:
            shown.append((f"{key}: {fast} / httpx floor, req/s", _ratio(results[key], fast, "httpx floor", rate)))
    return shown


if __name__ == "__main__":
    raise SystemExit(main())
