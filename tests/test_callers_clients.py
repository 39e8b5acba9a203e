"""A caller's own http_client, whatever its library: what it may not do to the SDK's promises.

The SDK sends its own key, so a client with ``auth`` of its own is refused
before any request; code of the caller's inside the client (an event hook,
an auth flow, a transport) that raises ends the call as a `MiddlewareError`,
unretried, as a failing middleware does; and a client its owner closed is
named as such. Each rule runs over every library whose client can break it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import aiohttp
import httpx
import pytest

from animalstore_client import (
    AnimalStoreClient,
    AnimalStoreError,
    AsyncAnimalStoreClient,
    ClientValidationError,
    MiddlewareError,
    NotFoundError,
)
from animalstore_client._attempts import HTTP_STACK_PACKAGES, raised_by_callers_code

from .conftest import API_KEY, SyncView, needs_httpx2, needs_pyreqwest
from .servers import LoopbackServer, respond

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}

# The libraries of httpx's kind, whose clients run the caller's hooks, auth flows and transports.
HTTPX_KINDS = [
    "httpx-sync",
    "httpx-async",
    pytest.param("httpx2-sync", marks=[needs_httpx2, pytest.mark.httpx2]),
    pytest.param("httpx2-async", marks=[needs_httpx2, pytest.mark.httpx2]),
]


def _library(kind: str) -> Any:
    if kind.startswith("httpx2"):
        import httpx2

        return httpx2
    return httpx


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for the async kinds' client and the calls made through it."""
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def _sdk_client(kind: str, http: Any, loop: asyncio.AbstractEventLoop, **options: Any) -> Any:
    """The SDK client of ``kind`` over ``http``; an async one behind a `SyncView` on ``loop``."""
    if kind.endswith("sync"):
        return AnimalStoreClient(API_KEY, http_client=http, **options)
    return SyncView(AsyncAnimalStoreClient(API_KEY, http_client=http, **options), loop)


def _library_client(kind: str, **settings: Any) -> Any:
    library = _library(kind)
    return library.Client(**settings) if kind.endswith("sync") else library.AsyncClient(**settings)


def _hook(kind: str, action: Callable[[Any], None]) -> Any:
    """An event hook of the kind's client (a coroutine function for an async client) running ``action``."""
    if kind.endswith("sync"):
        return action

    async def hook(subject: Any) -> None:
        action(subject)

    return hook


def _answering(kind: str, seen: list[Any], status: int = 200) -> Any:
    library = _library(kind)

    def handler(request: Any) -> Any:
        seen.append(request)
        return library.Response(status, json=[PET] if status == 200 else {"code": "x", "message": "y"})

    return library.MockTransport(handler)


@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_a_client_with_auth_of_its_own_is_refused_naming_it(kind: str, loop: asyncio.AbstractEventLoop) -> None:
    """A client whose auth would replace the Bearer key is a ClientValidationError naming the auth's type only."""
    http = _library_client(kind, auth=("user", "the-other-services-password"))
    with pytest.raises(ClientValidationError, match=r"http_client must have no auth of its own") as info:
        _sdk_client(kind, http, loop)
    assert info.value.argument == "http_client"
    assert "BasicAuth" in str(info.value)
    assert "the-other-services-password" not in f"{info.value} {info.value.value!r}"


# Newer aiohttp deprecates BasicAuth (it still works, and sessions made with it exist).
@pytest.mark.filterwarnings("ignore:BasicAuth is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:The .auth. parameter is deprecated:DeprecationWarning")
def test_an_aiohttp_session_with_auth_of_its_own_is_refused() -> None:
    """aiohttp refuses every request with both its session's auth and the SDK's Authorization: refused up front."""

    async def main() -> ClientValidationError:
        async with aiohttp.ClientSession(auth=aiohttp.BasicAuth("user", "pw")) as session:
            with pytest.raises(ClientValidationError) as info:
                AsyncAnimalStoreClient(API_KEY, http_client=session)
            return info.value

    error = asyncio.run(main())
    assert error.argument == "http_client"
    assert "aiohttp client with auth=aiohttp.helpers.BasicAuth" in str(error)


@pytest.mark.parametrize("kind", HTTPX_KINDS)
@pytest.mark.parametrize("where", ["request hook", "response hook", "raise_for_status hook", "transport"])
def test_the_callers_code_raising_in_its_client_is_a_middleware_error_not_retried(
    kind: str, where: str, loop: asyncio.AbstractEventLoop, sleeps: list[float]
) -> None:
    """A bug in the caller's hooks or transport is a MiddlewareError with the original as cause, sent once."""
    seen: list[Any] = []
    calls: list[str] = []

    def bug(_: Any) -> None:
        calls.append(where)
        raise ValueError("a bug of the caller's")

    def check_status(response: Any) -> None:
        calls.append(where)
        response.raise_for_status()

    settings: dict[str, Any] = {"transport": _answering(kind, seen, 404 if where.startswith("raise") else 200)}
    if where == "request hook":
        settings["event_hooks"] = {"request": [_hook(kind, bug)]}
    elif where == "response hook":
        settings["event_hooks"] = {"response": [_hook(kind, bug)]}
    elif where == "raise_for_status hook":
        settings["event_hooks"] = {"response": [_hook(kind, check_status)]}
    else:
        library = _library(kind)

        def broken(request: Any) -> Any:
            calls.append(where)
            raise ValueError("a bug of the caller's")

        settings["transport"] = library.MockTransport(broken)
    http = _library_client(kind, **settings)
    client = _sdk_client(kind, http, loop, max_retries=2)
    with pytest.raises(MiddlewareError, match=r"http_client's own code .* raised") as info:
        client.list_pets()
    assert calls == [where]  # once: not retried
    assert sleeps == []
    assert info.value.attempts == 1
    expected = _library(kind).HTTPStatusError if where.startswith("raise") else ValueError
    assert isinstance(info.value.__cause__, expected)


def _raise_in(module: str, body: str) -> BaseException:
    """The exception raised by ``body`` run as code of module ``module`` (its frames say so)."""
    namespace: dict[str, Any] = {"__name__": module}
    exec(compile(f"def fail():\n    {body}\n", f"<{module}>", "exec"), namespace)
    try:
        namespace["fail"]()
    except Exception as exc:  # the point: whatever it raised
        return exc
    raise AssertionError("did not raise")


def test_where_an_exception_was_raised_tells_the_callers_code_from_the_librarys() -> None:
    """Raised in the caller's module: theirs; in a library of the stack (past stdlib frames): the exchange's."""
    assert raised_by_callers_code(_raise_in("myapp.hooks", "raise ValueError('bug')"))
    assert raised_by_callers_code(_raise_in("myapp.hooks", "import json; json.loads('{')"))
    assert not raised_by_callers_code(_raise_in("httpcore._backends.anyio", "import json; json.loads('{')"))
    assert not raised_by_callers_code(_raise_in("anyio.streams.tls", "import ssl; raise ssl.SSLError(1, 'alert')"))
    for package in ("aiohttp", "urllib3", "pyreqwest", "httpx2", "httpcore2"):
        assert package in HTTP_STACK_PACKAGES
    # Only the innermost telling frame counts: a tracer wrapping the library's send does not make it the caller's.
    inner = _raise_in("h11._state", "raise RuntimeError('library bug')")
    with pytest.raises(RuntimeError) as info:
        _reraise_through_a_wrapper(inner)
    assert not raised_by_callers_code(info.value)


def _reraise_through_a_wrapper(exc: BaseException) -> None:
    raise exc


def test_an_aiohttp_middleware_of_the_callers_that_raises_is_a_middleware_error() -> None:
    """A middleware of the caller's aiohttp session that raises ends the call at once, unretried, nothing sent."""
    calls: list[str] = []

    async def bad(request: Any, handler: Any) -> Any:
        calls.append("called")
        raise ValueError("a bug of the caller's")

    async def main(base_url: str) -> BaseException:
        async with aiohttp.ClientSession(middlewares=(bad,)) as session:
            client = AsyncAnimalStoreClient(API_KEY, base_url=base_url, http_client=session)
            with pytest.raises(MiddlewareError) as info:
                await client.list_pets()
            return info.value

    with LoopbackServer([respond(200, [PET])] * 3) as server:
        error = asyncio.run(main(server.base_url))
        assert server.received == []
    assert calls == ["called"]
    assert isinstance(error.__cause__, ValueError)


@needs_pyreqwest
def test_a_pyreqwest_middleware_of_the_callers_that_raises_is_a_middleware_error() -> None:
    """A middleware of the caller's pyreqwest client that raises ends the call at once, unretried, nothing sent."""
    from pyreqwest.client import SyncClientBuilder

    calls: list[str] = []

    def bad(request: Any, next_: Any) -> Any:
        calls.append("called")
        raise ValueError("a bug of the caller's")

    http = SyncClientBuilder().with_middleware(bad).build()
    with LoopbackServer([respond(200, [PET])] * 3) as server:
        try:
            with pytest.raises(MiddlewareError) as info:
                AnimalStoreClient(API_KEY, base_url=server.base_url, http_client=http).list_pets()
        finally:
            http.close()
        assert server.received == []
    assert calls == ["called"]
    assert isinstance(info.value.__cause__, ValueError)


def test_an_aiohttp_session_raising_for_status_still_gives_the_typed_error() -> None:
    """A caller's session made with raise_for_status=True: a 404 is still NotFoundError, not a connection error."""

    async def main(base_url: str) -> None:
        async with aiohttp.ClientSession(raise_for_status=True) as session:
            client = AsyncAnimalStoreClient(API_KEY, base_url=base_url, http_client=session)
            with pytest.raises(NotFoundError):
                await client.list_pets()

    with LoopbackServer([respond(404, {"code": "not_found", "message": "none", "status": 404})]) as server:
        asyncio.run(main(server.base_url))
        assert len(server.received) == 1


@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_a_client_its_owner_closed_is_named_so(kind: str, loop: asyncio.AbstractEventLoop) -> None:
    """A call through a caller's client that its owner closed says the http_client was closed, not the SDK client."""
    http = _library_client(kind, transport=_answering(kind, []))
    client = _sdk_client(kind, http, loop)
    if kind.endswith("sync"):
        http.close()
    else:
        loop.run_until_complete(http.aclose())
    with pytest.raises(AnimalStoreError, match=r"The http_client of this \w+ was closed \(the SDK never closes"):
        client.list_pets()


def test_an_aiohttp_session_its_owner_closed_is_named_so() -> None:
    """A call through a caller's aiohttp session that its owner closed says the http_client was closed."""

    async def main() -> None:
        session = aiohttp.ClientSession()
        client = AsyncAnimalStoreClient(API_KEY, http_client=session)
        await session.close()
        with pytest.raises(AnimalStoreError, match=r"The http_client of this AsyncAnimalStoreClient was closed"):
            await client.list_pets()

    asyncio.run(main())
