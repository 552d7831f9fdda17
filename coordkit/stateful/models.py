"""The pure models the state machines compare implementations with (``specs/stateful.md``).

They live in ``coordkit.models``, which imports neither Hypothesis nor the
implementations; the linearizability checker ``coordkit.history`` uses the
same models (``QueueHistoryModel``, MODEL-8).  This module re-exports them, so
``from coordkit.stateful.models import QueueModel`` keeps working.
"""

from __future__ import annotations

from coordkit.history.queues import QueueHistoryModel
from coordkit.models import (
    CoordinatorModel,
    Err,
    ModelError,
    Ok,
    Outcome,
    QueueModel,
    RunnerModel,
    StopReason,
)

__all__ = [
    "CoordinatorModel",
    "Err",
    "ModelError",
    "Ok",
    "Outcome",
    "QueueHistoryModel",
    "QueueModel",
    "RunnerModel",
    "StopReason",
]
