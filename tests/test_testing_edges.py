"""The fake store answers everything: odd framing, huge or deep input, slow or silent clients.

Raw sockets on 127.0.0.1 send what httpx never would. Every read is bounded
by a socket timeout, so no test can hang.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from animalstore_client.testing import FAKE_BASE_URL, FakeAnimalStore, FakeTransport
from animalstore_client.testing import _server as server_module

from .timing import Stopwatch

KEY = "test-key"
NEW_PET = b'{"name":"Rex","categoryId":1}'


@pytest.fixture
def store() -> FakeAnimalStore:
    """An empty store with one key."""
    return FakeAnimalStore(api_keys=[KEY])


@pytest.fixture
def address(store: FakeAnimalStore) -> Iterator[tuple[str, int]]:
    """The (host, port) of the store's HTTP server."""
    with store.serve() as base_url:
        url = urlsplit(base_url)
        assert url.hostname is not None
        assert url.port is not None
        yield url.hostname, url.port


def _head(method: str, target: str, *extra: str) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {KEY}", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _exchange(address: tuple[str, int], data: bytes, *, wait: float = 5.0) -> bytes:
    """Send ``data``, then read until the server closes or goes quiet."""
    with socket.create_connection(address, timeout=wait) as sock:
        # The server may close before reading everything; its answer is what matters.
        with contextlib.suppress(OSError):
            sock.sendall(data)
        received = b""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            received += chunk
            sock.settimeout(0.3)  # after the first bytes, a short quiet spell ends the answer
        return received


def _answers(raw: bytes) -> list[tuple[int, dict[str, object]]]:
    """Every (status, JSON body) in a stream of HTTP/1.1 responses."""
    answers: list[tuple[int, dict[str, object]]] = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        answers.append((int(lines[0].split()[1]), json.loads(rest[:length]) if length else {}))
        raw = rest[length:]
    return answers


def test_a_chunked_post_is_read_as_its_body(address: tuple[str, int], store: FakeAnimalStore) -> None:
    """A chunked POST stores one pet, and the next request on the connection is answered in step."""
    chunked = (
        b"5\r\n" + NEW_PET[:5] + b"\r\n" + f"{len(NEW_PET) - 5:x}".encode() + b"\r\n" + NEW_PET[5:] + b"\r\n0\r\n\r\n"
    )
    post = _head("POST", "/v1/pets", "Content-Type: application/json", "Transfer-Encoding: chunked") + chunked
    answers = _answers(_exchange(address, post + _head("GET", "/v1/pets")))
    assert [status for status, _ in answers] == [201, 200]
    assert answers[0][1]["name"] == "Rex"
    assert len(store.pets) == 1


@pytest.mark.parametrize(
    ("framing", "code"),
    [
        ("Content-Length: abc", "invalid_content_length"),
        ("Content-Length: -1", "invalid_content_length"),
        ("Content-Length: 99999999999999999999999", "invalid_content_length"),
        ("Content-Length: 5\r\nContent-Length: 6", "invalid_content_length"),
        ("Content-Length: 5\r\nTransfer-Encoding: chunked", "invalid_framing"),
        ("Transfer-Encoding: gzip, chunked", "invalid_framing"),
        ("Content-Length: 100000000", "payload_too_large"),
    ],
)
def test_bad_framing_gets_an_error_body_and_a_closed_connection(
    address: tuple[str, int], store: FakeAnimalStore, framing: str, code: str
) -> None:
    """Each bad framing is a 4xx Error body; the connection closes, so trailing bytes are never a request."""
    request = _head("POST", "/v1/pets", "Content-Type: application/json", framing) + NEW_PET
    with Stopwatch() as watch:
        answers = _answers(_exchange(address, request + _head("GET", "/v1/pets")))
    watch.assert_within(4)  # answered, not parked until a timeout
    assert len(answers) == 1
    status, body = answers[0]
    assert 400 <= status < 500
    assert body["code"] == code
    assert store.pets == []


def test_a_bad_chunk_size_gets_an_error_body(address: tuple[str, int], store: FakeAnimalStore) -> None:
    """A chunk size that is not hexadecimal is a 400 Error body."""
    request = _head("POST", "/v1/pets", "Content-Type: application/json", "Transfer-Encoding: chunked") + b"zz\r\n"
    assert [(status, body["code"]) for status, body in _answers(_exchange(address, request))] == [
        (400, "invalid_chunk")
    ]
    assert store.pets == []


def test_a_header_section_too_large_gets_an_error_body(address: tuple[str, int]) -> None:
    """200 header fields (or one 70 KB line) get a 431 Error body, not an HTML page."""
    many = _head("GET", "/v1/pets", *(f"X-H{i}: v" for i in range(200)))
    long = _head("GET", "/v1/pets", "X-Long: " + "v" * 70_000)
    for request in (many, long):
        [(status, body)] = _answers(_exchange(address, request))
        assert status == 431
        assert set(body) == {"code", "message", "status"}


def test_a_body_sent_too_slowly_gets_408(store: FakeAnimalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A body still arriving when the whole-request deadline passes gets 408 and stores nothing."""
    monkeypatch.setattr(server_module, "_REQUEST_TIMEOUT", 0.3)
    with store.serve() as base_url:
        url = urlsplit(base_url)
        assert url.hostname is not None
        assert url.port is not None
        request = _head("POST", "/v1/pets", "Content-Type: application/json", f"Content-Length: {len(NEW_PET)}")
        answers = _answers(_exchange((url.hostname, url.port), request + NEW_PET))
        assert [status for status, _ in answers] == [201]  # in time: stored
        slow = _exchange((url.hostname, url.port), request + NEW_PET[:5], wait=3)
        assert [(status, body["code"]) for status, body in _answers(slow)] == [(408, "request_timeout")]
    assert len(store.pets) == 1


def test_a_client_that_sends_nothing_is_disconnected(store: FakeAnimalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection with no request is closed once the idle timeout passes, with no answer."""
    monkeypatch.setattr(server_module, "_IDLE_TIMEOUT", 0.3)
    with store.serve() as base_url:
        url = urlsplit(base_url)
        assert url.hostname is not None
        assert url.port is not None
        with Stopwatch() as watch:
            assert _exchange((url.hostname, url.port), b"", wait=3) == b""
        watch.assert_within(2.5)  # the 0.3 s idle timeout, with room; not the 3 s wait


@pytest.fixture(params=["transport", "server"])
def http(request: pytest.FixtureRequest, store: FakeAnimalStore) -> Iterator[httpx.Client]:
    """A bare httpx client reaching the store in-process or over loopback HTTP."""
    headers = {"Authorization": f"Bearer {KEY}"}
    if request.param == "transport":
        with httpx.Client(transport=FakeTransport(store), base_url=FAKE_BASE_URL + "/", headers=headers) as client:
            yield client
    else:
        with store.serve() as base_url, httpx.Client(base_url=base_url + "/", headers=headers) as client:
            yield client


@pytest.mark.parametrize(
    ("method", "path", "body", "code"),
    [
        ("POST", "pets", b"[" * 100_000, "invalid_json"),
        ("POST", "pets", b'{"name": "Rex", "categoryId": ' + b"9" * 5000 + b"}", "invalid_json"),
        ("POST", "pets", b'{"name": "Rex", "categoryId": ' + b"9" * 30 + b"}", "invalid_body"),
        ("GET", "pets/" + "9" * 5000, b"", "invalid_parameter"),
        ("GET", "pets?limit=" + "9" * 5000, b"", "invalid_parameter"),
    ],
)
def test_deep_or_huge_input_is_a_400_both_ways_in(
    http: httpx.Client, store: FakeAnimalStore, method: str, path: str, body: bytes, code: str
) -> None:
    """JSON nested 100,000 deep and numbers past int64 get a 400 Error body in-process and over HTTP."""
    response = http.request(method, path, content=body or None, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["code"] == code
    assert store.pets == []
