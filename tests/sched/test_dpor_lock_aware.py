"""DPOR under the lock-aware equivalence against the unreduced search (SCHED-80, SCHED-81,
SCHED-83): the same set of outcomes on hand-written programs (critical sections, while-loop
Condition waits, nested locks, notify against notify_all) and on generated ones of the
critical-section theme; fewer schedules than trace equivalence on issue 33's buffer."""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, reject, settings

from coordkit.engine.dpor import Coarsening, HappensBefore
from coordkit.engine.points import READ, WRITE, Effect, Point, Step
from coordkit.engine.run import RunOptions, Session
from coordkit.engine.schedulers import DFSScheduler, ReplayScheduler
from coordkit.engine.schedulers.dfs import _conflict, _summary
from tests.sched import dpor_programs, shapes
from tests.sched.dpor_oracle import compare, outcomes
from tests.sched.shapes import Plan

MAX_RUNS = 300  # of the unreduced search, per generated program (beyond: rejected)
# Under the nightly profile: every hand-written program, more generated ones (SCHED-51).
NIGHTLY = settings().max_examples >= settings.get_profile("nightly").max_examples


def _agrees(program, granularity: str = "sync") -> tuple[int, int]:
    reduced, full, reduced_runs, full_runs = compare(program, granularity=granularity,
                                                     reuse=True, equivalence="lock-aware")
    assert full, "the oracle saw no outcome"
    assert reduced == full, (f"lock-aware DPOR missed {full - reduced}, invented "
                             f"{reduced - full} ({reduced_runs} vs {full_runs} schedules)")
    return reduced_runs, full_runs


@pytest.mark.parametrize("program", dpor_programs.SECTION_PROGRAMS, ids=lambda p: p.__name__)
def test_lock_aware_dpor_reaches_every_outcome_on_critical_sections(program):
    """SCHED-80, SCHED-81, SCHED-83: critical sections that conflict only through what
    follows them, through a third object, nested in either order, blocking inside; while
    loop waits woken by notify or notify_all; a tried lock."""
    _agrees(program)


@pytest.mark.skipif(not NIGHTLY, reason="every hand-written program: nightly profile only")
@pytest.mark.parametrize("program", dpor_programs.PROGRAMS + dpor_programs.RULE_PROGRAMS,
                         ids=lambda p: p.__name__)
@pytest.mark.timeout(600)
def test_lock_aware_dpor_reaches_every_outcome_on_the_hand_written_programs(program):
    """SCHED-83: every hand-written program of the trace-equivalence evidence, under the
    lock-aware equivalence too (about 7 minutes on a loaded machine: nightly)."""
    _agrees(program)


@pytest.mark.timeout(180)
def test_lock_aware_dpor_agrees_with_the_unreduced_search_on_generated_sections(tmp_path):
    """SCHED-83, SCHED-50: generated programs of the critical-section theme (a CI slice;
    the campaign runs hundreds: ``dpor_campaign.py --theme sections --equivalence
    lock-aware``)."""

    @settings(max_examples=100 if NIGHTLY else 8, deadline=None, database=None,
              derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(shapes.plans("sync", "sections"))
    def agree(plan: Plan) -> None:
        try:
            reduced, full, _, _ = compare(shapes.load(plan, tmp_path), max_runs=MAX_RUNS,
                                          reuse=True, equivalence="lock-aware")
        except AssertionError as exc:
            if "not exhausted" in str(exc):
                reject()
            raise
        assert reduced == full, (plan, full - reduced, reduced - full)

    agree()


def _classes(program, equivalence: str) -> tuple[int, set]:
    dpor = DFSScheduler(None, equivalence=equivalence)
    seen, _ = outcomes(program, dpor, counted=lambda: dpor.bound is None)
    return dpor.classes, seen


@pytest.mark.parametrize("program", dpor_programs.SECTION_PROGRAMS_BEYOND_THE_ORACLE,
                         ids=lambda p: p.__name__)
def test_lock_aware_dpor_reaches_the_trace_outcomes_in_fewer_classes(program):
    """SCHED-80, SCHED-81, SCHED-96, SCHED-97: while-loop waiters woken by ``notify`` and
    ``notify_all``, and issue 33's buffer family: the same outcomes as DPOR under trace
    equivalence (these are too big for the unreduced oracle), in fewer classes (trace /
    lock-aware: notify one of two waiters 24 / 14, notify_all 30 / 12, buffers 1P/2C/2
    40 / 7, 2P/1C/1 20 / 2, 2P/2C/1 100 / 14)."""
    trace, trace_seen = _classes(program, "trace")
    lock_aware, seen = _classes(program, "lock-aware")
    assert seen == trace_seen
    assert lock_aware < trace


@pytest.mark.parametrize(("program", "trace", "lock_aware"), [
    (dpor_programs.buffer(1, 2, 2), 40, 7), (dpor_programs.buffer(2, 2, 1), 100, 14)],
    ids=["1p2c2", "2p2c1"])
def test_a_resumed_wait_orders_nothing_against_later_notifies(program, trace, lock_aware):
    """SCHED-95: a woken waiter's resume does not conflict with the notifies after the one
    that woke it, so where it resumes among them makes no class of its own (before the
    rule: trace 208 and 512, lock-aware 76 and 152 classes; lock-aware 40 and 80 before
    SCHED-96 and SCHED-97)."""
    assert _classes(program, "trace")[0] == trace
    assert _classes(program, "lock-aware")[0] == lock_aware


def test_the_coverage_names_the_equivalence():
    """SCHED-36, SCHED-83: an exhausted lock-aware search says which classes it counted."""
    dpor = DFSScheduler(None, equivalence="lock-aware")
    outcomes(dpor_programs.locked_appends, dpor)
    text = dpor.coverage("sync")
    assert "lock-aware equivalence classes" in text and "critical sections" in text


def test_lock_aware_needs_an_unbounded_search():
    """SCHED-83: the lock-aware equivalence is DPOR's unbounded search's (BPOR and the
    unreduced bounded search keep trace equivalence)."""
    with pytest.raises(ValueError, match="max_preemptions=None"):
        DFSScheduler(2, equivalence="lock-aware")
    with pytest.raises(ValueError, match="equivalence must be one of"):
        DFSScheduler(None, equivalence="locks")


def _step(k: int, thread: int, op: str, obj: str, *effects: Effect) -> Step:
    return Step(k, Point(thread, op, obj), [Effect(obj, WRITE, op), *effects])


def _two_sections(second_body: list[Effect]) -> list[Step]:
    """Thread 1's section writes ``a``; then thread 2's, whose acquire step does
    ``second_body``."""
    return [_step(0, 1, "acquire", "Lock#1", Effect("mem:a", WRITE, "store")),
            _step(1, 1, "release", "Lock#1"),
            _step(2, 2, "acquire", "Lock#1", *second_body),
            _step(3, 2, "release", "Lock#1")]


def test_sections_that_do_not_conflict_neither_race_nor_order():
    """SCHED-80: two plain sections of one lock whose bodies do not conflict: no race, and
    the release -> acquire orders nothing; under trace equivalence their acquires race."""
    steps = _two_sections([Effect("mem:b", READ, "load")])
    lock_aware = HappensBefore(steps, lock_aware=True)
    assert lock_aware.races == [] and not lock_aware.hb(1, 2)
    assert HappensBefore(steps).races == [(0, 2)]


def test_sections_that_conflict_race_at_their_acquires():
    """SCHED-80: a conflict between the bodies is the race of the two sections: their
    acquires (before the first section's write, its thread holds the lock)."""
    steps = _two_sections([Effect("mem:a", READ, "load")])
    assert HappensBefore(steps, lock_aware=True).races == [(0, 2)]


def test_a_read_after_the_section_of_what_the_other_section_wrote_races():
    """SCHED-80: the brief's counterexample to dropping only the race: thread 2 reads ``a``
    after its section, which did not conflict with thread 1's; ordered through the lock,
    that read would never be reversed.  It races with the section that wrote ``a``."""
    steps = _two_sections([Effect("mem:b", READ, "load")])
    steps.append(Step(4, Point(2, "line", ""), [Effect("mem:a", READ, "load")]))
    races = HappensBefore(steps, lock_aware=True).races
    assert races == [(0, 4)]


def test_nested_and_tried_locks_are_not_relaxed():
    """SCHED-80: a section that takes another lock, and a lock that is tried, keep trace
    equivalence's order: their acquires race."""
    nested = [_step(0, 1, "acquire", "Lock#1"),
              _step(1, 1, "acquire", "Lock#2"),
              _step(2, 1, "release", "Lock#2"),
              _step(3, 1, "release", "Lock#1"),
              _step(4, 2, "acquire", "Lock#1"),
              _step(5, 2, "release", "Lock#1")]
    assert (0, 4) in HappensBefore(nested, lock_aware=True).races
    tried = _two_sections([])
    tried.append(Step(4, Point(2, "acquire", "Lock#1"), [Effect("Lock#1", READ, "try")]))
    assert (0, 2) in HappensBefore(tried, lock_aware=True).races


def test_waits_commute_unless_a_notify_chooses_between_them():
    """SCHED-81: two waits on one Condition (each writes its list of waiters) commute
    unless a notify that woke some of the waiters but not all (``choose``) observed
    their order; sleep sets compare them the same way."""
    def run(*notify: Effect) -> list[tuple[int, int]]:
        steps = [Step(0, Point(1, "wait", "Condition#1"), [Effect("Condition#1", WRITE, "wait")]),
                 Step(1, Point(2, "wait", "Condition#1"), [Effect("Condition#1", WRITE, "wait")]),
                 Step(2, Point(3, "notify", "Condition#1"),
                      [Effect("Condition#1", WRITE, "notify"), *notify])]
        return HappensBefore(steps, lock_aware=True).races

    assert (0, 1) not in run()
    assert (0, 1) in run(Effect("Condition#1", READ, "choose"))
    wait = _summary([Effect("Condition#1", WRITE, "wait")])
    notify = _summary([Effect("Condition#1", WRITE, "notify")])
    unobserved = Coarsening(frozenset(), frozenset())
    observed = Coarsening(frozenset(), frozenset({"Condition#1"}))
    assert _conflict(wait, wait) and _conflict(wait, wait, observed)
    assert not _conflict(wait, wait, unobserved)
    assert _conflict(wait, notify, unobserved)


def test_a_notify_of_some_waiters_records_that_it_chose():
    """SCHED-81: ``notify()`` with two waiters records a ``choose`` of its Condition;
    ``notify_all()`` does not."""
    def program(all_: bool) -> None:
        cond = threading.Condition()
        state = {"n": 0}

        def waiter():
            with cond:
                state["n"] += 1
                cond.wait(timeout=1.0)

        threads = [threading.Thread(target=waiter) for _ in range(2)]
        for t in threads:
            t.start()
        with cond:
            while state["n"] < 2:
                cond.wait(timeout=0.1)
            cond.notify_all() if all_ else cond.notify()
        for t in threads:
            t.join()

    def chose(all_: bool) -> bool:
        with Session(RunOptions(granularity="sync")) as session:
            run = session.run(lambda: program(all_), ReplayScheduler([], strict=False),
                              footprints=True)
        return any(e.op == "choose" for s in run.footprints for e in s.footprint)

    assert chose(False) and not chose(True)


def test_the_sections_theme_draws_every_shape_it_claims():
    """SCHED-50, SCHED-83: the critical-section theme draws each of its operations
    (while-loop waits, read-only sections, sections on two locks and nested in either
    order, notify and notify_all), and each plan's source compiles."""
    seen: set[str] = set()

    @settings(max_examples=200, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(shapes.plans("sync", "sections"))
    def draw(plan: Plan) -> None:
        compile(shapes.source(plan), "<plan>", "exec")
        seen.update(op[0] for spec in plan.threads for op in spec.ops)

    draw()
    assert set(shapes.SECTIONS) <= seen, set(shapes.SECTIONS) - seen
