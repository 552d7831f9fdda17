"""coordkit: thread coordination, made provably boring.

Reference implementations of TensorFlow 1.x's Coordinator, queues and
QueueRunner; Hypothesis stateful models of their rules; and a controlled
scheduler that explores, shrinks and replays thread interleavings.

The package has two halves: the exploration engine (``coordkit.engine``) and the
reference primitives (``coordkit.queues``, ``coordkit.coordinator``, ...), which
reach the engine only through the seam ``coordkit.sync``.  Every public name is
importable from here; each is loaded on first use, so ``import coordkit`` (and
pytest, whose plugin lives in this package) pays for nothing it does not use.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING

__version__ = "0.1.0"

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "Coordinator": "coordkit.coordinator",
    "LooperThread": "coordkit.coordinator",
    "AbortedError": "coordkit.errors",
    "CancelledError": "coordkit.errors",
    "DataLossError": "coordkit.errors",
    "DeadlineExceededError": "coordkit.errors",
    "Deadlock": "coordkit.errors",
    "InvalidArgumentError": "coordkit.errors",
    "OpError": "coordkit.errors",
    "OutOfRangeError": "coordkit.errors",
    "ScheduleError": "coordkit.errors",
    "StepLimitExceeded": "coordkit.errors",
    "TraceDivergedError": "coordkit.errors",
    "TraceFormatError": "coordkit.errors",
    "UncontrolledBlockingError": "coordkit.errors",
    "UnimplementedError": "coordkit.errors",
    "Choices": "coordkit.engine.trace",
    "Schedule": "coordkit.engine.trace",
    "ExploreResult": "coordkit.engine.report",
    "FoundFailure": "coordkit.engine.report",
    "RunReport": "coordkit.engine.report",
    "explore": "coordkit.engine.search",
    "replay": "coordkit.engine.replay",
    "run": "coordkit.engine.replay",
    "Harness": "coordkit.engine.harness",
    "Operation": "coordkit.engine.harness",
    "InterleavingFailure": "coordkit.errors",
    "interleavings": "coordkit.testing",
    "MonitoredRun": "coordkit.pipeline",
    "batch": "coordkit.pipeline",
    "input_producer": "coordkit.pipeline",
    "limit_epochs": "coordkit.pipeline",
    "shuffle_batch": "coordkit.pipeline",
    "string_input_producer": "coordkit.pipeline",
    "slice_input_producer": "coordkit.pipeline",
    "shuffle_batch_join": "coordkit.pipeline",
    "range_input_producer": "coordkit.pipeline",
    "batch_join": "coordkit.pipeline",
    "QueueRunner": "coordkit.queue_runner",
    "QueueRunnerRegistry": "coordkit.queue_runner",
    "add_queue_runner": "coordkit.queue_runner",
    "get_queue_runner_registry": "coordkit.queue_runner",
    "queue_runner_scope": "coordkit.queue_runner",
    "start_queue_runners": "coordkit.queue_runner",
    "FIFOQueue": "coordkit.queues",
    "PaddingFIFOQueue": "coordkit.queues",
    "PriorityQueue": "coordkit.queues",
    "QueueBase": "coordkit.queues",
    "QueueStatistics": "coordkit.queues",
    "RandomShuffleQueue": "coordkit.queues",
    "DFSScheduler": "coordkit.engine.schedulers",
    "PCTScheduler": "coordkit.engine.schedulers",
    "RandomScheduler": "coordkit.engine.schedulers",
    "ReplayScheduler": "coordkit.engine.schedulers",
    "Scheduler": "coordkit.engine.schedulers",
    "stop_on_signals": "coordkit.signals",
    "schedules": "coordkit.engine.strategies",
}

__all__ = [
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


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'coordkit' has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted([*__all__, "__version__"])


if _TYPE_CHECKING:
    from coordkit.coordinator import Coordinator, LooperThread
    from coordkit.engine.harness import Harness, Operation
    from coordkit.engine.replay import replay, run
    from coordkit.engine.report import ExploreResult, FoundFailure, RunReport
    from coordkit.engine.schedulers import (
        DFSScheduler,
        PCTScheduler,
        RandomScheduler,
        ReplayScheduler,
        Scheduler,
    )
    from coordkit.engine.search import explore
    from coordkit.engine.strategies import schedules
    from coordkit.engine.trace import Choices, Schedule
    from coordkit.errors import (
        AbortedError,
        CancelledError,
        DataLossError,
        DeadlineExceededError,
        Deadlock,
        InterleavingFailure,
        InvalidArgumentError,
        OpError,
        OutOfRangeError,
        ScheduleError,
        StepLimitExceeded,
        TraceDivergedError,
        TraceFormatError,
        UncontrolledBlockingError,
        UnimplementedError,
    )
    from coordkit.pipeline import (
        MonitoredRun,
        batch,
        batch_join,
        input_producer,
        limit_epochs,
        range_input_producer,
        shuffle_batch,
        shuffle_batch_join,
        slice_input_producer,
        string_input_producer,
    )
    from coordkit.queue_runner import (
        QueueRunner,
        QueueRunnerRegistry,
        add_queue_runner,
        get_queue_runner_registry,
        queue_runner_scope,
        start_queue_runners,
    )
    from coordkit.queues import (
        FIFOQueue,
        PaddingFIFOQueue,
        PriorityQueue,
        QueueBase,
        QueueStatistics,
        RandomShuffleQueue,
    )
    from coordkit.signals import stop_on_signals
    from coordkit.testing import interleavings
