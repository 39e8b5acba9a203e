"""The queue of injected faults and delays: what a test or the control API queues, checked, and what requests take.

`FakeAnimalStore.fail_next`, `~FakeAnimalStore.fail_next_connection` and
`~FakeAnimalStore.delay_next` put entries in a `FaultQueue`; the store's
request path takes them. Its state is behind its own lock.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from typing import Literal, cast

import attrs

from animalstore_client._core.exceptions import ClientValidationError

from ._messages import (
    CONNECTION_FAULTS,
    DELAY_RULE,
    RETRY_AFTER_RULE,
    ConnectionFaultKind,
    FakeResponse,
    check_times,
    delay_ok,
    error_response,
    ok,
    reason_phrase,
    retry_after_ok,
)

__all__ = ["METHODS", "FaultQueue", "QueuedFault"]

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
"""The methods a fault may be limited to."""


@attrs.frozen
class QueuedFault:
    """A fault or delay still waiting in a `FakeAnimalStore`'s queue, as `FakeAnimalStore.faults` lists it.

    ``kind`` says which call queued it and which field holds its value:
    ``"status"`` (`FakeAnimalStore.fail_next`: ``status``, ``retry_after``,
    ``body``), ``"connection"`` (`FakeAnimalStore.fail_next_connection`:
    ``connection``) or ``"delay"`` (`FakeAnimalStore.delay_next`: ``delay``);
    the fields of the other kinds are ``None``. ``times`` is how many
    requests it still covers.
    """

    kind: Literal["status", "connection", "delay"]
    times: int
    """The requests it still covers: ``fail_next(503, times=3)`` is 3 until a request takes it."""
    status: int | None = None
    """The status a ``"status"`` fault answers with."""
    retry_after: str | None = None
    """The ``Retry-After`` header a ``"status"`` fault sends, as sent (``"3"``), or ``None`` for none."""
    body: object = None
    """The body a ``"status"`` fault sends instead of an Error body, as given to `FakeAnimalStore.fail_next`."""
    connection: ConnectionFaultKind | None = None
    """What a ``"connection"`` fault does: ``"refused"``, ``"reset"`` or ``"timeout"``."""
    delay: float | None = None
    """The seconds a ``"delay"`` holds back each answer."""
    method: str | None = None
    """The only method (upper case) whose requests take the fault, or ``None`` for any; a delay takes any."""


@attrs.define
class _Fault:
    status: int
    remaining: int
    retry_after: str | None
    body: object
    connection: ConnectionFaultKind | None = None
    """None for a status fault."""
    method: str | None = None
    """Only requests with this method (upper case) take the fault; None for any."""

    def listed(self) -> QueuedFault:
        if self.connection is not None:
            return QueuedFault("connection", self.remaining, connection=self.connection, method=self.method)
        return QueuedFault(
            "status",
            self.remaining,
            status=self.status,
            retry_after=self.retry_after,
            body=self.body,
            method=self.method,
        )

    def answer(self) -> FakeResponse:
        """What a status fault answers with: its body, or an Error body naming the injected status."""
        headers = {"Retry-After": self.retry_after} if self.retry_after is not None else {}
        if self.body is None:
            phrase = reason_phrase(self.status, "Error")
            code = re.sub(r"\W+", "_", phrase.lower()).strip("_")
            return error_response(self.status, code, f"Injected fault: {self.status} {phrase}", headers)
        if isinstance(self.body, (str, bytes)):
            content = self.body.encode() if isinstance(self.body, str) else self.body
            return FakeResponse(self.status, {"Content-Type": "text/html; charset=utf-8", **headers}, content)
        return ok(self.status, self.body, headers)


def _check_method(method: object) -> str | None:
    if method is None:
        return None
    if isinstance(method, str) and method.upper() in METHODS:
        return method.upper()
    raise ClientValidationError(
        f"method must be an HTTP method such as 'GET' or 'POST', or None for any, got {method!r}",
        argument="method",
        rule=f"{', '.join(METHODS)}, or None",
        value=method,
    )


class FaultQueue:
    """Status and connection faults in one queue, in the order added, and delays in another.

    The ``add_*`` methods check their arguments as the store's public
    methods document them and raise `ClientValidationError`; nothing is
    queued when one is refused.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: deque[_Fault] = deque()
        self._delays: deque[list[float]] = deque()  # [seconds, requests left]: O(1) whatever ``times`` is

    def add_status(
        self, status: int, *, times: int, retry_after: float | str | None, body: object, method: str | None
    ) -> None:
        if not isinstance(cast(object, status), int) or isinstance(status, bool) or not 400 <= status <= 599:
            raise ClientValidationError(
                f"status must be an int from 400 to 599, got {status!r}",
                argument="status",
                rule="an int from 400 to 599",
                value=status,
            )
        check_times(times)
        if retry_after is not None and not retry_after_ok(retry_after):
            raise ClientValidationError(
                f"retry_after must be {RETRY_AFTER_RULE}, got {retry_after!r:.60}",
                argument="retry_after",
                rule=RETRY_AFTER_RULE,
                value=retry_after,
            )
        header = (
            None if retry_after is None else str(int(retry_after) if isinstance(retry_after, float) else retry_after)
        )
        only = _check_method(method)
        with self._lock:
            self._faults.append(_Fault(status, times, header, body, method=only))

    def add_connection(self, kind: ConnectionFaultKind, *, times: int, method: str | None) -> None:
        if kind not in CONNECTION_FAULTS:
            raise ClientValidationError(
                f"kind must be one of {', '.join(CONNECTION_FAULTS)}, got {kind!r}",
                argument="kind",
                rule=f"one of {', '.join(CONNECTION_FAULTS)}",
                value=kind,
            )
        check_times(times)
        only = _check_method(method)
        with self._lock:
            self._faults.append(_Fault(0, times, None, None, connection=kind, method=only))

    def add_delay(self, seconds: float, *, times: int) -> None:
        if not delay_ok(seconds):
            raise ClientValidationError(
                f"seconds must be {DELAY_RULE}, got {seconds!r}",
                argument="seconds",
                rule=DELAY_RULE,
                value=seconds,
            )
        check_times(times)
        with self._lock:
            self._delays.append([float(seconds), times])

    def listed(self) -> list[QueuedFault]:
        """The faults in the order requests will take them, then the delays."""
        with self._lock:
            queued = [fault.listed() for fault in self._faults]
            queued.extend(QueuedFault("delay", int(times), delay=seconds) for seconds, times in self._delays)
        return queued

    def clear(self) -> int:
        """Drop every fault and delay; return how many entries were dropped."""
        with self._lock:
            count = len(self._faults) + len(self._delays)
            self._faults.clear()
            self._delays.clear()
        return count

    def take_connection(self, method: str) -> ConnectionFaultKind | None:
        """The connection fault a request with ``method`` takes now, if the first fault it matches is one."""
        fault = self._take(method, connection=True)
        return None if fault is None else fault.connection

    def take_status(self, method: str) -> FakeResponse | None:
        """The answer of the status fault a request with ``method`` takes now, if the first it matches is one."""
        fault = self._take(method, connection=False)
        return None if fault is None else fault.answer()

    def next_delay(self) -> float:
        """Take the delay (if any) the next answer must wait."""
        with self._lock:
            if not self._delays:
                return 0.0
            entry = self._delays[0]
            entry[1] -= 1
            if entry[1] <= 0:
                self._delays.popleft()
            return entry[0]

    def _take(self, method: str, *, connection: bool) -> _Fault | None:
        """The first queued fault ``method`` matches, used once, if it is of the kind asked for."""
        with self._lock:
            for fault in self._faults:
                if fault.method is None or fault.method == method:
                    break
            else:
                return None
            if (fault.connection is not None) != connection:
                return None
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.remove(fault)
        return fault
