"""Every exception coordkit raises.

Two families live here:

* ``OpError`` and its subclasses mirror TensorFlow's ``tf.errors`` classes; the
  reference queues, coordinator and runner raise them with TensorFlow's wording.
* ``ScheduleError`` and its subclasses report what the controlled scheduler found
  or could not do (a deadlock, an exhausted step budget, a replay that no longer
  matches the program); ``FailureKind`` names what made a controlled run fail.

The engine's control-flow signals (the ``BaseException`` that ends a run's leftover
threads, the watchdog's interrupt) are not errors: no caller ever sees them, and
they live with the runtime that throws and catches them.
"""

from __future__ import annotations

import enum

__all__ = [
    "FailureKind",
    "InterleavingFailure",
    "ModelError",
    "NotLinearizableError",
    "SearchBudgetExceeded",
    "StepFailure",
    "UsageError",
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
    "UnimplementedError",
    "UncontrolledBlockingError",
    "UncontrolledUseError",
]


class OpError(Exception):
    """Base class of the errors an operation on a queue or coordinator raises.

    Made as ``OutOfRangeError("message")``, or as TensorFlow's
    ``OutOfRangeError(node_def, op, message)``, so ops ported from TensorFlow
    can raise them unchanged (``node_def`` and ``op`` are kept as attributes).
    """

    def __init__(self, *args: object) -> None:
        if len(args) > 1 and len(args) != 3:
            raise TypeError(
                f"{type(self).__name__} takes (message) or (node_def, op, message); got "
                f"{len(args)} arguments"
            )
        node_def, op, message = args if len(args) == 3 else (None, None, *(args or ("",)))
        super().__init__(message)
        self.message = message
        self.node_def = node_def
        self.op = op


class OutOfRangeError(OpError):
    """The input is exhausted: a dequeue from a closed queue with too few elements."""


class CancelledError(OpError):
    """The operation was cancelled: an enqueue into a closed queue, a cancelled wait."""


class DeadlineExceededError(OpError, TimeoutError):
    """A ``timeout=`` expired before the operation could complete."""


class InvalidArgumentError(OpError, ValueError):
    """An argument was wrong; raised by the call that was wrong, before any waiting."""


class UnimplementedError(OpError):
    """The operation is not supported for these arguments."""


class AbortedError(OpError):
    """The operation was aborted (kept for code written against older TensorFlow)."""


class DataLossError(OpError):
    """Elements could not be restored (never raised by the reference queues)."""


class ScheduleError(Exception):
    """Base class of what the controlled scheduler reports."""


class Deadlock(ScheduleError):
    """Every live thread of a controlled run is blocked and no timed wait can fire."""


class StepLimitExceeded(ScheduleError):
    """A controlled run took more scheduling steps (or choices) than its budget: threads that
    keep running without making progress, or a run longer than ``max_steps`` per thread."""


class UncontrolledBlockingError(ScheduleError):
    """A controlled thread blocked outside the scheduler (the wall-clock watchdog fired)."""


class TraceFormatError(ScheduleError, ValueError):
    """A trace string is corrupt, truncated or from an unknown format version."""


class TraceDivergedError(ScheduleError):
    """A replayed trace no longer matches the program at a given step."""


class InterleavingFailure(AssertionError):
    """A test's exploration found a failing schedule (the message shows it and how to replay)."""


class StepFailure(AssertionError):
    """A stateful machine's implementation did something no candidate model allows."""


class NotLinearizableError(AssertionError):
    """Raised by ``history.assert_linearizable``; ``report`` holds the details (HIST-8)."""

    def __init__(self, report: object, context: str = "") -> None:
        self.report = report
        text = report.explain()  # type: ignore[attr-defined]
        super().__init__(f"{context}\n{text}" if context else text)


class SearchBudgetExceeded(RuntimeError):
    """A linearizability search tried more steps than ``max_steps`` without an answer (HIST-7)."""


class ModelError(Exception):
    """The caller asked a pure model for something it does not describe."""


class UsageError(Exception):
    """Bad command-line input; the message names the problem (the CLI exits with 2)."""


class UncontrolledUseError(ScheduleError, RuntimeError):
    """A synchronisation object made inside a controlled run was used outside it."""


class FailureKind(str, enum.Enum):
    """What made a controlled run fail.

    A ``str`` enum: ``failure.kind == "deadlock"`` holds, and it prints as its value.
    """

    EXCEPTION = "exception"  # a thread (or the main function) raised
    DEADLOCK = "deadlock"  # every live thread blocked, no timed wait can fire
    STEP_LIMIT = "step_limit"  # the step budget ran out (a livelock, or too small a budget)
    INVARIANT = "invariant"  # the invariant returned a false value or raised
    TIMEOUT = "timeout"  # the wall-clock watchdog fired: a thread escaped the scheduler
    RACE = "race"  # two unordered accesses to one location, one a write (races="fail")

    def __str__(self) -> str:
        return self.value
