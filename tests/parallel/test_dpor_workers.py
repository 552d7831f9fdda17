"""DPOR split across worker processes (PAR-17..PAR-21): ``explore(strategy="dfs",
workers=2)`` gives the sequential search's verdict, classes and failure."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import coordkit
from coordkit.engine.parallel import split as split_module
from coordkit.engine.parallel.pool import Pool
from coordkit.engine.parallel.split import SplitSearch
from coordkit.engine.parallel.units import sendable_options
from coordkit.engine.schedulers import DFSScheduler
from coordkit.engine.search import run_options
from tests.parallel import programs
from tests.parallel.test_dpor_split import sequential
from tests.sched import dpor_programs

pytestmark = pytest.mark.timeout(120)

# Programs with more than a few classes, at least one job given away in each.
SOME = [dpor_programs.locked_appends, dpor_programs.notify_chooses_a_waiter,
        dpor_programs.queue_put_get, dpor_programs.semaphore_order,
        dpor_programs.fifo_queue_close_with_pending_dequeue, dpor_programs.barrier_indices]


def test_two_worker_processes_cover_the_sequential_classes():
    """PAR-19: same exhausted verdict and set of classes, from 2 processes (one pool for
    every program), with small jobs so that they are split and come back often."""
    with Pool(2) as pool:
        for fn in SOME:
            keys, failed, _ = sequential(fn)
            assert not failed
            options = run_options(fn, granularity="sync")
            search = SplitSearch(fn, sendable_options(options), frozenset(), pool,
                                 ran=lambda _: None, budget=lambda: 10**6,
                                 time_left=lambda: None, slice=2, keys=True)
            scheduler = DFSScheduler(max_preemptions=None)
            assert search.search(scheduler), fn.__name__
            assert scheduler.exhausted and search.keys == keys, fn.__name__
            assert search.cpu > 0


def test_explore_splits_a_dfs_search():
    """PAR-17, PAR-21: explore(strategy="dfs", workers=2): exhausted, the same coverage
    verdict and classes as without workers (this program has one run per class)."""
    kwargs = {"strategy": "dfs", "max_preemptions": None, "granularity": "sync",
              "max_schedules": 10_000}
    fn = functools.partial(programs.call, dpor_programs.semaphore_order)
    alone = coordkit.explore(fn, **kwargs)
    both = coordkit.explore(fn, workers=2, **kwargs)
    assert alone.exhausted and both.exhausted and both.failure is None
    assert _verdict(both.coverage) == _verdict(alone.coverage)


def _verdict(coverage: str | None) -> str | None:
    """What an exhausted search covered, without its counts (PAR-19: they may differ)."""
    return None if coverage is None else re.sub(r"\d+", "N", coverage)


def test_a_bounded_dfs_search_splits_too():
    """PAR-17: with a preemption bound, one level, exhausted as without workers."""
    kwargs = {"strategy": "dfs", "max_preemptions": 1, "granularity": "sync"}
    fn = dpor_programs.notify_all_waiters
    alone = coordkit.explore(fn, **kwargs)
    both = coordkit.explore(fn, workers=2, **kwargs)
    assert alone.exhausted and both.exhausted
    assert _verdict(both.coverage) == _verdict(alone.coverage)


@pytest.mark.parametrize("fn", [dpor_programs.lock_order_deadlock,
                                dpor_programs.exception_in_thread],
                         ids=lambda fn: fn.__name__)
def test_the_failure_reported_does_not_depend_on_timing(fn, monkeypatch):
    """PAR-20: the sequential search fails, so does the split one, and the failure (its
    kind, message and trace) is the same whatever the size of the jobs."""
    kwargs = {"strategy": "dfs", "max_preemptions": None, "granularity": "sync"}
    alone = coordkit.explore(fn, **kwargs)
    seen = set()
    for runs in (1, 3, 32):
        monkeypatch.setattr(split_module, "SLICE", runs)
        found = coordkit.explore(fn, workers=2, **kwargs).failure
        assert found is not None and found.kind == alone.failure.kind
        seen.add((found.kind, found.message, found.trace))
    assert len(seen) == 1


def test_a_worker_that_dies_has_its_job_run_again(tmp_path):
    """PAR-21 (PAR-5): the program kills its worker once; the job is run again and the
    search is still exhausted, with the death in the warnings."""
    program = functools.partial(programs.dies_once, str(tmp_path / "died"))
    result = coordkit.explore(program, strategy="dfs", max_preemptions=None, workers=2,
                              max_schedules=10_000)
    assert (tmp_path / "died").exists()
    assert result.exhausted and result.failure is None
    assert any("worker process died while running the DPOR subtree" in w
               for w in result.warnings), result.warnings


def test_the_benchmark_prints_both_worker_counts():
    """PAR-22: one run, in this process and with 1 and 2 workers, side by side, with the
    workers' CPU seconds and the load."""
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "benchmarks/dpor_parallel.py", "--small"],
                         capture_output=True, text=True, cwd=root, timeout=100,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if " sync " in line]
    assert [r[r.index("sync") + 1] for r in rows] == ["none", "1", "2"], out.stdout
    assert "load average before" in out.stdout and "cpu wkrs" in out.stdout


@pytest.mark.parametrize("fn", dpor_programs.RACY, ids=lambda fn: fn.__name__)
def test_at_auto_granularity_a_split_search_learns_and_starts_over(fn):
    """PAR-21 (RACE-6): the runs' racing sites become scheduling points and the search
    starts over with them, as in one process: exhausted, the same verdict."""
    kwargs = {"strategy": "dfs", "max_preemptions": None, "granularity": "auto"}
    alone = coordkit.explore(fn, **kwargs)
    both = coordkit.explore(fn, workers=2, **kwargs)
    assert alone.racing_sites >= 1 and both.racing_sites >= 1
    assert both.exhausted and _verdict(both.coverage) == _verdict(alone.coverage)


def test_budgets_and_ctrl_c_stop_a_split_search():
    """PAR-21: max_schedules is never passed (jobs in flight count), time_budget stops it
    unexhausted, Ctrl-C leaves no worker running (PAR-6)."""
    import multiprocessing

    fn = functools.partial(programs.call, dpor_programs.notify_chooses_a_waiter)
    kwargs = {"strategy": "dfs", "max_preemptions": None, "granularity": "sync", "workers": 2}
    few = coordkit.explore(fn, max_schedules=5, **kwargs)
    assert not few.exhausted and few.schedules_run == 5 and few.coverage is None

    def interrupt(runs: int, elapsed: float) -> None:
        if runs >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as stopped:
        coordkit.explore(fn, max_schedules=10_000, progress=interrupt, **kwargs)
    assert stopped.value.coordkit_result.interrupted
    assert multiprocessing.active_children() == []
