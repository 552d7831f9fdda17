"""Queue-based input pipelines and a monitored run (TensorFlow's ``tf.train`` input helpers).

The rules are numbered in ``specs/pipeline.md`` (``PIPE-n`` after the team's
TensorFlow digest, ``MON-n`` for the monitored run); the places where coordkit
departs from TensorFlow are listed there as ``DEV-PIPE-n``.

**What stands for a tensor.** TensorFlow builds a graph and evaluates tensors
with ``sess.run``. Here a *tensor* is any zero-argument callable, and calling it
is running it: ``q.dequeue`` (a bound method) is a tensor, and so is
``lambda: next_record()``. Each helper builds its queue and a ``QueueRunner``
exactly as TensorFlow did, adds the runner to the current registry
(``coordkit.queue_runner_scope``), and returns a tensor for the next stage::

    with coordkit.queue_runner_scope():               # a fresh "graph"
        q = input_producer(range(100), num_epochs=1, shuffle=False)
        get_batch = shuffle_batch(q.dequeue, batch_size=10, capacity=20,
                                  min_after_dequeue=18, num_threads=4, seed=7)
        with MonitoredRun() as run:                    # starts the runners
            while not run.should_stop():
                print(get_batch())                     # a list of 10 elements

The rest of TensorFlow's input helpers are here too: ``string_input_producer``
and ``range_input_producer`` (queues, as ``input_producer``),
``slice_input_producer`` (one tensor per sliced sequence, sharing one dequeue
per round), ``batch_join`` and ``shuffle_batch_join`` (one enqueue thread per
list of tensors), and ``enqueue_many=True`` to batch batches (PIPE-9..15).

The end of the input travels down the chain as ``OutOfRangeError``: the epoch
limit runs out, the producer's runner closes its queue, the batch runner's
dequeue from it fails, that runner closes the batch queue, and the consumer's
batch dequeue fails; ``MonitoredRun`` turns that into a clean stop (PIPE-3, MON-4).

Every lock, thread and clock read comes from ``coordkit.sync``; build a
pipeline inside the controlled run that uses it, as with the queues.
"""

from __future__ import annotations

import contextlib
import logging
import math
import numbers
import operator
import random
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any

from coordkit import sync
from coordkit.coordinator import Coordinator
from coordkit.errors import InvalidArgumentError, OutOfRangeError
from coordkit.queue_runner import (
    QUEUE_RUNNERS,
    QueueRunner,
    add_queue_runner,
    get_queue_runner_registry,
)
from coordkit.queues import FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue

__all__ = [
    "MonitoredRun",
    "Op",
    "Tensor",
    "batch",
    "batch_join",
    "input_producer",
    "limit_epochs",
    "range_input_producer",
    "shuffle_batch",
    "shuffle_batch_join",
    "slice_input_producer",
    "string_input_producer",
]

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


def _int_arg(what: str, value: Any, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{what} must be an int; got {value!r} of type '{type(value).__name__}'")
    value = operator.index(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{what} must be >= {minimum}; got {value}")
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


# -- PIPE-1 -------------------------------------------------------------------------------


def limit_epochs(tensor: Tensor, num_epochs: int | None = None, name: str = "limit_epochs") -> Tensor:
    """Let ``tensor`` run ``num_epochs`` times, then raise OutOfRangeError (PIPE-1).

    With ``num_epochs=None`` the tensor itself is returned. Otherwise the
    result is an ``Op`` whose first ``num_epochs`` calls each call ``tensor``
    and return its value; every later call raises
    ``OutOfRangeError("Reached limit of <num_epochs>")`` without calling it.
    The count is taken before ``tensor`` runs, under a lock (TensorFlow's
    ``count_up_to``), so a call that fails inside ``tensor`` still uses up an
    epoch, and concurrent callers never get more than ``num_epochs`` runs.

    Raises:
        TypeError: ``tensor`` is not callable, ``num_epochs`` is not an int.
        ValueError: ``num_epochs <= 0`` (``num_epochs must be > 0 not 0.``).
    """
    _tensor_arg("limit_epochs(tensor)", tensor)
    if num_epochs is None:
        return tensor
    if isinstance(num_epochs, bool) or not hasattr(num_epochs, "__index__"):
        raise TypeError(f"limit_epochs(num_epochs) must be an int or None; got {num_epochs!r}")
    limit = operator.index(num_epochs)
    if limit <= 0:
        raise ValueError(f"num_epochs must be > 0 not {limit}.")
    _name_arg("limit_epochs(name)", name)
    lock = sync.Lock()  # guards count
    count = 0

    def counted() -> Any:
        nonlocal count
        with lock:
            if count >= limit:
                raise OutOfRangeError(f"Reached limit of {limit}")
            count += 1
        return tensor()

    return Op(counted, name)


# -- PIPE-2, PIPE-9, PIPE-10, PIPE-11: the producers ------------------------------------


def _producer_args(kind: str, shuffle: Any, seed: Any, capacity: Any, name: Any, num_epochs: Any) -> int:
    """Check a producer's common arguments (before anything is built); return the capacity."""
    if not isinstance(shuffle, bool):
        raise TypeError(f"{kind}(shuffle) must be a bool; got {shuffle!r}")
    if seed is not None:
        _int_arg(f"{kind}(seed)", seed)
    capacity = _int_arg(f"{kind}(capacity)", capacity, minimum=1)
    _name_arg(f"{kind}(name)", name)
    if num_epochs is not None:
        limit_epochs(lambda: None, num_epochs)  # validates num_epochs; builds nothing
    return capacity


def _enqueue_many_name(queue_name: str) -> str:
    """TensorFlow's name for a producer's enqueue op: ``<queue>/<last part of queue>_EnqueueMany``."""
    return f"{queue_name}/{queue_name.rsplit('/', 1)[-1]}_EnqueueMany"


def _produce(
    epoch: Callable[[], list[Any]],
    num_epochs: int | None,
    shuffle: bool,
    seed: int | None,
    capacity: int,
    queue_name: str,
) -> FIFOQueue:
    """The body every producer shares (PIPE-2): a queue fed one epoch per run of one op.

    ``epoch`` returns a fresh list of the epoch's elements (checked by the caller);
    it is shuffled here by a ``random.Random(seed)`` made now, and the epochs are
    limited by ``limit_epochs``. One ``QueueRunner`` is added to the registry.
    """
    rng = random.Random(seed)
    rng_lock = sync.Lock()  # guards rng

    def one_epoch() -> list[Any]:
        values = epoch()
        if shuffle:
            with rng_lock:
                rng.shuffle(values)
        return values

    limited = limit_epochs(one_epoch, num_epochs)
    queue = FIFOQueue(capacity, name=queue_name)
    enqueue = Op(lambda: queue.enqueue_many(limited()), _enqueue_many_name(queue_name), queue)
    add_queue_runner(QueueRunner(queue, [enqueue]))
    return queue


def input_producer(
    input_tensor: Iterable[Any] | Callable[[], Iterable[Any]],
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    name: str = "input_producer",
) -> FIFOQueue:
    """Feed the elements of ``input_tensor`` into a new queue, epoch after epoch (PIPE-2).

    ``input_tensor`` is the list of elements (any non-string iterable, copied
    once), or a tensor returning such a list, called once per epoch. Each
    epoch the elements are shuffled (``shuffle=True``, with a
    ``random.Random(seed)`` made here, so one seed gives one sequence of
    epochs) and pushed with one ``enqueue_many`` into an untyped
    ``FIFOQueue(capacity)`` named ``name``; an epoch larger than the capacity
    streams in as room appears. The epochs are limited by ``limit_epochs``:
    when they run out the runner gets OutOfRangeError and closes the queue, so
    consumers drain it and then get OutOfRangeError.

    One ``QueueRunner`` with one enqueue op named ``<name>/<name>_EnqueueMany``
    is added to the current registry. Returns the queue; ``q.dequeue`` is the
    tensor of the next stage.

    Raises:
        ValueError: an empty input; ``num_epochs <= 0``; ``capacity < 1``.
        TypeError: ``input_tensor`` is a string or not iterable or callable;
            a bad ``seed``, ``shuffle`` or ``name``.
        InvalidArgumentError: (at run time, from the runner) a callable input
            returned no elements.
    """
    if callable(input_tensor):
        source: Callable[[], Iterable[Any]] = input_tensor
    else:
        if isinstance(input_tensor, (str, bytes)) or not isinstance(input_tensor, Iterable):
            raise TypeError(
                "input_producer(input_tensor) must be a list of elements or a tensor returning one; "
                f"got {input_tensor!r}"
            )
        elements = tuple(input_tensor)
        if not elements:
            raise ValueError(
                f"input_producer requires a non-empty input_tensor; got {input_tensor!r}"
            )
        source = lambda: elements  # noqa: E731
    capacity = _producer_args("input_producer", shuffle, seed, capacity, name, num_epochs)

    def epoch() -> list[Any]:
        values = list(source())
        if not values:
            raise InvalidArgumentError("input_producer requires a non-empty input_tensor")
        return values

    return _produce(epoch, num_epochs, shuffle, seed, capacity, name)


#: TensorFlow 2.21's words for an empty ``string_input_producer`` input (PIPE-9).
_NOT_NULL = "string_input_producer requires a non-null input tensor"


def _strings(values: Any) -> list[Any]:
    """``values`` as a list of strings (str or bytes), or a TypeError naming the first bad one."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(
            "string_input_producer(string_tensor) must be a list of strings or a tensor returning "
            f"one; got {values!r}"
        )
    values = list(values)
    for value in values:
        if not isinstance(value, (str, bytes)):
            raise TypeError(
                "string_input_producer(string_tensor): "
                f"Expected string, but got {value!r} of type '{type(value).__name__}'."
            )
    return values


def string_input_producer(
    string_tensor: Iterable[str | bytes] | Callable[[], Iterable[str | bytes]],
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    name: str = "input_producer",
) -> FIFOQueue:
    """Feed strings (typically filenames) into a new queue, epoch after epoch (PIPE-9).

    ``input_producer`` for strings: ``string_tensor`` is a list of ``str`` or
    ``bytes`` (copied once), or a tensor returning one, called once per epoch.
    The strings are delivered as given (TensorFlow delivers bytes). The queue
    is named ``name`` and its runner's op ``<name>/<name>_EnqueueMany``, as in
    TensorFlow; shuffling, ``seed``, ``capacity`` and ``num_epochs`` work as
    for ``input_producer``.

    Raises:
        ValueError: an empty list (``string_input_producer requires a non-null
            input tensor``); ``num_epochs <= 0``; ``capacity < 1``.
        TypeError: a string, a non-iterable, or an element that is not a
            string (``Expected string, but got 1 of type 'int'.``); bad
            ``seed``, ``shuffle`` or ``name``.
        InvalidArgumentError: (at run time, from the runner) a callable input
            returned no strings: ``assertion failed: [string_input_producer
            requires a non-null input tensor]``, as in TensorFlow.
    """
    if callable(string_tensor):
        source: Callable[[], Any] = string_tensor
    else:
        strings = tuple(_strings(string_tensor))
        if not strings:
            raise ValueError(f"{_NOT_NULL}; got string_tensor={string_tensor!r}")
        source = lambda: strings  # noqa: E731
    kind = "string_input_producer"
    capacity = _producer_args(kind, shuffle, seed, capacity, name, num_epochs)

    def epoch() -> list[Any]:
        values = _strings(source())
        if not values:
            raise InvalidArgumentError(f"assertion failed: [{_NOT_NULL}]")
        return values

    return _produce(epoch, num_epochs, shuffle, seed, capacity, name)


def range_input_producer(
    limit: int,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    name: str = "input_producer",
) -> FIFOQueue:
    """Feed the integers ``0 .. limit - 1`` into a new queue, epoch after epoch (PIPE-10).

    ``input_producer(range(limit), ...)``: the queue is named ``name`` and its
    runner's op ``<name>/<name>_EnqueueMany``, as in TensorFlow; shuffling
    (each epoch a permutation), ``seed``, ``capacity`` and ``num_epochs`` work
    as for ``input_producer``.

    Raises:
        ValueError: ``limit < 1`` (an empty range; DEV-PIPE-2), ``num_epochs
            <= 0``, ``capacity < 1``.
        TypeError: a non-int ``limit`` or ``seed``; bad ``shuffle`` or ``name``.
    """
    kind = "range_input_producer"
    limit = _int_arg(f"{kind}(limit)", limit, minimum=1)
    capacity = _producer_args(kind, shuffle, seed, capacity, name, num_epochs)
    return _produce(lambda: list(range(limit)), num_epochs, shuffle, seed, capacity, name)


class _SharedDequeue:
    """One dequeue shared by the outputs of ``slice_input_producer`` (PIPE-11).

    In TensorFlow the outputs are tensors of one graph that share one dequeue:
    a ``sess.run`` that fetches several of them dequeues one index. Here each
    output is called on its own, so each thread keeps a *round*: the index it
    dequeued last and the outputs that have used it. An output called again in
    the same round starts a new one (dequeues the next index). Only the calling
    thread reads or writes its own entry, so no lock is needed.
    """

    def __init__(self, dequeue: Callable[[], Any]) -> None:
        self._dequeue = dequeue
        self._rounds: dict[Any, tuple[Any, set[int]]] = {}

    def index(self, output: int) -> Any:
        me = sync.current_thread()
        current = self._rounds.get(me)
        if current is None or output in current[1]:
            current = (self._dequeue(), set())
            self._rounds[me] = current
        current[1].add(output)
        return current[0]


def _slice_columns(tensor_list: Any) -> list[tuple[Any, ...]]:
    """The columns of ``slice_input_producer``, checked: a non-empty list of equal-length sequences."""
    what = "slice_input_producer(tensor_list)"
    if not isinstance(tensor_list, (list, tuple)):
        raise TypeError(f"{what} must be a list of sequences (one per output); got {tensor_list!r}")
    if not tensor_list:
        raise ValueError(
            f"Expected at least one tensor in slice_input_producer(); got tensor_list={tensor_list!r}"
        )
    columns = []
    for i, column in enumerate(tensor_list):
        if isinstance(column, (str, bytes)) or not isinstance(column, Iterable):
            raise TypeError(f"{what}[{i}] must be a sequence of values to slice; got {column!r}")
        columns.append(tuple(column))
    size = len(columns[0])
    if size == 0:
        raise ValueError(f"{what}[0] must not be empty (there is nothing to slice); got {tensor_list[0]!r}")
    for i, column in enumerate(columns[1:], 1):
        if len(column) != size:
            raise ValueError(
                f"{what}: every tensor must have the same size in the first dimension as "
                f"tensor_list[0], {size}; tensor_list[{i}] has {len(column)}"
            )
    return columns


def slice_input_producer(
    tensor_list: list[Any] | tuple[Any, ...],
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: int = 32,
    name: str = "input_producer",
) -> list[Op]:
    """Produce one slice (row) of each sequence of ``tensor_list`` at a time (PIPE-11).

    ``tensor_list`` is a list of sequences of equal length N (copied once).
    A ``range_input_producer(N)`` queue named ``<name>/input_producer`` feeds
    the row indices (shuffled each epoch with ``shuffle``, limited by
    ``num_epochs``; its op is ``<name>/input_producer/input_producer_EnqueueMany``,
    as in TensorFlow). Returns one tensor per sequence, named
    ``<name>/GatherV2``, ``<name>/GatherV2_1``, ...: calling output ``i`` gives
    ``tensor_list[i][index]``. The outputs share one dequeue per round, per
    thread: calling each of them once (in any order, as ``batch`` does) gives
    the values of one row; an output called a second time starts the next row.
    When the epochs run out, the next call that dequeues raises
    OutOfRangeError.

    Raises:
        ValueError: an empty ``tensor_list`` (``Expected at least one tensor in
            slice_input_producer()``); empty sequences, or sequences of
            different lengths (DEV-PIPE-8); bad ``num_epochs`` or ``capacity``.
        TypeError: ``tensor_list`` not a list, an entry that is a string or not
            iterable; bad ``seed``, ``shuffle`` or ``name``.
    """
    columns = _slice_columns(tensor_list)
    capacity = _producer_args("slice_input_producer", shuffle, seed, capacity, name, num_epochs)
    size = len(columns[0])
    queue = _produce(lambda: list(range(size)), num_epochs, shuffle, seed, capacity, f"{name}/input_producer")
    shared = _SharedDequeue(queue.dequeue)

    def output(i: int, column: tuple[Any, ...]) -> Op:
        suffix = "" if i == 0 else f"_{i}"
        return Op(lambda: column[shared.index(i)], f"{name}/GatherV2{suffix}", queue)

    return [output(i, column) for i, column in enumerate(columns)]


# -- PIPE-3, PIPE-4, PIPE-12 .. PIPE-15: batching ------------------------------------------


class _Tensors:
    """The tensors of one example (or, with ``enqueue_many``, one batch of examples).

    ``kind`` is ``"single"`` for one tensor, ``"list"`` for a list or tuple of
    them, ``"dict"`` for a dict of them; ``width`` is how many components an
    element has. An ``Op`` with a ``structure`` (what the batch helpers return)
    stands for the list or dict of tensors it returns, as in TensorFlow, where
    ``batch`` returns a list of tensors: it is called once per element and its
    value split into components (PIPE-13).

    Output follows TensorFlow (PIPE-13): a dict of columns for a dict, the
    column itself for one component (one tensor, or a list of one), a list of
    columns otherwise.
    """

    def __init__(self, tensors: Any, what: str) -> None:
        self.keys: list[str] | None = None
        self.shared: Op | None = None
        self.fns: list[Tensor] = []
        structure = tensors.structure if isinstance(tensors, Op) else None
        if callable(tensors) and structure is None:
            self.kind, self.fns = "single", [tensors]
        elif callable(tensors):
            self.shared = tensors
            if isinstance(structure, tuple):
                self.kind, self.keys = "dict", list(structure)
            else:
                self.kind = "list"
        elif isinstance(tensors, Mapping):
            self.kind, self.keys = "dict", list(tensors)
            for key in self.keys:
                if not isinstance(key, str):
                    raise TypeError(f"{what}: the keys of a dict of tensors must be strings; got {key!r}")
            self.fns = [_tensor_arg(f"{what}[{key!r}]", tensors[key]) for key in self.keys]
        elif isinstance(tensors, (list, tuple)):
            self.kind = "list"
            self.fns = [_tensor_arg(f"{what}[{i}]", t) for i, t in enumerate(tensors)]
        else:
            raise TypeError(
                f"{what} must be a tensor (a zero-argument callable), or a list or dict of them; "
                f"got {tensors!r}"
            )
        self.width = len(self.keys) if self.keys is not None else (
            structure if self.shared is not None else len(self.fns)
        )
        if not self.width:
            raise ValueError(f"{what} must hold at least one tensor; got {tensors!r}")

    def describe(self) -> str:
        if self.keys is not None:
            return f"a dict with the keys {sorted(self.keys)}"
        return "one tensor" if self.kind == "single" else f"a list of {self.width} tensors"

    @property
    def structure(self) -> int | tuple[str, ...] | None:
        """What an Op returning batches of this structure stands for (``Op.structure``)."""
        if self.keys is not None:
            return tuple(self.keys)
        return self.width if self.width > 1 else None

    def spec(self, value: Any, what: str) -> list[Any]:
        """``shapes=`` or ``dtypes=`` in this structure, as one entry per component."""
        if self.kind == "single":
            return [value]
        if self.keys is not None:
            if not isinstance(value, Mapping) or sorted(value) != sorted(self.keys):
                raise ValueError(f"{what} must be a dict with the keys {sorted(self.keys)}; got {value!r}")
            return [value[key] for key in self.keys]
        if not isinstance(value, (list, tuple)) or len(value) != self.width:
            raise ValueError(
                f"{what} must be a list of {self.width} entries, one per tensor; got {value!r}"
            )
        return list(value)

    def read(self) -> list[Any]:
        """Run the tensors once: the value of each component, in order."""
        if self.shared is None:
            return [fn() for fn in self.fns]
        value = self.shared()
        if self.keys is not None:
            return [value[key] for key in self.keys]
        return list(value)

    def pack(self, values: list[Any]) -> Any:
        """One element for an untyped queue: the value, a tuple, or a dict."""
        if self.keys is not None:
            return dict(zip(self.keys, values))
        return values[0] if self.width == 1 else tuple(values)

    def typed(self, values: list[Any]) -> Any:
        """The components for a typed queue's enqueue (or enqueue_many): a tuple or a dict."""
        return dict(zip(self.keys, values)) if self.keys is not None else tuple(values)

    def rows(self, columns: list[Any], what: str) -> list[Any]:
        """Split a batch (one column per component) into untyped elements (PIPE-12)."""
        sized = []
        for index, column in enumerate(columns):
            if isinstance(column, (str, bytes)) or not isinstance(column, Iterable):
                raise InvalidArgumentError(
                    f"{what}(enqueue_many=True): component {index} must be a batch (a sequence of "
                    f"examples); got {column!r}"
                )
            sized.append(list(column))
        size = len(sized[0])
        for index, column in enumerate(sized[1:], 1):
            if len(column) != size:
                raise InvalidArgumentError(
                    "All input tensors must have the same size in the 0th dimension. "
                    f"Component {index} has {len(column)}, and should have {size}"
                )
        return [self.pack(list(values)) for values in zip(*sized)]

    def output(self, taken: Any, typed: bool) -> Any:
        """A dequeued batch in the structure of the tensors (PIPE-13)."""
        if typed:  # the queue packs a dict, one column, or a tuple of columns
            return taken if self.keys is not None or self.width == 1 else list(taken)
        if self.keys is not None:
            return {key: [row[key] for row in taken] for key in self.keys}
        if self.width == 1:
            return taken
        return [[row[i] for row in taken] for i in range(self.width)]


def _join_structures(kind: str, tensors_list: Any) -> list[_Tensors]:
    """The entries of a join's ``tensors_list``, all of one structure (PIPE-14)."""
    what = f"{kind}(tensors_list)"
    if not isinstance(tensors_list, (list, tuple)):
        raise TypeError(
            f"{what} must be a list of tensor lists or dicts, one per enqueue thread; got {tensors_list!r}"
        )
    if not tensors_list:
        raise ValueError(f"Expected at least one set of tensors in {what}; got {tensors_list!r}")
    structures = [_Tensors(t, f"{what}[{i}]") for i, t in enumerate(tensors_list)]
    first = structures[0]
    for i, other in enumerate(structures[1:], 1):
        same_keys = first.keys is None or sorted(first.keys) == sorted(other.keys or [])
        if (other.kind, other.width) != (first.kind, first.width) or not same_keys:
            raise ValueError(
                f"{what}: every entry must have the structure of entry 0, {first.describe()}; "
                f"entry {i} is {other.describe()}"
            )
    return structures


def _enqueue_op(queue: QueueBase, tensors: _Tensors, typed: bool, enqueue_many: bool, name: str,
                kind: str) -> Op:
    """The op a batch runner's thread runs: read the tensors once, enqueue the element(s)."""
    if enqueue_many and typed:
        def run() -> None:
            queue.enqueue_many(tensors.typed(tensors.read()))
    elif enqueue_many:
        def run() -> None:
            queue.enqueue_many(tensors.rows(tensors.read(), kind))
    elif typed:
        def run() -> None:
            queue.enqueue(tensors.typed(tensors.read()))
    else:
        def run() -> None:
            queue.enqueue(tensors.pack(tensors.read()))
    return Op(run, name, queue)


def _check_flags(kind: str, **flags: Any) -> None:
    for flag, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"{kind}({flag}) must be a bool; got {value!r}")


def _build_batch(
    kind: str,
    structures: list[_Tensors],
    copies: int,
    batch_size: int,
    capacity: int,
    enqueue_many: bool,
    allow_smaller_final_batch: bool,
    shapes: Any,
    dtypes: Any,
    name: str,
    make_queue: Callable[..., QueueBase],
) -> Op:
    """The shared body of the four batch helpers (PIPE-3, PIPE-14).

    One enqueue op per structure, the whole list repeated ``copies`` times, in
    one ``QueueRunner``; TensorFlow names the ops ``<queue>_enqueue``,
    ``<queue>_enqueue_1``, ... (``EnqueueMany`` with ``enqueue_many``).
    """
    batch_size = _int_arg(f"{kind}(batch_size)", batch_size, minimum=1)
    capacity = _int_arg(f"{kind}(capacity)", capacity, minimum=1)
    _check_flags(kind, enqueue_many=enqueue_many, allow_smaller_final_batch=allow_smaller_final_batch)
    _name_arg(f"{kind}(name)", name)
    if (shapes is None) != (dtypes is None):
        raise ValueError(
            f"{kind}: shapes and dtypes go together (a typed queue needs both, an untyped one "
            f"neither); got shapes={shapes!r}, dtypes={dtypes!r}"
        )
    first = structures[0]
    typed = shapes is not None
    if typed:
        queue = make_queue(
            capacity,
            dtypes=first.spec(dtypes, f"{kind}(dtypes)"),
            shapes=first.spec(shapes, f"{kind}(shapes)"),
            names=first.keys,
        )
    else:
        queue = make_queue(capacity)
    base = f"{queue.name}_{'EnqueueMany' if enqueue_many else 'enqueue'}"
    ops = [
        _enqueue_op(queue, tensors, typed, enqueue_many, base if i == 0 else f"{base}_{i}", kind)
        for i, tensors in enumerate(structures)
    ]
    # batch: the same op once per thread, hence equal thread names, as in TensorFlow.
    add_queue_runner(QueueRunner(queue, ops * copies))

    take = queue.dequeue_up_to if allow_smaller_final_batch else queue.dequeue_many
    op_kind = "DequeueUpTo" if allow_smaller_final_batch else "DequeueMany"
    return Op(
        lambda: first.output(take(batch_size), typed), f"{queue.name}_{op_kind}", queue, first.structure
    )


def _fifo_queue_maker(kind: str, dynamic_pad: Any, shapes: Any, name: str) -> Callable[..., QueueBase]:
    """The queue factory of ``batch`` and ``batch_join``: FIFO, or padding with ``dynamic_pad``."""
    _check_flags(kind, dynamic_pad=dynamic_pad)
    if dynamic_pad and shapes is None:
        raise ValueError(
            f"{kind}(dynamic_pad=True) needs shapes (and dtypes): element shapes cannot be inferred "
            f"from callables; got shapes={shapes!r}"
        )
    _name_arg(f"{kind}(name)", name)
    if dynamic_pad:
        def make_queue(capacity: int, **typed: Any) -> QueueBase:
            return PaddingFIFOQueue(capacity, name=f"{name}/padding_fifo_queue", **typed)
    else:
        def make_queue(capacity: int, **typed: Any) -> QueueBase:
            return FIFOQueue(capacity, name=f"{name}/fifo_queue", **typed)
    return make_queue


def batch(
    tensors: Any,
    batch_size: int,
    num_threads: int = 1,
    capacity: int = 32,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shapes: Any = None,
    dtypes: Any = None,
    name: str = "batch",
    *,
    enqueue_many: bool = False,
) -> Op:
    """Batch the elements that ``tensors`` produce, read by ``num_threads`` threads (PIPE-3).

    ``tensors`` is a tensor (a zero-argument callable), a list of tensors, or a
    dict of them; each enqueue calls every tensor once and enqueues the values
    as one element. The elements go into a ``FIFOQueue(capacity)`` named
    ``<name>/fifo_queue`` (a ``PaddingFIFOQueue`` named
    ``<name>/padding_fifo_queue`` with ``dynamic_pad``), fed by one
    ``QueueRunner`` whose enqueue op ``<name>/fifo_queue_enqueue`` is repeated
    ``num_threads`` times; the runner is added to the current registry.

    With ``enqueue_many=True`` each tensor returns a batch of examples (a
    sequence, the same length for every tensor) and each run enqueues them all
    (``enqueue_many``; the op is ``<name>/fifo_queue_EnqueueMany``); the output
    of a batch helper can be batched again that way (PIPE-12).

    Returns an ``Op`` that dequeues one batch of ``batch_size`` elements, in
    the structure of ``tensors`` (PIPE-13): the list of values for one tensor
    or a list of one tensor, a list of lists (one per tensor) for a longer
    list, a dict of lists for a dict. When the input runs out, a final batch
    smaller than ``batch_size`` is delivered only with
    ``allow_smaller_final_batch=True`` (``dequeue_up_to``); without it the
    leftovers stay in the queue and the call raises OutOfRangeError
    (``dequeue_many``).

    ``shapes`` and ``dtypes`` (in the structure of ``tensors``, one per
    example) make the queue typed: values are converted and their shapes
    checked, as in TensorFlow. ``dynamic_pad=True`` needs them, with None for
    the dimensions that vary; each batch is padded to its largest element with
    0, 0.0, False or b"".

    Raises:
        ValueError: ``batch_size``, ``num_threads`` or ``capacity`` below 1;
            ``dynamic_pad`` without ``shapes``; ``shapes`` without ``dtypes``
            or the other way round; no tensors.
        TypeError: a tensor that is not callable; a non-int size; a non-bool flag.
    """
    make_queue = _fifo_queue_maker("batch", dynamic_pad, shapes, name)
    structure = _Tensors(tensors, "batch(tensors)")
    num_threads = _int_arg("batch(num_threads)", num_threads, minimum=1)
    return _build_batch(
        "batch", [structure], num_threads, batch_size, capacity, enqueue_many,
        allow_smaller_final_batch, shapes, dtypes, name, make_queue,
    )


def batch_join(
    tensors_list: list[Any] | tuple[Any, ...],
    batch_size: int,
    capacity: int = 32,
    enqueue_many: bool = False,
    shapes: Any = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    *,
    dtypes: Any = None,
    name: str = "batch_join",
) -> Op:
    """Batch the elements of several tensor lists, one enqueue thread per list (PIPE-14).

    ``tensors_list`` holds one entry per thread, each what ``batch`` takes as
    ``tensors`` (a list or dict of tensors, or one tensor), all of the same
    structure. Thread ``i`` enqueues the elements ``tensors_list[i]`` produces
    into one ``FIFOQueue(capacity)`` named ``<name>/fifo_queue``
    (``<name>/padding_fifo_queue`` with ``dynamic_pad``): one ``QueueRunner``
    with one op per entry, named ``<name>/fifo_queue_enqueue``,
    ``<name>/fifo_queue_enqueue_1``, ... When an entry's input runs out its
    thread ends; the queue is closed only when every entry has run out
    (RUNNER-4), so no element of a slower entry is lost.

    Returns an ``Op`` that dequeues one batch, in the structure of
    ``tensors_list[0]``; ``enqueue_many``, ``shapes``, ``dtypes``,
    ``dynamic_pad`` and ``allow_smaller_final_batch`` work as for ``batch``.
    The order of elements across entries depends on the thread timing.

    Raises:
        ValueError: an empty ``tensors_list``; entries of different structures;
            or as for ``batch``.
        TypeError: ``tensors_list`` is not a list; or as for ``batch``.
    """
    make_queue = _fifo_queue_maker("batch_join", dynamic_pad, shapes, name)
    structures = _join_structures("batch_join", tensors_list)
    return _build_batch(
        "batch_join", structures, 1, batch_size, capacity, enqueue_many,
        allow_smaller_final_batch, shapes, dtypes, name, make_queue,
    )


def _shuffle_queue_maker(
    kind: str, capacity: Any, min_after_dequeue: Any, seed: Any, name: Any
) -> Callable[..., QueueBase]:
    """Check ``capacity > min_after_dequeue`` first, as TensorFlow does (PIPE-4); the queue factory."""
    capacity = _int_arg(f"{kind}(capacity)", capacity)
    min_after_dequeue = _int_arg(f"{kind}(min_after_dequeue)", min_after_dequeue)
    if capacity <= min_after_dequeue:
        raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue {min_after_dequeue}.")
    if min_after_dequeue < 0:
        raise ValueError(f"{kind}(min_after_dequeue) must be >= 0; got {min_after_dequeue}")
    if seed is not None:
        _int_arg(f"{kind}(seed)", seed)
    _name_arg(f"{kind}(name)", name)

    def make_queue(capacity: int, **typed: Any) -> QueueBase:
        return RandomShuffleQueue(
            capacity, min_after_dequeue, seed=seed, name=f"{name}/random_shuffle_queue", **typed
        )

    return make_queue


def shuffle_batch(
    tensors: Any,
    batch_size: int,
    capacity: int,
    min_after_dequeue: int,
    num_threads: int = 1,
    seed: int | None = None,
    allow_smaller_final_batch: bool = False,
    shapes: Any = None,
    dtypes: Any = None,
    name: str = "shuffle_batch",
    *,
    enqueue_many: bool = False,
) -> Op:
    """Like ``batch``, through a ``RandomShuffleQueue`` (PIPE-4).

    ``capacity > min_after_dequeue`` is checked first, before anything else is
    looked at (``ValueError: capacity 10 must be bigger than min_after_dequeue
    10.``). The queue is ``RandomShuffleQueue(capacity, min_after_dequeue,
    seed=seed)`` named ``<name>/random_shuffle_queue``: while it is open a
    batch leaves at least ``min_after_dequeue`` elements behind to mix with;
    once the input has run out it drains completely. The same ``seed`` and the
    same order of enqueues give the same batches; ``seed=None`` differs from
    run to run. ``enqueue_many`` and the structure of the result are as for
    ``batch`` (PIPE-12, PIPE-13).

    Raises:
        ValueError: ``capacity <= min_after_dequeue``, or as for ``batch``.
        TypeError: non-int sizes or seed, or as for ``batch``.
    """
    make_queue = _shuffle_queue_maker("shuffle_batch", capacity, min_after_dequeue, seed, name)
    structure = _Tensors(tensors, "shuffle_batch(tensors)")
    num_threads = _int_arg("shuffle_batch(num_threads)", num_threads, minimum=1)
    return _build_batch(
        "shuffle_batch", [structure], num_threads, batch_size, capacity, enqueue_many,
        allow_smaller_final_batch, shapes, dtypes, name, make_queue,
    )


def shuffle_batch_join(
    tensors_list: list[Any] | tuple[Any, ...],
    batch_size: int,
    capacity: int,
    min_after_dequeue: int,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: Any = None,
    allow_smaller_final_batch: bool = False,
    *,
    dtypes: Any = None,
    name: str = "shuffle_batch_join",
) -> Op:
    """``batch_join`` through a ``RandomShuffleQueue``: one thread per list, shuffled batches (PIPE-15).

    The queue is ``RandomShuffleQueue(capacity, min_after_dequeue, seed=seed)``
    named ``<name>/random_shuffle_queue``, fed by one ``QueueRunner`` with one
    op per entry of ``tensors_list`` (``<name>/random_shuffle_queue_enqueue``,
    ``..._enqueue_1``, ...); it is closed when every entry has run out, and
    then drains completely. ``capacity > min_after_dequeue`` is checked first,
    with ``shuffle_batch``'s message (TensorFlow does not check it here:
    DEV-PIPE-9). There is no ``dynamic_pad``, as in TensorFlow.

    Raises:
        ValueError: ``capacity <= min_after_dequeue``, or as for ``batch_join``.
        TypeError: non-int sizes or seed, or as for ``batch_join``.
    """
    make_queue = _shuffle_queue_maker("shuffle_batch_join", capacity, min_after_dequeue, seed, name)
    structures = _join_structures("shuffle_batch_join", tensors_list)
    return _build_batch(
        "shuffle_batch_join", structures, 1, batch_size, capacity, enqueue_many,
        allow_smaller_final_batch, shapes, dtypes, name, make_queue,
    )


# -- PIPE-5, PIPE-6: the monitored run ------------------------------------------------------

#: Exceptions of the body that mean "the input ran out": a clean stop (MON-4).
END_OF_INPUT: tuple[type[BaseException], ...] = (OutOfRangeError, StopIteration)


class MonitoredRun:
    """Start the registered queue runners under a Coordinator; stop and join on exit.

    The coordkit counterpart of ``MonitoredSession`` and
    ``Supervisor.managed_session`` (MON-1..8)::

        with MonitoredRun(grace_period_secs=120) as run:
            while not run.should_stop():
                train_step(get_batch())

    * Entering makes a fresh ``Coordinator()`` (OutOfRangeError counts as a
      clean stop) and, if ``collection`` of the current runner registry is not
      empty, starts its runners: daemon threads, registered with the
      coordinator (MON-2).
    * ``should_stop()`` asks the coordinator (MON-3).
    * An ``OutOfRangeError`` or ``StopIteration`` leaving the body is the end
      of the input: a clean stop, not re-raised (MON-4).
    * Leaving requests a stop and joins the threads with ``grace_period_secs``
      (MON-5), then raises the first real exception: one a thread reported to
      the coordinator before the body failed, else the body's own, even after
      an earlier clean stop; threads still alive after the grace period raise
      RuntimeError unless ``ignore_live_threads`` (MON-6, MON-7).
    * A KeyboardInterrupt or SystemExit leaving the body requests the stop and
      goes on at once, without waiting for the threads (MON-8).

    Args:
        grace_period_secs: how long the threads get to finish after the stop
            request; None waits for ever. Default 120, as in TensorFlow.
        ignore_live_threads: only log the threads that outlive the grace
            period instead of raising RuntimeError (MonitoredSession's choice).
        collection: the registry collection whose runners are started.

    Raises:
        TypeError / ValueError: a bad argument, naming it and its value.
    """

    def __init__(
        self,
        grace_period_secs: float | None = 120,
        ignore_live_threads: bool = False,
        collection: str = QUEUE_RUNNERS,
    ) -> None:
        if grace_period_secs is not None:
            if isinstance(grace_period_secs, bool) or not isinstance(grace_period_secs, numbers.Real):
                raise TypeError(
                    f"MonitoredRun(grace_period_secs) must be a number of seconds or None; "
                    f"got {grace_period_secs!r}"
                )
            if math.isnan(grace_period_secs) or grace_period_secs < 0:
                raise ValueError(
                    f"MonitoredRun(grace_period_secs) must be >= 0 or None; got {grace_period_secs!r}"
                )
        if not isinstance(ignore_live_threads, bool):
            raise TypeError(f"MonitoredRun(ignore_live_threads) must be a bool; got {ignore_live_threads!r}")
        if not isinstance(collection, str):
            raise TypeError(f"MonitoredRun(collection) must be a string; got {collection!r}")
        self._grace_period_secs = grace_period_secs
        self._ignore_live_threads = ignore_live_threads
        self._collection = collection
        self._coord: Coordinator | None = None
        self._threads: list[Any] = []

    @property
    def coord(self) -> Coordinator:
        """The run's coordinator; register your own threads with it to have them joined."""
        if self._coord is None:
            raise RuntimeError("MonitoredRun.coord is available only once the run is entered")
        return self._coord

    @property
    def threads(self) -> list[Any]:
        """The queue-runner threads this run started (a copy)."""
        return list(self._threads)

    def should_stop(self) -> bool:
        """True once any thread (or the body) has requested a stop (MON-3)."""
        return self.coord.should_stop()

    def request_stop(self, ex: BaseException | None = None) -> None:
        """Ask every thread to stop, optionally recording why (``Coordinator.request_stop``)."""
        self.coord.request_stop(ex)

    def __enter__(self) -> MonitoredRun:
        if self._coord is not None:
            raise RuntimeError("a MonitoredRun can be entered only once; make a new one")
        self._coord = coord = Coordinator()
        registry = get_queue_runner_registry()
        if registry.get(self._collection):
            try:
                self._threads = registry.start(coord=coord, collection=self._collection)
            except BaseException:
                # A runner refused (its earlier threads still run): stop the ones
                # already started, which would otherwise wait for a stop for ever.
                coord.request_stop()
                with contextlib.suppress(Exception):
                    coord.join(stop_grace_period_secs=self._grace_period_secs, ignore_live_threads=True)
                raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        coord = self.coord
        if exc is not None and not isinstance(exc, Exception):
            # KeyboardInterrupt, SystemExit: stop at once, do not wait (MON-8).
            coord.request_stop()
            return False
        body_failed = exc is not None and not isinstance(exc, END_OF_INPUT)
        # The first stop wins (COORD-4): a body error is recorded only if no
        # stop came before it; one a thread reported earlier is raised instead.
        coord.request_stop(exc if body_failed else None)
        try:
            coord.join(
                stop_grace_period_secs=self._grace_period_secs,
                ignore_live_threads=self._ignore_live_threads,
            )
        except Exception as joined:
            if body_failed and (joined is exc or _is_straggler(joined)):
                if joined is not exc:
                    logger.warning("%s", joined)
                return False  # the body's own exception goes on, with its traceback
            raise
        # A clean join: the body's end of input is swallowed; a body error that
        # came after an earlier clean stop is re-raised all the same (DEV-PIPE-4).
        return not body_failed

def _is_straggler(error: BaseException) -> bool:
    return isinstance(error, RuntimeError) and str(error).startswith(
        "Coordinator stopped with threads still running"
    )
