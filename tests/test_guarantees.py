"""The SDK's guarantees, stated once and run over every client/library pair (``ALL_VARIANTS``).

Every test here names ``ALL_VARIANTS`` itself (a test that takes ``variant`` would otherwise run on httpx only).

A fifth library inherits every test here by joining the variant list in
``conftest.py``. Each guarantee is kept above the transport seam:

1. no secret in any frame of a traceback a public method raises (a frame
   walker, and the real ``sentry-sdk`` with its default options);
2. no request is handed to a library once the call's deadline has passed;
3. the request that leaves has the headers the SDK set (``Host``,
   ``Authorization``, ``Content-Length``, ``Transfer-Encoding``), and
   ``call_next`` sends once per attempt;
4. telemetry never changes a call's outcome;
5. the User-Agent names the library that sends;
6. secret-looking query values are masked in log lines and exception text.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from animalstore_client import (
    AnimalStoreClient,
    AnimalStoreError,
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AsyncAnimalStoreClient,
    AsyncCallNext,
    CallNext,
    ClientValidationError,
    InternalServerError,
    MiddlewareError,
)
from animalstore_client._core.libraries import LIBRARIES
from animalstore_client.testing import FakeAnimalStore

from .conftest import ALL_VARIANTS, SYNC_VARIANTS, ClientFactory, pairs_to_run
from .servers import LoopbackServer, refused_url, respond
from .tls import ca_file, server_context, stranger

SECRET = "sk-live-GUARANTEE-7f3a9c1e5b"
"""The API key of these tests: a module constant, so no test frame holds it in a local of its own."""
TOKEN = "tok-QUERY-SECRET-51d0"
"""A secret-looking query value (``?token=...``)."""
ROOT = Path(__file__).resolve().parent.parent


# --- 1. No secret in a traceback ----------------------------------------------------------------


def _one_level(value: object) -> Iterator[object]:
    """``value`` and, for a mapping (headers included) or a sequence, what it holds one level deep."""
    yield value
    if isinstance(value, (str, bytes, bytearray)):
        return
    items = getattr(value, "items", None)
    if callable(items):
        try:
            pairs = cast("Iterable[Iterable[object]]", items())
            for pair in list(pairs)[:1000]:
                yield from pair
        except Exception:  # a mapping that cannot be listed holds nothing we can see
            return
    elif isinstance(value, (list, tuple, set, frozenset)):
        yield from list(cast("Iterable[object]", value))[:1000]


def _holds(value: object, secret: str) -> bool:
    if isinstance(value, str):
        return secret in value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return secret.encode() in bytes(value)
    return False


def frames_holding(exc: BaseException, secret: str = SECRET) -> list[str]:
    """Every frame local, in ``exc``'s traceback and its chained exceptions', that holds ``secret``."""
    found: list[str] = []
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        tb = current.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            for name, value in list(frame.f_locals.items()):
                if any(_holds(item, secret) for item in _one_level(value)):
                    found.append(f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}:{name}")
            tb = tb.tb_next
        pending.extend(linked for linked in (current.__cause__, current.__context__) if linked is not None)
    return found


def test_the_walker_finds_a_key_in_a_library_frame() -> None:
    """The walker is not blind: a key in a plain local, a dict, a list or bytes of a raising frame is found."""

    def library(headers: dict[str, str], raw: bytes, parts: list[str]) -> None:
        raise OSError("reset")

    with pytest.raises(OSError, match="reset") as info:
        library({"Authorization": f"Bearer {SECRET}"}, f"Bearer {SECRET}".encode(), ["x", SECRET])
    found = frames_holding(info.value)
    assert sorted(name.rsplit(":", 1)[1] for name in found) == ["headers", "parts", "raw"]


def _reset(conn: socket.socket) -> bool:
    """Read the request, then reset the connection without answering."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    return False


def _raising(variant: str) -> Any:
    """A middleware of the variant's kind that raises its own ValueError after the send, quoting the key."""
    if variant.startswith("sync"):

        def middleware(request: httpx.Request, call_next: CallNext) -> httpx.Response:
            call_next(request)
            # Quoting the key, as a careless message does: no crash report may show it.
            raise ValueError(f"the middleware's own bug ({request.headers['authorization']})")

        return middleware

    async def async_middleware(request: httpx.Request, call_next: AsyncCallNext) -> httpx.Response:
        await call_next(request)
        raise ValueError(f"the middleware's own bug ({request.headers['authorization']})")

    return async_middleware


FAILURES = ["status", "timeout", "refused", "reset", "tls", "middleware", "validation"]
OPERATIONS = ["list_pets", "create_pet", "request"]


def _operation(client: Any, operation: str, *, invalid: bool) -> Callable[[], object]:
    """``operation`` on ``client`` as a call of no arguments; with ``invalid``, with an argument it refuses."""
    if operation == "list_pets":
        return lambda: client.list_pets(limit=0 if invalid else 5)
    if operation == "create_pet":
        return lambda: client.create_pet(name="Rex", category_id=-(2**70) if invalid else 1)
    headers = {"Bad": "\n"} if invalid else None
    return lambda: client.request("GET", "/pets", params={"token": TOKEN}, headers=headers)


def _fail(kind: str, make_client: ClientFactory, variant: str, operation: str) -> BaseException:
    """Run ``operation`` into failure ``kind`` on the variant; return what it raised."""
    tls = server_context(stranger()) if kind == "tls" else None
    scripts: dict[str, list[Callable[[socket.socket], bool]]] = {
        "status": [respond(500, {"code": "boom", "message": "down", "status": 500})],
        "reset": [_reset],
    }
    script = scripts.get(kind, [respond(200, [])])
    with LoopbackServer(script, tls=tls) as server:
        if kind == "timeout":
            server.script = [server.hang()]
        options: dict[str, Any] = {"max_retries": 0, "timeout": 0.3}
        if kind == "refused":
            options["base_url"] = refused_url()
        elif kind == "tls":
            options.update(base_url=server.base_url.replace("127.0.0.1", "localhost"), verify=ca_file())
        else:
            options["base_url"] = server.base_url
        if kind == "middleware":
            options["middleware"] = [_raising(variant)]
        client = make_client(SECRET, **options)
        call = _operation(client, operation, invalid=kind == "validation")
        with pytest.raises(AnimalStoreError) as info:
            call()
        return info.value


EXPECTED: dict[str, type[AnimalStoreError]] = {
    "status": APIStatusError,
    "timeout": APITimeoutError,
    "refused": APIConnectionError,
    "reset": APIConnectionError,
    "tls": APIConnectionError,
    "middleware": MiddlewareError,
    "validation": ClientValidationError,
}


# The network failures take one path whatever the operation (create_pet, the POST, stands for all three);
# the rest differ by operation: each builds and parses its own way.
CASES = [
    *((kind, "create_pet") for kind in ("timeout", "refused", "reset", "tls")),
    *((kind, operation) for kind in ("status", "middleware", "validation") for operation in OPERATIONS),
]


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
@pytest.mark.parametrize(("kind", "operation"), CASES)
def test_no_frame_of_a_raised_traceback_holds_the_key(
    make_client: ClientFactory, variant: str, kind: str, operation: str
) -> None:
    """For each failure kind and operation, no frame below the call (the library's included) holds the API key."""
    exc = _fail(kind, make_client, variant, operation)
    assert isinstance(exc, EXPECTED[kind]), repr(exc)
    assert frames_holding(exc) == []
    # The traceback still says where it failed: down to the frame that handed the request to the library
    # (or the library's own), and a connection error keeps the library's exception as its cause.
    if kind in ("timeout", "refused", "reset"):
        assert exc.__cause__ is not None
        text = "".join(traceback.format_exception(exc))
        assert any(place in text for place in ("site-packages", "/_transports/")), text


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_refused_constructor_or_copy_holds_no_key_in_its_frames(variant: str) -> None:
    """A client refused at construction, or a with_options copy refused, leaves no frame holding the key."""
    cls: Callable[..., Any] = AnimalStoreClient if variant.startswith("sync") else AsyncAnimalStoreClient
    backend: Any = variant.split("-")[1] if "-" in variant else "httpx"
    with pytest.raises(ClientValidationError) as info:
        cls(SECRET, base_url=f"https://h.example/v1?api_key={SECRET}", backend=backend)
    assert frames_holding(info.value) == []
    assert SECRET not in str(info.value)
    assert SECRET not in repr(info.value.value)
    client = cls(SECRET, base_url="http://127.0.0.1:9/v1", backend=backend)
    with pytest.raises(ClientValidationError) as info:
        client.with_options(api_key=SECRET + "\n")
    assert frames_holding(info.value, SECRET) == []


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_refused_constructors_frame_locals_can_all_be_shown(variant: str) -> None:
    """A crash reporter that shows frame locals (``capture_locals=True``) can repr the half-made client it finds."""
    cls: Callable[..., Any] = AnimalStoreClient if variant.startswith("sync") else AsyncAnimalStoreClient
    backend: Any = variant.split("-")[1] if "-" in variant else "httpx"
    with pytest.raises(ClientValidationError) as info:
        cls(SECRET, timeout=-1, backend=backend)
    shown = traceback.TracebackException.from_exception(info.value, capture_locals=True)
    locals_shown = [frame.locals or {} for frame in shown.stack]
    assert any(f"<{cls.__name__}, not created>" in values.values() for values in locals_shown), locals_shown
    assert SECRET not in "".join(shown.format())


@pytest.mark.slow
def test_sentry_with_default_options_sends_no_key(pytestconfig: pytest.Config) -> None:
    """The real sentry-sdk, default options (frame locals on), captures every failure kind on every pair installed
    here (the default pairs in the everyday tier): no event holds the key. One process runs the pairs one after
    the other (a process each cost seconds)."""
    pytest.importorskip("sentry_sdk", reason="sentry-sdk is a test requirement: pip install -r tests/requirements.txt")
    pairs = pairs_to_run(pytestconfig)
    result = subprocess.run(
        [sys.executable, "-m", "tests.sentry_probe", *pairs],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line.split(" ", 1) for line in result.stdout.strip().splitlines()[-len(pairs) :]]
    assert [pair for pair, _ in lines] == pairs, result.stdout[-3000:]
    for pair, text in lines:
        report = json.loads(text)
        assert report["events"] == report["failures"] > 0, (pair, report)
        assert report["with_locals"] == report["events"], (pair, report)  # the reporter did read frame locals
        assert report["key_found"] == 0, (pair, report)


# --- 2. No request after the deadline -------------------------------------------------------------


def _slow(variant: str, seconds: float) -> Any:
    """A middleware of the variant's kind that waits ``seconds`` before call_next."""
    if variant.startswith("sync"):

        def middleware(request: httpx.Request, call_next: CallNext) -> httpx.Response:
            time.sleep(seconds)
            return call_next(request)

        return middleware

    async def async_middleware(request: httpx.Request, call_next: AsyncCallNext) -> httpx.Response:
        await asyncio.sleep(seconds)
        return await call_next(request)

    return async_middleware


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_nothing_is_sent_once_the_deadline_passed_in_middleware(make_client: ClientFactory, variant: str) -> None:
    """A middleware that waits past total_timeout: the POST never reaches the server; the call is APITimeoutError."""
    with LoopbackServer([respond(201, {"id": 1, "name": "Rex", "categoryId": 1})]) as server:
        client = make_client(base_url=server.base_url, total_timeout=0.5, middleware=[_slow(variant, 0.6)])
        with pytest.raises(APITimeoutError, match="total_timeout"):
            client.create_pet(name="Rex", category_id=1)
        time.sleep(0.1)  # a request handed over late would have arrived by now
        assert server.received == []


# --- 3. The request that leaves is the one the SDK built ------------------------------------------


def _setting(variant: str, name: str, value: str) -> Any:
    """A middleware of the variant's kind that sets header ``name`` before call_next."""
    if variant.startswith("sync"):

        def middleware(request: httpx.Request, call_next: CallNext) -> httpx.Response:
            request.headers[name] = value
            return call_next(request)

        return middleware

    async def async_middleware(request: httpx.Request, call_next: AsyncCallNext) -> httpx.Response:
        request.headers[name] = value
        return await call_next(request)

    return async_middleware


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("Host", "evil.example"),
        ("Authorization", "Bearer someone-else"),
        ("Content-Length", "3"),
        ("Transfer-Encoding", "chunked"),
    ],
)
def test_a_middleware_cannot_change_where_the_key_goes_or_the_framing(
    make_client: ClientFactory, variant: str, name: str, value: str
) -> None:
    """Host, Authorization, Content-Length or Transfer-Encoding set by a middleware: refused, named; nothing sent."""
    with LoopbackServer() as server:
        client = make_client(base_url=server.base_url, middleware=[_setting(variant, name, value)])
        with pytest.raises(ClientValidationError, match=f"changed the {name} header"):
            client.create_pet(name="Rex", category_id=1)
        assert server.received == []


@pytest.mark.parametrize("variant", SYNC_VARIANTS, indirect=True)
def test_two_threads_racing_into_call_next_send_once(
    make_client: ClientFactory, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two threads in call_next at once, both past its checks before either goes on: one request leaves."""
    from animalstore_client._core import middleware as _middleware

    checked = _middleware.checked_request
    barrier = threading.Barrier(2, timeout=5)

    def both_checked(*args: Any) -> httpx.Request:
        request = checked(*args)
        barrier.wait()  # both threads have passed the checks: only the ticket stands between them and the send
        return request

    monkeypatch.setattr(_middleware, "checked_request", both_checked)
    outcomes: list[str] = []

    def racing(request: httpx.Request, call_next: CallNext) -> httpx.Response:
        answers: list[httpx.Response] = []

        def go() -> None:
            try:
                answers.append(call_next(request))
                outcomes.append("sent")
            except MiddlewareError:
                outcomes.append("refused")

        threads = [threading.Thread(target=go) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
        barrier.reset()
        return answers[0]

    with LoopbackServer([respond(200, [])]) as server:
        client = make_client(base_url=server.base_url, middleware=[racing], max_retries=0)
        for _ in range(5):
            client.list_pets()
        assert len(server.received) == 5
    assert sorted(outcomes) == ["refused"] * 5 + ["sent"] * 5


def _rewriting(variant: str, change: Callable[[httpx.Request], httpx.Request]) -> Any:
    """A middleware of the variant's kind that passes ``change(request)`` to call_next."""
    if variant.startswith("sync"):

        def middleware(request: httpx.Request, call_next: CallNext) -> httpx.Response:
            return call_next(change(request))

        return middleware

    async def async_middleware(request: httpx.Request, call_next: AsyncCallNext) -> httpx.Response:
        return await call_next(change(request))

    return async_middleware


def _same_header_again(request: httpx.Request) -> httpx.Request:
    request.headers["authorization"] = request.headers["authorization"]  # httpx keeps the name's new case
    return request


def _rebuilt(request: httpx.Request) -> httpx.Request:
    return httpx.Request(
        request.method,
        request.url,
        headers=dict(request.headers),
        content=request.content,
        extensions=request.extensions,
    )


def _other_body(request: httpx.Request) -> httpx.Request:
    return httpx.Request(
        request.method, request.url, headers=request.headers, content=b'{"name":"Evil","categoryId":1}'
    )


def _with_userinfo(request: httpx.Request) -> httpx.Request:
    request.url = request.url.copy_with(username="user", password="pw")
    return request


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
@pytest.mark.parametrize("change", [_same_header_again, _rebuilt], ids=["header-set-again", "rebuilt"])
def test_a_middleware_may_rebuild_the_request_it_was_given(
    make_client: ClientFactory, variant: str, change: Callable[[httpx.Request], httpx.Request]
) -> None:
    """Setting a client header to the value it has, or rebuilding the request from its own parts, is allowed."""
    with LoopbackServer([respond(201, {"id": 1, "name": "Rex", "categoryId": 1})]) as server:
        client = make_client(base_url=server.base_url, middleware=[_rewriting(variant, change)])
        assert client.create_pet(name="Rex", category_id=1).id == 1
        assert len(server.received) == 1


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
@pytest.mark.parametrize(
    ("change", "named"), [(_other_body, "changed the request body"), (_with_userinfo, "changed the request to")]
)
def test_a_middleware_cannot_swap_the_body_or_add_credentials_to_the_url(
    make_client: ClientFactory, variant: str, change: Callable[[httpx.Request], httpx.Request], named: str
) -> None:
    """Another body (whatever its headers say) or a user:password@ in the URL: refused before anything is sent."""
    with LoopbackServer() as server:
        client = make_client(base_url=server.base_url, middleware=[_rewriting(variant, change)])
        with pytest.raises(ClientValidationError, match=named):
            client.create_pet(name="Rex", category_id=1)
        assert server.received == []


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_call_next_kept_past_its_attempt_sends_nothing(make_client: ClientFactory, variant: str) -> None:
    """A middleware that answers itself and keeps call_next cannot send with it in a later attempt or call."""
    kept: list[Any] = []

    def answer_and_keep(request: httpx.Request, call_next: Any) -> httpx.Response:
        kept.append((call_next, request))
        return httpx.Response(200, json=[])

    async def async_answer_and_keep(request: httpx.Request, call_next: Any) -> httpx.Response:
        return answer_and_keep(request, call_next)

    middleware = answer_and_keep if variant.startswith("sync") else async_answer_and_keep
    with LoopbackServer() as server:
        client = make_client(base_url=server.base_url, middleware=[middleware])
        assert client.list_pets() == []
        call_next, request = kept[0]

        def send_again() -> None:
            result = call_next(request)
            if asyncio.iscoroutine(result):
                asyncio.run(result)

        with pytest.raises(MiddlewareError, match="twice"):
            send_again()
        assert server.received == []


class _BrokenResponse(httpx.Response):
    """A middleware's own response whose body cannot be read."""

    @property
    def content(self) -> bytes:
        raise KeyError("no body here")


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_middleware_response_whose_body_raises_is_a_middleware_error(
    make_client: ClientFactory, variant: str
) -> None:
    """A Response subclass whose .content raises ends the call as MiddlewareError, not the KeyError itself."""

    def broken(request: httpx.Request, call_next: Any) -> httpx.Response:
        return _BrokenResponse(200)

    async def async_broken(request: httpx.Request, call_next: Any) -> httpx.Response:
        return broken(request, call_next)

    with LoopbackServer() as server:
        client = make_client(
            base_url=server.base_url, middleware=[broken if variant.startswith("sync") else async_broken]
        )
        with pytest.raises(MiddlewareError, match="KeyError") as info:
            client.list_pets()
    assert isinstance(info.value.__cause__, KeyError)


# --- 4. Telemetry never changes an outcome ----------------------------------------------------------


class _BrokenTracerProvider:
    """A tracer provider whose get_tracer raises."""

    def get_tracer(self, *args: object, **kwargs: object) -> Any:
        raise RuntimeError("tracer provider down")


class _BrokenMeterProvider:
    """A meter provider whose get_meter raises."""

    def get_meter(self, *args: object, **kwargs: object) -> Any:
        raise RuntimeError("meter provider down")


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_broken_telemetry_changes_no_outcome(
    make_client: ClientFactory, variant: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Providers that raise: the POST is stored once, a 500 is still InternalServerError, one WARNING says why."""
    pytest.importorskip("opentelemetry", reason="the [otel] extra is a test requirement")
    pet = {"id": 7, "name": "Rex", "categoryId": 1}
    error = {"code": "boom", "message": "down", "status": 500}
    with LoopbackServer([respond(201, pet), respond(500, error), respond(201, pet)]) as server:
        client = make_client(
            base_url=server.base_url,
            max_retries=0,
            tracer_provider=_BrokenTracerProvider(),
            meter_provider=_BrokenMeterProvider(),
        )
        with caplog.at_level(logging.WARNING, logger="animalstore_client"):
            assert client.create_pet(name="Rex", category_id=1).id == 7
            with pytest.raises(APIStatusError) as info:
                client.create_pet(name="Rex", category_id=1)
            assert info.value.status_code == 500
            assert client.create_pet(name="Rex", category_id=1).id == 7
        assert len(server.received) == 3
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert warnings
    assert all("provider" in record.getMessage() for record in warnings)
    assert len(warnings) <= 2  # once per failing component, not once per call


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_propagator_cannot_set_a_header_only_the_client_sets(make_client: ClientFactory, variant: str) -> None:
    """A trace propagator that injects Host and Authorization: its own header goes out, those two do not."""
    pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is a test requirement")
    from opentelemetry import propagate
    from opentelemetry.propagators.textmap import CarrierT, Setter, TextMapPropagator, default_setter
    from opentelemetry.sdk.trace import TracerProvider

    class Meddling(TextMapPropagator):
        def extract(self, carrier: object, context: Any = None, getter: Any = None) -> Any:
            raise NotImplementedError

        def inject(self, carrier: CarrierT, context: Any = None, setter: Setter[CarrierT] = default_setter) -> None:
            setter.set(carrier, "host", "evil.example")
            setter.set(carrier, "authorization", "Bearer someone-else")
            setter.set(carrier, "x-trace-id", "42")

        @property
        def fields(self) -> set[str]:
            return {"host", "authorization", "x-trace-id"}

    before = propagate.get_global_textmap()
    propagate.set_global_textmap(Meddling())
    try:
        with LoopbackServer() as server:
            make_client(SECRET, base_url=server.base_url, tracer_provider=TracerProvider()).list_pets()
            headers = server.received[0].headers
    finally:
        propagate.set_global_textmap(before)
    assert headers["x-trace-id"] == "42"
    assert headers["host"].startswith("127.0.0.1")
    assert headers["authorization"] == f"Bearer {SECRET}"


# --- 5. Named truthfully --------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_the_user_agent_names_the_library_that_sends(make_client: ClientFactory, variant: str) -> None:
    """The User-Agent says animalstore-client-python/<v> <library>/<v>: the library that sent it."""
    library = variant.split("-")[1] if "-" in variant else "httpx"
    with LoopbackServer() as server:
        make_client(base_url=server.base_url).list_pets()
        agent = server.received[0].headers["user-agent"]
    assert agent.startswith("animalstore-client-python/")
    assert f" {library}/" in agent
    others = {declared.name for declared in LIBRARIES} - {library}
    assert not any(f" {other}/" in agent for other in others), agent


# --- 6. One list of what is secret ----------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_secret_query_value_is_masked_in_logs_and_exception_text(
    make_client: ClientFactory, variant: str, caplog: pytest.LogCaptureFixture
) -> None:
    """?token=... never shows in a DEBUG or INFO log line or in the exception's text; other values do."""
    error = {"code": "boom", "message": "down", "status": 503}
    with LoopbackServer([respond(503, error)]) as server:
        client = make_client(base_url=server.base_url, max_retries=1)
        with caplog.at_level(logging.DEBUG, logger="animalstore_client"), pytest.raises(APIStatusError) as info:
            client.request("GET", "/pets", params={"token": TOKEN, "limit": "5"})
    text = [str(info.value), repr(info.value), *(record.getMessage() for record in caplog.records)]
    assert len(caplog.records) >= 2
    assert not any(TOKEN in line for line in text)
    assert any("token=REDACTED" in line and "limit=5" in line for line in text)


def _reprs_holding(exc: BaseException, secret: str) -> list[str]:
    """Every frame local in ``exc``'s traceback whose repr shows ``secret``: what a crash reporter serializes."""
    found: list[str] = []
    tb = exc.__traceback__
    while tb is not None:
        for name, value in list(tb.tb_frame.f_locals.items()):
            try:
                shown = repr(value)
            except Exception:  # a local that cannot be shown shows nothing
                continue
            if secret in shown:
                found.append(f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_frame.f_code.co_name}:{name}")
        tb = tb.tb_next
    return found


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_no_frame_shows_a_default_headers_value(asynchronous: bool) -> None:
    """A token in default_headers is as secret as the key: no frame of a failed call holds or shows it."""
    store = FakeAnimalStore()
    store.fail_next(500)
    # No local of this test holds the token: its frame is in the traceback too.
    if asynchronous:
        aclient = store.async_client(default_headers={"X-Tenant-Token": SECRET}, max_retries=0)
        with pytest.raises(InternalServerError) as info:
            asyncio.run(aclient.list_pets())
    else:
        client = store.client(default_headers={"X-Tenant-Token": SECRET}, max_retries=0)
        with client, pytest.raises(InternalServerError) as info:
            client.list_pets()
    assert frames_holding(info.value) == []
    assert _reprs_holding(info.value, SECRET) == []
