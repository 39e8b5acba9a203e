"""Every ``filterwarnings`` line the pages give for the SDK's warnings works under warnings as errors.

The lines are read from README.md, docs/*.md and CHANGELOG.md, so a page cannot drift from what runs: each
``ini`` or ``toml`` block that sets ``filterwarnings`` becomes a user's pytest.ini or pyproject.toml as it is
written, and each ``ignore:...:DeprecationWarning`` line for ``get_pet``'s own warning or for a service's notice
is put under ``error`` in a pytest.ini of its own. A user's suite then calls ``get_pet`` and ``list_pets`` against
the testing kit's fake store and against a server that announces ``Deprecation``, ``Sunset`` and ``Link`` on every
answer, and must pass, with no notice a line names logged either.
"""

from __future__ import annotations

import re
import socket
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import USERS_PYTEST
from .servers import LoopbackServer, respond

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
NOTICE = {
    "Deprecation": "@1767225600",
    "Sunset": "Thu, 05 Dec 2031 00:00:00 GMT",  # a later date than get_pet's own warning: a notice that says more
    "Link": '<https://docs.example/migrate>; rel="deprecation"',
}

_BLOCK = re.compile(r"^```(ini|toml)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_LINE = re.compile(r"ignore:(?:get_pet|The animal store announces)[^`'\"\n]*?:DeprecationWarning")
_OWN = "get_pet"
"""What the SDK's own warning begins with; a notice begins "The animal store announces that <operation>"."""

USERS_TESTS = """
import logging
import os

from animalstore_client import AnimalStoreClient


def _calls(client, caplog, pet_id):
    with caplog.at_level(logging.WARNING, logger="animalstore_client"):
        assert client.get_pet(pet_id).id == pet_id
        client.list_pets()
    return [record.getMessage() for record in caplog.records]


def test_against_the_fake_store(animalstore_fake_client, caplog):
    pet = animalstore_fake_client.create_pet(name="Rex", category_id=3)
    logged = _calls(animalstore_fake_client, caplog, pet.id)
    assert not [line for line in logged if "announces" in line], logged  # the fake store's notice is not shown


def test_against_a_server_that_announces(caplog):
    with AnimalStoreClient("users-key", base_url=os.environ["ANNOUNCING_URL"]) as client:
        logged = _calls(client, caplog, 7)
    for operation in os.environ["SILENCED"].split():
        assert not [line for line in logged if f"announces that {operation}()" in line], logged
"""


def documented_blocks() -> list[tuple[str, str, str]]:
    """(page, "ini" or "toml", text) of each block of the pages that sets ``filterwarnings``."""
    found = []
    for page in PAGES:
        for kind, text in _BLOCK.findall(page.read_text(encoding="utf-8")):
            if "filterwarnings" in text:
                found.append((page.relative_to(ROOT).as_posix(), kind, text))
    return found


def documented_lines() -> list[str]:
    """Each distinct ``ignore:`` line the pages give for ``get_pet``'s warning or a service's notice."""
    return sorted({line for page in PAGES for line in _LINE.findall(page.read_text(encoding="utf-8"))})


def _own_line() -> str:
    own = [line for line in documented_lines() if line.startswith(f"ignore:{_OWN}")]
    assert len(own) == 1, own  # one way to write it, on every page
    return own[0]


def _silenced(config: str) -> str:
    """The operations whose notices ``config``'s lines filter."""
    return " ".join(re.findall(r"ignore:The animal store announces that (\w+)", config))


@pytest.fixture
def announcing() -> Iterator[str]:
    """A server whose every answer announces a deprecation (a later sunset and a link: more than get_pet says)."""
    server = LoopbackServer()

    def answer(conn: socket.socket) -> bool:
        target = server.received[-1].target  # the request this answer is for: one client, one request at a time
        return respond(200, PET if "/pets/" in target else [PET], NOTICE)(conn)

    server.script = [answer]
    with server:
        yield server.base_url


def _users_suite(tmp_path: Path, name: str, text: str, url: str, silenced: str) -> subprocess.CompletedProcess[str]:
    """A user's project holding ``text`` as its config file ``name``, run by pytest as they run it."""
    project = tmp_path / "project"
    project.mkdir()
    (project / name).write_text(text, encoding="utf-8")
    (project / "test_users_code.py").write_text(textwrap.dedent(USERS_TESTS), encoding="utf-8")
    # Without pytest-asyncio, which warns under ``error`` of an option these configs leave unset: its warning, not
    # the SDK's.
    return subprocess.run(
        [*USERS_PYTEST, "-p", "no:asyncio"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**_environment(), "ANNOUNCING_URL": url, "SILENCED": silenced},
    )


def _environment() -> dict[str, str]:
    import os

    return {key: value for key, value in os.environ.items() if not key.startswith(("ANIMALSTORE_", "PYTEST_"))}


def test_the_pages_give_a_line_for_get_pets_warning_and_a_block_of_each_kind() -> None:
    """The collector finds what the pages give: a page's change of form cannot skip the test below."""
    assert _own_line() == r"ignore:get_pet\(\) is deprecated:DeprecationWarning"
    assert {kind for _, kind, _ in documented_blocks()} == {"ini", "toml"}
    assert any("announces" in line for line in documented_lines())


@pytest.mark.parametrize("block", documented_blocks(), ids=lambda block: f"{block[0]}-{block[1]}")
def test_each_documented_config_passes_under_warnings_as_errors(
    tmp_path: Path, announcing: str, block: tuple[str, str, str]
) -> None:
    """A page's pytest.ini or pyproject.toml block, as written: the user's suite passes, and a notice it filters is
    neither raised nor logged."""
    _, kind, text = block
    assert re.search(r"^\s*['\"]?error['\"]?,?\s*$", text, re.MULTILINE), "the block makes warnings errors"
    name = "pytest.ini" if kind == "ini" else "pyproject.toml"
    result = _users_suite(tmp_path, name, text, announcing, _silenced(text))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout, result.stdout


@pytest.mark.parametrize("line", documented_lines())
def test_each_documented_line_passes_under_warnings_as_errors(tmp_path: Path, announcing: str, line: str) -> None:
    """Each line under ``filterwarnings = error`` in a pytest.ini (with get_pet's own line, which the suite also
    needs when the line is a notice's): the suite passes, and the notice the line names is not logged."""
    lines = dict.fromkeys(["error", _own_line(), line])  # get_pet's own line once when it is the one under test
    config = "[pytest]\nfilterwarnings =\n" + "".join(f"    {entry}\n" for entry in lines)
    result = _users_suite(tmp_path, "pytest.ini", config, announcing, _silenced(config))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout, result.stdout


def test_without_get_pets_line_the_suite_fails_on_its_warning(tmp_path: Path, announcing: str) -> None:
    """The control: ``error`` alone fails on get_pet's own warning, so the line above is what makes the suite pass
    (and the service's notice, logged instead of raised, fails nothing)."""
    result = _users_suite(tmp_path, "pytest.ini", "[pytest]\nfilterwarnings =\n    error\n", announcing, "")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "DeprecationWarning: get_pet() is deprecated" in result.stdout, result.stdout
    assert "2 failed" in result.stdout, result.stdout
