"""Fail -> capture -> replay -> same failure; determinism; traces (SCHED-16, SCHED-17, TRACE-*)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import coordkit
from coordkit import Deadlock, Schedule, StepLimitExceeded, TraceDivergedError, TraceFormatError
from tests.sched import programs


def _livelock() -> None:
    flag = threading.Event()

    def spinner() -> None:
        while not flag.is_set():
            pass

    t = threading.Thread(target=spinner)
    t.start()
    t.join()


@pytest.mark.parametrize(
    ("program", "granularity", "expected"),
    [
        pytest.param(programs.lost_update, "line", AssertionError,
                     marks=programs.needs_line_granularity),
        (programs.lock_order_deadlock, "sync", Deadlock),
        (programs.missed_notify, "sync", Deadlock),
        (programs.check_then_act, "sync", Deadlock),
        (_livelock, "sync", StepLimitExceeded),
    ],
)
def test_fail_capture_replay_same_failure(program, granularity, expected):
    # TRACE-3: the reported trace replays to the same failure, every time
    result = coordkit.explore(program, seed=7, max_schedules=300, granularity=granularity, max_steps=500)
    assert result.failure is not None
    for _ in range(3):
        with pytest.raises(expected):
            coordkit.replay(program, result.failure.trace, granularity=granularity, max_steps=500)


@programs.needs_line_granularity
def test_replayed_exception_is_the_threads_own():
    # TRACE-3: the thread's exception itself, not a wrapper
    result = coordkit.explore(programs.lost_update, seed=1, granularity="line")
    with pytest.raises(AssertionError, match="lost update: counter is 1"):
        coordkit.replay(programs.lost_update, result.failure.trace, granularity="line")


@pytest.mark.parametrize("strategy", ["pct", "random", "dfs", "hypothesis"])
def test_same_seed_same_trace(strategy):
    # SCHED-16
    def run():
        r = coordkit.explore(programs.lock_order_deadlock, strategy=strategy, seed=11, max_schedules=300)
        return r.schedules_run, r.failure.trace

    assert run() == run()


def test_seed_none_is_reported_and_reproduces():
    # SCHED-16: a drawn seed is reported, and exploring with it again gives the same trace
    first = coordkit.explore(programs.lock_order_deadlock, strategy="random", max_schedules=300)
    assert isinstance(first.seed, int)
    again = coordkit.explore(programs.lock_order_deadlock, strategy="random", seed=first.seed,
                             max_schedules=300)
    assert (again.schedules_run, again.failure.trace) == (first.schedules_run, first.failure.trace)


@programs.needs_line_granularity
def test_shrinking_reaches_one_preemption_for_the_lost_update():
    # SCHED-17: the lost update needs exactly one context switch
    result = coordkit.explore(programs.lost_update, seed=1, granularity="line", max_schedules=300)
    assert result.failure.preemptions == 1
    assert result.failure.original_preemptions >= result.failure.preemptions


def test_shrinking_keeps_the_failure_kind():
    # SCHED-17
    result = coordkit.explore(programs.lock_order_deadlock, strategy="random", seed=3)
    assert result.failure.kind == "deadlock"
    assert result.failure.preemptions == 1


def test_zero_choices_never_preempt():
    # SCHED-14: all-zero choices run each thread until it blocks or ends
    report = coordkit.replay(programs.locked_counter, [0] * 100)
    assert report.preemptions == 0


def test_trace_round_trip_and_alphabet():
    # TRACE-1
    schedule = Schedule(((2, 0), (2, 0), (3, 2), (2, 1), (2, 1), (5, 4)))
    text = schedule.encode()
    assert text.startswith("ck2_")
    assert set(text) <= set("abcdefghijklmnopqrstuvwxyz0123456789_")
    assert Schedule.decode(text) == schedule
    assert Schedule.decode("  " + text + "\n") == schedule
    assert Schedule.decode(Schedule().encode()) == Schedule()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("ck3_aaaa_aaaaaaa", "unknown trace format version 'ck3'"),
        ("hello", "not a coordkit trace"),
        ("ck2_!!!!_aaaaaaa", "not base32"),
        ("ck1_aiaqcayaaebaaai_5ce4mmi", "earlier coordkit.*Explore again"),
        (12, "a trace is a string"),
    ],
)
def test_corrupt_traces_are_rejected(text, match):
    # TRACE-2
    with pytest.raises(TraceFormatError, match=match):
        Schedule.decode(text)


def test_edited_or_truncated_trace_fails_the_check():
    # TRACE-2
    text = Schedule(((2, 1), (3, 2), (2, 1))).encode()
    _, body, check = text.split("_")
    flipped = "b" if body[0] != "b" else "c"
    with pytest.raises(TraceFormatError, match="check does not match"):
        Schedule.decode(f"ck2_{flipped}{body[1:]}_{check}")
    with pytest.raises(TraceFormatError):
        Schedule.decode(f"ck2_{body[:-2]}_{check}")


def test_impossible_choice_is_rejected():
    # TRACE-2
    with pytest.raises(TraceFormatError, match="choice 0 is 3 of 2 candidates"):
        Schedule(((2, 3),))
    assert isinstance(TraceFormatError("x"), ValueError)


def test_divergence_names_the_choice_point():
    # TRACE-4: a trace recorded on one program, replayed on another
    result = coordkit.explore(programs.lock_order_deadlock, seed=1)
    with pytest.raises(TraceDivergedError, match=r"choice point \d+"):
        coordkit.replay(lambda: programs.locked_counter(3, 3), result.failure.trace)


def test_divergence_when_the_program_ends_early():
    # TRACE-4
    long_trace = coordkit.replay(lambda: programs.locked_counter(2, 3), [0] * 200).trace
    with pytest.raises(TraceDivergedError, match="ended after"):
        coordkit.replay(lambda: programs.locked_counter(2, 1), long_trace)


def test_fixed_program_replays_leniently_to_a_pass():
    # TRACE-4: after a fix, strict=False runs the old schedule as far as it applies
    result = coordkit.explore(programs.missed_notify, seed=1)
    report = coordkit.replay(programs.notify_on_close, result.failure.trace, strict=False)
    assert report.failure is None


def test_report_table_has_a_column_per_thread():
    # TRACE-5
    result = coordkit.explore(programs.lock_order_deadlock, seed=1)
    table = result.failure.report.table()
    header = table.splitlines()[0]
    assert "T0 MainThread" in header and "T1 Thread-1 (ab)" in header and "T2 Thread-2 (ba)" in header
    assert "acquire Lock#1 @ programs.py:" in table
    assert any(line.startswith(">") for line in table.splitlines())


def test_failure_message_says_how_to_replay():
    # TRACE-6
    result = coordkit.explore(programs.lock_order_deadlock, strategy="pct", seed=1)
    text = str(result.failure)
    assert text.startswith("coordkit found a deadlock after")
    assert "strategy pct, seed 1" in text
    assert f"coordkit.replay(lock_order_deadlock, '{result.failure.trace}')" in text
    assert "preemption" in text


def test_run_returns_the_value_in_virtual_time():
    # TRACE-3: run() is one round-robin (or given) schedule that returns fn's value
    import time

    def program():
        t0 = time.monotonic()
        time.sleep(60)
        return time.monotonic() - t0

    assert coordkit.run(program) == 60.0
    with pytest.raises(Deadlock):
        coordkit.run(lambda: threading.Event().wait())
    with pytest.raises(ZeroDivisionError):
        coordkit.run(lambda: 1 / 0)


def test_run_follows_a_given_schedule():
    # TRACE-3
    result = coordkit.explore(programs.lock_order_deadlock, seed=1)
    with pytest.raises(Deadlock):
        coordkit.run(programs.lock_order_deadlock, result.failure.trace)


def test_trace_records_the_options_that_shape_the_run():
    # TRACE-1: granularity, fail_on_thread_exception and the step budget travel with the
    # trace, so the printed replay line needs nothing else
    for options in ({}, {"granularity": "line"}, {"fail_on_thread_exception": False},
                    {"invariant": True},
                    {"granularity": "line", "fail_on_thread_exception": False, "max_steps": 500}):
        schedule = Schedule(((2, 1), (3, 0)), **options)
        assert Schedule.decode(schedule.encode()) == schedule
    assert "granularity='line'" in Schedule((), granularity="line").describe()


@programs.needs_line_granularity
def test_replay_uses_the_traces_granularity():
    # TRACE-3: a trace found at line granularity replays as printed, without repeating the
    # option; contradicting it is an error that says so (TRACE-4 would follow otherwise)
    result = coordkit.explore(programs.lost_update, seed=1, granularity="line")
    assert "granularity" not in result.failure.replay_line()
    with pytest.raises(AssertionError, match="lost update"):
        coordkit.replay(programs.lost_update, result.failure.trace)
    with pytest.raises(ValueError, match="recorded with granularity='line'"):
        coordkit.replay(programs.lost_update, result.failure.trace, granularity="sync")


def test_replay_uses_the_traces_thread_exception_setting():
    # TRACE-3: explored with fail_on_thread_exception=False, a worker's error is not the
    # failure; the replay of the trace reproduces the deadlock, not the worker's error
    def program():
        import threading

        ev = threading.Event()

        def worker():
            raise OSError("disk gone")

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        ev.wait()

    result = coordkit.explore(program, seed=1, max_schedules=20, fail_on_thread_exception=False)
    assert result.failure.kind == "deadlock"
    with pytest.raises(coordkit.Deadlock):
        coordkit.replay(program, result.failure.trace)


ACCOUNTS: dict[str, int] = {}


def _transfer_midway() -> None:
    import threading
    import time

    ACCOUNTS.update(a=100, b=100)

    def transfer() -> None:
        ACCOUNTS["a"] -= 10
        time.sleep(0)  # a scheduling point with the money in neither account
        ACCOUNTS["b"] += 10

    t = threading.Thread(target=transfer)
    t.start()
    t.join()


def _money_is_conserved() -> bool:
    return not ACCOUNTS or sum(ACCOUNTS.values()) == 200


def test_invariant_failure_replays_as_printed():
    # TRACE-1, TRACE-3, TRACE-6: the replay line of an invariant failure names the
    # invariant; the trace records that the run failed on one, so a replay without it says
    # so rather than pass
    result = coordkit.explore(_transfer_midway, seed=1, invariant=_money_is_conserved,
                              max_schedules=20)
    failure = result.failure
    assert failure.kind == "invariant"
    assert failure.replay_line().endswith(", invariant=_money_is_conserved)")
    with pytest.raises(ValueError, match="failed on its invariant; pass the same invariant="):
        coordkit.replay(_transfer_midway, failure.trace)
    with pytest.raises(AssertionError, match="invariant violated"):
        coordkit.replay(_transfer_midway, failure.trace, invariant=_money_is_conserved)


def test_table_cells_keep_the_line_and_the_report_names_the_raising_thread():
    # TRACE-5: a long cell is shortened in its text, never in its file:line;
    # TRACE-6: an exception's report says which thread raised it
    def program_with_a_rather_long_name_for_its_threads():
        import threading

        def worker_that_fails_after_waiting():
            threading.Event().wait(0.5)
            raise KeyError("missing")

        t = threading.Thread(target=worker_that_fails_after_waiting, name="a-worker-with-a-long-name")
        t.start()
        t.join()

    failure = coordkit.explore(program_with_a_rather_long_name_for_its_threads, seed=1,
                               max_schedules=5).failure
    text = str(failure)
    assert "T1 'a-worker-with-a-long-name' raised KeyError at test_replay.py:" in text
    source = Path(__file__).read_text().splitlines()
    wait_line = next(i for i, line in enumerate(source, 1) if "threading.Event().wait(0.5)" in line)
    assert f"@ test_replay.py:{wait_line}\n" in failure.report.table() + "\n"
