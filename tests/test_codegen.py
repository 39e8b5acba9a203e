"""scripts/unasync.py: the sync modules are generated from the async ones, and a stale one fails."""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import attrs
import pytest

from animalstore_client._core.deprecation import GET_PET_DEPRECATION

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "unasync.py"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _load_script() -> ModuleType:
    return _load("unasync_script", SCRIPT)


@pytest.fixture
def unasync() -> ModuleType:
    """The generator script, loaded as a module."""
    return _load_script()


def test_generated_files_are_fresh() -> None:
    """`scripts/unasync.py --check` passes on the committed tree (CI runs it too)."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_regions_are_fresh() -> None:
    """`scripts/codegen.py --check` passes: every signature and method matches `OPTIONS` and `OPERATIONS`."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "codegen.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_hand_edit_inside_a_region_is_written_over() -> None:
    """A changed default inside a generated signature goes back to the declared one."""
    codegen = _load("codegen_script", ROOT / "scripts" / "codegen.py")
    text = (ROOT / "animalstore_client" / "_clients/client_async.py").read_text()
    edited = text.replace("max_retries: int = DEFAULT_MAX_RETRIES,", "max_retries: int = 3,", 1)
    assert edited != text
    assert codegen.regenerate(edited) == text


def test_generated_files_say_so_in_their_first_line(unasync: ModuleType) -> None:
    """Each generated file names its source and the command that regenerates it."""
    for source, target in unasync.FILES.items():
        first = target.read_text().splitlines()[0]
        assert first.startswith(f"# Generated from {unasync._name(source)} by scripts/unasync.py: do not edit")
        assert "python scripts/unasync.py" in first
    for twin in unasync.HTTPCORE2_FILES.values():
        head = " ".join(twin.read_text().splitlines()[:2])
        assert head.startswith("# Generated from _transports/pool/")
        assert "over httpcore2 for the httpx2 backend: do not edit" in head
        assert "python scripts/unasync.py" in head


def test_the_httpx2_pool_is_the_default_pool_over_httpcore2(unasync: ModuleType) -> None:
    """Each httpcore2 twin is its httpcore module with only the library's name changed: no line of the twin
    differs from its source but by the listed substitutions, and none still names httpcore (version 1)."""
    for name, twin in unasync.HTTPCORE2_FILES.items():
        text = twin.read_text().split("\n", 2)[2]  # after the header naming the source
        assert re.search(r"\bhttpcore\b", text) is None, twin
        # Every module of the pool it imports is its httpcore2 twin, none the default backend's, but the library-free
        # ones (wait, resolver).
        assert (
            re.search(r"animalstore_client\._transports\.pool\.(?!wait\b|resolver\b|_generated\.httpcore2\.)", text)
            is None
        ), twin
        source = name.read_text()
        if source.startswith("# Generated from "):
            source = source.split("\n", 1)[1]
        # Only the phrases listed in the script add lines: httpx2's import, a sentence about respx.
        assert len(text.splitlines()) - len(source.splitlines()) in (0, 1), twin


def _copy_tree(unasync: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the script at a copy of the package, so a test may make it stale."""
    package = tmp_path / "animalstore_client"
    shutil.copytree(unasync.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))

    def moved(pairs: dict[Path, Path]) -> dict[Path, Path]:
        return {
            package / s.relative_to(unasync.PACKAGE): package / t.relative_to(unasync.PACKAGE) for s, t in pairs.items()
        }

    monkeypatch.setattr(unasync, "FILES", moved(unasync.FILES))
    monkeypatch.setattr(unasync, "HTTPCORE2_FILES", moved(unasync.HTTPCORE2_FILES))
    monkeypatch.setattr(unasync, "PACKAGE", package)


def test_a_hand_edit_of_a_generated_file_fails_the_check(
    unasync: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Editing _client_sync.py by hand makes --check exit 1 with a diff naming the file."""
    _copy_tree(unasync, tmp_path, monkeypatch)
    generated = tmp_path / "animalstore_client" / "_clients/_generated/client_sync.py"
    generated.write_text(generated.read_text().replace("def list_pets(", "def list_pets_renamed(", 1))
    assert unasync.main(["--check"]) == 1
    out = capsys.readouterr()
    assert "animalstore_client/_clients/_generated/client_sync.py" in out.out
    assert "-    def list_pets_renamed(" in out.out
    assert "stale: animalstore_client/_clients/_generated/client_sync.py" in out.err


def test_an_edit_of_the_async_source_fails_the_check_until_regenerated(
    unasync: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change to _client_async.py is stale until the script runs; then the sync file has it."""
    _copy_tree(unasync, tmp_path, monkeypatch)
    source = tmp_path / "animalstore_client" / "_clients/client_async.py"
    source.write_text(source.read_text().replace("List animals (``GET /pets``)", "List the animals (``GET /pets``)"))
    assert unasync.main(["--check"]) == 1
    assert unasync.main([]) == 0
    assert unasync.main(["--check"]) == 0
    generated = (tmp_path / "animalstore_client" / "_clients/_generated/client_sync.py").read_text()
    assert generated.count("List the animals (``GET /pets``)") == 1


def _deprecation_messages(text: str) -> list[str]:
    return [
        ast.literal_eval(decorator.args[0])
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for decorator in node.decorator_list
        if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "deprecated"
    ]


def test_every_deprecation_literal_is_the_one_message() -> None:
    """The @deprecated literals of both clients and both raw views equal GET_PET_DEPRECATION."""
    package = ROOT / "animalstore_client"
    messages = [
        message
        for name in ("_clients/client_async.py", "_clients/_generated/client_sync.py")
        for message in _deprecation_messages((package / name).read_text())
    ]
    assert messages == [GET_PET_DEPRECATION] * 4


def test_a_new_deprecation_message_is_written_into_every_decorator(unasync: ModuleType) -> None:
    """Changing the constant changes each literal, in the source and in the generated file."""
    source = (unasync.PACKAGE / "_clients/client_async.py").read_text()
    message = "get_pet() is deprecated: a new sentence, long enough to need wrapping onto two lines of the decorator."
    rewritten = unasync.with_deprecation_literals(source, message)
    assert _deprecation_messages(rewritten) == [message, message]
    assert _deprecation_messages(unasync.unasync(rewritten, "_clients/client_async.py")) == [message, message]
    assert unasync.with_deprecation_literals(rewritten, message) == rewritten


def test_a_phrase_that_no_longer_matches_stops_the_generator(unasync: ModuleType) -> None:
    """If a by-nature docstring sentence is edited on the async side, the script says so instead of skipping it."""
    source = (unasync.PACKAGE / "_clients/client_async.py").read_text().replace("An asyncio client", "An async client")
    with pytest.raises(SystemExit, match="no longer occurs"):
        unasync.unasync(source, "_clients/client_async.py")


def test_the_generated_library_docs_fit_the_line_length_however_many_libraries_refuse() -> None:
    """The ``http_client`` types' and ``backend=`` names' docs are wrapped to the linter's line length, with every
    library refusing callers' clients and a longer name: a sixth library breaks no lint."""
    codegen = _load("codegen_script", ROOT / "scripts" / "codegen.py")
    declared = codegen._libraries()
    widened = tuple(
        attrs.evolve(
            library,
            name=f"{library.name}_with_a_longer_name",
            callers_clients_refused=True,
        )
        for library in declared.LIBRARIES
    )
    texts = [codegen._http_client_types(declared.LIBRARIES), codegen._http_client_types(widened)]
    original = declared.LIBRARIES
    try:
        declared.LIBRARIES = widened
        texts.append(codegen.libraries_region("backend names"))
    finally:
        declared.LIBRARIES = original
    for text in texts:
        assert "refused" in text or "Literal" in text
        long = [line for line in text.splitlines() if len(line) > codegen.LINE_LENGTH]
        assert not long, long
    # Counted in the text unwrapped: a longer name may wrap the phrase over two lines.
    assert " ".join(texts[1].split()).count("client is refused") == sum(len(library.clients) for library in widened)


@pytest.mark.parametrize(("name", "inside"), [("README.md", "`[aiohttp]`, "), ("pyproject.toml", '"aiohttp>=3.12.7"')])
def test_a_region_outside_the_package_is_written_over_and_cannot_be_dropped(name: str, inside: str) -> None:
    """README.md's extras sentence and pyproject.toml's extras are generated: a hand edit inside the region goes
    back to what the declarations say, and the file without the region's markers stops the script (a copy
    written by hand there would otherwise go unchecked)."""
    codegen = _load("codegen_script", ROOT / "scripts" / "codegen.py")
    path = ROOT / name
    text = path.read_text()
    assert inside in text
    edited = text.replace(inside, inside.replace("aiohttp", "aiohttp3"), 1)
    assert codegen.regenerate(edited) == text
    without = re.sub(r".*<libraries: .*\n|.*</libraries>.*\n", "", text)
    assert without != text
    codegen._held_regions(path, text)
    with pytest.raises(SystemExit, match=f"{name} lost its generated region"):
        codegen._held_regions(path, without)
