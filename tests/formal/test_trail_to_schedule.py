"""A spin counterexample becomes a coordkit schedule that fails on Python (FORMAL-9).

spin refutes BUG_LOST_FIRST_EXCEPTION (FORMAL-3, FORMAL-6) with a breadth-first search, so
its trail is a shortest one. Its events script a Python program with the same bug
(tests/formal/twin.py); ``Steer`` runs it with the trail's coordinator steps in the
trail's order, which yields a coordkit trace; ``coordkit.replay`` of that trace alone fails
as the model did: ``join`` raises a later exception, not the first stop request's.
"""

from __future__ import annotations

import pytest

import coordkit
from tests.formal.spin import check, guided
from tests.formal.trail import Steer, events, scripts, steps
from tests.formal.twin import program

pytestmark = pytest.mark.timeout(120)

BUG = "BUG_LOST_FIRST_EXCEPTION"


def _trail(tmp_path):
    verdict = check(tmp_path, "safety", BUG, cflags=["-DBFS"])
    assert verdict.error.startswith("assertion violated (rec==first)"), verdict.output
    return events(guided(verdict, BUG))


def test_a_spin_trail_replays_as_a_failing_coordkit_schedule(tmp_path):
    """FORMAL-9: the trail's steps, steered, give a trace whose replay fails on the twin."""
    trail = _trail(tmp_path)
    wanted = steps(trail)
    # Two stop requests that both read "not stopped", then both record (FORMAL-3's race).
    assert [s for _, s, _ in wanted][-2:] == ["stopped", "stopped"], wanted
    steer = Steer(wanted)
    found = coordkit.explore(program(steer, scripts(trail)), strategy=steer, max_schedules=1,
                             granularity="sync", races="ignore", shrink=False)
    assert steer.done[:len(wanted)] == wanted  # the Python run did the trail's steps, in order
    assert found.failure is not None, found
    assert isinstance(found.failure.exception, AssertionError)
    # As in the trail: runner 1 (T2) records its error first, main's overwrites it.
    assert str(found.failure.exception) == (
        "join raised TrainingError('the training step failed'), but the first stop request "
        "carried RunnerError('runner 1 failed')")

    again = Steer(wanted)  # records the steps only: the trace alone decides the schedule
    first = r"the first stop request carried RunnerError\('runner 1 failed'\)"
    with pytest.raises(AssertionError, match=first):
        coordkit.replay(program(again, scripts(trail)), found.failure.trace)
    assert again.done[:len(wanted)] == wanted
