"""The send loop's decisions, without I/O: `Attempts` (one call's bookkeeping) and `BodyReader` (one body)."""

from __future__ import annotations

import gzip
import logging
import socket
import zlib

import httpx
import pytest

from animalstore_client import APIConnectionError, APITimeoutError
from animalstore_client._core.attempts import Attempts
from animalstore_client._core.body import ACCEPT_ENCODING, BodyReader, codings_in

# Not a built-in placeholder host, whose name not resolving is never retried.
URL = "https://animals.internal.test/v1/pets"
TIMEOUTS = {"connect": 5.0, "read": 30.0, "write": 30.0, "pool": 30.0}


def _request(method: str = "GET") -> httpx.Request:
    return httpx.Request(method, URL, extensions={"timeout": TIMEOUTS})


def _response(request: httpx.Request, status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=request)


def _attempts(method: str = "GET", max_retries: int = 2) -> Attempts:
    return Attempts(_request(method), max_retries=max_retries, jitter=lambda: 0.0)


# --- Attempts -------------------------------------------------------------------------------------


def test_each_attempt_gets_the_requests_timeouts() -> None:
    """start() hands out the per-phase timeouts the request was built with."""
    assert _attempts().start() == TIMEOUTS


def test_a_success_is_final_on_the_first_attempt() -> None:
    """A 2xx ends the call: no delay, one attempt."""
    attempts = _attempts()
    attempts.start()
    assert attempts.after_response(_response(attempts.request, 200)) is None
    assert (attempts.count, attempts.retries) == (1, 0)


def test_a_retryable_status_returns_the_policys_delay_and_counts_the_attempt() -> None:
    """A 503 on a read asks for the first backoff (0.5 s) and counts a second attempt."""
    attempts = _attempts()
    attempts.start()
    assert attempts.after_response(_response(attempts.request, 503)) == 0.5
    attempts.start()
    assert attempts.after_response(_response(attempts.request, 503)) == 1.0
    assert (attempts.count, attempts.retries) == (3, 2)
    assert attempts.after_response(_response(attempts.request, 503)) is None  # retries used up: final
    assert attempts.count == 3


def test_retry_after_reaches_the_policy() -> None:
    """The response's Retry-After header sets the delay."""
    attempts = _attempts("POST")
    assert attempts.after_response(_response(attempts.request, 429, {"Retry-After": "7"})) == 7.0


def test_the_method_reaches_the_policy() -> None:
    """A 500 is retried for a GET but final for a POST (the pet may be stored)."""
    get, post = _attempts("GET"), _attempts("POST")
    assert get.after_response(_response(get.request, 500)) == 0.5
    assert post.after_response(_response(post.request, 500)) is None


def test_a_failure_to_connect_is_retried_for_any_method() -> None:
    """Nothing was written, as the exchange's reports show, so even a POST is retried after a ConnectError."""
    attempts = _attempts("POST")
    exchange = attempts.exchange_for(attempts.request, attempts.start())
    exchange.opening()  # the library's own connection code reports, and fails before connecting
    assert attempts.after_error(httpx.ConnectError("refused")) == 0.5
    assert attempts.count == 2


def test_a_connect_error_nothing_reported_is_no_evidence() -> None:
    """A ConnectError from a transport whose exchange shows no report (a caller's transport) may follow a write:
    the POST is not retried, and the error says the pet may have been stored."""
    attempts = _attempts("POST")
    attempts.exchange_for(attempts.request, attempts.start())
    with pytest.raises(APIConnectionError) as info:
        attempts.after_error(httpx.ConnectError("refused"))
    assert info.value.may_have_been_processed is True
    assert attempts.count == 1


def test_a_read_timeout_on_a_post_ends_the_call_with_an_sdk_error() -> None:
    """The final failure raises APITimeoutError carrying the request, the count and the cause."""
    attempts = _attempts("POST")
    cause = httpx.ReadTimeout("slow")
    with pytest.raises(APITimeoutError) as info:
        attempts.after_error(cause)
    assert info.value.request is attempts.request
    assert info.value.attempts == 1
    assert info.value.__cause__ is cause
    assert str(info.value) == (
        f"Request timed out: POST {URL} (ReadTimeout('slow')); the pet may have been stored: check before sending it "
        "again"
    )


def test_the_final_error_says_how_many_attempts_were_made() -> None:
    """After retries run out the error is APIConnectionError '... after 3 attempts'."""
    attempts = _attempts("GET")
    attempts.after_error(httpx.ReadError("reset"))
    attempts.after_error(httpx.ReadError("reset"))
    with pytest.raises(APIConnectionError, match="after 3 attempts") as info:
        attempts.after_error(httpx.ReadError("reset"))
    assert type(info.value) is APIConnectionError
    assert info.value.attempts == 3


def test_attempts_and_retries_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Each response is logged at DEBUG and each retry at INFO, with the attempt and retry numbers."""
    caplog.set_level(logging.DEBUG, logger="animalstore_client")
    attempts = _attempts()
    attempts.start()
    attempts.after_response(_response(attempts.request, 503))
    attempts.start()
    attempts.after_error(httpx.ConnectError("refused"))
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0].startswith(f"GET {URL} -> 503 Service Unavailable in ")
    assert messages[0].endswith("ms (attempt 1)")
    assert messages[1] == f"Retrying GET {URL} in 0.50 s (retry 1 of 2) after 503 Service Unavailable"
    assert messages[2].startswith(f"GET {URL} failed after ")
    assert "(attempt 2): ConnectError('refused')" in messages[2]
    assert messages[3] == f"Retrying GET {URL} in 1.00 s (retry 2 of 2) after ConnectError"


# --- BodyReader ---------------------------------------------------------------------------------

BODY = b'[{"id": 1, "name": "Rex", "categoryId": 3}]' * 50


def _read(content_encoding: str | None, raw: bytes, chunk: int = 7) -> bytes:
    headers = httpx.Headers({"Content-Encoding": content_encoding} if content_encoding else {})
    reader = BodyReader(_request(), codings_in(headers.raw))
    for start in range(0, len(raw), chunk):
        reader.feed(raw[start : start + chunk])
    return reader.finish()


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("coding", "raw"),
    [
        (None, BODY),
        ("identity", BODY),
        ("gzip", gzip.compress(BODY, mtime=0)),
        ("GZip", gzip.compress(BODY, mtime=0)),
        ("deflate", zlib.compress(BODY)),
        ("deflate", _raw_deflate(BODY)),
        ("gzip, gzip", gzip.compress(gzip.compress(BODY, mtime=0), mtime=0)),
        ("deflate, gzip", gzip.compress(zlib.compress(BODY), mtime=0)),
    ],
)
def test_content_codings_are_undone_chunk_by_chunk(coding: str | None, raw: bytes) -> None:
    """gzip and deflate (zlib-wrapped or raw, stacked or not) decode to the body, fed in small chunks."""
    assert _read(coding, raw) == BODY
    assert _read(coding, raw, chunk=1) == BODY


def test_an_unknown_coding_is_left_as_it_is() -> None:
    """A coding the reader does not know passes the bytes through, as httpx does."""
    assert _read("br", b"\x0b\x02\x80hello\x03") == b"\x0b\x02\x80hello\x03"


def test_an_empty_body_is_empty() -> None:
    """No chunks (or only empty ones) give b''."""
    assert _read(None, b"") == b""
    assert _read("gzip", b"") == b""


def test_a_corrupt_encoding_raises_httpx_decoding_error() -> None:
    """Bytes that are not gzip raise httpx.DecodingError, the class the retry policy knows."""
    with pytest.raises(httpx.DecodingError, match="Content-Encoding"):
        _read("gzip", b"this is not gzip at all")


def test_the_sdk_asks_only_for_codings_it_decodes() -> None:
    """Accept-Encoding names exactly gzip and deflate."""
    assert ACCEPT_ENCODING == "gzip, deflate"


def test_text_is_decoded_only_with_text_encodings() -> None:
    """Every codec name Python knows, as a charset, decodes hostile bytes to str without raising or growing."""
    import encodings.aliases

    from animalstore_client._core.body import text_encoding

    names = set(encodings.aliases.aliases) | set(encodings.aliases.aliases.values())
    names |= {"idna", "punycode", "undefined", "utf-16", "utf-32", "utf-8-sig", "unicode_escape", "bz2", "mbcs"}
    bodies = [bytes(range(256)), b"\xff\xfe\x00\xd8\x00", b"\\N{", b"\\U99999999", b"+AAA-", b"\x1b$B", b"x"]
    for name in sorted(names):
        for media in ("text/plain", "text/html"):
            headers = httpx.Headers({"Content-Type": f"{media}; charset={name}"})
            for body in bodies:
                response = httpx.Response(200, headers=headers, content=body)
                response.encoding = text_encoding(headers)
                text = response.text
                assert isinstance(text, str)
                assert len(text) <= 2 * len(body) + 2, (name, body)


@pytest.mark.parametrize("charset", ["bz2", "zlib", "base64", "hex", "utf-16", "idna", "no-such-codec", "utf\x00-8"])
def test_a_charset_that_is_not_a_text_encoding_falls_back_to_utf8(charset: str) -> None:
    """A charset naming a non-text codec (or none) gives UTF-8; JSON is always UTF-8."""
    from animalstore_client._core.body import text_encoding

    assert text_encoding(httpx.Headers({"Content-Type": f"text/plain; charset={charset}"})) == "utf-8"
    assert text_encoding(httpx.Headers({"Content-Type": "application/json; charset=latin-1"})) == "utf-8"
    assert text_encoding(httpx.Headers({"Content-Type": "text/html; charset=ISO-8859-1"})) == "iso8859-1"


# --- deadline and retry timing, on a fake clock -------------------------------------------------


class FakeClock:
    """A clock that moves only when told: deadline rules tested in microseconds, not seconds."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _timed(clock: FakeClock, total: float | None = 10.0, method: str = "GET", max_retries: int = 2) -> Attempts:
    return Attempts(_request(method), max_retries=max_retries, jitter=lambda: 0.0, total_timeout=total, clock=clock)


def test_the_deadline_is_total_timeout_after_the_call_began() -> None:
    """deadline is the clock's reading when the call began plus total_timeout; None without one."""
    clock = FakeClock(500.0)
    assert _timed(clock, 10.0).deadline == 510.0
    assert _timed(clock, None).deadline is None


def test_a_late_attempt_gets_only_the_time_left() -> None:
    """With 3 s left, every phase timeout of 5 s or 30 s is cut to 3 s; a shorter one stays."""
    clock = FakeClock()
    attempts = _timed(clock, 10.0)
    clock.advance(7.0)
    exchange = attempts.exchange_for(attempts.request, attempts.start())
    assert exchange.timeouts == {"connect": 3.0, "read": 3.0, "write": 3.0, "pool": 3.0}
    clock.advance(0.5)
    timeouts = attempts.exchange_for(attempts.request, attempts.start()).timeouts
    assert timeouts["connect"] == pytest.approx(2.5)


def test_the_time_left_is_taken_when_the_request_is_handed_over() -> None:
    """Time spent between start() and the send (middleware) is taken off: exchange_for cuts to what is left then."""
    clock = FakeClock()
    attempts = _timed(clock, 10.0)
    timeouts = attempts.start()
    clock.advance(8.0)
    assert attempts.exchange_for(attempts.request, timeouts).timeouts == {
        "connect": 2.0,
        "read": 2.0,
        "write": 2.0,
        "pool": 2.0,
    }


def test_nothing_is_handed_over_once_the_deadline_has_passed() -> None:
    """A request whose deadline passed after start() (a slow middleware) is a ConnectTimeout: nothing is sent."""
    clock = FakeClock()
    attempts = _timed(clock, 0.5)
    timeouts = attempts.start()
    clock.advance(0.6)
    with pytest.raises(httpx.ConnectTimeout, match="before the request was sent"):
        attempts.exchange_for(attempts.request, timeouts)
    assert attempts.exchange.proves_nothing_written
    with pytest.raises(APITimeoutError, match=r"total_timeout=0.5s passed") as info:
        attempts.after_error(httpx.ConnectTimeout("late", request=attempts.request))
    assert info.value.may_have_been_processed is False


def test_no_attempt_starts_once_the_deadline_has_passed() -> None:
    """At the deadline (within its 5 ms margin) start() raises APITimeoutError naming total_timeout."""
    clock = FakeClock()
    attempts = _timed(clock, 1.0)
    clock.advance(0.996)
    with pytest.raises(APITimeoutError, match=r"total_timeout=1s passed"):
        attempts.start()


def test_a_failure_at_the_deadline_is_a_timeout_not_a_retry() -> None:
    """A connect error once the deadline has passed ends the call as APITimeoutError, with no retry."""
    clock = FakeClock()
    attempts = _timed(clock, 2.0)
    attempts.start()
    clock.advance(2.0)
    with pytest.raises(APITimeoutError, match="total_timeout=2s passed"):
        attempts.after_error(httpx.ConnectError("refused", request=attempts.request))
    assert attempts.retries == 0


def test_a_backoff_that_would_pass_the_deadline_is_not_taken() -> None:
    """With 0.4 s left, a 503's 0.5 s backoff is not slept: the 503 is final; with 0.6 s left it is retried."""
    clock = FakeClock()
    attempts = _timed(clock, 10.0)
    attempts.start()
    clock.advance(9.6)
    assert attempts.after_response(_response(attempts.request, 503)) is None
    clock = FakeClock()
    attempts = _timed(clock, 10.0)
    attempts.start()
    clock.advance(9.4)
    assert attempts.after_response(_response(attempts.request, 503)) == 0.5


def test_an_error_whose_backoff_would_pass_the_deadline_ends_the_call() -> None:
    """A read error with 0.3 s left is the final APIConnectionError, not a sleep past the deadline."""
    clock = FakeClock()
    attempts = _timed(clock, 5.0)
    attempts.start()
    clock.advance(4.7)
    with pytest.raises(APIConnectionError) as caught:
        attempts.after_error(httpx.ReadError("reset", request=attempts.request))
    assert not isinstance(caught.value, APITimeoutError)


def test_a_body_chunk_after_the_deadline_is_a_read_timeout() -> None:
    """The body reader takes the attempts' clock: a chunk arriving after the deadline raises ReadTimeout."""
    clock = FakeClock()
    attempts = _timed(clock, 1.0)
    reader = attempts.body_reader([])
    assert reader.feed(b"[")
    clock.advance(1.0)
    with pytest.raises(httpx.ReadTimeout, match="total_timeout"):
        reader.feed(b"]")


def test_elapsed_time_in_the_log_comes_from_the_clock(caplog: pytest.LogCaptureFixture) -> None:
    """The attempt's duration in the debug line is measured on the given clock."""
    clock = FakeClock()
    attempts = _timed(clock, None)
    attempts.start()
    clock.advance(0.0125)
    with caplog.at_level(logging.DEBUG, logger="animalstore_client"):
        attempts.after_response(_response(attempts.request, 200))
    assert "in 12.5 ms" in caplog.text


@pytest.mark.parametrize(
    "url", ["https://api.animalstore.example/v1/pets", "https://staging.api.animalstore.example/v1/pets"]
)
def test_a_placeholder_host_fails_at_once_saying_what_to_set(url: str) -> None:
    """The built-in hosts are placeholders: a failure to resolve one's name is not retried and names
    ANIMALSTORE_BASE_URL; any other failure to connect to it is retried as for any host."""
    attempts = Attempts(httpx.Request("GET", url), max_retries=2, jitter=lambda: 0.0)
    unresolved = httpx.ConnectError("[Errno -2] Name or service not known")
    unresolved.__cause__ = socket.gaierror(-2, "Name or service not known")
    with pytest.raises(APIConnectionError, match=r"is a placeholder.*set ANIMALSTORE_BASE_URL or base_url=") as info:
        attempts.after_error(unresolved)
    assert info.value.attempts == 1
    refused = Attempts(httpx.Request("GET", url), max_retries=2, jitter=lambda: 0.0)
    assert refused.after_error(httpx.ConnectError("[Errno 111] Connection refused")) == 0.5


def test_a_name_that_did_not_resolve_is_found_in_the_chain_as_each_library_reports_it() -> None:
    """A socket.gaierror as cause or context, however deep; nothing else (the transports put one there)."""
    from animalstore_client._core.environments import name_not_resolved

    deep = httpx.ConnectError("failed")
    middle = OSError("wrapped")
    middle.__context__ = socket.gaierror(-2, "Name or service not known")
    deep.__cause__ = middle
    assert name_not_resolved(deep)
    assert not name_not_resolved(httpx.ConnectError("refused"))
    looped = httpx.ConnectError("looped")
    looped.__context__ = ConnectionRefusedError(111, "refused")
    looped.__context__.__context__ = looped
    assert not name_not_resolved(looped)


def test_aiohttp_s_own_dns_error_is_reported_as_the_socket_module_reports_one() -> None:
    """aiohttp's aiodns resolver raises no gaierror: its transport puts one in the chain, and the rule finds it."""
    pytest.importorskip("aiohttp", reason="the aiohttp backend's own translation; aiohttp is not installed")
    from aiohttp import ClientConnectorDNSError
    from aiohttp.client_reqrep import ConnectionKey

    from animalstore_client._core.environments import name_not_resolved
    from animalstore_client._transports.aiohttp import _unresolved

    key = ConnectionKey("api.animalstore.example", 443, True, True, None, None, None)
    dns = ClientConnectorDNSError(key, OSError(None, "DNS lookup failed"))
    assert not name_not_resolved(dns)  # the core names no library
    cause = _unresolved(dns)
    assert isinstance(cause, socket.gaierror)
    assert cause.__cause__ is dns
    failure = httpx.ConnectError("dns")
    failure.__cause__ = cause
    assert name_not_resolved(failure)
    refused = OSError(111, "refused")
    assert _unresolved(refused) is refused


def test_a_body_taken_whole_is_held_to_the_deadline_as_a_fed_one_is() -> None:
    """body_in_time keeps a body before the deadline; past it a non-empty one is a ReadTimeout, an empty one is kept."""
    clock = FakeClock()
    attempts = _timed(clock, 1.0)
    assert attempts.body_in_time(b"[]") == b"[]"
    clock.advance(1.0)
    with pytest.raises(httpx.ReadTimeout, match="total_timeout passed while the body arrived"):
        attempts.body_in_time(b"[]")
    assert attempts.body_in_time(b"") == b""


def test_a_remembered_value_is_made_once_and_the_table_stays_bounded() -> None:
    """remembered() makes a value on first need only, and empties a full table before adding to it."""
    from animalstore_client._core.deadline import remembered

    table: dict[int, str] = {}
    made: list[int] = []

    def make(key: int) -> str:
        made.append(key)
        return f"v{key}"

    assert remembered(table, 1, lambda: make(1), 2) == "v1"
    assert remembered(table, 1, lambda: make(1), 2) == "v1"
    assert remembered(table, 2, lambda: make(2), 2) == "v2"
    assert made == [1, 2]
    assert remembered(table, 3, lambda: make(3), 2) == "v3"
    assert table == {3: "v3"}
