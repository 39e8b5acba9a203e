"""A server's ``charset`` never decides more than which text encoding a body's text is read with, on every library.

Every codec name Python knows is sent as the ``charset`` of an error page and
of a 2xx body that is not JSON, with a body that is a bz2 bomb, binary soup
and malformed UTF-16. Each call raises an SDK exception whose response text
is a ``str`` no longer than twice the body. The same holds under
``python -O``, where the standard library's non-text codecs lose the asserts
that otherwise stop them (``charset=bz2`` then inflated a 403-byte body to
512 MiB).
"""

from __future__ import annotations

import bz2
import encodings.aliases
import functools
import subprocess
import sys

import pytest

from animalstore_client import AnimalStoreError, APIStatusError

from .conftest import ClientFactory, pairs_to_run, sample
from .servers import LoopbackServer, respond

EXTRA = ["idna", "punycode", "undefined", "utf-16", "utf-32", "utf-8-sig", "unicode_escape", "mbcs", "", "x" * 300]
CODECS = sorted(set(encodings.aliases.aliases) | set(encodings.aliases.aliases.values()) | set(EXTRA))


@functools.cache
def bomb() -> bytes:
    """About 200 bytes that bz2 inflates to 64 MiB."""
    return bz2.compress(bytes(64 * 1024 * 1024))


def _bodies() -> list[bytes]:
    return [bomb(), bytes(range(256)) * 4, b"\xff\xfe\x00\xd8\x00" * 3, b"\\N{oops \\U99999999 +AAA- \x1b$B"]


def _check(call: object, body: bytes) -> str:
    """Call; return what went wrong with it (empty when the rule held)."""
    assert callable(call)
    try:
        call()
    except APIStatusError as exc:
        text = exc.response.text
        if not isinstance(text, str) or len(text) > 2 * len(body) + 2:
            return f"text of {len(text)} chars from a {len(body)}-byte body"
        str(exc)
    except AnimalStoreError:
        return ""
    except Exception as exc:  # the rule under test: nothing else escapes
        return f"{type(exc).__name__}: {exc}"
    return ""


def test_every_charset_on_every_library(make_client: ClientFactory) -> None:
    """Every codec name as the charset of an error page and of a non-JSON 2xx: only SDK exceptions, bounded text."""
    cases = [
        (status, name, body)
        for name in sample(CODECS, least=20)
        for status, body in zip((403, 200), (_bodies()[len(name) % 4], _bodies()[0]), strict=True)
    ]
    script = [respond(status, body, {"Content-Type": f"text/plain; charset={name}"}) for status, name, body in cases]
    with LoopbackServer(script) as server:
        client = make_client(base_url=server.base_url, max_retries=0)
        problems = [
            f"{status} charset={name!r}: {problem}"
            for status, name, body in cases
            if (problem := _check(lambda: client.request("GET", "/store/orders"), body))
        ]
    assert problems == []


OPTIMIZED = """
import asyncio, bz2, sys, warnings
sys.path.insert(0, ".")
from tests.servers import LoopbackServer, respond
from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient, APIStatusError

body = bz2.compress(bytes(64 * 1024 * 1024))
names = ["bz2", "bz2_codec", "zlib", "base64", "hex", "uu", "quopri", "rot13", "utf-16", "utf-32", "idna", "punycode"]

def run(variant):
    kind, _, library = variant.partition("-")
    problems = []
    calls = 0

    def check(exc):
        if not isinstance(exc, APIStatusError):
            problems.append(repr(exc))
        elif len(exc.response.text) > 2 * len(body) + 2:
            problems.append(f"{len(exc.response.text)} chars")

    with LoopbackServer([respond(403, body, {"Content-Type": f"text/plain; charset={n}"}) for n in names]) as server:
        options = {"base_url": server.base_url, "backend": library or "httpx"}
        if kind == "async":
            async def main():
                nonlocal calls
                async with AsyncAnimalStoreClient("k", **options) as client:
                    for _ in names:
                        calls += 1
                        try:
                            await client.list_pets()
                        except Exception as exc:
                            check(exc)
                        else:
                            problems.append("no error")
            asyncio.run(main())
        else:
            with AnimalStoreClient("k", **options) as client:
                for _ in names:
                    calls += 1
                    try:
                        client.list_pets()
                    except Exception as exc:
                        check(exc)
                    else:
                        problems.append("no error")
    print(variant, "optimize", sys.flags.optimize, "calls", calls, "problems", problems)

for variant in sys.argv[1:]:
    run(variant)
"""


def test_non_text_codecs_stay_inert_under_python_O(pytestconfig: pytest.Config) -> None:
    """Under python -O, charset=bz2 (and every other non-text codec) still yields bounded text on every library
    (on the default pairs in the everyday tier).

    One interpreter runs every pair installed here, one after the other: a process of its own per pair cost
    two to three CPU-seconds each, mostly in starting.
    """
    pairs = pairs_to_run(pytestconfig)
    result = subprocess.run(
        [sys.executable, "-O", "-c", OPTIMIZED, *pairs], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{pair} optimize 1 calls 12 problems []" for pair in pairs]


@pytest.mark.parametrize("name", ["bz2", "zlib"])
def test_httpx_alone_would_decode_with_a_non_text_codec(name: str) -> None:
    """The hazard is real: left to itself, httpx picks the codec a charset names even when it is not a text encoding."""
    import httpx

    response = httpx.Response(403, headers={"Content-Type": f"text/plain; charset={name}"}, content=b"\x00" * 8)
    assert response.encoding in (f"{name}_codec", name)
