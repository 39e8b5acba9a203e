"""Every Python example in README.md and docs/*.md runs, the way a reader following the page would run it.

A page's ``python`` blocks run in order in one namespace, with
``ANIMALSTORE_API_KEY`` and ``ANIMALSTORE_BASE_URL`` pointing at a fake store
served on 127.0.0.1 (and no other network), so a page must define or import
what its later blocks use. A block that defines ``test_`` functions is also
run under pytest, as a reader would run it, with the page's earlier blocks
above it. A block whose fence says ``python notest`` is not run; with every
other block of its page it is type-checked by mypy instead. ``--8<--``
lines are replaced by the file section they include, as the built site shows
them. The only warning an example may raise is ``get_pet``'s deprecation.

The examples in public docstrings, which the API reference shows, run too,
with the names they take for granted (the package's, a ``client``, a ``log``).

docs/howto.md promises more: each of its blocks runs alone, as a reader copies
it, in a process of its own under ``python -X dev -W error`` with no
``ANIMALSTORE_*`` variable (offline, against the fake store it makes), unless
its first line says what it needs (``# Needs: ...``).
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import gc
import inspect
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

import animalstore_client
from animalstore_client import AnimalStoreClient
from animalstore_client.testing import FakeAnimalStore

from .conftest import USERS_PYTEST, mypy_cache, sample

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HOWTO = ROOT / "docs" / "howto.md"
KEY = "docs-example-key"

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_SNIPPET = re.compile(r'^--8<-- "(?P<path>[^":]+)(?::(?P<section>[\w-]+))?"$')


_PARSING = threading.Lock()


@dataclass
class Block:
    """One fenced ``python`` block of a page."""

    page: str
    line: int
    source: str
    run: bool

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    def defines_tests(self) -> bool:
        # Parsed under a lock: on CPython 3.11 two threads in ast.parse at once can raise "SystemError: AST
        # constructor recursion depth mismatch" (python/cpython#106905); `run_each_alone` runs blocks in threads.
        with _PARSING:
            tree = ast.parse(self.source)
        return any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
            for node in tree.body
        )


def _include(line: str) -> str:
    """The text a ``--8<--`` line stands for (the whole file, or one ``[start:x]``..``[end:x]`` section)."""
    match = _SNIPPET.match(line.strip())
    if match is None:
        return line
    text = (ROOT / match["path"]).read_text(encoding="utf-8")
    section = match["section"]
    if section is None:
        return text
    start, end = f"# --8<-- [start:{section}]\n", f"# --8<-- [end:{section}]"
    assert start in text, f"{match['path']} has no section {section!r}"
    assert end in text, f"{match['path']} does not end section {section!r}"
    return text.split(start, 1)[1].split(end, 1)[0]


def blocks(page: Path) -> list[Block]:
    """The page's ``python`` blocks, in order."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        words = opening["info"].split()
        indent, fence = len(opening["indent"]), opening["fence"]
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(fence):
            body.append(lines[index][indent:])
            index += 1
        index += 1  # the closing fence
        if words and words[0] in ("python", "py"):
            source = "\n".join(_include(line) for line in body) + "\n"
            name = page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else page.name
            found.append(Block(name, index - len(body) - 1, source, "notest" not in words))
    return found


@pytest.fixture
def fake_service(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """A fake store on 127.0.0.1, named by the variables a reader sets; the working directory is scratch."""
    store = FakeAnimalStore(api_keys=[KEY])
    with store.serve() as url:
        monkeypatch.setenv("ANIMALSTORE_API_KEY", KEY)
        monkeypatch.setenv("ANIMALSTORE_BASE_URL", url)
        monkeypatch.delenv("ANIMALSTORE_ENVIRONMENT", raising=False)
        monkeypatch.chdir(tmp_path)
        yield url


def _pytest(module: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*USERS_PYTEST, module.name],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=module.parent,
    )


def _allowed(warning: warnings.WarningMessage) -> bool:
    return issubclass(warning.category, DeprecationWarning) and "get_pet" in str(warning.message)


def run_page(page: Path, scratch: Path) -> None:
    """Run the page's blocks as a reader would; fail naming the block that failed."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    ran: list[Block] = []
    for block in blocks(page):
        if not block.run:
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exec(compile(block.source, block.name, "exec"), namespace)
        unexpected = [f"{w.category.__name__}: {w.message}" for w in caught if not _allowed(w)]
        assert not unexpected, f"{block.name} warned: {unexpected}"
        ran.append(block)
        if block.defines_tests():
            module = scratch / f"test_{len(ran)}_{page.stem.lower().replace('-', '_')}.py"
            module.write_text("".join(b.source for b in ran), encoding="utf-8")
            result = _pytest(module)
            assert result.returncode == 0, f"{block.name} under pytest:\n{result.stdout}\n{result.stderr}"
    # The end of the reader's script: what it left open goes, as at interpreter exit (which does
    # not show ResourceWarning), rather than in the middle of the next page.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        namespace.clear()
        gc.collect()


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_the_pages_examples_run_in_order(page: Path, fake_service: str, tmp_path: Path) -> None:
    """Each block runs after the ones above it, in their namespace, against the fake store."""
    run_page(page, tmp_path)


def test_every_page_with_python_has_runnable_examples() -> None:
    """The collector finds the blocks: a change of fence style cannot silently skip a page."""
    found = {page.name: blocks(page) for page in PAGES}
    assert sum(len(b) for b in found.values()) >= 25
    assert any(block.run for block in found["README.md"])
    assert any(block.defines_tests() for block in found["testing.md"])


def unexplained_names(source: str) -> set[str]:
    """Names a block uses that it neither binds (imports, assigns, defines) nor names in one of its comments.

    Scopes are not told apart: a name bound anywhere in the block counts as bound, which is enough to
    catch a block that uses an import only an earlier block of its page made.
    """
    tree = ast.parse(source)
    bound: set[str] = set()
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
    comments = " ".join(line.split("#", 1)[1] for line in source.splitlines() if "#" in line)
    said = set(re.findall(r"\w+", comments))
    return used - bound - said - set(dir(builtins)) - {"__name__", "__file__"}


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_block_shows_where_its_names_come_from(page: Path) -> None:
    """A reader who copies one block sees where each name comes from: imported, made there, or named in a comment."""
    missing = {block.name: sorted(names) for block in blocks(page) if (names := unexplained_names(block.source))}
    assert missing == {}


def test_a_block_using_an_earlier_blocks_import_is_caught() -> None:
    """The check above fails on a name used but neither imported, made, nor said to come from elsewhere."""
    assert unexplained_names("info = attempt_info(request)\n") == {"attempt_info", "request"}
    assert (
        unexplained_names(
            "# request: the one the middleware was given\nfrom m import attempt_info\ninfo = attempt_info(request)\n"
        )
        == set()
    )


def test_every_pages_examples_type_check(tmp_path: Path) -> None:
    """mypy reads each page as one module (notest blocks included), as a reader's checker would."""
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent))
    if mypy is None:
        pytest.skip("mypy is not installed here (pip install -r .ci/requirements.txt); CI runs this")
    modules = []
    for page in PAGES:
        found = blocks(page)
        if found:
            module = tmp_path / ("page_" + re.sub(r"\W", "_", page.stem.lower()) + ".py")
            module.write_text("".join(b.source for b in found), encoding="utf-8")
            modules.append(module.name)
    result = subprocess.run(
        [mypy, "--check-untyped-defs", "--allow-redefinition", *mypy_cache("docs-pages"), *modules],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("page", "failure"),
    [
        ("```python\nx = 1\n```\n\n```python\nprint(y)\n```\n", NameError),
        ("```python\nimport warnings\nwarnings.warn('odd')\n```\n", AssertionError),
        ("```python\ndef test_it():\n    assert 1 == 2\n```\n", AssertionError),
    ],
    ids=["undefined-name", "warning", "failing-test-block"],
)
def test_a_failing_example_fails_its_page(
    page: str, failure: type[Exception], fake_service: str, tmp_path: Path
) -> None:
    """The collector is not a formality: an example that raises, warns or fails its test fails the page."""
    path = tmp_path / "page.md"
    path.write_text(page + "\n```python notest\nnever_run()\n```\n")
    assert [b.run for b in blocks(path)][-1] is False
    with pytest.raises(failure):
        run_page(path, tmp_path)


def test_the_examples_reach_the_fake_store(fake_service: str) -> None:
    """A client made as the docs make it talks to the fake store: the variables are set."""
    with AnimalStoreClient() as client:
        assert client.base_url == fake_service
        assert client.list_pets() == []


def _docstring_blocks() -> dict[str, str]:
    """The Python blocks of each public name's docstring (the reference shows them), by name."""
    import animalstore_client.testing

    found: dict[str, str] = {}
    objects: list[tuple[str, object]] = []
    for module in (animalstore_client, animalstore_client.testing):
        objects.append((module.__name__, module))
        for name in module.__all__:
            value = getattr(module, name)
            objects.append((f"{module.__name__}.{name}", value))
            if isinstance(value, type):
                objects.extend((f"{module.__name__}.{name}.{k}", v) for k, v in vars(value).items() if k[0] != "_")
    for where, value in objects:
        doc = getattr(value, "__doc__", None)
        if not isinstance(doc, str) or value.__class__.__doc__ == doc:
            continue
        text = textwrap.dedent(inspect.cleandoc(doc))
        # A docstring's blocks run in order, together, as a page's do.
        source = "".join(re.findall(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL))
        if source and source not in found.values():
            found[where] = source
    return found


DOCSTRING_BLOCKS = _docstring_blocks()


@pytest.mark.parametrize("source", DOCSTRING_BLOCKS.values(), ids=DOCSTRING_BLOCKS.keys())
def test_docstring_examples_run(source: str, fake_service: str) -> None:
    """An example in a docstring runs with what it takes for granted: the package's names, a
    ``client`` (sync, or async where the example awaits) and a ``log``; top-level await allowed."""

    awaits = "await " in source or "async with" in source
    namespace: dict[str, object] = {name: getattr(animalstore_client, name) for name in animalstore_client.__all__}
    namespace["log"] = logging.getLogger("example")
    code = compile(source, "docstring", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)

    async def run_async() -> None:
        async with animalstore_client.AsyncAnimalStoreClient() as client:
            namespace["client"] = client
            result = eval(code, namespace)
            if inspect.iscoroutine(result):
                await result

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if awaits:
            asyncio.run(run_async())
        else:
            with AnimalStoreClient() as client:
                namespace["client"] = client
                exec(code, namespace)
    unexpected = [f"{w.category.__name__}: {w.message}" for w in caught if not _allowed(w)]
    assert not unexpected, unexpected


def test_the_docstring_examples_are_found() -> None:
    """The collector sees the docstrings' examples (a change of style cannot skip them all)."""
    assert len(DOCSTRING_BLOCKS) >= 8
    assert any(name.endswith("FakeAnimalStore") for name in DOCSTRING_BLOCKS)
    assert any("with_raw_response" in block for block in DOCSTRING_BLOCKS.values())


NEEDS = "# Needs: "
"""How a howto block's first line says what it needs beyond the kit (a key, a reachable service)."""

NOWHERE = "http://127.0.0.1:9/v1"
"""The base URL an offline block's process is given: a call that forgot its fake store is refused on the spot
(port 9, discard, has no listener here) rather than looking up the built-in host on the network."""


def needs_something(block: Block) -> bool:
    return block.source.startswith(NEEDS)


def run_alone(block: Block, scratch: Path) -> str | None:
    """``block`` run as a reader runs a copy of it: its own process, ``python -X dev -W error``, in an empty
    directory, with no ``ANIMALSTORE_*`` variable (a block of ``test_`` functions under pytest, with the examples'
    pytest.ini). Why it failed, or None: a non-zero exit, or a ResourceWarning, which a finalizer under ``-W error``
    only prints ("Exception ignored in ...") while the process still exits 0."""
    scratch.mkdir(parents=True)
    script = scratch / "test_block.py"  # a name pytest collects, for a block of test_ functions
    script.write_text(block.source, encoding="utf-8")
    python = [sys.executable, "-X", "dev", "-W", "error"]
    if block.defines_tests():
        shutil.copy(ROOT / "examples" / "pytest.ini", scratch / "pytest.ini")
        command = [*python, *USERS_PYTEST[1:], script.name]
    else:
        command = [*python, script.name]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIMALSTORE_")}
    env["ANIMALSTORE_BASE_URL"] = NOWHERE
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False, cwd=scratch)
    except subprocess.TimeoutExpired:
        return f"{block.name}: still running after 120 s"
    output = result.stdout + result.stderr
    if result.returncode != 0:
        return f"{block.name} exited {result.returncode}:\n{output}"
    if "ResourceWarning" in output or "Exception ignored" in output:
        return f"{block.name} left something open:\n{output}"
    return None


def run_each_alone(found: Sequence[Block], scratch: Path) -> list[str]:
    """Every block that needs nothing run alone (`run_alone`), three processes at a time; the failures."""
    offline = [block for block in found if not needs_something(block)]
    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = pool.map(lambda item: run_alone(item[1], scratch / str(item[0])), enumerate(offline))
        return [failure for failure in outcomes if failure is not None]


def test_every_howto_block_runs_alone_offline_and_closes_what_it_opens(tmp_path: Path) -> None:
    """docs/howto.md's promise: each block, copied alone, runs offline under ``-X dev -W error`` (exit 0, no
    ResourceWarning), unless its first line says what it needs; such a block compiles (and is type-checked with
    its page by `test_every_pages_examples_type_check`). The everyday tier runs an even share of each kind (`sample`):
    scripts, and blocks of tests run under pytest."""
    found = blocks(HOWTO)
    assert len(found) >= 14
    assert all(block.run for block in found), "a howto block says what it needs on its first line, not by notest"
    for block in filter(needs_something, found):
        compile(block.source, block.name, "exec")
    # Each block is a process of its own (1 to 3 CPU-seconds): the everyday tier runs a share of both kinds.
    scripts = sample([block for block in found if not block.defines_tests()], least=2)
    assert run_each_alone([*scripts, *sample(list(filter(Block.defines_tests, found)))], tmp_path) == []


@pytest.mark.parametrize(
    ("source", "failure"),
    [
        ("print(rows)\n", "exited 1"),  # a name from another block
        ("from animalstore_client import AnimalStoreClient\nAnimalStoreClient().list_pets()\n", "exited 1"),
        ("import socket\nsocket.socket()\n", "left something open"),  # exits 0 all the same
        ("def test_it() -> None:\n    assert 1 == 2\n", "exited 1"),
        ("# a file of no tests\ndef check() -> None:\n    pass\n", None),
    ],
    ids=["another-blocks-name", "needs-a-key-unsaid", "unclosed-socket", "failing-test-block", "fine"],
)
def test_a_howto_block_that_needs_more_or_leaks_fails(source: str, failure: str | None, tmp_path: Path) -> None:
    """The check is not a formality: a block using another's names, needing a key it does not name, leaving a
    socket open or failing its test fails it; a block that says what it needs is not run at all."""
    block = Block("howto.md", 1, source, run=True)
    outcome = run_alone(block, tmp_path / "alone")
    assert (outcome is None) if failure is None else (outcome is not None and failure in outcome), outcome
    said = Block("howto.md", 1, NEEDS + "ANIMALSTORE_API_KEY and a reachable service\n" + source, run=True)
    assert run_each_alone([said], tmp_path / "said") == []
