"""What the pyreqwest backend relies on in the library, pinned, and what it does that the others do not.

The behaviour suite runs over pyreqwest with every other library (``ALL_VARIANTS``);
these tests pin the library's behaviour the transport is built on: the cause
chain that tells "nothing was sent" apart (and what the SDK does with it), the
Python it needs, the install advice, and what it cannot hand over (non-UTF-8
header values, the reason phrase). Its refusal to run in a forked child is in
``tests/test_fork.py``; a many-certificate CA bundle is in ``tests/test_tls.py``,
and the refusal of a caller's pyreqwest client in ``tests/test_callers_clients.py``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from typing import Any

import httpx
import pytest

from animalstore_client import (
    AnimalStoreClient,
    AnimalStoreError,
    APIConnectionError,
    APITimeoutError,
    AsyncAnimalStoreClient,
)
from animalstore_client._clients.backends import require

from .conftest import API_KEY, ClientFactory, needs_pyreqwest, scaled
from .servers import LoopbackServer, refused_url, respond
from .timing import OVERSHOOT, Stopwatch


def _closes_after_reading(conn: socket.socket) -> bool:
    """Close without a word once the request was read (the server reads it before calling an action): the
    request was sent and may have been acted on."""
    return False


def _causes(exc: BaseException) -> list[str]:
    details: Any = getattr(exc, "details", {})
    return [cause["message"] for cause in details.get("causes") or []]


def test_a_missing_pyreqwest_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pyreqwest, the error gives the exact requirement to install."""
    monkeypatch.setitem(sys.modules, "pyreqwest", None)  # as if not installed: importing it fails
    with pytest.raises(AnimalStoreError) as caught:
        require("pyreqwest")
    assert str(caught.value) == (
        'backend="pyreqwest" needs the pyreqwest library, which is not installed: '
        'pip install "pyreqwest>=0.15" (what the [pyreqwest] extra installs)'
    )
    assert caught.value.__cause__ is None  # no ImportError chained onto the advice


@needs_pyreqwest
def test_the_cause_that_means_nothing_was_sent_is_still_worded_so() -> None:
    """pyreqwest's refused connection carries reqwest's connector cause; a connection closed after the
    request was written does not, though pyreqwest calls both ConnectError (the SDK reads the cause)."""
    from pyreqwest import exceptions as errors
    from pyreqwest.client import SyncClientBuilder

    from animalstore_client._transports.pyreqwest import CONNECT_CAUSE

    client = SyncClientBuilder().build()
    with pytest.raises(errors.ConnectError) as refused:
        client.get(f"{refused_url()}/pets").build().send()
    assert CONNECT_CAUSE in _causes(refused.value)
    with LoopbackServer([_closes_after_reading]) as server:
        with pytest.raises(errors.ConnectError) as closed:  # the same class: what makes the cause necessary
            client.post(f"{server.base_url}/pets").body_bytes(b"{}").build().send()
        assert CONNECT_CAUSE not in _causes(closed.value)
        assert [request.method for request in server.wait_for_received(1)] == ["POST"]  # it had been sent
    client.close()


@needs_pyreqwest
def test_a_name_that_does_not_resolve_is_still_worded_so() -> None:
    """reqwest's failure to resolve a host name carries the cause "dns error", which the transport reports as a
    socket.gaierror (with the library's exception as its cause): the placeholder rule looks for that."""
    from pyreqwest import exceptions as errors
    from pyreqwest.client import SyncClientBuilder

    from animalstore_client._transports.pyreqwest import CONNECT_CAUSE, DNS_CAUSE, _translated

    client = SyncClientBuilder().build()
    url = "https://pets.name-that-does-not-resolve.invalid/v1/pets"
    with pytest.raises(errors.ConnectError) as unresolved:
        client.get(url).build().send()
    client.close()
    assert CONNECT_CAUSE in _causes(unresolved.value)
    assert DNS_CAUSE in _causes(unresolved.value)
    failure = _translated(unresolved.value, httpx.Request("GET", url), None)
    assert type(failure) is httpx.ConnectError
    assert isinstance(failure.__cause__, socket.gaierror)
    assert failure.__cause__.__cause__ is unresolved.value
    assert "://" not in str(failure.__cause__)


@needs_pyreqwest
@pytest.mark.parametrize("limit", ["request", "read"])
def test_an_unanswered_request_is_a_connect_timeout_without_the_connect_cause(limit: str) -> None:
    """A server that reads the request and never answers: pyreqwest raises ConnectTimeoutError (under either the
    request's total timeout or the client's read timeout) without reqwest's connector cause, so the SDK counts it
    as sent."""
    from pyreqwest import exceptions as errors
    from pyreqwest.client import SyncClientBuilder

    from animalstore_client._transports.pyreqwest import CONNECT_CAUSE

    builder = SyncClientBuilder()
    if limit == "read":
        builder.read_timeout(timedelta(seconds=0.3))
    client = builder.build()
    with LoopbackServer() as server:
        server.script = [server.hang()]
        request = client.post(f"{server.base_url}/pets").body_bytes(b"{}")
        if limit == "request":
            request.timeout(timedelta(seconds=0.3))
        with Stopwatch() as watch, pytest.raises(errors.ConnectTimeoutError) as caught:
            request.build().send()
        watch.assert_within(0.3 + OVERSHOOT)
        assert CONNECT_CAUSE not in _causes(caught.value)
        assert [request.method for request in server.wait_for_received(1)] == ["POST"]
    client.close()


@pytest.mark.parametrize("variant", ["sync-pyreqwest", "async-pyreqwest"], indirect=True)
@needs_pyreqwest
def test_a_post_whose_connection_closed_after_sending_is_not_repeated(make_client: ClientFactory) -> None:
    """create_pet against a server that reads it and hangs up: one attempt (it may have been stored); a list
    against the same server is retried."""
    with LoopbackServer([_closes_after_reading]) as server:
        client = make_client(base_url=server.base_url, max_retries=2)
        with pytest.raises(APIConnectionError) as create:
            client.create_pet(name="Rex", category_id=1)
        assert create.value.attempts == 1
        assert [r.method for r in server.received] == ["POST"]
        with pytest.raises(APIConnectionError) as listing:
            client.list_pets()
        assert listing.value.attempts == 3


@pytest.mark.parametrize("variant", ["sync-pyreqwest", "async-pyreqwest"], indirect=True)
@needs_pyreqwest
def test_a_post_left_unanswered_times_out_once(make_client: ClientFactory) -> None:
    """A server that never answers: pyreqwest says ConnectTimeoutError, yet the request was sent, so
    create_pet makes one attempt and raises APITimeoutError."""
    with LoopbackServer() as server:
        server.script = [server.hang()]
        client = make_client(base_url=server.base_url, timeout=0.3, max_retries=2)
        with Stopwatch() as watch, pytest.raises(APITimeoutError) as caught:
            client.create_pet(name="Rex", category_id=1)
        watch.assert_within(0.3 + OVERSHOOT)
        assert caught.value.attempts == 1
        assert "ReadTimeout" in str(caught.value)
        assert [request.method for request in server.wait_for_received(1)] == ["POST"]


@pytest.mark.parametrize("variant", ["sync-pyreqwest", "async-pyreqwest"], indirect=True)
@needs_pyreqwest
def test_a_refused_connection_is_retried_even_for_a_post(make_client: ClientFactory) -> None:
    """Nothing was sent when the connection is refused: create_pet is retried, as on every library."""
    client = make_client(base_url=refused_url(), max_retries=2)
    with pytest.raises(APIConnectionError) as caught:
        client.create_pet(name="Rex", category_id=1)
    assert caught.value.attempts == 3


@pytest.mark.parametrize("variant", ["sync-pyreqwest", "async-pyreqwest"], indirect=True)
@needs_pyreqwest
def test_a_header_pyreqwest_cannot_read_is_left_out_and_the_call_succeeds(
    make_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A Latin-1 (not UTF-8) header value: pyreqwest cannot hand it over, so it is left out (logged at DEBUG)
    and the other headers and the body are kept."""

    def latin1(conn: socket.socket) -> bool:
        body = b"[]"
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Place: caf\xe9\r\nX-Other: kept\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        return True

    caplog.set_level("DEBUG", logger="animalstore_client")
    with LoopbackServer([latin1]) as server:
        client = make_client(base_url=server.base_url)
        raw = client.with_raw_response.list_pets()
        assert raw.parse() == []
        assert raw.headers["x-other"] == "kept"
        assert "x-place" not in raw.headers
    assert any("x-place" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("variant", ["sync-pyreqwest", "async-pyreqwest"], indirect=True)
@needs_pyreqwest
def test_the_reason_phrase_is_the_standard_one(make_client: ClientFactory) -> None:
    """pyreqwest does not hand over the server's reason phrase: the response carries the standard one."""
    with LoopbackServer([respond(201, {"id": 1, "name": "Rex", "categoryId": 1})]) as server:
        raw = make_client(base_url=server.base_url).with_raw_response.create_pet(name="Rex", category_id=1)
        assert (raw.status_code, raw.http_response.reason_phrase) == (201, "Created")


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def releases(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, _Clock, list[object]]:
    """The transport's exit-time release on a hand-moved clock, its exit hook collected instead of registered."""
    from animalstore_client._transports import pyreqwest as module

    clock, registered = _Clock(), list[object]()
    own = module._Releases(clock, register=registered.append)
    monkeypatch.setattr(module, "_releases", own)
    return own, clock, registered


def _library_clients(client: AnimalStoreClient | AsyncAnimalStoreClient) -> list[Any]:
    return list(client._sender.pool.transport._settings._clients.values())


@needs_pyreqwest
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_at_exit_the_sdk_closes_the_pyreqwest_clients_it_holds_and_waits_the_grace(
    releases: tuple[Any, _Clock, list[object]], kind: str
) -> None:
    """pyreqwest's runtime thread calls into Python just after a library client goes: at exit (before the
    interpreter finalizes) the SDK closes what it holds and waits `_EXIT_GRACE` from then; the hook is
    registered once, on the first library client."""
    from animalstore_client._transports.pyreqwest import _EXIT_GRACE

    own, clock, registered = releases
    with LoopbackServer([respond(200, []), respond(200, []), respond(200, [])]) as server:
        if kind == "sync":
            client: Any = AnimalStoreClient(API_KEY, base_url=server.base_url, backend="pyreqwest")
            client.list_pets()
            client.list_pets()
        else:
            client = AsyncAnimalStoreClient(API_KEY, base_url=server.base_url, backend="pyreqwest")

            async def calls() -> None:
                await client.list_pets()
                await client.list_pets()

            asyncio.run(calls())
        assert registered == [own.at_exit]
        assert len(_library_clients(client)) == 1
        assert not client.is_closed
        clock.now += 5
        slept: list[float] = []
        own.at_exit(sleep=slept.append)
        assert _library_clients(client) == []
        assert slept == [pytest.approx(_EXIT_GRACE)]
        # A call from an exit handler that runs after this one still works, on a new library client.
        assert not client.is_closed
        if kind == "sync":
            assert client.list_pets() == []
        else:
            assert asyncio.run(client.list_pets()) == []
        assert len(_library_clients(client)) == 1
        own.at_exit(sleep=slept.append)  # the late call's library client goes too: a full grace again
        assert len(slept) == 2
        assert slept[1] == pytest.approx(_EXIT_GRACE)


@needs_pyreqwest
def test_clients_let_go_before_exit_shorten_or_skip_the_wait(releases: tuple[Any, _Clock, list[object]]) -> None:
    """A client closed 70 ms before exit leaves 30 ms to wait; one closed a second before, none; one that
    was collected unclosed counts from its collection."""
    own, clock, _ = releases
    slept: list[float] = []
    with LoopbackServer([respond(200, []), respond(200, [])]) as server:
        closed = AnimalStoreClient(API_KEY, base_url=server.base_url, backend="pyreqwest")
        closed.list_pets()
        closed.close()
        clock.now += 0.07
        own.at_exit(sleep=slept.append)
        assert slept == [pytest.approx(0.03)]
        clock.now += 1
        own.at_exit(sleep=slept.append)
        assert len(slept) == 1

        dropped = AnimalStoreClient(API_KEY, base_url=server.base_url, backend="pyreqwest")
        dropped.list_pets()
        clock.now += 1
        del dropped
        gc.collect()
        clock.now += 0.02
        own.at_exit(sleep=slept.append)
        assert slept[1:] == [pytest.approx(0.08)]


@needs_pyreqwest
def test_a_forked_child_leaves_the_inherited_clients_alone_at_exit(
    releases: tuple[Any, _Clock, list[object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child forked after its parent started pyreqwest runs the parent's exit hook too: it must neither call
    pyreqwest (it could hang there) nor wait."""
    from animalstore_client._transports import pyreqwest as module

    own, _, _ = releases
    with LoopbackServer([respond(200, [])]) as server:
        client = AnimalStoreClient(API_KEY, base_url=server.base_url, backend="pyreqwest")
        client.list_pets()
        monkeypatch.setattr(module, "_started_in", os.getpid() + 1)  # as the child sees its parent's pid
        slept: list[float] = []
        own.at_exit(sleep=slept.append)
        assert not client.is_closed
        assert len(_library_clients(client)) == 1
        assert slept == []
        client.close()


# A short script on the async client: 100 calls, then the interpreter exits with the client left open
# ("open") or closed just before ("close").
SHORT_SCRIPT = """
import asyncio, sys
import animalstore_client as a

async def main():
    client = a.AsyncAnimalStoreClient("k", base_url=sys.argv[1], backend="pyreqwest")
    for i in range(100):
        assert (await client.list_pets(limit=1 + i % 50))[0].id == 1 + i % 50
    if sys.argv[2] == "close":
        await client.aclose()
    return client

kept = asyncio.run(main())
print("ok")
"""

# Put before SHORT_SCRIPT: one interpreter imports what a run imports (the SDK, asyncio, pyreqwest) once, starting
# no thread and no pyreqwest runtime, and forks a child per run, four at a time. _fork_runs returns only in a child,
# which then runs SHORT_SCRIPT as a plain script does and falls off its end into the interpreter's finalization
# (exit hooks, threads' shutdown, Py_FinalizeEx), where the aborts happened; SIGALRM ends a child stuck for 60 s.
# gc.freeze(): the children's collections then leave the inherited objects alone, as a fresh interpreter has none;
# each child copying the pages they sit on cost it another 0.2 CPU-s.
# The parent prints each run's mode, exit status (minus the signal's number: -6 for an abort), stdout and stderr
# as JSON.
FORKING_RUNNER = """
import gc, json, os, signal, sys, tempfile, threading
import asyncio
import animalstore_client
import animalstore_client._transports.pyreqwest_async

def _fork_runs(modes, lanes):
    tasks = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
    if (threading.active_count(), tasks) != (1, 1):
        sys.exit(f"not forking with other threads running: {threading.active_count()} Python's, {tasks} in all")
    gc.freeze()
    folder = tempfile.mkdtemp()
    pending = list(enumerate(modes))
    running = {}
    runs = []
    while pending or running:
        while pending and len(running) < lanes:
            index, mode = pending.pop(0)
            paths = [os.path.join(folder, f"{index}.{stream}") for stream in ("out", "err")]
            files = [os.open(path, os.O_WRONLY | os.O_CREAT, 0o600) for path in paths]
            pid = os.fork()
            if pid == 0:
                for stream, file in enumerate(files, start=1):
                    os.dup2(file, stream)
                    os.close(file)
                signal.alarm(60)
                sys.argv[1:] = [sys.argv[1], mode]
                return
            for file in files:
                os.close(file)
            running[pid] = (mode, paths)
        pid, status = os.wait()
        mode, paths = running.pop(pid)
        outputs = []
        for path in paths:
            with open(path, encoding="utf-8", errors="replace") as file:
                outputs.append(file.read())
            os.remove(path)
        runs.append((mode, os.waitstatus_to_exitcode(status), *outputs))
    os.rmdir(folder)
    print(json.dumps(runs))
    sys.exit(0)

_fork_runs(["open", "close"] * int(sys.argv.pop(2)), 4)
"""

BURNER = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end:\n    pass\n"


@pytest.mark.slow
@needs_pyreqwest
@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
def test_short_scripts_on_the_async_client_exit_cleanly_on_a_busy_machine() -> None:
    """40 short scripts on the async client (`scaled`: 8 in the everyday tier), four at a time beside busy cores,
    all exit 0: without the exit hook some abort at exit ("PyGILState_Release: thread state ... must be current");
    running four at a time loads the cores further, and takes a quarter of the time one at a time took.

    Each run is a child forked from one interpreter that imported the SDK, asyncio and pyreqwest and started none
    of their threads; it runs the script and ends through the interpreter's normal finalization as the script
    would (FORKING_RUNNER), which saves each run the 0.55 CPU-s of imports. With the hook disabled, 24 of 760
    forked runs aborted (3.2 %: this test then fails about three times in four) against 5 of 720 fresh
    interpreters (0.7 %), beside two burners on a loaded machine; 6-13 % of fresh ones did when the hook came.

    The cores are kept busy by a burner each, less one for each other pytest-xdist worker of this run: the
    suite's own workers (four on two cores) already keep them so, and burners beside them only took CPU from
    the rest of the suite.
    """
    from .test_fork import _Echo, _QuietServer

    server = _QuietServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    other_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) - 1
    burners = [subprocess.Popen([sys.executable, "-c", BURNER]) for _ in range(max(0, 2 - other_workers))]
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        pairs = scaled(20, least=4)  # an "open" and a "close" run each; four of each keep the four lanes full
        result = subprocess.run(
            [sys.executable, "-c", FORKING_RUNNER + SHORT_SCRIPT, url, str(pairs)],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        runs = json.loads(result.stdout)
        assert len(runs) == 2 * pairs
        failed = [(mode, code, err[-300:]) for mode, code, out, err in runs if (code, out) != (0, "ok\n")]
        assert failed == []
    finally:
        for burner in burners:
            burner.kill()
            burner.wait(timeout=10)
        server.shutdown()
        server.server_close()
