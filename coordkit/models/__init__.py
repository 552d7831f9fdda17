"""Pure models of the queue, coordinator and runner rules: the one second description.

A model is a sequential, deterministic description of a spec: plain data, no
threads, no locks, no clock of its own (``now`` is a number the caller moves
with ``advance``).  Each public method is one operation, identified by an
``op`` key chosen by the caller.  After the method returns, ``results`` holds
the outcome of every operation that has completed so far: the new one if it
finished at once, and every pending operation the change released.  An
operation that is still waiting has no entry.  That is the whole contract
(MODEL-1, MODEL-2): *given this state and this operation, what does every
pending operation do now*.

Outcomes are ``Ok(value)`` or ``Err(type, ...)`` (``coordkit.models.outcome``).
A model never raises for a legal sequence of operations; ``ModelError`` means
the caller asked for something the model does not cover.

The rules are coordkit's, deviations included (``specs/queues.md``,
``specs/coordinator.md``, ``specs/queue_runner.md``); each method names the
rule ids it follows.  Two checkers use these models and no other description
of the rules: the state machines of ``coordkit.stateful`` (``specs/stateful.md``)
and the linearizability checker ``coordkit.history`` (MODEL-8, HIST-5).

This package imports nothing but ``coordkit.errors``: neither Hypothesis, nor
the implementations, nor the checkers.

* ``outcome``: ``Ok``, ``Err``, ``Outcome``, ``ModelError``;
* ``storage``: which element a queue hands out (FIFO, shuffled, by priority);
* ``queues``: ``QueueModel``, the waiting rules every queue class shares;
* ``coordinator``: ``CoordinatorModel`` and ``StopReason``;
* ``runner``: ``RunnerModel``, a QueueRunner feeding a ``QueueModel``.
"""

from __future__ import annotations

from coordkit.models.coordinator import CoordinatorModel, StopReason
from coordkit.models.outcome import Err, ModelError, Ok, Outcome
from coordkit.models.queues import QueueModel
from coordkit.models.runner import RunnerModel

__all__ = [
    "CoordinatorModel",
    "Err",
    "ModelError",
    "Ok",
    "Outcome",
    "QueueModel",
    "RunnerModel",
    "StopReason",
]
