"""The transport seam over an `aiohttp.ClientSession` (``backend="aiohttp"``), imported only when it is chosen.

Failures become the httpx classes the retry policy knows; bodies arrive raw; no redirect is followed; the deadline
is aiohttp's ``total`` timeout (bounding the body too). The SDK's own session makes its sockets, to close them where
aiohttp cannot (docs/architecture.md, "Sockets closed where their owner cannot close them").
"""

from __future__ import annotations

import asyncio
import math
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import aiohttp
import httpx
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from animalstore_client._core.body import codings_in
from animalstore_client._core.deadline import Timeouts, remembered, within
from animalstore_client._core.defaults import MAX_RESPONSE_HEADER_BYTES
from animalstore_client._core.exchange import ClientRuleBroken, Exchange
from animalstore_client._core.httpx_private import headers_from_library
from animalstore_client._core.log import logger
from animalstore_client._core.tls import ssl_context
from animalstore_client._transports.proxies import Origins, proxy_for
from animalstore_client._transports.shared import Translations, middlewares_named, translated
from animalstore_client._transports.sockets import Sockets, check_transport_table, opening_sync, release_transports
from animalstore_client._transports.stream_async import AsyncLibraryStream

# A session's middlewares, passed on with `_OneSend` innermost on each send through a caller's session
# (middlewares= per request replaces them; no public attribute reads them).
_MIDDLEWARES = "_middlewares"
# A connector's close without its loop (aiohttp's `__del__` calls it): `close()` makes a task an ended loop, or a
# forked child's, never runs; `_close()` marks it closed, closes transports where the loop is open, awaits nothing.
_CLOSE = "_close"


def _require(present: bool, name: str, use: str) -> None:
    """Fail loudly at import, naming it, when aiohttp no longer has ``name``, which the SDK uses to ``use``."""
    if not present:
        from animalstore_client._core.exceptions import AnimalStoreError

        raise AnimalStoreError(
            f"aiohttp {aiohttp.__version__} no longer has {name}, which the SDK uses to {use}: install the aiohttp "
            "release this SDK was tested with, or a newer animalstore-client"
        )


_SESSION_ATTRIBUTES: frozenset[str] = getattr(aiohttp.ClientSession, "ATTRS", frozenset())
_require(_MIDDLEWARES in _SESSION_ATTRIBUTES, f"ClientSession.{_MIDDLEWARES}", "keep every request it sends counted")
_require(
    callable(getattr(aiohttp.BaseConnector, _CLOSE, None)),
    f"BaseConnector.{_CLOSE}",
    "let go of a session whose event loop has ended, or a forked child's copy of its parent's",
)
check_transport_table()

__all__ = ["AiohttpTransport"]

# Headers aiohttp writes itself from the request.
_LEFT_TO_AIOHTTP = frozenset({"host", "content-length", "transfer-encoding"})
_STATUS_LINE = 64  # bytes beside a field's name and value on its line (the colon, spaces, CRLF), and to spare
_KEPT = 256  # request URLs, header sets and timeouts whose aiohttp form a transport keeps (the SDK repeats them)
_WHOLE = 64 * 1024  # a body aiohttp holds whole is taken in one call (`whole_body`) unless it declares more bytes

# aiohttp's failures, most specific first, and the httpx class the retry policy knows each by.
_TRANSLATIONS: Translations = (
    (aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout),  # connecting, or waiting for a pooled connection
    (aiohttp.SocketTimeoutError, httpx.ReadTimeout),
    (aiohttp.ClientConnectorError, httpx.ConnectError),  # refused, DNS, TLS: nothing was sent
    (aiohttp.ServerDisconnectedError, httpx.RemoteProtocolError),
    (aiohttp.ClientPayloadError, httpx.ReadError),
    (aiohttp.ClientOSError, httpx.ReadError),
    (aiohttp.ClientError, httpx.RemoteProtocolError),  # a malformed answer, among others
    (TimeoutError, httpx.ReadTimeout),  # aiohttp's total, the call's deadline (asyncio's class before Python 3.11)
)


def _unresolved(exc: BaseException) -> BaseException:
    """``exc``, behind a `socket.gaierror` when aiohttp reports a name not resolved (`name_not_resolved` seeks one)."""
    if not isinstance(exc, aiohttp.ClientConnectorDNSError) or isinstance(exc.__cause__, socket.gaierror):
        return exc
    unresolved = socket.gaierror(str(exc))
    unresolved.__cause__ = exc
    return unresolved


def _without_key(exc: BaseException) -> BaseException:
    """``exc``, and the exceptions it chains, with ``Authorization`` masked in their ``request_info`` and ``args``,
    where aiohttp's ``ClientResponseError`` carries the request's headers and a crash reporter records them."""
    current: BaseException | None = exc
    for _ in range(8):  # a chain is a few long
        if current is None:
            break
        info = getattr(current, "request_info", None)
        if isinstance(info, aiohttp.RequestInfo) and "Authorization" in info.headers:
            headers = CIMultiDict(info.headers)
            headers["Authorization"] = "[redacted]"
            masked = aiohttp.RequestInfo(info.url, info.method, CIMultiDictProxy(headers), info.real_url)
            current.request_info = masked  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]
            current.args = tuple(masked if arg is info else arg for arg in current.args)
        current = current.__cause__ or current.__context__
    return exc


# What _TRANSLATIONS knows; anything else (cancellation included) passes untouched.
_FAILURES = (aiohttp.ClientError, TimeoutError)
# aiohttp's failures that are the network's wherever raised. Its others (a ClientResponseError: a malformed answer,
# or raise_for_status()) are the network's when they came from the connection (`_OneSend.from_wire`).
_NETWORK = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, aiohttp.ClientHttpProxyError, TimeoutError)
# aiohttp's refusal, nothing sent, when the session's own credentials (auth, ~/.netrc) meet the SDK's Authorization.
_OWN_CREDENTIALS = "Cannot combine AUTHORIZATION header"
# aiohttp's failures raised only while the connection is being made, before any byte of the request is written.
_BEFORE_WRITE = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)

# aiohttp's sending of a request, as a middleware is handed it.
_Handler = Callable[[aiohttp.ClientRequest], Awaitable[aiohttp.ClientResponse]]


class _OneSend:
    """The innermost middleware of every send: the request leaves once, with the SDK's key.

    It stops a second sending in one attempt (aiohttp re-sending a GET, PUT or DELETE by itself when its connection
    drops, unseen by the attempt count and the retry budget; a caller's middleware retrying or answering a
    challenge), a changed ``Authorization`` and another origin or ``Host`` (``authorization`` is ``None`` for the
    SDK's own session, where nothing of a caller's runs before it); what came out (`from_wire`) decides "stored?".
    """

    __slots__ = ("_authorization", "_exchange", "_failure", "_first", "_sent")

    def __init__(self, authorization: list[str] | None, exchange: Exchange) -> None:
        self._exchange = exchange
        self._authorization = authorization
        self._sent = False
        self._failure: BaseException | None = None
        self._first: aiohttp.ClientResponse | None = None

    async def __call__(self, request: aiohttp.ClientRequest, handler: _Handler) -> aiohttp.ClientResponse:
        """Send ``request`` through ``handler`` (aiohttp's own sending), the first time only."""
        exchange = self._exchange
        exchange.opening()  # from here, what aiohttp's sending did is known (a refusal below sent nothing)
        if self._sent:
            if self._failure is not None:
                raise self._failure
            if self._first is not None:
                self._first.close()
            raise ClientRuleBroken(
                "a middleware of http_client (an aiohttp session) sent the request a second time in one attempt "
                "(aiohttp.DigestAuthMiddleware answering a challenge, or a middleware that retries): the second was "
                "not sent. The SDK sends each attempt once and retries by itself (max_retries=): give it a session "
                "without that middleware"
            )
        if self._authorization is not None:
            if request.headers.getall("Authorization", []) != self._authorization:
                raise ClientRuleBroken(
                    "a middleware of http_client (an aiohttp session) changed the request's Authorization header, "
                    "which carries api_key: the request was not sent. The SDK authenticates with api_key alone: give "
                    "it a session without that middleware (or with_options(api_key=...) for another key)"
                )
            url = request.url
            exchange.about_to_write(
                url.scheme.encode("ascii"),
                (url.raw_host or "").encode("ascii"),
                url.port,
                [value.encode("latin-1") for value in request.headers.getall("Host", [])],
                "http_client (an aiohttp session)",
            )
        self._sent = True
        try:
            response = await handler(request)
        except BaseException as exc:
            self._failure = exc
            if not isinstance(exc, _BEFORE_WRITE):
                exchange.maybe_written()  # the request may have been written before it failed
            raise
        exchange.answered()
        self._first = response
        return response

    def from_wire(self, exc: BaseException) -> bool:
        """Whether ``exc`` came out of aiohttp's sending of the request, through the middlewares untouched."""
        return exc is self._failure


class _AiohttpStream(AsyncLibraryStream[aiohttp.ClientResponse]):
    """An aiohttp response whose body is still to be read."""

    __slots__ = ()

    def _library_headers(self) -> httpx.Headers:
        return headers_from_library(self._response.raw_headers)

    def content_codings(self) -> list[bytes]:
        return codings_in(self._response.raw_headers)

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        # aiohttp holds them as pairs of bytes: no httpx.Headers made, which a typed call never needs.
        return list(self._response.raw_headers)

    def _reason(self) -> str | None:
        return self._response.reason

    async def whole_body(self) -> bytes | None:
        # Only a body aiohttp already holds whole (its end has arrived) is taken in one piece: waiting
        # for one here would skip the deadline check the chunk loop makes as each piece arrives.
        content, length = self._response.content, self._response.content_length
        if not content.is_eof() or (length is not None and length > _WHOLE):
            return None
        try:
            return content.read_nowait()
        except _FAILURES as exc:
            raise translated(exc, self._request, _TRANSLATIONS) from exc

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        # readany(): whatever has arrived, in one piece when it is all there (iter_chunked costs a third more).
        read = self._response.content.readany
        try:
            while chunk := await read():
                yield chunk
        except _FAILURES as exc:
            raise translated(exc, self._request, _TRANSLATIONS) from exc

    async def aclose(self) -> None:
        # Cut short (the size cap), it is closed: the unread rest would be taken for the next answer.
        if self._response.content.at_eof():
            self._response.release()
        else:
            self._response.close()


_COARSE = 10.0  # seconds left past which the total timeout is rounded down to a tenth of a second


def _total(deadline: float | None, clock: Callable[[], float] = time.monotonic) -> float | None:
    """aiohttp's ``total`` for a call with ``deadline``: the time left, over `_COARSE` rounded down to 0.1 s, so calls
    in the same tenth share one `aiohttp.ClientTimeout`, ending at most 0.1 s early, never late."""
    if deadline is None:
        return None
    left = within(None, httpx.ConnectTimeout, deadline, clock) or 0.0  # none left: nothing is sent
    if left > _COARSE:
        return math.floor(left * 10) / 10
    return left


def _timeout(timeouts: Timeouts, total: float | None) -> aiohttp.ClientTimeout:
    connect, pool = timeouts.get("connect"), timeouts.get("pool")
    return aiohttp.ClientTimeout(
        total=total,
        connect=None if connect is None or pool is None else connect + pool,
        sock_connect=connect,
        sock_read=timeouts.get("read"),
        # aiohttp rounds timers of 5 s or more up to a whole second: a call could run 1 s past its deadline.
        ceil_threshold=math.inf,
    )


# aiohttp's functions that call a session's middlewares (aiohttp.client_middlewares).
_MIDDLEWARE_CALLERS = frozenset({"single_middleware_handler", "wrapped"})


def _socket_factory(sockets: Sockets) -> Callable[[tuple[Any, ...]], socket.socket]:
    """aiohttp's ``socket_factory``: each socket made as aiohttp would make it, and known to ``sockets``."""

    def new_socket(address: tuple[Any, ...]) -> socket.socket:
        with opening_sync():  # made and known as one step: a fork never finds it in between
            sock = socket.socket(*address[:3])  # family, type, protocol
            sockets.add(sock)
        return sock

    return new_socket


def _let_go_of(session: aiohttp.ClientSession, loop: asyncio.AbstractEventLoop | None, closed: list[int]) -> None:
    """Let go of ``session``, its sockets' descriptors ``closed`` already, without a loop call or an "Unclosed" log."""
    if loop is not None:
        release_transports(loop, closed)
    try:
        if session.connector is not None:
            getattr(session.connector, _CLOSE)()
    except Exception as exc:  # noqa: BLE001  # letting go of what is dead must not fail a call
        logger.debug("Letting go of an aiohttp session failed: %s: %s", type(exc).__name__, exc)


class AiohttpTransport:
    """The seam over an `aiohttp.ClientSession`: the caller's, or one the SDK makes (and closes)."""

    __slots__ = (
        "__weakref__",  # its sockets' registration calls it back after a fork (`_forked`), holding it weakly
        "_closed",
        "_headers",
        "_loop",
        "_owned",
        "_proxies",
        "_session",
        "_sockets",
        "_ssl_context",
        "_timeouts",
        "_urls",
    )
    library = f"aiohttp/{aiohttp.__version__}"

    def __init__(self, session: object = None, *, verify: bool | str | ssl.SSLContext = True) -> None:
        assert session is None or isinstance(session, aiohttp.ClientSession)
        self._session: aiohttp.ClientSession | None = session
        self._owned = session is None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the SDK's own session belongs to
        self._sockets: Sockets | None = None  # the SDK's own session's (`_socket_factory`)
        self._ssl_context = ssl_context(verify) if session is None else None
        self._closed = False
        self._proxies: Origins = {}
        # By request URL object (the SDK reuses them), which the entry holds: yarl's URL and the proxy.
        self._urls: dict[int, tuple[httpx.URL, URL, str | None]] = {}
        self._headers: dict[tuple[tuple[bytes, bytes], ...], list[tuple[str, str]]] = {}
        self._timeouts: dict[tuple[float | None, ...], aiohttp.ClientTimeout] = {}

    @property
    def default_headers(self) -> httpx.Headers:
        """The session's default headers (none for the SDK's own)."""
        return httpx.Headers(list(self._session.headers.items()) if self._session is not None else [])

    def callers_part(self, called_by: tuple[str, str] | None) -> str | None:
        """A middleware (or a trace callback) of the caller's session; ``None`` for the SDK's own."""
        if self._owned:
            return None
        package, function = called_by or ("", "")
        if package == "aiohttp" and function in _MIDDLEWARE_CALLERS:
            return "a middleware of http_client"
        if package == "aiohttp" and function.startswith("send_"):  # aiohttp.tracing's, running a TraceConfig's
            return "a trace callback of http_client"
        return "code of yours inside http_client"

    @staticmethod
    def refusal(session: object) -> tuple[str, str] | None:
        """Why a caller's ``session`` cannot be held to the SDK's rules on every send, and the rule; else ``None``:
        an auth middleware, though `_OneSend` would stop it, so a session for another service fails at once."""
        if not any(isinstance(m, aiohttp.DigestAuthMiddleware) for m in getattr(session, _MIDDLEWARES, ())):
            return None
        return (
            "http_client must have no auth middleware: aiohttp.DigestAuthMiddleware answers a 401 by sending the "
            "request again with credentials of another service, and the SDK authenticates with api_key "
            "(Authorization: Bearer) and sends each attempt once. Pass a session made without it "
            "(aiohttp.ClientSession(middlewares=(...your others...)))",
            "a session without an auth middleware",
        )

    @property
    def is_closed(self) -> bool:
        """Whether the session was closed."""
        return self._closed or (self._session is not None and self._session.closed)

    def _own_session(self) -> aiohttp.ClientSession:
        # Made on first use: a session belongs to the event loop it is created in. Not trust_env=True: that
        # reads ~/.netrc in a worker thread on every request; the environment's proxies are applied in `_url`.
        self._loop = asyncio.get_running_loop()
        sockets = self._sockets = Sockets(after_fork=self._forked)
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=1000,
                limit_per_host=0,
                keepalive_timeout=15,
                ssl=self._ssl_context or True,
                socket_factory=_socket_factory(sockets),
            ),
            auto_decompress=False,
            # No cookie jar: a cookie set for one API key must never go out with another's (with_options shares it).
            cookie_jar=aiohttp.DummyCookieJar(),
            # The SDK's header limits, not aiohttp's 8 KB a field (the send loop checks the total and the count).
            # Not max_headers: aiohttp 3.12.7, the oldest the extra allows, has none.
            max_line_size=MAX_RESPONSE_HEADER_BYTES + _STATUS_LINE,
            max_field_size=MAX_RESPONSE_HEADER_BYTES + _STATUS_LINE,
        )

    def _timeout_for(self, timeouts: Timeouts, deadline: float | None) -> aiohttp.ClientTimeout:
        total = _total(deadline)
        key = (total, timeouts.get("connect"), timeouts.get("pool"), timeouts.get("read"))
        return remembered(self._timeouts, key, lambda: _timeout(timeouts, total), _KEPT)

    def _url(self, url: httpx.URL) -> tuple[httpx.URL, URL, str | None]:
        """yarl's form of ``url``, and its proxy (none through a caller's session, which applies its own)."""
        return url, URL(str(url), encoded=True), proxy_for(url, self._proxies) if self._owned else None

    async def send(self, exchange: Exchange) -> _AiohttpStream:
        """Send through the session; return once the status and headers have arrived."""
        request = exchange.request
        session = self._session
        if session is None:
            session = self._session = self._own_session()
        headers = remembered(
            self._headers,
            tuple(request.headers.raw),
            lambda: [(name, value) for name, value in request.headers.multi_items() if name not in _LEFT_TO_AIOHTTP],
            _KEPT,
        )
        _, url, proxy = remembered(self._urls, id(request.url), lambda: self._url(request.url), _KEPT)
        if self._owned:
            one_send = _OneSend(None, exchange)
            middlewares: tuple[Any, ...] = (one_send,)
        else:
            one_send = _OneSend(request.headers.get_list("authorization"), exchange)
            middlewares = (*getattr(session, _MIDDLEWARES), one_send)
        started = time.monotonic()
        try:
            response = await session.request(
                request.method,
                url,
                headers=headers,
                data=request.content or None,
                allow_redirects=False,
                # Else a caller's raise_for_status=True session makes an error answer lose its status and body.
                raise_for_status=False,
                auto_decompress=False,
                timeout=self._timeout_for(exchange.timeouts, exchange.deadline),
                proxy=proxy,
                middlewares=middlewares,
            )
        except ClientRuleBroken as exc:  # a middleware of the session changed the URL or the Host: named
            raise exc.naming(middlewares_named(getattr(session, _MIDDLEWARES))) from None
        except _FAILURES as exc:
            _without_key(exc)
            if (
                not self._owned
                and not one_send.from_wire(exc)
                and (exchange.may_have_written or not isinstance(exc, _NETWORK))
                # aiohttp's own timeouts (its total is the deadline) fire in a caller's middleware that waits too.
                and not isinstance(exc, TimeoutError)
            ):
                raise  # a middleware or trace callback of the caller's raised it: `unknown_failure` judges
            raise translated(exc, request, _TRANSLATIONS) from _unresolved(exc)
        except ValueError as exc:
            if self._owned or _OWN_CREDENTIALS not in str(exc):
                raise
            raise ClientRuleBroken(
                "http_client (an aiohttp session) adds credentials of its own to this request (from ~/.netrc for this "
                "host, as the session was made with trust_env=True), which aiohttp refuses beside the SDK's "
                "Authorization header: nothing was sent. Give the SDK a session made without trust_env=True, or "
                "take this host out of ~/.netrc"
            ) from exc
        return _AiohttpStream(response, response.status, request, started)

    async def aclose(self) -> None:
        """Close the session, if the SDK made it."""
        self._closed = True
        if self._owned and self._session is not None:
            await self._session.close()

    def abandon(self) -> None:
        """Close the SDK's own session's connections without its ended event loop (as descriptors), then let go of
        the session without a loop call: no "Unclosed client session" when it is collected."""
        if self._owned and self._sockets is not None:  # a caller's session is theirs; one never made needs nothing
            self._closed = True
            self._forked(self._sockets.close())  # let go of as in a forked child, its sockets closed first

    def _forked(self, closed: list[int]) -> None:
        """In a forked child, once its copies of the session's sockets are closed (``closed``): let go of the session.
        The descriptors were closed first, so the selector the parent shares is untouched."""
        session, self._session = self._session, None
        if session is not None and self._owned:
            _let_go_of(session, self._loop, closed)


if TYPE_CHECKING:
    from animalstore_client._transports.seam_async import AsyncTransport

    # The type checkers hold the class to the seam: a method missing or of another type fails them.
    _SEAM: type[AsyncTransport] = AiohttpTransport
