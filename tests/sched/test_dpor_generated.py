"""DPOR against the unreduced search on generated programs (SCHED-37).

Hypothesis builds small programs: 2 threads of 2 or 3 operations, or 3 threads of 1
or 2, over two locks (one also tried without blocking and with a timeout), a re-entered
RLock, a BoundedSemaphore, an Event, a Condition (notify, notify_all, a timed wait), an
unbounded and a one-slot queue, a two-party Barrier, a plain variable read and written
without a lock, a sleep, and the liveness of the thread started before, or a join of it,
with or without a timeout (the main thread runs the first plan itself).  Each thread keeps what it
observed; the main thread joins the others and reports every observation and the logs
written under the locks.  The set of outcomes of DPOR's unbounded level must equal that
of the unreduced search.  A program whose unreduced search needs more than
``MAX_RUNS`` schedules is rejected.  120 programs per run
(``--hypothesis-profile=nightly``: 5,000).
"""

from __future__ import annotations

import queue
import threading
import time
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from tests.sched.dpor_oracle import compare, report

OPS = ["lock0", "lock1", "try0", "tlock0", "rlock", "sem", "set", "clear", "is_set", "wait",
       "notify", "notify_all", "cwait", "put", "get", "bput", "bget", "barrier", "alive", "join",
       "tjoin", "sleep", "read", "write"]


def _program(plan: tuple[tuple[str, ...], ...]):
    """The program that runs ``plan``: one tuple of operations per thread."""

    def program() -> None:
        w = SimpleNamespace(
            locks=[threading.Lock(), threading.Lock()], rlock=threading.RLock(),
            sem=threading.BoundedSemaphore(1), ev=threading.Event(),
            cond=threading.Condition(threading.Lock()), q=queue.Queue(),
            bounded=queue.Queue(maxsize=1), barrier=threading.Barrier(2, timeout=0.1),
            logs=[[], [], [], []],  # written under locks[0], locks[1], rlock, sem
            box={"v": 0},  # a plain variable, read and written without a lock
            threads=[])
        seen: list[list] = [[] for _ in plan]

        def run(i: int) -> None:
            for op in plan[i]:
                seen[i].append(_do(op, i, w))

        w.threads.append(threading.current_thread())  # the main thread runs plan[0]
        for i in range(1, len(plan)):
            w.threads.append(threading.Thread(target=run, args=(i,)))
            w.threads[-1].start()
        run(0)
        for t in w.threads[1:]:
            t.join()
        report((tuple(map(tuple, w.logs)), tuple(tuple(s) for s in seen), w.box["v"]))

    return program


def _do(op: str, i: int, w: SimpleNamespace):
    """One operation of thread ``i`` on the world ``w``; what it returns is what the
    thread observed."""
    if op in ("lock0", "lock1", "rlock", "sem"):
        k = ("lock0", "lock1", "rlock", "sem").index(op)
        guard = w.locks[k] if k < 2 else (w.rlock if k == 2 else w.sem)
        with guard:
            if op == "rlock":
                with w.rlock:  # re-entered
                    w.logs[k].append(i)
            else:
                w.logs[k].append(i)
        return None
    if op in ("try0", "tlock0"):  # a release does not only let these proceed
        got = (w.locks[0].acquire(blocking=False) if op == "try0"
               else w.locks[0].acquire(timeout=0.1))
        if got:
            w.logs[0].append(i)
            w.locks[0].release()
        return got
    if op in ("set", "clear", "is_set"):
        return getattr(w.ev, op)()
    if op == "wait":
        return w.ev.wait(timeout=0.1)
    if op in ("notify", "notify_all"):
        with w.cond:
            return getattr(w.cond, op)()
    if op == "cwait":
        with w.cond:
            return w.cond.wait(timeout=0.1)
    if op == "put":
        return w.q.put(i)
    if op in ("get", "bget"):
        try:
            return (w.q if op == "get" else w.bounded).get(timeout=0.1)
        except queue.Empty:
            return "empty"
    if op == "bput":
        try:
            return w.bounded.put(i, timeout=0.1)
        except queue.Full:
            return "full"
    if op == "barrier":
        try:
            return w.barrier.wait()
        except threading.BrokenBarrierError:
            return "broken"
    if op == "sleep":
        return time.sleep(0.1)
    if op == "read":
        return w.box["v"]
    if op == "write":
        w.box["v"] = i + 1
        return None
    if op == "join":  # the thread started before (not the main thread, which joins all)
        return w.threads[i - 1].join() if i > 1 else None
    if op == "tjoin":  # a timed join (the main thread's: of the first thread it started)
        if i == 1:
            return None
        other = w.threads[i - 1] if i else w.threads[1]
        other.join(timeout=0.1)
        return other.is_alive()
    return w.threads[i - 1].is_alive() if i else None  # "alive": the thread started before


# Mostly two threads of two or three operations: the unreduced search must exhaust each
# program quickly (a program it cannot is rejected, not counted).
MAX_RUNS = 800  # of the unreduced search, per program
plans = st.one_of(
    st.lists(st.lists(st.sampled_from(OPS), min_size=2, max_size=3).map(tuple),
             min_size=2, max_size=2).map(tuple),
    st.lists(st.lists(st.sampled_from(OPS), min_size=1, max_size=2).map(tuple),
             min_size=3, max_size=3).map(tuple),
)


EXAMPLES = max(120, settings().max_examples)  # the nightly profile asks for more


@pytest.mark.timeout(max(300, 3 * EXAMPLES))  # about a second per program at worst, x3 for a loaded machine
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(plans)
def test_dpor_agrees_with_the_unreduced_search_on_generated_programs(plan):
    """SCHED-37"""
    try:
        reduced, full, _, _ = compare(_program(plan), max_runs=MAX_RUNS)
    except AssertionError as exc:
        if "not exhausted" in str(exc):
            reject()  # too many schedules for the unreduced search: not a useful example
        raise
    assert reduced == full, (plan, full - reduced, reduced - full)
