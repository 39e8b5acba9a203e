"""The transport seam: bodies read as raw chunks over real sockets and decoded above it.

Each test taking ``make_client`` runs against the sync and the async client.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import time
from collections.abc import Callable
from typing import cast

import httpcore
import httpx
import pytest
import respx

from animalstore_client import APIConnectionError, BadRequestError
from animalstore_client._core.exchange import Exchange
from animalstore_client._transports._generated.httpx_sync import HttpxTransport
from animalstore_client._transports.httpx_async import AsyncHttpxTransport

from .conftest import PRODUCTION, ClientFactory
from .servers import LoopbackServer, _head, respond

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
PETS = [dict(PET, id=i) for i in range(1, 101)]


def test_a_gzip_body_from_a_socket_is_decoded_and_keeps_the_servers_headers(make_client: ClientFactory) -> None:
    """A gzip-encoded list arrives decoded; the raw response still shows the server's headers."""
    raw_body = gzip.compress(json.dumps(PETS).encode())
    with LoopbackServer([respond(200, raw_body, {"Content-Encoding": "gzip"})]) as server:
        client = make_client(base_url=server.base_url)
        assert [pet.id for pet in client.list_pets()] == list(range(1, 101))
        raw = client.with_raw_response.list_pets()
        assert server.received[0].headers["accept-encoding"] == "gzip, deflate"
    response = raw.http_response
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["content-length"] == str(len(raw_body))
    assert response.json() == PETS
    assert response.elapsed.total_seconds() >= 0
    assert response.http_version == "HTTP/1.1"
    assert response.reason_phrase == "OK"


def test_an_error_body_from_a_socket_is_decoded_too(make_client: ClientFactory) -> None:
    """A gzip-encoded Error body gives the exception its code and message."""
    error = {"code": "invalid", "message": "name missing", "status": 400}
    raw_body = gzip.compress(json.dumps(error).encode())
    with (
        LoopbackServer([respond(400, raw_body, {"Content-Encoding": "gzip"})]) as server,
        pytest.raises(BadRequestError) as info,
    ):
        make_client(base_url=server.base_url).create_pet(name="", category_id=1)
    assert (info.value.code, info.value.message) == ("invalid", "name missing")


def test_a_body_that_does_not_decode_is_a_connection_error_sent_once(make_client: ClientFactory) -> None:
    """Corrupt gzip raises APIConnectionError caused by httpx.DecodingError, and is not retried."""
    with LoopbackServer([respond(200, b"not gzip", {"Content-Encoding": "gzip"})]) as server:
        with pytest.raises(APIConnectionError) as info:
            make_client(base_url=server.base_url).list_pets()
        assert len(server.received) == 1
    assert isinstance(info.value.__cause__, httpx.DecodingError)


def test_a_mock_response_is_decoded_once(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A mock transport's response, already decoded by httpx, is not decoded again."""
    router.get(f"{PRODUCTION}/pets").respond(
        200, content=gzip.compress(json.dumps([PET]).encode()), headers={"Content-Encoding": "gzip"}
    )
    assert make_client().list_pets()[0].id == 7


def test_the_connection_is_reused_after_a_body_is_read() -> None:
    """Bodies read to the end release their connection: ten calls use one socket."""
    with LoopbackServer([respond(200, [PET])]) as server:
        with httpx.Client() as http:
            transport = HttpxTransport(http)
            for _ in range(10):
                request = httpx.Request("GET", f"{server.base_url}/pets")
                stream = transport.send(
                    Exchange(request, {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}, None)
                )
                assert stream.content is None  # a real socket: the body is still to be read
                assert b"".join(stream.iter_raw()) == json.dumps([PET]).encode()
                stream.close()
        assert server.connections == 1


def test_an_idle_connection_the_server_closed_is_not_reused(make_client: ClientFactory) -> None:
    """A keep-alive connection the server closed while it sat idle is noticed before use: no retry is needed."""
    answer = respond(200, [PET])

    def answer_then_close(conn: socket.socket) -> bool:
        answer(conn)  # no "Connection: close": the client keeps the connection for the next call
        return False

    with LoopbackServer([answer_then_close]) as server:
        client = make_client(base_url=server.base_url, max_retries=0)
        assert client.list_pets()[0].id == 7
        # The server's close (awaited, bounded: a loaded machine may delay its thread) reaches the client's idle
        # socket. An async client's event loop runs meanwhile, as in any application: aiohttp learns of a close
        # only from its running loop (its own silent re-send, which used to hide this, is stopped by the SDK's
        # innermost middleware: see docs/architecture.md).
        assert server.wait_for_open_connections(0) == 0
        loop = getattr(client, "_loop", None)
        if isinstance(loop, asyncio.AbstractEventLoop):
            loop.run_until_complete(asyncio.sleep(0.3))
        else:
            time.sleep(0.3)
        assert client.list_pets()[0].id == 7  # with max_retries=0 a stale connection would fail the call
        assert server.connections == 2
        client.close()


STREAM_KINDS = ["sync", "asyncio", "anyio"]
"""The network streams under the default backend's pool: httpcore's blocking one, the SDK's asyncio one, anyio's."""


def _idle_stream_answers(kind: str, server_does: Callable[[socket.socket], None]) -> list[bool]:
    """What a ``kind`` stream answers to "is_readable", idle, before and after ``server_does``.

    The stream is made through the deadline backend, as the pool makes it. An async
    stream is asked after its event loop had a turn, as between two calls.
    """
    from animalstore_client._transports.pool._generated.deadline_network_sync import DeadlineBackend
    from animalstore_client._transports.pool.asyncio_network import AsyncioBackend
    from animalstore_client._transports.pool.deadline_network_async import AsyncDeadlineBackend

    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        if kind == "sync":
            stream = DeadlineBackend(httpcore.SyncBackend()).connect_tcp("127.0.0.1", port, timeout=5)
            theirs, _ = listener.accept()
            with theirs:
                answers = [bool(stream.get_extra_info("is_readable"))]
                server_does(theirs)
                time.sleep(0.05)
                answers.append(bool(stream.get_extra_info("is_readable")))
            stream.close()
            return answers

        async def run() -> list[bool]:
            anyio_backend = cast("httpcore.AsyncNetworkBackend", httpcore.AnyIOBackend())  # typed apart from its base
            backend = AsyncioBackend() if kind == "asyncio" else anyio_backend
            stream = await AsyncDeadlineBackend(backend).connect_tcp("127.0.0.1", port, timeout=5)
            theirs, _ = listener.accept()
            with theirs:
                await asyncio.sleep(0.05)
                answers = [bool(stream.get_extra_info("is_readable"))]
                server_does(theirs)
                await asyncio.sleep(0.05)
                answers.append(bool(stream.get_extra_info("is_readable")))
            await stream.aclose()
            return answers

        return asyncio.run(run())


@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_an_idle_connection_the_server_closed_answers_readable(kind: str) -> None:
    """Asked as the pool takes an idle connection: not readable while idle, readable once the server closed."""
    assert _idle_stream_answers(kind, lambda theirs: theirs.close()) == [False, True]


@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_bytes_arriving_on_an_idle_connection_make_it_readable(kind: str) -> None:
    """Bytes nobody asked for (a server's stray answer) mark an idle connection unfit too."""
    assert _idle_stream_answers(kind, lambda theirs: theirs.sendall(b"x")) == [False, True]


def test_the_seam_reports_its_clients_state_and_headers() -> None:
    """default_headers and is_closed come from the httpx client behind the seam."""
    http = httpx.AsyncClient(headers={"X-Trace": "t"})
    transport = AsyncHttpxTransport(http)
    assert transport.default_headers["x-trace"] == "t"
    assert not transport.is_closed


def test_a_finished_response_behaves_as_a_read_one() -> None:
    """The response the SDK hands out has its body read: content, text, json(), read() and iteration agree."""
    from animalstore_client._core.httpx_private import finished_response

    request = httpx.Request("GET", "https://api.animalstore.example/v1/pets")
    body = json.dumps([PET]).encode()
    headers = httpx.Headers({"Content-Type": "application/json", "Content-Encoding": "gzip"})
    response = finished_response(200, headers, body, request, {"http_version": b"HTTP/1.1", "reason_phrase": b"OK"})
    assert response.content == body
    assert response.json() == [PET]
    assert response.text == body.decode()
    assert response.read() == body
    assert b"".join(response.iter_bytes()) == body
    assert response.headers["content-encoding"] == "gzip"  # the server's, though the body is decoded
    assert response.is_closed
    assert response.reason_phrase == "OK"


@pytest.mark.parametrize(
    "pairs",
    [
        [(b"Content-Type", b"application/json"), (b"Set-Cookie", b"a=1"), (b"set-cookie", b"b=2")],
        [(b"X-Name", "caf\u00e9".encode("latin-1")), (b"X-Utf8", "\u00e9t\u00e9".encode())],
        [],
    ],
    ids=["ascii-repeated", "non-ascii", "empty"],
)
def test_headers_built_from_a_librarys_pairs_equal_httpxs_own(pairs: list[tuple[bytes, bytes]]) -> None:
    """The shortcut that fills httpx.Headers directly gives what httpx.Headers(pairs) gives, on every read."""
    from animalstore_client._core.httpx_private import headers_from_library

    fast, slow = headers_from_library(pairs), httpx.Headers(pairs)
    assert fast.raw == slow.raw
    assert fast.multi_items() == slow.multi_items()
    assert fast.encoding == slow.encoding
    assert fast == slow
    assert fast.get_list("set-cookie") == slow.get_list("set-cookie")
    assert dict(fast.copy()) == dict(slow)
    fast["X-Added"] = "1"
    assert fast["x-added"] == "1"


def test_a_missing_private_attribute_fails_loudly_by_name() -> None:
    """Should httpx drop an attribute the SDK writes, importing the SDK fails and names it, instead of degrading."""
    from animalstore_client._core.httpx_private import require_private

    class Headers:
        """A stand-in for a future httpx.Headers without _list."""

    with pytest.raises(ImportError, match=r"Headers\._list \(headers filled"):
        require_private(Headers(), "_list", "headers filled from a library's raw pairs")
    require_private(httpx.Headers(), "_list", "present today")


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[httpx.Response]:
    """Every `httpx.Response` the send loop makes from an attempt's `Answer`, in order."""
    from animalstore_client._core.attempts import Answer

    responses: list[httpx.Response] = []
    original = Answer.http_response

    def counted(self: Answer) -> httpx.Response:
        first = self._response is None  # pyright: ignore[reportPrivateUsage]
        response = original(self)
        if first:
            responses.append(response)
        return response

    monkeypatch.setattr(Answer, "http_response", counted)
    return responses


def test_a_typed_call_makes_no_httpx_response_and_what_shows_one_makes_it_once(
    make_client: ClientFactory, made: list[httpx.Response], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Typed results come from the attempt's status, headers and body alone; a raw response or an error's
    response is made once, from that attempt, and is the one the caller sees (every client/library pair)."""
    from animalstore_client._clients import send_loop_async
    from animalstore_client._clients._generated import send_loop_sync

    # Untraced, whatever OpenTelemetry providers an earlier test set for the process: a traced
    # attempt shows its response to its span.
    for loop in (send_loop_async, send_loop_sync):
        monkeypatch.setattr(loop, "observe", lambda telemetry, operation, request: None)
    error = {"code": "invalid", "message": "name missing", "status": 400}
    script = [respond(200, PETS), respond(201, PET), respond(200, PETS), respond(400, error)]
    with LoopbackServer(script) as server:
        client = make_client(base_url=server.base_url, max_retries=0)
        assert len(client.list_pets()) == 100
        assert client.create_pet(name="Rex", category_id=3).id == 7
        assert made == []
        raw = client.with_raw_response.list_pets()
        assert made == [raw.http_response]
        assert raw.http_response.json() == PETS
        assert raw.http_response.reason_phrase == "OK"
        assert raw.http_response.encoding == "utf-8"
        with pytest.raises(BadRequestError) as info:
            client.create_pet(name="", category_id=1)
        assert made[1:] == [info.value.response]
        assert info.value.response.status_code == 400


@pytest.mark.parametrize("variant", ["sync", "async"], indirect=True)
def test_middleware_is_handed_the_attempts_httpx_response_and_its_answer_is_parsed(
    make_client: ClientFactory, variant: str, made: list[httpx.Response]
) -> None:
    """With middleware each attempt is made an `httpx.Response` (what call_next returns), once; the call's
    result is parsed from what the middleware returned."""
    from .test_middleware import around

    seen: list[httpx.Response] = []
    with LoopbackServer([respond(503), respond(200, PETS)]) as server:
        client = make_client(
            base_url=server.base_url,
            middleware=[around(variant, after=lambda request, response: seen.append(response))],
        )
        assert len(client.list_pets()) == 100
    assert [response.status_code for response in seen] == [503, 200]
    assert made == seen


def test_aiohttp_total_timeout_is_rounded_down_only_far_from_the_deadline() -> None:
    """aiohttp's total is the time left, rounded down to 0.1 s beyond 10 s left (never past the deadline)."""
    pytest.importorskip("aiohttp", reason="the aiohttp backend's own rule; aiohttp is not installed")
    from animalstore_client._transports.aiohttp import _total

    def clock() -> float:
        return 1000.0

    assert _total(None, clock) is None
    assert _total(1000.0 + 119.987, clock) == 119.9
    assert _total(1000.0 + 10.05, clock) == 10.0
    assert _total(1000.0 + 9.987, clock) == pytest.approx(9.987)
    assert _total(1000.0 + 0.0001, clock) == pytest.approx(0.0001)  # never rounded up past the deadline
    with pytest.raises(httpx.ConnectTimeout):  # none left: nothing is handed to aiohttp
        _total(999.0, clock)


def test_pyreqwest_total_timeout_is_never_rounded_up_past_the_deadline() -> None:
    """pyreqwest's total is exactly the time left (its 1 ms floor for settings does not apply); none left, none sent."""
    pytest.importorskip("pyreqwest", reason="the pyreqwest backend's own rule; pyreqwest is not installed")
    from animalstore_client._transports.pyreqwest import _total

    assert _total(None) is None
    total = _total(time.monotonic() + 0.0004)
    assert total is not None
    assert total.total_seconds() <= 0.0004
    with pytest.raises(httpx.ConnectTimeout):
        _total(time.monotonic() - 0.001)


def test_a_head_answer_that_declares_a_length_has_no_body_on_every_backend(make_client: ClientFactory) -> None:
    """A HEAD answer with Content-Length but no body comes back empty (not cut off), and the next call works."""

    def head_answer(conn: socket.socket) -> bool:
        conn.sendall(_head(200, {"Content-Type": "application/json"}, 5000))
        return True

    with LoopbackServer([head_answer, respond(200, [PET])]) as server:
        client = make_client(base_url=server.base_url, max_retries=0)
        response = client.request("HEAD", "/pets")
        assert response.status_code == 200
        assert response.content == b""
        assert response.headers["content-length"] == "5000"
        assert [pet.id for pet in client.list_pets()] == [PET["id"]]
    assert [received.method for received in server.received] == ["HEAD", "GET"]
