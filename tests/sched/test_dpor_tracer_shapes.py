"""DPOR against the unreduced search on the tracer's shapes of issue 30 (SCHED-37).

Each program here made DPOR miss an outcome: an access made by a call recorded in the
step before the call (SCHED-41), or an access made in C that the tracer did not see, so
that two steps looked independent (SCHED-42, SCHED-43, SCHED-44).
"""

from __future__ import annotations

import pytest

from tests.sched import dpor_programs
from tests.sched.dpor_oracle import compare
from tests.sched.programs import needs_line_granularity


@pytest.mark.parametrize("program", dpor_programs.TRACER_PROGRAMS, ids=lambda p: p.__name__)
def test_dpor_sees_the_tracers_accesses_at_sync_granularity(program):
    """SCHED-37, SCHED-41, SCHED-42"""
    reduced, full, reduced_runs, full_runs = compare(program)
    assert len(full) > 1, "the program has one outcome: it checks nothing"
    assert reduced == full, (f"DPOR missed {full - reduced}, invented {reduced - full} "
                             f"({reduced_runs} vs {full_runs} schedules)")


@needs_line_granularity
@pytest.mark.parametrize("program", dpor_programs.TRACER_LINE_PROGRAMS, ids=lambda p: p.__name__)
def test_dpor_sees_the_tracers_accesses_at_line_granularity(program):
    """SCHED-37, SCHED-42, SCHED-43, SCHED-44"""
    reduced, full, reduced_runs, full_runs = compare(program, granularity="line")
    assert len(full) > 1, "the program has one outcome: it checks nothing"
    assert reduced == full, (f"DPOR missed {full - reduced}, invented {reduced - full} "
                             f"({reduced_runs} vs {full_runs} schedules)")
