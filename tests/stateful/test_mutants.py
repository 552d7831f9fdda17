"""Each machine catches each deliberately broken implementation (MUT-1, MUT-3).

Every mutant of ``mutants.py`` is bound to its machine as a user would bind
their own class (BYO-1) and run derandomized, without shrinking.  The machine
must fail with a ``StepFailure`` (or an invariant's AssertionError), and the
number of machines it ran until then is printed (see them with
``pytest tests/stateful/test_mutants.py -rP``); Hypothesis counts a few of
those as discarded, so the count may exceed the budget by a little.
Derandomized, the count is the same on every run for a given Hypothesis
version and machine.

A bug in one call's logic is caught within the CI budget of 100 examples
(MUT-1).  A race-only bug needs the random walk to reach a boundary state and
then one particular interleaving of that step, so it gets a budget of 500
(MUT-3); ``test_machines.py`` shows each of them found and shrunk to one
context switch once the state is there.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.stateful.mutants import MUTANTS, Mutant

BUDGET = 100
RACE_BUDGET = 500

CI = settings(
    max_examples=BUDGET,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def budget(mutant: Mutant) -> int:
    return RACE_BUDGET if mutant.race else BUDGET


def examples_to_catch(mutant: Mutant) -> tuple[int, BaseException | None]:
    """Run the mutant's machine; return how many examples ran and what it raised."""
    count = 0
    base = mutant.bind()

    class Counting(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            nonlocal count
            count += 1
            super().__init__()

    Counting.__name__ = base.__name__
    try:
        run_state_machine_as_test(Counting, settings=settings(CI, max_examples=budget(mutant)))
    except AssertionError as caught:
        return count, caught
    return count, None


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutant_is_caught_within_its_budget(mutant: Mutant, record_property: object) -> None:
    # MUT-1 (one call's logic, 100 examples), MUT-3 (race-only, 500 examples)
    count, caught = examples_to_catch(mutant)
    print(f"{mutant.machine}: {mutant.name} caught after {count} example(s)")
    record_property("examples", count)  # type: ignore[operator]
    assert caught is not None, f"{mutant.machine} did not catch {mutant.name} in {budget(mutant)} examples"


def test_the_required_mutants_are_all_there():
    # MUT-1: at least twelve mutants, the race-only ones among them marked
    names = {m.name for m in MUTANTS}
    assert len(MUTANTS) - sum(m.race for m in MUTANTS) >= 12
    assert {"CloseDoesNotWakeWaiters", "PartialBatchLostOnClose", "LaterWaiterServedFirst",
            "PlainCloseCancelsPendingEnqueues", "FirstExceptionOverwritten", "CleanStopReRaised",
            "JoinIgnoresRegisteredThreads", "RunnerNeverClosesQueue", "CancelNeverRunsOnStop",
            "ExceptionsRaisedNotFilled", "TimeoutDropsElement", "MinAfterDequeueIgnoredWhileOpen",
            "BatchesNotPadded"} <= names
