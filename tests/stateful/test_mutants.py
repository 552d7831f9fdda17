"""Each machine catches each deliberately broken implementation within the CI budget (MUT-1).

Every mutant of ``mutants.py`` is bound to its machine as a user would bind
their own class (BYO-1) and run with the CI budget: 100 derandomized examples,
no shrinking.  The machine must fail with a ``StepFailure`` (or an invariant's
AssertionError), and the number of examples it took is printed (see them
with ``pytest tests/stateful/test_mutants.py -rP``).  Derandomized, the count
is the same on every run for a given Hypothesis version and machine.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.stateful.mutants import MUTANTS, Mutant

BUDGET = 100

CI = settings(
    max_examples=BUDGET,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


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
        run_state_machine_as_test(Counting, settings=CI)
    except AssertionError as caught:
        return count, caught
    return count, None


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutant_is_caught_within_the_ci_budget(mutant: Mutant, record_property: object) -> None:
    # MUT-1
    count, caught = examples_to_catch(mutant)
    print(f"{mutant.machine}: {mutant.name} caught after {count} example(s)")
    record_property("examples", count)  # type: ignore[operator]
    assert caught is not None, f"{mutant.machine} did not catch {mutant.name} in {BUDGET} examples"
    assert count <= BUDGET
