"""One exchange per attempt decides "was it stored?": the cases 1.4.0 got wrong, over every pair they apply to.

Each case runs against a loopback server that counts what it stored: a pet is
stored at most once, ``may_have_been_processed`` is ``True`` whenever the
server acted, and ``False`` only where the exchange proved that nothing was
written.

1. No report below the caller's code (a transport that is not its library's
   own: a ``MockTransport``, a hand-written one, httpx-aiohttp's): any failure
   may follow a stored pet, whatever its class.
2. No 5xx is proof, with the service's Error body or without.
3. A caller's client setting ``Host`` (a default header, a request hook, an
   aiohttp session's default header or middleware) sends nothing anywhere.
4. A sync request hook that waits past ``total_timeout``: nothing is written.
5. The key in a cause that is not text never leaves in ``str``, ``repr``,
   ``args``, the cause chain or a formatted traceback.
"""

from __future__ import annotations

import asyncio
import pickle
import socket
import time
import traceback
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import respx

from animalstore_client import (
    AnimalStoreClient,
    APIConnectionError,
    APIError,
    APITimeoutError,
    AsyncAnimalStoreClient,
    InternalServerError,
    MaskedException,
    MiddlewareError,
)

from . import test_wire
from .conftest import ALL_VARIANTS, API_KEY, ClientFactory
from .servers import LoopbackServer, respond
from .test_callers_clients import CALLER_KINDS, HTTPX_KINDS, Callers, _hook, _library

callers = test_wire.callers
"""The fixture: callers' clients of every library on one loop of the test's own."""

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
LONG_KEY = "sk-exchange-test-0123456789abcdef"
"""A key long enough to be masked in free text (the suite's own key is too)."""


def _stored_then(ending: Callable[[socket.socket], None]) -> Callable[[socket.socket], bool]:
    """A server action: read the request (the server records it: stored), then end the connection by ``ending``."""

    def action(conn: socket.socket) -> bool:
        ending(conn)
        return False

    return action


def _name(kind: Any) -> str:
    """A kind's name, whether plain or a ``pytest.param`` carrying marks."""
    return str(getattr(kind, "values", [kind])[0])


def _closed(conn: socket.socket) -> None:
    del conn  # the server closes it


# --- 1. no report: no evidence ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("failure", ["ConnectError", "ConnectTimeout", "PoolTimeout", "ReadError"])
@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_a_callers_transport_that_reports_nothing_is_no_evidence(kind: str, failure: str, callers: Callers) -> None:
    """A transport of the caller's (its library's MockTransport, not the library's own) stores the pet and raises
    even a 'nothing sent' class: the POST is not sent again, and the error says the pet may have been stored."""
    library = _library(kind)
    stored: list[str] = []

    def storing(request: Any) -> Any:
        stored.append(request.method)
        raise getattr(library, failure)("the store acted, then the connection went", request=request)

    http = callers.library_client(kind, transport=library.MockTransport(storing))
    client = callers.sdk_client(kind, http, base_url="https://store.test/v1", max_retries=2)
    with pytest.raises(APIConnectionError) as info:
        client.create_pet(name="Rex", category_id=3)
    assert stored == ["POST"]
    assert info.value.may_have_been_processed is True
    assert info.value.attempts == 1
    assert "may have been stored" in str(info.value)


def test_a_mock_transport_connect_error_is_no_evidence_but_a_get_is_retried() -> None:
    """A MockTransport handler's ConnectError: create_pet is not retried (may have been processed); list_pets is."""
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        if len(seen) in (1, 2):
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json=[PET])

    http = httpx.Client(transport=httpx.MockTransport(handler))
    with AnimalStoreClient(API_KEY, base_url="https://store.test/v1", http_client=http) as client:
        with pytest.raises(APIConnectionError) as info:
            client.create_pet(name="Rex", category_id=3)
        assert info.value.may_have_been_processed is True
        assert seen == ["POST"]
        assert client.list_pets()[0].id == 7
    assert seen == ["POST", "GET", "GET"]


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
@pytest.mark.parametrize("failure", [httpx.ConnectError, httpx.ReadTimeout])
def test_a_respx_mock_of_the_default_backend_is_no_evidence(
    make_client: ClientFactory, failure: type[httpx.TransportError]
) -> None:
    """respx patches in below the SDK's transport, above its pool's own network code: a failure it raises comes with
    no report, so create_pet is sent once and may have been stored; a read is retried."""
    with respx.mock(base_url="https://store.test/v1", assert_all_called=False) as router:
        create = router.post("/pets").mock(side_effect=failure("mocked"))
        listing = router.get("/pets").mock(side_effect=[failure("mocked"), httpx.Response(200, json=[PET])])
        client = make_client(base_url="https://store.test/v1", max_retries=2)
        with pytest.raises(APIConnectionError) as info:
            client.create_pet(name="Rex", category_id=3)
        assert client.list_pets()[0].id == 7
    assert create.call_count == 1
    assert info.value.may_have_been_processed is True
    assert listing.call_count == 2


@pytest.mark.parametrize("ending", ["close", "reset"])
def test_httpx_aiohttps_transport_after_a_stored_pet(ending: str) -> None:
    """httpx-aiohttp (openai-python's DefaultAioHttpClient's transport) turns a disconnect after the write into its
    own classes: the pet was stored once, and may have been."""
    httpx_aiohttp = pytest.importorskip("httpx_aiohttp", reason="httpx-aiohttp is not installed")

    def reset(conn: socket.socket) -> None:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    action = _stored_then(_closed if ending == "close" else reset)

    async def main(url: str) -> APIError:
        async with (
            httpx.AsyncClient(transport=httpx_aiohttp.AiohttpTransport()) as http,
            AsyncAnimalStoreClient(API_KEY, base_url=url, http_client=http) as client,
        ):
            with pytest.raises(APIError) as info:
                await client.create_pet(name="Rex", category_id=3)
            return info.value

    with LoopbackServer([action, action, action]) as server:
        error = asyncio.run(main(server.base_url))
    assert len(server.received) == 1
    assert error.may_have_been_processed is True


def test_a_response_hook_refused_after_the_201_is_no_proof() -> None:
    """A response hook whose own call is refused after the 201, behind httpx-aiohttp: stored once, may have been."""
    httpx_aiohttp = pytest.importorskip("httpx_aiohttp", reason="httpx-aiohttp is not installed")

    async def metrics(response: httpx.Response) -> None:
        raise httpx.ConnectError("metrics service refused", request=response.request)

    async def main(url: str) -> MiddlewareError | APIError:
        async with (
            httpx.AsyncClient(transport=httpx_aiohttp.AiohttpTransport(), event_hooks={"response": [metrics]}) as http,
            AsyncAnimalStoreClient(API_KEY, base_url=url, http_client=http) as client,
        ):
            with pytest.raises((MiddlewareError, APIError)) as info:
                await client.create_pet(name="Rex", category_id=3)
            error = info.value
            assert isinstance(error, (MiddlewareError, APIError))
            return error

    with LoopbackServer([respond(201, PET), respond(201, PET), respond(201, PET)]) as server:
        error = asyncio.run(main(server.base_url))
    assert len(server.received) == 1
    assert error.may_have_been_processed is True


def test_the_testing_kits_refusal_reports_like_a_connection() -> None:
    """The FakeAnimalStore's in-process transport reports as a socket would: a refusal wrote nothing and is retried
    for a create; a reset came after the write, and is not."""
    from animalstore_client.testing import FakeAnimalStore

    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next_connection("refused", times=2)
    with store.client() as client:
        assert client.create_pet(name="Rex", category_id=3).name == "Rex"
        store.fail_next_connection("reset")
        with pytest.raises(APIConnectionError) as info:
            client.create_pet(name="Tom", category_id=3)
    assert info.value.may_have_been_processed is True
    assert sorted(pet.name for pet in store.pets) == ["Rex", "Tom"]


# --- 2. no 5xx is proof ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
@pytest.mark.parametrize("status", [500, 502, 503, 504])
@pytest.mark.parametrize("body", ["service", "gateway"])
def test_no_5xx_is_proof_that_nothing_was_stored(make_client: ClientFactory, status: int, body: str) -> None:
    """A gateway's 5xx in the service's own Error format (nginx's error_page with a JSON page, or a backup's genuine
    503 after proxy_next_upstream non_idempotent) or a bare one: the POST is sent once, and may have been stored."""
    payload: object = {"code": "unavailable", "message": "busy", "status": status} if body == "service" else "<h1>"
    with LoopbackServer([respond(status, payload, {"Retry-After": "0"}), respond(201, PET)]) as server:
        client = make_client(base_url=server.base_url, max_retries=2)
        with pytest.raises(InternalServerError) as info:
            client.create_pet(name="Rex", category_id=3)
    assert len(server.received) == 1
    assert info.value.may_have_been_processed is True
    assert "may have been stored" in str(info.value)


# --- 3. the Host a caller's client sets ------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["default-header", "request-hook"])
@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_a_host_header_set_by_a_callers_client_sends_nothing(kind: str, how: str, callers: Callers) -> None:
    """A Host of another virtual host, from the client's default headers or a request hook: a MiddlewareError that
    says so; not a byte of the request (nor the key) was written, and nothing may have been stored."""
    with LoopbackServer([respond(201, PET)]) as server:

        def elsewhere(request: Any) -> None:
            request.headers["Host"] = "admin.internal.test"

        settings: dict[str, Any] = (
            {"headers": {"Host": "admin.internal.test"}}
            if how == "default-header"
            else {"event_hooks": {"request": [_hook(kind, elsewhere)]}}
        )
        http = callers.library_client(kind, **settings)
        client = callers.sdk_client(kind, http, base_url=server.base_url, max_retries=2)
        with pytest.raises(MiddlewareError, match=r"Host header to 'admin.internal.test'.* nothing was sent") as info:
            client.create_pet(name="Rex", category_id=3)
        assert info.value.may_have_been_processed is False
        assert server.received == []


@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_the_host_httpx_writes_itself_is_accepted(kind: str, callers: Callers) -> None:
    """The Host the library writes from base_url (with its port) passes the check: the call goes through."""
    with LoopbackServer([respond(201, PET)]) as server:
        http = callers.library_client(kind)
        client = callers.sdk_client(kind, http, base_url=server.base_url)
        assert client.create_pet(name="Rex", category_id=3).id == 7
    assert server.received[0].headers["host"] == server.base_url.split("//")[1].split("/")[0]


@pytest.mark.parametrize("how", ["default-header", "middleware"])
def test_an_aiohttp_session_setting_host_sends_nothing(how: str, callers: Callers) -> None:
    """An aiohttp session's default Host, or a session middleware setting it: refused before the first byte."""
    if "aiohttp-async" not in [_name(kind) for kind in CALLER_KINDS]:
        pytest.skip("aiohttp is not installed")
    import aiohttp

    async def middleware(request: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
        request.headers["Host"] = "admin.internal.test"
        response: aiohttp.ClientResponse = await handler(request)
        return response

    settings: dict[str, Any] = (
        {"headers": {"Host": "admin.internal.test"}} if how == "default-header" else {"middlewares": (middleware,)}
    )
    with LoopbackServer([respond(201, PET)]) as server:
        http = callers.library_client("aiohttp-async", **settings)
        client = callers.sdk_client("aiohttp-async", http, base_url=server.base_url, max_retries=2)
        with pytest.raises(MiddlewareError, match=r"Host header to 'admin.internal.test'") as info:
            client.create_pet(name="Rex", category_id=3)
        assert info.value.may_have_been_processed is False
        assert server.received == []


# --- 4. a sync hook that outlives the deadline -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", [kind for kind in HTTPX_KINDS if _name(kind).endswith("-sync")])
def test_a_sync_hook_that_waits_past_the_deadline_writes_nothing(kind: str, callers: Callers) -> None:
    """A request hook that waits (a token refresh, a rate limiter) past total_timeout: the request is not written
    after it; APITimeoutError, nothing stored."""
    with LoopbackServer([respond(201, PET)]) as server:

        def slow(request: Any) -> None:
            time.sleep(0.6)

        http = callers.library_client(kind, event_hooks={"request": [slow]})
        client = callers.sdk_client(kind, http, base_url=server.base_url, total_timeout=0.3, max_retries=2)
        with pytest.raises(APITimeoutError) as info:
            client.create_pet(name="Rex", category_id=3)
        assert info.value.may_have_been_processed is False
        assert "nothing was stored" in str(info.value)
        assert server.received == []


# --- 5. the key in a cause that is not text --------------------------------------------------------------------------


class _Shown(Exception):
    """An exception whose __str__ quotes what it was given."""

    def __init__(self, held: object) -> None:
        super().__init__("custom")
        self.held = held

    def __str__(self) -> str:
        return f"could not refresh: {self.held!r}"


class _Unshowable(Exception):
    """An exception whose __str__ fails, holding the headers."""

    def __init__(self, held: object) -> None:
        super().__init__(held)

    def __str__(self) -> str:
        raise RuntimeError("no text")


def _pydantic_error(request: httpx.Request) -> Exception:
    pydantic: Any = pytest.importorskip("pydantic", reason="pydantic is not installed")
    token = pydantic.create_model("Token", expires=(int, ...))
    try:
        token.model_validate({"expires": request.headers["authorization"]})
    except pydantic.ValidationError as exc:
        error: Exception = exc
        return error
    raise AssertionError("pydantic accepted a bearer token as an int")


SHAPES: dict[str, Callable[[httpx.Request], Exception]] = {
    "bytes": lambda request: ValueError(request.headers["authorization"].encode()),
    "raw-headers": lambda request: ValueError(request.headers.raw),
    "mapping": lambda request: ValueError(dict(request.headers)),
    "custom-str": lambda request: _Shown(request.headers["authorization"]),
    "nested-args": lambda request: ValueError(("refresh", [{"auth": request.headers["authorization"].encode()}])),
    "unshowable": lambda request: _Unshowable(dict(request.headers)),
    "pydantic": _pydantic_error,
}


def _no_key_anywhere(error: BaseException) -> None:
    """``error``'s str, repr, args, each link of its chain (and a masked copy pickled), its formatted traceback: none
    shows the key, as text or as its bytes' hex."""
    shown = [str(error), repr(error), repr(error.args), "".join(traceback.format_exception(error))]
    link: BaseException | None = error
    while link is not None:
        shown += [repr(link.args), repr(vars(link))]
        try:
            shown += [str(link), repr(link)]
        except RuntimeError:
            shown.append(type(link).__name__)  # an unshowable link left in the chain: its attributes are checked
        if isinstance(link, MaskedException):
            shown.append(repr(pickle.dumps(link)))
        link = link.__cause__ or link.__context__
    assert not [text for text in shown if API_KEY in text or API_KEY.encode().hex() in text]


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_the_key_never_leaves_in_a_cause_that_is_not_text(kind: str, shape: str, callers: Callers) -> None:
    """A request hook raising an exception that holds the key as bytes, header lists, mappings, a custom __str__,
    nested args or a pydantic error: no key in the SDK error's str, repr, args, cause chain, a pickled cause or
    the traceback logging.exception writes."""
    make = SHAPES[shape]

    def hook(request: Any) -> None:
        raise make(httpx.Request(request.method, str(request.url), headers=request.headers.raw))

    http = callers.library_client(kind, event_hooks={"request": [_hook(kind, hook)]})
    client = callers.sdk_client(kind, http, base_url="https://store.test/v1")
    with pytest.raises(MiddlewareError) as info:
        client.create_pet(name="Rex", category_id=3)
    _no_key_anywhere(info.value)
    cause = info.value.__cause__
    assert isinstance(cause, MaskedException)  # each shape held the key: its copy, not the original, is chained
    assert cause.original_class.rsplit(".", 1)[-1] in {"ValueError", "_Shown", "_Unshowable", "ValidationError"}
    assert "[redacted]" in str(cause) or shape == "unshowable"


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_key_never_leaves_from_an_aiohttp_session_middleware(shape: str, callers: Callers) -> None:
    """The same shapes raised by an aiohttp session's middleware, holding the request's headers."""
    if "aiohttp-async" not in [_name(kind) for kind in CALLER_KINDS]:
        pytest.skip("aiohttp is not installed")
    import aiohttp

    make = SHAPES[shape]

    async def middleware(request: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
        raise make(httpx.Request(request.method, str(request.url), headers=list(request.headers.items())))

    http = callers.library_client("aiohttp-async", middlewares=(middleware,))
    client = callers.sdk_client("aiohttp-async", http, base_url="https://store.test/v1")
    with pytest.raises(MiddlewareError) as info:
        client.create_pet(name="Rex", category_id=3)
    _no_key_anywhere(info.value)


def test_a_cause_without_the_key_is_kept_as_it_was() -> None:
    """An exception of the caller's that does not hold the key stays the cause itself, its class and attributes."""
    seen = ValueError(b"rate limited", {"retry": 3})

    def hook(request: httpx.Request) -> None:
        raise seen

    http = httpx.Client(event_hooks={"request": [hook]}, transport=httpx.MockTransport(lambda r: httpx.Response(201)))
    with (
        AnimalStoreClient(LONG_KEY, base_url="https://store.test/v1", http_client=http) as client,
        pytest.raises(MiddlewareError) as info,
    ):
        client.create_pet(name="Rex", category_id=3)
    assert info.value.__cause__ is seen


# --- a proxy's tunnel is not the request ------------------------------------------------------------------------------


def _tunnel_refused(proxy: LoopbackServer) -> None:
    proxy.script = [respond(502, {"message": "no route to the origin"})] * 3


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_a_refused_tunnel_wrote_nothing_on_the_sdks_pool(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through HTTPS_PROXY, a proxy refusing the CONNECT (502): the CONNECT's bytes went to the proxy, not the
    request's to the service, so create_pet is retried and nothing was stored."""
    with LoopbackServer() as proxy:
        _tunnel_refused(proxy)
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
        client = make_client(base_url="https://pets.internal.example/v1", max_retries=2)
        with pytest.raises(APIConnectionError) as info:
            client.create_pet(name="Rex", category_id=3)
    assert [received.method for received in proxy.received] == ["CONNECT"] * 3
    assert info.value.may_have_been_processed is False


@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_a_refused_tunnel_wrote_nothing_on_a_callers_client(kind: str, callers: Callers) -> None:
    """The same through a caller's httpx or httpx2 client made with proxy=: httpcore's trace reports the CONNECT's
    steps, which are not the request's."""
    with LoopbackServer() as proxy:
        _tunnel_refused(proxy)
        http = callers.library_client(kind, proxy=f"http://127.0.0.1:{proxy.port}")
        client = callers.sdk_client(kind, http, base_url="https://pets.internal.example/v1", max_retries=2)
        with pytest.raises(APIConnectionError) as info:
            client.create_pet(name="Rex", category_id=3)
    assert [received.method for received in proxy.received] == ["CONNECT"] * 3
    assert info.value.may_have_been_processed is False


@pytest.mark.parametrize("kind", [kind for kind in HTTPX_KINDS if _name(kind).startswith("httpx-")])
def test_the_request_handed_back_carries_no_check_of_the_attempt(kind: str, callers: Callers) -> None:
    """An error's request, replayed later through a client of the caller's, is not refused by the attempt's deadline
    or Host checks: the exchange's trace is taken off once the request was sent, and a caller's own stays."""
    with LoopbackServer([respond(500, {}), respond(201, PET)]) as server:
        http = callers.library_client(kind)
        client = callers.sdk_client(kind, http, base_url=server.base_url, total_timeout=5, max_retries=0)
        with pytest.raises(APIError) as info:
            client.create_pet(name="Rex", category_id=3)
    assert "trace" not in info.value.request.extensions
