"""explore(..., cluster=client): the same units of work on a Dask cluster, the same result
(PAR-10..PAR-14), on a LocalCluster of two worker processes."""

from __future__ import annotations

import functools
import importlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import coordkit
from coordkit.cli import main
from coordkit.engine.parallel import connect
from tests.parallel import programs
from tests.parallel.test_workers import _signature

pytestmark = pytest.mark.timeout(90)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip(
        "distributed", reason="the Dask backend's tests need pip install '.[test,dask]'")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as dask_client:
        yield dask_client


@pytest.mark.parametrize(("program", "strategy", "seed"), [
    (programs.lost_update, "random", 1),
    (programs.lost_update, "pct", 5),
    (programs.three_way_order, "random", 3),
    (programs.three_way_order, "pct", 2),
    (programs.three_way_order, "pct", 11),
    (programs.correct, "random", 4),
])
def test_a_cluster_gives_the_sequential_result(client, program, strategy, seed):
    """PAR-10: the failure index, trace, schedules run, races and warnings of the run
    without workers, from the cluster's two worker processes."""
    # Unshrunk: shrinking is bounded in time and picks its proof by measured speed
    # (SCHED-77, SCHED-93), so the shrunk trace may depend on the machine's load.
    kwargs = {"strategy": strategy, "seed": seed, "max_schedules": 70, "shrink": False}
    alone = coordkit.explore(program, **kwargs)
    assert _signature(coordkit.explore(program, cluster=client, **kwargs)) == _signature(alone)


def test_the_cluster_runs_the_schedules_in_its_workers(client):
    """PAR-10: the units run in the cluster's processes, not here (a failure that only a
    worker sees is found there, then refused here by PAR-8)."""
    os.environ["COORDKIT_TEST_PARENT"] = str(os.getpid())
    try:
        with pytest.raises(RuntimeError, match=r"schedule 0 failed in a worker process"):
            coordkit.explore(programs.fails_only_in_a_worker, strategy="random", cluster=client)
    finally:
        del os.environ["COORDKIT_TEST_PARENT"]


@pytest.mark.parametrize("value", [2, "tcp://127.0.0.1:8786", object()])
def test_cluster_must_be_a_client(value):
    """PAR-11: anything but a distributed.Client (or None) is refused, saying how to make one."""
    with pytest.raises(TypeError, match=r"cluster must be a dask.distributed Client .*Client\("):
        coordkit.explore(programs.correct, strategy="random", cluster=value)


def test_a_cluster_takes_the_place_of_workers_and_of_other_strategies(client):
    """PAR-11: with workers=, or with a strategy the cluster does not run, a ValueError."""
    with pytest.raises(ValueError, match=r"workers=2 and cluster= were both given"):
        coordkit.explore(programs.correct, strategy="random", cluster=client, workers=2)
    with pytest.raises(ValueError, match=r"cluster= runs 'random', 'pct' and 'dfs'.*leave cluster"):
        coordkit.explore(programs.correct, strategy="hypothesis", cluster=client)
    with pytest.raises(TypeError, match=r"fn=.*<lambda> cannot be sent"):
        coordkit.explore(lambda: None, strategy="pct", cluster=client)


def test_dask_is_imported_only_when_asked():
    """PAR-12: neither ``import coordkit`` nor pytest's start-up (with coordkit's plugin)
    imports dask or distributed."""
    code = ("import sys, coordkit, pytest\n"
            "pytest.main(['-q', '--co', '-p', 'no:cacheprovider', 'tests/parallel/programs.py'])\n"
            "assert 'coordkit.pytest_plugin' in sys.modules\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_without_dask_a_scheduler_address_says_what_to_install(monkeypatch, capsys):
    """PAR-12: connect() and ``--scheduler-address`` name ``pip install 'coordkit[dask]'``."""
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'coordkit\[dask\]'"):
        connect("tcp://127.0.0.1:8786")
    code = main(["explore", "tests.parallel.programs:correct", "--strategy", "random",
                 "--scheduler-address", "tcp://127.0.0.1:8786"], out=io.StringIO())
    assert code == 2
    assert "pip install 'coordkit[dask]'" in capsys.readouterr().err


def test_an_address_where_no_scheduler_answers_is_a_usage_error(monkeypatch, capsys):
    """PAR-12: ``--scheduler-address`` of nothing: exit 2, naming the address."""
    pytest.importorskip("distributed", reason="needs pip install '.[test,dask]'")
    import coordkit.engine.parallel as parallel

    monkeypatch.setattr(parallel, "connect", functools.partial(parallel.connect, timeout=1.0))
    code = main(["explore", "tests.parallel.programs:correct", "--strategy", "random",
                 "--scheduler-address", "tcp://127.0.0.1:1"], out=io.StringIO())
    assert code == 2
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:1" in capsys.readouterr().err


def test_the_command_line_runs_on_a_scheduler_address(client):
    """PAR-10, PAR-12: ``coordkit explore --scheduler-address`` reports what the run
    without it reports (shrinking unbounded in time, so that both shrink alike: SCHED-77)."""
    argv = ["explore", "tests.parallel.programs:three_way_order", "--strategy", "pct",
            "--seed", "2", "--max-schedules", "60", "--json", "--shrink-budget", "none"]
    reports = []
    for extra in ([], ["--scheduler-address", client.scheduler.address]):
        out = io.StringIO()
        assert main(argv + extra, out=out) == 1
        report = json.loads(out.getvalue())
        del report["elapsed"], report["failure"]["shrink_seconds"]  # (wall clock)
        reports.append(report)
    assert reports[0] == reports[1]


def test_a_worker_that_cannot_import_the_program_is_named(client, tmp_path, monkeypatch):
    """PAR-13: a module the workers cannot import (on this process's path only), named
    before any unit runs, whether the program is in it or only refers to it."""
    (tmp_path / "only_here.py").write_text("def program():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    only_here = importlib.import_module("only_here")
    for program in (only_here.program, functools.partial(programs.call, only_here.program)):
        with pytest.raises(RuntimeError, match=r"cannot load the program \(ModuleNotFoundError: "
                                               r".*only_here.*importable on every worker.*"
                                               r"dask-cluster\.md"):
            coordkit.explore(program, strategy="random", cluster=client)


def test_a_cluster_worker_that_dies_has_its_schedules_run_again(client, tmp_path):
    """PAR-14: the program kills the worker running it once; Dask runs its unit again,
    every schedule still runs, and the warnings say a worker left."""
    program = functools.partial(programs.dies_once, str(tmp_path / "died"))
    result = coordkit.explore(program, strategy="random", seed=1, max_schedules=40, cluster=client)
    assert (tmp_path / "died").exists()
    assert result.failure is None and result.schedules_run == 40
    assert any("left the cluster while schedules 0..0 ran" in w for w in result.warnings), \
        result.warnings


def test_a_cluster_splits_a_dfs_search(client):
    """PAR-21: a DPOR search's subtrees on the cluster: exhausted, the same coverage
    verdict as without workers; a failing program fails the same way."""
    from tests.parallel.test_dpor_workers import _verdict
    from tests.sched import dpor_programs

    kwargs = {"strategy": "dfs", "max_preemptions": None, "granularity": "sync"}
    fn = dpor_programs.notify_chooses_a_waiter
    alone = coordkit.explore(fn, **kwargs)
    there = coordkit.explore(fn, cluster=client, **kwargs)
    assert there.exhausted and _verdict(there.coverage) == _verdict(alone.coverage)
    failing = dpor_programs.lock_order_deadlock
    found = coordkit.explore(failing, cluster=client, **kwargs).failure
    assert found is not None and found.kind == coordkit.explore(failing, **kwargs).failure.kind


def test_a_unit_still_running_when_the_search_ends_stops(client):
    """PAR-10: Dask cannot stop a running task; a unit left running when the search ends
    (Ctrl-C, an error) stops at its next read of the lowest failing index."""
    from coordkit.engine.parallel.cluster import Cluster
    from coordkit.engine.parallel.units import Learned, Unit, sendable_options
    from coordkit.engine.schedulers import make_scheduler
    from coordkit.engine.search import run_options

    many = 1_000_000  # hours of runs
    options = sendable_options(run_options(programs.correct))
    unit = Unit(programs.correct, options, make_scheduler("random", seed=1), Learned(), 0, many,
                None)
    executor = Cluster(client, (programs.correct, None))
    executor.stop_above(None)
    future = executor.submit(unit)
    executor.close()  # the search is over
    assert len(future.result(timeout=30)) < many
