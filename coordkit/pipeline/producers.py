"""The producers: ``limit_epochs`` and the queues of file names, ranges and slices
(PIPE-1, PIPE-2, PIPE-9 .. PIPE-11)."""

from __future__ import annotations

import operator
import random
from collections.abc import Callable, Iterable
from typing import Any

from coordkit import sync
from coordkit.errors import InvalidArgumentError, OutOfRangeError
from coordkit.pipeline._ops import Op, Tensor, _int_arg, _name_arg, _tensor_arg
from coordkit.queue_runner import (
    QueueRunner,
    add_queue_runner,
)
from coordkit.queues import FIFOQueue

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
    _name_arg("limit_epochs(name)", name)
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
