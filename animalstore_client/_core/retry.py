"""The retry policy, as pure functions: whether to retry, and how long to wait first.

The central rule: a request that may have changed state on the service is
never repeated. Reads (GET, HEAD, OPTIONS) are retried on any transient
outcome: a transport failure, or 408, 429, 500, 502, 503 and 504. Anything
else, `create_pet` included, is retried exactly when the outcome is
transient and ``processed`` (``_core.exchange.may_have_acted`` over the
call's attempts) is ``False``: after a failure to connect and after a 429,
never after a 5xx.
"""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from datetime import UTC, datetime

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

READ_RETRY_STATUSES = TRANSIENT_STATUSES
WRITE_RETRY_STATUSES = frozenset({429})
"""429 alone: transient, and a refusal by definition; every other transient status may follow an action."""


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


_LONGEST_RETRY_AFTER = 64
"""Characters of a ``Retry-After`` value read at most: an HTTP-date has 29; a longer value is ignored unparsed."""


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or HTTP-date), or ``None``.

    Delta-seconds may have a fraction (``1.5``), as some services send. An
    HTTP-date in the past means "now" (0 seconds); a value that is neither
    form is ignored (``None``).
    """
    if value is None or len(value) > _LONGEST_RETRY_AFTER:
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
        when = when.replace(tzinfo=UTC)
    current = now if now is not None else datetime.now(UTC)
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
    processed: bool,
    now: datetime | None = None,
) -> float | None:
    """Seconds to wait before retrying after a response, or ``None`` to stop.

    ``processed`` is whether the service may have acted on the request in any
    attempt of the call so far (``_core.exchange.may_have_acted``); a request
    that is not idempotent is never sent again once it may have.
    """
    if retries_done >= max_retries:
        return None
    if is_idempotent(method):
        if status_code not in READ_RETRY_STATUSES:
            return None
    elif status_code not in WRITE_RETRY_STATUSES or processed:
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
    processed: bool,
) -> float | None:
    """Seconds to wait before retrying after a transport error, or ``None`` to stop.

    ``processed`` is whether the service may have acted on the request in any
    attempt of the call so far, as its exchanges showed it (``_core.exchange.may_have_acted``): the
    error's class is never evidence.
    """
    if retries_done >= max_retries:
        return None
    if not isinstance(error, httpx.TransportError):
        return None  # DecodingError, TooManyRedirects: a retry cannot help
    if not is_idempotent(method) and processed:
        return None
    return backoff_delay(retries_done + 1, jitter)
