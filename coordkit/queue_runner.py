"""QueueRunner: threads that keep a queue fed, and the registry that starts them.

The rules are numbered in ``specs/queue_runner.md`` (``RUNNER-n``,
``RUNNER-OLD-n``); the places where coordkit departs from TensorFlow are
listed there as ``DEV-RUNNER-n``.

A runner holds a queue and a list of *enqueue ops*, plain Python callables
that each put something into the queue. ``create_threads`` makes one thread
per op; each thread calls its op in a loop until

* the coordinator asks for a stop (the thread leaves quietly),
* the op raises one of ``queue_closed_exception_types`` (the input is used up;
  the last thread to leave this way closes the queue), or
* the op raises anything else (reported to the coordinator, or recorded in
  ``exceptions_raised`` and re-raised when there is no coordinator).

With a coordinator, one more thread waits for the stop and then closes the
queue *cancelling* pending enqueues, which unblocks runners stuck in a full
queue.

Every lock and thread comes from ``coordkit.sync``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from coordkit import sync
from coordkit.errors import OutOfRangeError

__all__ = [
    "QueueRunner",
    "QueueRunnerRegistry",
    "QueueRunnerStatistics",
    "add_queue_runner",
    "get_queue_runner_registry",
    "queue_runner_scope",
    "start_queue_runners",
]

logger = logging.getLogger("coordkit")

#: The collection ``add_queue_runner`` and ``start_queue_runners`` use by default.
QUEUE_RUNNERS = "queue_runners"

_ALREADY_RUNNING = "Threads are already running from a previous call to Threads() for this queue runner."


def op_name(op: Callable[..., Any]) -> str:
    """An op's name in thread names (RUNNER-11).

    ``op.name`` if it has one, else ``op.__name__``, else ``repr(op)``.
    """
    name = getattr(op, "name", None)
    if name is None:
        name = getattr(op, "__name__", None)
    return repr(op) if name is None else str(name)


@dataclass(frozen=True)
class QueueRunnerStatistics:
    """A snapshot of a runner: threads created and not yet ended, errors kept."""

    running_threads: int
    exceptions_raised: int


class QueueRunner:
    """Runs each enqueue op of a queue in its own thread (RUNNER-1..7, RUNNER-10, RUNNER-11).

    Args:
        queue: the queue being fed. It needs a ``name`` attribute, and a
            ``close(cancel_pending_enqueues=False)`` method unless both
            ``close_op`` and ``cancel_op`` are given.
        enqueue_ops: a non-empty sequence of callables, each called with no
            arguments, over and over, by its own thread.
        close_op: called once when the input is used up (the last runner
            thread left through a queue-closed exception). Default
            ``queue.close``, which keeps pending enqueues.
        cancel_op: called by the close-on-stop thread when the coordinator
            stops. Default ``queue.close(cancel_pending_enqueues=True)``.
        queue_closed_exception_types: a non-empty tuple of exception classes
            meaning "the queue was closed, leave quietly". Default
            ``(OutOfRangeError,)``; add ``CancelledError`` when an op also
            dequeues from another queue, or when the fed queue may be closed by
            someone else.

    Raises:
        ValueError: ``queue`` is None or ``enqueue_ops`` is empty.
        TypeError: an op is not callable, the queue lacks ``name`` or
            ``close``, or ``queue_closed_exception_types`` is not a non-empty
            tuple of exception classes (DEV-RUNNER-3).
    """

    def __init__(
        self,
        queue: Any,
        enqueue_ops: Iterable[Callable[[], Any]],
        close_op: Callable[[], Any] | None = None,
        cancel_op: Callable[[], Any] | None = None,
        queue_closed_exception_types: tuple[type[BaseException], ...] | None = None,
    ):
        if queue is None or enqueue_ops is None:
            raise ValueError(
                f"Must provide queue and enqueue_ops. Got queue={queue!r}, enqueue_ops={enqueue_ops!r}"
            )
        if not hasattr(queue, "name"):
            raise TypeError(f"QueueRunner(queue) must have a 'name' attribute; got {queue!r}")
        self._queue = queue
        self._enqueue_ops = self._check_ops(enqueue_ops)
        if callable(getattr(queue, "close", None)):
            if close_op is None:
                close_op = queue.close
            if cancel_op is None:
                cancel_op = functools.partial(queue.close, cancel_pending_enqueues=True)
        self._close_op = self._check_op(close_op, "close_op", queue)
        self._cancel_op = self._check_op(cancel_op, "cancel_op", queue)
        self._queue_closed_exception_types = self._check_closed_types(queue_closed_exception_types)
        # Guards _runs and _exceptions_raised. close_op runs while it is held,
        # so that a new create_threads() cannot start feeding the queue between
        # the last runner's exit and the close.
        self._lock = sync.Lock()
        # Runner threads created by the last create_threads() and not yet ended
        # (set at creation, so threads never started keep counting).
        self._runs = 0
        # Errors of runner threads that had no coordinator; a new list on each
        # create_threads().
        self._exceptions_raised: list[BaseException] = []

    # -- construction checks ---------------------------------------------------

    @staticmethod
    def _check_ops(enqueue_ops: object) -> list[Callable[[], Any]]:
        if (
            callable(enqueue_ops)
            or not isinstance(enqueue_ops, Iterable)
            or isinstance(enqueue_ops, (str, bytes))
        ):
            raise TypeError(
                "QueueRunner(enqueue_ops) must be a list of callables (wrap a single op "
                f"as [op]); got {enqueue_ops!r}"
            )
        ops = list(enqueue_ops)
        if not ops:
            raise ValueError(f"Must provide queue and enqueue_ops. Got enqueue_ops={enqueue_ops!r}")
        for i, op in enumerate(ops):
            if not callable(op):
                raise TypeError(f"QueueRunner(enqueue_ops[{i}]) must be callable; got {op!r}")
        return ops

    @staticmethod
    def _check_op(op: object, what: str, queue: Any) -> Callable[[], Any]:
        if op is None:
            raise TypeError(
                f"QueueRunner needs {what} when the queue has no callable "
                f"close(cancel_pending_enqueues=False) method; got queue={queue!r}"
            )
        if not callable(op):
            raise TypeError(f"QueueRunner({what}) must be callable or None; got {op!r}")
        return op  # type: ignore[return-value]

    @staticmethod
    def _check_closed_types(types: object) -> tuple[type[BaseException], ...]:
        if types is None:
            return (OutOfRangeError,)
        ok = (
            isinstance(types, tuple)
            and len(types) > 0
            and all(isinstance(t, type) and issubclass(t, BaseException) for t in types)
        )
        if not ok:
            raise TypeError(
                "queue_closed_exception_types, when provided, must be a non-empty tuple of "
                f"exception classes; got {types!r}"
            )
        return types  # type: ignore[return-value]

    # -- properties -------------------------------------------------------------

    @property
    def queue(self) -> Any:
        """The queue this runner feeds."""
        return self._queue

    @property
    def enqueue_ops(self) -> list[Callable[[], Any]]:
        """A copy of the list of enqueue ops, one thread each."""
        return list(self._enqueue_ops)

    @property
    def close_op(self) -> Callable[[], Any]:
        """Called when the last runner thread leaves through a queue-closed exception."""
        return self._close_op

    @property
    def cancel_op(self) -> Callable[[], Any]:
        """Called by the close-on-stop thread once the coordinator stops."""
        return self._cancel_op

    @property
    def queue_closed_exception_types(self) -> tuple[type[BaseException], ...]:
        """Exceptions of an op that mean "the queue was closed" (a quiet exit)."""
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self) -> list[BaseException]:
        """A copy of the errors kept by runner threads that had no coordinator (RUNNER-4).

        With a coordinator, errors go to ``request_stop`` and are not kept here.
        Reset by every successful ``create_threads``.
        """
        # No lock: the close op may hold it for long (a plain close waits behind
        # pending enqueues), and copying a list is atomic.
        return list(self._exceptions_raised)

    @property
    def name(self) -> str:
        """The queue's name (read from the queue each time)."""
        return self._queue.name

    def statistics(self) -> QueueRunnerStatistics:
        """Runner threads created and not yet ended, and the number of kept errors.

        Read without the lock (see ``exceptions_raised``), so it never waits.
        """
        return QueueRunnerStatistics(self._runs, len(self._exceptions_raised))

    # -- the threads --------------------------------------------------------------

    def _call_ignoring_errors(self, op: Callable[[], Any]) -> None:
        try:
            op()
        except Exception as e:  # errors of close_op / cancel_op are ignored (RUNNER-4, RUNNER-5)
            logger.debug("Ignored exception: %s", e)

    def _run(self, op: Callable[[], Any], coord: Any) -> None:
        """The loop of one runner thread (RUNNER-4, RUNNER-10)."""
        decremented = False
        try:
            while True:
                if coord is not None and coord.should_stop():
                    break
                try:
                    op()
                except self._queue_closed_exception_types:
                    with self._lock:
                        self._runs -= 1
                        decremented = True
                        if self._runs == 0:
                            self._call_ignoring_errors(self._close_op)
                    return
        except Exception as e:
            if coord is not None:
                coord.request_stop(e)
            else:
                logger.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs -= 1

    def _close_on_stop(self, coord: Any) -> None:
        """Wait for the stop, then close the queue cancelling pending enqueues (RUNNER-5)."""
        coord.wait_for_stop()
        self._call_ignoring_errors(self._cancel_op)

    def create_threads(self, coord: Any = None, daemon: bool = False, start: bool = False) -> list[Any]:
        """Make one thread per enqueue op, and a close-on-stop thread with a coordinator.

        (RUNNER-2, RUNNER-3, RUNNER-OLD-2.)

        Threads are named ``QueueRunnerThread-<queue name>-<op name>`` and
        ``QueueRunnerThread-<queue name>-close_on_stop``; with a coordinator
        each of them is registered with it. ``daemon`` marks them daemon
        threads; ``start`` starts them. The order is the op order, then
        close-on-stop.

        The runner counts its threads from the moment they are created: until
        every op thread has ended, another call raises RuntimeError, even if
        the threads were never started (RUNNER-OLD-2). A successful call starts
        a fresh ``exceptions_raised``.

        Raises:
            RuntimeError: threads of an earlier call have not all ended.
            TypeError: ``coord`` is not None and lacks the Coordinator methods.
        """
        _check_coord(coord, "create_threads(coord)")
        _check_flags("create_threads", daemon=daemon, start=start)
        with self._lock:
            if self._runs > 0:
                raise RuntimeError(_ALREADY_RUNNING)
            self._runs = len(self._enqueue_ops)
            self._exceptions_raised = []

        queue_name = self.name
        threads = [
            sync.Thread(
                target=self._run,
                args=(op, coord),
                name=f"QueueRunnerThread-{queue_name}-{op_name(op)}",
            )
            for op in self._enqueue_ops
        ]
        if coord is not None:
            threads.append(
                sync.Thread(
                    target=self._close_on_stop,
                    args=(coord,),
                    name=f"QueueRunnerThread-{queue_name}-close_on_stop",
                )
            )
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if daemon:
                t.daemon = True
            if start:
                t.start()
        return threads

    def __repr__(self) -> str:
        return f"<QueueRunner for {self._queue!r} with {len(self._enqueue_ops)} op(s)>"


# -- the registry ---------------------------------------------------------------------


class QueueRunnerRegistry:
    """Named collections of queue runners, in place of TF's graph collections.

    (RUNNER-9, RUNNER-12, RUNNER-13.)

    Each collection keeps its runners in the order they were added, each
    runner once. Every operation is a single dict operation on identity keys,
    so a registry may be shared between threads without a lock.
    """

    def __init__(self) -> None:
        # collection name -> {id(runner): runner}, an ordered identity set.
        self._collections: dict[str, dict[int, Any]] = {}

    def add(self, qr: Any, collection: str = QUEUE_RUNNERS) -> None:
        """Add ``qr`` to ``collection``; adding it again changes nothing (RUNNER-13)."""
        _check_runner(qr)
        _check_collection(collection)
        self._collections.setdefault(collection, {}).setdefault(id(qr), qr)

    def get(self, collection: str = QUEUE_RUNNERS, scope: str | None = None) -> list[Any]:
        """The runners of ``collection`` in the order added.

        With ``scope``, only those whose ``name`` matches the regular
        expression ``scope`` at its start (as TF's ``get_collection`` filters).
        """
        _check_collection(collection)
        if scope is not None and not isinstance(scope, str):
            raise TypeError(f"scope must be a regular expression (a str) or None; got {scope!r}")
        runners = list(self._collections.get(collection, {}).values())
        if scope is None:
            return runners
        try:
            pattern = re.compile(scope)
        except re.error as exc:
            raise ValueError(f"scope {scope!r} is not a regular expression: {exc}") from None
        return [qr for qr in runners if pattern.match(str(getattr(qr, "name", "")))]

    def collections(self) -> list[str]:
        """The names of the non-empty collections, in the order first used."""
        return [name for name, runners in list(self._collections.items()) if runners]

    def start(
        self,
        coord: Any = None,
        daemon: bool = True,
        start: bool = True,
        collection: str = QUEUE_RUNNERS,
    ) -> list[Any]:
        """Create (and by default start) the threads of every runner in ``collection`` (RUNNER-9).

        Logs a warning when the collection is empty. Returns all the threads,
        runner by runner. A runner that refuses (its earlier threads are still
        running) raises, and the threads made for the runners before it are
        left as they are.
        """
        _check_coord(coord, "start_queue_runners(coord)")
        _check_flags("start_queue_runners", daemon=daemon, start=start)
        runners = self.get(collection)
        if not runners:
            logger.warning(
                "start_queue_runners() was called when no queue runners were defined in collection %r.",
                collection,
            )
        threads: list[Any] = []
        for qr in runners:
            threads.extend(qr.create_threads(coord=coord, daemon=daemon, start=start))
        return threads

    def __repr__(self) -> str:
        sizes = {name: len(runners) for name, runners in list(self._collections.items())}
        return f"<QueueRunnerRegistry {sizes}>"


def _check_coord(coord: object, what: str) -> None:
    if coord is None:
        return
    missing = [
        m
        for m in ("should_stop", "request_stop", "wait_for_stop", "register_thread")
        if not callable(getattr(coord, m, None))
    ]
    if missing:
        raise TypeError(f"{what} must be a Coordinator or None; {coord!r} has no " + ", ".join(missing))


def _check_runner(qr: object) -> None:
    if not callable(getattr(qr, "create_threads", None)):
        raise TypeError(f"qr must be a QueueRunner (an object with create_threads()); got {qr!r}")


def _check_flags(call: str, **flags: object) -> None:
    """A TypeError naming the flag unless each is a bool (a str like "no" would be truthy)."""
    for flag, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"{call}({flag}) must be a bool; got {value!r}")


def _check_collection(collection: object) -> None:
    if not isinstance(collection, str):
        raise TypeError(f"collection must be a string; got {collection!r}")


_process_registry = QueueRunnerRegistry()
_current_registry: contextvars.ContextVar[QueueRunnerRegistry] = contextvars.ContextVar(
    "coordkit_queue_runner_registry", default=_process_registry
)


def get_queue_runner_registry() -> QueueRunnerRegistry:
    """The registry in force (RUNNER-12).

    The one of the innermost ``queue_runner_scope``, else the process-wide one.
    """
    return _current_registry.get()


@contextlib.contextmanager
def queue_runner_scope(
    registry: QueueRunnerRegistry | None = None,
) -> Iterator[QueueRunnerRegistry]:
    """Make ``registry`` (a fresh one by default) the current registry inside the block (RUNNER-12).

    ``add_queue_runner`` and ``start_queue_runners`` use it instead of the
    process-wide registry until the block ends. The scope is a context
    variable: it covers the current thread (or asyncio task) only; threads
    started inside the block see the process registry.

    Example::

        with coordkit.queue_runner_scope() as registry:
            add_queue_runner(qr)
            threads = start_queue_runners(coord)
    """
    if registry is None:
        registry = QueueRunnerRegistry()
    elif not isinstance(registry, QueueRunnerRegistry):
        raise TypeError(f"queue_runner_scope(registry) must be a QueueRunnerRegistry; got {registry!r}")
    token = _current_registry.set(registry)
    try:
        yield registry
    finally:
        _current_registry.reset(token)


def add_queue_runner(qr: QueueRunner, collection: str = QUEUE_RUNNERS) -> None:
    """Add ``qr`` to ``collection`` of the current registry (RUNNER-9)."""
    get_queue_runner_registry().add(qr, collection)


def start_queue_runners(
    coord: Any = None,
    daemon: bool = True,
    start: bool = True,
    collection: str = QUEUE_RUNNERS,
) -> list[Any]:
    """Create and start the threads of every runner in ``collection`` (RUNNER-9).

    The runners come from the current registry (see ``queue_runner_scope``).

    Note the defaults, kept from TensorFlow: ``daemon=True`` and
    ``start=True``, while ``QueueRunner.create_threads`` defaults to False for
    both. Logs a warning when the collection is empty. Returns all the threads.
    """
    return get_queue_runner_registry().start(coord=coord, daemon=daemon, start=start, collection=collection)
