"""Generated programs whose shape varies, for DPOR's soundness evidence (SCHED-50).

The older generators (``test_dpor_generated``, ``test_dpor_generated_lines``) start every
thread from the main thread before any operation runs.  Here a *plan* says, per thread,
what it is (a thread, a daemon, a ``threading.Timer``), who makes its ``Thread`` object
(the main thread before anything runs, or the thread that starts it, just before), who
starts it and between which operations, and what it runs; the main thread ends by
joining a subset of the others and reporting.  The operations observe threads not yet
started, running or ended (``is_alive``, ``ident``, ``join`` without a timeout and with
0 or a small one, ``enumerate``, ``active_count``), start a thread a second time (which
raises, or starts it when it races the first start), cancel Timers, make objects inside
threads, wait with zero and small timeouts on every primitive, and touch plain shared
state directly and from C (``setattr``/``getattr``, ``dict.update``, ``list.extend``, a
list ``append`` whose argument is itself a scheduling point).  A thread's body may be one
call of C code (a thread whose target is ``log.append``, a Timer whose function is
``d.__setitem__``: SCHED-59).

A plan is turned into source (``source``), written to a file and imported (``load``), so
that at ``line`` granularity every line is the user's and a scheduling point; the same
source runs at ``sync`` and ``auto``.  Each thread appends what it observed to its own
list; the main thread reports those lists and the shared state, each read through a
name the memory tracer can see (SCHED-30), so that the report is no blind spot.
``plans(granularity)`` is the Hypothesis strategy: a few operation kinds per plan, so
that its threads meet on one object, and sizes that keep the unreduced search small at
each granularity.  A plan's ``repr`` is Python that rebuilds it (``replay`` in the campaign).
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any, NamedTuple

from hypothesis import strategies as st

__all__ = ["C_KINDS", "OPS", "Plan", "Spec", "load", "plans", "source"]

T = 0.05  # the small timeout (virtual seconds): long enough for another thread to act

# One operation: a name and its arguments.  ``{k}`` is the running thread's number,
# ``{j}`` a target thread's, ``{t}`` a timeout; ``seen`` is the running thread's list.
# Each renders to one line unless its template holds a newline.
OPS: dict[str, str] = {
    # threads: starting, observing, joining, cancelling
    "alive": "seen.append(threads[{j}] and threads[{j}].is_alive())",
    "ident": "seen.append(threads[{j}] and threads[{j}].ident is not None)",
    "join": "seen.append(threads[{j}].join({t}) or threads[{j}].is_alive())",
    "enumerate": "seen.append(tuple(t in threading.enumerate() for t in threads))",
    "active_count": "seen.append(threading.active_count())",
    "cancel": "threads[{j}] and threads[{j}].cancel()",
    "start_again": "threads[{j}] and threads[{j}].start()",  # a second start raises
    # a lock, tried, timed or blocking; a lock made inside a thread
    "lock": "if lock.acquire(timeout={t}): log.append({k}); lock.release()",
    "trylock": "if lock.acquire(blocking=False): log.append({k}); lock.release()",
    "with_lock": "with lock: log.append({k})",
    "make_lock": "box['L'] = threading.Lock()",
    "use_lock": "seen.append(box.get('L') is not None and box['L'].acquire(timeout={t}))",
    # an Event
    "set": "ev.set()",
    "clear": "ev.clear()",
    "is_set": "seen.append(ev.is_set())",
    "wait": "seen.append(ev.wait({t}))",
    "append_is_set": "log.append(ev.is_set())",  # the write's step is the point's
    # a Condition, a Semaphore, a one-slot queue, the clock
    "notify": "with cond: cond.notify()",
    "notify_all": "with cond: cond.notify_all()",
    "cwait": "with cond: seen.append(cond.wait({t}))",
    # critical sections (SCHED-80, SCHED-81): while-loop waits, read-only sections,
    # sections that conflict through a third object, nested locks in either order
    "cwait_while": "with cond:\n    while not box['v']:\n        cond.wait()\n    seen.append(box['v'])",
    "cwait_for": "with cond: seen.append(cond.wait_for(lambda: box['v']))",
    "cput": "with cond: box['v'] = {k} + 1; cond.notify_all()",
    "cput_one": "with cond: box['v'] = {k} + 1; cond.notify()",
    "ctake": ("with cond:\n    while not box['v']:\n        cond.wait()\n    box['v'] = 0\n"
              "    cond.notify_all()"),
    "cread": "with cond: seen.append(box['v'])",
    # the await rule's edges (SCHED-96): a write under the lock that notifies no one (a
    # lost wake-up), a notify before the write, a check that read before taking the lock,
    # while-loop waits on one line (line granularity draws only those) and with a timeout
    "cwrite": "with cond: box['v'] = {k} + 1",
    "cnotify_first": "with cond: cond.notify_all(); box['v'] = {k} + 1",
    "ctake_for": "with cond: cond.wait_for(lambda: box['v']); box['v'] = 0; cond.notify_all()",
    "cread_then_wait": ("x = box['v']; cond.acquire(); cond.wait_for(lambda: box['v']); "
                        "seen.append((x, box['v'])); cond.release()"),
    "cwait_while_timed": ("with cond:\n    while not box['v']:\n        if not cond.wait({t}):\n"
                          "            break\n    seen.append(box['v'])"),
    "cwait_for_timed": "with cond: seen.append(cond.wait_for(lambda: box['v'], {t}))",
    "lock_read": "with lock: seen.append(obj.a)",
    "lock_write": "with lock: obj.a = {k}",
    "lock2_read": "with lock2: seen.append(obj.a)",
    "nested": "with lock, lock2: log.append({k})",
    "nested_rev": "with lock2, lock: log.append({k})",
    "sem_acquire": "seen.append(sem.acquire(timeout={t}))",
    "sem_try": "seen.append(sem.acquire(blocking=False))",
    "sem_release": "sem.release()",
    "put": "try: q.put({k}, timeout={t})\nexcept queue.Full: seen.append('full')",
    "get": "try: seen.append(q.get(timeout={t}))\nexcept queue.Empty: seen.append('empty')",
    "sleep": "time.sleep({t})",
    # plain shared state, from bytecode and from C
    "write": "box['v'] = {k}",
    "incr": "box['v'] += 1",
    "read": "seen.append(box['v'])",
    "attr_write": "obj.a = {k}",
    "attr_read": "seen.append(obj.a)",
    "setattr": "setattr(obj, 'a', {k})",
    "getattr": "seen.append(getattr(obj, 'a'))",
    "update": "d.update(v={k})",
    "dict_get": "seen.append(d.get('v'))",
    "extend": "log.extend([{k}])",
    "len": "seen.append(len(log))",
}
TARGETED = frozenset({"alive", "ident", "join", "cancel", "start_again"})
TIMED = {  # the timeouts an operation is drawn with (None: wait without one)
    "join": (None, 0, T), "lock": (0, T, -1), "use_lock": (0, T), "wait": (None, 0, T),
    "cwait": (0, T), "cwait_while_timed": (0, T), "cwait_for_timed": (0, T),
    "sem_acquire": (0, T), "put": (0, T), "get": (0, T), "sleep": (0, T),
}
KINDS = ("thread", "daemon", "timer", "c_thread", "c_timer")
# Threads whose body is one call of C code the tracer never traces (SCHED-59): a thread
# whose target is ``log.append``, a Timer whose function is ``d.__setitem__``.
C_KINDS = frozenset({"c_thread", "c_timer"})


class Spec(NamedTuple):
    """One thread of a plan: what it is, who makes its object ("main": the main thread
    before anything runs; "starter": the thread that starts it, just before), its Timer
    interval, and its operations (``("start", j)`` starts thread ``j``)."""

    kind: str
    made: str
    interval: float
    ops: tuple[tuple[Any, ...], ...]


class Plan(NamedTuple):
    """Thread 0 is the main thread; it ends by joining ``joins`` (in order) and reporting."""

    threads: tuple[Spec, ...]
    joins: tuple[int, ...]


_HEADER = '''\
import queue
import threading
import time

from tests.sched.dpor_oracle import report


class Obj:
    a = 0


def program():
    box, obj, d, log = {{'v': 0}}, Obj(), {{}}, []
    lock, ev, cond = threading.Lock(), threading.Event(), threading.Condition()
    lock2 = threading.Lock()
    sem, q = threading.Semaphore(1), queue.Queue(maxsize=1)
    threads = [threading.current_thread()] + [None] * {others}
    {seens} = {lists}
'''


def _line(op: tuple[Any, ...], k: int, plan: Plan) -> str:
    name = op[0]
    if name == "start":
        j = op[1]
        return _make(j, plan.threads[j]) + f"threads[{j}].start()" if (
            plan.threads[j].made == "starter") else f"threads[{j}].start()"
    args = {"k": k, "j": op[1] if name in TARGETED else None,
            "t": op[-1] if name in TIMED else None}
    return OPS[name].format(**args)


def _make(j: int, spec: Spec) -> str:
    """The statement (and ``; ``) that makes thread ``j``'s object."""
    if spec.kind == "c_thread":
        return f"threads[{j}] = threading.Thread(target=log.append, args=({j},)); "
    if spec.kind == "c_timer":
        return f"threads[{j}] = threading.Timer({spec.interval}, d.__setitem__, args=('v', {j})); "
    if spec.kind == "timer":
        return f"threads[{j}] = threading.Timer({spec.interval}, t{j}); "
    return f"threads[{j}] = threading.Thread(target=t{j}, daemon={spec.kind == 'daemon'}); "


def _body(ops: tuple[tuple[Any, ...], ...], k: int, plan: Plan, indent: str) -> list[str]:
    lines = [_line(op, k, plan) for op in ops] or ["pass"]
    return [indent + part for line in lines for part in line.split("\n")]


def source(plan: Plan) -> str:
    """The module whose ``program`` runs ``plan``."""
    n = len(plan.threads)
    names = [f"s{k}" for k in range(n)]
    out = [_HEADER.format(others=n - 1, seens=", ".join(names), lists=", ".join(["[]"] * n))]
    for k, spec in enumerate(plan.threads[1:], start=1):
        if spec.kind in C_KINDS:
            continue  # (its body is the C call its object is made with)
        out.append(f"    def t{k}(seen=s{k}):")
        out.extend(_body(spec.ops, k, plan, " " * 8))
    out.extend("    " + _make(j, spec).rstrip("; ") for j, spec in enumerate(plan.threads)
               if j and spec.made == "main")
    out.append("    seen = s0")
    out.extend(_body(plan.threads[0].ops, 0, plan, " " * 4))
    out.extend(f"    threads[{j}].join()" for j in plan.joins)
    out.append("    report((box['v'], obj.a, d.get('v'), tuple(log), box.get('L') is not None, "
               + ", ".join(f"tuple({name})" for name in names) + "))")
    return "\n".join(out) + "\n"


_counter = itertools.count()


def load(plan: Plan, directory: Path) -> Any:
    """Write ``plan``'s source into ``directory`` and import its ``program``."""
    return import_program(directory / f"shape_{next(_counter)}.py", source(plan))


def import_program(path: Path, text: str) -> Any:
    """Write ``text`` to ``path``, import it as a module of its own, return its ``program``
    (line granularity traces a program only from a real source file)."""
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.program


# What a granularity's plans may hold: at line granularity every line is a scheduling
# point, so its programs are smaller and its operations one line each.
SIZES = {  # threads (main included), operations per thread
    "sync": ((2, 4), (1, 3)),
    "auto": ((2, 4), (1, 3)),
    "line": ((2, 3), (1, 2)),
}
# The critical-section theme (SCHED-80, SCHED-81): Condition waits in a while loop and
# the sections that satisfy them, read-only sections, sections that conflict through a
# third object (``obj``, ``box``), nested locks in either order, ``notify`` against
# ``notify_all`` with several waiters; and a few plain operations on the same objects.
_SECTIONS_ONLY = ("cwait_while", "cwait_for", "cput", "cput_one", "ctake", "cread", "lock_read",
                  "lock_write", "lock2_read", "nested", "nested_rev", "cwrite", "cnotify_first",
                  "ctake_for", "cread_then_wait", "cwait_while_timed", "cwait_for_timed")
SECTIONS = (*_SECTIONS_ONLY, "with_lock", "notify", "notify_all", "cwait", "write", "read",
            "attr_write", "attr_read")
ANY_THEME = tuple(name for name in OPS if name not in _SECTIONS_ONLY)  # the older generator's
ONE_LINE = sorted(name for name, text in OPS.items() if "\n" not in text)


def _op(draw: Any, names: list[str], n: int, k: int) -> tuple[Any, ...]:
    name = draw(st.sampled_from(names))
    if name in TARGETED:
        others = [j for j in range(1, n) if j != k] or [k]
        j = draw(st.sampled_from(others))
        return (name, j, draw(st.sampled_from(TIMED["join"]))) if name == "join" else (name, j)
    if name in TIMED:
        return (name, draw(st.sampled_from(TIMED[name])))
    return (name,)


@st.composite
def plans(draw: Any, granularity: str = "sync", theme: str = "any") -> Plan:
    """A plan whose size suits ``granularity``; ``theme="sections"``: its operations are
    critical sections and what they meet (``SECTIONS``)."""
    (lo, hi), (ops_lo, ops_hi) = SIZES[granularity]
    pool = sorted(SECTIONS if theme == "sections" else ANY_THEME)
    if granularity == "line":
        pool = [name for name in pool if name in ONE_LINE]
    # A plan's few operation kinds (its theme): so that its threads meet on one object.
    names = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=5, unique=True))
    n = draw(st.integers(lo, hi))
    # The main thread may only start and join when two others run side by side.
    ops = [[_op(draw, names, n, k) for _ in range(draw(st.integers(ops_lo if k or n == 2 else 0,
                                                                    ops_hi)))]
           for k in range(n)]
    specs = [("main", "main", 0.0)]
    for k in range(1, n):
        kind = draw(st.sampled_from(KINDS))
        made = draw(st.sampled_from(("main", "starter")))
        interval = draw(st.sampled_from((0.0, T))) if kind in ("timer", "c_timer") else 0.0
        specs.append((kind, made, interval))
        if kind in C_KINDS:
            ops[k] = []  # its body is its C call
        if draw(st.sampled_from(("started",) * 9 + ("never",))) == "started":
            starters = [i for i in range(k) if specs[i][0] not in C_KINDS]
            starter = draw(st.sampled_from(starters))
            ops[starter].insert(draw(st.integers(0, len(ops[starter]))), ("start", k))
    joins = draw(st.permutations(range(1, n)))
    joins = [j for j in joins if draw(st.sampled_from(("joined", "joined", "not")))
             == "joined"]
    return Plan(tuple(Spec(kind, made, interval, tuple(body))
                      for (kind, made, interval), body in zip(specs, ops)), tuple(joins))


def _without_thread(plan: Plan, j: int) -> Plan:
    """``plan`` without thread ``j``: what targets it is dropped, later threads renumbered."""
    def keep(op: tuple[Any, ...]) -> bool:
        return not ((op[0] == "start" or op[0] in TARGETED) and op[1] == j)

    def renumber(op: tuple[Any, ...]) -> tuple[Any, ...]:
        if (op[0] == "start" or op[0] in TARGETED) and op[1] > j:
            return (op[0], op[1] - 1, *op[2:])
        return op

    threads = tuple(spec._replace(ops=tuple(renumber(op) for op in spec.ops if keep(op)))
                    for k, spec in enumerate(plan.threads) if k != j)
    return Plan(threads, tuple(i - (i > j) for i in plan.joins if i != j))


def smaller(plan: Plan) -> list[Plan]:
    """Plans one edit smaller than ``plan`` (a thread, an operation or a join fewer, a
    thread made by the main thread, a plain thread for a daemon or Timer, no timeout
    for a timed operation), most shrinking first: what a minimiser tries."""
    out = [_without_thread(plan, j) for j in range(1, len(plan.threads))]
    out += [plan._replace(joins=plan.joins[:i] + plan.joins[i + 1:]) for i in range(len(plan.joins))]
    for k, spec in enumerate(plan.threads):
        edits: list[dict[str, Any]] = [{"ops": spec.ops[:i] + spec.ops[i + 1:]}
                                       for i in range(len(spec.ops))]
        if k and spec.kind not in ("thread", *C_KINDS):
            edits.append({"kind": "thread", "interval": 0.0})
        if spec.kind == "c_timer":
            edits.append({"kind": "c_thread", "interval": 0.0})
        if k and spec.made != "main":
            edits.append({"made": "main"})
        edits += [{"ops": spec.ops[:i] + (op[:-1] + (0,),) + spec.ops[i + 1:]}
                  for i, op in enumerate(spec.ops) if op[0] in TIMED and op[-1] not in (0, None)]
        out += [plan._replace(threads=plan.threads[:k] + (spec._replace(**change),)
                              + plan.threads[k + 1:]) for change in edits]
    return out
