"""The transport seam over an `aiohttp.ClientSession` (``backend="aiohttp"``).

Imported only when that backend is chosen. aiohttp's exceptions are mapped to
the httpx classes the retry policy tells apart; bodies arrive raw
(``auto_decompress=False``) so the send loop decodes and caps them itself;
redirects are never followed; the call's total deadline becomes aiohttp's
``total`` timeout, which also bounds the reading of the body.
"""

from __future__ import annotations

import asyncio
import math
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable

import aiohttp
import httpx
from yarl import URL

from ._body import codings_in
from ._deadline import Timeouts, remembered, within
from ._httpx_private import headers_from_library
from ._proxies import environment_proxy
from ._tls import ssl_context
from ._transport_base import AsyncLibraryStream, Translations, translated

# aiohttp sends a GET, HEAD or OPTIONS again by itself when the connection drops
# (RFC 9112's retry of a persistent connection), unseen by the SDK: the attempt
# count, the middleware, the retry budget and the trace would all miss that
# second request. The SDK's own sessions turn it off through this attribute,
# the one aiohttp's own test client sets; no public argument does it.
_RETRY_CONNECTION = "_retry_connection"
_SESSION_ATTRIBUTES: frozenset[str] = getattr(aiohttp.ClientSession, "ATTRS", frozenset())
if _RETRY_CONNECTION not in _SESSION_ATTRIBUTES:
    from ._exceptions import AnimalStoreError

    raise AnimalStoreError(
        f"aiohttp {aiohttp.__version__} no longer has ClientSession.{_RETRY_CONNECTION}, which the SDK sets to "
        "keep every request it sends counted: install the aiohttp release this SDK was tested with, or a newer "
        "animalstore-client"
    )

__all__ = ["AiohttpTransport"]

# Headers aiohttp writes itself from the request.
_LEFT_TO_AIOHTTP = frozenset({"host", "content-length", "transfer-encoding"})


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
    (asyncio.TimeoutError, httpx.ReadTimeout),
)


def _unresolved(exc: BaseException) -> BaseException:
    """``exc``, behind a `socket.gaierror` when it is aiohttp's own report of a name that did not resolve.

    aiohttp's aiodns resolver raises no `socket.gaierror`: so the failure is reported as the socket
    module reports one, whatever the library (``_environments.name_not_resolved`` looks for it).
    """
    if not isinstance(exc, _DNS_ERROR) or isinstance(exc.__cause__, socket.gaierror):
        return exc
    unresolved = socket.gaierror(str(exc))
    unresolved.__cause__ = exc
    return unresolved


# aiohttp 3.11 brought its own class for it (the oldest release the extra allows is 3.12.4).
_DNS_ERROR: type[BaseException] = aiohttp.ClientConnectorDNSError

# What _TRANSLATIONS knows; anything else (cancellation included) passes untouched.
_FAILURES = (aiohttp.ClientError, asyncio.TimeoutError)


class _AiohttpStream(AsyncLibraryStream[aiohttp.ClientResponse]):
    __slots__ = ()

    def _library_headers(self) -> httpx.Headers:
        return headers_from_library(self._response.raw_headers)

    def content_codings(self) -> list[bytes]:
        return codings_in(self._response.raw_headers)

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


class AiohttpTransport:
    """The seam over an `aiohttp.ClientSession`: the caller's, or one the SDK makes (and closes)."""

    __slots__ = ("_closed", "_headers", "_owned", "_proxies", "_session", "_ssl_context", "_timeouts", "_urls")
    library = f"aiohttp/{aiohttp.__version__}"

    def __init__(self, session: object = None, *, verify: bool | str | ssl.SSLContext = True) -> None:
        assert session is None or isinstance(session, aiohttp.ClientSession)
        self._session: aiohttp.ClientSession | None = session
        self._owned = session is None
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

    @property
    def is_closed(self) -> bool:
        """Whether the session was closed."""
        return self._closed or (self._session is not None and self._session.closed)

    def _own_session(self) -> aiohttp.ClientSession:
        # Made on first use: a session belongs to the event loop it is created in.
        # Not trust_env=True: that reads ~/.netrc in a worker thread on every
        # request (two thread hops a call); the environment's proxies are
        # applied below instead, read as httpx reads them.
        connector = aiohttp.TCPConnector(
            limit=1000, limit_per_host=0, keepalive_timeout=15, ssl=self._ssl_context or True
        )
        # No cookie jar: a cookie the service set for one API key must never
        # go out with another key's calls (with_options shares this session).
        session = aiohttp.ClientSession(connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar())
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

    async def send(self, request: httpx.Request, timeouts: Timeouts, deadline: float | None) -> _AiohttpStream:
        """Send through the session; return once the status and headers have arrived."""
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
                timeout=self._timeout_for(timeouts, deadline),
                proxy=proxy,
            )
        except _FAILURES as exc:
            raise translated(exc, request, _TRANSLATIONS) from _unresolved(exc)
        return _AiohttpStream(response, response.status, request, started)

    async def aclose(self) -> None:
        """Close the session, if the SDK made it."""
        self._closed = True
        if self._owned and self._session is not None:
            await self._session.close()
