"""Shrinking ends with a minimum, within a bound: the bounded searches below the shrunk
preemptions (SCHED-39, SCHED-78), each reduced or not, whichever is expected to finish
sooner (SCHED-93), a proof that cannot finish is not started (SCHED-79), and shrinking
takes at most ``shrink_budget`` (SCHED-77).

Time is the exploration's clock (``search.clock``), replaced by one each run of the
program moves on, so these tests count runs, not real seconds."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest

import coordkit
from coordkit.engine import shrink as shrink_module
from coordkit.engine.run import RunOptions, Session
from coordkit.engine.schedulers import DFSScheduler
from coordkit.engine.shrink import Bound, estimated_schedules, prove_minimal
from tests.sched import programs
from tests.sched.search_clock import SearchClock

CASES = [
    (programs.lock_order_deadlock, {}),
    (programs.missed_notify, {}),
    pytest.param(programs.lost_update, {"granularity": "line"},
                 marks=programs.needs_line_granularity),
]


def _replays_the_same_failure(program: Any, failure: Any, options: dict[str, Any]) -> None:
    """The shrunk trace, replayed, fails the same way (TRACE-3)."""
    with pytest.raises(BaseException) as raised:
        coordkit.replay(program, failure.trace, **options)
    if failure.kind == "deadlock":
        assert isinstance(raised.value, coordkit.Deadlock)
    else:
        assert type(raised.value) is type(failure.exception)


@pytest.mark.parametrize(("program", "options"), CASES)
@pytest.mark.parametrize("strategy", ["pct", "random", "dfs"])
def test_a_shrunk_failure_says_it_is_minimal(program, options, strategy):
    """SCHED-39, SCHED-78, SCHED-93: "minimal (k preemptions; " and the searches below it,
    each reduced or not, ``minimal`` is True, no schedule with fewer fails that way, and the
    shrunk trace replays to the same failure."""
    result = coordkit.explore(program, strategy=strategy, seed=3, max_schedules=500, **options)
    failure = result.failure
    assert failure is not None
    k = failure.preemptions
    searches = "; ".join(f"<= {j}: none fails in [0-9,]+ (un)?reduced schedules" for j in range(k))
    assert re.fullmatch(rf"minimal \({k} preemptions?(; {searches})?\)", failure.minimality)
    assert failure.minimal is True
    assert failure.minimality in str(failure)
    _replays_the_same_failure(program, failure, options)
    if k:
        below = coordkit.explore(program, strategy="dfs", max_preemptions=k - 1,
                                 max_schedules=100_000, **options)
        assert below.exhausted and (below.failure is None or below.failure.kind != failure.kind)


def timed(clock: SearchClock, seconds: float = 1.0) -> Any:
    """Three threads, each reading a total under a lock and writing it back under the lock
    again: a preemption between the two loses an update (1 preemption is the minimum, and
    without one, the threads' orders make several schedules).  Each run takes ``seconds``."""

    def program() -> None:
        clock.now += seconds
        lock = threading.Lock()
        total = [0]

        def work() -> None:
            with lock:
                seen = total[0]
            with lock:
                total[0] = seen + 1

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert total[0] == 3, f"lost update: {total[0]}"

    return program


def test_shrinking_stops_at_the_default_bound(clock):
    """SCHED-77: by default shrinking takes at most 5x the time to find (1 s a run here), and
    then says that what it reports is the fewest found within that bound, not a minimum."""
    program = timed(clock)
    result = coordkit.explore(program, strategy="random", seed=1, granularity="sync")
    failure = result.failure
    assert failure is not None
    bound = 5.0 * result.schedules_run
    # The bound's runs, the one under way when it ran out, then the one recorded replay
    # (outside it, as with time_budget: SCHED-62).
    assert failure.shrink_runs <= bound + 2
    assert failure.shrink_seconds <= bound + 2
    assert failure.minimal is None
    assert failure.minimality.startswith(f"the fewest found within the shrink bound ({bound:.1f} s")
    assert failure.minimality in failure.headline()
    _replays_the_same_failure(program, failure, {"granularity": "sync"})


def test_shrink_budget_none_goes_on_to_the_minimum(clock):
    """SCHED-77, SCHED-78: ``shrink_budget=None`` shrinks the same failure to a proved minimum
    (1 preemption: none of the schedules without one fails)."""
    result = coordkit.explore(timed(clock), strategy="random", seed=1, granularity="sync",
                              shrink_budget=None)
    failure = result.failure
    assert failure is not None and failure.preemptions == 1
    assert failure.minimal is True
    assert re.fullmatch(r"minimal \(1 preemption; <= 0: none fails in \d+ (un)?reduced "
                        r"schedules\)", failure.minimality)
    assert failure.shrink_runs > 5 + 1  # more than the default bound allowed above


def test_a_proof_that_cannot_finish_in_the_bound_is_skipped_and_says_so():
    """SCHED-79: with 10 s a run and 15 s left, the search below (at least one schedule) does
    not fit: it is not started, and the statement says it was skipped; ``minimal`` is None."""
    clock = SearchClock()
    program = timed(clock, seconds=10.0)
    found = coordkit.explore(program, strategy="dfs", max_preemptions=1, seed=1,
                             granularity="sync", shrink_budget=None).failure
    assert found is not None and found.preemptions == 1
    choices = [c for _, c in found.report.schedule.choices]
    with Session(RunOptions(granularity="sync"), quiet=True) as session:
        bound = Bound(clock, clock.now + 15.0)
        proof = session.call(lambda: prove_minimal(
            session, program, found.report.failure, choices, 1, bound, within="the bound"))
    assert bound.runs == 1  # the one run that measured the schedule's choice points
    assert not proof.minimal and proof.choices == choices
    assert proof.statement.startswith(
        "the fewest found within the bound: 1 preemption; the search of every schedule "
        "with <= 0 preemptions was skipped (about ")


def test_a_proof_cut_short_says_how_far_it_looked():
    """SCHED-79: a search that runs out of bound part-way says so, with the schedules run."""
    clock = SearchClock()
    program = timed(clock)
    found = coordkit.explore(program, strategy="dfs", max_preemptions=1, seed=1,
                             granularity="sync", shrink_budget=None).failure
    assert found is not None
    with Session(RunOptions(granularity="sync"), quiet=True) as session:
        bound = Bound(clock, None)
        # The run that measures the choice points, two of the search, then out of time.
        bound.stop = lambda: bound.runs >= 3
        proof = session.call(lambda: prove_minimal(
            session, program, found.report.failure, [], 1, bound, within="the bound"))
    assert not proof.minimal
    assert proof.statement == ("the fewest found within the bound: 1 preemption; the search of "
                               "every schedule with <= 0 preemptions stopped after 2 reduced schedules")


def test_a_proof_with_no_time_left_is_not_started():
    """SCHED-79: with the bound spent when the searches would begin, no run is made."""
    clock = SearchClock()
    program = timed(clock)
    found = coordkit.explore(program, strategy="dfs", max_preemptions=1, seed=1,
                             granularity="sync", shrink_budget=None).failure
    assert found is not None
    with Session(RunOptions(granularity="sync"), quiet=True) as session:
        bound = Bound(clock, clock.now)
        proof = session.call(lambda: prove_minimal(
            session, program, found.report.failure, [], 1, bound, within="the bound"))
    assert bound.runs == 0 and not proof.minimal
    assert proof.statement == ("the fewest found within the bound: 1 preemption; the search of "
                               "every schedule with <= 0 preemptions was not started (no time "
                               "was left)")


def test_the_estimate_counts_free_choices_and_placed_preemptions():
    """SCHED-79: choice points where the current thread cannot go on multiply; up to k
    preemptions are placed among the others, each to one of the other threads."""
    points = [(2, False), (3, True), (3, True), (2, False)]
    assert estimated_schedules(points, 0) == 4
    assert estimated_schedules(points, 1) == 4 * (1 + 2 * 2)
    assert estimated_schedules(points, 2) == 4 * (1 + 2 * 2 + 1 * 4)
    assert estimated_schedules([], 3) == 1


def test_shrink_budget_is_checked():
    """SCHED-77: a number of seconds, ``"auto"`` or None; anything else is refused."""
    for bad in (0, -1.0, "fast", True):
        with pytest.raises(ValueError, match="shrink_budget"):
            coordkit.explore(programs.lock_order_deadlock, shrink_budget=bad)


@pytest.mark.parametrize("argument", ["none", "auto", "30"])
def test_the_command_line_takes_a_shrink_budget(argument, tmp_path, monkeypatch):
    """SCHED-77: ``--shrink-budget`` is passed to ``explore``; the JSON says what shrinking
    showed and took (``minimal``, ``minimality``, ``shrink_seconds``)."""
    import io
    import json

    from coordkit.cli import main

    monkeypatch.chdir(tmp_path)  # explore saves the run it reports here
    out = io.StringIO()
    code = main(["explore", "tests.sched.programs:lock_order_deadlock", "--seed", "1",
                 "--shrink-budget", argument, "--json"], out=out)
    failure = json.loads(out.getvalue())["failure"]
    assert code == 1 and failure["minimal"] is True
    assert failure["minimality"].startswith("minimal (1 preemption; <= 0: none fails in ")
    assert failure["shrink_seconds"] >= 0


def test_the_command_line_refuses_a_bad_shrink_budget(capsys):
    """SCHED-77: anything but seconds, ``auto`` or ``none`` is a usage error."""
    from coordkit.cli import main

    assert main(["explore", "tests.sched.programs:lock_order_deadlock",
                 "--shrink-budget", "soon"]) == 2
    assert "--shrink-budget" in capsys.readouterr().err


def _prove(program: Any, clock: SearchClock, seconds: float | None) -> tuple[Any, Bound]:
    """The proof below the 1-preemption failure of ``program`` within ``seconds`` from
    now, and its bound (from an unshrunk choice list: the proof does not need the shrunk
    one)."""
    found = coordkit.explore(program, strategy="dfs", max_preemptions=1, seed=1,
                             granularity="sync", shrink_budget=None).failure
    assert found is not None and found.preemptions == 1
    bound = Bound(clock, None if seconds is None else clock.now + seconds)
    with Session(RunOptions(granularity="sync"), quiet=True) as session:
        return session.call(lambda: prove_minimal(
            session, program, found.report.failure, [], 1, bound, within="the bound")), bound


def _schedules(program: Any, *, reduced: bool) -> int:
    """The schedules of the exhausted search of ``program`` without a preemption."""
    result = coordkit.explore(program, strategy=DFSScheduler(0, reduce_bound=reduced),
                              max_schedules=10_000, granularity="sync", shrink=False)
    assert result.exhausted and result.failure is None
    return result.schedules_run


def test_a_proof_says_which_search_it_ran(clock):
    """SCHED-78, SCHED-93: with reduced and unreduced runs costing the same, the reduced
    search (no more schedules) is the one run to the end, and the statement names it with
    the schedules it ran."""
    program = timed(clock)
    proof, _ = _prove(program, clock, None)
    n = _schedules(program, reduced=True)
    assert proof.minimal and proof.statement == (
        f"minimal (1 preemption; <= 0: none fails in {n} reduced schedules)")


def test_a_proof_takes_the_unreduced_search_when_the_reduced_one_is_slower(clock, monkeypatch):
    """SCHED-93: when each reduced run costs ten times an unreduced one, the first slice of
    the reduced search (one run) estimates its rest above the unreduced search's time, and
    the unreduced search replaces it: the statement names it."""

    class SlowReduced(DFSScheduler):
        def end(self, run: Any) -> None:
            if self.reduce_bound:
                clock.now += 10.0
            super().end(run)

    monkeypatch.setattr(shrink_module, "DFSScheduler", SlowReduced)
    program = timed(clock)
    proof, bound = _prove(program, clock, None)
    n = _schedules(program, reduced=False)
    assert proof.minimal and proof.statement == (
        f"minimal (1 preemption; <= 0: none fails in {n} unreduced schedules)")
    assert bound.runs == 1 + 1 + n  # the shape's run, the reduced slice's one, the search


def test_a_level_neither_search_finishes_in_is_skipped_with_both_estimates(clock):
    """SCHED-79, SCHED-93: with 5 s of bound (1 s a run), the first run fits but neither
    the unreduced search nor the rest of the reduced one after its first slice does: the
    level is skipped, the statement giving both estimates."""
    program = timed(clock)
    proof, bound = _prove(program, clock, 5.0)
    assert not proof.minimal
    assert re.fullmatch(
        r"the fewest found within the bound: 1 preemption; the search of every schedule with "
        r"<= 0 preemptions was skipped \(about \d+ schedules, ~[\d.]+ s; reduced, from its "
        r"first \d+: about \d+ more, ~[\d.]+ s\)", proof.statement), proof.statement
    assert bound.runs < 5
