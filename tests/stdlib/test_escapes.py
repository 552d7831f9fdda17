"""What escapes the scheduler (SCHED-4): one test per item of the list in specs/scheduler.md.

Each test shows the escape as it is documented: what stays real, what is refused, and
what a program sees.
"""

from __future__ import annotations

import _thread
import concurrent.futures
import datetime
import gc
import importlib.util
import queue
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

import coordkit
from coordkit.engine.task import EPOCH_ORIGIN
from coordkit.errors import UncontrolledUseError


def run_once(fn):
    box = {}

    def body():
        box["value"] = fn()

    coordkit.replay(body, [], strict=False)
    return box.get("value")


def controlled(obj) -> bool:
    return type(obj).__module__ == "coordkit.engine.shims"


def test_4a_objects_made_before_the_run_are_real_and_block_for_real():
    # SCHED-4a: a lock made by the test outside fn is a real lock; two controlled threads
    # that contend for it block the OS thread they share, and the watchdog ends the run
    outside = threading.Lock()

    def program():
        assert not controlled(outside)

        def hold():
            outside.acquire()
            time.sleep(1)  # parks, still holding the real lock
            outside.release()

        t = threading.Thread(target=hold)
        t.start()
        time.sleep(0.5)
        outside.acquire()  # the holder is parked: this blocks the OS thread for real

    # Only this test's abandoned worker: another test's may still be stuck in its own call.
    before = set(threading.enumerate())
    try:
        result = coordkit.explore(program, max_schedules=1, run_timeout=0.3, seed=1)
        assert result.failure is not None and result.failure.kind == "timeout"
        assert "blocked outside the scheduler" in result.failure.message
    finally:
        if outside.locked():
            outside.release()  # lets the abandoned worker finish
    for worker in [t for t in threading.enumerate()
                   if t.name == "coordkit-worker" and t not in before]:
        worker.join(timeout=5)  # once free, the abandoned worker exits (SCHED-13)
        assert not worker.is_alive()


def test_4b_objects_made_while_a_module_is_first_imported_in_the_run_are_real(tmp_path, monkeypatch):
    # SCHED-4b: a module's globals outlive the run that first imported it: they are real
    (tmp_path / "ck_escape_4b.py").write_text(
        "import threading\nLOCK = threading.Lock()\n"
        "class Holder:\n    event = threading.Event()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("ck_escape_4b", None)

    def program():
        import ck_escape_4b

        return ck_escape_4b, threading.Lock()

    module, made_in_run = run_once(program)
    assert controlled(made_in_run)
    assert not controlled(module.LOCK) and not controlled(module.Holder.event)
    with module.LOCK:  # usable after the run: a real lock
        module.Holder.event.set()
    sys.modules.pop("ck_escape_4b", None)


def test_4c_a_subclass_of_a_threading_class_makes_real_objects_and_isinstance_holds():
    # SCHED-4c: class MyEvent(threading.Event), wherever it is defined, subclasses the real
    # Event; isinstance against the patched names accepts real and controlled objects
    def program():
        class MyEvent(threading.Event):
            pass

        class MyQueue(queue.SimpleQueue):
            pass

        mine, plain = MyEvent(), threading.Event()
        return (controlled(mine), controlled(plain), MyEvent.__mro__[1] is threading.Event.__wrapped__,
                isinstance(mine, threading.Event), isinstance(plain, threading.Event),
                isinstance(MyQueue(), queue.SimpleQueue), issubclass(MyEvent, threading.Event))

    assert run_once(program) == (False, True, True, True, True, True, True)


def test_4d_names_the_run_does_not_patch_keep_the_real_objects():
    # SCHED-4d: threading's private aliases bound at its import, and modules outside
    # sys.modules (a copy made by executing a module's spec), keep the real objects
    spec = importlib.util.find_spec("queue")
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)  # a queue module not in sys.modules
    assert sys.modules["queue"] is not copy

    def program():
        return (controlled(threading._CRLock()),
                controlled(threading._allocate_lock()),
                copy.time() == time.monotonic(),  # its `from time import monotonic as time`
                controlled(copy.Queue().mutex))  # its `threading.Lock()` is patched: controlled

    assert run_once(program) == (False, False, False, True)


def test_4e_a_threading_local_made_before_the_run_is_shared_by_its_threads():
    # SCHED-4e: made before the run, threading.local is keyed by the OS thread, which every
    # controlled thread shares; made in the run, it is one per controlled thread
    before = threading.local()

    def program():
        inside = threading.local()
        seen = []

        def worker(i):
            before.value = inside.value = i
            time.sleep(0.01)  # the other worker runs here
            seen.append((before.value, inside.value))

        ts = [threading.Thread(target=worker, args=(i,)) for i in (1, 2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return sorted(seen)

    assert run_once(program) == [(2, 1), (2, 2)]


def test_4f_blocking_c_code_and_io_take_real_time_and_no_virtual_time():
    # SCHED-4f: a select() (any blocking call in C, any I/O) blocks the OS thread for real;
    # the virtual clock does not see it
    def program():
        t0, w0 = time.monotonic(), sync_wall()
        select.select([], [], [], 0.05)
        return time.monotonic() - t0, sync_wall() - w0

    virtual, wall = run_once(program)
    assert virtual == 0.0 and wall >= 0.05


def sync_wall() -> float:
    from coordkit import sync

    return sync.real_monotonic()


def test_4g_clocks_the_run_does_not_patch_read_real_time():
    # SCHED-4g: time.time() is virtual in a run; datetime.now(), time.process_time() and
    # time.clock_gettime() read the real clocks
    real_now = datetime.datetime.now().timestamp()

    def program():
        return time.time(), datetime.datetime.now().timestamp(), time.clock_gettime(time.CLOCK_REALTIME)

    virtual, dt_now, clock_now = run_once(program)
    assert virtual == EPOCH_ORIGIN
    assert abs(dt_now - real_now) < 60 and abs(clock_now - real_now) < 60


def test_4h_fork_is_refused_and_child_processes_run_for_real():
    # SCHED-4h: os.fork() inside a run would copy it half-way through: refused at the call;
    # a child process (fork+exec) runs on its own, outside any scheduler
    import os

    def program():
        with pytest.raises(RuntimeError, match="inside a controlled run"):
            os.fork()
        done = subprocess.run([sys.executable, "-c", "print('child')"], capture_output=True,
                              text=True, check=True)
        return done.stdout.strip()

    assert run_once(program) == "child"


def test_4i_signal_handlers_cannot_be_installed_inside_a_run():
    # SCHED-4i: a run's threads are not the main thread, where handlers must be installed
    def program():
        with pytest.raises(ValueError, match="main thread"):
            signal.signal(signal.SIGUSR1, lambda *a: None)

    coordkit.replay(program, [])


def test_4j_finalizers_run_in_whichever_thread_frees_the_object():
    # SCHED-4j: when the collector runs is not a scheduling decision; a finalizer runs in
    # the controlled thread that triggered it, and its synchronisation is scheduled there
    def program():
        ran = []
        q = queue.SimpleQueue()

        class Cycle:
            def __init__(self):
                self.me = self

            def __del__(self):
                ran.append(threading.current_thread().name)
                q.put("finalized")  # a scheduling point, inside the collection

        def collector():
            Cycle()
            gc.collect()

        t = threading.Thread(target=collector, name="collector")
        t.start()
        t.join()
        return ran, q.get(timeout=1)

    assert run_once(program) == (["collector"], "finalized")


def test_4k_c_level_views_of_threads_see_the_one_os_thread():
    # SCHED-4k: sys._current_frames() lists OS threads: the run's threads share one; a real
    # RLock made before the run is owned by that OS thread, so it excludes none of them
    shared = threading.RLock()

    def program():
        frames_before = len(sys._current_frames())
        inside = []

        def worker():
            with shared:  # a real RLock: both controlled threads "own" it at once
                inside.append(1)
                time.sleep(0.01)
                inside.append(len(inside))

        ts = [threading.Thread(target=worker) for _ in range(2)]
        for t in ts:
            t.start()
        frames_during = len(sys._current_frames())
        for t in ts:
            t.join()
        native = {threading.get_native_id()} | {t.native_id for t in ts}
        return frames_before == frames_during, max(inside), len(native)

    same_frames, overlap, natives = run_once(program)
    assert same_frames and overlap >= 3 and natives == 3


def test_4l_threading_settrace_in_a_run_is_not_applied_to_its_threads():
    # SCHED-4l: threading.settrace()/setprofile() act when Thread._bootstrap_inner starts an
    # OS thread: set inside a run, they reach none of the threads it starts
    calls = []

    def hook(frame, event, arg):
        calls.append(event)

    def program():
        threading.settrace(hook)
        threading.setprofile(hook)
        try:
            t = threading.Thread(target=lambda: None)
            t.start()
            t.join()
        finally:
            threading.settrace(None)
            threading.setprofile(None)

    coordkit.replay(program, [])
    assert calls == []


def test_4m_after_the_run_its_objects_can_be_read_but_not_used():
    # SCHED-4m: once the run is over, reading a flag, a lock, a queue's size or a Thread's
    # repr gives the final state; synchronising raises UncontrolledUseError; and the run's
    # pool workers are gone from concurrent.futures' registry
    def program():
        event, lock, q = threading.Event(), threading.Lock(), queue.SimpleQueue()
        event.set()
        lock.acquire()
        q.put(1)
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            pool.submit(pow, 2, 3).result()
            workers = list(pool._threads)
        return event, lock, q, t, workers

    event, lock, q, t, workers = run_once(program)
    assert event.is_set() and lock.locked() and q.qsize() == 1 and not q.empty()
    assert "stopped" in repr(t)
    with pytest.raises(UncontrolledUseError):
        event.set()
    with pytest.raises(UncontrolledUseError):
        lock.release()
    registry = concurrent.futures.thread._threads_queues
    assert workers and not any(w in registry for w in workers)


def test_the_thread_module_is_controlled_not_an_escape():
    # SCHED-3: _thread's names were on the list of escapes; they are controlled now
    def program():
        return controlled(_thread.allocate_lock()), controlled(_thread.RLock())

    assert run_once(program) == (True, True)
