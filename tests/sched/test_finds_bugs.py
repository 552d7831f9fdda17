"""Known bugs the scheduler must find, and correct programs it must pass (SCHED-10, SCHED-15)."""

from __future__ import annotations

import sys

import pytest

import coordkit
from tests.sched import programs

STRATEGIES = ["pct", "random", "dfs", "hypothesis"]


@programs.needs_line_granularity
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_lost_update_found_at_line_granularity(strategy):
    # SCHED-2 (line granularity), SCHED-10 exception, SCHED-15
    result = coordkit.explore(
        programs.lost_update, strategy=strategy, seed=1, max_schedules=300, granularity="line"
    )
    assert result.failure is not None
    assert result.failure.kind == "exception"
    assert isinstance(result.failure.exception, AssertionError)
    assert "lost update" in str(result.failure.exception)


@programs.needs_line_granularity
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("program", [programs.lost_update_in_place,
                                     programs.lost_update_attribute_in_loop])
def test_read_modify_write_on_one_line_found(program, strategy):
    # SCHED-2: line granularity also switches just before a store to shared state, so
    # `x += 1` (read and write on one line) races too; shrunk to one preemption
    result = coordkit.explore(program, strategy=strategy, seed=1, max_schedules=500,
                              granularity="line")
    assert result.failure is not None, "missed the lost update"
    assert "lost update" in str(result.failure.exception)
    assert result.failure.preemptions == 1
    assert "store " in result.failure.report.table()


@programs.needs_line_granularity
def test_dfs_never_calls_a_racy_one_line_increment_exhausted():
    # SCHED-2, SCHED-16: bounded DFS must find the race rather than report the space done
    result = coordkit.explore(programs.lost_update_in_place, strategy="dfs",
                              granularity="line", max_schedules=10_000)
    assert result.failure is not None and not result.exhausted


@pytest.mark.skipif(sys.version_info >= (3, 11), reason="checks the Python 3.10 refusal")
def test_line_granularity_refused_clearly_on_python_310():
    # SCHED-2
    with pytest.raises(NotImplementedError, match=r"needs Python 3\.11 or newer"):
        coordkit.explore(programs.lost_update, granularity="line")


def test_lost_update_invisible_at_sync_granularity():
    # SCHED-2: at sync granularity a thread runs from one sync operation to the next
    # atomically, so a race with no synchronisation in between cannot show up...
    result = coordkit.explore(programs.lost_update, strategy="dfs", max_preemptions=None,
                              granularity="sync")
    assert result.failure is None
    assert result.exhausted
    # ...but race detection still sees it, and says so (RACE-1).
    assert any("write" in str(race) for race in result.races)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="scheduling at racing sites needs 3.11")
@pytest.mark.parametrize("strategy", ["dfs", *STRATEGIES])
def test_lost_update_found_at_default_granularity(strategy):
    # RACE-3: at auto granularity (the default) the racing accesses become scheduling points
    result = coordkit.explore(programs.lost_update, strategy=strategy, seed=1, max_schedules=500)
    assert result.failure is not None and "lost update" in result.failure.message


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_lock_order_deadlock_found(strategy):
    # SCHED-10 deadlock, SCHED-11 the report names what each thread waits on
    result = coordkit.explore(programs.lock_order_deadlock, strategy=strategy, seed=2, max_schedules=300)
    failure = result.failure
    assert failure is not None and failure.kind == "deadlock"
    assert "Lock#1 held by" in failure.details and "Lock#2 held by" in failure.details
    assert "with a, b" in failure.details or "with b, a" in failure.details  # the stacks


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_missed_notify_found(strategy):
    # SCHED-10 deadlock through a Condition that is never notified
    result = coordkit.explore(programs.missed_notify, strategy=strategy, seed=3, max_schedules=300)
    assert result.failure is not None and result.failure.kind == "deadlock"
    assert "Condition#1.wait" in result.failure.message


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_check_then_act_on_stdlib_queue_found(strategy):
    # SCHED-3: queue.Queue created inside the run is controlled; SCHED-10 deadlock
    result = coordkit.explore(programs.check_then_act, strategy=strategy, seed=4, max_schedules=300)
    assert result.failure is not None and result.failure.kind == "deadlock"


@pytest.mark.parametrize("strategy", ["pct", "random", "dfs"])
@pytest.mark.parametrize(
    "program",
    [
        programs.locked_counter,
        programs.notify_on_close,
        programs.get_nowait_consumers,
        programs.producer_consumer_with_sentinel,
        programs.sleeper_and_waiter,
    ],
)
def test_correct_programs_pass(strategy, program):
    # SCHED-10: a run passes when every non-daemon thread has finished
    result = coordkit.explore(program, strategy=strategy, seed=5, max_schedules=200)
    assert result.failure is None, str(result.failure)
    assert result.schedules_run >= 1


def test_dfs_exhausts_a_small_space():
    # SCHED-15: the bounded space is covered and reported as exhausted
    result = coordkit.explore(
        lambda: programs.locked_counter(2, 1), strategy="dfs", max_preemptions=None, max_schedules=10_000
    )
    assert result.failure is None
    assert result.exhausted


def test_sleep_sets_prune_without_losing_bugs():
    # SCHED-15: sleep sets explore fewer schedules and still find the deadlock
    def count(sleep_sets: bool, program) -> tuple[int, bool]:
        scheduler = coordkit.DFSScheduler(max_preemptions=None, sleep_sets=sleep_sets)
        result = coordkit.explore(program, strategy=scheduler, max_schedules=20_000, shrink=False,
                                  granularity="sync")
        return result.schedules_run, result.failure is not None

    def independent_locks() -> None:
        import threading

        locks = [threading.Lock() for _ in range(2)]

        def work(lock):
            for _ in range(2):
                with lock:
                    pass

        ts = [threading.Thread(target=work, args=(lock,)) for lock in locks]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    with_sleep, _ = count(True, independent_locks)
    without_sleep, _ = count(False, independent_locks)
    assert with_sleep < without_sleep
    assert count(True, programs.lock_order_deadlock)[1]


def test_dfs_preemption_bound_limits_the_space():
    # SCHED-15: a smaller preemption bound explores fewer schedules
    runs = []
    for bound in (0, 1, 2):
        result = coordkit.explore(
            programs.locked_counter, strategy="dfs", max_preemptions=bound, max_schedules=50_000
        )
        assert result.failure is None and result.exhausted
        runs.append(result.schedules_run)
    assert runs[0] < runs[1] < runs[2]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_queue_runner_shutdown_race_found(strategy):
    # RUNNER-7 hazard (a): a runner thread dying of an error with no coordinator may leave
    # the queue open; whether it does depends on which runner thread ends last.
    result = coordkit.explore(programs.runner_dies_without_coordinator, strategy=strategy, seed=1,
                              max_schedules=300, fail_on_thread_exception=False)
    assert result.failure is not None and result.failure.kind == "deadlock"
    # It is a race: the plain round-robin schedule does not hang.
    coordkit.replay(programs.runner_dies_without_coordinator, [], strict=False,
                    fail_on_thread_exception=False)


@pytest.mark.parametrize("strategy", ["pct", "dfs"])
def test_queue_runner_with_coordinator_passes(strategy):
    result = coordkit.explore(programs.runner_with_coordinator, strategy=strategy, seed=1,
                              max_schedules=300, fail_on_thread_exception=False)
    assert result.failure is None, str(result.failure)


def _lock_orders(workers: int, sections: int):
    """Each worker enters a lock-protected section ``sections`` times; the final order of
    entries is the outcome (peers' DPOR missed most of these orders)."""
    outcomes = set()

    def program():
        import threading

        order = []
        lock = threading.Lock()

        def work(i):
            for _ in range(sections):
                with lock:
                    order.append(i)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        outcomes.add(tuple(order))

    return program, outcomes


@pytest.mark.parametrize(("workers", "sections", "expected"), [(2, 1, 2), (2, 2, 6), (3, 1, 6), (2, 3, 20)])
def test_dfs_with_sleep_sets_sees_every_lock_order(workers, sections, expected):
    # SCHED-15: sleep sets prune only redundant schedules: the unbounded search still
    # reaches every order of the critical sections (cross-checked against the count).
    program, outcomes = _lock_orders(workers, sections)
    result = coordkit.explore(program, strategy="dfs", max_preemptions=None, max_schedules=100_000)
    assert result.failure is None and result.exhausted
    assert len(outcomes) == expected


def test_sleep_sets_agree_with_plain_dfs_on_outcomes():
    # SCHED-15: brute force (no reduction) and sleep sets reach the same outcomes
    seen = []
    for sleep_sets in (False, True):
        program, outcomes = _lock_orders(2, 2)
        scheduler = coordkit.DFSScheduler(max_preemptions=None, sleep_sets=sleep_sets)
        result = coordkit.explore(program, strategy=scheduler, max_schedules=100_000)
        assert result.exhausted
        seen.append((outcomes, result.schedules_run))
    (brute, brute_runs), (reduced, reduced_runs) = seen
    assert brute == reduced
    assert reduced_runs <= brute_runs
