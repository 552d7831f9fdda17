"""Auto granularity: racing sites become scheduling points; traces carry them (RACE-4..8)."""

from __future__ import annotations

import threading

import pytest

import coordkit
import coordkit.engine.replay
from coordkit.engine.run import DETECT_EVERY, LEARNING_RUNS
from coordkit.engine.trace import Schedule
from coordkit.errors import TraceFormatError
from tests.sched.programs import needs_switching


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def bump(self) -> None:
        self.value += 1


def lost_update():
    c = Counter()
    ts = [threading.Thread(target=c.bump) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert c.value == 2, f"lost update: {c.value}"


@needs_switching
def test_a_plain_lost_update_is_found_with_no_option_set():
    # RACE-5: the default finds what sync granularity cannot
    assert coordkit.explore(lost_update, seed=1, max_schedules=300, granularity="sync").failure is None
    result = coordkit.explore(lost_update, seed=1, max_schedules=300)
    assert result.failure is not None and "lost update: 1" in result.failure.message
    assert result.racing_sites >= 2
    # The report of the failing run names the racing accesses (it is recorded: RACE-4).
    assert any(r.location == "attribute Counter.value" for r in result.races)


@needs_switching
def test_a_trace_carries_its_racing_sites_and_replays():
    # RACE-6: the trace replays the same schedule, however many sites were learned
    failure = coordkit.explore(lost_update, seed=1, max_schedules=300).failure
    assert failure is not None
    schedule = Schedule.decode(failure.trace)
    assert schedule.granularity == "auto" and len(schedule.racing) >= 2
    report = coordkit.engine.replay.record(lost_update, failure.trace)
    assert report.failure is not None and "lost update: 1" in report.failure.message
    with pytest.raises(AssertionError, match="lost update"):
        coordkit.replay(lost_update, failure.trace)


def test_racing_sites_round_trip_and_are_checked():
    # RACE-6: the encoding of an auto trace, and what it refuses
    schedule = Schedule(((2, 1), (3, 0)), granularity="auto", racing=(7, 2**32 - 1))
    assert Schedule.decode(schedule.encode()) == schedule
    assert "2 racing site(s)" in schedule.describe()
    with pytest.raises(ValueError, match="only at granularity='auto'"):
        Schedule((), granularity="sync", racing=(1,))
    with pytest.raises(ValueError, match="racing must be"):
        Schedule((), granularity="auto", racing=(2**32,))
    # A sync trace is not an auto trace with no sites.
    assert Schedule.decode(Schedule((), granularity="sync").encode()).granularity == "sync"
    with pytest.raises(TraceFormatError):
        Schedule.decode("ck2_" + Schedule((), granularity="auto", racing=(5,)).encode()[4:-9]
                        + "_aaaaaaa")


def test_races_are_looked_for_in_the_learning_runs_and_then_now_and_then():
    # RACE-4: the first LEARNING_RUNS runs, then every DETECT_EVERY-th
    runs = 100
    result = coordkit.explore(lambda: None, seed=1, max_schedules=runs, strategy="random")
    expected = sum(1 for i in range(runs) if i < LEARNING_RUNS or i % DETECT_EVERY == 0)
    assert result.race_runs == expected
    every = coordkit.explore(lambda: None, seed=1, max_schedules=10, races="fail")
    assert every.race_runs == 10


def test_the_runs_races_were_looked_for_in_are_the_searchs_not_shrinkings():
    # RACE-4: race_runs counts the search's runs, like schedules_run, whatever shrinking
    # ran after them (a time-bounded number of runs: counted, it made the count vary
    # with the machine's load)
    def lost_update():
        box = [0]

        def add():
            v = box[0]
            box[0] = v + 1

        threads = [threading.Thread(target=add) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert box[0] == 3

    result = coordkit.explore(lost_update, seed=3, max_schedules=200, strategy="random")
    assert result.failure is not None and result.failure.shrink_runs > 0
    runs = result.schedules_run
    assert result.race_runs == sum(
        1 for i in range(runs) if i < LEARNING_RUNS or i % DETECT_EVERY == 0)


@needs_switching
def test_dfs_starts_over_when_new_sites_are_scheduled_and_exhausts():
    # RACE-6: a systematic search over the program's final set of choice points
    result = coordkit.explore(lost_update, strategy="dfs", max_preemptions=None)
    assert result.failure is not None and "lost update" in result.failure.message


def test_a_clean_result_says_what_it_looked_at():
    # RACE-8: no plain "passed": the granularity and the race detection it did
    def correct():
        c, lock = Counter(), threading.Lock()

        def work():
            with lock:
                c.bump()

        ts = [threading.Thread(target=work) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    result = coordkit.explore(correct, seed=1, max_schedules=40)
    assert result.failure is None and result.races == [] and result.warnings == []
    text = str(result)
    assert "looked at: auto granularity (0 racing site(s) scheduled)" in text
    assert f"races looked for in {result.race_runs} of 40 run(s), 0 found" in text
