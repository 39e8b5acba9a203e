# Generated from _transports/pool/pool_async.py by scripts/unasync.py: do not edit; regenerate with `python scripts/unasync.py`.
"""The SDK's own connection pool for the default backend: constant-time, over httpcore's public connection class.

httpcore's ``ConnectionPool`` scans every queued request and idle connection on each arrival and return:
at 100 calls in flight most of the CPU and a 1.5 s tail (docs/performance.md). How this one keeps each call
constant-time is docs/architecture.md's "The default backend's pool". The connections are httpcore's public
``HTTPConnection`` (HTTP/1.1), over the network backend given; each
connection opens itself, TCP then TLS, on its first request. Being
httpcore's own connection class, it is what respx's default mocker patches,
so respx mocks the default backend as it always did. One lock guards the
tables; nothing awaits while holding it, so the same text is the sync pool (what differs is `pool.wait`).
"""

from __future__ import annotations

import ssl
import threading
from collections import OrderedDict, deque
from collections.abc import Iterator
from typing import Any, cast

import httpcore

from animalstore_client._core.deadline import within
from animalstore_client._core.exceptions import AnimalStoreError
from animalstore_client._core.exchange import RUNNING, running_deadline
from animalstore_client._transports.pool.wait import Shield, Waiter
from animalstore_client._transports.shared import CLOSED_MID_CALL

__all__ = ["ConnectionPool"]

_SCHEMES = (b"http", b"https")
_Key = tuple[bytes, bytes, int]  # an origin as the pool keys it: scheme, host, port


def _not_written() -> None:
    """Report to the running exchange that no connection came free for it: the pool's own code wrote nothing."""
    exchange = RUNNING.get()
    if exchange is not None:
        exchange.not_written()


class ConnectionPool:
    """Connections to any number of origins, at most ``max_connections`` open, each used by one call at a time."""

    __slots__ = (
        "_backend",
        "_closed",
        "_idle",
        "_idle_count",
        "_idle_order",
        "_keepalive_expiry",
        "_lock",
        "_max_connections",
        "_max_keepalive",
        "_opened",
        "_ssl_context",
        "_waiters",
    )

    def __init__(
        self,
        ssl_context: ssl.SSLContext,
        network_backend: httpcore.NetworkBackend,
        *,
        max_connections: int,
        max_keepalive_connections: int,
        keepalive_expiry: float | None,
    ) -> None:
        self._ssl_context = ssl_context
        self._backend = network_backend
        self._max_connections = max_connections
        self._max_keepalive = max_keepalive_connections
        self._keepalive_expiry = keepalive_expiry
        self._lock = threading.Lock()
        self._idle: dict[_Key, deque[httpcore.HTTPConnection]] = {}  # per origin, newest (taken first) right
        self._idle_count = 0
        # Every idle connection by ``id``, oldest first, whatever its origin: what expires or gives way first.
        self._idle_order: OrderedDict[int, tuple[_Key, httpcore.HTTPConnection]] = OrderedDict()
        self._opened = 0  # connections open or being opened, idle or in use: what ``max_connections`` bounds
        self._waiters: deque[Waiter] = deque()
        self._closed = False

    def handle_request(self, request: httpcore.Request) -> httpcore.Response:
        """Send ``request`` on a pooled connection; its body, once read or closed, gives the connection back."""
        url = request.url
        if url.scheme not in _SCHEMES or not url.host:
            raise httpcore.UnsupportedProtocol(f"the SDK's pool sends to http:// and https:// hosts only, not {url!r}")
        origin = url.origin
        key = (origin.scheme, origin.host, origin.port)  # httpcore's Origin is not hashable
        extensions = cast("dict[str, Any]", request.extensions)  # pyright: ignore[reportUnknownMemberType]
        timeouts: dict[str, float | None] = extensions.get("timeout") or {}
        stale: list[httpcore.HTTPConnection] = []
        with self._lock:
            connection, waiter = self._take(key, stale)
        held = waiter is None  # a connection, or a slot to open one, is this call's to give back
        try:
            if stale:
                _close(stale)
            if waiter is not None:
                try:
                    # Inside the try: a deadline already passed raises here, and the waiter must still be withdrawn.
                    waiter.wait(within(timeouts.get("pool"), httpcore.PoolTimeout, running_deadline()))
                except httpcore.PoolTimeout:
                    _not_written()
                    raise
                finally:
                    held, connection = self._settle(waiter)
                if not held:
                    if self._closed:
                        raise AnimalStoreError(CLOSED_MID_CALL)
                    _not_written()
                    raise httpcore.PoolTimeout(
                        f"no connection became free within the pool timeout ({self._max_connections} in use)"
                    )
            if connection is None:
                connection = self._new_connection(origin)
            response = connection.handle_request(request)
        except BaseException:
            if held:
                self.give_back(key, connection)
            raise
        response.stream = _PooledBody(self, key, connection, response.stream)
        return response

    def _take(
        self, key: _Key, stale: list[httpcore.HTTPConnection]
    ) -> tuple[httpcore.HTTPConnection | None, Waiter | None]:
        """Under the lock: an idle connection, or a slot to open one (``None, None``), or a place in the queue."""
        if self._closed:
            raise AnimalStoreError(CLOSED_MID_CALL)
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            self._idle_count -= 1
            del self._idle_order[id(connection)]
            if connection.is_available() and not _expired(connection):
                return connection, None
            stale.append(connection)
            self._opened -= 1
        if self._opened < self._max_connections:
            self._opened += 1
            return None, None
        if self._idle_count:
            # At the limit with another origin's connection idle: the oldest gives way (its slot passes on).
            stale.append(self._pop_oldest())
            return None, None
        waiter = Waiter(key)
        self._waiters.append(waiter)
        return None, waiter

    def _pop_oldest(self) -> httpcore.HTTPConnection:
        """Under the lock: the connection idle longest, of any origin, out of the tables (still counted open)."""
        _, (key, connection) = self._idle_order.popitem(last=False)
        idle = self._idle[key]
        idle.popleft()  # the oldest of all is the oldest of its origin
        if not idle:
            del self._idle[key]
        self._idle_count -= 1
        return connection

    def _drop_expired(self, close: list[httpcore.HTTPConnection]) -> None:
        """Under the lock: the oldest idle connections go to ``close`` while expired (two a call outpace a backlog)."""
        order = self._idle_order
        for _ in range(2):
            if not order:
                return
            _, connection = next(iter(order.values()))
            if not _expired(connection):
                return
            close.append(self._pop_oldest())
            self._opened -= 1

    def _new_connection(self, origin: httpcore.Origin) -> httpcore.HTTPConnection:
        """A connection to ``origin``, opened (TCP, then TLS for https) by the first request sent on it."""
        return httpcore.HTTPConnection(
            origin, self._ssl_context, self._keepalive_expiry, http2=False, network_backend=self._backend
        )

    def _settle(self, waiter: Waiter) -> tuple[bool, httpcore.HTTPConnection | None]:
        """After a wait, however it ended: whether the waiter holds a connection or slot, and the connection."""
        with self._lock:
            if not waiter.granted:
                waiter.withdrawn = True  # whoever gives back next passes over it
            return waiter.granted, waiter.connection

    def give_back(self, key: _Key, connection: httpcore.HTTPConnection | None) -> None:
        """Return what a call held: a connection (kept if reusable, else closed) or, ``None``, its slot."""
        close: list[httpcore.HTTPConnection] = []
        with self._lock:
            reusable = connection if connection is not None and not self._closed and connection.is_available() else None
            waiter = self._next_waiter()
            if waiter is not None:
                # Handed on without waiting idle, it is checked here as a take would: bytes the
                # server sent past its answer would otherwise be read as the waiter's.
                if reusable is not None and waiter.key == key and not _expired(reusable):
                    waiter.connection = reusable  # handed over as it is
                    connection = None
                # Otherwise the slot of the connection closed (or never opened) passes to the waiter.
                waiter.granted = True
                waiter.wake()
            elif reusable is not None and self._max_keepalive > 0:
                # The oldest are checked as the newest joins: under light load, when only the
                # newest is ever taken, no idle socket outlives its expiry for long.
                self._drop_expired(close)
                if self._idle_count >= self._max_keepalive:
                    close.append(self._pop_oldest())  # the newest is kept, as httpcore's pool keeps it
                    self._opened -= 1
                idle = self._idle.get(key)
                if idle is None:
                    idle = self._idle[key] = deque()
                idle.append(reusable)
                self._idle_order[id(reusable)] = (key, reusable)
                self._idle_count += 1
                connection = None
            else:
                self._opened -= 1
            if connection is not None and (connection is reusable or not connection.is_closed()):
                close.append(connection)
        if close:
            _close(close)

    def _next_waiter(self) -> Waiter | None:
        """Under the lock: the first queued request still waiting, taken off the queue."""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.withdrawn:
                return waiter
        return None

    def _empty(self) -> tuple[list[httpcore.HTTPConnection], list[Waiter]]:
        """Under the lock: refuse new calls, and take every idle connection and waiter out of the tables."""
        self._closed = True
        idle = [connection for _, connection in self._idle_order.values()]
        waiters = list(self._waiters)
        self._idle.clear()
        self._idle_order.clear()
        self._idle_count = 0
        self._waiters.clear()
        return idle, waiters

    def close(self) -> None:
        """Close the idle connections and refuse new calls; one in use is closed when its call gives it back."""
        with self._lock:
            idle, waiters = self._empty()
            self._opened -= len(idle)
        for waiter in waiters:
            waiter.wake()  # not granted: each raises that the client was closed
        _close(idle)

    def abandon(self) -> None:
        """Refuse new calls and close every connection without the event loop, which has ended.

        The network backend closes what it opened (`_transports.pool.asyncio_network`'s does;
        anyio's cannot, and its sockets are left to the garbage collector).
        """
        with self._lock:
            self._closed = True
        # Before the tables let go of the connections: the deadline backend knows them by weak reference.
        abandon = getattr(self._backend, "abandon", None)
        if abandon is not None:
            abandon()
        with self._lock:
            self._empty()
            self._opened = 0


class _PooledBody:
    """A response body whose end (read to the end, closed, or failed) gives its connection back to the pool."""

    __slots__ = ("_body", "_connection", "_key", "_pool", "_returned")

    def __init__(self, pool: ConnectionPool, key: _Key, conn: httpcore.HTTPConnection, body: Any) -> None:
        self._pool = pool
        self._key = key
        self._connection = conn
        self._body = body
        self._returned = False

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self._body:
                yield chunk
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the body (httpcore keeps the connection if the answer was read whole) and give the connection back."""
        if self._returned:
            return
        self._returned = True
        try:
            # Not shielded: cut short, the connection is left mid-answer, and the give-back closes it.
            self._body.close()
        finally:
            self._pool.give_back(self._key, self._connection)


def _expired(connection: httpcore.HTTPConnection) -> bool:
    """httpcore's ``has_expired()`` (``is_readable``: the socket, a TLS layer), or bytes past its last answer in its
    parser (`_unparsed`): reused, it would hand the next call an answer nobody asked for. Unanswerable is expired."""
    try:
        return connection.has_expired() or _unparsed(connection)
    except Exception:  # noqa: BLE001  # the question failing is itself the answer: not fit for use
        return True


def _unparsed(connection: httpcore.HTTPConnection) -> bool:
    """Whether httpcore's HTTP/1.1 parser (h11) holds bytes past the last answer, or the server's close.

    A private reach, and why: docs/architecture.md's table; checked at import by `_check_unparsed`.
    """
    state = getattr(getattr(connection, "_connection", None), "_h11_state", None)
    if state is None:  # not connected yet, or mocked (respx): nothing parsed
        return False
    data, closed = state.trailing_data
    return bool(data) or bool(closed)


def _check_unparsed() -> None:
    """Fail loudly, naming them, when httpcore no longer keeps what `_unparsed` reads where it reads it."""
    origin = httpcore.Origin(b"http", b"127.0.0.1", 80)
    parser = httpcore.HTTP11Connection(origin, cast("httpcore.NetworkStream", None))
    trailing = getattr(getattr(parser, "_h11_state", None), "trailing_data", None)
    if "_connection" not in vars(httpcore.HTTPConnection(origin)) or not isinstance(trailing, tuple):
        raise ImportError(
            f"animalstore_client needs httpcore.HTTPConnection._connection and HTTP11Connection"
            f"._h11_state.trailing_data (bytes past an answer make a kept-alive connection unfit), which httpcore "
            f"{httpcore.__version__} no longer has: install the httpcore release this SDK was tested with, or a "
            "newer animalstore-client"
        )


_check_unparsed()


def _close(connections: list[httpcore.HTTPConnection]) -> None:
    """Close each connection, whole even if the calling task is cancelled meanwhile, and each despite the others."""
    with Shield():
        for connection in connections:
            try:
                connection.close()
            except Exception:  # noqa: BLE001  # a socket failing to close is closed enough; the rest must be too
                continue
