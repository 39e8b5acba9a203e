"""What goes in and out of the fake store: recorded requests, answers, Error bodies, and the checks of fault values.

No state and no I/O: the store (``_store``), its operations (``_service``),
its fault queue, the server, the control API and the transports all build on these.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, Literal, cast, get_args

import attrs

from animalstore_client._core.exceptions import ClientValidationError
from animalstore_client._core.validation import INT64_MAX, INT64_MIN

__all__ = [
    "FAKE_BASE_URL",
    "MAX_BODY_BYTES",
    "MAX_DELAY",
    "MAX_RETRY_AFTER",
    "MAX_TIMES",
    "ConnectionFaultKind",
    "FakeResponse",
    "RecordedRequest",
    "error_response",
    "sleep",
]

ConnectionFaultKind = Literal["refused", "reset", "timeout"]
"""What `FakeAnimalStore.fail_next_connection` does to a request.

- ``"refused"``: the request never reaches the store (nothing is recorded or stored).
- ``"reset"``: the store acts on the request, then the connection drops before the answer.
- ``"timeout"``: the store acts on the request, and the answer never comes in time.
"""
CONNECTION_FAULTS: tuple[str, ...] = get_args(ConnectionFaultKind)

FAKE_BASE_URL = "https://fake.animalstore.invalid/v1"
"""The base URL of clients made by `FakeAnimalStore.client`; nothing resolves it."""
MAX_BODY_BYTES = 1024 * 1024
"""Request bodies larger than this get 413."""
MAX_TIMES = 1_000_000
"""The most requests one injected fault or delay may cover (``times``)."""
MAX_DELAY = 300.0
"""The longest injected delay, in seconds: longer than any client timeout a test sets, short enough to end."""
MAX_RETRY_AFTER = 86_400
"""The largest number of seconds an injected ``Retry-After`` may hold (a day)."""


@attrs.frozen
class RecordedRequest:
    """A request as the fake received it; the API key is redacted from ``headers``.

    ``query`` holds each query parameter's values as a list, in the order
    sent, as `urllib.parse.parse_qs` gives them (blank values kept):
    ``GET /v1/pets?limit=5&status=sold`` is recorded with
    ``query == {"limit": ["5"], "status": ["sold"]}``, so a test compares
    whole lists or reads ``request.query["limit"][0]``; a request without a
    query has ``{}``. ``path`` is the URL path with the ``/v1`` prefix
    (``"/v1/pets"``), ``method`` is upper-case and ``headers`` has
    lower-case names.
    """

    method: str
    path: str
    query: dict[str, list[str]]
    """Each query parameter's values, in the order sent: ``{"limit": ["5"]}`` for ``?limit=5``."""
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


class BadRequest(Exception):
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


def ok(status: int, data: object, headers: Mapping[str, str] | None = None) -> FakeResponse:
    return FakeResponse(status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(data).encode())


def reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def describe(value: object) -> str:
    # Values come from a parsed JSON body, so they always dump.
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_int64(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value <= INT64_MAX


def json_object(headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    if len(body) > MAX_BODY_BYTES:
        raise BadRequest(413, "payload_too_large", f"The body is {len(body)} bytes; the limit is {MAX_BODY_BYTES}.")
    media_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise BadRequest(
            400, "invalid_content_type", f"Content-Type must be application/json, got {media_type or 'none'!r}"
        )
    try:
        data = json.loads(body.decode("utf-8"), parse_constant=reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:  # ValueError includes integers of 4300+ digits
        raise BadRequest(400, "invalid_json", f"The body is not valid JSON: {exc}") from exc
    except RecursionError:
        raise BadRequest(400, "invalid_json", "The body's JSON is nested too deeply.") from None
    if not isinstance(data, dict):
        raise BadRequest(400, "invalid_body", f"The body must be a JSON object, got {type(data).__name__}")
    return cast("dict[str, Any]", data)


_HEADER_TEXT = re.compile(r"[\x20-\x7e]{1,200}")
"""What an injected ``Retry-After`` string may hold: visible ASCII and spaces, so it can never split a header."""
TIMES_RULE = f"an int from 1 to {MAX_TIMES:,}"
DELAY_RULE = f"a finite number of seconds from 0 to {MAX_DELAY:g}"
RETRY_AFTER_RULE = (
    f"a number of seconds from 0 to {MAX_RETRY_AFTER:,}, or a date of at most 200 visible ASCII characters"
)


def is_number(value: object) -> bool:
    """An int or float that is finite (not bool, inf or nan)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) if isinstance(value, float) else True


def times_ok(times: object) -> bool:
    return isinstance(times, int) and not isinstance(times, bool) and 1 <= times <= MAX_TIMES


def delay_ok(seconds: object) -> bool:
    return is_number(seconds) and 0 <= seconds <= MAX_DELAY  # type: ignore[operator]


def retry_after_ok(value: object) -> bool:
    if isinstance(value, str):
        return _HEADER_TEXT.fullmatch(value) is not None
    return is_number(value) and 0 <= value <= MAX_RETRY_AFTER  # type: ignore[operator]


def check_times(times: object) -> None:
    if not times_ok(times):
        raise ClientValidationError(
            f"times must be {TIMES_RULE}, got {times!r}", argument="times", rule=TIMES_RULE, value=times
        )


def sleep(seconds: float) -> None:
    """Block for ``seconds``; the server thread's way of delaying."""
    if seconds > 0:
        time.sleep(seconds)


_PHRASES = {status.value: status.phrase for status in HTTPStatus}


def reason_phrase(status: int, default: str) -> str:
    """The standard reason phrase of ``status``, or ``default`` for a status HTTP does not name."""
    return _PHRASES.get(status, default)
