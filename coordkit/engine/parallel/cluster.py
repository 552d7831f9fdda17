"""The same units of work on a Dask cluster (PAR-10..PAR-14).

Imported only when ``explore`` is given ``cluster=``: ``import coordkit`` never imports
Dask.  Each unit is one task; a worker process runs one unit at a time (a controlled run
patches the process's stdlib, so two in one process would meet), and reads the lowest
failing index found so far from a Dask ``Variable``, at most every ``_CHECK_EVERY``
seconds (a read is a round trip to the scheduler).  The variable is deleted when the
search ends: a unit still running then (Dask cannot stop a running task) stops at its
next read.  Dask itself runs again the tasks of a worker that died.
"""

from __future__ import annotations

import contextlib
import pickle
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import cloudpickle
import distributed

from coordkit import sync
from coordkit.engine.parallel.executor import Executor
from coordkit.engine.parallel.units import NEVER, Summary, Unit

__all__ = ["Cluster"]

_CHECK_EVERY = 0.2
# One controlled run at a time in a process, whatever the worker's number of threads.
_ONE_AT_A_TIME = threading.Lock()
_HOWTO = "see docs/how-to/dask-cluster.md"


def _version() -> str:
    """This process's coordkit version (the package is imported: this module is in it)."""
    return str(sys.modules["coordkit"].__version__)


def _loads(sent: bytes) -> tuple[str, str | None]:
    """On a worker: its coordkit version, and what unpickling the program raised (a module
    this worker cannot import), or None."""
    try:
        pickle.loads(sent)
    except Exception as exc:
        return _version(), f"{type(exc).__name__}: {exc}"
    return _version(), None


def _stop_reader(name: str) -> Callable[[], int]:
    """The lowest failing index, read from the variable at most every ``_CHECK_EVERY`` s;
    once the search has deleted it, every index is past it."""
    variable = distributed.Variable(name)
    last = [-_CHECK_EVERY, NEVER]

    def stop_above() -> int:
        now = sync.real_monotonic()
        if now - last[0] >= _CHECK_EVERY:
            try:
                last[1] = int(variable.get(timeout=1))
            except Exception:  # deleted (the search is over) or unreachable: stop
                last[1] = -1
            last[0] = now
        return last[1]

    return stop_above


def _run(sent: bytes, stop_name: str) -> Any:
    """A Dask task: the unit's schedules, one unit at a time in this process.  The unit
    comes pickled, and is unpickled here: a module it needs that this worker cannot
    import is then the task's ImportError, where Dask, unpickling a task's arguments
    itself, would drop the worker's connection and leave the task waiting (PAR-13)."""
    unit = pickle.loads(sent)
    with _ONE_AT_A_TIME:
        return unit.work(_stop_reader(stop_name))


class Cluster(Executor):
    """Units as tasks on the cluster ``client`` is connected to; ``workers`` is its number
    of worker processes, each running one unit at a time."""

    def __init__(self, client: distributed.Client, program: tuple[Any, ...]) -> None:
        self.client = client
        self.warnings: list[str] = []
        self.workers = max(1, len(client.nthreads()))
        self._check(program)
        self._stop = distributed.Variable(f"coordkit-stop-{uuid.uuid4().hex}", client=client)
        self._lowest = NEVER
        self._finished = threading.Event()

    def _check(self, program: tuple[Any, ...]) -> None:
        """Every worker runs this coordkit and can unpickle ``program`` (the function and
        invariant, with what they refer to), before any unit is sent (PAR-13)."""
        try:
            answers = self.client.run(_loads, cloudpickle.dumps(program))
        except ImportError as exc:
            raise RuntimeError(
                f"the Dask workers cannot import coordkit ({exc}): install coordkit "
                f"{_version()} in the workers' environment ({_HOWTO})") from None
        for worker, (version, problem) in sorted(answers.items()):
            if version != _version():
                raise RuntimeError(
                    f"the Dask worker {worker} runs coordkit {version}, this process "
                    f"{_version()}: install the same version on the workers ({_HOWTO})")
            if problem is not None:
                raise RuntimeError(
                    f"the Dask worker {worker} cannot load the program ({problem}): its "
                    "modules must be importable on every worker (install its package there "
                    f"or put it on their PYTHONPATH; {_HOWTO})")

    @contextlib.contextmanager
    def watching(self, what: str) -> Iterator[None]:
        """A worker that left the cluster meanwhile (it died, and Dask ran its units
        again) is reported in ``warnings`` (PAR-14)."""
        before = set(self.client.nthreads())
        yield
        gone = before - set(self.client.nthreads())
        if gone:
            self.warnings.append(
                f"Dask worker(s) {', '.join(sorted(gone))} left the cluster while {what} "
                "ran; Dask ran their units again")

    def stop_above(self, index: int | None) -> None:
        lowest = NEVER if index is None else min(self._lowest, index)
        if lowest != self._lowest or index is None:
            self._lowest = lowest
            self._stop.set(lowest)

    def submit(self, unit: Unit) -> distributed.Future:
        # cloudpickle (a Dask dependency) sends a script's own functions by value
        future = self.client.submit(_run, cloudpickle.dumps(unit), self._stop.name, pure=False)
        future.add_done_callback(lambda _: self._finished.set())
        return future

    def wait(self, pending: Iterable[Any], timeout: float) -> list[Any]:
        self._finished.wait(timeout)
        self._finished.clear()
        return [future for future in pending if future.done()]

    def outcome(self, handle: Any, unit: Unit, pending: dict[Any, Unit]) -> list[Summary]:
        try:
            return handle.result()
        except distributed.KilledWorker as exc:
            raise RuntimeError(
                f"Dask workers died running {unit.label} ({exc}): "
                "does the program exit the process, or crash the interpreter?") from None
        except ImportError as exc:
            raise RuntimeError(
                f"a Dask worker cannot import what {unit.label} "
                f"need ({type(exc).__name__}: {exc}): the program's modules must be "
                f"importable on every worker ({_HOWTO})") from None

    def cancel(self, pending: Iterable[Any]) -> None:
        futures = list(pending)
        if futures:
            self.client.cancel(futures)

    def close(self) -> None:
        self._stop.set(-1)  # units still running stop at their next read (PAR-10) ...
        self._stop.delete()  # ... or, reading after this, within a second
