"""The fake store checked against docs/openapi.yaml by schemathesis: tests/schemathesis_fake_store.py, run by pytest
in a process of its own with schemathesis' plugin, which pyproject's ``addopts`` leave out of the suite's processes
(loading it cost each of them 1.7 CPU-seconds, for this one test)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

CHECK = Path(__file__).parent / "schemathesis_fake_store.py"


def test_the_fake_store_follows_the_interface_document(tmp_path: Path) -> None:
    """schemathesis finds no response of the fake that the document does not allow (every operation, positive and
    negative cases, its default checks)."""
    # Looked up, not imported: schemathesis registers its random generator with hypothesis as it loads, which
    # hypothesis warns about (an error here) in a process that then never runs it.
    if importlib.util.find_spec("schemathesis") is None:
        pytest.skip("schemathesis is not installed here (pip install -r tests/requirements.txt)")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "-p",
            "schemathesis",
            f"--basetemp={tmp_path / 'pytest'}",
            str(CHECK),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=CHECK.parent.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # Each operation of the document ran: none was left out or skipped.
    assert " passed" in result.stdout
    assert "skipped" not in result.stdout
    assert "deselected" not in result.stdout
