"""DPOR's footprint and pruning rules on the shapes of issue 30 (SCHED-45..49): each
program here missed an outcome the unreduced search reaches before its rule."""

from __future__ import annotations

import threading

import pytest

from coordkit.engine.dpor import HappensBefore
from coordkit.engine.points import ANY, READ, WRITE, Effect, Point, Step
from coordkit.engine.run import RunOptions, Session
from coordkit.engine.schedulers import DFSScheduler, ReplayScheduler
from tests.sched import dpor_programs, programs
from tests.sched.dpor_oracle import CheckedDPOR, compare, outcomes


@pytest.mark.parametrize("program", dpor_programs.RULE_PROGRAMS, ids=lambda p: p.__name__)
def test_dpor_reaches_every_outcome_on_the_rule_shapes(program):
    """SCHED-45 (a stutter orders nothing), SCHED-46 (a wait that may give up is tried),
    SCHED-47 (a step that lets another proceed does not hide the write it replaced),
    SCHED-48/49 (a thread's start, observed): the same outcomes as the unreduced search."""
    reduced, full, reduced_runs, full_runs = compare(program)
    assert full, "the oracle saw no outcome"
    assert reduced == full, (f"DPOR missed {full - reduced}, invented {reduced - full} "
                             f"({reduced_runs} vs {full_runs} schedules)")


@programs.needs_line_granularity
@pytest.mark.parametrize("program", dpor_programs.RULE_PROGRAMS_AT_LINE, ids=lambda p: p.__name__)
def test_dpor_reaches_every_outcome_on_the_rule_shapes_at_line_granularity(program):
    """SCHED-45 at line granularity: the same outcomes as the unreduced search."""
    reduced, full, reduced_runs, full_runs = compare(program, granularity="line")
    assert full, "the oracle saw no outcome"
    assert reduced == full, (f"DPOR missed {full - reduced}, invented {reduced - full} "
                             f"({reduced_runs} vs {full_runs} schedules)")


@pytest.mark.parametrize("program", dpor_programs.RULE_PROGRAMS_AT_BOUND_ZERO,
                         ids=lambda p: p.__name__)
def test_bound_zero_keeps_the_schedules_without_preemption(program):
    """SCHED-34, SCHED-46: DPOR's first level (bound 0) reaches what every schedule
    without a preemption reaches: a join that only parked where the other threads were
    over the bound (not asleep) does not make the run a repeat."""
    dpor = CheckedDPOR(max_preemptions=None)
    level_zero, _ = outcomes(program, dpor, counted=lambda: dpor.bound == 0)
    bounded, _ = outcomes(program, DFSScheduler(max_preemptions=0, sleep_sets=False))
    assert bounded
    assert level_zero == bounded


def _end_then_a_join_after_a_read(read: str) -> bool:
    """Whether the worker's end races with the main thread's step that reads ``read``
    (``other``: a list the worker does not write; ``written``: one it does), then joins
    the ended worker, in one line."""
    def program():
        other, written = [0], [0]

        def work():
            written[0] = 1

        t = threading.Thread(target=work)
        t.start()
        if read == "other":
            _ = other[0]; t.join()  # noqa: E702 (one line: one step)
        else:
            _ = written[0]; t.join()  # noqa: E702

    # At line granularity, T1 runs (and ends) at the main thread's first point after start.
    with Session(RunOptions(granularity="line")) as session:
        run = session.run(program, ReplayScheduler([1], strict=False), footprints=True)
    steps = run.footprints
    end = next(s for s in steps if Effect("T1", WRITE, "end") in s.footprint)
    join = next(s for s in steps if Effect("T1", READ, "join") in s.footprint)
    assert join.point.op != "join"  # inside the line's step, after the read
    return (end.index, join.index) in HappensBefore(steps).races


@programs.needs_line_granularity
def test_a_read_of_what_the_end_does_not_write_keeps_a_join_let_proceed():
    """SCHED-32: a join of an ended thread after a read of an object the thread's end step
    does not write (a list of the threads to join) is still only let proceed by the end:
    run first, the read commutes with it and the join would have waited.  After a read of
    what that step wrote, it races."""
    assert not _end_then_a_join_after_a_read("other")
    assert _end_then_a_join_after_a_read("written")


@pytest.mark.parametrize("program", dpor_programs.AUTO_PROGRAMS, ids=lambda p: p.__name__)
def test_dpor_reaches_every_outcome_where_a_waiter_makes_a_point(program):
    """SCHED-56: at auto granularity a waker's point after itself exists only when a thread
    waited, so a wait is no stutter there and a release, set, notify or put never only lets
    a later operation proceed: the same outcomes as the unreduced search."""
    reduced, full, reduced_runs, full_runs = compare(program, granularity="auto")
    assert len(full) > 1, "the oracle saw one outcome: the program has no race to reverse"
    assert reduced == full, (f"DPOR missed {full - reduced}, invented {reduced - full} "
                             f"({reduced_runs} vs {full_runs} schedules)")


def _end_then_join(*after_join: Effect, before_join: tuple[Effect, ...] = ()) -> bool:
    """Whether a worker's last step (a release, then its end) races with the main
    thread's step that joins it and then has ``after_join`` (``before_join`` first)."""
    end = Step(0, Point(1, "release", "Lock#1"),
               [Effect("Lock#1", WRITE, "release"), Effect("T1", WRITE, "end"),
                Effect("x", WRITE, "store")])
    join = Step(1, Point(0, "join", "T1"), [*before_join, Effect("T1", READ, "join"), *after_join])
    return (0, 1) in HappensBefore([end, join]).races


def test_what_a_step_does_after_the_join_it_was_let_proceed_with_does_not_race():
    """SCHED-82: a join of a thread, and then code whose effects are unknown (``ANY``:
    ``sorted`` of a list) or a read of what the joined thread's last step wrote, is only let
    proceed by that step: run first, it would have waited at the join, having done
    neither.  Before the join, either races."""
    assert not _end_then_join(Effect(ANY, WRITE, "sorted"))
    assert not _end_then_join(Effect("x", READ, "load"))
    assert _end_then_join(before_join=(Effect(ANY, WRITE, "sorted"),))
    assert _end_then_join(before_join=(Effect("x", READ, "load"),))
