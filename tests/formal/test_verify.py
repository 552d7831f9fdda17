"""``coordkit verify``: the CI slice of the table, its verdicts, its document (FORMAL-20..27, FORMAL-29).

The whole ``ci`` table (about 25 s) is ``coordkit verify``'s to run; here one or
two rows of each primitive are explored exhaustively (about 2 s), and their
schedules and classes must be the ones ``specs/verification.md`` has.
"""

from __future__ import annotations

import io
import itertools
import re
from pathlib import Path

import pytest

from coordkit.cli import main
from coordkit.verify import TABLE, Budget, rows, verify_row
from coordkit.verify.document import document
from coordkit.verify.table import HEADER

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "specs" / "verification.md"
MEASURED = (3, 4, 5, 7)  # schedules, classes, seconds, result
SLICE = [
    "fifo-two-dequeuers-close", "fifo-waiters-in-order", "rsq-drain-after-close", "padding-up-to-close",
    "priority-cancelling-close", "coord-join-while-stopping", "coord-looper", "coord-grace-period",
    "runner-exhaustion", "runner-op-fails-alone",
]
BY_NAME = {c.name: c for c in TABLE}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _committed_rows() -> dict[str, list[str]]:
    return {cells[0]: cells for line in DOCUMENT.read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and len(cells := _cells(line)) == len(HEADER)
            and cells[0] not in (HEADER[0], "---")}


def _static(text: str) -> str:
    """The document without its measured columns."""
    out = []
    for line in text.splitlines():
        cells = _cells(line) if line.startswith("| ") else []
        if len(cells) == len(HEADER) and cells[0] not in (HEADER[0], "---"):
            line = "| " + " | ".join("" if i in MEASURED else c for i, c in enumerate(cells)) + " |"
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("name", SLICE)
def test_a_row_of_the_slice_is_exhausted_and_passes_as_committed(name):
    """FORMAL-20, FORMAL-21, FORMAL-23: DPOR exhausts the row with every run's history
    linearizable and its rules held (the queue rows' of FORMAL-24, the coordinator rows' of
    FORMAL-25, the runner rows' of FORMAL-26), in the schedules and classes the document records
    (FORMAL-27: DPOR is deterministic, so they are the generator's)."""
    result = verify_row(BY_NAME[name])
    assert result.passed, result.report or result.verdict
    committed = _committed_rows()[name]
    assert (str(result.schedules), str(result.classes)) == (committed[3], committed[4])
    assert committed[7] == "pass (exhausted)"


def test_the_slice_has_every_primitive():
    """FORMAL-29: the CI slice covers each primitive of the table."""
    assert {BY_NAME[n].primitive for n in SLICE} == {c.primitive for c in TABLE}


def test_a_row_out_of_budget_fails_as_not_exhausted():
    """FORMAL-20: a row that hits its budget is a FAIL, never a pass."""
    result = verify_row(BY_NAME["fifo-two-dequeuers-close"], budget=Budget(max_schedules=3, seconds=60))
    assert not result.passed and result.failure is None
    assert result.verdict == "FAIL: not exhausted"


def test_a_broken_primitive_fails_its_row_with_the_reason():
    """FORMAL-20, FORMAL-23, FORMAL-24: a history no model explains (here a final ``size()``
    one short) fails the row, and says so."""
    from coordkit.queues import FIFOQueue

    class ForgetsTheLastElement(FIFOQueue):
        def size(self) -> int:
            return max(0, super().size() - 1)

    result = verify_row(BY_NAME["fifo-batch-close"], ForgetsTheLastElement, shrink=False)
    assert not result.passed and result.failure is not None
    assert "not linearizable" in result.report or "size()" in result.report, result.report


def test_a_history_is_stamped_in_the_order_the_schedule_ran():
    """FORMAL-22: every stamp is distinct, a call's return comes after its call, and one
    thread's calls follow each other; a plain close that timed out is pending."""
    import dataclasses

    import coordkit
    from coordkit.verify.program import program

    seen = []
    config = BY_NAME["fifo-timed-out-close-still-happens"]
    config = dataclasses.replace(config, checks=(*config.checks, seen.append))
    assert coordkit.explore(program(config), strategy="dfs", max_schedules=1, granularity="sync").ok
    calls = seen[0].recorder.calls
    stamps = [s for call in calls for s in call[3:5] if s is not None]
    assert len(stamps) == len(set(stamps))
    assert all(ret is None or call < ret for _t, _k, _a, call, ret, _o in calls)
    for thread in ("T0", "T2"):
        mine = [c for c in calls if c[0] == thread]
        assert all(a[4] < b[3] for a, b in itertools.pairwise(mine))
    assert [c[4] for c in calls if c[1] == "close"] == [None]


def test_the_committed_document_is_what_the_generator_writes():
    """FORMAL-27: the prose, the rows, their shapes and rules are the generator's (the
    measured columns are checked for the slice above)."""
    generated = document(rows("nightly"), {})
    assert _static(DOCUMENT.read_text(encoding="utf-8")) == _static(generated)
    assert all(cells[7] == "pass (exhausted)" for cells in _committed_rows().values())


def test_every_rule_a_row_checks_is_a_spec_rule():
    """FORMAL-23: the rules column names rules that exist."""
    from tests.test_spec_coverage import spec_rule_ids

    ids = spec_rule_ids()
    unknown = sorted({r for c in TABLE for r in c.rules if r.split(" ")[0] not in ids})
    assert not unknown, unknown


def test_the_cli_prints_the_table_and_exits_by_its_verdict(tmp_path):
    """FORMAL-20: ``coordkit verify --only`` prints the table; ``--markdown`` writes it."""
    out = io.StringIO()
    target = tmp_path / "table.md"
    assert main(["verify", "--only", "fifo-close-wakes-dequeuer", "--markdown", str(target)], out) == 0
    text = out.getvalue()
    assert "fifo-close-wakes-dequeuer" in text and "1 of 1 row(s) pass" in text
    assert "| fifo-close-wakes-dequeuer | FIFOQueue | 2x(1,1) |" in target.read_text(encoding="utf-8")
    assert main(["verify", "--only", "no-such-row"], io.StringIO()) == 2
