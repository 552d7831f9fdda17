"""A failure report opens with its root cause (CAUSE-1): what went wrong and where, the
exceptions that ended threads earlier, the preemptions the schedule needs, the races;
then the program's threads (the main thread in, coordkit's own helpers out)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import coordkit
from coordkit import _demo
from tests.sched import programs
from tests.sched.programs import needs_switching

HERE = Path(__file__).name


def _line(path: Path, text: str) -> int:
    """The number of the one line of ``path`` that contains ``text``."""
    found = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


def _raising_line() -> int:
    """The line of ``dies_holding_a_lock`` that raises the TypeError."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip().startswith("len(5)"))


def _first_paragraph(text: str) -> str:
    return text.split("\n\n", 1)[0]


def dies_holding_a_lock() -> None:
    """T1 takes the lock and dies of a TypeError before releasing it; T2 then waits for
    the lock forever, and the main thread waits for T2."""
    lock = threading.Lock()

    def careless() -> None:
        lock.acquire()
        len(5)  # type: ignore[arg-type]  # a TypeError while holding the lock
        lock.release()

    def polite() -> None:
        with lock:
            pass

    first = threading.Thread(target=careless, name="careless")
    second = threading.Thread(target=polite, name="polite")
    first.start()
    first.join()
    second.start()
    second.join()


def test_a_deadlock_report_opens_with_the_exception_that_caused_it():
    # CAUSE-1: the TypeError is why the others wait: the first paragraph names it, where
    # it was raised, and the lock the dead thread still holds
    result = coordkit.explore(dies_holding_a_lock, seed=1, fail_on_thread_exception=False)
    failure = result.failure
    assert failure is not None and failure.kind == "deadlock"
    raised = _raising_line()
    first = _first_paragraph(str(failure))
    assert first.startswith("coordkit found a deadlock after")
    assert (f"Earlier, T1 'careless' died with TypeError: object of type 'int' has no len() "
            f"at {HERE}:{raised} in careless, still holding Lock#1 (T2 waits for it).") in first
    assert f"T2 'polite' on Lock#1 held by T1 at {HERE}:" in first
    # The replay raises Deadlock with the same opening.
    with pytest.raises(coordkit.Deadlock) as caught:
        coordkit.replay(dies_holding_a_lock, failure.trace)
    assert f"TypeError: object of type 'int' has no len() at {HERE}:{raised}" in _first_paragraph(
        str(caught.value))


def test_the_threads_section_says_what_each_thread_holds_and_waits_for():
    # CAUSE-1
    failure = coordkit.explore(dies_holding_a_lock, seed=1, fail_on_thread_exception=False).failure
    assert failure is not None
    text = str(failure)
    threads = text.split("Threads at the failure:\n", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in threads.splitlines() if line.startswith("  T")]
    assert [row.split("'")[1] for row in rows] == ["MainThread", "careless", "polite"]
    assert "blocked on join(T2)" in rows[0]
    assert "ended by TypeError" in rows[1] and rows[1].endswith("holds Lock#1")
    assert "blocked on Lock#1 held by T1" in rows[2]
    earlier = text.split("Exceptions that ended threads earlier:\n", 1)[1].split("\n\n", 1)[0]
    assert earlier.startswith("  T1 'careless': TypeError: object of type 'int' has no len() at ")
    # The table comes after them, and the replay line last.
    assert text.index("Threads at the failure") < text.index("step |") < text.index("Replay it")


def waits_in_coordinator_join() -> None:
    """The main thread holds a lock its worker needs and joins it through a Coordinator,
    which starts a join-watcher thread of its own: a deadlock."""
    coord = coordkit.Coordinator()
    lock = threading.Lock()
    lock.acquire()

    def worker() -> None:
        with lock:
            pass

    t = threading.Thread(target=worker, name="worker")
    t.start()
    coord.join([t])


def test_the_main_thread_is_reported_and_coordkits_join_watcher_is_not():
    # CAUSE-1: the report lists the program's threads only
    failure = coordkit.explore(waits_in_coordinator_join, seed=1, max_schedules=20).failure
    assert failure is not None and failure.kind == "deadlock"
    # The watcher is a thread of the run (the table has its column)...
    assert "coordkit-join-watcher" in failure.report.thread_names
    text = str(failure)
    assert "coordkit-join-watcher" not in text.split("step |", 1)[0]
    assert "coordkit-join-watcher" not in failure.message
    threads = {t.name: t for t in failure.report.failure.threads}
    assert set(threads) == {"MainThread", "worker"}
    assert threads["MainThread"].state == "blocked" and threads["MainThread"].holds
    assert threads["worker"].waits_on.endswith("held by T0")
    assert "T0 'MainThread' on " in _first_paragraph(text)


def test_the_preemption_sentence_names_the_line_between_check_and_act():
    # CAUSE-1: the demo's race needs one preemption, between `is_closed()` and `close()`
    failure = coordkit.explore(_demo.shutdown_race, seed=0, max_schedules=2000).failure
    assert failure is not None and failure.preemptions == 1
    source = Path(_demo.__file__)
    check = _line(source, "elif not queue.is_closed():")
    act = check + 1  # the `queue.close()` under it
    first = _first_paragraph(str(failure))
    assert "It needs 1 preemption (no schedule with fewer fails this way): after step " in first
    [preempted] = failure.report.preempted
    assert preempted.thread.startswith(("T1 'producer-", "T2 'producer-"))
    assert preempted.where in (f"_demo.py:{check} in producer", f"_demo.py:{act} in producer")
    assert f"{preempted.thread} was switched away from at {preempted.where}" in first
    assert preempted.to != preempted.thread


def test_a_failure_that_needs_no_preemption_says_so():
    # CAUSE-1
    failure = coordkit.explore(dies_holding_a_lock, seed=1).failure
    assert failure is not None and failure.kind == "exception" and failure.preemptions == 0
    first = _first_paragraph(str(failure))
    assert f"T1 'careless' raised TypeError at {HERE}:{_raising_line()} in careless" in first
    assert "It held Lock#1." in first
    assert "It needs no preemption" in first


@needs_switching  # the lost update has no point between its read and write but a racing site
def test_the_racing_accesses_are_named_in_the_first_paragraph():
    # CAUSE-1: the lost update's read and write race, and the report says where
    failure = coordkit.explore(programs.lost_update, seed=1).failure
    assert failure is not None and failure.report.races
    first = _first_paragraph(str(failure))
    assert "Racing accesses in this run" in first
    assert str(failure.report.races[0]) in first


def fails_after_a_coordinator_join() -> None:
    """The Coordinator's join watcher has ended by the time the main thread fails."""
    coord = coordkit.Coordinator()
    t = threading.Thread(target=lambda: None, name="quick")
    t.start()
    coord.join([t])
    raise AssertionError("after the join")


def test_a_join_watcher_that_has_ended_is_left_out_too():
    # CAUSE-1: a finished thread no longer says what it ran; the report still knows
    failure = coordkit.explore(fails_after_a_coordinator_join, seed=1, max_schedules=5).failure
    assert failure is not None and failure.kind == "exception"
    assert "coordkit-join-watcher" in failure.report.thread_names
    assert [t.name for t in failure.report.failure.threads] == ["MainThread", "quick"]
    assert "coordkit-join-watcher" not in str(failure).split("step |", 1)[0]


def test_an_unrecorded_run_counts_its_preemptions_without_inventing_where():
    # CAUSE-1: a run reported as found (not replayed: a timeout, a program that does not
    # fail the same way twice) has no recorded preemptions; the report says how many
    from coordkit.engine.explain import explain
    from coordkit.engine.failures import Failure
    from coordkit.errors import FailureKind

    failure = Failure(FailureKind.TIMEOUT, "the run exceeded its wall-clock budget")
    explanation = explain(failure, [], [], preemptions=2)
    assert explanation.root_cause == ("the run exceeded its wall-clock budget.\n"
                                      "The schedule has 2 preemptions.")
    assert explanation.threads_text() == "" and explanation.earlier_text() == ""
    assert "needs no preemption" in explain(failure, [], [], preemptions=0).root_cause
