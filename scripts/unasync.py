"""Generate the sync modules from their async sources, as httpcore does.

    python scripts/unasync.py          # rewrite every generated file
    python scripts/unasync.py --check  # exit 1, with a diff, if one is stale (CI runs this)

The async code is written by hand; the sync code is the same text with the
substitutions below (``async def`` -> ``def``, ``AsyncX`` -> ``X``, ...).
What differs by nature rather than by these words (how to sleep, one pool
per event loop) is hand-written in ``_clients.shells`` and not generated. The
few docstring sentences and library names that differ are listed in
``PHRASES``; each must still occur, so that editing one side cannot silently
skip it.

``with_deprecation_literals`` writes a deprecation message into the string
literal of each ``@deprecated(...)`` decorator (type checkers read it only
from a literal); ``scripts/codegen.py`` uses it for each deprecated
operation, with that operation's own message.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "animalstore_client"

POOL = PACKAGE / "_transports" / "pool"


def _sources() -> dict[Path, Path]:
    """Every hand-written ``*_async.py`` module, each to its sync twin in the ``_generated`` folder beside it.

    By convention, not a list: a new async module of a library is generated with no edit here.
    """
    return {
        source: source.parent / "_generated" / source.name.replace("_async.py", "_sync.py")
        for source in sorted(PACKAGE.rglob("*_async.py"))
        if "_generated" not in source.relative_to(PACKAGE).parts
    }


FILES = _sources()

# The httpx2 backend's own pool is the default backend's, over httpcore2 instead of httpcore: the
# same text with the library's name changed, each module (hand-written or generated above) to its
# twin in pool/_generated/httpcore2/. Nothing of it is edited by hand.
HTTPCORE2 = POOL / "_generated" / "httpcore2"
HTTPCORE2_FILES = {
    POOL / "httpcore_async.py": HTTPCORE2 / "httpcore2_async.py",
    POOL / "_generated" / "httpcore_sync.py": HTTPCORE2 / "httpcore2_sync.py",
    POOL / "pool_async.py": HTTPCORE2 / "pool_async.py",
    POOL / "_generated" / "pool_sync.py": HTTPCORE2 / "pool_sync.py",
    POOL / "deadline_network_async.py": HTTPCORE2 / "deadline_network_async.py",
    POOL / "_generated" / "deadline_network_sync.py": HTTPCORE2 / "deadline_network_sync.py",
    POOL / "asyncio_network.py": HTTPCORE2 / "asyncio_network.py",
}


def dotted(path: Path) -> str:
    """The module name of a file of the package: ``animalstore_client._transports.pool.pool_async``."""
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def renamed_modules(pairs: dict[Path, Path]) -> list[tuple[str, str]]:
    """A substitution per pair: the source module's dotted name to the target's, as whole names."""
    return [(re.escape(dotted(source)) + r"\b", dotted(target)) for source, target in pairs.items()]


HTTPCORE2_SUBSTITUTIONS = [
    *renamed_modules(HTTPCORE2_FILES),
    (r"\bhttpcore\b", "httpcore2"),
    (r"HttpcoreTransport\b", "Httpcore2Transport"),
    (r"\bhttp_client=httpx\.", "http_client=httpx2."),
    (r"\bthe default backend\b", "the httpx2 backend"),
]
# Sentences of the httpcore modules that name httpx itself, as (httpcore text, httpcore2 text).
HTTPCORE2_PHRASES = {
    "_transports/pool/httpcore_async.py": [
        ("import httpcore\nimport httpx\n", "import httpcore\nimport httpx\nimport httpx2\n"),
        (
            '    library = f"httpx/{httpx.__version__}"\n'
            '    """The default backend is httpx\'s: its own pool is httpcore, the transport layer httpx sends'
            ' through."""\n',
            '    library = f"httpx2/{httpx2.__version__}"\n'
            '    """The httpx2 backend: its own pool is httpcore2, the transport layer httpx2 sends through."""\n',
        ),
    ],
}
HTTPCORE2_PHRASES["_transports/pool/_generated/httpcore_sync.py"] = HTTPCORE2_PHRASES[
    "_transports/pool/httpcore_async.py"
]
HTTPCORE2_PHRASES["_transports/pool/pool_async.py"] = HTTPCORE2_PHRASES["_transports/pool/_generated/pool_sync.py"] = [
    (
        "connection opens itself, TCP then TLS, on its first request. Being\n"
        "httpcore's own connection class, it is what respx's default mocker patches,\n"
        "so respx mocks the default backend as it always did. One lock guards the\n",
        "connection opens itself, TCP then TLS, on its first request. respx\n"
        "patches the connection class of httpx's transport layer, not this one:\n"
        "it does not mock the httpx2 backend (an httpx2.MockTransport in a caller's\n"
        "httpx2 client does the same work). One lock guards the\n",
    )
]

SUBSTITUTIONS = [
    *renamed_modules(FILES),
    (r"\bASYNC_IO\b", "SYNC_IO"),
    (r"\b_Async([A-Z]\w*)", r"_\1"),
    (r"\bAsync([A-Z]\w*)", r"\1"),
    (r"\b(\w+)_async\b", r"\1_sync"),
    (r"\basync def\b", "def"),
    (r"\basync for\b", "for"),
    (r"\basync with\b", "with"),
    (r"\bawait ", ""),
    (r"\baclose\b", "close"),
    (r"\baiter_raw\b", "iter_raw"),
    (r"\banext\(", "next("),
    (r"\baiter_stream\b", "iter_stream"),
    (r"\b__aiter__\b", "__iter__"),
    (r"\bhandle_async_request\b", "handle_request"),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
]

# Sentences that differ by nature, as (async text, sync text), per source file.
PHRASES = {
    "_transports/pool/httpcore_async.py": [
        (
            "\"\"\"The SDK's asyncio backend on asyncio's own loops (measured faster than anyio's), "
            'anyio\'s on any other."""\n'
            "    from animalstore_client._transports.pool.asyncio_network import for_running_loop\n\n"
            "    return for_running_loop() or _library_backend()\n",
            '"""httpcore\'s own backend: blocking sockets have no faster path to choose."""\n'
            "    return _library_backend()\n",
        ),
        (
            '"""httpcore\'s own backend for asyncio and trio alike (anyio)."""\n'
            '    return cast("httpcore.AsyncNetworkBackend", httpcore.AnyIOBackend())'
            "  # typed apart from its base",
            '"""httpcore\'s own backend for blocking sockets."""\n    return httpcore.SyncBackend()',
        ),
    ],
    "_transports/pyreqwest_async.py": [
        # pyreqwest names its blocking classes Sync...; ClientBuilder follows from Client.
        ("pyreqwest.client.Client", "pyreqwest.client.SyncClient"),
        ("pyreqwest.request.StreamRequest", "pyreqwest.request.SyncStreamRequest"),
        ("pyreqwest.response.Response", "pyreqwest.response.SyncResponse"),
    ],
    "_clients/client_async.py": [
        (
            "An asyncio client for the animal store; the same API as `AnimalStoreClient`.\n\n"
            "    Safe to share across the tasks of one event loop. Used from a new event\n"
            "    loop (a second ``asyncio.run``), it starts a fresh connection pool there.",
            "A synchronous client for the animal store. Safe to share across threads.",
        ),
    ],
}

HEADER = "# Generated from {source} by scripts/unasync.py: do not edit; regenerate with `python scripts/unasync.py`.\n"
HEADER2 = (
    "# Generated from {source} by scripts/unasync.py, over httpcore2 for the httpx2 backend: do not edit;\n"
    "# regenerate with `python scripts/unasync.py`.\n"
)


def with_deprecation_literals(text: str, message: str) -> str:
    """``text`` with the message of every ``@deprecated(...)`` decorator set to ``message``."""
    lines = text.splitlines(keepends=True)
    calls = [
        decorator
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for decorator in node.decorator_list
        if isinstance(decorator, ast.Call)
        and isinstance(decorator.func, ast.Name)
        and decorator.func.id == "deprecated"
        and decorator.args
    ]
    # From the bottom up, so earlier line numbers stay valid.
    for call in sorted(calls, key=lambda c: c.args[0].lineno, reverse=True):
        literal = call.args[0]
        assert literal.end_lineno is not None
        if ast.literal_eval(literal) == message:
            continue
        indent = " " * literal.col_offset
        pieces = textwrap.wrap(message, width=80, drop_whitespace=False)
        new = [f"{indent}{json.dumps(piece, ensure_ascii=False)}\n" for piece in pieces]
        new[-1] = new[-1].rstrip("\n") + ",\n"
        lines[literal.lineno - 1 : literal.end_lineno] = new
    return "".join(lines)


def _rewritten(text: str, name: str, phrases: list[tuple[str, str]], substitutions: list[tuple[str, str]]) -> str:
    """``text`` (of module ``name``) with each phrase replaced, each of which must occur, then each substitution."""
    for old, new in phrases:
        if old not in text:
            raise SystemExit(f"scripts/unasync.py: the phrase {old[:60]!r}... no longer occurs in {name}")
        text = text.replace(old, new)
    for pattern, replacement in substitutions:
        text = re.sub(pattern, replacement, text)
    return text


def unasync(text: str, source_name: str) -> str:
    """The sync module generated from the text of the async one."""
    return HEADER.format(source=source_name) + _rewritten(
        text, source_name, PHRASES.get(source_name, []), SUBSTITUTIONS
    )


def over_httpcore2(text: str, name: str, source: str) -> str:
    """The httpx2 backend's twin of module ``name`` (whose text is ``text``, written from ``source``)."""
    if text.startswith("# Generated from "):
        text = text.split("\n", 1)[1]
    return HEADER2.format(source=source) + _rewritten(
        text, name, HTTPCORE2_PHRASES.get(name, []), HTTPCORE2_SUBSTITUTIONS
    )


def _name(path: Path) -> str:
    """A file's path inside the package, as PHRASES and the headers name it."""
    return path.relative_to(PACKAGE).as_posix()


GENERATED_HEADER = "# Generated by scripts/unasync.py: do not edit; regenerate with `python scripts/unasync.py`.\n"
GENERATED_INIT = (
    '"""Generated modules: every file here is written by scripts/unasync.py from a hand-written source."""\n'
)


def wanted_files() -> dict[Path, str]:
    """Every generated file's text, by path, and each hand-written source's (which stays as it is)."""
    wanted: dict[Path, str] = {}
    for source, target in FILES.items():
        text = source.read_text()
        wanted[source] = text
        wanted[target] = unasync(text, _name(source))
    for source, target in HTTPCORE2_FILES.items():
        text = wanted[source] if source in wanted else source.read_text()
        written_from = next((_name(s) for s, t in FILES.items() if t == source), _name(source))
        wanted[target] = over_httpcore2(text, _name(source), written_from)
    # Each _generated folder is a package whose first lines, too, say that it is generated.
    for folder in sorted({target.parent for target in [*FILES.values(), *HTTPCORE2_FILES.values()]}):
        wanted[folder / "__init__.py"] = GENERATED_HEADER + GENERATED_INIT
    return wanted


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) every generated file; the exit status says whether all were fresh."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is stale")
    check = parser.parse_args(argv).check
    stale: list[str] = []
    wanted = wanted_files()
    # A file in a _generated folder that nothing generates any more (a source renamed or dropped).
    for path in sorted(PACKAGE.rglob("_generated/**/*.py")):
        if path not in wanted:
            name = str(path.relative_to(PACKAGE.parent))
            stale.append(name)
            if not check:
                path.unlink()
                print(f"removed {name}")
    for path, text in wanted.items():
        current = path.read_text() if path.exists() else ""
        if current == text:
            continue
        name = str(path.relative_to(PACKAGE.parent))
        stale.append(name)
        if check:
            sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), text.splitlines(True), name, name))
        else:
            path.write_text(text)
            print(f"wrote {name}")
    if check and stale:
        print(f"\nstale: {', '.join(stale)}; run `python scripts/unasync.py` and commit the result.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
