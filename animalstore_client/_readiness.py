"""Whether a pooled connection's server closed it, for all the connections of one pool at once.

Shared by the async and sync deadline backends (``_deadline_async``,
``_deadline_sync``), whose streams register here.
"""

from __future__ import annotations

import select
import sys
import time
from typing import Protocol

__all__ = ["Readiness", "Watched"]


class Watched(Protocol):
    """A connection the pool's poll looks at."""

    probed: bool
    """Whether the last poll saw this connection as it is now (no read or write since)."""

    def fileno(self) -> int:
        """The socket's descriptor; -1 once closed."""
        ...


# How long one poll() answers for the pool's other idle connections. httpcore
# asks each idle connection in turn, in one pass over its pool; a pass takes
# well under this, and a connection that read or wrote since is asked again.
_READINESS_LIFETIME = 0.001


class Readiness:
    """Whether a read would not block, for every connection of one pool, from one ``poll()``.

    httpcore asks every idle connection "is it readable?" (has the server
    closed it?) each time it places a request or takes a connection back,
    while it holds the pool's lock. One ``poll()`` per connection is one
    system call each, and with threads each one hands the GIL to a thread
    that then waits for that lock: at 100 threads that was 70 to 140 calls
    and twice as many thread switches per request. One ``poll()`` over the
    pool answers the whole pass.
    """

    __slots__ = ("_ready", "_streams", "_taken_at")

    def __init__(self) -> None:
        self._streams: dict[Watched, None] = {}
        self._ready: set[Watched] = set()
        self._taken_at = -1.0

    def add(self, stream: Watched) -> None:
        """Watch a new connection."""
        self._streams[stream] = None

    def discard(self, stream: Watched) -> None:
        """Stop watching a connection (closed, or wrapped by TLS)."""
        self._streams.pop(stream, None)

    def readable(self, stream: Watched) -> bool:
        """What httpcore asks of an idle connection: would a read not block (data, or the server's close)?"""
        now = time.monotonic()
        if not stream.probed or now - self._taken_at > _READINESS_LIFETIME:
            self._take(now)
        if stream not in self._ready:
            return False
        # A "yes" is asked again of the socket alone: a stale one would make
        # httpcore close a connection it may already have handed to another
        # thread. A stale "no" only widens, by the answer's lifetime, the race
        # every pool has with a server closing an idle connection.
        return _readable_now(stream.fileno())

    def _take(self, now: float) -> None:
        ready: set[Watched] = set()
        by_fd: dict[int, Watched] = {}
        for stream in tuple(self._streams):  # a copy: another thread may connect meanwhile
            stream.probed = True
            fd = stream.fileno()
            if fd < 0:  # closed: the next read is the end
                ready.add(stream)
            else:
                by_fd[fd] = stream
        if _HAS_POLL:
            poll = select.poll()
            for fd in by_fd:
                poll.register(fd, select.POLLIN)
            ready.update(by_fd[fd] for fd, _ in poll.poll(0))
        elif by_fd:
            readable, _, _ = select.select(list(by_fd), [], [], 0)
            ready.update(by_fd[fd] for fd in readable)
        self._ready = ready
        self._taken_at = now


_HAS_POLL = sys.platform != "win32" and hasattr(select, "poll")


def _readable_now(fd: int) -> bool:
    """Whether one socket has data or its peer's close waiting, asked now."""
    if fd < 0:  # closed: the next read is the end
        return True
    if _HAS_POLL:
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        return bool(poll.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)
