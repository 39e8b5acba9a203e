"""What every library's transport shares below the seam: the response stream's common part, and failure translation.

Each library's stream derives from `StreamHead` (through `_transports.stream_async.AsyncLibraryStream` and its
generated sync twin); its failures go through `translated` with its table.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Generic, TypeVar

import httpx

from animalstore_client._core.body import HEAD_TOO_LARGE
from animalstore_client._core.exchange import ClientRuleBroken
from animalstore_client._core.httpx_private import response_from_library

__all__ = [
    "CLOSED_MID_CALL",
    "NO_HEADERS",
    "StreamHead",
    "Translations",
    "callers_part_in_httpx",
    "is_literal",
    "looked_up",
    "middlewares_named",
    "no_callers_code",
    "request_hooks_in_httpx",
    "same_named",
    "translated",
]

R = TypeVar("R")  # the library's own response object

CLOSED_MID_CALL = "This client was closed while the call was under way; create a new client."


class StreamHead(Generic[R]):
    """A response stream's status, its headers (converted when first read) and the finished `httpx.Response`."""

    __slots__ = ("_headers", "_request", "_response", "_started", "content", "status_code")

    def __init__(self, response: R, status_code: int, request: httpx.Request, started: float) -> None:
        self._response = response
        self._request = request
        self._started = started
        self.status_code = status_code
        self._headers: httpx.Headers | None = None
        self.content: bytes | None = None

    @property
    def headers(self) -> httpx.Headers:
        """The response's headers, as they came (converted on first read: a typed call that succeeds makes none)."""
        headers = self._headers
        if headers is None:
            headers = self._headers = self._library_headers()
        return headers

    def _library_headers(self) -> httpx.Headers:
        """The library's response headers in httpx's form (`_core.httpx_private.headers_from_library`)."""
        raise NotImplementedError

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """The header fields as they came (a library that holds them as pairs of bytes gives them without copying)."""
        return self.headers.raw

    def _reason(self) -> str | None:
        """The reason phrase, as far as the library gives it."""
        raise NotImplementedError

    def content_codings(self) -> list[bytes]:
        """The values of the response's Content-Encoding fields, in order."""
        raise NotImplementedError

    def complete(self, content: bytes) -> httpx.Response:
        """The finished `httpx.Response` carrying the decoded ``content``."""
        return response_from_library(
            self.status_code, self.headers, content, self._request, self._reason(), self._started
        )


Translations = tuple[tuple[type[BaseException], type[httpx.TransportError]], ...]
"""A library's failures, most specific first, each with the httpx class the retry policy knows it by."""

# httpx's transport failures, most specific first, as httpx maps httpcore's; httpcore and httpx2 use the same names.
_HTTPX_NAMES = (
    "PoolTimeout",
    "ConnectTimeout",
    "ReadTimeout",
    "WriteTimeout",
    "ConnectError",
    "ReadError",
    "WriteError",
    "ProxyError",
    "UnsupportedProtocol",
    "LocalProtocolError",
    "RemoteProtocolError",
)


def same_named(library: Any) -> Translations:
    """The `Translations` of a library that names its failures as httpx does (httpcore, httpx2): each of its classes
    to httpx's of the same name (a name it no longer has fails the import, naming it)."""
    return tuple((getattr(library, name), getattr(httpx, name)) for name in _HTTPX_NAMES)


NO_HEADERS = httpx.Headers()
"""``default_headers`` of a transport over a library client the SDK made: its own are all there is (never changed)."""


def no_callers_code(called_by: tuple[str, str] | None) -> str | None:
    """``callers_part`` of a transport over a library client the SDK made, which runs no code of the caller's (but a
    mock's): None."""
    return None


# How each library says it refused an answer's head over its own limits (tests/test_header_limits.py pins each):
# h11 (httpcore, httpcore2), hyper (pyreqwest), aiohttp's parser (its LineTooLong: "Got more than ... bytes").
_HEAD_REFUSALS = ("Receive buffer too long", "message head is too large", "Too many headers received", "Got more than")


def translated(
    exc: BaseException,
    request: httpx.Request,
    table: Translations,
    otherwise: type[httpx.TransportError] = httpx.RemoteProtocolError,
    message: str | None = None,
) -> httpx.TransportError:
    """``exc`` as the httpx class of the first entry of ``table`` it is an instance of, else as ``otherwise``.

    The message is ``message``, else the exception's own text (its class name when it has none). A library's
    own refusal of a head over its limits is the SDK's one error for a head too large (`HEAD_TOO_LARGE`).
    """
    text = str(exc) if message is None else message
    if any(phrase in text for phrase in _HEAD_REFUSALS):
        return httpx.RemoteProtocolError(HEAD_TOO_LARGE, request=request)
    kind = next((httpx_class for library_class, httpx_class in table if isinstance(exc, library_class)), otherwise)
    return kind(text or type(exc).__name__, request=request)


def callers_part_in_httpx(library: str, called_by: tuple[str, str] | None) -> str:
    """What of a caller's httpx (or httpx2, as ``library``) client ran their code: inside one of its frames, one
    of its event hooks or its transport (which of them, only httpx's private function names would tell)."""
    package = (called_by or ("", ""))[0]
    return "an event hook or the transport of http_client" if package == library else "code of yours inside http_client"


def request_hooks_in_httpx(client: Any, refusal: ClientRuleBroken) -> str:
    """What of a caller's httpx (or httpx2) client changed a request's URL or ``Host``, by name: its default ``Host``
    header, else its request hooks (``client.event_hooks``), else its transport or a mount."""
    if refusal.host and "host" in client.headers:
        return "http_client, by its default headers,"
    hooks = [_qualified(hook) for hook in client.event_hooks.get("request", ())]
    if len(hooks) == 1:
        return f"the request hook {hooks[0]} of http_client"
    if hooks:
        return f"a request hook of http_client ({', '.join(hooks)})"
    return "the transport (or a mount) of http_client"


def middlewares_named(middlewares: tuple[object, ...]) -> str:
    """What of a caller's aiohttp session may have changed a request's URL or ``Host``: its middlewares, by name."""
    names = [_qualified(middleware) for middleware in middlewares]
    if len(names) == 1:
        return f"the middleware {names[0]} of http_client (an aiohttp session)"
    if names:
        return f"a middleware of http_client, an aiohttp session ({', '.join(names)})"
    return "http_client (an aiohttp session)"


def _qualified(function: object) -> str:
    """``module.qualname`` of a function or a callable object, as a traceback would name it."""
    named = function if hasattr(function, "__qualname__") else type(function)
    return f"{getattr(named, '__module__', '?')}.{getattr(named, '__qualname__', '?')}"


def is_literal(host: str) -> bool:
    """Whether ``host`` needs no name lookup: an IP address, or ``localhost``."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost"
    return True


def looked_up(host: str, port: int, timeout: float) -> list[str]:
    """``host``'s addresses, looked up on the SDK's lookup threads (`_transports.lookups`) within ``timeout``.

    Raises `TimeoutError` (no answer in time), what ``getaddrinfo`` raised (a `socket.gaierror`), or
    `ConnectionError` (no lookup could start): each transport says it in its library's classes.
    """
    from animalstore_client._transports.lookups import LOOKUPS  # its threads start with the first lookup

    result = LOOKUPS.start(host, port).wait(timeout)
    return list(dict.fromkeys(str(info[4][0]) for info in result))
