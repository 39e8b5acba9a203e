"""Write the code that follows from the package's declarations: the options' signatures, the operations' methods.

    python scripts/codegen.py          # rewrite every generated region, then run scripts/unasync.py
    python scripts/codegen.py --check  # exit 1, with a diff, if a region is stale (CI runs this)

Outside the package, it writes what restates ``_core.libraries.LIBRARIES``:
pyproject.toml's extras of the libraries (``# <libraries: extras>``) and the
pytest markers of the libraries that run once, noxfile.py's list of them,
README.md's sentence naming the extras (between ``<!-- <libraries: ...> -->``
comments), and the whole of docs/_backends-table.md.

Each client option is declared once, in ``_clients.options.OPTIONS``, and each
operation once, in ``_core.operations.OPERATIONS``. The public signatures stay
explicit and typed in the source (what readers, type checkers and the API
reference see); this script writes them into the regions marked
``# <options: ...>`` / ``# <operations: ...>`` ... ``# </...>`` of the async
client, `with_options` and the testing kit, and the ``Args:`` section of the
async client's docstring. ``scripts/unasync.py`` then makes the sync client
from the async one, as before.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import importlib.util
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "animalstore_client"
_RUFF_LINE_LENGTH = re.search(r"^line-length = (\d+)$", (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
assert _RUFF_LINE_LENGTH is not None, "pyproject.toml's [tool.ruff] line-length"
LINE_LENGTH = int(_RUFF_LINE_LENGTH[1])
"""The linter's line length (pyproject.toml's ``[tool.ruff]``), which a generated docstring is wrapped to."""

_REGION = re.compile(
    r"^(?P<indent>[ \t]*)# <(?P<kind>options|operations|libraries): (?P<name>[\w ]+)>.*\n"
    r"(?P<body>(?:.*\n)*?)(?P=indent)# </(?P=kind)>\n",
    re.MULTILINE,
)

_MARKDOWN_REGION = re.compile(
    r"^<!-- <(?P<kind>libraries): (?P<name>[\w ]+)>.*-->\n(?P<body>(?:.*\n)*?)<!-- </(?P=kind)> -->\n", re.MULTILINE
)
"""A region of a Markdown page, between HTML comments (which no renderer shows)."""

OUTSIDE_PACKAGE: dict[Path, tuple[str, ...]] = {
    ROOT / "pyproject.toml": ("extras", "markers"),
    ROOT / "README.md": ("extras sentence",),
    ROOT / "noxfile.py": ("run once",),
}
"""The files outside the package with generated regions, and the regions each must hold: a region deleted with its
markers would otherwise leave a hand-written copy that ``--check`` never sees."""


def _unasync_script() -> Any:
    """scripts/unasync.py, loaded as a module: its substitutions and its deprecation literals are reused here."""
    spec = importlib.util.spec_from_file_location("unasync_script", ROOT / "scripts" / "unasync.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _unasync_words(text: str) -> str:
    """``text`` in the sync spelling, by the substitutions of scripts/unasync.py."""
    for pattern, replacement in _unasync_script().SUBSTITUTIONS:
        text = re.sub(pattern, replacement, text)
    return text


@dataclass(frozen=True)
class OptionText:
    """What this script needs of an `_clients.options.Option`: its literal fields."""

    name: str
    annotation: str
    default: str
    doc: str
    changes: str | None
    kit: bool


def _literal(node: ast.expr, constants: dict[str, object]) -> object:
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return ast.literal_eval(node)


def _assignments(tree: ast.Module) -> dict[str, ast.expr]:
    """The module-level ``NAME = value`` (or ``NAME: type = value``) of a parsed module."""
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = node.value
    return found


def _options() -> list[OptionText]:
    """`_clients.options.OPTIONS`, read from its source: the package need not import (its signatures may be stale)."""
    assignments = _assignments(ast.parse((PACKAGE / "_clients" / "options.py").read_text()))
    constants: dict[str, object] = {}
    for name, value in assignments.items():
        with contextlib.suppress(ValueError):
            constants[name] = ast.literal_eval(value)
    table = assignments.get("OPTIONS")
    if not isinstance(table, ast.Tuple):
        raise SystemExit("scripts/codegen.py: OPTIONS (a tuple) not found in animalstore_client/_clients/options.py")
    found: list[OptionText] = []
    for call in table.elts:
        assert isinstance(call, ast.Call)
        values: dict[str, Any] = {"changes": None, "kit": True}
        values.update(
            zip(("name", "annotation", "default", "doc"), (_literal(a, constants) for a in call.args), strict=False)
        )
        values.update({k.arg: _literal(k.value, constants) for k in call.keywords if k.arg in ("changes", "kit")})
        found.append(OptionText(**values))
    return found


def _parameters(lines: Iterable[str], indent: str) -> str:
    return "".join(f"{indent}{line}\n" for line in lines)


def option_parameters(which: str) -> list[str]:  # noqa: PLR0911  # a return per kind of region
    """The parameter lines of one signature that takes the options."""
    options = _options()
    if which == "constructor":
        first, *rest = options
        return [
            f"{first.name}: {first.annotation} = {first.default},",
            "*,",
            *(f"{o.name}: {o.annotation} = {o.default}," for o in rest),
        ]
    if which == "with_options":
        return [f"{o.name}: {o.changes} = NOT_GIVEN," for o in options if o.changes is not None]
    if which in ("kit", "kit sync"):
        lines = [f"{o.name}: {o.annotation} = {o.default}," for o in options if o.kit]
        return [_unasync_words(line) for line in lines] if which == "kit sync" else lines
    # What a signature's body passes on, by name: a reader (or a tool) follows each option from the parameter
    # to `Arguments`' field of the same name, and from there to where `Settings` checks it.
    if which == "arguments":
        return [f"{o.name}: object = NOT_GIVEN" for o in options]
    if which == "given":
        return ["given = Arguments(", *(f"    {o.name}={o.name}," for o in options), ")"]
    if which == "given changes":
        return ["given = Arguments(", *(f"    {o.name}={o.name}," for o in options if o.changes is not None), ")"]
    if which == "kit passed":  # the kit's factories pass the options on to the public constructor
        passed = [o for o in options if o.kit and o.name not in ("api_key", "backend")]
        return ["options: dict[str, Any] = {", *(f'    "{o.name}": {o.name},' for o in passed), "}"]
    raise SystemExit(f"scripts/codegen.py: no options region named {which!r}")


def option_docs() -> list[str]:
    """The ``Args:`` entries of the client's docstring, one line each (continuations indented)."""
    lines: list[str] = []
    for option in _options():
        first, *more = option.doc.split("\n")
        lines.append(f"{option.name}: {first}")
        lines.extend(f"    {line}" for line in more)
    return lines


@dataclass(frozen=True)
class OperationText:
    """What this script needs of an `_core.operations.Operation`: its name, its functions' source, its deprecation."""

    name: str
    build: ast.FunctionDef
    parse: ast.FunctionDef
    deprecated: str | None
    """The name of the message's constant in ``_core.deprecation``."""


def _operations() -> list[OperationText]:
    """`_core.operations.OPERATIONS`, read from its source (see `_clients.options`)."""
    tree = ast.parse((PACKAGE / "_core" / "operations.py").read_text())
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    table = _assignments(tree).get("OPERATIONS")
    if not isinstance(table, ast.Tuple):
        raise SystemExit("scripts/codegen.py: OPERATIONS (a tuple) not found in animalstore_client/_core/operations.py")
    found: list[OperationText] = []
    for call in table.elts:
        assert isinstance(call, ast.Call)
        name, build, parse = call.args[0], call.args[3], call.args[4]
        assert isinstance(name, ast.Constant)
        assert isinstance(build, ast.Name)
        assert isinstance(parse, ast.Name)
        deprecated = next((k.value for k in call.keywords if k.arg == "deprecated"), None)
        assert deprecated is None or isinstance(deprecated, ast.Name)
        found.append(
            OperationText(
                str(name.value), functions[build.id], functions[parse.id], deprecated.id if deprecated else None
            )
        )
    return found


def _arguments(build: ast.FunctionDef) -> tuple[list[str], list[str]]:
    """The method's parameter lines and the build call's argument lines: the build function's, ``config`` aside."""
    args = build.args
    positional = [*args.posonlyargs, *args.args][1:]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parameters = ["self,"]
    passed = ["self._config,"]
    for arg, default in [*zip(positional, defaults, strict=True), *zip(args.kwonlyargs, args.kw_defaults, strict=True)]:
        if args.kwonlyargs and arg is args.kwonlyargs[0]:
            parameters.append("*,")
        assert arg.annotation is not None, f"{build.name}: parameter {arg.arg} has no annotation"
        text = f"{arg.arg}: {ast.unparse(arg.annotation)}"
        parameters.append(f"{text} = {ast.unparse(default)}," if default is not None else f"{text},")
        passed.append(f"{arg.arg}={arg.arg}," if arg in args.kwonlyargs else f"{arg.arg},")
    return parameters, passed


def _docstring(text: str) -> list[str]:
    lines = text.splitlines()
    if len(lines) == 1:
        return [f'"""{text}"""']
    return [f'"""{lines[0]}', *lines[1:], '"""']


def _method(operation: OperationText, raw: bool) -> list[str]:
    parameters, passed = _arguments(operation.build)
    returns = operation.parse.returns
    assert returns is not None, f"{operation.parse.name} has no return annotation"
    result = ast.unparse(returns)
    if raw:
        result = f"APIResponse[{result}]"
        note = " (deprecated likewise)" if operation.deprecated else ""
        doc = [f'"""`AsyncAnimalStoreClient.{operation.name}`, with the raw response{note}."""']
        send = "self._send_raw"
    else:
        docstring = ast.get_docstring(operation.build)
        assert docstring, f"{operation.build.name} has no docstring: it is the method's"
        doc = _docstring(docstring)
        send = "self._call"
    lines: list[str] = []
    if operation.deprecated:
        lines += [
            "@deprecated(",
            f"    # {operation.deprecated}, copied in by scripts/codegen.py: checkers read only a literal.",
            '    "",',
            "    category=None,",
            ")",
            f"@warns_deprecated({operation.deprecated})",
        ]
    lines += [f"async def {operation.name}(", *(f"    {line}" for line in parameters), f") -> {result}:"]
    lines += [f"    {line}" if line else "" for line in doc]
    lines += [f"    request = {operation.build.name}(", *(f"        {line}" for line in passed), "    )"]
    lines.append(f'    return await {send}("{operation.name}", request, {operation.parse.name})')
    if operation.deprecated:
        # Type checkers read the message only from a literal: this operation's own, written in.
        text = _unasync_script().with_deprecation_literals("\n".join(lines) + "\n", _constant(operation.deprecated))
        lines = text.rstrip("\n").split("\n")
    return lines


def _constant(name: str) -> str:
    """The text of the string constant ``name`` in ``_core/deprecation.py``, read from its source."""
    value = _assignments(ast.parse((PACKAGE / "_core" / "deprecation.py").read_text())).get(name)
    text = ast.literal_eval(value) if value is not None else None
    if not isinstance(text, str):
        raise SystemExit(
            f"scripts/codegen.py: {name} is not a string constant in animalstore_client/_core/deprecation.py"
        )
    return text


def _import(module: str, names: list[str]) -> list[str]:
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= 120:
        return [line]
    return [f"from {module} import (", *(f"    {name}," for name in names), ")"]


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's isort order: CONSTANTS, then Classes, then functions.
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def operations_region(which: str) -> str:
    """The text of one operations region: the client's methods, the raw view's, or the imports they need."""
    operations = _operations()
    if which in ("client", "raw"):
        methods = ["\n".join(_method(operation, raw=which == "raw")) for operation in operations]
        return "\n\n".join(methods) + "\n\n"  # ruff format's blank line before the closing comment
    if which != "imports":
        raise SystemExit(f"scripts/codegen.py: no operations region named {which!r}")
    models_tree = ast.parse((PACKAGE / "_core" / "models.py").read_text())
    models = {node.name for node in models_tree.body if isinstance(node, ast.ClassDef)} | set(_assignments(models_tree))
    used: set[str] = set()
    functions: list[str] = []
    for operation in operations:
        functions += [operation.build.name, operation.parse.name]
        annotations = [arg.annotation for arg in operation.build.args.kwonlyargs + operation.build.args.args]
        for annotation in [*annotations, operation.parse.returns]:
            if annotation is not None:
                used |= {node.id for node in ast.walk(annotation) if isinstance(node, ast.Name)}
    deprecations = sorted({operation.deprecated for operation in operations if operation.deprecated})
    lines: list[str] = []
    if deprecations:
        lines += ["from typing_extensions import deprecated", ""]
        lines += _import(
            "animalstore_client._core.deprecation", sorted([*deprecations, "warns_deprecated"], key=_isort_key)
        )
    lines += _import("animalstore_client._core.models", sorted(used & models, key=_isort_key))
    lines += _import("animalstore_client._core.operations", sorted(functions, key=_isort_key))
    return "\n".join(lines) + "\n\n"


def _region(kind: str, name: str, indent: str) -> str:
    if kind == "libraries":
        return textwrap.indent(libraries_region(name), indent, lambda line: bool(line.strip()))
    if kind == "options":
        return _parameters(option_parameters(name), indent)
    return textwrap.indent(operations_region(name), indent, lambda line: bool(line.strip()))


def regenerate(text: str) -> str:
    """``text`` with every generated region, and the ``Args:`` of a docstring above an options region, rewritten."""

    def replace(match: re.Match[str]) -> str:
        indent, kind, name = match["indent"], match["kind"], match["name"]
        opening = match.group(0).splitlines(keepends=True)[0]
        return opening + _region(kind, name, indent) + f"{indent}# </{kind}>\n"

    def replace_markdown(match: re.Match[str]) -> str:
        opening = match.group(0).splitlines(keepends=True)[0]
        return opening + libraries_region(match["name"]) + f"<!-- </{match['kind']}> -->\n"

    text = _REGION.sub(replace, text)
    text = _MARKDOWN_REGION.sub(replace_markdown, text)
    return _with_args(text)


def _held_regions(path: Path, text: str) -> None:
    """Exit, naming it, if a file outside the package lacks a region it must hold (`OUTSIDE_PACKAGE`)."""
    found = {match["name"] for pattern in (_REGION, _MARKDOWN_REGION) for match in pattern.finditer(text)}
    missing = [name for name in OUTSIDE_PACKAGE.get(path, ()) if name not in found]
    if missing:
        raise SystemExit(
            f"scripts/codegen.py: {path.relative_to(ROOT)} lost its generated region(s) {', '.join(missing)}: "
            "put the markers back (see git log) and run `python scripts/codegen.py`"
        )


def _libraries() -> Any:
    """``_core/libraries.py``, loaded alone (it imports nothing of the package): the declared libraries."""
    spec = importlib.util.spec_from_file_location("libraries_declaration", PACKAGE / "_core" / "libraries.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # attrs resolves the class's annotations through it
    spec.loader.exec_module(module)
    return module


def libraries_region(name: str) -> str:
    """A region that follows from ``LIBRARIES``: the ``backend=`` types."""
    libraries = _libraries().LIBRARIES
    if name == "backend names":
        lines: list[str] = []
        for client, alias, cls in (
            ("sync", "BackendName", "AnimalStoreClient"),
            ("async", "AsyncBackendName", "AsyncAnimalStoreClient"),
        ):
            offered = [library for library in libraries if client in library.clients]
            names = ", ".join(f'"{library.name}"' for library in offered)
            each = [f'``"{library.name}"`` ({_needs(library, index == 0)})' for index, library in enumerate(offered)]
            listed = ", ".join(each[:-1]) + f" or {each[-1]}"
            lines += [
                f"{alias} = Literal[{names}]",
                f'"""The libraries `{cls}` can send through: its ``backend=`` argument\'s type.',
                "",
                *_wrapped(f"{listed}. docs/index.md's backends table says which to choose.", ""),
                '"""',
            ]
        return "\n".join(lines) + "\n"
    if name == "http client types":
        return _http_client_types(libraries)
    if name == "extras":
        return _extras(libraries)
    if name == "extras sentence":
        return _extras_sentence()
    once = [library for library in libraries if library.runs_once]
    if name == "markers":  # pyproject.toml's pytest markers: tests/conftest.py marks these libraries' pairs
        return "".join(
            f"\"{library.name}: the {library.name} backend's client/library pairs (and tests), which CI runs once "
            "(the README's command, on 3.11) and at its floor, not on every Python\",\n"
            for library in once
        )
    if name == "run once":  # noxfile.py: the markers its sessions on the other Pythons leave out
        return f"RUN_ONCE_LIBRARIES = [{', '.join(repr(library.name) for library in once)}]\n".replace("'", '"')
    raise SystemExit(f"scripts/codegen.py: no libraries region is called {name!r}")


def _needs(library: Any, default: bool) -> str:
    """What choosing a library takes, as `BackendName`'s docs say it: its extra, or nothing."""
    parts = ["the default"] if default else []
    parts.append("a dependency" if library.extra is None else f"the ``[{library.extra}]`` extra")
    return ", ".join(parts)


def _wrapped(text: str, indent: str) -> list[str]:
    """A docstring paragraph wrapped to the line length the linter holds (120), less the indent."""
    return textwrap.wrap(text, width=LINE_LENGTH - len(indent), break_on_hyphens=False, break_long_words=False)


def _http_client_types(libraries: Any) -> str:
    """``AsyncHTTPClient`` and ``HTTPClient``: the classes each client takes as ``http_client``, with their docs."""
    out: list[str] = []
    for client, alias, cls, other in (
        ("async", "AsyncHTTPClient", "AsyncAnimalStoreClient", "a sync client"),
        ("sync", "HTTPClient", "AnimalStoreClient", "an async client"),
    ):
        taken = [library for library in libraries if client in library.client_types]
        refused = [library for library in libraries if client in library.clients and library.callers_clients_refused]
        names = [f"``{'.'.join(library.client_classes[client])}``" for library in taken]
        listed = ", ".join(names[:-1]) + f" or {names[-1]}"
        refusals = "".join(
            f' (a {library.name} client is refused: ``backend="{library.name}"`` builds the SDK\'s own)'
            for library in refused
        )
        first, *rest = _wrapped(f"What `{cls}` takes as ``http_client``: {listed}{refusals}.", '"""')
        out += [
            f"{alias}: TypeAlias = {' | '.join(library.client_types[client] for library in taken)}",
            f'"""{first}',
            *rest,
            "",
            "httpx's class by name; each optional library's by a Protocol of a few of",
            "its members, so that this type is complete whether that library is",
            "installed or not. With the library installed, a type checker accepts its",
            f"client and refuses other objects ({other} among them); the client",
            "itself checks the class when it is made.",
            '"""',
            "",
        ]
    return "\n".join(out[:-1]) + "\n"


def _requirements(library: Any) -> list[str]:
    """What a library's extra installs."""
    return [library.requirement, *library.also_installs]


def _extras(libraries: Any) -> str:
    """pyproject.toml's extras of the libraries: one per library that is not a dependency, each with why its floor."""
    lines: list[str] = []
    for library in libraries:
        if library.extra is None:
            continue
        clients = "both clients" if len(library.clients) == 2 else f"the {library.clients[0]} client"
        said = f'backend="{library.name}" ({clients})'
        if library.floor_reason:
            said += f". {library.floor_reason[0].upper()}{library.floor_reason[1:]}"
        lines += [f"# {line}" for line in _wrapped(f"{said}.", "# ")]
        quoted = ", ".join(f'"{requirement}"' for requirement in _requirements(library))
        lines.append(f"{library.extra} = [{quoted}]")
    return "\n".join(lines) + "\n"


README_WIDTH = 76
"""README.md's paragraphs are wrapped at about this width (a generated one too, so the source reads alike)."""


def _extras_sentence() -> str:
    """README.md's sentence naming every extra: the libraries', then the others'."""
    declared = _libraries()
    named = [f"`[{library.extra}]`" for library in declared.LIBRARIES if library.extra is not None]
    named += [f"`[{extra.name}]`" for extra in declared.OTHER_EXTRAS]
    listed = ", ".join(named[:-1]) + f" and {named[-1]}" if len(named) > 1 else named[0]
    text = f"The extras are {listed}; leave the brackets out for none."
    return "\n".join(textwrap.wrap(text, width=README_WIDTH, break_on_hyphens=False, break_long_words=False)) + "\n"


BACKENDS_TABLE = ROOT / "docs" / "_backends-table.md"
TABLE_NOTES = """
Install an extra with the package: `pip install "/path/to/animalstore-client[pyreqwest]"`, several as
`[aiohttp,otel]`. `verify=True` (the default) means the same on every backend: certifi's CA bundle, or
`SSL_CERT_FILE`/`SSL_CERT_DIR` when set. A client of your own given as `http_client=` is used as it is,
keeps its own trust settings (`verify=` is then refused) and is never closed, but is held to the SDK's rules
on every send (no redirect, no credentials of its own, one sending per attempt); `backend=` can be left out
with it, since its type says which library it is.
"""


def backends_table() -> str:
    """docs/_backends-table.md: a row per library of ``LIBRARIES``, then one per other extra."""
    declared = _libraries()
    header = (
        "| `backend=` | clients | install | what it is; choose it for "
        "| `http_client=` it takes (sync / async) | `verify=` it takes |\n"
        "|---|---|---|---|---|---|\n"
    )
    rows: list[str] = []
    for index, library in enumerate(declared.LIBRARIES):
        clients = "both" if len(library.clients) == 2 else library.clients[0]
        name = f'`"{library.name}"`' + (" (the default)" if index == 0 else "")
        install = "nothing more: a dependency" if library.extra is None else f"the `[{library.extra}]` extra"
        cells = [name, clients, install, library.choose_for, library.http_client_text, library.verify_text]
        rows.append("| " + " | ".join(cells) + " |\n")
    for extra in declared.OTHER_EXTRAS:
        distributions = ", ".join(f"`{declared.distribution_of(r)}`" for r in extra.requirements)
        install = f"the `[{extra.name}]` extra ({distributions})"
        rows.append(f"| no backend | both | {install} | {extra.purpose} | | |\n")
    notice = "<!-- Written by scripts/codegen.py from animalstore_client/_core/libraries.py: do not edit. -->\n"
    return notice + header + "".join(rows) + TABLE_NOTES


_ARGS = re.compile(r"^(?P<indent>    )Args:\n(?:(?P=indent)    .*\n|\n)*?(?=(?P=indent)\"\"\")", re.MULTILINE)


def _with_args(text: str) -> str:
    """The class docstring's ``Args:`` section, when the module has a constructor region: from `option_docs`."""
    if "# <options: constructor>" not in text:
        return text
    entries = "".join(f"        {line}\n" for line in option_docs())
    text, found = _ARGS.subn(lambda match: f"    Args:\n{entries}", text, count=1)
    if not found:
        raise SystemExit(
            "scripts/codegen.py: the class docstring above the constructor region must end with its Args: section"
        )
    return text


def _targets() -> list[Path]:
    """The hand-written modules with a generated region (a generated module follows from its source)."""
    found: list[Path] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if not text.startswith("# Generated from") and re.search(r"# <(options|operations|libraries): ", text):
            found.append(path)
    return found


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) every region; then the sync modules, unless checking."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a region is stale")
    check = parser.parse_args(argv).check
    stale: list[str] = []
    for path in [*_targets(), *OUTSIDE_PACKAGE]:
        current = path.read_text()
        _held_regions(path, current)
        wanted = regenerate(current)
        if wanted == current:
            continue
        name = str(path.relative_to(ROOT))
        stale.append(name)
        if check:
            sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), wanted.splitlines(True), name, name))
        else:
            path.write_text(wanted)
            print(f"wrote {name}")
    table = backends_table()
    current_table = BACKENDS_TABLE.read_text() if BACKENDS_TABLE.exists() else ""
    if current_table != table:
        name = str(BACKENDS_TABLE.relative_to(ROOT))
        stale.append(name)
        if check:
            sys.stdout.writelines(
                difflib.unified_diff(current_table.splitlines(True), table.splitlines(True), name, name)
            )
        else:
            BACKENDS_TABLE.write_text(table)
            print(f"wrote {name}")
    if check:
        if stale:
            print(
                f"\nstale: {', '.join(stale)}; run `python scripts/codegen.py` and commit the result.", file=sys.stderr
            )
            return 1
        return 0
    # The sync modules follow from the async ones.
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "unasync.py")], check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
