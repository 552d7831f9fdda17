"""spin proves the shutdown model's properties and refutes each planted bug (FORMAL-1..8).

Each check builds pan in a temporary directory and runs it; the whole module takes
a few seconds (every search is over at most a few hundred thousand states).
"""

from __future__ import annotations

import shutil

import pytest

from tests.formal.spin import LIVENESS, check

pytestmark = pytest.mark.timeout(120)


def test_the_safety_properties_hold(tmp_path):
    """FORMAL-2..5: no assertion fails and no process is stuck at an invalid end state, in
    every interleaving of the model (FORMAL-1, within the bounds of FORMAL-8)."""
    verdict = check(tmp_path, "safety")
    assert verdict.errors == 0, verdict.output
    assert "assertion violations\t+" in verdict.output and "invalid end states\t+" in verdict.output


def test_every_runner_thread_ends_after_a_stop(tmp_path):
    """FORMAL-7: no acceptance cycle of the claim [] (stop -> <> all ended), under weak
    fairness."""
    verdict = check(tmp_path, LIVENESS)
    assert verdict.errors == 0, verdict.output
    assert "acceptance   cycles \t+ (fairness enabled)" in verdict.output, verdict.output


@pytest.mark.parametrize(("bug", "prop", "refutation"), [
    # FORMAL-3: the first stop request's exception is the one join raises.
    ("BUG_LOST_FIRST_EXCEPTION", "safety", "assertion violated (rec==first)"),
    # FORMAL-4: a plain close loses no stored element.
    ("BUG_CLOSE_DROPS_ELEMENTS", "safety", "assertion violated (taken==accepted)"),
    # FORMAL-5: no enqueue completes after a cancelling close.
    ("BUG_ENQUEUE_IGNORES_CLOSED", "safety", "assertion violated  !(cancel_closed)"),
    # FORMAL-7: a plain close behind a blocked enqueue never lets its runner end.
    ("BUG_CANCEL_OP_IS_PLAIN", LIVENESS, "acceptance cycle"),
])
def test_each_planted_bug_is_refuted(tmp_path, bug, prop, refutation):
    """FORMAL-6: spin refutes each planted bug, by the property that bug breaks."""
    verdict = check(tmp_path, prop, bug)
    assert verdict.errors >= 1, verdict.output
    assert verdict.error.startswith(refutation), verdict.output


def test_without_spin_the_check_fails_saying_so(tmp_path, monkeypatch):
    """FORMAL-8: a machine without spin cannot pass these tests by not looking."""
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "spin" else real(name))
    with pytest.raises(AssertionError, match=r"spin is not installed.*apt-get install -y spin"):
        check(tmp_path, "safety")
