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
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from coordkit.engine.parallel.executor import Executor
from coordkit.engine.parallel.units import NEVER, Summary, Unit

__all__ = ["Pool", "in_processes"]

# What schedule index workers must not go past: the lowest failing index found so far.
_stop_above: Any = None
# Whether a worker is idle with no job to take: a running DPOR job comes back (PAR-24).
_come_back: Any = None


def _context() -> Any:
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["coordkit.engine.parallel.pool"])
        return ctx
    return multiprocessing.get_context("spawn")


def _init(stop_above: Any, come_back: Any) -> None:
    global _stop_above, _come_back
    _stop_above, _come_back = stop_above, come_back


def _run(unit: Unit) -> Any:
    """In a worker process: the unit's work (its schedules, or a DPOR job's runs), stopping
    at the shared lowest failure."""
    return unit.work(lambda: _stop_above.value, come_back=lambda: bool(_come_back.value))


def _end(executor: ProcessPoolExecutor) -> None:
    """End every process of ``executor``, whatever they are doing (PAR-6)."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    executor.shutdown(wait=True, cancel_futures=True)
    for process in processes:
        process.join(timeout=5.0)


def in_processes(fn: Callable[[Any], Any], items: Iterable[Any], workers: int) -> Iterator[Any]:
    """``fn(item)`` for each item, in ``workers`` processes started as units' are (PAR-7),
    yielded in the items' order; leaving early (an error, Ctrl-C) ends them (PAR-6).
    For independent jobs, such as ``coordkit verify``'s rows (PAR-16)."""
    executor = ProcessPoolExecutor(workers, mp_context=_context())
    try:
        futures = [executor.submit(fn, item) for item in items]
        for future in futures:
            yield future.result()
    finally:
        _end(executor)


class Pool(Executor):
    """``workers`` processes running units; a unit whose worker died is run again on a
    fresh pool, once (PAR-5); leaving the ``with`` ends every process (PAR-6)."""

    calls_back = True

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._ctx = _context()
        self._stop_above = self._ctx.Value("q", NEVER)
        self._come_back = self._ctx.Value("b", 0, lock=False)  # one writer: this process
        self._executor: ProcessPoolExecutor | None = None
        self._retried: set[str] = set()
        self.warnings: list[str] = []

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(self.workers, mp_context=self._ctx,
                                                 initializer=_init,
                                                 initargs=(self._stop_above, self._come_back))
        return self._executor

    def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            _end(executor)

    def stop_above(self, index: int | None) -> None:
        with self._stop_above.get_lock():
            self._stop_above.value = NEVER if index is None else min(self._stop_above.value, index)

    def come_back(self, wanted: bool) -> None:
        self._come_back.value = wanted

    def submit(self, unit: Unit) -> Future[list[Summary]]:
        return self._pool().submit(_run, unit)

    def wait(self, pending: Iterable[Any], timeout: float) -> list[Any]:
        return list(wait(list(pending), timeout=timeout, return_when=FIRST_COMPLETED).done)

    def cancel(self, pending: Iterable[Any]) -> None:
        for future in pending:
            future.cancel()

    def outcome(self, handle: Any, unit: Unit, pending: dict[Any, Unit]) -> list[Summary]:
        try:
            return handle.result()
        except BrokenProcessPool:
            self._redo(unit, pending)
            return []

    def _redo(self, unit: Unit, pending: dict[Any, Unit]) -> None:
        """A worker died: every unit not done is run again on a fresh pool, each at most
        once more (a program that kills every worker that runs it is an error)."""
        lost = [unit, *pending.values()]
        if unit.label in self._retried:
            raise RuntimeError(
                f"a worker process died again running {unit.label} "
                "(does the program exit the process, or crash the interpreter?)")
        self._retried.add(unit.label)
        self.warnings.append(
            f"a worker process died while running {_span(lost)}; they were run again on a "
            "new worker")
        self.close()
        pending.clear()
        pending.update({self.submit(u): u for u in lost})


def _span(units: list[Any]) -> str:
    """What ``units`` ran, for a message: a range of schedules, or the jobs' labels."""
    if all(isinstance(u, Unit) for u in units):
        return f"schedules {min(u.start for u in units)}..{max(u.stop for u in units) - 1}"
    return "; ".join(u.label for u in units)
