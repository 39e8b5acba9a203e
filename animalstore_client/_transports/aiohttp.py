"""The transport seam over an `aiohttp.ClientSession` (``backend="aiohttp"``).

Imported only when that backend is chosen. aiohttp's exceptions are mapped to
the httpx classes the retry policy tells apart; bodies arrive raw
(``auto_decompress=False``) so the send loop decodes and caps them itself;
redirects are never followed; the call's total deadline becomes aiohttp's
``total`` timeout, which also bounds the reading of the body.

A session the SDK makes belongs to the event loop it was made in. Its sockets
are made by the SDK (aiohttp's public ``socket_factory=``) and known
(`_transports.sockets`), so that they are closed where aiohttp cannot close
them: when that loop has ended (`AiohttpTransport.abandon`, at the client's
next call or close), and in a forked child, whose copies are closed at the
fork without touching the selector it shares with the parent. The session
is then let go of without a loop call or a log line (`_let_go_of`).
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
from animalstore_client._transports.proxies import environment_proxy
from animalstore_client._transports.shared import AsyncLibraryStream, Translations, middlewares_named, translated
from animalstore_client._transports.sockets import Sockets, check_transport_table, opening_sync, release_transports

# aiohttp sends a GET, HEAD or OPTIONS again by itself when the connection drops
# (RFC 9112's retry of a persistent connection), unseen by the SDK: the attempt
# count, the middleware, the retry budget and the trace would all miss that
# second request. The SDK's own sessions turn it off through this attribute,
# the one aiohttp's own test client sets; no public argument does it. A
# caller's session keeps it: there `_OneSend` stops the second request.
_RETRY_CONNECTION = "_retry_connection"
# A session's middlewares, which `_OneSend` passes on with itself innermost on
# each send through a caller's session (middlewares= per request replaces them;
# no public attribute reads them).
_MIDDLEWARES = "_middlewares"
_SESSION_ATTRIBUTES: frozenset[str] = getattr(aiohttp.ClientSession, "ATTRS", frozenset())
for _private in (_RETRY_CONNECTION, _MIDDLEWARES):
    if _private not in _SESSION_ATTRIBUTES:
        from animalstore_client._core.exceptions import AnimalStoreError

        raise AnimalStoreError(
            f"aiohttp {aiohttp.__version__} no longer has ClientSession.{_private}, which the SDK uses to "
            "keep every request it sends counted: install the aiohttp release this SDK was tested with, or a newer "
            "animalstore-client"
        )
# A connector's close without its event loop: what aiohttp's own `__del__` calls. The public `close()` makes
# a task on the loop to wait for the closings (none can run on a loop that has ended, and in a forked child
# that never runs the loop again it would be destroyed pending, logged); `_close()` marks the connector
# closed, closes its connections' transports where the loop is open, and makes nothing to wait for.
_CLOSE = "_close"
if not callable(getattr(aiohttp.BaseConnector, _CLOSE, None)):
    from animalstore_client._core.exceptions import AnimalStoreError

    raise AnimalStoreError(
        f"aiohttp {aiohttp.__version__} no longer has BaseConnector.{_CLOSE}, which the SDK uses to let go of "
        "a session whose event loop has ended, or a forked child's copy of its parent's: install the aiohttp "
        "release this SDK was tested with, or a newer animalstore-client"
    )
check_transport_table()

__all__ = ["AiohttpTransport"]

# Headers aiohttp writes itself from the request.
_LEFT_TO_AIOHTTP = frozenset({"host", "content-length", "transfer-encoding"})


_STATUS_LINE = 64
"""Bytes beside a field's name and value on its line (the colon, spaces, CRLF), with room to spare."""
_KEPT = 256
"""Request URLs, header sets and timeout sets whose aiohttp form a transport keeps (the SDK repeats them)."""
_WHOLE = 64 * 1024
"""A body aiohttp holds whole is taken in one call (`_AiohttpStream.whole_body`) unless it declares more bytes."""

# aiohttp's failures, most specific first, and the httpx class the retry policy knows each by.
_TRANSLATIONS: Translations = (
    (aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout),  # connecting, or waiting for a pooled connection
    (aiohttp.SocketTimeoutError, httpx.ReadTimeout),
    (aiohttp.ClientConnectorError, httpx.ConnectError),  # refused, DNS, TLS: nothing was sent
    (aiohttp.ServerDisconnectedError, httpx.RemoteProtocolError),
    (aiohttp.ClientPayloadError, httpx.ReadError),
    (aiohttp.ClientOSError, httpx.ReadError),
    (aiohttp.ClientError, httpx.RemoteProtocolError),  # a malformed answer, among others
    # aiohttp's total timeout: the call's deadline. asyncio's class, which is
    # not the builtin TimeoutError before Python 3.11.
    (TimeoutError, httpx.ReadTimeout),
)


def _unresolved(exc: BaseException) -> BaseException:
    """``exc``, behind a `socket.gaierror` when it is aiohttp's own report of a name that did not resolve.

    aiohttp's aiodns resolver raises no `socket.gaierror`: so the failure is reported as the socket
    module reports one, whatever the library (``_core.environments.name_not_resolved`` looks for it).
    """
    if not isinstance(exc, _DNS_ERROR) or isinstance(exc.__cause__, socket.gaierror):
        return exc
    unresolved = socket.gaierror(str(exc))
    unresolved.__cause__ = exc
    return unresolved


def _without_key(exc: BaseException) -> BaseException:
    """``exc``, and the exceptions it chains, with no request headers holding the key (their ``request_info``).

    aiohttp's ``ClientResponseError`` (a malformed answer, raise_for_status()) carries the request's
    headers, ``Authorization`` among them, in its ``request_info`` and its ``args``, where a crash reporter
    records them: the SDK chains it only with that header masked, keeping its class and its message.
    """
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


# aiohttp 3.11 brought its own class for it (the oldest release the extra allows is 3.12.4).
_DNS_ERROR: type[BaseException] = aiohttp.ClientConnectorDNSError

# What _TRANSLATIONS knows; anything else (cancellation included) passes untouched.
_FAILURES = (aiohttp.ClientError, TimeoutError)
# aiohttp's failures that are the network's wherever they were raised, in a caller's middleware too. Its
# others (a ClientResponseError, which reports a malformed answer as well as raise_for_status()) are the
# network's when they came from the connection (`_OneSend.from_wire`), else code of the caller's raised them.
_NETWORK = (
    aiohttp.ClientConnectionError,
    aiohttp.ClientPayloadError,
    aiohttp.ClientHttpProxyError,
    TimeoutError,
)
# What aiohttp says when credentials of the session's own (its auth, or ~/.netrc under trust_env=True) meet
# the SDK's Authorization header: it refuses the request, before sending anything.
_OWN_CREDENTIALS = "Cannot combine AUTHORIZATION header"


# aiohttp's failures raised only while the connection is being made, before any byte of the request is written.
_BEFORE_WRITE = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)

_Handler = Callable[[aiohttp.ClientRequest], Awaitable[aiohttp.ClientResponse]]
"""aiohttp's sending of a request, as a middleware is handed it."""


class _OneSend:
    """The innermost middleware of one send through a caller's session: the request leaves once, with the SDK's key.

    aiohttp runs a session's middlewares around the sending of each request; one
    may send it again (``aiohttp.DigestAuthMiddleware`` answering a challenge
    with credentials of another service, a middleware that retries) or replace
    its ``Authorization`` header, and aiohttp itself sends a GET again when a
    kept-alive connection drops. Passed last in ``middlewares=`` on each send,
    after the session's own, this wraps the sending itself: a second sending
    in one attempt is stopped (after a dropped connection, its failure is
    raised again, for the SDK's retry policy to judge; otherwise the first
    answer is closed and `ClientRuleBroken` raised), as is a request whose
    ``Authorization`` is no longer the SDK's, or whose URL is no longer of the
    client's origin. What came out of the sending is kept, so that the
    transport tells the connection's failures (`from_wire`) from those raised
    by the caller's middlewares, and reported to the attempt's exchange:
    below every middleware and trace callback of the caller's, it is what
    "was it stored?" is decided from. Its ``Host`` is checked there too.
    """

    __slots__ = ("_authorization", "_exchange", "_failure", "_first", "_sent")

    def __init__(self, authorization: list[str], exchange: Exchange) -> None:
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
        if request.headers.getall("Authorization", []) != self._authorization:
            raise ClientRuleBroken(
                "a middleware of http_client (an aiohttp session) changed the request's Authorization header, which "
                "carries api_key: the request was not sent. The SDK authenticates with api_key alone: give it a "
                "session without that middleware (or with_options(api_key=...) for another key)"
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
    __slots__ = ()

    def _library_headers(self) -> httpx.Headers:
        return headers_from_library(self._response.raw_headers)

    def content_codings(self) -> list[bytes]:
        return codings_in(self._response.raw_headers)

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        # aiohttp holds them as pairs of bytes: read on every answer (the header limit, the service's notices)
        # without making the httpx.Headers a typed call never needs.
        return list(self._response.raw_headers)

    def _reason(self) -> str | None:
        return self._response.reason

    async def whole_body(self) -> bytes | None:
        # Only a body aiohttp already holds whole (its end has arrived) is taken in one piece: waiting
        # for one here would skip the deadline check the chunk loop makes as each piece arrives.
        response = self._response
        content = response.content
        if not content.is_eof():
            return None
        length = response.content_length
        if length is not None and length > _WHOLE:
            return None
        try:
            return content.read_nowait()
        except _FAILURES as exc:
            raise translated(exc, self._request, _TRANSLATIONS) from exc

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        # readany(): whatever has arrived, in one piece when it is all there
        # (iter_chunked costs a third more per small body).
        read = self._response.content.readany
        try:
            while chunk := await read():
                yield chunk
        except _FAILURES as exc:
            raise translated(exc, self._request, _TRANSLATIONS) from exc

    async def aclose(self) -> None:
        # Read to the end: the connection goes back to the pool. Cut short (the
        # size cap): close it, or the unread rest would be taken for the next answer.
        if self._response.content.at_eof():
            self._response.release()
        else:
            self._response.close()


_COARSE = 10.0
"""With more than this many seconds left, the total timeout is rounded down to a tenth of a second."""


def _total(deadline: float | None, clock: Callable[[], float] = time.monotonic) -> float | None:
    """aiohttp's ``total`` for a call with ``deadline``: the time left, rounded down to 0.1 s when over `_COARSE`.

    Rounded, calls in the same tenth of a second share one `aiohttp.ClientTimeout` (made
    anew, one cost ~3 µs a call); a call then ends at most 0.1 s before its deadline, never after.
    """
    if deadline is None:
        return None
    left = within(None, httpx.ConnectTimeout, deadline, clock) or 0.0  # none left: nothing is sent
    if left > _COARSE:
        return math.floor(left * 10) / 10
    return left


def _timeout(timeouts: Timeouts, total: float | None) -> aiohttp.ClientTimeout:
    connect, pool = timeouts.get("connect"), timeouts.get("pool")
    return aiohttp.ClientTimeout(
        # The deadline covers the whole exchange, body included.
        total=total,
        connect=None if connect is None or pool is None else connect + pool,
        sock_connect=connect,
        sock_read=timeouts.get("read"),
        # aiohttp rounds timers of 5 s or more up to the next whole second, which would let a call
        # run up to 1 s past its deadline: the SDK's timers fire when they are due.
        ceil_threshold=math.inf,
    )


# aiohttp's functions that call a session's middlewares (aiohttp.client_middlewares).
_MIDDLEWARE_CALLERS = frozenset({"single_middleware_handler", "wrapped"})


def _socket_factory(sockets: Sockets) -> Callable[[tuple[Any, ...]], socket.socket]:
    """aiohttp's ``socket_factory``: each socket made as aiohttp would make it, and known to ``sockets``."""

    def new_socket(address: tuple[Any, ...]) -> socket.socket:
        family, kind, protocol = address[:3]
        with opening_sync():  # made and known as one step: a fork never finds it in between
            sock = socket.socket(family=family, type=kind, proto=protocol)
            sockets.add(sock)
        return sock

    return new_socket


def _let_go_of(session: aiohttp.ClientSession, loop: asyncio.AbstractEventLoop | None, closed: list[int]) -> None:
    """Let go of ``session``, whose sockets' descriptors ``closed`` are closed already, without awaiting anything.

    asyncio's transports over them let go of them on ``loop`` (`_transports.sockets.release_transports`),
    then the connector is marked closed (`_CLOSE`): neither the session nor the connector then reports
    itself unclosed when collected.
    """
    if loop is not None:
        release_transports(loop, closed)
    connector = session.connector
    if connector is None:
        return
    try:
        getattr(connector, _CLOSE)()
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
        self._loop: asyncio.AbstractEventLoop | None = None
        """The event loop the SDK's own session was made in, and belongs to."""
        self._sockets: Sockets | None = None
        """The SDK's own session's sockets (`_socket_factory`)."""
        self._ssl_context = ssl_context(verify) if session is None else None
        self._closed = False
        self._proxies: dict[bytes, str | None] = {}
        # By request URL object (the SDK reuses them: list pages repeat theirs): yarl's URL and the proxy.
        self._urls: dict[int, tuple[httpx.URL, URL, str | None]] = {}
        # The library form of each distinct set of request headers (the SDK's repeat from call to call).
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
        """Why a caller's ``session`` cannot be held to the SDK's rules on every send, and the rule; else ``None``.

        A session's auth is refused in `_clients.backends`, as httpx's. An auth
        middleware is refused too, though `_OneSend` would stop what it does:
        refused up front, a session built for another service fails at once
        rather than on the first challenge.
        """
        found = [m for m in getattr(session, _MIDDLEWARES, ()) if isinstance(m, aiohttp.DigestAuthMiddleware)]
        if not found:
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
        # Made on first use: a session belongs to the event loop it is created in.
        # Not trust_env=True: that reads ~/.netrc in a worker thread on every
        # request (two thread hops a call); the environment's proxies are
        # applied below instead, read as httpx reads them.
        self._loop = asyncio.get_running_loop()
        sockets = self._sockets = Sockets(after_fork=self._forked)
        connector = aiohttp.TCPConnector(
            limit=1000,
            limit_per_host=0,
            keepalive_timeout=15,
            ssl=self._ssl_context or True,
            socket_factory=_socket_factory(sockets),
        )
        # No cookie jar: a cookie the service set for one API key must never
        # go out with another key's calls (with_options shares this session).
        session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            # The SDK's header limits, not aiohttp's 8 KB a field: a field up to the whole limit is read (the send
            # loop checks the total and the count), and past it aiohttp's refusal is the SDK's one error
            # (`translated`). Not max_headers: aiohttp 3.12.4, the oldest the extra allows, has no such argument,
            # and the count is the send loop's to check (aiohttp's own, 128 where it has one, is above it).
            max_line_size=MAX_RESPONSE_HEADER_BYTES + _STATUS_LINE,
            max_field_size=MAX_RESPONSE_HEADER_BYTES + _STATUS_LINE,
        )
        setattr(session, _RETRY_CONNECTION, False)  # every request the SDK sends is an attempt it counts
        return session

    def _timeout_for(self, timeouts: Timeouts, deadline: float | None) -> aiohttp.ClientTimeout:
        total = _total(deadline)
        key = (total, timeouts.get("connect"), timeouts.get("pool"), timeouts.get("read"))
        return remembered(self._timeouts, key, lambda: _timeout(timeouts, total), _KEPT)

    def _proxy_for(self, url: httpx.URL) -> str | None:
        if not self._owned:
            return None  # a caller's session applies its own proxy settings
        origin = url.raw_host  # with the scheme and port below: cheap attribute reads
        key = url.raw_scheme + b"://" + origin + b":" + str(url.port).encode()
        try:
            return self._proxies[key]
        except KeyError:
            proxy = environment_proxy(url)
            self._proxies[key] = found = None if proxy is None else str(proxy)
            return found

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
        known = self._urls.get(id(request.url))
        if known is None or known[0] is not request.url:  # the entry holds its URL, so this is a safeguard
            if len(self._urls) >= _KEPT:
                self._urls.clear()
            known = self._urls[id(request.url)] = (
                request.url,
                URL(str(request.url), encoded=True),
                self._proxy_for(request.url),
            )
        _, url, proxy = known
        # A caller's session: its middlewares run, `_OneSend` innermost (see there).
        one_send = None if self._owned else _OneSend(request.headers.get_list("authorization"), exchange)
        middlewares = None if one_send is None else (*getattr(session, _MIDDLEWARES), one_send)
        started = time.monotonic()
        try:
            response = await session.request(
                request.method,
                url,
                headers=headers,
                data=request.content or None,
                allow_redirects=False,
                # A caller's session made with raise_for_status=True would turn every error answer into a
                # ClientResponseError, losing its status, its body and its Retry-After.
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
            if one_send is None and isinstance(exc, _BEFORE_WRITE):
                exchange.not_written()  # the SDK's own session: aiohttp's connector failed, nothing of the caller's ran
            if (
                one_send is not None
                and not one_send.from_wire(exc)
                and (exchange.may_have_written or not isinstance(exc, _NETWORK))
                # aiohttp's own timeouts (its total is the call's deadline) fire wherever the call is, in a
                # middleware of the caller's that waits too: the deadline's, not the middleware's failure.
                and not isinstance(exc, TimeoutError)
            ):
                # A middleware or a trace callback of the caller's raised it (raise_for_status(), or its own call
                # to a service that is down once the answer had come): `unknown_failure` judges.
                raise
            raise translated(exc, request, _TRANSLATIONS) from _unresolved(exc)
        except ValueError as exc:
            if one_send is None or _OWN_CREDENTIALS not in str(exc):
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
        """Close the SDK's own session's connections without its event loop, which has ended; then let go of it.

        Its sockets are closed here, as descriptors (the loop can run no callback to close them), and
        the session is let go of without a loop call: no "Unclosed client session" when it is collected.
        """
        if not self._owned or self._sockets is None:
            return  # a caller's session is theirs to close; an own one never made has nothing to close
        session, self._session = self._session, None
        self._closed = True
        if session is not None:
            _let_go_of(session, self._loop, self._sockets.close())

    def _forked(self, closed: list[int]) -> None:
        """In a forked child, once its copies of the session's sockets are closed (``closed``): let go of the session.

        Only this process's tables change: the loop's selector, which the parent shares, no longer
        holds those descriptors, as they were closed first. The next call (the client makes a new
        transport in a new process) makes a session of the child's own.
        """
        session, self._session = self._session, None
        if session is not None and self._owned:
            _let_go_of(session, self._loop, closed)


if TYPE_CHECKING:
    from animalstore_client._transports.seam_async import AsyncTransport

    # The type checkers hold the class to the seam: a method missing or of another type fails them.
    _SEAM: type[AsyncTransport] = AiohttpTransport
