"""The CPython suites run under the scheduler: their concrete classes and skips.

Each function returns a ``Suite`` (``cpython``) or, when the CPython module is not
available, the reason.  Every skip says why the scheduler cannot control what the
test checks; everything else runs.
"""

from __future__ import annotations

import _thread
import importlib
import pkgutil
import queue
import threading

from tests.stdlib.cpython import CHILD, FORK, SUBINTERP, Suite, concrete, cpython_test_module, late

SIGNALS = ("signals: interrupt_main() signals the OS main thread, and signal handlers cannot be "
           "installed inside a run (SCHED-4i)")
STRESS = ("a stress test: more steps than one run's step budget allows, where a schedule "
          "explored is worth less than many small ones (SCHED-21)")
FINALIZERS = ("puts from __del__ of cycles it counts on the cyclic GC to collect at "
              "arbitrary allocation points, and the collector is off inside a run "
              "(SCHED-60), so none of its rounds would be the reentrant put it checks "
              "(SCHED-4j)")


def lock_suite() -> Suite | str:
    """``Lib/test/lock_tests.py``: every primitive of ``threading`` and ``_thread``."""
    lock_tests = cpython_test_module("lock_tests")
    if isinstance(lock_tests, str):
        return lock_tests
    classes = {
        "LockTests": concrete("LockTests", lock_tests.LockTests, locktype=late(threading, "Lock")),
        "RLockTests": concrete("RLockTests", lock_tests.RLockTests, locktype=late(threading, "RLock")),
        # _thread's names (item 1 of the issue): the C lock and RLock types.
        "ThreadModuleRLockTests": concrete("ThreadModuleRLockTests", lock_tests.RLockTests,
                                           locktype=late(_thread, "RLock")),
        "EventTests": concrete("EventTests", lock_tests.EventTests, eventtype=late(threading, "Event")),
        "ConditionTests": concrete("ConditionTests", lock_tests.ConditionTests,
                                   condtype=late(threading, "Condition")),
        "SemaphoreTests": concrete("SemaphoreTests", lock_tests.SemaphoreTests,
                                   semtype=late(threading, "Semaphore")),
        "BoundedSemaphoreTests": concrete("BoundedSemaphoreTests", lock_tests.BoundedSemaphoreTests,
                                          semtype=late(threading, "BoundedSemaphore")),
        "BarrierTests": concrete("BarrierTests", lock_tests.BarrierTests,
                                 barriertype=late(threading, "Barrier")),
    }
    test_threading = cpython_test_module("test_threading")
    if not isinstance(test_threading, str):
        # A Condition used as an RLock, as test_threading runs it (with its own skip of
        # _recursion_count, which threading.Condition does not export).
        classes["ConditionAsRLockTests"] = concrete(
            "ConditionAsRLockTests", test_threading.ConditionAsRLockTests,
            locktype=late(threading, "Condition"))
    return Suite(
        module="lock_tests",
        classes=classes,
        skips={
            ("LockTests", "test_at_fork_reinit"): FORK,
            ("EventTests", "test_at_fork_reinit"): FORK,
        },
        not_run={
            "BaseLockTests, BaseSemaphoreTests, BaseTestCase": "abstract bases of the classes run",
        },
    )


def queue_suite() -> Suite | str:
    """``Lib/test/test_queue.py``: Queue, LifoQueue, PriorityQueue and SimpleQueue."""
    tq = cpython_test_module("test_queue")
    if isinstance(tq, str):
        return tq
    # test_queue runs each class twice, over two fresh copies of the queue module (pure
    # Python, and with the C _queue); the copies are made with import_fresh_module and are
    # not in sys.modules, so a run cannot patch their names (SCHED-4d).  The running
    # ``queue`` module is both: Queue & co. are its pure-Python classes, SimpleQueue its C
    # one (controlled), _PySimpleQueue the pure-Python one.
    classes = {
        "QueueTest": concrete("QueueTest", tq.QueueTest, queue=queue),
        "LifoQueueTest": concrete("LifoQueueTest", tq.LifoQueueTest, queue=queue),
        "PriorityQueueTest": concrete("PriorityQueueTest", tq.PriorityQueueTest, queue=queue),
        "FailingQueueTest": concrete("FailingQueueTest", tq.FailingQueueTest, queue=queue),
        "CSimpleQueueTest": concrete("CSimpleQueueTest", tq.CSimpleQueueTest, queue=queue),
        "PySimpleQueueTest": concrete("PySimpleQueueTest", tq.PySimpleQueueTest, queue=queue),
    }
    return Suite(
        module="test_queue",
        classes=classes,
        skips={("CSimpleQueueTest", "test_reentrancy"): FINALIZERS,
               # 3.13's: 65,536 items through 13 threads, read by six threads polling
               # get(False) in a loop: millions of steps, far past a run's step budget
               # (the immediate variant, with its few items, is run)
               **{(name, "test_shutdown_all_methods_in_many_threads"): STRESS
                  for name in ("QueueTest", "LifoQueueTest", "PriorityQueueTest")}},
        # 50 consumers polling get(block=False) with sleep(1e-5): half a million steps in
        # a run, seconds of wall time; one schedule per strategy unless a campaign asks.
        heavy={("CSimpleQueueTest", "test_many_threads_nonblock"): 1,
               ("PySimpleQueueTest", "test_many_threads_nonblock"): 1},
        options={("CSimpleQueueTest", "test_many_threads_nonblock"): {"run_timeout": 120.0},
                 ("PySimpleQueueTest", "test_many_threads_nonblock"): {"run_timeout": 120.0}},
        not_run={
            "PyQueueTest/CQueueTest (and Lifo, Priority, Failing)":
                "the same classes over import_fresh_module copies of queue, which a run "
                "cannot patch: run once, over the running queue module",
        },
    )


def thread_suite() -> Suite | str:
    """``Lib/test/test_thread.py``: ``_thread.start_new_thread``, ``allocate_lock``, ``_count``."""
    tt = cpython_test_module("test_thread")
    if isinstance(tt, str):
        return tt
    return Suite(
        module="test_thread",
        classes={
            "ThreadRunningTests": concrete("ThreadRunningTests", tt.ThreadRunningTests),
            "BarrierTest": concrete("BarrierTest", tt.BarrierTest),
            "LockTests": concrete("LockTests", tt.LockTests, locktype=late(_thread, "allocate_lock")),
            "TestForkInThread": concrete("TestForkInThread", tt.TestForkInThread),
        },
        skips={
            ("LockTests", "test_at_fork_reinit"): FORK,
            ("TestForkInThread", "*"): FORK,
        },
        # An exception that ends a _thread thread goes to sys.unraisablehook, which the
        # test catches: it is the program's design, not a failure.
        options={"ThreadRunningTests": {"fail_on_thread_exception": False}},
    )


def threading_suite() -> Suite | str:
    """``Lib/test/test_threading.py``: the thread-lifecycle classes (its lock classes are
    lock_tests', run in ``lock_suite``)."""
    tt = cpython_test_module("test_threading")
    if isinstance(tt, str):
        return tt
    names = ["ThreadTests", "ThreadJoinOnShutdown", "SubinterpThreadingTests",
             "ThreadingExceptionTests", "ExceptHookTests", "TimerTests", "MiscTestCase",
             "InterruptMainTests", "AtexitTests"]
    classes = {name: concrete(name, getattr(tt, name)) for name in names}
    tstate = ("checks Thread._tstate_lock, CPython's private lock released by the OS "
              "thread's C code as it exits: a controlled thread has no OS thread of its own")
    skips = {
        # ThreadTests
        ("ThreadTests", "test_disallow_instantiation"):
            "checks that the C type _thread.lock cannot be instantiated (bpo-43916); the "
            "type of a controlled lock is coordkit's class",
        ("ThreadTests", "test_PyThreadState_SetAsyncExc"):
            "raises an exception asynchronously in an OS thread (ctypes "
            "PyThreadState_SetAsyncExc): the controlled threads share one OS thread, and "
            "fn's ident is the caller's (SCHED-4k)",
        ("ThreadTests", "test_limbo_cleanup"):
            "replaces threading._start_new_thread and checks threading._limbo: a "
            "controlled Thread.start calls neither (SCHED-4d)",
        ("ThreadTests", "test_tstate_lock"): tstate,
        ("ThreadTests", "test_shutdown_locks"): tstate,
        ("ThreadTests", "test_frame_tstate_tracing"):
            "creates a generator in a C thread (_testcapi.call_in_temporary_c_thread): "
            "a thread no scheduler runs (SCHED-4k)",
        ("ThreadTests", "test_dummy_thread_after_fork"): FORK,
        ("ThreadTests", "test_is_alive_after_fork"): FORK,
        ("ThreadTests", "test_main_thread_after_fork"): FORK,
        ("ThreadTests", "test_main_thread_after_fork_from_nonmain_thread"): FORK,
        ("ThreadTests", "test_fork_at_exit"): FORK,
        ("ThreadTests", "test_finalize_running_thread"): CHILD,
        ("ThreadTests", "test_finalize_with_trace"): CHILD,
        ("ThreadTests", "test_join_nondaemon_on_shutdown"): CHILD,
        ("ThreadTests", "test_main_thread_during_shutdown"): CHILD,
        ("ThreadTests", "test_finalization_shutdown"): CHILD,
        ("ThreadTests", "test_locals_at_exit"): CHILD,
        ("ThreadTests", "test_debug_deprecation"): CHILD,
        ("ThreadTests", "test_import_from_another_thread"): CHILD,
        ("ThreadJoinOnShutdown", "*"): CHILD + "; several fork as well",
        ("SubinterpThreadingTests", "*"): SUBINTERP,
        # ThreadingExceptionTests
        ("ThreadingExceptionTests", "test_recursion_limit"): CHILD,
        ("ThreadingExceptionTests", "test_print_exception"): CHILD,
        ("ThreadingExceptionTests", "test_print_exception_stderr_is_none_1"): CHILD,
        ("ThreadingExceptionTests", "test_print_exception_stderr_is_none_2"): CHILD,
        ("ThreadingExceptionTests", "test_print_exception_gh_102056"): CHILD,
        # ExceptHookTests
        ("ExceptHookTests", "test_excepthook_thread_None"):
            "the C excepthook prints the OS thread's identifier, which every controlled "
            "thread shares; inside a run get_ident() names the controlled thread (SCHED-7)",
        # MiscTestCase
        ("MiscTestCase", "test__all__"):
            "checks threading.__all__ against the module's own definitions; during a run "
            "threading's factories are coordkit's (SCHED-3), defined in another module",
        # InterruptMainTests
        **{("InterruptMainTests", name): SIGNALS for name in (
            "test_interrupt_main_subthread", "test_interrupt_main_mainthread",
            "test_interrupt_main_with_signal_handler", "test_interrupt_main_noerror")},
        ("InterruptMainTests", "test_can_interrupt_tight_loops"):
            "busy-waits on a plain list with no scheduling point in the loop: at the default "
            "granularity nothing preempts it (SCHED-2), and granularity='line' does not trace "
            "the standard library's code, CPython's tests included",
        ("AtexitTests", "*"): CHILD,
    }
    return Suite(
        module="test_threading",
        classes=classes,
        skips=skips,
        # These threads die by design, and the tests check what excepthook made of it.
        options={"ExceptHookTests": {"fail_on_thread_exception": False}},
        not_run={
            "LockTests, PyRLockTests, CRLockTests, EventTests, ConditionAsRLockTests, "
            "ConditionTests, SemaphoreTests, BoundedSemaphoreTests, BarrierTests":
                "lock_tests' classes: run in the lock_tests table (PyRLock and CRLock are "
                "threading's private _PyRLock/_CRLock, bound at its import: SCHED-4d)",
        },
    )


def futures_suite() -> Suite | str:
    """``Lib/test/test_concurrent_futures.py``: the ThreadPoolExecutor classes and Future."""
    cf = cpython_test_module("test_concurrent_futures")
    if isinstance(cf, str):
        return cf
    names = ["ThreadPoolShutdownTest", "ThreadPoolWaitTests", "ThreadPoolAsCompletedTest",
             "ThreadPoolExecutorTest", "ThreadPoolInitializerTest",
             "ThreadPoolFailingInitializerTest", "FutureTests"]
    found = _classes_in(cf, names)
    classes = {name: concrete(name, found[name]) for name in names if name in found}
    return Suite(
        module="test_concurrent_futures",
        classes=classes,
        skips={
            ("ThreadPoolShutdownTest", "test_interpreter_shutdown"): CHILD,
            ("ThreadPoolShutdownTest", "test_submit_after_interpreter_shutdown"): CHILD,
            ("ThreadPoolShutdownTest", "test_hang_gh83386"): CHILD,
            ("ThreadPoolShutdownTest", "test_cancel_futures_wait_false"): CHILD,
            ("ThreadPoolExecutorTest", "test_hang_global_shutdown_lock"):
                FORK + "; it starts fork-based process pools",
            # 3.10 and 3.13 have it: signal.alarm() bounds its wait
            ("ThreadPoolShutdownTest", "test_hang_gh94440"): SIGNALS,
        },
        timing={
            ("ThreadPoolShutdownTest", "test_cancel_futures"):
                "asserts that some future ran before shutdown(cancel_futures=True), which no "
                "interleaving guarantees: in the schedule with no preemption at all the main "
                "thread submits all 50 and shuts down before any worker takes one "
                "(test_timing_assumptions.py replays it)",
            ("ThreadPoolExecutorTest", "test_idle_thread_reuse"):
                "asserts one worker for three sequential submits, but the worker sets the "
                "result before it releases the idle semaphore: preempted in between, the next "
                "submit starts a second worker (test_timing_assumptions.py replays it)",
        },
        expected={("FutureTests", method): CALLBACK_LOGGED
                  for method in ("test_done_callback_raises",
                                 "test_done_callback_raises_already_succeeded")},
        not_run={"ProcessPool*": "process pools: other processes, not threads (SCHED-4h)"},
    )


# AIO-36: what concurrent.futures only logs is the run's failure.
CALLBACK_LOGGED = ("checks that concurrent.futures logs a done callback's exception "
                   "('exception calling callback for ...'); inside a run it is the run's "
                   "failure instead (AIO-36), in every schedule")


def _classes_in(module, names: list[str]) -> dict[str, type]:
    """``names`` found in ``module``, or in its ``test_*`` submodules where it is a package
    (test_concurrent_futures became one in 3.12)."""
    found = {name: getattr(module, name) for name in names if hasattr(module, name)}
    for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
        if info.name.startswith("test_") and len(found) < len(names):
            sub = importlib.import_module(f"{module.__name__}.{info.name}")
            found.update({name: getattr(sub, name) for name in names if hasattr(sub, name)})
    return found


SUITES = {
    "lock_tests": lock_suite,
    "test_queue": queue_suite,
    "test_thread": thread_suite,
    "test_threading": threading_suite,
    "test_concurrent_futures": futures_suite,
}
