"""Who raised a failure, and what it tells of the request: the caller's code, the network, or a library.

`unknown_failure` decides by what was raised and where (`callers_code`) and by the attempt's exchange, never by
the exception's class alone.
"""

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
    over the standard library's. Code of the caller's is a frame of a
    package outside `HTTP_STACK_PACKAGES` that is either the innermost one
    (their code raised) or inside a frame of an HTTP library (the library
    called it: a hook, even when the exception came from a library function
    it called, such as httpx's ``Headers`` raising ``KeyError``). A frame of
    the caller's outside every library frame (a tracer wrapping the library's
    ``send``) does not count, and the SDK's own frames neither are the
    caller's nor open a library.
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


# What a library's own I/O raises before the first byte of a request: after it, only code of the caller's does.
_BEFORE_WRITING = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def contradicts_the_exchange(exchange: Exchange, exc: httpx.RequestError) -> bool:
    """Whether ``exc``, raised out of a send, cannot be the library's own I/O, given what ``exchange`` shows.

    A failure that claims nothing was sent (a connect error) once a byte of the request was written, or any
    failure once the answer's head had arrived (only code run after it, an event hook, raises then), came
    from code of the caller's inside the client. A read timeout after the write is what the library's own
    I/O gives: it stays the network's, even with an instrumented client's wrapper in its traceback.
    """
    return exchange.may_have_written and (exchange.phase >= ANSWERED or isinstance(exc, _BEFORE_WRITING))


def _what_raised(found: CallersCode | None, describe: Callable[[tuple[str, str] | None], str | None]) -> str:
    """The part of the caller's that raised, as a `MiddlewareError` names it: its kind, then its function."""
    if found is None:
        return "code of yours inside http_client"  # a raise-for-status error raised outside every frame of theirs
    # Under respx the code is a route's (or its side effect's), whichever client sent.
    kind = "a respx mock" if found.respx else describe(found.called_by) or "code outside the SDK and its HTTP library"
    return f"{kind} ({found.function})"


def cause_of(exc: Exception) -> Exception | None:
    """What the error `unknown_failure` makes of ``exc`` is raised from: ``exc`` itself, but nothing for a rule of the
    SDK's that a caller's client broke (`ClientRuleBroken`), whose text is the error's whole message and whose class
    is private: a traceback would show the same words twice, under a name the caller cannot catch."""
    return None if isinstance(exc, ClientRuleBroken) else exc


def unknown_failure(
    exc: Exception, attempts: Attempts, describe: Callable[[tuple[str, str] | None], str | None]
) -> httpx.RequestError | MiddlewareError:
    """What ends (or retries) an attempt that failed with an exception the transport did not translate.

    One table decides, by what was raised and then by where, for every library:

    1. `ClientRuleBroken` (a caller's client broke a rule of the SDK's on this
       send, and its adapter stopped it): a `MiddlewareError` with its text.
    2. Anything raised in code of the caller's (`callers_code`) once the
       attempt's exchange (``attempts.exchange``) shows that the request may have
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
    ``http_client`` was given). Raise the result from what `cause_of` gives;
    note the failure first (`Attempts.failed`), which a `MiddlewareError` reads.
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
