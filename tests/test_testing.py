"""FakeAnimalStore: the interface's rules, bad input, fault injection, and both ways in.

Tests taking ``http`` send raw requests (things the SDK refuses to send)
through the in-process transport and through the real loopback server alike.
Tests taking ``make_store_client`` run the SDK end to end, sync and async,
over both ways in.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from animalstore_client import (
    AnimalStoreClient,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ClientValidationError,
    InternalServerError,
    NotFoundError,
    Pet,
    PetStatus,
    RateLimitError,
)
from animalstore_client.testing import FAKE_BASE_URL, FakeAnimalStore, FakeTransport

from .conftest import SyncView, needs_pyreqwest

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
SEED = [
    {"id": 1, "name": "Biscuit", "categoryId": 1, "status": "available"},
    {"id": 2, "name": "Mochi", "categoryId": 2, "status": "sold"},
    {"id": 3, "name": "Pip", "categoryId": 1, "status": "available"},
]


@pytest.fixture
def store() -> FakeAnimalStore:
    """A store holding three pets."""
    return FakeAnimalStore(pets=SEED)


@pytest.fixture(params=["transport", "server"])
def http(request: pytest.FixtureRequest, store: FakeAnimalStore) -> Iterator[httpx.Client]:
    """A bare httpx client reaching the store in-process or over loopback HTTP, base URL set."""
    if request.param == "transport":
        with httpx.Client(transport=FakeTransport(store), base_url=FAKE_BASE_URL + "/") as client:
            yield client
    else:
        with store.serve() as base_url, httpx.Client(base_url=base_url + "/") as client:
            yield client


def _state_unchanged(store: FakeAnimalStore) -> None:
    assert [pet.id for pet in store.pets] == [1, 2, 3]


# --- authentication -------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic dGVzdDp4"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer  test-key"},
        {"Authorization": "bearer test-key"},
        {"Authorization": "test-key"},
    ],
)
def test_every_request_needs_a_bearer_key(http: httpx.Client, headers: dict[str, str]) -> None:
    """Missing, wrong or malformed Authorization gets 401 with an Error body, on every path."""
    for method, path in (("GET", "pets"), ("POST", "pets"), ("GET", "pets/1"), ("GET", "nowhere")):
        response = http.request(method, path, headers=headers, json={"name": "x", "categoryId": 1})
        assert response.status_code == 401
        body = response.json()
        assert body["status"] == 401
        assert body["code"] == "unauthorized"
        assert body["message"]


def test_any_configured_key_is_accepted() -> None:
    """Each of api_keys works."""
    store = FakeAnimalStore(api_keys=("k1", "k2"))
    with store.client(api_key="k2") as client:
        assert client.list_pets() == []
    assert store.api_key == "k1"


# --- listing ---------------------------------------------------------------------------------


def test_list_defaults_and_filters(http: httpx.Client, store: FakeAnimalStore) -> None:
    """limit defaults to 20, caps the page, and status filters."""
    for index in range(30):
        store.handle(
            "POST",
            "/v1/pets",
            "",
            {"authorization": f"Bearer {KEY}", "content-type": "application/json"},
            json.dumps({"name": f"p{index}", "categoryId": 9}).encode(),
        )
    assert len(http.get("pets", headers=AUTH).json()) == 20
    assert len(http.get("pets", params={"limit": 100}, headers=AUTH).json()) == 33
    assert [p["id"] for p in http.get("pets", params={"limit": 2}, headers=AUTH).json()] == [1, 2]
    available = http.get("pets", params={"status": "available"}, headers=AUTH).json()
    assert [p["name"] for p in available] == ["Biscuit", "Pip"]
    assert http.get("pets", params={"status": "pending"}, headers=AUTH).json() == []


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "abc"}, "limit"),
        ({"limit": "5.0"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": ""}, "limit"),
        ([("limit", "1"), ("limit", "2")], "limit"),
        ({"status": "adopted"}, "status"),
        ({"status": "AVAILABLE"}, "status"),
    ],
)
def test_bad_list_parameters_are_400(http: httpx.Client, params: Any, field: str) -> None:
    """An out-of-range or non-integer limit, or an unknown status, is 400 naming the parameter."""
    response = http.get("pets", params=params, headers=AUTH)
    assert response.status_code == 400
    assert response.json()["message"].startswith(f"{field}:")
    assert response.json()["status"] == 400


# --- creating ------------------------------------------------------------------------------


def test_create_assigns_increasing_ids(http: httpx.Client, store: FakeAnimalStore) -> None:
    """A valid NewPet is stored under the next id and returned with 201."""
    first = http.post("pets", json={"name": "Rex", "categoryId": 4, "status": "pending"}, headers=AUTH)
    second = http.post("pets", json={"name": "Ash", "categoryId": 4}, headers=AUTH)
    assert first.status_code == second.status_code == 201
    assert first.json() == {"id": 4, "name": "Rex", "categoryId": 4, "status": "pending"}
    assert second.json() == {"id": 5, "name": "Ash", "categoryId": 4}
    assert store.pets[-1] == Pet(id=5, name="Ash", category_id=4)


@pytest.mark.parametrize(
    ("content", "content_type", "status", "fragment"),
    [
        (b'{"name": "Rex", "categoryId": 1', "application/json", 400, "not valid JSON"),
        (b'{"name": "Rex", "categoryId": NaN}', "application/json", 400, "not valid JSON"),
        (b'{"name": "Rex", "categoryId": 1}', "text/plain", 400, "Content-Type must be application/json"),
        (b'{"name": "Rex", "categoryId": 1}', "", 400, "Content-Type must be application/json"),
        (b'[{"name": "Rex", "categoryId": 1}]', "application/json", 400, "must be a JSON object"),
        (b'"Rex"', "application/json", 400, "must be a JSON object"),
        (b'{"categoryId": 1}', "application/json", 400, "name: required"),
        (b'{"name": "Rex"}', "application/json", 400, "categoryId: required"),
        (b'{"name": 5, "categoryId": 1}', "application/json", 400, "name: must be a string"),
        (b'{"name": "Rex", "categoryId": "1"}', "application/json", 400, "categoryId: must be an integer"),
        (b'{"name": "Rex", "categoryId": 1.5}', "application/json", 400, "categoryId: must be an integer"),
        (b'{"name": "Rex", "categoryId": 1.0}', "application/json", 400, "categoryId: must be an integer"),
        (b'{"name": "Rex", "categoryId": true}', "application/json", 400, "categoryId: must be an integer"),
        (b'{"name": "Rex", "categoryId": 9223372036854775808}', "application/json", 400, "within int64"),
        (b'{"name": "Rex", "categoryId": 1, "status": "adopted"}', "application/json", 400, "status: must be one of"),
        (b'{"name": "Rex", "categoryId": 1, "status": null}', "application/json", 400, "status: must be one of"),
        (b"\xff\xfe", "application/json", 400, "not valid JSON"),
        (b'{"name": "' + b"x" * (1024 * 1024) + b'", "categoryId": 1}', "application/json", 413, "limit is 1048576"),
    ],
)
def test_bad_create_bodies_are_refused_and_store_nothing(
    http: httpx.Client, store: FakeAnimalStore, content: bytes, content_type: str, status: int, fragment: str
) -> None:
    """Each malformed body gets its status and an Error body naming the fault; the store is unchanged."""
    headers = {**AUTH, "Content-Type": content_type} if content_type else AUTH
    response = http.post("pets", content=content, headers=headers)
    assert response.status_code == status
    body = response.json()
    assert body["status"] == status
    assert fragment in body["message"]
    _state_unchanged(store)


def test_all_problems_are_reported_together(http: httpx.Client) -> None:
    """A body with several faults names each field."""
    message = http.post("pets", json={"name": None, "categoryId": "x", "status": 1}, headers=AUTH).json()["message"]
    assert "name:" in message
    assert "categoryId:" in message
    assert "status:" in message


def test_concurrent_creates_never_reuse_an_id(store: FakeAnimalStore) -> None:
    """Creates from many threads get distinct ids."""
    with (
        store.serve() as base_url,
        AnimalStoreClient(KEY, base_url=base_url) as client,
        ThreadPoolExecutor(max_workers=16) as pool,
    ):
        pets = list(pool.map(lambda i: client.create_pet(name=f"p{i}", category_id=1), range(200)))
    ids = [pet.id for pet in pets]
    assert len(set(ids)) == 200
    assert sorted(ids) == list(range(4, 204))


# --- fetching (deprecated) -------------------------------------------------------------------


def test_get_pet_carries_deprecation_and_sunset(http: httpx.Client) -> None:
    """GET /pets/{id} answers 200 or 404, always with Deprecation and Sunset headers."""
    found = http.get("pets/2", headers=AUTH)
    assert found.status_code == 200
    assert found.json()["name"] == "Mochi"
    for response in (found, http.get("pets/99", headers=AUTH), http.get("pets/abc", headers=AUTH)):
        assert response.headers["Sunset"] == "Thu, 05 Dec 2030 00:00:00 GMT"
        assert response.headers["Deprecation"].startswith("@")
    missing = http.get("pets/99", headers=AUTH)
    assert missing.status_code == 404
    assert missing.json()["code"] == "not_found"
    assert http.get("pets/abc", headers=AUTH).status_code == 400


# --- routing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("DELETE", "pets", 405),
        ("PUT", "pets/1", 405),
        ("GET", "messages", 405),
        ("GET", "store/orders", 404),
        ("GET", "categories", 404),
        ("GET", "pets/1/photos", 404),
    ],
)
def test_other_methods_and_paths(http: httpx.Client, method: str, path: str, status: int) -> None:
    """Another method on a known path is 405 with Allow; an unknown path is 404; both with Error bodies."""
    response = http.request(method, path, headers=AUTH)
    assert response.status_code == status
    assert response.json()["status"] == status
    if status == 405:
        assert response.headers["Allow"]


def test_messages_quickstart(http: httpx.Client) -> None:
    """POST /messages answers with id, message, status 'queued' and an ISO 8601 createdAt."""
    response = http.post("messages", json={"message": "hello"}, headers=AUTH)
    assert response.status_code == 202
    body = response.json()
    assert body["message"] == "hello"
    assert body["status"] == "queued"
    assert body["id"]
    assert body["createdAt"].endswith("Z")
    assert http.post("messages", json={"text": "x"}, headers=AUTH).json()["message"] == "message: required"


# --- fault injection and recording ----------------------------------------------------------------


def test_fail_next_and_requests(http: httpx.Client, store: FakeAnimalStore) -> None:
    """Injected faults answer the next requests in order; every request is recorded with the key redacted."""
    store.fail_next(503, times=2, retry_after=3)
    store.fail_next(502, body="<html>Bad Gateway</html>")
    first = http.get("pets", headers=AUTH)
    assert (first.status_code, first.headers["Retry-After"]) == (503, "3")
    assert first.json()["code"] == "service_unavailable"
    assert http.get("pets", headers=AUTH).status_code == 503
    html = http.get("pets", headers=AUTH)
    assert (html.status_code, html.text) == (502, "<html>Bad Gateway</html>")
    assert http.get("pets", headers=AUTH).status_code == 200
    http.post("pets", json={"name": "Rex", "categoryId": 1}, headers=AUTH)
    last = store.requests[-1]
    assert (last.method, last.path, last.json) == ("POST", "/v1/pets", {"name": "Rex", "categoryId": 1})
    assert last.headers["authorization"] == "Bearer [redacted]"
    assert all(KEY not in json.dumps(r.headers) for r in store.requests)


def test_delay_next_slows_answers(http: httpx.Client, store: FakeAnimalStore) -> None:
    """delay_next holds the next answer for the given time."""
    store.delay_next(0.3)
    started = time.perf_counter()
    assert http.get("pets", headers=AUTH).status_code == 200
    assert time.perf_counter() - started >= 0.3


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda s: s.fail_next(200), "status"),
        (lambda s: s.fail_next(503, times=0), "times"),
        (lambda s: s.delay_next(-1), "seconds"),
        (lambda s: FakeAnimalStore(api_keys=()), "api_keys"),
        (lambda s: FakeAnimalStore(api_keys=("has space",)), "api_key"),
    ],
)
def test_test_kit_validates_its_arguments(
    store: FakeAnimalStore, call: Callable[[FakeAnimalStore], object], argument: str
) -> None:
    """The kit's own bad arguments raise ClientValidationError naming them."""
    with pytest.raises(ClientValidationError) as info:
        call(store)
    assert info.value.argument == argument


# --- the SDK end to end, over both ways in, sync and async -----------------------------------------


@pytest.fixture(
    params=[
        "transport-sync",
        "transport-async",
        "server-sync",
        "server-async",
        "server-async-aiohttp",
        pytest.param("server-sync-pyreqwest", marks=needs_pyreqwest),
        pytest.param("server-async-pyreqwest", marks=needs_pyreqwest),
    ]
)
def make_store_client(request: pytest.FixtureRequest, store: FakeAnimalStore) -> Iterator[Callable[..., Any]]:
    """Build an SDK client reaching ``store`` in-process (httpx) or over HTTP (every HTTP library)."""
    way, kind, *library = str(request.param).split("-")
    made: list[Any] = []
    loop = __import__("asyncio").new_event_loop()
    with store.serve() as base_url:

        def factory(**options: Any) -> Any:
            if way == "server":
                options.setdefault("base_url", base_url)
                options.setdefault("api_key", KEY)
                if library:
                    options["backend"] = library[0]
                client: Any = (
                    AnimalStoreClient(**options)
                    if kind == "sync"
                    else SyncView(__import__("animalstore_client").AsyncAnimalStoreClient(**options), loop)
                )
            else:
                client = store.client(**options) if kind == "sync" else SyncView(store.async_client(**options), loop)
            made.append(client)
            return client

        yield factory
        for client in made:
            client.close()
    # As asyncio.run does: async generators left open get closed while the loop can still run them.
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def test_end_to_end_operations(make_store_client: Callable[..., Any], store: FakeAnimalStore) -> None:
    """list, create and get work end to end and change the store."""
    client = make_store_client()
    assert [p.name for p in client.list_pets(status=PetStatus.AVAILABLE)] == ["Biscuit", "Pip"]
    created = client.create_pet(name="Rex", category_id=7, status="pending")
    assert created == Pet(id=4, name="Rex", category_id=7, status=PetStatus.PENDING)
    with pytest.warns(DeprecationWarning, match="2030-12-05"):
        assert client.get_pet(4) == created
    assert store.pets[-1] == created
    raw = client.with_raw_response.list_pets(limit=1)
    assert raw.status_code == 200
    assert len(raw.parse()) == 1
    reply = client.request("POST", "/messages", json={"message": "hi"})
    assert reply.json()["status"] == "queued"


def test_end_to_end_errors(make_store_client: Callable[..., Any]) -> None:
    """The fake's errors arrive as the SDK's typed exceptions."""
    client = make_store_client()
    with pytest.raises(NotFoundError), pytest.warns(DeprecationWarning, match="2030-12-05"):
        client.get_pet(404)
    with pytest.raises(AuthenticationError) as info:
        make_store_client(api_key="wrong-key").list_pets()
    assert info.value.code == "unauthorized"
    with pytest.raises(BadRequestError, match="limit"):
        client.request("GET", "/pets", params={"limit": 500})


def test_end_to_end_retries_through_fault_injection(
    make_store_client: Callable[..., Any], store: FakeAnimalStore, sleeps: list[float], request: pytest.FixtureRequest
) -> None:
    """Injected 503s are retried; a 500 on create is not; a long Retry-After is raised."""
    client = make_store_client()
    store.fail_next(503, times=2)
    assert len(client.list_pets()) == 3
    # Kit-made clients record their delays on the store instead of sleeping; the others hit the patched sleep.
    kit_made = request.node.callspec.params["make_store_client"].startswith("transport")
    assert (store.retry_delays, sleeps) == (([0.5, 1.0], []) if kit_made else ([], [0.5, 1.0]))
    store.fail_next(500)
    with pytest.raises(InternalServerError):
        client.create_pet(name="Rex", category_id=1)
    assert [p.id for p in store.pets] == [1, 2, 3]
    store.fail_next(429, retry_after=3600)
    with pytest.raises(RateLimitError):
        client.list_pets()


def test_end_to_end_timeout(make_store_client: Callable[..., Any], store: FakeAnimalStore) -> None:
    """A delay past the read timeout raises APITimeoutError; a POST is not retried."""
    store.delay_next(0.5, times=5)
    client = make_store_client(timeout=0.1)
    with pytest.raises(APITimeoutError):
        client.create_pet(name="Rex", category_id=1)
    assert len([r for r in store.requests if r.method == "POST"]) == 1


# --- python -m animalstore_client.testing ---------------------------------------------------------


def test_module_serves_real_http() -> None:
    """python -m animalstore_client.testing --port 0 prints its URL and key at once and serves them."""
    process = subprocess.Popen(
        [sys.executable, "-m", "animalstore_client.testing", "--port", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        second = process.stdout.readline()
        assert first.startswith("FakeAnimalStore serving at http://127.0.0.1:")
        base_url = first.split(" at ", 1)[1].strip()
        assert base_url.endswith("/v1")
        key = second.split(": ", 1)[1].strip()
        assert key == "test-key"
        with AnimalStoreClient(key, base_url=base_url) as client:
            assert client.create_pet(name="Rex", category_id=1).id == 1
            assert [p.name for p in client.list_pets()] == ["Rex"]
    finally:
        process.terminate()
        process.wait(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_serve_stops_cleanly(store: FakeAnimalStore) -> None:
    """After the serve block no thread of the server is left running."""
    before = threading.active_count()
    with store.serve() as base_url, AnimalStoreClient(KEY, base_url=base_url) as client:
        client.list_pets()
    time.sleep(0.1)
    assert threading.active_count() <= before
    with pytest.raises(httpx.ConnectError):
        httpx.get(base_url + "/pets")
