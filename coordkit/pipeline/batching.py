"""Batching: ``batch``, ``shuffle_batch`` and their ``_join`` forms (PIPE-3, PIPE-4,
PIPE-12 .. PIPE-15)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from coordkit.errors import InvalidArgumentError
from coordkit.pipeline._ops import MAX_THREADS, Op, Tensor, _int_arg, _name_arg, _tensor_arg
from coordkit.queue_runner import (
    QueueRunner,
    add_queue_runner,
)
from coordkit.queues import FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue

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
    num_threads = _int_arg("batch(num_threads)", num_threads, minimum=1, maximum=MAX_THREADS)
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
    num_threads = _int_arg("shuffle_batch(num_threads)", num_threads, minimum=1, maximum=MAX_THREADS)
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
