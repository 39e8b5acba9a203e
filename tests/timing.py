"""A reference timer: how much time load took from this process while a test measured a duration.

A test that asserts a duration (only where the promise is one: a deadline, a timeout, "within 1 s") bounds it
from above by the promise plus what a reference timer lost meanwhile, and from below by nothing::

    with ReferenceTimer() as timer:
        began = time.monotonic()
        call()
        took = time.monotonic() - began
        late = timer.lateness()
    assert took < PROMISE + late, f"{took:.3f} s; the reference timer ran {late:.3f} s late meanwhile"

or, for one block, ``with Stopwatch() as watch: call()`` then ``watch.assert_within(PROMISE)``. For several
windows under one timer, read `ReferenceTimer.lateness` at each end and subtract.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

STEP = 0.01
"""Seconds the reference timer asks to sleep at a time: short, so the last, unfinished step loses little."""
LONGEST = 120.0
"""Seconds after which the timer's thread stops on its own (no test window is as long): its loop is bounded."""
OVERSHOOT = 0.5
"""Seconds a call may end past its ``total_timeout`` on an idle machine: docs/limits-and-safety.md's "small
margin" (the deadline's own timer firing, unwinding the call, closing its connection). Load gets the reference
timer's lateness on top, never a bigger constant."""


class ReferenceTimer:
    """A daemon thread beside the measured code that sleeps `STEP` at a time; `lateness` is how late it woke, in all.

    **What lateness is.** The sum, over the timer's steps since it started, of the time each step took beyond the
    `STEP` it asked for (a step that ended early counts 0), plus how far the unfinished step is already overdue.
    A step is late when this process could not run its thread on time: the machine's other work had the cores
    (the scheduler ran the thread late), the process was stopped or swapped, or another thread of the process
    held the GIL. Steps do not overlap, so lateness never exceeds the time the timer ran.

    **Why it is a fair margin.** The time a measured call loses to load is time its own threads were ready but
    not run, which is when this thread's wake-ups are late too: a process descheduled for 0.3 s gets 0.3 s back.
    A call that genuinely waits (a 3 s hang, a sleep until another timeout, a whole slow upload) waits with the
    GIL released and the process idle, and this thread then wakes on time: the wait is not excused. The one way
    the measured code itself makes the timer late is by holding the GIL: the timer then waits at most
    ``sys.getswitchinterval()`` (5 ms) per 10 ms step, so pure CPU work gets at most a third of its own length
    back, and a call that spins three times its promise still fails.

    The unfinished step counts too: a process stopped as a whole (or a thread holding the GIL until the reading)
    is measured the moment `lateness` is read, before the timer's thread has run again. Leaving the ``with``
    block stops the thread and joins it (bounded), on every exit; `lateness` then keeps its last value.
    """

    def __init__(self, step: float = STEP, longest: float = LONGEST) -> None:
        self._step = step
        self._longest = longest
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._late = 0.0
        self._step_began: float | None = None
        """When the unfinished step began; None before the start and once stopped (nothing more counts)."""
        self._thread = threading.Thread(target=self._tick, name="reference-timer", daemon=True)

    def __enter__(self) -> ReferenceTimer:
        with self._lock:
            self._step_began = time.monotonic()
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        with self._lock:  # the last reading, frozen: what the unfinished step is overdue counts now, nothing later
            self._late = self._reading(time.monotonic())
            self._step_began = None
        self._stop.set()
        self._thread.join(timeout=5.0)  # the thread leaves at its next wake-up, within a step unless starved
        if kind is None:  # never mask the test's own failure with this one
            assert not self._thread.is_alive(), "the reference timer's thread did not stop within 5 s"

    @property
    def running(self) -> bool:
        """Whether the timer's thread is still alive."""
        return self._thread.is_alive()

    def lateness(self) -> float:
        """Seconds the timer's steps have run late in all, the unfinished one's overdue part included."""
        with self._lock:
            return self._reading(time.monotonic())

    def _reading(self, now: float) -> float:
        if self._step_began is None:
            return self._late
        return self._late + max(0.0, now - self._step_began - self._step)

    def _tick(self) -> None:
        ends = time.monotonic() + self._longest
        while not self._stop.wait(self._step):
            now = time.monotonic()
            with self._lock:
                if self._step_began is None:  # stopped meanwhile: the reading is already final
                    return
                self._late = self._reading(now)
                self._step_began = now
                if now >= ends:  # bounded: past LONGEST lateness stops growing, the thread ends
                    self._step_began = None
                    return


class Stopwatch:
    """``with Stopwatch() as watch: call()``, then ``watch.assert_within(PROMISE)``: the block's seconds, bounded
    from above by ``PROMISE`` plus how late a `ReferenceTimer` running through the same block was (and from below by
    nothing). The timer is stopped however the block ends."""

    def __init__(self) -> None:
        self._timer = ReferenceTimer()
        self._began = 0.0
        self.took = 0.0
        """Seconds the block took (set when it ends)."""
        self.late = 0.0
        """Seconds the reference timer ran late meanwhile: the time load took from the process."""

    def __enter__(self) -> Stopwatch:
        self._timer.__enter__()
        self._began = time.monotonic()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.took = time.monotonic() - self._began
        self.late = self._timer.lateness()
        self._timer.__exit__(kind, exc, traceback)

    def assert_within(self, promise: float) -> None:
        """Fail unless the block took less than ``promise`` seconds beyond the reference timer's lateness."""
        assert self.took < promise + self.late, (
            f"{self.took:.3f} s, more than {promise:g} s even with the {self.late:.3f} s the reference timer ran late"
        )
