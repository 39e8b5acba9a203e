"""Whether a pooled connection's server closed it: one ``poll()`` of its socket, sharing nothing.

httpcore asks this of every idle connection before it hands one out
(``is_readable``): data or the peer's close waiting on an idle connection
means it must not be reused. The answer is computed fresh for each question:
no cache, so no state two threads could see differently.
"""

from __future__ import annotations

import select
import sys

__all__ = ["readable_now"]

_HAS_POLL = sys.platform != "win32" and hasattr(select, "poll")


def readable_now(fd: int) -> bool:
    """Whether one socket has data or its peer's close waiting, asked now."""
    if fd < 0:  # closed: the next read is the end
        return True
    if _HAS_POLL:
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        return bool(poll.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)
