"""The reference timer of tests/timing.py, which bounds the suite's duration assertions: it counts the time the
process could not run it, it stops on every exit, and it never counts more than the time it ran."""

from __future__ import annotations

import sys
import time

import pytest

from .timing import STEP, ReferenceTimer

HELD = 0.3
"""Seconds the main thread holds the GIL in the test that starves the timer's thread."""


def _spin(seconds: float) -> None:
    """Pure Python for ``seconds``: the GIL is never released of the thread's own accord."""
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        pass


@pytest.mark.skipif(not getattr(sys, "_is_gil_enabled", lambda: True)(), reason="a free-threaded build has no GIL")
def test_time_the_timer_could_not_run_is_counted_at_once() -> None:
    """The main thread holds the GIL for 0.3 s (the switch interval raised past it, so the timer's thread cannot
    take it): lateness read at the end, before the timer's thread ran again, has grown by nearly all of it.

    This stands for a process descheduled or stopped by load: the timer's wake-up is late, and the unfinished
    step counts when read, not only once the thread runs again.
    """
    interval = sys.getswitchinterval()
    with ReferenceTimer() as timer:
        before = timer.lateness()
        sys.setswitchinterval(10 * HELD)
        try:
            _spin(HELD)
            held = timer.lateness() - before
        finally:
            sys.setswitchinterval(interval)
    # The timer may have had the GIL once or twice when the switch interval changed: each turn costs a step.
    assert held >= HELD - 5 * STEP, f"lateness grew {held:.3f} s while the timer could not run for {HELD} s"


def test_the_timer_stops_on_every_exit_and_counts_no_more_than_it_ran() -> None:
    """Left by an exception, the timer's thread has stopped; its lateness never exceeds the time it ran and no
    longer grows once it is stopped."""
    timers: list[ReferenceTimer] = []

    def fail() -> None:
        with ReferenceTimer() as timer:
            timers.append(timer)
            assert timer.running
            _spin(0.05)  # the timer's thread waits for the GIL meanwhile: some lateness to count
            raise RuntimeError("the test's own failure")

    began = time.monotonic()
    with pytest.raises(RuntimeError, match="the test's own failure"):
        fail()
    ran = time.monotonic() - began
    [timer] = timers
    assert not timer.running
    final = timer.lateness()
    assert 0.0 <= final <= ran
    _spin(0.05)  # stopped: even a held GIL adds nothing now
    assert timer.lateness() == final
