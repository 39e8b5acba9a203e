"""Contract tests: the SDK and the fake store checked by Prism against docs/openapi.yaml.

Our respx routes only prove the SDK agrees with itself. Here a validator we did
not write judges every request and response:

- ``prism mock --errors``: every SDK operation, sync and async, must be a
  request the document allows (else Prism answers 422 and the call fails),
  and the SDK must parse the responses Prism generates from the document;
- ``prism proxy --errors`` in front of the FakeAnimalStore server: every
  answer of the fake must match the document (Prism reports a mismatch in an
  ``sl-violations`` header, which the tests collect and require to be absent).

Prism (``@stoplight/prism-cli``, pinned below) is installed with npm under
``.tools/prism`` on first use. Without Node.js these tests are skipped, with
the reason printed.
"""

from __future__ import annotations

import asyncio
import importlib
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest

from animalstore_client import (
    AnimalStoreClient,
    AsyncAnimalStoreClient,
    AuthenticationError,
    InternalServerError,
    PetStatus,
)
from animalstore_client._core.libraries import LIBRARIES, by_name
from animalstore_client.testing import FakeAnimalStore

from .conftest import SyncView

pytestmark = pytest.mark.contract

PRISM_VERSION = "5.16.0"
ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "docs" / "openapi.yaml"
TOOLS = ROOT / ".tools" / "prism"
PRISM = TOOLS / "node_modules" / ".bin" / "prism"


def prism() -> Path:
    """Prism's executable, installed with npm under .tools/ on first use; .ci/run calls it beside its set-up, so
    that the README's command there does not wait on npm (``python -c "from tests.test_contract import prism;
    prism()"``)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are not installed: the Prism contract tests need them (CI installs them)")
    installed = TOOLS / "node_modules" / "@stoplight" / "prism-cli" / "package.json"
    if not installed.is_file() or f'"version": "{PRISM_VERSION}"' not in installed.read_text():
        TOOLS.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--silent",
                "--prefix",
                str(TOOLS),
                f"@stoplight/prism-cli@{PRISM_VERSION}",
            ],
            check=True,
            timeout=600,
        )
    return PRISM


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start(command: str, *arguments: str) -> Iterator[str]:
    """Run ``prism <command> --errors ... <arguments>`` on a free loopback port; yield its URL."""
    port = _free_port()
    process = subprocess.Popen(
        [str(prism()), command, "--errors", "-h", "127.0.0.1", "-p", str(port), *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 60
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line)
        if "Prism is listening" in line or time.monotonic() > deadline:
            break
    if not any("Prism is listening" in line for line in lines):
        process.kill()
        pytest.fail("Prism did not start:\n" + "".join(lines))
    # Drain Prism's request log so its pipe never fills and blocks it.
    drain = subprocess.Popen(["cat"], stdin=process.stdout, stdout=subprocess.DEVNULL)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        drain.wait(timeout=10)
        process.stdout.close()


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    """``prism mock --errors docs/openapi.yaml``; paths are served without /v1."""
    yield from _start("mock", str(SPEC))


@pytest.fixture(scope="module")
def fake_store() -> FakeAnimalStore:
    """The store behind the proxy."""
    return FakeAnimalStore(pets=[{"id": 1, "name": "Biscuit", "categoryId": 1, "status": "available"}])


@pytest.fixture(scope="module")
def proxy_url(fake_store: FakeAnimalStore) -> Iterator[str]:
    """``prism proxy --errors docs/openapi.yaml <FakeAnimalStore server>``."""
    with fake_store.serve() as upstream:
        yield from _start("proxy", str(SPEC), upstream)


class Violations(list[str]):
    """Prism's ``sl-violations`` headers seen by a client."""

    def sync_hook(self, response: httpx.Response) -> None:
        """An httpx (or httpx2) response hook recording Prism's report."""
        if "sl-violations" in response.headers:
            self.append(f"{response.request.method} {response.request.url}: {response.headers['sl-violations']}")

    async def async_hook(self, response: httpx.Response) -> None:
        self.sync_hook(response)


@pytest.fixture
def violations() -> Violations:
    """Collects Prism's reports; each test requires it to stay empty."""
    return Violations()


async def _aiohttp_session(violations: Violations) -> Any:
    import aiohttp

    async def on_end(session: Any, context: Any, params: Any) -> None:
        headers = params.response.headers
        if "sl-violations" in headers:
            violations.append(f"{params.method} {params.url}: {headers['sl-violations']}")

    trace = aiohttp.TraceConfig()
    trace.on_request_end.append(on_end)
    return aiohttp.ClientSession(trace_configs=[trace])


def _hooked_client(
    library: str, side: Literal["sync", "async"], violations: Violations, loop: asyncio.AbstractEventLoop
) -> Any:
    """A caller's client of ``library`` for the ``side`` client that records Prism's reports with a hook of the
    library's own; ``None`` for a library with no such hook here (pyreqwest, whose clients are refused, or one
    newly declared), whose reports the SDK's own middleware reads instead."""
    if library in ("httpx", "httpx2"):  # httpx's kind: response event hooks
        module, cls = by_name(library).client_classes[side]
        hook = violations.sync_hook if side == "sync" else violations.async_hook
        return getattr(importlib.import_module(module), cls)(event_hooks={"response": [hook]})
    if library == "aiohttp":
        return loop.run_until_complete(_aiohttp_session(violations))
    return None


def _reporting_middleware(violations: Violations, *, sync: bool) -> Any:
    """The SDK's own middleware collecting Prism's reports: a caller's pyreqwest client is refused, so the
    pyreqwest variants (and those of a library with no hooked client in `_hooked_client`) send through the SDK's
    own, and the reports are read above the seam."""

    def sync_middleware(request: httpx.Request, call_next: Any) -> httpx.Response:
        response: httpx.Response = call_next(request)
        violations.sync_hook(response)
        return response

    async def async_middleware(request: httpx.Request, call_next: Any) -> httpx.Response:
        response: httpx.Response = await call_next(request)
        violations.sync_hook(response)
        return response

    return sync_middleware if sync else async_middleware


@pytest.fixture
def make(variant: str, violations: Violations) -> Iterator[Callable[..., Any]]:
    """Build clients of the current variant (every HTTP library) with Prism's reports collected."""
    loop = asyncio.new_event_loop()
    made: list[Any] = []
    owned: list[Any] = []  # SDK clients over a library client of the SDK's own, which they close

    def factory(base_url: str, *, api_key: str = "test-key") -> Any:
        side: Literal["sync", "async"] = "sync" if variant.startswith("sync") else "async"
        library = variant.split("-")[1] if "-" in variant else LIBRARIES[0].name
        http = _hooked_client(library, side, violations, loop)
        if http is None:
            reporting = _reporting_middleware(violations, sync=side == "sync")
            options: dict[str, Any] = {"backend": library, "middleware": [reporting], "max_retries": 0}
            own: Any = (
                AnimalStoreClient(api_key, base_url=base_url, **options)
                if side == "sync"
                else SyncView(AsyncAnimalStoreClient(api_key, base_url=base_url, **options), loop)
            )
            owned.append(own)
            return own
        made.append(http)
        if side == "sync":
            return AnimalStoreClient(api_key, base_url=base_url, http_client=http, max_retries=0)
        return SyncView(AsyncAnimalStoreClient(api_key, base_url=base_url, http_client=http, max_retries=0), loop)

    yield factory
    for own in owned:
        own.close()
    for http in made:
        if hasattr(http, "aclose"):  # httpx's and httpx2's AsyncClient
            loop.run_until_complete(http.aclose())
        elif hasattr(http, "is_closed") and hasattr(http, "close"):  # httpx's and httpx2's Client
            http.close()
        elif hasattr(http, "clear"):
            http.clear()
        else:  # aiohttp's session
            loop.run_until_complete(http.close())
    # As asyncio.run does: async generators left open get closed while the loop can still run them.
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def _exercise(client: Any) -> None:
    client.list_pets()
    client.list_pets(limit=1, status=PetStatus.AVAILABLE)
    client.list_pets(limit=100, status="sold")
    created = client.create_pet(name="Rex", category_id=2**40, status="pending")
    client.create_pet(name="Ash", category_id=1)
    with pytest.warns(DeprecationWarning, match="2030-12-05"):
        client.get_pet(created.id)
    client.with_raw_response.list_pets(limit=5).parse()


def test_sdk_requests_satisfy_the_document(mock_url: str, make: Callable[..., Any], violations: Violations) -> None:
    """Every operation, sync and async, over every HTTP library, sends what the document allows and parses it."""
    _exercise(make(mock_url))
    assert violations == []


def test_prism_mock_rejects_what_the_sdk_would_refuse(mock_url: str) -> None:
    """The mock really validates: a raw limit=500 and a body without categoryId are refused."""
    headers = {"Authorization": "Bearer test-key"}
    # Both operations document 400 (listPets since tests/test_fidelity.py found the fake's 400
    # missing from the document), so Prism answers invalid input with it rather than its own 422.
    assert httpx.get(f"{mock_url}/pets", params={"limit": 500}, headers=headers).status_code == 400
    assert httpx.post(f"{mock_url}/pets", json={"name": "Rex"}, headers=headers).status_code == 400
    assert httpx.get(f"{mock_url}/pets").status_code == 401


def test_fake_store_answers_match_the_document(
    proxy_url: str, make: Callable[..., Any], violations: Violations
) -> None:
    """Through the proxy, the fake's answers to every operation match the document."""
    _exercise(make(proxy_url))
    with pytest.raises(AuthenticationError):
        make(proxy_url, api_key="wrong-key").list_pets()
    assert violations == []


def test_proxy_reports_a_fake_that_breaks_the_document(
    proxy_url: str, fake_store: FakeAnimalStore, violations: Violations
) -> None:
    """The proxy check can fail: an answer outside the document is reported."""
    fake_store.fail_next(401, body={"detail": "not an Error body"})
    hooked = httpx.Client(event_hooks={"response": [violations.sync_hook]})
    hooked.get(f"{proxy_url}/pets", headers={"Authorization": "Bearer test-key"})
    hooked.close()
    assert len(violations) == 1
    assert "code" in violations[0] or "required" in violations[0]


def test_every_librarys_hook_sees_a_reported_violation(
    proxy_url: str, fake_store: FakeAnimalStore, make: Callable[..., Any], violations: Violations
) -> None:
    """The reports are really read on every library: an answer outside the document reaches ``violations``
    (with --errors Prism answers it with a 500 of its own)."""
    fake_store.fail_next(401, body={"detail": "not an Error body"})
    with pytest.raises(InternalServerError, match="Request/Response not valid"):
        make(proxy_url).list_pets()
    assert len(violations) == 1
    assert violations[0].startswith("GET ")


def test_document_names_the_sdk_base_urls() -> None:
    """The document's servers are the SDK's two environments."""
    from animalstore_client import Environment

    text = SPEC.read_text()
    for environment in Environment:
        assert f"url: {environment.base_url}" in text
