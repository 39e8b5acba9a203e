"""Middleware: once per attempt, inside the retry loop, on every client and library, within its rules."""

from __future__ import annotations

import pickle
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from animalstore_client import (
    AnimalStoreClient,
    AsyncAnimalStoreClient,
    AsyncCallNext,
    AttemptInfo,
    CallNext,
    ClientValidationError,
    InternalServerError,
    MiddlewareError,
    NotFoundError,
    attempt_info,
)
from animalstore_client.testing import FakeAnimalStore, make_status_error

from .conftest import ALL_VARIANTS, API_KEY, ClientFactory
from .servers import LoopbackServer, respond
from .tls import ca_file, serve_tls

Before = Callable[[httpx.Request], None]
After = Callable[[httpx.Request, httpx.Response], None]


@pytest.fixture
def store() -> FakeAnimalStore:
    """An empty fake store with the test key."""
    return FakeAnimalStore(api_keys=[API_KEY])


@pytest.fixture
def url(store: FakeAnimalStore) -> Iterator[str]:
    """The store over HTTP on 127.0.0.1."""
    with store.serve() as base_url:
        yield base_url


def around(variant: str, before: Before | None = None, after: After | None = None) -> Any:
    """A middleware of the variant's kind running ``before`` and ``after`` around call_next."""
    if variant.startswith("sync"):

        def middleware(request: httpx.Request, call_next: CallNext) -> httpx.Response:
            if before is not None:
                before(request)
            response = call_next(request)
            if after is not None:
                after(request, response)
            return response

        return middleware

    async def async_middleware(request: httpx.Request, call_next: AsyncCallNext) -> httpx.Response:
        if before is not None:
            before(request)
        response = await call_next(request)
        if after is not None:
            after(request, response)
        return response

    return async_middleware


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_retried_call_passes_each_attempt_through_the_middleware_over_https(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore
) -> None:
    """Every client and library: the middleware sees attempts 1, 2, 3 of a call retried twice, and each answer."""
    seen: list[tuple[object, object, int]] = []
    middleware = around(
        variant,
        after=lambda request, response: seen.append(
            (
                request.extensions["animalstore.attempt"],
                request.extensions["animalstore.operation"],
                response.status_code,
            )
        ),
    )
    store.fail_next(503, times=2)
    with serve_tls(store) as tls_url:
        client = make_client(base_url=tls_url, verify=ca_file(), middleware=[middleware])
        assert client.list_pets() == []
    assert seen == [(1, "list_pets", 503), (2, "list_pets", 503), (3, "list_pets", 200)]


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_header_a_middleware_sets_reaches_the_service(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore, url: str
) -> None:
    """Every client and library: a header added by a middleware is sent, and the SDK's headers are kept."""

    def tag(request: httpx.Request) -> None:
        request.headers["X-Request-Id"] = f"req-{request.extensions['animalstore.attempt']}"

    client = make_client(base_url=url, middleware=[around(variant, before=tag)])
    created = client.create_pet(name="Rex", category_id=1)
    assert created.name == "Rex"
    sent = store.requests[-1]
    assert sent.headers["x-request-id"] == "req-1"
    assert sent.headers["content-type"] == "application/json"


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_middleware_nest_in_the_order_given(make_client: ClientFactory, variant: str, url: str) -> None:
    """The first middleware is the outermost: it runs first before the send and last after it."""
    order: list[str] = []

    def named(name: str) -> Any:
        return around(
            variant,
            before=lambda _request: order.append(f"{name} in"),
            after=lambda _request, _response: order.append(f"{name} out"),
        )

    make_client(base_url=url, middleware=[named("outer"), named("inner")]).list_pets()
    assert order == ["outer in", "inner in", "inner out", "outer out"]


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_each_attempt_starts_from_the_request_the_sdk_built(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore, url: str
) -> None:
    """A header a middleware appended on attempt 1 is not there on attempt 2."""

    def append(request: httpx.Request) -> None:
        request.headers["X-Trail"] = request.headers.get("X-Trail", "") + "x"

    store.fail_next(503)
    make_client(base_url=url, middleware=[around(variant, before=append)]).list_pets()
    assert [sent.headers["x-trail"] for sent in store.requests] == ["x", "x"]


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        (lambda r: r.headers.__setitem__("Authorization", "Bearer someone-else"), "Authorization"),
        (lambda r: r.headers.__delitem__("Authorization"), "Authorization"),
        (lambda r: setattr(r, "url", r.url.copy_with(host="elsewhere.example")), "where the API key is sent"),
        (lambda r: setattr(r, "url", r.url.copy_with(scheme="https")), "where the API key is sent"),
        (lambda r: setattr(r, "method", "DELETE"), "method"),
    ],
    ids=["other-key", "no-key", "other-host", "other-scheme", "other-method"],
)
@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_the_key_goes_only_where_the_client_sends_it(
    make_client: ClientFactory,
    variant: str,
    store: FakeAnimalStore,
    url: str,
    change: Callable[[httpx.Request], None],
    rule: str,
) -> None:
    """A middleware changing Authorization, the method or the origin is refused before anything is sent."""
    client = make_client(base_url=url, middleware=[around(variant, before=change)])
    with pytest.raises(ClientValidationError, match=rule) as caught:
        client.list_pets()
    assert caught.value.argument == "middleware"
    assert "someone-else" not in str(caught.value)
    assert store.requests == []


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_a_changed_path_and_query_are_allowed(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore, url: str
) -> None:
    """Within the origin a middleware may rewrite the path and the query (a gateway's prefix, a flag)."""

    def flag(request: httpx.Request) -> None:
        request.url = request.url.copy_set_param("status", "sold")

    make_client(base_url=url, middleware=[around(variant, before=flag)]).list_pets(limit=5)
    assert store.requests[-1].query == {"limit": ["5"], "status": ["sold"]}


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_a_middlewares_own_exception_ends_the_call_unretried(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore, url: str
) -> None:
    """A KeyError raised after a 503 came back is a MiddlewareError with the KeyError as cause; no retry follows."""

    def explode(_request: httpx.Request, _response: httpx.Response) -> None:
        raise KeyError("tenant")

    store.fail_next(503)
    client = make_client(base_url=url, middleware=[around(variant, after=explode)])
    with pytest.raises(MiddlewareError, match=r"raised KeyError: 'tenant'") as caught:
        client.list_pets()
    assert isinstance(caught.value.__cause__, KeyError)
    assert caught.value.attempts == 1
    assert len(store.requests) == 1
    restored = pickle.loads(pickle.dumps(caught.value))
    assert isinstance(restored, MiddlewareError)
    assert API_KEY not in repr(restored.request.headers)


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_sdk_errors_a_middleware_raises_pass_unchanged(make_client: ClientFactory, variant: str, url: str) -> None:
    """An AnimalStoreError raised by a middleware (a cache miss as NotFoundError, say) leaves the call as it is."""
    error = make_status_error(404, message="cached 404")

    def raise_it(_request: httpx.Request) -> None:
        raise error

    with pytest.raises(NotFoundError) as caught:
        make_client(base_url=url, middleware=[around(variant, before=raise_it)]).list_pets()
    assert caught.value is error


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_failure_call_next_raised_is_retried_through_the_middleware(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore, url: str
) -> None:
    """Every client and library: a reset connection passes through the middleware and is retried as without it."""
    failures: list[str] = []
    if variant.startswith("sync"):

        def watch(request: httpx.Request, call_next: CallNext) -> httpx.Response:
            try:
                return call_next(request)
            except httpx.TransportError as exc:
                failures.append(type(exc).__name__)
                raise

        middleware: Any = watch
    else:

        async def async_watch(request: httpx.Request, call_next: AsyncCallNext) -> httpx.Response:
            try:
                return await call_next(request)
            except httpx.TransportError as exc:
                failures.append(type(exc).__name__)
                raise

        middleware = async_watch
    store.fail_next_connection("reset")
    response = make_client(base_url=url, middleware=[middleware]).with_raw_response.list_pets()
    assert response.attempts == 2
    assert len(failures) == 1


def _twice_sync(request: httpx.Request, call_next: CallNext) -> httpx.Response:
    call_next(request)
    return call_next(request)


async def _twice_async(request: httpx.Request, call_next: AsyncCallNext) -> httpx.Response:
    await call_next(request)
    return await call_next(request)


def _cached_sync(request: httpx.Request, _call_next: CallNext) -> httpx.Response:
    return httpx.Response(200, json=[{"id": 1, "name": "Cached", "categoryId": 2}])


async def _cached_async(request: httpx.Request, _call_next: AsyncCallNext) -> httpx.Response:
    return httpx.Response(200, json=[{"id": 1, "name": "Cached", "categoryId": 2}])


def _not_a_response_sync(request: httpx.Request, call_next: CallNext) -> Any:
    call_next(request)
    return {"status": 200}


async def _not_a_response_async(request: httpx.Request, call_next: AsyncCallNext) -> Any:
    await call_next(request)
    return {"status": 200}


def _pick(variant: str, sync: Callable[..., Any], async_: Callable[..., Awaitable[Any]]) -> Any:
    return sync if variant.startswith("sync") else async_


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_call_next_runs_at_most_once_per_attempt(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore, url: str
) -> None:
    """A second call_next in one attempt is a MiddlewareError: only the client retries, so no POST is sent twice."""
    client = make_client(base_url=url, middleware=[_pick(variant, _twice_sync, _twice_async)])
    with pytest.raises(MiddlewareError, match="call_next twice in attempt 1: the first request was sent") as caught:
        client.create_pet(name="Rex", category_id=1)
    assert caught.value.attempts == 1
    assert len(store.pets) == 1


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_a_response_a_middleware_makes_is_parsed_and_nothing_is_sent(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore, url: str
) -> None:
    """A middleware answering from a cache: the SDK parses its response; the service sees nothing."""
    pets = make_client(base_url=url, middleware=[_pick(variant, _cached_sync, _cached_async)]).list_pets()
    assert [pet.name for pet in pets] == ["Cached"]
    assert store.requests == []


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_a_result_that_is_not_a_response_is_a_middleware_error(
    make_client: ClientFactory, variant: str, url: str
) -> None:
    """Returning a dict is a MiddlewareError naming the type, not an AttributeError inside the SDK."""
    client = make_client(base_url=url, middleware=[_pick(variant, _not_a_response_sync, _not_a_response_async)])
    with pytest.raises(MiddlewareError, match=r"returned dict, not an httpx\.Response"):
        client.list_pets()


def test_an_async_client_given_a_sync_function_says_what_it_needs(store: FakeAnimalStore) -> None:
    """A plain function is refused by the async client when it is made; a callable returning no awaitable, per call."""
    import asyncio

    def plain(request: httpx.Request, call_next: Any) -> httpx.Response:
        return httpx.Response(200, json=[])

    with pytest.raises(ClientValidationError, match="needs async middleware") as caught:
        store.async_client(middleware=[plain])  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]  # the mistake tested
    assert caught.value.argument == "middleware"

    class Plain:
        def __call__(self, request: httpx.Request, call_next: Any) -> httpx.Response:
            return httpx.Response(200, json=[])

    async def main() -> None:
        async with store.async_client(middleware=[Plain()]) as client:  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]  # the mistake tested
            with pytest.raises(MiddlewareError, match="needs async middleware"):
                await client.list_pets()

    asyncio.run(main())


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (lambda r, n: n(r), "list or tuple"),
        ("middleware", "list or tuple"),
        ([42], r"middleware\[0\] must be a callable"),
        ([lambda r, n: n(r)] * 101, "at most 100"),
    ],
    ids=["a-bare-function", "a-str", "not-callable", "too-many"],
)
def test_a_bad_middleware_argument_is_refused_when_the_client_is_made(value: object, match: str) -> None:
    """The constructor and with_options check middleware=, naming the argument."""
    with pytest.raises(ClientValidationError, match=match) as caught:
        AnimalStoreClient(API_KEY, middleware=value)  # type: ignore[arg-type]
    assert caught.value.argument == "middleware"
    client = AnimalStoreClient(API_KEY)
    with pytest.raises(ClientValidationError, match=match):
        client.with_options(middleware=value)  # type: ignore[arg-type]


def test_the_sync_client_refuses_a_coroutine_function() -> None:
    """An async def given to AnimalStoreClient is refused at once, not when a call would hang on it."""

    async def tag(request: httpx.Request, call_next: AsyncCallNext) -> httpx.Response:
        return await call_next(request)

    with pytest.raises(ClientValidationError, match="coroutine function"):
        AnimalStoreClient(API_KEY, middleware=[tag])  # type: ignore[list-item]
    assert AsyncAnimalStoreClient(API_KEY, middleware=[tag]).middleware == (tag,)


def test_with_options_replaces_the_middleware() -> None:
    """with_options(middleware=...) replaces the list; left out, the copy keeps it; [] removes it."""

    def one(request: httpx.Request, call_next: CallNext) -> httpx.Response:
        return call_next(request)

    def two(request: httpx.Request, call_next: CallNext) -> httpx.Response:
        return call_next(request)

    client = AnimalStoreClient(API_KEY, middleware=[one])
    assert client.with_options(max_retries=5).middleware == (one,)
    assert client.with_options(middleware=[*client.middleware, two]).middleware == (one, two)
    assert client.with_options(middleware=[]).middleware == ()
    assert client.middleware == (one,)


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_every_exit_of_a_failing_middleware_leaves_the_pool_usable(variant: str) -> None:
    """Every client and library: 30 calls whose middleware raises after the answer came leave one idle connection."""
    import asyncio

    body = b'[{"id": 1, "name": "Rex", "categoryId": 2}]'
    with LoopbackServer([respond(200, body)]) as server:

        def explode(_request: httpx.Request, _response: httpx.Response) -> None:
            raise RuntimeError("after the answer")

        middleware = around(variant, after=explode)
        backend: Any = variant.split("-")[1] if "-" in variant else None
        if variant.startswith("sync"):
            with AnimalStoreClient(
                API_KEY, base_url=server.base_url, middleware=[middleware], backend=backend
            ) as client:
                for _ in range(30):
                    with pytest.raises(MiddlewareError):
                        client.list_pets()
                assert [pet.id for pet in client.with_options(middleware=[]).list_pets()] == [1]
                assert server.wait_for_open_connections(at_most=1) <= 1
        else:

            async def main() -> None:
                async with AsyncAnimalStoreClient(
                    API_KEY,
                    base_url=server.base_url,
                    middleware=[middleware],
                    backend=backend,
                ) as client:
                    for _ in range(30):
                        with pytest.raises(MiddlewareError):
                            await client.list_pets()
                    assert [pet.id for pet in await client.with_options(middleware=[]).list_pets()] == [1]
                    assert server.wait_for_open_connections(at_most=1) <= 1

            asyncio.run(main())


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_middleware_sees_the_503_before_the_sdk_turns_it_into_an_error(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore, url: str
) -> None:
    """Every client and library: statuses and bodies reach the middleware as the service sent them."""
    bodies: list[bytes] = []
    store.fail_next(503, times=3)
    client = make_client(
        base_url=url,
        max_retries=2,
        middleware=[around(variant, after=lambda _request, response: bodies.append(response.content))],
    )
    with pytest.raises(InternalServerError):
        client.list_pets()
    assert len(bodies) == 3
    assert all(b'"status":503' in body.replace(b" ", b"") for body in bodies)


def test_the_attempts_of_one_call_share_a_call_id(store: FakeAnimalStore) -> None:
    """animalstore.call_id is the same on every attempt of a call and differs between calls."""
    seen: list[tuple[int, str]] = []

    def record(request: httpx.Request, call_next: CallNext) -> httpx.Response:
        seen.append((request.extensions["animalstore.attempt"], request.extensions["animalstore.call_id"]))
        return call_next(request)

    store.fail_next(503)
    client = store.client(middleware=[record])
    client.list_pets()
    client.list_pets()
    assert [attempt for attempt, _ in seen] == [1, 2, 1]
    first, retried, second = (call_id for _, call_id in seen)
    assert first == retried != second
    assert len(first) == 16


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_attempt_info_is_the_typed_view_of_the_request_extensions(
    make_client: ClientFactory, variant: str, store: FakeAnimalStore, url: str
) -> None:
    """attempt_info(request) gives the operation, attempt and call id the extensions hold, on every attempt."""
    seen: list[tuple[AttemptInfo, dict[str, Any]]] = []

    def record(request: httpx.Request) -> None:
        extensions = {k: v for k, v in request.extensions.items() if k.startswith("animalstore.")}
        seen.append((attempt_info(request), extensions))

    store.fail_next(503)
    client = make_client(base_url=url, middleware=[around(variant, before=record)])
    client.list_pets()
    assert [(info.operation, info.attempt) for info, _ in seen] == [("list_pets", 1), ("list_pets", 2)]
    for info, extensions in seen:
        assert extensions == {
            "animalstore.operation": info.operation,
            "animalstore.attempt": info.attempt,
            "animalstore.call_id": info.call_id,
        }
    assert seen[0][0].call_id == seen[1][0].call_id
    assert seen[0][0] != seen[1][0]


def test_attempt_info_is_a_read_only_value() -> None:
    """Equal and hashed by its three values, shown with them, and not changed by assignment."""
    info = AttemptInfo(operation="list_pets", attempt=2, call_id="0123456789abcdef")
    same = AttemptInfo(operation="list_pets", attempt=2, call_id="0123456789abcdef")
    assert info == same
    assert hash(info) == hash(same)
    assert info != AttemptInfo(operation="list_pets", attempt=3, call_id="0123456789abcdef")
    assert info != ("list_pets", 2, "0123456789abcdef")
    assert repr(info) == "AttemptInfo(operation='list_pets', attempt=2, call_id='0123456789abcdef')"
    with pytest.raises(AttributeError):
        info.attempt = 3  # type: ignore[misc]  # pyright: ignore[reportAttributeAccessIssue]
    assert pickle.loads(pickle.dumps(info)) == info


def test_attempt_info_of_a_request_no_client_made_says_so() -> None:
    """A request without the extensions (one of the caller's, or a new one a middleware made) is a
    ClientValidationError that says where the extensions come from, not a KeyError."""
    request = httpx.Request("GET", "https://x.example/v1/pets", headers={"Authorization": "Bearer sk-secret"})
    with pytest.raises(ClientValidationError, match=r"no .animalstore\.attempt. extension") as caught:
        attempt_info(request)
    assert caught.value.argument == "request"
    assert caught.value.value is None
    assert "sk-secret" not in str(caught.value)
