"""``may_have_been_processed``: "was it stored?", answered on every client and library from the retry table.

Each row of the table is played by a server on 127.0.0.1 (or a port nothing
listens on) against ``create_pet`` on every client/library pair, with two
retries allowed: the exception says whether the service may have acted, and
the server saw the POST again exactly when the outcome was transient and the
answer was "certainly not".
"""

from __future__ import annotations

import pickle
import socket
import struct
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from animalstore_client import (
    APIConnectionError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    MiddlewareError,
)
from animalstore_client._core.exchange import Exchange, may_have_acted
from animalstore_client._core.retry import TRANSIENT_STATUSES, delay_after_error, delay_after_response

from .conftest import ALL_VARIANTS, ClientFactory
from .servers import LoopbackServer, refused_url, respond
from .test_middleware import around

NOT_PROCESSED = (400, 401, 403, 404, 409, 413, 422, 429)
"""The answers that turn a request away before the service acts on it: every 4xx but 408."""
PROCESSED = (408, 500, 502, 503, 504, 507)
"""Answers after which the service may have acted: a proxy's timeout, and every 5xx (a 503 with the service's
Error body too: a gateway writes one in that format after it passed the request on)."""

_EXCHANGE = Exchange(httpx.Request("POST", "https://api.example/v1/pets"), {}, None)


def _status_processed(status: int) -> bool:
    return may_have_acted(_EXCHANGE, status)


def _error_body(status: int) -> dict[str, object]:
    return {"code": "x", "message": "m", "status": status}


def _close_unanswered(conn: socket.socket) -> bool:
    """Read the request, then close the connection without a word."""
    del conn
    return False


def _reset_unanswered(conn: socket.socket) -> bool:
    """Read the request, then reset the connection (RST, not FIN)."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return False


def _create(make_client: ClientFactory, base_url: str, **options: Any) -> APIError | MiddlewareError:
    client = make_client(base_url=base_url, max_retries=2, **options)
    with pytest.raises((APIError, MiddlewareError)) as info:
        client.create_pet(name="Rex", category_id=1)
    exc = info.value
    assert isinstance(exc, (APIError, MiddlewareError))
    return exc


def _retried(status: int) -> bool:
    return status in TRANSIENT_STATUSES and not _status_processed(status)


def test_the_rule_says_no_exactly_for_a_4xx_but_408_and_for_a_write_proved_not_made() -> None:
    """No for every 4xx but 408 (429 included); yes for 2xx, 3xx, 408 and every 5xx; without an answer, no only when
    the exchange proves that no byte was written, and yes when nothing reported at all."""
    assert not any(_status_processed(status) for status in range(400, 500) if status != 408)
    assert all(_status_processed(status) for status in (*PROCESSED, 200, 201, 303, *range(500, 600)))
    silent = Exchange(httpx.Request("POST", "https://api.example/v1/pets"), {}, None)
    assert may_have_acted(silent)  # no report: no evidence
    refused = Exchange(httpx.Request("POST", "https://api.example/v1/pets"), {}, None)
    refused.opening()
    assert not may_have_acted(refused)
    refused.connected()
    assert not may_have_acted(refused)
    refused.maybe_written()
    assert may_have_acted(refused)


@pytest.mark.parametrize("status", range(100, 600))
def test_a_post_is_retried_exactly_when_transient_and_certainly_not_processed(status: int) -> None:
    """One rule decides both: create_pet is retried after an answer exactly when it is transient and not acted on."""
    processed = _status_processed(status)
    delay = delay_after_response("POST", status, {}, retries_done=0, max_retries=2, jitter=0.0, processed=processed)
    assert (delay is not None) == _retried(status)
    assert (delay is not None) == (status == 429)


@pytest.mark.parametrize(
    "error",
    [
        httpx.ConnectError("refused"),
        httpx.ConnectTimeout("slow"),
        httpx.PoolTimeout("full"),
        httpx.ReadTimeout("t"),
        httpx.ReadError("r"),
        httpx.WriteTimeout("w"),
        httpx.WriteError("w"),
        httpx.RemoteProtocolError("p"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_a_post_is_retried_after_a_failure_exactly_when_certainly_not_processed(error: httpx.TransportError) -> None:
    """Every transport failure is transient: create_pet is retried exactly when the exchange proved nothing was
    sent, whatever the failure's class."""
    for processed in (False, True):
        delay = delay_after_error("POST", error, retries_done=0, max_retries=2, jitter=0.0, processed=processed)
        assert (delay is not None) == (not processed)


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
@pytest.mark.parametrize("status", [*NOT_PROCESSED, *PROCESSED])
def test_an_answer_says_whether_the_pet_may_have_been_stored(make_client: ClientFactory, status: int) -> None:
    """Each answer's error says may_have_been_processed by the table; the POST went again only where it says no."""
    with LoopbackServer([respond(status, _error_body(status))]) as server:
        exc = _create(make_client, server.base_url)
    assert isinstance(exc, APIStatusError)
    assert exc.status_code == status
    assert exc.may_have_been_processed is _status_processed(status)
    assert len(server.received) == (3 if _retried(status) else 1)
    assert exc.attempts == len(server.received)


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_stored_pet_whose_answer_is_malformed_may_have_been_stored(make_client: ClientFactory) -> None:
    """A 201 whose body fails validation: the pet was stored, so yes, and the POST is not sent again."""
    with LoopbackServer([respond(201, {"id": "not a number"})]) as server:
        exc = _create(make_client, server.base_url)
    assert isinstance(exc, APIResponseValidationError)
    assert exc.may_have_been_processed is True
    assert len(server.received) == 1


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_nothing_sent_is_certainly_not_stored_and_is_retried(make_client: ClientFactory) -> None:
    """A refused connection: no, and every attempt was made (nothing can be duplicated)."""
    exc = _create(make_client, refused_url())
    assert type(exc) is APIConnectionError
    assert exc.may_have_been_processed is False
    assert exc.attempts == 3


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
@pytest.mark.parametrize("ending", ["read-timeout", "close", "reset"])
def test_a_request_sent_without_a_whole_answer_may_have_been_stored(make_client: ClientFactory, ending: str) -> None:
    """Sent, then a read timeout, a close or a reset before any answer: yes, and the POST is not sent again."""
    server = LoopbackServer()
    action: Callable[[socket.socket], bool] = {
        "read-timeout": server.hang(),
        "close": _close_unanswered,
        "reset": _reset_unanswered,
    }[ending]
    server.script = [action]
    with server:
        exc = _create(make_client, server.base_url, timeout=0.5)
        received = server.wait_for_received(1)
    assert isinstance(exc, APITimeoutError if ending == "read-timeout" else APIConnectionError)
    assert exc.may_have_been_processed is True
    assert len(received) == 1


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
@pytest.mark.parametrize(
    ("status", "expected"), [(None, False), (404, False), (429, False), (503, True), (500, True), (201, True)]
)
def test_a_middleware_error_says_whether_an_attempt_may_have_been_processed(
    make_client: ClientFactory, variant: str, status: int | None, expected: bool
) -> None:
    """A middleware raising before sending: no; after an answer: what the answer says (a 201: yes)."""

    def before(request: httpx.Request) -> None:
        if status is None:
            raise RuntimeError("refused before sending")

    def after(request: httpx.Request, response: httpx.Response) -> None:
        raise RuntimeError(f"refused after a {response.status_code}")

    body = {"id": 1, "name": "Rex", "categoryId": 1} if status == 201 else _error_body(status or 500)
    with LoopbackServer([respond(status or 500, body)]) as server:
        exc = _create(make_client, server.base_url, middleware=[around(variant, before=before, after=after)])
    assert isinstance(exc, MiddlewareError)
    assert exc.may_have_been_processed is expected
    assert len(server.received) == (0 if status is None else 1)


def test_it_pickles_and_shows_in_the_repr() -> None:
    """The answer travels with the exception (a process pool, a task queue) and shows in its repr."""
    request = httpx.Request("POST", "https://api.animalstore.example/v1/pets", headers={"Authorization": "Bearer k"})
    refused = APIConnectionError("Connection error", request=request)
    refused.may_have_been_processed = False
    gone = pickle.loads(pickle.dumps(refused))
    assert gone.may_have_been_processed is False
    assert repr(gone) == "APIConnectionError('Connection error', may_have_been_processed=False)"
    failed = APIStatusError("500", response=httpx.Response(500, request=request), body=None, error=None)
    assert failed.may_have_been_processed is True
    assert pickle.loads(pickle.dumps(failed)).may_have_been_processed is True
    middleware = MiddlewareError("boom", request=request)
    middleware.may_have_been_processed = False
    assert "may_have_been_processed=False" in repr(pickle.loads(pickle.dumps(middleware)))
