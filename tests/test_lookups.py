"""Name lookups are bounded: one in flight per host and port, a few threads for the process, each wait held to the call.

1.4.0 started a thread per sync lookup: 200 calls against a resolver that does not answer left 340 lookup
threads alive. Here the `Lookups` pool is driven directly (an injected lookup, no clock), then through every
pair of clients that looks names up in Python, against a resolver that never answers.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from animalstore_client import AnimalStoreClient, APIConnectionError, APITimeoutError, AsyncAnimalStoreClient
from animalstore_client._transports.lookups import LOOKUP_THREADS, LOOKUPS, THREAD_NAME, Lookups

from .conftest import API_KEY, on_library, scaled

UNIT = "a unit test's lookup"
"""The threads of the pools the unit tests make, apart from the SDK's own (`THREAD_NAME`)."""
ANSWER = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 443))]


_POOLS: list[Lookups] = []


def _pool(lookup: Any) -> Lookups:
    """A lookup pool of the test's own (`UNIT` threads), closed when the test ends."""
    made = Lookups(lookup=lookup, name=UNIT)
    _POOLS.append(made)
    return made


@pytest.fixture(autouse=True)
def _close_pools() -> Iterator[None]:
    yield
    while _POOLS:
        _POOLS.pop().close()


class _Resolver:
    """A lookup function that answers only when told, counting the lookups it was asked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, host: str, port: int) -> list[Any]:
        with self._lock:
            self.asked.append(host)
        assert self.release.wait(10), "the test never released its resolver"
        return ANSWER


def test_calls_for_one_host_share_one_lookup() -> None:
    """Ten waiters for one host: one lookup, one thread; each gets the answer once it comes."""
    resolver = _Resolver()
    lookups = _pool(lookup=resolver)
    flights = [lookups.start("store.test", 443) for _ in range(10)]
    assert all(flight is flights[0] for flight in flights)
    with pytest.raises(TimeoutError, match=r"not looked up within 0\.01 s"):
        flights[0].wait(0.01)
    resolver.release.set()
    assert flights[0].wait(5) == ANSWER
    assert resolver.asked == ["store.test"]
    assert lookups.threads() == 1


def test_no_more_threads_than_the_pool_whatever_the_names() -> None:
    """Lookups of twenty names that never answer: the pool holds LOOKUP_THREADS threads, the rest wait their turn,
    and once released every lookup ends."""
    resolver = _Resolver()
    lookups = _pool(lookup=resolver)
    flights = [lookups.start(f"host{index}.test", 443) for index in range(20)]
    assert lookups.threads() == LOOKUP_THREADS
    resolver.release.set()
    assert all(flight.wait(5) == ANSWER for flight in flights)
    assert sorted(resolver.asked) == sorted(f"host{index}.test" for index in range(20))
    assert lookups.threads() == LOOKUP_THREADS


def test_a_failed_lookup_is_each_waiters_own_error() -> None:
    """A name that does not resolve: each waiter raises a socket.gaierror of its own, not one shared object."""

    def unknown(host: str, port: int) -> list[Any]:
        raise socket.gaierror(-2, "Name or service not known")

    flight = _pool(lookup=unknown).start("unknown.test", 443)
    errors = []
    for _ in range(2):
        with pytest.raises(socket.gaierror) as info:
            flight.wait(5)
        errors.append(info.value)
    assert errors[0] is not errors[1]
    assert errors[0].args == (-2, "Name or service not known")


def test_a_lookup_that_cannot_start_is_a_connection_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the process's thread limit the lookup does not start: a ConnectionError, nothing sent."""

    def refused(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    with pytest.raises(ConnectionError, match="can't start new thread"):
        _pool(lookup=_Resolver()).start("store.test", 443)


def test_an_async_waiter_cancelled_leaves_the_lookup_to_the_others() -> None:
    """An asyncio waiter cancelled by its timeout stops waiting; another waiter of the same flight gets the answer."""
    resolver = _Resolver()
    lookups = _pool(lookup=resolver)

    async def main() -> list[Any]:
        flight = lookups.start("store.test", 443)
        with pytest.raises(asyncio.TimeoutError):  # not the builtin TimeoutError before Python 3.11
            await asyncio.wait_for(flight.wait_async(), 0.01)
        waiting = asyncio.ensure_future(flight.wait_async())
        await asyncio.sleep(0)
        resolver.release.set()
        return await asyncio.wait_for(waiting, 5)

    assert asyncio.run(main()) == ANSWER


# --- through the clients, against a resolver that never answers ------------------------------------------------------

BACKENDS = ["httpx", on_library("httpx2", "httpx2")]
"""The backends whose network code looks names up in Python, on the SDK's lookup threads: the SDK's own pool over
httpcore and httpcore2, sync and async (its asyncio backend). aiohttp and pyreqwest look names up in their own code."""
TIMEOUT = httpx.Timeout(5.0, connect=0.2)
HOSTS = 6


@pytest.fixture
def dead_names(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A name service that never answers for ``*.dead.test`` (each lookup held at most 60 s, released after); the
    domain this test's names end in, its own, so that no lookup still in flight from another test is joined."""
    release = threading.Event()
    original = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        numeric = kwargs.get("flags", 0) & socket.AI_NUMERICHOST  # a literal's check asks no name server
        if isinstance(host, str) and host.endswith(".dead.test") and not numeric:
            release.wait(60)
            raise socket.gaierror(-3, "Temporary failure in name resolution")
        return original(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield f"t{os.urandom(4).hex()}.dead.test"
    release.set()


def _lookup_threads() -> int:
    return sum(thread.name == THREAD_NAME for thread in threading.enumerate())


def _ended_unsent(errors: list[BaseException]) -> None:
    assert all(isinstance(error, APITimeoutError) for error in errors), errors[:3]
    assert not any(getattr(error, "may_have_been_processed", True) for error in errors)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dead_resolver_holds_no_more_threads_than_the_pool(backend: Any, dead_names: str) -> None:
    """Many calls from many threads to several names nobody answers for: each ends by its connect timeout, nothing
    sent, and the SDK never holds more lookup threads than its pool's."""
    clients = [
        AnimalStoreClient(
            API_KEY, base_url=f"https://h{index}.{dead_names}/v1", backend=backend, max_retries=0, timeout=TIMEOUT
        )
        for index in range(HOSTS)
    ]
    seen: list[int] = []

    def call(index: int) -> BaseException:
        try:
            clients[index % HOSTS].create_pet(name="Rex", category_id=3)
        except APIConnectionError as exc:
            seen.append(_lookup_threads())
            return exc
        raise AssertionError("a name nobody answers for was reached")

    try:
        with ThreadPoolExecutor(20) as pool:
            errors = list(pool.map(call, range(scaled(200, least=40))))
    finally:
        for client in clients:
            client.close()
    _ended_unsent(errors)
    assert max(seen) <= LOOKUP_THREADS
    assert LOOKUPS.threads() <= LOOKUP_THREADS


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_async_client_on_a_dead_resolver_holds_no_more_threads_than_the_pool(backend: Any, dead_names: str) -> None:
    """The same from one event loop: many tasks, several names; the loop's default thread pool is not used."""

    async def main() -> tuple[list[BaseException], list[int]]:
        clients = [
            AsyncAnimalStoreClient(
                API_KEY, base_url=f"https://h{index}.{dead_names}/v1", backend=backend, max_retries=0, timeout=TIMEOUT
            )
            for index in range(HOSTS)
        ]
        seen: list[int] = []

        async def call(index: int) -> BaseException:
            try:
                await clients[index % HOSTS].create_pet(name="Rex", category_id=3)
            except APIConnectionError as exc:
                seen.append(_lookup_threads())
                return exc
            raise AssertionError("a name nobody answers for was reached")

        try:
            errors = await asyncio.gather(*(call(index) for index in range(scaled(200, least=40))))
        finally:
            for client in clients:
                await client.aclose()
        return list(errors), seen

    errors, seen = asyncio.run(main())
    _ended_unsent(errors)
    assert max(seen) <= LOOKUP_THREADS


def test_a_hundred_calls_a_second_on_a_dead_resolver_for_ten_seconds(dead_names: str) -> None:
    """1,000 calls over 10 s (a tenth of it in the everyday tier) to names nobody answers for: the lookup threads
    alive never exceed the pool's, sampled at every call's end, and every call ends unsent by its connect
    timeout."""
    calls = scaled(1000, least=100)
    with (
        AnimalStoreClient(API_KEY, base_url=f"https://rate.{dead_names}/v1", max_retries=0, timeout=TIMEOUT) as first,
        first.with_options(base_url=f"https://other.{dead_names}/v1") as second,
    ):
        seen: list[int] = []

        def call(index: int) -> BaseException:
            try:
                (first if index % 2 else second).list_pets()
            except APIConnectionError as exc:
                seen.append(_lookup_threads())
                return exc
            raise AssertionError("a name nobody answers for was reached")

        with ThreadPoolExecutor(40) as pool:
            began = time.monotonic()
            futures = []
            for index in range(calls):
                # The scenario's pace, 100 calls a second: each started at its time (bounded: `calls` of them).
                time.sleep(max(0.0, began + index / 100 - time.monotonic()))
                futures.append(pool.submit(call, index))
            errors = [future.result(30) for future in futures]
    _ended_unsent(errors)
    assert len(seen) == calls
    assert max(seen) <= LOOKUP_THREADS
