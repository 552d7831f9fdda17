"""DPOR against the unreduced search: the same set of outcomes (SCHED-37).

Every hand-written program of ``dpor_programs`` runs under the reduced search
(DPOR's unbounded level, SCHED-33) and under ``Enumerate`` (every choice at every
choice point); the sets of outcomes (what the program reported, or the failure
kind and exception type) must be equal.
"""

from __future__ import annotations

import pytest

from coordkit.engine.schedulers import DFSScheduler
from tests.sched import dpor_programs, programs
from tests.sched.dpor_oracle import CheckedDPOR, compare, outcomes, unreduced


@pytest.mark.parametrize("program", dpor_programs.PROGRAMS, ids=lambda p: p.__name__)
def test_dpor_reaches_every_outcome_the_unreduced_search_reaches(program):
    """SCHED-37 (through SCHED-30..33: footprints, ANY steps, stutters, DPOR)."""
    reduced, full, reduced_runs, full_runs = compare(program)
    assert full, "the oracle saw no outcome"
    assert reduced == full, (f"DPOR missed {full - reduced}, invented {reduced - full} "
                             f"({reduced_runs} vs {full_runs} schedules)")


@pytest.mark.parametrize("program", dpor_programs.RACY, ids=lambda p: p.__name__)
def test_dpor_on_plain_shared_variables(program):
    """SCHED-37, SCHED-30: racing plain variables: the footprints hold the memory accesses
    the race detector's tracer reports."""
    reduced, full, _, _ = compare(program)
    assert reduced == full


def test_the_oracle_has_teeth():
    """SCHED-37: a search that stops after its first schedule misses outcomes the
    oracle sees on most programs, so equal sets are evidence, not a tautology."""
    class FirstOnly(DFSScheduler):
        def end(self, run):
            super().end(run)
            self._exhausted = True

    missed = 0
    for program in dpor_programs.PROGRAMS:
        first, _ = outcomes(program, FirstOnly(max_preemptions=0))
        full, _ = unreduced(program)
        assert first <= full
        missed += first != full
    assert missed >= 20, missed


def test_dpor_runs_fewer_schedules_than_the_unreduced_search():
    """SCHED-33: the reduction reduces (2 threads x 2 locked appends: 11,888 schedules
    unreduced; DPOR's last level a few dozen)."""
    _, _, reduced_runs, full_runs = compare(dpor_programs.locked_appends)
    assert reduced_runs * 100 < full_runs


@pytest.mark.parametrize("granularity", ["sync", pytest.param("line", marks=programs.needs_line_granularity)])
def test_a_run_prefix_analysed_once_gives_what_a_fresh_analysis_gives(granularity):
    """SCHED-33, SCHED-30: a search's next run repeats a prefix of the last one, and the
    happens-before analysis of that prefix is kept, not done again; memory is labelled
    by first touch (``mem#<n>``), so the prefix's labels are the same in both runs. On
    every run of every program, the kept analysis equals one made from scratch."""
    CheckedDPOR.checked = 0
    for program in [*dpor_programs.PROGRAMS, *dpor_programs.RACY]:
        outcomes(program, CheckedDPOR(max_preemptions=None), granularity=granularity)
    assert CheckedDPOR.checked > 400
