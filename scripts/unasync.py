"""Generate the sync modules from their async sources, as httpcore does.

    python scripts/unasync.py          # rewrite every generated file
    python scripts/unasync.py --check  # exit 1, with a diff, if one is stale (CI runs this)

The async code is written by hand; the sync code is the same text with the
substitutions below (``async def`` -> ``def``, ``AsyncX`` -> ``X``, ...).
What differs by nature rather than by these words (how to sleep, one pool
per event loop) is hand-written in ``_base_client`` and not generated. The
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

FILES = {
    PACKAGE / "_client_async.py": PACKAGE / "_client_sync.py",
    PACKAGE / "_transport_async.py": PACKAGE / "_transport_sync.py",
    PACKAGE / "_httpcore_async.py": PACKAGE / "_httpcore_sync.py",
    PACKAGE / "_pool_async.py": PACKAGE / "_pool_sync.py",
    PACKAGE / "_deadline_async.py": PACKAGE / "_deadline_sync.py",
    PACKAGE / "_middleware_async.py": PACKAGE / "_middleware_sync.py",
    PACKAGE / "_transport_pyreqwest_async.py": PACKAGE / "_transport_pyreqwest_sync.py",
}

SUBSTITUTIONS = [
    (r"\bIOAsync\b", "IOSync"),
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
    "_httpcore_async.py": [
        (
            "\"\"\"The SDK's asyncio backend on asyncio's own loops (measured faster than anyio's), "
            'anyio\'s on any other."""\n'
            "    from ._asyncio_backend import for_running_loop\n\n"
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
    "_transport_pyreqwest_async.py": [
        # pyreqwest names its blocking classes Sync...; ClientBuilder follows from Client.
        ("pyreqwest.client.Client", "pyreqwest.client.SyncClient"),
        ("pyreqwest.request.StreamRequest", "pyreqwest.request.SyncStreamRequest"),
        ("pyreqwest.response.Response", "pyreqwest.response.SyncResponse"),
    ],
    "_client_async.py": [
        ("aiohttp.ClientSession", "urllib3.PoolManager"),
        ("pyreqwest.client.Client", "pyreqwest.client.SyncClient"),
        (
            '``"aiohttp"`` (installed by the ``[aiohttp]`` extra)',
            '``"urllib3"`` (installed by the ``[urllib3]`` extra)',
        ),
        (
            "An asyncio client for the animal store; the same API as `AnimalStoreClient`.\n\n"
            "    Safe to share across the tasks of one event loop. Used from a new event\n"
            "    loop (a second ``asyncio.run``), it starts a fresh connection pool there.",
            "A synchronous client for the animal store. Safe to share across threads.",
        ),
    ],
}

HEADER = "# Generated from {source} by scripts/unasync.py: do not edit; regenerate with `python scripts/unasync.py`.\n"


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


def unasync(text: str, source_name: str) -> str:
    """The sync module generated from the text of the async one."""
    for old, new in PHRASES.get(source_name, []):
        if old not in text:
            raise SystemExit(f"scripts/unasync.py: the phrase {old[:60]!r}... no longer occurs in {source_name}")
        text = text.replace(old, new)
    for pattern, replacement in SUBSTITUTIONS:
        text = re.sub(pattern, replacement, text)
    return HEADER.format(source=source_name) + text


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) every generated file; the exit status says whether all were fresh."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is stale")
    check = parser.parse_args(argv).check
    stale: list[str] = []
    for source, target in FILES.items():
        root = source.parent.parent
        expected_source = source.read_text()
        wanted = {source: expected_source, target: unasync(expected_source, source.name)}
        for path, text in wanted.items():
            current = path.read_text() if path.exists() else ""
            if current == text:
                continue
            name = str(path.relative_to(root))
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
