"""What a scheduling point costs is paid once where it can be (issue 33): the tracing a
session installs stays installed between its runs (SCHED-65)."""

from __future__ import annotations

import collections
import sys
import threading

import pytest

import coordkit
from coordkit.engine import tracing


def _counter() -> None:
    lock = threading.Lock()
    box = [0]

    def bump() -> None:
        for _ in range(2):
            with lock:
                box[0] += 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring exists from Python 3.12")
def test_a_location_disabled_in_one_run_stays_disabled_in_the_next(monkeypatch):
    """SCHED-65: the library's lines are disabled once per session, not once per run (each
    run re-paying them cost more than the run's own points), and the tool id is given back
    when the session ends."""
    disabled: collections.Counter[tuple[int, int]] = collections.Counter()
    line_event = tracing._line_event

    def counting(code, line):
        answer = line_event(code, line)
        if answer is sys.monitoring.DISABLE:
            disabled[id(code), sys._getframe(1).f_lasti] += 1  # a location is an offset
        return answer

    monkeypatch.setattr(tracing, "_line_event", counting)
    result = coordkit.explore(_counter, granularity="line", max_schedules=10, seed=1)
    assert result.schedules_run == 10
    assert disabled, "no location was disabled: the counting callback was not the one called"
    assert max(disabled.values()) == 1, [n for n in disabled.values() if n > 1]
    assert sys.monitoring.get_tool(tracing._TOOL_ID) is None
