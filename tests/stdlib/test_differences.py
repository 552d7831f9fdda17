"""The stand-ins are the stdlib: each difference issue 20 measured, checked on its own.

The CPython suites (``test_cpython_*.py``) cover these too; here each one is a small
program whose outcome under the scheduler is compared with the real objects' outcome,
or explored for the schedule that showed the difference (SCHED-6, SCHED-3, SCHED-7).
"""

from __future__ import annotations

import _thread
import gc
import queue
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import pytest

import coordkit

STRATEGIES = ["random", "pct", "dfs"]


def controlled(fn: Callable[[], Any]) -> Any:
    """What ``fn`` returns (or raises, as ``("raises", type, message)``) run as a
    controlled thread, on the zero schedule."""
    box: dict[str, Any] = {}

    def body() -> None:
        box["out"] = outcome(fn)

    coordkit.replay(body, [], strict=False)
    return box["out"]


def outcome(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:
        return ("raises", type(exc).__name__, str(exc))


def same_as_real(fn: Callable[[], Any]) -> None:
    """``fn`` gives the same outcome on real threading objects and on controlled ones."""
    real = outcome(fn)
    assert controlled(fn) == real, f"real: {real!r}"


# -- 1. Event.wait returns True once set() woke it (gh-57711) --------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_event_wait_woken_by_set_returns_true_even_if_cleared_before_it_resumes(strategy):
    # SCHED-6: threading.Event.wait returns what its Condition.wait returned: True when
    # set() woke it, whatever the flag says by the time the waiter runs again.
    results = []

    def program():
        event = threading.Event()
        results.clear()

        def waiter():
            results.append(event.wait(300))

        threads = [threading.Thread(target=waiter) for _ in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.01)  # the waiters park (virtual time moves only once they all have)
        event.set()
        event.clear()
        for t in threads:
            t.join()
        assert results == [True, True, True], results

    result = coordkit.explore(program, strategy=strategy, seed=3, max_schedules=200,
                              max_preemptions=2)
    assert result.failure is None, result.failure


def test_event_wait_that_times_out_returns_false_even_if_set_later():
    # SCHED-6, SCHED-8: the flag is read when the wait ends, as threading reads it
    def program():
        event = threading.Event()
        assert event.wait(0.5) is False
        event.set()
        assert event.wait(0.5) is True

    coordkit.replay(program, [])


# -- 2. _thread.start_new_thread and the _thread lock names ----------------------------


def test_start_new_thread_is_a_controlled_thread_whose_race_explore_finds():
    # SCHED-3: a thread started by _thread.start_new_thread is a controlled thread; the
    # scheduler interleaves it, so explore finds the lost update between read and write.
    def program():
        counter = [0]
        done = _thread.allocate_lock()
        finished = []

        def bump():
            value = counter[0]
            time.sleep(0)  # a scheduling point between the read and the write
            counter[0] = value + 1
            finished.append(None)
            if len(finished) == 2:
                done.release()

        done.acquire()
        for _ in range(2):
            _thread.start_new_thread(bump, ())
        done.acquire()
        assert counter[0] == 2, counter

    result = coordkit.explore(program, strategy="dfs", max_schedules=500)
    assert result.failure is not None and "AssertionError" in result.failure.message
    assert result.failure.report.thread_names == ["MainThread", "_thread(bump)", "_thread(bump)"]
    for _ in range(3):  # the schedule is the scheduler's, so it replays every time
        with pytest.raises(AssertionError):
            coordkit.replay(program, result.failure.trace)


def test_start_new_thread_identity_count_and_dummy_thread():
    # SCHED-3, SCHED-7: start_new_thread returns the thread's get_ident(); _count() counts
    # it while it lives; current_thread() there is a daemon _DummyThread, as in CPython,
    # which 3.13 forgets when the thread ends
    seen = {}

    def program():
        gate = _thread.allocate_lock()
        gate.acquire()

        def task(a, b=None):
            me = threading.current_thread()
            seen.update(args=(a, b), ident=_thread.get_ident(), thread_ident=me.ident,
                        dummy=isinstance(me, threading._DummyThread), daemon=me.daemon,
                        name=me.name, listed=me in threading.enumerate())
            gate.release()

        before = _thread._count()
        ident = _thread.start_new_thread(task, (1,), {"b": 2})
        gate.acquire()
        seen["returned"] = ident
        while _thread._count() != before:
            time.sleep(0.001)
        seen["main"] = (threading.get_ident(), threading.current_thread().ident)
        seen["kept"] = ident in threading._active

    coordkit.replay(program, [])
    assert seen["args"] == (1, 2)
    assert seen["ident"] == seen["thread_ident"] == seen["returned"]
    assert seen["dummy"] and seen["daemon"] and seen["name"].startswith("Dummy-") and seen["listed"]
    assert seen["main"][0] == seen["main"][1] != seen["returned"]
    # From 3.13 CPython removes an ended thread's _DummyThread from threading._active
    assert seen["kept"] is (sys.version_info < (3, 13))


def test_start_new_thread_systemexit_ends_the_thread_quietly():
    # SCHED-3, SCHED-10: as in CPython, SystemExit ends a _thread thread without a report
    def program():
        gate = _thread.allocate_lock()
        gate.acquire()

        def task():
            gate.release()
            raise SystemExit

        _thread.start_new_thread(task, ())
        gate.acquire()
        time.sleep(0.01)

    result = coordkit.explore(program, seed=1, max_schedules=20)
    assert result.failure is None, result.failure


needs_joinable = pytest.mark.skipif(not hasattr(_thread, "start_joinable_thread"),
                                    reason="_thread.start_joinable_thread exists from Python 3.13")


@needs_joinable
def test_start_joinable_thread_is_a_controlled_thread_whose_race_explore_finds():
    # SCHED-3: from 3.13, _thread.start_joinable_thread is how threads start; inside a run
    # the thread is controlled (a real one would escape the scheduler) and its handle's
    # join waits at a scheduling point
    def program():
        counter = [0]

        def bump():
            value = counter[0]
            time.sleep(0)
            counter[0] = value + 1

        handles = [_thread.start_joinable_thread(bump) for _ in range(2)]
        for handle in handles:
            handle.join()
            assert handle.is_done()
        assert counter[0] == 2, counter

    result = coordkit.explore(program, strategy="dfs", max_schedules=500)
    assert result.failure is not None and "AssertionError" in result.failure.message
    assert result.failure.report.thread_names == ["MainThread", "_thread(bump)", "_thread(bump)"]


@needs_joinable
def test_a_joinable_threads_handle_behaves_as_cpythons():
    # SCHED-3: ident, join with a timeout, is_done, a handle made in the run and given to
    # start_joinable_thread, and CPython's errors
    seen = {}

    def program():
        gate = _thread.allocate_lock()
        gate.acquire()
        handle = _thread._ThreadHandle()
        seen["unstarted"] = (handle.ident, handle.is_done())
        with pytest.raises(RuntimeError, match="thread not started"):
            handle.join()
        idents = []
        assert _thread.start_joinable_thread(
            lambda: (idents.append(_thread.get_ident()), gate.acquire()), handle=handle) is handle
        with pytest.raises(RuntimeError, match="thread already started"):
            _thread.start_joinable_thread(print, handle=handle)
        handle.join(0.5)
        seen["after timeout"] = (handle.is_done(), time.monotonic())
        gate.release()
        handle.join()
        seen["done"] = handle.is_done()
        seen["ident"] = handle.ident == idents[0]
        with pytest.raises(TypeError, match="'handle' must be a _ThreadHandle"):
            _thread.start_joinable_thread(print, handle=1)
        with pytest.raises(TypeError, match="thread function must be callable"):
            _thread.start_joinable_thread(1)
        me = []
        selfjoin = _thread.start_joinable_thread(lambda: me.append(_try(lambda: me[0].join())))
        me.append(selfjoin)
        selfjoin.join()
        seen["self join"] = me[1]

    coordkit.replay(program, [])
    assert seen["unstarted"] == (0, False)
    assert seen["after timeout"][0] is False and seen["after timeout"][1] >= 0.5
    assert seen["done"] and seen["ident"]
    assert seen["self join"] == "RuntimeError: Cannot join current thread"


def _try(fn: Callable[[], Any]) -> str:
    try:
        fn()
    except Exception as exc:  # the test reads the error
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def test_thread_module_lock_names_are_controlled_and_keep_their_types():
    # SCHED-3: allocate_lock/allocate make controlled locks, _thread.RLock a controlled
    # RLock; isinstance against _thread.LockType/_thread.RLock holds for real and
    # controlled ones; LockType() is refused as 3.11 refuses it
    def types():
        lock, alias, rlock = _thread.allocate_lock(), _thread.allocate(), _thread.RLock()
        return (isinstance(lock, _thread.LockType), isinstance(alias, _thread.LockType),
                isinstance(rlock, _thread.RLock), isinstance(lock, _thread.RLock))

    same_as_real(types)
    # Refused as 3.11 and 3.12 refuse it; from 3.13 LockType is the lock class, and calling
    # it makes a lock (a controlled one inside a run).
    same_as_real(lambda: isinstance(_thread.LockType(), _thread.LockType))
    made = controlled(lambda: (type(_thread.allocate_lock()).__module__, type(_thread.RLock()).__module__))
    assert made == ("coordkit.engine.shims", "coordkit.engine.shims")

    def program():  # two controlled threads exclude each other on a _thread.RLock
        rlock, inside = _thread.RLock(), []

        def work():
            with rlock, rlock:
                inside.append(1)
                time.sleep(0)
                assert len(inside) == 1
                inside.pop()

        ts = [threading.Thread(target=work) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    assert coordkit.explore(program, strategy="dfs", max_schedules=300).failure is None


# -- 3. Weak references to every stand-in ----------------------------------------------

FACTORIES = {
    "Lock": lambda: threading.Lock(),
    "RLock": lambda: threading.RLock(),
    "Condition": lambda: threading.Condition(),
    "Event": lambda: threading.Event(),
    "Semaphore": lambda: threading.Semaphore(),
    "BoundedSemaphore": lambda: threading.BoundedSemaphore(),
    "SimpleQueue": lambda: queue.SimpleQueue(),
    "allocate_lock": lambda: _thread.allocate_lock(),
}


@pytest.mark.parametrize("kind", sorted(FACTORIES))
def test_weak_references_to_every_stand_in(kind):
    # SCHED-6: every controlled object takes weak references, as the real ones do
    def refs():
        obj = FACTORIES[kind]()
        ref = weakref.ref(obj)
        alive = ref() is obj
        table = weakref.WeakValueDictionary({"k": obj})
        del obj
        gc.collect()
        return alive, ref() is None, len(table)

    same_as_real(refs)
    assert controlled(refs) == (True, True, 0)


# -- 5. Condition's lock protocol, and a Condition as a Condition's lock -----------------


def test_condition_exports_its_locks_protocol():
    # SCHED-6: Condition has _is_owned/_release_save/_acquire_restore, as threading's does
    def protocol():
        cond = threading.Condition()
        owned_before = cond._is_owned()
        cond.acquire()
        cond.acquire()
        owned = cond._is_owned()
        state = cond._release_save()
        released = not cond._is_owned()
        cond._acquire_restore(state)
        cond.release()
        still = cond._is_owned()
        cond.release()
        return owned_before, owned, released, still, cond._is_owned()

    same_as_real(protocol)
    assert controlled(protocol) == (False, True, True, True, False)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_condition_over_a_condition_shares_its_lock(strategy):
    # SCHED-6: Condition(Condition()) waits and notifies over the inner one's RLock
    def program():
        outer = threading.Condition(threading.Condition())
        items = []

        def consumer():
            with outer:
                assert outer.wait_for(lambda: items, timeout=60)
                items.pop()

        t = threading.Thread(target=consumer)
        t.start()
        with outer:
            items.append(1)
            outer.notify()
        t.join()
        assert not items

    result = coordkit.explore(program, strategy=strategy, seed=5, max_schedules=200)
    assert result.failure is None, result.failure


def test_a_condition_over_a_lock_is_owned_when_locked_by_anyone():
    # SCHED-6: threading.Condition over a Lock (which has no _is_owned) calls it owned when
    # it is locked, whoever holds it: waiting then does not raise
    def program():
        lock = threading.Lock()
        cond = threading.Condition(lock)
        lock.acquire()
        out = []
        t = threading.Thread(target=lambda: out.append(cond._is_owned()))
        t.start()
        t.join()
        lock.release()
        out.append(cond._is_owned())
        return out

    assert controlled(program) == outcome(program) == [True, False]


def test_a_condition_over_another_kind_of_lock_is_refused_at_the_call():
    # SCHED-6, SCHED-4: a wait must release the lock and start waiting in one step, which
    # coordkit does for its Lock, RLock and Condition; any other lock object is refused
    real_lock = threading.Lock()  # made before the run: a real one
    out = controlled(lambda: [outcome(lambda: threading.Condition(threading.Semaphore())),
                              outcome(lambda: threading.Condition(real_lock))])
    assert out[0][:2] == ("raises", "TypeError") and "Lock, RLock or Condition" in out[0][2]
    assert out[1][:2] == ("raises", "TypeError") and "outside the controlled run" in out[1][2]


# -- 6. Timeouts the stdlib refuses ------------------------------------------------------

HUGE = threading.TIMEOUT_MAX + 1
TIMEOUTS = {
    "Lock above TIMEOUT_MAX": lambda: threading.Lock().acquire(timeout=HUGE),
    "Lock 1e100": lambda: threading.Lock().acquire(timeout=1e100),
    "Lock TIMEOUT_MAX": lambda: threading.Lock().acquire(timeout=threading.TIMEOUT_MAX),
    "Lock NaN": lambda: threading.Lock().acquire(timeout=float("nan")),
    "Lock non-blocking with timeout": lambda: threading.Lock().acquire(False, 1),
    "Lock negative": lambda: threading.Lock().acquire(timeout=-5),
    "RLock above TIMEOUT_MAX": lambda: threading.RLock().acquire(timeout=HUGE),
    "held RLock above TIMEOUT_MAX": lambda: (lambda r: (r.acquire(), r.acquire(timeout=HUGE)))(
        threading.RLock()),
    "Event unset": lambda: threading.Event().wait(HUGE),
    "Event set": lambda: (lambda e: (e.set(), e.wait(HUGE)))(threading.Event()),
    "Condition": lambda: (lambda c: (c.acquire(), c.wait(HUGE)))(threading.Condition()),
    "Condition negative": lambda: (lambda c: (c.acquire(), c.wait(-1)))(threading.Condition()),
    "Semaphore free": lambda: threading.Semaphore(1).acquire(timeout=HUGE),
    "Semaphore taken": lambda: threading.Semaphore(0).acquire(timeout=HUGE),
    "SimpleQueue": lambda: (lambda q: (q.put(1), q.get(timeout=HUGE)))(queue.SimpleQueue()),
    "sleep": lambda: time.sleep(HUGE),
    "sleep NaN": lambda: time.sleep(float("nan")),
}


@pytest.mark.parametrize("case", sorted(TIMEOUTS))
def test_timeouts_are_refused_where_the_stdlib_refuses_them(case):
    # SCHED-6: above threading.TIMEOUT_MAX, OverflowError; a NaN, ValueError; each where
    # the stdlib raises it (a Semaphore or Event that need not wait does not look)
    same_as_real(TIMEOUTS[case])


def test_a_refused_condition_wait_keeps_its_lock():
    # SCHED-6: the timeout is refused before the wait lets go of the lock
    def program():
        cond = threading.Condition()
        with cond:
            with pytest.raises(OverflowError):
                cond.wait(HUGE)
            assert cond._is_owned()

    coordkit.replay(program, [])


# -- 7. RLock._release_save and _recursion_count -----------------------------------------


def test_rlock_release_save_and_recursion_count():
    # SCHED-6: _release_save on an unheld RLock raises RuntimeError; _recursion_count is the
    # calling thread's depth (0 when another thread holds it)
    def counts():
        rlock = threading.RLock()
        out = [outcome(rlock._release_save), rlock._recursion_count()]
        rlock.acquire()
        rlock.acquire()
        out.append(rlock._recursion_count())
        other = []
        t = threading.Thread(target=lambda: other.append(rlock._recursion_count()))
        t.start()
        t.join()
        out.append(other[0])
        state = rlock._release_save()
        out += [rlock._recursion_count(), outcome(rlock.release)]
        rlock._acquire_restore(state)
        out.append(rlock._recursion_count())
        rlock.release()
        rlock.release()
        return out

    if sys.version_info < (3, 11):  # neither RLock has _recursion_count before 3.11
        assert controlled(counts)[:2] == outcome(counts)[:2] == ("raises", "AttributeError")
        return
    same_as_real(counts)
    assert controlled(counts)[:4] == [("raises", "RuntimeError", "cannot release un-acquired lock"),
                                      0, 2, 0]


# -- Beyond the seven: what CPython's suites found along the way --------------------------


def test_deprecated_aliases_warn_as_the_stdlibs_do():
    # SCHED-6: isSet, notifyAll, currentThread and activeCount warn, as in 3.10+
    def warned():
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            threading.Event().isSet()
            cond = threading.Condition()
            with cond:
                cond.notifyAll()
            threading.currentThread()
            threading.activeCount()
        return sorted(str(w.message).split(" is ")[0] for w in caught)

    assert controlled(warned) == outcome(warned) == [
        "activeCount()", "currentThread()", "isSet()", "notifyAll()"]


def test_reprs_keep_the_stdlibs_shape():
    # SCHED-6: CPython's tests match reprs by pattern; the run's label stands where the
    # address would be, so a repr is the same in every run
    reprs = controlled(lambda: [repr(f()) for f in (
        threading.Lock, threading.RLock, threading.Event, lambda: threading.Semaphore(3),
        lambda: threading.BoundedSemaphore(3))])
    assert reprs == ["<unlocked controlled.Lock object at Lock#1>",
                     "<unlocked controlled.RLock object owner=0 count=0 at RLock#1>",
                     "<controlled.Event at Event#1: unset>",
                     "<controlled.Semaphore at Semaphore#1: value=3>",
                     "<controlled.BoundedSemaphore at BoundedSemaphore#1: value=3/3>"]


def test_threads_are_marked_started_and_stopped_and_have_native_ids():
    # SCHED-7: as Thread._bootstrap_inner does: started (so daemon cannot change), a
    # native_id of its own, "stopped" in its repr once it ended
    out = {}

    def program():
        t = threading.Thread(target=lambda: None)
        t.start()
        out["daemon"] = outcome(lambda: setattr(t, "daemon", True))
        out["native"] = t.native_id not in (None, threading.get_native_id())
        t.join()
        out["repr"] = repr(t)

    coordkit.replay(program, [])
    assert out["daemon"] == ("raises", "RuntimeError", "cannot set daemon status of active thread")
    assert out["native"] and "stopped" in out["repr"]


def test_a_thread_that_raises_systemexit_ends_quietly_and_its_hook_runs_as_cpythons():
    # SCHED-10: SystemExit ends a Thread without failing the run (threading's excepthook
    # ignores it); a program's own excepthook is called through the thread's machinery
    def quiet():
        t = threading.Thread(target=sys.exit)
        t.start()
        t.join()

    assert coordkit.explore(quiet, seed=1, max_schedules=10).failure is None

    seen = []

    def hooked():
        def hook(args):
            seen.append((args.exc_type, args.thread.name))

        threading.excepthook = hook
        t = threading.Thread(target=sys.exit, name="exits")
        t.start()
        t.join()

    coordkit.replay(hooked, [])
    assert seen == [(SystemExit, "exits")]


def test_semaphore_release_wakes_as_many_waiters_as_it_releases():
    # SCHED-6: release(n) wakes the n longest waiting, like threading's notify(n): a release
    # does not wake every waiter to find the value gone and park again
    def program():
        sem = threading.Semaphore(0)
        ts = [threading.Thread(target=sem.acquire) for _ in range(20)]
        for t in ts:
            t.start()
        time.sleep(0.01)  # all 20 park
        for _ in ts:
            sem.release()
            time.sleep(0)  # a yield: the woken waiters run here
        for t in ts:
            t.join()

    report = coordkit.replay(program, [])
    parks = [e for e in report.events if e.kind == "block" and "Semaphore" in e.target]
    assert len(parks) == 20  # each waiter parked once: woken once, by its own release
