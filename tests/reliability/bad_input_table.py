"""The table of bad inputs: every public name of ``coordkit`` and every command-line verb
and option, each parameter given each bad value (``test_bad_input`` runs it).

A row is an ``Entry``: a public call (a function, a constructor, a method on a fresh
object, a command line) and its parameters.  Each ``Param`` has a good value (used while
another parameter is bad) and a kind; the kind says which bad values must be refused
(``errors``) and which are documented as valid (``valid``); any other value may be
either refused clearly or accepted.  A refusal is clear when it is a coordkit exception,
or a ValueError/TypeError/OverflowError whose message names the parameter and the value.
"""

from __future__ import annotations

import math
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import coordkit
from tests.reliability._support import tiny


class Boom(Exception):
    """What the table's hostile values raise."""


def raises(*args: Any, **kwargs: Any) -> Any:
    """A callable that raises: where a callable is wanted, its own error is the outcome."""
    raise Boom("boom")


class BadEq:
    """An object that cannot be compared or hashed."""

    def __eq__(self, other: object) -> bool:
        raise Boom("__eq__")

    def __hash__(self) -> int:
        raise Boom("__hash__")

    def __repr__(self) -> str:
        return "<BadEq>"


BAD: dict[str, Any] = {
    "None": None, "text": "x", "empty": "", "huge_text": "x" * 100_000, "bidi": "\u202eevil",
    "nan": math.nan, "inf": math.inf, "-inf": -math.inf, "negative": -1, "zero": 0,
    "huge": 10**30, "fraction": 2.5, "bool": True, "list": [1], "object": object(),
    "raises": raises, "bad_eq": BadEq(),
}
# TensorFlow's own wording for a bad argument, which the reference primitives keep
# (tests/conformance pins it) though it does not show the value: a clear refusal.
TF_WORDING = (
    "When providing partial shapes, a list of shapes must be provided.",
)
# The same, as a command line spells them.
CLI_BAD: dict[str, str] = {
    "None": "None", "text": "x", "empty": "", "huge_text": "x" * 100_000, "bidi": "\u202eevil",
    "nan": "nan", "inf": "inf", "-inf": "-inf", "negative": "-1", "zero": "0",
    "huge": "1" + "0" * 30, "fraction": "2.5", "bool": "True",
}

_STRINGS = {"text", "empty", "huge_text", "bidi"}
_NUMBERS = {"nan", "inf", "-inf", "negative", "zero", "huge", "fraction", "bool"}
_OTHERS = {"list", "object", "raises", "bad_eq"}
EVERY = set(BAD)

# kind -> (values that must be refused, values documented as valid)
# (A huge number, 10**30, may be refused clearly or accepted, unless a kind says.)
KINDS: dict[str, tuple[set[str], set[str]]] = {
    # a positive int (a count, a budget)
    "count": (EVERY - {"huge"}, set()),
    "opt_count": (EVERY - {"huge", "None"}, {"None"}),
    # a non-negative int
    "count0": (EVERY - {"huge", "zero"}, {"zero"}),
    "opt_count0": (EVERY - {"huge", "zero", "None"}, {"zero", "None"}),
    # a queue's capacity: an int, negative for unbounded
    "capacity": (EVERY - {"huge", "zero", "negative"}, {"zero", "negative"}),
    # positive, finite seconds
    "seconds": (EVERY - {"fraction", "huge"}, {"fraction"}),
    # positive seconds or None (no limit); infinity may mean no limit too
    "opt_seconds": (EVERY - {"fraction", "huge", "None", "inf"}, {"fraction", "None"}),
    # a timeout: None (no limit) or seconds >= 0
    "timeout": (_STRINGS | _OTHERS | {"nan", "bool"}, {"None", "zero", "fraction"}),
    "seconds0": (EVERY - {"fraction", "huge", "zero"}, {"fraction", "zero"}),
    "opt_seconds0": (EVERY - {"fraction", "huge", "zero", "None", "inf"}, {"fraction", "zero", "None"}),
    # a seed: any int, or None
    "seed": (_STRINGS | _OTHERS | {"nan", "inf", "-inf", "fraction", "bool"},
             {"None", "negative", "zero", "huge"}),
    "int_seed": (_STRINGS | _OTHERS | {"None", "nan", "inf", "-inf", "fraction", "bool"},
                 {"negative", "zero", "huge"}),
    "flag": (EVERY - {"bool"}, {"bool"}),
    "opt_flag": (EVERY - {"bool", "None"}, {"bool", "None"}),
    "callable": (EVERY - {"raises"}, {"raises"}),
    "opt_callable": (EVERY - {"raises", "None"}, {"raises", "None"}),
    # a name: any string (an empty one may be refused)
    "name": (_NUMBERS | _OTHERS | {"None"}, _STRINGS - {"empty"}),
    "opt_name": (_NUMBERS | _OTHERS, (_STRINGS - {"empty"}) | {"None"}),
    "choice": (EVERY, set()),
    "opt_choice": (EVERY - {"None"}, {"None"}),
    "probability": (EVERY - {"zero", "fraction"}, {"zero"}),
    # a list of choices (non-negative ints)
    "choices": (EVERY - {"list"}, {"list"}),
    # anything goes in, or a clear refusal
    "any": (set(), set()),
}


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    good: Any
    # Values to leave out of this parameter's rows, with the reason in a comment.
    skip: frozenset[str] = frozenset()
    # Values this parameter may refuse or accept, whatever its kind says (the reason in
    # a comment): another parameter's good value makes them wrong here.
    either: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Entry:
    """A public call: ``call(**kwargs)`` with every parameter's good value but one."""

    name: str
    call: Callable[..., Any]
    params: tuple[Param, ...]
    cli: bool = False  # ``call`` takes strings and returns the command's exit status
    # Where the checks belong when they live in files another branch owns (the schedulers:
    # the dpor branch); such rows are reported apart and held by a strict xfail.
    owner: str | None = None


def _p(name: str, kind: str, good: Any, skip: tuple[str, ...] = (),
       either: tuple[str, ...] = ()) -> Param:
    return Param(name, kind, good, frozenset(skip), frozenset(either))


def _scheduler() -> coordkit.Scheduler:
    return coordkit.RandomScheduler(1)


# -- the engine: explore, replay, run, traces, schedulers, the harness ----------------

_EXPLORE_BASE = {"max_schedules": 3, "seed": 1}


def _bounded(options: dict[str, Any]) -> dict[str, Any]:
    """A huge ``max_schedules`` is valid: a time budget ends the exploration."""
    if type(options.get("max_schedules")) is int and options["max_schedules"] > 10**6:
        options["time_budget"] = 0.2
    return options


def _explore(**kwargs: Any) -> Any:
    fn = kwargs.pop("fn", tiny)
    return coordkit.explore(fn, **_bounded({**_EXPLORE_BASE, **kwargs}))


def _replay(**kwargs: Any) -> Any:
    fn = kwargs.pop("fn", tiny)
    trace = kwargs.pop("trace", [])
    return coordkit.replay(fn, trace, **{"strict": False, **kwargs})


def _run(**kwargs: Any) -> Any:
    fn = kwargs.pop("fn", tiny)
    return coordkit.run(fn, kwargs.pop("schedule", ()), **kwargs)


def _schedules(**kwargs: Any) -> Any:
    from hypothesis import find

    return find(coordkit.schedules(**kwargs), lambda choices: True)


def _harness(**kwargs: Any) -> Any:
    with coordkit.Harness(**{"max_steps_per_call": 1000, **kwargs}) as h:
        return h.run(lambda: 1)


def _harness_method(method: str, first: str) -> Callable[..., Any]:
    def call(**kwargs: Any) -> Any:
        with coordkit.Harness(max_steps_per_call=1000, run_timeout=2.0) as h:
            return getattr(h, method)(kwargs.pop(first), **kwargs)
    return call


def _method(make: Callable[[], Any], method: str) -> Callable[..., Any]:
    def call(**kwargs: Any) -> Any:
        return getattr(make(), method)(**kwargs)
    return call


def _exhausted() -> None:
    raise coordkit.OutOfRangeError("no more input")


def _runner() -> Any:
    """A runner whose thread, once started, finds its input exhausted and ends."""
    return coordkit.QueueRunner(coordkit.FIFOQueue(2), [_exhausted])


def _no_arguments(name: str, make: Callable[[], Any], *methods: str) -> list[Entry]:
    """Methods that take no argument: their one row is the good call."""
    return [Entry(f"{name}.{m}", _method(make, m), ()) for m in methods]


def _interleavings(**kwargs: Any) -> Any:
    return coordkit.interleavings(**_bounded({**_EXPLORE_BASE, **kwargs}))(tiny)()


SCHEDULERS = "coordkit/engine/schedulers/*"

ENGINE = [
    Entry("explore", _explore, (
        _p("fn", "callable", tiny),
        _p("strategy", "choice", "pct"),
        _p("max_schedules", "count", 3),
        _p("seed", "seed", 1),
        _p("depth", "count", 3),
        _p("max_preemptions", "opt_count0", 2),
        _p("max_steps", "count", 20_000),
        _p("time_budget", "opt_seconds", None),
        _p("run_timeout", "seconds", 10.0),
        _p("granularity", "choice", "sync"),
        _p("races", "choice", "report"),
        _p("invariant", "opt_callable", None),
        _p("shrink", "flag", True),
        _p("fail_on_thread_exception", "flag", True),
        _p("progress", "opt_callable", None),
        _p("cancel", "opt_choice", None),
        _p("adversarial", "flag", False),
    )),
    Entry("replay", _replay, (
        _p("fn", "callable", tiny),
        _p("trace", "any", []),
        _p("strict", "flag", False),
        _p("max_steps", "opt_count", None),
        _p("run_timeout", "seconds", 10.0),
        _p("granularity", "opt_choice", None),
        _p("invariant", "opt_callable", None),
        _p("fail_on_thread_exception", "opt_flag", None),
    )),
    Entry("run", _run, (
        _p("fn", "callable", tiny),
        _p("schedule", "any", ()),
        _p("max_steps", "opt_count", None),
        _p("run_timeout", "seconds", 10.0),
        _p("granularity", "opt_choice", None),
        _p("fail_on_thread_exception", "opt_flag", None),
    )),
    Entry("interleavings", _interleavings, (
        _p("strategy", "choice", "pct"),
        _p("max_schedules", "count", 3),
        _p("seed", "seed", 1),
        _p("cancel", "opt_choice", None),
        _p("adversarial", "flag", False),
    )),
    Entry("schedules", _schedules, (
        _p("max_switches", "count", 20),
        _p("max_gap", "count", 200),
        _p("max_value", "count", 7),
        _p("cancel", "opt_choice", None),
        _p("adversarial", "flag", False),
    )),
    Entry("Schedule", lambda **kw: coordkit.Schedule(**kw).encode(), (
        _p("choices", "any", ()),
        _p("granularity", "choice", "sync"),
        _p("fail_on_thread_exception", "flag", True),
        _p("max_steps", "opt_count", None, skip=("huge",)),  # bounded: refused clearly
        _p("invariant", "flag", False),
    )),
    Entry("Schedule.from_choices", lambda **kw: coordkit.Schedule.from_choices(**kw).encode(), (
        _p("choices", "any", [(2, 1)]),)),
    *_no_arguments("Schedule", coordkit.Schedule, "encode", "describe", "choice_limit"),
    Entry("Schedule.decode", lambda **kw: coordkit.Schedule.decode(**kw), (
        _p("text", "any", coordkit.Schedule().encode()),
    )),
    Entry("Choices", lambda **kw: coordkit.Choices(**kw), (
        _p("values", "choices", ()), _p("cancel", "flag", False), _p("adversarial", "flag", False))),
    Entry("RandomScheduler", lambda **kw: _explore(strategy=coordkit.RandomScheduler(**kw)), (
        _p("seed", "int_seed", 1),
        _p("switch_probability", "probability", 0.2),
    ), owner=SCHEDULERS),
    Entry("PCTScheduler", lambda **kw: _explore(strategy=coordkit.PCTScheduler(**kw)), (
        _p("seed", "int_seed", 1),
        _p("depth", "count", 3),
    ), owner=SCHEDULERS),
    Entry("DFSScheduler", lambda **kw: _explore(strategy=coordkit.DFSScheduler(**kw)), (
        _p("max_preemptions", "opt_count0", 2),
        _p("sleep_sets", "flag", True),
    ), owner=SCHEDULERS),
    Entry("ReplayScheduler", lambda **kw: _explore(strategy=coordkit.ReplayScheduler(**kw)), (
        _p("choices", "choices", []),
        _p("strict", "flag", False),
    ), owner=SCHEDULERS),
    Entry("Harness", _harness, (
        _p("max_steps_per_call", "count", 1000),
        _p("run_timeout", "seconds", 10.0),
        _p("granularity", "choice", "sync"),
    )),
    Entry("Harness.run", _harness_method("run", "fn"), (
        _p("fn", "callable", lambda: 1), _p("choices", "any", None))),
    Entry("Harness.start", _harness_method("start", "fn"), (
        _p("fn", "callable", lambda: 1), _p("name", "opt_name", None), _p("choices", "any", None))),
    Entry("Harness.spawn", _harness_method("spawn", "fn"), (
        _p("fn", "callable", lambda: 1), _p("name", "opt_name", None))),
    Entry("Harness.advance", _harness_method("advance", "seconds"), (
        _p("seconds", "seconds0", 1.0), _p("choices", "any", None))),
    Entry("Harness.settle", _harness_method("settle", "choices"), (_p("choices", "any", None),)),
]

# -- the reference primitives -----------------------------------------------------------


def _queue() -> Any:
    q = coordkit.FIFOQueue(4)
    q.enqueue(1)
    return q


QUEUES = [
    Entry("FIFOQueue", lambda **kw: coordkit.FIFOQueue(**kw), (
        _p("capacity", "capacity", 4),
        _p("dtypes", "any", ["int32"]),
        _p("shapes", "any", None),
        _p("names", "any", None),
        _p("name", "name", "q"),
    )),
    Entry("PaddingFIFOQueue", lambda **kw: coordkit.PaddingFIFOQueue(**kw), (
        _p("capacity", "capacity", 4),
        _p("dtypes", "any", ["int32"]),
        _p("shapes", "any", [[None]]),
        _p("name", "name", "q"),
    )),
    Entry("PriorityQueue", lambda **kw: coordkit.PriorityQueue(**kw), (
        _p("capacity", "capacity", 4),
        _p("types", "any", None),
        _p("name", "name", "q"),
    )),
    Entry("RandomShuffleQueue", lambda **kw: coordkit.RandomShuffleQueue(**kw), (
        _p("capacity", "capacity", 4, either=("zero", "negative")),  # min_after_dequeue=1
        _p("min_after_dequeue", "count0", 1),
        _p("seed", "seed", None),
        _p("name", "name", "q"),
    )),
    Entry("QueueBase.enqueue", _method(_queue, "enqueue"), (
        _p("vals", "any", 2), _p("timeout", "timeout", None))),
    Entry("QueueBase.enqueue_many", _method(_queue, "enqueue_many"), (
        _p("vals", "any", [2]), _p("timeout", "timeout", 0.5))),
    Entry("QueueBase.dequeue", _method(_queue, "dequeue"), (_p("timeout", "timeout", None),)),
    Entry("QueueBase.dequeue_many", _method(_queue, "dequeue_many"), (
        _p("n", "count0", 1, skip=("huge",)),  # would wait for 10**30 elements: refused or waits
        _p("timeout", "timeout", 0.5))),
    Entry("QueueBase.dequeue_up_to", _method(_queue, "dequeue_up_to"), (
        _p("n", "count0", 1), _p("timeout", "timeout", 0.5))),
    Entry("QueueBase.close", _method(_queue, "close"), (
        _p("cancel_pending_enqueues", "flag", False), _p("timeout", "timeout", None))),
    Entry("QueueStatistics", lambda **kw: coordkit.QueueStatistics(
        **{"pending_enqueues": 0, "pending_dequeues": 0, "pending_closes": 0, "held": 0, **kw}), (
        _p("size", "any", 0), _p("closed", "any", False))),
]


def _coord(method: str) -> Callable[..., Any]:
    return _method(coordkit.Coordinator, method)


def _monitored_stop(**kwargs: Any) -> Any:
    with coordkit.MonitoredRun(grace_period_secs=1.0) as run:
        run.request_stop(**kwargs)
        return run.should_stop()


def _stopped_coord() -> Any:
    coord = coordkit.Coordinator()
    coord.request_stop()
    return coord


COORDINATION = [
    Entry("Coordinator", lambda **kw: coordkit.Coordinator(**kw).request_stop(ValueError()), (
        _p("clean_stop_exception_types", "any", None),)),
    Entry("Coordinator.request_stop", _coord("request_stop"), (_p("ex", "any", None),)),
    Entry("Coordinator.wait_for_stop", _method(_stopped_coord, "wait_for_stop"), (
        _p("timeout", "timeout", None),)),
    Entry("Coordinator.join", _method(_stopped_coord, "join"), (
        _p("threads", "any", None),
        _p("stop_grace_period_secs", "opt_seconds0", 1.0),
        _p("ignore_live_threads", "flag", False),
    )),
    Entry("Coordinator.register_thread", _coord("register_thread"), (
        _p("thread", "any", threading.Thread(target=tiny)),)),
    Entry("LooperThread", lambda **kw: coordkit.LooperThread(**kw), (
        # TensorFlow's message ("'coord' argument must be a Coordinator: %s", pinned by
        # tests/conformance) shows an empty string as nothing.
        _p("coord", "any", coordkit.Coordinator(), skip=("empty",)),
        _p("timer_interval_secs", "opt_seconds0", None),
        _p("target", "opt_callable", tiny),
        _p("args", "any", None),
        _p("kwargs", "any", None),
    )),
    Entry("QueueRunner", lambda **kw: coordkit.QueueRunner(**kw).create_threads(), (
        _p("queue", "any", coordkit.FIFOQueue(2)),
        _p("enqueue_ops", "any", [lambda: None]),
        _p("close_op", "opt_callable", None),
        _p("cancel_op", "opt_callable", None),
        _p("queue_closed_exception_types", "any", None),
    )),
    Entry("QueueRunner.create_threads", _method(_runner, "create_threads"), (
        _p("coord", "any", None),
        _p("daemon", "flag", False),
        _p("start", "flag", False),
    )),
    Entry("QueueRunnerRegistry.add", _method(coordkit.QueueRunnerRegistry, "add"), (
        _p("qr", "any", _runner()),
        _p("collection", "name", "queue_runners"),
    )),
    Entry("QueueRunnerRegistry.start", _method(coordkit.QueueRunnerRegistry, "start"), (
        _p("coord", "any", None),
        _p("daemon", "flag", True),
        _p("start", "flag", True),
        _p("collection", "name", "queue_runners"),
    )),
    Entry("QueueRunnerRegistry.get", _method(coordkit.QueueRunnerRegistry, "get"), (
        _p("collection", "name", "queue_runners"), _p("scope", "opt_name", None))),
    Entry("add_queue_runner", lambda **kw: coordkit.add_queue_runner(**kw), (
        _p("qr", "any", coordkit.QueueRunner(coordkit.FIFOQueue(2), [lambda: None])),
        _p("collection", "name", "queue_runners"),
    )),
    Entry("get_queue_runner_registry", lambda: coordkit.get_queue_runner_registry(), ()),
    Entry("queue_runner_scope", lambda **kw: coordkit.queue_runner_scope(**kw).__enter__(), (
        _p("registry", "any", None),)),
    Entry("start_queue_runners", lambda **kw: coordkit.start_queue_runners(**kw), (
        _p("coord", "any", None),
        _p("daemon", "flag", True),
        _p("start", "flag", True),
        _p("collection", "name", "queue_runners"),
    )),
    *_no_arguments("Coordinator", _stopped_coord, "should_stop", "clear_stop",
                   "raise_requested_exception", "statistics", "stop_on_exception"),
    *_no_arguments("FIFOQueue", _queue, "size", "is_closed", "statistics"),
    *_no_arguments("QueueRunnerRegistry", coordkit.QueueRunnerRegistry, "collections"),
    Entry("MonitoredRun.request_stop", _monitored_stop, (_p("ex", "any", None),)),
    Entry("MonitoredRun", lambda **kw: coordkit.MonitoredRun(**kw), (
        _p("grace_period_secs", "opt_seconds0", 1.0),
        _p("ignore_live_threads", "flag", False),
        _p("collection", "name", "queue_runners"),
    )),
    Entry("stop_on_signals", lambda **kw: coordkit.stop_on_signals(**kw), (
        _p("coord", "any", coordkit.Coordinator()),
        _p("grace_period_secs", "opt_seconds0", 1.0),
        _p("signals", "any", (signal.SIGUSR2,)),
    )),
]

PIPELINE = [
    Entry("input_producer", lambda **kw: coordkit.input_producer(**kw), (
        _p("input_tensor", "any", [1, 2]),
        _p("num_epochs", "opt_count", None),
        _p("shuffle", "flag", False),
        _p("seed", "seed", None),
        _p("capacity", "count", 4),
        _p("name", "name", "p"),
    )),
    Entry("string_input_producer", lambda **kw: coordkit.string_input_producer(**kw), (
        _p("string_tensor", "any", ["a"]),
        _p("num_epochs", "opt_count", None),
        _p("capacity", "count", 4),
    )),
    Entry("range_input_producer", lambda **kw: coordkit.range_input_producer(**kw), (
        _p("limit", "count", 3),
        _p("num_epochs", "opt_count", None),
        _p("capacity", "count", 4),
    )),
    Entry("slice_input_producer", lambda **kw: coordkit.slice_input_producer(**kw), (
        _p("tensor_list", "any", [[1, 2]]),
        _p("num_epochs", "opt_count", None),
        _p("capacity", "count", 4),
    )),
    Entry("limit_epochs", lambda **kw: coordkit.limit_epochs(**kw), (
        _p("tensor", "callable", lambda: 1),
        _p("num_epochs", "opt_count", None),
        _p("name", "name", "e"),
    )),
    Entry("batch", lambda **kw: coordkit.batch(**kw), (
        _p("tensors", "any", [lambda: 1]),
        _p("batch_size", "count", 2),
        _p("num_threads", "count", 1),
        _p("capacity", "count", 4),
        _p("dynamic_pad", "flag", False, either=("bool",)),  # True needs shapes
        _p("allow_smaller_final_batch", "flag", False),
        _p("name", "name", "b"),
        _p("enqueue_many", "flag", False),
    )),
    Entry("batch_join", lambda **kw: coordkit.batch_join(**kw), (
        _p("tensors_list", "any", [[lambda: 1]]),
        _p("batch_size", "count", 2),
        _p("capacity", "count", 4),
    )),
    Entry("shuffle_batch", lambda **kw: coordkit.shuffle_batch(**kw), (
        _p("tensors", "any", [lambda: 1]),
        _p("batch_size", "count", 2),
        _p("capacity", "count", 4),
        _p("min_after_dequeue", "count0", 1),
        _p("seed", "seed", None),
    )),
    Entry("shuffle_batch_join", lambda **kw: coordkit.shuffle_batch_join(**kw), (
        _p("tensors_list", "any", [[lambda: 1]]),
        _p("batch_size", "count", 2),
        _p("capacity", "count", 4),
        _p("min_after_dequeue", "count0", 1),
    )),
]


def _error_class(cls: type) -> Entry:
    """An exception class: any message is valid."""
    return Entry(cls.__name__, lambda **kw: str(cls(kw["message"])), (_p("message", "any", "m"),))


ERRORS = [_error_class(getattr(coordkit, name)) for name in coordkit.__all__
          if isinstance(getattr(coordkit, name), type)
          and issubclass(getattr(coordkit, name), BaseException)]

RECORDS = [
    Entry("ExploreResult", lambda **kw: coordkit.ExploreResult(**{
        "failure": None, "schedules_run": 1, "exhausted": False, "strategy": "pct", "seed": 1,
        "elapsed": 0.0, **kw}).ok, (_p("strategy", "any", "pct"),)),
    Entry("Operation", lambda **kw: coordkit.Operation(**kw).pending, (_p("name", "any", "op"),)),
]

# -- the command line ---------------------------------------------------------------------

TARGET = "tests.reliability._support:tiny"
TRACE = coordkit.replay(tiny, [], strict=False).trace  # the round-robin schedule of tiny


def _cli(*head: str, fixed: tuple[str, ...] = ()) -> Callable[..., int]:
    """``coordkit HEAD... --option=value ... -- POSITIONAL... FIXED...``: options given
    as keywords, a positional one as ``_name`` (after ``--``, so that a value such as
    ``-inf`` is not taken for an option)."""
    from coordkit import cli

    def call(**kwargs: str) -> int:
        options = [f"--{name.replace('_', '-')}={value}" for name, value in kwargs.items()
                   if not name.startswith("_")]
        positional = [value for name, value in kwargs.items() if name.startswith("_")]
        split = ["--"] if positional and head else []  # (a verb cannot follow "--")
        argv = [*head, *options, *split, *positional, *fixed]
        return cli.main(argv, out=_Sink())
    return call


class _Sink:
    """Standard output of an in-process command, kept for the failure message."""

    def __init__(self) -> None:
        self.text: list[str] = []

    def write(self, s: str) -> int:
        self.text.append(s)
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


CLI = [
    Entry("coordkit explore", _cli("explore"), (
        _p("_target", "name", TARGET),
        _p("strategy", "choice", "pct"),
        _p("max_schedules", "count", "3"),
        _p("seed", "seed", "1"),
        _p("time_budget", "opt_seconds", "0.3"),
        _p("max_preemptions", "count0", "2"),
        _p("granularity", "choice", "sync"),
        _p("races", "choice", "report"),
    ), cli=True),
    # --cancel on its own row: its one good value runs another search (AIO-41), which the
    # other options' rows need not run; --adversarial is a flag, with no value to get wrong.
    Entry("coordkit explore --cancel", _cli("explore", fixed=(TARGET, "--max-schedules=3")), (
        _p("cancel", "choice", "tasks"),
    ), cli=True),
    Entry("coordkit replay", _cli("replay"), (
        _p("_target", "name", TARGET),
        _p("_trace", "name", TRACE),
        _p("granularity", "choice", "sync"),
    ), cli=True),
    Entry("coordkit show", _cli("show"), (
        _p("_trace", "name", TRACE),
        _p("target", "name", TARGET),
        _p("html", "name", "page.html"),
    ), cli=True),
    Entry("coordkit demo", _cli("demo", fixed=("--fixed-schedules", "1")), (
        _p("seed", "int_seed", "0", skip=("negative", "zero", "huge")),  # valid: a full demo
    ), cli=True),
    Entry("coordkit", _cli(fixed=(TARGET, "--max-schedules=2")), (_p("_command", "choice", "explore"),),
          cli=True),
]

ENTRIES: list[Entry] = [*ENGINE, *QUEUES, *COORDINATION, *PIPELINE, *ERRORS, *RECORDS, *CLI]
