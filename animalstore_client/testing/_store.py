"""The fake store's public face: its state as a test sees it, fault injection, recording, and the ways in.

`FakeAnimalStore.handle` takes a request's parts and returns a `FakeResponse`;
what the service does is `_service.Service`, what comes and goes is in
``_messages``, and the httpx transports and the HTTP server in this package
only carry bytes to and from it, so both ways in behave identically.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast
from urllib.parse import parse_qs

import attrs
import httpx

from .._base_client import Wiring
from .._budget import RetryBudget
from .._client_async import AsyncAnimalStoreClient
from .._client_sync import AnimalStoreClient
from .._defaults import DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RETRIES, DEFAULT_TOTAL_TIMEOUT
from .._exceptions import ClientValidationError
from .._models import Pet
from .._validation import NOT_GIVEN, NotGiven, check_api_key
from ._messages import (
    CONNECTION_FAULTS,
    DELAY_RULE,
    FAKE_BASE_URL,
    MAX_BODY_BYTES,
    RETRY_AFTER_RULE,
    ConnectionFaultKind,
    FakeResponse,
    Fault,
    RecordedRequest,
    check_times,
    delay_ok,
    error_response,
    is_int64,
    ok,
    reason_phrase,
    reject_constant,
    retry_after_ok,
)
from ._service import Service

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from .._backends import AsyncBackendName, BackendName
    from .._middleware import AsyncMiddleware, Middleware

ClientT = TypeVar("ClientT", AnimalStoreClient, AsyncAnimalStoreClient)


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _check_method(method: object) -> str | None:
    if method is None:
        return None
    if isinstance(method, str) and method.upper() in _METHODS:
        return method.upper()
    raise ClientValidationError(
        f"method must be an HTTP method such as 'GET' or 'POST', or None for any, got {method!r}",
        argument="method",
        rule="GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, or None",
        value=method,
    )


def _over_socket(backend: object, in_process: str, over_socket: tuple[str, ...], method: str) -> bool:
    """Whether a kit client on ``backend`` needs a real socket; a name no library of the client has is refused."""
    if backend is None or backend == in_process:
        return False
    if isinstance(backend, str) and backend in over_socket:
        return True
    others = " or ".join(repr(name) for name in over_socket)
    raise ClientValidationError(
        f"backend for store.{method}() must be {in_process!r} (in-process, the default) or {others} "
        f"(over a loopback server the store starts), got {backend!r}",
        argument="backend",
        rule=f"{in_process!r} or {others}",
        value=backend,
    )


__all__ = [
    "FAKE_BASE_URL",
    "MAX_BODY_BYTES",
    "MAX_RECORDED_BYTES",
    "MAX_RECORDED_REQUESTS",
    "ConnectionFaultKind",
    "FakeAnimalStore",
    "FakeResponse",
    "QueuedFault",
    "RecordedRequest",
]

MAX_RECORDED_REQUESTS = 10_000
"""The most requests `FakeAnimalStore.requests` keeps; past it the oldest is dropped first.

Enough for a test that counts every attempt of a thousand calls in an
outage, or of an import of several thousand pets; `FakeAnimalStore.dropped_requests`
says how many were dropped.
"""
MAX_RECORDED_BYTES = 32 * 1024 * 1024
"""The most bytes (32 MiB) the kept requests may weigh; past it the oldest are dropped first (the newest stays).

A request weighs the bytes of its path, query string, header names and
values, plus 1,024 bytes for the request and 160 for each header field and
query value; a JSON body (only a request with an accepted key has one
parsed) weighs its bytes plus 48 for each ``,``, ``:``, ``{`` and ``[`` in
them. That is about what Python spends holding them, so this bounds the
memory the recording takes whatever arrives: 1 MiB of ``[{},{},...]``
parses into 24 MiB of objects, and weighs 33 MiB.
"""
_RECORD_OVERHEAD = 1024
"""Bytes a recorded request weighs beside its contents (the record, its dicts, its request id)."""
_FIELD_OVERHEAD = 160
"""Bytes each header field and each query value of a recorded request weighs beside its characters."""
_JSON_OVERHEAD = 48
"""Bytes each ``,``, ``:``, ``{`` and ``[`` of a parsed JSON body weighs: roughly one Python object each."""


@attrs.frozen
class QueuedFault:
    """A fault or delay still waiting in a `FakeAnimalStore`'s queue, as `FakeAnimalStore.faults` lists it.

    ``kind`` says which call queued it and which field holds its value:
    ``"status"`` (`FakeAnimalStore.fail_next`: ``status``, ``retry_after``,
    ``body``), ``"connection"`` (`FakeAnimalStore.fail_next_connection`:
    ``connection``) or ``"delay"`` (`FakeAnimalStore.delay_next`: ``delay``);
    the fields of the other kinds are ``None``. ``times`` is how many
    requests it still covers.
    """

    kind: Literal["status", "connection", "delay"]
    times: int
    """The requests it still covers: ``fail_next(503, times=3)`` is 3 until a request takes it."""
    status: int | None = None
    """The status a ``"status"`` fault answers with."""
    retry_after: str | None = None
    """The ``Retry-After`` header a ``"status"`` fault sends, as sent (``"3"``), or ``None`` for none."""
    body: object = None
    """The body a ``"status"`` fault sends instead of an Error body, as given to `FakeAnimalStore.fail_next`."""
    connection: ConnectionFaultKind | None = None
    """What a ``"connection"`` fault does: ``"refused"``, ``"reset"`` or ``"timeout"``."""
    delay: float | None = None
    """The seconds a ``"delay"`` holds back each answer."""
    method: str | None = None
    """The only method (upper case) whose requests take the fault, or ``None`` for any; a delay takes any."""


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
        self._lock = threading.Lock()
        self._faults: deque[Fault] = deque()
        self._delays: deque[list[float]] = deque()  # [seconds, requests left]: O(1) whatever ``times`` is
        self._requests: deque[RecordedRequest] = deque()
        self._weights: deque[int] = deque()  # each kept request's weight, as MAX_RECORDED_BYTES counts it
        self._recorded_bytes = 0
        self._dropped = 0
        self._retry_delays: list[float] = []
        self._now = 0.0
        self.add_pets(pets)

    def __repr__(self) -> str:
        return f"<FakeAnimalStore pets={len(self._service)} requests={len(self.requests)}>"

    # --- state ----------------------------------------------------------------------------

    def add_pets(self, pets: Iterable[Pet | Mapping[str, Any]]) -> None:
        """Put animals in the store (`Pet` objects or their JSON dicts); a pet with an existing id replaces it.

        Ids the store assigns afterwards continue after the highest one present.
        Every item is checked before any is added; an ``id`` or ``categoryId``
        outside int64 is refused, as the interface's ``format: int64`` says.
        """
        checked = [item if isinstance(item, Pet) else Pet.from_dict(item) for item in pets]
        for index, pet in enumerate(checked):
            for field, value in (("id", pet.id), ("categoryId", pet.category_id)):
                if not is_int64(value):
                    raise ClientValidationError(
                        f"pets[{index}].{field} must be an integer within int64, got {value!r:.40}",
                        argument="pets",
                        rule="ids and categoryIds within int64",
                        value=value,
                    )
        self._service.add(checked)

    def reset(self) -> None:
        """Empty the store: no pets, requests, faults, delays or recorded retry delays; ids start at 1 again.

        `dropped_requests` is 0 again too.

        The `clock` keeps its time: it only moves forward, as clocks the clients read must.
        """
        self._service.clear()
        with self._lock:
            self._faults.clear()
            self._delays.clear()
            self._requests.clear()
            self._weights.clear()
            self._recorded_bytes = 0
            self._dropped = 0
            self._retry_delays.clear()

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
        with self._lock:
            return list(self._requests)

    @property
    def dropped_requests(self) -> int:
        """How many requests the recording dropped, oldest first, to stay within its bounds since the last `reset`.

        ``len(store.requests) + store.dropped_requests`` is every request
        received since then (read them while no request is arriving).
        """
        with self._lock:
            return self._dropped

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
        with self._lock:
            queued = [
                QueuedFault(
                    "status",
                    fault.remaining,
                    status=fault.status,
                    retry_after=fault.retry_after,
                    body=fault.body,
                    method=fault.method,
                )
                if fault.connection is None
                else QueuedFault(
                    "connection",
                    fault.remaining,
                    connection=cast("ConnectionFaultKind", fault.connection),
                    method=fault.method,
                )
                for fault in self._faults
            ]
            queued.extend(QueuedFault("delay", int(times), delay=seconds) for seconds, times in self._delays)
        return queued

    def clear_faults(self) -> int:
        """Drop every queued fault and delay (what `faults` lists); return how many entries were dropped.

        An entry is one call of `fail_next`, `fail_next_connection` or
        `delay_next`, whatever its ``times``. Pets, requests and the clock stay.
        The control API's ``DELETE /_fake/faults`` does the same.
        """
        with self._lock:
            count = len(self._faults) + len(self._delays)
            self._faults.clear()
            self._delays.clear()
        return count

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
        if not isinstance(cast(object, status), int) or isinstance(status, bool) or not 400 <= status <= 599:
            raise ClientValidationError(
                f"status must be an int from 400 to 599, got {status!r}",
                argument="status",
                rule="an int from 400 to 599",
                value=status,
            )
        check_times(times)
        if retry_after is not None and not retry_after_ok(retry_after):
            raise ClientValidationError(
                f"retry_after must be {RETRY_AFTER_RULE}, got {retry_after!r:.60}",
                argument="retry_after",
                rule=RETRY_AFTER_RULE,
                value=retry_after,
            )
        header = (
            None if retry_after is None else str(int(retry_after) if isinstance(retry_after, float) else retry_after)
        )
        only = _check_method(method)
        with self._lock:
            self._faults.append(Fault(status, times, header, body, method=only))

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
        if kind not in CONNECTION_FAULTS:
            raise ClientValidationError(
                f"kind must be one of {', '.join(CONNECTION_FAULTS)}, got {kind!r}",
                argument="kind",
                rule=f"one of {', '.join(CONNECTION_FAULTS)}",
                value=kind,
            )
        check_times(times)
        only = _check_method(method)
        with self._lock:
            self._faults.append(Fault(0, times, None, None, connection=kind, method=only))

    @property
    def retry_delays(self) -> list[float]:
        """The seconds each retry of a kit-made client would have slept, oldest first.

        Clients from `client`, `async_client` and the pytest fixtures do not
        sleep between retries: they record the delay here and go on, so a
        test of backoff or ``Retry-After`` takes milliseconds. They use no
        jitter, so the delays are the retry policy's exact values (0.5, 1.0,
        2.0, ... or the ``Retry-After`` given).
        """
        with self._lock:
            return list(self._retry_delays)

    def _slept(self, seconds: float) -> None:
        with self._lock:
            self._retry_delays.append(seconds)
            self._now += seconds

    def clock(self) -> float:
        """The store's clock, in seconds: the time its kit-made clients live in.

        It starts at 0 and moves only when such a client "sleeps" before a
        retry (by the delay) or a test calls `advance`. Their retry budgets
        count calls and retries in it, so a test of the budget runs at once.
        """
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Move the store's `clock` on by ``seconds`` (>= 0): a retry budget's window passes without waiting."""
        if not isinstance(cast(object, seconds), (int, float)) or isinstance(seconds, bool) or not 0 <= seconds < 1e12:
            raise ClientValidationError(
                f"seconds must be a number from 0 to 1e12, got {seconds!r}",
                argument="seconds",
                rule="a number from 0 to 1e12",
                value=seconds,
            )
        with self._lock:
            self._now += float(seconds)

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
        if not delay_ok(seconds):
            raise ClientValidationError(
                f"seconds must be {DELAY_RULE}, got {seconds!r}",
                argument="seconds",
                rule=DELAY_RULE,
                value=seconds,
            )
        check_times(times)
        with self._lock:
            self._delays.append([float(seconds), times])

    def next_delay(self) -> float:
        """Take the delay (if any) the next request must wait; the transports call this."""
        with self._lock:
            if not self._delays:
                return 0.0
            entry = self._delays[0]
            entry[1] -= 1
            if entry[1] <= 0:
                self._delays.popleft()
            return entry[0]

    # --- ways in ------------------------------------------------------------------------

    def client(
        self,
        *,
        api_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        total_timeout: float | None = DEFAULT_TOTAL_TIMEOUT,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        middleware: Sequence[Middleware] | None = None,
        retry_budget: RetryBudget | NotGiven | None = NOT_GIVEN,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        backend: BackendName | None = None,
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
        a forked child gets a fresh one). ``backend="urllib3"`` or
        ``"pyreqwest"``: the library needs a real socket, so the store serves
        itself on 127.0.0.1 for this client and stops when the client is
        closed (or collected).
        """
        import httpx

        from .._transport_sync import HttpxTransport
        from ._transport import FakeTransport

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
        key = self.api_key if api_key is None else api_key
        if _over_socket(backend, "httpx", ("urllib3", "pyreqwest"), "client"):
            return self._over_loopback(AnimalStoreClient, key, backend, options, self._slept)
        client = AnimalStoreClient(
            key, base_url=FAKE_BASE_URL, http_client=httpx.Client(transport=FakeTransport(self)), **options
        )
        wiring = Wiring(lambda: HttpxTransport(httpx.Client(transport=FakeTransport(self))), self._slept, self.clock)
        client._wire(wiring)  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]  # the client's one hook for the kit
        return client

    def async_client(
        self,
        *,
        api_key: str | None = None,
        timeout: float | httpx.Timeout | NotGiven | None = NOT_GIVEN,
        max_retries: int = DEFAULT_MAX_RETRIES,
        default_headers: Mapping[str, str] | None = None,
        total_timeout: float | None = DEFAULT_TOTAL_TIMEOUT,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        middleware: Sequence[AsyncMiddleware] | None = None,
        retry_budget: RetryBudget | NotGiven | None = NOT_GIVEN,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        backend: AsyncBackendName | None = None,
    ) -> AsyncAnimalStoreClient:
        """An `AsyncAnimalStoreClient` wired to this store; options and ``backend`` as for `client`.

        ``backend="aiohttp"`` or ``"pyreqwest"`` serves the store on
        127.0.0.1 for the client, as ``"urllib3"`` does for `client`. Like a client with an SDK-owned
        pool, it works from any event loop: the first call in a new loop
        starts a fresh transport there, so a client made once (a
        module-scoped fixture) serves tests that each run their own loop.
        """
        import httpx

        from .._transport_async import AsyncHttpxTransport
        from ._transport import AsyncFakeTransport

        async def slept(seconds: float) -> None:
            self._slept(seconds)

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
        key = self.api_key if api_key is None else api_key
        if _over_socket(backend, "httpx", ("aiohttp", "pyreqwest"), "async_client"):
            return self._over_loopback(AsyncAnimalStoreClient, key, backend, options, slept)
        client = AsyncAnimalStoreClient(
            key, base_url=FAKE_BASE_URL, http_client=httpx.AsyncClient(transport=AsyncFakeTransport(self)), **options
        )
        wiring = Wiring(
            lambda: AsyncHttpxTransport(httpx.AsyncClient(transport=AsyncFakeTransport(self))), slept, self.clock
        )
        client._wire(wiring)  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]  # the client's one hook for the kit
        return client

    def _over_loopback(
        self, cls: type[ClientT], key: str, backend: Any, options: dict[str, Any], sleep: Callable[[float], Any]
    ) -> ClientT:
        """A kit client on a library that needs a socket: over a server this store runs for it alone."""
        server = ExitStack()
        url = server.enter_context(self.serve())
        client = cls(key, base_url=url, backend=backend, **options)
        weakref.finalize(client, server.close)  # a client never closed still stops its server
        client._wire(Wiring(None, sleep, self.clock, server.close))  # pyright: ignore[reportPrivateUsage]
        return client

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
            client = store.adopt(AnimalStoreClient(store.api_key, base_url=url, backend="urllib3"))
            store.fail_next(503)
            assert client.with_raw_response.list_pets().attempts == 2  # at once: the 0.5 s went to retry_delays
            client.close()
        ```
        """
        if isinstance(client, AsyncAnimalStoreClient):

            async def slept(seconds: float) -> None:
                self._slept(seconds)

            client._wire(Wiring(None, slept, self.clock))  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]
        elif isinstance(cast(object, client), AnimalStoreClient):
            client._wire(Wiring(None, self._slept, self.clock))  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]
        else:
            raise ClientValidationError(
                f"client must be an AnimalStoreClient or an AsyncAnimalStoreClient, got {type(client).__name__}",
                argument="client",
                rule="an AnimalStoreClient or AsyncAnimalStoreClient",
                value=client,
            )
        return client

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
        kind = self._take_connection_fault(method.upper())
        if kind == "refused":
            return None, kind
        return self._handle(method, path, query, headers, body, take_fault=kind is None), kind

    def _handle(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes, *, take_fault: bool
    ) -> FakeResponse:
        method = method.upper()
        parsed_query = parse_qs(query, keep_blank_values=True)
        request_id = f"req_{uuid.uuid4().hex[:20]}"
        self._record(method, path, query, parsed_query, headers, body, request_id)
        fault = self._take_fault(method) if take_fault else None
        response = fault if fault is not None else self._service.answer(method, path, parsed_query, headers, body)
        response.headers["x-request-id"] = request_id
        return response

    def _record(
        self,
        method: str,
        path: str,
        raw_query: str,
        query: dict[str, list[str]],
        headers: Mapping[str, str],
        body: bytes,
        request_id: str,
    ) -> None:
        shown = {
            name: ("Bearer [redacted]" if value.startswith("Bearer ") else "[redacted]")
            if name == "authorization"
            else value
            for name, value in headers.items()
        }
        data = None
        weight = _RECORD_OVERHEAD + len(path) + len(raw_query)
        weight += sum(len(name) + len(value) + _FIELD_OVERHEAD for name, value in shown.items())
        weight += _FIELD_OVERHEAD * sum(len(values) for values in query.values())
        # Only the body of a request the service will serve is worth parsing: any other is 401
        # (a page's cross-site text/plain POST included), and one over the limit is 413.
        if body and len(body) <= MAX_BODY_BYTES and self._service.authorized(headers):
            try:
                data = json.loads(body, parse_constant=reject_constant)
            except (ValueError, RecursionError):
                data = None
            else:
                separators = body.count(b",") + body.count(b":") + body.count(b"{") + body.count(b"[")
                weight += len(body) + _JSON_OVERHEAD * separators
        with self._lock:
            self._requests.append(RecordedRequest(method, path, query, shown, data, request_id))
            self._weights.append(weight)
            self._recorded_bytes += weight
            while len(self._requests) > MAX_RECORDED_REQUESTS or (
                self._recorded_bytes > MAX_RECORDED_BYTES and len(self._requests) > 1
            ):
                self._requests.popleft()
                self._recorded_bytes -= self._weights.popleft()
                self._dropped += 1

    def _take(self, method: str, *, connection: bool) -> Fault | None:
        """The first queued fault ``method`` matches, used once, if it is of the kind asked for."""
        with self._lock:
            for fault in self._faults:
                if fault.method is None or fault.method == method:
                    break
            else:
                return None
            if (fault.connection is not None) != connection:
                return None
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.remove(fault)
        return fault

    def _take_connection_fault(self, method: str) -> ConnectionFaultKind | None:
        fault = self._take(method, connection=True)
        return None if fault is None else cast("ConnectionFaultKind", fault.connection)

    def _take_fault(self, method: str) -> FakeResponse | None:
        fault = self._take(method, connection=False)
        if fault is None:
            return None
        headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
        if fault.body is None:
            phrase = reason_phrase(fault.status, "Error")
            code = re.sub(r"\W+", "_", phrase.lower()).strip("_")
            return error_response(fault.status, code, f"Injected fault: {fault.status} {phrase}", headers)
        if isinstance(fault.body, (str, bytes)):
            content = fault.body.encode() if isinstance(fault.body, str) else fault.body
            return FakeResponse(fault.status, {"Content-Type": "text/html; charset=utf-8", **headers}, content)
        return ok(fault.status, fault.body, headers)
