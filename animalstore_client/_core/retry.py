"""The retry policy, as pure functions: whether to retry, and how long to wait first.

Both clients call `delay_after_response` and `delay_after_error` and do the
sleeping themselves, so the policy is written (and tested) once.

The central rule: a request that may have changed state on the service is
never repeated. One table says, for each way an attempt can end, whether it
is worth another try (`TRANSIENT_STATUSES`, any transport failure) and
whether the service may have acted on the request
(`status_may_have_been_processed`, `error_may_have_been_processed`). Reads
(GET, HEAD, OPTIONS) are retried on any transient outcome: a transport
failure, or 408, 429, 500, 502, 503 and 504. Anything else, `create_pet`
included, is retried exactly when the outcome is transient and the service
cannot have acted on it: a failure to connect (nothing was sent), a 429 and
a 503 carrying the service's own Error body. A read timeout, a 500, a 502, a
504 or a bare 503 (a gateway's, which may have passed the request on) on a
POST may follow a stored pet, so retrying could create a duplicate. The same
two functions give every `APIError` its ``may_have_been_processed``; the send
loop adds what it saw on the connection (``_core.wire``) and what earlier
attempts of the call may have done, and passes that as ``processed``.
"""

from __future__ import annotations

import email.utils
import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import cast

import httpx

INITIAL_DELAY = 0.5
"""Seconds before the first retry; each later retry waits twice as long."""
MAX_DELAY = 8.0
"""The longest backoff between two attempts."""
JITTER = 0.25
"""Random jitter shortens a backoff delay by up to this fraction, never lengthens it."""
MAX_RETRY_AFTER = 60.0
"""The longest ``Retry-After`` honoured; a longer one ends the retries."""

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""Answers that another attempt may turn into a success: the service was slow, busy or failing."""

# Failures that happen before any byte of the request leaves: a retry cannot
# repeat an action the service already took.
_NOTHING_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def is_service_error(body: bytes | None, status_code: int) -> bool:
    """Whether ``body`` is the service's own Error body for ``status_code``: ``code``, ``message``, ``status``.

    Every error the service sends carries one; a gateway's or a proxy's answer
    (Envoy's ``upstream connect error or disconnect/reset before headers``, an
    HTML page) does not, and proves nothing about what the service did.
    """
    if not body or body.lstrip()[:1] != b"{":
        return False
    try:
        parsed: object = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the recursion limit
        return False
    if not isinstance(parsed, dict):
        return False
    fields = cast("dict[str, object]", parsed)
    status = fields.get("status")
    return (
        isinstance(fields.get("code"), str)
        and isinstance(fields.get("message"), str)
        and type(status) is int
        and status == status_code
    )


def status_may_have_been_processed(status_code: int, service_error: bool = False) -> bool:
    """Whether the service may have acted on a request it answered with ``status_code``.

    No for an answer that turns the request away before acting on it: every
    4xx (malformed, unauthorised, forbidden, not found, in conflict,
    unprocessable, rate-limited) but 408, and a 503 (unavailable) that carries
    the service's own Error body (``service_error``, `is_service_error`). Yes
    for a 2xx (acted on, though the SDK may have refused its body), a 3xx, a
    408 (a proxy's, after it may have passed the request on), a bare 503 (a
    gateway's, sent after the upstream may have taken the request) and every
    other 5xx (the service failed, maybe after acting).
    """
    if 400 <= status_code <= 499:
        return status_code == 408
    return status_code != 503 or not service_error


def error_may_have_been_processed(error: Exception) -> bool:
    """Whether the service may have acted on a request whose attempt failed with ``error``.

    No only when nothing was sent: the connection was never made (refused,
    not resolved, timed out connecting) or no pooled connection came free.
    Any failure after sending began (a read timeout, a reset, a close before
    the whole answer) may follow the service's action.
    """
    return not isinstance(error, _NOTHING_SENT)


READ_RETRY_STATUSES = TRANSIENT_STATUSES
WRITE_RETRY_STATUSES = frozenset(
    s for s in TRANSIENT_STATUSES if not status_may_have_been_processed(s, service_error=True)
)
"""429, and 503 with the service's Error body: transient, and said before the request was acted on."""


def is_idempotent(method: str) -> bool:
    """Whether repeating ``method`` cannot change state on the service."""
    return method.upper() in IDEMPOTENT_METHODS


def backoff_delay(retry_number: int, jitter: float) -> float:
    """Seconds to wait before retry ``retry_number`` (1 for the first retry).

    ``jitter`` is a number in [0, 1) (``random.random()``); it shortens the
    delay by up to a quarter so that many clients do not retry in step.
    """
    base = min(INITIAL_DELAY * 2.0 ** (retry_number - 1), MAX_DELAY)
    return base * (1.0 - JITTER * jitter)


def _decimal(text: str) -> float | None:
    """A plain non-negative decimal (``7``, ``1.5``), or ``None``: no sign, exponent, ``inf`` or non-ASCII digit."""
    whole, dot, fraction = text.partition(".")
    # isdigit() alone accepts '²' and other digits float() refuses.
    if not (whole.isascii() and whole.isdigit()):
        return None
    if dot and not (fraction.isascii() and fraction.isdigit()):
        return None
    return float(text)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or HTTP-date), or ``None``.

    Delta-seconds may have a fraction (``1.5``), as some services send. An
    HTTP-date in the past means "now" (0 seconds); a value that is neither
    form is ignored (``None``).
    """
    if value is None:
        return None
    text = value.strip()
    seconds = _decimal(text)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    current = now if now is not None else datetime.now(timezone.utc)
    try:
        return max(0.0, (when - current).total_seconds())
    except OverflowError:  # a date so far off it cannot be subtracted: never worth waiting for
        return None


def parse_retry_after_ms(value: str | None) -> float | None:
    """Seconds to wait from a ``retry-after-ms`` value (milliseconds, a fraction allowed), or ``None``.

    Sent by several large APIs beside or instead of ``Retry-After``, and
    honoured before it: it is the more precise of the two.
    """
    if value is None:
        return None
    milliseconds = _decimal(value.strip())
    return None if milliseconds is None else milliseconds / 1000.0


def delay_after_response(
    method: str,
    status_code: int,
    headers: Mapping[str, str],
    *,
    retries_done: int,
    max_retries: int,
    jitter: float,
    now: datetime | None = None,
    processed: bool | None = None,
) -> float | None:
    """Seconds to wait before retrying after a response, or ``None`` to stop.

    ``processed`` is whether the service may have acted on the request in any
    attempt of the call so far (``None``: as ``status_code`` alone says); a
    request that is not idempotent is never sent again once it may have.
    """
    if retries_done >= max_retries:
        return None
    if is_idempotent(method):
        if status_code not in READ_RETRY_STATUSES:
            return None
    elif status_code not in WRITE_RETRY_STATUSES or (
        status_may_have_been_processed(status_code) if processed is None else processed
    ):
        return None
    retry_after = parse_retry_after_ms(headers.get("retry-after-ms"))
    if retry_after is None:
        retry_after = parse_retry_after(headers.get("retry-after"), now)
    if retry_after is not None:
        # The service asked for more patience than a caller should wait
        # inside one call: give the error back and let the caller decide.
        return retry_after if retry_after <= MAX_RETRY_AFTER else None
    return backoff_delay(retries_done + 1, jitter)


def delay_after_error(
    method: str,
    error: httpx.RequestError,
    *,
    retries_done: int,
    max_retries: int,
    jitter: float,
    processed: bool | None = None,
) -> float | None:
    """Seconds to wait before retrying after a transport error, or ``None`` to stop.

    ``processed`` is whether the service may have acted on the request in any
    attempt of the call so far, as the connection showed it (``None``: as the
    error's class alone says).
    """
    if retries_done >= max_retries:
        return None
    if not isinstance(error, httpx.TransportError):
        return None  # DecodingError, TooManyRedirects: a retry cannot help
    if not is_idempotent(method) and (error_may_have_been_processed(error) if processed is None else processed):
        return None
    return backoff_delay(retries_done + 1, jitter)
