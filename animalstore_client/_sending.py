"""One call's attempts and one response's body, written once for both clients.

The shells (``_client_async`` and the ``_client_sync`` generated from it) only
send, read, sleep and close; every decision between those steps is made here,
without I/O:

- `Attempts` is the bookkeeping of one call: the timeouts each attempt may
  use, whether a failure or a status is retried and after how long (the pure
  policy of ``_retry``), the log lines, the attempt count, and the final
  exception when it gives up. A total deadline belongs in `Attempts.start`
  (shorter timeouts for a late attempt) and `Attempts._retry` (no sleep past it).
- `BodyReader` turns the raw chunks a transport reads into the decoded body,
  undoing ``Content-Encoding`` as they arrive. A size cap belongs in
  `BodyReader.feed`.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import os
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import httpx

from ._environments import placeholder_failure
from ._exceptions import APIConnectionError, APITimeoutError
from ._logging import logger
from ._retry import delay_after_error, delay_after_response
from ._secrets import redact_text, redact_url
from ._tls import certificate_failure

if TYPE_CHECKING:
    from ._budget import RetryBudget

__all__ = [
    "ACCEPT_ENCODING",
    "CUT_AT",
    "DEADLINE",
    "Answer",
    "Attempts",
    "BodyReader",
    "Finished",
    "Timeouts",
    "codings_in",
    "deadline_scope",
    "finished_response",
    "full_response",
    "headers_from_library",
    "late_body",
    "remembered",
    "within",
]

K = TypeVar("K")
V = TypeVar("V")

Timeouts = dict[str, float | None]
"""Per-phase timeouts as httpx spells them: ``connect``, ``read``, ``write``, ``pool``."""

_DEBUG = 10


DEADLINE: ContextVar[float | None] = ContextVar("animalstore_client_deadline", default=None)
"""The running send's deadline (``time.monotonic()`` seconds), for the network-level code that cannot see the request.

Only the httpx transport's network backend and the urllib3 transport's
connection class read it: they run inside the library, below any argument
the SDK can pass. Transports set it with `deadline_scope` around the one
send (and each body read), and reset it after; nothing else reads or writes it.
"""


class deadline_scope:  # used as a function: ``with deadline_scope(deadline):``
    """`DEADLINE` set to ``deadline`` inside the block, and reset to what it was after.

    A class rather than a ``contextlib.contextmanager`` generator: it is entered
    on every send, and the generator's machinery cost ~2 µs a call.
    """

    __slots__ = ("_deadline", "_token")

    def __init__(self, deadline: float | None) -> None:
        self._deadline = deadline

    def __enter__(self) -> None:
        self._token = DEADLINE.set(self._deadline)

    def __exit__(self, *exc_info: object) -> None:
        DEADLINE.reset(self._token)


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


def within(
    timeout: float | None, error: type[Exception], deadline: float | None, clock: Callable[[], float] = time.monotonic
) -> float | None:
    """``timeout`` shortened to what is left until ``deadline``; ``error`` once none is left."""
    if deadline is None:
        return timeout
    left = deadline - clock()
    if left <= 0:
        raise error("the call's total_timeout has passed")
    return left if timeout is None or timeout > left else timeout


def remembered(table: dict[K, V], key: K, make: Callable[[], V], most: int) -> V:
    """``table[key]``, made by ``make()`` on first need; a table holding ``most`` entries is emptied first.

    What the transports keep of the values the SDK repeats from call to call (request headers,
    URLs, timeouts in a library's own form), bounded so that values that do not repeat cannot grow it.
    """
    value = table.get(key)
    if value is None:
        if len(table) >= most:
            table.clear()
        value = table[key] = make()
    return value


def late_body(request: httpx.Request) -> httpx.ReadTimeout:
    """The failure of a body that was still arriving when the call's deadline passed."""
    return httpx.ReadTimeout("the call's total_timeout passed while the body arrived", request=request)


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
    """What `Attempts` tells the telemetry of a call (``_telemetry``): each retry, and each refusal."""

    def retried(self, reason: str) -> None:
        """A retry was decided, for ``reason`` (a status code, or a transport failure's class)."""
        ...

    def refused(self, reason: str) -> None:
        """The retry budget refused a retry the policy wanted."""
        ...


def copy_request(template: httpx.Request, extensions: dict[str, Any]) -> httpx.Request:
    """A request like ``template`` with headers and extensions of its own; the body (bytes) is shared.

    httpx builds a Request in ~10 µs, this copy takes under one.
    """
    request: httpx.Request = object.__new__(httpx.Request)
    request.__dict__.update(template.__dict__)
    request.headers = template.headers.copy()
    request.extensions = extensions
    return request


def error_type(exc: BaseException) -> str:
    """A failure's class as OpenTelemetry's ``error.type`` wants it: fully qualified (``httpx.ReadTimeout``)."""
    cls = type(exc)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def unknown_failure(exc: Exception, request: httpx.Request) -> httpx.ReadError:
    """A library's exception the transport did not translate (a raw `ssl.SSLError` on a broken TLS stream).

    Counted as "sent, no complete answer": the service may have acted on
    the request, so only a read is retried.
    """
    failure = httpx.ReadError(redact_text(f"{type(exc).__name__}: {exc}"), request=request)
    failure.__cause__ = exc
    return failure


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
        cap = self._max_bytes
        if cap is None or len(content) <= cap:
            return Answer(stream, content, self.request, {})
        return Answer(stream, content[:cap], self.request, {CUT_AT: cap})

    def after_error(self, exc: httpx.RequestError) -> float:
        """Log a failed attempt; return the delay before retrying, or raise the final error."""
        request = self.request
        if logger.isEnabledFor(_DEBUG):  # skip the formatting work otherwise
            logger.debug(
                "%s %s failed after %.1f ms (attempt %d): %s",
                request.method,
                redact_url(request.url),
                self._elapsed_ms(),
                self.count,
                redact_text(repr(exc)),
            )
        if self._deadline is not None and self._clock() >= self._deadline - _DEADLINE_MARGIN:
            raise self._expired(exc) from exc
        reason = certificate_failure(exc)
        if reason is not None:
            # Not retried: the same certificate would be refused again.
            raise APIConnectionError(
                f"TLS certificate verification failed: {request.method} {redact_url(request.url)}: {reason}. "
                "The server's "
                "certificate is not one this client trusts for this host name; if your own CA signed it, pass "
                "verify='/path/to/ca-bundle.pem' (or set SSL_CERT_FILE)",
                request=request,
                attempts=self.count,
            ) from exc
        delay = delay_after_error(
            request.method, exc, retries_done=self.retries, max_retries=self._max_retries, jitter=self._jitter()
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
            logger.debug(
                "%s %s -> %d %s in %.1f ms (attempt %d)",
                request.method,
                redact_url(request.url),
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


@functools.cache
def _text_encodings() -> frozenset[str]:
    """The codecs a body may be decoded with: the standard library's text encodings.

    Left out: codecs that are not text encodings at all (``bz2``, ``zlib``,
    ``base64``, ``hex``, ``quopri``, ``uu``, ``rot-13``: a server naming one
    would have httpx inflate or transform the body past any cap), and
    ``utf-16``/``utf-32`` with byte-order sniffing, whose decoders raise even
    when told to replace what does not fit. ``tests/test_sending.py`` feeds
    every codec name Python knows through this choice.
    """
    import encodings.aliases

    names: set[str] = set()
    for alias in set(encodings.aliases.aliases.values()):
        try:
            name = codecs.lookup(alias).name
            b"x".decode(name, "replace")  # a codec that is not a text encoding raises LookupError here
        except LookupError:  # that, or a platform's codec missing here (mbcs)
            continue
        except ValueError:  # a text encoding that fails even so: not one to trust with a body
            continue
        names.add(name)
    return frozenset(names - {"utf-16", "utf-32"})


def text_encoding(headers: httpx.Headers) -> str:
    """The encoding a body's text is decoded with (bytes that do not fit are replaced).

    JSON is UTF-8 (RFC 8259), whatever ``charset`` says; another body takes
    its ``charset`` when that names a text encoding, and UTF-8 otherwise.
    """
    content_type = headers.get("content-type")
    if not content_type:
        return "utf-8"
    media, _, parameters = content_type.partition(";")
    media = media.strip().lower()
    if media == "application/json" or media.endswith("+json"):
        return "utf-8"
    for parameter in parameters.split(";"):
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("'\"")
            try:
                name = codecs.lookup(charset).name
            except (LookupError, ValueError, TypeError):  # unknown, or a name with a NUL in it
                return "utf-8"
            return name if name in _text_encodings() else "utf-8"
    return "utf-8"


def require_private(owner: object, name: str, why: str) -> None:
    """Fail loudly, naming it, when a library no longer has a private attribute the SDK writes.

    Writing an attribute that is gone would not fail: it would quietly make a
    new one, and the SDK would hand out empty headers or bodies. So each one is
    checked once, when this module is imported (docs/architecture.md lists them).
    """
    if not hasattr(owner, name):
        raise ImportError(
            f"animalstore_client needs {type(owner).__module__}.{type(owner).__name__}.{name} ({why}), "
            f"which httpx {httpx.__version__} no longer has: install the httpx release this SDK was tested "
            "with, or a newer animalstore-client"
        )


require_private(httpx.Response(200, content=b""), "_content", "a finished response's body, set as read() sets it")
require_private(httpx.Headers(), "_list", "headers filled from a library's raw pairs")


def finished_response(
    status_code: int,
    headers: httpx.Headers,
    content: bytes,
    request: httpx.Request,
    extensions: dict[str, Any],
) -> httpx.Response:
    """An `httpx.Response` holding the decoded ``content`` under the server's own ``headers``.

    Given ``content``, httpx would run it through its decoders (again, for a
    body the SDK already decoded) on a path that costs a fifth of a fast
    backend's whole call; so the response is made empty and the body set as
    httpx's own ``read()`` sets it. ``tests/test_seam.py`` checks the result
    behaves as a read response (``content``, ``text``, ``json()``).
    """
    response = httpx.Response(status_code, request=request, extensions=extensions, stream=_DONE)
    response.headers = headers  # the transport's own object: no copy, and its encoding is known already
    response._content = content  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]  # as read() sets it
    response.is_stream_consumed = True
    response.is_closed = True
    return response


def codings_in(pairs: Iterable[tuple[bytes, bytes]]) -> list[bytes]:
    """The values of the Content-Encoding fields among a library's raw header pairs, in order."""
    return [value for name, value in pairs if name.lower() == b"content-encoding"]


def headers_from_library(pairs: Iterable[tuple[bytes, bytes]]) -> httpx.Headers:
    """An `httpx.Headers` holding a library's raw header pairs as they came.

    ``httpx.Headers(pairs)`` normalises and type-checks each name and value
    that arrived as bytes already; this fills httpx's own list directly
    (tests/test_seam.py checks the result against ``httpx.Headers(pairs)``).
    """
    headers = httpx.Headers()
    headers._list = [(name, name.lower(), value) for name, value in pairs]  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]
    return headers


def response_from_library(
    status_code: int, headers: httpx.Headers, content: bytes, request: httpx.Request, reason: str | None, started: float
) -> httpx.Response:
    """`finished_response` for a library other than httpx: HTTP/1.1, its reason phrase, and the time taken."""
    extensions: dict[str, Any] = {
        "http_version": b"HTTP/1.1",
        "reason_phrase": (reason or "").encode("latin-1", "replace"),
    }
    response = finished_response(status_code, headers, content, request, extensions)
    response.elapsed = timedelta(seconds=time.monotonic() - started)
    return response


class _Done(httpx.SyncByteStream, httpx.AsyncByteStream):
    """The stream of a response whose body the SDK has read already."""

    def __iter__(self) -> Iterator[bytes]:
        return iter(())

    async def __aiter__(self) -> AsyncIterator[bytes]:
        return
        yield b""


_DONE = _Done()


class ResponseStreamLike(Protocol):
    """What `Attempts.complete` needs of a transport's response stream."""

    status_code: int

    @property
    def headers(self) -> httpx.Headers:
        """The response's headers."""
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


ACCEPT_ENCODING = "gzip, deflate"
"""The content codings `BodyReader` undoes, and so the only ones the SDK asks for."""

_STEP = 64 * 1024
"""Most bytes one decoding step may produce: a compressed bomb inflates in steps this big, not at once."""
MAX_CODINGS = 3
"""Most content codings undone in a row; each holds a decompression window."""


class _Stage(Protocol):
    """A decoding step: zlib's decompress objects, and `_Deflate`."""

    @property
    def unconsumed_tail(self) -> bytes: ...

    def decompress(self, data: bytes, max_length: int = ..., /) -> bytes: ...

    def flush(self, length: int = ..., /) -> bytes: ...


class _Deflate:
    """``deflate`` as servers send it: zlib-wrapped per the RFC, or raw as some do.

    Which one is decided on the first two bytes (a zlib header), however the
    body is split into chunks; a bad header means raw, as httpx does it.
    """

    __slots__ = ("_head", "_zlib")

    def __init__(self) -> None:
        self._head = b""
        self._zlib: _Stage | None = None

    @property
    def unconsumed_tail(self) -> bytes:
        return b"" if self._zlib is None else self._zlib.unconsumed_tail

    def decompress(self, data: bytes, max_length: int = 0, /) -> bytes:
        if self._zlib is None:
            self._head += data
            if len(self._head) < 2:
                return b""
            data, self._head = self._head, b""
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS)
            try:
                return self._zlib.decompress(data, max_length)
            except zlib.error:
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._zlib.decompress(data, max_length)

    def flush(self, length: int = _STEP, /) -> bytes:
        if self._zlib is None:  # fewer than two bytes in all: only raw deflate can be that short
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._zlib.decompress(self._head, _STEP) + self._zlib.flush()
        return self._zlib.flush(length)


class BodyReader:
    """Collects one response body from the raw chunks a transport reads.

    ``Content-Encoding`` is undone chunk by chunk (``gzip`` and ``deflate``,
    up to `MAX_CODINGS` in a row); an encoding it does not know is left as it
    is, as httpx does. With a ``limit`` it keeps at most that many decoded
    bytes and then asks for no more (`feed` returns ``False``), and each
    decoding step produces at most `_STEP` bytes, so a decompression bomb
    costs memory in proportion to the limit, not to what it would inflate to.
    With a ``deadline`` (on ``clock``'s scale, ``time.monotonic`` by default)
    a chunk that arrives after it raises `httpx.ReadTimeout`.
    """

    __slots__ = ("_chunks", "_clock", "_deadline", "_limit", "_request", "_stages", "_total", "full")

    def __init__(
        self,
        request: httpx.Request,
        encodings: Sequence[bytes],
        *,
        limit: int | None = None,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._request = request
        self._limit = limit
        self._deadline = deadline
        self._clock = clock
        self._chunks: list[bytes] = []
        self._total = 0
        self.full = False
        """Whether ``limit`` bytes are in: the rest of the body is not wanted."""
        self._stages: list[_Stage] = []
        # ``encodings`` are the Content-Encoding values; their codings are listed in the order
        # they were applied: undo them backwards.
        codings = [part for value in encodings for part in value.split(b",")] if encodings else ()
        for value in reversed(codings):
            coding = value.strip().lower()
            if coding in (b"gzip", b"deflate"):
                if len(self._stages) == MAX_CODINGS:
                    raise httpx.DecodingError(
                        f"Content-Encoding: more than {MAX_CODINGS} codings in a row", request=request
                    )
                self._stages.append(zlib.decompressobj(zlib.MAX_WBITS | 16) if coding == b"gzip" else _Deflate())

    def feed(self, data: bytes) -> bool:
        """Take the next raw chunk; return whether more are wanted."""
        if self._deadline is not None and self._clock() >= self._deadline:
            raise late_body(self._request)
        if self._stages:
            self._push(0, data)
        elif data:
            self._keep(data)
        return not self.full

    def finish(self) -> bytes:
        """The decoded body (at most ``limit`` bytes), once the last wanted chunk was fed."""
        for index, stage in enumerate(self._stages):
            if self.full:
                break  # what a flush would inflate is not wanted
            try:
                tail = stage.flush()
            except zlib.error as exc:
                raise self._error(exc) from exc
            if tail:
                self._push(index + 1, tail)
        chunks = self._chunks
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _push(self, index: int, data: bytes) -> None:
        """Pass ``data`` through the stages from ``index`` on, a bounded step at a time."""
        if index == len(self._stages):
            self._keep(data)
            return
        stage = self._stages[index]
        try:
            while data and not self.full:
                out = stage.decompress(data, _STEP)
                data = stage.unconsumed_tail
                if not out:
                    break
                self._push(index + 1, out)
        except zlib.error as exc:
            raise self._error(exc) from exc

    def _keep(self, data: bytes) -> None:
        limit = self._limit
        if limit is not None and self._total + len(data) >= limit:
            data = data[: limit - self._total]
            self.full = True
        self._total += len(data)
        self._chunks.append(data)

    def _error(self, exc: zlib.error) -> httpx.DecodingError:
        # httpx's own class for a body it cannot decode, so the policy treats it alike.
        return httpx.DecodingError(f"Content-Encoding: {exc}", request=self._request)
