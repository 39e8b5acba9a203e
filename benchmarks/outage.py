"""What the retry budget does when the service fails, and what middleware and OpenTelemetry cost per call.

    python benchmarks/outage.py                       # about 2 minutes; exits 1 if the outage or blip target is missed
    python benchmarks/outage.py --quick --seconds 1   # seconds; targets reported, not enforced (CI smoke test)
    python benchmarks/outage.py --only cost --baseline /tmp/base  # (a) also with the package of another checkout

**Outage** and **blip**: 100 asyncio tasks share one `AsyncAnimalStoreClient`
(``max_retries=2``, the default ``total_timeout`` and backoff: real sleeps of
0.5 s, then 1 s, less jitter), each calling ``list_pets()`` in a loop for
``--seconds``; a call started before the end is let finish. The service is
the fake store's HTTP server in a process of its own (so it does not share
this process's GIL), answering 503 to every request (outage) or to a random
tenth of them (blip). Attempts are counted by the server, so attempts per
call is what the service saw divided by the calls made. Each case runs once
with the default `RetryBudget` and once with ``retry_budget=None``, each
against a fresh server.

The client sends through aiohttp unless ``--backend httpx`` is given. The
figure with the budget depends on how many calls a second the callers make
(the budget allows 20 % of the calls plus 100 retries in any 10 s, so the
fewer the calls, the more the 100 weigh). On httpx they make about half as
many: each time httpcore's pool places a request it checks every
connection once for each idle one, which with 100 connections costs up to
milliseconds of CPU per call.

**Cost**: the SDK's time per call beside raw httpx over one in-process
`httpx.MockTransport` (the method and functions of ``benchmarks/run.py``),
for (a) no middleware and OpenTelemetry not imported, (b) the OpenTelemetry
API imported (``opentelemetry.trace``; (b2) ``opentelemetry.metrics`` too)
with no provider configured, (c) one no-op middleware, (d) the OpenTelemetry
SDK with an in-memory span exporter (``SimpleSpanProcessor``) and an
in-memory metric reader. (a) and (c) share a process, (b) has one, (b2) and
(d) another, so that an import cannot leak into (a); each case is compared
with raw httpx measured in the same rounds, and "vs (a)" divides those
ratios, repeat by repeat, so drift between the processes cancels out.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from run import AUTH, BASE, KEY, _async_interleaved, _handler, _interleaved

from animalstore_client import AnimalStoreClient, AnimalStoreError, APIStatusError, AsyncAnimalStoreClient
from animalstore_client.testing import ConnectionFaultKind, FakeAnimalStore, FakeResponse

if TYPE_CHECKING:  # not at run time: the cost of (a) is also measured with a package from before middleware
    from animalstore_client import AsyncCallNext, CallNext
    from animalstore_client._clients.backends import AsyncBackendName

SCRIPT = Path(__file__).resolve()
CALLERS = 100
BLIP_SHARE = 0.1
OUTAGE_TARGET = 1.25
"""Attempts per call during the outage, with the default budget: at most this."""
BLIP_TARGET = 0.999
"""Share of calls that succeed during the blip, with the budget and without: at least this."""
REFUSED = "retry budget is exhausted"
"""What the message of an error says when the retry budget refused its retry."""


# --- the service, in its own process -------------------------------------------------------------


class FailingStore(FakeAnimalStore):
    """A fake store answering a random ``share`` of requests with 503 (all of them at 1.0), for as long as it runs.

    Each fault goes through the store's public fault injection, queued for
    the next request to arrive: under concurrency that may be another
    thread's, which changes which request fails, not how many.
    """

    def __init__(self, share: float, seed: int = 20) -> None:
        super().__init__(api_keys=[KEY])
        self._share = share
        self._random = random.Random(seed)

    def exchange(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[FakeResponse | None, ConnectionFaultKind | None]:
        if self._random.random() < self._share:
            self.fail_next(503)
        return super().exchange(method, path, query, headers, body)


def serve(modes: list[str]) -> int:
    """Serve each outage or blip in turn, a fresh store each, on 127.0.0.1: print its base URL, then, once stdin gives
    a line or closes, the requests it saw."""
    for mode in modes:
        store = FailingStore(1.0 if mode == "outage" else BLIP_SHARE)
        with store.serve() as base_url:
            print(base_url, flush=True)
            sys.stdin.readline()
        # Those the recording dropped to stay within its bounds count too: an outage makes ~12,000.
        print(len(store.requests) + store.dropped_requests, flush=True)
    return 0


# --- outage and blip -----------------------------------------------------------------------------


@dataclass
class Run:
    """One case: callers against a failing service for some seconds."""

    case: str
    budget: bool
    calls: int = 0
    succeeded: int = 0
    refused: int = 0
    """Calls that ended because the budget refused a retry."""
    other_errors: dict[str, int] = field(default_factory=dict)
    attempts: int = 0
    """Requests the server received."""
    seconds: float = 0.0
    durations: list[float] = field(default_factory=list, repr=False)

    @property
    def per_call(self) -> float:
        return self.attempts / self.calls if self.calls else float("nan")

    @property
    def success(self) -> float:
        return self.succeeded / self.calls if self.calls else float("nan")


async def _callers(base_url: str, run: Run, seconds: float, backend: AsyncBackendName) -> None:
    budget: dict[str, Any] = {} if run.budget else {"retry_budget": None}
    async with AsyncAnimalStoreClient(KEY, base_url=base_url, backend=backend, **budget) as client:
        end = time.monotonic() + seconds

        async def caller() -> None:
            while time.monotonic() < end:
                started = time.perf_counter()
                try:
                    await client.list_pets()
                except APIStatusError as exc:
                    if REFUSED in str(exc):
                        run.refused += 1
                except AnimalStoreError as exc:  # not expected: reported beside the figures
                    name = type(exc).__name__
                    run.other_errors[name] = run.other_errors.get(name, 0) + 1
                else:
                    run.succeeded += 1
                run.calls += 1
                run.durations.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(CALLERS)))
        run.seconds = time.perf_counter() - started


def failing_service(runs: list[Run], seconds: float, backend: AsyncBackendName) -> None:
    """Run ``CALLERS`` tasks for ``seconds`` in each of ``runs`` in turn, against a fresh store in its case ("outage"
    or "blip"), all served by one process (a process per run but in a quick run)."""
    server = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--serve", *(run.case for run in runs)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdin is not None
        assert server.stdout is not None
        for number, run in enumerate(runs, 1):
            base_url = server.stdout.readline().strip()
            if not base_url:
                raise RuntimeError(f"the {run.case} server did not start (its error is above)")
            asyncio.run(_callers(base_url, run, seconds, backend))
            if number < len(runs):
                server.stdin.write("next\n")
                server.stdin.flush()
            else:
                server.stdin.close()
            run.attempts = int(server.stdout.readline())
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if server.stdout is not None:
            server.stdout.close()


# --- cost per call -------------------------------------------------------------------------------

PROCESSES = {"plain": ("a", "c"), "trace": ("b",), "otel": ("b2", "d"), "base": ("a",)}
"""Which cases share a process: (b) imports OpenTelemetry, so it never runs where (a) does."""
CASES = {
    "a": "(a) no middleware, OpenTelemetry not imported",
    "b": "(b) opentelemetry.trace imported, no provider",
    "b2": "(b2) opentelemetry.trace and .metrics imported, no provider",
    "c": "(c) one no-op middleware",
    "d": "(d) OpenTelemetry SDK, in-memory exporter and reader",
    "base": "(a) with the package at --baseline",
}
OPERATIONS = ("sync list_pets(limit=100)", "sync create_pet", "async list_pets(limit=100)")


def _noop(request: httpx.Request, call_next: CallNext) -> httpx.Response:
    return call_next(request)


async def _async_noop(request: httpx.Request, call_next: AsyncCallNext) -> httpx.Response:
    return await call_next(request)


def _options(case: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The extra constructor arguments of ``case`` for the sync and the async client."""
    if case == "c":
        return {"middleware": [_noop]}, {"middleware": [_async_noop]}
    if case == "d":
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
        meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        otel = {"tracer_provider": tracer_provider, "meter_provider": meter_provider}
        return otel, otel
    return {}, {}


Figures = dict[str, dict[str, float]]
"""Per ``"<case> <operation>"``: median ``seconds`` per call, and the median ``ratio`` to raw httpx."""


def cost_process(process: str, calls: int, rounds: int) -> dict[str, Any]:
    """The figures of each case of ``process``, and whether OpenTelemetry was imported by the end."""
    cases = PROCESSES[process]
    # Imported as an application (or a library it uses) would, with no provider set.
    if process in ("trace", "otel"):
        import opentelemetry.trace
    if process == "otel":
        import opentelemetry.metrics  # noqa: F401
    transport = httpx.MockTransport(_handler)
    sync = {
        case: AnimalStoreClient(KEY, base_url=BASE, http_client=httpx.Client(transport=transport), **_options(case)[0])
        for case in cases
    }
    raw = httpx.Client(transport=transport, headers=AUTH)
    figures: Figures = {}

    def record(operation: str, timings: Mapping[str, list[float]]) -> None:
        for case in cases:
            figures[f"{case} {operation}"] = {
                "seconds": statistics.median(timings[case]),
                "ratio": statistics.median(a / b for a, b in zip(timings[case], timings["raw"], strict=True)),
            }

    def list_raw() -> object:
        return raw.get(f"{BASE}/pets", params={"limit": 100}).json()

    def create_raw() -> object:
        return raw.post(f"{BASE}/pets", json={"name": "Rex", "categoryId": 3, "status": "available"}).json()

    lists: dict[str, Callable[[], object]] = {
        case: functools.partial(client.list_pets, limit=100) for case, client in sync.items()
    }
    record(OPERATIONS[0], _interleaved({**lists, "raw": list_raw}, calls, rounds))
    creates: dict[str, Callable[[], object]] = {
        case: functools.partial(client.create_pet, name="Rex", category_id=3, status="available")
        for case, client in sync.items()
    }
    record(OPERATIONS[1], _interleaved({**creates, "raw": create_raw}, calls, rounds))

    async def async_lists() -> Mapping[str, list[float]]:
        clients = {
            case: AsyncAnimalStoreClient(
                KEY, base_url=BASE, http_client=httpx.AsyncClient(transport=transport), **_options(case)[1]
            )
            for case in cases
        }
        araw = httpx.AsyncClient(transport=transport, headers=AUTH)

        async def raw_list() -> object:
            return (await araw.get(f"{BASE}/pets", params={"limit": 100})).json()

        funcs: dict[str, Callable[[], Coroutine[Any, Any, object]]] = {
            case: functools.partial(client.list_pets, limit=100) for case, client in clients.items()
        }
        timings = await _async_interleaved({**funcs, "raw": raw_list}, calls, rounds)
        for client in clients.values():
            await client.aclose()
        await araw.aclose()
        return timings

    record(OPERATIONS[2], asyncio.run(async_lists()))
    imported = any(name.startswith("opentelemetry") for name in sys.modules)
    return {"figures": figures, "opentelemetry": imported}


@dataclass
class Cost:
    """The figures of every case, one `Figures` per repeat."""

    repeats: list[Figures] = field(default_factory=list)

    def seconds(self, case: str, operation: str) -> float:
        return statistics.median(r[f"{case} {operation}"]["seconds"] for r in self.repeats)

    def ratio(self, case: str, operation: str) -> float:
        return statistics.median(r[f"{case} {operation}"]["ratio"] for r in self.repeats)

    def versus(self, case: str, base: str, operation: str) -> float:
        """``case``'s ratio to raw over ``base``'s, repeat by repeat; the median."""
        key, base_key = f"{case} {operation}", f"{base} {operation}"
        return statistics.median(r[key]["ratio"] / r[base_key]["ratio"] for r in self.repeats)


def cost(calls: int, rounds: int, repeats: int, baseline: str | None) -> Cost:
    """Run each process ``repeats`` times, in turn, and gather their figures repeat by repeat."""
    processes = [name for name in PROCESSES if name != "base" or baseline]
    result = Cost()
    for _ in range(repeats):
        merged: Figures = {}
        for process in processes:
            env = dict(os.environ)
            if process == "base":
                assert baseline is not None
                env["PYTHONPATH"] = os.pathsep.join(filter(None, [baseline, env.get("PYTHONPATH")]))
            out = subprocess.run(
                [
                    sys.executable,
                    str(SCRIPT),
                    "--cost-process",
                    process,
                    "--calls",
                    str(calls),
                    "--rounds",
                    str(rounds),
                ],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            ).stdout
            found = json.loads(out.splitlines()[-1])
            figures: Figures = found["figures"]
            if process in ("plain", "base") and found["opentelemetry"]:
                raise RuntimeError("case (a) ran with OpenTelemetry imported: its figures would not be (a)'s")
            if process == "base":
                figures = {key.replace("a ", "base ", 1): value for key, value in figures.items()}
            merged.update(figures)
        result.repeats.append(merged)
    return result


# --- the report ----------------------------------------------------------------------------------


def _ms(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000 if ordered else float("nan")


def _blip_floor(calls: int) -> float:
    """The blip target less three standard deviations of chance.

    With a tenth of answers failing at random and three attempts, a call fails
    with probability 0.1**3: 99.9 % is the expected share of successes, budget
    or not, so a run falls below it by chance about half of the time. Beneath
    this floor chance is no longer a likely cause.
    """
    fail = 1 - BLIP_TARGET
    return BLIP_TARGET - 3 * math.sqrt(fail * BLIP_TARGET / max(calls, 1))


def report_failures(runs: list[Run], seconds: float, backend: str) -> None:
    """Print the outage and blip table."""
    print(
        f"{CALLERS} asyncio tasks on one AsyncAnimalStoreClient (backend={backend}), {seconds:g} s per run, "
        "against the fake store's server in its own process"
    )
    print(
        f"{'case':<8}{'budget':<9}{'calls':>8}{'attempts':>10}{'per call':>10}{'attempts/s':>12}{'succeeded':>11}"
        f"{'refused':>9}{'p50 call':>10}{'p99 call':>10}  other errors"
    )
    for run in runs:
        others = ", ".join(f"{name} {count}" for name, count in run.other_errors.items()) or "-"
        print(
            f"{run.case:<8}{'default' if run.budget else 'None':<9}{run.calls:>8,}{run.attempts:>10,}"
            f"{run.per_call:>10.3f}{run.attempts / run.seconds:>12,.0f}{run.success:>10.2%} {run.refused:>8,}"
            f"{_ms(run.durations, 0.5):>8.1f}ms{_ms(run.durations, 0.99):>8.1f}ms  {others}"
        )


def failure_checks(runs: list[Run]) -> list[tuple[str, bool]]:
    """The outage and blip targets, each with whether it was met."""
    outage = next(run for run in runs if run.case == "outage" and run.budget)
    blips = [run for run in runs if run.case == "blip"]
    return [
        (f"outage, default budget: attempts per call <= {OUTAGE_TARGET}", outage.per_call <= OUTAGE_TARGET),
        *(
            (
                f"blip, budget {'default' if run.budget else 'None'}: {run.success:.3%} succeeded >= "
                f"{BLIP_TARGET:.1%} (less chance: >= {_blip_floor(run.calls):.3%})",
                run.success >= _blip_floor(run.calls),
            )
            for run in blips
        ),
        ("blip, default budget: no retry refused", next(run for run in blips if run.budget).refused == 0),
        ("no error other than the service's 503", not any(run.other_errors for run in runs)),
    ]


def report_cost(costs: Cost, rounds: int, repeats: int, baseline: str | None) -> None:
    """Print the cost table."""
    print(f"\nCost per call beside raw httpx over httpx.MockTransport ({repeats} repeat(s) of {rounds} rounds)")
    cases = [*CASES] if baseline else [case for case in CASES if case != "base"]
    width = max(len(CASES[case]) for case in cases) + 2
    print(f"{'operation':<28}{'case':<{width}}{'per call':>10}{'/ raw':>8}{'vs (a)':>8}")
    for operation in OPERATIONS:
        for case in cases:
            versus = "" if case == "a" else f"{costs.versus(case, 'a', operation):>8.3f}"
            print(
                f"{operation:<28}{CASES[case]:<{width}}{costs.seconds(case, operation) * 1e6:>8.0f}µs"
                f"{costs.ratio(case, operation):>8.3f}{versus}"
            )


def main() -> int:
    """Measure, print the tables and the targets; the exit status says whether they were met."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts; targets reported, not enforced")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each outage and blip run (default 10)")
    parser.add_argument("--repeats", type=int, default=5, help="cost: processes run this many times each (default 5)")
    parser.add_argument("--baseline", metavar="DIR", help="cost: also measure (a) with the package found in DIR")
    parser.add_argument("--serve", nargs="+", choices=["outage", "blip"], help=argparse.SUPPRESS)
    parser.add_argument(
        "--backend", choices=["aiohttp", "httpx"], default="aiohttp", help="outage and blip: the client's HTTP library"
    )
    parser.add_argument("--only", choices=["failures", "cost"], help="run only the outage and blip, or only the cost")
    parser.add_argument("--cost-process", choices=list(PROCESSES), help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=200, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=9, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve)
    if args.cost_process:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            print(json.dumps(cost_process(args.cost_process, args.calls, args.rounds)))
        return 0

    started = time.perf_counter()
    checks: list[tuple[str, bool]] = []
    if args.only != "cost":
        runs = [Run(case, budget) for case in ("outage", "blip") for budget in (True, False)]
        # Quick: one server process for the four runs (each still against a fresh store): its figures are not read.
        for batch in [runs] if args.quick else [[run] for run in runs]:
            failing_service(batch, args.seconds, args.backend)
        report_failures(runs, args.seconds, args.backend)
        checks += failure_checks(runs)
    if args.only != "failures":
        # Quick: one round (each batch starts with a full gc.collect, much of a quick process's CPU).
        calls, rounds, repeats = (5, 1, 1) if args.quick else (args.calls, args.rounds, args.repeats)
        report_cost(cost(calls, rounds, repeats, args.baseline), rounds, repeats, args.baseline)

    print()
    for name, ok in checks:
        print(f"{name:<90}{'ok' if ok else 'MISSED'}")
    missed = [name for name, ok in checks if not ok]
    enforced = " (quick run: not enforced)" if args.quick else ""
    print(
        f"\n{len(checks)} targets, {len(missed)} missed{enforced}; {time.perf_counter() - started:.0f} s on "
        f"Python {sys.version.split()[0]}, httpx {httpx.__version__}"
    )
    return 1 if missed and not args.quick else 0


if __name__ == "__main__":
    sys.exit(main())
