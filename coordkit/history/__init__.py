"""Operation histories from real threads, and a linearizability checker.

Record what each thread did, with the real clock, then ask whether some
sequential order of those operations explains every outcome::

    from coordkit import history

    h = history.History()
    q = history.RecordingQueue(FIFOQueue(10), h)   # or record by hand:
    with h.record("enqueue", 1) as op:             # thread = the current thread's name
        queue.enqueue(1)
        op.ok()
    ...
    history.assert_linearizable(h, history.FIFOModel())

The rules, with their ids, are in ``specs/history.md``:

* an operation is one call: who made it (``thread``), what (``kind``, ``arg``),
  when it was called and when it returned (``time.perf_counter_ns`` of the real
  clock), and what came out (an ``Outcome``); an operation that never returned is
  *pending* (HIST-1..4);
* a *model* is a pure sequential description: ``init()`` gives the first state
  and ``apply(state, op)`` gives ``(new_state, expected_outcome)``; a model may
  add ``successors(state, op)`` for operations whose effect the caller cannot
  see (HIST-5);
* a history is *linearizable* when some total order of its completed operations
  (and of any of its pending ones), consistent with real time, makes every
  outcome the model's (HIST-6);
* ``check`` decides it with a Wing-Gong search in Lowe's just-in-time form,
  memoised on (set of linearized operations, model state) (HIST-7), and when the
  answer is no, reports the first operation that cannot be linearized and the
  smallest window of overlapping operations that cannot be ordered (HIST-8).

The checker itself knows nothing about queues: any object with ``init`` and
``apply`` is a model.  For queues, ``QueueHistoryModel`` and ``FIFOModel`` offer
the pure queue model of ``coordkit.models``, the one the state machines of
``coordkit.stateful`` use, so the queue rules are written once (HIST-9,
HIST-10, MODEL-8).

The package's modules: ``records`` (operations and their recording),
``search`` (the model interface and the checker), ``queues`` (recording a
queue, and the queue model as a history model).
"""

from __future__ import annotations

from coordkit.history.fifo import FIFOModel
from coordkit.history.queues import QueueHistoryModel, RecordingQueue
from coordkit.history.records import BLOCKED, History, Operation, OperationRecorder, Outcome
from coordkit.history.search import (
    Model,
    NotLinearizableError,
    Report,
    SearchBudgetExceeded,
    SequentialModel,
    assert_linearizable,
    check,
)

__all__ = [
    "BLOCKED",
    "FIFOModel",
    "History",
    "Model",
    "NotLinearizableError",
    "Operation",
    "OperationRecorder",
    "Outcome",
    "QueueHistoryModel",
    "RecordingQueue",
    "Report",
    "SearchBudgetExceeded",
    "SequentialModel",
    "check",
    "assert_linearizable",
]
