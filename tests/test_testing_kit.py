"""The testing kit as a user's test suite meets it: the pytest plugin, connection faults, instant retries,
request ids, kit clients across event loops, exceptions for test doubles, and the control API."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import httpx
import pytest

from animalstore_client import (
    AnimalStoreClient,
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    ClientValidationError,
    InternalServerError,
    NotFoundError,
    RateLimitError,
)
from animalstore_client._clients.shells import SYNC_IO
from animalstore_client.testing import (
    MAX_RECORDED_BYTES,
    MAX_RECORDED_REQUESTS,
    FakeAnimalStore,
    QueuedFault,
    make_status_error,
)

from .conftest import USERS_PYTEST
from .timing import OVERSHOOT, Stopwatch

PETS = [{"id": 1, "name": "Rex", "categoryId": 1, "status": "available"}]


@pytest.fixture
def store() -> FakeAnimalStore:
    return FakeAnimalStore(pets=PETS)


def _run_pytest(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a user's test file in a fresh pytest, as installing the package would."""
    # A user's project has no configuration of this one: under the project, pytest would find its pyproject.toml
    # above tmp_path and start its workers (a --basetemp under .nox/ did).
    project = Path(__file__).resolve().parent.parent
    assert not tmp_path.resolve().is_relative_to(project), f"{tmp_path} lies in the project: give --basetemp outside it"
    (tmp_path / "test_user.py").write_text(textwrap.dedent(source))
    return subprocess.run(
        [*USERS_PYTEST, *args, str(tmp_path / "test_user.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith(("ANIMALSTORE_", "PYTEST_"))},
    )


# --- the pytest plugin ------------------------------------------------------------------------------


USER_SUITE = """
    import asyncio

    import pytest

    from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient
    from animalstore_client.testing import FakeAnimalStore


    def test_one(animalstore_fake: FakeAnimalStore, animalstore_fake_client: AnimalStoreClient) -> None:
        animalstore_fake_client.create_pet(name="Rex", category_id=1)
        assert [p.name for p in animalstore_fake.pets] == ["Rex"]


    def test_two_gets_a_fresh_store(
        animalstore_fake: FakeAnimalStore, animalstore_fake_client: AnimalStoreClient
    ) -> None:
        assert animalstore_fake.pets == [] and animalstore_fake.requests == []
        animalstore_fake.fail_next(503, times=2)
        assert animalstore_fake_client.list_pets() == []
        assert animalstore_fake.retry_delays == [0.5, 1.0]


    def test_async_under_asyncio_run(animalstore_fake_async_client: AsyncAnimalStoreClient) -> None:
        assert asyncio.run(animalstore_fake_async_client.list_pets()) == []


    @pytest.mark.anyio
    async def test_async_under_anyio(
        animalstore_fake: FakeAnimalStore, animalstore_fake_async_client: AsyncAnimalStoreClient
    ) -> None:
        await animalstore_fake_async_client.create_pet(name="Ash", category_id=2)
        assert animalstore_fake.pets[0].name == "Ash"


    @pytest.mark.asyncio
    async def test_async_under_pytest_asyncio(
        animalstore_fake: FakeAnimalStore, animalstore_fake_async_client: AsyncAnimalStoreClient
    ) -> None:
        await animalstore_fake_async_client.create_pet(name="Pip", category_id=2)
        assert animalstore_fake.pets[0].name == "Pip"


    @pytest.fixture
    def anyio_backend() -> str:
        return "asyncio"
"""


def test_the_plugin_gives_fresh_fixtures_to_sync_and_async_tests_with_no_conftest(tmp_path: Path) -> None:
    """Installed is enough: the three fixtures work, fresh per test, under asyncio.run, anyio and pytest-asyncio."""
    result = _run_pytest(tmp_path, USER_SUITE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout


def test_the_plugin_can_be_turned_off(tmp_path: Path) -> None:
    """-p no:animalstore removes the fixtures."""
    result = _run_pytest(tmp_path, USER_SUITE, "-p", "no:animalstore")
    assert result.returncode != 0
    assert "fixture 'animalstore_fake' not found" in result.stdout


# --- connection faults ------------------------------------------------------------------------------


def test_refused_never_reaches_the_store_and_is_retried_even_for_a_create(store: FakeAnimalStore) -> None:
    """Nothing was sent, so a create is retried; the store sees only the attempt that got through."""
    store.fail_next_connection("refused")
    with store.client() as client:
        created = client.create_pet(name="Ash", category_id=2)
    assert [r.method for r in store.requests] == ["POST"]
    assert [p.id for p in store.pets] == [1, created.id]
    assert store.retry_delays == [0.5]


def test_reset_acts_then_drops_the_answer_and_a_create_is_not_retried(store: FakeAnimalStore) -> None:
    """The ambiguous case: the pet is stored, the answer is lost, and the SDK does not risk a duplicate."""
    store.fail_next_connection("reset")
    with store.client() as client, pytest.raises(APIConnectionError) as info:
        client.create_pet(name="Ash", category_id=2)
    assert info.value.attempts == 1
    assert [p.name for p in store.pets] == ["Rex", "Ash"]
    assert isinstance(info.value.__cause__, httpx.ReadError)


def test_timeout_acts_and_a_get_is_retried(store: FakeAnimalStore) -> None:
    """A read timeout on a GET is retried; each timed-out request did reach the store."""
    store.fail_next_connection("timeout", times=2)
    with store.client() as client:
        assert [p.name for p in client.list_pets()] == ["Rex"]
    assert len(store.requests) == 3
    assert store.retry_delays == [0.5, 1.0]


def test_timeout_on_a_create_is_an_api_timeout_error(store: FakeAnimalStore) -> None:
    """A create whose answer never came raises APITimeoutError, and the pet is stored all the same."""
    store.fail_next_connection("timeout")
    with store.client() as client, pytest.raises(APITimeoutError):
        client.create_pet(name="Ash", category_id=2)
    assert len(store.pets) == 2


def test_the_async_kit_client_meets_the_same_connection_faults(store: FakeAnimalStore) -> None:
    """Through the async in-process transport: refused is retried for a create, reset is not, timeout is a timeout."""

    async def scenario() -> None:
        async with store.async_client() as client:
            store.fail_next_connection("refused")
            await client.create_pet(name="Ash", category_id=2)
            store.fail_next_connection("reset")
            with pytest.raises(APIConnectionError) as reset:
                await client.create_pet(name="Pip", category_id=2)
            assert isinstance(reset.value.__cause__, httpx.ReadError)
            store.fail_next_connection("timeout")
            with pytest.raises(APITimeoutError):
                await client.create_pet(name="Max", category_id=2)

    asyncio.run(scenario())
    assert [p.name for p in store.pets] == ["Rex", "Ash", "Pip", "Max"]  # reset and timeout acted
    assert store.retry_delays == [0.5]  # only the refused create was retried


def test_status_and_connection_faults_queue_in_the_order_added(store: FakeAnimalStore) -> None:
    """fail_next and fail_next_connection share one queue: each request takes the oldest fault."""
    store.fail_next(503)
    store.fail_next_connection("reset")
    store.fail_next(429, retry_after=3)
    with store.client(max_retries=3) as client:
        assert len(client.list_pets()) == 1
    assert store.retry_delays == [0.5, 1.0, 3.0]
    assert len(store.requests) == 4


@pytest.mark.parametrize("kind", ["refused", "reset", "timeout"])
def test_connection_faults_over_http_end_the_exchange_without_an_answer(store: FakeAnimalStore, kind: str) -> None:
    """Over a socket: refused and reset close with a reset, timeout holds the connection until the client gives up."""
    store.fail_next_connection(kind)  # type: ignore[arg-type]
    with store.serve() as base_url:
        client = AnimalStoreClient(store.api_key, base_url=base_url, max_retries=0, timeout=0.5)
        with Stopwatch() as watch, pytest.raises(APITimeoutError if kind == "timeout" else APIConnectionError):
            client.create_pet(name="Ash", category_id=2)
        watch.assert_within(0.5 + OVERSHOOT)  # the client's timeout, which a held connection runs into
        assert [p.name for p in store.pets] == (["Rex"] if kind == "refused" else ["Rex", "Ash"])
        assert client.list_pets(limit=5)  # the next request is served normally
        client.close()


def test_a_bad_connection_fault_is_refused(store: FakeAnimalStore) -> None:
    """An unknown kind names the argument and the kinds there are."""
    with pytest.raises(ClientValidationError, match="refused, reset, timeout") as info:
        store.fail_next_connection("dropped")  # type: ignore[arg-type]
    assert info.value.argument == "kind"


# --- instant retries and request ids ------------------------------------------------------------------


def test_kit_clients_record_exact_delays_instead_of_sleeping(
    store: FakeAnimalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three 503s then an answer: nothing sleeps; the delays are the policy's exact backoff."""
    store.fail_next(503, times=2)
    store.fail_next(429, retry_after=7)
    slept: list[float] = []  # the client's own sleep, which the kit's replaces: never called
    monkeypatch.setattr(SYNC_IO, "sleep", slept.append)
    with store.client(max_retries=3) as client:
        assert len(client.list_pets()) == 1
    assert slept == []
    assert store.retry_delays == [0.5, 1.0, 7.0]


def test_with_options_keeps_the_instant_retries(store: FakeAnimalStore) -> None:
    """A client derived with with_options still records instead of sleeping."""
    store.fail_next(503)
    with store.client(max_retries=0) as client:
        assert len(client.with_options(max_retries=1).list_pets()) == 1
    assert store.retry_delays == [0.5]


def test_every_answer_carries_a_request_id_that_the_recording_and_the_exception_share(store: FakeAnimalStore) -> None:
    """x-request-id is unique per answer; exc.request_id is the id RecordedRequest holds."""
    with store.client(max_retries=0) as client:
        first = client.with_raw_response.list_pets()
        with pytest.raises(NotFoundError) as info, pytest.warns(DeprecationWarning, match="2030-12-05"):
            client.get_pet(99)  # type: ignore[deprecated]  # pyright: ignore[reportDeprecated]
        store.fail_next(500)
        with pytest.raises(InternalServerError) as injected:
            client.list_pets()
    ids = [r.request_id for r in store.requests]
    assert len(set(ids)) == 3
    assert all(i.startswith("req_") for i in ids)
    assert first.headers["x-request-id"] == ids[0]
    assert info.value.request_id == ids[1]
    assert injected.value.request_id == ids[2]


def test_request_ids_arrive_over_http_too(store: FakeAnimalStore) -> None:
    """The server sends the same header."""
    with store.serve() as base_url, AnimalStoreClient(store.api_key, base_url=base_url) as client:
        raw = client.with_raw_response.list_pets()
    assert raw.headers["x-request-id"] == store.requests[0].request_id


# --- event loops ---------------------------------------------------------------------------------------


def test_one_kit_async_client_serves_several_event_loops(store: FakeAnimalStore) -> None:
    """A module-scoped kit client used by tests that each run their own loop keeps working."""
    client = store.async_client()
    for _ in range(3):
        assert [p.name for p in asyncio.run(client.list_pets())] == ["Rex"]
    derived = client.with_options(max_retries=0)
    assert len(asyncio.run(derived.list_pets())) == 1
    asyncio.run(client.aclose())
    assert client.is_closed


def test_a_wrong_key_still_reaches_the_store(store: FakeAnimalStore) -> None:
    """api_key= stays an option of the kit clients, to test a wrong key."""
    with store.client(api_key="wrong-key") as client, pytest.raises(APIStatusError) as info:
        client.list_pets()
    assert info.value.status_code == 401


# --- exceptions for users' own test doubles -----------------------------------------------------------


def test_client_validation_error_needs_only_a_message() -> None:
    """Test doubles raise it with a message; the attributes default to None and it pickles."""
    exc = ClientValidationError("limit must be 1..100")
    assert str(exc) == "limit must be 1..100"
    assert (exc.argument, exc.rule, exc.value) == (None, None, None)
    again = pickle.loads(pickle.dumps(exc))
    assert (type(again), str(again), again.argument) == (ClientValidationError, "limit must be 1..100", None)


@pytest.mark.parametrize(
    ("status", "cls"), [(404, NotFoundError), (429, RateLimitError), (503, InternalServerError), (418, APIStatusError)]
)
def test_make_status_error_builds_what_the_client_raises(status: int, cls: type[APIStatusError]) -> None:
    """The class the client picks, a real response with an Error body, headers kept; it pickles."""
    exc = make_status_error(status, code="boom", message="It broke.", headers={"x-request-id": "req_1"})
    assert type(exc) is cls
    assert (exc.status_code, exc.code, exc.message, exc.request_id) == (status, "boom", "It broke.", "req_1")
    assert exc.response.json() == {"code": "boom", "message": "It broke.", "status": status}
    assert "It broke." in str(exc)
    again = pickle.loads(pickle.dumps(exc))
    assert (type(again), again.code, again.status_code) == (cls, "boom", status)


def test_make_status_error_matches_the_clients_own_exception(store: FakeAnimalStore) -> None:
    """Built by hand or raised by a client for the same answer, the exception reads the same."""
    store.fail_next(404)
    with store.client() as client, pytest.raises(NotFoundError) as raised:
        client.list_pets()
    made = make_status_error(404, message="Injected fault: 404 Not Found")
    assert (made.code, made.message) == (raised.value.code, raised.value.message)


def test_make_status_error_refuses_a_success_status() -> None:
    """A 2xx is not an error the client raises."""
    with pytest.raises(ClientValidationError) as info:
        make_status_error(200)
    assert info.value.argument == "status"


# --- out of process: --pets and the control API -------------------------------------------------------


def _post(url: str, data: object) -> httpx.Response:
    # The control API takes only application/json, even for a POST with no body (a web page can send no such thing).
    body = b"" if data is None else json.dumps(data).encode()
    return httpx.post(url, content=body, headers={"Content-Type": "application/json"}, timeout=5)


def test_the_control_api_seeds_injects_and_reads_from_another_process(store: FakeAnimalStore) -> None:
    """Reset, seed pets, queue faults and read requests over HTTP, with the key kept redacted."""
    with store.serve(control=True) as base_url:
        root = base_url.removesuffix("/v1")
        assert _post(f"{root}/_fake/reset", None).json() == {"pets": 0}
        assert _post(f"{root}/_fake/pets", PETS * 1).json() == {"pets": 1}
        assert _post(f"{root}/_fake/faults", {"status": 503, "times": 1, "retryAfter": 0}).status_code == 200
        assert _post(f"{root}/_fake/faults", {"connection": "reset"}).status_code == 200
        client = AnimalStoreClient(store.api_key, base_url=base_url, max_retries=3)
        assert [p.name for p in client.list_pets()] == ["Rex"]
        client.close()
        recorded = httpx.get(f"{root}/_fake/requests", timeout=5).json()
        assert len(recorded) == 3
        assert recorded[0]["headers"]["authorization"] == "Bearer [redacted]"
        assert recorded[0]["requestId"].startswith("req_")
        assert httpx.get(f"{root}/_fake/pets", timeout=5).json() == PETS
        bad = _post(f"{root}/_fake/faults", {"status": 200})
        assert bad.status_code == 400
        assert "status" in bad.json()["message"]


def test_the_control_api_is_refused_unless_enabled(store: FakeAnimalStore) -> None:
    """Without control=True the prefix answers 403 and changes nothing."""
    with store.serve() as base_url:
        answer = _post(base_url.removesuffix("/v1") + "/_fake/reset", None)
    assert answer.status_code == 403
    assert answer.json()["code"] == "control_disabled"
    assert len(store.pets) == 1


def test_the_command_line_server_takes_pets_from_a_file_and_a_control_flag(tmp_path: Path) -> None:
    """python -m animalstore_client.testing --pets FILE --control serves the seeded store and its control API."""
    pets_file = tmp_path / "pets.json"
    pets_file.write_text(json.dumps(PETS))
    process = subprocess.Popen(
        [sys.executable, "-m", "animalstore_client.testing", "--port", "0", "--pets", str(pets_file), "--control"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # bounded: the process prints it at once or exits
        base_url = first.rsplit(" ", 1)[-1].strip()
        assert base_url.startswith("http://127.0.0.1:"), first + (process.stderr.read() if process.stderr else "")
        with AnimalStoreClient("test-key", base_url=base_url) as client:
            assert [p.name for p in client.list_pets()] == ["Rex"]
        assert _post(base_url.removesuffix("/v1") + "/_fake/reset", None).status_code == 200
    finally:
        process.terminate()
        process.communicate(timeout=10)  # also closes the pipes


def test_the_command_line_server_names_a_bad_pets_file(tmp_path: Path) -> None:
    """A file that is not a JSON array of pets is an error naming the file, not a traceback."""
    bad = tmp_path / "pets.json"
    bad.write_text('{"id": 1}')
    result = subprocess.run(
        [sys.executable, "-m", "animalstore_client.testing", "--port", "0", "--pets", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "pets.json" in result.stderr
    assert "JSON array" in result.stderr
    assert "Traceback" not in result.stderr


def test_kit_clients_are_wired_through_the_clients_one_hook(store: FakeAnimalStore) -> None:
    """The kit writes none of the client's attributes: it hands a Wiring to the client, which makes its I/O
    strategy of it (the send loop never asks for the kit); copies keep both."""
    from animalstore_client._clients.shells import SYNC_IO, Wiring

    with store.client() as client:
        assert isinstance(client._wiring, Wiring)
        assert set(vars(client)) == {"_ssl_context", "_env_proxies", "_sender", "_config", "_owns_pool", "_wiring"}
        assert client._sender.io is not SYNC_IO
        assert client._sender.io.jitter() == 0.0
        copy = client.with_options(max_retries=0)
        assert copy._wiring is client._wiring
        assert copy._sender.io is client._sender.io
        plain = AnimalStoreClient("k")
        assert plain._wiring is None
        assert plain._sender.io is SYNC_IO


# --- bounds on what the store holds, and its fault queue ----------------------------------------------


AUTHORIZED = {"authorization": "Bearer test-key", "content-type": "application/json"}


def test_the_recording_keeps_the_newest_requests_and_counts_the_dropped(store: FakeAnimalStore) -> None:
    """Past MAX_RECORDED_REQUESTS the oldest requests are dropped first and dropped_requests counts them."""
    extra = 5
    for number in range(MAX_RECORDED_REQUESTS + extra):
        store.handle("GET", f"/v1/pets/{number}", "", AUTHORIZED, b"")
    recorded = store.requests
    assert len(recorded) == MAX_RECORDED_REQUESTS
    assert store.dropped_requests == extra
    assert recorded[0].path == f"/v1/pets/{extra}"  # the first five went, oldest first
    assert recorded[-1].path == f"/v1/pets/{MAX_RECORDED_REQUESTS + extra - 1}"
    store.reset()
    assert (store.requests, store.dropped_requests) == ([], 0)


def test_the_recording_is_bounded_in_bytes_too(store: FakeAnimalStore) -> None:
    """Forty 1 MB JSON bodies keep at most MAX_RECORDED_BYTES of them; the newest stay, the rest are counted."""
    body = json.dumps({"message": "m" * 1_000_000}).encode()
    for _ in range(40):
        assert store.handle("POST", "/v1/messages", "", AUTHORIZED, body).status == 202
    recorded = store.requests
    assert len(recorded) + store.dropped_requests == 40
    assert 0 < len(recorded) <= MAX_RECORDED_BYTES // len(body)
    assert all(request.json == {"message": "m" * 1_000_000} for request in recorded)


def test_a_json_body_weighs_what_it_parses_into(store: FakeAnimalStore) -> None:
    """1 MiB of [{},{},...] parses into 24 MiB of objects: with the key, only the newest such request is kept."""
    body = b"[" + b"{}," * 349_000 + b"{}]"
    for _ in range(3):
        assert store.handle("POST", "/v1/pets", "", AUTHORIZED, body).status == 400  # not an object
    assert (len(store.requests), store.dropped_requests) == (1, 2)
    assert len(store.requests[0].json) == 349_001
    store.handle("GET", "/v1/pets", "", AUTHORIZED, b"")
    assert (len(store.requests), store.dropped_requests) == (1, 3)  # the newest always stays


@pytest.mark.parametrize(
    "headers",
    [
        {"content-type": "text/plain"},
        {"authorization": "Bearer wrong-key", "content-type": "application/json"},
        {"authorization": "Basic dGVzdC1rZXk=", "content-type": "application/json"},
    ],
    ids=["no-key", "wrong-key", "basic"],
)
def test_the_body_of_a_request_without_the_key_is_never_parsed(store: FakeAnimalStore, headers: dict[str, str]) -> None:
    """A cross-site text/plain POST of 1 MiB of JSON once grew the store by 23 MiB; now it is 401 and costs nothing."""
    body = b"[" + b"{}," * 349_000 + b"{}]"  # 1 MiB that parses into 349,001 dicts
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(40):
            assert store.handle("POST", "/v1/pets", "", headers, body).status == 401
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 2 * 1024 * 1024, grown  # 40 records without bodies; parsed, it was 900 MiB
    assert [request.json for request in store.requests] == [None] * 40
    store.handle("POST", "/v1/pets", "", AUTHORIZED, b'{"name": "Ash", "categoryId": 2}')
    assert store.requests[-1].json == {"name": "Ash", "categoryId": 2}  # with the key, the body is recorded


def test_a_wrong_keys_create_is_recorded_without_its_body(store: FakeAnimalStore) -> None:
    """Through a kit client with a wrong key: 401, recorded with json None, the headers still there (redacted)."""
    with store.client(api_key="wrong-key", max_retries=0) as client, pytest.raises(APIStatusError) as info:
        client.create_pet(name="Ash", category_id=2)
    assert info.value.status_code == 401
    [request] = store.requests
    assert (request.method, request.json, request.headers["authorization"]) == ("POST", None, "Bearer [redacted]")


def test_faults_lists_the_queue_and_clear_faults_empties_it(store: FakeAnimalStore) -> None:
    """faults shows each queued fault and delay with what it has left; clear_faults drops them all at once."""
    store.fail_next(503, times=2, retry_after=1.9, method="post")
    store.fail_next_connection("reset", method="GET")
    store.fail_next(502, body=b"<html>Bad Gateway</html>")
    store.delay_next(0.25, times=3)
    assert store.faults == [
        QueuedFault("status", 2, status=503, retry_after="1", method="POST"),
        QueuedFault("connection", 1, connection="reset", method="GET"),
        QueuedFault("status", 1, status=502, body=b"<html>Bad Gateway</html>"),
        QueuedFault("delay", 3, delay=0.25),
    ]
    assert store.handle("POST", "/v1/pets", "", AUTHORIZED, b"{}").status == 503
    assert [fault.times for fault in store.faults] == [1, 1, 1, 3]
    assert store.clear_faults() == 4
    assert store.faults == []
    assert store.clear_faults() == 0
    with store.client(max_retries=0) as client:
        assert [pet.name for pet in client.list_pets()] == ["Rex"]  # nothing left to fail it
    assert store.next_delay() == 0.0
    assert len(store.pets) == 1  # pets and requests stay
    assert len(store.requests) == 2


def test_reset_empties_the_fault_queue_that_faults_shows(store: FakeAnimalStore) -> None:
    """reset() clears faults and delays too, as faults then shows; a QueuedFault is frozen and compares by value."""
    store.fail_next_connection("timeout", times=4)
    [fault] = store.faults
    assert fault == QueuedFault("connection", 4, connection="timeout")
    with pytest.raises(AttributeError):
        fault.times = 1  # type: ignore[misc]
    store.reset()
    assert store.faults == []


def test_concurrent_calls_on_the_in_process_store_interleave_attempt_by_attempt() -> None:
    """Two async calls at once, each retried after a 503: their attempts alternate, as over a network,
    rather than the first call running all its retries before the second starts."""
    store = FakeAnimalStore()
    store.fail_next(503, times=2)

    async def main() -> None:
        async with store.async_client() as client:
            await asyncio.gather(client.list_pets(limit=1), client.list_pets(limit=2))

    asyncio.run(main())
    order = [request.query["limit"] for request in store.requests]
    assert order == [["1"], ["2"], ["1"], ["2"]]
