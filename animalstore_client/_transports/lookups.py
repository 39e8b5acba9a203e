"""Name lookups, bounded: one small pool of threads for the process, one lookup in flight per host and port.

``getaddrinfo`` blocks its thread, bounded by nothing (10 to 30 s against a resolver that does not answer), so
every lookup of the SDK's, sync and async, runs here: one in flight per (host, port), shared by its waiters
(`Lookups.start`); at most `LOOKUP_THREADS` daemon threads (a lookup that never answers must not hold the
process at exit); each waiter waits at most its own time (`Flight.wait`, `Flight.wait_async`). A lookup that
cannot start is a `ConnectionError`, before anything is sent. A forked child starts with no threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["LOOKUPS", "LOOKUP_THREADS", "Flight", "Lookups", "settle"]

LOOKUP_THREADS = 4  # the most threads the SDK's name lookups hold in a process: distinct names looked up at once
THREAD_NAME = "animalstore-client lookup"  # as ``threading.enumerate()`` and a debugger show them


class Flight:
    """One lookup of a (host, port), under way or done, and the calls waiting for it."""

    __slots__ = ("_error", "_listeners", "_lock", "_result", "done", "host", "port")

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._result: list[Any] | None = None
        self._error: BaseException | None = None
        self._listeners: list[Callable[[], None]] = []

    def land(self, result: list[Any] | None, error: BaseException | None) -> None:
        """The lookup ended with ``result`` or ``error``: wake every waiter."""
        with self._lock:
            self._result, self._error = result, error
            self.done.set()
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()

    def answer(self) -> list[Any]:
        """``getaddrinfo``'s answers, or a copy of what it raised (each waiter raises its own exception object)."""
        error = self._error
        if error is not None:
            if isinstance(error, socket.gaierror):
                raise socket.gaierror(*error.args)
            raise OSError(f"the name {self.host} could not be looked up: {error!r}")
        assert self._result is not None
        return self._result

    def wait(self, timeout: float | None) -> list[Any]:
        """The answers, waited for at most ``timeout`` seconds (`TimeoutError` after that); from a thread."""
        if not self.done.wait(timeout):
            raise TimeoutError(
                f"the name {self.host} was not looked up within {timeout:g} s (the connect timeout or the deadline)"
            )
        return self.answer()

    async def wait_async(self) -> list[Any]:
        """The answers, awaited on the running loop; a cancellation (the call's timeout) leaves the flight to others."""
        if not self.done.is_set():
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()

            def wake() -> None:
                with contextlib.suppress(RuntimeError):  # the loop has closed since: nobody is waiting there any more
                    loop.call_soon_threadsafe(settle, waiter, None)

            with self._lock:
                listening = not self.done.is_set()
                if listening:
                    self._listeners.append(wake)
            if listening:
                try:
                    await waiter
                finally:
                    with self._lock:
                        if wake in self._listeners:
                            self._listeners.remove(wake)
        return self.answer()


def settle(future: asyncio.Future[Any] | None, result: object) -> None:
    """Give ``future`` its result, unless it has none to wait for or has one already (a timeout came first)."""
    if future is not None and not future.done():
        future.set_result(result)


class Lookups:
    """The process's name lookups: a queue of flights and at most ``most`` daemon threads working through it."""

    def __init__(
        self,
        most: int = LOOKUP_THREADS,
        lookup: Callable[[str, int], list[Any]] | None = None,
        name: str = THREAD_NAME,
    ) -> None:
        self._most = most
        self._name = name
        self._lookup = lookup or _getaddrinfo
        self._closed = False
        self.forget()

    def start(self, host: str, port: int) -> Flight:
        """The lookup of ``host``:``port``: the one in flight, or a new one queued for the pool's threads.

        Raises `ConnectionError` when a thread is needed and cannot be started: nothing was sent.
        """
        key = (host, port)
        with self._lock:
            flight = self._flights.get(key)
            if flight is not None:
                return flight
            flight = Flight(host, port)
            if self._idle <= len(self._queue) and self._threads < self._most:
                try:
                    threading.Thread(target=self._work, name=self._name, daemon=True).start()
                except RuntimeError as exc:  # the process's thread limit: this lookup cannot start
                    if self._threads == 0:
                        raise ConnectionError(f"the name {host} could not be looked up: {exc}") from None
                else:
                    self._threads += 1
            self._flights[key] = flight
            self._queue.append(flight)
            self._ready.notify()
            return flight

    def threads(self) -> int:
        """The threads the lookups hold now."""
        with self._lock:
            return self._threads

    def close(self) -> None:
        """Let the idle threads end, and each busy one once its lookup has (for a test's own pool)."""
        with self._lock:
            self._closed = True
            self._ready.notify_all()

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
                while not self._queue and not self._closed:
                    self._ready.wait()
                self._idle -= 1
                if not self._queue:  # closed, and nothing left to look up
                    self._threads -= 1
                    return
                flight = self._queue.popleft()
            try:
                result, error = self._lookup(flight.host, flight.port), None
            except Exception as exc:  # noqa: BLE001  # handed to the waiters, each of which raises its own copy
                result, error = None, exc
            with self._lock:
                if self._flights.get((flight.host, flight.port)) is flight:
                    del self._flights[(flight.host, flight.port)]
            flight.land(result, error)

    def forget(self) -> None:
        """No lookups yet: at construction, and in a forked child (without its parent's threads or waiting calls)."""
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._flights: dict[tuple[str, int], Flight] = {}
        self._queue: deque[Flight] = deque()
        self._threads = 0
        self._idle = 0


def _getaddrinfo(host: str, port: int) -> list[Any]:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


LOOKUPS = Lookups()
"""The process's lookups: every name the SDK looks up, sync or async, through any backend of its own."""

if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=LOOKUPS.forget)
