"""The call's deadline as the transports and the library code under them keep it, and what every transport shares.

`within` cuts a timeout to the time left (network-level code finds the
deadline in the running exchange, ``_core.exchange.running_deadline``);
`remembered` is the bounded table the transports keep the library form of
repeated values in.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["Timeouts", "remembered", "within"]

K = TypeVar("K")
V = TypeVar("V")

Timeouts = dict[str, float | None]
"""Per-phase timeouts as httpx spells them: ``connect``, ``read``, ``write``, ``pool``."""


def within(
    timeout: float | None, error: type[Exception], deadline: float | None, clock: Callable[[], float] = time.monotonic
) -> float | None:
    """``timeout`` shortened to what is left until ``deadline``; ``error`` once none is left."""
    if deadline is None:
        return timeout
    left = deadline - clock()
    if left <= 0:
        raise error("the call's total_timeout has passed")
    return left if timeout is None or timeout > left else timeout


def remembered(table: dict[K, V], key: K, make: Callable[[], V], most: int) -> V:
    """``table[key]``, made by ``make()`` on first need; a table holding ``most`` entries is emptied first.

    What the transports keep of the values the SDK repeats from call to call (request headers,
    URLs, timeouts in a library's own form), bounded so that values that do not repeat cannot grow it.
    """
    value = table.get(key)
    if value is None:
        if len(table) >= most:
            table.clear()
        value = table[key] = make()
    return value
