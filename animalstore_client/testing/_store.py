"""`FakeAnimalStore`, the kit's public face: its state as tests see and set it, and the one way requests come in.

`FakeAnimalStore.handle` takes a request's parts and returns a `FakeResponse`:
it records the request (``_recording``), takes any injected fault
(``_faults``) and otherwise asks the service (``_service``, whose table of
operations says what each request gets). The httpx transports and the HTTP
server in this package only carry bytes to and from it, so both ways in
behave identically; ``_clients`` wires the kit's clients to it.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs

import httpx

from animalstore_client._clients._generated.client_sync import AnimalStoreClient
from animalstore_client._clients.client_async import AsyncAnimalStoreClient
from animalstore_client._core.budget import RetryBudget
from animalstore_client._core.defaults import DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RETRIES, DEFAULT_TOTAL_TIMEOUT
from animalstore_client._core.exceptions import ClientValidationError
from animalstore_client._core.models import Pet
from animalstore_client._core.validation import NOT_GIVEN, NotGiven, check_api_key

from . import _clients
from ._clients import KitClock
from ._faults import FaultQueue, QueuedFault
from ._messages import ConnectionFaultKind, FakeResponse, RecordedRequest
from ._recording import Recording
from ._service import Service

if TYPE_CHECKING:
    from animalstore_client._clients.backends import AsyncBackendName, BackendName
    from animalstore_client._clients.optional_types import MeterProvider, TracerProvider
    from animalstore_client._core.middleware import AsyncMiddleware, Middleware

__all__ = ["FakeAnimalStore"]

ClientT = TypeVar("ClientT", AnimalStoreClient, AsyncAnimalStoreClient)


class FakeAnimalStore:
    """An in-memory animal store that behaves as the interface document says.

    Use it to test code that calls the SDK, with no network and no key:

    ```python
    from animalstore_client.testing import FakeAnimalStore

    store = FakeAnimalStore()
    with store.client() as client:
        client.create_pet(name="Rex", category_id=1)
    assert [pet.name for pet in store.pets] == ["Rex"]
    ```

    or over real HTTP on 127.0.0.1:

    ```python
    with store.serve() as base_url:
        client = AnimalStoreClient("test-key", base_url=base_url)
    ```

    Where the document is silent the fake behaves as a careful service
    would: a non-integer ``limit`` or an unknown ``status`` is 400, bodies
    over 1 MiB are 413, another method on a known path is 405, any other path
    is 404, and every 400 names the offending field. It is thread-safe, and
    it holds a bounded record of what it received: see `requests`.

    Args:
        api_keys: The keys accepted as ``Authorization: Bearer <key>``.
        pets: Animals already in the store (`Pet` objects or their JSON dicts).
    """

    def __init__(
        self, *, api_keys: Iterable[str] = ("test-key",), pets: Iterable[Pet | Mapping[str, Any]] = ()
    ) -> None:
        keys = tuple(api_keys) if not isinstance(api_keys, str) else (api_keys,)
        if not keys:
            raise ClientValidationError(
                "api_keys must hold at least one key, got ()", argument="api_keys", rule="at least one key", value=()
            )
        self._api_keys = tuple(check_api_key(key) for key in keys)
        self._service = Service(self._api_keys)
        self._faults = FaultQueue()
        self._recording = Recording()
        self._clock = KitClock()
        self.add_pets(pets)

    def __repr__(self) -> str:
        return f"<FakeAnimalStore pets={len(self._service)} requests={len(self._recording)}>"

    # --- state ----------------------------------------------------------------------------

    def add_pets(self, pets: Iterable[Pet | Mapping[str, Any]]) -> None:
        """Put animals in the store (`Pet` objects or their JSON dicts); a pet with an existing id replaces it.

        Ids the store assigns afterwards continue after the highest one present.
        Every item is checked before any is added; an ``id`` or ``categoryId``
        outside int64 is refused, as the interface's ``format: int64`` says.
        """
        self._service.add_pets(pets)

    def reset(self) -> None:
        """Empty the store: no pets, requests, faults, delays or recorded retry delays; ids start at 1 again.

        `dropped_requests` is 0 again too.

        The `clock` keeps its time: it only moves forward, as clocks the clients read must.
        """
        self._service.clear()
        self._faults.clear()
        self._recording.clear()
        self._clock.clear_delays()

    # --- inspection and fault injection -------------------------------------------------

    @property
    def api_key(self) -> str:
        """The first accepted key, which `client` and `async_client` use."""
        return self._api_keys[0]

    @property
    def pets(self) -> list[Pet]:
        """A snapshot of the animals in the store, by id."""
        return self._service.pets()

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the requests received, oldest first: the last `MAX_RECORDED_REQUESTS` (10,000) at most.

        The recording is bounded, so a long run or a flood cannot grow it
        without end: past 10,000 requests, or `MAX_RECORDED_BYTES` (32 MiB)
        of them, the oldest are dropped first, and `dropped_requests` counts
        them. A request without an accepted key is kept without its body
        (``json`` is ``None``): the store answers it 401 whatever it holds.
        """
        return self._recording.requests()

    @property
    def dropped_requests(self) -> int:
        """How many requests the recording dropped, oldest first, to stay within its bounds since the last `reset`.

        ``len(store.requests) + store.dropped_requests`` is every request
        received since then (read them while no request is arriving).
        """
        return self._recording.dropped()

    def authorized(self, headers: Mapping[str, str]) -> bool:
        """Whether ``headers`` (lower-case names) carry ``Authorization: Bearer <one of the api_keys>``.

        The store answers any other request 401 (unless a fault comes first)
        whatever its body, so it neither parses nor keeps that body, and the
        server reads it off the connection without holding it.
        """
        return self._service.authorized(headers)

    @property
    def faults(self) -> list[QueuedFault]:
        """A snapshot of the faults and delays still queued, as `QueuedFault` objects.

        Status and connection faults come first, in the order requests will
        take them, then delays, which are a queue of their own. The control
        API's ``GET /_fake/faults`` lists the same.

        ```python
        from animalstore_client.testing import FakeAnimalStore

        store = FakeAnimalStore()
        store.fail_next(503, times=2, retry_after=1)
        store.delay_next(0.5)
        assert [(fault.kind, fault.times) for fault in store.faults] == [("status", 2), ("delay", 1)]
        assert store.clear_faults() == 2 and store.faults == []
        ```
        """
        return self._faults.listed()

    def clear_faults(self) -> int:
        """Drop every queued fault and delay (what `faults` lists); return how many entries were dropped.

        An entry is one call of `fail_next`, `fail_next_connection` or
        `delay_next`, whatever its ``times``. Pets, requests and the clock stay.
        The control API's ``DELETE /_fake/faults`` does the same.
        """
        return self._faults.clear()

    def fail_next(
        self,
        status: int,
        *,
        times: int = 1,
        retry_after: float | str | None = None,
        body: object = None,
        method: str | None = None,
    ) -> None:
        """Answer the next ``times`` requests with ``status`` instead of serving them.

        ``retry_after`` sets a ``Retry-After`` header: seconds from 0 to
        86,400 (a float is cut to whole seconds), or a string such as an
        HTTP-date of at most 200 visible ASCII characters. ``times`` is at
        most 1,000,000. ``body`` replaces the Error body: a ``str`` or
        ``bytes`` is sent as ``text/html`` (a proxy's page), anything else
        as JSON. ``method``
        (``"GET"``, ``"POST"``...) limits the fault to requests with that
        method; others pass it by. Faults queue up in the order they were
        added: a request takes the first one it matches.
        """
        self._faults.add_status(status, times=times, retry_after=retry_after, body=body, method=method)

    def fail_next_connection(self, kind: ConnectionFaultKind, *, times: int = 1, method: str | None = None) -> None:
        """Fail the connection of the next ``times`` requests, as a network would.

        ``kind`` is ``"refused"`` (the request never reaches the store:
        nothing is recorded or stored), ``"reset"`` (the store acts on the
        request, a create stores its pet, then the connection drops before
        the answer: the ambiguous case) or ``"timeout"`` (the store acts, and
        the answer never comes in time).

        In-process clients see the httpx exception a real network gives
        (`httpx.ConnectError`, `httpx.ReadError`, `httpx.ReadTimeout`, at
        once), so the SDK's retry rules apply unchanged. Over `serve` the
        server closes the connection with a reset as the request arrives
        (``"refused"``: a client cannot tell that from ``"reset"``, as over a
        real network once a connection is open), after acting on it
        (``"reset"``), or holds it unanswered until the client gives up or 30
        seconds pass (``"timeout"``). ``method`` limits the fault to requests
        with that method, as for `fail_next`: ``method="GET"`` resets only
        reads, which the SDK may retry. Faults of both kinds queue in the
        order they were added.
        """
        self._faults.add_connection(kind, times=times, method=method)

    @property
    def retry_delays(self) -> list[float]:
        """The seconds each retry of a kit-made client would have slept, oldest first.

        Clients from `client`, `async_client` and the pytest fixtures do not
        sleep between retries: they record the delay here and go on, so a
        test of backoff or ``Retry-After`` takes milliseconds. They use no
        jitter, so the delays are the retry policy's exact values (0.5, 1.0,
        2.0, ... or the ``Retry-After`` given).
        """
        return self._clock.delays()

    def clock(self) -> float:
        """The store's clock, in seconds: the time its kit-made clients live in.

        It starts at 0 and moves only when such a client "sleeps" before a
        retry (by the delay) or a test calls `advance`. Their retry budgets
        count calls and retries in it, so a test of the budget runs at once.
        """
        return self._clock.now()

    def advance(self, seconds: float) -> None:
        """Move the store's `clock` on by ``seconds`` (>= 0): a retry budget's window passes without waiting."""
        self._clock.advance(seconds)

    def delay_next(self, seconds: float, *, times: int = 1) -> None:
        """Wait ``seconds`` before answering each of the next ``times`` requests.

        The request is served at once and only the answer is late, so a
        create whose answer times out has still stored its pet, as on a
        real, slow service.

        Through the in-process transport a delay longer than the request's
        read timeout raises `httpx.ReadTimeout` after that timeout, as a slow
        server would. ``seconds`` is finite, from 0 to 300; ``times`` is at
        most 1,000,000.
        """
        self._faults.add_delay(seconds, times=times)

    def next_delay(self) -> float:
        """Take the delay (if any) the next request must wait; the transports call this."""
        return self._faults.next_delay()

    # --- ways in ------------------------------------------------------------------------

    def client(
        self,
        *,
        # <options: kit sync> written by scripts/codegen.py from _clients.options.OPTIONS
        api_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        total_timeout: float | None = DEFAULT_TOTAL_TIMEOUT,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        backend: BackendName | None = None,
        middleware: Sequence[Middleware] | None = None,
        retry_budget: RetryBudget | NotGiven | None = NOT_GIVEN,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        # </options>
    ) -> AnimalStoreClient:
        """An `AnimalStoreClient` wired to this store: in-process (no sockets), or on the library ``backend`` names.

        The options are the client constructor's, with the same defaults;
        ``api_key`` defaults to the store's first key (pass another to test a
        wrong one). ``base_url`` and ``http_client`` are the kit's to set, and
        ``environment`` chooses where to connect, so none of the three is
        taken. Retries do not sleep: the delays go to `retry_delays` and move
        the store's `clock`, which the retry budget counts in.

        ``backend`` left out or ``"httpx"``: the client talks to the store
        in-process; it owns that transport (closing the client closes it, and
        a forked child gets a fresh one). Any other backend (``"httpx2"``,
        ``"pyreqwest"``): the library needs a real socket, so the store serves
        itself on 127.0.0.1 for this client and stops when the client is
        closed (or collected).
        """
        # <options: kit passed> written by scripts/codegen.py from _clients.options.OPTIONS
        options: dict[str, Any] = {
            "timeout": timeout,
            "max_retries": max_retries,
            "default_headers": default_headers,
            "total_timeout": total_timeout,
            "max_response_bytes": max_response_bytes,
            "middleware": middleware,
            "retry_budget": retry_budget,
            "tracer_provider": tracer_provider,
            "meter_provider": meter_provider,
        }
        # </options>
        return _clients.client(self, self.api_key if api_key is None else api_key, backend, options, self._clock)

    def async_client(
        self,
        *,
        # <options: kit> written by scripts/codegen.py from _clients.options.OPTIONS
        api_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        total_timeout: float | None = DEFAULT_TOTAL_TIMEOUT,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        backend: AsyncBackendName | None = None,
        middleware: Sequence[AsyncMiddleware] | None = None,
        retry_budget: RetryBudget | NotGiven | None = NOT_GIVEN,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        # </options>
    ) -> AsyncAnimalStoreClient:
        """An `AsyncAnimalStoreClient` wired to this store; options and ``backend`` as for `client`.

        ``backend="aiohttp"``, ``"pyreqwest"`` or ``"httpx2"`` serves the store on
        127.0.0.1 for the client, as ``"httpx2"`` does for `client`. Like a client with an SDK-owned
        pool, it works from any event loop: the first call in a new loop
        starts a fresh transport there, so a client made once (a
        module-scoped fixture) serves tests that each run their own loop.
        """
        # <options: kit passed> written by scripts/codegen.py from _clients.options.OPTIONS
        options: dict[str, Any] = {
            "timeout": timeout,
            "max_retries": max_retries,
            "default_headers": default_headers,
            "total_timeout": total_timeout,
            "max_response_bytes": max_response_bytes,
            "middleware": middleware,
            "retry_budget": retry_budget,
            "tracer_provider": tracer_provider,
            "meter_provider": meter_provider,
        }
        # </options>
        return _clients.async_client(self, self.api_key if api_key is None else api_key, backend, options, self._clock)

    def adopt(self, client: ClientT) -> ClientT:
        """Make a client you built over `serve` behave as the kit's own; returns it.

        Its retries no longer sleep: the delays go to `retry_delays` and move
        the store's `clock`, which its retry budget then counts in, and it
        uses no jitter, so a fault-injection test on any backend takes
        milliseconds. Its `with_options` copies share this.

        ```python
        from animalstore_client import AnimalStoreClient
        from animalstore_client.testing import FakeAnimalStore

        store = FakeAnimalStore()
        with store.serve() as url:
            client = store.adopt(AnimalStoreClient(store.api_key, base_url=url))
            store.fail_next(503)
            assert client.with_raw_response.list_pets().attempts == 2  # at once: the 0.5 s went to retry_delays
            client.close()
        ```
        """
        return _clients.adopt(client, self._clock)

    @contextmanager
    def serve(self, *, port: int = 0, control: bool = False) -> Generator[str]:
        """Serve this store over HTTP on 127.0.0.1 in a background thread; yields the base URL.

        ``port=0`` picks a free port. The server stops when the block exits.
        ``control=True`` turns on the control API under
        ``http://127.0.0.1:<port>/_fake/`` (reset, seed pets, inject faults,
        read requests) for a process that cannot reach this object; it
        answers only requests with ``Host: 127.0.0.1:<port>`` (or
        ``localhost``), no foreign ``Origin`` and, for a POST,
        ``Content-Type: application/json``, so no web page can drive it.

        One thread serves every connection. Any input gets a status line
        and an Error body, or a clean close: at most 1,024 connections
        (the longest idle gives way), 10 s for a whole request, 64 KiB of
        header fields, HTTP/1.0 and 1.1 only (505 otherwise). The body of a
        request without an accepted key is read and dropped as it arrives.
        """
        from ._server import running_server

        with running_server(self, port=port, control=control) as base_url:
            yield base_url

    # --- the service ------------------------------------------------------------------

    def handle(self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes) -> FakeResponse:
        """Answer one request. ``headers`` must have lower-case names; ``query`` is the raw query string.

        A status fault from `fail_next` is taken here; connection faults
        belong to the transports and the server, which carry them out.
        """
        return self._handle(method, path, query, headers, body, take_fault=True)

    def exchange(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[FakeResponse | None, ConnectionFaultKind | None]:
        """`handle` as a transport needs it: the answer and the connection fault to carry out, if any.

        For ``"refused"`` the answer is ``None`` (the store never saw the
        request); for ``"reset"`` and ``"timeout"`` the store has acted and
        the answer must not be delivered.
        """
        kind = self.connection_fault(method)
        if kind == "refused":
            return None, kind
        return self.serve_request(method, path, query, headers, body, kind), kind

    def connection_fault(self, method: str) -> ConnectionFaultKind | None:
        """The connection fault a request with ``method`` takes now, if any: `exchange`'s first half."""
        return self._faults.take_connection(method.upper())

    def serve_request(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        fault: ConnectionFaultKind | None,
    ) -> FakeResponse:
        """`exchange`'s second half, for a request whose ``fault`` (from `connection_fault`) is not a refusal."""
        return self._handle(method, path, query, headers, body, take_fault=fault is None)

    def _handle(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes, *, take_fault: bool
    ) -> FakeResponse:
        method = method.upper()
        parsed_query = parse_qs(query, keep_blank_values=True)
        request_id = f"req_{uuid.uuid4().hex[:20]}"
        # Only the body of a request the service will serve is worth parsing: any other is 401
        # (a page's cross-site text/plain POST included).
        authorized = self._service.authorized(headers)
        self._recording.record(method, path, query, parsed_query, headers, body, request_id, parse_body=authorized)
        fault = self._faults.take_status(method) if take_fault else None
        response = fault if fault is not None else self._service.answer(method, path, parsed_query, headers, body)
        response.headers["x-request-id"] = request_id
        return response
