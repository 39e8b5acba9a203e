"""One attempt's exchange: what crosses the seam, and the evidence of "was it stored?".

`Exchange` is the one argument of a transport's ``send``: the request, its timeouts cut to the deadline, and the
reports the code touching the connection makes (docs/architecture.md, "Guarantees above the seam"; httpcore's
``trace`` extension is one adapter of them). Code that cannot see the request finds it in `RUNNING`. Nothing outside
``_core`` writes an exchange's fields; `may_have_acted` reads them, and where nothing reported the answer is "may
have been processed": the exception's class is never evidence.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, NoReturn

import httpx

from animalstore_client._core.deadline import Timeouts

__all__ = [
    "ANSWERED",
    "CONNECTED",
    "NOTHING",
    "PHASES",
    "WRITING",
    "WRITTEN",
    "ClientRuleBroken",
    "Exchange",
    "composed_trace_async",
    "composed_trace_sync",
    "may_have_acted",
    "running_deadline",
]

NOTHING = 0
"""No connection was reached yet: refused, not resolved, no pooled connection came free."""
CONNECTED = 1
"""A connection was open for the request, and no byte of it was written."""
WRITING = 2
"""Writing the request began: bytes of it may have reached the service."""
WRITTEN = 3
"""The whole request was written."""
ANSWERED = 4
"""The answer's status line and headers arrived."""
PHASES = ("nothing", "connected", "writing", "written", "answered")
"""Each phase's name, by its number: what `Exchange.phase_name` says and the errors quote."""

_DEFAULT_PORTS = {b"http": 80, b"https": 443}

Origin = tuple[bytes, bytes, int]


class ClientRuleBroken(Exception):
    """A rule of the SDK's that a caller's own client broke on a send, stopped before it went out: another origin
    or ``Host``, a second send, a replaced ``Authorization``, credentials of its own. Ends the call, unretried, in a
    `MiddlewareError`."""

    def __init__(self, message: str, by: str | None = None, *, host: bool = False) -> None:
        super().__init__(message)
        self.by = by
        """What the message opens with as the culprit (``"http_client"``), which a transport may name better."""
        self.host = host
        """Whether the ``Host`` header was refused (else the URL's origin)."""

    def naming(self, culprit: str) -> ClientRuleBroken:
        """The same refusal with ``culprit`` (a hook of the caller's client, by name) in place of `by`."""
        text = str(self)
        if self.by is None or not text.startswith(self.by):
            return self
        return ClientRuleBroken(culprit + text[len(self.by) :], culprit, host=self.host)


def _origin(scheme: bytes, host: bytes, port: int | None) -> Origin:
    scheme = scheme.lower()
    return scheme, host.lower(), port if port is not None else _DEFAULT_PORTS.get(scheme, 0)


def _shown(origin: Origin) -> str:
    scheme, host, port = origin
    host_text = host.decode("ascii", "replace")
    host_text = f"[{host_text}]" if ":" in host_text else host_text
    return f"{scheme.decode('ascii', 'replace')}://{host_text}:{port}"


def _host_field(value: bytes, scheme: bytes) -> tuple[bytes, int] | None:
    """A ``Host`` field's (host, port), the scheme's default port when it names none; ``None`` if malformed."""
    value = value.strip().lower()
    if value.startswith(b"["):
        host, bracket, rest = value[1:].partition(b"]")
        if not bracket:
            return None
        port_text = rest[1:] if rest.startswith(b":") else (None if rest else b"")
    else:
        host, colon, port_text = value.rpartition(b":")
        if not colon:
            host, port_text = value, b""
    if port_text == b"":
        return host, _DEFAULT_PORTS.get(scheme.lower(), 0)
    if port_text is None or not port_text.isdigit() or len(port_text) > 5:
        return None
    return host, int(port_text)


def _written_to(request: Any) -> Origin | None:
    """The origin an httpcore request's bytes go to: its URL's, or its absolute-form target's (a forward proxy)."""
    url = request.url
    target: bytes = url.target
    if request.method == b"CONNECT":  # a tunnel's request to the proxy: its target is the origin, host:port
        host, _, port = target.rpartition(b":")
        return _origin(url.scheme, host.strip(b"[]"), int(port)) if port.isdigit() else None
    if target[:7].lower() == b"http://" or target[:8].lower() == b"https://":
        parsed = httpx.URL(target.decode("ascii", "replace"))
        return _origin(parsed.raw_scheme, parsed.raw_host, parsed.port)
    return _origin(url.scheme, url.host, url.port)


# httpcore's trace events (its logger's last name, the step, the outcome) and the report each one is.
_REACHED = {
    "connection.connect_tcp.started": NOTHING,  # reported from here: a refused connection wrote nothing
    "connection.connect_unix_socket.started": NOTHING,
    "connection.connect_tcp.complete": CONNECTED,
    "connection.connect_unix_socket.complete": CONNECTED,
    "http11.send_request_body.started": WRITING,
    "http11.send_request_body.complete": WRITTEN,
    "http11.receive_response_headers.complete": ANSWERED,
    "http2.send_request_body.started": WRITING,
    "http2.send_request_body.complete": WRITTEN,
    "http2.receive_response_headers.complete": ANSWERED,
}
# The event before the first byte of a request is written: where its origin, Host and the deadline are checked.
_HEADERS = frozenset({"http11.send_request_headers.started", "http2.send_request_headers.started"})

RUNNING: ContextVar[Exchange | None] = ContextVar("animalstore_client_exchange", default=None)
"""The exchange whose send is running in this context (``with exchange:``), else ``None``: for code below the
library that cannot see the request (the pool's network streams); it carries the deadline too."""


def running_deadline() -> float | None:
    """The running exchange's deadline (``time.monotonic()`` seconds), else ``None``: for network-level code."""
    exchange = RUNNING.get()
    return None if exchange is None else exchange.deadline


class Exchange:
    """One attempt as it crosses the seam: the request, its timeouts and deadline, and how far it got.

    ```python
    exchange = Exchange(request, {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}, None)
    exchange.connected()
    exchange.about_to_write(b"https", b"api.example", 443, [b"api.example"], "http_client")
    exchange.first_byte()
    exchange.answered()
    assert may_have_acted(exchange, 201)
    ```
    """

    __slots__ = ("_clock", "_origin_url", "_token", "_tunnel", "deadline", "phase", "reported", "request", "timeouts")

    def __init__(
        self,
        request: httpx.Request,
        timeouts: Timeouts,
        deadline: float | None,
        *,
        origin: httpx.URL | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.request = request
        """The attempt's request, as the send loop (and any middleware) made it."""
        self.timeouts = timeouts
        """Per-phase timeouts, each cut to the time left before ``deadline``."""
        self.deadline = deadline
        """When the call must end, on ``clock``'s scale (``time.monotonic()`` seconds), or ``None``."""
        self._origin_url = request.url if origin is None else origin
        self._clock = clock
        self.phase = NOTHING
        """The furthest phase reported (`NOTHING` ... `ANSWERED`)."""
        self.reported = False
        """Whether code below the caller's (a library's own connection code, the SDK's) reported on this attempt."""
        self._tunnel = False  # a proxy's CONNECT is under way: its steps are not this request's

    @property
    def may_have_written(self) -> bool:
        """Whether a byte of the request may have reached a connection: the service may have acted."""
        return self.phase >= WRITING

    @property
    def proves_nothing_written(self) -> bool:
        """Whether the reports show that no byte of the request was written (reported, and short of `WRITING`)."""
        return self.reported and self.phase < WRITING

    @property
    def phase_name(self) -> str:
        """The phase reached, by name (``"answered"``), or ``"unknown"`` when nothing below the caller's reported."""
        return PHASES[self.phase] if self.reported or self.phase else "unknown"

    def _reach(self, phase: int) -> None:
        self.reported = True
        self.phase = max(self.phase, phase)  # a phase reached earlier is never taken back

    def opening(self) -> None:
        """The library's own code starts this attempt's connection: from here what it reports is known."""
        self.reported = True

    def connected(self) -> None:
        """A connection is open for the request; no byte of it was written yet."""
        self._reach(CONNECTED)

    def not_written(self) -> None:
        """The library's own connection code failed before the first byte (refused, not resolved, no time left)."""
        self.reported = True

    def about_to_write(self, scheme: bytes, host: bytes, port: int | None, host_fields: list[bytes], by: str) -> None:
        """The request is about to go to ``scheme://host:port`` with the ``Host`` fields ``host_fields`` (none: the
        library writes it from the URL). Refused, nothing written, when either is not ``base_url``'s origin
        (`ClientRuleBroken`, naming ``by``) or the deadline passed (``httpx.ConnectTimeout``): code of the caller's
        that ran before this point (a sync hook that waited) cannot make the SDK write after ``total_timeout``."""
        self.reported = True
        actual, expected = _origin(scheme, host, port), self._expected
        if actual != expected:
            self._refuse(actual, by)
        if host_fields and (len(host_fields) != 1 or _host_field(host_fields[0], expected[0]) != expected[1:]):
            shown = b", ".join(host_fields).decode("ascii", "replace")[:200]
            raise ClientRuleBroken(
                f"{by} set the request's Host header to {shown!r}, not to the client's base_url origin "
                f"{_shown(expected)}: nothing was sent. The Host says which server gets the API key: change "
                "base_url, or give it a client without that default header, hook or middleware",
                by,
                host=True,
            )
        self._check_deadline()

    def first_byte(self) -> None:
        """The SDK's own connection code is about to write the request's first byte (nothing of the caller's ran
        in between, so only the deadline is checked): past it, nothing is written (``httpx.ConnectTimeout``)."""
        if self.phase < WRITING:
            self.reported = True
            self._check_deadline()
            self.phase = WRITING

    def maybe_written(self) -> None:
        """The library's sending failed where a byte of the request may have been written."""
        self._reach(WRITING)

    def written(self) -> None:
        """The whole request was written."""
        self._reach(WRITTEN)

    def answered(self) -> None:
        """The answer's status line and headers arrived."""
        self.reported = True
        self.phase = ANSWERED  # the last phase: nothing is further

    def __enter__(self) -> None:
        """``with exchange:``: `RUNNING` is this exchange inside, entered once a call, around the send."""
        self._token = RUNNING.set(self)

    def __exit__(self, *exc_info: object) -> None:
        RUNNING.reset(self._token)

    @property
    def _expected(self) -> Origin:
        """The client's ``base_url`` origin, made only when a check needs it (the SDK's own pool never does)."""
        url = self._origin_url
        return _origin(url.raw_scheme, url.raw_host, url.port)

    def _check_deadline(self) -> None:
        deadline = self.deadline
        if deadline is not None and self._clock() >= deadline:
            raise httpx.ConnectTimeout(
                "the call's total_timeout passed before the request's first byte was written: nothing was sent",
                request=self.request,
            )

    def _refuse(self, actual: Origin, by: str) -> NoReturn:
        raise ClientRuleBroken(
            f"{by} sent the request to {_shown(actual)}, not to the client's base_url origin "
            f"{_shown(self._expected)} (request.url was changed on its way): nothing was sent. The SDK "
            "sends its key only to base_url: change base_url, or give it a client without that hook",
            by,
        )

    def trace_sync(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's ``trace`` extension: each step of the exchange, as the connection took it."""
        phase = _REACHED.get(event)
        if phase is not None:
            if self._tunnel:  # a step of the proxy's CONNECT (its .complete events name no request): not this one's
                if event == "http11.receive_response_headers.complete":
                    self._tunnel = False  # the proxy answered: the request itself comes next, through the tunnel
                return
            self._reach(phase)
        elif event in _HEADERS:
            self.reported = True
            request = info["request"]
            actual = _written_to(request)
            tunnel = request.method == b"CONNECT"  # to the proxy, for this origin: the tunnel's host and port
            if actual is None or (tunnel and actual[1:] != self._expected[1:]):
                self._refuse(actual or (b"?", request.url.target, 0), "http_client")
            if tunnel:
                self._tunnel = True
                return
            host_fields = [value for name, value in request.headers if name.lower() == b"host"]
            self.about_to_write(*actual, host_fields, "http_client")
            self._reach(WRITING)

    async def trace_async(self, event: str, info: dict[str, Any]) -> None:
        """`trace_sync`, as httpcore's async connections await it."""
        self.trace_sync(event, info)


def may_have_acted(exchange: Exchange, status: int | None = None) -> bool:
    """Whether the service may have acted on the attempt ``exchange`` records: the one rule "was it stored?" reads.

    With an answer (``status``): no only for a 4xx but 408, the service turning the request away (a gateway answers
    5xx in the service's format after it passed the request on). Without one: no only when the exchange proves that
    no byte of the request was written.
    """
    if status is not None:
        return not (400 <= status <= 499 and status != 408)
    return not exchange.proves_nothing_written


_THEIRS = "animalstore_theirs"
"""The attribute of a composed callback holding the caller's own, which a later attempt composes with again."""


def _callers(trace: Any) -> Any:
    """The caller's own trace callback in what a request carries: not an exchange's, nor one composed here."""
    if trace is None or isinstance(getattr(trace, "__self__", None), Exchange):
        return None
    return getattr(trace, _THEIRS, trace)


def composed_trace_sync(exchange: Exchange, carried: Any) -> Any:
    """The exchange's ``trace`` callback, then the caller's (one the request carried), for a sync client."""
    theirs = _callers(carried)
    if theirs is None:
        return exchange.trace_sync

    def trace(event: str, info: dict[str, Any]) -> None:
        exchange.trace_sync(event, info)
        theirs(event, info)

    setattr(trace, _THEIRS, theirs)
    return trace


def composed_trace_async(exchange: Exchange, carried: Any) -> Any:
    """The exchange's ``trace`` callback, then the caller's, for an async client (whose callbacks are awaited)."""
    theirs = _callers(carried)
    if theirs is None:
        return exchange.trace_async

    async def trace(event: str, info: dict[str, Any]) -> None:
        exchange.trace_sync(event, info)
        await theirs(event, info)

    setattr(trace, _THEIRS, theirs)
    return trace
