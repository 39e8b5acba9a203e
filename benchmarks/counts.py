"""Instructions per call of every backend against the lean floors, counted, for one checkout or several.

    git worktree add /tmp/before <commit>       # the last release, say
    python benchmarks/counts.py /tmp/before .   # a column per checkout; the floors once, in the same run
    python benchmarks/counts.py --quick --server fake   # a smoke test: tiny counts, figures not read

Each stack (the SDK on every backend, async and sync, and the lean floors:
plain aiohttp for async, plain urllib3 for sync, as ``benchmarks/concurrency.py``
builds them) runs in a process of its own under valgrind's callgrind, pinned
to CPU 1 against nginx on CPU 0. After a warm-up the process marks the start
(``os.getppid()``: callgrind zeroes its counts there) and the end
(``os.getpgrp()``: callgrind dumps there) of its measured calls, so the count
is the client process's instructions (every thread's) for those calls alone,
at one in flight. Counts do not move with the machine's load, unlike rates;
they move a little with the hash seed, so each stack runs under several
(``PYTHONHASHSEED``) and the median is shown. A checkout is given as the tree
that holds ``animalstore_client/`` (``PYTHONPATH`` is set to it); the floors
import only ``Pet`` from it and are measured once, with the first.

Then the rate: the default async client against the aiohttp floor at 100
calls in flight, a process per checkout and round, the two in turn (the first
swapped every round), ``-n`` calls each; the median over rounds of the ratio
within a round. Rates on a shared machine swing by several percent between
runs: read the counts first. Needs valgrind (``apt-get install -y valgrind``)
and nginx; ``--server fake`` uses the SDK's fake store instead (only to show
that the script runs: it is the bottleneck and its answers differ from nginx's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ASYNC_FLOOR = "async aiohttp floor"
SYNC_FLOOR = "sync urllib3 floor"
STACKS = {
    # name: (kind, concurrency.py's stack, its floor)
    "async httpx": ("async", "sdk httpx", ASYNC_FLOOR),
    "async httpx2": ("async", "sdk httpx2", ASYNC_FLOOR),
    "async aiohttp": ("async", "sdk aiohttp", ASYNC_FLOOR),
    "async pyreqwest": ("async", "sdk pyreqwest", ASYNC_FLOOR),
    "sync httpx": ("sync", "sdk httpx", SYNC_FLOOR),
    "sync httpx2": ("sync", "sdk httpx2", SYNC_FLOOR),
    "sync pyreqwest": ("sync", "sdk pyreqwest", SYNC_FLOOR),
}
FLOORS = {ASYNC_FLOOR: ("async", "aiohttp floor"), SYNC_FLOOR: ("sync", "urllib3 floor")}
TARGETS: list[tuple[str, str, float]] = [
    # (stack, how it is read, bound): issue 61's "Done when"; "floor/instr" is the floor's count over the stack's.
    ("async httpx", "floor/instr >=", 0.75),
    ("async aiohttp", "instr/floor <=", 1.0),
    ("sync httpx", "instr/floor <=", 0.975),
    ("async pyreqwest", "instr/floor <=", 0.875),
    ("sync pyreqwest", "instr/floor <=", 0.65),
]
RATE_TARGET = 0.70
"""The default async client's rate over the aiohttp floor's, 100 in flight."""


def _measured_child(kind: str, stack: str, url: str, calls: int, warm: int) -> None:
    """Run ``stack`` ``warm`` times, then ``calls`` times between the two marks callgrind (or strace) watches for."""
    import concurrency  # this script's folder

    if kind == "async":
        make = concurrency.async_stacks(url)[stack]
        turns = [0]
        run_once = asyncio.BaseEventLoop._run_once  # type: ignore[attr-defined]  # noqa: SLF001  # a turn, for --syscalls

        def counted(loop: asyncio.BaseEventLoop) -> None:
            turns[0] += 1
            run_once(loop)

        async def main() -> None:
            call, close = await make()
            for _ in range(warm):  # the connection open, every cache filled
                await call()
            before = turns[0]
            os.getppid()  # the start mark: callgrind zeroes its counts here
            for _ in range(calls):
                await call()
            os.getpgrp()  # the end mark: callgrind dumps the counts here
            print(json.dumps({"loop turns": (turns[0] - before) / calls}))
            await close()

        if os.environ.get("ANIMALSTORE_COUNT_TURNS"):
            asyncio.BaseEventLoop._run_once = counted  # type: ignore[attr-defined]  # noqa: SLF001
        asyncio.run(main())
        return
    call, close = concurrency.sync_stacks(url)[stack]()
    for _ in range(warm):
        call()
    os.getppid()
    for _ in range(calls):
        call()
    os.getpgrp()
    close()


def _rate_child(url: str, n: int, many: int, floor_first: bool) -> None:
    """Print the rates of the default async client and the aiohttp floor, ``many`` in flight, as JSON."""
    import concurrency

    stacks = concurrency.async_stacks(url)
    order = ["aiohttp floor", "sdk httpx"] if floor_first else ["sdk httpx", "aiohttp floor"]
    rates = {name: concurrency.run_async(stacks[name], n, many, lambda: 0.0).rate for name in order}
    print(json.dumps(rates))


def _pinned(command: list[str]) -> list[str]:
    return ["taskset", "-c", "1", *command] if shutil.which("taskset") and (os.cpu_count() or 1) >= 2 else command


def count(tree: Path, kind: str, stack: str, url: str, calls: int, warm: int, seed: int) -> float:
    """Instructions per call of one stack of ``tree``, one hash seed: callgrind's count between the marks."""
    with tempfile.TemporaryDirectory(prefix="animalstore-callgrind-") as folder:
        out = Path(folder) / "cg.out"
        command = _pinned(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                "--zero-before=getppid",
                "--dump-before=getpgrp",
                sys.executable,
                __file__,
                "--measured-child",
                kind,
                stack,
                url,
                str(calls),
                str(warm),
            ]
        )
        env = {**os.environ, "PYTHONPATH": str(tree.resolve()), "PYTHONHASHSEED": str(seed)}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800, check=False)
        if done.returncode:
            raise RuntimeError(f"{kind} {stack} failed under callgrind:\n{done.stderr[-3000:]}")
        dumps = sorted(Path(folder).glob("cg.out.*"))  # the end mark's dump; the file without a suffix is the exit's
        if len(dumps) != 1:
            raise RuntimeError(f"{kind} {stack}: expected one dump between the marks, found {len(dumps)}")
        for line in dumps[0].read_text().splitlines():
            if line.startswith("summary:"):
                return int(line.split()[1]) / calls
    raise RuntimeError(f"{kind} {stack}: callgrind's dump has no summary line")


def syscalls(tree: Path, stack: str, url: str, calls: int, warm: int) -> dict[str, float]:
    """System calls per call of an async stack of ``tree`` (strace, every thread, between the marks), by name, and
    the event loop's turns per call. glibc's mmap threshold is held at its start (128 KiB), as in a process whose
    start-up freed no large block: a read that allocates its 256 KiB each time then shows as mmap, mremap, munmap."""
    with tempfile.TemporaryDirectory(prefix="animalstore-strace-") as folder:
        out = Path(folder) / "trace"
        command = ["strace", "-f", "-qq", "-o", str(out), sys.executable, __file__, "--measured-child", "async"]
        env = {**os.environ, "PYTHONPATH": str(tree.resolve()), "MALLOC_MMAP_THRESHOLD_": "131072"}
        env["ANIMALSTORE_COUNT_TURNS"] = "1"
        command += [stack, url, str(calls), str(warm)]
        done = subprocess.run(_pinned(command), env=env, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode:
            raise RuntimeError(f"async {stack} failed under strace:\n{done.stderr[-3000:]}")
        figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
        counted: dict[str, int] = {}
        between = False
        for line in out.read_text().splitlines():
            name = line.split(None, 1)[1].split("(", 1)[0] if " " in line else ""
            if name == "getppid":
                between = True
            elif name == "getpgrp":
                between = False
            elif between and name and not name.startswith("<..."):
                counted[name] = counted.get(name, 0) + 1
    return figures | {name: count / calls for name, count in sorted(counted.items(), key=lambda item: -item[1])}


def counts(
    trees: list[Path], stacks: list[str], url: str, calls: int, warm: int, seeds: list[int]
) -> tuple[dict[str, float], list[dict[str, float]]]:
    """The floors' counts, and each tree's stacks' counts: medians over ``seeds``."""

    def median(tree: Path, kind: str, stack: str) -> float:
        return statistics.median(count(tree, kind, stack, url, calls, warm, seed) for seed in seeds)

    floors = {name: median(trees[0], *FLOORS[name]) for name in FLOORS if any(STACKS[s][2] == name for s in stacks)}
    per_tree = [{name: median(tree, *STACKS[name][:2]) for name in stacks} for tree in trees]
    return floors, per_tree


def rate_ratios(trees: list[Path], url: str, n: int, many: int, rounds: int) -> list[list[float]]:
    """Per tree, each round's rate of the default async client over the aiohttp floor's (``many`` in flight)."""
    ratios: list[list[float]] = [[] for _ in trees]
    for round_number in range(rounds):
        order = list(enumerate(trees))
        if round_number % 2:
            order.reverse()
        for index, tree in order:
            command = _pinned([sys.executable, __file__, "--rate-child", url, str(n), str(many), str(round_number % 2)])
            env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800, check=False)
            if done.returncode:
                raise RuntimeError(f"the rate run of {tree} failed:\n{done.stderr[-3000:]}")
            rates = json.loads(done.stdout.strip().splitlines()[-1])
            ratios[index].append(rates["sdk httpx"] / rates["aiohttp floor"])
        print(f"rate round {round_number + 1}/{rounds} done", file=sys.stderr)
    return ratios


def _available() -> list[str]:
    """The stacks whose library imports here (pyreqwest and httpx2 need Python 3.11+)."""
    import importlib.util

    missing = {name for name in ("pyreqwest", "httpx2") if importlib.util.find_spec(name) is None}
    return [name for name in STACKS if name.split()[1] not in missing]


def report(
    trees: list[Path], floors: dict[str, float], per_tree: list[dict[str, float]], ratios: list[list[float]]
) -> None:
    """Print the counts beside the floors, the issue's targets per tree, and the rate ratio per tree."""
    labels = [str(tree) for tree in trees]
    width = max(24, *(len(label) + 2 for label in labels))
    print("Instructions per call (callgrind, client process, between two marks; median over hash seeds)")
    for name, value in floors.items():
        print(f"  {name:<22}{value / 1e6:>8.3f} M")
    print(f"{'':24}" + "".join(f"{label:>{width}}" for label in labels))
    for name in per_tree[0]:
        floor = floors[STACKS[name][2]]
        cells = [f"{tree[name] / 1e6:.3f} M  {tree[name] / floor:.3f}" for tree in per_tree]
        print(f"  {name:<22}" + "".join(f"{cell:>{width}}" for cell in cells))
    print("  (each cell: instructions per call, then over its floor's: aiohttp's for async, urllib3's for sync)")
    print("Targets (issue 61):")
    for name, reading, bound in TARGETS:
        if name not in per_tree[0]:
            continue
        floor = floors[STACKS[name][2]]
        values = [floor / tree[name] if reading.startswith("floor") else tree[name] / floor for tree in per_tree]
        at_least = reading.endswith(">=")
        met = [value >= bound if at_least else value <= bound for value in values]
        cells = [f"{value:.3f} {'ok' if ok else 'missed'}" for value, ok in zip(values, met, strict=True)]
        print(f"  {name + ' ' + reading + ' ' + str(bound):<38}" + "".join(f"{cell:>{width}}" for cell in cells))
    if ratios and ratios[0]:
        print("Rate, 100 in flight: the default async client over the aiohttp floor (median of rounds; noisy)")
        for label, values in zip(labels, ratios, strict=True):
            median = statistics.median(values)
            verdict = "ok" if median >= RATE_TARGET else "missed"
            spread = f"{min(values):.3f} to {max(values):.3f}"
            print(f"  {label:<30}{median:>7.3f}  ({spread}; target >= {RATE_TARGET}: {verdict})")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("trees", type=Path, nargs="*", help="checkouts holding animalstore_client/ (default: this one)")
    parser.add_argument("--calls", type=int, default=200, help="calls counted per stack (default 200)")
    parser.add_argument("--warm", type=int, default=20, help="calls before the start mark (default 20)")
    parser.add_argument("--seeds", type=int, default=3, help="hash seeds per stack (default 3)")
    parser.add_argument("-n", type=int, default=10_000, help="calls per rate run (default 10,000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the rate runs (default 5; 0: none)")
    parser.add_argument("--stacks", nargs="+", choices=list(STACKS), help="only these stacks (default: all)")
    parser.add_argument("--server", choices=["nginx", "fake"], default="nginx", help="fake: the SDK's fake store")
    parser.add_argument("--quick", action="store_true", help="a smoke test: tiny counts, one seed, one round")
    parser.add_argument(
        "--syscalls", action="store_true", help="also the async stacks' system calls and loop turns per call (strace)"
    )
    parser.add_argument("--measured-child", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--rate-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measured_child:
        kind, stack, url, calls, warm = args.measured_child
        _measured_child(kind, stack, url, int(calls), int(warm))
        return 0
    if args.rate_child:
        url, n, many, floor_first = args.rate_child
        _rate_child(url, int(n), int(many), floor_first == "1")
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed, so nothing was counted: apt-get install -y valgrind, then run again.")
        return 0
    trees = args.trees or [Path(__file__).resolve().parent.parent]
    stacks = [name for name in _available() if args.stacks is None or name in args.stacks]
    if args.quick:  # every stack runs all its code; 10 in flight for 100, as concurrency.py's quick run
        calls, warm, seeds, n, rounds, many = 3, 1, [0], 20, min(args.rounds, 1), 10
    else:
        calls, warm, n, rounds, many = args.calls, args.warm, args.n, args.rounds, 100
        seeds = list(range(max(1, args.seeds)))
    sys.path.insert(0, str(Path(__file__).parent))
    import concurrency

    server: Callable[[], Any] = concurrency.fake_server if args.server == "fake" else concurrency.nginx
    with server() as (url, _):
        floors, per_tree = counts(trees, stacks, url, calls, warm, seeds)
        ratios = rate_ratios(trees, url, n, many, rounds) if rounds else []
        traced = [
            {name: syscalls(tree, STACKS[name][1], url, calls, warm) for name in stacks if name.startswith("async")}
            for tree in (trees if args.syscalls and shutil.which("strace") else [])
        ]
    report(trees, floors, per_tree, ratios)
    for tree, figures in zip(trees, traced, strict=False):
        print(f"System calls and event-loop turns per call, one in flight (strace), {tree}:")
        for name, row in figures.items():
            print(f"  {name:<22}" + ", ".join(f"{key} {value:g}" for key, value in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
