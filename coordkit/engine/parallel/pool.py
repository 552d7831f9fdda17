"""Worker processes on this machine, and the function each runs (PAR-1, PAR-5, PAR-6).

Workers are started with the ``forkserver`` context where there is one, else ``spawn``:
never plain ``fork``.  A forked child gets a copy of the parent's memory with only the
forking thread: a lock held by another thread (coordkit's watchdog worker, a program's
thread, the patched stdlib's own) stays held forever, and a greenlet's saved stack
belongs to a thread that does not exist there.  The fork server is a clean,
single-threaded process that has only imported coordkit, so its forks are safe and fast.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from coordkit import sync
from coordkit.engine.parallel.units import Summary, Unit, resume
from coordkit.engine.run import Session

__all__ = ["Pool"]

# What schedule index workers must not go past: the lowest failing index found so far.
_stop_above: Any = None
_NEVER = 2**62


def _context() -> Any:
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["coordkit.engine.parallel.pool"])
        return ctx
    return multiprocessing.get_context("spawn")


def _init(stop_above: Any) -> None:
    global _stop_above
    _stop_above = stop_above


def run_unit(unit: Unit) -> list[Summary]:
    """In a worker: run the unit's schedules in order, up to the first that fails, the
    lowest failing index any worker has found, or the time left."""
    scheduler = unit.scheduler
    resume(scheduler, unit.learned)
    deadline = None if unit.time_left is None else sync.real_monotonic() + unit.time_left
    summaries: list[Summary] = []
    with Session(unit.run_options(), quiet=True) as session:
        session.learning = False  # what runs teach takes effect at epochs (PAR-2)
        for index in range(unit.start, unit.stop):
            if index > _stop_above.value or (deadline is not None
                                              and sync.real_monotonic() >= deadline):
                break
            detected = session.detected_runs
            run = session.run(unit.fn, scheduler, run_index=index)
            summaries.append(Summary.of(index, run, session.detected_runs - detected))
            if run.failure is not None:
                break
    return summaries


class Pool:
    """``workers`` processes running units; a unit whose worker died is run again on a
    fresh pool, once (PAR-5); leaving the ``with`` ends every process (PAR-6)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._ctx = _context()
        self._stop_above = self._ctx.Value("q", _NEVER)
        self._executor: ProcessPoolExecutor | None = None
        self.warnings: list[str] = []

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(self.workers, mp_context=self._ctx,
                                                 initializer=_init, initargs=(self._stop_above,))
        return self._executor

    def _close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            return
        processes = list((getattr(executor, "_processes", None) or {}).values())
        for process in processes:
            if process.is_alive():
                process.terminate()
        executor.shutdown(wait=True, cancel_futures=True)
        for process in processes:
            process.join(timeout=5.0)

    def stop_above(self, index: int) -> None:
        """Workers start no schedule after ``index`` (a failure was found there)."""
        with self._stop_above.get_lock():
            self._stop_above.value = min(self._stop_above.value, index)

    def run(self, units: list[Unit], stopping: Any) -> list[Summary]:
        """Run ``units``; every summary, in index order.  ``stopping()`` is polled: true,
        the units are abandoned and ``KeyboardInterrupt`` raised."""
        self._stop_above.value = _NEVER
        summaries: list[Summary] = []
        retried: set[int] = set()
        pending = {self._pool().submit(run_unit, unit): unit for unit in units}
        while pending:
            done, _ = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            if stopping():
                raise KeyboardInterrupt
            for future in done:
                unit = pending.pop(future, None)
                if unit is None:  # lost with a worker that died: already submitted again
                    continue
                try:
                    got = future.result()
                except BrokenProcessPool:
                    pending = self._redo(unit, pending, retried)
                    continue
                summaries.extend(got)
                failed = [s.index for s in got if s.failure is not None]
                if failed:
                    self.stop_above(failed[0])
        return sorted(summaries, key=lambda s: s.index)

    def _redo(self, unit: Unit, pending: dict[Future[list[Summary]], Unit],
              retried: set[int]) -> dict[Future[list[Summary]], Unit]:
        """A worker died: every unit not done is run again on a fresh pool, each at most
        once more (a program that kills every worker that runs it is an error)."""
        lost = [unit, *pending.values()]
        if unit.start in retried:
            raise RuntimeError(
                f"a worker process died again running schedules {unit.start}..{unit.stop - 1} "
                "(does the program exit the process, or crash the interpreter?)")
        retried.add(unit.start)
        self.warnings.append(
            "a worker process died while running schedules "
            f"{min(u.start for u in lost)}..{max(u.stop for u in lost) - 1}; they were run "
            "again on a new worker")
        self._close()
        return {self._pool().submit(run_unit, u): u for u in lost}
