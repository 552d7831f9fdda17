"""Mutants of the stateful suite killed by exhaustive DPOR on the table's rows (FORMAL-28).

CI runs a handful, the four race-only mutants among them (each a check and an
act in two critical sections), each on the row that kills it.  Under
``--hypothesis-profile=nightly`` every mutant runs against every row of its
primitive, as ``benchmarks/verify_mutants.py`` does.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from coordkit.verify import TABLE, verify_row
from tests.stateful.mutants import MUTANTS

pytestmark = pytest.mark.timeout(300)

BY_MUTANT = {m.name: m for m in MUTANTS}
BY_ROW = {c.name: c for c in TABLE}
# mutant -> a ci row that kills it (the smallest, as benchmarks/verify_mutants.py prints).
KILLS = {
    "RacyEnqueue": "fifo-racing-enqueuers",
    "RacyDequeue": "fifo-two-dequeuers-close",
    "StopVisibleBeforeRecord": "coord-join-while-stopping",
    "RacyRunnerCount": "runner-exhaustion",
    "CloseDoesNotWakeWaiters": "fifo-close-wakes-dequeuer",
    "LaterWaiterServedFirst": "fifo-waiters-in-order",
    "MinAfterDequeueIgnoredWhileOpen": "rsq-min-after-dequeue",
    "PaddedWithOnes": "padding-batch",
    "PriorityBatchesTakenPiecemeal": "priority-whole-batches",
    "CleanStopReRaised": "coord-clean-and-plain-stops",
    "ExceptionsRaisedNotFilled": "runner-op-fails-alone",
    "RunnerIgnoresStop": "runner-stopped-before-start",
}


def test_the_handful_has_every_race_only_mutant():
    """FORMAL-28, FORMAL-29: the CI handful includes each race-only mutant."""
    assert {m.name for m in MUTANTS if m.race} <= set(KILLS)


@pytest.mark.parametrize("name", sorted(KILLS))
def test_a_mutant_is_killed_by_exhausting_its_row(name):
    """FORMAL-28: with the mutant in place of the reference class, DPOR finds a failing
    schedule of the row (the reference passes the same row: test_verify.py and the table)."""
    mutant = BY_MUTANT[name]
    config = BY_ROW[KILLS[name]]
    assert config.primitive == mutant.machine.removesuffix("Machine")
    result = verify_row(config, mutant.factory, shrink=False)
    assert result.failure is not None, f"{name} survived {config.name}: {result.verdict}"


@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="every mutant against every row: --hypothesis-profile=nightly")
@pytest.mark.parametrize("name", sorted(BY_MUTANT))
def test_every_mutant_is_killed_by_some_row(name):
    """FORMAL-28: no mutant survives the whole table of its primitive."""
    from coordkit.verify.table import smallest_kill

    mutant = BY_MUTANT[name]
    assert smallest_kill(mutant.factory, mutant.machine.removesuffix("Machine")) is not None, (
        f"{name} survived every row")
