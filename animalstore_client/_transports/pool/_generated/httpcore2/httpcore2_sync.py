# Generated from _transports/pool/httpcore_async.py by scripts/unasync.py, over httpcore2 for the httpx2 backend: do not edit;
# regenerate with `python scripts/unasync.py`.
"""The SDK's own connection pool for the httpx2 backend: httpcore2, built through its public API.

Imported when a client without an ``http_client`` is made, not by ``import animalstore_client``: httpcore2 (and
anyio under it) cost import time that an application which only imports the package should not pay.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import httpcore2
import httpx
import httpx2

from animalstore_client._core.body import codings_in
from animalstore_client._core.defaults import DEFAULT_LIMITS
from animalstore_client._core.exceptions import AnimalStoreError
from animalstore_client._core.exchange import RUNNING, Exchange
from animalstore_client._core.httpx_private import headers_from_library
from animalstore_client._transports.pool._generated.httpcore2.deadline_network_sync import DeadlineBackend
from animalstore_client._transports.pool._generated.httpcore2.pool_sync import ConnectionPool
from animalstore_client._transports.proxies import PoolsByProxy
from animalstore_client._transports.shared import NO_HEADERS, no_callers_code, same_named, translated
from animalstore_client._transports._generated.stream_sync import LibraryStream

__all__ = ["Httpcore2Transport"]

# httpcore2 asks an idle connection's network stream `get_extra_info("is_readable")` (in `has_expired`) to drop
# one the server closed or that holds stray bytes; the SDK's asyncio stream answers it (a query httpcore2's
# interface does not document: docs/architecture.md's reaches). Unasked, a dead connection would be reused.
if "is_readable" not in httpcore2.HTTP11Connection.has_expired.__code__.co_consts:
    raise ImportError(
        f"animalstore_client answers httpcore2's is_readable query of an idle connection, which httpcore2 "
        f"{httpcore2.__version__} no longer asks: install the httpcore2 release this SDK was tested with, or a newer "
        "animalstore-client"
    )


# httpcore2's failures and the httpx class the retry policy knows each by (as httpx maps them), most specific first.
_HTTPCORE_FAILURES = same_named(httpcore2)
# What is translated; anything else passes untouched.
_FAILURES: tuple[type[BaseException], ...] = tuple(core_class for core_class, _ in _HTTPCORE_FAILURES)


class _HttpcoreStream(LibraryStream[httpcore2.Response]):
    """An httpcore2 response, its body's failures translated; closed, its connection goes back to the pool."""

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

    def iter_raw(self) -> Iterator[bytes]:
        # The deadline network stream holds every read of the body to the deadline of the call whose request it wrote.
        return self._translated(self._response.iter_stream(), _FAILURES, _HTTPCORE_FAILURES)

    def close(self) -> None:
        # Read to its end, the connection goes back to the pool; cut short, httpcore2 closes it.
        self._response.close()


class Httpcore2Transport:
    """The SDK's own connection pool for the httpx2 backend: one `ConnectionPool` sends direct, and one
    `httpcore2.HTTPProxy` per proxy the environment names for a URL (`_transports.proxies`). Each pool's
    network backend is `DeadlineBackend`, holding each socket operation to the call's deadline. No cookie
    is kept and no redirect followed."""

    __slots__ = ("_pools", "_ssl_context")
    library = f"httpx2/{httpx2.__version__}"
    """The httpx2 backend: its own pool is httpcore2, the transport layer httpx2 sends through."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self._ssl_context = ssl_context
        self._pools: PoolsByProxy[ConnectionPool | httpcore2.HTTPProxy] = PoolsByProxy(self._new_pool)

    default_headers = NO_HEADERS
    callers_part = staticmethod(no_callers_code)

    @property
    def is_closed(self) -> bool:
        """Whether the SDK closed this pool."""
        return self._pools.closed

    def _pool_for(self, url: httpx.URL) -> ConnectionPool | httpcore2.HTTPProxy:
        return self._pools.for_url(url)

    def _new_pool(self, proxy: str | None) -> ConnectionPool | httpcore2.HTTPProxy:
        # DeadlineBackend is imported with this module, not here: a call would import it, and a child forked
        # during that import waits for ever on the module's lock (tests/test_fork.py).
        limits: dict[str, Any] = {
            "max_connections": DEFAULT_LIMITS.max_connections,
            "max_keepalive_connections": DEFAULT_LIMITS.max_keepalive_connections,
            "keepalive_expiry": DEFAULT_LIMITS.keepalive_expiry,
        }
        if proxy is None:
            return ConnectionPool(self._ssl_context, DeadlineBackend(_direct_backend()), **limits)
        url = httpx.URL(proxy)
        if url.scheme not in ("http", "https"):
            raise AnimalStoreError(
                f"The environment names a {url.scheme} proxy for this URL; the SDK's own pool speaks to "
                "http:// and https:// proxies only. Pass http_client=httpx2.Client(...) configured for it."
            )
        auth = (url.username, url.password) if url.username else None
        plain = url.copy_with(username=None, password=None)
        # httpcore2's proxy pool, on httpcore2's own network backend (TLS to the proxy and through it).
        return httpcore2.HTTPProxy(
            proxy_url=str(plain),
            proxy_auth=auth,
            ssl_context=self._ssl_context,
            network_backend=DeadlineBackend(_library_backend()),
            **limits,
        )

    def send(self, exchange: Exchange) -> _HttpcoreStream:
        """Send through the pool; return once the status and headers have arrived."""
        request = exchange.request
        url = request.url
        pool = self._pool_for(url)
        core = httpcore2.Request(
            method=request.method.encode("ascii"),
            url=httpcore2.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.content,
            extensions={"timeout": exchange.timeouts},
        )
        started = time.monotonic()
        # The pool and its network streams report to the attempt's exchange what "was it stored?" is decided from;
        # a mock patched in below here (respx) reports nothing. `with exchange:` inline: two calls fewer a call.
        token = RUNNING.set(exchange)
        try:
            response = pool.handle_request(core)
        except _FAILURES as exc:
            raise translated(exc, request, _HTTPCORE_FAILURES) from exc
        finally:
            RUNNING.reset(token)
        extensions = cast("dict[str, object]", response.extensions)  # pyright: ignore[reportUnknownMemberType]
        if getattr(extensions.get("network_stream"), "unread_since_write", False):
            # The head was parsed from bytes already buffered before this request was
            # written: what an earlier response sent past its declared end (another
            # API key's, perhaps). It is not this request's answer; the connection ends.
            response.close()
            raise httpx.RemoteProtocolError(
                "the answer arrived before the request was sent: bytes left over from an earlier "
                "response on this connection; the connection was closed",
                request=request,
            )
        return _HttpcoreStream(response, response.status, request, started)

    def close(self) -> None:
        """Close every pool and its connections."""
        for pool in self._pools.close():
            pool.close()

    def abandon(self) -> None:
        """Close every pool's connections without their event loop, which has ended; httpcore2's proxy pools cannot:
        their sockets are left to the garbage collector."""
        for pool in self._pools.close():
            if isinstance(pool, ConnectionPool):
                pool.abandon()


def _direct_backend() -> httpcore2.NetworkBackend:
    """httpcore2's own backend: blocking sockets have no faster path to choose."""
    return _library_backend()


def _library_backend() -> httpcore2.NetworkBackend:
    """httpcore2's own backend for blocking sockets."""
    return httpcore2.SyncBackend()


if TYPE_CHECKING:
    from animalstore_client._transports._generated.seam_sync import Transport

    # The type checkers hold the class to the seam: a method missing or of another type fails them.
    _SEAM: type[Transport] = Httpcore2Transport
