"""What reached the wire decides "was it stored?": the promise held against hooks, middleware, callers' clients and
gateways, on every client/library pair it applies to.

A loopback server counts the POSTs it stored. Code the SDK does not own (an event
hook of a caller's httpx or httpx2 client, a session middleware or a trace
callback of a caller's aiohttp session, an SDK ``middleware=``) raises after the
answer arrived, answers a timeout with a 503 of its own, retargets the request,
waits past the deadline or quotes the key; a gateway answers with a bare 503.
Each time: stored at most once, ``may_have_been_processed`` ``True`` whenever the
server acted, the deadline held, and no key in any text the SDK raises or chains.
The record itself (`_core.wire.Wire`) is tested below, per library and phase.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import ssl
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from yarl import URL

from animalstore_client import (
    APIStatusError,
    APITimeoutError,
    AsyncAnimalStoreClient,
    InternalServerError,
    MiddlewareError,
)
from animalstore_client._core.exchange import ANSWERED, NOTHING, WRITING, WRITTEN, Exchange, may_have_acted
from animalstore_client._core.retry import TRANSIENT_STATUSES, delay_after_response

from . import test_lookups
from .conftest import ALL_VARIANTS, API_KEY, ClientFactory, on_library
from .servers import LoopbackServer, refused_url, respond
from .test_callers_clients import HTTPX_KINDS, Callers, _hook, _library
from .timing import OVERSHOOT, Stopwatch

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
ASYNC_VARIANTS = [pair for pair in ALL_VARIANTS if "async" in str(getattr(pair, "values", [pair])[0])]
"""The async client's pairs, from the declarations: where a middleware's wait can be cancelled at the deadline."""
AIOHTTP = on_library("aiohttp", "aiohttp-async")


@pytest.fixture
def callers() -> Iterator[Callers]:
    """Callers' clients of every library on one loop, closed after the test."""
    loop = asyncio.new_event_loop()
    made = Callers(loop)
    yield made
    made.close()
    loop.close()


def _failure(which: str, library: Any) -> BaseException:
    """What a hook's own call to a metrics service that is down raises: the socket's errors, or its library's."""
    if which == "refused":
        return ConnectionRefusedError(111, "Connection refused")
    if which == "unresolved":
        return socket.gaierror(-2, "Name or service not known")
    if library is aiohttp:
        return aiohttp.ClientConnectionError("metrics.internal: connection refused")
    return library.ConnectError("metrics.internal: connection refused")  # type: ignore[no-any-return]


FAILURES = ["refused", "unresolved", "its library's ConnectError"]


def _stored_once(server: LoopbackServer, exc: BaseException) -> None:
    """The server stored the pet once and the SDK says it may have been stored."""
    assert len(server.received) == 1, [r.method for r in server.received]
    assert getattr(exc, "may_have_been_processed", None) is True, repr(exc)


# --- 1. code of the caller's failing after the answer arrived ----------------------------------------------------


@pytest.mark.parametrize("which", FAILURES)
@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_a_response_hook_failing_after_the_201_stores_the_pet_once(kind: str, which: str, callers: Callers) -> None:
    """A response hook whose own call fails (refused, unresolved, or its httpx ConnectError) after the 201: a
    MiddlewareError naming the hook, the POST sent once, may_have_been_processed True."""
    library = _library(kind)

    def report(_: Any) -> None:
        raise _failure(which, library)

    with LoopbackServer([respond(201, PET)]) as server:
        http = callers.library_client(kind, event_hooks={"response": [_hook(kind, report)]})
        client = callers.sdk_client(kind, http, base_url=server.base_url, max_retries=2)
        with pytest.raises(
            MiddlewareError, match=r"^an event hook or the transport of http_client .* after the request was written"
        ) as info:
            client.create_pet(name="Rex", category_id=3)
    _stored_once(server, info.value)


def _aiohttp_session(callers: Callers, *, middleware: Any = None, trace: Any = None) -> aiohttp.ClientSession:
    settings: dict[str, Any] = {}
    if middleware is not None:
        settings["middlewares"] = (middleware,)
    if trace is not None:
        config = aiohttp.TraceConfig()
        config.on_request_end.append(trace)
        settings["trace_configs"] = [config]
    session: aiohttp.ClientSession = callers.library_client("aiohttp-async", **settings)
    return session


@pytest.mark.parametrize("which", FAILURES)
@pytest.mark.parametrize("where", ["session middleware", "trace callback"])
@pytest.mark.parametrize("kind", [AIOHTTP])
def test_aiohttp_code_of_the_callers_failing_after_the_201_stores_the_pet_once(
    kind: str, where: str, which: str, callers: Callers
) -> None:
    """An aiohttp session middleware or TraceConfig callback failing after the 201 (refused, unresolved, its
    aiohttp ClientConnectionError): a MiddlewareError, the POST sent once, may_have_been_processed True."""

    async def middleware(request: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
        await handler(request)
        raise _failure(which, aiohttp)

    async def on_end(*_: Any) -> None:
        raise _failure(which, aiohttp)

    with LoopbackServer([respond(201, PET)]) as server:
        if where == "session middleware":
            session = _aiohttp_session(callers, middleware=middleware)
        else:
            session = _aiohttp_session(callers, trace=on_end)
        client = callers.sdk_client(kind, session, base_url=server.base_url, max_retries=2)
        with pytest.raises(MiddlewareError, match=r"after the request was written") as info:
            client.create_pet(name="Rex", category_id=3)
    _stored_once(server, info.value)


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_an_sdk_middleware_failing_after_the_201_stores_the_pet_once(make_client: ClientFactory, variant: str) -> None:
    """The same failure in an SDK middleware: a MiddlewareError, the POST sent once, on every pair."""

    def report(request: httpx.Request, call_next: Any) -> httpx.Response:
        call_next(request)
        raise ConnectionRefusedError(111, "Connection refused")

    async def areport(request: httpx.Request, call_next: Any) -> httpx.Response:
        await call_next(request)
        raise ConnectionRefusedError(111, "Connection refused")

    with LoopbackServer([respond(201, PET)]) as server:
        client = make_client(base_url=server.base_url, max_retries=2, middleware=[_either(variant, report, areport)])
        with pytest.raises(MiddlewareError) as info:
            client.create_pet(name="Rex", category_id=3)
    _stored_once(server, info.value)


def _either(variant: str, sync: Any, async_: Any) -> Any:
    """The middleware for the variant's client: the async one for an async client."""
    return async_ if variant.startswith("async") else sync


# --- 2. a retry that ignores what the SDK already knows ------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_synthetic_503_after_a_read_timeout_is_not_a_reason_to_send_the_post_again(
    make_client: ClientFactory, variant: str
) -> None:
    """A circuit breaker answering call_next's read timeout with a 503 of its own: the POST sent once, and the
    error says the pet may have been stored."""

    def breaker(request: httpx.Request, call_next: Any) -> httpx.Response:
        try:
            return call_next(request)  # type: ignore[no-any-return]
        except Exception:  # the SDK's timeout: answered as a breaker does
            return httpx.Response(503, json={"code": "open", "message": "circuit open", "status": 503})

    async def abreaker(request: httpx.Request, call_next: Any) -> httpx.Response:
        try:
            return await call_next(request)  # type: ignore[no-any-return]
        except Exception:
            return httpx.Response(503, json={"code": "open", "message": "circuit open", "status": 503})

    with LoopbackServer() as server:
        server.script = [server.hang()]
        client = make_client(
            base_url=server.base_url, max_retries=2, timeout=0.3, middleware=[_either(variant, breaker, abreaker)]
        )
        with pytest.raises(APIStatusError) as info:
            client.create_pet(name="Rex", category_id=3)
        server.wait_for_received(1)
        assert info.value.status_code == 503
        assert info.value.may_have_been_processed is True
        assert info.value.attempts == 1
        assert len(server.received) == 1


# --- 3. a gateway's bare 503 -----------------------------------------------------------------------------------------

ENVOY = b"upstream connect error or disconnect/reset before headers. reset reason: connection termination"


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_gateways_bare_503_is_not_retried_for_a_post_and_may_have_stored_it(make_client: ClientFactory) -> None:
    """Envoy's 503 with a text body after the upstream took the request: an InternalServerError, sent once,
    may_have_been_processed True."""
    with LoopbackServer([respond(503, ENVOY, {"Content-Type": "text/plain"})]) as server:
        client = make_client(base_url=server.base_url, max_retries=2)
        with pytest.raises(InternalServerError) as info:
            client.create_pet(name="Rex", category_id=3)
    assert info.value.status_code == 503
    assert info.value.may_have_been_processed is True
    assert len(server.received) == 1


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_gateways_bare_503_is_still_retried_for_a_get(make_client: ClientFactory) -> None:
    """A read is retried on a bare 503: repeating it changes nothing."""
    script = [respond(503, ENVOY, {"Content-Type": "text/plain"}), respond(200, [PET])]
    with LoopbackServer(script) as server:
        client = make_client(base_url=server.base_url, max_retries=2)
        assert [pet.id for pet in client.list_pets()] == [7]
    assert len(server.received) == 2


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_503_in_the_services_own_format_is_no_proof_for_a_post(make_client: ClientFactory) -> None:
    """A 503 with a body in the service's Error format may be a gateway's, written after it passed the POST on: it
    may have been stored, so create_pet is not sent again; a GET still is."""
    busy = respond(503, {"code": "unavailable", "message": "busy", "status": 503}, {"Retry-After": "0"})
    with LoopbackServer([busy, respond(201, PET)]) as server:
        client = make_client(base_url=server.base_url, max_retries=2)
        with pytest.raises(InternalServerError) as info:
            client.create_pet(name="Rex", category_id=3)
        assert info.value.may_have_been_processed is True
        assert "may have been stored" in str(info.value)
    assert len(server.received) == 1
    with LoopbackServer([busy, respond(200, [PET])]) as server:
        client = make_client(base_url=server.base_url, max_retries=2)
        assert client.list_pets()[0].id == 7
    assert len(server.received) == 2


# --- 4. a caller's client sending the key elsewhere ----------------------------------------------------------------


@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_a_request_hook_that_retargets_the_request_sends_nothing_anywhere(kind: str, callers: Callers) -> None:
    """A request hook setting request.url to another host: a MiddlewareError naming it; neither host got a byte
    of the request (nor the key), and nothing may have been stored."""
    with LoopbackServer([respond(201, PET)]) as server, LoopbackServer([respond(201, PET)]) as elsewhere:
        library = _library(kind)

        def retarget(request: Any) -> None:
            request.url = library.URL(f"{elsewhere.base_url}/pets")

        hook = _hook(kind, retarget)
        http = callers.library_client(kind, event_hooks={"request": [hook]})
        client = callers.sdk_client(kind, http, base_url=server.base_url, max_retries=2)
        with pytest.raises(MiddlewareError, match=r"not to the client's base_url origin .* nothing was sent") as info:
            client.create_pet(name="Rex", category_id=3)
        assert info.value.may_have_been_processed is False
        assert elsewhere.received == []
        assert server.received == []
    # The hook is named, and no private class of the SDK's is chained under the error: its text is the whole story.
    assert str(info.value).startswith(f"the request hook {hook.__module__}.{hook.__qualname__} of http_client sent")
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_a_default_host_header_of_the_callers_client_is_named_as_such(kind: str, callers: Callers) -> None:
    """A client whose default headers set another Host: the error names its default headers, not a hook."""
    with LoopbackServer([respond(201, PET)]) as server:
        http = callers.library_client(kind, headers={"Host": "elsewhere.example"})
        client = callers.sdk_client(kind, http, base_url=server.base_url, max_retries=2)
        with pytest.raises(MiddlewareError, match=r"Host header to 'elsewhere.example'") as info:
            client.create_pet(name="Rex", category_id=3)
        assert server.received == []
    assert str(info.value).startswith("http_client, by its default headers, set the request's Host header")
    assert info.value.__cause__ is None


@pytest.mark.parametrize("kind", [AIOHTTP])
def test_an_aiohttp_middleware_that_retargets_the_request_sends_nothing_anywhere(kind: str, callers: Callers) -> None:
    """A session middleware setting request.url: stopped before aiohttp sends, nothing anywhere."""
    with LoopbackServer([respond(201, PET)]) as server, LoopbackServer([respond(201, PET)]) as elsewhere:

        async def retarget(request: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
            request.url = URL(f"{elsewhere.base_url}/pets")
            return await handler(request)  # type: ignore[no-any-return]

        session = _aiohttp_session(callers, middleware=retarget)
        client = callers.sdk_client(kind, session, base_url=server.base_url, max_retries=2)
        with pytest.raises(MiddlewareError, match=r"not to the client's base_url origin") as info:
            client.create_pet(name="Rex", category_id=3)
        assert info.value.may_have_been_processed is False
        assert elsewhere.received == []
        assert server.received == []
    named = f"{retarget.__module__}.{retarget.__qualname__}"
    assert str(info.value).startswith(f"the middleware {named} of http_client (an aiohttp session) sent"), info.value
    assert info.value.__cause__ is None


# --- 5. the deadline reaches code of the caller's -------------------------------------------------------------------

WAIT = 3.0
TOTAL = 1.0


def _ends_by_the_deadline(call: Callable[[], Any]) -> None:
    with Stopwatch() as watch, pytest.raises(APITimeoutError):
        call()
    # The promise is a duration (TOTAL and the docs' small margin): bounded from above only, load given back.
    watch.assert_within(TOTAL + OVERSHOOT)


@pytest.mark.parametrize("variant", ASYNC_VARIANTS, indirect=True)
def test_an_async_middleware_waiting_after_the_answer_ends_at_the_deadline(make_client: ClientFactory) -> None:
    """An async middleware sleeping after call_next is cancelled at total_timeout: APITimeoutError in time."""

    async def slow(request: httpx.Request, call_next: Any) -> httpx.Response:
        response = await call_next(request)
        await asyncio.sleep(WAIT)
        return response  # type: ignore[no-any-return]

    with LoopbackServer([respond(200, [PET])]) as server:
        client = make_client(base_url=server.base_url, total_timeout=TOTAL, middleware=[slow])
        _ends_by_the_deadline(client.list_pets)


@pytest.mark.parametrize("kind", [k for k in HTTPX_KINDS if str(getattr(k, "values", [k])[0]).endswith("async")])
def test_an_async_response_hook_waiting_ends_at_the_deadline(kind: str, callers: Callers) -> None:
    """An async response hook of a caller's client that waits: cancelled at total_timeout."""

    async def slow(_: Any) -> None:
        await asyncio.sleep(WAIT)

    with LoopbackServer([respond(200, [PET])]) as server:
        http = callers.library_client(kind, event_hooks={"response": [slow]})
        client = callers.sdk_client(kind, http, base_url=server.base_url, total_timeout=TOTAL)
        _ends_by_the_deadline(client.list_pets)


@pytest.mark.parametrize("kind", [AIOHTTP])
def test_an_aiohttp_session_middleware_waiting_ends_at_the_deadline(kind: str, callers: Callers) -> None:
    """A session middleware that waits after the answer: cancelled at total_timeout."""

    async def slow(request: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
        response = await handler(request)
        await asyncio.sleep(WAIT)
        return response  # type: ignore[no-any-return]

    with LoopbackServer([respond(200, [PET])]) as server:
        session = _aiohttp_session(callers, middleware=slow)
        client = callers.sdk_client(kind, session, base_url=server.base_url, total_timeout=TOTAL)
        _ends_by_the_deadline(client.list_pets)


# --- 6. no key in any text the SDK raises or chains -----------------------------------------------------------------


def _texts(exc: BaseException) -> Iterator[str]:
    """Every text a crash reporter records of ``exc`` and its chain: str, repr, each argument's repr."""
    seen: set[int] = set()
    current: BaseException | None = exc
    pending = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield str(current)
        yield repr(current)
        yield from (repr(arg) for arg in current.args)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_middleware_quoting_the_key_puts_it_in_no_text(make_client: ClientFactory, variant: str) -> None:
    """An SDK middleware whose exception quotes the Authorization header: the key is in no str, repr or args."""

    def quoting(request: httpx.Request, call_next: Any) -> httpx.Response:
        raise ValueError(f"refused {request.headers['authorization']}")

    async def aquoting(request: httpx.Request, call_next: Any) -> httpx.Response:
        raise ValueError(f"refused {request.headers['authorization']}")

    client = make_client(base_url="http://127.0.0.1:9/v1", middleware=[_either(variant, quoting, aquoting)])
    with pytest.raises(MiddlewareError) as info:
        client.list_pets()
    assert all(API_KEY not in text for text in _texts(info.value))
    assert "[redacted]" in str(info.value)


def _malformed(conn: socket.socket) -> bool:
    conn.sendall(b"HTTP/1.1 ??? Nope\r\n\r\n")
    return False


def test_an_aiohttp_malformed_answer_chains_no_key() -> None:
    """aiohttp's error for a malformed status line carries the request headers: chained with the key masked."""
    pytest.importorskip("aiohttp")
    with LoopbackServer([_malformed]) as server:

        async def main() -> BaseException:
            async with AsyncAnimalStoreClient(API_KEY, base_url=server.base_url, backend="aiohttp") as client:
                try:
                    await client.list_pets()
                except Exception as exc:  # the one raised is the subject
                    return exc
            raise AssertionError("no error")

        exc = asyncio.run(main())
    texts = list(_texts(exc))
    assert any("aiohttp" in text or "Response" in text for text in texts)
    assert all(API_KEY not in text for text in texts)


# --- the record itself: each phase, per library ----------------------------------------------------------------------


def _reset_after_reading(conn: socket.socket) -> bool:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return False


def _reset_after_the_head(conn: socket.socket) -> bool:
    conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
    return _reset_after_reading(conn)


SCENARIOS: dict[str, tuple[Any, int]] = {
    "refused": (None, NOTHING),
    "reset after the request was read": (_reset_after_reading, WRITING),
    "reset after the head": (_reset_after_the_head, ANSWERED),
    "answered": (respond(201, PET), ANSWERED),
    "answered, then a hook of the caller's failed": (respond(201, PET), ANSWERED),
}


def _transports() -> list[Any]:
    return [
        "pool-httpx",
        on_library("httpx2", "pool-httpx2"),
        "callers-httpx",
        on_library("httpx2", "callers-httpx2"),
        on_library("aiohttp", "callers-aiohttp"),
    ]


def _failing_hook_client(which: str) -> Any:
    """A caller's client of ``which`` whose code raises once the answer arrived (a response hook, a middleware)."""

    async def hook(_: Any) -> None:
        raise ConnectionRefusedError(111, "metrics service down")

    if which == "callers-httpx":
        return httpx.AsyncClient(event_hooks={"response": [hook]})
    if which == "callers-httpx2":
        import httpx2

        return httpx2.AsyncClient(event_hooks={"response": [hook]})

    async def middleware(request: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
        await handler(request)
        raise ConnectionRefusedError(111, "metrics service down")

    return aiohttp.ClientSession(middlewares=(middleware,))


def _exchange(url: str) -> Exchange:
    """A POST's exchange as the send loop makes it, with no deadline."""
    request = httpx.Request("POST", url, json={"name": "Rex", "categoryId": 3})
    return Exchange(request, {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}, None)


async def _send(which: str, url: str, wire: Exchange, *, failing_hook: bool = False) -> None:
    """One POST through ``which`` library's async transport as the send loop makes it (the answer's head marked
    once the transport hands it back), its body read; failures left to the caller."""
    transport: Any
    if which == "pool-httpx":
        from animalstore_client._transports.pool.httpcore_async import AsyncHttpcoreTransport

        transport = AsyncHttpcoreTransport(ssl.create_default_context())
    elif which == "pool-httpx2":
        from animalstore_client._transports.pool._generated.httpcore2.httpcore2_async import AsyncHttpcore2Transport

        transport = AsyncHttpcore2Transport(ssl.create_default_context())
    elif which == "callers-httpx":
        from animalstore_client._transports.httpx_async import AsyncHttpxTransport

        transport = AsyncHttpxTransport(_failing_hook_client(which) if failing_hook else httpx.AsyncClient())
    elif which == "callers-httpx2":
        import httpx2

        from animalstore_client._transports.httpx2_async import AsyncHttpx2Transport

        transport = AsyncHttpx2Transport(_failing_hook_client(which) if failing_hook else httpx2.AsyncClient())
    else:
        from animalstore_client._transports.aiohttp import AiohttpTransport

        transport = AiohttpTransport(_failing_hook_client(which) if failing_hook else aiohttp.ClientSession())
    try:
        stream = await transport.send(wire)
        wire.answered()  # as the send loop does
        try:
            async for _ in stream.aiter_raw():
                pass
        finally:
            await stream.aclose()
    finally:
        await transport.aclose()
        session = getattr(transport, "_session", None)
        if session is not None:
            await session.close()


def _cases() -> list[Any]:
    """Each library's transport with each scenario; the SDK's own pool runs no code of the caller's to fail."""
    cases = []
    for which in _transports():
        name = str(getattr(which, "values", [which])[0])
        marks = getattr(which, "marks", ())
        for scenario in SCENARIOS:
            if not ("hook" in scenario and name.startswith("pool")):
                cases.append(pytest.param(name, scenario, marks=marks, id=f"{name}-{scenario}"))
    return cases


@pytest.mark.parametrize(("which", "scenario"), _cases())
def test_the_record_says_how_far_each_library_got(which: str, scenario: str) -> None:
    """Refused: nothing (reported); reset after the request was read: written; reset after the head, answered, or
    answered and then a hook of the caller's failed inside the library: answered. The record shows what the
    connection did, whatever the failure's class."""
    action, expected = SCENARIOS[scenario]
    failing_hook = "hook" in scenario
    if action is None:
        url = refused_url() + "/pets"
        wire = _exchange(url)
        with pytest.raises(Exception):  # noqa: B017, PT011  # each library's own class: the record is the subject
            asyncio.run(_send(which, url, wire))
        assert wire.phase == NOTHING
        assert wire.proves_nothing_written
        return
    with LoopbackServer([action]) as server:
        url = server.base_url + "/pets"
        wire = _exchange(url)
        with contextlib.suppress(Exception):  # a reset, a hook: the record, not the failure's class, is the subject
            asyncio.run(_send(which, url, wire, failing_hook=failing_hook))
        server.wait_for_received(1)
    if expected == WRITING:  # the whole request may be written before the reset, or not: written at least begun
        assert WRITING <= wire.phase <= WRITTEN
    else:
        assert wire.phase == expected
    assert wire.may_have_written


def test_the_record_takes_no_phase_back_and_names_each() -> None:
    """Phases only move on; unreported, the exchange is 'unknown' and proves nothing."""
    wire = _exchange("https://api.example/v1/pets")
    assert wire.phase_name == "unknown"
    assert not wire.proves_nothing_written
    assert not wire.may_have_written
    wire.connected()
    assert wire.proves_nothing_written
    wire.answered()
    wire.maybe_written()
    assert (wire.phase, wire.phase_name) == (ANSWERED, "answered")


# --- the docs' retry table is _core's -------------------------------------------------------------------------------

RETRY_TABLE = Path(__file__).resolve().parent.parent / "docs" / "retries-and-timeouts.md"


def _status_rows() -> list[tuple[str, list[int], str, str]]:
    """The status rows of the docs' retry table: (label, its statuses, the read column, the write column)."""
    rows = []
    for line in RETRY_TABLE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        statuses = [int(n) for n in re.findall(r"\b([1-5]\d\d)\b", cells[0])] if len(cells) == 3 else []
        if statuses:
            rows.append((cells[0], statuses, cells[1], cells[2]))
    return rows


def test_the_docs_retry_table_is_the_cores() -> None:
    """Each status row of docs/retries-and-timeouts.md says what delay_after_response does, for reads and writes
    (a write is told what the one rule says of the status, as the send loop tells it)."""
    rows = _status_rows()
    assert {status for _, statuses, _, _ in rows for status in statuses} >= set(TRANSIENT_STATUSES)
    for label, statuses, read, write in rows:
        for status in statuses:
            for method, cell in (("GET", read), ("POST", write)):
                processed = may_have_acted(_exchange("https://api.example/v1/pets"), status)
                delay = delay_after_response(
                    method, status, {}, retries_done=0, max_retries=2, jitter=0.0, processed=processed
                )
                documented = not cell.replace("*", "").startswith("not retried")
                assert (delay is not None) is documented, (label, method, cell)


# --- 5b. a sync name lookup is bounded ------------------------------------------------------------------------------

SYNC_LOOKUPS = ["sync", on_library("httpx2", "sync-httpx2")]
"""The sync pairs whose transport looks names up itself, within the connect timeout: the SDK's own pool (httpx,
httpx2). pyreqwest looks names up in its Rust runtime, which no patch of Python's
getaddrinfo reaches: its connect timeout is not tested against a dead resolver here."""


dead_names = test_lookups.dead_names
"""The fixture: a name service that never answers for ``*.dead.test``."""


@pytest.mark.parametrize("bound", ["connect timeout", "total_timeout"])
@pytest.mark.parametrize("variant", SYNC_LOOKUPS, indirect=True)
def test_a_sync_name_lookup_that_does_not_answer_is_bounded(
    make_client: ClientFactory, bound: str, dead_names: str
) -> None:
    """A resolver that never answers: the sync client gives up at its connect timeout, or at total_timeout."""
    options: dict[str, Any] = (
        {"timeout": httpx.Timeout(30.0, connect=TOTAL)} if bound == "connect timeout" else {"total_timeout": TOTAL}
    )
    client = make_client(base_url=f"https://resolver.{dead_names}/v1", max_retries=0, **options)
    _ends_by_the_deadline(client.list_pets)


NAMES = {
    "store.test": ["127.0.0.1"],
    "two.test": ["127.0.0.2", "127.0.0.1"],  # the first refuses (nothing listens there): the next is tried
}


@pytest.fixture
def names(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name service knowing `NAMES`, and no other name (literal addresses still work, as in any resolver)."""
    original = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in NAMES:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)) for address in NAMES[host]]
        if host.endswith(".test"):
            raise socket.gaierror(-2, "Name or service not known")
        return original(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.parametrize("name", [*NAMES, "unknown.test"])
@pytest.mark.usefixtures("names")
def test_the_sdks_sync_lookup_connects_as_the_librarys_own_does(name: str) -> None:
    """Differential: the SDK's sync network backend, which looks names up itself, ends each lookup as httpcore's
    own does: connected (trying each address in turn), or httpcore's connection error for a name nobody knows."""
    with LoopbackServer() as server:
        ours, reference = (_connected(server.port, name, own) for own in (True, False))
    assert ours == reference == ("refused" if name == "unknown.test" else "connected")


def _connected(port: int, name: str, sdks: bool) -> str:
    """Whether the SDK's (``sdks``) or httpcore's own connection code reached ``name``."""
    import httpcore

    from animalstore_client._transports.pool._generated.deadline_network_sync import DeadlineBackend

    try:
        backend = DeadlineBackend(httpcore.SyncBackend()) if sdks else httpcore.SyncBackend()
        backend.connect_tcp(name, port, timeout=5.0).close()
    except httpcore.ConnectError:
        return "refused"
    return "connected"


@pytest.mark.parametrize("kind", HTTPX_KINDS)
def test_an_instrumented_clients_own_read_timeout_stays_the_networks(kind: str, callers: Callers) -> None:
    """A caller's client whose transport a tracer wraps (OpenTelemetry's instrumentation, Sentry's): the library's
    own read timeout, raised through the wrapper's frame, is still an APITimeoutError, and a GET is retried."""
    library = _library(kind)
    asynchronous = kind.endswith("async")
    transport = library.AsyncHTTPTransport() if asynchronous else library.HTTPTransport()
    if asynchronous:
        handle = transport.handle_async_request

        async def traced(request: Any) -> Any:  # a tracer's wrapper: code of the caller's between httpx frames
            return await handle(request)

        transport.handle_async_request = traced
    else:
        handle_sync = transport.handle_request

        def traced_sync(request: Any) -> Any:
            return handle_sync(request)

        transport.handle_request = traced_sync
    with LoopbackServer() as server:
        server.script = [server.hang()]
        http = callers.library_client(kind, transport=transport)
        client = callers.sdk_client(kind, http, base_url=server.base_url, max_retries=2, timeout=0.3)
        with pytest.raises(APITimeoutError) as info:
            client.list_pets()
        server.wait_for_received(3)
    assert info.value.attempts == 3
