"""Where the test suite's CPU goes: each test's CPU time, its subprocesses' included, and each worker's start.

The suite is CPU-bound on two cores, and most of its CPU is spent in processes the tests start (an interpreter
that imports the SDK and its libraries costs 0.5 to 1 CPU-second; a pytest run, 3.5). Wall times under
pytest-xdist mostly measure the other workers; this records ``getrusage`` around each test instead, for the
test's process and for the children it reaped.

Record (the plugin writes one file per process under the directory given, a line per test), then report::

    rm -rf /tmp/cpu && ANIMALSTORE_CPU_DIR=/tmp/cpu PYTHONPATH=scripts .venv/bin/python -m pytest -p pytest_cpu
    .venv/bin/python scripts/pytest_cpu.py /tmp/cpu            # by module, then the 25 dearest tests
    .venv/bin/python scripts/pytest_cpu.py /tmp/cpu -m "not contract and not slow and not httpx2" --top 0

``-m`` keeps the tests a marker expression selects (as collected by ``pytest --co``), to price a nox session.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Generator
from pathlib import Path

import pytest

_VARIABLE = "ANIMALSTORE_CPU_DIR"


def _used() -> tuple[float, float]:
    """CPU-seconds (user and system) of this process, and of its reaped children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _record(name: str, values: object) -> None:
    """Append a JSON line to this process's file, when recording is on."""
    directory = os.environ.get(_VARIABLE)
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        with (Path(directory) / f"{os.getpid()}.jsonl").open("a", encoding="utf-8") as out:
            out.write(json.dumps([name, values]) + "\n")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Record what starting and collecting cost this process (each worker collects the whole suite)."""
    _record("<start and collection>", [*_used(), 0.0])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """Record a test's CPU (its own process's, its reaped children's) and its wall time."""
    before, began = _used(), time.monotonic()
    try:
        return (yield)
    finally:
        after = _used()
        _record(item.nodeid, [after[0] - before[0], after[1] - before[1], time.monotonic() - began])


def _selected(expression: str) -> set[str]:
    """The node ids ``pytest -m expression`` collects."""
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-n", "0", "-m", expression],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return set(listed.stdout.splitlines())


def main(argv: list[str] | None = None) -> int:
    """Print the recorded CPU by module and the dearest tests."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path, help="where the plugin recorded (ANIMALSTORE_CPU_DIR)")
    parser.add_argument("-m", dest="marks", help="only the tests this marker expression selects")
    parser.add_argument("--top", type=int, default=25, help="how many of the dearest tests to list")
    options = parser.parse_args(argv)
    rows: list[tuple[str, float, float, float]] = []
    starts: list[float] = []
    for path in sorted(options.directory.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            name, (own, children, wall) = json.loads(line)
            if name == "<start and collection>":
                starts.append(own + children)
            else:
                rows.append((name, own, children, wall))
    if options.marks:
        keep = _selected(options.marks)
        rows = [row for row in rows if row[0] in keep]
    by_module: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for name, own, children, wall in rows:
        totals = by_module[name.split("::")[0]]
        for index, value in enumerate((own, children, wall, 1.0)):
            totals[index] += value
    total = sum(own + children for _, own, children, _ in rows)
    print(f"{len(rows)} tests: {total:.0f} CPU-s in tests; {sum(starts):.0f} in {len(starts)} processes' starts")
    print(f"{'CPU-s':>7} {'own':>6} {'children':>8} {'wall-s':>7} {'tests':>5}  module")
    for module, (own, children, wall, count) in sorted(by_module.items(), key=lambda item: -sum(item[1][:2])):
        print(f"{own + children:7.1f} {own:6.1f} {children:8.1f} {wall:7.1f} {count:5.0f}  {module}")
    if options.top:
        print(f"\nthe {options.top} dearest tests (CPU-s, own + children, wall-s)")
        for name, own, children, wall in sorted(rows, key=lambda row: -(row[1] + row[2]))[: options.top]:
            print(f"{own + children:6.1f} ({own:5.1f} + {children:5.1f}) {wall:6.1f}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
