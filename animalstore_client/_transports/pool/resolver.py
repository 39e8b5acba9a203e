"""Name lookups for the SDK's asyncio network backend: on threads of its own, never the loop's default pool.

`resolve` reads an IP literal as it is and ``localhost`` as the loopback
addresses (RFC 6761) with no thread; any other name is looked up on a small
pool of the SDK's (`_RESOLVER_THREADS`), made on first use and again in a
forked child (the parent's threads are not there). `interleaved` orders the
answers for Happy Eyeballs (RFC 8305). No HTTP library here: the default and
httpx2 backends' network layers (``asyncio_network`` and its httpcore2 twin)
share it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["interleaved", "resolve"]


_LOOPBACK = ("localhost", "localhost.")


async def resolve(loop: asyncio.AbstractEventLoop, host: str, port: int) -> list[Any]:
    """``getaddrinfo``'s answers for ``host``, with no thread where no lookup is needed.

    An IP literal is read as it is, and ``localhost`` is the loopback
    addresses (RFC 6761: never looked up); any other name is looked up on the
    SDK's resolver threads (`_resolver`), never the loop's default thread pool.
    """
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError):
        pass  # not an IP literal
    if host.lower() in _LOOPBACK:
        loopback: list[Any] = [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("127.0.0.1", port))]
        if socket.has_ipv6:
            loopback.append((socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("::1", port, 0, 0)))
        return loopback
    return await loop.run_in_executor(_resolver(), _lookup, host, port)


def _lookup(host: str, port: int) -> list[Any]:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


_RESOLVER_THREADS = 8
"""Names looked up at once; more wait their turn (each new connection to a host by name needs one)."""
_resolver_pool: ThreadPoolExecutor | None = None
_resolver_lock = threading.Lock()


def _resolver() -> ThreadPoolExecutor:
    """The SDK's thread pool for name lookups, made on first use, and again in a forked child."""
    global _resolver_pool  # noqa: PLW0603  # one per process, replaced after a fork
    with _resolver_lock:
        if _resolver_pool is None:
            _resolver_pool = ThreadPoolExecutor(_RESOLVER_THREADS, thread_name_prefix="animalstore-resolver")
        return _resolver_pool


def _forget_resolver() -> None:  # registered at fork below
    """In a forked child: the parent's resolver threads are not here, though its pool counts them as idle."""
    global _resolver_pool, _resolver_lock  # noqa: PLW0603  # a child starts with pools and locks of its own
    _resolver_pool = None
    _resolver_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_resolver)


def interleaved(infos: list[Any]) -> list[Any]:
    """``getaddrinfo``'s answers with the address families alternating, the first family first (RFC 8305)."""
    families: dict[int, list[Any]] = {}
    for info in infos:
        families.setdefault(info[0], []).append(info)
    queues = list(families.values())
    ordered: list[Any] = []
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered
