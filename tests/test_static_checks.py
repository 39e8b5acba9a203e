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
from pathlib import Path

import pytest

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
        [_tool("mypy"), "--strict", "--enable-error-code", "deprecated", "--no-incremental", "app.py"],
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
