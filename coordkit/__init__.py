"""coordkit: thread coordination, made provably boring.

Reference implementations of TensorFlow 1.x's Coordinator, queues and
QueueRunner; Hypothesis stateful models of their rules; and a controlled
scheduler that explores, shrinks and replays thread interleavings.
"""

from __future__ import annotations

from coordkit.coordinator import Coordinator, LooperThread
from coordkit.errors import (
    AbortedError,
    CancelledError,
    DataLossError,
    DeadlineExceededError,
    Deadlock,
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
from coordkit.explore import (
    Choices,
    ExploreResult,
    FoundFailure,
    RunReport,
    explore,
    replay,
    run,
)
from coordkit.harness import Harness, Operation
from coordkit.interleavings import InterleavingFailure, interleavings
from coordkit.pipeline import MonitoredRun, batch, input_producer, limit_epochs, shuffle_batch
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
from coordkit.schedulers import (
    DFSScheduler,
    PCTScheduler,
    RandomScheduler,
    ReplayScheduler,
    Scheduler,
)
from coordkit.signals import stop_on_signals
from coordkit.trace import Schedule

__version__ = "0.1.0"

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
    "explore",
    "get_queue_runner_registry",
    "input_producer",
    "interleavings",
    "limit_epochs",
    "queue_runner_scope",
    "replay",
    "run",
    "schedules",
    "shuffle_batch",
    "start_queue_runners",
    "stop_on_signals",
]


def __getattr__(name: str) -> object:
    # Hypothesis is imported only by those who ask for its strategies.
    if name == "schedules":
        from coordkit.strategies import schedules

        return schedules
    raise AttributeError(f"module 'coordkit' has no attribute {name!r}")
