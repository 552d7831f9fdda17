"""A recorded run's rows: in the order operations took effect, with what they returned
(TRACE-7); the points after an operation that lets others go on (RACE-9)."""

from __future__ import annotations

import threading
from typing import Any

from coordkit.engine.points import Point
from coordkit.engine.report import RunReport, render_table
from coordkit.engine.run import RunOptions, Session
from coordkit.engine.schedulers import Scheduler


class SwitchAt(Scheduler):
    """Switches away from a thread at its first point whose operation is ``op``; the
    default (keep going) everywhere else.  ``ops`` lists the points it was asked at."""

    name = "switch-at"

    def __init__(self, op: str) -> None:
        self.op = op
        self.switched = False
        self.ops: list[str] = []

    def begin(self, run_index: int) -> None:
        pass

    def choose(self, point: Point, enabled: list[Point]) -> int:
        self.ops.append(point.op)
        if point.op == self.op and not self.switched:
            self.switched = True
            return 1
        return 0

    def end(self, run: Any) -> None:
        pass

    @property
    def exhausted(self) -> bool:
        return False


def recorded(fn: Any, scheduler: Scheduler, **options: Any) -> RunReport:
    """A recorded run, with the viewer's snapshots (they must change nothing in it)."""
    with Session(RunOptions(**options)) as session:
        run = session.run(fn, scheduler, record=True, snapshots=True)
    assert run.scheduler_error is None
    return RunReport.of(run)


def rows(report: RunReport) -> list[tuple[str, str, str]]:
    """(thread name, operation, result) per row that is a step."""
    return [(report.thread_names[e.tid], e.kind, e.result) for e in report.events
            if e.kind not in ("call", "block")]


def test_a_read_switched_away_at_its_point_shows_after_the_write_it_saw():
    """TRACE-7: the reader reaches is_set first, the setter runs before it goes on: the
    table shows set, then is_set -> True (the order of effect), never is_set first."""
    seen: list[bool] = []

    def program() -> None:
        ev = threading.Event()  # made inside the run: a controlled one
        seen.clear()
        reader = threading.Thread(target=lambda: seen.append(ev.is_set()), name="reader")
        reader.start()
        ev.set()  # main reaches set; the reader is switched away from its is_set point
        reader.join()

    report = recorded(program, SwitchAt("is_set"), granularity="sync")
    assert seen == [True]
    order = rows(report)
    set_at = order.index(("MainThread", "set", ""))
    is_set_at = order.index(("reader", "is_set", "True"))
    assert set_at < is_set_at


def test_a_wait_that_times_out_has_a_row_where_it_returned():
    """TRACE-7: an acquire that waited and timed out gets its own row when it returns,
    with the timeout and the virtual time."""
    got: list[bool] = []

    def program() -> None:
        lock = threading.Lock()
        got.clear()
        lock.acquire()
        t = threading.Thread(target=lambda: got.append(lock.acquire(timeout=1.0)))
        t.start()
        t.join()
        lock.release()

    report = recorded(program, SwitchAt("none"), granularity="sync")
    assert got == [False]
    returns = [e for e in report.events if e.returned and e.kind == "acquire"]
    assert [(e.kind, e.result) for e in returns] == [("acquire", "False (timeout 1 s at t=1)")]
    # The return is after the row that says it blocked.
    kinds = [e.kind for e in report.events if e.tid == returns[0].tid]
    assert kinds.index("block") < kinds.index("acquire", kinds.index("block"))
    table = render_table(report.events, report.thread_names, width=120)
    assert "... acquire Lock#1 -> False (timeout 1 s at t=1)" in table


def test_values_are_shown_without_running_the_programs_code():
    """TRACE-7: a plain value by its repr; any other object by its type's name (its
    ``__repr__`` is never called in a recorded run)."""
    class Loud:
        def __repr__(self) -> str:  # pragma: no cover - it must not run
            raise AssertionError("a row ran the program's __repr__")

    q_items: list[Any] = []

    def program() -> None:
        import queue
        q = queue.SimpleQueue()
        q.put(3)
        q.put(Loud())
        q_items.extend([q.get(), q.get(), q.empty()])

    report = recorded(program, SwitchAt("none"), granularity="sync")
    results = [e.result for e in report.events if e.kind in ("get", "empty")]
    assert results == ["3", "<Loud>", "True"]


def test_join_shows_whether_the_thread_ended():
    """TRACE-7: join's row says the thread ended, or that it timed out still alive."""
    def program() -> None:
        stop = threading.Event()
        t = threading.Thread(target=stop.wait, name="waiter")
        t.start()
        t.join(timeout=0.5)
        stop.set()
        t.join()

    report = recorded(program, SwitchAt("none"), granularity="sync")
    joins = [e.result for e in report.events if e.kind == "join" and e.result]
    assert joins[0].startswith("timed out (timeout 0.5 s at t=0.5)") and "still alive" in joins[0]
    assert joins[-1].endswith("ended")


def _handoff() -> None:
    """The main thread releases a lock a worker waits for, then writes a field."""
    lock = threading.Lock()
    lock.acquire()
    t = threading.Thread(target=lambda: (lock.acquire(), lock.release()))
    t.start()
    t.join(timeout=0.1)  # the worker is parked on the lock by now
    lock.release()
    t.join()


def test_auto_granularity_may_switch_just_after_a_release_that_woke_a_waiter():
    """RACE-9: at auto granularity a release that woke a waiter is followed by a point
    (after-release); at sync granularity it is not."""
    auto = SwitchAt("after-release")
    recorded(_handoff, auto, granularity="auto")
    assert "after-release" in auto.ops and auto.switched
    sync = SwitchAt("after-release")
    recorded(_handoff, sync, granularity="sync")
    assert "after-release" not in sync.ops


def test_a_point_after_an_operation_is_no_row_and_exists_only_with_someone_to_run():
    """RACE-9: with no other thread able to run there is no after-point at all, and an
    after-point that is taken has no row of its own."""
    def alone() -> None:
        lock = threading.Lock()
        for _ in range(3):
            with lock:
                pass

    scheduler = SwitchAt("after-release")
    with Session(RunOptions(granularity="auto")) as session:
        run = session.run(alone, scheduler, record=True)
    assert run.steps == 6  # three acquires, three releases: nothing after them
    report = recorded(_handoff, SwitchAt("after-release"), granularity="auto")
    assert all(not e.kind.startswith("after-") for e in report.events)
    # No step number of its own: the steps are the rows that are operations.
    numbered = [e.step for e in report.events if e.kind not in ("call", "block") and not e.returned]
    assert numbered == list(range(1, len(numbered) + 1)) and report.steps == len(numbered)


def test_reading_the_world_for_a_snapshot_adds_no_result_to_a_row():
    """TRACE-7: a recorded replay reads the state of locks and events for its snapshots
    (their ``locked()``, ``is_set()``); those reads are the recorder's, not the program's:
    no row gets their result.  A release returns nothing, and its row shows nothing."""
    import coordkit

    def program() -> None:
        lock = threading.Lock()
        coord = coordkit.Coordinator()  # its state, read for a snapshot, asks is_set()
        coord.request_stop()
        t = threading.Thread(target=lambda: (lock.acquire(), lock.release()))
        t.start()
        with lock:
            pass
        t.join()

    report = recorded(program, SwitchAt("none"), granularity="sync")
    assert report.snapshots, "a recorded run keeps its snapshots"
    releases = [e for e in report.events if e.kind in ("release", "set", "start")]
    assert releases and all(e.result == "" for e in releases), releases
