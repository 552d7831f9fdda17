"""The step budget scales with the program, and says what it stopped (SCHED-20); a thread
polling alone sees time pass (SCHED-19)."""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import time

import pytest

import coordkit
from coordkit.engine.run import MAX_STEPS


def many_threads(n: int, items: int):
    """n producers and n consumers through one SimpleQueue: a long, correct run."""

    def program():
        q = queue.SimpleQueue()
        got = []

        def produce():
            for i in range(items):
                q.put(i)
            q.put(None)

        def consume():
            while (item := q.get()) is not None:
                got.append(item)

        threads = [threading.Thread(target=f) for f in [produce] * n + [consume] * n]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == n * items

    return program


@pytest.mark.parametrize("strategy", ["random", "pct"])
def test_a_hundred_threads_fit_the_default_budget(strategy):
    # SCHED-20: 100 threads and 25,000 steps: more than max_steps, not a livelock
    program = many_threads(50, 250)
    assert coordkit.replay(program, []).steps > MAX_STEPS
    # (the wall-clock watchdog is not what this checks: a loaded machine, or 3.10, which
    # cannot switch from a trace callback, may take more than the default 10 s per run)
    result = coordkit.explore(program, strategy=strategy, seed=1, max_schedules=2, run_timeout=120)
    assert result.failure is None, result.failure


def test_the_budget_is_max_steps_for_each_thread_started():
    # SCHED-20: a run of 11 threads passes with a budget per thread a little above its
    # steps / 11, and stops a little below: the run's limit is max_steps x threads
    program = many_threads(5, 40)
    steps = coordkit.replay(program, []).steps
    share = steps // 11
    # (sync granularity: the consumers' unlocked appends race, and at auto granularity
    # they would add steps of their own)
    assert coordkit.explore(program, seed=1, max_schedules=3, max_steps=share + 5,
                            granularity="sync").failure is None
    failure = coordkit.explore(program, seed=1, max_schedules=3, max_steps=share - 5,
                               granularity="sync").failure
    assert failure is not None and failure.kind == "step_limit"
    limit = (share - 5) * 11
    assert (f"more than {limit} scheduling steps (max_steps={share - 5} for each of the 11 "
            "thread(s) it started)") in failure.message


def spinners():
    flags = {"a": False, "b": False}

    def wait_for(other):
        while not flags[other]:
            time.sleep(0)

    threads = [threading.Thread(target=wait_for, args=(k,), name=f"waits-for-{k}") for k in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_a_budget_stop_says_which_threads_were_alive_and_what_each_did_last():
    # SCHED-20: every live thread, its state, its last scheduling point and its line
    failure = coordkit.explore(spinners, seed=1, max_schedules=3, max_steps=500).failure
    assert failure is not None and failure.kind == "step_limit"
    details = failure.details.splitlines()
    assert details[0] == "3 thread(s) alive when the budget ran out, and what each did last:"
    assert "T0 'MainThread' (blocked on join(T1)): last did join T1" in details[1]
    assert "test_step_budget.py" in details[1]
    spinning = [line for line in details[2:] if "'waits-for-" in line]
    assert len(spinning) == 2
    assert all("last did sleep at step" in line and "in wait_for" in line for line in spinning)
    assert sum("(stopped here)" in line for line in spinning) == 1
    assert sum("(runnable)" in line for line in spinning) == 1


def test_a_budget_stop_does_not_call_a_long_run_a_livelock():
    # SCHED-20: a correct run that is merely longer than its budget is told to raise it
    def long_and_correct():
        lock = threading.Lock()
        for _ in range(300):
            with lock:
                pass

    failure = coordkit.explore(long_and_correct, seed=1, max_schedules=1, max_steps=100).failure
    assert failure is not None and failure.kind == "step_limit"
    assert "or a run longer than the budget (raise max_steps)" in failure.message
    assert not failure.message.startswith("livelock")
    assert coordkit.explore(long_and_correct, seed=1, max_schedules=1, max_steps=1000).failure is None


def test_a_budget_stop_replays_with_its_budget():
    # SCHED-20, TRACE-3: the trace records max_steps; the replay stops at the same step
    failure = coordkit.explore(spinners, seed=2, max_schedules=3, max_steps=300).failure
    assert failure is not None
    with pytest.raises(coordkit.StepLimitExceeded, match="more than 900 scheduling steps"):
        coordkit.replay(spinners, failure.trace)


def test_a_deadline_loop_that_waits_with_timeout_zero_sees_its_deadline_pass():
    # SCHED-19: polling alone (a wait already due) takes time: 1 ms after 100 polls,
    # doubling; without it the loop would spin at one instant until the budget ran out
    seen = {}

    def program():
        event = threading.Event()
        start = time.monotonic()
        polls = 0
        while time.monotonic() - start < 0.05:
            event.wait(0)
            polls += 1
        seen.update(polls=polls, elapsed=time.monotonic() - start)

    coordkit.replay(program, [])
    assert 0.05 <= seen["elapsed"] < 0.1
    assert seen["polls"] == 600  # 1 + 2 + 4 + 8 + 16 + 32 ms: six rounds of 100 polls


def test_polling_time_stops_at_the_first_deadline():
    # SCHED-19, SCHED-8: the clock moves by ticks, but never past a deadline: the sleeper
    # wakes at exactly its deadline, and the poller sees it there
    seen = {}

    def program():
        flag = threading.Event()

        def sleeper():
            time.sleep(0.01)
            flag.set()

        t = threading.Thread(target=sleeper)
        start = time.monotonic()
        t.start()
        while not flag.wait(0):
            pass
        seen["elapsed"] = time.monotonic() - start
        t.join()

    coordkit.replay(program, [])
    assert seen["elapsed"] == pytest.approx(0.01, abs=1e-12)


@pytest.mark.parametrize("strategy", ["random", "pct", "dfs"])
def test_as_completed_with_timeout_zero_times_out_before_a_slow_future(strategy):
    # SCHED-19: concurrent.futures.as_completed(timeout=0) polls with waits already due
    def program():
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            slow = pool.submit(time.sleep, 2)
            done = concurrent.futures.Future()
            done.set_result(1)
            got = []
            with pytest.raises(concurrent.futures.TimeoutError):
                for f in concurrent.futures.as_completed([done, slow], timeout=0):
                    got.append(f)
            assert got == [done]

    result = coordkit.explore(program, strategy=strategy, seed=4, max_schedules=50)
    assert result.failure is None, result.failure
