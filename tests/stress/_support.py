"""Helpers for the stress tests: running worker threads, and the conservation ledger."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence

# Generous bound on how long any one stress test's threads may take to finish.
JOIN_TIMEOUT_SECS = 60.0


def run_workers(targets: Sequence[Callable[[], None]], names: Sequence[str] | None = None) -> None:
    """Run each target in its own thread, released together by a barrier; join them all.

    Fails if a thread is still running after ``JOIN_TIMEOUT_SECS`` (a hang) or
    if any target raised (the exceptions are listed).
    """
    errors: list[tuple[str, BaseException]] = []
    errors_lock = threading.Lock()
    go = threading.Barrier(len(targets))

    def wrap(fn: Callable[[], None], name: str) -> Callable[[], None]:
        def run() -> None:
            try:
                go.wait(JOIN_TIMEOUT_SECS)
                fn()
            except BaseException as e:
                with errors_lock:
                    errors.append((name, e))

        return run

    names = list(names) if names is not None else [f"worker-{i}" for i in range(len(targets))]
    threads = [threading.Thread(target=wrap(fn, n), name=n) for fn, n in zip(targets, names)]
    for t in threads:
        t.start()
    hung = []
    for t in threads:
        t.join(JOIN_TIMEOUT_SECS)
        if t.is_alive():
            hung.append(t.name)
    assert not hung, f"threads still running after {JOIN_TIMEOUT_SECS} s: {hung}"
    if errors:
        name, first = errors[0]
        raise AssertionError(f"{len(errors)} worker(s) failed; first: {name}: {first!r}") from first


class Ledger:
    """What went into a queue and what came out, for the conservation check.

    * ``put(ids)``: elements whose enqueue (or enqueue_many) succeeded;
    * ``maybe(batch)``: an enqueue_many that failed (timeout, cancel): some prefix of the
      batch may be in the queue (Q-ENQ-3);
    * ``got(ids)``: elements a dequeue returned (or the final drain found).

    Conservation: every element put comes out exactly once; nothing else comes out
    except a prefix of each failed batch; no element comes out twice.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the three lists
        self.definite: list[Hashable] = []
        self.batches: list[tuple[Hashable, ...]] = []
        self.out: list[Hashable] = []

    def put(self, ids: Iterable[Hashable]) -> None:
        with self._lock:
            self.definite.extend(ids)

    def maybe(self, batch: Iterable[Hashable]) -> None:
        with self._lock:
            self.batches.append(tuple(batch))

    def got(self, ids: Iterable[Hashable]) -> None:
        with self._lock:
            self.out.extend(ids)

    def check(self, context: str) -> None:
        """Assert conservation; ``context`` (the seed) starts every message."""
        counts = Counter(self.out)
        duplicates = sorted((x, n) for x, n in counts.items() if n > 1)
        assert not duplicates, f"{context}: elements came out more than once: {duplicates[:10]}"
        out = set(counts)
        definite = set(self.definite)
        assert len(definite) == len(self.definite), f"{context}: the test enqueued an id twice"
        lost = sorted(definite - out)
        assert not lost, f"{context}: {len(lost)} enqueued elements never came out: {lost[:10]}"
        partial: set[Hashable] = set()
        for batch in self.batches:
            seen = [x in out for x in batch]
            k = sum(seen)
            assert seen == [True] * k + [False] * (len(batch) - k), (
                f"{context}: a failed enqueue_many left a non-prefix of its batch: "
                f"batch {batch}, came out {[x for x in batch if x in out]}"
            )
            partial.update(batch[:k])
        invented = sorted(out - definite - partial)
        assert not invented, f"{context}: elements came out that were never enqueued: {invented[:10]}"
