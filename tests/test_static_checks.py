"""What a user's type checker says about their code: the typo and the deprecated call, by name.

tests/typing/check_public_api.py proves the errors are reported (through
ignores that must be used); this checks the words users read. It runs mypy
and pyright as a user would, on a file outside this project's configuration.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from .conftest import COLLECTED, everyday, mypy_cache

ROOT = Path(__file__).resolve().parent.parent

USER_CODE = textwrap.dedent(
    """
    from animalstore_client import AnimalStoreClient


    def use(client: AnimalStoreClient) -> None:
        client.get_pet(1)
        client.list_pets(status="availble")
    """
)


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        pytest.skip(f"{name} is not installed here (pip install -r .ci/requirements.txt); CI runs this")
    return path


def test_mypy_names_get_pet_and_the_misspelt_status(tmp_path: Path) -> None:
    """With enable_error_code = deprecated (as the README says), mypy flags both lines."""
    (tmp_path / "app.py").write_text(USER_CODE)
    result = subprocess.run(
        [_tool("mypy"), "--strict", "--enable-error-code", "deprecated", *mypy_cache("users-words"), "app.py"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert "get_pet is deprecated: get_pet() is deprecated" in result.stdout, result.stdout
    assert 'Argument "status" to "list_pets" of "AnimalStoreClient" has incompatible type' in result.stdout


def test_pyright_names_get_pet_and_the_misspelt_status(tmp_path: Path) -> None:
    """pyright (strict, or reportDeprecated on) says which method is deprecated, and refuses the typo."""
    (tmp_path / "app.py").write_text(USER_CODE)
    (tmp_path / "pyrightconfig.json").write_text('{"typeCheckingMode": "strict", "reportDeprecated": "error"}')
    result = subprocess.run(
        [_tool("pyright"), "--pythonpath", sys.executable, "app.py"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert 'The method "get_pet" in class "AnimalStoreClient" is deprecated' in result.stdout, result.stdout
    assert "\"Literal['availble']\" is not assignable" in result.stdout, result.stdout


def _collected(*options: str) -> set[str]:
    """The node ids ``pytest --collect-only`` lists for the whole suite, in a process of its own."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider", *options],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return {line for line in result.stdout.splitlines() if "::" in line}


def _whole_suite(collected: Sequence[pytest.Item]) -> bool:
    """Whether ``collected`` came from every test module (the session was not started on a few files)."""
    modules = {item.nodeid.split("::", 1)[0] for item in collected}
    return modules >= {path.relative_to(ROOT).as_posix() for path in (ROOT / "tests").glob("test_*.py")}


def test_the_everyday_tier_runs_every_test_function(request: pytest.FixtureRequest) -> None:
    """pytest --everyday (CONTRIBUTING.md) runs each test function of the full suite once: none left out, none
    twice, and a function run over client/library pairs on the default pair.

    The session's own collection is the full suite when it ran every module (what the README's command and the
    everyday command do); a session started on a few files collects the suite in a process of its own, twice.
    """
    collected = request.config.stash[COLLECTED]
    if _whole_suite(collected):
        full = {item.nodeid for item in collected}
        daily = {item.nodeid for item in everyday(list(collected))[0]}
    else:
        full, daily = _collected(), _collected("--everyday")
    functions = {nodeid.split("[", 1)[0] for nodeid in full}
    assert len(functions) > 700
    assert daily <= full
    assert sorted(nodeid.split("[", 1)[0] for nodeid in daily) == sorted(functions)
    # A function run over the pairs alone (``[sync]``, ``[async-aiohttp]``...) runs on a default pair.
    alone = {nodeid.split("[", 1)[0] for nodeid in full if nodeid.endswith("[sync]")}
    chosen = {nodeid.split("[", 1)[0]: nodeid for nodeid in daily}
    wrong = [chosen[function] for function in alone if not chosen[function].endswith(("[sync]", "[async]"))]
    assert not wrong, wrong
