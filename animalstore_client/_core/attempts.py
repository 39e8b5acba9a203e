"""One call's attempts, written once for both clients: every decision between two I/O steps, without I/O.

`Attempts` is the bookkeeping of one call (docs/architecture.md, "One call, step by step"); an attempt ends in
an `Answer`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from animalstore_client._core.body import BodyReader, late_body, text_encoding
from animalstore_client._core.deadline import Timeouts
from animalstore_client._core.environments import placeholder_failure
from animalstore_client._core.exceptions import APIConnectionError, APITimeoutError, MiddlewareError
from animalstore_client._core.exchange import Exchange, may_have_acted
from animalstore_client._core.failures import error_type
from animalstore_client._core.httpx_private import copy_request
from animalstore_client._core.log import logger
from animalstore_client._core.retry import delay_after_error, delay_after_response
from animalstore_client._core.secrets import redact_text, redact_url
from animalstore_client._core.tls import certificate_failure

if TYPE_CHECKING:
    from animalstore_client._core.budget import RetryBudget

__all__ = [
    "ATTEMPT",
    "BUDGET_NOTE",
    "BUDGET_REFUSED",
    "CALL_ID",
    "CUT_AT",
    "OPERATION",
    "PROCESSED",
    "Answer",
    "Attempts",
    "Finished",
    "Observer",
    "ResponseStreamLike",
    "connection_error",
    "full_response",
]

CUT_AT = "animalstore_client.cut_at"
"""Response extension set when a body was cut at ``max_response_bytes``: the cap."""
BUDGET_REFUSED = "animalstore_client.retry_budget_refused"
"""Response extension set when the retry budget refused to retry it: the retry it would have been."""
ATTEMPT = "animalstore.attempt"
"""Request extension holding the attempt number (1 for the first), for middleware."""
OPERATION = "animalstore.operation"
"""Request extension holding the operation's name (``list_pets``... or ``request``), for middleware."""
CALL_ID = "animalstore.call_id"
"""Request extension holding an id shared by the attempts of one call (16 hex digits), for middleware."""
PROCESSED = "animalstore_client.may_have_been_processed"
"""Response extension set on a call's final response: whether the service may have acted in any attempt, which
the exception made from it (``_core.operations``) says as ``may_have_been_processed``."""

BUDGET_NOTE = "not retried: the client's retry budget is exhausted, too many of its recent calls were retried"

_NOT_HANDED = Exchange(httpx.Request("GET", "http://not-handed-over.invalid/"), {}, None)
"""An attempt's exchange until its request is handed to a transport: with no report, a failure then (a
middleware's wait cut at the deadline) counts as "may have been processed"."""

# A timeout that fires at the deadline may do so a hair early (poll()
# resolution); within this margin the deadline counts as reached.
_DEADLINE_MARGIN = 0.005


def connection_error(
    exc: httpx.RequestError,
    request: httpx.Request,
    attempts: int,
    *,
    processed: bool = True,
    budget_refused: bool = False,
) -> APIConnectionError:
    """The SDK exception for a transport failure that ends a call."""
    after = f" after {attempts} attempts" if attempts > 1 else ""
    where = f"{request.method} {redact_url(request.url)}"
    note = f"; {BUDGET_NOTE}" if budget_refused else ""
    placeholder = placeholder_failure(exc, request.url.host)
    if placeholder is not None:
        note += f". {placeholder}"
    timed_out = isinstance(exc, httpx.TimeoutException)
    error = (APITimeoutError if timed_out else APIConnectionError)(
        f"{'Request timed out' if timed_out else 'Connection error'}: {where}{after} ({redact_text(repr(exc))}){note}",
        request=request,
        attempts=attempts,
        may_have_been_processed=processed,
    )
    if budget_refused:
        error.retry_budget_exhausted = True
    return error


class Observer(Protocol):
    """What `Attempts` tells the telemetry of a call (``_clients.telemetry``): each retry, and each refusal."""

    def retried(self, reason: str) -> None:
        """A retry was decided, for ``reason`` (a status code, or a transport failure's class)."""
        ...

    def refused(self, reason: str) -> None:
        """The retry budget refused a retry the policy wanted."""
        ...


class Attempts:
    """The attempts of one call: timeouts, deadline, retry decisions, logging, the count and the body cap.

    A shell drives it (docs/architecture.md, "One call, step by step"). ``clock`` (``time.monotonic``
    unless a test gives a fake one) is the only source of time in these decisions.
    """

    __slots__ = (
        "_budget",
        "_budget_clock",
        "_call_id",
        "_clock",
        "_deadline",
        "_jitter",
        "_max_bytes",
        "_max_retries",
        "_observer",
        "_started",
        "_total_timeout",
        "budget_refused",
        "count",
        "exchange",
        "processed",
        "request",
        "retries",
    )

    def __init__(
        self,
        request: httpx.Request,
        *,
        max_retries: int,
        jitter: Callable[[], float],
        total_timeout: float | None = None,
        max_response_bytes: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        budget: RetryBudget | None = None,
        budget_clock: Callable[[], float] = time.monotonic,
        observer: Observer | None = None,
    ) -> None:
        self.request = request
        self.retries = 0
        """Retries decided so far."""
        self.count = 1
        """Attempts made so far, the current one included."""
        self.budget_refused = False
        """Whether the retry budget refused a retry (the call then ended with the error it had)."""
        self.processed = False
        """Whether the service may have acted on the request in an attempt so far (`may_have_acted` over each
        attempt's exchange and answer): what the call's exception says as ``may_have_been_processed``."""
        self.exchange = _NOT_HANDED
        """The current attempt's exchange (`_core.exchange`), made by `exchange_for` as it is handed over."""
        self._budget = budget
        self._budget_clock = budget_clock
        self._call_id: str | None = None
        self._observer = observer
        if budget is not None:
            budget.deposit(budget_clock())
        self._max_retries = max_retries
        self._jitter = jitter
        self._max_bytes = max_response_bytes
        self._total_timeout = total_timeout
        self._clock = clock
        self._started = clock()
        self._deadline = None if total_timeout is None else self._started + total_timeout

    @property
    def deadline(self) -> float | None:
        """When the call must end, on ``clock``'s scale; ``None`` without ``total_timeout``."""
        return self._deadline

    def time_left(self) -> float | None:
        """Seconds until the deadline (never below 0), on ``clock``'s scale; ``None`` without ``total_timeout``."""
        deadline = self._deadline
        return None if deadline is None else max(0.0, deadline - self._clock())

    def attempt_request(self, operation: str) -> httpx.Request:
        """A copy of the call's request for the current attempt, numbered in its extensions (for middleware)."""
        original = self.request
        if self._call_id is None:
            self._call_id = os.urandom(8).hex()
        extensions = {**original.extensions, ATTEMPT: self.count, OPERATION: operation, CALL_ID: self._call_id}
        return copy_request(original, extensions)

    def start(self) -> Timeouts:
        """Begin an attempt; return its per-phase timeouts (`exchange_for` cuts them to the time left)."""
        self._started = now = self._clock()
        deadline = self._deadline
        if deadline is not None and deadline - now <= _DEADLINE_MARGIN:
            raise self._expired(None)
        self.exchange = _NOT_HANDED  # this attempt's is made as its request is handed over
        return self.request.extensions["timeout"]  # type: ignore[no-any-return]

    def exchange_for(self, request: httpx.Request, timeouts: Timeouts) -> Exchange:
        """The attempt's exchange, as ``request`` is handed to the library after any middleware, its timeouts cut to
        the time left. Past the deadline (within `start`'s margin) nothing is handed over: the attempt fails as a
        connect timeout that its exchange proves wrote nothing, which ends the call with `APITimeoutError`."""
        deadline = self._deadline
        if deadline is not None:
            left = deadline - self._clock()
            if any(value is None or value > left for value in timeouts.values()):
                timeouts = {
                    phase: left if value is None or value > left else value for phase, value in timeouts.items()
                }
        self.exchange = exchange = Exchange(request, timeouts, deadline, origin=self.request.url, clock=self._clock)
        if deadline is not None and deadline - self._clock() <= _DEADLINE_MARGIN:
            exchange.not_written()  # a library may round a timer this short up: nothing is handed over
            raise httpx.ConnectTimeout("the call's total_timeout passed before the request was sent", request=request)
        return exchange

    def body_reader(self, codings: Sequence[bytes]) -> BodyReader:
        """A reader for this attempt's body (its Content-Encoding ``codings``), held to the cap and the deadline."""
        limit = None if self._max_bytes is None else self._max_bytes + 1
        return BodyReader(self.request, codings, limit=limit, deadline=self._deadline, clock=self._clock)

    def body_in_time(self, body: bytes) -> bytes:
        """``body``, taken whole, unless the call's deadline passed while it arrived (as `BodyReader.feed` checks); an
        empty body arrived with the headers and, as in the chunk loop, is not checked."""
        if body and self._deadline is not None and self._clock() >= self._deadline:
            raise late_body(self.request)
        return body

    def complete(self, stream: ResponseStreamLike, content: bytes) -> Answer:
        """The finished attempt; a body over ``max_response_bytes`` is cut at the cap and marked."""
        if not self.processed:
            self.processed = may_have_acted(self.exchange, stream.status_code)
        cap = self._max_bytes
        if cap is None or len(content) <= cap:
            return Answer(stream, content, self.request, {})
        return Answer(stream, content[:cap], self.request, {CUT_AT: cap})

    def _log(self, level: int, template: str, *args: object) -> None:
        """A log line about this call's request: ``template``'s first two ``%s`` are its method and URL (masked)."""
        logger.log(level, template, self.request.method, redact_url(self.request.url), *args)

    def failed(self) -> None:
        """Note that the current attempt failed with no answer: `may_have_acted` reads its exchange, never the
        class of what was raised."""
        if not self.processed:
            self.processed = may_have_acted(self.exchange)

    def after_error(self, exc: httpx.RequestError) -> float:
        """Log a failed attempt; return the delay before retrying, or raise the final error."""
        self.failed()
        request = self.request
        if logger.isEnabledFor(logging.DEBUG):  # skip the formatting work otherwise
            elapsed, failure = self._elapsed_ms(), redact_text(repr(exc))
            self._log(logging.DEBUG, "%s %s failed after %.1f ms (attempt %d): %s", elapsed, self.count, failure)
        if self._deadline is not None and self._clock() >= self._deadline - _DEADLINE_MARGIN:
            raise self._expired(exc) from exc
        reason = certificate_failure(exc)
        if reason is not None:
            # Not retried: the same certificate would be refused again.
            raise APIConnectionError(
                f"TLS certificate verification failed: {request.method} {redact_url(request.url)}: {reason}. "
                "The server's certificate is not one this client trusts for this host name; if your own CA signed "
                "it, pass verify='/path/to/ca-bundle.pem' (or set SSL_CERT_FILE)",
                request=request,
                attempts=self.count,
                may_have_been_processed=self.processed,
            ) from exc
        delay = delay_after_error(
            request.method,
            exc,
            retries_done=self.retries,
            max_retries=self._max_retries,
            jitter=self._jitter(),
            processed=self.processed,
        )
        if placeholder_failure(exc, request.url.host) is not None:
            delay = None  # a name no name server knows: another attempt fails the same way
        if delay is None or not self._time_for(delay):
            raise connection_error(exc, request, self.count, processed=self.processed) from exc
        reason = error_type(exc)
        if not self._budget_allows(reason):
            raise connection_error(exc, request, self.count, processed=self.processed, budget_refused=True) from exc
        return self._retry(delay, reason, type(exc).__name__)

    def after_response(self, response: Finished) -> float | None:
        """Log a response; return the delay before retrying, or ``None`` when it is final.

        A final response carries what the call's exception, if it makes one, says as
        ``may_have_been_processed`` (`PROCESSED`): a middleware's own response is read by the same rule.
        """
        if not self.processed:
            self.processed = may_have_acted(self.exchange, response.status_code)
        request = self.request
        if logger.isEnabledFor(logging.DEBUG):  # skip the formatting work otherwise
            status, reason, elapsed = response.status_code, response.reason_phrase, self._elapsed_ms()
            self._log(logging.DEBUG, "%s %s -> %d %s in %.1f ms (attempt %d)", status, reason, elapsed, self.count)
        if 200 <= response.status_code < 300:  # is_success, without two calls
            response.extensions[PROCESSED] = True
            return None
        delay = delay_after_response(
            request.method,
            response.status_code,
            response.headers,
            retries_done=self.retries,
            max_retries=self._max_retries,
            jitter=self._jitter(),
            processed=self.processed,
        )
        if delay is None or not self._time_for(delay):
            response.extensions[PROCESSED] = self.processed
            return None
        if not self._budget_allows(str(response.status_code)):
            response.extensions[BUDGET_REFUSED] = self.retries + 1
            response.extensions[PROCESSED] = self.processed
            return None
        return self._retry(delay, str(response.status_code), f"{response.status_code} {response.reason_phrase}")

    def _budget_allows(self, reason: str) -> bool:
        """Whether the retry budget gives a retry the policy wants; a refusal is logged and told."""
        budget = self._budget
        if budget is None or budget.try_withdraw(self._budget_clock()):
            return True
        self.budget_refused = True
        self._log(logging.INFO, "Not retrying %s %s after %s: the retry budget is exhausted (%r)", reason, budget)
        if self._observer is not None:
            self._observer.refused(reason)
        return False

    def _time_for(self, delay: float) -> bool:
        """Whether a sleep of ``delay`` still leaves time for another attempt."""
        return self._deadline is None or self._clock() + delay < self._deadline - _DEADLINE_MARGIN

    def _expired(self, cause: httpx.RequestError | None) -> APITimeoutError:
        request = self.request
        after = f" after {self.count} attempts" if self.count > 1 else ""
        detail = f" ({redact_text(repr(cause))})" if cause is not None else ""
        return APITimeoutError(
            f"Request timed out: {request.method} {redact_url(request.url)}: total_timeout={self._total_timeout:g}s "
            f"passed{after}{detail}",
            request=request,
            attempts=self.count,
            may_have_been_processed=self.processed,
        )

    def _retry(self, delay: float, reason: str, cause: str | None = None) -> float:
        self.retries += 1
        self.count += 1
        retries = (self.retries, self._max_retries)
        self._log(logging.INFO, "Retrying %s %s in %.2f s (retry %d of %d) after %s", delay, *retries, cause or reason)
        if self._observer is not None:
            self._observer.retried(reason)
        return delay

    def _elapsed_ms(self) -> float:
        return (self._clock() - self._started) * 1000

    def middleware_error(self, message: str) -> MiddlewareError:
        """A `MiddlewareError` of this call's current attempt, saying what its attempts showed so far."""
        return MiddlewareError(
            message, request=self.request, attempts=self.count, may_have_been_processed=self.processed
        )


class ResponseStreamLike(Protocol):
    """What `Attempts.complete` needs of a transport's response stream."""

    status_code: int

    @property
    def headers(self) -> httpx.Headers:
        """The response's headers."""
        ...

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """The response's header fields as they came, without making `headers` (read on every answer)."""
        ...

    def complete(self, content: bytes) -> httpx.Response:
        """The finished `httpx.Response` carrying ``content``."""
        ...


class Answer:
    """A finished attempt: its status, headers and decoded body, without an `httpx.Response` until one is shown.

    `http_response` makes it, once, where one is shown (docs/architecture.md, step 3). Marks set in
    `extensions` before then are carried into the response's own extensions, which `extensions` is from then on.
    """

    __slots__ = ("_response", "_stream", "content", "extensions", "request", "status_code")

    def __init__(
        self, stream: ResponseStreamLike, content: bytes, request: httpx.Request, marks: dict[str, Any]
    ) -> None:
        self._stream = stream
        self._response: httpx.Response | None = None
        self.status_code = stream.status_code
        self.content = content
        self.request = request
        self.extensions = marks

    @property
    def headers(self) -> httpx.Headers:
        """The response's headers (a transport may convert them only now: a typed 2xx call never reads them)."""
        return self._stream.headers

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """The response's header fields as they came, without making `headers` (read on every answer)."""
        return self._stream.raw_headers()

    @property
    def reason_phrase(self) -> str:
        """The response's reason phrase (makes the `httpx.Response`)."""
        return self.http_response().reason_phrase

    def http_response(self) -> httpx.Response:
        """The `httpx.Response` of this attempt, made on first use."""
        response = self._response
        if response is None:
            response = self._response = self._stream.complete(self.content)
            response.extensions.update(self.extensions)
            self.extensions = response.extensions
            # Whatever the library: text only ever decoded with a text encoding. A mock
            # transport's own code may have read .text already; it is then decoded for good.
            with contextlib.suppress(ValueError):
                response.encoding = text_encoding(response.headers)
        return response


Finished = httpx.Response | Answer
"""A final attempt as the send loop hands it to a parser: an `Answer`, or a middleware's `httpx.Response`."""


def full_response(response: Finished) -> httpx.Response:
    """``response`` as an `httpx.Response`, made from an `Answer` if need be."""
    return response if isinstance(response, httpx.Response) else response.http_response()
