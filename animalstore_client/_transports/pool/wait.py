"""How the SDK's own pool waits and shields: the two things that differ by nature between its async and sync sides.

The pool itself (`_transports.pool.pool_async`, and `_transports.pool._generated.pool_sync` generated from it) is the
same text on both sides; only a queued request's wait and the shield around
closing a connection need an event loop on one side and a thread on the
other, so they are written here by hand, twice, with the names unasync maps
one onto the other (``AsyncWaiter`` -> ``Waiter``, ``AsyncShield`` -> ``Shield``).

anyio is imported inside the async side's methods, so a sync client never
imports it (it costs import time) and the async side works under trio too.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["AsyncShield", "AsyncWaiter", "Shield", "Waiter"]


class _Grant:
    """What a queued request was given: a connection, or (``connection`` None) the right to open one."""

    __slots__ = ("connection", "granted", "key", "withdrawn")

    def __init__(self, key: Any) -> None:
        self.key = key
        """The origin the request is for, as the pool keys it (scheme, host, port)."""
        self.connection: Any = None
        self.granted = False
        """Set, under the pool's lock, by the call that hands this waiter a connection or a slot."""
        self.withdrawn = False
        """Set, under the pool's lock, by the waiter itself when it gives up (timeout, cancellation)."""


class AsyncWaiter(_Grant):
    """A request queued for a connection, in a task of the pool's event loop (asyncio or trio)."""

    __slots__ = ("_event",)

    def __init__(self, key: Any) -> None:
        import anyio

        super().__init__(key)
        self._event = anyio.Event()

    def wake(self) -> None:
        """Called by the releasing task, in the same event loop, once ``granted`` is set."""
        self._event.set()

    async def wait(self, timeout: float | None) -> None:
        """Until woken or ``timeout`` seconds have passed (``None``: no limit); cancellation propagates."""
        import anyio

        with anyio.move_on_after(timeout):
            await self._event.wait()


class Waiter(_Grant):
    """A request queued for a connection, in a thread."""

    __slots__ = ("_event",)

    def __init__(self, key: Any) -> None:
        super().__init__(key)
        self._event = threading.Event()

    def wake(self) -> None:
        """Called by the releasing thread once ``granted`` is set."""
        self._event.set()

    def wait(self, timeout: float | None) -> None:
        """Until woken or ``timeout`` seconds have passed (``None``: no limit)."""
        self._event.wait(timeout)


class AsyncShield:
    """Cancellation held off inside the block: a connection being closed is closed whole, or a slot would leak."""

    __slots__ = ("_scope",)

    def __enter__(self) -> None:
        import anyio

        self._scope = anyio.CancelScope(shield=True)
        self._scope.__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self._scope.__exit__(*exc_info)


class Shield:
    """Nothing to hold off in a thread: the sync side of `AsyncShield`."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: Any) -> None:
        return None
