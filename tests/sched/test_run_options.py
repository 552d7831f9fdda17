"""Options of a run are checked before anything is patched, and every strategy reports
progress (issue 18 items that the one run path fixes)."""

from __future__ import annotations

import functools
import subprocess
import sys
import threading

import pytest

import coordkit


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 0, -1.0, True])
def test_a_bad_run_timeout_is_refused_and_leaves_nothing_patched(bad):
    lock_type = type(threading.Lock())
    with pytest.raises(ValueError, match=r"run_timeout must be a positive, finite number, got"):
        coordkit.explore(lambda: None, run_timeout=bad)
    assert type(threading.Lock()) is lock_type  # the stdlib is not left patched
    assert coordkit.explore(lambda: None, max_schedules=2).ok  # and the next exploration runs


def test_the_hypothesis_strategy_reports_progress():
    calls: list[int] = []
    result = coordkit.explore(lambda: None, strategy="hypothesis", max_schedules=5, seed=1,
                              progress=lambda runs, elapsed: calls.append(runs))
    assert result.ok and calls == list(range(1, result.schedules_run + 1))


def test_progress_must_be_callable():
    with pytest.raises(TypeError, match="progress must be a callable or None, got 3"):
        coordkit.explore(lambda: None, progress=3)  # type: ignore[arg-type]


def test_no_exception_is_printed_as_ignored_when_runs_are_collected():
    """A gc callback that reads a patched clock while a finished run's greenlet is freed
    must not print 'Exception ignored' (it did with the Hypothesis strategy)."""
    code = ("import coordkit; r = coordkit.explore(lambda: None, strategy='hypothesis', "
            "max_schedules=20, seed=1); print(r.ok)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr
    assert "Exception ignored" not in out.stderr, out.stderr


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring exists from Python 3.12")
def test_line_granularity_gives_its_monitoring_tool_id_back():
    from coordkit.engine.tracing import _TOOL_ID

    def racy() -> None:
        box = [0]

        def bump() -> None:
            box[0] += 1

        threads = [threading.Thread(target=bump) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    assert coordkit.explore(racy, granularity="line", max_schedules=5, seed=1).schedules_run == 5
    assert sys.monitoring.get_tool(_TOOL_ID) is None
    sys.monitoring.use_tool_id(_TOOL_ID, "someone else")
    try:
        with pytest.raises(RuntimeError, match="'someone else' is using; run without it"):
            coordkit.explore(racy, granularity="line", max_schedules=1)
    finally:
        sys.monitoring.free_tool_id(_TOOL_ID)
    assert coordkit.explore(racy, granularity="line", max_schedules=2, seed=1).schedules_run == 2


def _needs(a, b, c=1):  # a function that cannot be called with no arguments
    return None


class _Widget:
    def method(self):
        return None

    def needs(self, n):
        return n


def _variadic(*args, **kwargs):
    return None


@pytest.mark.parametrize("call", [
    lambda fn: coordkit.explore(fn, max_schedules=2),
    lambda fn: coordkit.replay(fn, ()),
    lambda fn: coordkit.run(fn),
], ids=["explore", "replay", "run"])
def test_a_function_with_required_arguments_is_a_usage_error_not_a_failure(call):
    # SCHED-15: explore(fn_with_required_args) used to report the program failing with
    # the TypeError of calling it; it is the caller's mistake, refused before any run
    with pytest.raises(TypeError, match=r"^fn must be callable with no arguments, but _needs\(a, b, "
                                        r"c=1\) has 2 parameter\(s\) without a default: a, b; "):
        call(_needs)
    with pytest.raises(TypeError, match=r"but _Widget\.needs\(n\) has 1 parameter\(s\) without a "
                                        r"default: n;"):
        call(_Widget().needs)
    with pytest.raises(TypeError, match=r"without a default: b;"):
        call(functools.partial(_needs, 1))


@pytest.mark.parametrize("fn", [_Widget().method, functools.partial(_needs, 1, 2), _variadic,
                                lambda *args: None, dict],
                         ids=["bound method", "partial", "variadic", "variadic lambda", "builtin"])
def test_callables_that_take_no_arguments_still_run(fn):
    # SCHED-15: bound methods, partials, *args and builtins pass the check
    result = coordkit.explore(fn, max_schedules=2)
    assert result.ok and result.schedules_run >= 1
    coordkit.replay(fn, ())
