"""The send loop: retries as the policy decides them, over respx and over real sockets.

The rules themselves (which statuses and failures, backoff, Retry-After) are
proven once, as pure functions, in test_retry.py; these tests prove that both
clients apply them: the method reaches the policy, the sleeps happen, the
attempts are counted, and faults that only a socket can produce are handled.
Each test taking ``make_client`` runs against the sync and the async client.
"""

from __future__ import annotations

import socket

import httpx
import pytest
import respx

from animalstore_client import (
    APIConnectionError,
    APIResponseValidationError,
    APITimeoutError,
    BadRequestError,
    InternalServerError,
)

from .conftest import PRODUCTION, ClientFactory
from .servers import LoopbackServer, cut, refused_url, respond

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
ERROR_503 = {"code": "unavailable", "message": "try later", "status": 503}


def test_503_then_200_is_retried(make_client: ClientFactory, router: respx.MockRouter, sleeps: list[float]) -> None:
    """A read that meets a 503 is sent again after 0.5 s and succeeds."""
    route = router.get(f"{PRODUCTION}/pets").mock(
        side_effect=[httpx.Response(503, json=ERROR_503), httpx.Response(200, json=[PET])]
    )
    raw = make_client().with_raw_response.list_pets()
    assert raw.parse()[0].id == 7
    assert raw.attempts == 2
    assert route.call_count == 2
    assert sleeps == [0.5]


def test_429_with_retry_after_zero_retries_at_once(
    make_client: ClientFactory, router: respx.MockRouter, sleeps: list[float]
) -> None:
    """Retry-After: 0 means retry immediately, even for a POST."""
    route = router.post(f"{PRODUCTION}/pets").mock(
        side_effect=[httpx.Response(429, headers={"Retry-After": "0"}), httpx.Response(201, json=PET)]
    )
    assert make_client().create_pet(name="Rex", category_id=3).id == 7
    assert route.call_count == 2
    assert sleeps == [0.0]


def test_exhausted_retries_raise_the_last_error_with_attempts(
    make_client: ClientFactory, router: respx.MockRouter, sleeps: list[float]
) -> None:
    """After max_retries the last error's class is raised, saying how many attempts were made."""
    router.get(f"{PRODUCTION}/pets").mock(
        side_effect=[httpx.Response(502), httpx.Response(504), httpx.Response(503, json=ERROR_503)]
    )
    with pytest.raises(InternalServerError) as info:
        make_client(max_retries=2).list_pets()
    assert info.value.status_code == 503
    assert info.value.attempts == 3
    assert "after 3 attempts" in str(info.value)
    assert sleeps == [0.5, 1.0]


@pytest.mark.parametrize("status", [500, 502, 504])
def test_post_is_never_retried_after_the_service_may_have_stored_it(
    make_client: ClientFactory, router: respx.MockRouter, status: int
) -> None:
    """A POST that gets 500, 502 or 504 is sent exactly once."""
    route = router.post(f"{PRODUCTION}/pets").respond(status)
    with pytest.raises(InternalServerError) as info:
        make_client().create_pet(name="Rex", category_id=3)
    assert route.call_count == 1
    assert info.value.attempts == 1


def test_connection_refused_is_retried_then_raised(make_client: ClientFactory, sleeps: list[float]) -> None:
    """A refused connection is retried (nothing was sent), then raised as APIConnectionError."""
    client = make_client(base_url=refused_url(), max_retries=2)
    with pytest.raises(APIConnectionError) as info:
        client.create_pet(name="Rex", category_id=3)
    assert type(info.value) is APIConnectionError
    assert info.value.attempts == 3
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert sleeps == [0.5, 1.0]


def test_a_mocked_connect_error_on_the_built_in_host_is_retried(
    make_client: ClientFactory, router: respx.MockRouter, sleeps: list[float]
) -> None:
    """A ConnectError a mock raises for the default (placeholder) URL is no failure to resolve its name: it is
    retried as for any host, and the error says nothing of placeholders."""
    route = router.get(f"{PRODUCTION}/pets").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(APIConnectionError) as info:
        make_client(max_retries=2).list_pets()
    assert route.call_count == 3
    assert info.value.attempts == 3
    assert sleeps == [0.5, 1.0]
    assert "placeholder" not in str(info.value)


def test_the_built_in_host_whose_name_does_not_resolve_fails_at_once(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch, sleeps: list[float]
) -> None:
    """No name server knows the built-in placeholder host: on every library that failure is not retried, and the
    error says the host is a placeholder and what to set."""
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)  # the client itself must look the name up
    try:
        socket.getaddrinfo("api.animalstore.example", 443)
    except socket.gaierror:
        pass
    else:
        pytest.skip("this machine's name server answers for api.animalstore.example")
    with pytest.raises(APIConnectionError, match=r"is a placeholder.*set ANIMALSTORE_BASE_URL or base_url=") as info:
        make_client().list_pets()
    assert info.value.attempts == 1
    assert sleeps == []
    assert "_SDK" not in str(info.value)


def test_silent_server_times_out_and_reads_retry(make_client: ClientFactory) -> None:
    """A server that never answers raises APITimeoutError; a GET is tried max_retries+1 times."""
    with LoopbackServer() as server:
        server.script = [server.hang()]
        with pytest.raises(APITimeoutError) as info:
            make_client(base_url=server.base_url, timeout=0.2, max_retries=1).list_pets()
        assert info.value.attempts == 2
        assert len(server.wait_for_received(2)) == 2


def test_read_timeout_on_post_is_not_retried(make_client: ClientFactory) -> None:
    """A POST whose answer times out is sent exactly once: the pet may have been stored."""
    with LoopbackServer() as server:
        server.script = [server.hang()]
        with pytest.raises(APITimeoutError) as info:
            make_client(base_url=server.base_url, timeout=0.2).create_pet(name="Rex", category_id=3)
        assert info.value.attempts == 1
        assert len(server.wait_for_received(1)) == 1


def test_body_cut_off_mid_json(make_client: ClientFactory) -> None:
    """A body cut off mid-JSON raises APIConnectionError; the read is retried, the POST is not."""
    partial = b'[{"id": 1, "name": "Re'
    with LoopbackServer([cut(200, partial, 200)]) as server:
        client = make_client(base_url=server.base_url, max_retries=2)
        with pytest.raises(APIConnectionError) as info:
            client.list_pets()
        assert info.value.attempts == 3
        assert len(server.received) == 3
    with LoopbackServer([cut(201, partial, 200)]) as server:
        client = make_client(base_url=server.base_url)
        with pytest.raises(APIConnectionError):
            client.create_pet(name="Rex", category_id=3)
        assert len(server.received) == 1


def test_truncated_json_with_honest_length_is_a_validation_error(make_client: ClientFactory) -> None:
    """A complete response whose JSON is cut short is APIResponseValidationError, not a retry."""
    with LoopbackServer([respond(200, b'[{"id": 1')]) as server:
        with pytest.raises(APIResponseValidationError, match="not valid JSON"):
            make_client(base_url=server.base_url).list_pets()
        assert len(server.received) == 1


def test_retry_then_success_over_sockets(make_client: ClientFactory) -> None:
    """503 then 200 over a real connection: the second answer is returned."""
    with LoopbackServer([respond(503, ERROR_503), respond(200, [PET])]) as server:
        assert make_client(base_url=server.base_url).list_pets()[0].name == "Rex"
        assert [r.target for r in server.received] == ["/v1/pets", "/v1/pets"]


def test_bad_request_from_server_is_not_retried(make_client: ClientFactory) -> None:
    """A 400 over a real socket raises BadRequestError after one request."""
    with LoopbackServer([respond(400, {"code": "bad", "message": "name missing", "status": 400})]) as server:
        with pytest.raises(BadRequestError, match="name missing"):
            make_client(base_url=server.base_url).create_pet(name="", category_id=1)
        assert len(server.received) == 1
