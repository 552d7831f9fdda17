"""DPOR against the unreduced search on the tracer's shapes of issue 30 (SCHED-37).

Each program here made DPOR miss an outcome on the tracer before issue 30's fix:

* an access made by a call recorded in the step before the call, or a loop's reads
  recorded once where it began (SCHED-41: ``append_of_a_point``, ``insert_of_a_point``,
  ``extend_of_a_point``, ``line_loop_vs_insert``);
* a call of code the tracer does not see, or an operand it could not name, whose step
  did not depend on everything (SCHED-42: ``line_insort_vs_append``,
  ``line_shuffle_vs_read``, ``line_read_through_an_item``);
* a C function or method whose access was not named (SCHED-43: ``setattr_between_points``,
  ``line_setattr``, ``line_getattr_vs_setattr``, ``line_delattr_vs_getattr``,
  ``line_operator_setitem``, ``line_unbound_dict_update``, ``line_sorted_vs_append``,
  ``line_reduce_vs_extend``, ``line_map_vs_setitem``), or an operator's C code on a list
  (SCHED-43: ``line_iadd_through_an_alias``, ``line_compare_vs_append``,
  ``line_format_vs_append``, ``line_unpack_vs_setitem``, ``line_starred_vs_append``);
* an attribute reached through its ``__dict__``, or answered by its class (SCHED-44:
  ``line_vars_item``, ``line_class_attribute``);
* a truth test, which C code answers with the container's size (SCHED-58:
  ``truth_between_points``, ``line_truth_vs_append``, ``line_not_vs_append``); a tested
  comparison, 3.13's ``bool(==)`` (SCHED-57: ``line_tested_compare_vs_append``).
"""

from __future__ import annotations

import threading

import pytest

from coordkit.engine.accesses import access_sites
from coordkit.engine.points import WRITE
from coordkit.engine.run import RunOptions, Session
from coordkit.engine.schedulers import ReplayScheduler
from tests.sched import dpor_programs
from tests.sched.dpor_oracle import compare
from tests.sched.programs import needs_line_granularity


def _agrees(program, granularity: str) -> None:
    reduced, full, reduced_runs, full_runs = compare(program, granularity=granularity, reuse=True)
    assert len(full) > 1, "the program has one outcome: it checks nothing"
    assert reduced == full, (f"DPOR missed {full - reduced}, invented {reduced - full} "
                             f"({reduced_runs} vs {full_runs} schedules)")


@pytest.mark.parametrize("program", dpor_programs.TRACER_PROGRAMS, ids=lambda p: p.__name__)
def test_dpor_sees_the_tracers_accesses_at_sync_granularity(program):
    """SCHED-37, SCHED-41, SCHED-43, SCHED-58"""
    _agrees(program, "sync")


@needs_line_granularity
@pytest.mark.parametrize("program", dpor_programs.TRACER_LINE_PROGRAMS, ids=lambda p: p.__name__)
def test_dpor_sees_the_tracers_accesses_at_line_granularity(program):
    """SCHED-37, SCHED-41, SCHED-42, SCHED-43, SCHED-44, SCHED-57, SCHED-58"""
    _agrees(program, "line")


@pytest.mark.parametrize("granularity", [
    "sync", pytest.param("line", marks=needs_line_granularity)])
@pytest.mark.parametrize("program", dpor_programs.C_TARGET_PROGRAMS, ids=lambda p: p.__name__)
def test_dpor_sees_a_thread_whose_body_is_c_code(program, granularity):
    """SCHED-37, SCHED-59: a thread's target or a Timer's function that is C code (called
    by the library's untraced ``run``) is named where the call is made."""
    _agrees(program, granularity)


def _thread_steps(program, thread: int, granularity: str = "line"):
    with Session(RunOptions(granularity=granularity)) as session:
        run = session.run(program, ReplayScheduler([], strict=False), footprints=True)
    assert run.footprints is not None
    return [s for s in run.footprints if s.thread == thread]


class _Box:
    a = 0


def _one_line_lambda_target():
    box = _Box()
    t = threading.Thread(target=lambda: setattr(box, "a", 1))
    t.start()
    t.join()


def _one_line_def_target():
    box = _Box()
    def body(): box.a = 1  # (the shape tested: a body on its def line)
    t = threading.Thread(target=body)
    t.start()
    t.join()


@needs_line_granularity
@pytest.mark.parametrize("program", [_one_line_lambda_target, _one_line_def_target],
                         ids=["lambda", "def"])
def test_a_body_on_its_def_line_is_traced(program):
    """SCHED-57: a thread whose body is on its ``def``/``lambda`` line gets that line's
    scheduling point and its write (3.13 gives no LINE event there without PY_START)."""
    steps = _thread_steps(program, 1)
    assert [s.point.op for s in steps][:2] == ["start", "line"]
    writes = [e for s in steps for e in s.footprint
              if e.obj.startswith("mem#") and e.access == WRITE]
    assert [e.op for e in writes] == ["'a'"]


def test_a_closure_made_in_place_is_named():
    """SCHED-57: 3.13 makes a closure in two instructions (``MAKE_FUNCTION``, then
    ``SET_FUNCTION_ATTRIBUTE``): the call it is given to still names its code, as on 3.12."""
    def program(k):
        return sorted([2, 1], key=lambda v: v + k)

    (call,) = [s for s in access_sites(program.__code__).values()
               if s.kind == "call" and s.name == "sorted"]
    (_, key), _offset = call.key[:2], call.key[2]
    assert key[0][0] == "const" and key[0][1].co_name == "<lambda>"
