"""Reference implementations of TensorFlow 1.x's queues.

``FIFOQueue``, ``RandomShuffleQueue``, ``PaddingFIFOQueue`` and ``PriorityQueue``
behave as TensorFlow's queue kernels do, down to the surprising parts: a plain
``close()`` waits behind the enqueues already in line, ``enqueue_many`` is not
atomic, ``dequeue_many`` takes elements as they arrive and gives them back on
close, ties in a ``PriorityQueue`` come out in libstdc++ heap order.  The rules,
with their ids and the deliberate differences from TensorFlow, are in
``specs/queues.md``.

All four classes share one core, ``QueueBase``, a model of TensorFlow's
``queue_base.cc``: every call that cannot finish at once becomes an *attempt* in
one of two waiter lists (enqueues and plain closes; dequeues), each list is
served strictly in arrival order from its head, and after every change a flush
loop runs both lists until neither can move.  Subclasses only say how elements
are stored and picked (four hooks, as in CPython's ``queue.py``).

Everything that locks, waits or reads the clock goes through ``coordkit.sync``,
so that the controlled scheduler can run the same code one thread at a time
with virtual time.  Create a queue inside the run that uses it.
"""

from __future__ import annotations

import math
import operator
import random
import struct
import sys
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from coordkit import sync
from coordkit._waiting import WaitQueue
from coordkit.errors import (
    CancelledError,
    DeadlineExceededError,
    InvalidArgumentError,
    OutOfRangeError,
)

__all__ = [
    "FIFOQueue",
    "PaddingFIFOQueue",
    "PriorityQueue",
    "QueueBase",
    "QueueStatistics",
    "RandomShuffleQueue",
]

_TIMED_OUT = "Timed out waiting for notification"

# The capacity that stands for "unbounded" (TensorFlow uses INT_MAX).
_UNBOUNDED = sys.maxsize

# The deadline of a call with timeout=0: it has always passed, and such a call
# never joins a waiter list (Q-TIMEOUT-3).
_NO_WAIT = -math.inf

# What a step of an attempt achieved (Q-MODEL-2).
_NO_PROGRESS = 0  # nothing changed; the list stops here
_PROGRESS = 1  # something changed, but the attempt still waits; the list stops here
_COMPLETE = 2  # the attempt is finished (successfully or not); try the next one


# ---------------------------------------------------------------------------
# Component types, shapes and values (typed mode)
# ---------------------------------------------------------------------------


class _DType:
    """A component type: its name, its kind of Python value, its pad value."""

    __slots__ = ("high", "kind", "low", "name", "pack", "pad")

    def __init__(
        self,
        name: str,
        kind: str,
        pad: Any,
        low: int = 0,
        high: int = 0,
        pack: str = "",
    ) -> None:
        self.name = name
        self.kind = kind  # "int", "float", "bool" or "string"
        self.pad = pad
        self.low = low
        self.high = high
        self.pack = pack  # struct format that rounds a float to this precision

    def __repr__(self) -> str:
        return self.name

    def cast(self, x: Any) -> Any:
        """Convert one scalar as ``convert_to_tensor(x, dtype)`` would, or raise TypeError
        (ValueError for None), with TensorFlow's wording."""
        if x is None:
            raise ValueError("None values not supported.")
        kind = self.kind
        if kind == "int":
            if isinstance(x, int):  # bool included: TensorFlow takes True as 1
                x = int(x)
                if not self.low <= x <= self.high:
                    raise InvalidArgumentError(f"Value {x} is out of range for {self.name}")
                return x
        elif kind == "float":
            if isinstance(x, (int, float)):
                x = float(x)
                if self.pack:
                    try:
                        (x,) = struct.unpack(self.pack, struct.pack(self.pack, x))
                    except OverflowError:
                        x = math.copysign(math.inf, x)
                return x
        elif kind == "bool":
            if isinstance(x, bool):
                return x
        elif isinstance(x, bytes):
            return x
        elif isinstance(x, str):
            return x.encode()
        elif isinstance(x, (bytearray, memoryview)):
            return bytes(x)
        raise TypeError(
            f"Expected {self.name}, but got {x} of type '{type(x).__name__}'."
        )


def _int_dtype(bits: int, signed: bool) -> _DType:
    name = f"{'' if signed else 'u'}int{bits}"
    if signed:
        return _DType(name, "int", 0, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return _DType(name, "int", 0, 0, 2**bits - 1)


_DTYPES: dict[str, _DType] = {
    dt.name: dt
    for dt in (
        *(_int_dtype(bits, signed) for bits in (8, 16, 32, 64) for signed in (True, False)),
        _DType("float16", "float", 0.0, pack="<e"),
        _DType("float32", "float", 0.0, pack="<f"),
        _DType("float64", "float", 0.0),
        _DType("bool", "bool", False),
        _DType("string", "string", b""),
    )
}
_DTYPE_ALIASES = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "bool_": "bool",
    "str_": "string",
    "bytes_": "string",
    "object_": "string",
}
# Python types that TensorFlow's as_dtype() accepts.
_PYTHON_DTYPES = {float: "float32", bool: "bool", object: "string"}


def _as_dtype(spec: Any) -> _DType:
    if isinstance(spec, _DType):
        return spec
    key = _PYTHON_DTYPES.get(spec) if isinstance(spec, type) else None
    if key is None:
        if isinstance(spec, str):
            key = spec
        elif isinstance(getattr(spec, "name", None), str):  # tf.DType, numpy.dtype
            key = spec.name
        else:  # numpy scalar types such as numpy.int32
            key = getattr(spec, "__name__", None)
    dtype = _DTYPES.get(_DTYPE_ALIASES.get(key, key)) if isinstance(key, str) else None
    if dtype is None:
        raise TypeError(
            f"Unsupported dtype {spec!r}; expected one of {', '.join(_DTYPES)} "
            "(or a TensorFlow or numpy dtype with one of those names)"
        )
    return dtype


def _as_dtype_list(dtypes: Any) -> list[_DType]:
    if not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes]
    return [_as_dtype(dt) for dt in dtypes]


Shape = tuple  # a tuple of dimension sizes; None is an unknown size (padding queues only)


def _as_dim(dim: Any, shape: Any) -> int | None:
    if dim is None:
        return None
    if isinstance(dim, bool) or not hasattr(dim, "__index__"):
        raise TypeError(f"Shape dimensions must be ints or None, got {dim!r} in shape {shape!r}")
    dim = operator.index(dim)
    if dim < 0:
        raise ValueError(f"Shape dimensions must be >= 0, got {dim} in shape {shape!r}")
    return dim


def _as_shape(shape: Any) -> Shape | None:
    """One shape: an int, a sequence of ints and Nones, a TensorShape; None = unknown rank."""
    if shape is None or getattr(shape, "rank", 0) is None:
        return None
    if hasattr(shape, "as_list"):  # tf.TensorShape
        shape = shape.as_list()
    if isinstance(shape, (list, tuple)):
        return tuple(_as_dim(dim, shape) for dim in shape)
    return (_as_dim(shape, shape),)


def _as_shape_list(shapes: Any, partial: bool) -> list[Shape] | None:
    """TensorFlow's ``_as_shape_list``: one shape or a list of them (Q-API-1, PAD-1)."""
    if partial and (
        not isinstance(shapes, Sequence)
        or isinstance(shapes, str)
        or not shapes
        or any(shape is None or isinstance(shape, int) for shape in shapes)
    ):
        raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if hasattr(shapes, "as_list") or hasattr(shapes, "rank"):
        shapes = [shapes]
    if not isinstance(shapes, (list, tuple)):
        raise TypeError(
            f"Shapes must be a shape or a list or tuple of shapes, got {shapes!r} instead."
        )
    if all(shape is None or isinstance(shape, int) for shape in shapes):
        shapes = [shapes]  # a single shape such as (3, 2) or ()
    result = [_as_shape(shape) for shape in shapes]
    if not partial and any(s is None or None in s for s in result):
        raise ValueError(f"All shapes must be fully defined: {result}")
    if any(s is None for s in result):
        raise ValueError(f"All shapes must have a defined rank: {result}")
    return result


def _as_name_list(names: Any, count: int) -> list[str] | None:
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        names = [names]
    if len(names) != count:
        raise ValueError(
            "List of names must have the same length as the list of dtypes, "
            f"received len(names)={len(names)},len(dtypes)={count}"
        )
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"Queue component names must be strings, got {name!r}")
    return list(names)


def _shape_str(dims: Sequence[int | None]) -> str:
    """A shape as TensorFlow prints it in kernel messages: ``[2,?,3]``."""
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _nested(value: Any, cast: Callable[[Any], Any]) -> tuple[Any, tuple[int, ...]]:
    """Convert a scalar or a rectangular nested sequence; return (data, dims).

    Lists and tuples are dimensions; anything else is a scalar.  Below an empty
    dimension nothing can be seen, so the dims returned then end with that 0.
    """
    if isinstance(value, (list, tuple)):
        if not value:
            return [], (0,)
        parts = [_nested(item, cast) for item in value]
        dims = parts[0][1]
        for _, item_dims in parts:
            if item_dims != dims:
                raise InvalidArgumentError(
                    "Can't convert non-rectangular Python sequence to Tensor."
                )
        return [data for data, _ in parts], (len(value), *dims)
    if hasattr(value, "tolist") and hasattr(value, "shape"):  # a numpy array or scalar
        return _convert(value, cast)
    return cast(value), ()


def _convert(value: Any, cast: Callable[[Any], Any]) -> tuple[Any, tuple[int, ...]]:
    """Like ``_nested``, but a numpy array's own shape is exact even when it has a 0."""
    if hasattr(value, "tolist") and hasattr(value, "shape"):
        exact = tuple(int(d) for d in value.shape)
        data, _ = _nested(value.tolist(), cast)
        return data, exact
    return _nested(value, cast)


def _compatible(dims: tuple[int, ...], spec: Sequence[int | None]) -> bool:
    """Whether converted dims fit a shape spec (None in the spec matches any size)."""
    # Nested lists cannot show the dimensions below an empty one.
    if len(dims) != len(spec) and not (dims and dims[-1] == 0 and len(dims) < len(spec)):
        return False
    return all(s is None or s == d for d, s in zip(dims, spec))


def _dims_of(value: Any, rank: int) -> list[int]:
    dims = []
    for _ in range(rank):
        size = len(value)
        dims.append(size)
        value = value[0] if size else ()
    return dims


def _filled(dims: Sequence[int], fill: Any) -> Any:
    if not dims:
        return fill
    return [_filled(dims[1:], fill) for _ in range(dims[0])]


def _padded(value: Any, dims: Sequence[int], fill: Any) -> Any:
    if not dims:
        return value
    rest = dims[1:]
    out = [_padded(item, rest, fill) for item in value]
    out.extend(_filled(rest, fill) for _ in range(dims[0] - len(value)))
    return out


# ---------------------------------------------------------------------------
# Element formats: what enqueue accepts and what dequeue returns
# ---------------------------------------------------------------------------


class _AnyObject:
    """Untyped mode: an element is any Python object, stored as it is (Q-UNTYPED-1)."""

    dtypes = shapes = names = None
    can_batch = True  # TensorFlow needs shapes for dequeue_many; coordkit does not here

    def element(self, vals: Any) -> Any:
        return vals

    def elements(self, vals: Any) -> list[Any]:
        try:
            return list(vals)
        except TypeError:
            raise InvalidArgumentError(
                "enqueue_many() needs an iterable of elements; "
                f"got {vals!r} of type '{type(vals).__name__}'"
            ) from None

    def unpack(self, element: Any) -> Any:
        return element

    def batch(self, taken: list[Any]) -> list[Any]:
        return taken


class _PriorityTuples(_AnyObject):
    """Untyped PriorityQueue: an element is a tuple whose first item is an int priority."""

    def element(self, vals: Any) -> tuple:
        if not isinstance(vals, (list, tuple)) or not vals:
            raise InvalidArgumentError(
                "A PriorityQueue element is a (priority, ...) tuple whose first item is "
                f"an int; got {vals!r}"
            )
        priority = vals[0]
        if not isinstance(priority, int):
            raise TypeError(
                f"Expected int64, but got {priority!r} of type '{type(priority).__name__}'."
            )
        return (int(priority), *vals[1:])

    def elements(self, vals: Any) -> list[tuple]:
        return [self.element(item) for item in super().elements(vals)]


class _Components:
    """Typed mode: an element is a tuple of components with given dtypes (and shapes).

    ``partial`` allows None dimensions and pads batches (PaddingFIFOQueue);
    ``priority`` marks component 0 as a PriorityQueue's scalar priority.
    """

    def __init__(
        self,
        dtypes: list[_DType],
        shapes: list[Shape] | None,
        names: list[str] | None,
        partial: bool = False,
        priority: bool = False,
    ) -> None:
        self._dtypes = dtypes
        self._shapes = shapes
        self._names = names
        self._partial = partial
        self._priority = priority
        self.can_batch = shapes is not None

    @property
    def dtypes(self) -> list[str]:
        return [dt.name for dt in self._dtypes]

    @property
    def shapes(self) -> list[Shape | None]:
        return list(self._shapes) if self._shapes is not None else [None] * len(self._dtypes)

    @property
    def names(self) -> list[str] | None:
        return list(self._names) if self._names is not None else None

    def _split(self, vals: Any) -> list[Any]:
        """The component values of ``vals`` in order (Q-API-4)."""
        names = self._names
        if isinstance(vals, dict):
            if not names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(names, key=str) != sorted(vals, key=str):
                raise ValueError(
                    "Keys in dictionary to enqueue do not match names of Queue.  "
                    f"Dictionary: {sorted(vals, key=str)},Queue: {sorted(names, key=str)}"
                )
            values = [vals[name] for name in names]
        elif names:
            raise ValueError("You must enqueue a dictionary in a Queue with names")
        elif isinstance(vals, (list, tuple)):
            values = list(vals)
        else:
            values = [vals]
        if len(values) != len(self._dtypes):
            raise InvalidArgumentError(
                "Wrong number of components in tuple. "
                f"Expected {len(self._dtypes)}, got {len(values)}"
            )
        return values

    def _mismatch(self, index: int, expected: Sequence[int | None], dims: Sequence[int]) -> None:
        raise InvalidArgumentError(
            f"Shape mismatch in tuple component {index}. "
            f"Expected {_shape_str(expected)}, got {_shape_str(dims)}"
        )

    def _check_priority(self, dims: tuple[int, ...]) -> None:
        if self._priority and self._shapes is None and dims:
            raise InvalidArgumentError(
                "Expected the priority element to be a scalar, but received shape: "
                + _shape_str(dims)
            )

    def element(self, vals: Any) -> tuple:
        converted = [
            _convert(value, dtype.cast) for value, dtype in zip(self._split(vals), self._dtypes)
        ]
        if self._shapes is not None:
            for index, ((_, dims), spec) in enumerate(zip(converted, self._shapes)):
                if not _compatible(dims, spec):
                    self._mismatch(index, spec, dims)
        self._check_priority(converted[0][1])
        return tuple(data for data, _ in converted)

    def elements(self, vals: Any) -> list[tuple]:
        converted = [
            _convert(value, dtype.cast) for value, dtype in zip(self._split(vals), self._dtypes)
        ]
        for index, (_, dims) in enumerate(converted):
            if not dims:
                raise InvalidArgumentError(
                    f"Shape [] must have rank at least 1: enqueue_many needs a batch "
                    f"dimension, but tuple component {index} is a scalar"
                )
        batch_size = converted[0][1][0]
        if self._shapes is not None:
            for index, ((_, dims), spec) in enumerate(zip(converted, self._shapes)):
                expected = (batch_size, *spec)
                if not _compatible(dims, expected):
                    self._mismatch(index, expected, dims)
        else:
            for index, (_, dims) in enumerate(converted[1:], 1):
                if dims[0] != batch_size:
                    raise InvalidArgumentError(
                        "All input tensors must have the same size in the 0th dimension. "
                        f"Component {index} has {dims[0]}, and should have {batch_size}"
                    )
        if batch_size:
            self._check_priority(converted[0][1][1:])
        columns = [data for data, _ in converted]
        return [tuple(column[i] for column in columns) for i in range(batch_size)]

    def _pack(self, components: Sequence[Any]) -> Any:
        if self._names is not None:
            return dict(zip(self._names, components))
        if len(components) == 1:
            return components[0]
        return tuple(components)

    def unpack(self, element: tuple) -> Any:
        return self._pack(element)

    def batch(self, taken: list[tuple]) -> Any:
        columns = [[element[i] for element in taken] for i in range(len(self._dtypes))]
        if self._partial:
            columns = [
                self._pad(column, spec, dtype.pad)
                for column, spec, dtype in zip(columns, self._shapes, self._dtypes)
            ]
        return self._pack(columns)

    @staticmethod
    def _pad(column: list[Any], spec: Shape, fill: Any) -> list[Any]:
        """Pad every value to the largest size in the batch along each None dimension (PAD-3)."""
        if None not in spec:
            return column
        sizes = [_dims_of(value, len(spec)) for value in column]
        dims = [
            size if size is not None else max((s[d] for s in sizes), default=0)
            for d, size in enumerate(spec)
        ]
        return [_padded(value, dims, fill) for value in column]


# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------


def _as_int(argument: str, value: Any) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{argument} must be an int, got {value!r} of type '{type(value).__name__}'")
    return operator.index(value)


def _deadline(timeout: Any) -> float | None:
    """The monotonic deadline of a ``timeout=`` in seconds (Q-TIMEOUT-1, Q-ARG-3)."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(
            f"timeout must be a number of seconds or None, got {timeout!r} "
            f"of type '{type(timeout).__name__}'"
        )
    if not timeout >= 0:  # also rejects NaN
        raise InvalidArgumentError(
            f"timeout must be a non-negative number of seconds or None, got {timeout!r}"
        )
    if timeout == 0:
        return _NO_WAIT
    return sync.monotonic() + timeout


# ---------------------------------------------------------------------------
# The shared core
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueStatistics:
    """A consistent snapshot of a queue, for invariant checkers and tests."""

    size: int
    """Elements stored in the queue (what ``size()`` returns)."""
    closed: bool
    """Whether a close has taken effect (what ``is_closed()`` returns)."""
    pending_enqueues: int
    """``enqueue``/``enqueue_many`` calls waiting in the enqueue list."""
    pending_dequeues: int
    """``dequeue``/``dequeue_many``/``dequeue_up_to`` calls waiting in the dequeue list."""
    pending_closes: int
    """Plain ``close()`` calls waiting in the enqueue list (Q-CLOSE-1)."""
    held: int
    """Elements taken by waiting ``dequeue_many``/``dequeue_up_to`` calls, not in ``size``."""


class _Attempt:
    """One call waiting in a waiter list (Q-MODEL-1)."""

    __slots__ = (
        "done",
        "error",
        "finished",
        "is_close",
        "items",
        "pushed",
        "remaining",
        "result",
        "step",
        "taken",
        "up_to",
    )

    def __init__(self, step: Callable[[_Attempt], int]) -> None:
        self.step = step  # the queue's step function for this kind of call
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        # Notified once the attempt is done; created only when its caller waits.
        self.finished: Any = None
        self.is_close = False
        self.items: list[Any] = []  # enqueue: the elements to push
        self.pushed = 0  # enqueue: how many of them are in the queue already
        self.remaining = 0  # dequeue_many: how many it still needs
        self.up_to = False  # dequeue_up_to rather than dequeue_many
        self.taken: list[Any] = []  # dequeue_many: elements taken so far, in order


class QueueBase:
    """The core shared by every queue class: waiter lists, close, timeouts.

    Subclasses set the class-level names used in error messages and override the
    storage hooks ``_init_storage``, ``_put``, ``_get`` and ``_put_back``.
    """

    # TensorFlow's class names in error messages: enqueue and single dequeue use
    # _class_name, dequeue_many and dequeue_up_to use _batch_class_name (PAD-7).
    _class_name = "FIFOQueue"
    _batch_class_name = "FIFOQueue"
    _no_shapes_message = (
        "FIFOQueue's DequeueMany and DequeueUpTo require the components to have "
        "specified shapes."
    )
    # A PriorityQueue dequeue_many takes nothing until it can take all (PQ-4).
    _whole_batches = False

    def __init__(self, capacity: int, signature: Any, name: str) -> None:
        capacity = _as_int("capacity", capacity)
        if not isinstance(name, str):
            raise TypeError(f"name must be a string, got {name!r}")
        self._name = name
        self._capacity = capacity if capacity >= 0 else _UNBOUNDED
        self._sig = signature
        # Elements are stored exactly as given (no conversion, no unpacking).
        self._raw = type(signature) is _AnyObject

        # The mutex must be held whenever the queue, the flags or the waiter
        # lists are read or changed.  A caller that has to wait gets its own
        # Condition over this mutex (_Attempt.finished), notified once when the
        # flush loop finishes its attempt, so a completion wakes only its owner.
        self._mutex = sync.Lock()
        # Attempts of enqueue, enqueue_many and plain close, in arrival order.
        self._enqueue_waiters: deque[_Attempt] = deque()
        # Attempts of dequeue, dequeue_many and dequeue_up_to, in arrival order.
        self._dequeue_waiters: deque[_Attempt] = deque()
        self._closed = False
        # How many elements a dequeue must leave in the open queue
        # (min_after_dequeue for a RandomShuffleQueue, else 0; 0 once closed).
        self._reserve = 0
        self._init_storage()

    # -- storage hooks: always called with the mutex held ----------------------

    def _init_storage(self) -> None:
        """Create ``self._queue``, a sized container of the stored elements."""
        self._queue: Any = deque()

    def _put(self, element: Any) -> None:
        self._queue.append(element)

    def _get(self) -> Any:
        return self._queue.popleft()

    def _put_back(self, taken: list[Any]) -> None:
        """Return the elements of an unfinished dequeue_many, first taken at the front."""
        self._queue.extendleft(reversed(taken))

    # -- properties --------------------------------------------------------------

    @property
    def name(self) -> str:
        """The name given at construction; error messages quote it."""
        return self._name

    @property
    def dtypes(self) -> list[str] | None:
        """The component dtype names, or None for an untyped queue."""
        return self._sig.dtypes

    @property
    def shapes(self) -> list[Shape | None] | None:
        """The component shapes (None where unknown), or None for an untyped queue."""
        return self._sig.shapes

    @property
    def names(self) -> list[str] | None:
        """The component names, or None."""
        return self._sig.names

    def __repr__(self) -> str:
        with self._mutex:
            size, closed = len(self._queue), self._closed
        return f"<{type(self).__name__} {self._name!r} size={size} closed={closed}>"

    # -- enqueue -----------------------------------------------------------------

    def enqueue(self, vals: Any, timeout: float | None = None) -> None:
        """Add one element, waiting while the queue is full.

        Raises CancelledError if the queue is closed when this call's turn comes,
        or if ``close(cancel_pending_enqueues=True)`` runs while it waits, and
        DeadlineExceededError if ``timeout`` seconds pass first (``timeout=0``:
        never wait).  Calls waiting for room are served in arrival order.
        """
        sync.note("enqueue", self)
        element = vals if self._raw else self._sig.element(vals)
        deadline = None if timeout is None else _deadline(timeout)
        with self._mutex:
            if not self._enqueue_waiters and not self._closed and len(self._queue) < self._capacity:
                self._put(element)
                if self._dequeue_waiters:
                    self._flush()
                return
            self._wait_in_enqueue_list([element], deadline)

    def enqueue_many(self, vals: Any, timeout: float | None = None) -> None:
        """Add a batch of elements one at a time, as room appears.

        Not atomic: consumers may take the first elements before the last are in,
        a batch larger than the capacity works, and the elements already pushed
        stay if the call fails or times out half way.  An empty batch succeeds at
        once, even on a closed queue.  Errors as for ``enqueue``.
        """
        sync.note("enqueue_many", self)
        items = self._sig.elements(vals)
        deadline = None if timeout is None else _deadline(timeout)
        if not items:
            return
        with self._mutex:
            if (
                not self._enqueue_waiters
                and not self._closed
                and len(self._queue) + len(items) <= self._capacity
            ):
                for element in items:
                    self._put(element)
                if self._dequeue_waiters:
                    self._flush()
                return
            self._wait_in_enqueue_list(items, deadline)

    def _wait_in_enqueue_list(self, items: list[Any], deadline: float | None) -> None:
        if deadline == _NO_WAIT and (self._enqueue_waiters or not self._closed):
            raise DeadlineExceededError(_TIMED_OUT)
        attempt = _Attempt(self._enqueue_step)
        attempt.items = items
        self._enqueue_waiters.append(attempt)
        self._flush()
        self._await(attempt, deadline)

    # -- dequeue -----------------------------------------------------------------

    def dequeue(self, timeout: float | None = None) -> Any:
        """Remove and return one element, waiting until there is one.

        Raises OutOfRangeError once the queue is closed and empty, and
        DeadlineExceededError if ``timeout`` seconds pass first (``timeout=0``:
        never wait).  Calls waiting for elements are served in arrival order.
        """
        sync.note("dequeue", self)
        deadline = None if timeout is None else _deadline(timeout)
        with self._mutex:
            if not self._dequeue_waiters and len(self._queue) > self._reserve:
                element = self._get()
                if self._enqueue_waiters:
                    self._flush()
            else:
                if deadline == _NO_WAIT and (self._dequeue_waiters or not self._closed):
                    raise DeadlineExceededError(_TIMED_OUT)
                attempt = _Attempt(self._dequeue_step)
                self._dequeue_waiters.append(attempt)
                self._flush()
                element = self._await(attempt, deadline)
        return element if self._raw else self._sig.unpack(element)

    def dequeue_many(self, n: int, timeout: float | None = None) -> Any:
        """Remove and return exactly ``n`` elements as one batch.

        While waiting, the call takes elements as they arrive (they leave
        ``size()``) and holds up every later dequeue.  If the queue is or becomes
        closed with too few elements, it puts back what it took, at the front in
        order, and raises OutOfRangeError.  A timeout puts them back too.
        """
        sync.note("dequeue_many", self)
        return self._dequeue_batch(n, timeout, up_to=False)

    def dequeue_up_to(self, n: int, timeout: float | None = None) -> Any:
        """Like ``dequeue_many`` while the queue is open; once it is closed,
        return whatever is left (1 to ``n`` elements), or raise OutOfRangeError
        if nothing is left."""
        sync.note("dequeue_up_to", self)
        return self._dequeue_batch(n, timeout, up_to=True)

    def _dequeue_batch(self, n: int, timeout: float | None, up_to: bool) -> Any:
        n = _as_int("n", n)
        if n < 0:
            op = "DequeueUpToOp" if up_to else "DequeueManyOp"
            raise InvalidArgumentError(f"{op} requested {n} < 0 elements")
        if not self._sig.can_batch:
            raise InvalidArgumentError(self._no_shapes_message)
        deadline = None if timeout is None else _deadline(timeout)
        if n == 0:
            return self._sig.batch([])
        with self._mutex:
            if not self._dequeue_waiters and len(self._queue) - self._reserve >= n:
                taken = [self._get() for _ in range(n)]
                if self._enqueue_waiters:
                    self._flush()
            else:
                if deadline == _NO_WAIT and (self._dequeue_waiters or not self._closed):
                    raise DeadlineExceededError(_TIMED_OUT)
                attempt = _Attempt(self._dequeue_many_step)
                attempt.remaining = n
                attempt.up_to = up_to
                self._dequeue_waiters.append(attempt)
                self._flush()
                taken = self._await(attempt, deadline)
        return self._sig.batch(taken)

    # -- close -------------------------------------------------------------------

    def close(self, cancel_pending_enqueues: bool = False, timeout: float | None = None) -> None:
        """Close the queue: later enqueues fail; dequeues drain what is left.

        A plain close waits in line behind the enqueues already waiting, takes
        effect after them (``is_closed()`` is False until then), and raises
        CancelledError if the queue is already closed by then.  If ``timeout``
        seconds pass first it raises DeadlineExceededError, but stays in line and
        still takes effect later.

        ``cancel_pending_enqueues=True`` closes at once and never fails: every
        waiting enqueue (and waiting plain close) fails with CancelledError.
        Waiting dequeues are never cancelled; they get what is left or
        OutOfRangeError.
        """
        sync.note("close", self)
        if not isinstance(cancel_pending_enqueues, bool):  # a str like "no" would be truthy
            raise TypeError(
                f"cancel_pending_enqueues must be a bool, got {cancel_pending_enqueues!r}"
            )
        deadline = None if timeout is None else _deadline(timeout)
        with self._mutex:
            if cancel_pending_enqueues:
                self._set_closed()
                for attempt in self._enqueue_waiters:
                    attempt.error = CancelledError("Enqueue operation was cancelled")
                    self._finish(attempt)
                self._enqueue_waiters.clear()
                self._flush()
                return
            if deadline == _NO_WAIT and self._enqueue_waiters:
                raise DeadlineExceededError(_TIMED_OUT)
            attempt = _Attempt(self._close_step)
            attempt.is_close = True
            self._enqueue_waiters.append(attempt)
            self._flush()
            self._await(attempt, deadline)

    def is_closed(self) -> bool:
        """Whether a close has taken effect (a queued plain close has not)."""
        sync.note("is_closed", self)
        with self._mutex:
            return self._closed

    def size(self) -> int:
        """The number of elements stored; elements held by a waiting dequeue_many
        and elements of a waiting enqueue are not counted."""
        with self._mutex:
            return len(self._queue)

    def statistics(self) -> QueueStatistics:
        """A consistent snapshot of size, closed flag and waiters."""
        with self._mutex:
            closes = sum(1 for attempt in self._enqueue_waiters if attempt.is_close)
            return QueueStatistics(
                size=len(self._queue),
                closed=self._closed,
                pending_enqueues=len(self._enqueue_waiters) - closes,
                pending_dequeues=len(self._dequeue_waiters),
                pending_closes=closes,
                held=sum(len(attempt.taken) for attempt in self._dequeue_waiters),
            )

    # -- the kernel's model: always called with the mutex held -------------------

    def _set_closed(self) -> None:
        self._closed = True
        self._reserve = 0  # min_after_dequeue no longer applies (RSQ-3)

    def _finish(self, attempt: _Attempt) -> None:
        attempt.done = True
        if attempt.finished is not None:
            attempt.finished.notify()

    def _flush(self) -> None:
        """Run both waiter lists until neither makes progress (Q-MODEL-2)."""
        moved = True
        while moved:
            moved = self._run(self._enqueue_waiters)
            moved = self._run(self._dequeue_waiters) or moved

    def _run(self, waiters: deque[_Attempt]) -> bool:
        """Run one list from its head; only the head may act (Q-MODEL-3)."""
        moved = False
        while waiters:
            attempt = waiters[0]
            outcome = attempt.step(attempt)
            if outcome != _COMPLETE:
                return moved or outcome == _PROGRESS
            waiters.popleft()
            self._finish(attempt)
            moved = True
        return moved

    def _await(self, attempt: _Attempt, deadline: float | None) -> Any:
        """Wait until the flush loop finishes ``attempt``; return its result or raise.

        At the deadline (or on any exception, such as KeyboardInterrupt, while
        waiting) the attempt is withdrawn first, so nothing is lost.
        """
        if not attempt.done:
            attempt.finished = WaitQueue(self._mutex)
            if not attempt.finished.wait(
                lambda: attempt.done, deadline, withdraw=lambda: self._withdraw(attempt)
            ):
                raise DeadlineExceededError(_TIMED_OUT)
        if attempt.error is not None:
            raise attempt.error
        return attempt.result

    def _withdraw(self, attempt: _Attempt) -> None:
        """Take back an unfinished attempt whose caller stopped waiting."""
        attempt.finished = None
        if attempt.is_close:
            return  # a close stays in line and still takes effect (DEV-Q-7)
        if attempt.step == self._enqueue_step:
            self._enqueue_waiters.remove(attempt)  # pushed elements stay (Q-ENQ-3)
        else:
            self._dequeue_waiters.remove(attempt)
            if attempt.taken:
                self._put_back(attempt.taken)  # TensorFlow drops them (DEV-Q-1)
                attempt.taken = []
        # The attempts behind it may be able to move now.
        self._flush()

    # -- step functions: what an attempt does when its turn comes (Q-MODEL-4) -----

    def _enqueue_step(self, attempt: _Attempt) -> int:
        if self._closed:
            attempt.error = CancelledError(f"{self._class_name} '{self._name}' is closed.")
            return _COMPLETE
        outcome = _NO_PROGRESS
        items = attempt.items
        while len(self._queue) < self._capacity:
            self._put(items[attempt.pushed])
            attempt.pushed += 1
            if attempt.pushed == len(items):
                return _COMPLETE
            outcome = _PROGRESS
        return outcome

    def _close_step(self, attempt: _Attempt) -> int:
        if self._closed:
            attempt.error = CancelledError(f"Queue '{self._name}' is already closed.")
        else:
            self._set_closed()
        return _COMPLETE

    def _dequeue_step(self, attempt: _Attempt) -> int:
        if len(self._queue) > self._reserve:
            attempt.result = self._get()
            return _COMPLETE
        if self._closed:
            attempt.error = OutOfRangeError(
                f"{self._class_name} '{self._name}' is closed and has insufficient elements "
                f"(requested 1, current size {len(self._queue)})"
            )
            return _COMPLETE
        return _NO_PROGRESS

    def _dequeue_many_step(self, attempt: _Attempt) -> int:
        size = len(self._queue)
        if self._closed and size < attempt.remaining:
            # Not enough will ever come: give back what was taken (Q-DEQ-4).
            if attempt.taken:
                self._put_back(attempt.taken)
                attempt.taken = []
            if attempt.up_to and self._queue:
                # Take everything that is left instead (Q-DEQ-5, PQ-5).
                attempt.remaining = len(self._queue)
            else:
                attempt.error = OutOfRangeError(
                    f"{self._batch_class_name} '{self._name}' is closed and has insufficient "
                    f"elements (requested {attempt.remaining}, current size {size})"
                )
                return _COMPLETE
        available = len(self._queue) - self._reserve
        if available <= 0 or (self._whole_batches and available < attempt.remaining):
            return _NO_PROGRESS
        taken = attempt.taken
        while True:
            taken.append(self._get())
            attempt.remaining -= 1
            if attempt.remaining == 0:
                attempt.result = taken
                attempt.taken = []
                return _COMPLETE
            available -= 1
            if available == 0:
                return _PROGRESS


# ---------------------------------------------------------------------------
# The four queue classes
# ---------------------------------------------------------------------------


def _signature(
    dtypes: Any, shapes: Any, names: Any, partial: bool = False
) -> _AnyObject | _Components:
    if dtypes is None:
        if shapes is not None or names is not None:
            raise ValueError("shapes and names need dtypes; pass dtypes=... as well")
        return _AnyObject()
    dtype_list = _as_dtype_list(dtypes)
    shape_list = _as_shape_list(shapes, partial)
    if shape_list is not None and len(shape_list) != len(dtype_list):
        if partial:
            raise ValueError(
                "Shapes must be provided for all components, but received "
                f"{len(dtype_list)} dtypes and {len(shape_list)} shapes."
            )
        raise ValueError(
            "Queue shapes must have the same length as dtypes, received "
            f"len(shapes)={len(shape_list)}, len(dtypes)={len(dtype_list)}"
        )
    return _Components(dtype_list, shape_list, _as_name_list(names, len(dtype_list)), partial)


class FIFOQueue(QueueBase):
    """A queue that hands out elements in the order they were enqueued.

    ``capacity < 0`` means unbounded; ``capacity == 0`` is allowed but every
    enqueue then waits.  Without ``dtypes`` an element is any Python object;
    with them, TensorFlow's component model applies (see ``specs/queues.md``).
    """

    def __init__(
        self,
        capacity: int,
        dtypes: Any = None,
        shapes: Any = None,
        names: Any = None,
        name: str = "fifo_queue",
    ) -> None:
        super().__init__(capacity, _signature(dtypes, shapes, names), name)


class PaddingFIFOQueue(QueueBase):
    """A FIFOQueue whose shapes may have None dimensions.

    ``dequeue_many`` and ``dequeue_up_to`` pad every component to the largest
    size in the batch along its None dimensions, with 0, 0.0, False or b"";
    a single ``dequeue`` returns the element as it was enqueued.
    """

    _batch_class_name = "PaddingFIFOQueue"

    def __init__(
        self,
        capacity: int,
        dtypes: Any,
        shapes: Any,
        names: Any = None,
        name: str = "padding_fifo_queue",
    ) -> None:
        if dtypes is None:
            raise TypeError("PaddingFIFOQueue needs dtypes")
        super().__init__(capacity, _signature(dtypes, shapes, names, partial=True), name)


class RandomShuffleQueue(QueueBase):
    """A queue that hands out a uniformly random stored element.

    While the queue is open a dequeue leaves at least ``min_after_dequeue``
    elements behind; once it is closed everything can be dequeued.  The same
    ``seed`` gives the same order; ``seed=None`` gives a fresh order each time.
    """

    _class_name = _batch_class_name = "RandomShuffleQueue"
    _no_shapes_message = (
        "RandomShuffleQueue's DequeueMany and DequeueUpTo require the components to "
        "have specified shapes."
    )

    def __init__(
        self,
        capacity: int,
        min_after_dequeue: int,
        dtypes: Any = None,
        shapes: Any = None,
        names: Any = None,
        seed: int | None = None,
        name: str = "random_shuffle_queue",
    ) -> None:
        min_after_dequeue = _as_int("min_after_dequeue", min_after_dequeue)
        if seed is not None:
            seed = _as_int("seed", seed)
        super().__init__(capacity, _signature(dtypes, shapes, names), name)
        if min_after_dequeue < 0:
            raise InvalidArgumentError(f"min_after_dequeue {min_after_dequeue} must be >= 0")
        if min_after_dequeue >= self._capacity:
            raise InvalidArgumentError(
                f"min_after_dequeue {min_after_dequeue} must be < capacity {self._capacity}"
            )
        self._reserve = min_after_dequeue
        self._random = random.Random(seed)

    def _init_storage(self) -> None:
        self._queue = []

    def _get(self) -> Any:
        # Swap-remove a random element (RSQ-4).
        queue = self._queue
        index = self._random.randrange(len(queue))
        last = queue.pop()
        if index == len(queue):
            return last
        element = queue[index]
        queue[index] = last
        return element

    def _put_back(self, taken: list[Any]) -> None:
        self._queue.extend(reversed(taken))  # appended, as the kernel does


class PriorityQueue(QueueBase):
    """A queue that hands out the element with the smallest priority first.

    Every element starts with an int priority: untyped, an element is a tuple
    ``(priority, ...)``; typed, ``types`` lists the other components and the
    dtypes become ``["int64", *types]``.  Ties come out in the order of
    libstdc++'s ``std::priority_queue``, as in TensorFlow (not FIFO).  A
    ``dequeue_many(n)`` takes nothing until ``n`` elements are stored.
    """

    _class_name = _batch_class_name = "PriorityQueue"
    _no_shapes_message = (
        "PriorityQueue's DequeueMany requires the components to have specified shapes."
    )
    _whole_batches = True

    def __init__(
        self,
        capacity: int,
        types: Any = None,
        shapes: Any = None,
        names: Any = None,
        name: str = "priority_queue",
    ) -> None:
        if types is None:
            if shapes is not None or names is not None:
                raise ValueError("shapes and names need types; pass types=... as well")
            signature: Any = _PriorityTuples()
        else:
            dtype_list = [_DTYPES["int64"], *_as_dtype_list(types)]
            shape_list = _as_shape_list(shapes, partial=False)
            if shape_list is not None:
                if len(shape_list) != len(dtype_list) - 1:
                    # TF counts the priority component on both sides.
                    raise ValueError(
                        "Queue shapes must have the same length as dtypes, received "
                        f"len(shapes)={len(shape_list) + 1}, len(dtypes)={len(dtype_list)}"
                    )
                shape_list = [(), *shape_list]
            signature = _Components(
                dtype_list, shape_list, _as_name_list(names, len(dtype_list)), priority=True
            )
        super().__init__(capacity, signature, name)

    def _init_storage(self) -> None:
        self._queue = []  # a heap ordered by element[0], in libstdc++'s layout

    # libstdc++'s push_heap and pop_heap, with std::priority_queue's comparison
    # "a goes after b" being a[0] > b[0].  heapq would order ties differently.

    def _sift_up(self, hole: int, top: int, element: Any) -> None:
        heap = self._queue
        priority = element[0]
        parent = (hole - 1) // 2
        while hole > top and heap[parent][0] > priority:
            heap[hole] = heap[parent]
            hole = parent
            parent = (hole - 1) // 2
        heap[hole] = element

    def _put(self, element: Any) -> None:
        self._queue.append(element)
        self._sift_up(len(self._queue) - 1, 0, element)

    def _get(self) -> Any:
        heap = self._queue
        length = len(heap) - 1  # the heap shrinks to this
        if length == 0:
            return heap.pop()
        top, element = heap[0], heap[length]
        heap[length] = top
        # __adjust_heap: move the hole at 0 down to a leaf, then sift element up.
        hole = child = 0
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if heap[child][0] > heap[child - 1][0]:
                child -= 1
            heap[hole] = heap[child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            heap[hole] = heap[child - 1]
            hole = child - 1
        self._sift_up(hole, 0, element)
        return heap.pop()

    def _put_back(self, taken: list[Any]) -> None:
        for element in taken:
            self._put(element)
