"""The package's imports point down: the transports never reach up to the clients, and no modules import in a circle.

Read from the source (every ``from .x import`` outside ``if TYPE_CHECKING:``,
function-level ones included), so an import inside a function counts as one
at the top: it is the same arrow, only later.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "animalstore_client"

CLIENT_LAYER = {"_base_client", "_client_async", "_client_sync", "_backends"}
"""What configures and drives a call: nothing under the transport seam may import these."""
BELOW_THE_CLIENTS = [
    "_transport_async",
    "_transport_sync",
    "_transport_aiohttp",
    "_transport_urllib3",
    "_transport_base",
    "_transport_pyreqwest",
    "_transport_pyreqwest_async",
    "_transport_pyreqwest_sync",
    "_httpcore_async",
    "_httpcore_sync",
    "_deadline",
    "_deadline_async",
    "_deadline_sync",
    "_proxies",
    "_tls",
    "_pool_async",
    "_pool_sync",
    "_pool_wait",
    "_asyncio_backend",
    "_transport_httpx2_async",
    "_transport_httpx2_sync",
    "_httpcore2_async",
    "_httpcore2_sync",
    "_deadline2_async",
    "_deadline2_sync",
    "_pool2_async",
    "_pool2_sync",
    "_asyncio_backend2",
    "_httpx_private",
    "_body",
    "_defaults",
    "_secrets",
    "_show",
]


def _imports(module: str) -> set[str]:
    """The package modules ``module`` imports at run time (type-only imports left out)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    found: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                return
            self.generic_visit(node)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.level == 1:
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(alias.name for alias in node.names)

    Visitor().visit(tree)
    return found


def _modules() -> list[str]:
    return sorted(path.stem for path in PACKAGE.glob("_*.py"))


def test_nothing_under_the_seam_imports_the_client_layer() -> None:
    """The transports, the pools and what they share import nothing from the clients, not even in a function."""
    assert set(BELOW_THE_CLIENTS) <= set(_modules())
    upward = {module: sorted(_imports(module) & CLIENT_LAYER) for module in BELOW_THE_CLIENTS}
    assert {module: found for module, found in upward.items() if found} == {}


def test_no_circle_among_the_modules() -> None:
    """Run-time imports, function-level ones included, form no circle."""
    graph = {module: _imports(module) & set(_modules()) for module in _modules()}
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
