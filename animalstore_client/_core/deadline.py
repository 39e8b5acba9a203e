"""The call's deadline as the transports and the library code under them keep it, and what every transport shares.

`DEADLINE` is set around each send (`deadline_scope`) for the network-level
code that cannot see the request (the httpx transport's network backend, the
urllib3 transport's connection class), and `WIRE`, the attempt's record, for
that code to say when it writes the request's first byte; `within` cuts a
timeout to the time left; `remembered` is the bounded table the transports
keep the library form of repeated values in.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from animalstore_client._core.wire import Wire

__all__ = ["DEADLINE", "WIRE", "Timeouts", "deadline_scope", "remembered", "within"]

K = TypeVar("K")
V = TypeVar("V")

Timeouts = dict[str, float | None]
"""Per-phase timeouts as httpx spells them: ``connect``, ``read``, ``write``, ``pool``."""


DEADLINE: ContextVar[float | None] = ContextVar("animalstore_client_deadline", default=None)
"""The running send's deadline (``time.monotonic()`` seconds), for the network-level code that cannot see the request.

Only the httpx transport's network backend and the urllib3 transport's
connection class read it: they run inside the library, below any argument
the SDK can pass. Transports set it with `deadline_scope` around the one
send (and each body read), and reset it after; nothing else reads or writes it.
"""


WIRE: ContextVar[Wire | None] = ContextVar("animalstore_client_wire", default=None)
"""The running send's record (`_core.wire.Wire`), for the network-level code that writes the request.

The default pool's network streams and the urllib3 transport's connection
class mark it when they write; set with `DEADLINE` by `deadline_scope`.
"""


class deadline_scope:  # used as a function: ``with deadline_scope(deadline):``
    """`DEADLINE` set to ``deadline`` (and `WIRE` to ``wire``) inside the block, and reset to what it was after.

    A class rather than a ``contextlib.contextmanager`` generator: it is entered
    on every send, and the generator's machinery cost ~2 µs a call.
    """

    __slots__ = ("_deadline", "_token", "_wire", "_wire_token")

    def __init__(self, deadline: float | None, wire: Wire | None = None) -> None:
        self._deadline = deadline
        self._wire = wire

    def __enter__(self) -> None:
        self._token = DEADLINE.set(self._deadline)
        self._wire_token = WIRE.set(self._wire)

    def __exit__(self, *exc_info: object) -> None:
        WIRE.reset(self._wire_token)
        DEADLINE.reset(self._token)


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
