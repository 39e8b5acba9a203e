"""The default backend's own connection pool, driven directly and through the clients.

`AsyncConnectionPool` (hand-written) and `ConnectionPool` (generated from it)
are sent `httpcore.Request`s for a `LoopbackServer` on 127.0.0.1 with small
limits, so that each rule of the pool's contract shows: requests wait in
arrival order and at most the pool timeout, open and idle connections stay
within their bounds, expired or server-closed idle connections are dropped,
another origin's idle connection gives way at the limit, closing refuses new
requests and wakes the queued ones, and a call cancelled anywhere gives back
what it held. The server's own count of open connections witnesses that no
socket is left behind. Every wait is bounded; nothing asserts how fast
anything is.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import json
import random
import socket
import ssl
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any, cast

import anyio
import anyio.to_thread
import httpcore
import httpx
import pytest
import respx

from animalstore_client import (
    AnimalStoreClient,
    AnimalStoreError,
    AsyncAnimalStoreClient,
)
from animalstore_client._core.exchange import Exchange
from animalstore_client._transports.pool import httpcore_async as _httpcore_async
from animalstore_client._transports.pool._generated import httpcore_sync as _httpcore_sync
from animalstore_client._transports.pool._generated.deadline_network_sync import DeadlineBackend
from animalstore_client._transports.pool._generated.pool_sync import ConnectionPool
from animalstore_client._transports.pool.asyncio_network import AsyncioBackend
from animalstore_client._transports.pool.deadline_network_async import AsyncDeadlineBackend
from animalstore_client._transports.pool.pool_async import AsyncConnectionPool
from animalstore_client._transports.pool.wait import AsyncWaiter

from .conftest import API_KEY
from .servers import Action, LoopbackServer, _head, respond

PETS = [{"id": 1, "name": "Rex", "categoryId": 1}]
BOUND = 5.0
"""Seconds any one wait in this file may last before the test fails: a bound, never a measure of speed."""
HAS_TRIO = importlib.util.find_spec("trio") is not None
needs_trio = pytest.mark.skipif(
    not HAS_TRIO, reason="trio is not installed (pip install trio): the trio run is skipped"
)

AnyPool = AsyncConnectionPool | ConnectionPool


# ---------------------------------------------------------------- helpers


def _scope(deadline: float) -> contextlib.AbstractContextManager[None]:
    """A running exchange with ``deadline``, as the pool's transport sets one around a send."""
    return Exchange(httpx.Request("GET", "http://127.0.0.1/"), {}, deadline)


def _request(server: LoopbackServer, *, pool: float | None = BOUND) -> httpcore.Request:
    """A GET of /v1/pets on ``server``, waiting at most ``pool`` seconds for a connection."""
    host = f"127.0.0.1:{server.port}"
    return httpcore.Request(
        b"GET",
        f"http://{host}/v1/pets",
        headers=[(b"Host", host.encode())],
        extensions={"timeout": {"connect": BOUND, "read": BOUND, "write": BOUND, "pool": pool}},
    )


def _async_pool(
    max_connections: int = 2, max_keepalive: int = 1, keepalive_expiry: float | None = None
) -> AsyncConnectionPool:
    """The async pool as the transport builds it (asyncio backend under the deadline backend), with small limits."""
    return AsyncConnectionPool(
        ssl.create_default_context(),
        AsyncDeadlineBackend(AsyncioBackend()),
        max_connections=max_connections,
        max_keepalive_connections=max_keepalive,
        keepalive_expiry=keepalive_expiry,
    )


def _sync_pool(
    max_connections: int = 2, max_keepalive: int = 1, keepalive_expiry: float | None = None
) -> ConnectionPool:
    """The sync pool as the transport builds it (httpcore's blocking backend under the deadline backend)."""
    return ConnectionPool(
        ssl.create_default_context(),
        DeadlineBackend(httpcore.SyncBackend()),
        max_connections=max_connections,
        max_keepalive_connections=max_keepalive,
        keepalive_expiry=keepalive_expiry,
    )


async def _finish(response: httpcore.Response) -> bytes:
    """Read the body to its end and close it: the connection goes back to the pool."""
    try:
        return await response.aread()
    finally:
        await response.aclose()


def _finish_sync(response: httpcore.Response) -> bytes:
    try:
        return response.read()
    finally:
        response.close()


def _live_waiters(pool: AnyPool) -> int:
    """Queued requests still waiting (those that gave up stay queued, withdrawn, until passed over)."""
    return sum(not waiter.withdrawn for waiter in pool._waiters)


def _idle(pool: AnyPool) -> list[Any]:
    """The idle connections, every origin's, oldest first within each."""
    return [connection for connections in pool._idle.values() for connection in connections]


def _assert_settled(pool: AnyPool, *, opened: int, idle: int) -> None:
    """Nothing in use: ``opened`` connections counted open, ``idle`` of them idle (and listed), nobody waiting."""
    assert (pool._opened, pool._idle_count, len(_idle(pool)), _live_waiters(pool)) == (opened, idle, idle, 0)
    # The order across origins holds exactly the idle connections.
    assert sorted(id(connection) for _, connection in pool._idle_order.values()) == sorted(map(id, _idle(pool)))


async def _until(condition: Callable[[], bool], what: str) -> None:
    """Let the loop run until ``condition`` holds, at most `BOUND` seconds."""
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"still not {what} after {BOUND} s"
        await asyncio.sleep(0.005)


def _until_sync(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"still not {what} after {BOUND} s"
        time.sleep(0.005)


def _bounded(awaitable: Awaitable[Any]) -> Awaitable[Any]:
    return asyncio.wait_for(awaitable, BOUND)


def _after(seconds: float, action: Action) -> Action:
    """``action``, once the server has waited ``seconds`` (the connection stays in use meanwhile)."""

    def delayed(conn: socket.socket) -> bool:
        time.sleep(seconds)
        return action(conn)

    return delayed


def _answer_then_close(conn: socket.socket) -> bool:
    """Answer (keep-alive, as far as the client knows) and close the connection straight after."""
    respond(200, PETS)(conn)
    return False


class _PeakServer(LoopbackServer):
    """A `LoopbackServer` that also records the most client connections open at once."""

    def __init__(self, script: list[Action] | None = None) -> None:
        super().__init__(script)
        self.peak = 0

    def _serve_connection(self, conn: socket.socket) -> None:
        with self._lock:  # counted open by now
            self.peak = max(self.peak, self._open)
        super()._serve_connection(conn)


def _pool_of(client: AnimalStoreClient | AsyncAnimalStoreClient, base_url: str) -> Any:
    """The pool the client's default backend sends ``base_url``'s requests through (made on first use)."""
    transport = cast("Any", client._sender.transport())
    return transport._pool_for(httpx.URL(base_url))


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> Callable[[int, int], None]:
    """Set the default backend's pool limits (both clients) for the clients made afterwards in the test."""

    def set_limits(max_connections: int, max_keepalive: int) -> None:
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_keepalive)
        monkeypatch.setattr(_httpcore_async, "DEFAULT_LIMITS", limits)
        monkeypatch.setattr(_httpcore_sync, "DEFAULT_LIMITS", limits)

    return set_limits


# ---------------------------------------------------------------- 1. cancellation at random points

CANCELLATIONS = 1000
LIMIT, KEEP = 4, 2
PHASES = ("queued", "connecting", "waiting for the answer", "reading the body")
_PHASE: ContextVar[list[str] | None] = ContextVar("test_pool_phase", default=None)
"""The running call's record: where it is (one of `PHASES`, or "start" before the pool), set by the probes below."""


def _enter(phase: str) -> None:
    record = _PHASE.get()
    if record is not None:
        record[0] = phase


class _ObservedStream(httpcore.AsyncNetworkStream):
    """A network stream that tells the running call's record when its request is written and its head has arrived."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._stream.read(max_bytes, timeout)
        if b"\r\n\r\n" in data:
            _enter("reading the body")
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, timeout)
        _enter("waiting for the answer")

    async def aclose(self) -> None:
        await self._stream.aclose()

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _SlowConnectBackend(httpcore.AsyncNetworkBackend):
    """The default direct backend, taking a random few milliseconds to connect, so cancellations land there too."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend, delays: random.Random) -> None:
        self._backend = backend
        self._delays = delays

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        _enter("connecting")
        await anyio.sleep(self._delays.uniform(0, 0.005))
        stream = await self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _ObservedStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def _slow_answers(delays: random.Random) -> Action:
    """Answer after 0-10 ms, sending the head and the body's first bytes, then the rest 0-10 ms later."""
    body = json.dumps(PETS).encode()
    head = _head(200, {"Content-Type": "application/json"}, len(body))

    def action(conn: socket.socket) -> bool:
        time.sleep(delays.uniform(0, 0.01))
        conn.sendall(head + body[:5])
        time.sleep(delays.uniform(0, 0.01))
        conn.sendall(body[5:])
        return True

    return action


@pytest.fixture
def observed(monkeypatch: pytest.MonkeyPatch, small_limits: Callable[[int, int], None]) -> random.Random:
    """Pools of `LIMIT` connections (`KEEP` idle) whose calls record their phase; returns the seeded random source."""
    rng = random.Random(20240531)
    small_limits(LIMIT, KEEP)

    def direct_backend() -> httpcore.AsyncNetworkBackend:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # trio: anyio's backend, as the default backend picks it
            return _SlowConnectBackend(cast("httpcore.AsyncNetworkBackend", httpcore.AnyIOBackend()), rng)
        return _SlowConnectBackend(AsyncioBackend(), rng)

    monkeypatch.setattr(_httpcore_async, "_direct_backend", direct_backend)
    waiting = AsyncWaiter.wait

    async def observed_wait(self: AsyncWaiter, timeout: float | None) -> None:
        _enter("queued")
        await waiting(self, timeout)

    monkeypatch.setattr(AsyncWaiter, "wait", observed_wait)
    return rng


async def _one_call(client: AsyncAnimalStoreClient, record: list[str]) -> None:
    _PHASE.set(record)
    assert len(await client.list_pets()) == 1


def _cancel_window(waves_past_total: int) -> float:
    """Seconds within which a wave cancels its calls: 40 ms, and once `CANCELLATIONS` were made while a phase is still
    missing, doubled every 5 more waves (up to 1.28 s).

    On a loaded machine a call can take longer than 40 ms to get past connecting (a run beside two busy processes
    cancelled 5,000 calls and none while reading the body): the window then follows how long calls take there,
    rather than the test assuming how fast the machine is.
    """
    return 0.04 * (1 << min(waves_past_total // 5, 5))


async def _cancel_at_random_asyncio(
    client: AsyncAnimalStoreClient, rng: random.Random, phases: Counter[str], errors: list[str]
) -> None:
    """Waves of 25 tasks, each cancelled with ``task.cancel()`` 0-40 ms after it starts, until `CANCELLATIONS` were
    and in every phase."""
    loop = asyncio.get_running_loop()

    def cancel(task: asyncio.Task[None], record: list[str], at_cancel: list[str]) -> None:
        if not task.done():
            at_cancel.append(record[0])
            task.cancel()

    reached: int | None = None  # the wave at which CANCELLATIONS were made
    for wave in range(200):  # a bound: about 50 waves are needed
        if phases.total() >= CANCELLATIONS and set(PHASES) <= set(phases):
            return
        if phases.total() >= CANCELLATIONS and reached is None:
            reached = wave
        window = _cancel_window(0 if reached is None else wave - reached)
        calls: list[tuple[asyncio.Task[None], list[str]]] = []
        for _ in range(25):
            record, at_cancel = ["start"], list[str]()
            task = asyncio.create_task(_one_call(client, record))
            loop.call_later(rng.uniform(0, window), cancel, task, record, at_cancel)
            calls.append((task, at_cancel))
        _, pending = await asyncio.wait([task for task, _ in calls], timeout=BOUND)
        assert not pending, f"{len(pending)} calls neither finished nor ended when cancelled within {BOUND} s"
        for task, at_cancel in calls:
            if task.cancelled():
                phases[at_cancel[0]] += 1
            elif task.exception() is not None:
                errors.append(repr(task.exception()))


async def _cancel_at_random_trio(
    client: AsyncAnimalStoreClient, rng: random.Random, phases: Counter[str], errors: list[str]
) -> None:
    """The same under trio: each call in a ``trio.move_on_after`` of 0-40 ms."""
    trio: Any = importlib.import_module("trio")

    async def one(delay: float) -> None:
        record = ["start"]
        with trio.move_on_after(delay) as scope:
            try:
                await _one_call(client, record)
            except Exception as exc:
                errors.append(repr(exc))
        if scope.cancelled_caught:
            phases[record[0]] += 1

    reached: int | None = None
    for wave in range(200):
        if phases.total() >= CANCELLATIONS and set(PHASES) <= set(phases):
            return
        if phases.total() >= CANCELLATIONS and reached is None:
            reached = wave
        window = _cancel_window(0 if reached is None else wave - reached)
        with trio.fail_after(BOUND):
            async with trio.open_nursery() as nursery:
                for _ in range(25):
                    nursery.start_soon(one, rng.uniform(0, window))


@pytest.mark.parametrize("loop", ["asyncio", pytest.param("trio", marks=needs_trio)])
def test_a_thousand_cancellations_at_random_points_leave_the_pool_whole(loop: str, observed: random.Random) -> None:
    """1,000 calls of the public async client cancelled at random moments (queued for one of the pool's 4
    connections, connecting, waiting for the answer, reading the body): none fails otherwise; afterwards a call
    succeeds, the pool counts no connection in use, holds no live waiter and stays within its limits, and the
    server sees no more connections open than the pool keeps idle."""
    rng = observed
    phases: Counter[str] = Counter()
    errors: list[str] = []

    async def main(server: LoopbackServer) -> tuple[int, int, int, int, int]:
        client = AsyncAnimalStoreClient(API_KEY, base_url=server.base_url, max_retries=0, timeout=BOUND)
        try:
            drive = _cancel_at_random_asyncio if loop == "asyncio" else _cancel_at_random_trio
            await drive(client, rng, phases, errors)
            with anyio.fail_after(BOUND):
                assert len(await client.list_pets()) == 1
            pool = _pool_of(client, server.base_url)
            assert isinstance(pool, AsyncConnectionPool)
            idle = pool._idle_count
            # Once things settle (the server notices the closes), only the idle connections are open.
            open_now = await anyio.to_thread.run_sync(server.wait_for_open_connections, idle)
            return pool._opened, idle, len(_idle(pool)), _live_waiters(pool), open_now
        finally:
            await client.aclose()

    with LoopbackServer([_slow_answers(random.Random(rng.random()))]) as server:
        if loop == "asyncio":
            opened, idle, listed, waiting, open_now = asyncio.run(main(server))
        else:
            trio: Any = importlib.import_module("trio")
            opened, idle, listed, waiting, open_now = trio.run(main, server)
        print(f"cancelled under {loop}: {dict(phases)}; {server.connections} connections made")
        assert errors == []
        assert phases.total() >= CANCELLATIONS
        assert set(PHASES) <= set(phases), f"no cancellation landed in {set(PHASES) - set(phases)}"
        assert opened == idle == listed, "a connection (or the slot to open one) is counted in use with no call running"
        assert opened <= LIMIT
        assert idle <= KEEP
        assert waiting == 0
        assert open_now <= idle
        assert server.wait_for_open_connections(0) == 0  # the client's aclose closed the idle ones


# ---------------------------------------------------------------- 2. FIFO


def test_queued_requests_get_the_connection_in_arrival_order_async() -> None:
    """With one connection, three requests queued behind its holder get it in the order they arrived."""

    async def main(server: LoopbackServer) -> list[str]:
        pool = _async_pool(max_connections=1, max_keepalive=1)
        order: list[str] = []

        async def take(name: str) -> None:
            response = await pool.handle_async_request(_request(server))
            order.append(name)
            await asyncio.sleep(0.01)  # held a moment: the next in line must still be waiting
            await _finish(response)

        holder = await pool.handle_async_request(_request(server))
        tasks: list[asyncio.Task[None]] = []
        for name in "ABC":
            tasks.append(asyncio.create_task(take(name)))
            await _until(lambda: _live_waiters(pool) == len(tasks), f"{len(tasks)} queued")
        await _finish(holder)
        await _bounded(asyncio.gather(*tasks))
        _assert_settled(pool, opened=1, idle=1)
        await pool.aclose()
        return order

    with LoopbackServer([respond(200, PETS)]) as server:
        assert asyncio.run(main(server)) == ["A", "B", "C"]
        assert server.connections == 1


def test_queued_requests_get_the_connection_in_arrival_order_sync() -> None:
    """The sync pool, with threads: three requests queued behind the holder get the one connection in order."""
    with LoopbackServer([respond(200, PETS)]) as server, ThreadPoolExecutor(3) as threads:
        pool = _sync_pool(max_connections=1, max_keepalive=1)
        order: list[str] = []

        def take(name: str) -> None:
            response = pool.handle_request(_request(server))
            order.append(name)
            time.sleep(0.01)
            _finish_sync(response)

        holder = pool.handle_request(_request(server))
        futures = []
        for name in "ABC":
            futures.append(threads.submit(take, name))
            _until_sync(lambda: _live_waiters(pool) == len(futures), f"{len(futures)} queued")
        _finish_sync(holder)
        for future in futures:
            future.result(timeout=BOUND)
        assert order == ["A", "B", "C"]
        assert server.connections == 1
        _assert_settled(pool, opened=1, idle=1)
        pool.close()


# ---------------------------------------------------------------- 3. pool timeout


def test_a_request_gives_up_after_the_pool_timeout_and_is_passed_over_async() -> None:
    """A request finding the only connection busy raises httpcore.PoolTimeout once the pool timeout passes; the
    connection, given back later, goes idle (not to the request that gave up) and serves the next request."""

    async def main(server: LoopbackServer) -> None:
        pool = _async_pool(max_connections=1, max_keepalive=1)
        holder = await pool.handle_async_request(_request(server))
        with pytest.raises(httpcore.PoolTimeout):
            await _bounded(pool.handle_async_request(_request(server, pool=0.1)))
        assert [waiter.withdrawn for waiter in pool._waiters] == [True]
        assert pool._opened == 1
        await _finish(holder)
        _assert_settled(pool, opened=1, idle=1)
        assert await _finish(await pool.handle_async_request(_request(server, pool=0.1))) == json.dumps(PETS).encode()
        _assert_settled(pool, opened=1, idle=1)
        await pool.aclose()

    with LoopbackServer([respond(200, PETS)]) as server:
        asyncio.run(main(server))
        assert server.connections == 1


def test_a_request_gives_up_after_the_pool_timeout_and_is_passed_over_sync() -> None:
    """The sync pool: a thread's request times out with httpcore.PoolTimeout; the give-back then passes it over."""
    with LoopbackServer([respond(200, PETS)]) as server, ThreadPoolExecutor(1) as threads:
        pool = _sync_pool(max_connections=1, max_keepalive=1)
        holder = pool.handle_request(_request(server))
        waiter = threads.submit(pool.handle_request, _request(server, pool=0.1))
        with pytest.raises(httpcore.PoolTimeout):
            waiter.result(timeout=BOUND)
        assert [w.withdrawn for w in pool._waiters] == [True]
        _finish_sync(holder)
        _assert_settled(pool, opened=1, idle=1)
        assert threads.submit(lambda: _finish_sync(pool.handle_request(_request(server, pool=0.1)))).result(BOUND)
        _assert_settled(pool, opened=1, idle=1)
        assert server.connections == 1
        pool.close()


def test_the_pool_timeout_is_cut_by_the_calls_deadline() -> None:
    """A request queued with a 30 s pool timeout but 0.1 s left of its call raises httpcore.PoolTimeout by then."""

    async def main(server: LoopbackServer) -> None:
        pool = _async_pool(max_connections=1, max_keepalive=1)
        holder = await pool.handle_async_request(_request(server))

        async def queued() -> None:
            with _scope(time.monotonic() + 0.1):
                await pool.handle_async_request(_request(server, pool=30.0))

        with pytest.raises(httpcore.PoolTimeout):
            await _bounded(queued())
        await _finish(holder)
        _assert_settled(pool, opened=1, idle=1)
        await pool.aclose()

    with LoopbackServer([respond(200, PETS)]) as server:
        asyncio.run(main(server))


def test_many_threads_timing_out_while_connections_come_back_leave_the_pool_consistent() -> None:
    """300 requests from 8 threads on 2 connections, each waiting 0-20 ms at most: some get one, some time out,
    none fails otherwise; afterwards nothing is counted in use and nobody waits (the grant-versus-give-up race)."""
    rng = random.Random(7)
    timeouts = [rng.uniform(0, 0.02) for _ in range(300)]
    with LoopbackServer([_after(0.002, respond(200, PETS))]) as server, ThreadPoolExecutor(8) as threads:
        pool = _sync_pool(max_connections=2, max_keepalive=2)

        def call(pool_timeout: float) -> str:
            try:
                _finish_sync(pool.handle_request(_request(server, pool=pool_timeout)))
            except httpcore.PoolTimeout:
                return "timed out"
            return "answered"

        outcomes = Counter(future.result(timeout=BOUND) for future in [threads.submit(call, t) for t in timeouts])
        assert set(outcomes) <= {"answered", "timed out"}
        assert outcomes["answered"] > 0
        _assert_settled(pool, opened=pool._idle_count, idle=pool._idle_count)
        assert pool._idle_count <= 2
        assert _finish_sync(pool.handle_request(_request(server, pool=1.0)))
        assert server.wait_for_open_connections(2) <= 2
        pool.close()
        assert server.wait_for_open_connections(0) == 0


@pytest.mark.parametrize("side", ["sync", "async"])
def test_a_request_queued_past_its_deadline_is_passed_over(side: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request that finds the only connection busy when its call's deadline has already passed raises
    httpcore.PoolTimeout; the connection, given back, goes idle and serves the next request."""
    made: list[Any] = []  # every connection the pools make, closed at the end whatever the pool lost

    def track(cls: Any) -> None:
        new = cls._new_connection

        def tracked(self: Any, origin: httpcore.Origin) -> Any:
            made.append(new(self, origin))
            return made[-1]

        monkeypatch.setattr(cls, "_new_connection", tracked)

    track(AsyncConnectionPool)
    track(ConnectionPool)

    async def main(server: LoopbackServer) -> None:
        pool = _async_pool(max_connections=1, max_keepalive=1)
        try:
            holder = await pool.handle_async_request(_request(server))
            with _scope(time.monotonic() - 1), pytest.raises(httpcore.PoolTimeout):
                await pool.handle_async_request(_request(server))
            await _finish(holder)
            _assert_settled(pool, opened=1, idle=1)
            await _finish(await pool.handle_async_request(_request(server, pool=0.2)))
        finally:
            await pool.aclose()
            for connection in made:
                await connection.aclose()

    with LoopbackServer([respond(200, PETS)]) as server:
        if side == "async":
            asyncio.run(main(server))
            return
        pool = _sync_pool(max_connections=1, max_keepalive=1)
        try:
            holder = pool.handle_request(_request(server))
            with _scope(time.monotonic() - 1), pytest.raises(httpcore.PoolTimeout):
                pool.handle_request(_request(server))
            _finish_sync(holder)
            _assert_settled(pool, opened=1, idle=1)
            _finish_sync(pool.handle_request(_request(server, pool=0.2)))
        finally:
            pool.close()
            for connection in made:
                connection.close()


def test_a_cancelled_waiter_is_passed_over_and_a_granted_then_cancelled_one_gives_the_connection_back() -> None:
    """A queued task cancelled while waiting is passed over by the give-back; one cancelled just after the
    connection was handed to it (before it ran again) gives the connection back: it goes idle, not lost."""

    async def main(server: LoopbackServer) -> None:
        pool = _async_pool(max_connections=1, max_keepalive=1)
        holder = await pool.handle_async_request(_request(server))
        waiting = asyncio.create_task(pool.handle_async_request(_request(server)))
        await _until(lambda: _live_waiters(pool) == 1, "queued")
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await _bounded(waiting)
        assert _live_waiters(pool) == 0
        granted = asyncio.create_task(pool.handle_async_request(_request(server)))
        await _until(lambda: _live_waiters(pool) == 1, "queued")
        await _finish(holder)  # hands the connection to ``granted``, which has not run since
        assert pool._idle_count == 0
        granted.cancel()
        with pytest.raises(asyncio.CancelledError):
            await _bounded(granted)
        _assert_settled(pool, opened=1, idle=1)
        await _finish(await pool.handle_async_request(_request(server, pool=0.2)))
        await pool.aclose()

    with LoopbackServer([respond(200, PETS)]) as server:
        asyncio.run(main(server))
        assert server.connections == 1


# ---------------------------------------------------------------- 4. limits


def test_never_more_than_max_connections_open_async() -> None:
    """12 concurrent requests on a pool of 3: the server never sees more than 3 connections at once, and the
    3 opened first serve them all."""

    async def main(server: LoopbackServer) -> None:
        pool = _async_pool(max_connections=3, max_keepalive=3)

        async def call() -> bytes:
            return await _finish(await pool.handle_async_request(_request(server)))

        await _bounded(asyncio.gather(*(call() for _ in range(12))))
        _assert_settled(pool, opened=3, idle=3)
        await pool.aclose()

    server = _PeakServer([_after(0.01, respond(200, PETS))])
    with server:
        asyncio.run(main(server))
        assert server.peak <= 3
        assert server.connections == 3
        assert len(server.received) == 12


def test_never_more_than_max_connections_open_sync() -> None:
    """8 threads sending 24 requests on a pool of 3: the server never sees more than 3 connections at once."""
    server = _PeakServer([_after(0.01, respond(200, PETS))])
    with server, ThreadPoolExecutor(8) as threads:
        pool = _sync_pool(max_connections=3, max_keepalive=3)
        futures = [threads.submit(lambda: _finish_sync(pool.handle_request(_request(server)))) for _ in range(24)]
        for future in futures:
            future.result(timeout=BOUND)
        assert server.peak <= 3
        assert server.connections <= 3
        assert len(server.received) == 24
        _assert_settled(pool, opened=server.connections, idle=server.connections)
        pool.close()


def test_idle_connections_beyond_max_keepalive_are_closed_async() -> None:
    """Four connections in use at once on a pool keeping one idle: given back, one stays idle, three are closed."""

    async def main(server: LoopbackServer) -> None:
        pool = _async_pool(max_connections=4, max_keepalive=1)
        held = [await pool.handle_async_request(_request(server)) for _ in range(4)]
        assert pool._opened == 4
        for response in held:
            await _finish(response)
        _assert_settled(pool, opened=1, idle=1)
        assert await asyncio.to_thread(server.wait_for_open_connections, 1) == 1
        await pool.aclose()

    with LoopbackServer([respond(200, PETS)]) as server:
        asyncio.run(main(server))
        assert server.connections == 4
        assert server.wait_for_open_connections(0) == 0


def test_idle_connections_beyond_max_keepalive_are_closed_sync() -> None:
    """The sync pool: of four connections given back, max_keepalive (one) stays idle and open."""
    with LoopbackServer([respond(200, PETS)]) as server:
        pool = _sync_pool(max_connections=4, max_keepalive=1)
        held = [pool.handle_request(_request(server)) for _ in range(4)]
        assert pool._opened == 4
        for response in held:
            _finish_sync(response)
        _assert_settled(pool, opened=1, idle=1)
        assert server.wait_for_open_connections(1) == 1
        assert server.connections == 4
        pool.close()


# ---------------------------------------------------------------- 5. keep-alive expiry


def test_an_expired_idle_connection_is_not_reused_and_is_closed_async() -> None:
    """An idle connection older than keepalive_expiry is dropped when taken: the server sees a new connection,
    and the old one closed."""

    async def main(server: LoopbackServer) -> None:
        pool = _async_pool(max_connections=2, max_keepalive=2, keepalive_expiry=0.2)
        await _finish(await pool.handle_async_request(_request(server)))
        await asyncio.sleep(0.3)  # past the expiry
        await _finish(await pool.handle_async_request(_request(server)))
        _assert_settled(pool, opened=1, idle=1)
        assert await asyncio.to_thread(server.wait_for_open_connections, 1) == 1
        await pool.aclose()

    with LoopbackServer([respond(200, PETS)]) as server:
        asyncio.run(main(server))
        assert server.connections == 2


def test_an_expired_idle_connection_is_not_reused_and_is_closed_sync() -> None:
    """The sync pool drops an expired idle connection too: a new one is opened, the old one closed."""
    with LoopbackServer([respond(200, PETS)]) as server:
        pool = _sync_pool(max_connections=2, max_keepalive=2, keepalive_expiry=0.2)
        _finish_sync(pool.handle_request(_request(server)))
        time.sleep(0.3)
        _finish_sync(pool.handle_request(_request(server)))
        _assert_settled(pool, opened=1, idle=1)
        assert server.wait_for_open_connections(1) == 1
        assert server.connections == 2
        pool.close()


def test_the_oldest_idle_connection_is_closed_once_expired_when_a_newer_comes_back_async() -> None:
    """Two connections of one origin: the first goes idle and expires; when the second comes back, the expired one
    is closed then and there, before any request takes it."""

    async def main(server: LoopbackServer) -> None:
        pool = _async_pool(max_connections=2, max_keepalive=2, keepalive_expiry=0.3)
        first = await pool.handle_async_request(_request(server))
        second = await pool.handle_async_request(_request(server))
        await _finish(first)
        await asyncio.sleep(0.4)  # the first, idle, expires; the second is still in use
        assert await asyncio.to_thread(server.wait_for_open_connections, 2) == 2
        await _finish(second)
        _assert_settled(pool, opened=1, idle=1)
        assert await asyncio.to_thread(server.wait_for_open_connections, 1) == 1
        await pool.aclose()

    with LoopbackServer([respond(200, PETS)]) as server:
        asyncio.run(main(server))
        assert server.connections == 2


def test_the_oldest_idle_connection_is_closed_once_expired_when_a_newer_comes_back_sync() -> None:
    """The sync pool closes the expired oldest idle connection as a newer one comes back."""
    with LoopbackServer([respond(200, PETS)]) as server:
        pool = _sync_pool(max_connections=2, max_keepalive=2, keepalive_expiry=0.3)
        first = pool.handle_request(_request(server))
        second = pool.handle_request(_request(server))
        _finish_sync(first)
        time.sleep(0.4)
        assert server.wait_for_open_connections(2) == 2
        _finish_sync(second)
        _assert_settled(pool, opened=1, idle=1)
        assert server.wait_for_open_connections(1) == 1
        assert server.connections == 2
        pool.close()


# ---------------------------------------------------------------- 6. the server closing an idle connection


def test_an_idle_connection_the_server_closed_is_not_reused_async(small_limits: Callable[[int, int], None]) -> None:
    """The public async client (max_retries=0): a keep-alive connection the server closed while idle is dropped
    when taken, and the call succeeds on a new one; the pool counts only that one."""
    small_limits(2, 1)

    async def main(server: LoopbackServer) -> None:
        async with AsyncAnimalStoreClient(API_KEY, base_url=server.base_url, max_retries=0, timeout=BOUND) as client:
            pool = _pool_of(client, server.base_url)
            for calls in (1, 2, 3):
                assert len(await client.list_pets()) == 1
                assert server.connections == calls
                # Until the server's close has reached the client's idle socket (the loop running meanwhile).
                await _until(lambda: all(c.has_expired() for c in _idle(pool)), "seen closed by the client")
            _assert_settled(pool, opened=1, idle=1)  # the closed one, dropped when next taken

    with LoopbackServer([_answer_then_close]) as server:
        asyncio.run(main(server))
        assert server.wait_for_open_connections(0) == 0


def test_an_idle_connection_the_server_closed_is_not_reused_sync(small_limits: Callable[[int, int], None]) -> None:
    """The public sync client (max_retries=0): the server's close of an idle connection is seen when it is taken;
    no call fails."""
    small_limits(2, 1)
    with LoopbackServer([_answer_then_close]) as server:
        with AnimalStoreClient(API_KEY, base_url=server.base_url, max_retries=0, timeout=BOUND) as client:
            pool = _pool_of(client, server.base_url)
            for calls in (1, 2, 3):
                assert len(client.list_pets()) == 1
                assert server.connections == calls
                _until_sync(lambda: all(c.has_expired() for c in _idle(pool)), "seen closed by the client")
            _assert_settled(pool, opened=1, idle=1)
        assert server.wait_for_open_connections(0) == 0


# ---------------------------------------------------------------- 7. close


def test_closing_the_pool_closes_idle_connections_and_refuses_requests_async() -> None:
    """aclose() closes the idle connections (the server sees them go) and a request after it raises AnimalStoreError."""

    async def main(server: LoopbackServer) -> None:
        pool = _async_pool(max_connections=2, max_keepalive=2)
        first = await pool.handle_async_request(_request(server))
        second = await pool.handle_async_request(_request(server))
        await _finish(first)
        await _finish(second)
        assert await asyncio.to_thread(server.wait_for_open_connections, 2) == 2
        await pool.aclose()
        _assert_settled(pool, opened=0, idle=0)
        assert await asyncio.to_thread(server.wait_for_open_connections, 0) == 0
        with pytest.raises(AnimalStoreError, match="closed"):
            await pool.handle_async_request(_request(server))

    with LoopbackServer([respond(200, PETS)]) as server:
        asyncio.run(main(server))


def test_closing_the_pool_closes_idle_connections_and_refuses_requests_sync() -> None:
    """close() closes the sync pool's idle connections; a request after it raises AnimalStoreError."""
    with LoopbackServer([respond(200, PETS)]) as server:
        pool = _sync_pool(max_connections=2, max_keepalive=2)
        _finish_sync(pool.handle_request(_request(server)))
        assert server.wait_for_open_connections(1) == 1
        pool.close()
        _assert_settled(pool, opened=0, idle=0)
        assert server.wait_for_open_connections(0) == 0
        with pytest.raises(AnimalStoreError, match="closed"):
            pool.handle_request(_request(server))


def test_a_request_queued_when_the_pool_closes_raises_at_once_async() -> None:
    """A request waiting (30 s pool timeout) when the pool closes raises AnimalStoreError, not a pool timeout; the
    connection in use is closed when its holder gives it back."""

    async def main(server: LoopbackServer) -> None:
        pool = _async_pool(max_connections=1, max_keepalive=1)
        holder = await pool.handle_async_request(_request(server))
        waiting = asyncio.create_task(pool.handle_async_request(_request(server, pool=30.0)))
        await _until(lambda: _live_waiters(pool) == 1, "queued")
        await pool.aclose()
        with pytest.raises(AnimalStoreError, match="closed"):
            await _bounded(waiting)  # well before the pool timeout
        assert await asyncio.to_thread(server.wait_for_open_connections, 1) == 1  # in use: left to its holder
        await _finish(holder)
        _assert_settled(pool, opened=0, idle=0)
        assert await asyncio.to_thread(server.wait_for_open_connections, 0) == 0

    with LoopbackServer([respond(200, PETS)]) as server:
        asyncio.run(main(server))


def test_a_request_queued_when_the_pool_closes_raises_at_once_sync() -> None:
    """A thread waiting for the sync pool's only connection raises AnimalStoreError when another closes the pool."""
    with LoopbackServer([respond(200, PETS)]) as server, ThreadPoolExecutor(1) as threads:
        pool = _sync_pool(max_connections=1, max_keepalive=1)
        holder = pool.handle_request(_request(server))
        waiting = threads.submit(pool.handle_request, _request(server, pool=30.0))
        _until_sync(lambda: _live_waiters(pool) == 1, "queued")
        pool.close()
        with pytest.raises(AnimalStoreError, match="closed"):
            waiting.result(timeout=BOUND)
        _finish_sync(holder)
        _assert_settled(pool, opened=0, idle=0)
        assert server.wait_for_open_connections(0) == 0


def test_a_call_queued_when_the_client_closes_raises_animalstore_error(
    small_limits: Callable[[int, int], None],
) -> None:
    """The public async client with a pool of one: a call waiting for the connection when the client is closed
    raises AnimalStoreError at once; a call after the close raises it too; no connection stays open."""
    small_limits(1, 1)

    async def main(server: LoopbackServer) -> None:
        client = AsyncAnimalStoreClient(
            API_KEY, base_url=server.base_url, max_retries=0, timeout=httpx.Timeout(BOUND, pool=30.0)
        )
        holder = asyncio.create_task(client.list_pets())
        await _until(lambda: len(server.received) == 1, "sent")
        pool = _pool_of(client, server.base_url)
        waiting = asyncio.create_task(client.list_pets())
        await _until(lambda: _live_waiters(pool) == 1, "queued")
        await client.aclose()
        with pytest.raises(AnimalStoreError, match="closed"):
            await _bounded(waiting)
        await asyncio.wait([holder], timeout=BOUND)  # however it ends, it ends
        assert holder.done()
        if not holder.cancelled():
            holder.exception()  # retrieved, whatever it is: no "exception was never retrieved" warning
        with pytest.raises(AnimalStoreError, match="closed"):
            await client.list_pets()
        assert pool._opened == 0

    with LoopbackServer([_after(0.3, respond(200, PETS))]) as server:
        asyncio.run(main(server))
        assert server.wait_for_open_connections(0) == 0


# ---------------------------------------------------------------- 8. another origin's idle connection


def test_at_the_limit_another_origins_idle_connection_gives_way_async() -> None:
    """A pool of one connection, idle to origin A: a request for origin B does not wait; A's connection is closed."""

    async def main(a: LoopbackServer, b: LoopbackServer) -> None:
        pool = _async_pool(max_connections=1, max_keepalive=1)
        await _finish(await pool.handle_async_request(_request(a)))
        _assert_settled(pool, opened=1, idle=1)
        await _finish(await pool.handle_async_request(_request(b, pool=0.1)))
        _assert_settled(pool, opened=1, idle=1)
        assert [(key, len(idle)) for key, idle in pool._idle.items() if idle] == [((b"http", b"127.0.0.1", b.port), 1)]
        assert await asyncio.to_thread(a.wait_for_open_connections, 0) == 0
        await pool.aclose()

    with LoopbackServer([respond(200, PETS)]) as a, LoopbackServer([respond(200, PETS)]) as b:
        asyncio.run(main(a, b))
        assert (a.connections, b.connections) == (1, 1)


def test_at_the_limit_another_origins_idle_connection_gives_way_sync() -> None:
    """The sync pool: origin A's idle connection is closed to make room for a request to origin B."""
    with LoopbackServer([respond(200, PETS)]) as a, LoopbackServer([respond(200, PETS)]) as b:
        pool = _sync_pool(max_connections=1, max_keepalive=1)
        _finish_sync(pool.handle_request(_request(a)))
        _finish_sync(pool.handle_request(_request(b, pool=0.1)))
        _assert_settled(pool, opened=1, idle=1)
        assert a.wait_for_open_connections(0) == 0
        assert b.open_connections == 1
        pool.close()


# ---------------------------------------------------------------- 9. respx


@pytest.fixture
def no_socket(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records any connection the default backend's network layer would open (none should be)."""
    opened: list[str] = []
    connect = httpcore.SyncBackend.connect_tcp
    connect_async = AsyncioBackend.connect_tcp

    def sync_connect(self: httpcore.SyncBackend, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        opened.append(f"{host}:{port}")
        return connect(self, host, port, *args, **kwargs)

    async def async_connect(self: AsyncioBackend, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        opened.append(f"{host}:{port}")
        return await connect_async(self, host, port, *args, **kwargs)

    monkeypatch.setattr(httpcore.SyncBackend, "connect_tcp", sync_connect)
    monkeypatch.setattr(AsyncioBackend, "connect_tcp", async_connect)
    return opened


def test_respx_mocks_the_default_backend_sync(no_socket: list[str]) -> None:
    """respx.mock with its default router answers the sync client's default backend: the call succeeds, the pool
    holds nothing afterwards, and no socket is opened."""
    with LoopbackServer() as server:
        with respx.mock:
            route = respx.get(f"{server.base_url}/pets").respond(200, json=PETS)
            with AnimalStoreClient(API_KEY, base_url=server.base_url, max_retries=0) as client:
                assert [pet.id for pet in client.list_pets()] == [1]
                assert [pet.id for pet in client.list_pets()] == [1]
                pool = _pool_of(client, server.base_url)
                assert isinstance(pool, ConnectionPool)
                _assert_settled(pool, opened=0, idle=0)
            assert route.call_count == 2
        assert server.connections == 0
    assert no_socket == []


def test_respx_mocks_the_default_backend_async(no_socket: list[str]) -> None:
    """respx.mock with its default router answers the async client's default backend: no socket is opened."""

    async def main(base_url: str) -> None:
        async with AsyncAnimalStoreClient(API_KEY, base_url=base_url, max_retries=0) as client:
            assert [pet.id for pet in await client.list_pets()] == [1]
            assert [pet.id for pet in await client.list_pets()] == [1]
            pool = _pool_of(client, base_url)
            assert isinstance(pool, AsyncConnectionPool)
            _assert_settled(pool, opened=0, idle=0)

    with LoopbackServer() as server:
        with respx.mock:
            route = respx.get(f"{server.base_url}/pets").respond(200, json=PETS)
            asyncio.run(main(server.base_url))
            assert route.call_count == 2
        assert server.connections == 0
    assert no_socket == []


def test_the_pools_are_what_the_default_backend_uses() -> None:
    """The clients' default backend sends direct requests through the pools tested here (not httpcore's own)."""
    with LoopbackServer([respond(200, PETS)]) as server:
        with AnimalStoreClient(API_KEY, base_url=server.base_url) as client:
            client.list_pets()
            assert isinstance(_pool_of(client, server.base_url), ConnectionPool)

        async def main() -> None:
            async with AsyncAnimalStoreClient(API_KEY, base_url=server.base_url) as client:
                await client.list_pets()
                assert isinstance(_pool_of(client, server.base_url), AsyncConnectionPool)

        asyncio.run(main())


# ---------------------------------------------------------------- 11. idle connections across origins


def test_an_origin_never_called_again_does_not_keep_its_sockets_past_their_expiry() -> None:
    """Origin A's idle connection expires; calls to origin B alone close it (one order across origins)."""
    with LoopbackServer([respond(200, PETS)]) as a, LoopbackServer([respond(200, PETS)]) as b:
        pool = _sync_pool(max_connections=4, max_keepalive=4, keepalive_expiry=0.2)
        _finish_sync(pool.handle_request(_request(a)))
        time.sleep(0.4)  # past A's keep-alive expiry
        _finish_sync(pool.handle_request(_request(b)))
        assert a.wait_for_open_connections(0) == 0
        _assert_settled(pool, opened=1, idle=1)
        pool.close()


def test_at_the_idle_cap_the_oldest_idle_connection_gives_way_to_the_newest() -> None:
    """Idle places full of other origins' connections: a new origin's connection is kept, the oldest closed."""
    servers = [LoopbackServer([respond(200, PETS)]) for _ in range(4)]
    with contextlib.ExitStack() as stack:
        a, b, c, d = (stack.enter_context(server) for server in servers)
        pool = _sync_pool(max_connections=10, max_keepalive=3)
        for server in (a, b, c, d, d, d):
            _finish_sync(pool.handle_request(_request(server)))
        assert d.connections == 1, "origin D got no keep-alive: every call opened a connection"
        assert a.wait_for_open_connections(0) == 0, "the oldest idle connection (A's) was not the one closed"
        assert (b.open_connections, c.open_connections, d.open_connections) == (1, 1, 1)
        _assert_settled(pool, opened=3, idle=3)
        pool.close()


def test_idle_connections_across_origins_async() -> None:
    """The async pool: the same order across origins (expiry, and the oldest giving way at the cap)."""

    async def main(a: LoopbackServer, b: LoopbackServer, c: LoopbackServer) -> None:
        pool = _async_pool(max_connections=4, max_keepalive=2, keepalive_expiry=0.2)
        await _finish(await pool.handle_async_request(_request(a)))
        await asyncio.sleep(0.4)
        await _finish(await pool.handle_async_request(_request(b)))
        assert await asyncio.to_thread(a.wait_for_open_connections, 0) == 0
        for server in (c, b, c):
            await _finish(await pool.handle_async_request(_request(server)))
        _assert_settled(pool, opened=2, idle=2)
        await pool.aclose()

    with contextlib.ExitStack() as stack:
        a, b, c = (stack.enter_context(LoopbackServer([respond(200, PETS)])) for _ in range(3))
        asyncio.run(main(a, b, c))
        assert (a.connections, b.connections, c.connections) == (1, 1, 1)
