"""Every example script runs offline, exits 0 and says it is offline on its first line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("test_"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_runs_offline(script: Path) -> None:
    """With no API key the example runs against an offline store and succeeds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIMALSTORE_")}
    result = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    first_line = result.stdout.splitlines()[0]
    assert "No ANIMALSTORE_API_KEY" in first_line
    assert "offline" in first_line


def test_quickstart_shows_each_step() -> None:
    """The quickstart lists, creates, fetches, and shows the deprecation warning."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIMALSTORE_")}
    output = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert "available: #1 Biscuit" in output
    assert "created:   #3 Pepper (pending)" in output
    assert "fetched:   #3 Pepper" in output
    assert "DeprecationWarning" in output
    assert "2030-12-05" in output
