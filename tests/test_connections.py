"""No connection is ever lost: every way a call can fail after its stream opened gives the connection back or closes it.

A server on 127.0.0.1 answers each request in one of the ways that make a call
fail once the response has started (a coding refused, a corrupt body, the
size cap, a body that is not JSON, the deadline, a cancellation) and counts
the connections its clients still hold open. After a few hundred such calls
the count must be back at what one idle keep-alive connection explains, and
a normal call must succeed at once, on every client and library.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import socket

import pytest

from animalstore_client import AnimalStoreError, AsyncAnimalStoreClient, AsyncBackendName
from animalstore_client._core.libraries import for_client

from .conftest import ALL_VARIANTS, API_KEY, ClientFactory, on_library
from .servers import Action, LoopbackServer, respond
from .timing import OVERSHOOT, Stopwatch

PETS = [{"id": 1, "name": "Rex", "categoryId": 1}]


def _head(extra: str, length: int) -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}Content-Length: {length}\r\n\r\n".encode()


def _stalled(conn: socket.socket) -> bool:
    """Promise a body, send a byte of it, then nothing (until the client gives up)."""
    conn.sendall(_head("", 100) + b"[")
    return True  # the client's close, once it gives up, ends this connection


def _silent(conn: socket.socket) -> bool:
    """Read the request and answer nothing (until the client gives up)."""
    return True


FAILURES: dict[str, Action] = {
    "too-many-codings": respond(200, b"x", {"Content-Encoding": "gzip, gzip, gzip, gzip"}),
    "corrupt-gzip": respond(200, b"\x1f\x8b\x08\x00garbage" * 50, {"Content-Encoding": "gzip"}),
    "over-the-cap": respond(200, json.dumps(PETS * 400).encode()),
    "not-json": respond(200, b"<html>oops</html>"),
    "gzip-over-the-cap": respond(200, gzip.compress(json.dumps(PETS * 400).encode()), {"Content-Encoding": "gzip"}),
}


def _fail_many(client: object, calls: int) -> None:
    for _ in range(calls):
        with pytest.raises(AnimalStoreError):
            client.list_pets()  # type: ignore[attr-defined]


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_no_failure_after_the_stream_opened_loses_a_connection(make_client: ClientFactory, variant: str) -> None:
    """300 calls failing in five ways, then a normal one: it succeeds and no connection is left held."""
    script = [action for _, action in zip(range(300), itertools.cycle(FAILURES.values()), strict=False)]
    with LoopbackServer([*script, respond(200, PETS)]) as server:
        client = make_client(base_url=server.base_url, max_retries=0, max_response_bytes=4096)
        _fail_many(client, len(script))
        with Stopwatch() as watch:  # served at once, not after a lost connection's timeout
            assert [pet.id for pet in client.list_pets()] == [1]
        watch.assert_within(1.0)
        # One idle keep-alive connection (the last call's) may stay open; nothing else. hyper
        # (pyreqwest) hands a connection whose answer had arrived whole back to its pool from its
        # own thread, so the next call may have opened a second one meanwhile: two idle, not lost.
        idle = 2 if variant.endswith("pyreqwest") else 1
        assert server.wait_for_open_connections(idle) <= idle


def test_a_deadline_in_the_body_closes_the_connection(make_client: ClientFactory) -> None:
    """Calls ending at total_timeout mid-body leave no connection held, and the next call succeeds."""
    with LoopbackServer([_stalled]) as server:
        answer = respond(200, PETS)

        def stall_all_but_the_last(conn: socket.socket) -> bool:
            # Told apart by the request, not by its turn: on a busy machine a 0.2 s call may end before its request
            # reaches the server, and a script in turns then stalled the last call instead.
            return (answer if "limit=1" in server.received[-1].target else _stalled)(conn)

        server.script[:] = [stall_all_but_the_last]
        client = make_client(base_url=server.base_url, max_retries=0, total_timeout=0.2)
        _fail_many(client, 3)
        # The same pool (with_options shares it) with a deadline a busy machine meets: 0.2 s once was not enough.
        assert [pet.id for pet in client.with_options(total_timeout=10).list_pets(limit=1)] == [1]
        assert server.wait_for_open_connections(1) <= 1


ASYNC_BACKENDS = [on_library(library.name, library.name) for library in for_client("async")]
"""Every library of the async client, as ``backend=``, from the declarations."""


@pytest.mark.parametrize("backend", ASYNC_BACKENDS)
def test_a_cancelled_call_closes_its_connection(backend: AsyncBackendName) -> None:
    """An asyncio task cancelled while the body arrives leaves no connection held, on every async library.

    httpx, httpx2 and aiohttp close it at once; pyreqwest, which had the body's start but not its end, keeps
    reading in its own runtime until the call's deadline (1 s here), and the connection goes then.
    """

    async def main(backend: AsyncBackendName, server: LoopbackServer) -> int:
        deadline = 1.0 if backend == "pyreqwest" else None
        async with AsyncAnimalStoreClient(
            API_KEY,
            base_url=server.base_url,
            backend=backend,
            max_retries=0,
            total_timeout=deadline,
        ) as client:
            for sent in range(1, 21):
                task = asyncio.create_task(client.list_pets())
                # Cancelled once the server has the request and began the body (a busy machine may take
                # longer than any fixed pause to get it there): each call takes its own line of the script.
                for _ in range(500):  # bounded: 5 s
                    if len(server.received) >= sent:
                        break
                    await asyncio.sleep(0.01)
                await asyncio.sleep(0.02)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            return len(await client.list_pets())

    with LoopbackServer([_stalled] * 20 + [respond(200, PETS)]) as server:
        assert asyncio.run(main(backend, server)) == 1
        assert server.wait_for_open_connections(0) == 0


@pytest.mark.parametrize("backend", ASYNC_BACKENDS)
def test_a_call_cancelled_before_its_answer_releases_its_connection_by_its_deadline(backend: AsyncBackendName) -> None:
    """Tasks cancelled while the server has not answered leave no connection held past the call's deadline.

    httpx, httpx2 and aiohttp close it at once. pyreqwest keeps a request it already sent running in its own
    runtime until the answer or the request's timeout, which the SDK always sets to the call's deadline
    (docs/usage.md): the connection goes then, never later.
    """

    deadline = 2.0

    watch = Stopwatch()  # from the calls' start (not the client's making) until no connection is held

    async def main(backend: AsyncBackendName, server: LoopbackServer) -> int:
        client = AsyncAnimalStoreClient(
            API_KEY, base_url=server.base_url, backend=backend, max_retries=0, total_timeout=deadline
        )
        with watch:
            async with client:
                tasks = [asyncio.create_task(client.list_pets()) for _ in range(5)]
                # Cancelled once the server has every request (a busy machine once sent 2 of the 5 in a fixed 0.2 s).
                for _ in range(150):  # bounded: 1.5 s, within the deadline
                    if len(server.received) >= 5:
                        break
                    await asyncio.sleep(0.01)
                for task in tasks:
                    task.cancel()
                for task in tasks:
                    with pytest.raises(asyncio.CancelledError):
                        await task
            return await asyncio.to_thread(server.wait_for_open_connections, 0, 5.0)

    with LoopbackServer() as server:
        server.script = [_silent] * 5
        assert asyncio.run(main(backend, server)) == 0
        assert server.connections == 5
    watch.assert_within(deadline + OVERSHOOT)


def _answer_and_a_stray(conn: socket.socket) -> bool:
    """Pet 1, as asked, and in the same write an answer nobody asked for (pet 666), as a confused server sends."""
    first = json.dumps([{"id": 1, "name": "Rex", "categoryId": 1}]).encode()
    stray = json.dumps([{"id": 666, "name": "Stray", "categoryId": 1}]).encode()
    head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n"
    conn.sendall(head.format(len(first)).encode() + first + head.format(len(stray)).encode() + stray)
    return True


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_a_stray_answer_is_never_the_next_calls(make_client: ClientFactory) -> None:
    """On every client/library pair, bytes that arrived after an answer never become the next call's answer: it
    gets its own (pet 2), never the stray one (pet 666). Most libraries find the connection unfit and open another;
    urllib3 reads ahead into the answer's own buffer, which goes with it, stray and all, and may reuse the
    connection. (tests/test_network_backends.py holds the SDK's pool to this on asyncio, uvloop and trio, over
    TLS.)"""
    with LoopbackServer([_answer_and_a_stray, respond(200, [{"id": 2, "name": "Own", "categoryId": 1}])]) as server:
        client = make_client(base_url=server.base_url, max_retries=0)
        assert [pet.id for pet in client.list_pets()] == [1]
        assert [pet.id for pet in client.list_pets()] == [2]
        client.close()
