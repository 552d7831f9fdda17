"""Another thread's start, observed while it happens (SCHED-48): in every schedule a
thread being started looks as a real one does, not started or started, never half-way."""

from __future__ import annotations

import threading

import pytest

import coordkit


def _observe_a_start(look):
    """A program whose second thread looks at (``look(t)``) a thread the first starts,
    recording what it saw in ``seen``."""
    seen: set = set()

    def program():
        t = threading.Thread(target=lambda: None)

        def observer():
            seen.add(look(t))

        o = threading.Thread(target=observer)
        o.start()
        t.start()
        o.join()
        t.join()

    return program, seen


def _join(t):
    try:
        t.join()
    except RuntimeError as exc:
        return str(exc)
    return "joined"


@pytest.mark.parametrize(("look", "before", "after"), [
    (lambda t: t.is_alive(), False, True),
    (_join, "cannot join thread before it is started", "joined"),
], ids=["is_alive", "join"])
def test_a_start_is_seen_whole(look, before, after):
    """SCHED-48: ``is_alive()`` and ``join()`` of a thread another thread is starting
    see it not started (False, RuntimeError) or started, in every
    schedule; never an ``AssertionError`` from inside ``threading``.  Every schedule
    with up to 3 preemptions, unreduced (SCHED-35): this checks the runtime, not DPOR
    (``test_dpor_rule_shapes`` does)."""
    program, seen = _observe_a_start(look)
    result = coordkit.explore(program, strategy="dfs", max_preemptions=3, max_schedules=5_000)
    assert result.ok, result.failure
    assert result.exhausted
    if look is _join:  # a join that waited: it ran after the start, alive or ended
        assert seen == {before, after}
    else:
        assert before in seen and seen <= {before, after}


def test_a_thread_started_by_two_threads_at_once_runs_once():
    """SCHED-48: two threads start one thread; whether it was started is read at the
    start's scheduling point, so in every schedule one start makes it run (once) and the
    other raises ``RuntimeError("threads can only be started once")``; never a second
    run of its ``run()`` (an ``AttributeError`` for its deleted ``_target``).  A start that
    was under way when the other made the thread (CPython could let both through) says so,
    naming the thread that started it."""
    seen: set = set()

    def program():
        runs, errors = [], []
        t = threading.Thread(target=lambda: runs.append(1))

        def start():
            try:
                t.start()
            except RuntimeError as exc:
                errors.append(str(exc))

        other = threading.Thread(target=start)
        other.start()
        start()
        other.join()
        t.join()
        seen.add((len(runs), tuple(errors)))

    result = coordkit.explore(program, strategy="dfs", max_preemptions=3, max_schedules=5_000)
    assert result.ok, result.failure
    assert result.exhausted
    def overtaken(by):
        return (f"threads can only be started once: this start() was under way when {by} "
                "started the thread; on real threads both calls can get through (a race "
                "between two start() calls)")

    assert seen == {(1, ("threads can only be started once",)),
                    (1, (overtaken("T0"),)), (1, (overtaken("T1"),))}
