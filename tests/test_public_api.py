"""The public surface is what ``coordkit.__all__`` says, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import coordkit

# The public surface, pinned: adding or removing a name is a decision, made here too.
PUBLIC_NAMES = [
    "AbortedError",
    "CancelledError",
    "Choices",
    "Coordinator",
    "DFSScheduler",
    "DataLossError",
    "DeadlineExceededError",
    "Deadlock",
    "ExploreResult",
    "FIFOQueue",
    "FoundFailure",
    "Harness",
    "InterleavingFailure",
    "InvalidArgumentError",
    "LooperThread",
    "MonitoredRun",
    "OpError",
    "Operation",
    "OutOfRangeError",
    "PCTScheduler",
    "PaddingFIFOQueue",
    "PriorityQueue",
    "QueueBase",
    "QueueRunner",
    "QueueRunnerRegistry",
    "QueueStatistics",
    "RandomScheduler",
    "RandomShuffleQueue",
    "ReplayScheduler",
    "RunReport",
    "Schedule",
    "ScheduleError",
    "Scheduler",
    "StepLimitExceeded",
    "TraceDivergedError",
    "TraceFormatError",
    "UncontrolledBlockingError",
    "UnimplementedError",
    "add_queue_runner",
    "batch",
    "batch_join",
    "explore",
    "get_queue_runner_registry",
    "input_producer",
    "interleavings",
    "limit_epochs",
    "queue_runner_scope",
    "range_input_producer",
    "replay",
    "run",
    "schedules",
    "shuffle_batch",
    "shuffle_batch_join",
    "slice_input_producer",
    "start_queue_runners",
    "stop_on_signals",
    "string_input_producer",
]


def test_the_public_surface_is_pinned():
    assert sorted(coordkit.__all__) == PUBLIC_NAMES
    assert len(set(coordkit.__all__)) == len(coordkit.__all__)


def test_all_names_resolve():
    for name in coordkit.__all__:
        assert getattr(coordkit, name) is not None, name


def test_import_is_light():
    code = "import sys, coordkit; print('hypothesis' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_errors_hierarchy():
    assert issubclass(coordkit.DeadlineExceededError, TimeoutError)
    assert issubclass(coordkit.DeadlineExceededError, coordkit.OpError)
    assert issubclass(coordkit.InvalidArgumentError, ValueError)
    for cls in (coordkit.OutOfRangeError, coordkit.CancelledError, coordkit.InvalidArgumentError):
        assert issubclass(cls, coordkit.OpError)
    assert coordkit.OutOfRangeError("x").message == "x"


def test_errors_take_tensorflows_arguments_too():
    import pickle

    import pytest

    err = coordkit.OutOfRangeError(None, "op", "input exhausted")
    assert (err.message, err.node_def, err.op, str(err)) == ("input exhausted", None, "op", "input exhausted")
    assert coordkit.CancelledError().message == ""
    assert pickle.loads(pickle.dumps(coordkit.OutOfRangeError("x"))).message == "x"
    with pytest.raises(TypeError, match=r"takes \(message\) or \(node_def, op, message\); got 2"):
        coordkit.OutOfRangeError("a", "b")
