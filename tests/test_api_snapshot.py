"""scripts/api_snapshot.py: HEAD keeps the public API of the latest release, and a break fails the check.

Each test checks a copy of the package, edited as text, against the committed
snapshots or one made from HEAD here; nothing is imported from the copies,
and nothing touches the network.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import io
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import NamedTuple, cast

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
    vars(module)["load_package"] = _same_trees_loaded_once(module.load_package)
    return module


def _same_trees_loaded_once(load: Callable[[Path], object]) -> Callable[[Path], object]:
    """``load`` (griffe's load of a package, a second of CPU) done once for each content of the package's files.

    Of the everyday tier's 23 loads, 7 were of a tree already loaded (HEAD's copy, or a copy edited the same way):
    the script's code runs all the same, on the module griffe built from those very files. The script only reads
    what griffe built.
    """
    loaded: dict[str, object] = {}

    def load_once(package_dir: Path) -> object:
        digest = hashlib.sha256()
        for path in sorted((package_dir / "animalstore_client").rglob("*.py")):
            digest.update(path.relative_to(package_dir).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        key = digest.hexdigest()
        if key not in loaded:
            loaded[key] = load(package_dir)
        return loaded[key]

    return load_once


@pytest.fixture(scope="module")
def head_api(snapshot: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``api/`` as the tests of the check start from: the committed snapshots, with HEAD's own breaks accepted.

    There are none, unless HEAD changed a public value on purpose (`RetryBudget`'s defaults, say), which
    `test_head_keeps_the_api_of_the_latest_snapshot` alone reports: each other test sees only its own edit.
    """
    own = _head_changes(snapshot, _copy(tmp_path_factory.mktemp("head")))
    if not own:
        return API
    api_dir = tmp_path_factory.mktemp("head-api") / "api"
    shutil.copytree(API, api_dir)
    path = api_dir / "accepted-breaks.json"
    entries = json.loads(path.read_text()) if path.is_file() else {}
    entries.setdefault(RELEASED_VERSION, {}).update(dict.fromkeys(own, "HEAD's own change, not this test's"))
    path.write_text(json.dumps(entries))
    return api_dir


def _head_changes(snapshot: ModuleType, package_dir: Path) -> list[str]:
    """The first lines of the breaking changes of ``package_dir`` against the latest snapshot that api/ does not
    accept."""
    _, old = snapshot.decode(LATEST.read_text(encoding="utf-8"), str(LATEST))
    accepted = snapshot.accepted_breaks(API, RELEASED_VERSION)
    findings = snapshot.find_breaking_changes(old, snapshot.build(package_dir))
    return [str(finding).split("\n", 1)[0] for finding in findings if snapshot.accepted_key(finding, accepted) is None]


LATEST = max(
    (path for path in API.glob("*.json") if path.stem[:1].isdigit()),
    key=lambda path: [int(number) for number in re.findall(r"\d+", path.stem)],
)
RELEASED_VERSION = LATEST.stem
RELEASED: dict[str, dict[str, object]] = json.loads(LATEST.read_text(encoding="utf-8"))["api"]["members"]


def _released(name: str) -> str:
    """The source text of a public default's value in the latest snapshot (what griffe compares HEAD's with)."""
    return str(RELEASED[name]["value"])


def _copy(tree: Path) -> Path:
    """A copy of HEAD's package under ``tree``, its public defaults set back to the released values.

    A default HEAD changed on purpose is `test_head_keeps_the_api_of_the_latest_snapshot`'s business; the
    other tests edit a copy and must see only their own edit.
    """
    shutil.copytree(
        ROOT / "animalstore_client", tree / "animalstore_client", ignore=shutil.ignore_patterns("__pycache__")
    )
    defaults = tree / "animalstore_client" / "_core" / "defaults.py"
    text = defaults.read_text(encoding="utf-8")
    for name in (name for name in RELEASED if name.startswith("DEFAULT_")):
        released = f"{name} = {_released(name)}"
        text, count = re.subn(rf"^{name} = .+$", released.replace("\\", "\\\\"), text, flags=re.M)
        assert count == 1, f"{name} is not declared on one line of _core/defaults.py: update this test"
    defaults.write_text(text, encoding="utf-8")
    return tree


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of HEAD's package, to edit: the directory that holds ``animalstore_client/``."""
    return _copy(tmp_path / "tree")


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
    path = tree / "animalstore_client" / "_clients/_generated/client_sync.py"
    _edit(path, "        limit: int | None = None,\n", "", after="class AnimalStoreClient(")
    assert "def list_pets(\n        self,\n        *,\n        status" in path.read_text()


def test_head_keeps_the_api_of_the_latest_snapshot() -> None:
    """`scripts/api_snapshot.py check` passes on this tree, as CI runs it: main adds API and removes none.

    Pins the default on purpose: the public ``DEFAULT_*`` values and `RetryBudget`'s defaults are API, so a
    changed one fails here until api/accepted-breaks.json names it with its reason (or a major version ships it).
    """
    assert (API / "1.1.0.json").is_file()
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "check"], capture_output=True, text=True, check=False, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no breaking change" in result.stdout


# What 1.2.0 changed in 1.1.0's annotations, which the annotation rule cannot prove compatible: `http_client`
# accepts a Protocol (`Urllib3PoolManager`) where 1.1.0 named urllib3's class, through an alias the rule reads as
# text; `params`' values went from `Any` to the query types. Released in 1.2.0; listed so that nothing else appears.
ANNOTATIONS_CHANGED_IN_1_2_0 = [
    "animalstore_client.AnimalStoreClient.__init__(http_client): Parameter annotation was changed: "
    "httpx.Client | urllib3.PoolManager | None -> HTTPClient | None",
    "animalstore_client.AnimalStoreClient.request(params): Parameter annotation was changed: "
    "Mapping[str, Any] | None -> QueryParams | None",
    "animalstore_client.AsyncAnimalStoreClient.__init__(http_client): Parameter annotation was changed: "
    "httpx.AsyncClient | aiohttp.ClientSession | None -> AsyncHTTPClient | None",
    "animalstore_client.AsyncAnimalStoreClient.request(params): Parameter annotation was changed: "
    "Mapping[str, Any] | None -> QueryParams | None",
]


def _changed_in_2_0(line: str) -> bool:
    """Whether a reported break is one of 2.0.0's: urllib3 removed, or a client's private base classes replaced."""
    return "urllib3" in line.lower() or ("Client: Base class was replaced" in line and "-> [BaseClient[" in line)


def _as_a_1_x_release(tmp_path: Path) -> Path:
    """HEAD's package numbered 1.99.0, so that a 1.x snapshot's breaks are reported, not allowed by 2.0's new major."""
    head = _copy(tmp_path / "head")
    _set_version(head, "1.99.0")
    return head


def test_against_1_1_0_only_the_annotations_1_2_0_changed_are_reported(snapshot: ModuleType, tmp_path: Path) -> None:
    """HEAD checked against 1.1.0's snapshot alone reports the four annotation changes 1.2.0 shipped, and no other
    (but HEAD's own changes since the latest snapshot, which the test above reports)."""
    older = tmp_path / "api"
    older.mkdir()
    shutil.copy(API / "1.1.0.json", older / "1.1.0.json")
    head = _as_a_1_x_release(tmp_path)
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "check", "--api-dir", str(older), "--package-dir", str(head)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    own = _head_changes(snapshot, ROOT)
    findings = [line for line in result.stdout.splitlines() if line.startswith("animalstore_client.")]
    in_2_0 = {line for line in findings if _changed_in_2_0(line) and line not in ANNOTATIONS_CHANGED_IN_1_2_0}
    assert sorted(set(findings) - set(own) - in_2_0) == ANNOTATIONS_CHANGED_IN_1_2_0, result.stdout
    assert f"against 1.1.0.json: {len(findings)} breaking change(s)" in result.stdout


def test_against_1_2_0_only_the_accepted_breaks_are_reported(tmp_path: Path) -> None:
    """HEAD checked against 1.2.0's snapshot alone: its only breaks are those accepted-breaks.json names since
    1.2.0 (a caller's pyreqwest client refused), each printed with its reason, and 2.0's removal of urllib3."""
    older = tmp_path / "api"
    older.mkdir()
    for name in ("1.2.0.json", "accepted-breaks.json"):
        shutil.copy(API / name, older / name)
    head = _as_a_1_x_release(tmp_path)
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "check", "--api-dir", str(older), "--package-dir", str(head)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    # Numbered 1.99.0, HEAD breaks 1.2.0's API where 2.0.0 removed the urllib3 backend and composed the clients (one
    # private base class each), and nowhere else.
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    unaccepted = [
        line
        for index, line in enumerate(lines)
        if line.startswith("animalstore_client.")
        and not any("accepted since 1.2.0" in later for later in lines[index + 1 : index + 3])
    ]
    assert unaccepted, result.stdout
    assert all(_changed_in_2_0(line) for line in unaccepted), unaccepted
    assert result.stdout.count("accepted since 1.2.0: A caller's pyreqwest client is refused") == 2


def test_a_removed_parameter_fails_naming_it(
    snapshot: ModuleType, head_api: Path, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _remove_limit_from_list_pets(tree)
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(head_api))
    assert code == 1, output
    assert "animalstore_client.AnimalStoreClient.list_pets(limit): Parameter was removed" in output
    assert "at animalstore_client/_clients/_generated/client_sync.py:" in output
    assert "AsyncAnimalStoreClient" not in output  # only what was removed is reported
    assert "1 breaking change(s)" in output


def test_the_same_removal_passes_in_a_new_major_version(
    snapshot: ModuleType, head_api: Path, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _remove_limit_from_list_pets(tree)
    _set_version(tree, "3.0.0")
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(head_api))
    assert code == 0, output
    assert "list_pets(limit): Parameter was removed" in output  # still listed, as allowed
    assert "allowed: the major version goes from 2 to 3" in output


def _api_dir_accepting(head_api: Path, tmp_path: Path, accepted: dict[str, str]) -> Path:
    """A copy of ``head_api`` whose accepted-breaks.json holds ``accepted`` (and its own entries) since the latest
    snapshot."""
    api_dir = tmp_path / "api"
    shutil.copytree(head_api, api_dir)
    path = api_dir / "accepted-breaks.json"
    entries = json.loads(path.read_text()) if path.is_file() else {}
    entries.setdefault(RELEASED_VERSION, {}).update(accepted)
    path.write_text(json.dumps(entries))
    return api_dir


def test_a_break_accepted_on_purpose_passes_with_its_reason(
    snapshot: ModuleType, head_api: Path, tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A finding named in api/accepted-breaks.json under the snapshot's version passes, printed with its reason."""
    _remove_limit_from_list_pets(tree)
    headline = "animalstore_client.AnimalStoreClient.list_pets(limit): Parameter was removed"
    api_dir = _api_dir_accepting(head_api, tmp_path, {headline: "limit moved to the page object"})
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(api_dir))
    assert code == 0, output
    assert f"accepted since {RELEASED_VERSION}: limit moved to the page object" in output


def test_an_accepted_alias_break_may_be_named_without_the_whole_union(
    snapshot: ModuleType, head_api: Path, tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A member lost from a type alias is accepted by path, kind and member, without the union's text: another
    member added later (a new library's client) leaves the entry matching."""
    path = tree / "animalstore_client" / "_clients" / "optional_types.py"
    _edit(path, "HTTPClient: TypeAlias = httpx.Client | Httpx2Client\n", "HTTPClient: TypeAlias = httpx.Client\n")
    _edit(path, "HTTPClient: TypeAlias = httpx.Client\n", "HTTPClient: TypeAlias = httpx.Client | Httpx2AsyncClient\n")
    named = "animalstore_client.HTTPClient: Type alias lost a member: Httpx2Client"
    api_dir = _api_dir_accepting(head_api, tmp_path, {named: "a test's reason"})
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(api_dir))
    assert code == 0, output
    assert f"accepted since {RELEASED_VERSION}: a test's reason" in output


def test_an_accepted_break_no_longer_found_fails(
    snapshot: ModuleType, head_api: Path, tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An entry of api/accepted-breaks.json that no finding matches fails the check: the list cannot go stale."""
    headline = "animalstore_client.AnimalStoreClient.list_pets(limit): Parameter was removed"
    api_dir = _api_dir_accepting(head_api, tmp_path, {headline: "limit moved to the page object"})
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(api_dir))
    assert code == 1, output
    assert f"names a break no longer found: {headline}" in output


@pytest.mark.parametrize(
    ("module", "name"),
    [("__init__.py", "PetStatusLiteral"), ("testing/__init__.py", "FakeResponse")],
)
def test_a_removed_public_name_fails(
    snapshot: ModuleType, head_api: Path, tree: Path, capsys: pytest.CaptureFixture[str], module: str, name: str
) -> None:
    """A name dropped from ``__all__`` (it may still be importable: the snapshot is what ``__all__`` promises)."""
    _edit(tree / "animalstore_client" / module, f'    "{name}",\n', "", after="__all__")
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(head_api))
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
    assert _run(snapshot, capsys, "dump", "--package-dir", str(tree), "--api-dir", str(api))[0] == 0
    path = tree / "animalstore_client" / "_core" / "libraries.py"
    source = path.read_text()
    match = re.search(r"^BackendName = Literal\[(.*)\]$", source, re.MULTILINE)
    assert match is not None, "BackendName = Literal[...] is not in _core/libraries.py: update this test"
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
    assert "_core/libraries.py:" in output

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
    other = _copy(tmp_path / "other")
    assert _run(snapshot, capsys, "dump", "--package-dir", str(other), "--api-dir", str(first))[0] == 0
    assert _run(snapshot, capsys, "dump", "--package-dir", str(tree), "--api-dir", str(second))[0] == 0
    (made,) = first.iterdir()
    text = made.read_text()
    assert text == (second / made.name).read_text()
    assert "lineno" not in text
    assert str(ROOT) not in text
    assert str(tmp_path) not in text


def test_the_committed_snapshots_are_well_formed(snapshot: ModuleType) -> None:
    """Each file under api/ is named for the version it records, in the format this script writes: each records
    which classes are Protocols (Middleware since 1.2.0) and how each attrs class behaves (Pet frozen and
    hashable since 1.1.0)."""
    for path in sorted(snapshot.snapshots(API).values()):
        version, api = snapshot.decode(path.read_text(), str(path))
        assert version == path.stem
        assert api.path == "animalstore_client"
        assert "testing" in api.members
        assert api.extra[snapshot.EXTRA]["format"] == snapshot.FORMAT, path
        if "Middleware" in api.members:
            assert api["Middleware"].extra[snapshot.EXTRA]["protocol"] == {"runtime_checkable": False}, path
        pet = api["Pet"].extra[snapshot.EXTRA]["attrs"]
        assert pet == {"frozen": True, "hashable": True, "slots": True, "eq": True, "order": False}, path


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


# Values, bases and annotations --------------------------------------------------------------------


class Mutation(NamedTuple):
    """An edit of one file of the package copy, and the finding the check must print for it."""

    name: str
    file: str
    old: str
    new: str
    after: str
    finding: str


SYNC_CLIENT = "class AnimalStoreClient("


def _changed_default(label: str, name: str, new: str) -> Mutation:
    """A public default given another value (``new``, none the package would choose): compatible (no finding)."""
    old = _released(name)
    assert old != new
    return Mutation(
        label,
        "_core/defaults.py",
        f"{name} = {old}\n",
        f"{name} = {new}\n",
        "",
        "",
    )


BREAKING = [
    Mutation(
        "replaced base",
        "_core/exceptions.py",
        "class APITimeoutError(APIConnectionError):",
        "class APITimeoutError(APIError):",
        "",
        "animalstore_client.APITimeoutError: Base class was replaced: [APIConnectionError] -> [APIError]: "
        "no longer a subclass of APIConnectionError",
    ),
    Mutation(
        "removed base",
        "_core/exceptions.py",
        "class ClientValidationError(AnimalStoreError, ValueError):",
        "class ClientValidationError(AnimalStoreError):",
        "",
        "animalstore_client.ClientValidationError: Base class was removed: [AnimalStoreError, ValueError] -> "
        "[AnimalStoreError]: no longer a subclass of ValueError",
    ),
    Mutation(
        "int constant",
        "testing/_recording.py",
        "MAX_RECORDED_REQUESTS = 10_000\n",
        "MAX_RECORDED_REQUESTS = 97\n",
        "",
        "animalstore_client.testing.MAX_RECORDED_REQUESTS: Attribute value was changed: 10000 -> 97",
    ),
    Mutation(
        "computed constant",
        "testing/_recording.py",
        "MAX_RECORDED_BYTES = 32 * 1024 * 1024\n",
        "MAX_RECORDED_BYTES = 3 * 1024 * 1024 + 1\n",
        "",
        "animalstore_client.testing.MAX_RECORDED_BYTES: Attribute value was changed: 32 * 1024 * 1024 -> "
        "3 * 1024 * 1024 + 1",
    ),
    Mutation(
        "str constant",
        "testing/_messages.py",
        'FAKE_BASE_URL = "https://fake.animalstore.invalid/v1"',
        'FAKE_BASE_URL = "https://fake.animalstore.invalid/v2"',
        "",
        "animalstore_client.testing.FAKE_BASE_URL: Attribute value was changed: "
        "'https://fake.animalstore.invalid/v1' -> 'https://fake.animalstore.invalid/v2'",
    ),
    Mutation(
        "enum value",
        "_core/models.py",
        'AVAILABLE = "available"',
        'AVAILABLE = "in_stock"',
        "",
        "animalstore_client.PetStatus.AVAILABLE: Attribute value was changed: 'available' -> 'in_stock'",
    ),
    Mutation(
        "enum member removed",
        "_core/environments.py",
        '    STAGING = "staging"\n',
        "",
        "",
        "animalstore_client.Environment.STAGING: Public object was removed",
    ),
    Mutation(
        "Literal member removed",
        "testing/_messages.py",
        'ConnectionFaultKind = Literal["refused", "reset", "timeout"]',
        'ConnectionFaultKind = Literal["refused", "reset"]',
        "",
        "animalstore_client.testing.ConnectionFaultKind: Literal member was removed: 'timeout'",
    ),
    Mutation(
        "type alias member removed",
        "_clients/optional_types.py",
        "HTTPClient: TypeAlias = httpx.Client | Httpx2Client",
        "HTTPClient: TypeAlias = httpx.Client",
        "",
        "animalstore_client.HTTPClient: Type alias lost a member: Httpx2Client "
        "(httpx.Client | Httpx2Client -> httpx.Client)",
    ),
    Mutation(
        "return annotation",
        "_clients/_generated/client_sync.py",
        ") -> list[Pet]:",
        ") -> Pet:",
        SYNC_CLIENT,
        "animalstore_client.AnimalStoreClient.list_pets: Return annotation was changed: list[Pet] -> Pet",
    ),
    Mutation(
        "parameter annotation",
        "_clients/_generated/client_sync.py",
        "max_retries: int = DEFAULT_MAX_RETRIES",
        "max_retries: str = DEFAULT_MAX_RETRIES",
        SYNC_CLIENT,
        "animalstore_client.AnimalStoreClient.__init__(max_retries): Parameter annotation was changed: int -> str",
    ),
    Mutation(
        "parameter narrowed on a method users call",
        "_clients/_generated/client_sync.py",
        "timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN",
        "timeout: float | NotGiven | None = NOT_GIVEN",
        "    def create_pet(",
        "animalstore_client.AnimalStoreClient.create_pet(timeout): Parameter annotation was changed: "
        "float | httpx.Timeout | NotGiven | None -> float | NotGiven | None",
    ),
    # Behaviour the signature's text does not show (issue 50, item 6).
    Mutation(
        "sync method made async",
        "_clients/_generated/client_sync.py",
        "    def get_pet(\n",
        "    async def get_pet(\n",
        SYNC_CLIENT,
        "animalstore_client.AnimalStoreClient.get_pet: Method was made async: def -> async def: "
        "callers must now await it",
    ),
    Mutation(
        "async method made sync",
        "_clients/client_async.py",
        "    async def aclose(self) -> None:",
        "    def aclose(self) -> None:",
        "class AsyncAnimalStoreClient(",
        "animalstore_client.AsyncAnimalStoreClient.aclose: Method is no longer async: async def -> def: "
        "callers that await its result now fail",
    ),
    Mutation(
        "Protocol member's parameter widened",
        "_core/middleware.py",
        "def __call__(self, request: httpx.Request, call_next: CallNext, /)",
        "def __call__(self, request: httpx.Request | None, call_next: CallNext, /)",
        "class Middleware(Protocol):",
        "animalstore_client.Middleware.__call__(request): Parameter annotation was changed on a Protocol users "
        "implement: httpx.Request -> httpx.Request | None (classes written to satisfy the Protocol no longer match it)",
    ),
    Mutation(
        "optional parameter added to a Protocol member",
        "_core/middleware.py",
        "def __call__(self, request: httpx.Request, /) -> httpx.Response:",
        "def __call__(self, request: httpx.Request, /, timeout: float | None = None) -> httpx.Response:",
        "class CallNext(Protocol):",
        "animalstore_client.CallNext.__call__(timeout): Parameter was added to a Protocol member users implement: "
        "the methods users wrote do not accept it",
    ),
    Mutation(
        "member added to a Protocol",
        "_core/middleware.py",
        "        ...\n\n\ndef _name(",
        "        ...\n\n    def close(self) -> None:\n        ...\n\n\ndef _name(",
        "class AsyncMiddleware(Protocol):",
        "animalstore_client.AsyncMiddleware.close: Member was added to a Protocol users implement: "
        "the classes users wrote lack it",
    ),
    Mutation(
        "attrs class no longer frozen",
        "_core/models.py",
        "@attrs.frozen\nclass Pet(",
        "@attrs.define\nclass Pet(",
        "",
        "animalstore_client.Pet: attrs class is no longer frozen: its instances can now be changed; "
        "hash() of an instance, a set or dict key, now fails",
    ),
]

COMPATIBLE = [
    # A default of the SDK's behaviour given another value: its pin is tests/test_defaults.py, not this guard.
    _changed_default("int default", "DEFAULT_MAX_RETRIES", "97"),
    _changed_default("timeout default", "DEFAULT_TIMEOUT", "httpx.Timeout(61.5, connect=5.5)"),
    _changed_default("float default", "DEFAULT_TOTAL_TIMEOUT", "61.5"),
    Mutation(
        "new keyword parameter with a default",
        "_clients/_generated/client_sync.py",
        "        extra_headers: Mapping[str, str] | None = None,\n    ) -> list[Pet]:",
        "        extra_headers: Mapping[str, str] | None = None,\n        page_token: str | None = None,\n"
        "    ) -> list[Pet]:",
        SYNC_CLIENT,
        "",
    ),
    Mutation(
        "new exception subclass",
        "_core/exceptions.py",
        "class APITimeoutError(APIConnectionError):",
        'class PetGoneError(NotFoundError):\n    """The pet was adopted."""\n\n\n'
        "class APITimeoutError(APIConnectionError):",
        "",
        "",
    ),
    Mutation("... imported", "__init__.py", "    NotFoundError,\n", "    NotFoundError,\n    PetGoneError,\n", "", ""),
    Mutation("... exported", "__init__.py", "__all__ = [\n", '__all__ = [\n    "PetGoneError",\n', "", ""),
    Mutation(
        "parameter widened to a union superset",
        "_clients/_generated/client_sync.py",
        "max_retries: int = DEFAULT_MAX_RETRIES",
        "max_retries: int | None = DEFAULT_MAX_RETRIES",
        SYNC_CLIENT,
        "",
    ),
    Mutation(
        "the same union spelled Optional[...]",
        "_clients/_generated/client_sync.py",
        "default_headers: Mapping[str, str] | None = None",
        "default_headers: Optional[Mapping[str, str]] = None",
        SYNC_CLIENT,
        "",
    ),
    Mutation(
        "new public function",
        "__init__.py",
        "from animalstore_client._version import __version__\n",
        "from animalstore_client._version import __version__\n\n\n"
        'def pet_path(pet_id: int) -> str:\n    return f"/pets/{pet_id}"\n',
        "",
        "",
    ),
    Mutation("... exported", "__init__.py", "__all__ = [\n", '__all__ = [\n    "pet_path",\n', "", ""),
    Mutation(
        "a Protocol made runtime_checkable",
        "_core/middleware.py",
        "class Middleware(Protocol):",
        "@runtime_checkable\nclass Middleware(Protocol):",
        "",
        "",
    ),
    Mutation(
        "... imported",
        "_core/middleware.py",
        "from typing import TYPE_CHECKING, Protocol, cast",
        "from typing import TYPE_CHECKING, Protocol, cast, runtime_checkable",
        "",
        "",
    ),
    Mutation(
        "a Protocol member's annotation spelled otherwise",
        "_core/middleware.py",
        "def __call__(self, request: httpx.Request, call_next: AsyncCallNext, /) -> Awaitable[httpx.Response]:",
        "def __call__(self, request: 'httpx.Request', call_next: AsyncCallNext, /) -> Awaitable[httpx.Response]:",
        "",
        "",
    ),
    Mutation(
        "the same value written otherwise",
        "_core/defaults.py",
        f"DEFAULT_MAX_RESPONSE_BYTES = {_released('DEFAULT_MAX_RESPONSE_BYTES')}\n",
        f"DEFAULT_MAX_RESPONSE_BYTES = ({_released('DEFAULT_MAX_RESPONSE_BYTES')})\n",
        "",
        "",
    ),
]


def _checked(snapshot: ModuleType, head_api: Path, tree: Path, mutations: list[Mutation]) -> tuple[int, str]:
    """Apply every mutation to one copy and check it once against ``head_api``: one griffe load for all of them."""
    _copy(tree)
    for mutation in mutations:
        _edit(tree / "animalstore_client" / mutation.file, mutation.old, mutation.new, after=mutation.after)
    api_dir = tree.parent / f"{tree.name}-api"
    shutil.copytree(head_api, api_dir)
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = snapshot.main(["check", "--package-dir", str(tree), "--api-dir", str(api_dir)])
    return code, output.getvalue()


@pytest.fixture(scope="module")
def breaking_run(snapshot: ModuleType, head_api: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    """The check's exit code and output on a copy carrying every breaking mutation."""
    tree = tmp_path_factory.mktemp("breaking")
    return _checked(snapshot, head_api, tree, BREAKING)


@pytest.mark.parametrize("mutation", BREAKING, ids=[mutation.name for mutation in BREAKING])
def test_a_changed_value_base_or_annotation_fails_naming_it(breaking_run: tuple[int, str], mutation: Mutation) -> None:
    """The check fails and prints the public path, what changed, and the file in HEAD that defines it."""
    code, output = breaking_run
    assert code == 1, output
    assert f"{mutation.finding}\n    at animalstore_client/{mutation.file}:" in output, output


def test_each_breaking_mutation_is_one_finding(breaking_run: tuple[int, str]) -> None:
    """Nothing else is reported: each mutation is found once, with no collateral finding."""
    code, output = breaking_run
    assert code == 1, output
    assert f"{len(BREAKING)} breaking change(s)" in output, output


def test_compatible_changes_pass(snapshot: ModuleType, head_api: Path, tmp_path: Path) -> None:
    """A new keyword parameter with a default, a new exported exception, a widened parameter pass the check.

    So do the same annotation or value written another way (``Optional[X]``, a value in parentheses).
    """
    code, output = _checked(snapshot, head_api, tmp_path / "tree", COMPATIBLE)
    assert code == 0, output
    assert "no breaking change" in output


@pytest.mark.parametrize(
    ("old", "new", "accepted", "compatible"),
    [
        ("int", "int | None", True, True),
        ("int", "int | str", True, True),
        ("int | None", "int", True, False),
        ("int", "str", True, False),
        ("Literal['a', 'b']", "Literal['a', 'b', 'c']", True, True),
        ("Literal['a', 'b']", "Literal['a']", True, False),
        ("Optional[int]", "int | None", True, True),
        ("typing.Union[int, str]", "str | int", True, True),
        ("list[Optional[Pet]]", "list[Pet | None]", False, True),
        ("Sequence[Pet]", "list[Pet]", True, False),
        ("int", None, True, True),
        (None, "int", True, True),
        ("Pet | None", "Pet", False, True),
        ("Pet", "Pet | None", False, False),
        ("list[Pet]", "Pet", False, False),
        ("list[Pet]", None, False, False),
        ("None", "int", False, False),
    ],
)
def test_the_annotation_rule(
    snapshot: ModuleType, old: str | None, new: str | None, accepted: bool, compatible: bool
) -> None:
    """A parameter may widen to a union superset, a return narrow to a subset (as normalised text); nothing else."""
    change = snapshot.annotation_change(old, new, accepted=accepted)
    assert (change is None) is compatible, change


# Kinds and facts the signature's text does not show ---------------------------------------------------


def test_a_member_that_changes_kind_fails_naming_it(
    snapshot: ModuleType, head_api: Path, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A classmethod made a method (on each public class that inherits it) and a property made a method.

    Reported once each: the receiver (``cls`` -> ``self``) is no parameter change of its own.
    """
    models = tree / "animalstore_client" / "_core" / "models.py"
    classmethod = "    @classmethod\n    def from_dict(cls, data: object) -> Self:"
    _edit(models, classmethod, "    def from_dict(self, data: object) -> Self:")
    _edit(models, "    @property\n    def is_known(self) -> bool:", "    def is_known(self) -> bool:")
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(head_api))
    assert code == 1, output
    for model in ("Pet", "NewPet", "ErrorBody"):
        finding = f"animalstore_client.{model}.from_dict: Method kind was changed: classmethod -> method: "
        assert f"{finding}code that uses it as a classmethod fails\n    at animalstore_client/_core/models.py:" in (
            output
        )
    kind = "Public object points to a different kind of object"  # griffe's words
    assert f"animalstore_client.PetStatus.is_known: {kind}: property -> method\n" in output
    assert "4 breaking change(s)" in output, output


def test_a_staticmethod_or_a_setter_changed_fails(
    snapshot: ModuleType, tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A staticmethod made a method, a property's setter removed: checked against a snapshot of a copy that had
    them (the package has neither today)."""
    store = tree / "animalstore_client" / "testing" / "_store.py"
    members = (
        "    @staticmethod\n    def sample_id() -> int:\n        return 1\n\n"
        "    @property\n    def label(self) -> str:\n        return ''\n\n"
        "    @label.setter\n    def label(self, value: str) -> None:\n        pass\n\n"
    )
    api_key = "    @property\n    def api_key(self) -> str:"
    _edit(store, api_key, members + api_key)
    api = tmp_path / "api"
    assert _run(snapshot, capsys, "dump", "--package-dir", str(tree), "--api-dir", str(api))[0] == 0
    _edit(store, "    @staticmethod\n    def sample_id() -> int:", "    def sample_id(self) -> int:")
    _edit(store, "    @label.setter\n    def label(self, value: str) -> None:\n        pass\n\n", "")
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(api))
    assert code == 1, output
    assert (
        "animalstore_client.testing.FakeAnimalStore.sample_id: Method kind was changed: staticmethod -> method: "
        "code that uses it as a staticmethod fails\n    at animalstore_client/testing/_store.py:"
    ) in output
    assert (
        "animalstore_client.testing.FakeAnimalStore.label: Property lost its setter: "
        "assigning to it now raises AttributeError\n    at animalstore_client/testing/_store.py:"
    ) in output
    assert "2 breaking change(s)" in output, output


def test_a_format_1_snapshot_knows_no_class_facts(
    snapshot: ModuleType, head_api: Path, tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A snapshot written before format 2 records no attrs or Protocol facts: a fact it lacks is unknown, not
    changed, so Pet made mutable passes; a Protocol is known from HEAD, and kinds from griffe's labels (format 1
    has them), so a member added to a Protocol and a method made async are still reported."""
    api = tmp_path / "api"
    shutil.copytree(head_api, api)
    path = api / LATEST.name
    document = json.loads(path.read_text())
    assert document["format"] == snapshot.FORMAT == 2

    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items() if key not in {"attrs", "protocol"}}
        return [strip(item) for item in value] if isinstance(value, list) else value

    older = cast("dict[str, object]", strip(document))
    assert '"attrs": {' not in json.dumps(older)
    assert '"protocol": {' not in json.dumps(older)
    path.write_text(snapshot.render({**older, "format": 1}))
    for mutation in BREAKING:
        if mutation.name in {"attrs class no longer frozen", "member added to a Protocol", "sync method made async"}:
            _edit(tree / "animalstore_client" / mutation.file, mutation.old, mutation.new, after=mutation.after)
    code, output = _run(snapshot, capsys, "check", "--package-dir", str(tree), "--api-dir", str(api))
    assert code == 1, output
    assert "animalstore_client.AsyncMiddleware.close: Member was added to a Protocol users implement" in output
    assert "animalstore_client.AnimalStoreClient.get_pet: Method was made async" in output
    assert "animalstore_client.Pet" not in output
    assert "2 breaking change(s)" in output, output


ATTRS_CASES = {
    "Frozen": "@attrs.frozen",
    "Define": "@attrs.define",
    "Mutable": "@attrs.mutable",
    "DefineFrozen": "@attrs.define(frozen=True)",
    "DefineNoEq": "@attrs.define(eq=False)",
    "DefineUnsafeHash": "@attrs.define(unsafe_hash=True)",
    "DefineHashFalse": "@attrs.define(hash=False)",
    "DictHashFalse": "@attrs.define(hash=False, slots=False)",
    "FrozenHashFalse": "@attrs.frozen(unsafe_hash=False)",
    "FrozenDict": "@attrs.frozen(slots=False)",
    "DefineOrder": "@attrs.define(order=True)",
    "OtherOptions": "@attrs.define(repr=False, kw_only=True, field_transformer=None)",
    "OldStyle": "@attr.s(auto_attribs=True)",
    "OldFrozen": "@attr.s(auto_attribs=True, frozen=True)",
    "OldNoEq": "@attr.s(auto_attribs=True, eq=False)",
    "OldNoCmp": "@attr.s(auto_attribs=True, cmp=False)",
    "OwnHash": "@attrs.define",
    "SubOfFrozen": "@attrs.define",
}


def test_the_attrs_facts_are_what_attrs_does(
    snapshot: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the snapshot says of an attrs class, read from its decorator's text, is what attrs builds: each
    decorator variant is read by griffe and the same module is imported and its instances tried. An option that
    is not a literal stops the dump rather than being guessed."""
    import griffe

    lines = ["import attr", "import attrs", "", "FLAG = True", "", "", "@attrs.define(frozen=FLAG)", "class ByName:"]
    lines += ["    x: int = 1", "", ""]
    for name, decorator in ATTRS_CASES.items():
        base = "(Frozen)" if name == "SubOfFrozen" else ""
        lines += [decorator, f"class {name}{base}:", "    x: int = 1"]
        if name == "OwnHash":
            lines += ["", "    def __hash__(self) -> int:", "        return 1"]
        lines += ["", ""]
    package = tmp_path / "attrs_cases_probe"
    package.mkdir()
    (package / "__init__.py").write_text("\n".join(lines))
    loaded = griffe.load(package.name, search_paths=[tmp_path], allow_inspection=False, resolve_aliases=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(package.name)
    for name in ATTRS_CASES:
        class_ = getattr(module, name)
        instance = class_()
        try:
            hash(instance)
            hashable = True
        except TypeError:
            hashable = False
        try:
            instance.x = 2
            frozen = False
        except AttributeError:  # attrs' FrozenInstanceError is one
            frozen = True
        built = {
            "frozen": frozen,
            "hashable": hashable,
            "slots": "__slots__" in vars(class_),
            "eq": class_.__eq__ is not object.__eq__,
            "order": "__lt__" in vars(class_),
        }
        assert snapshot.attrs_facts(loaded[name]) == built, name
    with pytest.raises(snapshot.SnapshotError, match=r"ByName: the attrs option frozen=FLAG is not a literal"):
        snapshot.attrs_facts(loaded["ByName"])
