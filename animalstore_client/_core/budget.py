"""The retry budget: retries may add at most a share of the calls a client makes, so an outage is not multiplied.

Finagle's ``RetryBudget`` shape. With the default numbers, 100 calls failing at once against a dead service make
about 120 attempts in all instead of 300. Decision code takes the time as an argument (the client's clock, or the
testing kit's store clock), so the budget is tested without waiting.
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from typing import Any

from animalstore_client._core.exceptions import ClientValidationError
from animalstore_client._core.show import show

__all__ = ["RetryBudget"]

_SLICES = 10
"""The window is kept as this many slices: a call is forgotten within a tenth of ``window`` of its time."""

_all_budgets: weakref.WeakSet[RetryBudget] = weakref.WeakSet()


def _check_number(value: object, argument: str, low: float, high: float, note: str = "") -> float:
    """``value`` as a float if it is a finite int or float (not bool) from ``low`` to ``high``: an int is compared
    as it is, never turned into a float first (``10**400`` is refused for its size, not with an OverflowError)."""
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (isinstance(value, int) or math.isfinite(value))
        and low <= value <= high
    ):
        return float(value)
    rule = f"a finite number from {low:g} to {high:g}"
    raise ClientValidationError(
        f"{argument} must be {rule}{note}, got {show(value)}", argument=argument, rule=rule, value=value
    )


class RetryBudget:
    """How many retries a client may make: at most ``percent`` of its recent calls, plus a small floor.

    At any moment, the retries started in the last ``window`` seconds may be
    at most ``percent`` times the calls started in those seconds, plus
    ``min_per_second * window``. With the defaults, retries add at most 20 %
    to the load of an outage once a client makes more than 50 calls a
    second, and a client making a few calls still retries each of them. When
    the budget refuses a retry, the call ends at once with the error it had
    (its message says the retry budget is exhausted): it neither sleeps nor
    waits for ``Retry-After``.

    A client makes its own budget unless given one; its `with_options`
    copies and every thread and task using it share it. Pass one budget to
    several clients to bound their retries together, or ``retry_budget=None``
    to retry every call up to ``max_retries``.

    ```python
    from animalstore_client import AnimalStoreClient, RetryBudget

    client = AnimalStoreClient(retry_budget=RetryBudget(percent=0.1, min_per_second=1, window=30))
    ```

    Each argument is a finite int or float (not bool) within its range below;
    anything else, nan, infinities and ints too large for a float included,
    raises `ClientValidationError` naming the argument, the range and the value.

    Args:
        percent: The retries allowed per call, as a share (0.2 is 20 %); 0 to 10
            (10 is ten retries per call, more than any ``max_retries`` worth setting).
        min_per_second: Retries always allowed per second of ``window``, whatever
            the calls; 0 to 10,000.
        window: The seconds over which calls and retries are counted; 1 to 600.
    """

    __slots__ = (
        "__weakref__",
        "_calls",
        "_lock",
        "_min_per_second",
        "_percent",
        "_reserve",
        "_retries",
        "_scale",
        "_slice",
        "_total_calls",
        "_total_retries",
        "_window",
    )

    def __init__(self, percent: float = 0.2, min_per_second: float = 10, window: float = 10.0) -> None:
        self._percent = _check_number(percent, "percent", 0, 10, " (a share of the calls: 0.2 is 20 %)")
        self._min_per_second = _check_number(min_per_second, "min_per_second", 0, 10_000)
        self._window = _check_number(window, "window", 1, 600)
        self._lock = threading.Lock()
        self._scale = _SLICES / self._window
        self._reserve = self._min_per_second * self._window
        # Ring buffers of counts per slice of the window, and their sums; _slice is the newest slice's number.
        self._calls = [0] * _SLICES
        self._retries = [0] * _SLICES
        self._total_calls = 0
        self._total_retries = 0
        self._slice = -1
        _all_budgets.add(self)

    @property
    def percent(self) -> float:
        """The retries allowed per call started in the window, as a share."""
        return self._percent

    @property
    def min_per_second(self) -> float:
        """Retries allowed per second of the window whatever the number of calls."""
        return self._min_per_second

    @property
    def window(self) -> float:
        """The seconds over which calls and retries are counted."""
        return self._window

    def _slice_of(self, now: object) -> int:
        """The number of the slice ``now`` falls in (time x _SLICES / window, rounded down)."""
        try:
            return int(now * self._scale)  # type: ignore[operator]  # the clocks the SDK reads are never negative
        except (TypeError, ValueError, OverflowError):  # a str, nan, inf, an int too large for a float
            rule = "a finite number of seconds"
            raise ClientValidationError(
                f"now must be {rule}, got {show(now)}", argument="now", rule=rule, value=now
            ) from None

    def _advance(self, current: int) -> None:
        """Forget the slices that left the window by slice ``current``. Under the lock."""
        last = self._slice
        if current - last >= _SLICES:
            self._calls[:] = [0] * _SLICES
            self._retries[:] = [0] * _SLICES
            self._total_calls = self._total_retries = 0
        else:
            for number in range(last + 1, current + 1):
                index = number % _SLICES
                self._total_calls -= self._calls[index]
                self._total_retries -= self._retries[index]
                self._calls[index] = self._retries[index] = 0
        self._slice = current

    def deposit(self, now: float) -> None:
        """Count a call started at ``now`` (seconds on the client's clock); every client call does this once.

        ``now`` must be a finite number (`ClientValidationError` otherwise).
        """
        current = self._slice_of(now)
        with self._lock:
            if current > self._slice:
                self._advance(current)
            # A clock that went back (a test's fake clock) counts in the newest slice.
            self._calls[self._slice % _SLICES] += 1
            self._total_calls += 1

    def try_withdraw(self, now: float) -> bool:
        """Take one retry from the budget at ``now`` if it allows one; return whether it did.

        ``now`` must be a finite number (`ClientValidationError` otherwise).
        """
        current = self._slice_of(now)
        with self._lock:
            if current > self._slice:
                self._advance(current)
            if self._total_retries + 1 > self._percent * self._total_calls + self._reserve:
                return False
            self._retries[self._slice % _SLICES] += 1
            self._total_retries += 1
            return True

    def __repr__(self) -> str:
        return (
            f"RetryBudget(percent={self._percent:g}, min_per_second={self._min_per_second:g}, window={self._window:g})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # The settings only: the counts describe this process's recent calls, and a lock cannot cross.
        return (RetryBudget, (self._percent, self._min_per_second, self._window))


def _after_fork_in_child() -> None:
    # A lock held by another thread at fork time stays held for ever in the child.
    for budget in list(_all_budgets):
        budget._lock = threading.Lock()  # noqa: SLF001  # pyright: ignore[reportPrivateUsage]  # this module's own class


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)
