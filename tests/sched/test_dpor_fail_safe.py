"""The tracer's analysis is fail-safe: what it does not understand depends on everything.

Every call site of the programs DPOR is checked on is classified: a call of the user's
code (traced), of the synchronisation library (modelled), of a C function or method the
tracer names (SCHED-43), or a step that depends on everything (SCHED-42); none is
silently dropped.  An instruction the analysis does not know is opaque: its step
depends on everything, never "no access" (SCHED-58).
"""

from __future__ import annotations

import functools
import inspect
import threading
import types
from pathlib import Path

import pytest

from coordkit.engine import accesses, tracing
from coordkit.engine.accesses import access_sites, seen_instructions
from coordkit.engine.points import ANY, WRITE, Effect
from coordkit.engine.run import RunOptions, Session
from coordkit.engine.schedulers import ReplayScheduler
from tests.sched import dpor_programs, shapes, test_dpor_generated_lines
from tests.sched.programs import needs_line_granularity

_PROGRAMS = dpor_programs.TRACER_PROGRAMS + dpor_programs.TRACER_LINE_PROGRAMS


def _codes(code: types.CodeType):
    """``code`` and the functions inside it (not a class body's code, which reads and
    writes names through a namespace the analysis does not follow: opaque)."""
    if code.co_flags & inspect.CO_OPTIMIZED:
        yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _shape_plan(name: str) -> shapes.Plan:
    """Two threads that each run operation ``name`` once (the other is thread 1)."""
    op: tuple = (name,)
    if name == "join":
        op = (name, 1, None)
    elif name in shapes.TARGETED:
        op = (name, 1)
    elif name in shapes.TIMED:
        op = (name, 0)
    main = shapes.Spec("thread", "main", 0.0, (("start", 1), op))
    return shapes.Plan((main, shapes.Spec("thread", "main", 0.0, (op,))), (1,))


def _generated(tmp_path: Path) -> list:
    """A sample of generated line programs: every line of each generator once."""
    out = [test_dpor_generated_lines.load(((line,), (line,)), tmp_path)
           for line in sorted(test_dpor_generated_lines.LINES)]
    c_bodies = shapes.Plan((shapes.Spec("main", "main", 0.0, (("start", 1), ("start", 2))),
                            shapes.Spec("c_thread", "main", 0.0, ()),
                            shapes.Spec("c_timer", "main", 0.0, ())), (1, 2))
    return out + [shapes.load(plan, tmp_path) for plan in (
        *map(_shape_plan, sorted(shapes.OPS)), c_bodies)]


def _every_instruction_is_understood(code: types.CodeType) -> None:
    sites = access_sites(code)
    for offset, _head, ins in seen_instructions(code):
        if ins.opname in accesses._CALLS:
            assert sites[offset].kind in ("call", "exit"), (code.co_name, ins)
        site = sites.get(offset)
        assert site is None or site.kind != "opaque", (code.co_name, ins)
        if site is not None and site.kind == "operand":
            assert site.owner is not None, (code.co_name, ins)  # an operand it names


def test_every_instruction_of_the_programs_is_understood(tmp_path):
    """SCHED-42, SCHED-58: in the functions of every differential program and of a sample
    of generated ones, each call instruction is a call site the tracer evaluates, no
    instruction is opaque and each truth test names its operand (a program whose step
    depended on everything here would check the reduction on nothing)."""
    functions = [*_PROGRAMS, *_generated(tmp_path)]
    for fn in functions:
        for code in _codes(fn.__code__):
            _every_instruction_is_understood(code)


def _kind(fn) -> str:
    """What a call of ``fn`` runs, told apart independently of the tracer's tables."""
    fn = getattr(fn, "__func__", fn)
    while isinstance(fn, functools.partial):
        fn = fn.func
    code = fn if isinstance(fn, types.CodeType) else getattr(fn, "__code__", None)
    if code is not None:
        return {"user": "traced", "modelled": "modelled"}.get(accesses._code_kind(code), "foreign")
    return "C"


@needs_line_granularity
def test_every_call_is_traced_modelled_named_or_any(tmp_path, monkeypatch):
    """SCHED-42, SCHED-43, SCHED-58: each call the programs make, run once at line
    granularity, is the user's code (traced), the library's (modelled), C code the tracer
    names, or unnamed (the step depends on everything): a call of foreign Python code is
    never taken for one that touches nothing."""
    seen: dict[str, set[str]] = {"traced": set(), "modelled": set(), "C": set(), "ANY": set(),
                                 "foreign": set()}
    calls = accesses._calls

    def recording(fn, bound, pos, kw, out):
        named = calls(fn, bound, pos, kw, out)
        seen["ANY" if not named else _kind(fn)].add(getattr(fn, "__qualname__", repr(fn)))
        return named

    monkeypatch.setattr(accesses, "_calls", recording)
    for program in [*_PROGRAMS, *_generated(tmp_path)]:
        with Session(RunOptions(granularity="line", max_steps=2_000), quiet=True) as session:
            session.run(program, ReplayScheduler([], strict=False), footprints=True)
    assert not seen["foreign"]
    assert seen["traced"] and seen["modelled"] and seen["C"] and seen["ANY"]
    assert {"setattr", "list.append", "dict.update", "dict.__setitem__"} <= seen["C"]
    assert "insort_right" in seen["C"] or "insort" in seen["C"]  # named since RACE-10


def _builds_a_tuple(box):
    pair = (box[0], box[0])  # BUILD_TUPLE, which the test makes unknown
    box[0] = pair


@needs_line_granularity
def test_an_instruction_the_analysis_does_not_know_depends_on_everything(monkeypatch):
    """SCHED-58: an instruction missing from the analysis's tables (as one a later Python
    adds would be) makes its step depend on everything, not touch nothing."""
    code = _builds_a_tuple.__code__

    def program():
        box = [0]
        t = threading.Thread(target=_builds_a_tuple, args=(box,))
        t.start()
        t.join()

    def effects():
        # (The sites, and the offsets the tracer derives from them, are cached per code.)
        accesses._sites_cache.pop(id(code), None)
        tracing._by_mode.clear()
        with Session(RunOptions(granularity="line"), quiet=True) as session:
            run = session.run(program, ReplayScheduler([], strict=False), footprints=True)
        accesses._sites_cache.pop(id(code), None)
        tracing._by_mode.clear()
        return [e for s in run.footprints if s.thread == 1 for e in s.footprint]

    opaque = Effect(ANY, WRITE, "BUILD_TUPLE")
    assert opaque not in effects()
    monkeypatch.setattr(accesses, "_NO_ACCESS", accesses._NO_ACCESS - {"BUILD_TUPLE"})
    assert opaque in effects()


@pytest.mark.parametrize("name", ["IMPORT_NAME", "LOAD_NAME", "MATCH_KEYS", "GET_AWAITABLE"])
def test_instructions_outside_the_tables_are_opaque(name):
    """SCHED-58: an import, a class body's names, pattern matching and ``await`` are not
    understood: opaque."""
    assert name not in accesses._NO_ACCESS
