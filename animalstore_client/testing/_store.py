"""The in-memory animal store: every rule of the interface, answered without I/O.

`FakeAnimalStore.handle` takes a request's parts and returns a `FakeResponse`;
the httpx transports and the HTTP server in this package only carry bytes to
and from it, so both ways in behave identically.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Generator, Iterable, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from http import HTTPStatus
from typing import Any, Literal, cast, get_args
from urllib.parse import parse_qs

import attrs
import httpx

from .._base_client import DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RETRIES, DEFAULT_TOTAL_TIMEOUT, Wiring
from .._client_async import AsyncAnimalStoreClient
from .._client_sync import AnimalStoreClient
from .._exceptions import ClientValidationError
from .._models import Pet, PetStatus
from .._validation import INT64_MAX, INT64_MIN, LIMIT_MAX, LIMIT_MIN, NOT_GIVEN, NotGiven, check_api_key

__all__ = [
    "FAKE_BASE_URL",
    "MAX_BODY_BYTES",
    "ConnectionFaultKind",
    "FakeAnimalStore",
    "FakeResponse",
    "RecordedRequest",
]

ConnectionFaultKind = Literal["refused", "reset", "timeout"]
"""What `FakeAnimalStore.fail_next_connection` does to a request.

- ``"refused"``: the request never reaches the store (nothing is recorded or stored).
- ``"reset"``: the store acts on the request, then the connection drops before the answer.
- ``"timeout"``: the store acts on the request, and the answer never comes in time.
"""
_CONNECTION_FAULTS: tuple[str, ...] = get_args(ConnectionFaultKind)

FAKE_BASE_URL = "https://fake.animalstore.invalid/v1"
"""The base URL of clients made by `FakeAnimalStore.client`; nothing resolves it."""
MAX_BODY_BYTES = 1024 * 1024
"""Request bodies larger than this get 413."""
SUNSET = "Thu, 05 Dec 2030 00:00:00 GMT"
"""RFC 8594 ``Sunset`` of ``GET /pets/{petId}``."""
# RFC 9745 wants the date the deprecation took effect; the interface gives
# none, so the fake states the start of 2026, before this SDK's first release.
DEPRECATION = "@1767225600"

_PREFIX = "/v1"
_PET_PATH = re.compile(r"^/pets/([^/]+)$")
_STATUSES = [member.value for member in PetStatus]
_DIGITS = re.compile(r"[0-9]+")
_SIGNED = re.compile(r"-?[0-9]{1,19}")
_LIST_PARAMETERS = ("limit", "status")


@attrs.frozen
class RecordedRequest:
    """A request as the fake received it; the API key is redacted from ``headers``."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    json: Any
    """The parsed JSON body, or ``None`` when there was none or it was not JSON."""
    request_id: str = ""
    """The ``x-request-id`` the store answered with (``exc.request_id`` on the client side)."""


@attrs.frozen
class FakeResponse:
    """What the fake answers: status, headers and body bytes."""

    status: int
    headers: dict[str, str]
    content: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.content)


@attrs.define
class _Fault:
    status: int
    remaining: int
    retry_after: str | None
    body: object
    connection: str | None = None
    """A `ConnectionFaultKind`, or None for a status fault."""


class _BadRequest(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def error_response(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> FakeResponse:
    """An Error body (``code``, ``message``, ``status``) as the interface defines it."""
    body = json.dumps({"code": code, "message": message, "status": status}).encode()
    return FakeResponse(status, {"Content-Type": "application/json", **(headers or {})}, body)


def _ok(status: int, data: object, headers: Mapping[str, str] | None = None) -> FakeResponse:
    return FakeResponse(status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(data).encode())


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _describe(value: object) -> str:
    # Values come from a parsed JSON body, so they always dump.
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int64(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value <= INT64_MAX


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
    is 404, and every 400 names the offending field. It is thread-safe.

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
        self._lock = threading.Lock()
        self._pets: dict[int, Pet] = {}
        self._ids = itertools.count(1)
        self._faults: deque[_Fault] = deque()
        self._delays: deque[list[float]] = deque()
        self._requests: list[RecordedRequest] = []
        self._retry_delays: list[float] = []
        self.add_pets(pets)

    def __repr__(self) -> str:
        return f"<FakeAnimalStore pets={len(self._pets)} requests={len(self._requests)}>"

    # --- state ----------------------------------------------------------------------------

    def add_pets(self, pets: Iterable[Pet | Mapping[str, Any]]) -> None:
        """Put animals in the store (`Pet` objects or their JSON dicts); a pet with an existing id replaces it.

        Ids the store assigns afterwards continue after the highest one present.
        Every item is checked before any is added.
        """
        checked = [item if isinstance(item, Pet) else Pet.from_dict(item) for item in pets]
        with self._lock:
            for pet in checked:
                self._pets[pet.id] = pet
            self._ids = itertools.count(max(self._pets, default=0) + 1)

    def reset(self) -> None:
        """Empty the store: no pets, requests, faults, delays or recorded retry delays; ids start at 1 again."""
        with self._lock:
            self._pets.clear()
            self._ids = itertools.count(1)
            self._faults.clear()
            self._delays.clear()
            self._requests.clear()
            self._retry_delays.clear()

    # --- inspection and fault injection -------------------------------------------------

    @property
    def api_key(self) -> str:
        """The first accepted key, which `client` and `async_client` use."""
        return self._api_keys[0]

    @property
    def pets(self) -> list[Pet]:
        """A snapshot of the animals in the store, by id."""
        with self._lock:
            return [self._pets[pet_id] for pet_id in sorted(self._pets)]

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received, oldest first."""
        with self._lock:
            return list(self._requests)

    def fail_next(
        self, status: int, *, times: int = 1, retry_after: float | str | None = None, body: object = None
    ) -> None:
        """Answer the next ``times`` requests with ``status`` instead of serving them.

        ``retry_after`` sets a ``Retry-After`` header (seconds or an HTTP-date).
        ``body`` replaces the Error body: a ``str`` or ``bytes`` is sent as
        ``text/html`` (a proxy's page), anything else as JSON. Faults queue
        up in the order they were added.
        """
        if not isinstance(cast(object, status), int) or isinstance(status, bool) or not 400 <= status <= 599:
            raise ClientValidationError(
                f"status must be an int from 400 to 599, got {status!r}",
                argument="status",
                rule="an int from 400 to 599",
                value=status,
            )
        _check_times(times)
        header = (
            None if retry_after is None else str(int(retry_after) if isinstance(retry_after, float) else retry_after)
        )
        with self._lock:
            self._faults.append(_Fault(status, times, header, body))

    def fail_next_connection(self, kind: ConnectionFaultKind, *, times: int = 1) -> None:
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
        seconds pass (``"timeout"``). Faults of both kinds queue in the order
        they were added.
        """
        if kind not in _CONNECTION_FAULTS:
            raise ClientValidationError(
                f"kind must be one of {', '.join(_CONNECTION_FAULTS)}, got {kind!r}",
                argument="kind",
                rule=f"one of {', '.join(_CONNECTION_FAULTS)}",
                value=kind,
            )
        _check_times(times)
        with self._lock:
            self._faults.append(_Fault(0, times, None, None, connection=kind))

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

    def delay_next(self, seconds: float, *, times: int = 1) -> None:
        """Wait ``seconds`` before answering each of the next ``times`` requests.

        The request is served at once and only the answer is late, so a
        create whose answer times out has still stored its pet, as on a
        real, slow service.

        Through the in-process transport a delay longer than the request's
        read timeout raises `httpx.ReadTimeout` after that timeout, as a slow
        server would.
        """
        if not isinstance(cast(object, seconds), (int, float)) or isinstance(seconds, bool) or seconds < 0:
            raise ClientValidationError(
                f"seconds must be a number >= 0, got {seconds!r}",
                argument="seconds",
                rule="a number >= 0",
                value=seconds,
            )
        _check_times(times)
        with self._lock:
            self._delays.extend([float(seconds)] for _ in range(times))

    def next_delay(self) -> float:
        """Take the delay (if any) the next request must wait; the transports call this."""
        with self._lock:
            return self._delays.popleft()[0] if self._delays else 0.0

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
    ) -> AnimalStoreClient:
        """An `AnimalStoreClient` wired to this store in-process (no sockets).

        The options are the client constructor's, with the same defaults;
        ``api_key`` defaults to the store's first key (pass another to test a
        wrong one). ``base_url`` and ``http_client`` are the kit's to set, and
        ``environment`` and ``backend`` choose where and how to connect, so
        none of the four is taken. Retries do not sleep: the delays go to
        `retry_delays`. The client owns its in-process transport: closing it
        closes that, and a forked child gets a fresh one.
        """
        import httpx

        from .._transport_sync import HttpxTransport
        from ._transport import FakeTransport

        client = AnimalStoreClient(
            self.api_key if api_key is None else api_key,
            base_url=FAKE_BASE_URL,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            total_timeout=total_timeout,
            max_response_bytes=max_response_bytes,
            http_client=httpx.Client(transport=FakeTransport(self)),
        )
        wiring = Wiring(lambda: HttpxTransport(httpx.Client(transport=FakeTransport(self))), self._slept)
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
    ) -> AsyncAnimalStoreClient:
        """An `AsyncAnimalStoreClient` wired to this store in-process (no sockets); options as for `client`.

        Like a client with an SDK-owned pool, it works from any event loop:
        the first call in a new loop starts a fresh in-process transport
        there, so a client made once (a module-scoped fixture) serves tests
        that each run their own loop.
        """
        import httpx

        from .._transport_async import AsyncHttpxTransport
        from ._transport import AsyncFakeTransport

        async def slept(seconds: float) -> None:
            self._slept(seconds)

        client = AsyncAnimalStoreClient(
            self.api_key if api_key is None else api_key,
            base_url=FAKE_BASE_URL,
            timeout=timeout,
            max_retries=max_retries,
            default_headers=default_headers,
            total_timeout=total_timeout,
            max_response_bytes=max_response_bytes,
            http_client=httpx.AsyncClient(transport=AsyncFakeTransport(self)),
        )
        wiring = Wiring(lambda: AsyncHttpxTransport(httpx.AsyncClient(transport=AsyncFakeTransport(self))), slept)
        client._wire(wiring)  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]  # the client's one hook for the kit
        return client

    @contextmanager
    def serve(self, *, port: int = 0, control: bool = False) -> Generator[str]:
        """Serve this store over HTTP on 127.0.0.1 in a background thread; yields the base URL.

        ``port=0`` picks a free port. The server stops when the block exits.
        ``control=True`` turns on the control API under
        ``http://127.0.0.1:<port>/_fake/`` (reset, seed pets, inject faults,
        read requests) for a process that cannot reach this object.
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
        kind = self._take_connection_fault()
        if kind == "refused":
            return None, kind
        return self._handle(method, path, query, headers, body, take_fault=kind is None), kind

    def _handle(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes, *, take_fault: bool
    ) -> FakeResponse:
        method = method.upper()
        parsed_query = parse_qs(query, keep_blank_values=True)
        request_id = f"req_{uuid.uuid4().hex[:20]}"
        self._record(method, path, parsed_query, headers, body, request_id)
        fault = self._take_fault() if take_fault else None
        if fault is not None:
            response = fault
        else:
            response = self._route(method, path, parsed_query, headers, body)
            if _PET_PATH.match(path.removeprefix(_PREFIX)) and path.startswith(_PREFIX + "/"):
                response.headers.update({"Deprecation": DEPRECATION, "Sunset": SUNSET})
        response.headers["x-request-id"] = request_id
        return response

    def _record(
        self,
        method: str,
        path: str,
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
        try:
            data = json.loads(body, parse_constant=_reject_constant) if body else None
        except (ValueError, RecursionError):
            data = None
        with self._lock:
            self._requests.append(RecordedRequest(method, path, query, shown, data, request_id))

    def _take_connection_fault(self) -> ConnectionFaultKind | None:
        with self._lock:
            if not self._faults or self._faults[0].connection is None:
                return None
            fault = self._faults[0]
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.popleft()
        return cast("ConnectionFaultKind", fault.connection)

    def _take_fault(self) -> FakeResponse | None:
        with self._lock:
            if not self._faults or self._faults[0].connection is not None:
                return None
            fault = self._faults[0]
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.popleft()
        headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
        if fault.body is None:
            phrase = HTTPStatus(fault.status).phrase if fault.status in HTTPStatus._value2member_map_ else "Error"
            code = re.sub(r"\W+", "_", phrase.lower()).strip("_")
            return error_response(fault.status, code, f"Injected fault: {fault.status} {phrase}", headers)
        if isinstance(fault.body, (str, bytes)):
            content = fault.body.encode() if isinstance(fault.body, str) else fault.body
            return FakeResponse(fault.status, {"Content-Type": "text/html; charset=utf-8", **headers}, content)
        return _ok(fault.status, fault.body, headers)

    def _route(  # noqa: PLR0911 (one return per route reads best)
        self, method: str, path: str, query: dict[str, list[str]], headers: Mapping[str, str], body: bytes
    ) -> FakeResponse:
        authorization = headers.get("authorization", "")
        scheme, _, key = authorization.partition(" ")
        if scheme != "Bearer" or key not in self._api_keys:
            reason = (
                "missing"
                if not authorization
                else "not of the form 'Bearer <API_KEY>'"
                if scheme != "Bearer" or not key
                else "not valid"
            )
            return error_response(
                401, "unauthorized", f"The Authorization header is {reason}.", {"WWW-Authenticate": "Bearer"}
            )
        if not path.startswith(_PREFIX + "/"):
            return error_response(404, "not_found", f"No resource at {path}.")
        local = path.removeprefix(_PREFIX)
        try:
            if local == "/pets":
                if method == "GET":
                    return self._list(query)
                if method == "POST":
                    return self._create(headers, body)
                return _not_allowed(method, "GET, POST")
            match = _PET_PATH.match(local)
            if match:
                if method == "GET":
                    return self._get(match.group(1))
                return _not_allowed(method, "GET")
            if local == "/messages":
                if method == "POST":
                    return self._message(headers, body)
                return _not_allowed(method, "POST")
        except _BadRequest as exc:
            return error_response(exc.status, exc.code, exc.message, exc.headers)
        return error_response(404, "not_found", f"No resource at {path}.")

    def _list(self, query: dict[str, list[str]]) -> FakeResponse:
        unknown = [name for name in query if name not in _LIST_PARAMETERS]
        if unknown:
            # Strict, so a misspelt parameter (limt=5) fails a test instead of being ignored.
            raise _BadRequest(
                400,
                "invalid_parameter",
                f"Unknown query parameter {unknown[0][:40]!r}; GET /pets takes {' and '.join(_LIST_PARAMETERS)}.",
            )
        limit = 20
        if "limit" in query:
            values = query["limit"]
            raw = values[0]
            # The length check first: int() of thousands of digits raises.
            if len(values) > 1 or not _DIGITS.fullmatch(raw) or len(raw) > 3 or not LIMIT_MIN <= int(raw) <= LIMIT_MAX:
                raise _BadRequest(
                    400, "invalid_parameter", f"limit: must be an integer from 1 to 100, got {', '.join(values)[:40]!r}"
                )
            limit = int(raw)
        wanted: str | None = None
        if "status" in query:
            values = query["status"]
            if len(values) > 1 or values[0] not in _STATUSES:
                raise _BadRequest(
                    400,
                    "invalid_parameter",
                    f"status: must be one of {', '.join(_STATUSES)}, got {', '.join(values)!r}",
                )
            wanted = values[0]
        with self._lock:
            chosen = [p for _, p in sorted(self._pets.items()) if wanted is None or p.status == wanted][:limit]
        return _ok(200, [pet.to_dict() for pet in chosen])

    def _create(self, headers: Mapping[str, str], body: bytes) -> FakeResponse:
        data = _json_object(headers, body)
        problems: list[str] = []
        name = data.get("name")
        if "name" not in data:
            problems.append("name: required")
        elif not isinstance(name, str):
            problems.append(f"name: must be a string, got {_describe(name)}")
        category_id = data.get("categoryId")
        if "categoryId" not in data:
            problems.append("categoryId: required")
        elif not _is_int64(category_id):
            problems.append(f"categoryId: must be an integer within int64, got {_describe(category_id)}")
        status = data.get("status")
        if "status" in data and status not in _STATUSES:
            problems.append(f"status: must be one of {', '.join(_STATUSES)}, got {_describe(status)}")
        if problems:
            raise _BadRequest(400, "invalid_body", "; ".join(problems))
        with self._lock:
            pet = Pet(
                id=next(self._ids),
                name=str(name),
                category_id=int(category_id),  # type: ignore[arg-type]  # checked by _is_int64
                status=PetStatus(status) if status is not None else None,
            )
            self._pets[pet.id] = pet
        return _ok(201, pet.to_dict())

    def _get(self, raw_id: str) -> FakeResponse:
        if not _SIGNED.fullmatch(raw_id) or not INT64_MIN <= int(raw_id) <= INT64_MAX:
            raise _BadRequest(400, "invalid_parameter", f"petId: must be an integer within int64, got {raw_id[:40]!r}")
        with self._lock:
            pet = self._pets.get(int(raw_id))
        if pet is None:
            return error_response(404, "not_found", f"No pet with id {int(raw_id)}.")
        return _ok(200, pet.to_dict())

    def _message(self, headers: Mapping[str, str], body: bytes) -> FakeResponse:
        data = _json_object(headers, body)
        message = data.get("message")
        if not isinstance(message, str):
            problem = "required" if "message" not in data else f"must be a string, got {_describe(message)}"
            raise _BadRequest(400, "invalid_body", f"message: {problem}")
        reply = {
            "id": f"msg_{uuid.uuid4().hex[:16]}",
            "message": message,
            "status": "queued",
            "createdAt": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        }
        return _ok(202, reply)


def _not_allowed(method: str, allowed: str) -> FakeResponse:
    return error_response(
        405, "method_not_allowed", f"{method} is not allowed here; use {allowed}.", {"Allow": allowed}
    )


def _json_object(headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    if len(body) > MAX_BODY_BYTES:
        raise _BadRequest(413, "payload_too_large", f"The body is {len(body)} bytes; the limit is {MAX_BODY_BYTES}.")
    media_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise _BadRequest(
            400, "invalid_content_type", f"Content-Type must be application/json, got {media_type or 'none'!r}"
        )
    try:
        data = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:  # ValueError includes integers of 4300+ digits
        raise _BadRequest(400, "invalid_json", f"The body is not valid JSON: {exc}") from exc
    except RecursionError:
        raise _BadRequest(400, "invalid_json", "The body's JSON is nested too deeply.") from None
    if not isinstance(data, dict):
        raise _BadRequest(400, "invalid_body", f"The body must be a JSON object, got {type(data).__name__}")
    return cast("dict[str, Any]", data)


def _check_times(times: object) -> None:
    if not isinstance(times, int) or isinstance(times, bool) or times < 1:
        raise ClientValidationError(
            f"times must be an int >= 1, got {times!r}", argument="times", rule="an int >= 1", value=times
        )


def sleep(seconds: float) -> None:
    """Block for ``seconds``; the server thread's way of delaying."""
    if seconds > 0:
        time.sleep(seconds)
