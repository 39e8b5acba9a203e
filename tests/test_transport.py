"""Retries, timeouts, per-call options, with_options, raw responses, client.request, logging, security.

Each test taking ``make_client`` runs against the sync and the async client.
Faults respx cannot produce (refused connections, silent servers, bodies cut
off mid-JSON) come from a real server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
import respx

from animalstore_client import (
    AnimalStoreClient,
    AnimalStoreError,
    APIConnectionError,
    APIResponse,
    APIResponseValidationError,
    APITimeoutError,
    AsyncAnimalStoreClient,
    BadRequestError,
    ClientValidationError,
    InsecureTransportWarning,
    InternalServerError,
    NotFoundError,
    Pet,
    RateLimitError,
)

from .conftest import API_KEY, PRODUCTION, ClientFactory
from .servers import LoopbackServer, cut, refused_url, respond

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
ERROR_503 = {"code": "unavailable", "message": "try later", "status": 503}


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    """Intercepts every request; an unrouted request fails the test."""
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as mock:
        yield mock


# --- retries ------------------------------------------------------------------------


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


def test_retry_after_http_date_is_honoured(
    make_client: ClientFactory, router: respx.MockRouter, sleeps: list[float]
) -> None:
    """Retry-After as an HTTP-date sets the wait to the time until that date."""
    when = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=20), usegmt=True)
    router.get(f"{PRODUCTION}/pets").mock(
        side_effect=[httpx.Response(503, headers={"Retry-After": when}), httpx.Response(200, json=[])]
    )
    make_client().list_pets()
    [delay] = sleeps
    assert 17.0 <= delay <= 20.0


def test_long_retry_after_ends_the_retries(
    make_client: ClientFactory, router: respx.MockRouter, sleeps: list[float]
) -> None:
    """Retry-After: 3600 is not waited for: the 429 is raised at once."""
    route = router.get(f"{PRODUCTION}/pets").respond(429, headers={"Retry-After": "3600"})
    with pytest.raises(RateLimitError) as info:
        make_client().list_pets()
    assert info.value.attempts == 1
    assert route.call_count == 1
    assert sleeps == []


def test_exhausted_retries_raise_the_last_error_with_attempts(
    make_client: ClientFactory, router: respx.MockRouter, sleeps: list[float]
) -> None:
    """After max_retries the last error's class is raised, saying how many attempts were made."""
    router.get(f"{PRODUCTION}/pets").mock(
        side_effect=[httpx.Response(502), httpx.Response(504), httpx.Response(503, json=ERROR_503)]
    )
    with pytest.raises(InternalServerError) as info:
        make_client().list_pets()
    assert info.value.status_code == 503
    assert info.value.attempts == 3
    assert "after 3 attempts" in str(info.value)
    assert sleeps == [0.5, 1.0]


def test_backoff_doubles_and_caps(make_client: ClientFactory, router: respx.MockRouter, sleeps: list[float]) -> None:
    """With six retries the waits are 0.5, 1, 2, 4, 8, 8 seconds."""
    router.get(f"{PRODUCTION}/pets").respond(500)
    with pytest.raises(InternalServerError) as info:
        make_client(max_retries=6).list_pets()
    assert info.value.attempts == 7
    assert sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


def test_zero_max_retries_sends_once(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """max_retries=0 disables retries."""
    route = router.get(f"{PRODUCTION}/pets").respond(503)
    with pytest.raises(InternalServerError):
        make_client(max_retries=0).list_pets()
    assert route.call_count == 1


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


def test_post_is_retried_on_503(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A 503 says the request was refused, so the POST is sent again."""
    route = router.post(f"{PRODUCTION}/pets").mock(side_effect=[httpx.Response(503), httpx.Response(201, json=PET)])
    assert make_client().create_pet(name="Rex", category_id=3).id == 7
    assert route.call_count == 2


def test_client_errors_are_not_retried(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A 404 ends the call at once."""
    route = router.get(f"{PRODUCTION}/pets").respond(404)
    with pytest.raises(NotFoundError):
        make_client().list_pets()
    assert route.call_count == 1


# --- real sockets ---------------------------------------------------------------------


def test_connection_refused_is_retried_then_raised(make_client: ClientFactory, sleeps: list[float]) -> None:
    """A refused connection is retried (nothing was sent), then raised as APIConnectionError."""
    client = make_client(base_url=refused_url())
    with pytest.raises(APIConnectionError) as info:
        client.create_pet(name="Rex", category_id=3)
    assert type(info.value) is APIConnectionError
    assert info.value.attempts == 3
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert sleeps == [0.5, 1.0]


def test_silent_server_times_out_and_reads_retry(make_client: ClientFactory) -> None:
    """A server that never answers raises APITimeoutError; a GET is tried max_retries+1 times."""
    with LoopbackServer() as server:
        server.script = [server.hang()]
        with pytest.raises(APITimeoutError) as info:
            make_client(base_url=server.base_url, timeout=0.2, max_retries=1).list_pets()
        assert info.value.attempts == 2
        assert len(server.received) == 2


def test_read_timeout_on_post_is_not_retried(make_client: ClientFactory) -> None:
    """A POST whose answer times out is sent exactly once: the pet may have been stored."""
    with LoopbackServer() as server:
        server.script = [server.hang()]
        with pytest.raises(APITimeoutError) as info:
            make_client(base_url=server.base_url, timeout=0.2).create_pet(name="Rex", category_id=3)
        assert info.value.attempts == 1
        assert len(server.received) == 1


def test_per_call_timeout_overrides_the_clients(make_client: ClientFactory) -> None:
    """timeout= on a call replaces the client's timeout for that call only."""
    with LoopbackServer() as server:
        server.script = [server.hang()]
        client = make_client(base_url=server.base_url, timeout=30.0, max_retries=0)
        with pytest.raises(APITimeoutError):
            client.list_pets(timeout=0.2)


def test_body_cut_off_mid_json(make_client: ClientFactory) -> None:
    """A body cut off mid-JSON raises APIConnectionError; the read is retried, the POST is not."""
    partial = b'[{"id": 1, "name": "Re'
    with LoopbackServer([cut(200, partial, 200)]) as server:
        client = make_client(base_url=server.base_url)
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


# --- per-call options ---------------------------------------------------------------------


def test_extra_headers_are_sent(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """extra_headers add to (and may replace) the client's headers for one call."""
    route = router.post(f"{PRODUCTION}/pets").respond(201, json=PET)
    make_client(default_headers={"X-Team": "a"}).create_pet(
        name="Rex", category_id=3, extra_headers={"X-Team": "b", "Idempotency-Key": "k1"}
    )
    headers = route.calls.last.request.headers
    assert headers.get_list("X-Team") == ["b"]
    assert headers["Idempotency-Key"] == "k1"
    assert headers["Content-Type"] == "application/json"


@pytest.mark.parametrize("name", ["Authorization", "authorization", "AUTHORIZATION"])
def test_extra_headers_cannot_replace_authorization(
    make_client: ClientFactory, router: respx.MockRouter, name: str
) -> None:
    """Setting Authorization through extra_headers raises ClientValidationError and sends nothing."""
    route = router.route().respond(200, json=[])
    with pytest.raises(ClientValidationError, match="must not set Authorization") as info:
        make_client().list_pets(extra_headers={name: "Bearer other"})
    assert info.value.argument == "extra_headers"
    assert not route.called


def test_per_call_timeout_travels_with_the_request(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A per-call timeout replaces the client's in the request; None means no timeout."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    client = make_client(timeout=10.0)
    client.list_pets(timeout=httpx.Timeout(2.0, connect=1.0))
    assert route.calls.last.request.extensions["timeout"] == {"connect": 1.0, "read": 2.0, "write": 2.0, "pool": 2.0}
    client.list_pets(timeout=None)
    assert route.calls.last.request.extensions["timeout"] == {
        "connect": None,
        "read": None,
        "write": None,
        "pool": None,
    }
    client.list_pets()
    assert route.calls.last.request.extensions["timeout"]["read"] == 10.0


def test_bad_per_call_timeout_is_refused(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A negative per-call timeout raises ClientValidationError and sends nothing."""
    route = router.route().respond(200, json=[])
    with pytest.raises(ClientValidationError, match="timeout must be"):
        make_client().list_pets(timeout=-1)
    assert not route.called


# --- with_options -----------------------------------------------------------------------


def test_with_options_changes_options_and_shares_the_pool(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """with_options returns a client with new options on the same pool; closing it keeps the pool open."""
    route = router.get("https://staging.api.animalstore.example/v1/pets").respond(200, json=[])
    client = make_client(default_headers={"X-A": "1"})
    derived = client.with_options(
        environment="staging", api_key="other-key", timeout=3.0, max_retries=5, default_headers={"X-B": "2"}
    )
    inner: Any = getattr(client, "inner", client)
    derived_inner: Any = getattr(derived, "inner", derived)
    assert derived_inner._pool is inner._pool
    assert derived.base_url == "https://staging.api.animalstore.example/v1"
    assert derived.timeout == httpx.Timeout(3.0)
    assert derived.max_retries == 5
    assert client.base_url == PRODUCTION
    assert client.max_retries == 2
    derived.list_pets()
    headers = route.calls.last.request.headers
    assert headers["Authorization"] == "Bearer other-key"
    assert (headers["X-A"], headers["X-B"]) == ("1", "2")
    derived.close()
    assert not client.is_closed
    router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    assert client.list_pets() == []


def test_with_options_validates(make_client: ClientFactory) -> None:
    """Bad options given to with_options raise ClientValidationError."""
    client = make_client()
    with pytest.raises(ClientValidationError):
        client.with_options(max_retries=-1)
    with pytest.raises(ClientValidationError):
        client.with_options(environment="qa")
    with pytest.raises(ClientValidationError):
        client.with_options(api_key="has space")


def test_closing_the_original_closes_derived_clients(make_client: ClientFactory) -> None:
    """A derived client shares the pool, so it reports closed once the original closes it."""
    client = make_client()
    derived = client.with_options(max_retries=0)
    client.close()
    assert derived.is_closed
    with pytest.raises(AnimalStoreError, match="closed"):
        derived.list_pets()


# --- raw responses ---------------------------------------------------------------------------


def test_raw_response_exposes_http_details(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """with_raw_response gives status, headers, the httpx response, attempts and parse()."""
    router.post(f"{PRODUCTION}/pets").respond(201, json=PET, headers={"x-request-id": "r-9"})
    raw = make_client().with_raw_response.create_pet(name="Rex", category_id=3)
    assert isinstance(raw, APIResponse)
    assert raw.status_code == 201
    assert raw.headers["x-request-id"] == "r-9"
    assert isinstance(raw.http_response, httpx.Response)
    assert raw.attempts == 1
    assert raw.parse() == Pet(id=7, name="Rex", category_id=3, status="available")  # type: ignore[arg-type]
    assert raw.parse() is raw.parse()


def test_raw_response_raises_errors_the_same_way(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A non-2xx raises from the raw call; a bad body raises from parse()."""
    router.get(f"{PRODUCTION}/pets/1").respond(404, json={"code": "nf", "message": "none", "status": 404})
    router.get(f"{PRODUCTION}/pets").respond(200, json={"not": "a list"})
    client = make_client()
    with pytest.raises(NotFoundError), pytest.warns(DeprecationWarning, match="2030-12-05"):
        client.with_raw_response.get_pet(1)
    raw = client.with_raw_response.list_pets()
    with pytest.raises(APIResponseValidationError):
        raw.parse()


# --- the low-level request -------------------------------------------------------------------------


def test_request_reaches_undocumented_paths(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """client.request sends any method and path under the base URL with the same auth."""
    route = router.post(f"{PRODUCTION}/messages").respond(
        201, json={"id": "m1", "message": "hi", "status": "queued", "createdAt": "2026-11-21T12:00:00Z"}
    )
    response = make_client().request("post", "/messages", json={"message": "hi"}, headers={"X-Trace": "t"})
    assert response.json()["status"] == "queued"
    sent = route.calls.last.request
    assert sent.method == "POST"
    assert sent.headers["Authorization"] == f"Bearer {API_KEY}"
    assert sent.headers["X-Trace"] == "t"
    assert json.loads(sent.content) == {"message": "hi"}


def test_request_maps_errors_and_follows_method_retry_rules(
    make_client: ClientFactory, router: respx.MockRouter
) -> None:
    """GET is retried like a read, POST like create_pet; errors raise their status class."""
    get_route = router.get(f"{PRODUCTION}/store/orders").respond(500)
    post_route = router.post(f"{PRODUCTION}/messages").respond(500)
    client = make_client()
    with pytest.raises(InternalServerError):
        client.request("GET", "/store/orders", params={"page": 1})
    with pytest.raises(InternalServerError):
        client.request("POST", "/messages", json={"message": "hi"})
    assert get_route.call_count == 3
    assert post_route.call_count == 1
    assert get_route.calls.last.request.url.params["page"] == "1"


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "argument"),
    [
        ("GET", "store/orders", {}, "path"),
        ("GET", "//evil.example/x", {}, "path"),
        ("GET", "https://evil.example/x", {}, "path"),
        ("GE T", "/x", {}, "method"),
        ("POST", "/messages", {"json": {"n": float("nan")}}, "json"),
        ("POST", "/messages", {"json": {"when": object()}}, "json"),
        ("GET", "/x", {"headers": {"Authorization": "Basic x"}}, "headers"),
    ],
)
def test_request_validates_before_sending(
    make_client: ClientFactory,
    router: respx.MockRouter,
    method: str,
    path: str,
    kwargs: dict[str, object],
    argument: str,
) -> None:
    """A bad method, path, JSON body or header raises ClientValidationError and sends nothing."""
    route = router.route().respond(200)
    with pytest.raises(ClientValidationError) as info:
        make_client().request(method, path, **kwargs)
    assert info.value.argument == argument
    assert not route.called


# --- headers, logging, security -----------------------------------------------------------------


def test_user_agent_names_sdk_httpx_and_python(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """User-Agent is animalstore-client-python/<v> httpx/<v> Python/<v>."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    make_client().list_pets()
    agent = route.calls.last.request.headers["User-Agent"]
    assert re.fullmatch(r"animalstore-client-python/1\.0\.0 httpx/[\w.]+ Python/\d+\.\d+\.\d+\S*", agent)
    assert f"httpx/{httpx.__version__}" in agent


def test_logs_describe_attempts_and_retries_without_secrets(
    make_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Records name the method, URL, status, elapsed time, retry number and delay; never the key."""
    secret = "sk-log-secret-777"
    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    with LoopbackServer([respond(503, ERROR_503), respond(200, [PET])]) as server:
        make_client(api_key=secret, base_url=server.base_url).list_pets()
    ours = [r.getMessage() for r in caplog.records if r.name == "animalstore_client"]
    assert any(re.search(r"GET http://127\.0\.0\.1:\d+/v1/pets -> 503 .* in [\d.]+ ms \(attempt 1\)", m) for m in ours)
    assert any(re.search(r"Retrying GET .*/v1/pets in 0\.50 s \(retry 1 of 2\) after 503", m) for m in ours)
    assert any("-> 200 OK" in m and "(attempt 2)" in m for m in ours)
    assert secret not in caplog.text
    assert "Bearer" not in caplog.text


def test_library_adds_no_handlers_by_default() -> None:
    """Without ANIMALSTORE_LOG the animalstore_client logger has no handlers."""
    code = (
        "import logging, animalstore_client as a\n"
        "a.AnimalStoreClient('k')\n"
        "print(len(logging.getLogger('animalstore_client').handlers))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIMALSTORE_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "0"


def test_animalstore_log_turns_on_stderr_logging() -> None:
    """ANIMALSTORE_LOG=debug prints request lines to stderr, without the key."""
    code = (
        "import httpx, animalstore_client as a\n"
        "t = httpx.MockTransport(lambda r: httpx.Response(200, json=[]))\n"
        "a.AnimalStoreClient('sk-env-secret', http_client=httpx.Client(transport=t)).list_pets()\n"
    )
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ANIMALSTORE_")}, "ANIMALSTORE_LOG": "debug"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert "DEBUG animalstore_client: GET https://api.animalstore.example/v1/pets -> 200 OK" in out.stderr
    assert "sk-env-secret" not in out.stderr


def test_bad_animalstore_log_is_refused(make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown ANIMALSTORE_LOG value raises ClientValidationError naming the variable."""
    monkeypatch.setenv("ANIMALSTORE_LOG", "verbose")
    with pytest.raises(ClientValidationError, match="ANIMALSTORE_LOG must be 'debug' or 'info'"):
        make_client()


@pytest.mark.parametrize("base_url", ["http://api.animalstore.example/v1", "http://10.0.0.5:8080/v1"])
def test_plain_http_to_remote_host_warns(base_url: str) -> None:
    """http:// to a non-loopback host emits InsecureTransportWarning at the caller's line."""
    with pytest.warns(InsecureTransportWarning, match="clear text") as record:
        AnimalStoreClient(API_KEY, base_url=base_url).close()
    assert record[0].filename == __file__
    assert issubclass(InsecureTransportWarning, UserWarning)
    client = AnimalStoreClient(API_KEY)
    with pytest.warns(InsecureTransportWarning) as record:
        client.with_options(base_url=base_url)
    assert record[0].filename == __file__
    client.close()


@pytest.mark.parametrize(
    "base_url",
    [
        "https://api.animalstore.example/v1",
        "http://localhost:8080/v1",
        "http://127.0.0.1/v1",
        "http://127.8.9.1/v1",
        "http://[::1]:9/v1",
    ],
)
def test_https_and_loopback_are_silent(base_url: str) -> None:
    """https:// and loopback http:// construct without any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AnimalStoreClient(API_KEY, base_url=base_url).close()


# --- concurrency and event loops ------------------------------------------------------------------


def test_sync_client_is_thread_safe() -> None:
    """One sync client serves many threads at once; every call gets its answer."""
    with (
        LoopbackServer([respond(200, [PET])]) as server,
        AnimalStoreClient(API_KEY, base_url=server.base_url) as client,
        ThreadPoolExecutor(max_workers=16) as pool,
    ):
        results = list(pool.map(lambda _: client.list_pets(), range(200)))
    assert all(pets[0].id == 7 for pets in results)


@pytest.mark.anyio
async def test_async_client_serves_hundreds_of_concurrent_calls() -> None:
    """300 concurrent calls on one async client complete with no PoolTimeout."""
    with LoopbackServer([respond(200, [PET])]) as server:
        async with AsyncAnimalStoreClient(API_KEY, base_url=server.base_url, timeout=20.0) as client:
            results = await asyncio.gather(*(client.list_pets() for _ in range(300)))
    assert len(results) == 300
    assert all(pets[0].id == 7 for pets in results)


def _run_script(code: str, base_url: str) -> subprocess.CompletedProcess[str]:
    # A subprocess: sockets left behind by a finished event loop are reported
    # by the garbage collector there, not inside this test session.
    env = {**os.environ, "BASE_URL": base_url}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_async_client_survives_several_asyncio_runs() -> None:
    """One async client reused across asyncio.run calls keeps working, and closes cleanly."""
    code = (
        "import asyncio, os, animalstore_client as a\n"
        "client = a.AsyncAnimalStoreClient('k', base_url=os.environ['BASE_URL'])\n"
        "for _ in range(3):\n"
        "    print(asyncio.run(client.list_pets())[0].id)\n"
        "asyncio.run(client.aclose())\n"
        "print(client.is_closed)\n"
    )
    with LoopbackServer([respond(200, [PET])]) as server:
        out = _run_script(code, server.base_url)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["7", "7", "7", "True"]
    assert "Event loop is closed" not in out.stderr


def test_async_client_with_own_http_client_refuses_a_new_loop() -> None:
    """With a caller's AsyncClient, a second event loop raises a clear AnimalStoreError, not a hang."""
    code = (
        "import asyncio, os, httpx, animalstore_client as a\n"
        "client = a.AsyncAnimalStoreClient('k', base_url=os.environ['BASE_URL'], http_client=httpx.AsyncClient())\n"
        "print(asyncio.run(client.list_pets())[0].id)\n"
        "try:\n"
        "    asyncio.run(client.list_pets())\n"
        "except a.AnimalStoreError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    with LoopbackServer([respond(200, [PET])]) as server:
        out = _run_script(code, server.base_url)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.splitlines()
    assert first == "7"
    assert second.startswith("AnimalStoreError This AsyncAnimalStoreClient was first used in another event loop")


def test_unclosed_async_client_is_collected_quietly() -> None:
    """An async client dropped without aclose never prints 'Event loop is closed'."""
    code = (
        "import asyncio, gc, httpx, animalstore_client as a\n"
        "t = httpx.MockTransport(lambda r: httpx.Response(200, json=[]))\n"
        "async def main():\n"
        "    c = a.AsyncAnimalStoreClient('k')\n"
        "    d = a.AsyncAnimalStoreClient('k', http_client=httpx.AsyncClient(transport=t))\n"
        "    await d.list_pets()\n"
        "asyncio.run(main())\n"
        "gc.collect()\n"
        "print('done')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "done"
    assert "Event loop is closed" not in out.stderr
    assert out.stderr == ""


def test_clients_define_no_finalizer() -> None:
    """Neither client has a __del__ that could run I/O on a dead event loop."""
    assert "__del__" not in vars(AnimalStoreClient)
    assert "__del__" not in vars(AsyncAnimalStoreClient)


def test_proxy_environment_variables_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY routes requests through the proxy, as httpx does."""
    with LoopbackServer([respond(200, [PET])]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "")
        with pytest.warns(InsecureTransportWarning):
            client = AnimalStoreClient(API_KEY, base_url="http://pets.internal.example/v1")
        with client:
            assert client.list_pets()[0].id == 7
        assert proxy.received[0].target == "http://pets.internal.example/v1/pets"


def test_bad_request_from_server_is_not_retried(make_client: ClientFactory) -> None:
    """A 400 over a real socket raises BadRequestError after one request."""
    with LoopbackServer([respond(400, {"code": "bad", "message": "name missing", "status": 400})]) as server:
        with pytest.raises(BadRequestError, match="name missing"):
            make_client(base_url=server.base_url).create_pet(name="", category_id=1)
        assert len(server.received) == 1
