"""Where units run: the one loop every backend shares (PAR-3, PAR-6, PAR-10).

A backend (processes on this machine, a Dask cluster) says how to submit a unit, wait
for some to finish, take one's summaries and cancel the rest; this loop does the rest
the same way for each: it polls ``stopping`` (Ctrl-C), tells the workers the lowest
failing index found so far (they start no schedule above it), and hands back every
summary in index order for the search to merge.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from coordkit.engine.parallel.units import Summary, Unit

__all__ = ["Executor"]


class Executor:
    """Runs units of work somewhere; ``workers`` is how many run at once."""

    workers: int
    warnings: list[str]
    calls_back = False  # it can ask running DPOR jobs to come back (``come_back``, PAR-24)

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, units: list[Unit], stopping: Callable[[], bool]) -> list[Summary]:
        """Run ``units``; every summary, in index order.  ``stopping()`` is polled: true,
        the units are abandoned and ``KeyboardInterrupt`` raised."""
        with self.watching(f"schedules {units[0].start}..{units[-1].stop - 1}"):
            return self._run(units, stopping)

    def _run(self, units: list[Unit], stopping: Callable[[], bool]) -> list[Summary]:
        self.stop_above(None)
        summaries: list[Summary] = []
        pending: dict[Any, Unit] = {self.submit(unit): unit for unit in units}
        try:
            while pending:
                done = self.wait(pending, timeout=0.1)
                if stopping():
                    raise KeyboardInterrupt
                for handle in done:
                    unit = pending.pop(handle, None)
                    if unit is None:  # lost with a worker that died: already submitted again
                        continue
                    got = self.outcome(handle, unit, pending)
                    summaries.extend(got)
                    failed = [s.index for s in got if s.failure is not None]
                    if failed:
                        self.stop_above(failed[0])
        finally:
            self.cancel(pending)
        return sorted(summaries, key=lambda s: s.index)

    # -- what a backend provides ----------------------------------------------------------

    def submit(self, unit: Unit) -> Any:
        """Start ``unit``; a handle to wait on."""
        raise NotImplementedError

    def wait(self, pending: Iterable[Any], timeout: float) -> list[Any]:
        """The handles of ``pending`` that have finished, after at most ``timeout`` seconds."""
        raise NotImplementedError

    def outcome(self, handle: Any, unit: Unit, pending: dict[Any, Unit]) -> list[Summary]:
        """The summaries of a finished unit; a unit lost with its worker is submitted again
        (into ``pending``) and gives none."""
        raise NotImplementedError

    def stop_above(self, index: int | None) -> None:
        """Workers start no schedule after ``index`` (a failure was found there); None: no
        failure found yet."""
        raise NotImplementedError

    def come_back(self, wanted: bool) -> None:
        """Ask the running DPOR jobs to come back early, to be split (PAR-24): a worker is
        idle with no job to take.  A backend that cannot (``calls_back`` false) is given
        jobs of ``BACK`` runs instead."""

    def watching(self, what: str) -> contextlib.AbstractContextManager[None]:
        """Around running ``what``: a backend that sees workers leave says so."""
        return contextlib.nullcontext()

    def cancel(self, pending: Iterable[Any]) -> None:
        """Abandon units that have not finished (Ctrl-C, an error)."""

    def close(self) -> None:
        """End what the executor started (PAR-6)."""
