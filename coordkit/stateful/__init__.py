"""Hypothesis state machines that check a queue, coordinator or runner against pure models.

``import coordkit`` does not import this package (nor Hypothesis); import it
explicitly::

    from coordkit.stateful import FIFOQueueMachine

    class MyQueueMachine(FIFOQueueMachine):
        queue_factory = MyQueue

    TestMyQueue = MyQueueMachine.TestCase

Machines: ``FIFOQueueMachine``, ``RandomShuffleQueueMachine``,
``PaddingFIFOQueueMachine``, ``PriorityQueueMachine`` (bind ``queue_factory``),
``CoordinatorMachine`` (``coordinator_factory``) and ``QueueRunnerMachine``
(``runner_factory``).  The models they compare against are in
``coordkit.stateful.models``; the rules are in ``specs/stateful.md``.

A failing example prints as a program that runs after
``from coordkit.stateful import *`` and an import of the machine class.
"""

from __future__ import annotations

from coordkit.engine.trace import Choices
from coordkit.stateful._machine import Advance, ModelMachine, StepFailure
from coordkit.stateful.coordinator import (
    ClearStop,
    CoordinatorMachine,
    EndWorker,
    Exhausted,
    Handled,
    Join,
    RaceStops,
    RaiseRequested,
    RegisterWorker,
    Reported,
    StartWorker,
    Stop,
    WaitForStop,
)
from coordkit.stateful.queue_runner import (
    CloseQueue,
    Consume,
    CreateThreads,
    Instruct,
    InstructAll,
    Interrupted,
    NewRunner,
    QueueRunnerMachine,
    RequestStop,
)
from coordkit.stateful.queues import (
    Contend,
    FIFOQueueMachine,
    NewQueue,
    PaddingFIFOQueueMachine,
    PriorityQueueMachine,
    QueueMachine,
    QueueOp,
    Race,
    RandomShuffleQueueMachine,
)
from coordkit.strategies import context_switches

__all__ = [
    "Advance",
    "Choices",
    "ClearStop",
    "CloseQueue",
    "Consume",
    "Contend",
    "CoordinatorMachine",
    "CreateThreads",
    "EndWorker",
    "Exhausted",
    "FIFOQueueMachine",
    "Handled",
    "Instruct",
    "InstructAll",
    "Interrupted",
    "Join",
    "ModelMachine",
    "NewQueue",
    "NewRunner",
    "PaddingFIFOQueueMachine",
    "PriorityQueueMachine",
    "QueueMachine",
    "QueueOp",
    "QueueRunnerMachine",
    "Race",
    "RaceStops",
    "RaiseRequested",
    "RandomShuffleQueueMachine",
    "RegisterWorker",
    "Reported",
    "RequestStop",
    "StartWorker",
    "StepFailure",
    "Stop",
    "WaitForStop",
    "context_switches",
]
