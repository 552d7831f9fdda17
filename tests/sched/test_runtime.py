"""The controlled runtime: what is controlled, virtual time, ending runs (SCHED-1..13)."""

from __future__ import annotations

import queue
import sys
import threading
import time
from pathlib import Path

import pytest

import coordkit
from coordkit.engine import shims as _shims


def run_once(fn, **kwargs):
    """Run ``fn`` under one schedule and return what it returned (via a box)."""
    box = {}

    def body():
        box["value"] = fn()

    coordkit.replay(body, [], strict=False, **kwargs)
    return box.get("value")


def test_one_thread_at_a_time():
    # SCHED-1: code between two scheduling points runs without interruption, so a region
    # with no synchronisation in it is never entered by two threads at once...
    inside = [0]
    seen = []
    lock = []

    def program():
        lock[:] = [threading.Lock()]
        inside[0] = 0  # a run that failed inside left it raised

        def work():
            for _ in range(3):
                with lock[0]:
                    pass
                inside[0] += 1
                seen.append(inside[0])
                inside[0] -= 1

        ts = [threading.Thread(target=work) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    result = coordkit.explore(program, seed=1, max_schedules=100, invariant=lambda: inside[0] == 0,
                              granularity="sync")
    assert result.failure is None
    assert max(seen) == 1
    if sys.version_info < (3, 11):
        return  # line granularity needs 3.11+ (see test_line_granularity_refused_clearly...)
    # ...while with a scheduling point at every line, the scheduler does switch inside it.
    result = coordkit.explore(program, seed=1, max_schedules=100, granularity="line",
                              invariant=lambda: inside[0] <= 1)
    assert result.failure is not None and result.failure.kind == "invariant"
    # ...and so does auto granularity, once race detection has seen ``inside`` race (RACE-3).
    result = coordkit.explore(program, seed=1, max_schedules=100, invariant=lambda: inside[0] <= 1)
    assert result.failure is not None and result.failure.kind == "invariant"
    assert any("list item" in str(race) for race in result.races), result.races


def test_stdlib_objects_made_inside_are_controlled():
    # SCHED-3
    def program():
        objs = {
            "Lock": threading.Lock(),
            "RLock": threading.RLock(),
            "Condition": threading.Condition(),
            "Event": threading.Event(),
            "Semaphore": threading.Semaphore(),
            "BoundedSemaphore": threading.BoundedSemaphore(),
            "SimpleQueue": queue.SimpleQueue(),
        }
        q = queue.Queue()
        return {k: type(v).__module__ for k, v in objs.items()}, type(q.mutex).__module__

    kinds, queue_lock = run_once(program)
    assert set(kinds.values()) == {"coordkit.engine.shims"}
    assert queue_lock == "coordkit.engine.shims"


def test_objects_made_outside_escape_and_stay_real():
    # SCHED-4: an Event made before the run is a real one; non-blocking use works
    ev = threading.Event()
    assert run_once(lambda: (ev.set(), type(ev).__module__)[1]) == "threading"
    assert ev.is_set()
    assert type(threading.Lock()).__module__ != "coordkit.engine.shims"  # patch undone


def test_coordkit_sync_seam_follows_the_run():
    # SCHED-3: coordkit's own primitives take their locks from coordkit.sync
    from coordkit import sync

    assert type(sync.Lock()).__module__ != "coordkit.engine.shims"
    assert run_once(lambda: type(sync.Lock()).__module__) == "coordkit.engine.shims"


def test_thread_subclasses_are_controlled():
    # SCHED-3: a Thread subclass defined outside the run is scheduled too
    class Worker(threading.Thread):
        def __init__(self, out):
            super().__init__(name="worker")
            self.out = out

        def run(self):
            self.out.append(threading.current_thread().name)

    def program():
        out = []
        w = Worker(out)
        w.start()
        w.join()
        assert not w.is_alive()
        return out

    assert run_once(program) == ["worker"]


def test_virtual_time_costs_no_wall_time():
    # SCHED-8
    def program():
        t0, w0 = time.monotonic(), time.time()
        time.sleep(3600)
        ev = threading.Event()
        assert ev.wait(timeout=120) is False
        q = queue.Queue()
        with pytest.raises(queue.Empty):
            q.get(timeout=2)
        return time.monotonic() - t0, time.time() - w0

    started = time.perf_counter()
    elapsed = run_once(program)
    assert elapsed == (3722.0, 3722.0)
    assert time.perf_counter() - started < 5


def test_virtual_clock_starts_at_the_same_value_in_every_run():
    # SCHED-8
    assert run_once(lambda: time.monotonic()) == run_once(lambda: time.monotonic())


def test_time_functions_imported_by_name_are_virtual_too():
    # SCHED-3: ``from time import monotonic`` style aliases are patched for the run
    from tests.sched import clock_alias

    assert run_once(clock_alias.sleep_and_measure) == 7.0
    assert clock_alias.monotonic is time.monotonic  # restored afterwards


def test_primitives_imported_by_name_are_controlled():
    # SCHED-3: `from threading import RLock` & co. inside the user's module are controlled
    # too; real ones would neither exclude nor block between controlled threads
    import threading as real_threading

    from tests.sched import sync_alias

    before = real_threading.active_count()
    found = coordkit.explore(sync_alias.lock_order_deadlock, seed=1, max_schedules=500)
    assert found.failure is not None and found.failure.kind == "deadlock"
    assert coordkit.explore(sync_alias.handshake, seed=1, max_schedules=300).failure is None
    assert run_once(sync_alias.handshake) == 42
    hang = coordkit.explore(sync_alias.simple_queue_hang, seed=1, max_schedules=5)
    assert hang.failure is not None and hang.failure.kind == "deadlock"
    assert real_threading.active_count() == before  # no worker left behind
    assert sync_alias.RLock is real_threading.RLock  # restored afterwards


def test_objects_made_by_an_import_inside_the_run_are_real():
    # SCHED-4: module-level and class-level objects of a module first imported inside a
    # run are global state that outlives it, so they are the real ones
    import importlib

    sys.modules.pop("tests.sched.made_at_import", None)

    def program():
        module = importlib.import_module("tests.sched.made_at_import")

        class Holder:  # a class body in the run's own code is not an import
            lock = threading.Lock()

        made_by_exec: dict = {}
        exec("lock = threading.Lock()", {"threading": threading}, made_by_exec)
        return module, [type(x).__module__ for x in (threading.Lock(), Holder.lock,
                                                     made_by_exec["lock"])]

    module, kinds = run_once(program)
    assert all(k.startswith("coordkit") for k in kinds), kinds  # the run's own: controlled
    for obj in (module.LOCK, module.READY, module.JOBS.mutex, module.Registry.lock):
        assert not type(obj).__module__.startswith("coordkit"), obj
    with module.LOCK, module.Registry.lock:  # usable after the run
        module.JOBS.put(1)
        module.READY.set()
    assert module.JOBS.get_nowait() == 1


THREAD_POOL_PROGRAM = """
import concurrent.futures, threading, time, coordkit

def pool_sums():
    lock = threading.Lock()
    total = [0]
    def work(i):
        with lock:
            total[0] += i
        return 2 * i
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        assert list(pool.map(work, range(5))) == [0, 2, 4, 6, 8]
    assert total[0] == 10

def pool_race():
    total = [0]
    def work(i):
        seen = total[0]
        time.sleep(0)
        total[0] = seen + i
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for f in [pool.submit(work, i) for i in (1, 2)]:
            f.result()
    assert total[0] == 3, f"lost update: {total[0]}"

def pool_left_running():
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    futures = [pool.submit(pow, 2, i) for i in range(4)]
    pool.shutdown(wait=False)
    assert sorted(f.result() for f in futures) == [1, 2, 4, 8]

assert coordkit.explore(pool_sums, seed=1, max_schedules=200).failure is None
for strategy in ("dfs", "pct", "random"):
    result = coordkit.explore(pool_sums, strategy=strategy, seed=2, max_schedules=300)
    assert result.failure is None, result.failure
    assert coordkit.explore(pool_left_running, strategy=strategy, seed=2,
                            max_schedules=200).failure is None
found = coordkit.explore(pool_race, seed=1, max_schedules=500).failure
assert found is not None and "lost update" in str(found.exception), found
for _ in range(5):
    try:
        coordkit.replay(pool_race, found.trace)
    except AssertionError as exc:
        assert "lost update" in str(exc)
    else:
        raise AssertionError("the replay passed")
assert found.preemptions <= 1, found  # a sleep(0) yields: the switch there is the default
print("ok")
"""


def test_thread_pool_executor_under_the_scheduler():
    # SCHED-3, SCHED-4, SCHED-9, SCHED-16, TRACE-3: concurrent.futures, imported for the
    # first time inside a run, works (its module-level lock is real); runs are
    # deterministic (threads and futures hash the same in every run, so the pool's sets
    # iterate alike: DFS never sees a diverging run, a trace replays every time); a race
    # between workers is found; nothing is printed (no "Exception in worker" for the
    # threads a run ends, no wake-up posted to a finished run's queue) and the
    # interpreter exits cleanly
    import subprocess

    proc = subprocess.run([sys.executable, "-c", THREAD_POOL_PROGRAM], capture_output=True,
                          text=True, timeout=120, cwd=str(Path(__file__).parents[2]))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    assert proc.stderr == ""


def test_a_timeout_of_zero_does_not_wait_for_other_threads():
    # SCHED-9: a wait whose deadline has already come returns at once, as a real one does;
    # only a later deadline waits until no other thread can run
    def program():
        order = []
        ev = threading.Event()
        sem = threading.Semaphore(0)
        t = threading.Thread(target=lambda: order.append("other"))
        t.start()
        assert ev.wait(timeout=0) is False
        assert sem.acquire(timeout=0) is False
        order.append("main")
        t.join()
        return order

    assert run_once(program) == ["main", "other"]
    # Every schedule, on every Python (auto granularity schedules racing sites only on
    # 3.11+, RACE-5): "main" first is reachable only because the zero timeouts did not wait.
    orders = set()
    report = coordkit.explore(lambda: orders.add(tuple(program())), strategy="dfs",
                              granularity="sync")
    assert report.failure is None and report.exhausted
    assert orders == {("main", "other"), ("other", "main")}


def test_enumerate_and_active_count_see_the_runs_threads():
    # SCHED-3: inside a run, threading.enumerate()/active_count() list the run's live
    # threads (not coordkit's worker), so the "wait until I am the last thread" idiom works
    def probe():
        ev = threading.Event()
        t = threading.Thread(target=ev.wait, name="w0")
        t.start()
        seen = (threading.active_count(), [x.name for x in threading.enumerate()])
        ev.set()
        t.join()
        return seen, threading.active_count()

    (count, names), after = run_once(probe)
    assert (count, after) == (2, 1)
    assert names[1:] == ["w0"] and names[0] == threading.current_thread().name

    def wait_for_the_others():
        for i in range(3):
            threading.Thread(target=time.sleep, args=(i,)).start()
        while threading.active_count() > 1:
            time.sleep(0.1)

    assert coordkit.explore(wait_for_the_others, seed=1, max_schedules=50).failure is None


def test_the_programs_own_excepthook_sees_thread_exceptions(recwarn):
    # SCHED-10: a hook installed by the program is called, as on real threads; the caller's
    # hook (pytest's here) is not, so an exploration does not warn once per schedule
    def supervised():
        seen = []
        previous = threading.excepthook
        threading.excepthook = lambda args: seen.append((args.exc_type, args.thread.name))
        try:
            t = threading.Thread(target=lambda: 1 / 0, name="worker")
            t.start()
            t.join()
        finally:
            threading.excepthook = previous
        assert seen == [(ZeroDivisionError, "worker")], seen

    result = coordkit.explore(supervised, seed=1, max_schedules=20, fail_on_thread_exception=False)
    assert result.failure is None
    failing = coordkit.explore(lambda: threading.Thread(target=lambda: 1 / 0).start(),
                               seed=1, max_schedules=20)
    assert failing.failure is not None and failing.failure.kind == "exception"
    assert not [w for w in recwarn if "Exception in thread" in str(w.message)]


def polite_spin(delay: float):
    def program():
        state = {"flag": False}

        def setter():
            time.sleep(0.001)
            state["flag"] = True

        t = threading.Thread(target=setter)
        t.start()
        while not state["flag"]:
            time.sleep(delay)
        t.join()

    return program


def busy_poll():
    ev = threading.Event()
    t = threading.Thread(target=ev.set)
    t.start()
    while not ev.is_set():
        pass
    t.join()


@pytest.mark.parametrize("strategy", ["pct", "random", "dfs"])
@pytest.mark.parametrize("program", [polite_spin(0), polite_spin(0.01), busy_poll],
                         ids=["sleep0-loop", "sleep-loop", "busy-poll"])
def test_polling_loops_are_not_livelocks(program, strategy):
    # SCHED-19: sleep(0) yields, a thread that keeps the others waiting yields, and a
    # sleep(0) with every other thread parked lets the clock reach the next deadline
    result = coordkit.explore(program, strategy=strategy, seed=1, max_schedules=100)
    assert result.failure is None, result.failure


def test_one_yield_does_not_let_a_long_timeout_pass():
    # SCHED-19: only a polling loop of yields moves the clock, never a single sleep(0)
    def program():
        q = queue.Queue()

        def producer():
            time.sleep(0)
            q.put(1)

        t = threading.Thread(target=producer)
        t.start()
        assert q.get(timeout=5) == 1
        t.join()

    result = coordkit.explore(program, strategy="dfs", max_preemptions=None, max_schedules=1000)
    assert result.failure is None and result.exhausted


def test_a_real_livelock_still_ends_at_the_step_limit_and_says_where():
    # SCHED-19, SCHED-10: two threads that wait for each other's flag forever
    def program():
        flags = {"a": False, "b": False}

        def wait_for(other):
            while not flags[other]:
                time.sleep(0)

        threads = [threading.Thread(target=wait_for, args=(k,), name=f"waits-for-{k}") for k in "ab"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    failure = coordkit.explore(program, seed=1, max_schedules=5, max_steps=2_000).failure
    assert failure is not None and failure.kind == "step_limit"
    assert "waits-for-" in failure.message and "test_runtime.py" in failure.message


def test_a_thread_local_made_in_the_run_is_per_thread():
    # SCHED-4: threading.local() inside a run keeps one value per controlled thread
    def per_thread_connection():
        local = threading.local()
        seen = []

        def worker(i):
            local.conn = f"conn-{i}"
            time.sleep(0.01)  # the other workers run here
            seen.append(local.conn == f"conn-{i}")

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(seen), seen

    assert coordkit.explore(per_thread_connection, seed=1, max_schedules=100).failure is None


def test_a_spin_without_scheduling_points_times_out_and_says_where():
    # SCHED-12: the watchdog ends the run; the report names the thread and its line
    def spin():
        state = {"flag": False}
        t = threading.Thread(target=lambda: state.update(flag=True))
        t.start()
        while not state["flag"]:  # no scheduling point in here
            pass
        t.join()

    before = threading.active_count()
    failure = coordkit.explore(spin, seed=1, max_schedules=3, run_timeout=0.5).failure
    assert failure is not None and failure.kind == "timeout"
    assert "T0 'MainThread' at test_runtime.py:" in failure.message
    assert "granularity='line'" in failure.message
    assert 'while not state["flag"]' in failure.details
    assert threading.active_count() == before


def test_timeouts_fire_last():
    # SCHED-9: the waiter's timeout can only fire once the worker is parked or done
    def program():
        ev = threading.Event()

        def worker():
            lock = threading.Lock()
            for _ in range(20):
                with lock:
                    pass
            ev.set()

        t = threading.Thread(target=worker)
        t.start()
        assert ev.wait(timeout=0.001), "timed out although the worker never waited"
        t.join()

    result = coordkit.explore(program, seed=1, max_schedules=200)
    assert result.failure is None


def test_earliest_deadline_first():
    # SCHED-8: the clock jumps to the earliest deadline, waking that thread only
    def program():
        order = []

        def sleeper(seconds):
            time.sleep(seconds)
            order.append(seconds)

        ts = [threading.Thread(target=sleeper, args=(s,)) for s in (3, 1, 2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return order

    assert run_once(program) == [1, 2, 3]


def test_coordinator_join_with_long_grace_finishes_in_wall_milliseconds():
    # SCHED-8: a 120 s grace period with a stuck thread costs virtual time only
    def program():
        coord = coordkit.Coordinator()
        never = threading.Event()
        t = threading.Thread(target=never.wait, daemon=True)
        coord.register_thread(t)
        t.start()
        coord.request_stop()
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match="threads still running"):
            coord.join(stop_grace_period_secs=120)
        return time.monotonic() - t0

    started = time.perf_counter()
    assert run_once(program) >= 120
    assert time.perf_counter() - started < 2


def test_step_limit_reports_a_livelock():
    # SCHED-10 step_limit
    def program():
        flag = threading.Event()
        while not flag.is_set():
            time.sleep(0)

    result = coordkit.explore(program, max_steps=100, max_schedules=5, seed=1)
    assert result.failure.kind == "step_limit"
    assert "more than 100 scheduling steps" in result.failure.message


def test_invariant_failure():
    # SCHED-10 invariant
    state = {"balance": 0}

    def program():
        state["balance"] = 0
        lock = threading.Lock()

        def transfer():
            with lock:
                state["balance"] -= 10
            with lock:
                state["balance"] += 10

        ts = [threading.Thread(target=transfer) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    result = coordkit.explore(program, invariant=lambda: state["balance"] >= -10, seed=1)
    assert result.failure.kind == "invariant"
    with pytest.raises(AssertionError, match="invariant violated"):
        coordkit.replay(program, result.failure.trace, invariant=lambda: state["balance"] >= -10)


def test_thread_exceptions_can_be_allowed():
    # SCHED-10: fail_on_thread_exception=False lets a thread die without failing the run
    def program():
        t = threading.Thread(target=lambda: 1 / 0)
        t.start()
        t.join()

    assert coordkit.explore(program, seed=1, max_schedules=3).failure.kind == "exception"
    assert coordkit.explore(program, seed=1, max_schedules=3, fail_on_thread_exception=False).ok


def test_parked_daemon_threads_are_not_a_deadlock():
    # SCHED-10: the run passes once the non-daemon threads are done
    def program():
        threading.Thread(target=threading.Event().wait, daemon=True).start()

    assert coordkit.explore(program, seed=1, max_schedules=5).ok


def test_watchdog_interrupts_a_busy_loop():
    # SCHED-12: computation without scheduling points is interrupted by the wall-clock budget
    def program():
        while True:
            pass

    started = time.perf_counter()
    result = coordkit.explore(program, max_schedules=1, run_timeout=0.5, seed=1)
    assert result.failure.kind == "timeout"
    assert time.perf_counter() - started < 10


def test_a_slow_run_is_told_apart_from_a_blocked_one_and_leaves_no_thread():
    """SCHED-64: a run still taking scheduling steps at run_timeout ends at its next step,
    says it was slow, not blocked, and ends its threads (SCHED-13)."""
    def program():
        lock = threading.Lock()

        def poll():
            for _ in range(10**8):
                with lock:
                    pass

        threads = [threading.Thread(target=poll) for _ in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    started = time.perf_counter()
    result = coordkit.explore(program, max_schedules=1, run_timeout=0.3, seed=1,
                              max_steps=10**9)
    failure = result.failure
    assert failure.kind == "timeout"
    assert "while still making progress through the scheduler" in failure.message
    assert "blocked outside" not in failure.message
    assert "scheduling steps by" in failure.message and "'Thread-" in failure.details
    assert result.leaked_threads == []
    assert time.perf_counter() - started < 5


def test_watchdog_abandons_a_run_blocked_outside_the_scheduler():
    # SCHED-12, SCHED-4: a real lock made outside the run blocks for real
    outside = threading.Lock()
    outside.acquire()
    try:
        result = coordkit.explore(outside.acquire, max_schedules=1, run_timeout=0.3, seed=1)
        assert result.failure.kind == "timeout"
        assert "blocked outside the scheduler" in result.failure.message
        assert "outside.acquire" not in result.failure.details or "test_runtime" in result.failure.details
    finally:
        outside.release()  # lets the abandoned worker finish
    # SCHED-13: once free, the abandoned worker exits (later tests count threads)
    for worker in [t for t in threading.enumerate() if t.name == "coordkit-worker"]:
        worker.join(timeout=5)
        assert not worker.is_alive()


def test_no_thread_outlives_a_run_and_finally_blocks_run():
    # SCHED-13
    cleaned, started = [], []

    def program():
        def stuck():
            started.append("stuck")
            try:
                threading.Event().wait()
            finally:
                cleaned.append("stuck")

        threading.Thread(target=stuck).start()
        threading.Thread(target=stuck).start()

    before = threading.active_count()
    result = coordkit.explore(program, max_schedules=3, seed=1, shrink=False)
    assert result.failure.kind == "deadlock"
    assert len(started) >= 2 and cleaned == started
    assert not result.leaked_threads
    assert threading.active_count() == before


def test_thread_identity():
    # SCHED-7
    def program():
        names, idents = [], set()

        def who():
            names.append(threading.current_thread().name)
            idents.add(threading.get_ident())

        ts = [threading.Thread(target=who) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert threading.current_thread() is threading.main_thread()
        return sorted(names), len(idents)

    assert run_once(program) == (["Thread-1 (who)", "Thread-2 (who)"], 2)
    assert run_once(program) == (["Thread-1 (who)", "Thread-2 (who)"], 2)


class TestStdlibSemantics:
    # SCHED-6: the shims raise what the stdlib raises

    def test_lock_errors(self):
        def program():
            lock = threading.Lock()
            with pytest.raises(RuntimeError):
                lock.release()
            assert lock.acquire(blocking=False)
            assert not lock.acquire(blocking=False)
            assert not lock.acquire(timeout=1)
            assert lock.locked()
            with pytest.raises(ValueError):
                lock.acquire(False, 1)

        run_once(program)

    def test_rlock_reentrant_and_owned(self):
        def program():
            r = threading.RLock()
            with r, r:
                pass
            r.acquire()
            err = []

            def other():
                try:
                    r.release()
                except RuntimeError as exc:
                    err.append(exc)

            t = threading.Thread(target=other)
            t.start()
            t.join()
            r.release()
            return len(err)

        assert run_once(program) == 1

    def test_condition_requires_its_lock_and_times_out(self):
        def program():
            cond = threading.Condition()
            with pytest.raises(RuntimeError):
                cond.wait()
            with pytest.raises(RuntimeError):
                cond.notify()
            with cond:
                assert cond.wait(timeout=1) is False
                assert cond.wait_for(lambda: False, timeout=2) is False
            return time.monotonic()

        assert run_once(program) == run_once(lambda: time.monotonic()) + 3

    def test_condition_notifies_in_fifo_order(self):
        def program():
            cond = threading.Condition()
            woke = []
            ready = threading.Semaphore(0)

            def waiter(i):
                with cond:
                    ready.release()
                    cond.wait()
                    woke.append(i)

            ts = [threading.Thread(target=waiter, args=(i,)) for i in range(3)]
            for t in ts:
                t.start()
                ready.acquire()
            for _ in range(3):
                with cond:
                    cond.notify()
            for t in ts:
                t.join()
            return woke

        assert run_once(program) == [0, 1, 2]

    def test_semaphores(self):
        def program():
            s = threading.BoundedSemaphore(1)
            s.acquire()
            assert not s.acquire(timeout=1)
            s.release()
            with pytest.raises(ValueError, match="released too many times"):
                s.release()
            with pytest.raises(ValueError):
                threading.Semaphore(-1)

        run_once(program)

    def test_barrier_and_timeout(self):
        def program():
            b = threading.Barrier(2)
            got = []
            t = threading.Thread(target=lambda: got.append(b.wait()))
            t.start()
            got.append(b.wait())
            t.join()
            lonely = threading.Barrier(2)
            with pytest.raises(threading.BrokenBarrierError):
                lonely.wait(timeout=1)
            return sorted(got)

        assert run_once(program) == [0, 1]

    def test_simple_queue(self):
        def program():
            q = queue.SimpleQueue()
            t = threading.Thread(target=lambda: q.put(5))
            t.start()
            v = q.get()
            t.join()
            with pytest.raises(queue.Empty):
                q.get(timeout=1)
            with pytest.raises(queue.Empty):
                q.get_nowait()
            return v, q.empty(), q.qsize()

        assert run_once(program) == (5, True, 0)

    def test_thread_rules(self):
        def program():
            t = threading.Thread(target=lambda: None)
            with pytest.raises(RuntimeError, match="before it is started"):
                t.join()
            t.start()
            with pytest.raises(RuntimeError, match="only be started once"):
                t.start()
            t.join()
            with pytest.raises(RuntimeError, match="cannot join current thread"):
                threading.current_thread().join() if False else _join_self()

        def _join_self():
            box = []

            def me():
                try:
                    threading.current_thread().join()
                except RuntimeError as exc:
                    box.append(exc)

            t = threading.Thread(target=me)
            t.start()
            t.join()
            raise box[0]

        run_once(program)

    def test_used_outside_its_run(self):
        # SCHED-4m: after the run, outside any run (explore returned, atexit): the error
        # says that run is over and what to take out of global state
        lock = run_once(lambda: threading.Lock())
        with pytest.raises(_shims.UncontrolledUseError,
                           match=r"Lock#1 was created inside .*, and that run is over"):
            lock.acquire()

    def test_kept_between_runs_is_named_as_such(self):
        # SCHED-4m: an object one run made, used by a later run's thread (a logging
        # handler added to a global logger in each run is the common case): the error
        # says the function keeps objects between runs
        kept = []

        def program():
            if not kept:
                kept.append(threading.RLock())
            t = threading.Thread(target=lambda: kept[0].acquire())
            t.start()
            t.join()

        result = coordkit.explore(program, max_schedules=3, strategy="dfs")
        assert result.failure is not None
        message = str(result.failure.exception)
        assert "made by an earlier run and is used again by this one" in message
        assert "keeps objects between runs" in message


def test_explore_rejects_bad_arguments():
    # SCHED-15 (bad input gets a clear error naming the argument)
    with pytest.raises(ValueError, match="max_schedules must be a positive integer, got 0"):
        coordkit.explore(lambda: None, max_schedules=0)
    with pytest.raises(ValueError, match="strategy must be"):
        coordkit.explore(lambda: None, strategy="bfs")
    with pytest.raises(ValueError, match="granularity must be"):
        coordkit.explore(lambda: None, granularity="bytecode")
    with pytest.raises(TypeError, match="fn must be a zero-argument callable"):
        coordkit.explore(42)
    with pytest.raises(TypeError, match="seed must be an int"):
        coordkit.explore(lambda: None, seed="x")
    with pytest.raises(TypeError, match="trace must be"):
        coordkit.replay(lambda: None, 3.5)


def test_parked_threads_cost_no_steps():
    # SCHED-5: a waiting thread is parked, not spinning: while it waits, only the other
    # thread's operations are steps
    def program():
        ev = threading.Event()
        waiter = threading.Thread(target=ev.wait)
        waiter.start()
        lock = threading.Lock()
        for _ in range(500):
            with lock:
                pass
        ev.set()
        waiter.join()

    report = coordkit.replay(program, [])
    assert report.steps < 500 * 2 + 20



def _room() -> int:
    """How many more calls deep the calling thread can go before RecursionError."""
    def down(n):
        try:
            return down(n + 1)
        except RecursionError:
            return n
    return down(0)


def _descend(f, n):
    """Recursion that touches nothing shared (locals only): no tracer work on the way."""
    return n if n == 0 else f(f, n - 1)


def _real_threads_room() -> int:
    out = []
    t = threading.Thread(target=lambda: out.append(_room()))
    t.start()
    t.join()
    return out[0]


@pytest.mark.parametrize("strategy", ["dfs", "random"])
def test_a_thread_can_recurse_as_deep_as_a_real_one_in_every_schedule(strategy):
    """SCHED-40: each controlled thread starts at the recursion depth a real thread starts
    at, whoever ran before it.  A thread first switched to from deep inside another's
    stack used to inherit that depth, so a program that recursed near the limit failed
    with RecursionError in some schedules only (reported as a bug needing a preemption)."""
    depth = _real_threads_room() - 3

    def program():
        lock = threading.Lock()
        out = []

        def work():
            with lock:
                pass
            out.append(_descend(_descend, depth))

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert out == [0, 0, 0]

    result = coordkit.explore(program, strategy=strategy, max_schedules=30, seed=1,
                              max_preemptions=2 if strategy == "dfs" else None)
    assert result.failure is None, result.failure


def test_the_recursion_limit_is_put_back_after_a_run():
    """SCHED-40: the room a run makes for its threads is the run's only."""
    before = sys.getrecursionlimit()
    run_once(lambda: threading.Thread(target=lambda: None).start())
    assert sys.getrecursionlimit() == before
