"""One table of backends and extras (docs/_backends-table.md), complete and the same wherever it is shown.

The docs pages include the file (``--8<--``); README.md, which GitHub renders
without includes, holds a copy. The backend names come from the clients'
``backend=`` types in ``_clients/backends.py`` and the extras from pyproject.toml, so
a backend or extra added there without a row here fails, naming it.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from animalstore_client._clients import backends as _backends
from animalstore_client._core.deprecation import DEPRECATED_BACKENDS

tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+; this runs once, on 3.11 (noxfile.py's ONCE)")

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "docs" / "_backends-table.md"
INCLUDE = '--8<-- "docs/_backends-table.md"'
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
ASYNC = set(typing.get_args(_backends.AsyncBackendName))
SYNC = set(typing.get_args(_backends.BackendName))


def _rows() -> list[dict[str, str]]:
    """The table's rows, each by column heading (the heading row and the rule left out)."""
    lines = [line for line in TABLE.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    split = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]
    headings, rule, *body = split
    assert all(set(cell) <= set("-:") for cell in rule), rule
    assert all(len(row) == len(headings) for row in body), "a row with more or fewer cells than headings"
    return [dict(zip(headings, row, strict=True)) for row in body]


ROWS = _rows()


def _row(backend: str) -> dict[str, str]:
    found = [row for row in ROWS if re.match(rf'`"{re.escape(backend)}"`', row["`backend=`"])]
    assert len(found) == 1, f'backend "{backend}" (from _backends.py) has {len(found)} rows in {TABLE.name}'
    return found[0]


def _oldest_python(extra: str) -> str:
    """The oldest Python an extra installs something on: its requirements' marker, else the package's floor."""
    floor = SpecifierSet(PYPROJECT["project"]["requires-python"])
    versions = {"3.10", "3.11", "3.12", "3.13", "3.14"}
    supported = sorted((v for v in versions if v in floor), key=lambda v: tuple(map(int, v.split("."))))
    for version in supported:
        requirements = [Requirement(line) for line in EXTRAS[extra]]
        if all(r.marker is None or r.marker.evaluate({"python_version": version}) for r in requirements):
            return version
    raise AssertionError(f"the [{extra}] extra installs nothing on any supported Python")


@pytest.mark.parametrize("backend", sorted(ASYNC | SYNC))
def test_every_backend_has_a_row_saying_which_clients_have_it(backend: str) -> None:
    """Each name the clients' ``backend=`` takes has one row, whose clients cell says sync, async or both."""
    expected = "both" if backend in ASYNC and backend in SYNC else "async" if backend in ASYNC else "sync"
    assert _row(backend)["clients"] == expected


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_every_extra_has_a_row_with_its_python(extra: str) -> None:
    """Each extra of pyproject.toml is named in the install cell of one row, with the oldest Python it serves."""
    found = [row for row in ROWS if f"`[{extra}]`" in row["install"]]
    assert len(found) == 1, f"the [{extra}] extra (pyproject.toml) has {len(found)} rows in {TABLE.name}"
    assert found[0]["Python"] == f"{_oldest_python(extra)}+"


def test_a_backend_with_an_extra_names_it_and_the_default_needs_none() -> None:
    """A backend whose library is an extra of the same name says to install it; httpx, a dependency, says none."""
    for backend in ASYNC | SYNC:
        install = _row(backend)["install"]
        if backend in EXTRAS:
            assert f"`[{backend}]`" in install, (backend, install)
        else:
            assert "[" not in install, (backend, install)


def test_a_deprecated_backend_says_so_with_its_replacement_and_removal() -> None:
    """The rows of the backends that warn when chosen (and only those) say deprecated, the default as the
    replacement and the release that removes them, as the warning does."""
    for backend in ASYNC | SYNC:
        row = _row(backend)
        message = DEPRECATED_BACKENDS.get(backend)
        if message is None:
            assert "deprecated" not in " ".join(row.values()).lower(), backend
            continue
        removal = re.search(r"removed in animalstore-client (\d+\.\d+)", message)
        assert removal is not None, message
        said = row["what it is; choose it for"]
        assert row["`backend=`"] == f'`"{backend}"` (deprecated)'
        assert f"deprecated, to be removed in {removal[1]}" in said, said
        assert 'Use the default, `"httpx"`, instead' in said, said
        assert "DeprecationWarning" in said, said


def test_every_library_the_install_advice_names_is_in_the_table() -> None:
    """Each distribution a missing library's error tells to install (``REQUIREMENTS``) is named in the table."""
    text = TABLE.read_text(encoding="utf-8")
    for distribution in _backends.REQUIREMENTS:
        assert distribution in text, f"{distribution} (_backends.REQUIREMENTS) is not named in {TABLE.name}"


def test_the_readme_holds_the_table_as_it_is() -> None:
    """GitHub renders README.md without includes: its copy is the file, word for word."""
    assert TABLE.read_text(encoding="utf-8").strip() in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_docs_include_the_table_rather_than_a_list_of_their_own() -> None:
    """The pages that list the backends include the file; no page has a table row of a backend of its own."""
    pages = {page.name: page.read_text(encoding="utf-8") for page in (ROOT / "docs").glob("*.md") if page != TABLE}
    assert {name for name, text in pages.items() if INCLUDE in text} >= {"index.md", "usage.md"}
    for name, text in pages.items():
        for backend in ASYNC | SYNC:
            assert not re.search(rf'^\s*\| `"{re.escape(backend)}"`', text, re.MULTILINE), (name, backend)
