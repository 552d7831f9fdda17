"""coordkit.Harness: an open controlled world driven step by step (HARN-1..4)."""

from __future__ import annotations

import threading
import time

import pytest

import coordkit
from coordkit import Harness


def test_pending_operation_completes_when_released():
    # HARN-1
    with Harness() as h:
        ev = h.run(threading.Event)
        waiter = h.start(ev.wait, "waiter")
        assert waiter.pending and waiter.outcome == ("pending",)
        assert h.pending() == ["waiter: Event#1.wait"]
        with pytest.raises(RuntimeError, match="still pending"):
            waiter.result()
        h.run(ev.set)
        assert waiter.outcome == ("ok", True)


def test_run_refuses_a_call_that_blocks():
    # HARN-1
    with Harness() as h:
        lock = h.run(threading.Lock)
        h.run(lock.acquire)
        with pytest.raises(RuntimeError, match=r"blocked \(waiting on Lock#1 held by"):
            h.run(lock.acquire)


def test_errors_are_outcomes():
    # HARN-1
    with Harness() as h:
        op = h.start(lambda: 1 / 0, "divide")
        assert op.done and isinstance(op.error, ZeroDivisionError)
        with pytest.raises(ZeroDivisionError):
            op.result()


def test_settle_choices_decide_the_interleaving():
    # HARN-2: two threads append in an order that the choices pick, deterministically
    def order(choices):
        with Harness() as h:
            out = []
            lock = h.run(threading.Lock)
            start = h.run(threading.Event)

            def appender(tag):
                start.wait()
                for _ in range(2):
                    with lock:
                        out.append(tag)

            h.start(lambda: appender("a"), "a")
            h.start(lambda: appender("b"), "b")
            h.start(start.set, "go", choices=choices)
            return "".join(out)

    seen = {order(c) for c in ([], [1], [0, 1], [0, 0, 1], [1, 1, 1], [0, 2, 1, 1])}
    assert len(seen) > 1
    assert order([0, 1]) == order([0, 1])


def test_spawned_operations_race_in_the_next_settle():
    # HARN-5: nothing runs before the settle; the settle's choices order the racers
    def order(choices):
        with Harness() as h:
            out = []
            lock = h.run(threading.Lock)

            def appender(tag):
                for _ in range(2):
                    with lock:
                        out.append(tag)

            a = h.spawn(lambda: appender("a"), "a")
            b = h.spawn(lambda: appender("b"), "b")
            assert a.pending and b.pending and out == []
            h.settle(choices)
            assert a.done and b.done
            return "".join(out)

    assert order([]) == "aabb"
    seen = {order(c) for c in ([1], [0, 1], [0, 0, 1], [0, 1, 1], [1, 1, 1])}
    assert len(seen) > 1 and seen <= {"aabb", "abab", "abba", "baab", "baba", "bbaa"}
    assert order([0, 1, 1]) == order([0, 1, 1])


def test_no_time_passes_in_a_settle_and_advance_fires_in_order():
    # HARN-2, HARN-3
    with Harness() as h:
        ev = h.run(threading.Event)
        short = h.start(lambda: ev.wait(timeout=1), "short")
        long = h.start(lambda: ev.wait(timeout=5), "long")
        h.settle()
        assert h.now == 0 and short.pending and long.pending
        h.advance(2)
        assert h.now == 2
        assert short.outcome == ("ok", False) and long.pending
        h.advance(3)
        assert long.outcome == ("ok", False) and h.now == 5


def test_close_ends_threads_and_runs_finally_blocks():
    # HARN-4
    cleaned = []
    before = threading.active_count()
    with Harness() as h:
        ev = h.run(threading.Event)

        def stuck():
            try:
                ev.wait()
            finally:
                cleaned.append(True)

        h.start(stuck)
        h.start(stuck)
    assert cleaned == [True, True]
    assert threading.active_count() == before


def test_step_budget_per_call():
    # HARN-4
    with Harness(max_steps_per_call=50) as h:
        ev = h.run(threading.Event)
        with pytest.raises(coordkit.StepLimitExceeded):
            h.start(lambda: [ev.is_set() for _ in range(100)])


def test_thread_exceptions_are_collected():
    # HARN-4
    with Harness() as h:
        def spawn_failing():
            t = threading.Thread(target=lambda: 1 / 0, name="doomed")
            t.start()
            t.join()

        h.run(spawn_failing)
        [(name, exc)] = h.thread_exceptions
        assert name == "doomed" and isinstance(exc, ZeroDivisionError)


def test_bad_arguments():
    # HARN-3
    with Harness() as h:
        with pytest.raises(ValueError, match="seconds must be a non-negative number, got -1"):
            h.advance(-1)
        with pytest.raises(TypeError, match="fn must be a zero-argument callable"):
            h.start(42)
    with pytest.raises(RuntimeError, match="not open"):
        h.settle()


def test_an_async_operation_runs_on_a_loop_of_its_own_and_may_stay_pending():
    """HARN-6: an ``async def`` operation runs as a run runs it (AIO-1), on the run's
    clock: its value is the result; one that awaits a timer or what a later step does
    stays pending until then."""
    import asyncio

    with coordkit.Harness() as h:
        gate = h.run(threading.Event)

        async def doubled() -> int:
            await asyncio.sleep(1)
            return 2 * 21

        async def waits() -> str:
            await asyncio.to_thread(gate.wait)
            return "released"

        async def now() -> float:
            return asyncio.get_running_loop().time()

        assert h.run(now) == h.run(time.monotonic)
        sleeper = h.start(doubled)
        assert sleeper.pending  # a settle passes no virtual time (HARN-2)
        h.advance(1)
        assert sleeper.outcome == ("ok", 42)
        op = h.start(waits)
        assert op.pending
        h.run(gate.set)
        assert op.outcome == ("ok", "released")


def test_an_async_operation_refuses_a_coroutine_object():
    """HARN-6: a coroutine object is a TypeError naming ``fn``, as for ``explore``."""
    async def main() -> None:
        pass

    with coordkit.Harness() as h, pytest.raises(TypeError, match="fn must be"):
        h.start(main())
