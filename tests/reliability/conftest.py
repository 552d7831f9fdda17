"""The reliability tables' totals, printed at the end of the session (without ``-s``)."""

from __future__ import annotations

import sys
from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for name in ("tests.reliability.test_bad_input", "tests.reliability.test_fault_injection"):
        module = sys.modules.get(name)
        lines = getattr(module, "SUMMARY", None)
        if lines:
            terminalreporter.write_sep("-", name.rsplit(".", 1)[1])
            for line in lines:
                terminalreporter.write_line(line)
