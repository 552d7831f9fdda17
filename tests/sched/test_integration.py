"""The Hypothesis strategy for schedules (HYP-1) and the pytest plugin (PLUG-1)."""

from __future__ import annotations

import pytest
from hypothesis import find, given, settings

import coordkit
from coordkit import Deadlock
from tests.sched import programs


@settings(max_examples=40)
@given(coordkit.schedules())
def test_any_generated_schedule_replays_on_a_correct_program(choices):
    # HYP-1: every generated value is a schedule that replay accepts
    report = coordkit.replay(programs.locked_counter, choices)
    assert report.failure is None


def test_hypothesis_finds_and_shrinks_a_deadlock():
    # HYP-1: shrinking the generated choices means fewer context switches
    def deadlocks(choices) -> bool:
        try:
            coordkit.replay(programs.lock_order_deadlock, choices)
        except Deadlock:
            return True
        return False

    smallest = find(coordkit.schedules(), deadlocks,
                    settings=settings(max_examples=500, database=None, derandomize=True))
    assert sum(1 for v in smallest.values if v) == 1
    # explore(strategy="hypothesis") reports the same (SCHED-17).
    result = coordkit.explore(programs.lock_order_deadlock, strategy="hypothesis", seed=1)
    assert result.failure.kind == "deadlock" and result.failure.preemptions == 1


def test_context_switches_build_the_choices():
    # HYP-1: (gap, k) pairs: keep going for gap choice points, then switch to candidate k
    from coordkit.strategies import context_switches

    assert context_switches([(2, 1), (0, 3)]) == coordkit.Choices((0, 0, 1, 3))
    assert context_switches([]) == coordkit.Choices(())


def test_schedules_rejects_bad_arguments():
    import pytest

    with pytest.raises(ValueError, match=r"max_switches must be an integer in 1\.\.1000000, got -1"):
        coordkit.schedules(max_switches=-1)


PLUGIN_TESTS = '''
import threading
import pytest
import coordkit


def lock_order():
    a, b = threading.Lock(), threading.Lock()
    def ab():
        with a, b:
            pass
    def ba():
        with b, a:
            pass
    ts = [threading.Thread(target=ab), threading.Thread(target=ba)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


@pytest.mark.coordkit(max_schedules=100)
def test_marker_finds_deadlock():
    lock_order()


@pytest.mark.coordkit(max_schedules=20)
def test_marker_passes(tmp_path):
    lock = threading.Lock()
    with lock:
        (tmp_path / "x").write_text("ok")


@coordkit.interleavings(max_schedules=100, strategy="random")
def test_decorator_finds_deadlock():
    lock_order()


@coordkit.interleavings(max_schedules=20)
def test_decorator_with_fixture(tmp_path):
    assert tmp_path.exists()


def test_fixture(coordkit_explore):
    result = coordkit_explore(lambda: None, max_schedules=5)
    assert result.ok
'''


def test_plugin_marker_decorator_and_fixture(pytester):
    # PLUG-1
    pytester.makepyfile(test_plugin_use=PLUGIN_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--coordkit-max-schedules=100")
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*coordkit found a deadlock after*",
            "*Replay it exactly*",
            "*coordkit.replay(*, 'ck2_*')*",
        ]
    )


REPLAYED_TESTS = """
import coordkit
import test_plugin_use


def test_replay_lines(tmp_path):
    names = {**vars(test_plugin_use), "coordkit": coordkit, "tmp_path": tmp_path}
    for line in open("replay_lines.txt").read().splitlines():
        try:
            eval(line, names)
        except coordkit.Deadlock:
            continue
        raise AssertionError("replay did not deadlock: " + line)
"""


def test_plugin_replay_lines_run_as_printed(pytester):
    # PLUG-1, TRACE-6: the replay line a failing test prints runs as printed: the
    # decorated test replays its body (no nested exploration), a test with fixtures is
    # called through a lambda that passes them
    pytester.makepyfile(test_plugin_use=PLUGIN_TESTS + """

@pytest.mark.coordkit(max_schedules=100)
def test_marker_with_fixture_finds_deadlock(tmp_path):
    lock_order()
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "error::pytest.PytestReturnNotNoneWarning")
    result.assert_outcomes(passed=3, failed=3)
    lines = sorted({"coordkit.replay(" + line.split("coordkit.replay(", 1)[1].strip()
                    for line in result.outlines if "    coordkit.replay(" in line})
    assert len(lines) == 3, lines
    assert any("lambda: test_marker_with_fixture_finds_deadlock(tmp_path=tmp_path)" in line
               for line in lines)
    pytester.path.joinpath("replay_lines.txt").write_text("\n".join(lines))
    pytester.makepyfile(test_replayed=REPLAYED_TESTS)
    pytester.runpytest("-p", "no:cacheprovider", "test_replayed.py").assert_outcomes(passed=1)


def test_plugin_seed_option_is_reproducible(pytester):
    # PLUG-1: the seed comes from the command line, or from the test id by default
    pytester.makepyfile(test_plugin_use=PLUGIN_TESTS)
    out = []
    for _ in range(2):
        result = pytester.runpytest("-p", "no:cacheprovider", "--coordkit-seed=7",
                                    "-k", "test_decorator_finds_deadlock")
        out.append([line for line in result.outlines if "coordkit.replay(" in line])
    assert out[0] and out[0] == out[1]
    result = pytester.runpytest("-p", "no:cacheprovider", "--coordkit-seed=banana")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--coordkit-seed must be an int or 'random', got 'banana'*"])


def test_exploration_does_not_repeat_coordkit_logs(caplog):
    # SCHED-18: a QueueRunner that logs its error in every schedule logs nothing while
    # explored; the replay logs it once
    import logging

    from coordkit import FIFOQueue, QueueRunner

    def program():
        q = FIFOQueue(4)

        def broken():
            raise OSError("shard unreadable")

        for t in QueueRunner(q, [broken]).create_threads(start=True):
            t.join()

    caplog.set_level(logging.ERROR, logger="coordkit")
    result = coordkit.explore(program, seed=1, max_schedules=50)
    assert result.failure is not None and result.schedules_run >= 1
    assert not [r for r in caplog.records if "Exception in QueueRunner" in r.getMessage()]
    with pytest.raises(OSError):
        coordkit.replay(program, result.failure.trace)
    assert len([r for r in caplog.records if "Exception in QueueRunner" in r.getMessage()]) == 1
    assert not logging.getLogger("coordkit").disabled
