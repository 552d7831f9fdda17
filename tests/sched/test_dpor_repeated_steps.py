"""A step a search repeats from its last run is not traced again in full (SCHED-85)."""

from __future__ import annotations

import sys
import threading

from coordkit.engine import tracing
from coordkit.engine.run import RunOptions, Session
from coordkit.engine.runtime import current_execution
from tests.sched.dpor_oracle import KeptDPOR, compare, outcomes, report


def made_in_one_step_read_in_another() -> None:
    """Objects made and first touched in one thread's steps, read by another thread's
    later steps: a new step must label them as the repeated steps that made them did."""
    lock = threading.Lock()
    shared: dict[str, list[int]] = {}
    seen: list[int] = []

    def maker() -> None:
        with lock:
            shared["box"] = [0]
        shared["box"][0] += 1

    def reader() -> None:
        with lock:
            box = shared.get("box")
        seen.append(-1 if box is None else box[0])

    threads = [threading.Thread(target=maker), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report(tuple(seen))


def test_a_repeated_step_names_only_the_accesses_that_first_labelled(monkeypatch):
    """SCHED-85: in a repeated step only the accesses at which the recording run gave
    memory its first label are named; the rest are skipped.  SCHED-68's check (inside
    ``compare``) holds: every run's steps, footprints and labels are a recording run's."""
    counts = {"repeated": 0, "named": 0}
    real_access, real_locations = tracing._access, tracing.locations

    def access(ex, site, frame):
        recorder = ex.recorder
        if recorder is not None and recorder.names_again is not None and ex.races is None:
            counts["repeated"] += 1
        real_access(ex, site, frame)

    def locations(site, frame, pending):
        ex = current_execution()
        recorder = ex.recorder
        if recorder is not None and recorder.names_again is not None and ex.races is None:
            assert recorder.accesses in recorder.names_again
            counts["named"] += 1
        return real_locations(site, frame, pending)

    monkeypatch.setattr(tracing, "_access", access)
    monkeypatch.setattr(tracing, "locations", locations)
    # Every access through ``_access``: none only counted where it happens (in C, or in
    # 3.12+'s instruction callback), which would leave it out of "repeated".
    monkeypatch.setattr(tracing.Tracer, "counted", lambda self, code: frozenset())
    reduced, full, _, _ = compare(made_in_one_step_read_in_another, reuse=True)
    assert reduced == full and len(full) > 1
    assert 0 < counts["named"] < counts["repeated"] / 4, counts


def test_an_access_only_counted_leaves_the_search_as_it_was(monkeypatch):
    """SCHED-85: where a repeated step's access only counts (``Tracer.counted``: the C
    tracer on 3.11, the instruction callback on 3.12+), it is counted without a call of
    ``_access``, and the search records the same steps, footprints and choices as when
    every access goes through ``_access``."""
    calls = {"n": 0}
    real_access = tracing._access

    def access(ex, site, frame):
        calls["n"] += 1
        real_access(ex, site, frame)

    def recorded():
        calls["n"] = 0
        # (What a mode's tracers worked out is shared, the C tracer's calls read it: a
        # search of its own each.)
        tracing._by_mode.clear()
        kept = KeptDPOR(max_preemptions=None)
        with Session(RunOptions(granularity="sync", max_steps=2_000), quiet=True) as session:
            outcomes(made_in_one_step_read_in_another, kept, max_runs=10_000, session=session)
        return kept.recorded, calls["n"]

    monkeypatch.setattr(tracing, "_access", access)
    fast, fast_calls = recorded()
    monkeypatch.setattr(tracing.Tracer, "counted", lambda self, code: frozenset())
    slow, slow_calls = recorded()
    assert fast == slow and len(fast) > 1
    if getattr(tracing, "_SETTRACE", None) is not None or sys.version_info >= (3, 12):
        assert fast_calls < slow_calls, (fast_calls, slow_calls)
