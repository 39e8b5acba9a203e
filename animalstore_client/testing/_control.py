"""The control API of the fake store's HTTP server: another process seeds it, injects faults and reads requests.

It lives under `CONTROL_PREFIX`, outside the interface's ``/v1`` base path,
so it can never shadow an operation; the server answers it only when started
with ``control=True`` (``--control`` on the command line) and refuses it
with 403 otherwise. Requests to it are not recorded in ``store.requests``.

Its routes, declared once in `_ENDPOINTS`: ``POST /reset``, ``POST`` and
``GET /pets``, ``GET /requests`` (with the count
`FakeAnimalStore.dropped_requests` in a ``Fake-Dropped-Requests`` header),
and ``POST``, ``GET`` and ``DELETE /faults`` (queue one, list what is
queued as `FakeAnimalStore.faults` does, clear them as
`FakeAnimalStore.clear_faults` does).

It trusts no browser. A web page open in the developer's browser can send
requests to 127.0.0.1, so the control API answers only requests that no page
can make:

- ``Host`` must be the loopback address and port the server listens on
  (``127.0.0.1:<port>`` or ``localhost:<port>``): a page that rebinds its own
  domain name to 127.0.0.1 still sends its own name (403 ``foreign_host``);
- an ``Origin`` header, which browsers add to every cross-site POST, must be
  the server's own (403 ``foreign_origin``);
- a POST must say ``Content-Type: application/json``, which a page cannot
  send across sites without a CORS preflight that this server never
  approves (415 ``unsupported_media_type``); a DELETE needs such a
  preflight whatever it sends, and browsers add ``Origin`` to it.

Every refusal happens before anything changes. Fault values are range-checked
(``times`` from 1 to `MAX_TIMES`, ``delay`` finite from 0 to `MAX_DELAY`
seconds, ``retryAfter`` from 0 to `MAX_RETRY_AFTER` seconds or a short
date) and a 400 names the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from animalstore_client._core.exceptions import AnimalStoreError
from animalstore_client._core.show import show

from ._faults import METHODS
from ._messages import (
    CONNECTION_FAULTS,
    DELAY_RULE,
    RETRY_AFTER_RULE,
    TIMES_RULE,
    FakeResponse,
    RecordedRequest,
    delay_ok,
    describe,
    error_response,
    ok,
    reject_constant,
    retry_after_ok,
    times_ok,
)

if TYPE_CHECKING:
    from ._faults import QueuedFault
    from ._store import FakeAnimalStore

__all__ = ["CONTROL_PREFIX", "control", "is_control"]

CONTROL_PREFIX = "/_fake"
"""Where the control API lives on the fake store's server (``http://127.0.0.1:<port>/_fake/...``)."""
_LOOPBACK_NAMES = ("127.0.0.1", "localhost")
_FAULT_FIELDS = {
    "status": ("times", "retryAfter", "body", "method"),
    "connection": ("times", "method"),
    "delay": ("times",),
}


def is_control(path: str) -> bool:
    """Whether a request to ``path`` is for the control API."""
    return path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/")


def _invalid(message: str) -> FakeResponse:
    return error_response(400, "invalid_body", message)


def control(
    store: FakeAnimalStore,
    method: str,
    path: str,
    fields: Sequence[tuple[str, str]],
    body: bytes,
    *,
    enabled: bool,
    port: int,
    tls: bool = False,
) -> FakeResponse:
    """Answer one control request (``path`` starts with `CONTROL_PREFIX`).

    ``fields`` are the request's header fields with lower-case names, in the
    order received; ``port`` and ``tls`` say where the server listens, which
    is what ``Host`` and ``Origin`` must name.
    """
    if not enabled:
        return error_response(
            403,
            "control_disabled",
            f"The control API ({CONTROL_PREFIX}/...) is off; start the server with --control "
            "(or store.serve(control=True)) to use it.",
        )
    refusal = _foreign(method, fields, port, tls)
    if refusal is not None:
        return refusal
    endpoint = _ENDPOINTS.get((method, path.removeprefix(CONTROL_PREFIX)))
    if endpoint is None:
        return error_response(
            404, "not_found", f"No control endpoint {method[:20]} {path[:80]}; there are {_listed()}."
        )
    data: Any = None
    if method == "POST":
        try:
            data = json.loads(body, parse_constant=reject_constant) if body.strip() else None
        except (ValueError, RecursionError) as exc:  # ValueError includes bad UTF-8 and 4300-digit integers
            reason = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
            return error_response(400, "invalid_json", f"The body is not valid JSON: {reason}")
    return endpoint(store, data)


def _reset(store: FakeAnimalStore, data: object) -> FakeResponse:
    store.reset()
    return ok(200, {"pets": 0})


def _seed_pets(store: FakeAnimalStore, data: object) -> FakeResponse:
    if not isinstance(data, list):
        return _invalid(f"POST {CONTROL_PREFIX}/pets takes a JSON array of pets.")
    try:
        store.add_pets(data)  # pyright: ignore[reportUnknownArgumentType]
    except (ValueError, TypeError, AnimalStoreError) as exc:
        return _invalid(str(exc)[:500])
    return ok(200, {"pets": len(store.pets)})


def _list_pets(store: FakeAnimalStore, data: object) -> FakeResponse:
    return ok(200, [pet.to_dict() for pet in store.pets])


def _list_requests(store: FakeAnimalStore, data: object) -> FakeResponse:
    recorded = store.requests
    dropped = store.dropped_requests
    return ok(200, [_recorded(request) for request in recorded], {"Fake-Dropped-Requests": str(dropped)})


def _list_faults(store: FakeAnimalStore, data: object) -> FakeResponse:
    return ok(200, [_queued(fault) for fault in store.faults])


def _clear_faults(store: FakeAnimalStore, data: object) -> FakeResponse:
    return ok(200, {"cleared": store.clear_faults()})


def _foreign(method: str, fields: Sequence[tuple[str, str]], port: int, tls: bool) -> FakeResponse | None:
    """The refusal for a request a web page could have sent, or None for one from a local program."""
    scheme, default_port = ("https", 443) if tls else ("http", 80)
    authorities = {f"{name}:{port}" for name in _LOOPBACK_NAMES}
    if port == default_port:
        authorities.update(_LOOPBACK_NAMES)
    hosts = [value.strip().lower() for name, value in fields if name == "host"]
    if len(hosts) != 1 or hosts[0] not in authorities:
        shown = ", ".join(hosts)[:80] or "none"
        return error_response(
            403,
            "foreign_host",
            f"The control API answers only requests addressed to 127.0.0.1:{port} or localhost:{port} "
            f"(one Host header), got {shown!r}: a web page can point its own name at 127.0.0.1.",
        )
    origins = [value.strip().lower() for name, value in fields if name == "origin"]
    if any(origin not in {f"{scheme}://{authority}" for authority in authorities} for origin in origins):
        return error_response(
            403,
            "foreign_origin",
            f"The control API refuses requests from web pages (Origin {', '.join(origins)[:80]!r}); "
            "send them from a test or a script, which send no Origin.",
        )
    if method == "POST":
        types = [value for name, value in fields if name == "content-type"]
        media_type = types[-1].split(";", 1)[0].strip().lower() if types else ""
        if len(types) != 1 or media_type != "application/json":
            return error_response(
                415,
                "unsupported_media_type",
                f"A control POST must send Content-Type: application/json (even with no body), "
                f"got {media_type[:60] or 'none'!r}; other types are what a web page can send across sites.",
            )
    return None


def _recorded(request: RecordedRequest) -> dict[str, Any]:
    return {
        "method": request.method,
        "path": request.path,
        "query": request.query,
        "headers": request.headers,
        "json": request.json,
        "requestId": request.request_id,
    }


def _queued(fault: QueuedFault) -> dict[str, Any]:
    """A queued fault as ``GET /faults`` lists it: the fields ``POST /faults`` takes, ``times`` being what is left."""
    value = fault.status if fault.kind == "status" else fault.connection if fault.kind == "connection" else fault.delay
    shown: dict[str, Any] = {fault.kind: value, "times": fault.times}
    if fault.retry_after is not None:
        shown["retryAfter"] = fault.retry_after
    if fault.body is not None:
        shown["body"] = _plain(fault.body)
    if fault.method is not None:
        shown["method"] = fault.method
    return shown


def _plain(body: object) -> object:
    """A fault's body as JSON can carry it: as given if it can, bytes as text, anything else described."""
    if isinstance(body, (bytes, bytearray)):
        return bytes(body).decode("utf-8", "replace")
    try:
        json.dumps(body, allow_nan=False)
    except (TypeError, ValueError, RecursionError):  # an object, nan, an int of 4300+ digits, a cycle
        return show(body)
    return body


def _queue_fault(store: FakeAnimalStore, data: object) -> FakeResponse:  # noqa: PLR0911 (one return per refusal)
    """``{"status": 503, "times": 2, "retryAfter": 3}``, ``{"connection": "reset"}`` or ``{"delay": 1.5}``.

    Every field is checked before anything is queued, so a refused fault changes nothing.
    """
    if not isinstance(data, dict):
        return _invalid(f'POST {CONTROL_PREFIX}/faults takes a JSON object, e.g. {{"status": 503}}.')
    spec: dict[str, Any] = dict(data)  # pyright: ignore[reportUnknownArgumentType]
    kinds = [key for key in _FAULT_FIELDS if key in spec]
    if len(kinds) != 1:
        return _invalid('A fault needs exactly one of "status", "connection" or "delay".')
    kind = kinds[0]
    unknown = sorted(set(spec) - {kind, *_FAULT_FIELDS[kind]})
    if unknown:
        allowed = ", ".join(_FAULT_FIELDS[kind])
        return _invalid(f"Unknown fields for a {kind} fault: {', '.join(unknown)[:200]} (it takes {allowed}).")
    times = spec.get("times", 1)
    if not times_ok(times):
        return _invalid(f"times: must be {TIMES_RULE}, got {describe(times)}")
    only = spec.get("method")
    if only is not None and (not isinstance(only, str) or only.upper() not in METHODS):
        return _invalid(f"method: must be one of {', '.join(METHODS)}, got {describe(only)}")
    if kind == "status":
        status = spec["status"]
        if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
            return _invalid(f"status: must be an integer from 400 to 599, got {describe(status)}")
        retry_after = spec.get("retryAfter")
        if retry_after is not None and not retry_after_ok(retry_after):
            return _invalid(f"retryAfter: must be {RETRY_AFTER_RULE}, got {describe(retry_after)}")
        store.fail_next(status, times=times, retry_after=retry_after, body=spec.get("body"), method=only)
    elif kind == "connection":
        connection = spec["connection"]
        if connection not in CONNECTION_FAULTS:
            return _invalid(f"connection: must be one of {', '.join(CONNECTION_FAULTS)}, got {describe(connection)}")
        store.fail_next_connection(connection, times=times, method=only)
    else:
        delay = spec["delay"]
        if not delay_ok(delay):
            return _invalid(f"delay: must be {DELAY_RULE}, got {describe(delay)}")
        store.delay_next(delay, times=times)
    return ok(200, {"queued": kind, "times": times})


_ENDPOINTS: dict[tuple[str, str], Callable[[FakeAnimalStore, Any], FakeResponse]] = {
    ("POST", "/reset"): _reset,
    ("POST", "/pets"): _seed_pets,
    ("GET", "/pets"): _list_pets,
    ("GET", "/requests"): _list_requests,
    ("POST", "/faults"): _queue_fault,
    ("GET", "/faults"): _list_faults,
    ("DELETE", "/faults"): _clear_faults,
}
"""The control API, by method and path after `CONTROL_PREFIX`; a POST's handler gets its parsed JSON body."""


def _listed() -> str:
    """The endpoints as a 404 names them: "POST /_fake/reset, POST and GET /_fake/pets, ..."."""
    methods: dict[str, list[str]] = {}
    for method, path in _ENDPOINTS:
        methods.setdefault(path, []).append(method)
    entries = [f"{_and(names)} {CONTROL_PREFIX}{path}" for path, names in methods.items()]
    return ", ".join(entries[:-1]) + ", and " + entries[-1]


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
