"""coordkit: thread coordination, made provably boring.

Reference implementations of TensorFlow 1.x's Coordinator, queues and
QueueRunner; Hypothesis stateful models of their rules; and a controlled
scheduler that explores, shrinks and replays thread interleavings.
"""

from __future__ import annotations

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

# -- coordinator (coordinator.py) --
from coordkit.coordinator import Coordinator, LooperThread  # isort: skip
# -- queues (queues.py) --
from coordkit.queues import (  # isort: skip
    FIFOQueue,
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    QueueStatistics,
    RandomShuffleQueue,
)
# -- queue runner (queue_runner.py) --
from coordkit.queue_runner import (  # isort: skip
    QueueRunner,
    QueueRunnerRegistry,
    add_queue_runner,
    get_queue_runner_registry,
    queue_runner_scope,
    start_queue_runners,
)
# -- pipelines and signals (pipeline.py, signals.py) --
from coordkit.pipeline import MonitoredRun, batch, input_producer, limit_epochs, shuffle_batch  # isort: skip
from coordkit.signals import stop_on_signals  # isort: skip
# -- scheduler (explore.py, schedulers.py, trace.py) --
from coordkit.explore import Choices, ExploreResult, FoundFailure, RunReport, explore, replay, run  # isort: skip
from coordkit.harness import Harness, Operation  # isort: skip
from coordkit.interleavings import InterleavingFailure, interleavings  # isort: skip
from coordkit.schedulers import (  # isort: skip
    DFSScheduler,
    PCTScheduler,
    RandomScheduler,
    ReplayScheduler,
    Scheduler,
)
from coordkit.trace import Schedule  # isort: skip

__version__ = "0.1.0"

__all__ = [
    "AbortedError",
    "CancelledError",
    "DataLossError",
    "DeadlineExceededError",
    "Deadlock",
    "InvalidArgumentError",
    "OpError",
    "OutOfRangeError",
    "ScheduleError",
    "StepLimitExceeded",
    "TraceDivergedError",
    "TraceFormatError",
    "UncontrolledBlockingError",
    "UnimplementedError",
    # -- coordinator names --
    "Coordinator",
    "LooperThread",
    # -- queue names --
    "FIFOQueue",
    "PaddingFIFOQueue",
    "PriorityQueue",
    "QueueBase",
    "QueueStatistics",
    "RandomShuffleQueue",
    # -- queue runner names --
    "QueueRunner",
    "QueueRunnerRegistry",
    "add_queue_runner",
    "get_queue_runner_registry",
    "queue_runner_scope",
    "start_queue_runners",
    # -- pipeline and signal names --
    "MonitoredRun",
    "batch",
    "input_producer",
    "limit_epochs",
    "shuffle_batch",
    "stop_on_signals",
    # -- scheduler names --
    "Choices",
    "DFSScheduler",
    "ExploreResult",
    "FoundFailure",
    "Harness",
    "InterleavingFailure",
    "Operation",
    "PCTScheduler",
    "RandomScheduler",
    "ReplayScheduler",
    "RunReport",
    "Schedule",
    "Scheduler",
    "explore",
    "interleavings",
    "replay",
    "run",
    "schedules",
]


def __getattr__(name: str) -> object:
    # Hypothesis is imported only by those who ask for its strategies.
    if name == "schedules":
        from coordkit.strategies import schedules

        return schedules
    raise AttributeError(f"module 'coordkit' has no attribute {name!r}")
