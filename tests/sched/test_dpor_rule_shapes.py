"""DPOR's footprint and pruning rules on the shapes of issue 30 (SCHED-45..49): each
program here missed an outcome the unreduced search reaches before its rule."""

from __future__ import annotations

import pytest

from coordkit.engine.schedulers import DFSScheduler
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
