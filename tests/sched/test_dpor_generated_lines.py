"""DPOR against the unreduced search on generated programs at line granularity (SCHED-37).

The sync-granularity generator (``test_dpor_generated``) runs each operation through one
dispatching function, whose many lines would make the unreduced search at line
granularity far too long.  Here Hypothesis writes the program's source instead: each
thread is a few lines of straight code over plain shared state (a dict's item, an
object's attribute, a list), a lock and an Event, written to a file and imported, so
that every line is the user's and a scheduling point.  This is where footprints come
from the memory tracer (SCHED-30): a lost update, a read between two writes, a write
under a lock read without it.  The set of outcomes of DPOR's unbounded level must equal
that of the unreduced search.  Some lines make their accesses in C (``setattr``,
``operator.setitem``, a container's method, ``sorted``, ``bisect.insort``, which the
tracer does not know) or in a call whose argument is a scheduling point (SCHED-41,
SCHED-42, SCHED-43, SCHED-44).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from tests.sched.dpor_oracle import compare
from tests.sched.programs import needs_line_granularity
from tests.sched.shapes import import_program

# One line each (``{k}`` is the thread's number, so that two writers write apart).
LINES = {
    "incr": "box['v'] += 1",
    "write": "box['v'] = {k}",
    "read": "seen.append(box['v'])",
    "attr_write": "obj.a = {k}",
    "attr_read": "seen.append(obj.a)",
    "append": "log.append({k})",
    "locked_incr": "with lock: box['w'] += 1",
    "locked_read": "with lock: seen.append(box['w'])",
    "unlocked_write": "box['w'] = {k}",
    "set": "ev.set()",
    "is_set": "seen.append(ev.is_set())",
    "wait": "seen.append(ev.wait(0.1))",
    # Made by a call whose argument is a scheduling point (SCHED-41), or in C (SCHED-42..44).
    "append_is_set": "log.append(ev.is_set())",
    "setattr": "setattr(obj, 'a', {k})",
    "getattr": "seen.append(getattr(obj, 'a'))",
    "vars_write": "vars(obj)['a'] = {k}",
    "setitem": "operator.setitem(box, 'v', {k})",
    "update": "box.update(v={k})",
    "extend": "log.extend([{k}])",
    "sorted": "seen.append(tuple(sorted(log)))",
    "insort": "bisect.insort(log, {k})",
    "truth": "seen.append(1 if log else 0)",  # a truth test: C reads the size (SCHED-58)
}

_HEADER = '''\
import bisect
import operator
import threading

from tests.sched.dpor_oracle import report


class Obj:
    a = 0


def program():
    box, obj, log = {{'v': 0, 'w': 0}}, Obj(), []
    lock, ev = threading.Lock(), threading.Event()
    seens = [[] for _ in range({n})]
'''


def source(plan: tuple[tuple[str, ...], ...]) -> str:
    """The module whose ``program`` runs ``plan``: thread 0 is the main thread, which
    starts the others, runs its own lines, joins them and reports the final state."""
    out = [_HEADER.format(n=len(plan))]
    for k, ops in enumerate(plan[1:], start=1):
        out.append(f"    def t{k}(seen=seens[{k}]):")
        out.extend(f"        {LINES[op].format(k=k)}" for op in ops)
    out.append("    threads = [" + ", ".join(
        f"threading.Thread(target=t{k})" for k in range(1, len(plan))) + "]")
    out.append("    for t in threads:")
    out.append("        t.start()")
    out.append("    seen = seens[0]")
    out.extend(f"    {LINES[op].format(k=0)}" for op in plan[0])
    out.append("    for t in threads:")
    out.append("        t.join()")
    out.append("    report((box['v'], box['w'], obj.a, tuple(log), tuple(map(tuple, seens))))")
    return "\n".join(out) + "\n"


_counter = itertools.count()


def load(plan: tuple[tuple[str, ...], ...], directory) -> object:
    """Write ``plan``'s source into ``directory`` and import its ``program``."""
    return import_program(directory / f"generated_{next(_counter)}.py", source(plan))


MAX_RUNS = 800  # of the unreduced search, per program
_lines = st.lists(st.sampled_from(sorted(LINES)), min_size=1, max_size=2).map(tuple)
plans = st.one_of(
    st.tuples(_lines, _lines),  # the main thread and one other
    st.tuples(st.just(()), *[st.sampled_from(sorted(LINES)).map(lambda op: (op,))] * 2),
)
EXAMPLES = max(40, settings().max_examples // 3)


@needs_line_granularity
def test_a_generated_program_is_what_it_says(tmp_path):
    """The generator's own check: a lost update shows up as two outcomes."""
    program = load((("incr",), ("incr",)), tmp_path)
    reduced, full, _, _ = compare(program, granularity="line")
    assert {o[1][0] for o in full} == {1, 2}
    assert reduced == full


@needs_line_granularity
@pytest.mark.timeout(max(300, 6 * EXAMPLES))
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])
@given(plans)
def test_dpor_agrees_with_the_unreduced_search_at_line_granularity(tmp_path, plan):
    """SCHED-37, SCHED-30"""
    try:
        reduced, full, _, _ = compare(load(plan, tmp_path), granularity="line",
                                      max_runs=MAX_RUNS)
    except AssertionError as exc:
        if "not exhausted" in str(exc):
            reject()  # too many schedules for the unreduced search: not a useful example
        raise
    assert reduced == full, (plan, full - reduced, reduced - full)
