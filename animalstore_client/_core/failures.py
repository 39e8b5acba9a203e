"""Who raised a failure, and what it tells of the request: the caller's code, the network, or a library; decided
by what was raised, where (`callers_code`) and the attempt's exchange, never by the exception's class alone."""

from __future__ import annotations

import errno
import socket
import ssl
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, NamedTuple

import httpx

from animalstore_client._core.exceptions import MiddlewareError
from animalstore_client._core.exchange import ANSWERED, ClientRuleBroken, Exchange
from animalstore_client._core.libraries import LIBRARIES
from animalstore_client._core.secrets import SHORTEST_MASKED, qualified_name, redact_text

if TYPE_CHECKING:
    from animalstore_client._core.attempts import Attempts

__all__ = [
    "HTTP_STACK_PACKAGES",
    "CallersCode",
    "callers_code",
    "callers_text",
    "cause_of",
    "contradicts_the_exchange",
    "error_type",
    "raised_by_callers_code",
    "unknown_failure",
]


error_type = qualified_name
"""A failure's class as OpenTelemetry's ``error.type`` wants it: fully qualified (``httpx.ReadTimeout``)."""


# The libraries behind the seam and their declared stacks, what runs them (event loops, the OS trust store) and
# the SDK's own: an exception raised in one of them is the exchange's.
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

    Which frames count: docs/architecture.md, "A caller's own client" (read from the outermost in, the standard
    library's passed over; the SDK's own frames neither are the caller's nor open a library).
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
    """Whether ``exc`` was raised in code of the caller's, or in a library while it ran it (`callers_code`)."""
    return callers_code(exc) is not None


def _is_a(exc: BaseException, names: frozenset[tuple[str, str]]) -> bool:
    """Whether ``exc``'s class is named in ``names`` as (top-level package, class name): no library imported to ask."""
    return any((cls.__module__.split(".")[0], cls.__name__) in names for cls in type(exc).__mro__)


# Each library's raise-for-status error: only code of the caller's raises one for the SDK's requests (the SDK
# turns off a client's own). aiohttp's class also reports a malformed answer, which its adapter translates first.
_RAISED_FOR_STATUS = frozenset(
    {("httpx", "HTTPStatusError"), ("httpx2", "HTTPStatusError"), ("aiohttp", "ClientResponseError")}
)
# A proxy library's failures that are no OSError (python-socks, under httpx-socks): before reaching the store.
_PROXY_REFUSED = frozenset({("python_socks", "ProxyError")})


# OSErrors no socket raises: a hook of the caller's opening a file that is not there is a bug of theirs.
_FILE_SYSTEM = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError)


def _network_failure(exc: BaseException, text: str, request: httpx.Request) -> httpx.TransportError | None:
    """``exc`` (shown as ``text``) as the transport failure its class makes it, wherever raised; else ``None``: an
    `OSError` (not a file system's) is the network's, refused or unresolved sent nothing, any other may have followed
    the request (only a read is retried), as the transports' own tables say for their libraries."""
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
    """``": "`` and ``exc``'s text, as an SDK error may quote it: the key (code of the caller's may quote the headers,
    in any format) and the URL secrets `redact_text` knows masked."""
    try:
        said = f": {exc}"
    except Exception:  # noqa: BLE001  # a __str__ of the caller's that raises must not replace the failure
        said = " (its text cannot be shown)"
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    return redact_text(said.replace(key, "[redacted]") if len(key) >= SHORTEST_MASKED else said)


# What a library's own I/O raises before the first byte of a request: after it, only code of the caller's does.
_BEFORE_WRITING = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def contradicts_the_exchange(exchange: Exchange, exc: httpx.RequestError) -> bool:
    """Whether ``exc``, raised out of a send, cannot be the library's own I/O, given what ``exchange`` shows: a
    "nothing sent" failure once a byte was written, or any once the answer's head arrived (only code run after it, an
    event hook, raises then). A read timeout after the write stays the network's, even under an instrumented client."""
    return exchange.may_have_written and (exchange.phase >= ANSWERED or isinstance(exc, _BEFORE_WRITING))


def _what_raised(found: CallersCode | None, describe: Callable[[tuple[str, str] | None], str | None]) -> str:
    """The part of the caller's that raised, as a `MiddlewareError` names it: its kind, then its function."""
    if found is None:
        return "code of yours inside http_client"  # a raise-for-status error raised outside every frame of theirs
    # Under respx the code is a route's (or its side effect's), whichever client sent.
    kind = "a respx mock" if found.respx else describe(found.called_by) or "code outside the SDK and its HTTP library"
    return f"{kind} ({found.function})"


def cause_of(exc: Exception) -> Exception | None:
    """What the error `unknown_failure` makes of ``exc`` is raised from: ``exc``, but nothing for a `ClientRuleBroken`,
    whose text is the whole message (a traceback would repeat it under a class the caller cannot catch)."""
    return None if isinstance(exc, ClientRuleBroken) else exc


def unknown_failure(
    exc: Exception, attempts: Attempts, describe: Callable[[tuple[str, str] | None], str | None]
) -> httpx.RequestError | MiddlewareError:
    """What ends (or retries) an attempt that failed with an exception the transport did not translate.

    One table decides, by what was raised and then by where, for every library:

    1. `ClientRuleBroken` (an adapter stopped a rule of the SDK's broken on this send): a `MiddlewareError`.
    2. Anything raised in code of the caller's (`callers_code`) once ``attempts.exchange`` shows the request may have
       been written: a `MiddlewareError`, whatever its class (a hook's ``httpx.ConnectError`` from its own call to a
       metrics service says who failed, never that nothing was sent). The send loop routes such httpx errors here.
    3. An `OSError` wherever raised (a socket, TLS, a SOCKS proxy; not a file system's), or a proxy library's
       refusal: a network failure, retried as its kind allows (`_network_failure`).
    4. A library's raise-for-status error (httpx's and httpx2's ``HTTPStatusError``, aiohttp's
       ``ClientResponseError``): the caller's code asked for it, so a `MiddlewareError`.
    5. Anything else raised in code of the caller's, or in a library running it (an event hook, a transport, a
       session's middleware, a respx route): a `MiddlewareError`, not retried, so ``except APIError`` hides no bug.
    6. Anything else is a library's own failure: "sent, no complete answer", so only a read is retried.

    ``describe`` is the transport's: what of the caller's its library ran from a frame (`CallersCode.called_by`),
    ``None`` when it cannot tell. Raise the result from what `cause_of` gives; note the failure first
    (`Attempts.failed`), which a `MiddlewareError` reads.
    """
    said = callers_text(exc, attempts.request)
    if isinstance(exc, ClientRuleBroken):
        return attempts.middleware_error(said.removeprefix(": "))
    text = type(exc).__name__ + said
    found = callers_code(exc)
    if found is None and exc.__cause__ is not None and not isinstance(exc, httpx.RequestError):
        # A library's error wrapping what code of the caller's raised inside it (aiohttp's ClientOSError around
        # a session middleware's ConnectionRefusedError), which its transport did not take for the connection's.
        found = callers_code(exc.__cause__)
    if found is not None and attempts.exchange.may_have_written:
        return attempts.middleware_error(
            f"{_what_raised(found, describe)} raised {text} after the request was written "
            f"({attempts.exchange.phase_name}): it may have been processed, and was not sent again"
        )
    if isinstance(exc, httpx.RequestError):
        return exc  # the library's own failure (or one of the caller's before anything was written), as it was
    network = _network_failure(exc, text, attempts.request)
    if network is not None:
        return network
    if found is not None or _is_a(exc, _RAISED_FOR_STATUS):
        return attempts.middleware_error(f"{_what_raised(found, describe)} raised {text}")
    return httpx.ReadError(text, request=attempts.request)
