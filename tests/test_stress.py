"""Many threads or tasks on one client, a server dropping connections at random: every answer is the caller's own.

The server (asyncio, in a thread of its own) echoes each request's
``X-Token`` header as the pet's name and, at random, closes the connection
before answering, half-way through an answer, or right after one. Every call
either returns its own token or raises an SDK exception; afterwards the
client's descriptors and threads are gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import random
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from animalstore_client import AnimalStoreClient, AnimalStoreError, AsyncAnimalStoreClient
from animalstore_client._core.libraries import for_client

from .conftest import API_KEY, on_library, scaled

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc/self/fd"),
]


class _ChaosServer:
    """HTTP/1.1 keep-alive on 127.0.0.1 that echoes X-Token and misbehaves 1 time in 8 (seeded)."""

    def __init__(self) -> None:
        self._random = random.Random(18)
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    def __enter__(self) -> str:
        self._thread.start()
        assert self._started.wait(10)
        return f"http://127.0.0.1:{self.port}/v1"

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024))
        self.port = server.sockets[0].getsockname()[1]
        self._started.set()
        self._loop.run_forever()
        server.close()
        for writer in self._writers:
            writer.close()
        tasks = asyncio.all_tasks(self._loop)
        for task in tasks:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, server.wait_closed(), return_exceptions=True))
        self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        with contextlib.suppress(Exception):
            while True:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
                token = b"none"
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"x-token:"):
                        token = line.split(b":", 1)[1].strip()
                body = b'[{"id": 1, "name": "' + token + b'", "categoryId": 1}]'
                answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
                    len(body),
                    body,
                )
                fate = self._random.randrange(8)
                if fate == 0:  # drop the request unanswered
                    break
                if fate == 1:  # half an answer
                    writer.write(answer[: len(answer) // 2])
                    await writer.drain()
                    break
                writer.write(answer)
                await writer.drain()
                if fate == 2:  # answer, then close the keep-alive connection
                    break
        writer.close()
        self._writers.discard(writer)
        with contextlib.suppress(Exception):
            await writer.wait_closed()


def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _token(index: int) -> str:
    return f"t{index:06d}"


@pytest.fixture
def chaos(caplog: pytest.LogCaptureFixture, request: pytest.FixtureRequest) -> Iterator[str]:
    """The chaos server's base URL; after the test (the server stopped) no descriptor or thread is left over."""
    # pytest keeps every captured log record, and urllib3's warnings about
    # broken connections hold their sockets: they would count as leaks.
    caplog.set_level(logging.CRITICAL, logger="urllib3")
    if getattr(request.node, "callspec", None) and request.node.callspec.params.get("backend") == "pyreqwest":
        # pyreqwest's Tokio runtime (3 descriptors) starts with the first library client of the process
        # and stays for the process: started before counting, so what is counted is the client's.
        from pyreqwest.client import SyncClientBuilder

        SyncClientBuilder().build().close()
    descriptors, threads = _descriptors(), threading.active_count()
    with _ChaosServer() as url:
        yield url
    gc.collect()  # sockets held only by reference cycles (an exception's traceback) are not leaks
    assert threading.active_count() <= threads
    assert _descriptors() <= descriptors


@pytest.mark.parametrize("backend", [on_library(library.name, library.name) for library in for_client("sync")])
def test_64_threads_on_one_sync_client(chaos: str, backend: str) -> None:
    """64 threads, 1,920 calls (`scaled`: 192 in the everyday tier): 0 answers meant for another call, only SDK
    exceptions, nothing left open."""
    calls = scaled(1920, least=128)
    mismatched: list[str] = []
    foreign: list[str] = []
    answered: list[int] = []

    def call(client: AnimalStoreClient, index: int) -> None:
        token = _token(index)
        try:
            pets = client.list_pets(extra_headers={"X-Token": token})
        except AnimalStoreError:
            return
        except Exception as exc:
            foreign.append(repr(exc))
            return
        if [pet.name for pet in pets] != [token]:
            mismatched.append(f"{token} got {[pet.name for pet in pets]}")
        answered.append(index)

    client = AnimalStoreClient(API_KEY, base_url=chaos, backend=backend, total_timeout=20)  # type: ignore[arg-type]
    with client, ThreadPoolExecutor(64) as pool:
        list(pool.map(lambda index: call(client, index), range(calls)))
    assert mismatched == []
    assert foreign == []
    assert len(answered) >= calls // 2  # retries get most calls through: the checks above had answers to check


@pytest.mark.parametrize("backend", [on_library(library.name, library.name) for library in for_client("async")])
def test_500_tasks_on_one_async_client(chaos: str, backend: str) -> None:
    """500 tasks, 2,000 calls (`scaled`: 50 and 200 in the everyday tier): 0 answers meant for another call, only
    SDK exceptions, nothing left open."""
    tasks = scaled(500, least=50)

    answered: list[int] = []

    async def main() -> tuple[list[str], list[str]]:
        mismatched: list[str] = []
        foreign: list[str] = []
        async with AsyncAnimalStoreClient(API_KEY, base_url=chaos, backend=backend, total_timeout=20) as client:  # type: ignore[arg-type]

            async def worker(first: int) -> None:
                for index in range(first, first + 4):
                    token = _token(index)
                    try:
                        pets = await client.list_pets(extra_headers={"X-Token": token})
                    except AnimalStoreError:
                        continue
                    except Exception as exc:
                        foreign.append(repr(exc))
                        continue
                    if [pet.name for pet in pets] != [token]:
                        mismatched.append(f"{token} got {[pet.name for pet in pets]}")
                    answered.append(index)

            await asyncio.gather(*(worker(task * 4) for task in range(tasks)))
        return mismatched, foreign

    assert asyncio.run(main()) == ([], [])
    assert len(answered) >= tasks * 4 // 2  # retries get most calls through: the checks above had answers to check
