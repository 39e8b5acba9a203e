"""The SDK's own connection pool for the default backend: httpcore, built through its public API.

Imported when a client without an ``http_client`` is made, not by ``import animalstore_client``: httpcore (and
anyio under it) cost import time that an application which only imports the package should not pay.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

import httpcore
import httpx

from animalstore_client._core.body import codings_in
from animalstore_client._core.defaults import DEFAULT_LIMITS
from animalstore_client._core.exceptions import AnimalStoreError
from animalstore_client._core.exchange import RUNNING, Exchange
from animalstore_client._core.httpx_private import headers_from_library
from animalstore_client._transports.pool.deadline_network_async import AsyncDeadlineBackend
from animalstore_client._transports.pool.pool_async import AsyncConnectionPool
from animalstore_client._transports.proxies import PoolsByProxy
from animalstore_client._transports.shared import NO_HEADERS, no_callers_code, same_named, translated
from animalstore_client._transports.stream_async import AsyncLibraryStream

__all__ = ["AsyncHttpcoreTransport"]

# httpcore asks an idle connection's network stream `get_extra_info("is_readable")` (in `has_expired`) to drop
# one the server closed or that holds stray bytes; the SDK's asyncio stream answers it (a query httpcore's
# interface does not document: docs/architecture.md's reaches). Unasked, a dead connection would be reused.
if "is_readable" not in httpcore.AsyncHTTP11Connection.has_expired.__code__.co_consts:
    raise ImportError(
        f"animalstore_client answers httpcore's is_readable query of an idle connection, which httpcore "
        f"{httpcore.__version__} no longer asks: install the httpcore release this SDK was tested with, or a newer "
        "animalstore-client"
    )


# httpcore's failures and the httpx class the retry policy knows each by (as httpx maps them), most specific first.
_HTTPCORE_FAILURES = same_named(httpcore)
# What is translated; anything else passes untouched.
_FAILURES: tuple[type[BaseException], ...] = tuple(core_class for core_class, _ in _HTTPCORE_FAILURES)


class _AsyncHttpcoreStream(AsyncLibraryStream[httpcore.Response]):
    """An httpcore response, its body's failures translated; closed, its connection goes back to the pool."""

    __slots__ = ()

    def _library_headers(self) -> httpx.Headers:
        return headers_from_library(self._response.headers)

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        return self._response.headers

    def content_codings(self) -> list[bytes]:
        return codings_in(self._response.headers)

    def _reason(self) -> str | None:
        extensions = cast("dict[str, object]", self._response.extensions)  # pyright: ignore[reportUnknownMemberType]
        reason = extensions.get("reason_phrase", b"")
        return reason.decode("latin-1") if isinstance(reason, bytes) else None

    def aiter_raw(self) -> AsyncIterator[bytes]:
        # The deadline network stream holds every read of the body to the deadline of the call whose request it wrote.
        return self._translated(self._response.aiter_stream(), _FAILURES, _HTTPCORE_FAILURES)

    async def aclose(self) -> None:
        # Read to its end, the connection goes back to the pool; cut short, httpcore closes it.
        await self._response.aclose()


class AsyncHttpcoreTransport:
    """The SDK's own connection pool for the default backend: one `AsyncConnectionPool` sends direct, and one
    `httpcore.AsyncHTTPProxy` per proxy the environment names for a URL (`_transports.proxies`). Each pool's
    network backend is `AsyncDeadlineBackend`, holding each socket operation to the call's deadline. No cookie
    is kept and no redirect followed."""

    __slots__ = ("_pools", "_ssl_context")
    library = f"httpx/{httpx.__version__}"
    """The default backend is httpx's: its own pool is httpcore, the transport layer httpx sends through."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self._ssl_context = ssl_context
        self._pools: PoolsByProxy[AsyncConnectionPool | httpcore.AsyncHTTPProxy] = PoolsByProxy(self._new_pool)

    default_headers = NO_HEADERS
    callers_part = staticmethod(no_callers_code)

    @property
    def is_closed(self) -> bool:
        """Whether the SDK closed this pool."""
        return self._pools.closed

    def _pool_for(self, url: httpx.URL) -> AsyncConnectionPool | httpcore.AsyncHTTPProxy:
        return self._pools.for_url(url)

    def _new_pool(self, proxy: str | None) -> AsyncConnectionPool | httpcore.AsyncHTTPProxy:
        # AsyncDeadlineBackend is imported with this module, not here: a call would import it, and a child forked
        # during that import waits for ever on the module's lock (tests/test_fork.py).
        limits: dict[str, Any] = {
            "max_connections": DEFAULT_LIMITS.max_connections,
            "max_keepalive_connections": DEFAULT_LIMITS.max_keepalive_connections,
            "keepalive_expiry": DEFAULT_LIMITS.keepalive_expiry,
        }
        if proxy is None:
            return AsyncConnectionPool(self._ssl_context, AsyncDeadlineBackend(_direct_backend()), **limits)
        url = httpx.URL(proxy)
        if url.scheme not in ("http", "https"):
            raise AnimalStoreError(
                f"The environment names a {url.scheme} proxy for this URL; the SDK's own pool speaks to "
                "http:// and https:// proxies only. Pass http_client=httpx.AsyncClient(...) configured for it."
            )
        auth = (url.username, url.password) if url.username else None
        plain = url.copy_with(username=None, password=None)
        # httpcore's proxy pool, on httpcore's own network backend (TLS to the proxy and through it).
        return httpcore.AsyncHTTPProxy(
            proxy_url=str(plain),
            proxy_auth=auth,
            ssl_context=self._ssl_context,
            network_backend=AsyncDeadlineBackend(_library_backend()),
            **limits,
        )

    async def send(self, exchange: Exchange) -> _AsyncHttpcoreStream:
        """Send through the pool; return once the status and headers have arrived."""
        request = exchange.request
        url = request.url
        pool = self._pool_for(url)
        core = httpcore.Request(
            method=request.method.encode("ascii"),
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.content,
            extensions={"timeout": exchange.timeouts},
        )
        started = time.monotonic()
        # The pool and its network streams report to the attempt's exchange what "was it stored?" is decided from;
        # a mock patched in below here (respx) reports nothing. `with exchange:` inline: two calls fewer a call.
        token = RUNNING.set(exchange)
        try:
            response = await pool.handle_async_request(core)
        except _FAILURES as exc:
            raise translated(exc, request, _HTTPCORE_FAILURES) from exc
        finally:
            RUNNING.reset(token)
        extensions = cast("dict[str, object]", response.extensions)  # pyright: ignore[reportUnknownMemberType]
        if getattr(extensions.get("network_stream"), "unread_since_write", False):
            # The head was parsed from bytes already buffered before this request was
            # written: what an earlier response sent past its declared end (another
            # API key's, perhaps). It is not this request's answer; the connection ends.
            await response.aclose()
            raise httpx.RemoteProtocolError(
                "the answer arrived before the request was sent: bytes left over from an earlier "
                "response on this connection; the connection was closed",
                request=request,
            )
        return _AsyncHttpcoreStream(response, response.status, request, started)

    async def aclose(self) -> None:
        """Close every pool and its connections."""
        for pool in self._pools.close():
            await pool.aclose()

    def abandon(self) -> None:
        """Close every pool's connections without their event loop, which has ended; httpcore's proxy pools cannot:
        their sockets are left to the garbage collector."""
        for pool in self._pools.close():
            if isinstance(pool, AsyncConnectionPool):
                pool.abandon()


def _direct_backend() -> httpcore.AsyncNetworkBackend:
    """The SDK's asyncio backend on asyncio's own loops (measured faster than anyio's), anyio's on any other."""
    from animalstore_client._transports.pool.asyncio_network import for_running_loop

    return for_running_loop() or _library_backend()


def _library_backend() -> httpcore.AsyncNetworkBackend:
    """httpcore's own backend for asyncio and trio alike (anyio)."""
    return cast("httpcore.AsyncNetworkBackend", httpcore.AnyIOBackend())  # typed apart from its base


if TYPE_CHECKING:
    from animalstore_client._transports.seam_async import AsyncTransport

    # The type checkers hold the class to the seam: a method missing or of another type fails them.
    _SEAM: type[AsyncTransport] = AsyncHttpcoreTransport
