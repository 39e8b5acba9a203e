"""What the SDK's own plumbing costs a call on every backend, apart from the library, the JSON decode and the parse.

    python benchmarks/plumbing.py                          # nginx, every backend, one call in flight, 2 rounds
    python benchmarks/plumbing.py --backends aiohttp httpx-sync --concurrency 1 100
    python benchmarks/plumbing.py --sdk-path /tmp/old .    # another checkout of the SDK and this one, interleaved
    python benchmarks/plumbing.py --floor --no-spy --sdk-path /tmp/old . --rounds 5  # CPU beyond each library's floor
    python benchmarks/plumbing.py --top 15                 # and the costliest plumbing functions
    python benchmarks/plumbing.py --quick --server fake    # the CI smoke test (no nginx, no py-spy needed)

Each run is a child process calling ``list_pets(limit=100)`` in a loop (C
tasks or threads in flight) against nginx (``concurrency.py``'s, pinned to
CPU 0; the child runs on CPU 1), while py-spy (``pip install py-spy``; it
needs ptrace, which root has) samples it 1,000 times a second. A sample
whose innermost frame is a wait (``_WAITS``) is left out; every other
sample is put in one bucket, by its innermost frame that tells
(``classify``):

- ``library``: the HTTP library and what it calls (aiohttp, yarl, multidict,
  httpx, httpcore, h11, anyio, socket, ssl, selectors);
- ``json``: the standard library's JSON decoder;
- ``parse``: the SDK turning decoded JSON into models (``_core.serde``, the
  models' fast path in ``_core.models``, the ``parse_*`` functions);
- ``plumbing``: any other frame of the SDK (building and checking the request,
  the attempt's bookkeeping, adapting the request for the library, reading
  and decoding the body, the finished response);
- ``other``: the event loop and this script's loop.

A bucket's microseconds are its share of the samples times the child's CPU
per call (``time.process_time`` over the run). Medians over rounds.

py-spy stops the child for each sample, which slows it and charges the lines
that make system calls more than their share: compare runs of the same kind.
With ``--floor`` each round also runs the library's floor (``concurrency.py``'s:
the library used directly, ``json.loads`` and a hand loop building ``Pet``
objects), and ``beyond`` is the median over rounds of a checkout's CPU a call
minus the floor's in the same round: what the SDK adds, its checks and its
faster parser included. ``--no-spy`` leaves py-spy out, for the cleanest CPU
figures.

The backends are httpx (both clients) and aiohttp; pyreqwest is measured
by ``pyreqwest_split.py`` (see ``ASYNC``). It measures; it has no
targets: the issue that added it asked for the plumbing to halve on every
backend, compared with ``--sdk-path`` on a checkout from before.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# pyreqwest is left out: its Rust calls hold no Python frame of their own, so py-spy charges the
# time spent in them, waiting included, to the SDK frame that made them; pyreqwest_split.py
# measures that backend by thread CPU instead.
ASYNC = {"httpx-async": "httpx", "aiohttp": "aiohttp"}
SYNC = {"httpx-sync": "httpx"}
BACKENDS = [*ASYNC, *SYNC]
BUCKETS = ("library", "json", "parse", "plumbing", "other")

_LIBRARY = (
    "aiohttp/",
    "yarl/",
    "multidict/",
    "propcache/",
    "aiohappyeyeballs/",
    "httpx/",
    "httpcore/",
    "h11/",
    "anyio/",
    "sniffio/",
    "pyreqwest/",
    "socket.py",
    "ssl.py",
    "selectors.py",
)
_FRAME = re.compile(r"^(?P<function>.*) \((?P<path>[^()]*?):\d+\)$")
_PARSING = ("_serde.py", "_models.py")
"""The SDK's files whose every frame is parsing: the converter, and the models with their fast path."""


_WAITS = ("selectors.py", "socket.py", "threading.py", "plumbing.py")
"""Where an innermost frame means a thread waiting (for the socket, the GIL, a lock, the clock), not working.

py-spy leaves out idle threads by their state, which is not reliable on every
kernel (a sandbox's); waits seen anyway are put in their own bucket, ``wait``,
which is left out of the shares.
"""


def classify(stack: str) -> tuple[str, str | None]:
    """The bucket of one py-spy stack (frames outermost first, ``;``-separated), and the SDK function if plumbing."""
    frames = stack.split(";")
    innermost = _FRAME.match(frames[-1])
    if innermost is not None and innermost.group("path").rsplit("/", 1)[-1] in _WAITS:
        return "wait", None
    for frame in reversed(frames):
        match = _FRAME.match(frame)
        if match is None:
            continue
        function, path = match.group("function"), match.group("path")
        if path.startswith("json/") or "/json/" in path:
            return "json", None
        if "animalstore_client/" in path:
            if path.endswith(_PARSING) or function.startswith("parse_") or function in ("_decode", "_structure"):
                return "parse", None
            return "plumbing", f"{function} ({path.rsplit('/', 1)[-1]})"
        if any(part in path for part in _LIBRARY):
            return "library", None
    return "other", None


def attribute(lines: Iterable[str]) -> tuple[dict[str, float], collections.Counter[str]]:
    """Each bucket's share of py-spy's ``raw`` samples, and the plumbing samples per SDK function (as shares)."""
    buckets: collections.Counter[str] = collections.Counter()
    functions: collections.Counter[str] = collections.Counter()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        bucket, function = classify(stack)
        buckets[bucket] += int(count)
        if function is not None:
            functions[function] += int(count)
    total = sum(buckets[name] for name in BUCKETS) or 1
    shares = {name: buckets[name] / total for name in BUCKETS}
    return shares, collections.Counter({name: count / total for name, count in functions.items()})


# --- the child: one backend, C in flight, a timed loop -------------------------------------------


def child(backend: str, concurrency: int, seconds: float, url: str, floor: bool = False, warm: bool = True) -> None:
    """Warm up (unless not ``warm``), say ``ready``, call for ``seconds``, print the CPU per call (µs): the SDK, or
    the library's floor."""
    import concurrency as harness

    from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient

    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {1})
    if backend in ASYNC:

        async def make() -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[None]]]:
            if floor:
                made: Any = await harness.async_stacks(url)[f"{ASYNC[backend]} floor"]()
                return made  # type: ignore[no-any-return]
            client = AsyncAnimalStoreClient("bench-key", base_url=url, backend=ASYNC[backend])  # type: ignore[arg-type]
            return (lambda: client.list_pets(limit=100)), client.aclose

        async def main() -> tuple[float, int]:
            call, close = await make()
            stop = False
            done = 0

            async def worker() -> None:
                nonlocal done
                while not stop:
                    await call()
                    done += 1

            for _ in range(3 if warm else 0):  # warm up at the same concurrency: no more connections than the run uses
                await asyncio.gather(*(call() for _ in range(concurrency)))
            for _ in range(100 if warm else 0):
                await call()
            print("ready", flush=True)
            cpu, done = time.process_time(), 0
            tasks = [asyncio.ensure_future(worker()) for _ in range(concurrency)]
            await asyncio.sleep(seconds)
            stop = True
            cpu = time.process_time() - cpu
            calls = done
            await asyncio.gather(*tasks)
            await close()
            return cpu, calls

        cpu, calls = asyncio.run(main())
    else:
        if floor:
            call, close = harness.sync_stacks(url)[f"{SYNC[backend]} floor"]()
        else:
            client = AnimalStoreClient("bench-key", base_url=url, backend=SYNC[backend])  # type: ignore[arg-type]
            call, close = (lambda: client.list_pets(limit=100)), client.close
        cpu, calls = _threads(call, concurrency, seconds, warm)
        close()
    print(f"cpu_per_call {cpu / max(calls, 1) * 1e6:.2f}", flush=True)


def _threads(call: Callable[[], object], concurrency: int, seconds: float, warm: bool = True) -> tuple[float, int]:
    """Warm up (if ``warm``), say ``ready``, then ``concurrency`` threads call for ``seconds``: the CPU seconds and the
    calls."""
    stop = threading.Event()
    counts = [0] * concurrency

    def worker(index: int) -> None:
        while not stop.is_set():
            call()
            counts[index] += 1

    def warm_up() -> None:
        for _ in range(3 if warm else 0):
            call()

    # Warm up at the same concurrency, so every thread's connection is open before measuring.
    warming = [threading.Thread(target=warm_up) for _ in range(concurrency)]
    for thread in warming:
        thread.start()
    for thread in warming:
        thread.join()
    for _ in range(100 if warm else 0):
        call()
    print("ready", flush=True)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    cpu = time.process_time()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    cpu = time.process_time() - cpu
    calls = sum(counts)
    for thread in threads:
        thread.join()
    return cpu, calls


# --- the parent ----------------------------------------------------------------------------------


Run = tuple[float, dict[str, float], collections.Counter[str]]
FLOOR = "floor"
"""The label of the library's floor (``--floor``) among the SDK checkouts."""


Job = tuple[str, int, bool]
"""One run in a child: the backend, the calls in flight, and whether it is the library's floor."""


def children(jobs: list[Job], seconds: float, url: str, warm: bool = True) -> None:
    """`child` for each job in turn, in this one process: one job, or a quick run's every job (one Python start)."""
    for backend, concurrency, floor in jobs:
        child(backend, concurrency, seconds, url, floor, warm)


def run(
    jobs: list[Job], seconds: float, url: str, sdk_path: str | None, spy: str | None, *, warm: bool = True
) -> list[Run]:
    """One child running ``jobs`` in turn (each but the floors under py-spy if given): per job, its CPU per call, the
    bucket shares and the plumbing per function."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (sdk_path, str(HERE), env.get("PYTHONPATH")) if p)
    code = f"import plumbing; plumbing.children({jobs!r}, {seconds}, {url!r}, {warm})"
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),  # not the checkout: its animalstore_client would shadow --sdk-path
    )
    assert process.stdout is not None
    runs: list[Run] = []
    for number, (backend, concurrency, floor) in enumerate(jobs, 1):
        if process.stdout.readline().strip() != "ready":
            process.kill()
            raise RuntimeError(f"the {backend} child did not start")
        lines = [] if spy is None or floor else _record(spy, process.pid, seconds, f"{backend} C={concurrency}")
        # The child says its CPU per call as each run ends, and exits after the last.
        last = number == len(jobs)
        output = process.communicate(timeout=seconds + 120)[0] if last else process.stdout.readline()
        cpu = float(output.split("cpu_per_call", 1)[1].split()[0])
        shares, functions = attribute(lines)
        runs.append((cpu, shares, functions))
    return runs


def _record(spy: str, pid: int, seconds: float, what: str) -> list[str]:
    """py-spy's raw samples of the child ``pid`` over its run (none if py-spy gets stuck)."""
    out = Path(f"/tmp/animalstore-plumbing-{os.getpid()}.raw")
    duration = max(1, int(seconds) - 1)
    command = [spy, "record", "-r", "1000", "-f", "raw", "-o", str(out), "-p", str(pid), "-d", str(duration)]
    try:
        subprocess.run(command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=seconds + 30)
    except subprocess.TimeoutExpired:  # py-spy stuck on the child (seen with 100 threads): no samples this run
        print(f"py-spy did not finish on {what}: no samples from this run", file=sys.stderr)
    lines: list[str] = []
    if out.exists():
        lines = out.read_text().splitlines()
        if not os.environ.get("PLUMBING_KEEP_RAW"):  # set it to read the samples yourself
            out.unlink()
    return lines


def measure(jobs: list[tuple[str | None, Job]], seconds: float, url: str, spy: str | None, *, quick: bool) -> list[Run]:
    """Each job's run, in order, with the checkout it imports: each in a child of its own, or (``quick``) with no
    warm-up, and one child per checkout unless py-spy samples (its shortest recording outlasts a quick run)."""
    batches: dict[object, list[int]] = {}
    for index, (path, _) in enumerate(jobs):
        batches.setdefault(path if quick and spy is None else index, []).append(index)
    got: dict[int, Run] = {}
    for indices in batches.values():
        ran = run([jobs[i][1] for i in indices], seconds, url, jobs[indices[0]][0], spy, warm=not quick)
        got.update(zip(indices, ran, strict=True))
    return [got[index] for index in range(len(jobs))]


def main() -> int:
    """Measure and print the table."""
    sys.path.insert(0, str(HERE))
    import concurrency as harness  # the nginx set-up of the benchmark next to this one

    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=BACKENDS)
    parser.add_argument("--concurrency", nargs="+", type=int, default=[1])
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds per run (default 8)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--top", type=int, default=0, help="also list the N costliest plumbing functions")
    parser.add_argument(
        "--sdk-path",
        nargs="+",
        default=[],
        help="import animalstore_client from these directories (other checkouts), in interleaved runs; "
        "'.' is this checkout",
    )
    parser.add_argument("--floor", action="store_true", help="also run each library's floor, and the SDK beyond it")
    parser.add_argument("--no-spy", action="store_true", help="CPU per call only: no py-spy, which slows the child")
    parser.add_argument("--server", choices=["nginx", "fake"], default="nginx")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke test: a tenth of a second a run, one round, one child, no warm-up"
    )
    args = parser.parse_args()
    # A quick run's figures are not read: the warm-up, a long run or a fresh Python per run would only repeat the code
    # it runs (its every run still goes through a child, the parent's protocol, and the report).
    seconds, rounds = (0.1, 1) if args.quick else (args.seconds, args.rounds)
    spy = (
        None if args.no_spy else shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    )
    if spy is None and not args.no_spy:
        print("py-spy is not installed (pip install py-spy): CPU per call only, no buckets.")
    if args.server == "nginx" and not (shutil.which("nginx") or Path("/usr/sbin/nginx").exists()):
        print("nginx is not installed, so nothing was measured: apt-get install -y nginx (Debian), then run again.")
        return 0
    checkouts = [None if path == "." else str(Path(path).resolve()) for path in args.sdk_path] or [None]
    labels = [FLOOR] * args.floor + [path or "this checkout" for path in checkouts]
    server = harness.nginx() if args.server == "nginx" else harness.fake_server()
    results: dict[tuple[str, str, int], list[Run]] = {}
    with server as (url, _):
        for _ in range(rounds):
            jobs: list[tuple[str | None, Job]] = []
            for concurrency in args.concurrency:
                for backend in args.backends:
                    if args.floor:
                        jobs.append((None, (backend, concurrency, True)))
                    jobs += [(path, (backend, concurrency, False)) for path in checkouts]
            for (path, (backend, concurrency, floor)), got in zip(
                jobs, measure(jobs, seconds, url, spy, quick=args.quick), strict=True
            ):
                label = FLOOR if floor else path or "this checkout"
                results.setdefault((label, backend, concurrency), []).append(got)
    _report(results, labels, args.floor, spy is not None, args.top)
    print(f"medians of {rounds} interleaved round(s) of {seconds:g} s a run; list_pets(limit=100), µs of CPU a call")
    return 0


def _report(
    results: dict[tuple[str, str, int], list[Run]], labels: list[str], floor: bool, spied: bool, top: int
) -> None:
    """Print a row per checkout (and floor) per backend: CPU a call, beyond the floor, and the buckets."""
    width = max(len(label) for label in labels) + 2
    head = f"{'backend':<20}{'run':<{width}}{'CPU/call':>9}" + (f"{'beyond':>9}" if floor else "")
    print(head + ("".join(f"{name:>10}" for name in BUCKETS) if spied else ""))
    for (label, backend, concurrency), runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        line = f"{backend + f' C={concurrency}':<20}{label:<{width}}{cpu:>9.1f}"
        if floor:
            floors = results[(FLOOR, backend, concurrency)]
            beyond = statistics.median(mine[0] - base[0] for mine, base in zip(runs, floors, strict=True))
            line += f"{beyond:>9.1f}" if label != FLOOR else f"{'':>9}"
        if spied and label != FLOOR:
            line += "".join(f"{statistics.median(r[0] * r[1][name] for r in runs):>10.1f}" for name in BUCKETS)
        print(line)
        if top and label != FLOOR:
            merged: dict[str, float] = collections.defaultdict(float)
            for run_cpu, _, functions in runs:
                for name, share in functions.items():
                    merged[name] += run_cpu * share / len(runs)
            for name, micros in sorted(merged.items(), key=lambda item: -item[1])[:top]:
                print(f"    {micros:6.1f}  {name}")


if __name__ == "__main__":
    sys.exit(main())
