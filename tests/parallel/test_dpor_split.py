"""DPOR split into subtrees (PAR-17..PAR-20), in this process: the split search's
bookkeeping under many orders of jobs coming back (``Inline``), compared with the
sequential search by the classes of runs each covers (PAR-19)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from coordkit.engine.parallel.split import Inline, SplitSearch, class_key
from coordkit.engine.parallel.units import sendable_options
from coordkit.engine.run import Session
from coordkit.engine.schedulers import DFSScheduler
from coordkit.engine.search import run_options
from tests.sched import dpor_programs, shapes
from tests.sched.programs import needs_line_granularity

pytestmark = pytest.mark.timeout(120)

# (seed of the order jobs come back in, runs per job, workers): one job at a time,
# tiny slices with many workers (a split at nearly every run), in between, and long
# slices cut short when a worker is idle (PAR-24: every job may come back after 2 runs).
ORDERS = [(0, 1, 8), (1, 3, 2), (2, 8, 3), (3, 64, 2)]


def sequential(fn, granularity="sync", max_preemptions=None, max_runs=10**6):
    """The sequential search: the class keys of its last level, whether it failed."""
    scheduler = DFSScheduler(max_preemptions=max_preemptions)
    keys, failed = set(), []
    with Session(run_options(fn, granularity=granularity), quiet=True) as session:
        session.learning = False
        for _ in range(max_runs):
            if scheduler.exhausted or failed:
                break
            classes, level = scheduler.classes, scheduler.level
            run = session.run(fn, scheduler, run_index=0)
            if run.failure is not None:
                failed.append(class_key(run.footprints))
            elif scheduler.level != level:
                keys = set()
            elif scheduler.classes > classes:
                keys.add(class_key(run.footprints))
    return keys, failed, scheduler


def split(fn, seed, runs, workers, granularity="sync", max_preemptions=None):
    """The split search in this process, jobs coming back in an order drawn from ``seed``."""
    scheduler = DFSScheduler(max_preemptions=max_preemptions)
    options = run_options(fn, granularity=granularity)
    with Session(options, quiet=True) as session:
        session.learning = False
        search = SplitSearch(fn, sendable_options(options), frozenset(),
                             Inline(session, workers, seed), ran=lambda _: None,
                             budget=lambda: 10**9, time_left=lambda: None, slice=runs, back=2,
                             keys=True)
        search.search(scheduler)
    return search, scheduler


PASSING = [fn for fn in dpor_programs.PROGRAMS if not sequential(fn)[1]]
FAILING = [fn for fn in dpor_programs.PROGRAMS if fn not in PASSING]


def test_the_programs_include_failing_ones():
    assert len(PASSING) > 20 and FAILING


@pytest.mark.parametrize("fn", PASSING, ids=lambda fn: fn.__name__)
def test_split_search_covers_the_sequential_classes(fn):
    """PAR-18, PAR-19: same exhausted verdict, same set of classes, whatever the split."""
    keys, _, reference = sequential(fn)
    assert reference.exhausted
    for seed, runs, workers in ORDERS:
        search, scheduler = split(fn, seed, runs, workers)
        assert scheduler.exhausted and not search.found
        assert search.keys == keys, (seed, runs, workers)
        assert scheduler.coverage("sync") is not None


@pytest.mark.parametrize("fn", FAILING, ids=lambda fn: fn.__name__)
def test_split_search_reports_one_failure_whatever_the_order(fn):
    """PAR-20: a failure is found when the sequential search finds one, and the one
    reported (the least class key of the level's failures) does not depend on the order
    jobs come back in."""
    _, failed, _ = sequential(fn)
    chosen = set()
    for seed, runs, workers in ORDERS:
        search, scheduler = split(fn, seed, runs, workers)
        assert search.found and not scheduler.exhausted
        chosen.add(min(f.key for f in search.found))
    assert len(chosen) == 1 and failed


def test_a_bounded_search_splits_too():
    """PAR-17: a search with a preemption bound (one level) covers the same classes."""
    fn = dpor_programs.notify_all_waiters
    keys, _, _ = sequential(fn, max_preemptions=1)
    search, scheduler = split(fn, 3, 2, 4, max_preemptions=1)
    assert scheduler.exhausted and search.keys == keys


def test_rooted_search_replays_its_root_and_never_leaves_it():
    """PAR-17: ``rooted(depth, thread)`` runs through the root's choices, takes ``thread``
    there, and backtracks only below the root."""
    fn = dpor_programs.locked_appends
    whole = DFSScheduler(max_preemptions=None).at_level(3)
    with Session(run_options(fn, granularity="sync"), quiet=True) as session:
        session.learning = False
        session.run(fn, whole)
        root = whole._path[0]
        other = next(t for t in root.tids if t != root.chosen)
        part = whole.rooted(0, other)
        first = True
        while not part.subtree_done:
            run = session.run(fn, part)
            assert run.choices[0][1] == root.tids.index(other)
            if first:
                assert part._path[0].chosen == other and part.root == 1
                first = False
        assert part._path[0].chosen == other  # never backtracked above its root


# Generated programs per granularity in CI; the nightly profile scales them up.
GENERATED = {"sync": 25, "line": 8}
SCALE = max(1.0, settings().max_examples / 250)


@pytest.mark.parametrize("granularity", ["sync", pytest.param("line", marks=needs_line_granularity)])
@pytest.mark.timeout(max(120, int(10 * SCALE * 3)))
def test_split_search_covers_the_sequential_classes_of_generated_programs(granularity, tmp_path):
    """PAR-18, PAR-19 on tests/sched/shapes.py's programs: the same verdict, and every
    class the sequential search covers (a failure where it finds one), under an order,
    job size and number of workers drawn for each."""

    # Derandomized in CI: a nightly run found a shape the split search misses a class of
    # (below, a strict xfail); the CI slice must not draw it at random.
    @settings(max_examples=int(GENERATED[granularity] * SCALE), deadline=None, database=None,
              derandomize=SCALE == 1.0,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(shapes.plans(granularity), st.integers(0, 99), st.integers(1, 6), st.integers(2, 4))
    def agree(plan, seed, runs, workers):
        fn = shapes.load(plan, tmp_path)
        keys, failed, reference = sequential(fn, granularity, max_runs=400)
        if not reference.exhausted and not failed:
            reject()  # too many schedules for a quick test
        search, scheduler = split(fn, seed, runs, workers, granularity)
        assert bool(search.found) == bool(failed), plan
        if not failed:
            # Every class the sequential search covers (PAR-18).  Not always only those:
            # on some shapes (a Timer's waits) the sequential search's sleep sets block,
            # as a repeat, a run whose happens-before differs from every run it completes,
            # and a split search, sleeping fewer branches, completes it.
            assert scheduler.exhausted and keys <= search.keys, (plan, keys - search.keys)

    agree()


@needs_line_granularity
def test_a_daemon_and_a_timer_at_line_granularity(tmp_path):
    """PAR-18, SCHED-31: the nightly campaign's counterexample.  The daemon ends before
    the program in one order and is cut off by its end in the other; the end of the run
    read nothing of the daemon's, so a search that took the first order first (the split
    one, its default choices drawn from another run's waits) never tried the other."""
    plan = shapes.Plan((
        shapes.Spec("main", "main", 0.0, (("start", 2), ("start", 1), ("incr",))),
        shapes.Spec("daemon", "main", 0.0, (("attr_read",),)),
        shapes.Spec("c_timer", "main", 0.0, ())), ())
    fn = shapes.load(plan, tmp_path)
    keys, failed, _ = sequential(fn, "line")
    search, scheduler = split(fn, 26, 1, 4, "line")
    assert not failed and scheduler.exhausted and keys == search.keys


def unreduced_keys(fn, granularity):
    """The class keys of every run of the search without reduction (every interleaving)."""
    scheduler, keys = DFSScheduler(max_preemptions=None, sleep_sets=False), set()
    with Session(run_options(fn, granularity=granularity), quiet=True) as session:
        session.learning = False
        while not scheduler.exhausted:
            keys.add(class_key(session.run(fn, scheduler, run_index=0, footprints=True).footprints))
    return keys


def _daemon_then_c_thread():
    log = []

    def daemon():
        pass
    threading.Thread(target=daemon, daemon=True).start()
    threading.Thread(target=log.append, args=(1,)).start()
    len(log)
    x = 1  # noqa: F841  (a last line: the program's end comes after it)


@needs_line_granularity
def test_the_sequential_search_covers_every_class_of_a_daemon_and_a_c_thread():
    """SCHED-31, PAR-19's class keys: the sequential DPOR search covers every class the
    search without reduction covers.  The split search found one it did not: the main
    thread's end, asleep after its run before the C thread's end, became the program's
    end (cutting the daemon off) once the C thread had ended first; once a daemon has
    started, the end that leaves one thread to end conflicts with the others' ends, so the
    sleep set wakes it."""
    keys, failed, scheduler = sequential(_daemon_then_c_thread, "line")
    assert not failed and scheduler.exhausted
    assert unreduced_keys(_daemon_then_c_thread, "line") == keys


def test_a_subtree_search_keeps_the_equivalence_and_bound_of_its_search():
    """PAR-17, SCHED-80: a search sent to a worker (pickled, or split off as a subtree)
    analyses its runs as the whole search does: lock-aware where it is, and sparing no
    race under a bound (SCHED-71)."""
    import pickle

    lock_aware = DFSScheduler(None, equivalence="lock-aware")
    bounded = DFSScheduler(2)
    for part in (lock_aware.subtree(), pickle.loads(pickle.dumps(lock_aware))):
        assert part._hb.lock_aware and part._hb.proceeding
    for part in (bounded.subtree(), pickle.loads(pickle.dumps(bounded))):
        assert not part._hb.lock_aware and not part._hb.proceeding


def test_jobs_are_short_where_the_backend_cannot_call_them_back():
    """PAR-24: a backend that can ask running jobs back (worker processes) gets jobs of
    ``slice`` runs; one that cannot (a Dask cluster) gets jobs of ``back`` runs."""
    from coordkit.engine.parallel.executor import Executor

    class Deaf(Executor):
        workers = 2

    def search(executor):
        return SplitSearch(dpor_programs.PROGRAMS[0], {}, frozenset(), executor,
                           ran=lambda _: None, budget=lambda: 1, time_left=lambda: None,
                           slice=128, back=16)

    with Session(run_options(dpor_programs.PROGRAMS[0]), quiet=True) as session:
        assert search(Inline(session, 2, 0)).slice == 128
    assert search(Deaf()).slice == 16
