"""Clients pickle as their settings: loaded in any process, an equivalent client with a pool of its own."""

from __future__ import annotations

import asyncio
import copy
import multiprocessing
import pickle
import ssl
from concurrent.futures import ProcessPoolExecutor

import httpx
import pytest

from animalstore_client import (
    AnimalStoreClient,
    AnimalStoreError,
    AsyncAnimalStoreClient,
    CallNext,
    RetryBudget,
)
from animalstore_client.testing import FakeAnimalStore

from .conftest import API_KEY
from .servers import LoopbackServer, respond
from .tls import ca_file

PET = {"id": 1, "name": "Rex", "categoryId": 2}


def tag(request: httpx.Request, call_next: CallNext) -> httpx.Response:
    """A module-level middleware: it pickles by reference."""
    request.headers["X-Tag"] = "shipped"
    return call_next(request)


def _list_in_child(client: AnimalStoreClient) -> tuple[int, int]:
    import os

    with client:
        return os.getpid(), len(client.list_pets())


def test_a_loaded_client_has_the_same_settings() -> None:
    """Base URL, key, timeouts, retries, caps, headers, backend, verify, middleware and budget survive the trip."""
    budget = RetryBudget(percent=0.1, min_per_second=1, window=30)
    client = AnimalStoreClient(
        API_KEY,
        base_url="https://api.example.test/v2",
        timeout=httpx.Timeout(7.0, connect=2.0),
        max_retries=5,
        default_headers={"X-Team": "data"},
        total_timeout=60,
        max_response_bytes=1024,
        backend="httpx2",
        verify=ca_file(),
        middleware=[tag],
        retry_budget=budget,
    )
    loaded = pickle.loads(pickle.dumps(client))
    assert type(loaded) is AnimalStoreClient
    assert (loaded.base_url, loaded.timeout, loaded.max_retries) == (client.base_url, client.timeout, 5)
    assert (loaded.total_timeout, loaded.max_response_bytes, loaded.backend) == (60, 1024, "httpx2")
    assert loaded.middleware == (tag,)
    assert repr(loaded.retry_budget) == repr(budget)
    assert loaded._config.headers == client._config.headers  # pyright: ignore[reportPrivateUsage]
    assert repr(loaded) == repr(client)
    assert API_KEY not in repr(loaded)


def test_the_pickle_carries_the_key_and_nothing_of_the_pool() -> None:
    """The key is in the bytes (the loaded client acts with it, as the docs say); sockets and locks are not."""
    client = AsyncAnimalStoreClient(API_KEY, backend="aiohttp")
    data = pickle.dumps(client)
    assert API_KEY.encode() in data
    assert b"ClientSession" not in data
    assert b"_thread" not in data
    assert pickle.loads(data).backend == "aiohttp"


def test_copies_sharing_a_budget_still_share_it_when_loaded_together() -> None:
    """A client and its with_options copy pickled together load as two clients over one budget."""
    client = AnimalStoreClient(API_KEY)
    patient = client.with_options(max_retries=6)
    loaded, loaded_patient = pickle.loads(pickle.dumps([client, patient]))
    assert loaded_patient.max_retries == 6
    assert loaded.retry_budget is loaded_patient.retry_budget
    assert loaded.retry_budget is not client.retry_budget


def test_a_deep_copy_is_a_client_of_its_own() -> None:
    """copy.deepcopy gives an equivalent client with its own pool: closing the original leaves it open."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    with store.serve() as url:
        client = AnimalStoreClient(API_KEY, base_url=url)
        clone = copy.deepcopy(client)
        client.close()
        assert clone.list_pets() == []
        clone.close()


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_client_shipped_to_worker_processes_calls_from_there(method: str) -> None:
    """ProcessPoolExecutor (spawn and fork): a client made in the parent lists pets in two children."""
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"the {method} start method is not available on this platform")
    store = FakeAnimalStore(api_keys=[API_KEY], pets=[PET])
    with store.serve() as url:
        client = AnimalStoreClient(API_KEY, base_url=url, middleware=[tag])
        context = multiprocessing.get_context(method)
        with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
            results = list(pool.map(_list_in_child, [client] * 4, timeout=60))
    assert all(count == 1 for _pid, count in results)
    assert len(store.requests) == 4
    assert all(sent.headers["x-tag"] == "shipped" for sent in store.requests)


def test_a_loaded_client_opens_one_connection_on_its_first_call() -> None:
    """Loading opens nothing; the first call opens exactly one connection, reused by the second."""
    body = f"[{__import__('json').dumps(PET)}]".encode()
    with LoopbackServer([respond(200, body)]) as server:
        client = AnimalStoreClient(API_KEY, base_url=server.base_url)
        loaded = pickle.loads(pickle.dumps(client))
        assert server.connections == 0
        loaded.list_pets()
        loaded.list_pets()
        assert server.connections == 1
        loaded.close()


def test_an_async_client_loads_and_works_in_a_new_event_loop() -> None:
    """An async client pickled while in use loads into a client that works in another loop."""
    store = FakeAnimalStore(api_keys=[API_KEY], pets=[PET])
    with store.serve() as url:

        async def use(client: AsyncAnimalStoreClient) -> int:
            return len(await client.list_pets())

        async def first() -> bytes:
            async with AsyncAnimalStoreClient(API_KEY, base_url=url) as client:
                assert await use(client) == 1
                return pickle.dumps(client)

        loaded = pickle.loads(asyncio.run(first()))

        async def use_and_close() -> int:
            async with loaded:
                return await use(loaded)

        assert asyncio.run(use_and_close()) == 1


def _refusal(client: object) -> str:
    with pytest.raises(AnimalStoreError) as caught:
        pickle.dumps(client)
    return str(caught.value)


def test_what_cannot_cross_a_process_is_refused_with_what_to_do() -> None:
    """A caller's http_client, an in-memory kit client, an SSLContext, providers, a closed client: each says why."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    with httpx.Client() as own:
        assert "without http_client" in _refusal(AnimalStoreClient(API_KEY, http_client=own))
    assert "store.serve()" in _refusal(store.client())
    assert "store.serve()" in _refusal(store.client().with_options(max_retries=1))
    assert "path of the CA bundle" in _refusal(
        AnimalStoreClient(API_KEY, verify=ssl.create_default_context(cafile=ca_file()))
    )
    from opentelemetry.sdk.trace import TracerProvider

    assert "tracer_provider=None" in _refusal(AnimalStoreClient(API_KEY, tracer_provider=TracerProvider()))
    closed = AnimalStoreClient(API_KEY)
    closed.close()
    assert "closed" in _refusal(closed)


def test_with_options_still_shares_the_pool() -> None:
    """Pickling is not how with_options copies: a copy keeps the original's connections (a shallow copy)."""
    body = f"[{__import__('json').dumps(PET)}]".encode()
    with LoopbackServer([respond(200, body)]) as server:
        client = AnimalStoreClient(API_KEY, base_url=server.base_url)
        client.list_pets()
        client.with_options(max_retries=1).list_pets()
        copy.copy(client).list_pets()
        assert server.connections == 1
        client.close()
