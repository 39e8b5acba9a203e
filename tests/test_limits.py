"""The limits every call keeps whatever the server does: a total deadline and a response size cap.

Hostile servers are raw sockets on 127.0.0.1 (trickling bodies, endless
``100 Continue``, decompression bombs), since httpx cannot fake them. Each
test taking ``make_client`` runs against the sync and the async client. Every
server loop is bounded in count and time.
"""

from __future__ import annotations

import functools
import gzip
import json
import socket
import time
import tracemalloc
import zlib
from collections.abc import Iterator

import httpx
import pytest
import respx

from animalstore_client import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TOTAL_TIMEOUT,
    AnimalStoreClient,
    APIResponseValidationError,
    APITimeoutError,
    ClientValidationError,
    InternalServerError,
    NotFoundError,
)

from .conftest import API_KEY, PRODUCTION, ClientFactory
from .servers import Action, LoopbackServer, respond
from .timing import OVERSHOOT, Stopwatch

PET = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}


def _send_slowly(head: bytes, pieces: Iterator[bytes], interval: float) -> Action:
    """Send ``head`` at once, then one piece per ``interval`` (at most 200), until the client goes away."""

    def action(conn: socket.socket) -> bool:
        conn.sendall(head)
        for _, piece in zip(range(200), pieces, strict=False):
            time.sleep(interval)
            try:
                conn.sendall(piece)
            except OSError:
                return False
        return False

    return action


def _trickle() -> Action:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n["
    return _send_slowly(head, iter(lambda: b" ", None), 0.1)


def _endless_continue() -> Action:
    return _send_slowly(b"", iter(lambda: b"HTTP/1.1 100 Continue\r\n\r\n", None), 0.02)


def _elapsed(call: object, match: str = r"total_timeout=1s passed") -> Stopwatch:
    """Run ``call``, which must raise APITimeoutError matching ``match``; how long it took, and load's share."""
    assert callable(call)
    with Stopwatch() as watch, pytest.raises(APITimeoutError, match=match):
        call()
    return watch


# --- total deadline -----------------------------------------------------------------------------


def test_defaults_are_exported() -> None:
    """The package exports the total_timeout and max_response_bytes defaults, and a new client uses them."""
    client = AnimalStoreClient(API_KEY)
    assert (client.total_timeout, client.max_response_bytes) == (DEFAULT_TOTAL_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES)
    client.close()


def test_a_trickling_body_ends_at_the_deadline(make_client: ClientFactory) -> None:
    """A byte every 0.1 s never trips the 5 s read timeout, but the call ends at total_timeout=1."""
    with LoopbackServer([_trickle()]) as server:
        client = make_client(base_url=server.base_url, timeout=5.0, total_timeout=1.0)
        _elapsed(client.list_pets).assert_within(1.0 + OVERSHOOT)


@pytest.mark.slow
def test_a_trickling_body_ends_at_a_deadline_libraries_round_up(make_client: ClientFactory) -> None:
    """At total_timeout=5.5 (aiohttp rounds timers of 5 s and more up to the second) the call still ends on time."""
    with LoopbackServer([_trickle()]) as server:
        client = make_client(base_url=server.base_url, timeout=30.0, total_timeout=5.5, max_retries=0)
        # Tighter than OVERSHOOT: a timer rounded up to the next whole second overran by 0 to 1 s. Beyond 0.3 s, only
        # as late as load made the reference timer meanwhile (a README run of six workers: 0.303 s over).
        _elapsed(client.list_pets, r"total_timeout=5.5s passed").assert_within(5.5 + 0.3)


def test_endless_100_continue_ends_at_the_deadline(make_client: ClientFactory) -> None:
    """A server sending 100 Continue for ever is cut off at total_timeout."""
    with LoopbackServer([_endless_continue()]) as server:
        client = make_client(base_url=server.base_url, timeout=5.0, total_timeout=1.0)
        _elapsed(client.list_pets).assert_within(1.0 + OVERSHOOT)


def test_retries_never_outlast_the_deadline(make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attempts of 0.3 s with real backoff sleeps: the second attempt is cut short at total_timeout=1."""
    import anyio

    from animalstore_client._clients.shells import ASYNC_IO, SYNC_IO

    monkeypatch.setattr(SYNC_IO, "sleep", time.sleep)
    monkeypatch.setattr(ASYNC_IO, "sleep", anyio.sleep)
    with LoopbackServer() as server:
        server.script = [server.hang()]
        client = make_client(base_url=server.base_url, timeout=0.3, total_timeout=1.0, max_retries=5)
        # 0.3 s attempt, 0.5 s backoff, then an attempt with 0.2 s left.
        _elapsed(client.list_pets, r"total_timeout=1s passed after 2 attempts").assert_within(1.0 + OVERSHOOT)
        assert len(server.wait_for_received(2)) == 2


def test_a_backoff_that_would_pass_the_deadline_raises_the_last_error(make_client: ClientFactory) -> None:
    """After a 0.6 s timeout, a 0.5 s backoff would pass total_timeout=1: the timeout is raised at once."""
    with LoopbackServer() as server:
        server.script = [server.hang()]
        client = make_client(base_url=server.base_url, timeout=0.6, total_timeout=1.0, max_retries=2)
        # Not OVERSHOOT: the 0.5 s backoff, slept, would end the call at 1.1 s.
        _elapsed(client.list_pets, r"Request timed out: GET .* \(ReadTimeout").assert_within(1.0)
        assert len(server.wait_for_received(1)) == 1


def test_a_caller_supplied_client_is_held_to_the_deadline_between_reads(variant: str) -> None:
    """With the caller's own httpx client the deadline is checked as each chunk arrives."""
    with LoopbackServer([_trickle()]) as server:
        if variant == "sync":
            with httpx.Client() as http:
                client = AnimalStoreClient(API_KEY, base_url=server.base_url, http_client=http, total_timeout=1.0)
                _elapsed(client.list_pets).assert_within(1.0 + OVERSHOOT)
        else:
            import asyncio

            from animalstore_client import AsyncAnimalStoreClient

            async def main() -> Stopwatch:
                async with httpx.AsyncClient() as http:
                    client = AsyncAnimalStoreClient(
                        API_KEY, base_url=server.base_url, http_client=http, total_timeout=1.0
                    )
                    with Stopwatch() as watch, pytest.raises(APITimeoutError, match="total_timeout"):
                        await client.list_pets()
                    return watch

            asyncio.run(main()).assert_within(1.0 + OVERSHOOT)


def test_a_wait_that_would_pass_the_deadline_is_not_started(
    make_client: ClientFactory, router: respx.MockRouter, sleeps: list[float]
) -> None:
    """Retry-After: 5 with total_timeout=1 raises the 503 at once instead of sleeping."""
    route = router.get(f"{PRODUCTION}/pets").respond(503, headers={"Retry-After": "5"})
    with pytest.raises(InternalServerError) as info:
        make_client(total_timeout=1.0).list_pets()
    assert info.value.attempts == 1
    assert route.call_count == 1
    assert sleeps == []


def test_no_deadline_with_none(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """total_timeout=None leaves every phase as the client's timeout says."""
    route = router.get(f"{PRODUCTION}/pets").respond(200, json=[])
    client = make_client(total_timeout=None, timeout=httpx.Timeout(None))
    client.list_pets()
    assert route.calls.last.request.extensions["timeout"] == dict.fromkeys(("connect", "read", "write", "pool"))
    assert client.total_timeout is None


@pytest.mark.parametrize("value", [0, -1, float("inf"), float("nan"), "60", True, 10**400])
def test_bad_total_timeout_is_refused(make_client: ClientFactory, value: object) -> None:
    """total_timeout must be a finite positive number or None, in the constructor and with_options."""
    with pytest.raises(ClientValidationError, match="total_timeout must be") as info:
        make_client(total_timeout=value)  # type: ignore[arg-type]
    assert info.value.argument == "total_timeout"
    with pytest.raises(ClientValidationError, match="total_timeout must be"):
        make_client().with_options(total_timeout=value)  # type: ignore[arg-type]


def test_the_sdk_pool_is_its_own_over_the_deadline_backend_and_proxies_keep_httpcores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Direct requests go through the SDK's own pool, proxied ones through httpcore's: both on the deadline backend."""
    import httpcore

    from animalstore_client._transports.pool._generated.deadline_network_sync import DeadlineBackend
    from animalstore_client._transports.pool._generated.httpcore_sync import HttpcoreTransport
    from animalstore_client._transports.pool._generated.pool_sync import ConnectionPool

    given: list[object] = []
    original = httpcore.HTTPProxy.__init__

    def record(self: object, *args: object, **kwargs: object) -> None:
        given.append(kwargs.get("network_backend"))
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpcore.HTTPProxy, "__init__", record)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "direct.example")
    client = AnimalStoreClient(API_KEY)
    transport = client._sender.pool.transport
    assert isinstance(transport, HttpcoreTransport)
    proxied = transport._pool_for(httpx.URL("https://api.animalstore.example/v1/pets"))
    direct = transport._pool_for(httpx.URL("https://direct.example/v1/pets"))  # NO_PROXY: direct
    client.close()
    assert isinstance(proxied, httpcore.HTTPProxy)
    assert isinstance(direct, ConnectionPool)
    assert isinstance(direct._backend, DeadlineBackend)
    assert len(given) == 1
    assert isinstance(given[0], DeadlineBackend)


# --- response size cap ----------------------------------------------------------------------------

BODY = json.dumps([PET] * 40).encode()


def test_a_body_of_exactly_the_cap_is_accepted(make_client: ClientFactory) -> None:
    """max_response_bytes equal to the body's size reads it whole."""
    with LoopbackServer([respond(200, BODY)]) as server:
        assert len(make_client(base_url=server.base_url, max_response_bytes=len(BODY)).list_pets()) == 40


def test_a_2xx_body_over_the_cap_is_a_validation_error(make_client: ClientFactory) -> None:
    """One byte over the cap: APIResponseValidationError naming max_response_bytes and the cap, not retried."""
    with LoopbackServer([respond(200, BODY)]) as server:
        client = make_client(base_url=server.base_url, max_response_bytes=len(BODY) - 1)
        with pytest.raises(APIResponseValidationError, match=f"max_response_bytes \\({len(BODY) - 1} bytes"):
            client.list_pets()
        with pytest.raises(APIResponseValidationError, match="max_response_bytes"):
            client.with_raw_response.list_pets()
        with pytest.raises(APIResponseValidationError, match="max_response_bytes"):
            client.request("GET", "/pets")
        assert len(server.received) == 3


def test_an_error_body_over_the_cap_keeps_its_status_class(make_client: ClientFactory) -> None:
    """A 404 with a huge body raises NotFoundError with the body cut at the cap, and says so."""
    huge = b"x" * 5000
    with (
        LoopbackServer([respond(404, huge)]) as server,
        pytest.raises(NotFoundError, match=r"body cut at max_response_bytes=100") as info,
    ):
        make_client(base_url=server.base_url, max_response_bytes=100).list_pets()
    assert info.value.response.content == b"x" * 100


def test_the_cap_counts_decoded_bytes(make_client: ClientFactory) -> None:
    """A small gzip body that decodes past the cap is over the cap."""
    decoded = json.dumps([PET] * 1000).encode()
    with LoopbackServer([respond(200, gzip.compress(decoded), {"Content-Encoding": "gzip"})]) as server:
        client = make_client(base_url=server.base_url, max_response_bytes=len(decoded) - 1)
        with pytest.raises(APIResponseValidationError, match="max_response_bytes"):
            client.list_pets()


def test_an_in_memory_body_over_the_cap_is_caught_too(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """A mock transport's body, already in memory, is held to the same cap."""
    router.get(f"{PRODUCTION}/pets").respond(200, content=BODY)
    with pytest.raises(APIResponseValidationError, match="max_response_bytes"):
        make_client(max_response_bytes=10).list_pets()
    assert len(make_client(max_response_bytes=None).list_pets()) == 40


@functools.cache
def _bomb(size: int) -> bytes:
    """gzip(gzip(``size`` zero bytes)), built in steps."""
    inner = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1024 * 1024)
    layer = b"".join(inner.compress(block) for _ in range(size // len(block))) + inner.flush()
    return gzip.compress(layer, 9)


def test_a_decompression_bomb_costs_a_few_times_the_cap(make_client: ClientFactory) -> None:
    """A ~100 KB body that inflates to 256 MiB, read with a 1 MiB cap, peaks at a few MiB, on every library."""
    bomb = _bomb(256 * 1024 * 1024)
    assert len(bomb) < 300_000
    headers = {"Content-Encoding": "gzip, gzip"}
    with LoopbackServer([respond(200, bomb, headers)]) as server:
        client = make_client(base_url=server.base_url, max_response_bytes=1024 * 1024)
        tracemalloc.start()
        try:
            with pytest.raises(APIResponseValidationError, match="max_response_bytes"):
                client.list_pets()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 6 * 1024 * 1024, peak


@pytest.mark.parametrize("value", [0, -5, 1.5, "10", True, 2**63])
def test_bad_max_response_bytes_is_refused(make_client: ClientFactory, value: object) -> None:
    """max_response_bytes must be a positive int (at most 2**63-1) or None."""
    with pytest.raises(ClientValidationError, match=r"max_response_bytes must be an int from 1 to 2\*\*63-1, or None"):
        make_client(max_response_bytes=value)  # type: ignore[arg-type]


# --- more pets than asked for ------------------------------------------------------------------


@pytest.mark.parametrize(("limit", "count"), [(5, 6), (None, 101), (1, 2)])
def test_more_pets_than_asked_for_is_a_broken_response(
    make_client: ClientFactory, router: respx.MockRouter, limit: int | None, count: int
) -> None:
    """A list longer than limit (100 when none is sent) raises APIResponseValidationError."""
    router.get(f"{PRODUCTION}/pets").respond(200, json=[dict(PET, id=i) for i in range(count)])
    with pytest.raises(APIResponseValidationError, match=f"{count} pets in the body, more than the limit"):
        make_client().list_pets(limit=limit)


def test_exactly_limit_pets_is_fine(make_client: ClientFactory, router: respx.MockRouter) -> None:
    """limit pets (and 100 with no limit) are accepted."""
    router.get(f"{PRODUCTION}/pets").respond(200, json=[dict(PET, id=i) for i in range(100)])
    assert len(make_client().list_pets()) == 100
    assert len(make_client().list_pets(limit=100)) == 100
