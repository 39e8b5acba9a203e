"""A passed deadline is a timeout, never a truncated success, whatever the framing; interim answers never shift.

Each server answers with headers (or status lines) that promise more than it
sends in time: a close-delimited body, an invalid ``Content-Length: -1``,
chunked trailers that never end, headers trickled a line at a time. The call
must end at ``total_timeout`` with `APITimeoutError` on every client and
library. A ``103 Early Hints`` before the answer must not make the real
answer arrive for the next call.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from animalstore_client import APIConnectionError, APITimeoutError

from .conftest import ClientFactory
from .servers import Action, LoopbackServer, respond
from .test_limits import _send_slowly
from .timing import OVERSHOOT, Stopwatch

PET = b'{"id": 1, "name": "Rex", "categoryId": 1}'


def _then_trickle(head: bytes, pieces: Iterator[bytes]) -> Action:
    """Send ``head``, then a piece every 50 ms (at most 200) while the client listens."""
    return _send_slowly(head, pieces, 0.05)


def _forever(piece: bytes) -> Iterator[bytes]:
    while True:
        yield piece


CASES = {
    # No Content-Length, no chunking: the body ends when the server closes, which it never does in time.
    "close-delimited": _then_trickle(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n[", _forever(b" ")
    ),
    "content-length-minus-one": _then_trickle(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: -1\r\n\r\n[", _forever(b" ")
    ),
    "endless-chunked-trailers": _then_trickle(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n",
        _forever(b"X-Trailer: more\r\n"),
    ),
    "trickled-headers": _then_trickle(b"HTTP/1.1 200 OK\r\n", _forever(b"X-Slow: header\r\n")),
}


@pytest.mark.parametrize("case", CASES)
def test_a_passed_deadline_is_never_a_truncated_success(make_client: ClientFactory, case: str) -> None:
    """Whatever the framing, the call ends by total_timeout with an error, on every client and library."""
    with LoopbackServer([CASES[case]]) as server:
        client = make_client(base_url=server.base_url, total_timeout=0.5, max_retries=0)
        # A negative length is refused outright by httpx and aiohttp (a protocol error); http.client
        # reads it as close-delimited, which then times out. Either way: no success.
        expected = APIConnectionError if case == "content-length-minus-one" else APITimeoutError
        with Stopwatch() as watch, pytest.raises(expected):
            client.list_pets()
        watch.assert_within(0.5 + OVERSHOOT)


def _early_hints_then(body: bytes) -> Action:
    def action(conn: socket.socket) -> bool:
        conn.sendall(
            b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        return True

    return action


def test_early_hints_never_shift_an_answer_to_the_next_call(make_client: ClientFactory) -> None:
    """After a 103 Early Hints each call gets its own answer: the first [pet 1], the second [pet 2]."""
    second = PET.replace(b'"id": 1', b'"id": 2')
    with LoopbackServer([_early_hints_then(b"[" + PET + b"]"), respond(200, b"[" + second + b"]")]) as server:
        client = make_client(base_url=server.base_url, max_retries=0)
        assert [pet.id for pet in client.list_pets()] == [1]
        assert [pet.id for pet in client.list_pets()] == [2]
