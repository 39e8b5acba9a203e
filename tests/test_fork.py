"""Fork safety: a client used before os.fork() never shares a pooled connection with the child.

Each scenario runs in a subprocess (forking the test process itself would copy
pytest's threads); the subprocess reaps its child within a bounded wait, and
the whole run has a timeout.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from animalstore_client._core.libraries import by_name, for_client

from .conftest import ALL_VARIANTS, PYREQWEST_VARIANTS, SYNC_VARIANTS, library_of, needs_pyreqwest, on_library, scaled
from .tls import ca_file, server_context

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")


class _Echo(BaseHTTPRequestHandler):
    """Answers GET /v1/pets?limit=k with one pet whose id is k, over keep-alive connections."""

    protocol_version = "HTTP/1.1"
    # Buffered, so headers and body leave in one write (else delayed ACKs cost 40 ms a call).
    wbufsize = -1

    def do_GET(self) -> None:
        limit = int(parse_qs(urlsplit(self.path).query).get("limit", ["0"])[0])
        body = json.dumps([{"id": limit, "name": f"pet-{limit}", "categoryId": 1}]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away (a child exiting, a handshake it ended) is no failure here; the
        # traceback socketserver prints from its thread can land after pytest stopped capturing.
        if not isinstance(sys.exc_info()[1], ConnectionError | ssl.SSLError):
            super().handle_error(request, client_address)


@pytest.fixture(params=["http", "https"])
def echo_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A keep-alive server on 127.0.0.1 that answers each list with the limit it was asked for, plain and over TLS.

    Over TLS the scripts trust the run's CA through SSL_CERT_FILE, which they inherit.
    """
    server = _QuietServer(("127.0.0.1", 0), _Echo)
    if request.param == "https":
        server.socket = server_context().wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
        monkeypatch.setenv("SSL_CERT_FILE", ca_file())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"{request.param}://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


# The end of a fork script: the parent reaps its child within 30 s (killing it if need be) and
# prints its own count of wrong answers and the child's exit status.
REAP = """
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.05)
else:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    status = -1
print("parent wrong:", wrong)
print("child exit:", os.waitstatus_to_exitcode(status) if status != -1 else "killed")
"""

# Parent and child each make 100 calls on the client warmed before the fork,
# and count answers meant for the other side. The parent reaps the child
# within 30 s (killing it if need be) and prints both counts.
SCRIPT = (
    """
import asyncio, importlib, os, signal, sys, time
import animalstore_client as a

url, variant, own = sys.argv[1], sys.argv[2], sys.argv[3] == "own"
backend = variant.split("-")[1] if "-" in variant else None
# The caller's client's class, as its library's declaration names it: "module:Class".
callers_class = None if own else sys.argv[3].split(":")

def sync_calls(client, offset):
    return sum(client.list_pets(limit=offset + i % 50)[0].id != offset + i % 50 for i in range(100))

async def async_calls(client, offset):
    wrong = 0
    for i in range(100):
        pets = await client.list_pets(limit=offset + i % 50)
        wrong += pets[0].id != offset + i % 50
    return wrong

def callers_client():
    module, name = callers_class
    return getattr(importlib.import_module(module), name)()

if variant.startswith("sync"):
    http = None if own else callers_client()
    client = a.AnimalStoreClient("k", base_url=url, http_client=http, backend=backend)
    client.list_pets(limit=1)
    run = lambda offset: sync_calls(client, offset)
else:
    # As a prefork server does it: the loop that warmed the client is gone
    # before the fork, and each process runs a loop of its own after it.
    client = a.AsyncAnimalStoreClient("k", base_url=url, backend=backend)
    asyncio.run(client.list_pets(limit=1))
    run = lambda offset: asyncio.run(async_calls(client, offset))

pid = os.fork()
if pid == 0:
    try:
        wrong = run(1)
    except a.AnimalStoreError as exc:
        print("child:", type(exc).__name__, exc, flush=True)
        print("child refused", flush=True)
        os._exit(100)
    os._exit(min(wrong, 99))
wrong = run(51)
"""
    + REAP
)


def _run(echo_url: str, variant: str, own: str) -> list[str]:
    """Run SCRIPT on ``variant``: its client's own pool (``own="own"``), or a caller's client (``"module:Class"``)."""
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, echo_url, variant, own],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


REFUSED_AFTER_USE = frozenset({"pyreqwest"})
"""The libraries a child forked after its parent called through them cannot use at all (pyreqwest's runtime:
test_pyreqwest_used_before_the_fork_refuses_in_the_child_and_never_hangs); one made but not called before the
fork works on both sides (test_a_pyreqwest_client_made_before_the_fork_works_on_both_sides). Every other
declared library is expected to serve both processes."""


@pytest.mark.parametrize(
    "variant", [variant for variant in ALL_VARIANTS if library_of(variant) not in REFUSED_AFTER_USE]
)
def test_parent_and_child_each_get_their_own_answers(echo_url: str, variant: str) -> None:
    """After a fork both processes call the warmed client 100 times and every answer is their own, on every
    declared library but those a child cannot use after the parent did (pyreqwest)."""
    assert _run(echo_url, variant, "own") == ["parent wrong: 0", "child exit: 0"]


@pytest.mark.parametrize(
    "variant",
    [variant for variant in SYNC_VARIANTS if not by_name(library_of(variant)).callers_clients_refused],
)
def test_a_caller_supplied_http_client_refuses_to_cross_a_fork(echo_url: str, variant: str) -> None:
    """With the caller's own client of each library that takes one (httpx.Client, httpx2.Client...; a
    pyreqwest one is refused outright) the child's first call raises AnimalStoreError at once; the parent goes on."""
    module, cls = by_name(library_of(variant)).client_classes["sync"]
    lines = _run(echo_url, variant, f"{module}:{cls}")
    assert lines[0].startswith("child: AnimalStoreError This AnimalStoreClient was created in another process")
    assert "create the client (and its http client) after the fork" in lines[0]
    assert lines[1:] == ["child refused", "parent wrong: 0", "child exit: 100"]


# 16 threads call one client without pause, and the main thread forks (40 times),
# each time once the threads have made 16 calls since the last child; each child
# makes one call of its own and exits. A lock inherited held (say, a watchdog's)
# would hang a child for ever: each is reaped within 20 s or killed and counted.
# The threads wait while a child runs: at the fork they are as deep in their
# calls as when they never paused, and a loaded machine's cores are not spent on
# calls no fork meets (a case took 6 to 8 CPU-s under the suite's load, now 3 to 5).
THREADED = """
import collections, faulthandler, os, signal, ssl, sys, tempfile, threading, time
import animalstore_client as a

url, backend, forks = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = a.AnimalStoreClient("k", base_url=url, backend=backend, total_timeout=30)
stop = threading.Event()
go = threading.Event()
calls = collections.deque()
errors = []
# Registered before any fork, so a child needs no code of its own for it: on SIGUSR1 it writes its stack here.
dump = tempfile.TemporaryFile()
faulthandler.register(signal.SIGUSR1, file=dump, all_threads=False)
openssl = f'File "{ssl.__file__}"'

def hammer():
    while go.wait() and not stop.is_set():
        try:
            client.list_pets(limit=7)
        except Exception as exc:
            errors.append(repr(exc))
        calls.append(None)

def where(pid):
    # Where a child that never answered waits: the kernel's wait channel (Linux) and its innermost Python frame.
    # A futex wait in the ssl module is a lock inside OpenSSL; without /proc nothing is told apart.
    try:
        with open(f"/proc/{pid}/wchan") as file:
            wchan = file.read()
    except OSError:
        wchan = "?"
    start = os.fstat(dump.fileno()).st_size
    os.kill(pid, signal.SIGUSR1)
    written = b""
    bound = time.monotonic() + 5
    while b"\\n" not in written.partition(b"File ")[2] and time.monotonic() < bound:
        time.sleep(0.05)
        written = os.pread(dump.fileno(), 1 << 16, start)
    lines = [line.strip() for line in written.decode(errors="replace").splitlines()]
    frames = [line for line in lines if line.startswith("File ")]
    return wchan, frames[0] if frames else "?"

threads = [threading.Thread(target=hammer) for _ in range(16)]
for thread in threads:
    thread.start()
hung = failed = refused = 0
in_openssl = []
hangs = []
try:
    for _ in range(forks):
        go.set()
        wanted, bound = len(calls) + 16, time.monotonic() + 2
        while len(calls) < wanted and time.monotonic() < bound:
            time.sleep(0.001)
        # Cleared before the fork, not after: a child must take no lock a parent thread may hold at the fork,
        # and a thread entering go.wait() holds the Event's (a child that cleared it hung on it, under load).
        # The threads in a call at the fork finish it; they wait at their next go.wait() while the child runs.
        go.clear()
        pid = os.fork()
        if pid == 0:
            try:
                code = 0 if client.list_pets(limit=3)[0].id == 3 else 1
            except a.AnimalStoreError as exc:
                code = 3 if "forked after pyreqwest had started" in str(exc) else 2
            except BaseException:
                code = 2
            os._exit(code)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                refused += code == 3
                failed += code not in (0, 3)
                break
            time.sleep(0.01)
        else:
            wchan, innermost = where(pid)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            if "futex" in wchan and innermost.startswith(openssl):
                in_openssl.append(innermost)
            else:
                hung += 1
                hangs.append((wchan, innermost))
finally:
    stop.set()  # else a failure above leaves the threads calling, and the script running until the test's timeout
    go.set()
for thread in threads:
    thread.join(timeout=30)
print("hung:", hung, "failed:", failed, "errors:", len(errors), errors[:3], hangs)
print("refused:", refused)
print("in OpenSSL:", len(in_openssl), in_openssl)
"""


SYNC_LIBRARIES = [on_library(library.name, library.name) for library in for_client("sync")]
"""Every library of the sync client, as ``backend=``, from the declarations."""


@pytest.mark.slow
@pytest.mark.parametrize("backend", SYNC_LIBRARIES)
def test_a_fork_while_threads_use_the_client_never_hangs_the_child(echo_url: str, backend: str) -> None:
    """40 forks (`scaled`: 10 in the everyday tier) while 16 threads call one client: every child answers its own
    call and exits; none hangs on the SDK.

    On pyreqwest (REFUSED_AFTER_USE) a child forked once the parent's threads had started its runtime is refused
    instead (AnimalStoreError, at once): none hangs, and none gets a wrong answer.

    Over HTTPS a child forked while a parent thread held one of OpenSSL's own locks (a handshake's fetch from its
    global method store) waits on it for ever: OpenSSL does not support a child of a threaded parent
    (openssl/openssl#19066), and docs/limits-and-safety.md says so. Such a child, found waiting on a futex in the
    ssl module (on Linux, which shows the wait in /proc), is counted apart; here about one fork in 9,000, so more
    than two of 40 would be ours. Elsewhere every hang fails.
    """
    result = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", THREADED, echo_url, backend, str(scaled(40, 10))],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    outcome, refusals, openssl = result.stdout.strip().splitlines()
    assert outcome == "hung: 0 failed: 0 errors: 0 [] []"
    if backend in REFUSED_AFTER_USE:
        # The threads start pyreqwest within milliseconds: the later children at least are refused.
        assert refusals != "refused: 0"
    else:
        assert refusals == "refused: 0"
    if echo_url.startswith("https:"):
        assert int(openssl.split()[2]) <= 2, openssl
    else:
        assert openssl == "in OpenSSL: 0 []"


FIRST_CALL = """
import sys, warnings
warnings.simplefilter("ignore", DeprecationWarning)
import animalstore_client as a

client = a.AnimalStoreClient("k", base_url=sys.argv[1], backend=sys.argv[2], total_timeout=10)
before = set(sys.modules)
assert client.list_pets(limit=1)[0].id == 1
print(sorted(set(sys.modules) - before))
"""


@pytest.mark.parametrize("backend", SYNC_LIBRARIES)
def test_a_sync_clients_first_call_imports_no_module(echo_url: str, backend: str) -> None:
    """A thread whose call first imports a module holds that module's import lock while it loads; a child forked
    then waits on it for ever (the threaded test above caught one, the idna codec that getaddrinfo looks up). So a
    sync client's first call, over HTTP and HTTPS, imports nothing: a deterministic check of what that test finds
    once in hundreds of runs."""
    result = subprocess.run(
        [sys.executable, "-c", FIRST_CALL, echo_url, backend], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


HELD = """
import os, sys, time
import animalstore_client as a

url, backend, table, called = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "called"
client = a.AnimalStoreClient("k", base_url=url, backend=backend, total_timeout=10)
transport = client._sender.pool.transport
if called:
    client.list_pets(limit=1)
tables = getattr(transport, table)
# As if another thread were inside the pool table at the fork: its lock is held, for ever in the child.
tables._lock.acquire()
pid = os.fork()
if pid == 0:
    try:
        os._exit(0 if client.list_pets(limit=3)[0].id == 3 else 1)
    except BaseException:
        os._exit(2)
tables._lock.release()
deadline = time.monotonic() + 15
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("exit", os.waitstatus_to_exitcode(status))
        break
    time.sleep(0.01)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print("hung")
"""


# The attribute of each library's sync transport whose ``_lock`` guards its pool table, where the SDK's own pool
# (``own_pools``) does not hold it as ``_pools``: a private detail of each transport, which no declaration says.
_POOL_TABLES = {"pyreqwest": "_settings"}


@pytest.mark.parametrize("echo_url", ["http"], indirect=True)
@pytest.mark.parametrize("backend", SYNC_LIBRARIES)
def test_a_pool_lock_held_at_the_fork_does_not_hang_the_child(echo_url: str, backend: str) -> None:
    """The child never waits on its parent's pool table (its lock may be held for ever there): it makes its own.

    On pyreqwest (REFUSED_AFTER_USE) the client is made but not called before the fork, the only way a child can
    use it: the lock is then the one guarding the library clients, taken on each call.
    """
    declared = by_name(backend)
    if "sync" in declared.own_pools:
        table = "_pools"
    else:
        assert backend in _POOL_TABLES, (
            f"{backend} is declared in _core/libraries.py but test_fork.py's _POOL_TABLES does not say which "
            "attribute of its sync transport holds its pool table's lock: add it"
        )
        table = _POOL_TABLES[backend]
    called = "not-called" if backend in REFUSED_AFTER_USE else "called"
    result = subprocess.run(
        [sys.executable, "-c", HELD, echo_url, backend, table, called],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "exit 0"


@pytest.mark.parametrize("variant", PYREQWEST_VARIANTS)
def test_pyreqwest_used_before_the_fork_refuses_in_the_child_and_never_hangs(echo_url: str, variant: str) -> None:
    """pyreqwest's runtime cannot be restarted in a forked child: after the parent called through it, the
    child's first call raises AnimalStoreError saying so and what to do (it never hangs: the run is bounded, and
    the child exits with the script's refusal code); the parent's 100 calls after the fork are all its own."""
    lines = _run(echo_url, variant, "own")
    expected = (
        'child: AnimalStoreError backend="pyreqwest" cannot be used in this process: it was forked after '
        "pyreqwest had started"
    )
    assert lines[0].startswith(expected), lines
    assert "start workers with the 'spawn' method" in lines[0]
    assert lines[1:] == ["child refused", "parent wrong: 0", "child exit: 100"]


# Clients made (never used) before the fork, as a prefork server or a fork pool with an initializer
# makes them: the library client is built on the first call, so each process builds its own.
MADE_BEFORE = (
    """
import asyncio, os, signal, sys, time
import animalstore_client as a

url, kind = sys.argv[1], sys.argv[2]
if kind == "sync":
    client = a.AnimalStoreClient("k", base_url=url, backend="pyreqwest")
    run = lambda offset: sum(client.list_pets(limit=offset + i % 50)[0].id != offset + i % 50 for i in range(100))
else:
    client = a.AsyncAnimalStoreClient("k", base_url=url, backend="pyreqwest")

    async def calls(offset):
        wrong = 0
        for i in range(100):
            wrong += (await client.list_pets(limit=offset + i % 50))[0].id != offset + i % 50
        return wrong

    run = lambda offset: asyncio.run(calls(offset))
pid = os.fork()
if pid == 0:
    try:
        os._exit(min(run(1), 99))
    except BaseException as exc:
        print("child:", repr(exc), flush=True)
        os._exit(100)
# Both processes start pyreqwest after the fork, each its own, and call at the same time.
wrong = run(51)
"""
    + REAP
)


@needs_pyreqwest
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_pyreqwest_client_made_before_the_fork_works_on_both_sides(echo_url: str, kind: str) -> None:
    """A pyreqwest client created but not yet used before a fork serves the child and the parent at the same
    time, 100 calls each, every answer its own (each process builds its own library client and pool)."""
    result = subprocess.run(
        [sys.executable, "-c", MADE_BEFORE, echo_url, kind], capture_output=True, text=True, timeout=90, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["parent wrong: 0", "child exit: 0"]


# The child keeps the event loop it inherited (a worker forked from inside a running application): a
# lookup on the loop's default thread pool would wait for a thread that stayed in the parent.
KEPT_LOOP = (
    """
import asyncio, os, signal, sys, time
import animalstore_client as a

url = sys.argv[1]
loop = asyncio.new_event_loop()
client = a.AsyncAnimalStoreClient("k", base_url=url)
loop.run_until_complete(client.list_pets(limit=1))

pid = os.fork()
if pid == 0:
    try:
        pets = loop.run_until_complete(asyncio.wait_for(client.list_pets(limit=2), 5))
    except BaseException as exc:
        print("child:", type(exc).__name__, exc, flush=True)
        os._exit(1)
    os._exit(0 if pets[0].id == 2 else 2)
# Bounded: the child's copy of the loop shares the parent's selector, and must not read the parent's answer.
wrong = loop.run_until_complete(asyncio.wait_for(client.list_pets(limit=3), 5))[0].id != 3
"""
    + REAP
)


def _kept_loop(url: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", KEPT_LOOP, url], capture_output=True, text=True, timeout=90, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["parent wrong: False", "child exit: 0"], result.stdout


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_child_keeping_the_inherited_event_loop_calls_at_once(echo_url: str, host: str) -> None:
    """A child forked with the parent's asyncio loop calls at once (an IP literal, localhost); the parent too."""
    _kept_loop(echo_url.replace("127.0.0.1", host))


def test_a_child_keeping_the_inherited_event_loop_looks_a_name_up_at_once() -> None:
    """A child forked with the parent's asyncio loop looks up a host name (this machine's) at once."""
    name = socket.gethostname()
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)}
    except OSError:
        addresses = set()
    if "127.0.0.1" not in addresses:
        pytest.skip(f"this machine's name {name!r} does not resolve to 127.0.0.1, where the test server listens")
    server = _QuietServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        _kept_loop(f"http://{name}:{server.server_address[1]}/v1")
    finally:
        server.shutdown()
        server.server_close()


ABANDON_THEN_FORK = """
import os, sys, threading
from animalstore_client._clients import shells

started, release, done = threading.Event(), threading.Event(), []

class EndedLoopsTransport:
    def abandon(self):  # closes sockets, then lets go of transports: a fork must not land in between
        started.set()
        release.wait(10)
        done.append(True)

thread = threading.Thread(target=shells._abandon, args=(EndedLoopsTransport(),))
thread.start()
assert started.wait(10)
# Registered after the SDK's hook, so it runs before it: the abandon goes on only once the fork has begun.
os.register_at_fork(before=release.set)
pid = os.fork()
if pid == 0:
    os._exit(0 if done else 1)
thread.join(10)
print("child saw the abandon finished:", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
def test_a_fork_waits_for_another_threads_abandoning_of_an_ended_loops_connections() -> None:
    """A fork while another thread abandons an ended event loop's connections (sockets closed, then transports let
    go of) waits until it ends: forked half-way, a child would hold transports over sockets closed already."""
    result = subprocess.run(
        [sys.executable, "-c", ABANDON_THEN_FORK], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "child saw the abandon finished: True", result.stdout + result.stderr
