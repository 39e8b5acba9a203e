"""Threads, tasks and event loops: one client shared, reused across loops, and dropped unclosed."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from animalstore_client import (
    AnimalStoreClient,
    AsyncAnimalStoreClient,
)

from .conftest import API_KEY
from .servers import LoopbackServer, respond

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}
ERROR_503 = {"code": "unavailable", "message": "try later", "status": 503}


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
