"""coordkit._waiting.WaitQueue: the one way a reference primitive waits.

Real threads where timing does not matter, the controlled scheduler where order
does (FIFO wake-ups, no scheduling point of its own).
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

import pytest

import coordkit
from coordkit import coordinator, pipeline, queue_runner, queues, signals, sync
from coordkit._waiting import WaitQueue, deadline_after, time_left


class Interrupt(BaseException):
    pass


def test_a_ready_caller_returns_true_without_parking(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[Any] = []

    class CountingCondition:
        def __init__(self, lock: Any) -> None:
            pass

        def wait(self, timeout: float | None = None) -> bool:
            waits.append(timeout)
            return True

    monkeypatch.setattr(sync, "Condition", CountingCondition)
    lock = threading.Lock()
    withdrawn: list[bool] = []
    with lock:
        assert WaitQueue(lock).wait(lambda: True, deadline_after(0.0), lambda: withdrawn.append(True))
    assert waits == [] and withdrawn == []


def test_at_the_deadline_it_withdraws_with_the_lock_held_then_returns_false() -> None:
    lock = threading.Lock()
    withdrawn: list[bool] = []
    with lock:
        ready = WaitQueue(lock).wait(
            lambda: False, deadline_after(0.01), lambda: withdrawn.append(lock.locked())
        )
    assert ready is False
    assert withdrawn == [True]


def test_without_a_deadline_it_waits_until_ready() -> None:
    lock = threading.Lock()
    waiters = WaitQueue(lock)
    box: list[int] = []

    def fill() -> None:
        with lock:
            box.append(1)
            waiters.notify()

    with lock:
        threading.Thread(target=fill).start()
        assert waiters.wait(lambda: box) is True


def test_an_exception_while_parked_withdraws_first(monkeypatch: pytest.MonkeyPatch) -> None:
    class InterruptingCondition:
        def __init__(self, lock: Any) -> None:
            pass

        def wait(self, timeout: float | None = None) -> bool:
            raise Interrupt

    monkeypatch.setattr(sync, "Condition", InterruptingCondition)
    lock = threading.Lock()
    withdrawn: list[bool] = []
    with lock, pytest.raises(Interrupt):
        WaitQueue(lock).wait(lambda: False, None, lambda: withdrawn.append(True))
    assert withdrawn == [True]


def test_a_caller_ready_when_the_exception_comes_is_not_withdrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    state = {"ready": False}

    class ReadyThenInterruptedCondition:
        def __init__(self, lock: Any) -> None:
            pass

        def wait(self, timeout: float | None = None) -> bool:
            state["ready"] = True  # what it waited for happened...
            raise Interrupt  # ...and then it was interrupted

    monkeypatch.setattr(sync, "Condition", ReadyThenInterruptedCondition)
    lock = threading.Lock()
    withdrawn: list[bool] = []
    with lock, pytest.raises(Interrupt):
        WaitQueue(lock).wait(lambda: state["ready"], None, lambda: withdrawn.append(True))
    assert withdrawn == []


def test_ready_wins_over_a_deadline_that_passed_while_parked(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = {"now": 100.0}
    state = {"ready": False}

    class LateCondition:
        def __init__(self, lock: Any) -> None:
            pass

        def wait(self, timeout: float | None = None) -> bool:
            state["ready"] = True
            clock["now"] += 1000  # the deadline passes in the same moment
            return False

    monkeypatch.setattr(sync, "Condition", LateCondition)
    monkeypatch.setattr(sync, "monotonic", lambda: clock["now"])
    lock = threading.Lock()
    withdrawn: list[bool] = []
    with lock:
        assert WaitQueue(lock).wait(lambda: state["ready"], deadline_after(5), lambda: withdrawn.append(True))
    assert withdrawn == []
    assert time_left(clock["now"] + 2) == 2


def test_notify_wakes_the_longest_parked_waiter_first() -> None:
    def program() -> list[str]:
        lock = sync.Lock()
        waiters = WaitQueue(lock)
        tickets = {"a": False, "b": False, "c": False}
        woken: list[str] = []

        def waiter(name: str) -> None:
            with lock:
                waiters.wait(lambda: tickets[name] or any(tickets.values()))
                woken.append(name)

        threads = [sync.Thread(target=waiter, args=(name,)) for name in "cab"]
        for t in threads:
            t.start()
        sync.sleep(1)  # every waiter parks, in the order c, a, b
        for _ in threads:
            with lock:
                tickets["a"] = True  # any ticket lets whoever is woken go on
                waiters.notify()
            sync.sleep(1)
        for t in threads:
            t.join()
        return woken

    assert coordkit.run(program) == ["c", "a", "b"]


def test_it_adds_no_scheduling_point_of_its_own() -> None:
    """A wait over WaitQueue is step for step the loop one would write by hand."""

    def program(use_wait_queue: bool) -> None:
        lock = sync.Lock()
        condition = sync.Condition(lock)
        waiters = WaitQueue(lock)
        box: list[int] = []

        def put() -> None:
            for i in range(3):
                with lock:
                    box.append(i)
                    (waiters if use_wait_queue else condition).notify()

        t = sync.Thread(target=put)
        t.start()
        with lock:
            deadline = sync.monotonic() + 5
            if use_wait_queue:
                waiters.wait(lambda: len(box) == 3, deadline)
            else:
                while len(box) != 3:
                    remaining = deadline - sync.monotonic()
                    if remaining <= 0:
                        break
                    condition.wait(remaining)
        t.join()

    def steps(use_wait_queue: bool) -> list[tuple[int, str]]:
        report = coordkit.replay(lambda: program(use_wait_queue), [0, 1, 0, 1, 1, 0, 1], strict=False)
        return [(e.tid, e.kind) for e in report.events]

    by_hand = steps(False)
    assert steps(True) == by_hand
    assert ("wait" in {kind for _, kind in by_hand}) and len(by_hand) > 10


@pytest.mark.parametrize("module", [queues, coordinator, queue_runner, signals, pipeline])
def test_no_primitive_makes_a_condition_variable_of_its_own(module: Any) -> None:
    """The rule of _waiting.py: every park-until-notified goes through WaitQueue."""
    assert "Condition(" not in inspect.getsource(module)
