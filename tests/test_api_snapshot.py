"""scripts/api_snapshot.py: HEAD keeps the public API of the latest release, and a break fails the check.

Each test checks a copy of the package, edited as text, against the committed
snapshots or one made from HEAD here; nothing is imported from the copies,
and nothing touches the network.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip(
    "griffe", reason="griffelib is not installed here (pip install -r .ci/requirements.txt); CI runs this"
)

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "api_snapshot.py"
API = ROOT / "api"


@pytest.fixture(scope="module")
def snapshot() -> ModuleType:
    """The script, loaded as a module."""
    spec = importlib.util.spec_from_file_location("api_snapshot_script", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of HEAD's package, to edit: the directory that holds ``animalstore_client/``."""
    tree = tmp_path / "tree"
    shutil.copytree(
        ROOT / "animalstore_client", tree / "animalstore_client", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tree


def _run(snapshot: ModuleType, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = snapshot.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _edit(path: Path, old: str, new: str, *, after: str = "") -> None:
    """Replace the first ``old`` that follows ``after`` in ``path``; fail if the text is not there."""
    text = path.read_text()
    start = text.index(after) if after else 0
    at = text.find(old, start)
    assert at >= 0, f"{old!r} is not in {path} after {after!r}: update this test"
    path.write_text(text[:at] + new + text[at + len(old) :])


def _set_version(tree: Path, version: str) -> None:
    path = tree / "animalstore_client" / "_version.py"
    text, count = re.subn(r'__version__ = "[^"]*"', f'__version__ = "{version}"', path.read_text())
    assert count == 1
    path.write_text(text)


def _remove_limit_from_list_pets(tree: Path) -> None:
    """``AnimalStoreClient.list_pets`` loses its ``limit`` parameter (the async client and the views keep theirs)."""
    path = tree / "animalstore_client" / "_client_sync.py"
    _edit(path, "        limit: int | None = None,\n", "", after="class AnimalStoreClient(")
    assert "def list_pets(\n        self,\n        *,\n        status" in path.read_text()


def test_head_keeps_the_api_of_the_latest_snapshot() -> None:
    """`scripts/api_snapshot.py check` passes on this tree, as CI runs it: main adds API and removes none."""
    assert (API / "1.1.0.json").is_file()
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "check"], capture_output=True, text=True, check=False, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no breaking change" in result.stdout


def test_this_release_keeps_the_api_of_1_1_0(tmp_path: Path) -> None:
    """HEAD checked against 1.1.0's snapshot alone (an api/ holding only it) passes: 1.2.0 broke nothing of 1.1."""
    older = tmp_path / "api"
    older.mkdir()
    shutil.copy(API / "1.1.0.json", older / "1.1.0.json")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "check", "--api-dir", str(older)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "against 1.1.0.json: no breaking change" in result.stdout


def test_a_removed_parameter_fails_naming_it(
    snapshot: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _remove_limit_from_list_pets(tree)
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree))
    assert code == 1, output
    assert "animalstore_client.AnimalStoreClient.list_pets(limit): Parameter was removed" in output
    assert "at animalstore_client/_client_sync.py:" in output
    assert "AsyncAnimalStoreClient" not in output  # only what was removed is reported
    assert "1 breaking change(s)" in output


def test_the_same_removal_passes_in_a_new_major_version(
    snapshot: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _remove_limit_from_list_pets(tree)
    _set_version(tree, "2.0.0")
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree))
    assert code == 0, output
    assert "list_pets(limit): Parameter was removed" in output  # still listed, as allowed
    assert "allowed: the major version goes from 1 to 2" in output


@pytest.mark.parametrize(
    ("module", "name"),
    [("__init__.py", "PetStatusLiteral"), ("testing/__init__.py", "FakeResponse")],
)
def test_a_removed_public_name_fails(
    snapshot: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str], module: str, name: str
) -> None:
    """A name dropped from ``__all__`` (it may still be importable: the snapshot is what ``__all__`` promises)."""
    _edit(tree / "animalstore_client" / module, f'    "{name}",\n', "", after="__all__")
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree))
    assert code == 1, output
    public = "animalstore_client" if module == "__init__.py" else "animalstore_client.testing"
    assert f"{public}.{name}: Public object was removed" in output


def test_a_literal_alias_may_gain_members_but_not_lose_one(
    snapshot: ModuleType, tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """griffe compares no attributes; the script does for Literal aliases: a new backend is no break, a dropped one is.

    Checked against a snapshot of HEAD made here, whose version is HEAD's: the
    latest snapshot is compared with even when it is the same release.
    """
    api = tmp_path / "api"
    assert _run(snapshot, capsys, "dump", "--api-dir", str(api))[0] == 0
    path = tree / "animalstore_client" / "_backends.py"
    source = path.read_text()
    match = re.search(r"^BackendName = Literal\[(.*)\]$", source, re.MULTILINE)
    assert match is not None, "BackendName = Literal[...] is not in _backends.py: update this test"
    members = [ast.literal_eval(member) for member in match[1].split(",")]

    def backends(*names: str) -> tuple[int, str]:
        path.write_text(source.replace(match[0], f"BackendName = Literal[{', '.join(map(repr, names))}]"))
        return _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(api))

    code, output = backends(*members, "httpx2")
    assert code == 0, output
    assert "no breaking change" in output

    code, output = backends(*members[1:], "httpx2")
    assert code == 1, output
    assert f"animalstore_client.BackendName: Literal member was removed: {members[0]!r}" in output
    assert "_backends.py:" in output

    path.write_text(source.replace(match[0], "BackendName = str"))
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(api))
    assert code == 1, output
    assert "animalstore_client.BackendName: Literal alias is no longer a Literal[...]" in output


def test_a_version_lower_than_the_latest_snapshot_fails(
    snapshot: ModuleType, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _set_version(tree, "1.0.9")
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree))
    assert code == 1, output
    assert "version 1.0.9 is lower than the latest snapshot's" in output


def test_the_latest_snapshot_is_the_highest_version_as_numbers(snapshot: ModuleType, tmp_path: Path) -> None:
    for name in ["1.9.0.json", "1.10.0.json", "1.10.0rc1.json", "README.json", "notes.txt"]:
        (tmp_path / name).write_text("{}")
    version, path = snapshot.latest_snapshot(tmp_path)
    assert (version, path.name) == ("1.10.0", "1.10.0.json")
    assert snapshot.version_key("1.2.0rc1") < snapshot.version_key("1.2.0") < snapshot.version_key("1.10")


def test_a_snapshot_is_deterministic_and_holds_no_line_or_path(
    snapshot: ModuleType, tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Made twice, from two places, the file is the same; no line number or absolute path churns it."""
    first, second = tmp_path / "first", tmp_path / "second"
    assert _run(snapshot, capsys, "dump", "--api-dir", str(first))[0] == 0
    assert _run(snapshot, capsys, "dump", "--package-dir", str(tree), "--api-dir", str(second))[0] == 0
    (made,) = first.iterdir()
    text = made.read_text()
    assert text == (second / made.name).read_text()
    assert "lineno" not in text
    assert str(ROOT) not in text
    assert str(tmp_path) not in text


def test_the_committed_snapshots_are_well_formed(snapshot: ModuleType) -> None:
    """Each file under api/ is named for the version it records, in the format this script reads."""
    for path in sorted(API.glob("*.json")):
        version, api = snapshot.decode(path.read_text(), str(path))
        assert version == path.stem
        assert api.path == "animalstore_client"
        assert "testing" in api.members


def test_cutting_a_release(
    snapshot: ModuleType, tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """dump before the version bump is refused; after it, the new snapshot is the one later work is checked against."""
    api = tmp_path / "api"
    shutil.copytree(API, api)
    latest, _ = snapshot.latest_snapshot(api)
    init = tree / "animalstore_client" / "__init__.py"
    _edit(init, "__all__ = [\n", '__all__ = [\n    "ADDED_SINCE",\n')
    init.write_text(init.read_text() + "\nADDED_SINCE = 1\n")  # HEAD's API differs from the release's
    _set_version(tree, latest)
    code, output = _run(snapshot, capsys, "dump", "--package-dir", str(tree), "--api-dir", str(api))
    assert code == 2, output
    assert f"already records {latest}" in output
    assert (api / f"{latest}.json").read_text() == (API / f"{latest}.json").read_text()

    (release, _, _) = snapshot.version_key(latest)
    bumped = f"{release[0]}.{release[1] + 1}.0"
    _set_version(tree, bumped)
    assert _run(snapshot, capsys, "dump", "--package-dir", str(tree), "--api-dir", str(api))[0] == 0
    assert snapshot.latest_snapshot(api)[0] == bumped
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(api))
    assert code == 0, output
    assert f"against {bumped}.json: no breaking change" in output
