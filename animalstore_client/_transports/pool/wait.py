"""How the SDK's own pool waits, shields and looks up names: what differs by nature between its async and sync sides.

Written here by hand, twice, under the names ``scripts/unasync.py`` maps one onto the other (``AsyncWaiter`` ->
``Waiter``...). anyio is imported inside the async side's methods, so a sync client never imports it (it costs
import time) and the async side works under trio too.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from animalstore_client._transports.shared import is_literal, looked_up

__all__ = ["AsyncShield", "AsyncWaiter", "Shield", "Waiter", "connect_tcp_async", "connect_tcp_sync"]


async def connect_tcp_async(
    backend: Any,
    host: str,
    port: int,
    timeout: float | None,
    local_address: str | None,
    socket_options: Any,
    errors: tuple[type[Exception], type[Exception]],
) -> Any:
    """``backend.connect_tcp``: an event loop's name lookup is already held to the call (anyio's, the SDK's)."""
    del errors  # what the sync side raises for a lookup of its own
    return await backend.connect_tcp(host, port, timeout, local_address, socket_options)


def connect_tcp_sync(
    backend: Any,
    host: str,
    port: int,
    timeout: float | None,
    local_address: str | None,
    socket_options: Any,
    errors: tuple[type[Exception], type[Exception]],
) -> Any:
    """``backend.connect_tcp`` with the name looked up within ``timeout`` (``errors``: connect timeout, error),
    then each address tried in turn with what is left of it, as ``socket.create_connection`` does."""
    if timeout is None or is_literal(host):
        return backend.connect_tcp(host, port, timeout, local_address, socket_options)
    timed_out, failed = errors
    ends = time.monotonic() + timeout
    try:
        addresses = looked_up(host, port, timeout)
    except TimeoutError as exc:
        raise timed_out(str(exc)) from None
    except OSError as exc:  # a name that does not resolve: the socket.gaierror stays the cause, as httpcore keeps it
        raise failed(str(exc)) from exc
    last: Exception | None = None
    for address in addresses:
        try:
            return backend.connect_tcp(address, port, max(ends - time.monotonic(), 0.0), local_address, socket_options)
        except timed_out:
            raise
        except failed as exc:
            last = exc
    assert last is not None  # getaddrinfo gives one address at least, or raises
    raise last


class _Grant:
    """What a queued request was given: a connection, or (``connection`` None) the right to open one."""

    __slots__ = ("_event", "connection", "granted", "key", "withdrawn")

    def __init__(self, key: Any, event: Any) -> None:
        self._event = event  # anyio's or threading's
        self.key = key  # the origin the request is for, as the pool keys it
        self.connection: Any = None
        # Each set under the pool's lock: by the call that hands this waiter a connection or a slot; by the
        # waiter itself when it gives up (timeout, cancellation).
        self.granted = self.withdrawn = False

    def wake(self) -> None:
        """Called by the releasing task (in the same event loop) or thread once ``granted`` is set."""
        self._event.set()


class AsyncWaiter(_Grant):
    """A request queued for a connection, in a task of the pool's event loop (asyncio or trio)."""

    __slots__ = ()

    def __init__(self, key: Any) -> None:
        import anyio

        super().__init__(key, anyio.Event())

    async def wait(self, timeout: float | None) -> None:
        """Until woken or ``timeout`` seconds have passed (``None``: no limit); cancellation propagates."""
        import anyio

        with anyio.move_on_after(timeout):
            await self._event.wait()


class Waiter(_Grant):
    """A request queued for a connection, in a thread."""

    __slots__ = ()

    def __init__(self, key: Any) -> None:
        super().__init__(key, threading.Event())

    def wait(self, timeout: float | None) -> None:
        """Until woken or ``timeout`` seconds have passed (``None``: no limit)."""
        self._event.wait(timeout)


def AsyncShield() -> Any:  # named as `Shield` is, which unasync maps it to
    """Cancellation held off inside the block: a connection being closed is closed whole, or a slot would leak."""
    import anyio

    return anyio.CancelScope(shield=True)


Shield = contextlib.nullcontext
"""Nothing to hold off in a thread: the sync side of `AsyncShield`."""
