"""One async client on many event loops: one after another, at once (a loop per thread), and asyncio then trio.

Connections belong to the event loop that opened them, so the client keeps a
transport per loop: every call works on whichever loop makes it, the sockets
stay within the limits of the loops alive, and the connections of a loop that
has ended are closed (not left to the garbage collector). Servers are on
127.0.0.1 and count the connections they see; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
import trio

from animalstore_client import AsyncAnimalStoreClient

from .conftest import API_KEY
from .servers import LoopbackServer, respond

PETS = [{"id": 1, "name": "Rex", "categoryId": 1}]
CALLS = 40


async def _calls(client: AsyncAnimalStoreClient, count: int) -> list[int]:
    return [(await client.list_pets())[0].id for _ in range(count)]


def test_asyncio_run_twice_works_and_closes_the_first_loops_connection() -> None:
    """A second asyncio.run makes its calls on a new connection; the first loop's, idle, is closed, not leaked."""
    with LoopbackServer([respond(200, PETS)]) as server:
        client = AsyncAnimalStoreClient(API_KEY, base_url=server.base_url)
        assert asyncio.run(_calls(client, 3)) == [1, 1, 1]
        assert server.open_connections == 1  # idle, in a loop that has now ended
        assert asyncio.run(_calls(client, 3)) == [1, 1, 1]
        assert server.connections == 2
        assert server.wait_for_open_connections(1) == 1, "the ended loop's connection was left open"
        asyncio.run(client.aclose())
        assert server.wait_for_open_connections(0) == 0


def test_two_running_loops_keep_a_connection_each() -> None:
    """Two threads, each running its own loop, share one client: every call works and no socket leaks per switch."""
    with LoopbackServer([respond(200, PETS)]) as server:
        client = AsyncAnimalStoreClient(API_KEY, base_url=server.base_url)
        results: list[list[int]] = []
        barrier = threading.Barrier(2, timeout=10)

        async def interleaved() -> list[int]:
            ids = []
            for _ in range(CALLS):
                ids.extend(await _calls(client, 1))
                await asyncio.sleep(0)
            return ids

        def run() -> None:
            barrier.wait()
            results.append(asyncio.run(interleaved()))

        threads = [threading.Thread(target=run, daemon=True) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert results == [[1] * CALLS, [1] * CALLS]
        # One connection per loop (two loops), not one per switch between them.
        assert server.connections <= 2, f"{server.connections} connections for {2 * CALLS} calls on two loops"
        asyncio.run(client.aclose())
        assert server.wait_for_open_connections(0) == 0


def test_a_client_closed_from_one_loop_asks_another_live_loop_to_close_its_own() -> None:
    """aclose() in one loop leaves another live loop's connection to that loop, which closes it when it next runs."""
    with LoopbackServer([respond(200, PETS)]) as server:
        client = AsyncAnimalStoreClient(API_KEY, base_url=server.base_url)
        other = asyncio.new_event_loop()
        other.set_debug(True)  # a call on it from another thread would raise
        try:
            assert other.run_until_complete(_calls(client, 1)) == [1]

            async def close_here() -> None:
                assert await _calls(client, 1) == [1]
                await client.aclose()

            asyncio.run(close_here(), debug=True)
            assert server.wait_for_open_connections(1) == 1, "this loop's connection was not closed"
            assert server.open_connections == 1, "the other loop's connection was closed from outside it"
            other.run_until_complete(asyncio.sleep(0.05))  # the other loop runs again, and closes its own
            assert server.wait_for_open_connections(0) == 0
        finally:
            other.close()


def test_closing_from_the_first_loop_after_another_thread_used_the_client() -> None:
    """Loop A calls, loop B in a thread calls, A closes: A's connection closed in A, B's in B (debug loops)."""
    with LoopbackServer([respond(200, PETS)]) as server:
        client = AsyncAnimalStoreClient(API_KEY, base_url=server.base_url)
        a = asyncio.new_event_loop()
        a.set_debug(True)
        b_ready, b_stop = threading.Event(), threading.Event()
        b_loop: list[asyncio.AbstractEventLoop] = []

        async def in_b() -> None:
            b_loop.append(asyncio.get_running_loop())
            assert await _calls(client, 1) == [1]
            b_ready.set()
            while not b_stop.is_set():  # bounded by the join below
                await asyncio.sleep(0.01)

        thread = threading.Thread(target=lambda: asyncio.run(in_b(), debug=True), daemon=True)
        try:
            assert a.run_until_complete(_calls(client, 1)) == [1]
            thread.start()
            assert b_ready.wait(10)
            assert server.open_connections == 2
            a.run_until_complete(client.aclose())
            # A's own closed by A; B's by B, which runs all along.
            assert server.wait_for_open_connections(0) == 0
        finally:
            b_stop.set()
            thread.join(10)
            a.close()
        assert not thread.is_alive()


def test_asyncio_then_trio_then_asyncio() -> None:
    """A client first used under asyncio works under trio, and under asyncio again; nothing is refused or retried."""
    with LoopbackServer([respond(200, PETS)]) as server:
        client = AsyncAnimalStoreClient(API_KEY, base_url=server.base_url, max_retries=0)
        assert asyncio.run(_calls(client, 2)) == [1, 1]
        assert trio.run(_calls, client, 2) == [1, 1]
        assert asyncio.run(_calls(client, 2)) == [1, 1]
        assert len(server.received) == 6
        asyncio.run(client.aclose())


@pytest.mark.parametrize("runs", [2, 5])
def test_trio_runs_one_after_another(runs: int) -> None:
    """Each trio.run gets a working pool of its own (the run before it has ended)."""
    with LoopbackServer([respond(200, PETS)]) as server:
        client = AsyncAnimalStoreClient(API_KEY, base_url=server.base_url, max_retries=0)
        for _ in range(runs):
            assert trio.run(_calls, client, 2) == [1, 1]
        assert len(server.received) == 2 * runs
        trio.run(client.aclose)
