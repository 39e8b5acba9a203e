"""The package's imports point down, and its folders say where each module stands.

The layers are the folders: ``testing`` (the kit) over ``_clients`` over
``_transports`` over ``_core``; the package's ``__init__`` re-exports and
``_version`` is read by all. A new module is checked by the folder it is put
in: no list of names to keep. Read from the source (every import outside
``if TYPE_CHECKING:``, function-level ones included: an import inside a
function is the same arrow, only later).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from animalstore_client._core.libraries import LIBRARIES

PACKAGE = Path(__file__).resolve().parent.parent / "animalstore_client"
TOP = "animalstore_client"

LAYERS = ("_core", "_transports", "_clients", "testing")
"""From the bottom up: a module imports only from its own layer and those below it."""
# Every HTTP library a module may drive: the declared ones and the two the SDK's own pool is built on.
# httpx is also the core's request and response model, so every layer may import it.
HTTP_LIBRARIES = frozenset({library.name for library in LIBRARIES} | {"httpcore", "httpcore2"}) - {"httpx"}


def _modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> list[str]:
    """The modules of the package (or the top-level packages outside it) that ``node`` imports."""
    if node.level:
        base = module.split(".")
        if path.name != "__init__.py":
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, *([node.module] if node.module else [])])
    else:
        target = node.module or ""
    if not target.startswith(TOP):
        return [target]
    names = [f"{target}.{alias.name}" for alias in node.names]
    return [name for name in names if name in MODULES] or [target]


def _imports(module: str) -> set[str]:
    """What ``module`` imports at run time: dotted names in the package, top-level names outside it."""
    path = MODULES[module]
    found: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                for child in node.orelse:
                    self.visit(child)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            found.update(alias.name if alias.name.startswith(TOP) else alias.name.split(".")[0] for alias in node.names)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            for name in _resolve(module, path, node):
                found.add(name if name.startswith(TOP) else name.split(".")[0])

    Visitor().visit(ast.parse(path.read_text()))
    return found


def _layer(module: str) -> int | None:
    """The module's layer (an index into LAYERS); ``None`` for the package root and ``_version``."""
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def _own_imports(module: str) -> set[str]:
    return {name for name in _imports(module) if name.startswith(TOP)}


def test_every_module_stands_in_a_layer() -> None:
    """Each private module lies in a layer's folder: only the root, ``_version`` and the folders lie outside."""
    outside = {name for name in MODULES if _layer(name) is None}
    assert outside == {TOP, f"{TOP}._version"}


@pytest.mark.parametrize("module", [name for name in MODULES if _layer(name) is not None])
def test_imports_point_down(module: str) -> None:
    """A module imports only from its own layer and those below; only the testing kit imports the package root."""
    layer = _layer(module)
    assert layer is not None
    upward = {
        name
        for name in _own_imports(module)
        if (name == TOP and LAYERS[layer] != "testing") or ((found := _layer(name)) is not None and found > layer)
    }
    assert upward == set()


def _library_of(module: str) -> str | None:
    """The HTTP library a transport module drives, by its name or folder; ``None`` for the shared parts."""
    if module.startswith(f"{TOP}._transports.pool._generated.httpcore2"):
        return "httpcore2"
    if module.startswith(f"{TOP}._transports.pool"):
        return "httpcore"
    leaf = module.rsplit(".", 1)[-1]
    library = re.sub(r"_(async|sync)$", "", leaf)
    return library if library in HTTP_LIBRARIES | {"httpx"} else None


def _its_stack(library: str | None) -> set[str]:
    """The HTTP libraries a module of ``library`` may import: itself, and the declared ones its stack is built on
    (a library built on another may import it); the SDK's pool modules are httpcore's, or httpx2's with httpcore2."""
    if library is None:
        return set()
    declared = {"httpcore": "httpx", "httpcore2": "httpx2"}.get(library, library)
    stack = next((set(item.stack) for item in LIBRARIES if item.name == declared), set())
    return {library} | (stack & HTTP_LIBRARIES) | ({declared} - {"httpx"})


SHARED_TRANSPORT_PARTS = {
    f"{TOP}._transports",
    f"{TOP}._transports.shared",
    f"{TOP}._transports.proxies",
    f"{TOP}._transports.sockets",
    f"{TOP}._transports.lookups",
    f"{TOP}._transports.seam_async",
    f"{TOP}._transports._generated.seam_sync",
    f"{TOP}._transports.stream_async",
    f"{TOP}._transports._generated.stream_sync",
}
"""What every library's module may use below the clients: the seam, the shared parts (a library's response stream
among them), the proxies' pools, the
sockets a forked child or an ended event loop closes (`_transports.sockets`), and the process's bounded name
lookups (`_transports.lookups`)."""


@pytest.mark.parametrize("module", [name for name in MODULES if _layer(name) == LAYERS.index("_transports")])
def test_a_library_module_imports_its_own_library_the_seam_and_the_core(module: str) -> None:
    """A library's module imports that library alone (httpx being the core's model), the shared parts and the core;
    a library declared to be built on another (its ``stack`` naming it) may import that one's modules too.

    The SDK's pool and network backends (``_transports/pool``) are one library's (httpcore's, or httpcore2's
    for their generated twins), and may import each other and the library-free parts (`wait`, `resolver`).
    """
    library = _library_of(module)
    libraries = _imports(module) & HTTP_LIBRARIES
    assert libraries <= _its_stack(library)
    allowed_own = SHARED_TRANSPORT_PARTS | {name for name in MODULES if _layer(name) == LAYERS.index("_core")}
    if library in {"httpcore", "httpcore2"}:
        pool = f"{TOP}._transports.pool._generated.httpcore2" if library == "httpcore2" else f"{TOP}._transports.pool"
        allowed_own |= {name for name in MODULES if name.startswith(pool)}
        allowed_own |= {f"{TOP}._transports.pool", f"{TOP}._transports.pool.wait", f"{TOP}._transports.pool.resolver"}
    elif library:
        # Its own modules, and the SDK's modules of a declared library its stack is built on.
        built_on = _its_stack(library) & {item.name for item in LIBRARIES}
        allowed_own |= {name for name in MODULES if _library_of(name) in built_on}
    assert _own_imports(module) - allowed_own == set()


@pytest.mark.parametrize("module", [name for name in MODULES if _layer(name) == LAYERS.index("_core")])
def test_the_core_drives_no_http_library(module: str) -> None:
    """The core uses httpx's types as its model and imports no other HTTP library."""
    assert _imports(module) & HTTP_LIBRARIES == set()


def test_every_generated_file_lives_in_a_generated_folder_and_says_so() -> None:
    """Generated files sit in folders named ``_generated``, each opening with the line that says so, and only there."""
    for name, path in MODULES.items():
        generated = path.read_text().startswith("# Generated ")
        assert generated == ("_generated" in path.relative_to(PACKAGE).parts), name


def test_no_circle_among_the_modules() -> None:
    """Run-time imports, function-level ones included, form no circle."""
    graph = {module: _own_imports(module) & set(MODULES) for module in MODULES}
    # A package's __init__ is imported on the way to its modules, and each layer's is a docstring alone.
    circles: list[set[str]] = []
    for start in graph:
        # Modules that reach start, and that start reaches: the circle through it.
        reach = _reachable(graph, start)
        if start in reach:
            circle = {module for module in reach if start in _reachable(graph, module)} | {start}
            if circle not in circles:
                circles.append(circle)
    assert circles == []


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    pending = [start]
    while pending:
        for nxt in graph[pending.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                pending.append(nxt)
    return seen
