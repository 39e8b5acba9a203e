"""The control API of the fake store's HTTP server: another process seeds it, injects faults and reads requests.

It lives under `CONTROL_PREFIX`, outside the interface's ``/v1`` base path,
so it can never shadow an operation; the server answers it only when started
with ``control=True`` (``--control`` on the command line) and refuses it
with 403 otherwise. Requests to it are not recorded in ``store.requests``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .._exceptions import AnimalStoreError
from ._messages import FakeResponse, RecordedRequest, error_response

if TYPE_CHECKING:
    from ._store import FakeAnimalStore

__all__ = ["CONTROL_PREFIX", "control"]

CONTROL_PREFIX = "/_fake"
"""Where the control API lives on the fake store's server (``http://127.0.0.1:<port>/_fake/...``)."""


def _json(status: int, data: object) -> FakeResponse:
    return FakeResponse(status, {"Content-Type": "application/json"}, json.dumps(data).encode())


def control(  # noqa: PLR0911 (one return per endpoint reads best)
    store: FakeAnimalStore, method: str, path: str, body: bytes, *, enabled: bool
) -> FakeResponse:
    """Answer one control request (``path`` starts with `CONTROL_PREFIX`)."""
    if not enabled:
        return error_response(
            403,
            "control_disabled",
            f"The control API ({CONTROL_PREFIX}/...) is off; start the server with --control "
            "(or store.serve(control=True)) to use it.",
        )
    route = (method, path.removeprefix(CONTROL_PREFIX))
    try:
        data: Any = json.loads(body) if body else None
        if route == ("POST", "/reset"):
            store.reset()
            return _json(200, {"pets": 0})
        if route == ("POST", "/pets"):
            if not isinstance(data, list):
                return error_response(400, "invalid_body", "POST /_fake/pets takes a JSON array of pets.")
            store.add_pets(data)  # pyright: ignore[reportUnknownArgumentType]
            return _json(200, {"pets": len(store.pets)})
        if route == ("GET", "/pets"):
            return _json(200, [pet.to_dict() for pet in store.pets])
        if route == ("GET", "/requests"):
            return _json(200, [_recorded(request) for request in store.requests])
        if route == ("POST", "/faults"):
            return _fault(store, data)
    except (ValueError, TypeError, AnimalStoreError) as exc:  # bad JSON, bad pets, bad fault arguments
        return error_response(400, "invalid_body", str(exc)[:500])
    return error_response(
        404,
        "not_found",
        f"No control endpoint {method} {path}; there are POST {CONTROL_PREFIX}/reset, POST and GET "
        f"{CONTROL_PREFIX}/pets, GET {CONTROL_PREFIX}/requests and POST {CONTROL_PREFIX}/faults.",
    )


def _recorded(request: RecordedRequest) -> dict[str, Any]:
    return {
        "method": request.method,
        "path": request.path,
        "query": request.query,
        "headers": request.headers,
        "json": request.json,
        "requestId": request.request_id,
    }


def _fault(store: FakeAnimalStore, data: object) -> FakeResponse:
    """``{"status": 503, "times": 2, "retryAfter": 3}``, ``{"connection": "reset"}`` or ``{"delay": 1.5}``."""
    if not isinstance(data, dict):
        return error_response(400, "invalid_body", 'POST /_fake/faults takes a JSON object, e.g. {"status": 503}.')
    spec: dict[str, Any] = dict(data)  # pyright: ignore[reportUnknownArgumentType]
    times = spec.pop("times", 1)
    kinds = [key for key in ("status", "connection", "delay") if key in spec]
    if len(kinds) != 1:
        return error_response(400, "invalid_body", 'A fault needs exactly one of "status", "connection" or "delay".')
    kind = kinds[0]
    if kind == "status":
        store.fail_next(
            spec.pop("status"), times=times, retry_after=spec.pop("retryAfter", None), body=spec.pop("body", None)
        )
    elif kind == "connection":
        store.fail_next_connection(spec.pop("connection"), times=times)
    else:
        store.delay_next(spec.pop("delay"), times=times)
    if spec:
        return error_response(400, "invalid_body", f"Unknown fault fields: {', '.join(sorted(spec))}.")
    return _json(200, {"queued": kind, "times": times})
