"""What stands for a tensor and an op, and the checks every helper makes of its arguments."""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable
from typing import Any

from coordkit.queues import QueueBase

logger = logging.getLogger("coordkit")

#: A tensor: a zero-argument callable; calling it runs it (``sess.run(tensor)``).
Tensor = Callable[[], Any]


class Op:
    """A named tensor: a zero-argument callable that the pipeline helpers return.

    ``name`` is what ``QueueRunner`` puts in its thread names (RUNNER-11), so
    the threads are named as TensorFlow's (``QueueRunnerThread-batch/fifo_queue-
    batch/fifo_queue_enqueue``). ``queue`` is the queue the op reads from or
    feeds, or None.

    ``structure`` says what the op stands for when its value has several
    components, as a TensorFlow op returning a list or dict of tensors: None
    for one value, the number of components for a list, the keys for a dict.
    The batch helpers set it, so that their output can be batched again as a
    list or dict of tensors (``enqueue_many=True``, PIPE-12, PIPE-13).
    """

    __slots__ = ("_fn", "name", "queue", "structure")

    def __init__(
        self,
        fn: Callable[[], Any],
        name: str,
        queue: QueueBase | None = None,
        structure: int | tuple[str, ...] | None = None,
    ) -> None:
        self._fn = fn
        self.name = name
        self.queue = queue
        self.structure = structure

    def __call__(self) -> Any:
        return self._fn()

    def __repr__(self) -> str:
        return f"<Op {self.name!r}>"


# -- argument checks: each names the argument and the value ---------------------------


# The most threads one helper may ask a QueueRunner for (each is an OS thread).
MAX_THREADS = 10_000


def _int_arg(what: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{what} must be an int; got {value!r} of type '{type(value).__name__}'")
    value = operator.index(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{what} must be >= {minimum}; got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{what} must be <= {maximum}; got {value}")
    return value


def _tensor_arg(what: str, value: Any) -> Tensor:
    if not callable(value):
        raise TypeError(
            f"{what} must be a tensor, i.e. a zero-argument callable such as q.dequeue; got {value!r}"
        )
    return value  # type: ignore[no-any-return]


def _name_arg(what: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{what} must be a non-empty string; got {value!r}")
    return value
