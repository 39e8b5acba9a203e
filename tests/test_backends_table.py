"""One table of backends and extras (docs/_backends-table.md), written from the declarations and shown once.

``scripts/codegen.py`` writes the table from ``_core/libraries.py`` (its
``--check`` fails on a stale one); the docs pages include the file
(``--8<--``) and README.md links to it. It writes the libraries' extras in
pyproject.toml and README.md's sentence naming the extras too: here, what it
writes is checked to say the right thing (markers). What is
written by hand is held to the declarations: the other extras,
requires-python, the pins of tests/requirements.txt.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from animalstore_client._core.libraries import LIBRARIES, OTHER_EXTRAS, PACKAGE_FLOOR, distribution_of

from .conftest import RUN_ONCE

tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+; this runs once, on 3.11 (noxfile.py's ONCE)")

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "docs" / "_backends-table.md"
INCLUDE = '--8<-- "docs/_backends-table.md"'
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]


def _rows() -> list[dict[str, str]]:
    """The table's rows, each by column heading (the heading row and the rule left out)."""
    lines = [line for line in TABLE.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    split = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]
    headings, rule, *body = split
    assert all(set(cell) <= set("-:") for cell in rule), rule
    assert all(len(row) == len(headings) for row in body), "a row with more or fewer cells than headings"
    return [dict(zip(headings, row, strict=True)) for row in body]


def _declared_extras() -> dict[str, list[str]]:
    """Every extra the declarations name, with its requirements as pyproject.toml should list them."""
    extras = {
        library.extra: [r for r in (library.requirement, *library.also_installs) if r]
        for library in LIBRARIES
        if library.extra
    }
    extras.update({extra.name: list(extra.requirements) for extra in OTHER_EXTRAS})
    return extras


def _without_markers(requirement: str) -> str:
    return requirement.split(";", maxsplit=1)[0].replace(" ", "")


def test_pyprojects_extras_are_the_declared_ones() -> None:
    """Each extra of pyproject.toml is a declared library's or OTHER_EXTRAS', installing what they declare: the
    libraries' are generated, the others' (otel) written by hand, and no extra is left undeclared."""
    assert {name: [_without_markers(r) for r in reqs] for name, reqs in EXTRAS.items()} == _declared_extras()


def test_requires_python_is_the_declared_floor_and_the_classifiers_the_tested_pythons() -> None:
    """pyproject.toml's requires-python is the package's floor, and its classifiers name the Pythons CI tests, from
    that floor to noxfile.py's newest: 3.11 to 3.14."""
    assert PYPROJECT["project"]["requires-python"] == f">={PACKAGE_FLOOR[0]}.{PACKAGE_FLOOR[1]}"
    nox_file = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    newest = re.search(r'^NEWEST = "3\.(\d+)"$', nox_file, re.MULTILINE)
    assert newest is not None
    classified = [
        c for c in PYPROJECT["project"]["classifiers"] if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    expected = [f"Programming Language :: Python :: 3.{minor}" for minor in range(PACKAGE_FLOOR[1], int(newest[1]) + 1)]
    assert classified == expected
    assert f'OLDEST = "{PACKAGE_FLOOR[0]}.{PACKAGE_FLOOR[1]}"' in nox_file


def test_every_library_and_extra_has_one_row() -> None:
    """The written table has a row per declared library, in order, and one per other extra, naming its extra."""
    rows = _rows()
    names = [re.match(r'`"([^"]+)"`', row["`backend=`"]) for row in rows]
    assert [m[1] for m in names if m] == [library.name for library in LIBRARIES]
    for extra in _declared_extras():
        assert sum(f"`[{extra}]`" in row["install"] for row in rows) == 1, extra
    for distribution in (distribution_of(r) for reqs in _declared_extras().values() for r in reqs):
        assert distribution in TABLE.read_text(encoding="utf-8"), distribution


def test_the_readme_links_to_the_table() -> None:
    """README.md links to the docs' table (it holds no copy to drift)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/index.md#backends-and-extras" in readme
    assert "|---|" not in readme.split("## Documentation")[0].split("### Backends and extras")[-1]


def test_the_docs_include_the_table_rather_than_a_list_of_their_own() -> None:
    """The pages that list the backends include the file; no page has a table row of a backend of its own."""
    pages = {page.name: page.read_text(encoding="utf-8") for page in (ROOT / "docs").glob("*.md") if page != TABLE}
    assert {name for name, text in pages.items() if INCLUDE in text} >= {"index.md", "usage.md"}
    for name, text in pages.items():
        for library in LIBRARIES:
            assert not re.search(rf'^\s*\| `"{re.escape(library.name)}"`', text, re.MULTILINE), (name, library.name)


def test_the_libraries_that_run_once_are_their_declarations_everywhere() -> None:
    """noxfile.py's left-out markers and pyproject.toml's markers (both written by scripts/codegen.py) name
    exactly the libraries declared ``runs_once``, as tests/conftest.py's RUN_ONCE does: a library declared so
    runs once in CI with no other edit, and one that stops being so runs on every Python again."""
    declared = [library.name for library in LIBRARIES if library.runs_once]
    assert set(declared) == RUN_ONCE
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    assigned = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    assert sorted(ast.literal_eval(assigned["RUN_ONCE_LIBRARIES"])) == sorted(declared)
    assert ast.unparse(assigned["RUN_ONCE_MARKERS"]) == "['contract', 'slow', *RUN_ONCE_LIBRARIES]"
    registered = {line.split(":", 1)[0] for line in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]}
    assert set(declared) <= registered


def test_the_readmes_extras_sentence_names_each() -> None:
    """README.md's sentence naming the extras (generated) names every declared extra."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sentence = re.search(r"The extras are (.+?);", readme, re.DOTALL)
    assert sentence is not None
    text = " ".join(sentence[1].split())
    for extra in _declared_extras():
        assert f"`[{extra}]`" in text, extra


def _pins() -> dict[str, list[str]]:
    """tests/requirements.txt's pins: each distribution's lines (a line per Python range), comments left out."""
    pins: dict[str, list[str]] = {}
    for line in (ROOT / "tests" / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            pins.setdefault(distribution_of(line).lower(), []).append(line)
    return pins


def test_the_test_requirements_pin_every_declared_library() -> None:
    """tests/requirements.txt pins each library an extra installs to one version (``==``) on every Python: a
    library declared without its pin would go untested (its pairs skipped), with no failure to say so."""
    pins = _pins()
    for library in LIBRARIES:
        for requirement in (r for r in (library.requirement, *library.also_installs) if r):
            lines = pins.get(distribution_of(requirement).lower())
            assert lines, f"{library.name}: no pin of {distribution_of(requirement)} in tests/requirements.txt"
            assert len(lines) == 1, lines
            assert "==" in lines[0], lines[0]
            assert ";" not in lines[0], lines[0]
