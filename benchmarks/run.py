"""Measure what the SDK costs beside raw httpx, and check it against the performance targets.

    python benchmarks/run.py            # full run (under 2 minutes); exits 1 if a target is missed
    python benchmarks/run.py --quick    # tiny counts, targets reported but not enforced (CI smoke test)

Every comparison is measured in one run, interleaved (SDK batch, raw batch,
floor batch, repeat) so that drift in machine load hits both sides alike;
each figure is the median over the rounds of the per-call time in a batch.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient, Pet, PetStatus
from animalstore_client._core.serde import structure

BASE = "https://bench.animalstore.example/v1"
KEY = "bench-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
PETS = [
    {"id": i, "name": f"pet-{i}", "categoryId": i % 7, "status": ("available", "pending", "sold")[i % 3]}
    for i in range(1, 101)
]
LIST_BODY = json.dumps(PETS).encode()
PET_BODY = json.dumps(PETS[0]).encode()


@dataclass
class Row:
    """One line of the result table."""

    name: str
    value: float
    unit: str
    target: float | None = None
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.target is None or self.value <= self.target


def _handler(request: httpx.Request) -> httpx.Response:
    body = LIST_BODY if request.url.path == "/v1/pets" and request.method == "GET" else PET_BODY
    status = 201 if request.method == "POST" else 200
    return httpx.Response(status, content=body, headers={"Content-Type": "application/json"})


_STATUSES = {member.value: member for member in PetStatus}


def _hand_loop(data: list[dict[str, Any]]) -> list[Pet]:
    # The floor: the SDK's own frozen Pet objects, built with no checks at all
    # (a dict lookup for the status is cheaper than calling PetStatus()).
    statuses = _STATUSES
    return [Pet(d["id"], d["name"], d["categoryId"], statuses.get(d.get("status"))) for d in data]  # type: ignore[arg-type]


class Timings(dict[str, list[float]]):
    """Seconds per call of each contender, one sample per round."""

    def median(self, name: str) -> float:
        """The median seconds per call of ``name``."""
        return statistics.median(self[name])

    def ratio(self, name: str, base: str) -> float:
        """The median over rounds of name/base within the same round: drift between rounds cancels out."""
        return statistics.median(a / b for a, b in zip(self[name], self[base], strict=True))


def _interleaved(funcs: dict[str, Callable[[], object]], calls: int, rounds: int) -> Timings:
    """Seconds per call of each function, batches interleaved round by round."""
    samples: dict[str, list[float]] = {name: [] for name in funcs}
    for func in funcs.values():  # warm up caches, pools and lazy imports
        for _ in range(max(3, calls // 10)):
            func()
    for _ in range(rounds):
        for name, func in funcs.items():
            gc.collect()
            started = time.perf_counter()
            for _ in range(calls):
                func()
            samples[name].append((time.perf_counter() - started) / calls)
    return Timings(samples)


async def _async_interleaved(
    funcs: dict[str, Callable[[], Coroutine[Any, Any, object]]], calls: int, rounds: int
) -> Timings:
    """`_interleaved` for coroutine functions, inside the caller's event loop."""
    samples: dict[str, list[float]] = {name: [] for name in funcs}
    for func in funcs.values():
        for _ in range(max(3, calls // 10)):
            await func()
    for _ in range(rounds):
        for name, func in funcs.items():
            gc.collect()
            started = time.perf_counter()
            for _ in range(calls):
                await func()
            samples[name].append((time.perf_counter() - started) / calls)
    return Timings(samples)


def per_call(calls: int, rounds: int) -> list[Row]:
    """SDK operations beside bare httpx doing the same request over the same MockTransport."""
    transport = httpx.MockTransport(_handler)
    sdk = AnimalStoreClient(KEY, base_url=BASE, http_client=httpx.Client(transport=transport))
    raw = httpx.Client(transport=transport, headers=AUTH)
    rows: list[Row] = []

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        t = _interleaved(
            {
                "sdk": lambda: sdk.list_pets(limit=100),
                "raw": lambda: raw.get(f"{BASE}/pets", params={"limit": 100}).json(),
                "floor": lambda: _hand_loop(raw.get(f"{BASE}/pets", params={"limit": 100}).json()),
            },
            calls,
            rounds,
        )
        rows += [
            Row(
                "sync list_pets(limit=100) / floor",
                t.ratio("sdk", "floor"),
                "x",
                1.05,
                f"{t.median('sdk') * 1e6:.0f} µs",
            ),
            Row(
                "sync list_pets(limit=100) / raw",
                t.ratio("sdk", "raw"),
                "x",
                None,
                f"raw {t.median('raw') * 1e6:.0f} µs",
            ),
        ]
        t = _interleaved(
            {
                "sdk": lambda: sdk.create_pet(name="Rex", category_id=3, status="available"),
                "raw": lambda: raw.post(
                    f"{BASE}/pets", json={"name": "Rex", "categoryId": 3, "status": "available"}
                ).json(),
            },
            calls,
            rounds,
        )
        rows.append(Row("sync create_pet / raw", t.ratio("sdk", "raw"), "x", 1.10, f"{t.median('sdk') * 1e6:.0f} µs"))
        t = _interleaved(
            {
                "sdk": lambda: sdk.get_pet(1),  # type: ignore[deprecated]  # measured on purpose
                "raw": lambda: raw.get(f"{BASE}/pets/1").json(),
            },
            calls,
            rounds,
        )
        rows.append(Row("sync get_pet / raw", t.ratio("sdk", "raw"), "x", 1.10, f"{t.median('sdk') * 1e6:.0f} µs"))

        rows += asyncio.run(_async_per_call(transport, calls, rounds))
    return rows


async def _async_per_call(transport: httpx.MockTransport, calls: int, rounds: int) -> list[Row]:
    # One event loop for every async measure: clients belong to the loop that uses them.
    asdk = AsyncAnimalStoreClient(KEY, base_url=BASE, http_client=httpx.AsyncClient(transport=transport))
    araw = httpx.AsyncClient(transport=transport, headers=AUTH)

    async def raw_list() -> object:
        return (await araw.get(f"{BASE}/pets", params={"limit": 100})).json()

    async def floor_list() -> object:
        return _hand_loop((await araw.get(f"{BASE}/pets", params={"limit": 100})).json())

    async def raw_create() -> object:
        body = {"name": "Rex", "categoryId": 3, "status": "available"}
        return (await araw.post(f"{BASE}/pets", json=body)).json()

    async def raw_get() -> object:
        return (await araw.get(f"{BASE}/pets/1")).json()

    rows: list[Row] = []
    t = await _async_interleaved(
        {"sdk": lambda: asdk.list_pets(limit=100), "raw": raw_list, "floor": floor_list}, calls, rounds
    )
    rows.append(
        Row("async list_pets(limit=100) / floor", t.ratio("sdk", "floor"), "x", 1.05, f"{t.median('sdk') * 1e6:.0f} µs")
    )
    t = await _async_interleaved(
        {"sdk": lambda: asdk.create_pet(name="Rex", category_id=3, status="available"), "raw": raw_create},
        calls,
        rounds,
    )
    rows.append(Row("async create_pet / raw", t.ratio("sdk", "raw"), "x", 1.10, f"{t.median('sdk') * 1e6:.0f} µs"))
    t = await _async_interleaved(
        {"sdk": lambda: asdk.get_pet(1), "raw": raw_get},  # type: ignore[deprecated]  # measured on purpose
        calls,
        rounds,
    )
    rows.append(Row("async get_pet / raw", t.ratio("sdk", "raw"), "x", 1.10, f"{t.median('sdk') * 1e6:.0f} µs"))
    await asdk.aclose()
    await araw.aclose()
    return rows


def _keyword_loop(data: list[dict[str, Any]]) -> list[Pet]:
    # The "hand-written Pet(**...) loop": keyword construction, no checks.
    statuses = _STATUSES
    return [
        Pet(id=d["id"], name=d["name"], category_id=d["categoryId"], status=statuses.get(d.get("status")))  # type: ignore[arg-type]
        for d in data
    ]


def structuring(calls: int, rounds: int) -> list[Row]:
    """The converter's list[Pet] beside hand-written loops, on the same parsed JSON."""
    data = json.loads(LIST_BODY)
    t = _interleaved(
        {
            "sdk": lambda: structure(data, list[Pet]),
            "keywords": lambda: _keyword_loop(data),
            "positional": lambda: _hand_loop(data),
        },
        calls,
        rounds,
    )
    with_unknown = json.loads(LIST_BODY)
    with_unknown[50]["status"] = "reserved"  # a status this SDK version does not know
    u = _interleaved(
        {"unknown": lambda: structure(with_unknown, list[Pet]), "known": lambda: structure(data, list[Pet])},
        calls,
        rounds,
    )
    return [
        Row(
            "structure 100 pets, one unknown status / all known",
            u.ratio("unknown", "known"),
            "x",
            1.30,
            f"{u.median('unknown') * 1e6:.1f} µs",
        ),
        Row(
            "structure 100 pets / hand Pet(**...) loop",
            t.ratio("sdk", "keywords"),
            "x",
            1.10,
            f"{t.median('sdk') * 1e6:.1f} µs",
        ),
        Row(
            "structure 100 pets / positional hand loop",
            t.ratio("sdk", "positional"),
            "x",
            None,
            "the strictest floor: positional Pet(...), no checks",
        ),
    ]


_IMPORT_PROBE = """
import sys, time
t0 = time.perf_counter()
import httpx, attrs, cattrs
t1 = time.perf_counter()
import animalstore_client
t2 = time.perf_counter()
unwanted = [m for m in ("animalstore_client.testing", "asyncio", "anyio") if m in sys.modules]
print((t1 - t0) * 1000, (t2 - t1) * 1000, ",".join(unwanted) or "-")
"""


def import_time(runs: int) -> list[Row]:
    """Milliseconds `import animalstore_client` adds after httpx, attrs and cattrs, in fresh processes."""
    import compileall

    import animalstore_client

    # Installed packages come with bytecode; make sure ours has it too.
    compileall.compile_dir(str(Path(animalstore_client.__file__).parent), quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base: list[float] = []
    ours: list[float] = []
    unwanted = "-"
    with tempfile.TemporaryDirectory() as outside:  # not the checkout: measure the installed package
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", _IMPORT_PROBE], capture_output=True, text=True, cwd=outside, env=env, check=True
            ).stdout.split()
            base.append(float(out[0]))
            ours.append(float(out[1]))
            unwanted = out[2]
    return [
        Row(
            "import animalstore_client (after httpx, attrs, cattrs)",
            statistics.median(ours),
            "ms",
            15.0,
            f"httpx+attrs+cattrs {statistics.median(base):.0f} ms; not imported: testing, asyncio"
            + ("" if unwanted == "-" else f" (BUT imported: {unwanted})"),
        ),
        Row("modules a plain import should not load", 0.0 if unwanted == "-" else 1.0, "count>0", 0.0, unwanted),
    ]


def concurrency(calls: int, in_flight: int) -> list[Row]:
    """Many concurrent list_pets through one async client vs bare httpx, against the loopback fake server."""

    async def run(base_url: str) -> tuple[float, float, int]:
        limit = asyncio.Semaphore(in_flight)
        errors = 0

        async def sdk_call(client: AsyncAnimalStoreClient) -> None:
            nonlocal errors
            async with limit:
                try:
                    await client.list_pets()
                except Exception:  # noqa: BLE001 (counted, reported)
                    errors += 1

        async def raw_call(client: httpx.AsyncClient) -> None:
            nonlocal errors
            async with limit:
                try:
                    (await client.get(f"{base_url}/pets")).raise_for_status()
                except Exception:  # noqa: BLE001 (counted, reported)
                    errors += 1

        sdk_times: list[float] = []
        raw_times: list[float] = []
        limits = httpx.Limits(max_connections=in_flight * 2)
        async with (
            AsyncAnimalStoreClient(KEY, base_url=base_url, max_retries=0) as sdk,
            httpx.AsyncClient(headers=AUTH, limits=limits, timeout=30.0) as raw,
        ):
            for _ in range(2):  # alternate, so neither side always runs on a warmer server
                started = time.perf_counter()
                await asyncio.gather(*(sdk_call(sdk) for _ in range(calls)))
                sdk_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                await asyncio.gather(*(raw_call(raw) for _ in range(calls)))
                raw_times.append(time.perf_counter() - started)
        sdk_time, raw_time = statistics.median(sdk_times), statistics.median(raw_times)
        return sdk_time, raw_time, errors

    # The server runs in its own process, so its threads do not share the
    # benchmark's GIL; it starts empty, so list_pets returns [] quickly.
    server = subprocess.Popen(
        [sys.executable, "-m", "animalstore_client.testing", "--port", "0", "--quiet", "--api-key", KEY],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().split(" at ", 1)[1].strip()
        sdk_time, raw_time, errors = asyncio.run(run(base_url))
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stdout is not None:
            server.stdout.close()
    return [
        Row(
            f"{calls} list_pets, {in_flight} in flight: SDK / bare httpx",
            sdk_time / raw_time,
            "x",
            1.2,
            f"SDK {sdk_time:.2f} s, httpx {raw_time:.2f} s",
        ),
        Row("errors (PoolTimeout or other) in those calls", float(errors), "count", 0.0),
    ]


_MEMORY_PROBE = """
import httpx, attrs, cattrs
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20
before = rss()
import animalstore_client
after_import = rss()
client = animalstore_client.AnimalStoreClient("k")
after_client = rss()
print(after_import - before, after_client - after_import)
"""


def memory() -> list[Row]:
    """Resident memory added by importing the SDK and by one client (Linux /proc)."""
    if not Path("/proc/self/statm").exists():
        return [Row("memory", 0.0, "MiB", None, "not measured: no /proc on this system")]
    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE], capture_output=True, text=True, check=True).stdout
    imported, client = (float(x) for x in out.split())
    return [
        Row("RSS added by import animalstore_client", imported, "MiB"),
        Row("RSS added by one AnimalStoreClient", client, "MiB", None, "mostly httpx's SSL context"),
    ]


def main() -> int:
    """Run every measurement, print the table, and return 1 if a target was missed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny counts; report targets without enforcing them")
    args = parser.parse_args()
    # Quick: one round (each batch starts with a full gc.collect, most of a quick run's CPU), one import probe, and
    # only as many concurrent calls as are in flight.
    calls, rounds, imports, many, flight = (5, 1, 1, 10, 10) if args.quick else (200, 15, 9, 1000, 100)

    started = time.perf_counter()
    rows = per_call(calls, rounds) + structuring(calls * 5, rounds) + import_time(imports)
    rows += concurrency(many, flight) + memory()

    width = max(len(row.name) for row in rows)
    print(f"{'measure':<{width}}  {'value':>8}  {'target':>8}  result  notes")
    for row in rows:
        target = "" if row.target is None else f"<= {row.target:g}"
        verdict = "" if row.target is None else ("ok" if row.ok else "MISSED")
        print(f"{row.name:<{width}}  {row.value:>8.3f}  {target:>8}  {verdict:<6}  {row.unit} {row.note}")
    missed = [row for row in rows if not row.ok]
    enforced = " (quick run: not enforced)" if args.quick else ""
    print(
        f"\n{len(rows)} measures in {time.perf_counter() - started:.0f} s on Python {sys.version.split()[0]}, "
        f"httpx {httpx.__version__}; {len(missed)} target(s) missed{enforced}."
    )
    return 1 if missed and not args.quick else 0


if __name__ == "__main__":
    sys.exit(main())
