"""A caller's own http_client, whatever its library: held to the SDK's rules on every send, and its code told apart.

Whatever the client's settings, it never makes the SDK follow a redirect, send
credentials other than the Bearer key, or send one attempt's request twice:
what a library lets the SDK turn off per request is turned off on each send
(httpx's and httpx2's auth and redirects, aiohttp's redirects and, through
the SDK's innermost middleware, a session middleware's second sending or
changed Authorization), and what cannot be is refused when the SDK client is
made (a client with auth of its own, an aiohttp session with
``DigestAuthMiddleware``, any pyreqwest client, which follows redirects
unseen). Code of the caller's inside the client that raises ends the call as
a `MiddlewareError` naming what raised, unretried; an `OSError` is the
network's wherever it was raised, and retried as such. Each rule runs over
every library whose client can break it, against real sockets where the
library's own sending matters.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import socket
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, Literal, cast

import aiohttp
import httpx
import pytest
import respx

from animalstore_client import (
    AnimalStoreClient,
    AnimalStoreError,
    APIConnectionError,
    APIStatusError,
    AsyncAnimalStoreClient,
    AuthenticationError,
    ClientValidationError,
    MiddlewareError,
    NotFoundError,
)
from animalstore_client._core.failures import HTTP_STACK_PACKAGES, callers_code, raised_by_callers_code
from animalstore_client._core.libraries import LIBRARIES, Library, by_name

from .conftest import API_KEY, ClientFactory, SyncView, needs_pyreqwest, on_library
from .servers import LoopbackServer, respond

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
BEARER = f"Bearer {API_KEY}"
DIGEST_CHALLENGE = {"WWW-Authenticate": 'Digest realm="store", nonce="6b5c0e", qop="auth", algorithm=MD5'}
UNAUTHORIZED = {"code": "unauthorized", "message": "no"}

Handler = Callable[[aiohttp.ClientRequest], Awaitable[aiohttp.ClientResponse]]
"""aiohttp's sending of a request, as a session's middleware is handed it."""


def _kinds(library: Library) -> list[Any]:
    """A caller's client of ``library`` for each SDK client that takes one: ``"httpx-sync"``, ``"aiohttp-async"``."""
    return [
        on_library(library.name, f"{library.name}-{client}")
        for client in library.clients
        if client in library.client_classes
    ]


# The libraries of httpx's kind, whose clients run the caller's hooks, auth flows and transports (httpx's API:
# a judgement about a library's interface, which no declaration says).
HTTPX_KINDS = [*_kinds(by_name("httpx")), *_kinds(by_name("httpx2"))]
CALLER_KINDS = [kind for library in LIBRARIES if not library.callers_clients_refused for kind in _kinds(library)]
"""A caller's client of every library and client that takes one, from the declarations (``client_classes``):
a library declared there is held to these rules with no test edited."""


def _library(kind: str) -> Any:
    """The module of ``kind``'s library (``httpx`` or ``httpx2`` for `HTTPX_KINDS`)."""
    return importlib.import_module(kind.rsplit("-", 1)[0])


def _client_class(kind: str) -> Any:
    """The class of ``kind``'s client, as its library's declaration names it (``client_classes``)."""
    name, client = kind.rsplit("-", 1)
    module, cls = by_name(name).client_classes[cast("Literal['sync', 'async']", client)]
    return getattr(importlib.import_module(module), cls)


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for the async kinds' client and the calls made through it."""
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def _sdk_client(kind: str, http: Any, loop: asyncio.AbstractEventLoop, **options: Any) -> Any:
    """The SDK client of ``kind`` over ``http``; an async one behind a `SyncView` on ``loop``."""
    if kind.endswith("-sync"):
        return AnimalStoreClient(API_KEY, http_client=http, **options)
    return SyncView(AsyncAnimalStoreClient(API_KEY, http_client=http, **options), loop)


def _library_client(kind: str, **settings: Any) -> Any:
    return _client_class(kind)(**settings)


class Callers:
    """Callers' clients of each kind, made on the test's loop and closed when the test ends."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._sync = contextlib.ExitStack()
        self._async = contextlib.AsyncExitStack()

    def library_client(self, kind: str, **settings: Any) -> Any:
        """A client of ``kind``'s library, made with ``settings`` (an async one inside the loop, as aiohttp needs)."""
        if kind.endswith("-sync"):
            return self._sync.enter_context(_library_client(kind, **settings))

        async def make() -> Any:
            return await self._async.enter_async_context(_library_client(kind, **settings))

        return self.loop.run_until_complete(make())

    def sdk_client(self, kind: str, http: Any, **options: Any) -> Any:
        """The SDK client over ``http``: sync for a sync library client, else async behind a `SyncView`."""
        return _sdk_client(kind, http, self.loop, **options)

    def close(self) -> None:
        """Close every client made here, as its own context manager does."""
        self._sync.close()
        self.loop.run_until_complete(self._async.aclose())


@pytest.fixture
def callers(loop: asyncio.AbstractEventLoop) -> Iterator[Callers]:
    """Callers' clients of every library, closed after the test."""
    made = Callers(loop)
    yield made
    made.close()


def _hook(kind: str, action: Callable[[Any], None]) -> Any:
    """An event hook of the kind's client (a coroutine function for an async client) running ``action``."""
    if kind.endswith("-sync"):
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


def _create(client: Any) -> Any:
    return client.create_pet(name="Rex", category_id=3)


# --- what is refused when the SDK client is made ----------------------------------------------------------------


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


def test_an_aiohttp_session_with_a_digest_auth_middleware_is_refused_saying_how_to_build_one() -> None:
    """A session whose DigestAuthMiddleware would answer a challenge with another service's credentials is refused."""

    async def main() -> ClientValidationError:
        digest = aiohttp.DigestAuthMiddleware("user", "the-other-services-password")
        async with aiohttp.ClientSession(middlewares=(digest,)) as session:
            with pytest.raises(ClientValidationError) as info:
                AsyncAnimalStoreClient(API_KEY, http_client=session)
            return info.value

    error = asyncio.run(main())
    assert error.argument == "http_client"
    assert "DigestAuthMiddleware" in str(error)
    assert "aiohttp.ClientSession(middlewares=" in str(error)  # how to build one that is accepted
    assert "the-other-services-password" not in f"{error} {error.value!r}"


@needs_pyreqwest
def test_a_pyreqwest_client_is_refused_for_both_clients_naming_backend_pyreqwest() -> None:
    """A built pyreqwest client may follow redirects unseen: refused, pointing to backend="pyreqwest" instead."""
    from pyreqwest.client import ClientBuilder, SyncClient, SyncClientBuilder

    library_client: SyncClient = SyncClientBuilder().follow_redirects(False).build()  # even one built right
    try:
        with pytest.raises(ClientValidationError, match=r"cannot be a pyreqwest client.*follow_redirects") as info:
            AnimalStoreClient(API_KEY, http_client=library_client)  # type: ignore[arg-type]  # the point
        assert info.value.argument == "http_client"
        assert 'backend="pyreqwest" without http_client' in str(info.value)
    finally:
        library_client.close()

    async def main() -> None:
        async_library_client = ClientBuilder().build()
        try:
            with pytest.raises(ClientValidationError, match=r"cannot be a pyreqwest client"):
                AsyncAnimalStoreClient(API_KEY, http_client=async_library_client)  # type: ignore[arg-type]
        finally:
            await async_library_client.close()

    asyncio.run(main())


# --- what is turned off on every send ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_auth_set_on_the_client_after_the_sdk_client_was_made_is_never_sent(kind: str, callers: Callers) -> None:
    """.auth set later on a caller's httpx/httpx2 client: the store still gets only the Bearer key, once per call."""
    with LoopbackServer([respond(200, [PET]), respond(201, PET)]) as server:
        http = callers.library_client(kind)
        client = callers.sdk_client(kind, http, base_url=server.base_url)
        http.auth = ("user", "the-other-services-password")
        assert client.list_pets()[0].id == 7
        assert _create(client).id == 7
        assert [(r.method, r.headers.get("authorization")) for r in server.received] == [
            ("GET", BEARER),
            ("POST", BEARER),
        ]


@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_a_digest_auth_set_later_never_answers_a_challenge(kind: str, callers: Callers) -> None:
    """A 401 Digest challenge to a client whose .auth became DigestAuth later: one POST, AuthenticationError."""
    with LoopbackServer([respond(401, UNAUTHORIZED, DIGEST_CHALLENGE), respond(201, PET)]) as server:
        http = callers.library_client(kind)
        client = callers.sdk_client(kind, http, base_url=server.base_url)
        http.auth = _library(kind).DigestAuth("user", "the-other-services-password")
        with pytest.raises(AuthenticationError):
            _create(client)
        assert [(r.method, r.headers.get("authorization")) for r in server.received] == [("POST", BEARER)]


@pytest.mark.parametrize("status", [302, 307])
@pytest.mark.parametrize("origin", ["same origin", "cross origin"])
@pytest.mark.parametrize("kind", CALLER_KINDS)
def test_a_callers_client_never_follows_a_redirect(kind: str, origin: str, status: int, callers: Callers) -> None:
    """A 302/307 to the store itself or to another host: the POST arrives once, at the store, the key only there."""
    with LoopbackServer([respond(201, PET)]) as other, LoopbackServer() as store:
        target = store.base_url if origin == "same origin" else other.base_url
        store.script = [respond(status, None, {"Location": f"{target}/moved"}), respond(201, PET)]
        http = callers.library_client(kind)
        client = callers.sdk_client(kind, http, base_url=store.base_url)
        with pytest.raises(APIStatusError) as info:
            _create(client)
        assert info.value.status_code == status
        assert [(r.method, r.target, r.headers.get("authorization")) for r in store.received] == [
            ("POST", "/v1/pets", BEARER)
        ]
        assert other.received == []


@pytest.mark.parametrize("status", [302, 307])
@pytest.mark.parametrize("origin", ["same origin", "cross origin"])
def test_no_backend_of_the_sdks_own_follows_a_redirect(make_client: ClientFactory, origin: str, status: int) -> None:
    """Every client/library pair the SDK builds itself: a 302/307 is the answer, the POST sent once, to the store."""
    with LoopbackServer([respond(201, PET)]) as other, LoopbackServer() as store:
        target = store.base_url if origin == "same origin" else other.base_url
        store.script = [respond(status, None, {"Location": f"{target}/moved"}), respond(201, PET)]
        client = make_client(base_url=store.base_url)
        with pytest.raises(APIStatusError) as info:
            _create(client)
        assert info.value.status_code == status
        assert [(r.method, r.target) for r in store.received] == [("POST", "/v1/pets")]
        assert other.received == []


def _sneak_in(session: aiohttp.ClientSession, *middlewares: Any) -> None:
    """Give ``session`` middlewares after the SDK client was made (aiohttp has no public way: its own attribute)."""
    session._middlewares = middlewares  # pyright: ignore[reportPrivateUsage]  # the point: unseen at construction


def test_an_auth_middleware_added_after_the_sdk_client_was_made_never_sends_twice(callers: Callers) -> None:
    """A DigestAuthMiddleware slipped into a session later: on a Digest challenge one POST goes, a MiddlewareError."""
    with LoopbackServer([respond(401, UNAUTHORIZED, DIGEST_CHALLENGE), respond(201, PET)]) as server:
        session = callers.library_client("aiohttp-async")
        client = callers.sdk_client("aiohttp-async", session, base_url=server.base_url, max_retries=2)
        _sneak_in(session, aiohttp.DigestAuthMiddleware("user", "the-other-services-password"))
        with pytest.raises(MiddlewareError, match="sent the request a second time in one attempt") as info:
            _create(client)
        assert info.value.attempts == 1
        assert [(r.method, r.headers.get("authorization")) for r in server.received] == [("POST", BEARER)]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_an_aiohttp_middleware_that_sends_again_is_stopped_at_the_second_sending(
    method: str, callers: Callers, sleeps: list[float]
) -> None:
    """A session middleware retrying a 503 by itself: one request per attempt goes out; the call ends at once."""

    async def retrying(request: aiohttp.ClientRequest, handler: Handler) -> aiohttp.ClientResponse:
        response = await handler(request)
        if response.status == 503:
            response = await handler(request)
        return response

    with LoopbackServer([respond(503, {"code": "busy", "message": "later"}), respond(200, [PET])]) as server:
        session = callers.library_client("aiohttp-async", middlewares=(retrying,))
        client = callers.sdk_client("aiohttp-async", session, base_url=server.base_url, max_retries=2)
        with pytest.raises(MiddlewareError, match="second time"):
            client.list_pets() if method == "GET" else _create(client)
        assert [r.method for r in server.received] == [method]
        assert sleeps == []


def test_an_aiohttp_middleware_that_replaces_the_key_sends_nothing(callers: Callers) -> None:
    """A session middleware writing other credentials into Authorization: the request is not sent."""

    async def other_credentials(request: aiohttp.ClientRequest, handler: Handler) -> aiohttp.ClientResponse:
        request.headers["Authorization"] = "Basic dXNlcjpvdGhlcg=="
        return await handler(request)

    with LoopbackServer([respond(201, PET)]) as server:
        session = callers.library_client("aiohttp-async", middlewares=(other_credentials,))
        client = callers.sdk_client("aiohttp-async", session, base_url=server.base_url)
        with pytest.raises(MiddlewareError, match="changed the request's Authorization header"):
            _create(client)
        assert server.received == []


def test_an_aiohttp_session_adding_netrc_credentials_is_named_and_sends_nothing(
    callers: Callers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trust_env session with ~/.netrc credentials for the store's host: a MiddlewareError saying so, nothing sent."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login user password the-other-services-password\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    with LoopbackServer([respond(200, [PET])]) as server:
        session = callers.library_client("aiohttp-async", trust_env=True)
        client = callers.sdk_client("aiohttp-async", session, base_url=server.base_url, max_retries=2)
        # aiohttp before 3.13 adds netrc's credentials as a header before any middleware runs: the SDK sees
        # the Authorization header changed, and says that instead; nothing is sent either way.
        said = r"netrc .* nothing was sent|changed the request's Authorization header.*not sent"
        with pytest.raises(MiddlewareError, match=said) as info:
            client.list_pets()
        assert "the-other-services-password" not in str(info.value)
        assert server.received == []


def test_aiohttps_own_second_try_after_a_dropped_connection_is_an_attempt_the_sdk_counts(
    callers: Callers, sleeps: list[float]
) -> None:
    """A kept-alive connection dropped under a GET: aiohttp's own retry is stopped, the SDK's retry sends it again."""

    def drop(conn: socket.socket) -> bool:
        return False  # the request was read; the connection closes unanswered

    with LoopbackServer([respond(200, [PET]), drop, respond(200, [PET])]) as server:
        session = callers.library_client("aiohttp-async")
        client = callers.sdk_client("aiohttp-async", session, base_url=server.base_url, max_retries=2)
        assert client.list_pets()[0].id == 7  # leaves a kept-alive connection for the next call
        assert client.list_pets()[0].id == 7
        assert len(server.received) == 3
        assert len(sleeps) == 1  # the second request of that call was the SDK's retry, counted and backed off


# --- the caller's code told from the library's failure ----------------------------------------------------------


@pytest.mark.parametrize("kind", HTTPX_KINDS)
@pytest.mark.parametrize("where", ["request hook", "response hook", "raise_for_status hook", "transport"])
def test_the_callers_code_raising_in_its_client_is_a_middleware_error_not_retried(
    kind: str, where: str, loop: asyncio.AbstractEventLoop, sleeps: list[float]
) -> None:
    """A bug in the caller's hooks or transport is a MiddlewareError naming what raised, the original as cause."""
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
    part = "an event hook or the transport of http_client"
    with pytest.raises(MiddlewareError, match=rf"^{part} \(tests\.test_callers_clients\.\S+\) raised") as info:
        client.list_pets()
    assert calls == [where]  # once: not retried
    assert sleeps == []
    assert info.value.attempts == 1
    expected = _library(kind).HTTPStatusError if where.startswith("raise") else ValueError
    assert isinstance(info.value.__cause__, expected)


@pytest.mark.parametrize("kind", HTTPX_KINDS)
@pytest.mark.parametrize("bug", ["a missing header", "the body read too early"])
def test_a_hook_failing_inside_the_library_is_the_callers_and_sent_once(
    kind: str, bug: str, callers: Callers, sleeps: list[float]
) -> None:
    """A hook's KeyError from headers["x-tenant"], or ResponseNotRead from json(), raised inside httpx: a
    MiddlewareError naming the hook, the GET sent once (it was a retried connection error)."""

    def read(response: Any) -> None:
        if bug == "a missing header":
            response.headers["x-tenant"]  # the bug: the store sends none
        else:
            response.json()  # the bug: the SDK streams the body, which is not read yet

    with LoopbackServer([respond(200, [PET])]) as server:
        http = callers.library_client(kind, event_hooks={"response": [_hook(kind, read)]})
        client = callers.sdk_client(kind, http, base_url=server.base_url, max_retries=2)
        with pytest.raises(MiddlewareError, match=r"^an event hook or the transport of http_client \(tests\.") as info:
            client.list_pets()
        assert len(server.received) == 1
    assert sleeps == []
    expected = KeyError if bug == "a missing header" else _library(kind).ResponseNotRead
    assert isinstance(info.value.__cause__, expected)


def test_an_aiohttp_middleware_raising_for_status_is_the_callers_and_sent_once(
    callers: Callers, sleeps: list[float]
) -> None:
    """A session middleware calling raise_for_status() on a 404: a MiddlewareError naming the middleware, sent once."""

    async def strict(request: aiohttp.ClientRequest, handler: Handler) -> aiohttp.ClientResponse:
        response = await handler(request)
        response.raise_for_status()
        return response

    with LoopbackServer([respond(404, {"code": "not_found", "message": "none"})]) as server:
        session = callers.library_client("aiohttp-async", middlewares=(strict,))
        client = callers.sdk_client("aiohttp-async", session, base_url=server.base_url, max_retries=2)
        with pytest.raises(MiddlewareError, match=r"^a middleware of http_client \(tests\.\S+strict\) raised") as info:
            client.list_pets()
        assert len(server.received) == 1
    assert sleeps == []
    assert isinstance(info.value.__cause__, aiohttp.ClientResponseError)


def test_an_aiohttp_middleware_raising_is_a_middleware_error_with_nothing_sent(callers: Callers) -> None:
    """A middleware of the caller's session that raises before sending ends the call at once, unretried."""
    calls: list[str] = []

    async def bad(request: Any, handler: Any) -> Any:
        calls.append("called")
        raise ValueError("a bug of the caller's")

    with LoopbackServer([respond(200, [PET])] * 3) as server:
        session = callers.library_client("aiohttp-async", middlewares=(bad,))
        client = callers.sdk_client("aiohttp-async", session, base_url=server.base_url)
        with pytest.raises(MiddlewareError) as info:
            client.list_pets()
        assert server.received == []
    assert calls == ["called"]
    assert isinstance(info.value.__cause__, ValueError)


def test_a_malformed_answer_through_an_aiohttp_middleware_stays_a_connection_error(
    callers: Callers, sleeps: list[float]
) -> None:
    """aiohttp's ClientResponseError for a broken status line, passing through a caller's middleware, is the
    network's (retried for a GET), not the middleware's."""
    passed: list[int] = []

    async def logging_middleware(request: aiohttp.ClientRequest, handler: Handler) -> aiohttp.ClientResponse:
        passed.append(1)
        return await handler(request)

    def garbage(conn: socket.socket) -> bool:
        conn.sendall(b"HTTP/1.1 2x0 Broken\r\n\r\n")
        return False

    with LoopbackServer([garbage]) as server:
        session = callers.library_client("aiohttp-async", middlewares=(logging_middleware,))
        client = callers.sdk_client("aiohttp-async", session, base_url=server.base_url, max_retries=2)
        with pytest.raises(APIConnectionError, match="after 3 attempts"):
            client.list_pets()
        assert len(server.received) == 3
    assert passed == [1, 1, 1]


@pytest.mark.parametrize("kind", HTTPX_KINDS)
@pytest.mark.parametrize(
    ("method", "failure", "sends"),
    [
        ("GET", ConnectionResetError, 3),  # maybe sent: a GET is retried
        ("POST", ConnectionResetError, 1),  # maybe sent: a POST is not
        # A hand-written transport reports nothing of its connection: its refusal is no evidence, not retried.
        ("POST", ConnectionRefusedError, 1),
        ("GET", OSError, 3),
    ],
)
def test_an_oserror_from_a_hand_written_transport_is_a_connection_error_retried_as_such(
    kind: str, method: str, failure: type[OSError], sends: int, loop: asyncio.AbstractEventLoop, sleeps: list[float]
) -> None:
    """An OSError raised by the caller's own transport is the network's: an APIConnectionError, a GET retried; a
    POST never, since nothing below the caller's code reported that nothing was written."""
    sent: list[str] = []

    def refusing(request: Any) -> Any:
        sent.append(request.method)
        raise failure("proxy at 127.0.0.1:1080 refused")

    http = _library_client(kind, transport=_library(kind).MockTransport(refusing))
    client = _sdk_client(kind, http, loop, max_retries=2)
    with pytest.raises(APIConnectionError, match="Connection error") as info:
        client.list_pets() if method == "GET" else _create(client)
    assert not isinstance(info.value, MiddlewareError)
    assert sent == [method] * sends
    assert info.value.attempts == sends
    assert len(sleeps) == sends - 1
    if method == "POST":
        assert info.value.may_have_been_processed is True


@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_a_file_system_oserror_from_a_hook_is_the_callers(
    kind: str, loop: asyncio.AbstractEventLoop, sleeps: list[float]
) -> None:
    """An OSError no socket raises (a hook opening a missing file) stays a bug of the caller's: a MiddlewareError."""
    seen: list[Any] = []

    def read_config(request: Any) -> None:
        Path("/nonexistent/animalstore-tenant.conf").read_text()

    http = _library_client(kind, transport=_answering(kind, seen), event_hooks={"request": [_hook(kind, read_config)]})
    client = _sdk_client(kind, http, loop, max_retries=2)
    with pytest.raises(
        MiddlewareError, match=r"^an event hook or the transport of http_client .* raised FileNotFoundError"
    ):
        client.list_pets()
    assert seen == []
    assert sleeps == []


def test_a_respx_mock_raising_is_named_as_such_not_as_a_client_never_given(
    router: respx.MockRouter, variant: str, make_client: ClientFactory
) -> None:
    """Under respx on the SDK's own backend, a route's side effect that raises is a MiddlewareError naming respx."""

    def side_effect(request: httpx.Request) -> httpx.Response:
        raise KeyError("tenant")

    router.get("https://api.animalstore.example/v1/pets").mock(side_effect=side_effect)
    client = make_client(max_retries=2)
    with pytest.raises(MiddlewareError, match=r"^a respx mock \(tests\.\S+side_effect\) raised KeyError") as info:
        client.list_pets()
    assert "http_client" not in str(info.value)
    assert router.calls.call_count == 1


def _raise_in(module: str, body: str) -> BaseException:
    """The exception raised by ``body`` run as code of module ``module`` (its frames say so)."""
    namespace: dict[str, Any] = {"__name__": module}
    exec(compile(f"def fail():\n    {body}\n", f"<{module}>", "exec"), namespace)
    try:
        namespace["fail"]()
    except Exception as exc:  # the point: whatever it raised
        return exc
    raise AssertionError("did not raise")


def _function_in(module: str, body: str, inner: Callable[[], None] | None = None) -> Callable[[], None]:
    """A function of module ``module`` (its frame says so) running ``body``, which may call ``inner()``."""
    namespace: dict[str, Any] = {"__name__": module, "inner": inner}
    exec(compile(f"def call():\n    {body}\n", f"<{module}>", "exec"), namespace)
    return namespace["call"]  # type: ignore[no-any-return]


def _calling(module: str, inner: Callable[[], None]) -> Callable[[], None]:
    return _function_in(module, "inner()", inner)


def _raised(function: Callable[[], None]) -> BaseException:
    try:
        function()
    except Exception as exc:  # the point: whatever it raised
        return exc
    raise AssertionError("did not raise")


def test_where_an_exception_was_raised_tells_the_callers_code_from_the_librarys() -> None:
    """Raised in the caller's module, or in a library called from code of theirs that a library ran: theirs.
    Raised in a library under the SDK, even below a wrapper of the caller's outside it: the library's."""
    assert raised_by_callers_code(_raise_in("myapp.hooks", "raise ValueError('bug')"))
    assert raised_by_callers_code(_raise_in("myapp.hooks", "import json; json.loads('{')"))
    assert not raised_by_callers_code(_raise_in("httpcore._backends.anyio", "import json; json.loads('{')"))
    assert not raised_by_callers_code(_raise_in("anyio.streams.tls", "import ssl; raise ssl.SSLError(1, 'alert')"))
    for package in ("aiohttp", "pyreqwest", "httpx2", "httpcore2"):
        assert package in HTTP_STACK_PACKAGES
    # httpx runs a hook of the caller's, whose header lookup raises inside httpx: the hook's.
    lookup = _function_in("httpx._models", "raise KeyError('x-tenant')")
    hook = _calling("myapp.hooks", lookup)
    found = callers_code(
        _raised(_calling("animalstore_client._transports._generated.httpx_sync", _calling("httpx._client", hook)))
    )
    assert found is not None
    assert (found.function, found.called_by, found.respx) == ("myapp.hooks.call", ("httpx", "call"), False)
    # A tracer of the caller's wrapping the library's send, between the SDK and the library: the library's.
    library_bug = _calling("httpx._client", _function_in("h11._state", "raise RuntimeError('library bug')"))
    traced = _calling(
        "animalstore_client._transports._generated.httpx_sync", _calling("sentry_sdk.integrations.httpx", library_bug)
    )
    assert callers_code(_raised(traced)) is None


# --- what stays as it was -----------------------------------------------------------------------------------------


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
    if kind.endswith("-sync"):
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


def _callers_clients_with_base_url(url: str) -> list[Any]:
    """A caller's client of each library that has a base_url, made with ``url``."""
    made: list[Any] = [
        lambda: AnimalStoreClient(API_KEY, base_url=SDK_URL, http_client=httpx.Client(base_url=url)),
        lambda: AsyncAnimalStoreClient(API_KEY, base_url=SDK_URL, http_client=httpx.AsyncClient(base_url=url)),
    ]
    try:
        import httpx2
    except ImportError:
        return made
    made += [
        lambda: AnimalStoreClient(API_KEY, base_url=SDK_URL, http_client=httpx2.Client(base_url=url)),
        lambda: AsyncAnimalStoreClient(API_KEY, base_url=SDK_URL, http_client=httpx2.AsyncClient(base_url=url)),
    ]
    return made


SDK_URL = "https://api.animalstore.example/v1"


@pytest.mark.parametrize("which", range(4), ids=["httpx", "httpx-async", "httpx2", "httpx2-async"])
def test_a_callers_client_with_another_base_url_warns_that_it_is_not_used(which: int) -> None:
    """A caller's httpx or httpx2 client made for another base_url draws one UserWarning at the caller's line,
    naming both URLs with their credentials masked: the SDK sends to its own base_url, never the client's."""
    makers = _callers_clients_with_base_url("https://user:hunter2@staging.example/v1")
    if which >= len(makers):
        pytest.skip("httpx2 is not installed here: it needs Python 3.11+")
    with pytest.warns(UserWarning, match=r"http_client's base_url .* is not used") as caught:
        makers[which]()
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "staging.example" in text
    assert SDK_URL in text
    assert "hunter2" not in text
    assert caught[0].filename == __file__


def test_a_callers_client_with_the_sdks_base_url_or_none_does_not_warn() -> None:
    """The same base_url (a trailing slash aside) or none at all: nothing to warn about."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for make in [*_callers_clients_with_base_url(SDK_URL), *_callers_clients_with_base_url("")]:
            make()
