"""Name lookups for the SDK's asyncio network backend: on threads of its own, never the loop's default pool.

No HTTP library here: the default and httpx2 backends' network layers (``asyncio_network`` and its httpcore2
twin) share it.
"""

from __future__ import annotations

import itertools
import socket
from typing import Any

from animalstore_client._transports.lookups import LOOKUPS

__all__ = ["interleaved", "resolve"]


_LOOPBACK = ("localhost", "localhost.")


async def resolve(host: str, port: int) -> list[Any]:
    """``getaddrinfo``'s answers for ``host``, with no thread where no lookup is needed.

    An IP literal is read as it is, and ``localhost`` is the loopback
    addresses (RFC 6761: never looked up); any other name is looked up on the
    SDK's lookup threads (`_transports.lookups.LOOKUPS`), never the loop's default thread pool.
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
    return await LOOKUPS.start(host, port).wait_async()


def interleaved(infos: list[Any]) -> list[Any]:
    """``getaddrinfo``'s answers with the address families alternating, the first family first (RFC 8305)."""
    families: dict[int, list[Any]] = {}
    for info in infos:
        families.setdefault(info[0], []).append(info)
    return [info for row in itertools.zip_longest(*families.values()) for info in row if info is not None]
