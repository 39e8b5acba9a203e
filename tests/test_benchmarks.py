"""The benchmark script still runs (tiny counts), so it cannot rot between performance reviews."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import HAS_PYREQWEST, needs_pyreqwest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"


def test_benchmark_smoke_run() -> None:
    """benchmarks/run.py --quick exits 0 and prints every measure with its target."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for measure in (
        "sync list_pets(limit=100) / floor",
        "async list_pets(limit=100) / floor",
        "sync create_pet / raw",
        "async get_pet / raw",
        "structure 100 pets / hand Pet(**...) loop",
        "import animalstore_client (after httpx, attrs, cattrs)",
        "list_pets, 10 in flight: SDK / bare httpx",
        "RSS added by import animalstore_client",
    ):
        assert measure in result.stdout, measure
    assert "quick run: not enforced" in result.stdout


def test_concurrency_benchmark_smoke_run() -> None:
    """benchmarks/concurrency.py --quick --server fake (no nginx) runs every stack and prints every target."""
    script = SCRIPT.parent / "concurrency.py"
    result = subprocess.run(
        [sys.executable, str(script), "--quick", "--server", "fake", "-n", "100"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    stacks = ["async C=100 sdk aiohttp", "async C=1 aiohttp floor", "sync C=100 sdk urllib3", "sync C=1 httpx floor"]
    if HAS_PYREQWEST:
        stacks += ["async C=100 sdk pyreqwest", "sync C=1 pyreqwest floor"]
    for stack in stacks:
        assert stack in result.stdout, stack
    # The ratios to the bare httpx floor are information now, not targets.
    assert "async C=100: sdk aiohttp / httpx floor, req/s" in result.stdout.split("for information")[1]
    assert ("14 targets" if HAS_PYREQWEST else "8 targets") in result.stdout


def test_outage_benchmark_smoke_run() -> None:
    """benchmarks/outage.py --quick, with half-second runs, measures every case and prints every target."""
    script = SCRIPT.parent / "outage.py"
    result = subprocess.run(
        [sys.executable, str(script), "--quick", "--seconds", "0.5"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    for row in ("outage  default", "outage  None", "blip    default", "blip    None"):
        assert row in result.stdout, row
    for case in (
        "(a) no middleware",
        "(b) opentelemetry.trace",
        "(b2)",
        "(c) one no-op middleware",
        "(d) OpenTelemetry SDK",
    ):
        assert case in result.stdout, case
    assert "outage, default budget: attempts per call <= 1.25" in result.stdout
    assert "5 targets" in result.stdout
    assert "quick run: not enforced" in result.stdout


@needs_pyreqwest
def test_pyreqwest_split_benchmark_smoke_run() -> None:
    """benchmarks/pyreqwest_split.py --quick --server fake measures its three stacks and prints both gaps."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT.parent / "pyreqwest_split.py"), "--quick", "--server", "fake", "-n", "50"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for line in (
        "pyreqwest floor",
        "library as the SDK calls it",
        "sdk ",
        "the SDK's way of calling the library:",
        "the SDK's plumbing:",
    ):
        assert line in result.stdout, line
