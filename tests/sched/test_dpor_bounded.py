"""The bounded search is reduced and stays sound under its bound (SCHED-71, SCHED-35).

``DFSScheduler(k, reduce_bound=True)`` (``strategy="dfs", max_preemptions=k``, and shrinking's search for
fewer preemptions) runs bounded partial-order reduction; ``Enumerate(k)``, the oracle,
runs every choice within ``k`` preemptions.  At every ``k`` the two reach the same
outcomes: on hand-written programs whose outcome is the order of critical sections,
and on generated programs of varied shape (``tests/sched/shapes.py``).
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, reject, settings

from coordkit.engine.run import RunOptions, Session
from coordkit.engine.schedulers import DFSScheduler
from tests.sched import dpor_programs, shapes
from tests.sched.dpor_oracle import Enumerate, outcomes, report
from tests.sched.programs import needs_line_granularity
from tests.sched.shapes import Plan

BOUNDS = (0, 1, 2, 3)
MAX_RUNS = 400  # of the oracle at a bound: a program that needs more is rejected
SLICE = {"sync": 8, "line": 3}
SCALE = max(1.0, settings().max_examples / 250)


def lock_order() -> None:
    """Two threads take one lock twice each; the outcome is the order they took it in."""
    lock, log = threading.Lock(), []

    def take(k: int) -> None:
        for _ in range(2):
            with lock:
                log.append(k)

    threads = [threading.Thread(target=take, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report(tuple(log))


def handoff() -> None:
    """A producer and a consumer over a one-slot buffer guarded by a Condition (while-loop
    waits, ``notify_all``); the outcome is the order of the operations."""
    cond, slot, log = threading.Condition(), [], []

    def produce() -> None:
        for i in range(2):
            with cond:
                while slot:
                    cond.wait()
                slot.append(i)
                log.append(("put", i))
                cond.notify_all()

    def consume() -> None:
        for _ in range(2):
            with cond:
                while not slot:
                    log.append("wait")
                    cond.wait()
                log.append(("got", slot.pop()))
                cond.notify_all()

    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report(tuple(log))


@pytest.mark.parametrize("program", [lock_order, handoff])
def test_the_bounded_search_reaches_what_every_schedule_within_the_bound_reaches(program):
    """SCHED-71: at every bound, the outcomes of the reduced bounded search equal the
    oracle's, in fewer schedules from bound 1 on.  Not merely equal sets of one outcome:
    each bound reaches more orders than the one below it."""
    with Session(RunOptions(granularity="sync", max_steps=2_000), quiet=True) as session:
        below: set = set()
        for k in (0, 1, 2):
            full, full_runs = outcomes(program, Enumerate(k), session=session)
            reduced, reduced_runs = outcomes(program, DFSScheduler(k, reduce_bound=True), session=session)
            assert reduced == full, (k, full - reduced, reduced - full)
            assert reduced_runs <= full_runs and (k == 0 or reduced_runs < full_runs)
            assert below <= full
            below = full
        assert len(below) > 2


class NoSleepSets(DFSScheduler):
    """The reduced bounded search without its sleep sets (SCHED-94): BPOR alone."""

    bounded_sleep_sets = False


def test_the_bounded_search_agrees_with_the_oracle_on_the_hand_written_programs():
    """SCHED-71, SCHED-94: on each of ``dpor_programs``' programs (locks, Conditions,
    Events, joins, yields, plain shared variables) the reduced bounded search, without and
    with sleep sets, reaches the oracle's outcomes at bounds 0..2
    (``benchmarks/dpor_campaign.py --bounded`` goes to 3), in fewer schedules in all, and
    fewer again with sleep sets."""
    runs = [0, 0, 0]
    with Session(RunOptions(granularity="sync", max_steps=2_000), quiet=True) as session:
        for program in [*dpor_programs.PROGRAMS, *dpor_programs.RACY]:
            for k in (0, 1, 2):
                full, full_runs = outcomes(program, Enumerate(k), session=session)
                runs[0] += full_runs
                for i, scheduler in enumerate((NoSleepSets, DFSScheduler), 1):
                    reduced, reduced_runs = outcomes(program, scheduler(k, reduce_bound=True),
                                                     session=session)
                    assert reduced == full, (program.__name__, k, scheduler.__name__,
                                             full - reduced, reduced - full)
                    runs[i] += reduced_runs
    assert runs[2] < runs[1] and runs[1] * 2 < runs[0], runs


def _agree(granularity: str, tmp_path) -> None:
    @settings(max_examples=int(SLICE[granularity] * SCALE), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(shapes.plans(granularity))
    def agree(plan: Plan) -> None:
        program = shapes.load(plan, tmp_path)
        with Session(RunOptions(granularity=granularity, max_steps=2_000), quiet=True) as session:
            for k in BOUNDS:
                try:
                    full, _ = outcomes(program, Enumerate(k), max_runs=MAX_RUNS, session=session)
                except AssertionError as exc:
                    if "not exhausted" in str(exc):
                        reject()  # too many schedules for the oracle
                    raise
                reduced, _ = outcomes(program, DFSScheduler(k, reduce_bound=True), max_runs=10 * MAX_RUNS,
                                      session=session)
                assert reduced == full, (k, plan, full - reduced, reduced - full)

    agree()


@pytest.mark.timeout(max(120, int(10 * SCALE * 3)))
def test_the_bounded_search_agrees_with_the_oracle_on_shapes_at_sync(tmp_path):
    """SCHED-71, SCHED-50: on generated programs at sync granularity, the reduced bounded
    search and the oracle reach the same outcomes at every bound 0..3 (the CI slice;
    ``benchmarks/dpor_campaign.py --bounded`` runs many more)."""
    _agree("sync", tmp_path)


@needs_line_granularity
@pytest.mark.timeout(max(120, int(10 * SCALE * 3)))
def test_the_bounded_search_agrees_with_the_oracle_on_shapes_at_line(tmp_path):
    """SCHED-71, SCHED-50: the same at line granularity."""
    _agree("line", tmp_path)


def test_the_bounded_search_says_it_covered_schedules_up_to_equivalence():
    """SCHED-36, SCHED-71: an exhausted reduced bounded search says its schedules stand
    for the rest; the unreduced one says it ran them all."""
    with Session(RunOptions(granularity="sync", max_steps=2_000), quiet=True) as session:
        for scheduler in (DFSScheduler(1, reduce_bound=True), DFSScheduler(1)):
            _, runs = outcomes(lock_order, scheduler, session=session)
            reduced = ", up to the order of non-conflicting steps" if scheduler.reduce_bound else ""
            assert scheduler.coverage("sync") == (
                f"all schedules with <= 1 preemption(s) at sync granularity{reduced} "
                f"({runs} schedules)")
