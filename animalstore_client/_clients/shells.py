"""What a client sends with, besides its settings: its `Pool` of transports and its I/O strategy.

Both differ by nature between the clients, so they are written here by hand, not generated; the send loop
(``_clients.send_loop_async`` and its twin) takes them as they are, and the testing kit hands its own (`Wiring`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from animalstore_client._core.attempts import Answer
from animalstore_client._core.deprecation import (
    GET_PET_SUNSET,
    announces,
    notice_message,
    service_notice,
    warn_at_callers_line,
)
from animalstore_client._core.exceptions import AnimalStoreError
from animalstore_client._core.log import logger
from animalstore_client._core.operations import ROUTES, operation_of

if TYPE_CHECKING:
    from animalstore_client._clients.telemetry import CallObserver, Telemetry
    from animalstore_client._core.attempts import Attempts, Finished
    from animalstore_client._transports._generated.seam_sync import Transport
    from animalstore_client._transports.seam_async import AsyncTransport

__all__ = [
    "ASYNC_IO",
    "SYNC_IO",
    "AsyncIOStrategy",
    "IOStrategy",
    "Pool",
    "Wiring",
    "no_jitter",
    "observe",
    "telemetry_unavailable",
]

T = TypeVar("T")
R = TypeVar("R")

_DEADLINE_GRACE = 0.1
"""Seconds past a call's deadline before `AsyncIOStrategy.within_deadline` cancels code of the caller's."""


class _Process:
    """The current process id, kept up to date across os.fork() without a system call per request."""

    pid = os.getpid()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=lambda: setattr(_Process, "pid", os.getpid()))


def _random_jitter() -> float:
    import random  # needed only once a request fails

    return random.random()


def no_jitter() -> float:
    """The kit's jitter: none, so the delays are the policy's exact values."""
    return 0.0


async def _anyio_sleep(seconds: float) -> None:
    # anyio works under asyncio and trio alike; imported on the first retry only.
    import anyio

    await anyio.sleep(seconds)


class _Strategy(Generic[R]):
    """How a client waits between attempts (``sleep`` returns ``R``) and draws jitter, and the clock its retry
    budget reads."""

    __slots__ = ("clock", "guards", "jitter", "sleep")

    def __init__(
        self,
        sleep: Callable[[float], R],
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = _random_jitter,
        *,
        guards: bool = True,
    ) -> None:
        self.sleep = sleep
        self.clock = clock
        self.jitter = jitter
        self.guards = guards
        """Whether code of the caller's around the transport may run (the kit's in-process transport has none)."""


class IOStrategy(_Strategy[None]):
    """The sync client's: sleeps block the thread."""

    __slots__ = ()

    @staticmethod
    def transport(pool: Pool, name: str) -> Transport:
        """The pool's transport, once it is this process's own: a sync client has one."""
        pool.this_process(name)
        return pool.transport  # type: ignore[no-any-return]

    @staticmethod
    def within_deadline(attempts: Attempts, result: T) -> T:
        """``result``: a thread running code of the caller's cannot be stopped (the transports hold the deadline)."""
        del attempts
        return result


class AsyncIOStrategy(_Strategy[Awaitable[None]]):
    """The async client's: sleeps are awaited (anyio: asyncio and trio alike)."""

    __slots__ = ()

    @staticmethod
    def transport(pool: Pool, name: str) -> AsyncTransport:
        """The transport of the running event loop: one per loop, as connections belong to the loop that opened
        them."""
        pool.this_process(name)
        loop = _event_loop()
        current = pool.current
        if current is not None and current[0]() is loop:
            return current[1]  # type: ignore[no-any-return]
        return pool.for_loop(loop, name)  # type: ignore[no-any-return]

    @staticmethod
    async def within_deadline(attempts: Attempts, attempt: Awaitable[T]) -> T:
        """``attempt`` awaited within the call's deadline, cancelled at it (an `httpx.ReadTimeout` then).

        The transports hold each socket operation to the deadline; code of the caller's that awaits
        between them (a middleware, an event hook or a session middleware of ``http_client``) is held
        to it here. A short grace lets a transport's own timeout, which says more, end it first.
        """
        import anyio  # as for sleeping: under asyncio and trio alike, loaded by the first call that needs it

        left = attempts.time_left()
        assert left is not None  # only a call with a deadline is guarded
        with anyio.move_on_after(left + _DEADLINE_GRACE):
            return await attempt
        raise httpx.ReadTimeout(
            "the call's total_timeout passed while code of yours (a middleware, or a hook of http_client) ran",
            request=attempts.request,
        )


SYNC_IO = IOStrategy(time.sleep)
"""The sync clients' strategy: real sleeps, random jitter (tests/conftest.py records the sleeps instead)."""
ASYNC_IO = AsyncIOStrategy(_anyio_sleep)
"""The async clients' strategy."""


@dataclass(frozen=True)
class Wiring:
    """What the testing kit gives a client in place of the network: the client's one hook for it.

    ``new_transport`` makes the in-process transport (again after a fork or
    in a new event loop), or is ``None`` for a client that keeps its own
    pool over a real socket; ``sleep`` takes the backoff delays instead of
    sleeping (a coroutine function for the async client); ``clock`` is the
    time the retry budget counts in; ``on_close`` runs once the client that
    owns the pool is closed (the kit stops a server it started for it).
    """

    new_transport: Callable[[], Any] | None
    sleep: Callable[[float], Any]
    clock: Callable[[], float] = field(default=time.monotonic)
    on_close: Callable[[], None] | None = None

    @property
    def in_memory(self) -> bool:
        """Whether the client talks to the store in this process, with no socket."""
        return self.new_transport is not None


class Pool:
    """The transports behind one client and everything `with_options` derives from it.

    An async client's connections belong to one event loop, so it has a
    transport per loop (asyncio's, or a trio run) in ``loops``, keyed by the
    loop's ``id`` with a weak reference to tell a reused ``id``; ``current``
    is the last one used, checked first. ``remake`` makes another transport
    like the first: in a forked child, and for a new event loop.
    """

    def __init__(self, transport: Any, *, owned: bool, remake: Callable[[], Any]) -> None:
        self.transport = transport
        self.owned = owned
        self.remake = remake
        self.lock = threading.Lock()
        self.notices: set[str] = set()
        """The operations whose deprecation the service announced and the client warned of (once each)."""
        self.current: tuple[weakref.ref[Any], Any] | None = None
        self.loops: dict[int, tuple[weakref.ref[Any], Any]] = {}
        self.pid = _Process.pid
        """The process the transport's connections belong to."""

    def this_process(self, name: str) -> None:
        """After a fork, give this process a pool of its own: the parent's sockets would mix up both sides'
        answers. ``name`` is the client's class, for the error when the transport is the caller's."""
        if self.pid == _Process.pid:
            return
        if not self.owned:
            raise AnimalStoreError(
                f"This {name} was created in another process (before a fork), and its "
                "http_client belongs to you, so it cannot be replaced: create the client (and its http "
                "client) after the fork, in the process that uses it."
            )
        logger.debug("Running in a new process: starting a new connection pool")
        # The parent's pool is left alone, not closed: closing it here could
        # disturb connections the parent still uses.
        self.transport = self.remake()
        self.pid = _Process.pid
        self.lock = threading.Lock()  # a parent thread may have held it at the fork
        self.current = None
        self.loops = {}

    def for_loop(self, loop: Any, name: str) -> Any:
        """The transport for ``loop``, made on its first call; those of loops that have ended are closed.

        Several loops may use one client at once (one per thread) or one after
        another (``asyncio.run`` twice, asyncio then trio): each keeps its own
        connections, within the client's limits. A loop that has ended cannot
        close its connections itself, so they are closed here, without it.
        """
        if loop is None:  # neither asyncio nor trio: nothing to tell loops apart by
            return self.transport
        ended: list[Any] = []
        with self.lock:
            entry = self.loops.get(id(loop))
            if entry is not None and entry[0]() is not loop:
                entry = None  # the id of a loop gone, now another's
            for key, (ref, transport) in list(self.loops.items()):
                other = ref()
                if other is not loop and (other is None or _loop_gone(other)):
                    del self.loops[key]
                    ended.append(transport)
            if entry is None:
                if self.current is None:
                    transport = self.transport  # the first loop takes the transport made with the client
                elif not self.owned:
                    raise AnimalStoreError(
                        f"This {name} was first used in another event loop, and its "
                        "http_client belongs to you, so it cannot be replaced: create the client "
                        "(and its http_client) inside the event loop that uses it."
                    )
                else:
                    logger.debug("A new event loop: starting a connection pool for it")
                    transport = self.remake()
                entry = self.loops[id(loop)] = (weakref.ref(loop), transport)
            self.current = entry
            self.transport = entry[1]
        for transport in ended:
            _abandon(transport)
        return entry[1]

    def close_sync(self, name: str) -> None:
        """Close the transport: a sync client has one."""
        self.this_process(name)
        self.transport.close()

    async def close_async(self, name: str) -> None:
        """Close every transport: this loop's here; a loop that ended has its connections closed without it,
        and another live asyncio loop is asked to close its own when it next runs."""
        self.this_process(name)  # the parent's connections are not this process's to close
        here = _event_loop()
        with self.lock:
            entries = list(self.loops.values())
            self.loops.clear()
            self.current = None
            unused = self.transport  # the transport made with the client, if no loop ever took it
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

    def heed(self, operation: str, request: httpx.Request, response: Finished) -> None:
        """Warn, once per client and operation, at the caller's line, of a deprecation the answer announces.

        The service's ``Deprecation`` and ``Sunset`` headers (RFC 9745, RFC 8594) may announce a removal
        this SDK was released before. ``get_pet`` warns at every call already: a notice that says no more
        than its warning (the same date, no link) is not shown again.
        """
        raw = response.raw_headers() if isinstance(response, Answer) else response.headers.raw
        if not announces(raw):
            return  # the names alone, on every answer
        warned = operation == "get_pet"  # its own warning was given at this call
        if operation == "request":  # a route the SDK knows is named as its operation: one warning for every pet id
            operation = operation_of(request.method, request.url.path) or operation
        route = ROUTES.get(operation, request.url.path)
        key = f"{request.method} {route}"
        with self.lock:
            if key in self.notices:
                return  # shown once already: nothing more is parsed
        notice = service_notice(raw)  # capped and linear (`_core.deprecation`)
        if notice is None:
            return
        if warned and notice.sunset in (None, GET_PET_SUNSET) and not notice.links:
            return  # this call warned of it already
        with self.lock:
            if key in self.notices:
                return
            self.notices.add(key)
        message = notice_message(operation, request.method, route, notice)
        try:
            warn_at_callers_line(message)
        except Exception:  # noqa: BLE001  # a filter making warnings errors: the call's result (a stored pet) is kept
            logger.warning("%s (a warnings filter made it an error: logged, so the call's result is kept)", message)


def _event_loop() -> Any:
    """What the calling task runs in: the running asyncio loop, or trio's token for the run; ``None`` if neither."""
    # Neither is imported here: a running loop, or a trio run, has imported its library already.
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            return asyncio.get_running_loop()
        except RuntimeError:
            pass
    trio = sys.modules.get("trio")
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
        loop.run_sync_soon(lambda: None)  # trio: refused once the run has finished
    except Exception:  # noqa: BLE001  # trio.RunFinishedError, without importing trio
        return True
    return False


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
    from animalstore_client._transports.sockets import opening_sync  # here: only a pool's import loads the hooks

    try:
        # A fork waits for it: a child forked half-way would find the sockets closed and the transports over them
        # still held, which nothing then lets go of (each warns of an unclosed transport when collected).
        with opening_sync():
            abandon()
    except Exception as exc:  # noqa: BLE001  # closing what is dead anyway must not fail a call
        logger.debug("Closing the connections of an ended event loop failed: %s: %s", type(exc).__name__, exc)


def observe(telemetry: Telemetry | None, operation: str, request: httpx.Request) -> CallObserver | None:
    """The telemetry of one call (``telemetry``, else the global providers'), or ``None`` when nothing is recorded."""
    if telemetry is None:
        modules = sys.modules
        if "opentelemetry.trace" not in modules and "opentelemetry.metrics" not in modules:
            return None  # the application never imported OpenTelemetry: no provider can be set
        try:
            from animalstore_client._clients.telemetry import GLOBAL
        except Exception as exc:  # noqa: BLE001  # telemetry never changes a call's outcome
            # Importing OpenTelemetry's propagators raises when OTEL_PROPAGATORS names a missing one.
            telemetry_unavailable(exc)
            return None
        telemetry = GLOBAL
    return telemetry.call(operation, request)


_UNAVAILABLE: list[str] = []


def telemetry_unavailable(exc: Exception) -> None:
    """Say once per process, at WARNING, that the global telemetry could not be set up; calls go on without it."""
    if not _UNAVAILABLE:
        _UNAVAILABLE.append(type(exc).__name__)
        logger.warning("OpenTelemetry could not be set up, so calls are not traced: %s: %s", type(exc).__name__, exc)
