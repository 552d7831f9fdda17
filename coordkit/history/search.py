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
    return _Linearizer(entries, model, init, max_states).run(max_steps)


class _Events:
    """The calls and returns of the entries sorted by time, as a doubly linked list whose
    head is a sentinel; an operation is unlinked (both its events) once linearized."""

    def __init__(self, entries: Sequence[_Entry], hint: list[Any] | None) -> None:
        # (time, 0 for call / 1 for return, op): at equal times calls sort first, so
        # equal stamps count as overlapping (HIST-2).
        events = sorted([(e.op.call, 0, i) for i, e in enumerate(entries)]
                        + [(e.ret, 1, i) for i, e in enumerate(entries)])
        size = len(events)
        self.head = size
        self.nxt = [*range(1, size), -1, 0 if size else -1]
        self.prv = [size, *range(size - 1), -1]
        self.is_call = [kind == 0 for _, kind, _ in events]
        self.op = [i for _, _, i in events]
        self.call_pos = [0] * len(entries)
        self.ret_pos = [0] * len(entries)
        for pos, (_, kind, i) in enumerate(events):
            (self.call_pos if kind == 0 else self.ret_pos)[i] = pos
        self.hint = hint

    def unlink(self, i: int) -> None:
        """Operation ``i`` is linearized: its call and return leave the list."""
        nxt, prv = self.nxt, self.prv
        for pos in (self.call_pos[i], self.ret_pos[i]):
            p, q = prv[pos], nxt[pos]
            nxt[p] = q
            if q != -1:
                prv[q] = p

    def relink(self, i: int) -> None:
        """Undo ``unlink(i)`` (the last unlink not undone)."""
        nxt, prv = self.nxt, self.prv
        for pos in (self.ret_pos[i], self.call_pos[i]):
            p, q = prv[pos], nxt[pos]
            nxt[p] = pos
            if q != -1:
                prv[q] = pos

    def candidates(self) -> tuple[list[int], int]:
        """The operations that may go next, in the order to try; and the first return's position."""
        found = []
        nxt, is_call, op = self.nxt, self.is_call, self.op
        pos = nxt[self.head]
        while pos != -1 and is_call[pos]:
            found.append(op[pos])
            pos = nxt[pos]
        if self.hint is not None:
            found.sort(key=self.hint.__getitem__)
        return found, pos


class _Linearizer:
    """One search (see ``_search``): the configuration it is in, the frames to backtrack
    to, the configurations explored, and the furthest return it got stuck at."""

    def __init__(self, entries: Sequence[_Entry], model: Any, init: Any, max_states: int) -> None:
        self.successors = _successor_fn(model)
        self.ops = [e.op for e in entries]
        self.optional = [e.optional for e in entries]
        read_only_fn = getattr(model, "read_only", None)
        self.read_only = [bool(read_only_fn(op)) if callable(read_only_fn) else False
                          for op in self.ops]
        hint_fn = getattr(model, "candidate_key", None)
        self.events = _Events(entries, [(hint_fn(op), op.call) for op in self.ops]
                              if callable(hint_fn) else None)
        self.required = len(entries) - sum(self.optional)
        self.max_states = max_states
        self.cache: set[tuple[int, Any]] = set()
        # Frames: (candidates, index of the one linearized, its successor states, index
        # of the next successor to try, state before it).  A read-only operation
        # linearized at once leaves a frame with no successors left, and no further
        # candidates (see ``_linearize_read_only``).
        self.stack: list[tuple[list[int], int, list[Any], int, Any]] = []
        self.state = init
        self.mask = 0
        self.done_required = 0
        self.steps = 0
        self.stuck_at, self.stuck_op, self.stuck_states = -1, -1, []

    def run(self, max_steps: int | None) -> _Result:
        while True:
            if self.done_required == self.required:
                return _Result(True, self.steps, [frame[0][frame[1]] for frame in self.stack],
                               -1, -1, [])
            self.steps += 1
            if max_steps is not None and self.steps > max_steps:
                raise SearchBudgetExceeded(
                    f"the linearizability search gave up after max_steps={max_steps} steps "
                    f"({len(self.ops)} operations); raise max_steps or check a shorter history"
                )
            cands, first_return = self.events.candidates()
            forced = self._linearize_read_only(cands)
            if forced is True or (forced is None and self._descend(cands, 0, None, 0)):
                continue
            self._stuck(first_return)
            if not self._backtrack():
                return _Result(False, self.steps, [], self.stuck_at, self.stuck_op, self.stuck_states)

    def _take(self, frame: tuple[list[int], int, list[Any], int, Any], i: int, after: Any) -> None:
        """Linearize operation ``i``, into state ``after``; ``frame`` is what to try instead."""
        self.stack.append(frame)
        self.state = after
        self.mask |= 1 << i
        if not self.optional[i]:
            self.done_required += 1
        self.events.unlink(i)

    def _descend(self, cands: list[int], ci: int, alts: list[Any] | None, ai: int) -> bool:
        """Linearize the first untried (candidate, successor) from (ci, ai) on; False if none."""
        cache = self.cache
        while ci < len(cands):
            i = cands[ci]
            if alts is None:
                alts = list(self.successors(self.state, self.ops[i]))
            mask = self.mask | 1 << i
            while ai < len(alts):
                after = alts[ai]
                ai += 1
                key = (mask, after)
                if key in cache:
                    continue
                cache.add(key)
                self._take((cands, ci, alts, ai, self.state), i, after)
                return True
            ci, alts, ai = ci + 1, None, 0
        return False

    def _stuck(self, first_return: int) -> None:
        """The current configuration cannot get past ``first_return``: keep the furthest."""
        if first_return > self.stuck_at:
            self.stuck_at, self.stuck_op, self.stuck_states = first_return, self.events.op[first_return], []
        if (first_return == self.stuck_at and len(self.stuck_states) < self.max_states
                and self.state not in self.stuck_states):
            self.stuck_states.append(self.state)

    def _linearize_read_only(self, cands: list[int]) -> bool | None:
        """Linearize a read-only candidate that fits now, without branching.

        If an operation fits in this state and leaves every state it fits in
        unchanged (the model's ``read_only``), then whenever some linearization
        goes on from here, one goes on with that operation first: moving it
        forward changes no other state.  So it is linearized at once and the
        other candidates are not tried here.  Returns True when it did that,
        False when that configuration was already explored (so this one fails
        too), None when there is no such candidate.
        """
        state = self.state
        for i in cands:
            if not self.read_only[i]:
                continue
            alts = list(self.successors(state, self.ops[i]))
            if len(alts) != 1 or alts[0] != state:
                continue
            key = (self.mask | (1 << i), state)
            if key in self.cache:
                return False
            self.cache.add(key)
            self._take(([i], 0, alts, 1, state), i, state)  # nothing else to try in this frame
            return True
        return None

    def _backtrack(self) -> bool:
        """Undo linearizations until some frame has another (candidate, successor) to try,
        and take it; False when every frame is exhausted."""
        while self.stack:
            cands, ci, alts, ai, before = self.stack.pop()
            i = cands[ci]
            self.events.relink(i)
            self.mask &= ~(1 << i)
            if not self.optional[i]:
                self.done_required -= 1
            self.state = before
            self.steps += 1
            if self._descend(cands, ci, alts, ai):
                return True
            self._stuck(self.events.candidates()[1])  # this configuration is exhausted too
        return False


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
