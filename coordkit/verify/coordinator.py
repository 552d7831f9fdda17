"""The coordinator rows: request_stop from 2-3 threads, join with a grace period, clear_stop,
LooperThread (FORMAL-25).

Stop reasons are named by exception class (``"ValueError"``; ``"OutOfRangeError"``
is a clean stop, COORD-1), one class per thread, so that the history's outcomes,
which name exceptions by class (HIST-1), say whose exception a join raised.
``CoordinatorHistoryModel`` offers the pure ``CoordinatorModel`` to the
linearizability checker: request_stop, clear_stop, should_stop, wait_for_stop,
raise_requested_exception and a join whose threads have all ended by the time it
returns.  A join is checked by the model only when it raised the recorded
exception or returned; one that gave up on live threads (COORD-14) is checked by
the row's own rule.
"""

from __future__ import annotations

from typing import Any

from coordkit import sync
from coordkit.coordinator import Coordinator, LooperThread
from coordkit.errors import OutOfRangeError
from coordkit.history import BLOCKED, Operation, Outcome, SequentialModel
from coordkit.models import CoordinatorModel, Err, Ok, StopReason
from coordkit.models.outcome import Outcome as ModelOutcome
from coordkit.verify.program import Configuration, Op, Trial

__all__ = ["COORDINATOR_ROWS", "CoordinatorHistoryModel"]

REASONS: dict[str, type[BaseException]] = {
    "ValueError": ValueError, "KeyError": KeyError, "TypeError": TypeError,
    "OutOfRangeError": OutOfRangeError,
}
_KEY = object()
# What a coordinator call may raise by the rules: a reason (join, raise_requested_exception,
# request_stop after a join) or RuntimeError (a join that gave up, COORD-15); anything else
# kills the thread and fails the run.
_RULED = (*REASONS.values(), RuntimeError)
_RECORDED = ("request_stop", "clear_stop", "should_stop", "wait_for_stop", "join",
             "raise_requested_exception")


class _State:
    """A ``CoordinatorModel`` at rest, frozen: equal by ``key()``."""

    __slots__ = ("_key", "model")

    def __init__(self, model: CoordinatorModel) -> None:
        self.model = model
        self._key = model.key()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _State) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)


class CoordinatorHistoryModel(SequentialModel):
    """The pure ``CoordinatorModel`` as a model for ``check`` (MODEL-6, HIST-5).

    An operation's ``arg`` for ``request_stop`` is the name of the exception class
    passed (None: a plain stop); the model holds one instance per name, so the
    record is compared by identity as the model does.  ``join`` takes effect with
    every thread it waited for ended (its recorded return is after theirs).
    """

    def __init__(self) -> None:
        self._reasons: dict[str, BaseException] = {}

    def _reason(self, name: str | None) -> StopReason:
        if name is None:
            return StopReason()
        if name not in self._reasons:
            self._reasons[name] = REASONS[name]("stop")
        return StopReason(self._reasons[name])

    def init(self) -> _State:
        return _State(CoordinatorModel())

    def apply(self, state: _State, op: Operation) -> tuple[Any, Any]:
        model = state.model.copy()
        result = self._call(model, op)
        if result is None:
            return state, BLOCKED
        model.results.clear()
        if isinstance(result, Err):
            return _State(model), Outcome.error(result.type)
        return _State(model), Outcome.ok(result.value)

    def _call(self, model: CoordinatorModel, op: Operation) -> ModelOutcome | None:
        kind = op.kind
        if kind == "request_stop":
            model.request_stop(_KEY, self._reason(op.arg))
        elif kind == "clear_stop":
            model.clear_stop(_KEY)
        elif kind == "should_stop":
            return Ok(model.stop)
        elif kind == "wait_for_stop":
            model.wait_for_stop(_KEY)
        elif kind == "join":
            model.join(_KEY, threads=())
        elif kind == "raise_requested_exception":
            model.raise_requested_exception(_KEY)
        else:
            raise ValueError(f"CoordinatorHistoryModel cannot apply {kind!r} (#{op.index})")
        return model.results.get(_KEY)


# ---------------------------------------------------------------------------
# Running the ops
# ---------------------------------------------------------------------------


def _release(trial: Trial) -> Any:
    if "release" not in trial.extra:
        trial.extra["release"] = sync.Event()
    return trial.extra["release"]


def _invoke(trial: Trial, op: Op) -> Any:
    coord = trial.target
    kind = op.kind
    if kind == "request_stop":
        return coord.request_stop(None if op.arg is None else REASONS[op.arg]("stop"))
    if kind == "join":
        threads = [trial.threads[name] for name in op.arg or ()]
        grace = {} if op.timeout is None else {"stop_grace_period_secs": op.timeout}
        try:
            return coord.join(threads, **grace)
        finally:  # COORD-13/14: who was still alive when join came back
            trial.extra.setdefault("joined_alive", []).append(
                [t.name for t in [*threads, *trial.extra.get("registered", ())] if t.is_alive()])
    if kind == "wait_for_stop":
        return coord.wait_for_stop(op.timeout)
    return getattr(coord, kind)()


def coordinator_executor(trial: Trial, thread: str, op: Op) -> Outcome | None:
    """Runs one ``Op`` on the trial's coordinator, recording the calls the model knows.

    ``wait_release`` waits for a ``release`` op of another thread (a thread that
    outlives a grace period); neither is recorded.
    """
    if op.kind == "wait_release":
        _release(trial).wait()
        return Outcome.ok(True)
    if op.kind == "release":
        _release(trial).set()
        return Outcome.ok(None)
    recorder = trial.recorder
    start = recorder.tick()
    try:
        outcome = Outcome.ok(_invoke(trial, op))
    except _RULED as exc:
        outcome = Outcome.error(exc)
    if op.kind in _RECORDED and not (op.kind == "join" and outcome == Outcome.error(RuntimeError)):
        recorder.add(thread, op.kind, op.arg if op.kind == "request_stop" else None, start,
                     recorder.tick(), outcome)
    return outcome


_AFTER_JOIN = (Op("join"), Op("raise_requested_exception"), Op("request_stop", "TypeError"),
               Op("raise_requested_exception"))


def after_join(trial: Trial) -> None:
    """The main thread, every thread ended: join, read the record twice, report once more.

    COORD-7 (a report after a join raises), COORD-15..17 (the record is kept).
    """
    trial.results["main"] = [coordinator_executor(trial, "main", op) for op in _AFTER_JOIN]


def joined_threads_ended(trial: Trial) -> None:
    """COORD-12, COORD-13: a join that did not raise RuntimeError returns with every thread
    it waited for (the registered ones included) ended."""
    for outcome, alive in zip(_join_outcomes(trial), trial.extra.get("joined_alive", [])):
        if outcome != Outcome.error(RuntimeError):
            assert not alive, f"COORD-13: join returned {outcome} with {alive} still alive"


def _join_outcomes(trial: Trial) -> list[Outcome | None]:
    found = []
    for name, results in trial.results.items():
        ops = _AFTER_JOIN if name == "main" else trial.config.threads[int(name[1:])]
        found += [r for op, r in zip(ops, results) if op.kind == "join"]
    return found


def grace_gave_up(trial: Trial) -> None:
    """COORD-14, COORD-15: a join whose thread outlives the grace period raises RuntimeError,
    unless an exception was recorded first."""
    join = trial.result("T2", 0)
    assert join in (Outcome.error(RuntimeError), Outcome.error(ValueError)), (
        f"COORD-14: join with a straggler past its grace period returned {join}")
    if join == Outcome.error(RuntimeError):
        assert trial.extra["joined_alive"][0] == ["T0"], trial.extra["joined_alive"]


def register_t0(trial: Trial) -> None:
    """T0 is registered before any thread starts (COORD-11)."""
    trial.target.register_thread(trial.threads["T0"])
    trial.extra["registered"] = [trial.threads["T0"]]


# ---------------------------------------------------------------------------
# The looper
# ---------------------------------------------------------------------------


def start_looper(trial: Trial) -> None:
    """A back-to-back LooperThread whose target fails on its second call (LOOP-2, LOOP-3).

    The failure reaches the coordinator through ``stop_on_exception``, after the
    target raised: it is recorded as a pending ``request_stop("KeyError")``, which
    may take effect at any moment after, or never (HIST-4).
    """
    calls = trial.extra["looper_calls"] = []

    def tick() -> None:
        calls.append(trial.target.should_stop())
        if len(calls) == 2:
            trial.recorder.add("looper", "request_stop", "KeyError", trial.recorder.tick(), None,
                               Outcome.ok(None))
            raise KeyError("stop")

    looper = LooperThread(trial.target, None, target=tick)
    trial.extra["registered"] = [looper]
    looper.start()


def looper_stopped(trial: Trial) -> None:
    """LOOP-3: once a call of the target has seen the stop, it is the last; the looper
    ended by the time the join returned (COORD-12)."""
    calls = trial.extra["looper_calls"]
    assert not any(calls[:-1]), f"LOOP-3: the target was called again after a call saw the stop: {calls}"
    assert not trial.extra["registered"][0].is_alive(), "COORD-12: join returned with the looper alive"


def _coord_row(name: str, threads: list[list[Op]], rules: tuple[str, ...], *,
               checks: tuple[Any, ...] = (), setup: Any = None, model: bool = True,
               finish: bool = True, profile: str = "ci", more_threads: str = "") -> Configuration:
    return Configuration(
        name=name, primitive="Coordinator", factory=Coordinator, args=(),
        threads=tuple(tuple(t) for t in threads), execute=coordinator_executor,
        rules=tuple(dict.fromkeys((*(("HIST-6",) if model else ()), *rules))),
        model=CoordinatorHistoryModel if model else None,
        checks=(joined_threads_ended, *checks), setup=setup,
        finish=after_join if finish else None, profile=profile, more_threads=more_threads)


def _stop(reason: str | None = None, **kw: Any) -> Op:
    return Op("request_stop", reason, **kw)


_AFTER = ("COORD-7", "COORD-15", "COORD-16", "COORD-17")
COORDINATOR_ROWS: list[Configuration] = [
    _coord_row("coord-first-exception-wins", [[_stop("ValueError")], [_stop("KeyError")]],
               ("COORD-4", "COORD-5", "COORD-6", *_AFTER)),
    _coord_row("coord-clean-and-plain-stops", [[_stop("ValueError")], [_stop()], [_stop("OutOfRangeError")]],
               ("COORD-3", "COORD-4", *_AFTER)),
    _coord_row("coord-join-while-stopping",
               [[_stop("ValueError")], [Op("wait_for_stop")], [Op("join", ("T1",), timeout=1)]],
               ("COORD-4", "COORD-10", "COORD-13", "COORD-14", *_AFTER)),
    _coord_row("coord-clear-stop",
               [[_stop("ValueError"), Op("clear_stop"), _stop("KeyError")],
                [Op("should_stop"), _stop("TypeError")]],
               ("COORD-2", "COORD-4", "COORD-8", *_AFTER)),
    _coord_row("coord-join-waits-for-registered",
               [[Op("wait_for_stop")], [_stop("ValueError")], [Op("join")]],
               ("COORD-11", "COORD-12", "COORD-13", *_AFTER), setup=register_t0),
    _coord_row("coord-grace-period",
               [[Op("wait_release")], [_stop()], [Op("join", ("T0",), timeout=1), Op("release")]],
               ("COORD-13", "COORD-14", "COORD-15"), checks=(grace_gave_up,), model=False, finish=False),
    _coord_row("coord-looper", [[_stop("ValueError")]],
               ("LOOP-1", "LOOP-2", "LOOP-3", "COORD-4", "COORD-9", "COORD-12", *_AFTER),
               setup=start_looper, checks=(looper_stopped,), more_threads="looper"),
    _coord_row("coord-3x2",
               [[_stop("ValueError"), Op("should_stop")], [Op("wait_for_stop"), Op("clear_stop")],
                [_stop("KeyError"), _stop("OutOfRangeError")]],
               ("COORD-2", "COORD-3", "COORD-4", "COORD-8", "COORD-10", *_AFTER), profile="nightly"),
    _coord_row("coord-3x3",
               [[_stop("ValueError"), Op("clear_stop"), _stop("KeyError")],
                [Op("wait_for_stop"), _stop("TypeError"), Op("should_stop")],
                [Op("join", ("T1",), timeout=1), Op("raise_requested_exception"), _stop("OutOfRangeError")]],
               ("COORD-2", "COORD-3", "COORD-4", "COORD-8", "COORD-10", "COORD-13", "COORD-14", *_AFTER),
               profile="nightly"),
]
