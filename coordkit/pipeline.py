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
    "input_producer",
    "limit_epochs",
    "shuffle_batch",
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
    """

    __slots__ = ("_fn", "name", "queue")

    def __init__(self, fn: Callable[[], Any], name: str, queue: QueueBase | None = None) -> None:
        self._fn = fn
        self.name = name
        self.queue = queue

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


# -- PIPE-2 -------------------------------------------------------------------------------


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
    if not isinstance(shuffle, bool):
        raise TypeError(f"input_producer(shuffle) must be a bool; got {shuffle!r}")
    if seed is not None:
        _int_arg("input_producer(seed)", seed)
    capacity = _int_arg("input_producer(capacity)", capacity, minimum=1)
    _name_arg("input_producer(name)", name)
    if num_epochs is not None:
        limit_epochs(source, num_epochs)  # validates num_epochs before anything is built
    rng = random.Random(seed)
    rng_lock = sync.Lock()  # guards rng

    def epoch() -> list[Any]:
        values = list(source())
        if not values:
            raise InvalidArgumentError("input_producer requires a non-empty input_tensor")
        if shuffle:
            with rng_lock:
                rng.shuffle(values)
        return values

    limited = limit_epochs(epoch, num_epochs)
    queue = FIFOQueue(capacity, name=name)
    enqueue = Op(lambda: queue.enqueue_many(limited()), f"{name}/{name}_EnqueueMany", queue)
    add_queue_runner(QueueRunner(queue, [enqueue]))
    return queue


# -- PIPE-3, PIPE-4 -----------------------------------------------------------------------


class _Tensors:
    """The tensors of one ``batch`` call: a single tensor, a list of them, or a dict.

    An element is read by calling each tensor once, in order. A batch comes
    back in the same structure, one column per tensor: a list of values for a
    single tensor, a list of such lists for a list, a dict of them for a dict.
    """

    def __init__(self, tensors: Any, what: str) -> None:
        self.keys: list[str] | None = None
        self.single = callable(tensors)
        if self.single:
            fns = [tensors]
        elif isinstance(tensors, Mapping):
            self.keys = list(tensors)
            for key in self.keys:
                if not isinstance(key, str):
                    raise TypeError(f"{what}: the keys of a dict of tensors must be strings; got {key!r}")
            fns = [_tensor_arg(f"{what}[{key!r}]", tensors[key]) for key in self.keys]
        elif isinstance(tensors, (list, tuple)):
            fns = [_tensor_arg(f"{what}[{i}]", t) for i, t in enumerate(tensors)]
        else:
            raise TypeError(
                f"{what} must be a tensor (a zero-argument callable), or a list or dict of them; "
                f"got {tensors!r}"
            )
        if not fns:
            raise ValueError(f"{what} must hold at least one tensor; got {tensors!r}")
        self.fns = fns

    def spec(self, value: Any, what: str) -> list[Any]:
        """``shapes=`` or ``dtypes=`` in this structure, as one entry per tensor."""
        if self.single:
            return [value]
        if self.keys is not None:
            if not isinstance(value, Mapping) or sorted(value) != sorted(self.keys):
                raise ValueError(f"{what} must be a dict with the keys {sorted(self.keys)}; got {value!r}")
            return [value[key] for key in self.keys]
        if not isinstance(value, (list, tuple)) or len(value) != len(self.fns):
            raise ValueError(
                f"{what} must be a list of {len(self.fns)} entries, one per tensor; got {value!r}"
            )
        return list(value)

    def read(self) -> Any:
        """One element: the value (single), a tuple (list) or a dict of the tensors' values."""
        values = [fn() for fn in self.fns]
        if self.single:
            return values[0]
        if self.keys is not None:
            return dict(zip(self.keys, values))
        return tuple(values)

    def columns(self, rows: list[Any]) -> Any:
        """A batch of untyped elements, in the structure of the tensors."""
        if self.single:
            return rows
        if self.keys is not None:
            return {key: [row[key] for row in rows] for key in self.keys}
        return [[row[i] for row in rows] for i in range(len(self.fns))]

    def typed_columns(self, batch: Any) -> Any:
        """A batch from a typed queue (one column, a tuple of columns, or a dict of them)."""
        if self.single or self.keys is not None:
            return batch
        return [batch] if len(self.fns) == 1 else list(batch)


def _build_batch(
    kind: str,
    tensors: Any,
    batch_size: int,
    num_threads: int,
    capacity: int,
    allow_smaller_final_batch: bool,
    shapes: Any,
    dtypes: Any,
    name: str,
    make_queue: Callable[..., QueueBase],
) -> Op:
    """The shared body of ``batch`` and ``shuffle_batch`` (PIPE-3)."""
    structure = _Tensors(tensors, f"{kind}(tensors)")
    batch_size = _int_arg(f"{kind}(batch_size)", batch_size, minimum=1)
    num_threads = _int_arg(f"{kind}(num_threads)", num_threads, minimum=1)
    capacity = _int_arg(f"{kind}(capacity)", capacity, minimum=1)
    if not isinstance(allow_smaller_final_batch, bool):
        raise TypeError(
            f"{kind}(allow_smaller_final_batch) must be a bool; got {allow_smaller_final_batch!r}"
        )
    _name_arg(f"{kind}(name)", name)
    if (shapes is None) != (dtypes is None):
        raise ValueError(
            f"{kind}: shapes and dtypes go together (a typed queue needs both, an untyped one "
            f"neither); got shapes={shapes!r}, dtypes={dtypes!r}"
        )
    typed = shapes is not None
    if typed:
        queue = make_queue(
            capacity,
            dtypes=structure.spec(dtypes, f"{kind}(dtypes)"),
            shapes=structure.spec(shapes, f"{kind}(shapes)"),
            names=structure.keys,
        )
    else:
        queue = make_queue(capacity)

    if typed and structure.keys is None:
        # A typed queue takes a tuple of components; a lone list would be split.
        def element() -> Any:
            value = structure.read()
            return (value,) if structure.single else value
    else:
        element = structure.read

    enqueue = Op(lambda: queue.enqueue(element()), f"{queue.name}_enqueue", queue)
    # The same op once per thread, hence equal thread names, as in TensorFlow.
    add_queue_runner(QueueRunner(queue, [enqueue] * num_threads))

    take = queue.dequeue_up_to if allow_smaller_final_batch else queue.dequeue_many
    unpack = structure.typed_columns if typed else structure.columns
    op_kind = "DequeueUpTo" if allow_smaller_final_batch else "DequeueMany"
    return Op(lambda: unpack(take(batch_size)), f"{queue.name}_{op_kind}", queue)


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
) -> Op:
    """Batch the elements that ``tensors`` produce, read by ``num_threads`` threads (PIPE-3).

    ``tensors`` is a tensor (a zero-argument callable), a list of tensors, or a
    dict of them; each enqueue calls every tensor once and enqueues the values
    as one element. The elements go into a ``FIFOQueue(capacity)`` named
    ``<name>/fifo_queue`` (a ``PaddingFIFOQueue`` named
    ``<name>/padding_fifo_queue`` with ``dynamic_pad``), fed by one
    ``QueueRunner`` whose enqueue op ``<name>/fifo_queue_enqueue`` is repeated
    ``num_threads`` times; the runner is added to the current registry.

    Returns an ``Op`` that dequeues one batch of ``batch_size`` elements, in
    the structure of ``tensors``: a list of values for one tensor, a list of
    lists (one per tensor) for a list, a dict of lists for a dict. When the
    input runs out, a final batch smaller than ``batch_size`` is delivered
    only with ``allow_smaller_final_batch=True`` (``dequeue_up_to``); without
    it the leftovers stay in the queue and the call raises OutOfRangeError
    (``dequeue_many``).

    ``shapes`` and ``dtypes`` (in the structure of ``tensors``) make the queue
    typed: values are converted and their shapes checked, as in TensorFlow.
    ``dynamic_pad=True`` needs them, with None for the dimensions that vary;
    each batch is padded to its largest element with 0, 0.0, False or b"".

    Raises:
        ValueError: ``batch_size``, ``num_threads`` or ``capacity`` below 1;
            ``dynamic_pad`` without ``shapes``; ``shapes`` without ``dtypes``
            or the other way round; no tensors.
        TypeError: a tensor that is not callable; a non-int size.
    """
    if not isinstance(dynamic_pad, bool):
        raise TypeError(f"batch(dynamic_pad) must be a bool; got {dynamic_pad!r}")
    if dynamic_pad and shapes is None:
        raise ValueError(
            "batch(dynamic_pad=True) needs shapes (and dtypes): element shapes cannot be inferred "
            f"from callables; got shapes={shapes!r}"
        )
    _name_arg("batch(name)", name)
    if dynamic_pad:
        def make_queue(capacity: int, **typed: Any) -> QueueBase:
            return PaddingFIFOQueue(capacity, name=f"{name}/padding_fifo_queue", **typed)
    else:
        def make_queue(capacity: int, **typed: Any) -> QueueBase:
            return FIFOQueue(capacity, name=f"{name}/fifo_queue", **typed)
    return _build_batch(
        "batch", tensors, batch_size, num_threads, capacity, allow_smaller_final_batch,
        shapes, dtypes, name, make_queue,
    )


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
) -> Op:
    """Like ``batch``, through a ``RandomShuffleQueue`` (PIPE-4).

    ``capacity > min_after_dequeue`` is checked first, before anything else is
    looked at (``ValueError: capacity 10 must be bigger than min_after_dequeue
    10.``). The queue is ``RandomShuffleQueue(capacity, min_after_dequeue,
    seed=seed)`` named ``<name>/random_shuffle_queue``: while it is open a
    batch leaves at least ``min_after_dequeue`` elements behind to mix with;
    once the input has run out it drains completely. The same ``seed`` and the
    same order of enqueues give the same batches; ``seed=None`` differs from
    run to run.

    Raises:
        ValueError: ``capacity <= min_after_dequeue``, or as for ``batch``.
        TypeError: non-int sizes or seed, or as for ``batch``.
    """
    capacity = _int_arg("shuffle_batch(capacity)", capacity)
    min_after_dequeue = _int_arg("shuffle_batch(min_after_dequeue)", min_after_dequeue)
    if capacity <= min_after_dequeue:
        raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue {min_after_dequeue}.")
    if min_after_dequeue < 0:
        raise ValueError(f"shuffle_batch(min_after_dequeue) must be >= 0; got {min_after_dequeue}")
    if seed is not None:
        _int_arg("shuffle_batch(seed)", seed)
    _name_arg("shuffle_batch(name)", name)

    def make_queue(capacity: int, **typed: Any) -> QueueBase:
        return RandomShuffleQueue(
            capacity, min_after_dequeue, seed=seed, name=f"{name}/random_shuffle_queue", **typed
        )

    return _build_batch(
        "shuffle_batch", tensors, batch_size, num_threads, capacity, allow_smaller_final_batch,
        shapes, dtypes, name, make_queue,
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
