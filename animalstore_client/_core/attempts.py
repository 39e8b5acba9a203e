"""One call's attempts, written once for both clients.

The shells (``_clients.client_async`` and the ``_clients._generated.client_sync`` generated from it) only
send, read, sleep and close; every decision between those steps is made here,
without I/O. `Attempts` is the bookkeeping of one call: the timeouts each
attempt may use, whether a failure or a status is retried and after how long
(the pure policy of ``_core.retry``), the log lines, the attempt count, and the
final exception when it gives up. A total deadline belongs in
`Attempts.start`, `Attempts.before_send` (nothing handed over past it) and
`Attempts._retry` (no sleep past it). An attempt ends in an `Answer`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import ssl
import sys
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import httpx

from animalstore_client._core.body import BodyReader, late_body, text_encoding
from animalstore_client._core.deadline import Timeouts
from animalstore_client._core.environments import placeholder_failure
from animalstore_client._core.exceptions import APIConnectionError, APITimeoutError, MiddlewareError
from animalstore_client._core.httpx_private import copy_request
from animalstore_client._core.libraries import LIBRARIES
from animalstore_client._core.log import logger
from animalstore_client._core.retry import (
    delay_after_error,
    delay_after_response,
    error_may_have_been_processed,
    is_service_error,
    status_may_have_been_processed,
)
from animalstore_client._core.secrets import SHORTEST_MASKED, redact_text, redact_url
from animalstore_client._core.tls import certificate_failure
from animalstore_client._core.wire import ANSWERED, ClientRuleBroken, Wire

if TYPE_CHECKING:
    from animalstore_client._core.budget import RetryBudget

__all__ = [
    "ATTEMPT",
    "BUDGET_NOTE",
    "BUDGET_REFUSED",
    "CALL_ID",
    "CUT_AT",
    "OPERATION",
    "Answer",
    "Attempts",
    "CallersCode",
    "ClientRuleBroken",
    "Finished",
    "Observer",
    "ResponseStreamLike",
    "callers_code",
    "callers_text",
    "connection_error",
    "contradicts_the_wire",
    "error_type",
    "full_response",
    "raised_by_callers_code",
    "unknown_failure",
]

_DEBUG = 10


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

BUDGET_NOTE = "not retried: the client's retry budget is exhausted, too many of its recent calls were retried"

# A timeout that fires at the deadline may do so a hair early (poll()
# resolution); within this margin the deadline counts as reached.
_DEADLINE_MARGIN = 0.005


def connection_error(
    exc: httpx.RequestError, request: httpx.Request, attempts: int, *, budget_refused: bool = False
) -> APIConnectionError:
    """The SDK exception for a transport failure that ends a call."""
    after = f" after {attempts} attempts" if attempts > 1 else ""
    where = f"{request.method} {redact_url(request.url)}"
    note = f"; {BUDGET_NOTE}" if budget_refused else ""
    placeholder = placeholder_failure(exc, request.url.host)
    if placeholder is not None:
        note += f". {placeholder}"
    error: APIConnectionError
    if isinstance(exc, httpx.TimeoutException):
        error = APITimeoutError(
            f"Request timed out: {where}{after} ({redact_text(repr(exc))}){note}", request=request, attempts=attempts
        )
    else:
        error = APIConnectionError(
            f"Connection error: {where}{after} ({redact_text(repr(exc))}){note}", request=request, attempts=attempts
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


def error_type(exc: BaseException) -> str:
    """A failure's class as OpenTelemetry's ``error.type`` wants it: fully qualified (``httpx.ReadTimeout``)."""
    cls = type(exc)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


# The packages of the libraries behind the seam and of what they send through (each library's declared
# stack), what runs them (the event loops, the operating system's trust store) and the SDK's own: an
# exception raised in one of them is the exchange's.
HTTP_STACK_PACKAGES = frozenset(
    {
        "animalstore_client",
        "trio",
        "uvloop",
        "truststore",
        *(package for library in LIBRARIES for package in library.stack),
    }
)


class CallersCode(NamedTuple):
    """The function of the caller's that an exchange was running when an exception was raised (`callers_code`)."""

    function: str
    """Where it is: ``module.qualname`` (``myapp.hooks.check_tenant``)."""
    called_by: tuple[str, str] | None
    """The library frame that called it, as (top-level package, function), when a library did."""
    respx: bool
    """Whether respx was mocking (one of its frames is in the traceback): the code is a respx route's."""


def _top(frame: FrameType) -> str:
    name = frame.f_globals.get("__name__")
    return name.split(".")[0] if isinstance(name, str) else "__main__"


def _function(frame: FrameType) -> str:
    code = frame.f_code
    return f"{frame.f_globals.get('__name__', '__main__')}.{getattr(code, 'co_qualname', code.co_name)}"


def callers_code(exc: BaseException) -> CallersCode | None:
    """The caller's function that ``exc`` was raised in, or that a library was running when it was; else ``None``.

    The frames of ``exc``'s traceback are read from the outermost in, passing
    over the standard library's (``json``, ``ssl``, ``socket``): those say
    nothing about whose code it was. Code of the caller's is a frame of a
    package outside `HTTP_STACK_PACKAGES` that is either the innermost one
    (their code raised: a hook's ``raise``, a ``MockTransport`` handler's) or
    inside a frame of an HTTP library (the library called it: an event hook,
    a transport, a session's middleware, even when the exception itself came
    from a library function it called, such as a missing header's
    ``KeyError`` from httpx's ``Headers`` or ``ResponseNotRead`` from
    ``response.json()``). A frame of the caller's outside every library frame
    (a tracer or crash reporter wrapping the library's ``send``, between the
    SDK and the library) does not count: a library's failure under it stays
    the library's. The SDK's own frames are never the caller's, and do not open
    a library either (the SDK calls the library; a wrapper between them is
    outside it).
    """
    frames: list[tuple[str, FrameType]] = []
    tb = exc.__traceback__
    while tb is not None:
        top = _top(tb.tb_frame)
        if top not in sys.stdlib_module_names:
            frames.append((top, tb.tb_frame))
        tb = tb.tb_next
    respx = any(top == "respx" for top, _ in frames)
    in_library = False
    for index, (top, frame) in enumerate(frames):
        if top not in HTTP_STACK_PACKAGES:
            if in_library:
                caller_top, caller = frames[index - 1]
                return CallersCode(_function(frame), (caller_top, caller.f_code.co_name), respx)
        elif top != "animalstore_client":
            in_library = True
    if frames and frames[-1][0] not in HTTP_STACK_PACKAGES:
        return CallersCode(_function(frames[-1][1]), None, respx)
    return None


def raised_by_callers_code(exc: BaseException) -> bool:
    """Whether ``exc`` was raised in code of the caller's, or in a library while it ran code of the caller's.

    `callers_code` says how the frames tell it.
    """
    return callers_code(exc) is not None


def _is_a(exc: BaseException, names: frozenset[tuple[str, str]]) -> bool:
    """Whether ``exc`` is an instance of a class named in ``names`` as (top-level package, class name).

    By name, so that no optional library is imported to ask.
    """
    return any((cls.__module__.split(".")[0], cls.__name__) in names for cls in type(exc).__mro__)


# The error each library's raise-for-status raises: only code of the caller's raises one for the SDK's
# requests (the SDK never asks for it, and turns off a client's own raising: aiohttp's raise_for_status=,
# pyreqwest's error_for_status). aiohttp's class also reports a malformed answer: its adapter translates
# those, which come from the connection, before this table sees them.
_RAISED_FOR_STATUS = frozenset(
    {("httpx", "HTTPStatusError"), ("httpx2", "HTTPStatusError"), ("aiohttp", "ClientResponseError")}
)
# A proxy library's failures that are no OSError (python-socks, under httpx-socks's transports): the
# proxy refused or failed before the request reached the store.
_PROXY_REFUSED = frozenset({("python_socks", "ProxyError")})


# OSErrors no socket raises: a hook of the caller's opening a file that is not there is a bug of theirs.
_FILE_SYSTEM = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError)


def _network_failure(exc: BaseException, text: str, request: httpx.Request) -> httpx.TransportError | None:
    """``exc`` (shown as ``text``) as the transport failure it is by its class, wherever raised; else ``None``.

    An `OSError` is the network's (but a file system's, which no socket
    raises): a refused connection or a name that does not resolve sent
    nothing, a timeout and anything else may have followed the request (so
    only a read is retried), as the transports' own tables say for their
    libraries' errors (each library's connection and timeout errors are
    translated there, before this).
    """
    if isinstance(exc, OSError) and not isinstance(exc, _FILE_SYSTEM):
        if (
            isinstance(exc, (ConnectionRefusedError, socket.gaierror, ssl.SSLCertVerificationError))
            or exc.errno == errno.ECONNREFUSED
        ):
            return httpx.ConnectError(text, request=request)
        if isinstance(exc, TimeoutError):
            return httpx.ReadTimeout(text, request=request)
        return httpx.ReadError(text, request=request)
    if _is_a(exc, _PROXY_REFUSED):
        return httpx.ConnectError(text, request=request)
    return None


def callers_text(exc: BaseException, request: httpx.Request) -> str:
    """``": "`` and ``exc``'s text, as an SDK error may quote it: the key and URL credentials masked.

    Code of the caller's may quote the request's headers (``request.headers["authorization"]``): the key
    is masked whatever the format, with the URL secrets `redact_text` knows.
    """
    try:
        said = f": {exc}"
    except Exception:  # noqa: BLE001  # a __str__ of the caller's that raises must not replace the failure
        said = " (its text cannot be shown)"
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    return redact_text(said.replace(key, "[redacted]") if len(key) >= SHORTEST_MASKED else said)


def contradicts_the_wire(wire: Wire, exc: httpx.RequestError) -> bool:
    """Whether ``exc``, raised out of a send, cannot be the library's own I/O, given what ``wire`` shows.

    A failure that claims nothing was sent (a connect error) once a byte of the request was written, or any
    failure once the answer's head had arrived (only code run after it, an event hook, raises then), came
    from code of the caller's inside the client. A read timeout after the write is what the library's own
    I/O gives: it stays the network's, even with an instrumented client's wrapper in its traceback.
    """
    return wire.may_have_written and (wire.phase >= ANSWERED or not error_may_have_been_processed(exc))


def _what_raised(found: CallersCode | None, describe: Callable[[tuple[str, str] | None], str | None]) -> str:
    """The part of the caller's that raised, as a `MiddlewareError` names it: its kind, then its function."""
    if found is None:
        return "code of yours inside http_client"  # a raise-for-status error raised outside every frame of theirs
    # Under respx the code is a route's (or its side effect's), whichever client sent.
    kind = "a respx mock" if found.respx else describe(found.called_by) or "code outside the SDK and its HTTP library"
    return f"{kind} ({found.function})"


def unknown_failure(
    exc: Exception, attempts: Attempts, describe: Callable[[tuple[str, str] | None], str | None]
) -> httpx.RequestError | MiddlewareError:
    """What ends (or retries) an attempt that failed with an exception the transport did not translate.

    One table decides, by what was raised and then by where, for every library:

    1. `ClientRuleBroken` (a caller's client broke a rule of the SDK's on this
       send, and its adapter stopped it): a `MiddlewareError` with its text.
    2. Anything raised in code of the caller's (`callers_code`) once the
       attempt's record (``attempts.wire``) shows that the request may have
       been written: a `MiddlewareError`, whatever its class (a hook's
       ``ConnectionRefusedError`` or ``httpx.ConnectError`` from its own call
       to a metrics service that is down says who failed, never that nothing
       was sent). The send loop routes an httpx error of the caller's here too.
    3. An `OSError`, wherever it was raised (a socket, TLS, a hand-written
       transport's ``ConnectionRefusedError``, a SOCKS proxy refusing; not a
       file system's, such as ``FileNotFoundError``), or a proxy library's
       refusal: a network failure, retried as its kind allows
       (`_network_failure`: nothing sent, or maybe sent).
    4. A library's raise-for-status error (httpx's and httpx2's
       ``HTTPStatusError``, aiohttp's ``ClientResponseError``): the caller's
       code asked for it, so a `MiddlewareError`.
    5. Anything else raised in code of the caller's, or in a library while it
       ran code of the caller's (`callers_code`: an event hook, a transport,
       a session's middleware, a respx route): a `MiddlewareError`. Not
       retried and not an `APIError`, as for a failing middleware: ``except
       APIError`` must not hide a bug in the calling code.
    6. Anything else is a library's own failure: counted as "sent, no
       complete answer", since the service may have acted on the request, so
       only a read is retried.

    ``describe`` is the transport's: what of the caller's its library ran from
    a frame (`CallersCode.called_by`), ``None`` when it cannot tell (or no
    ``http_client`` was given), so that the message names what raised and
    never an ``http_client`` that was not given. Raise the result ``from exc``.
    """
    name = type(exc).__name__
    said = callers_text(exc, attempts.request)
    if isinstance(exc, ClientRuleBroken):
        return MiddlewareError(said.removeprefix(": "), request=attempts.request, attempts=attempts.count)
    text = name + said
    found = callers_code(exc)
    if found is None and exc.__cause__ is not None and not isinstance(exc, httpx.RequestError):
        # A library's error wrapping what code of the caller's raised inside it (aiohttp's ClientOSError around
        # a session middleware's ConnectionRefusedError), which its transport did not take for the connection's.
        found = callers_code(exc.__cause__)
    if found is not None and attempts.wire.may_have_written:
        return MiddlewareError(
            f"{_what_raised(found, describe)} raised {text} after the request was written "
            f"({attempts.wire.phase_name}): it may have been processed, and was not sent again",
            request=attempts.request,
            attempts=attempts.count,
        )
    if isinstance(exc, httpx.RequestError):
        return exc  # the library's own failure (or one of the caller's before anything was written), as it was
    network = _network_failure(exc, text, attempts.request)
    if network is not None:
        return network
    if found is not None or _is_a(exc, _RAISED_FOR_STATUS):
        return MiddlewareError(
            f"{_what_raised(found, describe)} raised {text}", request=attempts.request, attempts=attempts.count
        )
    return httpx.ReadError(text, request=attempts.request)


class Attempts:
    """The attempts of one call: timeouts, deadline, retry decisions, logging, the count and the body cap.

    A shell drives it: ``start()`` before each attempt, ``body_reader()`` and
    ``complete()`` around reading the body, then ``after_response()`` or
    ``after_error()``, which return the seconds to sleep before the next
    attempt (``None`` from ``after_response`` means the response is final) or
    raise the exception that ends the call.

    With ``total_timeout`` every attempt gets at most the time left, no sleep
    is started that would pass the deadline, and `deadline` is what the shell
    passes to the transport, which holds each socket operation to it.
    ``clock`` (``time.monotonic`` unless a test gives a fake one) is the only
    source of time in these decisions.
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
        "processed",
        "request",
        "retries",
        "wire",
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
        """Whether the service may have acted on the request in an attempt so far (`_core.retry`'s table, read
        with each attempt's `wire`): what the call's exception says as ``may_have_been_processed``."""
        self.wire = Wire(request.url)
        """What the current attempt did on its connection (`_core.wire`), made anew by `start`."""
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
        """Begin an attempt; return its per-phase timeouts (`before_send` cuts them to the time left)."""
        self._started = now = self._clock()
        deadline = self._deadline
        if deadline is not None and deadline - now <= _DEADLINE_MARGIN:
            raise self._expired(None)
        if self.count > 1:
            self.wire = Wire(self.request.url)
        return self.request.extensions["timeout"]  # type: ignore[no-any-return]

    def before_send(self, timeouts: Timeouts) -> Timeouts:
        """The attempt's ``timeouts`` as it is handed to the library, after any middleware: none past the deadline.

        Past the deadline (within the margin `start` keeps too) nothing is handed over:
        the attempt fails as a connect timeout (nothing was sent), which ends the call
        with `APITimeoutError`.
        """
        deadline = self._deadline
        if deadline is None:
            return timeouts
        left = deadline - self._clock()
        if left <= _DEADLINE_MARGIN:  # as in start(): a library may round a timer this short up
            raise httpx.ConnectTimeout(
                "the call's total_timeout passed before the request was sent", request=self.request
            )
        for value in timeouts.values():
            if value is None or value > left:
                return {phase: left if value is None or value > left else value for phase, value in timeouts.items()}
        return timeouts

    def body_reader(self, codings: Sequence[bytes]) -> BodyReader:
        """A reader for this attempt's body (its Content-Encoding ``codings``), held to the cap and the deadline."""
        limit = None if self._max_bytes is None else self._max_bytes + 1
        return BodyReader(self.request, codings, limit=limit, deadline=self._deadline, clock=self._clock)

    def body_in_time(self, body: bytes) -> bytes:
        """``body``, taken whole, unless the call's deadline passed while it arrived (as `BodyReader.feed` checks).

        An empty body arrived with the headers: like the chunk loop, which feeds no chunk then, it is not checked.
        """
        if body and self._deadline is not None and self._clock() >= self._deadline:
            raise late_body(self.request)
        return body

    def complete(self, stream: ResponseStreamLike, content: bytes) -> Answer:
        """The finished attempt; a body over ``max_response_bytes`` is cut at the cap and marked."""
        if not self.processed:
            status = stream.status_code
            self.processed = status_may_have_been_processed(status, status == 503 and is_service_error(content, status))
        cap = self._max_bytes
        if cap is None or len(content) <= cap:
            return Answer(stream, content, self.request, {})
        return Answer(stream, content[:cap], self.request, {CUT_AT: cap})

    def _debug(self, template: str, *args: object) -> None:
        """A DEBUG line about this call's request: its method and URL (secrets masked), then ``template``."""
        request = self.request
        logger.debug("%s %s " + template, request.method, redact_url(request.url), *args)

    def failed(self, failure: Exception) -> None:
        """Note how an attempt's exchange failed, from its `wire` first.

        The service may have acted once the record shows the request may have
        been written, whatever was raised; short of that, a network failure
        counts by its kind (a refused connection sent nothing, a read timeout
        may have followed the request), and any other failure as "may have
        been sent" unless the record proves that nothing was written (a
        caller's client stopped before its first byte).
        """
        if not self.processed:
            wire = self.wire
            if wire.may_have_written:
                self.processed = True
            elif isinstance(failure, httpx.RequestError):
                self.processed = error_may_have_been_processed(failure)
            else:
                self.processed = not wire.proves_nothing_written

    def after_error(self, exc: httpx.RequestError) -> float:
        """Log a failed attempt; return the delay before retrying, or raise the final error."""
        self.failed(exc)
        request = self.request
        if logger.isEnabledFor(_DEBUG):  # skip the formatting work otherwise
            self._debug("failed after %.1f ms (attempt %d): %s", self._elapsed_ms(), self.count, redact_text(repr(exc)))
        if self._deadline is not None and self._clock() >= self._deadline - _DEADLINE_MARGIN:
            raise self._expired(exc) from exc
        reason = certificate_failure(exc)
        if reason is not None:
            # Not retried: the same certificate would be refused again.
            raise APIConnectionError(
                f"TLS certificate verification failed: {request.method} {redact_url(request.url)}: {reason}. "
                "The server's certificate is not one this client trusts for this host name; if your own CA signed "
                "it, pass "
                "verify='/path/to/ca-bundle.pem' (or set SSL_CERT_FILE)",
                request=request,
                attempts=self.count,
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
            raise connection_error(exc, request, self.count) from exc
        reason = error_type(exc)
        if not self._budget_allows(reason):
            raise connection_error(exc, request, self.count, budget_refused=True) from exc
        return self._retry(delay, reason, type(exc).__name__)

    def after_response(self, response: Finished) -> float | None:
        """Log a response; return the delay before retrying, or ``None`` when it is final."""
        request = self.request
        if logger.isEnabledFor(_DEBUG):  # skip the formatting work otherwise
            self._debug(
                "-> %d %s in %.1f ms (attempt %d)",
                response.status_code,
                response.reason_phrase,
                self._elapsed_ms(),
                self.count,
            )
        if 200 <= response.status_code < 300:  # is_success, without two calls
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
            return None
        if not self._budget_allows(str(response.status_code)):
            response.extensions[BUDGET_REFUSED] = self.retries + 1
            return None
        return self._retry(delay, str(response.status_code), f"{response.status_code} {response.reason_phrase}")

    def _budget_allows(self, reason: str) -> bool:
        """Whether the retry budget gives a retry the policy wants; a refusal is logged and told."""
        budget = self._budget
        if budget is None or budget.try_withdraw(self._budget_clock()):
            return True
        self.budget_refused = True
        logger.info(
            "Not retrying %s %s after %s: the retry budget is exhausted (%r)",
            self.request.method,
            redact_url(self.request.url),
            reason,
            budget,
        )
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
        )

    def _retry(self, delay: float, reason: str, cause: str | None = None) -> float:
        self.retries += 1
        self.count += 1
        logger.info(
            "Retrying %s %s in %.2f s (retry %d of %d) after %s",
            self.request.method,
            redact_url(self.request.url),
            delay,
            self.retries,
            self._max_retries,
            cause or reason,
        )
        if self._observer is not None:
            self._observer.retried(reason)
        return delay

    def _elapsed_ms(self) -> float:
        return (self._clock() - self._started) * 1000


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

    A typed call (``list_pets``...) reads only these; making the
    `httpx.Response` cost about 17 us of a pyreqwest call's 230 us of CPU
    (``benchmarks/pyreqwest_split.py``). `http_response` makes it, once, for
    what does show one: an exception, ``with_raw_response``, ``request()``,
    middleware and tracing. Marks set in `extensions` before then are carried
    into the response's own extensions, which `extensions` is from then on.
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
        """The response's header fields as they came: what the client reads of every answer (its deprecation
        notices) without making `headers`."""
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
