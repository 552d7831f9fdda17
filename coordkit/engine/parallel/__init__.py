"""Scale-out: an exploration's schedules run by index, in this process or in workers.

Random and PCT runs are each a function of ``(seed, run index)`` and of what the
search learned before the run's epoch (PAR-2), so schedule ``i`` is the same run
whichever process runs it.  ``search_indexed`` is the one path for those strategies:
with no workers (or one) it runs the indices here in order; with ``workers=N`` it hands
each epoch's indices to N processes as units and merges their summaries in index order,
so the result is the sequential search's (PAR-3).  A DPOR search hands out subtrees of
its search tree instead (``search_split``, ``split.py``: PAR-17..PAR-21).  With
``cluster=`` (a Dask client) the same units go to a Dask cluster: the pool and the
cluster are two executors behind one interface (``executor.Executor``), and the units,
the merge and the lowest-index rule are the same for both (PAR-10).
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Callable
from typing import Any

from coordkit.engine.parallel.executor import Executor
from coordkit.engine.parallel.units import Learned, Summary, Unit, epoch_end, resume, sendable_options
from coordkit.engine.run import Run, Session
from coordkit.engine.schedulers import Scheduler
from coordkit.engine.schedulers.base import starts_epoch
from coordkit.sync import real_monotonic

__all__ = ["check_cluster", "check_sendable", "check_workers", "connect", "search_indexed",
           "search_split"]

# How many units each worker gets per epoch: more balance the load, fewer cost less.
_UNITS_PER_WORKER = 4


def check_workers(workers: Any) -> int | None:
    """``workers`` as a number of processes, or None for this process (PAR-1)."""
    if workers is None:
        return None
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise TypeError(f"workers must be a positive int or None, got {workers!r}")
    if workers < 1:
        raise ValueError(f"workers must be a positive int or None, got {workers!r}")
    return workers


def check_cluster(cluster: Any, workers: int | None) -> Any:
    """``cluster`` as a ``distributed.Client``, or None (PAR-11).  Dask is not imported
    here: a program that made a Client has imported it already."""
    if cluster is None:
        return None
    distributed = sys.modules.get("distributed")
    if distributed is None or not isinstance(cluster, distributed.Client):
        raise TypeError(
            f"cluster must be a dask.distributed Client or None, got {cluster!r}: connect one "
            "with `from dask.distributed import Client; client = Client('tcp://scheduler:8786')` "
            "(pip install 'coordkit[dask]')")
    if workers is not None:
        raise ValueError(f"workers={workers} and cluster= were both given: the cluster's "
                         "workers run the schedules; leave workers unset")
    return cluster


def connect(address: str, timeout: float = 30.0) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` (PAR-12): an ImportError
    saying what to install when Dask is not installed, an OSError when no scheduler
    answers there within ``timeout`` seconds."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError(f"a Dask scheduler address needs dask.distributed ({exc}): "
                          "pip install 'coordkit[dask]'") from None
    return Client(address, timeout=timeout)


def check_sendable(name: str, fn: Any) -> None:
    """Refuse, naming it, a callable that cannot be sent to a worker process (PAR-4)."""
    if fn is None:
        return
    target = getattr(fn, "func", fn)  # a functools.partial sends its function by name
    what = getattr(target, "__qualname__", repr(target))
    advice = (f"{name}={what} cannot be sent to a worker process: define it at module level "
              "in an importable module (not a lambda, a nested function or a script run "
              "with -c), or run without workers")
    main = sys.modules.get("__main__")
    if getattr(target, "__module__", None) == "__main__" and not getattr(main, "__file__", None):
        raise TypeError(advice)
    try:
        pickle.dumps(fn)
    except Exception as exc:
        raise TypeError(f"{advice} ({type(exc).__name__}: {exc})") from None


def search_indexed(search: Any, session: Session, scheduler: Scheduler, *,
                   workers: int | None, cluster: Any = None) -> Run | None:
    """Run ``search``'s schedules by index until one fails or a budget is spent: the
    failing run (the lowest index that fails), or None (PAR-2, PAR-3, PAR-10)."""
    auto = session.learning
    session.learning = False  # what runs teach takes effect at epochs (PAR-2)
    if cluster is None and (workers is None or workers == 1):
        return _here(search, session, scheduler, auto)
    with _executor(search, workers, cluster) as executor:
        try:
            return _in_workers(search, session, scheduler, executor, auto)
        finally:
            search.warnings.extend(w for w in executor.warnings if w not in search.warnings)


def search_split(search: Any, session: Session, new_scheduler: Callable[[], Scheduler], *,
                 workers: int | None, cluster: Any = None) -> Run | None:
    """Run a DPOR search split into subtrees across workers (PAR-17..PAR-21): the failing
    run to report (PAR-20), or None.  At auto granularity a level whose runs saw a site
    racing that is not yet a scheduling point starts the search over with it, as the
    search in one process does."""
    from coordkit.engine.parallel import split as jobs

    learn = session.learning
    session.learning = False
    with _executor(search, workers, cluster) as executor:
        try:
            while True:
                split = jobs.SplitSearch(
                    search.fn, sendable_options(search.options), session.racing, executor,
                    ran=search.ran, budget=lambda: search.max_schedules - search.runs,
                    time_left=lambda: _time_left(search), stopping=lambda: session.interrupted,
                    slice=jobs.SLICE)
                split.next_index = search.runs
                split.search(search.scheduler, learn)
                if split.found:
                    return split.failing(session)
                if not split.learned:
                    return None
                session.racing = session.racing | split.learned
                search.scheduler = new_scheduler()
        finally:
            search.warnings.extend(w for w in executor.warnings if w not in search.warnings)


def _time_left(search: Any) -> float | None:
    # (the real clock: a worker cannot share a clock a test gave the search)
    return None if search.deadline is None else max(0.0, search.deadline - real_monotonic())


def _executor(search: Any, workers: int | None, cluster: Any) -> Executor:
    if cluster is None:
        from coordkit.engine.parallel.pool import Pool

        return Pool(workers or 1)
    from coordkit.engine.parallel.cluster import Cluster

    return Cluster(cluster, (search.fn, search.options.invariant))


def _here(search: Any, session: Session, scheduler: Scheduler, auto: bool) -> Run | None:
    learned = Learned(racing=session.racing)
    epoch: list[Summary] = []
    while search.runs < search.max_schedules:
        index = search.runs
        if starts_epoch(index):
            learned = learned.after(epoch, auto=auto)
            session.racing, epoch = learned.racing, []
        detected = session.detected_runs
        run = session.run(search.fn, scheduler, run_index=index)
        epoch.append(Summary.of(index, run, session.detected_runs - detected))
        search.ran(run)
        if run.failure is not None:
            return run
        if search.out_of_time():
            break
    session.racing = learned.after(epoch, auto=auto).racing  # all it learned, as in workers
    return None


def _in_workers(search: Any, session: Session, scheduler: Scheduler, pool: Executor,
                auto: bool) -> Run | None:
    learned = Learned(racing=session.racing)
    options = sendable_options(search.options)
    detected = 0
    while search.runs < search.max_schedules and not search.out_of_time():
        start = search.runs
        stop = min(epoch_end(start), search.max_schedules)
        # (the real clock: a worker cannot share a clock a test gave the search)
        left = None if search.deadline is None else max(0.0, search.deadline - real_monotonic())
        size = max(1, -(-(stop - start) // (pool.workers * _UNITS_PER_WORKER)))
        units = [Unit(search.fn, options, scheduler, learned, a, min(a + size, stop),
                      left) for a in range(start, stop, size)]
        summaries = pool.run(units, lambda: session.interrupted)
        failing = next((s.index for s in summaries if s.failure is not None), None)
        counted = [s for s in summaries if failing is None or s.index <= failing]
        for summary in counted:
            search.ran(summary)
            detected += summary.detected
        session.detected_runs = detected
        if failing is not None:
            return _again(search, session, scheduler, learned, failing, counted[-1])
        if len(summaries) < stop - start:
            break  # out of time in the workers
        learned = learned.after(summaries, auto=auto)
    session.racing = learned.racing
    return None


def _again(search: Any, session: Session, scheduler: Scheduler, learned: Learned, index: int,
           summary: Summary) -> Run:
    """The run a worker found failing, run again here to be shrunk and reported."""
    session.racing = learned.racing
    resume(scheduler, learned)
    detected = session.detected_runs
    run = session.run(search.fn, scheduler, run_index=index)
    session.detected_runs = detected
    if run.failure is None:
        raise RuntimeError(
            f"schedule {index} failed in a worker process ({summary.failure}) but not when "
            "run again here: the program does not behave the same in every run of a schedule "
            "(does it read real time, randomness or process-wide state?)")
    return run

