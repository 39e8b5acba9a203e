"""The retry policy on its own: pure functions, no clients, no sleeping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from animalstore_client._core.retry import (
    backoff_delay,
    delay_after_error,
    delay_after_response,
    is_idempotent,
    parse_retry_after,
    parse_retry_after_ms,
)

NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
REQUEST = httpx.Request("GET", "https://x.example")


def test_backoff_doubles_from_half_a_second_and_caps_at_eight() -> None:
    """Without jitter the delays are 0.5, 1, 2, 4, 8, 8 seconds."""
    assert [backoff_delay(n, 0.0) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


@pytest.mark.parametrize("jitter", [0.0, 0.3, 0.999999])
def test_jitter_only_shortens_by_at_most_a_quarter(jitter: float) -> None:
    """Jitter keeps each delay within [0.75, 1] of its base."""
    for retry in range(1, 8):
        base = backoff_delay(retry, 0.0)
        assert base * 0.75 <= backoff_delay(retry, jitter) <= base


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("0", 0.0),
        ("7", 7.0),
        (" 120 ", 120.0),
        (format_datetime(NOW + timedelta(seconds=30), usegmt=True), 30.0),
        (format_datetime(NOW - timedelta(seconds=30), usegmt=True), 0.0),
        ("Sat, 21 Nov 2026 12:00:05 GMT", 5.0),
        ("soon", None),
        ("-3", None),
        ("1.5", 1.5),
        ("0.25", 0.25),
        ("1.", None),
        (".5", None),
        ("1e3", None),
        ("inf", None),
        ("nan", None),
        ("+3", None),
        ("²", None),
        ("١٢", None),
        ("Fri, 31 Dec 99999 23:59:59 GMT", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | None, seconds: float | None) -> None:
    """Delta-seconds (a fraction allowed) and HTTP-dates are read; anything else is ignored."""
    assert parse_retry_after(value, NOW) == seconds


def test_idempotent_methods() -> None:
    """GET, HEAD and OPTIONS are idempotent; POST, PUT, PATCH, DELETE are treated as not."""
    assert all(is_idempotent(m) for m in ("GET", "head", "OPTIONS"))
    assert not any(is_idempotent(m) for m in ("POST", "PUT", "PATCH", "DELETE"))


def _after(method: str, status: int, headers: dict[str, str] | None = None, retries_done: int = 0) -> float | None:
    # What the send loop's one rule says of the answer alone: a 4xx but 408 was not acted on.
    processed = not (400 <= status <= 499 and status != 408)
    return delay_after_response(
        method,
        status,
        httpx.Headers(headers or {}),
        retries_done=retries_done,
        max_retries=2,
        jitter=0.0,
        now=NOW,
        processed=processed,
    )


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_reads_retry_on_transient_statuses(status: int) -> None:
    """A GET is retried on 408, 429, 500, 502, 503 and 504."""
    assert _after("GET", status) == 0.5


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422, 501, 505, 301])
def test_reads_do_not_retry_on_other_statuses(status: int) -> None:
    """Client errors and other statuses end the call at once."""
    assert _after("GET", status) is None


@pytest.mark.parametrize(
    ("status", "retried"), [(429, True), (503, False), (408, False), (500, False), (502, False), (504, False)]
)
def test_writes_retry_only_where_nothing_was_stored(status: int, retried: bool) -> None:
    """A POST is retried on 429 only: every 5xx may follow a stored pet (a gateway answers in the service's format
    after it passed the request on), and nothing is retried once an earlier attempt may have been acted on."""
    told = delay_after_response("POST", status, {}, retries_done=0, max_retries=2, jitter=0.0, now=NOW, processed=False)
    assert (told is not None) is retried
    assert delay_after_response("POST", status, {}, retries_done=0, max_retries=2, jitter=0.0, processed=True) is None
    assert (_after("POST", status) is not None) is (status == 429)  # by the status alone: no 5xx proves anything


def test_retry_after_is_honoured_up_to_sixty_seconds() -> None:
    """Retry-After replaces the backoff when at most 60 s, and ends retries when longer."""
    assert _after("GET", 429, {"Retry-After": "0"}) == 0.0
    assert _after("GET", 503, {"Retry-After": "60"}) == 60.0
    assert _after("GET", 503, {"Retry-After": "61"}) is None
    assert _after("GET", 429, {"Retry-After": "3600"}) is None
    date = format_datetime(NOW + timedelta(seconds=12), usegmt=True)
    assert _after("POST", 429, {"Retry-After": date}) == 12.0
    assert _after("GET", 503, {"Retry-After": "whenever"}) == 0.5


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1500", 1.5),
        ("250.5", 0.2505),
        ("0", 0.0),
        (" 40 ", 0.04),
        ("-5", None),
        ("1e3", None),
        ("soon", None),
        (None, None),
    ],
)
def test_parse_retry_after_ms(value: str | None, seconds: float | None) -> None:
    """retry-after-ms is milliseconds, a fraction allowed; anything else is ignored."""
    assert parse_retry_after_ms(value) == seconds


def test_retry_after_ms_is_honoured_before_retry_after_within_the_same_cap() -> None:
    """retry-after-ms wins over Retry-After; an unreadable one leaves Retry-After to decide; 60 s caps both."""
    assert _after("GET", 429, {"retry-after-ms": "1500", "Retry-After": "30"}) == 1.5
    assert _after("GET", 503, {"retry-after-ms": "later", "Retry-After": "2"}) == 2.0
    assert _after("POST", 429, {"retry-after-ms": "60000"}) == 60.0
    assert _after("GET", 429, {"retry-after-ms": "60001", "Retry-After": "1"}) is None
    assert _after("GET", 503, {"Retry-After": "0.5"}) == 0.5
    assert _after("POST", 500, {"retry-after-ms": "10"}) is None  # never makes a status retryable


def test_retry_after_does_not_make_a_status_retryable() -> None:
    """A Retry-After on a 500 to a POST does not cause a retry."""
    assert _after("POST", 500, {"Retry-After": "1"}) is None


def test_retries_run_out() -> None:
    """No delay is returned once max_retries retries were made."""
    assert _after("GET", 503, retries_done=1) == 1.0
    assert _after("GET", 503, retries_done=2) is None


@pytest.mark.parametrize(
    ("error", "get", "post"),
    [
        (httpx.ConnectError("refused", request=REQUEST), True, True),
        (httpx.ConnectTimeout("slow", request=REQUEST), True, True),
        (httpx.PoolTimeout("busy", request=REQUEST), True, True),
        (httpx.ReadTimeout("slow", request=REQUEST), True, False),
        (httpx.WriteTimeout("slow", request=REQUEST), True, False),
        (httpx.ReadError("reset", request=REQUEST), True, False),
        (httpx.RemoteProtocolError("cut", request=REQUEST), True, False),
        (httpx.DecodingError("bad gzip", request=REQUEST), False, False),
    ],
)
def test_transport_errors(error: httpx.RequestError, get: bool, post: bool) -> None:
    """Reads retry any transport error; writes only those where nothing was sent."""
    for method, expected in (("GET", get), ("POST", post)):
        # What an exchange that reported reads for each class (nothing written before a connect failure).
        processed = not isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))
        delay = delay_after_error(method, error, retries_done=0, max_retries=2, jitter=0.0, processed=processed)
        assert (delay is not None) is expected, method


def test_zero_max_retries_disables_retries() -> None:
    """max_retries=0 never retries."""
    error = httpx.ConnectError("refused", request=REQUEST)
    assert delay_after_error("GET", error, retries_done=0, max_retries=0, jitter=0.0, processed=False) is None
    assert (
        delay_after_response("GET", 503, httpx.Headers(), retries_done=0, max_retries=0, jitter=0.0, processed=True)
        is None
    )
