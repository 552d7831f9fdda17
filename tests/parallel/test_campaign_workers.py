"""The CPython-suite campaign with ``--workers N``: its modules in worker processes, the
same table (PAR-16)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]


def _table(*extra: str) -> list[str]:
    """The campaign's table for a small module, one schedule per strategy, without the
    line that says how long it took."""
    out = subprocess.run([sys.executable, "benchmarks/asyncio_cpython_table.py", "--only",
                          "test_threads", *extra], capture_output=True, text=True,
                         cwd=ROOT, timeout=110,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "COORDKIT_CPYTHON_SCHEDULES": "1"})
    assert out.returncode == 0, out.stderr
    return [line for line in out.stdout.splitlines() if not line.startswith("Python ")]


def test_the_asyncio_campaign_in_workers_prints_the_same_table():
    """PAR-16: module by module, the same counts and failures with 2 workers."""
    alone = _table()
    assert any(line.startswith("| **total** |") for line in alone), alone
    assert _table("--workers", "2") == alone
