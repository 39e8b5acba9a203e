"""Only SDK exceptions escape: arbitrary arguments, and arbitrary bytes from a server (hypothesis).

The rule under test: a public method returns, or raises an `AnimalStoreError`
subclass, for any argument a caller passes and any status, headers and body
a server sends. The number of examples is bounded so this takes seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import warnings
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from animalstore_client import AnimalStoreClient, AnimalStoreError, AsyncAnimalStoreClient, ClientValidationError

from .conftest import API_KEY, SHARE_VARIABLE, ClientFactory, scaled
from .servers import LoopbackServer

BASE = "https://api.animalstore.example/v1"
SETTINGS = settings(
    max_examples=scaled(150),
    deadline=None,
    derandomize=True,  # the same examples on every run: CI never flakes on a new one
    suppress_health_check=[HealthCheck.too_slow],
)


def test_a_share_runs_that_share_of_a_repeated_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """ANIMALSTORE_TEST_SHARE scales a fuzzer's examples or a test's rows (rounded up, at least the fewest the
    test names, one by default); a share outside (0, 1] is refused, naming the variable and the value; unset,
    everything runs."""
    monkeypatch.delenv(SHARE_VARIABLE, raising=False)
    assert scaled(150) == 150
    monkeypatch.setenv(SHARE_VARIABLE, "0.25")
    assert (scaled(150), scaled(60), scaled(1), scaled(20, least=8)) == (38, 15, 1, 8)
    for wrong in ("0", "1.5", "-1", "a quarter"):
        monkeypatch.setenv(SHARE_VARIABLE, wrong)
        with pytest.raises(ValueError, match=f"ANIMALSTORE_TEST_SHARE must be a share in \\(0, 1\\], got '{wrong}'"):
            scaled(150)


# --- arbitrary arguments ----------------------------------------------------------------------

anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**20, max_value=10**4000),  # hypothesis cannot print 4300+ digits
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1),
    st.binary(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)
header_maps = st.one_of(
    st.none(),
    anything,
    st.dictionaries(
        st.one_of(
            st.sampled_from(["Content-Length", "Transfer-Encoding", "Host", "Connection", "TE", "X(A)", "X-Ok"]),
            st.text(max_size=8),
        ),
        st.one_of(st.text(max_size=8), st.integers(), st.none()),
        max_size=3,
    ),
)
timeouts = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-5, max_value=10**400),
    st.builds(httpx.Timeout, st.floats(allow_nan=True, allow_infinity=True) | st.none()),
    st.text(max_size=3),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)


def _nested(depth: int, kind: str) -> object:
    """A value ``depth`` containers deep, built without recursion: repr() and pickle fail on it."""
    value: object = 1
    for _ in range(depth):
        value = [value] if kind == "list" else (value,) if kind == "tuple" else {"k": value}
    return value


def _cycle(kind: str) -> object:
    """A list or dict that holds itself."""
    if kind == "list":
        items: list[object] = []
        items.append(items)
        return items
    mapping: dict[str, object] = {}
    mapping["self"] = mapping
    return mapping


class _BrokenRepr:
    """An object whose repr raises, as a careless __repr__ can."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


# Values that broke error messages, pickling or httpx before: deep nesting, ints
# past the 4300-digit str() limit, cycles, sets, non-finite floats, a broken repr.
hostile = st.one_of(
    st.builds(_nested, st.sampled_from([600, 5_000, 100_000]), st.sampled_from(["list", "tuple", "dict"])),
    st.integers(min_value=4_300, max_value=6_000).map(lambda digits: 10**digits),
    st.builds(_cycle, st.sampled_from(["list", "dict"])),
    st.sets(st.integers(), max_size=3),
    st.frozensets(st.text(max_size=3), max_size=3),
    st.sampled_from([float("nan"), float("inf"), float("-inf")]),
    st.builds(_BrokenRepr),
)
arguments = anything | hostile
surrogates = st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1)
hashable = st.one_of(
    st.text(max_size=4),
    surrogates,
    st.integers(),
    st.integers(min_value=4_300, max_value=4_400).map(lambda digits: 10**digits),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.frozensets(st.integers(), max_size=2),
)
query_values = arguments | surrogates | st.lists(arguments, max_size=3) | st.tuples(arguments, arguments)
params_values = st.one_of(
    arguments,
    st.dictionaries(hashable, query_values, max_size=3),
    st.lists(st.tuples(hashable, query_values), max_size=3),
    st.lists(arguments | st.tuples(arguments) | st.lists(arguments, min_size=3, max_size=3), max_size=3),
)
json_arguments = st.one_of(
    json_values,
    arguments,
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.floats(allow_nan=True, allow_infinity=True), st.integers())
        | surrogates
        | st.text(max_size=4)
        | st.binary(max_size=3)
        | hostile,
        lambda inner: (
            st.lists(inner, max_size=3) | st.tuples(inner, inner) | st.dictionaries(hashable, inner, max_size=3)
        ),
        max_leaves=8,
    ),
)


def _mock_client(sent: list[httpx.Request] | None = None) -> AnimalStoreClient:
    def answer(request: httpx.Request) -> httpx.Response:
        if sent is not None:
            sent.append(request)
        if request.method == "POST":
            return httpx.Response(201, json={"id": 1, "name": "Rex", "categoryId": 1})
        if request.url.path.startswith("/v1/pets/"):
            return httpx.Response(200, json={"id": 1, "name": "Rex", "categoryId": 1})
        return httpx.Response(200, json=[])

    http = httpx.Client(transport=httpx.MockTransport(answer))
    return AnimalStoreClient(API_KEY, base_url=BASE, http_client=http, max_retries=0)


def _only_sdk_errors(call: Callable[[], object]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # get_pet's, asserted elsewhere
        with contextlib.suppress(AnimalStoreError):
            call()


SENT: list[httpx.Request] = []
"""Every request the module's client sent; tests clear it before each call."""


def _outcome(call: Callable[[], object]) -> object:
    """What ``call`` returns, or the SDK exception it raises; any other exception propagates."""
    try:
        return call()
    except AnimalStoreError as exc:
        return exc


@pytest.fixture(scope="module")
def client() -> Iterator[AnimalStoreClient]:
    """One sync client over a mock transport that answers every request successfully and records it."""
    with _mock_client(SENT) as mock:
        yield mock


@SETTINGS
@given(limit=anything | st.integers(), status=anything | st.sampled_from(["available", "sold"]), timeout=timeouts)
def test_list_pets_arguments(client: AnimalStoreClient, limit: Any, status: Any, timeout: Any) -> None:
    """list_pets with any limit, status and timeout returns or raises an SDK error."""
    _only_sdk_errors(lambda: client.list_pets(limit=limit, status=status, timeout=timeout))


@SETTINGS
@given(name=anything, category_id=anything, status=anything, extra_headers=header_maps)
def test_create_pet_arguments(
    client: AnimalStoreClient, name: Any, category_id: Any, status: Any, extra_headers: Any
) -> None:
    """create_pet with any name, category_id, status and headers returns or raises an SDK error."""
    _only_sdk_errors(
        lambda: client.create_pet(name=name, category_id=category_id, status=status, extra_headers=extra_headers)
    )


@SETTINGS
@given(pet_id=anything, timeout=timeouts)
def test_get_pet_arguments(client: AnimalStoreClient, pet_id: Any, timeout: Any) -> None:
    """get_pet with any id and timeout returns or raises an SDK error."""
    _only_sdk_errors(lambda: client.get_pet(pet_id, timeout=timeout))  # type: ignore[deprecated]


@SETTINGS
@given(
    method=anything | st.sampled_from(["GET", "POST", "get"]),
    path=anything | st.text().map(lambda text: "/" + text),
    params=anything | st.dictionaries(st.text(max_size=4), anything, max_size=2),
    json=json_values | anything,
    headers=header_maps,
)
def test_request_arguments(
    client: AnimalStoreClient, method: Any, path: Any, params: Any, json: Any, headers: Any
) -> None:
    """client.request with any method, path, params, JSON and headers returns or raises an SDK error."""
    _only_sdk_errors(lambda: client.request(method, path, params=params, json=json, headers=headers))


@SETTINGS
@given(
    params=params_values,
    data=json_arguments,
    headers=header_maps | hostile | st.dictionaries(st.sampled_from(["X-A", "X-B"]), arguments, max_size=2),
)
def test_request_hostile_params_json_and_headers(
    client: AnimalStoreClient, params: Any, data: Any, headers: Any
) -> None:
    """request() with hostile params, json and headers sends a valid request or raises ClientValidationError unsent."""
    SENT.clear()
    outcome = _outcome(lambda: client.request("POST", "/messages", params=params, json=data, headers=headers))
    if isinstance(outcome, AnimalStoreError):
        assert isinstance(outcome, ClientValidationError)
        assert outcome.argument in ("params", "json", "headers")
        assert str(outcome).startswith(f"{outcome.argument} must ")
        assert SENT == []
    else:
        assert isinstance(outcome, httpx.Response)
        assert outcome.status_code == 201
        assert len(SENT) == 1
        if data is not None:
            json.loads(SENT[0].content.decode("utf-8"))  # the body sent is valid UTF-8 JSON


constructor_options = {
    "api_key": arguments,
    "base_url": arguments | st.sampled_from(["https://u:p@h.example/v1", "http://[::1", "https://h/v1?x"]),
    "environment": arguments,
    "timeout": timeouts | hostile,
    "max_retries": arguments,
    "default_headers": header_maps | hostile | st.dictionaries(st.sampled_from(["X-A"]), hostile, max_size=1),
    "total_timeout": arguments,
    "max_response_bytes": arguments,
    "verify": arguments | st.sampled_from([True, False, "/nonexistent/ca.pem", "\ud800", "\x00"]),
}
CONSTRUCTOR_ONLY = {"backend", "http_client"}


@SETTINGS
@given(
    options=st.fixed_dictionaries(
        {},
        optional={
            **constructor_options,
            "backend": arguments | st.sampled_from(["httpx", "urllib3", "aiohttp", "pyreqwest"]),
            "http_client": arguments,
        },
    )
)
def test_constructor_and_with_options_arguments(client: AnimalStoreClient, options: dict[str, Any]) -> None:
    """Any constructor or with_options argument, hostile ones included, gives a client or an SDK error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # InsecureTransportWarning for some URLs
        with contextlib.suppress(AnimalStoreError):
            AnimalStoreClient(**options).close()

        async def build_async() -> None:
            with contextlib.suppress(AnimalStoreError):
                await AsyncAnimalStoreClient(**options).aclose()

        asyncio.run(build_async())
        derived = {name: value for name, value in options.items() if name not in CONSTRUCTOR_ONLY}
        SENT.clear()
        _only_sdk_errors(lambda: client.with_options(**derived))
        assert SENT == []


# --- arbitrary bytes from a server --------------------------------------------------------------

header_names = st.sampled_from(["Content-Type", "Content-Encoding", "Retry-After", "X-Request-Id", "X-Other"])
header_values = st.one_of(
    st.sampled_from(["application/json", "gzip", "deflate", "gzip, gzip", "br", "²", "0", "1e9", "text/html"]),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=255), max_size=20),
)
bodies = st.one_of(
    st.binary(max_size=300),
    st.just(b"[" * 5000),  # nested past the recursion limit
    st.just(b'{"code": "x", "message": "' + b"\x1b[31m\\n" * 50 + b'", "status": 500}'),
    st.just(b'[{"id": 1, "name": "Rex", "categoryId": 1}]' * 2),
    json_values.map(lambda value: httpx.Response(200, json=value).content),
)
responses = st.tuples(
    st.integers(min_value=200, max_value=599), st.lists(st.tuples(header_names, header_values)), bodies
)


class _Stream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body that is still to be read, so the SDK's own reading and decoding run."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        yield self._body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._body


def _serving(status: int, headers: list[tuple[str, str]], body: bytes) -> httpx.MockTransport:
    raw = [(name.encode(), value.encode("latin-1")) for name, value in headers]  # as a socket delivers them
    return httpx.MockTransport(lambda request: httpx.Response(status, headers=raw, stream=_Stream(body)))


def _operations(client: Any) -> list[Callable[[], object]]:
    return [
        lambda: client.list_pets(limit=5),
        lambda: client.create_pet(name="Rex", category_id=1),
        lambda: client.get_pet(1),
        lambda: client.request("GET", "/store/orders"),
        lambda: client.with_raw_response.list_pets().parse(),
    ]


# Cases found by hand before these tests existed, always tried first.
KNOWN = [
    (503, [("Retry-After", "²")], b""),
    (429, [("Retry-After", "Fri, 31 Dec 99999 23:59:59 GMT")], b""),
    (200, [("Content-Encoding", "gzip, gzip")], b"\x1f\x8b not really gzip"),
    (500, [], b'{"code": "x", "message": "' + b"\x1b[2J" * 100 + b'", "status": 500}'),
    (200, [], b"[" * 5000),
    (404, [], b"[" * 5000),
]


@SETTINGS
@given(response=st.sampled_from(KNOWN) | responses)
def test_any_response_to_the_sync_client(response: tuple[int, list[tuple[str, str]], bytes]) -> None:
    """Whatever status, headers and body come back, each operation returns or raises an SDK error."""
    http = httpx.Client(transport=_serving(*response))
    with AnimalStoreClient(API_KEY, base_url=BASE, http_client=http, max_retries=1, max_response_bytes=4096) as client:
        for operation in _operations(client):
            _only_sdk_errors(operation)


@settings(SETTINGS, max_examples=scaled(60))
@given(response=st.sampled_from(KNOWN) | responses)
def test_any_response_to_the_async_client(response: tuple[int, list[tuple[str, str]], bytes]) -> None:
    """The async client keeps the same rule."""

    async def main() -> None:
        http = httpx.AsyncClient(transport=_serving(*response))
        async with AsyncAnimalStoreClient(
            API_KEY, base_url=BASE, http_client=http, max_retries=0, max_response_bytes=4096
        ) as client:

            async def raw() -> object:
                return (await client.with_raw_response.list_pets()).parse()

            operations: list[Callable[[], Coroutine[Any, Any, object]]] = [
                lambda: client.list_pets(limit=5),
                lambda: client.create_pet(name="Rex", category_id=1),
                lambda: client.get_pet(1),  # type: ignore[deprecated]
                lambda: client.request("GET", "/store/orders"),
                raw,
            ]
            for operation in operations:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    with contextlib.suppress(AnimalStoreError):
                        await operation()

    asyncio.run(main())


# --- malformed HTTP over real sockets, on every HTTP library ----------------------------------

MALFORMED = [
    b"garbage\r\n\r\n",
    b"HTTP/1.1 abc Nope\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nNo colon here\r\nContent-Length: 2\r\n\r\n[]",
    b"HTTP/1.1 200 OK\r\nX-Long: " + b"v" * 70_000 + b"\r\nContent-Length: 2\r\n\r\n[]",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot hex\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Encoding: gzip\r\n\r\nabcde",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 7\r\n\r\n[]",
    b"HTTP/1.1 999 Whatever\r\nContent-Length: 0\r\n\r\n",
    b"\x00\xff\xfe binary soup \r\n\r\n",
]


@pytest.mark.parametrize("answer", MALFORMED, ids=lambda answer: repr(answer[:24]))
def test_malformed_answers_raise_only_sdk_errors(make_client: ClientFactory, answer: bytes) -> None:
    """Whatever a socket sends back, every library's client returns or raises an AnimalStoreError."""

    def send(conn: socket.socket) -> bool:
        conn.sendall(answer)
        return False

    with LoopbackServer([send]) as server:
        client = make_client(base_url=server.base_url, max_retries=0, timeout=2.0)
        for operation in (lambda: client.list_pets(limit=5), lambda: client.create_pet(name="Rex", category_id=1)):
            _only_sdk_errors(operation)
