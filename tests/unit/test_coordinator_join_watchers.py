"""A second join over a subset of the first one's threads returns when its own threads end
(COORD-13), found by the CoordinatorMachine (Hypothesis) as a join left waiting."""

from __future__ import annotations

import threading

import coordkit


def test_a_subset_join_returns_when_its_threads_end_while_another_lives_on():
    # COORD-13: one watcher per thread, so worker-0's end is seen while worker-1 lives
    def program():
        coord = coordkit.Coordinator()
        release0, release1 = threading.Event(), threading.Event()
        w0 = threading.Thread(target=release0.wait, name="worker-0")
        w1 = threading.Thread(target=release1.wait, name="worker-1")
        for t in (w1, w0):
            t.start()
        coord.request_stop()
        try:
            coord.join([w1, w0], stop_grace_period_secs=1)  # both alive: raises after the grace
        except RuntimeError:
            pass
        done = []
        joiner = threading.Thread(target=lambda: done.append(coord.join([w0],
                                                                         stop_grace_period_secs=5)))
        joiner.start()
        release0.set()
        joiner.join(timeout=3)  # worker-0 ended: the subset join returns within its grace
        assert done == [None], "a join of worker-0 was still waiting after worker-0 ended"
        release1.set()
        joiner.join()

    result = coordkit.explore(program, seed=1, max_schedules=200)
    assert result.failure is None, result.failure


def test_no_watcher_of_an_ended_thread_outlives_the_join_that_waited_for_it():
    # COORD-13: a program that counts its threads after join() sees its own only. Found
    # by the points just after a notify (RACE-9): the watcher woke join, then join
    # returned before the watcher had ended.
    def program():
        coord = coordkit.Coordinator()
        workers = [threading.Thread(target=lambda: None, name=f"worker-{i}") for i in range(2)]
        for t in workers:
            t.start()
        coord.join(workers)
        assert threading.active_count() == 1, threading.enumerate()

    result = coordkit.explore(program, strategy="dfs", max_schedules=3000)
    assert result.failure is None, result.failure
    assert result.schedules_run > 1
