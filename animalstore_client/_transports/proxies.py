"""The environment's proxy for a URL, read once per origin; one connection pool per proxy (the httpx backends').

A client derived with another base URL (``with_options``) so goes through the proxy meant for it, or none.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

import httpx

from animalstore_client._core.exceptions import AnimalStoreError
from animalstore_client._transports.shared import CLOSED_MID_CALL

__all__ = ["PoolsByProxy", "environment_proxy", "proxy_for"]

P = TypeVar("P")
Origins = dict[tuple[bytes, bytes, int | None], str | None]  # each origin's proxy, as text; ``None``: direct


class PoolsByProxy(Generic[P]):
    """The pools of one SDK transport by proxy URL (``None``: direct), made by ``new_pool`` on first use; its tables
    are shared by every thread or task using the client, under one lock."""

    __slots__ = ("_closed", "_lock", "_new_pool", "_pools", "_proxies")

    def __init__(self, new_pool: Callable[[str | None], P]) -> None:
        self._new_pool = new_pool
        self._lock = threading.Lock()
        self._pools: dict[str | None, P] = {}
        self._proxies: Origins = {}
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether `close` was called.

        Read without the lock: a forked child asks this of its parent's pools, and a parent thread may have held
        the lock at the fork, for ever in the child (tests/test_fork.py caught a hang). The flag only goes to True.
        """
        return self._closed

    def for_url(self, url: httpx.URL) -> P:
        """The pool for the proxy ``url`` goes through; none is made once the transport is closed."""
        with self._lock:
            if self._closed:  # closed by another thread or task since this call began
                raise AnimalStoreError(CLOSED_MID_CALL)
            proxy = proxy_for(url, self._proxies)
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

    Read with the standard library, the same for every backend; a proxy that is not a URL (httpx would refuse
    it) is ignored.
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


def proxy_for(url: httpx.URL, known: Origins) -> str | None:
    """The proxy ``url`` goes through, as text (``None``: direct): `environment_proxy`, read once per origin."""
    origin = (url.raw_scheme, url.raw_host, url.port)
    if origin not in known:
        found = environment_proxy(url)
        known[origin] = None if found is None else str(found)
    return known[origin]
