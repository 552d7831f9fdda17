"""What the viewer records and builds, read without a browser (VIEW-1..5)."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import queue
import re
import threading

import coordkit
from coordkit.coordinator import Coordinator
from coordkit.engine.record import Recorder
from coordkit.engine.replay import record
from coordkit.engine.run import Session
from coordkit.engine.schedulers import ReplayScheduler
from coordkit.engine.search import run_options
from coordkit.engine.trace import Schedule
from coordkit.queues import FIFOQueue
from coordkit.viewer import failure_page, render_html
from coordkit.viewer.model import neighbour_schedule, report_pane
from coordkit.viewer.views import replayed_page
from tests.sched.programs import lock_order_deadlock, needs_line_granularity
from tests.viewer._pages import step_rows


def test_only_runs_that_record_rows_keep_snapshots():
    # VIEW-1: an exploration's runs keep no rows, so they take no snapshots; a replay
    # takes them only for the viewer (a snapshot walks every thread at every step).
    assert Recorder(rows=False, footprints=True, snapshots=True).snapshots is None
    assert Recorder(rows=True, footprints=False).snapshots is None
    assert Recorder(rows=True, footprints=False, snapshots=True).snapshots == []
    result = coordkit.explore(lock_order_deadlock, seed=3, max_schedules=200)
    assert result.failure.report.snapshots == [] and record(lock_order_deadlock,
                                                            result.failure.trace).snapshots == []
    report = record(lock_order_deadlock, result.failure.trace, snapshots=True)  # one a step
    assert len(report.snapshots) == report.steps == len(step_rows(report))
    assert [s["step"] for s in report.snapshots] == [e.step for e in step_rows(report)]


class _Locking:
    """An item whose repr takes a lock of the run: reading it must not be a step."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock

    def __repr__(self) -> str:
        with self.lock:
            return "Locking()"


def _objects_program() -> None:
    lock = threading.Lock()
    stop = threading.Event()
    gate = threading.Semaphore(2)
    jobs: queue.Queue = queue.Queue(maxsize=3)
    fifo = FIFOQueue(capacity=4, name="fifo")
    coord = Coordinator()

    def worker() -> None:
        with gate:
            jobs.put(_Locking(lock))
            fifo.enqueue(7)
            stop.set()
            coord.request_stop()
        fifo.close()

    t = threading.Thread(target=worker, name="worker")
    t.start()
    t.join()


def _unrecorded(fn) -> Schedule:
    """The schedule of one round-robin run that records nothing (as an exploration's)."""
    options = run_options(fn)
    with Session(options) as session:
        run = session.run(fn, ReplayScheduler([], strict=False), record=False)
    assert run.failure is None and run.snapshots == []
    return Schedule.from_choices(run.choices)


def test_a_snapshot_shows_each_object_and_reading_it_is_no_step():
    # VIEW-1: a strict replay with snapshots follows the schedule of a run without them,
    # step for step, though every snapshot reads _Locking's repr, which takes a lock.
    schedule = _unrecorded(_objects_program)
    report = record(_objects_program, schedule, strict=True, snapshots=True)
    assert report.failure is None and report.steps == len(report.snapshots)
    last = {o["label"]: o for o in report.snapshots[-1]["objects"]}
    first = {o["label"]: o for o in report.snapshots[0]["objects"]}
    assert first["Event#1"]["set"] is False and last["Event#1"]["set"] is True
    assert last["Semaphore#1"]["value"] == 2
    assert "Queue" not in last  # a stdlib queue.Queue shows as its lock and conditions
    assert last["'fifo'"]["items"] == ["7"] and last["'fifo'"]["closed"] is True
    assert last["Coordinator"]["stop requested"] is True
    assert first["Lock#1"]["owner"] is None
    main = report.snapshots[-1]["threads"][0]
    assert main["state"].startswith("blocked: join") and main["stack"][0].startswith("test_model.py:")


def test_the_panes_step_count_is_the_runs_steps():
    # VIEW-2: rows that are not steps (call, block) are inside a step, not counted.
    report = record(_objects_program, _unrecorded(_objects_program), strict=True, snapshots=True)
    pane = report_pane(report)
    assert pane["total"] == report.steps < len(report.events)
    assert any(row["calls"] for row in pane["rows"]) and any(row["blocks"] for row in pane["rows"])


def test_the_passing_neighbour_takes_back_the_last_preemption():
    # VIEW-4
    schedule = Schedule(((2, 1), (3, 0), (2, 1), (2, 0)), granularity="line", max_steps=50)
    neighbour, point = neighbour_schedule(schedule)
    assert point == 2 and neighbour.choices == ((2, 1), (3, 0))
    assert (neighbour.granularity, neighbour.max_steps) == ("line", 50)
    assert neighbour_schedule(Schedule(((2, 0),))) is None
    found = coordkit.explore(lock_order_deadlock, seed=3, max_schedules=200).failure
    page, report = replayed_page(lock_order_deadlock, found.trace)
    assert report.failure is not None and 'id="pane-neighbour"' in page
    assert "Passing neighbour: the same schedule without its last preemption" in page


def _inline(page: str, tag: str) -> str:
    return re.search(rf"<{tag}>(.*?)</{tag}>", page, re.S).group(1)


def test_the_page_allows_only_its_own_script_and_style_and_no_network():
    # VIEW-5: the CSP names the hashes of the page's one script and one style.
    found = coordkit.explore(lock_order_deadlock, seed=3, max_schedules=200).failure
    page = failure_page(found)
    cell = found._repr_html_()  # the same page, in a sandboxed frame of its own
    assert cell.startswith('<iframe class="coordkit-viewer" sandbox="allow-scripts" srcdoc="')
    assert html.unescape(re.search(r'srcdoc="([^"]*)"', cell).group(1)) == page
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)

    def digest(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert f"script-src 'sha256-{digest(_inline(page, 'script'))}'" in csp
    assert f"style-src 'sha256-{digest(_inline(page, 'style'))}'" in csp
    assert "default-src 'none'" in csp and "unsafe" not in csp


def test_the_data_cannot_end_its_script_element():
    # VIEW-5: run data is JSON with <, > and & escaped, so "</script>" and "<!--" cannot
    # appear in it, and it reads back as written.
    hostile = "</script><script>alert(1)</script><!-- & \u202e"
    event = type("E", (), {"step": 1, "tid": 0, "kind": "acquire", "target": hostile,
                           "where": "x.py:1", "time": 0.0})()
    page = render_html([event], [hostile], title="t", failure=hostile, trace=None)
    data = re.search(r'<script type="application/json" id="ck-data">(.*?)</script>', page, re.S).group(1)
    assert "<" not in data and ">" not in data and "&" not in data
    pane = json.loads(data)["panes"][0]
    assert pane["rows"][0]["op"] == "acquire </script><script>alert(1)</script><!-- & <U+202E>"


def test_a_long_run_keeps_the_world_at_its_first_steps_only(monkeypatch):
    # VIEW-1: a replay keeps at most Snapshots.LIMIT snapshots; the page says where they end.
    from coordkit.engine.snapshots import Snapshots

    found = coordkit.explore(lock_order_deadlock, seed=3, max_schedules=200).failure
    monkeypatch.setattr(Snapshots, "LIMIT", 3)
    report = record(lock_order_deadlock, found.trace, snapshots=True)
    assert len(report.snapshots) == 3 < report.steps
    pane = report_pane(report)
    assert pane["total"] == report.steps and len(pane["snapshots"]) == 3
    assert pane["unrecorded"] == "not recorded: a replay keeps the world at its first 3 steps"
    # Past the snapshots, a preemption is still marked (from the rows: T1 did not block).
    assert sum(row["preempted"] is not None for row in pane["rows"]) == report.preemptions


@needs_line_granularity
def test_a_snapshots_stacks_are_those_read_afresh(monkeypatch):
    """VIEW-1: a parked thread's stack is read once and reused while the thread stays at
    the same point; every snapshot's stacks equal those read anew at every step."""
    from coordkit.engine import snapshots as snapshots_module
    from coordkit.engine.run import RunOptions
    from coordkit.engine.schedulers import RandomScheduler
    from tests.sched import programs

    def stacks(fn, seed):
        with Session(RunOptions(granularity="line"), quiet=True) as session:
            run = session.run(fn, RandomScheduler(seed), record=True, snapshots=True)
        return [[t["stack"] for t in snap["threads"]] for snap in run.snapshots]

    cases = [(fn, seed) for fn in (programs.locked_counter, programs.lost_update) for seed in range(3)]
    cached = [stacks(fn, seed) for fn, seed in cases]
    read_once = snapshots_module.Snapshots._stack

    def afresh(self, task, acting, frame):
        self._stacks.clear()
        return read_once(self, task, acting, frame)

    monkeypatch.setattr(snapshots_module.Snapshots, "_stack", afresh)
    assert cached == [stacks(fn, seed) for fn, seed in cases]
    assert sum(len(s) for s in cached) > 100
