"""The default backend of two checkouts side by side: requests/s and CPU per request, interleaved, one machine.

    git worktree add /tmp/before <commit>       # the tree to compare against
    python benchmarks/before_after.py /tmp/before .  --rounds 6 -n 3000

Each round runs, in a fresh subprocess per tree (``PYTHONPATH`` set to the
tree, so that it imports that tree's ``animalstore_client``), the SDK's
default backend at async and sync, 1 and 100 in flight, against one nginx
(``benchmarks/concurrency.py`` starts it, pinned to CPU 0). The order of the
two trees swaps every round, so drift and warm-up cancel out; each line shows
the median over rounds of the after/before ratio within a round, and its
spread; and, counted (so the same on a loaded machine), the Python function
calls per call at one in flight on each side. Needs nginx (Debian: ``apt-get install -y nginx``); ``--server fake``
(the SDK's fake store, itself the bottleneck) only shows that the script runs, and ``--quick`` (one round, one
call per worker with no warm-up, 10 in flight for 100, 10 calls counted) makes that run cheap: the CI's smoke test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

SETTINGS = [("async", 1), ("async", 100), ("sync", 1), ("sync", 100)]


def _child(url: str, n: int, quick: bool) -> None:
    """Measure this process's ``animalstore_client`` (its tree's) and print the figures as JSON."""
    import concurrency  # this script's folder: the runners and the warm-up

    from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient

    figures: dict[str, list[float]] = {}
    for kind, many in SETTINGS:
        in_flight = min(many, concurrency.QUICK_MANY) if quick else many  # as concurrency.py's quick run
        # Every one of the in-flight workers makes calls (in a quick run, one at least: run_* see to it).
        calls = n if quick else max(n, 2 * in_flight)
        warm_up = 0 if quick else None  # quick: the figures are not read; the measured calls run the same code
        if kind == "async":

            async def make() -> Any:
                client = AsyncAnimalStoreClient(concurrency.KEY, base_url=url, max_retries=0)

                async def call() -> object:
                    return await client.list_pets(limit=100)

                return call, client.aclose

            result = concurrency.run_async(make, calls, in_flight, lambda: 0.0, warm_up)
        else:

            def make_sync() -> Any:
                client = AnimalStoreClient(concurrency.KEY, base_url=url, max_retries=0)
                return (lambda: client.list_pets(limit=100)), client.close

            result = concurrency.run_sync(make_sync, calls, in_flight, lambda: 0.0, warm_up)
        figures[f"{kind} C={in_flight}"] = [result.rate, result.cpu / len(result.latencies) * 1e6]
    figures["python calls per call"] = _python_calls(url, 10, 1) if quick else _python_calls(url)
    print(json.dumps(figures))


def _python_calls(url: str, calls: int = 200, warm: int = 20) -> list[float]:
    """Python function calls per ``list_pets(limit=100)``, async and sync, one in flight (cProfile's count).

    A count, not a time: the same on a loaded machine, so it shows added work that
    the rates, swinging by several percent between runs here, cannot.
    """
    import cProfile
    import pstats

    import concurrency

    from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient

    async def run_async() -> cProfile.Profile:
        client = AsyncAnimalStoreClient(concurrency.KEY, base_url=url, max_retries=0)
        for _ in range(warm):  # warm: the connection open, the per-URL caches filled
            await client.list_pets(limit=100)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(calls):
            await client.list_pets(limit=100)
        profile.disable()
        await client.aclose()
        return profile

    counts = [pstats.Stats(asyncio.run(run_async())).total_calls / calls]  # type: ignore[attr-defined]
    with AnimalStoreClient(concurrency.KEY, base_url=url, max_retries=0) as client:
        for _ in range(warm):
            client.list_pets(limit=100)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(calls):
            client.list_pets(limit=100)
        profile.disable()
    counts.append(pstats.Stats(profile).total_calls / calls)  # type: ignore[attr-defined]
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "before", type=Path, nargs="?", help="the checkout to compare against (holds animalstore_client/)"
    )
    parser.add_argument("after", type=Path, nargs="?", help="the checkout measured against it")
    parser.add_argument("-n", type=int, default=3000, help="calls per setting and run")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--server", choices=["nginx", "fake"], default="nginx", help="fake: the SDK's fake store")
    parser.add_argument("--quick", action="store_true", help="a smoke test: one round, tiny counts, figures not read")
    parser.add_argument("--child", nargs=2, metavar=("URL", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]), args.quick)
        return 0
    if args.before is None or args.after is None:
        parser.error("give the two checkouts: before and after")
    sys.path.insert(0, str(Path(__file__).parent))
    import concurrency

    n, rounds = (min(args.n, 10), 1) if args.quick else (args.n, args.rounds)
    ratios: dict[str, list[tuple[float, float]]] = {}
    counted: dict[str, list[float]] = {}  # the last round's: a count, the same every round
    with concurrency.nginx() if args.server == "nginx" else concurrency.fake_server() as (url, _):
        for round_number in range(rounds):
            trees = {"before": args.before, "after": args.after}
            order = ["before", "after"] if round_number % 2 == 0 else ["after", "before"]
            figures: dict[str, dict[str, list[float]]] = {}
            for side in order:
                env = {**os.environ, "PYTHONPATH": str(trees[side].resolve())}
                command = [sys.executable, __file__, "--child", url, str(n), *["--quick"] * args.quick]
                if os.path.exists("/usr/bin/taskset"):
                    command = ["taskset", "-c", "1", *command]
                done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
                if done.returncode:
                    print(done.stderr, file=sys.stderr)
                    return 1
                figures[side] = json.loads(done.stdout.strip().splitlines()[-1])
            counted = {side: figures[side].pop("python calls per call") for side in figures}
            for setting, (rate, cpu) in figures["after"].items():
                before_rate, before_cpu = figures["before"][setting]
                ratios.setdefault(setting, []).append((rate / before_rate, cpu / before_cpu))
            print(f"round {round_number + 1}/{rounds} done", file=sys.stderr)
    print(
        "Python function calls per call, one in flight (async, sync):"
        f" before {counted['before'][0]:.0f}, {counted['before'][1]:.0f};"
        f" after {counted['after'][0]:.0f}, {counted['after'][1]:.0f}"
    )
    print(
        f"{'default backend':16} {'req/s after/before':>20} {'spread':>14} {'CPU/call after/before':>22} {'spread':>14}"
    )
    for setting, pairs in ratios.items():
        rates = [rate for rate, _ in pairs]
        cpus = [cpu for _, cpu in pairs]
        print(
            f"{setting:16} {statistics.median(rates):>20.3f} {min(rates):>6.2f} to {max(rates):<5.2f}"
            f" {statistics.median(cpus):>22.3f} {min(cpus):>6.2f} to {max(cpus):<5.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
