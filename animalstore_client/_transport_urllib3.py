"""The transport seam over a `urllib3.PoolManager` (``backend="urllib3"``).

Imported only when that backend is chosen. urllib3's exceptions are mapped to
the httpx classes the retry policy tells apart; bodies arrive raw
(``decode_content=False``) so the send loop decodes and caps them itself;
redirects and urllib3's own retries are off. Each socket read of the body is
held to the call's total deadline.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import urllib3
import urllib3.connection
from urllib3.exceptions import (
    ConnectTimeoutError,
    EmptyPoolError,
    HTTPError,
    NewConnectionError,
    ProtocolError,
    ProxyError,
    ReadTimeoutError,
    SSLError,
)

from ._sending import DEADLINE, Timeouts, headers_from_library, response_from_library, within

__all__ = ["Urllib3Transport"]


class _Watchdog:
    """Shuts a socket down when its call's deadline passes, wherever that call is blocked or looping.

    http.client reads status lines in a loop that skips ``100 Continue`` for
    ever and applies one socket timeout per read, so no timeout can end it;
    shutting the socket down can. One daemon thread serves every SDK-owned
    urllib3 pool, started on first use (and again after a fork). A thread
    makes one call at a time, so each thread has one slot: arming and
    disarming are a dict assignment, and the watchdog is woken only when a
    deadline comes sooner than the one it waits for.
    """

    def __init__(self) -> None:
        self._slots: dict[int, tuple[float, socket.socket] | None] = {}
        self._wake = threading.Condition()
        self._wake_at = float("inf")
        self._pid = 0

    def arm(self, deadline: float, sock: socket.socket) -> None:
        with self._wake:
            if self._pid != os.getpid():  # first use, or a forked child: no thread runs here
                self._pid = os.getpid()
                self._slots.clear()
                self._wake_at = float("inf")
                threading.Thread(target=self._run, name="animalstore-deadline", daemon=True).start()
            self._slots[threading.get_ident()] = (deadline, sock)
            if deadline < self._wake_at:
                self._wake.notify()

    def disarm(self) -> None:
        self._slots[threading.get_ident()] = None

    def _run(self) -> None:
        with self._wake:
            while True:
                now = time.monotonic()
                wake_at = float("inf")
                for key, slot in list(self._slots.items()):
                    if slot is None:
                        del self._slots[key]
                    elif slot[0] <= now:
                        self._slots[key] = None
                        with contextlib.suppress(OSError):
                            slot[1].shutdown(socket.SHUT_RDWR)
                    else:
                        wake_at = min(wake_at, slot[0])
                self._wake_at = wake_at
                self._wake.wait(None if wake_at == float("inf") else wake_at - now)


_WATCHDOG = _Watchdog()


class _DeadlineHTTPConnection(urllib3.connection.HTTPConnection):
    """A connection that puts its socket under the watchdog for the running call's deadline."""

    def request(self, *args: Any, **kwargs: Any) -> None:
        deadline = DEADLINE.get()
        if deadline is not None:
            if self.sock is None:
                self.connect()
            assert self.sock is not None
            _WATCHDOG.arm(deadline, self.sock)
        super().request(*args, **kwargs)


class _DeadlineHTTPSConnection(urllib3.connection.HTTPSConnection):
    request = _DeadlineHTTPConnection.request


class _DeadlineHTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _DeadlineHTTPConnection  # pyright: ignore[reportAssignmentType]  # a subclass; pyright disagrees


class _DeadlineHTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _DeadlineHTTPSConnection  # pyright: ignore[reportAssignmentType]


def _disarm() -> None:
    _WATCHDOG.disarm()


# Headers urllib3 writes itself from the request.
_LEFT_TO_URLLIB3 = frozenset({"host", "content-length", "transfer-encoding"})
_CHUNK = 64 * 1024
# What retries=False becomes inside urllib3, built once rather than per call (it is immutable).
_NO_RETRIES = urllib3.Retry(total=False, redirect=False)


# urllib3's failures, most specific first (NewConnectionError is a ConnectTimeoutError),
# and the httpx class the retry policy knows each by.
_TRANSLATIONS: tuple[tuple[type[BaseException], type[httpx.TransportError]], ...] = (
    (EmptyPoolError, httpx.PoolTimeout),
    (NewConnectionError, httpx.ConnectError),  # nothing was sent
    (ProxyError, httpx.ConnectError),
    (SSLError, httpx.ConnectError),
    (ConnectTimeoutError, httpx.ConnectTimeout),
    (ReadTimeoutError, httpx.ReadTimeout),
    (ProtocolError, httpx.RemoteProtocolError),
)
_FAILURES = (HTTPError, OSError)


def _translated(exc: BaseException, request: httpx.Request, *, reading: bool = False) -> httpx.TransportError:
    """urllib3's failure as the httpx class the retry policy knows."""
    for urllib3_class, httpx_class in _TRANSLATIONS:
        if isinstance(exc, urllib3_class):
            cut_off = reading and httpx_class is httpx.RemoteProtocolError  # the body was cut off
            return (httpx.ReadError if cut_off else httpx_class)(str(exc) or type(exc).__name__, request=request)
    return httpx.RemoteProtocolError(str(exc) or type(exc).__name__, request=request)


class _Urllib3Stream:
    __slots__ = ("_done", "_read_timeout", "_request", "_response", "_started", "content", "headers", "status_code")

    def __init__(
        self, response: urllib3.BaseHTTPResponse, request: httpx.Request, started: float, read_timeout: float | None
    ) -> None:
        self._response = response
        self._request = request
        self._started = started
        self._read_timeout = read_timeout
        self.status_code = response.status
        pairs = response.headers.iteritems()
        # http.client decoded the raw bytes as Latin-1: encoding them back gives the bytes that came.
        self.headers = headers_from_library(
            [(name.encode("latin-1", "replace"), value.encode("latin-1", "replace")) for name, value in pairs]
        )
        self.content: bytes | None = None
        self._done = False

    def iter_raw(self) -> Iterator[bytes]:
        response = self._response
        sock = getattr(getattr(response, "connection", None), "sock", None)
        try:
            while True:
                if sock is not None:
                    # Each read waits at most what is left of the call's deadline
                    # (set only when that changes it: settimeout is a system call).
                    timeout = within(self._read_timeout, httpx.ReadTimeout)
                    if timeout != sock.gettimeout():
                        sock.settimeout(timeout)
                chunk = response.read1(_CHUNK)
                if not chunk:
                    self._done = True
                    return
                yield chunk
        except _FAILURES as exc:
            raise _translated(exc, self._request, reading=True) from exc

    def close(self) -> None:
        _disarm()
        response = self._response
        if not self._done:
            # Cut short (the size cap, an error): drop the connection, or the
            # unread rest would be taken for the next answer.
            response.close()
        response.release_conn()

    def complete(self, content: bytes) -> httpx.Response:
        return response_from_library(
            self.status_code, self.headers, content, self._request, self._response.reason, self._started
        )


class Urllib3Transport:
    """The seam over a `urllib3.PoolManager`: the caller's, or one the SDK makes (and closes)."""

    __slots__ = ("_closed", "_last_timeout", "_manager", "_owned")

    def __init__(self, manager: object = None, *, base_url: str) -> None:
        assert manager is None or isinstance(manager, urllib3.PoolManager)
        self._owned = manager is None
        self._manager = manager if manager is not None else self._own_manager(base_url)
        self._closed = False
        # The last timeouts and their urllib3.Timeout: calls mostly repeat them.
        self._last_timeout: tuple[tuple[float | None, float | None], urllib3.Timeout] = (
            (None, None),
            urllib3.Timeout(connect=None, read=None),
        )

    @staticmethod
    def _own_manager(base_url: str) -> urllib3.PoolManager:
        # urllib3 does not read HTTP_PROXY and friends; the SDK applies them as httpx would.
        from ._base_client import environment_proxy

        proxy = environment_proxy(httpx.URL(base_url))
        manager = (
            urllib3.ProxyManager(str(proxy), num_pools=10, maxsize=100)
            if proxy is not None
            else urllib3.PoolManager(num_pools=10, maxsize=100)
        )
        manager.pool_classes_by_scheme = {"http": _DeadlineHTTPPool, "https": _DeadlineHTTPSPool}
        return manager

    @property
    def default_headers(self) -> httpx.Headers:
        """The pool manager's default headers."""
        return httpx.Headers(dict(self._manager.headers))

    @property
    def is_closed(self) -> bool:
        """Whether the SDK closed this transport."""
        return self._closed

    def send(self, request: httpx.Request, timeouts: Timeouts) -> _Urllib3Stream:
        """Send through the pool manager; return once the status and headers have arrived."""
        # A plain dict: the SDK's header names are unique (checked as a mapping).
        headers = {name: value for name, value in request.headers.multi_items() if name not in _LEFT_TO_URLLIB3}
        read = timeouts.get("read")
        key, timeout = self._last_timeout
        if key != (connect := timeouts.get("connect"), read):
            timeout = urllib3.Timeout(connect=connect, read=read)
            self._last_timeout = ((connect, read), timeout)
        started = time.monotonic()
        try:
            response = self._manager.urlopen(
                request.method,
                str(request.url),
                body=request.content or None,
                headers=headers,
                redirect=False,
                retries=_NO_RETRIES,
                preload_content=False,
                decode_content=False,
                timeout=timeout,
                pool_timeout=timeouts.get("pool"),
            )
        except _FAILURES as exc:
            _disarm()
            raise _translated(exc, request) from exc
        except BaseException:
            _disarm()
            raise
        return _Urllib3Stream(response, request, started, read)

    def close(self) -> None:
        """Close the pool manager's connections, if the SDK made it."""
        self._closed = True
        if self._owned:
            self._manager.clear()
