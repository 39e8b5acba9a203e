"""The two halves of the clients that differ by nature: `IOSync` and `IOAsync`.

How to sleep, how to hold code of the caller's to the deadline, and which
transport to send through: a sync client has one; an async client has one per
event loop (asyncio's, or a trio run), made on a loop's first call, and those
of loops that have ended are closed without them. Configuration, shared by
both, is `BaseClient`'s (``_clients.base``); the send loop
(``_clients.send_loop_async`` and its generated twin) builds on these.
"""

from __future__ import annotations

import sys
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from animalstore_client._clients.base import PROCESS, BaseClient, Pool
from animalstore_client._core.exceptions import AnimalStoreError
from animalstore_client._core.log import logger
from animalstore_client._transports._generated.seam_sync import Transport
from animalstore_client._transports.seam_async import AsyncTransport

if TYPE_CHECKING:
    from animalstore_client._core.attempts import Attempts

__all__ = ["IOAsync", "IOSync"]

T = TypeVar("T")

_DEADLINE_GRACE = 0.1
"""Seconds past a call's deadline before code of the caller's awaiting in an async attempt is cancelled: a
transport's own timeout, which says which phase ran out, ends the attempt first where it can."""


def _get_running_loop() -> Any:
    # Imported on first use: sync-only users should not pay for asyncio.
    global _get_running_loop  # noqa: PLW0603 (replaces itself with the real function)
    import asyncio

    _get_running_loop = asyncio.get_running_loop
    return asyncio.get_running_loop()


def _event_loop() -> Any:
    """What the calling task runs in: the running asyncio loop, or trio's token for the run; ``None`` if neither."""
    try:
        return _get_running_loop()
    except RuntimeError:
        pass
    trio = sys.modules.get("trio")  # never imported here: a trio run has imported it already
    if trio is not None:
        try:
            return trio.lowlevel.current_trio_token()
        except RuntimeError:
            pass
    return None


def _loop_gone(loop: Any) -> bool:
    """Whether ``loop`` (an asyncio loop or a trio token) has ended for good: its connections can serve no one."""
    is_closed = getattr(loop, "is_closed", None)
    if is_closed is not None:
        return bool(is_closed())
    try:
        loop.run_sync_soon(_nothing)  # trio: refused once the run has finished
    except Exception:  # noqa: BLE001  # trio.RunFinishedError, without importing trio
        return True
    return False


def _nothing() -> None:
    """Scheduled on a trio run to ask whether it still runs."""


class IOSync(BaseClient):
    """How the sync client sleeps and finds its pool."""

    # Injectable so tests run retries without waiting.
    _sleep: Callable[[float], None] = staticmethod(time.sleep)

    def _transport(self) -> Transport:
        """The pool to send through, once it is known to be open and this process's own."""
        self._check_open()
        pool = self._pool
        if pool.pid != PROCESS.pid:
            self._after_fork(pool)
        return pool.transport  # type: ignore[no-any-return]

    def _close_transports_sync(self) -> None:
        """Close the transport: a sync client has one."""
        self._transport().close()

    @staticmethod
    def _within_deadline(attempts: Attempts, result: T) -> T:
        """``result``: a thread running code of the caller's cannot be stopped (the transports hold the deadline)."""
        del attempts
        return result


class IOAsync(BaseClient):
    """How the async client sleeps and finds its pool: one pool per event loop."""

    _is_async = True

    @staticmethod
    async def _sleep(seconds: float) -> None:
        # anyio works under asyncio and trio alike; imported on the first
        # retry only, to keep `import animalstore_client` light.
        import anyio

        await anyio.sleep(seconds)

    @staticmethod
    async def _within_deadline(attempts: Attempts, attempt: Awaitable[T]) -> T:
        """``attempt`` awaited within the call's deadline, cancelled at it (an `httpx.ReadTimeout` then).

        The transports hold each socket operation to the deadline; code of the caller's that awaits
        between them (a middleware, an event hook or a session middleware of ``http_client``) is held
        to it here. A short grace lets a transport's own timeout, which says more, end it first.
        """
        import anyio  # as for _sleep: under asyncio and trio alike, loaded by the first call that needs it

        left = attempts.time_left()
        assert left is not None  # only a call with a deadline is guarded
        with anyio.move_on_after(left + _DEADLINE_GRACE):
            return await attempt
        raise httpx.ReadTimeout(
            "the call's total_timeout passed while code of yours (a middleware, or a hook of http_client) ran",
            request=attempts.request,
        )

    def _transport(self) -> AsyncTransport:
        """The transport of the running event loop: one per loop, as connections belong to the loop that opened them."""
        self._check_open()
        pool = self._pool
        if pool.pid != PROCESS.pid:
            self._after_fork(pool)
        loop = _event_loop()
        current = pool.current
        if current is not None and current[0]() is loop:
            return current[1]  # type: ignore[no-any-return]
        return self._transport_of(pool, loop)  # type: ignore[no-any-return]

    def _transport_of(self, pool: Pool, loop: Any) -> Any:
        """The transport for ``loop``, made on its first call; those of loops that have ended are closed.

        Several loops may use one client at once (one per thread) or one after
        another (``asyncio.run`` twice, asyncio then trio): each keeps its own
        connections, within the client's limits. A loop that has ended cannot
        close its connections itself, so they are closed here, without it.
        """
        if loop is None:  # neither asyncio nor trio: nothing to tell loops apart by
            return pool.transport
        ended: list[Any] = []
        with pool.lock:
            entry = pool.loops.get(id(loop))
            if entry is not None and entry[0]() is not loop:
                entry = None  # the id of a loop gone, now another's
            for key, (ref, transport) in list(pool.loops.items()):
                other = ref()
                if other is not loop and (other is None or _loop_gone(other)):
                    del pool.loops[key]
                    ended.append(transport)
            if entry is None:
                if pool.current is None:
                    transport = pool.transport  # the first loop takes the transport made with the client
                elif not pool.owned:
                    raise AnimalStoreError(
                        f"This {type(self).__name__} was first used in another event loop, and its "
                        "http_client belongs to you, so it cannot be replaced: create the client "
                        "(and its http_client) inside the event loop that uses it."
                    )
                else:
                    logger.debug("A new event loop: starting a connection pool for it")
                    transport = self._new_transport()
                entry = pool.loops[id(loop)] = (weakref.ref(loop), transport)
            pool.current = entry
            pool.transport = entry[1]
        for transport in ended:
            _abandon(transport)
        return entry[1]

    async def _close_transports_async(self) -> None:
        """Close every transport: this loop's here; a loop that ended has its connections closed without it,
        and another live asyncio loop is asked to close its own when it next runs."""
        pool = self._pool
        if pool.pid != PROCESS.pid:
            self._after_fork(pool)  # the parent's connections are not this process's to close
        here = _event_loop()
        with pool.lock:
            entries = list(pool.loops.values())
            pool.loops.clear()
            pool.current = None
            unused = pool.transport  # the transport made with the client, if no loop ever took it
        own = None
        others: list[tuple[Any, Any]] = []
        for ref, transport in entries:
            loop = ref()
            if here is not None and loop is here:
                own = transport
            else:
                others.append((loop, transport))
        if own is None and all(unused is not transport for _, transport in others):
            own = unused
        if own is not None:
            await own.aclose()
        for loop, transport in others:
            if loop is None or _loop_gone(loop):
                _abandon(transport)
            elif callable(getattr(loop, "call_soon_threadsafe", None)):
                try:
                    # Made there, when that loop next runs: its sockets are its own to close.
                    loop.call_soon_threadsafe(_close_in, loop, transport)
                except RuntimeError:  # it closed since it was asked whether it had
                    _abandon(transport)
            # A trio run still going keeps its connections until it ends: trio has no way to be asked from here.


def _close_in(loop: Any, transport: Any) -> None:
    """Called in ``loop``: close ``transport`` there (a task of the loop's own)."""
    _CLOSING.add(task := loop.create_task(transport.aclose()))
    task.add_done_callback(_CLOSING.discard)


_CLOSING: set[Any] = set()
"""Closings under way in other loops (a task nothing refers to may be collected before it runs)."""


def _abandon(transport: Any) -> None:
    """Close ``transport``'s connections without their event loop, which has ended (if the transport can)."""
    abandon = getattr(transport, "abandon", None)
    if abandon is None:
        return  # a library's own session: its sockets are left to the garbage collector
    try:
        abandon()
    except Exception as exc:  # noqa: BLE001  # closing what is dead anyway must not fail a call
        logger.debug("Closing the connections of an ended event loop failed: %s: %s", type(exc).__name__, exc)
