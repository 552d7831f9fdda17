"""The runnable examples: the shuffle-batch pipeline, the input reader and the three seed scripts.

Each example's `main()` is imported and run under the controlled scheduler
(`coordkit.replay(main, [])`): its sleeps and timed waits cost virtual time
only, so "stops within the expected time" is checked exactly on the virtual
clock. Each script is also run once as a subprocess on real threads (as the
README tells users to), with a generous timeout. The input reader's shutdown is
explored over many schedules, and its two planted bugs are found and replayed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import pytest

import coordkit

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SUBPROCESS_TIMEOUT = 60.0


def load(name):
    """Import examples/<name>.py as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"coordkit_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(name, *args):
    """Run examples/<name>.py on real threads; return its stdout (it must exit 0)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), *args],
        capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT, env=env, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def controlled(fn, **options):
    """Run `fn` once under the controlled scheduler (virtual time); return its result."""
    box = []
    options.setdefault("max_steps", 200_000)
    coordkit.replay(lambda: box.append(fn()), [], **options)
    return box[0]


def parse_batches(text):
    """The batches a script printed, one list per line."""
    lines = [line for line in text.splitlines() if line.startswith("[")]
    return [[int(x) for x in line.strip("[]").split(",")] for line in lines]


# -- the scheduler fix this issue needed ---------------------------------------------------


def test_every_joiner_of_a_thread_wakes_when_it_ends():
    """SCHED-5: when a thread ends, every thread joining it becomes runnable (a second, timed joiner
    used to stay parked until its timeout, which made Coordinator.join wait its whole grace period)."""

    def scenario():
        release = threading.Event()
        target = threading.Thread(target=release.wait)
        target.start()
        first = threading.Thread(target=target.join)
        first.start()
        time.sleep(1)  # the first joiner is parked by now (virtual time)
        release.set()
        start = time.monotonic()
        target.join(100)
        first.join()
        return time.monotonic() - start

    assert controlled(scenario) == 0


# -- examples/shuffle_batch.py (PIPE-8) ---------------------------------------------------


def test_shuffle_batch_example_is_identical_every_controlled_run(capsys):
    """PIPE-8, PIPE-4, MON-4: 10 shuffled batches of 10 that together hold 0..99 exactly once; with a
    seed under the controlled scheduler, output and batches are the same on every run."""
    example = load("shuffle_batch")
    runs = []
    for _ in range(3):
        batches = controlled(example.main)
        runs.append((batches, capsys.readouterr().out))
    batches, out = runs[0]
    assert all(run == runs[0] for run in runs[1:])
    assert [len(b) for b in batches] == [10] * 10
    assert sorted(x for b in batches for x in b) == list(range(100))
    assert batches != [list(range(i, i + 10)) for i in range(0, 100, 10)]
    assert parse_batches(out) == batches


def test_shuffle_batch_example_delivers_everything_once_under_any_schedule():
    """PIPE-8, PIPE-3: under every explored schedule the batches hold 0..99 exactly once."""
    example = load("shuffle_batch")

    def scenario():
        batches = example.main(seed=3)
        assert sorted(x for b in batches for x in b) == list(range(100))

    result = coordkit.explore(scenario, max_schedules=20, seed=5, max_steps=200_000)
    assert result.failure is None, str(result.failure)


def test_shuffle_batch_script_runs_on_real_threads_and_replays_identically():
    """PIPE-8: `python examples/shuffle_batch.py` prints 0..99 exactly once in 10 batches; with
    --replay the printed batches are the same in two separate processes."""
    batches = parse_batches(run_script("shuffle_batch"))
    assert [len(b) for b in batches] == [10] * 10
    assert sorted(x for b in batches for x in b) == list(range(100))
    assert run_script("shuffle_batch", "--replay") == run_script("shuffle_batch", "--replay")


# -- examples/seed_stdlib_flag.py -----------------------------------------------------------


def test_stdlib_flag_stops_within_one_tick_of_the_flag():
    """The stdlib flag: main sets the flag after run_for seconds; every worker notices within one
    tick, so the whole run takes between run_for and run_for + TICK (virtual seconds)."""
    example = load("seed_stdlib_flag")
    elapsed = controlled(lambda: example.main(run_for=2.0))
    assert 2.0 <= elapsed <= 2.0 + example.TICK + 1e-9


def test_stdlib_flag_does_not_propagate_a_thread_error():
    """The stdlib flag's weakness: a worker that raises just dies; main never hears of it and runs
    its full time."""
    example = load("seed_stdlib_flag")
    elapsed = controlled(lambda: example.main(run_for=1.0, fail_at=3), fail_on_thread_exception=False)
    assert 1.0 <= elapsed <= 1.0 + example.TICK + 1e-9
    with pytest.raises(ValueError, match="worker 0 failed at step 3"):  # only the scheduler saw it
        coordkit.replay(lambda: example.main(run_for=1.0, fail_at=3), [], max_steps=200_000)


def test_stdlib_flag_script_runs():
    """The stdlib flag script runs on real threads and reports the stop."""
    assert "4 threads stopped after" in run_script("seed_stdlib_flag")


# -- examples/seed_coordinator.py -------------------------------------------------------------


def test_coordinator_stops_as_soon_as_one_thread_asks():
    """COORD-4, COORD-10: worker 0 requests the stop at its 10th step ((10 - 1) ticks in); the other
    workers wake from wait_for_stop at once, so join returns at exactly that virtual time."""
    example = load("seed_coordinator")
    elapsed = controlled(example.main)
    assert elapsed == pytest.approx(9 * example.TICK)


def test_coordinator_propagates_a_thread_error_to_main():
    """COORD-15: worker 1 fails at step 3; everyone stops then ((3 - 1) ticks in) and main's join
    re-raises the worker's exception."""
    example = load("seed_coordinator")
    stopped_at = []

    def scenario():
        start = time.monotonic()
        try:
            example.main(fail_at=3)
        finally:
            stopped_at.append(time.monotonic() - start)

    with pytest.raises(ValueError, match="worker 1 failed at step 3"):
        coordkit.replay(scenario, [], max_steps=200_000)
    assert stopped_at == [pytest.approx(2 * example.TICK)]


def test_coordinator_script_runs():
    """The Coordinator script runs on real threads and reports the stop."""
    assert "4 threads stopped after" in run_script("seed_coordinator")


# -- examples/seed_stop_on_exception.py -------------------------------------------------------


def test_stop_on_exception_hands_the_failure_to_main(capsys):
    """COORD-9, COORD-15: worker 2 fails at step 5 inside stop_on_exception; all workers stop at once
    ((5 - 1) ticks in, far inside the 10 s grace period); main's except clause gets that very
    exception and its finally clause runs."""
    example = load("seed_stop_on_exception")
    caught = controlled(example.main)
    assert isinstance(caught, ValueError) and str(caught) == "worker 2 failed at step 5"
    assert any(frame.name == "worker" for frame in traceback.extract_tb(caught.__traceback__))
    out = capsys.readouterr().out
    assert "main thread caught: ValueError('worker 2 failed at step 5')" in out
    assert "4 of 4 threads stopped after 0.40 s" in out


def test_stop_on_exception_script_runs():
    """The stop_on_exception script runs on real threads: main catches the worker's error."""
    out = run_script("seed_stop_on_exception")
    assert "main thread caught: ValueError('worker 2 failed at step 5')" in out
    assert "4 of 4 threads stopped after" in out


# -- examples/input_reader.py (PIPE-16) -------------------------------------------------------


def _records(batches):
    return sorted(record for b in batches for record in b)


def _every_record_twice(example):
    """What two epochs over the example's files deliver: each (value, label) record twice."""
    values = range(example.NUM_FILES * example.RECORDS_PER_FILE)
    return sorted([(v, v % example.LABELS) for v in values] * 2)


@pytest.fixture
def reader_files(tmp_path):
    """The example's files, written once, outside any controlled run."""
    example = load("input_reader")
    return example, example.write_files(str(tmp_path))


def test_input_reader_reads_every_record_once_per_epoch(capsys):
    """PIPE-16, PIPE-9, PIPE-3: main() writes the files to a temporary directory and runs the three
    stages to the end of the epochs: 40 records in batches of 6 and a final 4, every record once
    per epoch; under the controlled scheduler the output is the same on every run."""
    example = load("input_reader")
    runs = []
    for _ in range(3):
        batches = controlled(example.main)
        runs.append((batches, capsys.readouterr().out))
    batches, out = runs[0]
    assert all(run == runs[0] for run in runs[1:])
    assert [len(b) for b in batches] == [6] * 6 + [4]
    assert _records(batches) == _every_record_twice(example)
    assert "40 examples in 7 batches; 6 of 6 threads stopped" in out


def test_input_reader_shutdown_is_race_free(reader_files):
    """PIPE-16, MON-5: under 500 explored schedules (PCT and random) every record arrives once per
    epoch, main's join returns, and no thread is left running."""
    example, paths = reader_files

    def scenario():
        batches = example.run_pipeline(paths)
        assert _records(batches) == _every_record_twice(example)
        assert threading.active_count() == 1, threading.enumerate()

    for strategy, schedules in (("pct", 300), ("random", 200)):
        result = coordkit.explore(scenario, strategy=strategy, max_schedules=schedules, seed=3,
                                  max_steps=300_000)
        assert result.failure is None, str(result.failure)
        assert result.schedules_run == schedules and not result.leaked_threads


def test_input_reader_planted_bug_no_close_is_found_and_replayed(reader_files):
    """PIPE-16: with no reader closing the examples queue, the batch stage waits for ever and main
    with it; explore reports the deadlock (main blocked in the batch dequeue) and its trace replays
    it, every time."""
    example, paths = reader_files

    def buggy():
        example.run_pipeline(paths, bug="no_close")

    result = coordkit.explore(buggy, max_schedules=20, seed=1, max_steps=300_000)
    failure = result.failure
    assert failure is not None and failure.kind == "deadlock", str(result)
    assert "T0 on " in failure.message  # the main thread is among the blocked
    for _ in range(2):
        with pytest.raises(coordkit.Deadlock):
            coordkit.replay(buggy, failure.trace, max_steps=300_000)


def test_input_reader_planted_race_first_closes_is_found_and_replayed(reader_files):
    """PIPE-16: a reader that closes the queue as soon as its own input ends races with the readers
    still enqueuing; explore finds a failing schedule (an enqueue on the closed queue, or records
    lost when that error comes after the stop) and its trace replays the same failure."""
    example, paths = reader_files

    def buggy():
        batches = example.run_pipeline(paths, bug="first_closes")
        assert _records(batches) == _every_record_twice(example)

    result = coordkit.explore(buggy, max_schedules=100, seed=2, max_steps=300_000)
    failure = result.failure
    assert failure is not None and failure.kind == "exception", str(result)
    for _ in range(2):
        with pytest.raises(type(failure.exception)) as raised:
            coordkit.replay(buggy, failure.trace, max_steps=300_000)
        assert str(raised.value) == str(failure.exception)


def test_input_reader_script_runs_and_finds_the_planted_bug():
    """PIPE-16: the script runs on real threads and under --replay (identical in two processes);
    --find-bug prints the deadlock and replays it."""
    assert "40 examples in 7 batches; 6 of 6 threads stopped" in run_script("input_reader")
    assert run_script("input_reader", "--replay") == run_script("input_reader", "--replay")
    out = run_script("input_reader", "--find-bug")
    assert out.startswith("coordkit found a deadlock")
    assert "replayed: the same deadlock" in out
