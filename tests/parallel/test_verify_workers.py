"""``coordkit verify --workers N``: the rows in worker processes, the same table (PAR-16)."""

from __future__ import annotations

import io
import re

import pytest

from coordkit.cli import main

pytestmark = pytest.mark.timeout(90)


def _rows(text: str) -> list[str]:
    """Each row's line as it finishes, without its seconds (the only thing that may differ)."""
    return [re.sub(r", [\d.]+s\)$", ")", line) for line in text.splitlines()
            if re.match(r"^[\w-]+: .*schedules, [\d.]+s\)$", line)]


def test_verify_rows_in_workers_give_the_same_table(monkeypatch):
    """PAR-16: every row, in the table's order, with the same schedules and verdict, and
    none of them run in this process."""
    import coordkit.verify

    outs = []
    for extra in ([], ["--workers", "2"]):
        if extra:
            monkeypatch.setattr(coordkit.verify, "verify_row", _not_here)
        out = io.StringIO()
        assert main(["verify", "--only", "PriorityQueue", *extra], out) == 0
        outs.append(out.getvalue())
    assert len(_rows(outs[0])) == 3
    assert _rows(outs[1]) == _rows(outs[0])
    assert "3 of 3 row(s) pass" in outs[1]


def _not_here(*args: object, **kwargs: object) -> None:
    raise AssertionError("a row ran in the exploring process")


def test_verify_refuses_a_bad_worker_count():
    """PAR-16, PAR-1: --workers 0 is a usage error."""
    assert main(["verify", "--only", "PriorityQueue", "--workers", "0"], io.StringIO()) == 2
