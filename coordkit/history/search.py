"""The linearizability checker: Wing and Gong's search in Lowe's form (HIST-5..8).

``check(history, model)`` decides whether some total order of the history's
operations, consistent with real time, makes every outcome the model's
(HIST-6).  A *model* is any object with ``init()`` and ``apply(state, op)``
(HIST-5, ``Model``); the checker knows nothing else about it, and nothing
about queues.  The rules are in ``specs/history.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from coordkit.errors import NotLinearizableError, SearchBudgetExceeded
from coordkit.history.records import BLOCKED, History, Operation

__all__ = [
    "Model",
    "NotLinearizableError",
    "Report",
    "SearchBudgetExceeded",
    "SequentialModel",
    "assert_linearizable",
    "check",
    "default_successors",
]


# ---------------------------------------------------------------------------
# Models (HIST-5)
# ---------------------------------------------------------------------------


@runtime_checkable
class Model(Protocol):
    """A pure sequential model (HIST-5).

    ``init()`` returns the first state; ``apply(state, op)`` returns
    ``(new_state, expected_outcome)`` for ``op`` taking effect in ``state``, or
    ``(state, BLOCKED)`` when it cannot take effect there (it would wait).
    States must be hashable and must never be mutated.  A model may also define
    ``successors(state, op) -> Iterable[state]``: every state ``op`` may leave
    behind when its recorded outcome is ``op.outcome`` (None for a pending
    operation with no known outcome); when it does not, the checker derives it
    from ``apply``.

    Optional search hints, which change the speed and never the verdict:
    ``prepare(operations)`` (the whole history, or None to switch hints drawn
    from it off), ``read_only(op)`` (True when ``op`` leaves every state it
    fits in unchanged) and ``candidate_key(op)`` (the order in which to try the
    operations that may go next).  See ``FIFOModel`` and HIST-5, HIST-7.
    """

    def init(self) -> Hashable: ...

    def apply(self, state: Any, op: Operation) -> tuple[Any, Any]: ...


class SequentialModel:
    """A convenient base class: ``successors`` derived from ``apply`` (HIST-5)."""

    def init(self) -> Hashable:  # pragma: no cover - abstract
        raise NotImplementedError

    def apply(self, state: Any, op: Operation) -> tuple[Any, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def successors(self, state: Any, op: Operation) -> Iterable[Any]:
        """The states ``op`` can leave: apply's, when its expected outcome is the recorded one."""
        return default_successors(self, state, op)


def default_successors(model: Any, state: Any, op: Operation) -> list[Any]:
    """``apply``'s new state, if its expected outcome is the recorded one (or none is recorded).

    What the checker uses for a model without ``successors`` (HIST-5).
    """
    new_state, expected = model.apply(state, op)
    if expected is BLOCKED:
        return []
    if op.outcome is None or expected == op.outcome:
        return [new_state]
    return []


# ---------------------------------------------------------------------------
# The checker (HIST-6, HIST-7, HIST-8)
# ---------------------------------------------------------------------------


@dataclass
class Report:
    """The checker's answer (HIST-8).

    When ``linearizable`` is False:

    * ``op`` is the first operation that cannot be linearized: the one whose
      return is the earliest event that no linearization of the history up to
      it can pass;
    * ``window`` is a smallest set of operations, ``op`` included, that overlap
      ``op`` in real time and together with everything that returned before
      ``op`` was called cannot be ordered, while without ``op`` they can;
    * ``states`` are the model states from which the search tried ``op`` and
      failed at that point (at most ``max_states``), and ``expected`` the
      outcome the model gives ``op`` in each;
    * ``approximate`` is True when the searches that pin these down (run
      without the model's whole-history hints) ran out of ``max_steps``: then
      ``op`` is where the hinted search got stuck and ``window`` is not shrunk.
    """

    linearizable: bool
    operations: int
    steps: int
    order: list[Operation] = field(default_factory=list)
    op: Operation | None = None
    window: list[Operation] = field(default_factory=list)
    states: list[Any] = field(default_factory=list)
    expected: list[Any] = field(default_factory=list)
    approximate: bool = False

    def __bool__(self) -> bool:
        return self.linearizable

    def explain(self) -> str:
        """A readable account of the verdict."""
        if self.linearizable:
            return f"linearizable: {self.operations} operations, {self.steps} search steps"
        assert self.op is not None
        origin = min(o.call for o in self.window)
        lines = [
            f"NOT linearizable ({self.operations} operations, {self.steps} search steps).",
            f"First operation that cannot be linearized: {self.op.describe(origin)}",
            f"Smallest window that cannot be ordered ({len(self.window)} operations, "
            "after everything that returned before it):",
            *(("  " + o.describe(origin)) for o in self.window),
            "Model states when it was tried, and what the model expected of it there:",
            *(f"  {s!r}: {e!r}" for s, e in zip(self.states, self.expected)),
        ]
        if self.approximate:
            lines.append("(approximate: the search budget ran out while pinning down the window)")
        return "\n".join(lines)


_INF = math.inf


@dataclass
class _Entry:
    op: Operation
    ret: float  # the return time in this search; inf when optional
    optional: bool  # may stay unlinearized (pending, or returns after the prefix)


@dataclass
class _Result:
    ok: bool
    steps: int
    order: list[int]
    stuck_at: int  # event position of the furthest return the search could not pass
    stuck_op: int  # entry index of that return's operation
    stuck_states: list[Any]


def _successor_fn(model: Any) -> Callable[[Any, Operation], Iterable[Any]]:
    successors = getattr(model, "successors", None)
    if callable(successors):
        return successors
    return lambda state, op: default_successors(model, state, op)


def _search(
    entries: Sequence[_Entry], model: Any, init: Any, max_steps: int | None, max_states: int
) -> _Result:
    """Wing and Gong's linearizability search, Lowe's just-in-time form, memoised (HIST-7).

    Events (calls and returns) sorted by time form a doubly linked list.  The
    *candidates* are the operations whose calls come before the first return
    still in the list: exactly the operations that may be linearized next.  The
    search linearizes one (applies it to the model and unlinks its call and
    return), and when none fits it is stuck at that first return and
    backtracks.  Candidates are tried in order of their return times, so a
    call that waited long (and so probably took effect late) is tried last.
    A configuration, the set of linearized operations (a bit mask) plus the
    model state, is explored at most once.
    """
    successors = _successor_fn(model)
    read_only_fn = getattr(model, "read_only", None)
    n = len(entries)
    # Events: (time, 0 for call / 1 for return, op). At equal times calls sort
    # first, so equal stamps count as overlapping (HIST-2).
    events = sorted(
        [(e.op.call, 0, i) for i, e in enumerate(entries)] + [(e.ret, 1, i) for i, e in enumerate(entries)]
    )
    size = len(events)
    head = size  # sentinel
    nxt = [*range(1, size), -1, 0 if size else -1]
    prv = [head, *range(size - 1), -1]
    is_call = [kind == 0 for _, kind, _ in events]
    ev_op = [i for _, _, i in events]
    call_pos = [0] * n
    ret_pos = [0] * n
    for pos, (_, kind, i) in enumerate(events):
        if kind == 0:
            call_pos[i] = pos
        else:
            ret_pos[i] = pos
    optional = [e.optional for e in entries]
    ops = [e.op for e in entries]
    hint_fn = getattr(model, "candidate_key", None)
    hint = [(hint_fn(op), op.call) for op in ops] if callable(hint_fn) else None
    read_only = [bool(read_only_fn(op)) if callable(read_only_fn) else False for op in ops]

    def unlink(pos: int) -> None:
        p, q = prv[pos], nxt[pos]
        nxt[p] = q
        if q != -1:
            prv[q] = p

    def relink(pos: int) -> None:
        p, q = prv[pos], nxt[pos]
        nxt[p] = pos
        if q != -1:
            prv[q] = pos

    def candidates() -> tuple[list[int], int]:
        """The operations that may go next, in the order to try; and the first return's position."""
        found = []
        pos = nxt[head]
        while pos != -1 and is_call[pos]:
            found.append(ev_op[pos])
            pos = nxt[pos]
        if hint is not None:
            found.sort(key=hint.__getitem__)
        return found, pos

    required = n - sum(optional)
    cache: set[tuple[int, Any]] = set()
    # Frames: (candidates, index of the one linearized, its successor states,
    # index of the next successor to try, state before it).  A read-only
    # operation linearized at once leaves a frame with no successors left, and
    # no further candidates (see the main loop).
    stack: list[tuple[list[int], int, list[Any], int, Any]] = []
    state = init
    mask = 0
    done_required = 0
    steps = 0
    stuck_at, stuck_op, stuck_states = -1, -1, []

    def descend(cands: list[int], ci: int, alts: list[Any] | None, ai: int) -> bool:
        """Linearize the first untried (candidate, successor) from (ci, ai) on; False if none."""
        nonlocal state, mask, done_required
        while ci < len(cands):
            i = cands[ci]
            if alts is None:
                alts = list(successors(state, ops[i]))
            bit = 1 << i
            while ai < len(alts):
                after = alts[ai]
                ai += 1
                key = (mask | bit, after)
                if key in cache:
                    continue
                cache.add(key)
                stack.append((cands, ci, alts, ai, state))
                state = after
                mask |= bit
                if not optional[i]:
                    done_required += 1
                unlink(call_pos[i])
                unlink(ret_pos[i])
                return True
            ci, alts, ai = ci + 1, None, 0
        return False

    def stuck(first_return: int) -> None:
        """The current configuration cannot get past ``first_return``: keep the furthest."""
        nonlocal stuck_at, stuck_op, stuck_states
        if first_return > stuck_at:
            stuck_at, stuck_op, stuck_states = first_return, ev_op[first_return], []
        if first_return == stuck_at and len(stuck_states) < max_states and state not in stuck_states:
            stuck_states.append(state)

    def _linearize_read_only(cands: list[int]) -> bool | None:
        """Linearize a read-only candidate that fits now, without branching.

        If an operation fits in this state and leaves every state it fits in
        unchanged (the model's ``read_only``), then whenever some linearization
        goes on from here, one goes on with that operation first: moving it
        forward changes no other state.  So it is linearized at once and the
        other candidates are not tried here.  Returns True when it did that,
        False when that configuration was already explored (so this one fails
        too), None when there is no such candidate.
        """
        nonlocal state, mask, done_required
        for i in cands:
            if not read_only[i]:
                continue
            alts = list(successors(state, ops[i]))
            if len(alts) != 1 or alts[0] != state:
                continue
            key = (mask | (1 << i), state)
            if key in cache:
                return False
            cache.add(key)
            stack.append(([i], 0, alts, 1, state))  # nothing else to try in this frame
            mask |= 1 << i
            if not optional[i]:
                done_required += 1
            unlink(call_pos[i])
            unlink(ret_pos[i])
            return True
        return None

    while True:
        if done_required == required:
            return _Result(True, steps, [frame[0][frame[1]] for frame in stack], -1, -1, [])
        steps += 1
        if max_steps is not None and steps > max_steps:
            raise SearchBudgetExceeded(
                f"the linearizability search gave up after max_steps={max_steps} steps "
                f"({n} operations); raise max_steps or check a shorter history"
            )
        cands, first_return = candidates()
        forced = _linearize_read_only(cands)
        if forced is True or (forced is None and descend(cands, 0, None, 0)):
            continue
        stuck(first_return)
        # Backtrack until some frame has another (candidate, successor) to try.
        while True:
            if not stack:
                return _Result(False, steps, [], stuck_at, stuck_op, stuck_states)
            cands, ci, alts, ai, before = stack.pop()
            i = cands[ci]
            relink(ret_pos[i])
            relink(call_pos[i])
            mask &= ~(1 << i)
            if not optional[i]:
                done_required -= 1
            state = before
            steps += 1
            if descend(cands, ci, alts, ai):
                break
            stuck(candidates()[1])  # this configuration is exhausted too


def _entries(ops: Sequence[Operation], cut: float = _INF) -> list[_Entry]:
    """Search entries for ``ops`` seen up to time ``cut``: later returns become optional."""
    result = []
    for op in ops:
        if op.ret is None or op.ret > cut:
            result.append(_Entry(op, _INF, True))
        else:
            result.append(_Entry(op, float(op.ret), False))
    return result


def _as_operations(history: History | Iterable[Operation]) -> list[Operation]:
    if isinstance(history, History):
        return history.operations()
    if isinstance(history, (str, bytes)) or not isinstance(history, Iterable):
        raise TypeError(
            f"history must be a History or an iterable of Operation; got {history!r}"
        )
    ops = list(history)
    for op in ops:
        if not isinstance(op, Operation):
            raise TypeError(f"history must contain only Operation objects; got {op!r}")
        if op.ret is not None and op.ret < op.call:
            raise ValueError(f"history: operation {op.describe()} returned before it was called")
    return ops


def _check_model(model: object) -> None:
    if not (callable(getattr(model, "init", None)) and callable(getattr(model, "apply", None))):
        raise TypeError(
            f"model must have init() and apply(state, op) (see coordkit.history.Model); got {model!r}"
        )


def check(
    history: History | Iterable[Operation],
    model: Any,
    *,
    max_steps: int | None = 5_000_000,
    max_states: int = 5,
    minimize: bool = True,
) -> Report:
    """Decide whether ``history`` is linearizable with respect to ``model`` (HIST-6..8).

    Returns a ``Report`` (true in a boolean context when linearizable).  When
    it is, ``report.order`` is one linearization.  When it is not, the report
    names the first operation that cannot be linearized and the smallest
    window around it (HIST-8); ``minimize=False`` skips shrinking the window
    (it is then every operation overlapping that one).

    Raises:
        TypeError: ``history`` or ``model`` is not what is described above.
        ValueError: ``max_steps`` or ``max_states`` is not a positive int.
        SearchBudgetExceeded: the search took more than ``max_steps`` steps.
    """
    ops = _as_operations(history)
    _check_model(model)
    prepare = getattr(model, "prepare", None)
    if callable(prepare):
        prepare(ops)
    bad_steps = isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
    if max_steps is not None and bad_steps:
        raise ValueError(f"check(max_steps) must be None or an int >= 1; got {max_steps!r}")
    if isinstance(max_states, bool) or not isinstance(max_states, int) or max_states < 1:
        raise ValueError(f"check(max_states) must be an int >= 1; got {max_states!r}")
    init = model.init()
    entries = _entries(ops)
    result = _search(entries, model, init, max_steps, max_states)
    if result.ok:
        return Report(True, len(ops), result.steps, [entries[i].op for i in result.order])
    return _failure_report(ops, entries, model, init, result, max_steps, max_states, minimize)


def _failure_report(ops: list[Operation], entries: list[_Entry], model: Any, init: Any, result: _Result,
                    max_steps: int | None, max_states: int, minimize: bool) -> Report:
    """The report of a history that is not linearizable: its op, window and states (HIST-8).

    The report is about prefixes and parts of the history, so hints drawn from
    the whole history no longer hold: they are switched off (HIST-5) and the
    search runs again, to find where it gets stuck without them.
    """
    prepare = getattr(model, "prepare", None)
    if callable(prepare):
        prepare(None)
    steps = result.steps
    approximate = False
    try:
        exact = _search(entries, model, init, max_steps, max_states)
        steps += exact.steps
        assert not exact.ok, "a model's hints changed the verdict"
        result = exact
    except SearchBudgetExceeded:
        approximate = True
    failed = entries[result.stuck_op].op
    assert failed.ret is not None
    # The prefix up to the failing return: later calls are irrelevant, later
    # returns become optional.
    prefix = [op for op in ops if op.call <= failed.ret]
    before = [op for op in prefix if op.ret is not None and op.ret < failed.call]
    window = [op for op in prefix if not (op.ret is not None and op.ret < failed.call)]
    if minimize and not approximate:
        window, more, approximate = _smallest_window(failed, before, window, model, init, max_steps)
        steps += more
    window.sort(key=lambda o: (o.call, o.index))
    expected = [model.apply(s, failed)[1] for s in result.stuck_states]
    return Report(
        False, len(ops), steps, [], failed, window, list(result.stuck_states), expected, approximate
    )


def _smallest_window(failed: Operation, before: list[Operation], window: list[Operation], model: Any,
                     init: Any, max_steps: int | None) -> tuple[list[Operation], int, bool]:
    """Shrink ``window`` one operation at a time, latest call first (HIST-8).

    An operation goes when, after ``before``, the rest still cannot be ordered
    while without ``failed`` it can.  Returns the window, the search steps
    taken, and whether the budget ran out (the window is then what was kept).
    """
    assert failed.ret is not None
    cut = failed.ret
    steps = 0

    def linearizable(sub: list[Operation]) -> bool:
        nonlocal steps
        r = _search(_entries(before + sub, cut), model, init, max_steps, 1)
        steps += r.steps
        return r.ok

    kept = list(window)
    try:
        for op in sorted(window, key=lambda o: o.call, reverse=True):
            if op is failed:
                continue
            trial = [o for o in kept if o is not op]
            if not linearizable(trial) and linearizable([o for o in trial if o is not failed]):
                kept = trial
    except SearchBudgetExceeded:
        return kept, steps, True
    return kept, steps, False


def assert_linearizable(
    history: History | Iterable[Operation],
    model: Any,
    context: str = "",
    **options: Any,
) -> Report:
    """``check``, raising ``NotLinearizableError`` (an AssertionError) with the report when it fails.

    ``context`` (for example the seed of a stress run) starts the message.
    """
    report = check(history, model, **options)
    if not report:
        raise NotLinearizableError(report, context)
    return report
