"""What one attempt did on its connection, recorded by the code that wrote and read: the evidence for "was it stored?".

`Wire` is the record of one attempt. The code that touches the connection
writes to it, below every hook, middleware and transport of the caller's:

- httpcore (the SDK's own pool, and a caller's httpx or httpx2 client over
  the library's own transport) reports through its public ``trace`` request
  extension (`Wire.trace_async`, `Wire.trace_sync`), composed with a trace
  callback of the caller's, never replacing it;
- a caller's aiohttp session, through the innermost middleware the SDK adds
  on each send (``_transports.aiohttp``);
- the send loop, once a transport handed back the answer's head.

The retry rules (``_core.attempts``, ``_core.retry``) read the record and the
answer, and nothing else, to say whether the service may have acted: an
exception raised by code the SDK does not own says who failed, never that
nothing was sent. A record nothing reported to (the SDK's own aiohttp,
urllib3 and pyreqwest clients, whose failures are translated where only the
library's own code runs; a caller's transport that is not the library's)
leaves the decision to what the transport translated, as before.

A request written to another origin than the client's ``base_url`` (an
event hook or a session middleware of the caller's that set ``request.url``)
is stopped before its first byte (`ClientRuleBroken`): the key goes only
where the client sends it.
"""

from __future__ import annotations

from typing import Any

import httpx

__all__ = [
    "ANSWERED",
    "CONNECTED",
    "NOTHING",
    "PHASES",
    "WRITING",
    "WRITTEN",
    "ClientRuleBroken",
    "Wire",
    "composed_trace_async",
    "composed_trace_sync",
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
"""Each phase's name, by its number: what `Wire.phase_name` says and the errors quote."""

_DEFAULT_PORTS = {b"http": 80, b"https": 443}


class ClientRuleBroken(Exception):
    """A rule of the SDK's that a caller's own client broke on a send, seen where the library lets the SDK see it.

    An aiohttp session's middleware sending one attempt's request a second time
    (a retrying or authenticating middleware) or replacing its ``Authorization``
    header, the session adding credentials of its own, or an event hook or a
    middleware of a caller's client sending the request to another origin, is
    stopped before it goes out; ``_core.failures.unknown_failure`` ends the call
    with a `MiddlewareError` carrying this text, unretried, as for any other code
    of the caller's.
    """


def _origin(scheme: bytes, host: bytes, port: int | None) -> tuple[bytes, bytes, int]:
    scheme = scheme.lower()
    return scheme, host.lower(), port if port is not None else _DEFAULT_PORTS.get(scheme, 0)


def _shown(origin: tuple[bytes, bytes, int]) -> str:
    scheme, host, port = origin
    host_text = host.decode("ascii", "replace")
    if ":" in host_text:
        host_text = f"[{host_text}]"
    return f"{scheme.decode('ascii', 'replace')}://{host_text}:{port}"


def _written_to(request: Any) -> tuple[bytes, bytes, int] | None:
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


# httpcore's trace events (its logger's last name, the step, the outcome) that move an attempt on.
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
# The event before the first byte of a request is written: where its origin is checked.
_HEADERS = frozenset({"http11.send_request_headers.started", "http2.send_request_headers.started"})


class Wire:
    """How far one attempt got on its connection: `phase`, and whether anything below the caller's code reported.

    ```python
    wire = Wire(request.url)
    wire.reach(ANSWERED)
    assert wire.may_have_written
    ```
    """

    __slots__ = ("_url", "phase", "reported")

    def __init__(self, url: httpx.URL) -> None:
        self._url = url
        self.phase = NOTHING
        """The furthest phase reached (`NOTHING` ... `ANSWERED`)."""
        self.reported = False
        """Whether code below the caller's (httpcore, the SDK's innermost middleware) reported on this attempt."""

    @property
    def may_have_written(self) -> bool:
        """Whether a byte of the request may have reached a connection: the service may have acted."""
        return self.phase >= WRITING

    @property
    def proves_nothing_written(self) -> bool:
        """Whether the record shows that no byte of the request was written (reported, and short of `WRITING`)."""
        return self.reported and self.phase < WRITING

    @property
    def phase_name(self) -> str:
        """The phase reached, by name (``"answered"``), or ``"unknown"`` when nothing below the caller's reported."""
        return PHASES[self.phase] if self.reported or self.phase else "unknown"

    def reach(self, phase: int) -> None:
        """Record that the attempt got to ``phase`` (a phase reached earlier is never taken back)."""
        self.reported = True
        self.phase = max(self.phase, phase)

    def check_origin(self, scheme: bytes, host: bytes, port: int | None, by: str) -> None:
        """Refuse, with `ClientRuleBroken`, a request about to be written to another origin than the client's."""
        expected = self._expected()
        actual = _origin(scheme, host, port)
        if actual != expected:
            self._refuse(actual, expected, by)

    def _expected(self) -> tuple[bytes, bytes, int]:
        url = self._url
        return _origin(url.raw_scheme, url.raw_host, url.port)

    def _refuse(self, actual: tuple[bytes, bytes, int], expected: tuple[bytes, bytes, int], by: str) -> None:
        self.reported = True
        raise ClientRuleBroken(
            f"{by} sent the request to {_shown(actual)}, not to the client's base_url origin {_shown(expected)} "
            "(a hook or a middleware of it set request.url): nothing was sent. The SDK sends its key only to "
            "base_url: change base_url, or give it a client without that hook"
        )

    def trace_sync(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's ``trace`` extension: each step of the exchange, as the connection took it."""
        phase = _REACHED.get(event)
        if phase is not None:
            request = info.get("request")
            if request is None or request.method != b"CONNECT":  # a tunnel's CONNECT is not this request
                self.reach(phase)
        elif event in _HEADERS:
            self.reported = True
            request = info["request"]
            actual = _written_to(request)
            expected = self._expected()
            tunnel = request.method == b"CONNECT"
            if actual is None or (actual[1:] != expected[1:] if tunnel else actual != expected):
                self._refuse(actual or (b"?", request.url.target, 0), expected, "http_client")
            if not tunnel:
                self.reach(WRITING)

    async def trace_async(self, event: str, info: dict[str, Any]) -> None:
        """`trace_sync`, as httpcore's async connections await it."""
        self.trace_sync(event, info)


_THEIRS = "animalstore_theirs"
"""The attribute of a composed callback holding the caller's own, which a later attempt composes with again."""


def _callers(trace: Any) -> Any:
    """The caller's own trace callback in what a request carries: not a record's, nor one this module composed."""
    if trace is None or isinstance(getattr(trace, "__self__", None), Wire):
        return None
    return getattr(trace, _THEIRS, trace)


def composed_trace_sync(wire: Wire, carried: Any) -> Any:
    """The record's ``trace`` callback, then the caller's (one the request carried), for a sync client."""
    theirs = _callers(carried)
    if theirs is None:
        return wire.trace_sync

    def trace(event: str, info: dict[str, Any]) -> None:
        wire.trace_sync(event, info)
        theirs(event, info)

    setattr(trace, _THEIRS, theirs)
    return trace


def composed_trace_async(wire: Wire, carried: Any) -> Any:
    """The record's ``trace`` callback, then the caller's, for an async client (whose callbacks are awaited)."""
    theirs = _callers(carried)
    if theirs is None:
        return wire.trace_async

    async def trace(event: str, info: dict[str, Any]) -> None:
        wire.trace_sync(event, info)
        await theirs(event, info)

    setattr(trace, _THEIRS, theirs)
    return trace
