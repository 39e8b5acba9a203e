"""One connection pool per proxy, chosen for each request URL: the SDK's own pools on httpx and httpx2.

The proxy a URL goes through is read from the environment
(`environment_proxy`) once per origin; a client derived with
another base URL (``with_options``) then goes through the proxy meant for it,
or none. The tables are shared by every thread or task using the client, so
they are read and written under one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

import httpx

from animalstore_client._core.exceptions import AnimalStoreError

__all__ = ["PoolsByProxy"]

P = TypeVar("P")


class PoolsByProxy(Generic[P]):
    """The pools of one SDK transport, keyed by proxy URL (``None``: direct), made by ``new_pool`` on first use."""

    __slots__ = ("_closed", "_lock", "_new_pool", "_pools", "_proxies")

    def __init__(self, new_pool: Callable[[str | None], P]) -> None:
        self._new_pool = new_pool
        self._lock = threading.Lock()
        self._pools: dict[str | None, P] = {}
        self._proxies: dict[tuple[str, str, int | None], str | None] = {}
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether `close` was called.

        Read without the lock, on purpose: a forked child asks this of its
        parent's pools before replacing them, and the lock may have been held
        by a parent thread at the fork, for ever in the child
        (tests/test_fork.py caught a child hung here). One attribute read is
        atomic, and the flag only ever goes from False to True.
        """
        return self._closed

    def for_url(self, url: httpx.URL) -> P:
        """The pool for the proxy ``url`` goes through; none is made once the transport is closed."""
        key = (url.scheme, url.host, url.port)
        with self._lock:
            if self._closed:  # closed by another thread or task since this call began
                raise AnimalStoreError("This client was closed while the call was under way; create a new client.")
            if key in self._proxies:
                proxy = self._proxies[key]
            else:
                found = environment_proxy(url)
                proxy = self._proxies[key] = None if found is None else str(found)
            pool = self._pools.get(proxy)
            if pool is None:
                pool = self._pools[proxy] = self._new_pool(proxy)
            return pool

    def close(self) -> list[P]:
        """Mark closed and hand back every pool made, for the caller to close."""
        with self._lock:
            self._closed = True
            pools = list(self._pools.values())
            self._pools.clear()
            self._proxies.clear()
        return pools


def environment_proxy(url: httpx.URL) -> httpx.URL | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``...), unless ``NO_PROXY`` exempts it.

    Read with the standard library (`urllib.request.getproxies` and
    `urllib.request.proxy_bypass`), the same for every backend. A proxy
    variable that is not a URL is ignored, as httpx would refuse it.
    """
    import urllib.request

    proxies = urllib.request.getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy:
        return None
    host = url.host if url.port is None else f"{url.host}:{url.port}"
    try:
        if urllib.request.proxy_bypass(host):
            return None
        found = httpx.URL(proxy if "://" in proxy else f"http://{proxy}")
    except (httpx.InvalidURL, ValueError, OSError):
        return None
    return found if found.scheme in ("http", "https", "socks5", "socks5h") and found.host else None
