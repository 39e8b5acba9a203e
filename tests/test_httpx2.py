"""A caller's httpx2 client, and the httpx2 backend's own errors.

``backend="httpx2"`` (the SDK's own pool over httpcore2) runs the whole
behaviour suite as two more pairs of ``ALL_VARIANTS``. What is particular
to a caller's ``httpx2.Client`` / ``httpx2.AsyncClient`` is here: it carries
the calls (its headers, hooks and trust its own), is never closed by the
SDK, a ``MockTransport`` in it works, its failures become the SDK's
exceptions, and the SDK's types stay httpx's for middleware and raw views.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from animalstore_client import (
    DEFAULT_TIMEOUT,
    AnimalStoreClient,
    APIConnectionError,
    APITimeoutError,
    AsyncAnimalStoreClient,
    ClientValidationError,
)
from animalstore_client.testing import FakeAnimalStore

from .conftest import API_KEY, needs_httpx2
from .servers import LoopbackServer, refused_url
from .test_limits import _trickle
from .timing import OVERSHOOT, Stopwatch
from .tls import client_context, serve_tls

pytestmark = [needs_httpx2, pytest.mark.httpx2]

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}


def _httpx2() -> Any:
    import httpx2

    return httpx2


def _mock(seen: list[Any], status: int = 200, body: object = (PET,)) -> Any:
    httpx2 = _httpx2()

    def handler(request: Any) -> Any:
        seen.append(request)
        return httpx2.Response(status, json=list(body) if isinstance(body, tuple) else body)

    return httpx2.MockTransport(handler)


@pytest.fixture
def tls_url() -> Iterator[str]:
    """The fake store served over HTTPS with a certificate from the run's CA."""
    with serve_tls(FakeAnimalStore(api_keys=[API_KEY])) as url:
        yield url


def test_a_callers_sync_client_with_a_mock_transport_is_used_and_left_open() -> None:
    """An httpx2.Client (MockTransport inside) carries the call with its own headers and the SDK's; the SDK's
    close leaves it open, and the User-Agent names httpx2."""
    httpx2 = _httpx2()
    seen: list[Any] = []
    http = httpx2.Client(transport=_mock(seen), headers={"X-Trace": "abc"})
    client = AnimalStoreClient(API_KEY, http_client=http)
    assert client.backend == "httpx2"
    assert client.list_pets()[0].id == 7
    client.close()
    assert not http.is_closed
    (request,) = seen
    assert request.headers["X-Trace"] == "abc"
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert request.headers["User-Agent"].split(" ")[1] == f"httpx2/{httpx2.__version__}"
    assert str(request.url) == "https://api.animalstore.example/v1/pets"
    http.close()


def test_a_callers_async_client_with_a_mock_transport_is_used_and_left_open() -> None:
    """An httpx2.AsyncClient (MockTransport inside) carries the call; the SDK's aclose leaves it open."""
    httpx2 = _httpx2()
    seen: list[Any] = []

    async def main() -> bool:
        async with httpx2.AsyncClient(transport=_mock(seen), headers={"X-Trace": "abc"}) as http:
            client = AsyncAnimalStoreClient(API_KEY, http_client=http)
            assert client.backend == "httpx2"
            assert (await client.list_pets())[0].id == 7
            await client.aclose()
            return bool(http.is_closed)

    assert asyncio.run(main()) is False
    assert seen[0].headers["X-Trace"] == "abc"
    assert seen[0].headers["Authorization"] == f"Bearer {API_KEY}"


def test_an_error_body_from_a_mock_transport_is_the_typed_exception() -> None:
    """A 404 Error body answered through an httpx2 client is NotFoundError with the body's fields, its
    response an httpx.Response (the SDK's own type, whatever library carried it)."""
    from animalstore_client import NotFoundError

    seen: list[Any] = []
    body = {"code": "not_found", "message": "no such pet", "status": 404}
    with _httpx2().Client(transport=_mock(seen, 404, body)) as http:
        client = AnimalStoreClient(API_KEY, http_client=http)
        with pytest.raises(NotFoundError, match="no such pet") as caught:
            client.create_pet(name="a", category_id=1)
    assert caught.value.code == "not_found"
    assert isinstance(caught.value.response, httpx.Response)
    assert len(seen) == 1


def test_middleware_sees_httpx_types_through_a_callers_httpx2_client() -> None:
    """Middleware is shown httpx's Request and Response (the SDK's public types) though httpx2 sends."""
    shown: list[tuple[type, type]] = []

    def middleware(request: httpx.Request, call_next: Any) -> httpx.Response:
        response = call_next(request)
        shown.append((type(request), type(response)))
        return response  # type: ignore[no-any-return]

    with _httpx2().Client(transport=_mock([])) as http:
        client = AnimalStoreClient(API_KEY, http_client=http, middleware=[middleware])
        raw = client.with_raw_response.list_pets()
    assert shown == [(httpx.Request, httpx.Response)]
    assert isinstance(raw.http_response, httpx.Response)
    assert raw.parse()[0].id == 7


def test_the_callers_event_hooks_run() -> None:
    """The caller's httpx2 client is used as configured: its request hooks see each attempt."""
    hooked: list[str] = []
    http = _httpx2().Client(transport=_mock([]), event_hooks={"request": [lambda r: hooked.append(r.method)]})
    AnimalStoreClient(API_KEY, http_client=http).list_pets()
    assert hooked == ["GET"]
    http.close()


def test_a_failure_inside_httpx2_is_the_sdks_connection_error_after_the_retries(sleeps: list[float]) -> None:
    """httpx2's ConnectError, raised by the caller's transport, is retried and ends as APIConnectionError."""
    httpx2 = _httpx2()
    attempts: list[Any] = []

    def refuse(request: Any) -> Any:
        attempts.append(request)
        raise httpx2.ConnectError("refused", request=request)

    with httpx2.Client(transport=httpx2.MockTransport(refuse)) as http:
        client = AnimalStoreClient(API_KEY, http_client=http, max_retries=2)
        with pytest.raises(APIConnectionError) as caught:
            client.list_pets()
    assert len(attempts) == 3
    assert caught.value.attempts == 3
    assert len(sleeps) == 2


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_refused_connection_through_a_callers_client_is_an_sdk_error(kind: str) -> None:
    """A real refused connection (nothing listens) through an httpx2 client: APIConnectionError, nothing else."""
    httpx2 = _httpx2()
    url = refused_url()
    if kind == "sync":
        with httpx2.Client() as http, pytest.raises(APIConnectionError):
            AnimalStoreClient(API_KEY, base_url=url, http_client=http, max_retries=0).list_pets()
        return

    async def main() -> None:
        async with httpx2.AsyncClient() as http:
            with pytest.raises(APIConnectionError):
                await AsyncAnimalStoreClient(API_KEY, base_url=url, http_client=http, max_retries=0).list_pets()

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_callers_client_over_https(tls_url: str, kind: str) -> None:
    """An httpx2 client trusting the run's CA carries the SDK's calls; closing the SDK client leaves it open."""
    httpx2 = _httpx2()
    if kind == "sync":
        with httpx2.Client(verify=client_context()) as http:
            client = AnimalStoreClient(API_KEY, base_url=tls_url, http_client=http)
            assert client.create_pet(name="a", category_id=1).name == "a"
            client.close()
            assert http.get(f"{tls_url}/pets", headers={"Authorization": f"Bearer {API_KEY}"}).status_code == 200
        return

    async def main() -> str:
        async with httpx2.AsyncClient(verify=client_context()) as http:
            client = AsyncAnimalStoreClient(API_KEY, base_url=tls_url, http_client=http)
            name = (await client.create_pet(name="a", category_id=1)).name
            await client.aclose()
            assert not http.is_closed
            return str(name)

    assert asyncio.run(main()) == "a"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_callers_client_is_held_to_the_deadline_between_reads(kind: str) -> None:
    """A server trickling the body to an httpx2 client: the call ends at total_timeout, as APITimeoutError."""
    httpx2 = _httpx2()
    watch = Stopwatch()  # the call alone: making a client loads certificates and modules (0.1 to 0.7 s)
    with LoopbackServer([_trickle()]) as server:
        if kind == "sync":
            with httpx2.Client() as http:
                client = AnimalStoreClient(API_KEY, base_url=server.base_url, http_client=http, total_timeout=1.0)
                with watch, pytest.raises(APITimeoutError, match="total_timeout"):
                    client.list_pets()
        else:

            async def main() -> None:
                async with httpx2.AsyncClient() as http:
                    client = AsyncAnimalStoreClient(
                        API_KEY, base_url=server.base_url, http_client=http, total_timeout=1.0
                    )
                    with watch, pytest.raises(APITimeoutError, match="total_timeout"):
                        await client.list_pets()

            asyncio.run(main())
    watch.assert_within(1.0 + OVERSHOOT)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_the_callers_timeout_is_kept_unless_it_is_the_stock_one(kind: str) -> None:
    """An httpx2 client's own timeout becomes the SDK's (as httpx's Timeout); its stock 5 s gives the SDK's."""
    httpx2 = _httpx2()
    cls: Any = AnimalStoreClient if kind == "sync" else AsyncAnimalStoreClient
    library: Any = httpx2.Client if kind == "sync" else httpx2.AsyncClient
    assert cls(API_KEY, http_client=library(timeout=3.0)).timeout == httpx.Timeout(3.0)
    assert cls(API_KEY, http_client=library()).timeout == DEFAULT_TIMEOUT
    assert cls(API_KEY, http_client=library(timeout=3.0), timeout=9.0).timeout == httpx.Timeout(9.0)


def test_a_client_of_the_other_kind_is_refused_naming_what_is_taken() -> None:
    """The sync client refuses an httpx2.AsyncClient, naming every class it takes and the one it got."""
    httpx2 = _httpx2()
    taken = r"an httpx\.Client or an httpx2\.Client, got httpx2\.AsyncClient$"
    with pytest.raises(ClientValidationError, match=taken):
        AnimalStoreClient(API_KEY, http_client=httpx2.AsyncClient())
    with pytest.raises(ClientValidationError, match="backend='httpx' contradicts http_client, which is an httpx2"):
        AnimalStoreClient(API_KEY, http_client=httpx2.Client(), backend="httpx")


def test_an_httpx2_timeout_is_refused_naming_its_library() -> None:
    """timeout= takes httpx's Timeout whatever the backend; httpx2's is refused as httpx2's, not as a bare Timeout."""
    with pytest.raises(ClientValidationError, match=r"an httpx\.Timeout .*, got httpx2\.Timeout\(timeout=1\.0\)"):
        AnimalStoreClient(API_KEY, backend="httpx2", timeout=_httpx2().Timeout(1.0))
