"""DPOR against the unreduced search on the tracer's shapes of issue 30 (SCHED-37).

Each program here made DPOR miss an outcome on the tracer before issue 30's fix:

* an access made by a call recorded in the step before the call, or a loop's reads
  recorded once where it began (SCHED-41: ``append_of_a_point``, ``insert_of_a_point``,
  ``extend_of_a_point``, ``line_loop_vs_insert``);
* a call of code the tracer does not see, or an operand it could not name, whose step
  did not depend on everything (SCHED-42: ``line_insort_vs_append``,
  ``line_shuffle_vs_read``, ``line_read_through_an_item``);
* a C function or method whose access was not named (SCHED-43: ``setattr_between_points``,
  ``line_setattr``, ``line_getattr_vs_setattr``, ``line_delattr_vs_getattr``,
  ``line_operator_setitem``, ``line_unbound_dict_update``, ``line_sorted_vs_append``,
  ``line_reduce_vs_extend``, ``line_map_vs_setitem``);
* an attribute reached through its ``__dict__`` (SCHED-44: ``line_vars_item``).
"""

from __future__ import annotations

import pytest

from tests.sched import dpor_programs
from tests.sched.dpor_oracle import compare
from tests.sched.programs import needs_line_granularity


def _agrees(program, granularity: str) -> None:
    reduced, full, reduced_runs, full_runs = compare(program, granularity=granularity)
    assert len(full) > 1, "the program has one outcome: it checks nothing"
    assert reduced == full, (f"DPOR missed {full - reduced}, invented {reduced - full} "
                             f"({reduced_runs} vs {full_runs} schedules)")


@pytest.mark.parametrize("program", dpor_programs.TRACER_PROGRAMS, ids=lambda p: p.__name__)
def test_dpor_sees_the_tracers_accesses_at_sync_granularity(program):
    """SCHED-37, SCHED-41, SCHED-43"""
    _agrees(program, "sync")


@needs_line_granularity
@pytest.mark.parametrize("program", dpor_programs.TRACER_LINE_PROGRAMS, ids=lambda p: p.__name__)
def test_dpor_sees_the_tracers_accesses_at_line_granularity(program):
    """SCHED-37, SCHED-41, SCHED-42, SCHED-43, SCHED-44"""
    _agrees(program, "line")
