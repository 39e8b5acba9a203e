"""A server's early answer to a large upload reaches the caller on every client/library pair (``ALL_VARIANTS``).

A server may answer (401, 413) as soon as it has read a request's head, and
close or reset the connection while the body is still being written. httpcore
reads that answer when a write fails; the SDK's asyncio network backend once
let writing wait out the write timeout (or for ever, with no timeout) after a
reset, and raised asyncio's own ``AttributeError`` after a close. The rule
(anyio's behaviour, and every other library's): after a close, the answer;
after a reset, the answer or a connection error, never a timeout, never a
hang, and the request is sent once.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Generator
from typing import Any

import pytest

from animalstore_client import APIConnectionError, AuthenticationError

from .conftest import ALL_VARIANTS, ClientFactory
from .timing import Stopwatch

BOUND = 10.0
"""Seconds after which a call is taken to hang."""
EARLY = 1.0
"""Seconds within which an early answer ends the call (issue 38's bound), plus what load took from the process
meanwhile (a reference timer's lateness: tests/timing.py)."""
UPLOAD = {"blob": "x" * (8 * 1024 * 1024)}
"""A JSON body of 8 MiB: more than socket buffers hold (4 MiB at most by default): the answer comes mid-upload."""
ANSWER = b'{"code": "unauthorized", "message": "bad key", "status": 401}'
HEAD = (
    b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nConnection: close\r\n"
    b"Content-Length: " + str(len(ANSWER)).encode() + b"\r\n\r\n" + ANSWER
)


@contextlib.contextmanager
def _early_answer(ending: str) -> Generator[tuple[str, list[bytes], list[bool]]]:
    """A server on 127.0.0.1 that answers 401 after each request's head, then ``ending``: "close" or "reset".

    "close" shuts its sending side and drains the rest of the upload for a
    while (closing with unread bytes would be a reset); "reset" sets
    SO_LINGER 0 and closes at once. Yields the base URL, the heads received,
    and a list that grows as each connection ends.
    """
    listener = socket.socket()
    # A small receive window (inherited by each connection): the client's writes block mid-upload.
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    heads: list[bytes] = []
    stop = threading.Event()
    ended: list[bool] = []

    def serve(conn: socket.socket) -> None:
        try:
            _answer_early(conn, ending, heads)
        finally:
            ended.append(True)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", heads, ended
    finally:
        stop.set()
        thread.join(BOUND)
        listener.close()


def _answer_early(conn: socket.socket, ending: str, heads: list[bytes]) -> None:
    """Read one request's head, answer 401, then close (draining the upload a while) or reset."""
    conn.settimeout(BOUND)
    with conn:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        heads.append(data.split(b"\r\n\r\n", 1)[0])
        time.sleep(0.2)  # the client is now waiting for its writes to drain
        conn.sendall(HEAD)
        if ending == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        conn.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + 3
        with contextlib.suppress(OSError):
            while time.monotonic() < deadline and conn.recv(65536):
                pass


def _bounded(call: Any) -> tuple[object, Stopwatch]:
    """Run ``call`` on a thread for at most `BOUND` seconds; its exception (or result) and how long it took."""
    outcome: list[object] = []
    watch = Stopwatch()

    def run() -> None:
        with watch:
            try:
                outcome.append(call())
            except BaseException as exc:  # the outcome under test
                outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), f"the call did not end within {BOUND} s"
    return outcome[0], watch


# aiohttp warns (ResourceWarning) of any body over 1 MiB given as bytes, which this suite's
# filterwarnings=error would turn into the call's failure; the warning is aiohttp's advice, not this rule.
@pytest.mark.filterwarnings("ignore:Sending a large body directly:ResourceWarning")
@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
@pytest.mark.parametrize("ending", ["close", "reset"])
@pytest.mark.parametrize("timeouts", ["set", "none"])
def test_an_early_answer_to_a_large_upload_is_the_calls_outcome(
    make_client: ClientFactory, ending: str, timeouts: str
) -> None:
    """401 then close gives AuthenticationError, 401 then reset that or a connection error; sent once, no hang."""
    with _early_answer(ending) as (base_url, heads, ended):
        limits: dict[str, Any] = (
            {"timeout": 30.0, "total_timeout": 60.0} if timeouts == "set" else {"timeout": None, "total_timeout": None}
        )
        client = make_client(base_url=base_url, max_retries=2, **limits)
        outcome, watch = _bounded(lambda: client.request("POST", "/pets", json=UPLOAD))
        client.close()
        idle = getattr(client, "idle", None)
        for _ in range(50):  # an async client's loop runs only in calls here: let closing connections finish
            if len(ended) >= len(heads) or idle is None:
                break
            idle(0.05)
    allowed: tuple[type[BaseException], ...] = (
        (AuthenticationError,) if ending == "close" else (AuthenticationError, APIConnectionError)
    )
    assert isinstance(outcome, allowed), f"{outcome!r} from {getattr(outcome, '__cause__', None)!r}"
    assert type(outcome).__name__ != "APITimeoutError", repr(outcome)
    assert len(heads) == 1, f"the POST was sent {len(heads)} times"
    watch.assert_within(EARLY)
