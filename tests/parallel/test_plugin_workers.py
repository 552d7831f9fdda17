"""``--coordkit-workers N``: the pytest plugin's explorations in worker processes (PAR-15)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(90)

ROOT = Path(__file__).resolve().parents[2]

TESTS = """
import multiprocessing
import threading

import pytest

import coordkit


def lost_update():
    box = {"n": 0}

    def bump():
        n = box["n"]
        threading.Lock().acquire()  # a scheduling point between the read and the write
        box["n"] = n + 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box["n"] == 2, box


@pytest.mark.coordkit(strategy="random", max_schedules=60)
def test_marker():
    lost_update()


@coordkit.interleavings(strategy="pct", max_schedules=60)
def test_decorator(tmp_path):
    lost_update()


def test_fixture(coordkit_explore):
    coordkit_explore(lost_update, strategy="random", max_schedules=60)


@pytest.mark.coordkit(strategy="random", max_schedules=5)
def test_only_here():
    assert multiprocessing.parent_process() is None, "in a worker process"


@pytest.mark.coordkit(strategy="dfs", max_schedules=60, granularity="sync")
def test_dfs():
    lost_update()


@pytest.mark.coordkit(strategy="dfs", max_schedules=60, granularity="sync")
def test_dfs_in_a_worker():
    assert multiprocessing.parent_process() is None, "in a worker process"


@pytest.mark.coordkit(strategy="dfs", max_schedules=60, granularity="line")
def test_dfs_at_line_granularity():
    assert multiprocessing.parent_process() is None, "in a worker process"
"""


def _replay_lines(result: pytest.RunResult) -> list[str]:
    return [line.strip() for line in result.outlines if "coordkit.replay(" in line]


def test_workers_give_each_test_the_result_one_process_gives(pytester, monkeypatch):
    """PAR-15: the marker, the decorator and the fixture explore in workers (a body that
    fails outside the pytest process fails there), with the same failures and replay
    lines as without workers; a dfs search is split across them, at sync and at line
    granularity."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the workers import this checkout's coordkit
    pytester.makepyfile(test_explored=TESTS)
    alone = pytester.runpytest("-p", "no:cacheprovider")
    alone.assert_outcomes(failed=4, passed=3)

    # (a process of its own: a worker process starts from a clean interpreter)
    with_workers = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--coordkit-workers=2")
    with_workers.assert_outcomes(failed=7, passed=0)
    with_workers.stdout.fnmatch_lines([
        "*schedule 0 failed in a worker process*",
        "*a DPOR schedule failed in a worker process*",
    ])
    assert sorted(_replay_lines(with_workers)) == sorted(_replay_lines(alone)) != []


def test_a_test_that_cannot_be_sent_runs_here_and_says_why(pytester):
    """PAR-15: a fixture value that does not pickle keeps the test in this process."""
    pytester.makepyfile(test_local="""
import threading

import pytest


@pytest.fixture
def lock():
    return threading.Lock()  # a lock does not pickle


@pytest.mark.coordkit(strategy="random", max_schedules=5)
def test_with_a_lock(lock):
    with lock:
        pass
""")
    from coordkit.testing import defaults

    before = dict(defaults)
    result = pytester.runpytest("-p", "no:cacheprovider", "--coordkit-workers=2")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_with_a_lock is explored in this process, not in 2 "
                                 "workers: fn=test_with_a_lock cannot be sent*"])
    # The run in this process leaves its options behind for no later test.
    assert defaults == before


def test_bad_worker_counts_are_a_usage_error(pytester):
    """PAR-15: --coordkit-workers 0 is refused at start-up."""
    pytester.makepyfile(test_nothing="def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--coordkit-workers=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--coordkit-workers must be a positive int, got 0*"])
