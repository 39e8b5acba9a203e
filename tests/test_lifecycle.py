"""Every connection a client opened is closed, with nothing logged, when its event loop ends and across a fork.

On every client/library pair, with a server on 127.0.0.1 that counts the
connections open (it sees each FIN):

- an async client called from one ``asyncio.run()`` after another closes the
  connections of each loop that ended at its next call, and the last at
  ``aclose()``, without a line logged or a warning;
- after ``os.fork()`` the parent's calls are unaffected by the child, whatever
  the child does (nothing, calls on a loop of its own, calls on the loop it
  inherited), with threads using the client or without; and once the parent
  closes its client the server sees every connection's FIN while the child
  still lives: the child closed its copies of the parent's sockets at the fork.

The fork scenarios run in a subprocess, one per library for all its pairs
(forking pytest itself would copy its threads; an interpreter's start costs
more than all of a pair's scenarios); every wait there is bounded, and the
subprocess prints one line per scenario and nothing on stderr.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from animalstore_client import AsyncAnimalStoreClient
from animalstore_client._core.libraries import LIBRARIES

from .conftest import ALL_VARIANTS, API_KEY, library_of, on_library
from .servers import LoopbackServer, respond
from .tls import ca_file, server_context

PETS = [{"id": 1, "name": "Rex", "categoryId": 1}]
RUNS = 6
"""``asyncio.run()`` calls on one client: each loop's connection must be closed at the next (1.3 kept them all)."""


def _pair(variant: Any) -> str:
    """A client/library pair's name (``"async-aiohttp"``), marked by conftest's ``on_library`` or not."""
    return str(getattr(variant, "values", (variant,))[0])


ASYNC_VARIANTS = [variant for variant in ALL_VARIANTS if _pair(variant).startswith("async")]


async def _pet_id(client: AsyncAnimalStoreClient) -> int:
    return (await client.list_pets())[0].id


@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest.mark.parametrize("variant", ASYNC_VARIANTS)
def test_the_connections_of_an_ended_event_loop_are_closed_at_the_next_call_and_nothing_is_logged(
    variant: str, scheme: str, caplog: pytest.LogCaptureFixture
) -> None:
    """RUNS asyncio.run() calls on one async client: each makes one connection, the ended loops' are closed by the
    next call (one open at a time), the last by aclose(); nothing is logged at WARNING or above, and no object warns
    when collected (the suite's warnings are errors)."""
    caplog.set_level(logging.WARNING)
    tls = server_context() if scheme == "https" else None
    with LoopbackServer([respond(200, PETS)], tls=tls) as server:
        client = AsyncAnimalStoreClient(
            API_KEY,
            base_url=server.base_url,
            backend=library_of(variant),  # type: ignore[arg-type]  # a declared library's name
            verify=ca_file() if tls else True,
            max_retries=0,
        )
        for run in range(1, RUNS + 1):
            assert asyncio.run(_pet_id(client)) == 1
            assert server.connections == run, "a loop's call did not make its own connection"
            assert server.wait_for_open_connections(1) == 1, f"after {run} loops the ended loops' connections are open"
        asyncio.run(client.aclose())
        assert server.wait_for_open_connections(0) == 0, "aclose() left the last ended loop's connection open"
        del client
        gc.collect()  # a session, connector or transport left unclosed warns (or logs) as it is collected: here
    assert [record.getMessage() for record in caplog.records] == []


ROOT = Path(__file__).resolve().parent.parent

# Runs every fork scenario for each client/library pair named, each with a server of its own, and prints a line
# each: "<pair> <scenario>: parent ok child <outcome> open 0 child alive". Each scenario warms the client (and
# its threads' own loops), forks, lets the child do its part and report it, makes the parent's calls, closes the
# parent's client, waits (bounded) for the server to see every connection closed, and only then lets the child
# exit. Unclosed objects warn (ResourceWarning: always) and asyncio logs its errors on stderr, which the test
# wants empty.
FORKS = """
import asyncio, gc, os, select, signal, socket, sys, threading, time, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # urllib3's own, and Python 3.12's about forking beside threads
warnings.simplefilter("always", ResourceWarning)
sys.path.insert(0, sys.argv[3])
import animalstore_client as a
from tests.servers import LoopbackServer, respond
from tests.tls import ca_file, server_context

pairs, refused = sys.argv[1].split(","), sys.argv[2] == "refused"
PETS = [{"id": 1, "name": "Rex", "categoryId": 1}]
THREADS, THREAD_CALLS, PARENT_CALLS = 3, 12, 10
TLS = server_context()  # one certificate for every HTTPS scenario

def child_part(client, loop, is_async, what):
    # The child's outcome: "ok" (its calls answered, its own pool closed), "refused" (pyreqwest after use), or why not.
    try:
        if what == "idle":
            pass
        elif not is_async:
            assert client.list_pets()[0].id == 1
            client.close()
        else:
            async def calls():
                assert (await client.list_pets())[0].id == 1
                await client.aclose()
            if what == "keeps-loop":
                loop.run_until_complete(asyncio.wait_for(calls(), 10))
            else:
                asyncio.run(asyncio.wait_for(calls(), 10))
    except a.AnimalStoreError as exc:
        return "refused" if refused and "forked after pyreqwest had started" in str(exc) else repr(exc)
    except BaseException as exc:
        return repr(exc)
    gc.collect()  # what the child let go of is collected now, while the parent still calls
    return "ok"

def scenario(pair, scheme, threads, what):
    is_async = pair.startswith("async")
    backend = pair.split("-")[1] if "-" in pair else None
    tls = TLS if scheme == "https" else None
    verify = ca_file() if tls else True
    with LoopbackServer([respond(200, PETS)], tls=tls) as server:
        options = dict(base_url=server.base_url, backend=backend, verify=verify, total_timeout=5, max_retries=0)
        loop = asyncio.new_event_loop() if is_async else None
        if is_async:
            client = a.AsyncAnimalStoreClient("k", **options)
            async def calls(count):
                for _ in range(count):
                    assert (await client.list_pets())[0].id == 1
            parent_calls = lambda count: loop.run_until_complete(calls(count))
            in_thread = lambda: asyncio.run(calls(THREAD_CALLS))  # each thread on a loop of its own
        else:
            client = a.AnimalStoreClient("k", **options)
            def parent_calls(count):
                for _ in range(count):
                    assert client.list_pets()[0].id == 1
            in_thread = lambda: parent_calls(THREAD_CALLS)
        parent_calls(2)
        errors = []
        def run():
            try:
                in_thread()
            except BaseException as exc:
                errors.append(repr(exc))
        workers = [threading.Thread(target=run) for _ in range(threads)]
        for worker in workers:
            worker.start()
        bound = time.monotonic() + 10
        while threads and len(server.received) < 2 + threads * 2 and time.monotonic() < bound:
            time.sleep(0.001)  # the threads are calling: the fork meets connections in use
        said, told = os.pipe()
        hear, say = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(said)
            os.close(say)
            outcome = child_part(client, loop, is_async, what)
            os.write(told, outcome.encode()[:500])
            os.read(hear, 1)  # until the parent has seen its connections close (or died)
            os._exit(0)
        os.close(told)
        os.close(hear)
        ready, _, _ = select.select([said], [], [], 20)
        child = os.read(said, 500).decode() if ready else "no report"
        try:
            parent_calls(PARENT_CALLS)
        except BaseException as exc:
            errors.append(repr(exc))
        for worker in workers:
            worker.join(20)
        if is_async:
            loop.run_until_complete(client.aclose())
            loop.close()
        else:
            client.close()
        still_open = server.wait_for_open_connections(0, 5)
        alive = os.waitpid(pid, os.WNOHANG)[0] == 0
        os.close(say)  # the child may exit now
        bound = time.monotonic() + 20
        while not os.waitpid(pid, os.WNOHANG)[0]:
            if time.monotonic() >= bound:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.01)
        os.close(said)
        parent = "ok" if not errors and not any(worker.is_alive() for worker in workers) else errors[:2]
        name = f"{pair} {scheme} threads={threads} child={what}"
        state = "alive" if alive else "gone"
        print(f"{name}: parent {parent} child {child} open {still_open} child {state}", flush=True)

for pair in pairs:
    children = ("idle", "keeps-loop", "new-loop") if pair.startswith("async") else ("idle", "calls")
    for scheme in ("http", "https"):
        for what in children:
            scenario(pair, scheme, 0, what)
    # Threads over plain HTTP only: a child forked while a parent thread is inside OpenSSL may wait for ever on its
    # lock (openssl/openssl#19066, tests/test_fork.py), which no code of the SDK's can prevent.
    for what in children[1:]:
        scenario(pair, "http", THREADS, what)
"""

REFUSED_AFTER_USE = frozenset({"pyreqwest"})
"""Libraries a child forked after its parent called through them cannot use (tests/test_fork.py says why)."""


LIBRARY_PAIRS = [
    on_library(library.name, ",".join(_pair(variant) for variant in ALL_VARIANTS if library_of(variant) == name))
    for library in LIBRARIES
    for name in (library.name,)
]
"""Each library's client/library pairs, run in one subprocess (``"sync,async"``, ``"sync-httpx2,async-httpx2"``)."""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.parametrize("pairs", LIBRARY_PAIRS)
def test_a_forked_child_never_disturbs_the_parent_and_the_parents_close_reaches_the_server(pairs: str) -> None:
    """On every pair of each library, forked with and without threads using the client, over HTTP and HTTPS,
    whatever the child does (nothing, or calls: on the inherited loop or a new one for an async client): the parent's
    calls all answer, and once it closes its client every connection is closed at the server while the child lives.
    Nothing is logged or warned."""
    backend = library_of(pairs.split(",", maxsplit=1)[0])
    result = subprocess.run(
        [sys.executable, "-c", FORKS, pairs, "refused" if backend in REFUSED_AFTER_USE else "usable", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    expected = {pair: 8 if pair.startswith("async") else 5 for pair in pairs.split(",")}
    assert {pair: sum(line.startswith(f"{pair} ") for line in lines) for pair in expected} == expected, result.stderr
    for line in lines:
        name, _, outcome = line.partition(": ")
        child = "refused" if backend in REFUSED_AFTER_USE and not name.endswith("child=idle") else "ok"
        assert outcome == f"parent ok child {child} open 0 child alive", line
    assert result.stderr == ""
