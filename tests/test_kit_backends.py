"""Kit clients on every library: instant retries and the store's clock, over a loopback server the store runs."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from animalstore_client import (
    AnimalStoreClient,
    AnimalStoreError,
    AsyncAnimalStoreClient,
    ClientValidationError,
    InternalServerError,
    RetryBudget,
)
from animalstore_client._clients.shells import SYNC_IO
from animalstore_client._core.libraries import LIBRARIES, for_client
from animalstore_client.testing import FakeAnimalStore

from .conftest import API_KEY, on_library


def _threads_settle(expected: int) -> int:
    deadline = time.monotonic() + 5
    while threading.active_count() > expected and time.monotonic() < deadline:
        time.sleep(0.02)
    return threading.active_count()


@pytest.mark.parametrize("backend", [None, *(on_library(library.name, library.name) for library in for_client("sync"))])
def test_a_sync_kit_client_on_each_library_retries_at_once(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """store.client(backend=...): two 429s are retried without sleeping, the delays recorded, on each library."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next(429, times=2)
    slept: list[float] = []  # the client's own sleep, which the kit's replaces: never called
    monkeypatch.setattr(SYNC_IO, "sleep", slept.append)
    with store.client(backend=backend) as client:
        assert client.backend == (backend or LIBRARIES[0].name)
        response = client.with_raw_response.create_pet(name="Rex", category_id=1)
    assert slept == []  # 1.5 s of backoff, not slept
    assert response.attempts == 3
    assert store.retry_delays == [0.5, 1.0]
    assert store.clock() == 1.5
    assert [pet.name for pet in store.pets] == ["Rex"]


@pytest.mark.parametrize(
    "backend", [None, *(on_library(library.name, library.name) for library in for_client("async"))]
)
def test_an_async_kit_client_on_each_library_retries_at_once(backend: Any) -> None:
    """store.async_client(backend=...): the same, for the async client and its libraries."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next(503, retry_after=30)

    async def main() -> int:
        async with store.async_client(backend=backend) as client:
            assert client.backend == (backend or LIBRARIES[0].name)
            return (await client.with_raw_response.list_pets()).attempts

    assert asyncio.run(main()) == 2
    assert store.retry_delays == [30.0]


def test_the_store_serves_a_socket_client_until_it_is_closed() -> None:
    """The loopback server an httpx2 kit client needs stops when the client closes, or when it is collected."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    before = threading.active_count()
    client = store.client(backend="httpx2")
    copy = client.with_options(max_retries=0)
    assert client.list_pets() == []
    copy.close()  # a copy does not own the pool: the server stays
    assert client.list_pets() == []
    client.close()
    assert _threads_settle(before) == before
    # pyreqwest's sockets are Rust's: collected unclosed, a client warns of no socket, and only the threads count.
    forgotten = store.client(backend="pyreqwest")
    forgotten.list_pets()
    del forgotten
    gc.collect()
    assert _threads_settle(before) == before


def test_a_budget_test_runs_at_once_over_a_socket() -> None:
    """The kit's clock works for budgets over a socket too: Retry-After 0 keeps it still, advance() refills."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next(503, times=50, retry_after=0)
    with store.client(backend="httpx2", retry_budget=RetryBudget(percent=0, min_per_second=0.1, window=10)) as client:
        counts = []
        for _ in range(3):
            with pytest.raises(InternalServerError) as caught:
                client.list_pets()
            counts.append(caught.value.attempts)
        store.advance(10)
        with pytest.raises(InternalServerError) as caught:
            client.list_pets()
        counts.append(caught.value.attempts)
    assert counts == [2, 1, 1, 2]


# Each kit method given a library only the other client has (aiohttp to store.client), and a name that is no library.
_NOT_ITS_LIBRARY = [
    *(("client", library.name) for library in LIBRARIES if "sync" not in library.clients),
    *(("async_client", library.name) for library in LIBRARIES if "async" not in library.clients),
    ("client", "no-such-library"),
    ("async_client", "no-such-library"),
]


@pytest.mark.parametrize(("method", "backend"), _NOT_ITS_LIBRARY)
def test_a_library_the_client_cannot_use_is_refused(method: str, backend: str) -> None:
    """store.client and store.async_client take the libraries their client has: the error names them, the default
    (in-process) first, as the declarations list them."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    libraries = [repr(library.name) for library in for_client("async" if method == "async_client" else "sync")]
    default, over_socket = libraries[0], libraries[1:]
    others = over_socket[0] if len(over_socket) == 1 else ", ".join(over_socket[:-1]) + f" or {over_socket[-1]}"
    with pytest.raises(ClientValidationError) as caught:
        getattr(store, method)(backend=backend)
    assert str(caught.value) == (
        f"backend for store.{method}() must be {default} (in-process, the default) or {others} "
        f"(over a loopback server the store starts), got {backend!r}"
    )
    assert caught.value.argument == "backend"


def test_a_client_you_built_over_serve_can_be_adopted() -> None:
    """store.adopt(client): your own client on any library retries without sleeping, in the store's clock."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    with store.serve() as url:
        client = store.adopt(AnimalStoreClient(API_KEY, base_url=url, backend="httpx2"))
        store.fail_next(503)
        assert client.with_options(max_retries=1).with_raw_response.list_pets().attempts == 2
        client.close()

        async def main() -> int:
            async with store.adopt(AsyncAnimalStoreClient(API_KEY, base_url=url, backend="aiohttp")) as aclient:
                store.fail_next(429, retry_after=5)
                return (await aclient.with_raw_response.list_pets()).attempts

        assert asyncio.run(main()) == 2
    assert store.retry_delays == [0.5, 5.0]
    with pytest.raises(ClientValidationError, match="client must be"):
        store.adopt("client")  # type: ignore[type-var]  # pyright: ignore[reportArgumentType]


def test_a_fault_can_be_kept_for_one_method() -> None:
    """method= makes a fault wait for a request with that method; others pass it by, in order."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next(503, method="get")
    store.fail_next_connection("reset", method="GET")
    with store.client(max_retries=0) as client:
        created = client.create_pet(name="Rex", category_id=1)  # passes both faults by
        with pytest.raises(InternalServerError):
            client.list_pets()
        with pytest.raises(Exception, match="Connection error"):
            client.list_pets()
        assert client.list_pets() == [created]
    with pytest.raises(ClientValidationError, match="method must be an HTTP method") as caught:
        store.fail_next(503, method="FETCH")
    assert caught.value.argument == "method"


def test_resets_kept_for_reads_never_cost_a_create() -> None:
    """Over a socket, resets on GETs only: the SDK retries the reads and the refused (429) creates, and every create
    lands exactly once."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next_connection("reset", times=5, method="GET")
    store.fail_next(429, times=5, method="POST")
    with store.client(backend="httpx2", max_retries=5) as client:
        for index in range(10):
            client.create_pet(name=f"pet-{index}", category_id=1)
            client.list_pets(limit=1)
    assert sorted(pet.name for pet in store.pets) == sorted(f"pet-{index}" for index in range(10))


# --- a kit client that cannot be made --------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
SERVER_THREAD = "FakeAnimalStore server"  # the name running_server gives its thread

# (the library made unimportable, the kit calls made: the method and its keyword arguments)
UNMADE: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
    ("aiohttp", [("async_client", {"backend": "aiohttp"})]),
    ("pyreqwest", [("client", {"backend": "pyreqwest"}), ("async_client", {"backend": "pyreqwest"})]),
    ("httpx2", [("client", {"backend": "httpx2"}), ("async_client", {"backend": "httpx2"})]),
]
BAD_ARGUMENTS: list[tuple[str, dict[str, Any]]] = [
    ("client", {"backend": "httpx2", "max_retries": -1}),
    ("async_client", {"backend": "aiohttp", "max_retries": -1}),
    ("client", {"max_retries": -1}),
    ("async_client", {"max_retries": -1}),
    ("client", {"backend": "nope"}),
]


def _server_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name == SERVER_THREAD}


def _new_server_threads(before: set[threading.Thread]) -> set[threading.Thread]:
    """The store's server threads alive now and not in ``before``, after at most 5 s for one that is stopping."""
    deadline = time.monotonic() + 5
    while (new := _server_threads() - before) and time.monotonic() < deadline:
        time.sleep(0.02)
    return new


@pytest.mark.parametrize(("library", "calls"), UNMADE, ids=[library for library, _ in UNMADE])
def test_a_kit_client_whose_library_is_missing_leaves_no_server(
    monkeypatch: pytest.MonkeyPatch, library: str, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    """The library's error, and the loopback server started for the client is stopped: no thread is left."""
    monkeypatch.setitem(sys.modules, library, None)  # what `import library` does when it is not installed
    store = FakeAnimalStore(api_keys=[API_KEY])
    before = _server_threads()
    for method, arguments in calls:
        with pytest.raises(AnimalStoreError, match=f'backend="{library}" needs ') as caught:
            getattr(store, method)(**arguments)
        # Checked while the error is held: its traceback keeps the frames that made the client alive.
        assert _new_server_threads(before) == set(), caught.value


@pytest.mark.parametrize(
    ("method", "arguments"), BAD_ARGUMENTS, ids=[f"{method}-{json.dumps(a)}" for method, a in BAD_ARGUMENTS]
)
def test_a_kit_client_with_a_bad_argument_leaves_no_server(method: str, arguments: dict[str, Any]) -> None:
    """A refused option, over a socket or in-process: the error, and no server thread left."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    before = _server_threads()
    with pytest.raises(ClientValidationError) as caught:
        getattr(store, method)(**arguments)
    assert _new_server_threads(before) == set(), caught.value  # with the error, and the frames it holds, kept


# The child makes each call but the last, printing its error, then the last, whose error ends it: a
# server left running by any of them would hang the interpreter at exit (it did in 1.2.0).
CHILD = """
import json, sys
missing, calls = sys.argv[1], json.loads(sys.argv[2])
if missing:
    sys.modules[missing] = None  # the library is not installed, as far as this process can tell
from animalstore_client.testing import FakeAnimalStore
store = FakeAnimalStore()
for method, arguments in calls[:-1]:
    try:
        getattr(store, method)(**arguments)
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
    else:
        sys.exit(f"store.{method}(**{arguments}) was made")
method, arguments = calls[-1]
getattr(store, method)(**arguments)
"""
EXIT_BOUND = 60  # seconds: the child needs about one; the hang it guards against is forever


@pytest.mark.parametrize(
    ("library", "calls", "error"),
    [*((library, calls, f'backend="{library}" needs ') for library, calls in UNMADE), ("", BAD_ARGUMENTS, "must be")],
    ids=[*(library for library, _ in UNMADE), "bad arguments"],
)
def test_a_process_whose_kit_client_cannot_be_made_exits_at_once(
    library: str, calls: list[tuple[str, dict[str, Any]]], error: str
) -> None:
    """The interpreter ends after the error (exit code 1, the SDK's message in stderr), within a bounded wait."""
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHILD, library, json.dumps(calls)],
            capture_output=True,
            text=True,
            timeout=EXIT_BOUND,
            check=False,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired as exc:  # run() killed the child
        pytest.fail(f"the child still ran {EXIT_BOUND} s after its error: {exc.stderr!r}")
    assert result.returncode == 1, result.stderr
    assert result.stderr.count(error) == len(calls), result.stderr
    assert result.stderr.splitlines()[-1].startswith(
        ("animalstore_client.AnimalStoreError: ", "animalstore_client.ClientValidationError: ")
    )


# Two servers never stopped: one held by a module global, one by the frame a kept error holds. Collected
# while the interpreter ends, when their daemon thread no longer runs: waiting for it hung the exit.
LEFT_RUNNING = """
from animalstore_client.testing import FakeAnimalStore
store = FakeAnimalStore()
left = store.serve()
left.__enter__()
def serve_and_fail():
    store.serve().__enter__()
    raise RuntimeError("left running")
try:
    serve_and_fail()
except RuntimeError as exc:
    kept = exc
"""


def test_servers_left_running_do_not_hold_the_interpreter_at_exit() -> None:
    """serve() entered and never exited: the process still ends at once, with exit code 0."""
    try:
        result = subprocess.run(
            [sys.executable, "-c", LEFT_RUNNING],
            capture_output=True,
            text=True,
            timeout=EXIT_BOUND,
            check=False,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the child still ran {EXIT_BOUND} s after its last line: {exc.stderr!r}")
    assert result.returncode == 0, result.stderr
