"""The benchmark script still runs (tiny counts), so it cannot rot between performance reviews."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import HAS_HTTPX2, HAS_PYREQWEST, USERS_PYTEST, needs_httpx2, needs_pyreqwest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
ROOT = SCRIPT.parent.parent


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
    """benchmarks/concurrency.py --quick --server fake (no nginx) runs every stack at 1 and 10 in flight (100 in a full
    run) and prints every target, with no warning."""
    script = SCRIPT.parent / "concurrency.py"
    result = subprocess.run(
        # One call per stack at C=1 (and, as ever, one per worker at C=10): every stack runs all its code.
        [sys.executable, str(script), "--quick", "--server", "fake", "-n", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    stacks = [
        "async C=10 sdk aiohttp",
        "async C=1 aiohttp floor",
        "sync C=10 urllib3 floor",
        "sync C=10 sdk httpx",
        "sync C=1 httpx floor",
    ]
    if HAS_PYREQWEST:
        stacks += ["async C=10 sdk pyreqwest", "sync C=1 pyreqwest floor"]
    if HAS_HTTPX2:
        stacks += ["async C=10 sdk httpx2", "sync C=1 sdk httpx2"]
    for stack in stacks:
        assert stack in result.stdout, stack
    assert "DeprecationWarning" not in result.stderr
    # The ratios to the bare httpx floor are information now, not targets.
    assert "async C=10: sdk aiohttp / httpx floor, req/s" in result.stdout.split("for information")[1]
    assert f"{12 + 6 * HAS_PYREQWEST + 4 * HAS_HTTPX2} targets" in result.stdout


@needs_httpx2
def test_concurrency_benchmark_httpx2_ab_smoke_run() -> None:
    """benchmarks/concurrency.py --httpx2-ab prints the median ratio of sdk httpx2 to sdk httpx on each side."""
    script = SCRIPT.parent / "concurrency.py"
    result = subprocess.run(
        [sys.executable, str(script), "--quick", "--server", "fake", "-n", "1", "--httpx2-ab"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for side in ("async C=1", "sync C=1", "async C=10", "sync C=10"):
        assert f"{side}: sdk httpx2 / sdk httpx, req/s: median " in result.stdout, result.stdout


def test_outage_benchmark_smoke_run() -> None:
    """benchmarks/outage.py --quick, with 0.2-second runs, measures every case and prints every target."""
    script = SCRIPT.parent / "outage.py"
    result = subprocess.run(
        # 0.2 s: long enough for each of the 100 callers to start a call, so the budget refuses retries in the outage.
        [sys.executable, str(script), "--quick", "--seconds", "0.2"],
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
        [sys.executable, str(SCRIPT.parent / "pyreqwest_split.py"), "--quick", "--server", "fake", "-n", "5"],
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


def test_plumbing_benchmark_smoke_run() -> None:
    """benchmarks/plumbing.py --quick --server fake --floor runs the SDK and the floor per backend, a row each."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT.parent / "plumbing.py"), "--quick", "--server", "fake", "--floor", "--no-spy"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    for backend in ("httpx-async", "aiohttp", "httpx-sync"):
        mine = [row for row in rows if row[:2] == [backend, "C=1"]]
        assert [row[2] for row in mine] == ["floor", "this"], result.stdout  # "this checkout"
        floor, sdk, beyond = float(mine[0][3]), float(mine[1][4]), float(mine[1][5])
        assert floor > 0
        assert sdk > 0
        assert abs(beyond - (sdk - floor)) <= 0.11  # one round: beyond is that round's difference


def test_plumbing_benchmark_buckets_each_sample_by_its_innermost_telling_frame() -> None:
    """plumbing.py buckets a py-spy stack by its innermost telling frame, and leaves waits out."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import plumbing  # pyright: ignore[reportMissingImports]  # benchmarks/ is put on the path just above
    finally:
        sys.path.remove(str(SCRIPT.parent))
    sdk = "AsyncAnimalStoreClient._call (animalstore_client/_client_async.py:170)"
    send = "AiohttpTransport.send (animalstore_client/_transport_aiohttp.py:230)"
    lines = [
        f"main (plumbing.py:10);{sdk};{send};ClientSession._request (aiohttp/client.py:819) 5",
        f"main (plumbing.py:10);{sdk};parse_list_pets (animalstore_client/_operations.py:276);"
        "loads (animalstore_client/_serde.py:290);JSONDecoder.decode (json/decoder.py:337) 3",
        f"main (plumbing.py:10);{sdk};_structure_pet_list (animalstore_client/_serde.py:145) 1",
        f"main (plumbing.py:10);{sdk};{send} 1",
        f"main (plumbing.py:10);{sdk};{send};EpollSelector.select (selectors.py:468) 40",
    ]
    shares, functions = plumbing.attribute(lines)
    assert shares == {"library": 0.5, "json": 0.3, "parse": 0.1, "plumbing": 0.1, "other": 0.0}
    assert dict(functions) == {"AiohttpTransport.send (_transport_aiohttp.py)": 0.1}


def test_default_layers_benchmark_smoke_run() -> None:
    """benchmarks/default_layers.py --quick --server fake times every layer of the default backend and both networks."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT.parent / "default_layers.py"), "--quick", "--server", "fake"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for layer in ("h11 alone", "AsyncHTTP11Connection", "AsyncHTTPConnection", "the SDK's pool", "the whole SDK call"):
        assert layer in result.stdout, result.stdout
    part2 = result.stdout.split("Part 2")[1]
    assert "anyio" in part2, result.stdout
    assert "asyncio" in part2, result.stdout


def test_private_reaches_benchmark_smoke_run() -> None:
    """benchmarks/private_reaches.py --quick --server fake times every reach with and without its public route."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT.parent / "private_reaches.py"), "--quick", "--server", "fake"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for reach in ("copy_request", "_fast_pets", "Response._content"):
        assert reach in result.stdout, result.stdout


def test_before_after_benchmark_smoke_run() -> None:
    """benchmarks/before_after.py --quick compares a tree with itself over the fake server: a line per setting."""
    command = [sys.executable, str(SCRIPT.parent / "before_after.py"), str(ROOT), str(ROOT)]
    result = subprocess.run(
        [*command, "--quick", "--server", "fake"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    settings = [line.split()[0:2] for line in lines[2:]]
    assert settings == [["async", "C=1"], ["async", "C=10"], ["sync", "C=1"], ["sync", "C=10"]], result.stdout
    assert lines[0].startswith("Python function calls per call"), result.stdout


def test_counts_benchmark_smoke_run() -> None:
    """benchmarks/counts.py --quick --server fake counts the default async client and its floor under callgrind and
    prints its instructions per call beside the floor's, the issue's target and the rate ratio (without valgrind it
    says how to get it and counts nothing)."""
    command = [sys.executable, str(SCRIPT.parent / "counts.py"), "--quick", "--server", "fake"]
    result = subprocess.run(
        [*command, "--stacks", "async httpx"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    if shutil.which("valgrind") is None:
        assert "valgrind is not installed" in result.stdout
        return
    lines = result.stdout.splitlines()
    assert any(line.split()[:3] == ["async", "aiohttp", "floor"] and line.endswith(" M") for line in lines)
    row = next(line for line in lines if line.split()[:2] == ["async", "httpx"] and " M " in line)
    per_call, over_floor = float(row.split()[2]), float(row.split()[4])
    assert per_call > 0
    assert over_floor > 0
    assert "async httpx floor/instr >= 0.75" in result.stdout
    assert "Rate, 100 in flight: the default async client over the aiohttp floor" in result.stdout


def test_the_suites_cpu_is_recorded_per_test_with_its_subprocesses(tmp_path: Path) -> None:
    """scripts/pytest_cpu.py records a test's CPU including the child it reaped, and reports it by module."""
    (tmp_path / "test_spin.py").write_text(
        "import subprocess, sys\n\n"
        "def test_child_spins():\n"
        "    subprocess.run([sys.executable, '-c', 'import time\\nend = time.process_time() + 0.5\\n"
        "while time.process_time() < end: pass'], check=True)\n\n"
        "def test_idle():\n"
        "    pass\n",
        encoding="utf-8",
    )
    records = tmp_path / "cpu"
    env = {**os.environ, "ANIMALSTORE_CPU_DIR": str(records), "PYTHONPATH": str(ROOT / "scripts")}
    run = subprocess.run(
        [*USERS_PYTEST, "-p", "pytest_cpu", "test_spin.py"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "pytest_cpu.py"), str(records)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    assert lines[0].startswith("2 tests: "), report.stdout
    assert "in 1 processes' starts" in lines[0], report.stdout
    dearest = next(line for line in lines if line.endswith("test_spin.py::test_child_spins"))
    cpu, _own, children, _wall = (float(number) for number in re.findall(r"\d+\.\d+", dearest))
    assert children >= 0.45, report.stdout  # the child's half second of spinning, counted once reaped
    assert cpu >= children
