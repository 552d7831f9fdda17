"""explore(..., workers=N): the same result as without workers, from worker processes
(PAR-1..PAR-9)."""

from __future__ import annotations

import functools
import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import coordkit
from coordkit.engine.parallel import pool as pool_module
from coordkit.engine.schedulers import PCTScheduler
from coordkit.engine.schedulers.base import starts_epoch
from tests.parallel import programs

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]


def _signature(result: coordkit.ExploreResult) -> tuple:
    failure = result.failure
    found = None if failure is None else (failure.kind, failure.trace, failure.schedules_run)
    return (found, result.schedules_run, sorted(r.identity for r in result.races), result.seed,
            result.racing_sites, result.race_runs, result.warnings)


@pytest.mark.parametrize(("program", "strategy", "seed"), [
    (programs.lost_update, "random", 1),
    (programs.lost_update, "pct", 5),
    (programs.three_way_order, "random", 3),
    (programs.three_way_order, "pct", 2),
    (programs.three_way_order, "pct", 11),
    (programs.correct, "pct", 4),
])
def test_workers_give_the_sequential_result(program, strategy, seed):
    """PAR-2, PAR-3: same failure index, trace, schedules run and races, with 2 workers."""
    # Unshrunk: shrinking is bounded in time and picks its proof by measured speed
    # (SCHED-77, SCHED-93), so the shrunk trace may depend on the machine's load.
    kwargs = {"strategy": strategy, "seed": seed, "max_schedules": 150, "shrink": False}
    alone = coordkit.explore(program, **kwargs)
    assert _signature(coordkit.explore(program, workers=2, **kwargs)) == _signature(alone)
    assert _signature(coordkit.explore(program, workers=1, **kwargs)) == _signature(alone)


def test_learning_takes_effect_at_epoch_starts_only():
    """PAR-2: epochs start at 0, 1, 2, 4, 8, ...; PCT's k changes only there."""
    assert [i for i in range(20) if starts_epoch(i)] == [0, 1, 2, 4, 8, 16]
    scheduler = PCTScheduler(1, depth=3)
    scheduler.begin(0)
    scheduler.seen = 9  # as if a run had had 9 choice points
    scheduler.begin(3)
    assert scheduler.k == 1
    scheduler.begin(4)
    assert scheduler.k == 9


@pytest.mark.parametrize(("value", "error"), [
    (0, ValueError), (-1, ValueError), ("2", TypeError), (True, TypeError), (2.0, TypeError),
])
def test_bad_workers_values_are_refused(value, error):
    """PAR-1: the error names the argument and the value."""
    with pytest.raises(error, match=rf"workers must be .*{value!r}"):
        coordkit.explore(programs.correct, workers=value)


def test_workers_refuse_a_strategy_they_do_not_run():
    """PAR-1: hypothesis runs in this process, said so rather than ignored."""
    with pytest.raises(ValueError, match="workers=2 runs 'random', 'pct' and 'dfs'"):
        coordkit.explore(programs.correct, strategy="hypothesis", workers=2)


def test_unsendable_programs_are_refused_by_name():
    """PAR-4: a lambda or a nested function, named, with what to do."""
    def nested() -> None:
        pass

    for fn, name in ((lambda: None, "<lambda>"), (nested, "nested")):
        with pytest.raises(TypeError, match=rf"fn=.*{name} cannot be sent.*module level"):
            coordkit.explore(fn, strategy="random", workers=2)
    with pytest.raises(TypeError, match=r"invariant=.*<lambda> cannot be sent"):
        coordkit.explore(programs.correct, strategy="random", workers=2, invariant=lambda: True)


def test_a_function_of_a_dash_c_script_is_refused():
    """PAR-4: defined in the __main__ of ``python -c``, no worker could import it."""
    code = textwrap.dedent("""
        import coordkit
        def f():
            pass
        try:
            coordkit.explore(f, strategy="pct", workers=2)
        except TypeError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         timeout=50, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "fn=f cannot be sent to a worker process: define it at module level" in out.stdout, out


def test_a_worker_that_dies_is_reported_and_its_schedules_run_again(tmp_path):
    """PAR-5: the program kills its worker once; every schedule still runs."""
    program = functools.partial(programs.dies_once, str(tmp_path / "died"))
    result = coordkit.explore(program, strategy="random", seed=1, max_schedules=40, workers=2)
    assert (tmp_path / "died").exists()
    assert result.failure is None and result.schedules_run == 40
    assert any("worker process died" in w for w in result.warnings), result.warnings


def _helpers() -> set[int]:
    """multiprocessing's own long-lived helpers: the fork server, the resource tracker."""
    from multiprocessing import forkserver, resource_tracker

    pids = {getattr(forkserver._forkserver, "_forkserver_pid", None),
            getattr(resource_tracker._resource_tracker, "_pid", None)}
    return {p for p in pids if p is not None}


def _children() -> set[int]:
    """The live child processes of this one, from /proc."""
    me, found = str(os.getpid()), set()
    for entry in os.listdir("/proc"):
        try:
            fields = (Path("/proc") / entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me and fields[0] != "Z":
            found.add(int(entry))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_no_worker_is_left_after_a_return_or_an_interrupt():
    """PAR-6: after explore returns, and after Ctrl-C (a KeyboardInterrupt in the parent)."""
    before = _children()
    coordkit.explore(programs.correct, strategy="pct", seed=1, max_schedules=30, workers=2)
    assert _children() - before - _helpers() == set()

    def interrupt(runs: int, elapsed: float) -> None:
        if runs >= 20:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        coordkit.explore(programs.correct, strategy="pct", seed=1, max_schedules=100_000,
                         workers=2, progress=interrupt)
    assert _children() - before - _helpers() == set()
    assert multiprocessing.active_children() == []


def test_workers_are_never_plain_forks():
    """PAR-7: a fork server, or spawn where there is none."""
    assert pool_module._context().get_start_method() in ("forkserver", "spawn")


def test_a_failure_that_does_not_recur_here_is_an_error(monkeypatch):
    """PAR-8: never a pass when the parent cannot reproduce what a worker found."""
    monkeypatch.setenv("COORDKIT_TEST_PARENT", str(os.getpid()))
    with pytest.raises(RuntimeError, match=r"schedule 0 failed in a worker process .* but not"):
        coordkit.explore(programs.fails_only_in_a_worker, strategy="random", workers=2)


def test_the_benchmark_prints_both_worker_counts():
    """PAR-9: one run, 1 and 2 workers side by side."""
    out = subprocess.run([sys.executable, "benchmarks/workers.py", "--schedules", "20"],
                         capture_output=True, text=True, cwd=ROOT, timeout=50,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert "1 worker" in out.stdout and "2 workers" in out.stdout, out.stdout
