"""The sockets of the SDK's own pools, known so that they can be closed where their owner cannot close them:
in a forked child, and once their event loop has ended. docs/architecture.md, "Sockets closed where their owner
cannot close them", says how and why each step is so.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import weakref
from collections.abc import Callable, Generator, Iterable
from typing import Any

__all__ = ["Sockets", "check_transport_table", "close_copy", "opening_async", "opening_sync", "release_transports"]

FORK_WAIT = 5.0  # seconds a fork waits at most for other threads' connections being opened or let go (`opening_sync`)

_opening = threading.Condition()
_openers: dict[int, int] = {}  # per thread ident, the connections it is opening, not yet in their `Sockets`


@contextlib.contextmanager
def opening_sync() -> Generator[None]:
    """Around a sync pool's opening of a connection, until its socket is added to the pool's `Sockets`; and around
    letting go of an ended event loop's connections (`_clients.shells._abandon`), sockets then transports.

    Till then only this thread knows the state: a fork waits (`_wait_for_openings`), or the child's copy of a
    socket would escape `_after_fork_in_child`, or its transports stay held over sockets closed already; a fork
    under way holds the condition, so none of these starts during it either.
    """
    me = threading.get_ident()
    with _opening:
        _openers[me] = _openers.get(me, 0) + 1
    try:
        yield
    finally:
        with _opening:
            _openers[me] -= 1
            if not _openers[me]:
                del _openers[me]
                _opening.notify_all()


opening_async = contextlib.nullcontext
"""Nothing: the async twin of `opening_sync` (a fork cannot wait for a loop; the asyncio backend knows its sockets)."""


def _wait_for_openings() -> None:
    """Before a fork: hold the condition once no other thread is opening a connection (or `FORK_WAIT` has passed).

    Not the forking thread's own (a fork from a signal handler that interrupted one would wait for itself).
    """
    _opening.acquire()
    me = threading.get_ident()
    _opening.wait_for(lambda: all(thread == me for thread in _openers), FORK_WAIT)


def _after_fork_in_parent() -> None:
    _opening.release()


def check_transport_table() -> None:
    """Fail loudly, naming it, if asyncio's selector loops no longer keep their transports by descriptor, or their
    transports no longer let go of their socket through ``_call_connection_lost`` (`release_transports` and the
    pool's `_Connection.abandon` use both). Checked at import, without making a loop."""
    from asyncio import selector_events

    transport_class = getattr(selector_events, "_SelectorTransport", None)
    if "_transports" not in selector_events.BaseSelectorEventLoop.__init__.__code__.co_names or not callable(
        getattr(transport_class, "_call_connection_lost", None)
    ):
        from animalstore_client._core.exceptions import AnimalStoreError

        raise AnimalStoreError(
            "asyncio's selector event loop no longer keeps its transports in _transports, or its transports no "
            "longer have _call_connection_lost, which the SDK uses to let go of a connection whose socket it "
            "closed without the loop (an ended loop, a forked child): use a Python release this SDK was tested "
            "with, or a newer animalstore-client"
        )


def close_copy(sock: socket.socket) -> int | None:
    """Close this process's descriptor of ``sock``, and nothing more; the number closed, or ``None`` if none was open.

    Detached first, so that nothing closes the number once it is another socket's; no ``shutdown()``, which
    would end the connection for a forked parent too."""
    try:
        descriptor = sock.detach()
    except OSError:
        return None
    if descriptor < 0:
        return None  # closed already
    with contextlib.suppress(OSError):
        os.close(descriptor)
    return descriptor


def release_transports(loop: Any, descriptors: Iterable[int]) -> None:
    """asyncio's transports over ``descriptors``, closed already (`close_copy`), let go of them on ``loop``.

    An open loop aborts each; a closed one cannot run the callback that follows, so asyncio's private
    `_call_connection_lost` is called here, or the transport would warn of an unclosed socket when collected.
    A loop without `_transports` (uvloop) is skipped. docs/architecture.md says why each step is so.
    """
    transports = getattr(loop, "_transports", None)
    if transports is None:
        return
    for descriptor in descriptors:
        transport = transports.get(descriptor)
        if transport is None:
            continue
        if not loop.is_closed():
            try:
                transport.abort()
            except Exception:  # noqa: BLE001  # stopped half-way (a write buffered on the closed socket)
                pass
            else:
                continue
        release = getattr(transport, "_call_connection_lost", None)
        if release is not None:
            with contextlib.suppress(Exception):  # a protocol's callback on a closed loop: the socket is let go first
                release(None)


class Sockets:
    """The sockets one pool of the SDK's opened, held weakly (a socket its library dropped goes with it).

    ``after_fork``, held weakly too, runs in a forked child once they are closed there, with the descriptors
    closed: a pool whose library holds more than sockets (aiohttp's session) lets go of the rest then.
    """

    __slots__ = ("__weakref__", "_after_fork", "_lock", "_sockets")

    def __init__(self, after_fork: Callable[[list[int]], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._after_fork: weakref.WeakMethod[Callable[[list[int]], None]] | None = (
            None if after_fork is None else weakref.WeakMethod(after_fork)
        )
        _ALL.add(self)

    def add(self, sock: object) -> None:
        """Know ``sock`` from now on, if it is a Python socket (a library's own socket type is left to it)."""
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets.add(sock)

    def close(self) -> list[int]:
        """Close this process's descriptor of each socket known and still open (`close_copy`); the numbers closed."""
        with self._lock:
            sockets = list(self._sockets)
            self._sockets.clear()
        return [descriptor for descriptor in map(close_copy, sockets) if descriptor is not None]

    def forked(self) -> None:
        """In a forked child: a lock of its own (a parent thread may have held this one), then close every copy."""
        self._lock = threading.Lock()
        closed = self.close()
        after_fork = None if self._after_fork is None else self._after_fork()
        if after_fork is not None:
            after_fork(closed)


_ALL: weakref.WeakSet[Sockets] = weakref.WeakSet()  # every pool's, for a forked child to close its copies


def _after_fork_in_child() -> None:
    """Close the child's copy of every socket of the SDK's pools, before any code of the child's runs: left open,
    one would keep the connection open after the parent closes it."""
    global _opening, _openers  # noqa: PLW0603  # the child's own: the parent's is held by the forking thread
    me = threading.get_ident()
    _opening = threading.Condition()
    _openers = {thread: count for thread, count in _openers.items() if thread == me}
    for sockets in list(_ALL):
        with contextlib.suppress(Exception):  # one pool's failure must not leave the others' copies open
            sockets.forked()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(
        before=_wait_for_openings, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
    )
