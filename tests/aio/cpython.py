"""CPython's own asyncio tests, run unmodified with the loop swapped (AIO-30).

The machinery is ``tests/stdlib/cpython.py``'s: the modules come from the running
interpreter's ``Lib/test/test_asyncio`` (or Debian's testsuite of the same minor version),
and each test method (``setUp``, the test, ``tearDown``, cleanups) is one program for
``coordkit.explore``.  Inside the run every loop the test makes is coordkit's (AIO-2):

* ``unittest.IsolatedAsyncioTestCase`` (locks, queues, timeouts, wait_for, task groups,
  ``to_thread``) makes its loop with ``asyncio.Runner``, through the event-loop policy;
* ``test_utils.TestCase`` (the task tests) makes its loop with ``new_test_loop()``, a
  ``TestLoop``: a loop with a fake selector and a clock of its own.  Swapped, that loop is
  ``asyncio.new_event_loop()``, coordkit's, on the run's virtual clock.  A test that gives
  ``new_test_loop`` a time generator drives that clock itself, asserting each timer's
  deadline and moving time by hand: it tests asyncio against its own clock, and is skipped
  (``FAKE_CLOCK``).

``SUITES`` maps each module to a function that returns its ``Suite`` or the reason it
is not there (``test_timeouts`` and ``test_taskgroups`` are 3.11's).  ``tabulate`` runs
suites and counts, per module, the tests run, passed, skipped by reason and failed
(``benchmarks/asyncio_cpython_table.py`` prints it).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import sys
import unittest
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.stdlib.cpython import STRATEGIES, Suite, concrete, cpython_test_module

FAKE_CLOCK = ("drives a fake clock of its own (test_utils.TestLoop with a time generator that "
              "asserts each timer's deadline and moves the test's time by hand): what it checks "
              "is asyncio against that clock, which a swapped loop replaces with the run's "
              "virtual clock (AIO-30)")

_GIVES_A_GENERATOR = re.compile(r"new_test_loop\(\s*[^)\s]")


def swapped_new_test_loop(self: Any, gen: Any = None) -> asyncio.AbstractEventLoop:
    """``test_utils.TestCase.new_test_loop`` with the loop swapped: coordkit's loop (made
    inside the run, AIO-2), closed by the test's cleanup as its ``TestLoop`` would be."""
    if gen is not None:
        raise unittest.SkipTest(FAKE_CLOCK)
    loop = asyncio.new_event_loop()
    self.set_event_loop(loop)
    return loop


def _test_classes(module: Any) -> dict[str, type]:
    """The module's runnable TestCase classes (those with test methods), by name."""
    loader = unittest.TestLoader()
    return {name: value for name, value in vars(module).items()
            if isinstance(value, type) and issubclass(value, unittest.TestCase)
            and value.__module__ == module.__name__ and loader.getTestCaseNames(value)}


def _fake_clock_tests(classes: dict[str, type]) -> dict[tuple[str, str], str]:
    """(class, method) of every test that hands ``new_test_loop`` a time generator."""
    skips = {}
    loader = unittest.TestLoader()
    for cls_name, cls in classes.items():
        for method in loader.getTestCaseNames(cls):
            try:
                source = inspect.getsource(getattr(cls, method))
            except (OSError, TypeError):
                continue
            if _GIVES_A_GENERATOR.search(source):
                skips[(cls_name, method)] = FAKE_CLOCK
    return skips


def asyncio_suite(name: str, *, only: Iterable[str] | None = None,
                  timing: dict[tuple[str, str], str] | None = None,
                  expected: dict[tuple[str, str], str] | None = None,
                  not_run: dict[str, str] | None = None) -> Suite | str:
    """``test_asyncio.<name>``: its TestCase classes, made concrete with the loop swapped
    (``only``: just these classes), or the reason the module is not there.  ``timing`` and
    ``expected`` are ``Suite``'s, given by method for every class (``"*"``) or by class."""
    package = cpython_test_module("test_asyncio")
    if not isinstance(package, str) and not any(
            (Path(where) / f"{name}.py").is_file() for where in package.__path__):
        return (f"CPython {sys.version_info.major}.{sys.version_info.minor}'s test_asyncio "
                f"has no {name} (what it tests is newer)")
    module = cpython_test_module(f"test_asyncio.{name}")
    if isinstance(module, str):
        return module
    test_utils = cpython_test_module("test_asyncio.utils")
    found = _test_classes(module)
    if only is not None:
        found = {key: found[key] for key in only if key in found}
    classes = {}
    for cls_name, cls in found.items():
        attrs = {}
        if not isinstance(test_utils, str) and issubclass(cls, test_utils.TestCase):
            attrs["new_test_loop"] = swapped_new_test_loop
        classes[cls_name] = concrete(cls_name, cls, **attrs)
    suite = Suite(module=f"test_asyncio.{name}", classes=classes,
                  skips=_fake_clock_tests(found), not_run=not_run or {})
    suite.timing = _per_class(suite, timing or {})
    suite.expected = _per_class(suite, expected or {})
    return suite


def _per_class(suite: Suite, by_method: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    """``by_method`` with ``("*", method)`` given to every class of ``suite`` that has it."""
    out = {}
    for (cls_name, method), reason in by_method.items():
        for name in (suite.classes if cls_name == "*" else [cls_name]):
            if name in suite.classes and method in suite.methods(name):
                out[name, method] = reason
    return out


def early(what: str) -> str:
    """Why a test's assertion holds only if no loop iteration takes as long as ``what``."""
    return (f"assumes that no loop iteration takes as long as {what}: a later timer may "
            "arrive early, as on a stalled machine (AIO-5), and the test's outcome changes "
            "(coordkit shows the schedule)")


# What reaches a loop's default exception handler is the run's failure (AIO-6): a test
# that checks asyncio's logging of it fails by design.
LOGGED = ("checks that asyncio logs 'Task was destroyed but it is pending!' (base_events.logger); "
          "inside a run it is the run's failure instead (AIO-6)")
# A test coordkit's loop fails where stock asyncio passes, for a fault of coordkit's own:
# a strict expected failure naming it until it is fixed, counted as failed in the table.
BUG = "a coordkit bug: "
TASKGROUP_GAPS = early("the gap between its tasks' sleeps (0.1 s against 0.3 s, 1 s or 10 s)")

# The task tests run each test of BaseTaskTests over eight pairs of Task and Future
# classes (C and Python, plain and subclassed): CI runs the two plain ones, every pair
# with COORDKIT_CPYTHON_ASYNCIO_ALL=1.
TASK_PAIRS = ("CTask_CFuture_Tests", "PyTask_PyFuture_Tests")


ALL_PAIRS = os.environ.get("COORDKIT_CPYTHON_ASYNCIO_ALL", "") not in ("", "0")


def tasks_suite(all_pairs: bool = ALL_PAIRS) -> Suite | str:
    """``test_asyncio.test_tasks``: the task, gather, shield, introspection and
    ``run_coroutine_threadsafe`` tests (``all_pairs``: BaseTaskTests over all eight
    Task/Future pairs, not only ``TASK_PAIRS``)."""
    module = cpython_test_module("test_asyncio.test_tasks")
    if isinstance(module, str):
        return module
    names = list(_test_classes(module))
    pairs = [n for n in names if issubclass(getattr(module, n), module.BaseTaskTests)]
    kept = [n for n in names if all_pairs or n not in pairs or n in TASK_PAIRS]
    left = [n for n in pairs if n not in kept]
    not_run = ({", ".join(left): "BaseTaskTests over the other Task/Future pairs (subclassed, "
                "mixed C and Python): the same tests as the two plain pairs run; "
                "COORDKIT_CPYTHON_ASYNCIO_ALL=1 runs them"} if left else {})
    return asyncio_suite(
        "test_tasks", only=kept, not_run=not_run,
        timing={("*", "test_uncancel_basic"):
                early("10 s (a task's 10 s sleep ending within run_until_complete(sleep(0.01)))")},
        expected={("*", "test_error_in_call_soon"): LOGGED})


SUITES: dict[str, Callable[[], Suite | str]] = {
    "test_locks": lambda: asyncio_suite("test_locks"),
    "test_queues": lambda: asyncio_suite("test_queues"),
    "test_timeouts": lambda: asyncio_suite("test_timeouts", timing={
        ("*", "test_nested_timeouts_loop_busy"):
            early("9.9 s (the 10 s sleep's timer arriving with the 0.1 s timeout's; it "
                  "asserts that less than 1 s passed)"),
        ("*", "test_timeout_not_called"):
            early("10 s (the timeout's timer arriving with the 0.01 s sleep's)"),
    }),
    "test_waitfor": lambda: asyncio_suite("test_waitfor", timing={
        ("*", "test_wait_for"):
            early("9.9 s (the 10 s sleep's timer arriving with the 0.1 s timeout's; it "
                  "asserts that less than 0.5 s passed)"),
        # 3.12's (fut.set_result by call_soon; 3.11's, by call_later(0.1), passes: its
        # wait_for returns a result that came with the timeout)
        ("*", "test_wait_for_race_condition"):
            early("0.2 s (the timeout's timer arriving in the iteration that runs "
                  "fut.set_result: 3.12's wait_for then raises TimeoutError)"),
    }),
    "test_taskgroups": lambda: asyncio_suite("test_taskgroups", timing={
        ("*", name): TASKGROUP_GAPS for name in (
            "test_cancel_children_on_child_error", "test_cancellation", "test_taskgroup_04",
            "test_taskgroup_07", "test_taskgroup_13", "test_taskgroup_14", "test_taskgroup_19",
            "test_taskgroup_20a", "test_taskgroup_21a", "test_taskgroup_23")}),
    "test_threads": lambda: asyncio_suite("test_threads"),
    "test_tasks": tasks_suite,
}


@dataclass
class Row:
    """One module's counts: tests (methods), each run under every strategy."""

    module: str
    tests: int = 0
    passed: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    timing: list[str] = field(default_factory=list)  # failed, as a timing assumption
    expected: list[str] = field(default_factory=list)  # failed, as coordkit reports by design
    failed: list[str] = field(default_factory=list)  # failed, unexplained

    @property
    def run(self) -> int:
        return self.tests - sum(self.skipped.values())

    def add(self, other: Row) -> None:
        self.tests += other.tests
        self.passed += other.passed
        self.skipped += other.skipped
        self.timing += other.timing
        self.expected += other.expected
        self.failed += other.failed


def tabulate(suite: Suite, strategies: Iterable[str] = STRATEGIES,
             progress: Callable[[str], None] | None = None) -> Row:
    """Run every test of ``suite`` under each strategy: a test passes if no schedule of
    any strategy fails; a test that skips itself counts as skipped, with its reason; a
    failure is counted as a timing assumption or a by-design report where ``suite`` says
    it is one, else as a failure."""
    row = Row(suite.module)
    for cls_name in suite.classes:
        for method in suite.methods(cls_name):
            row.tests += 1
            reason = suite.skip_reason(cls_name, method)
            if reason is not None:
                row.skipped[reason] += 1
                continue
            failure, skipped = _outcome(suite, cls_name, method, strategies)
            if failure is not None:
                design = suite.expected.get((cls_name, method), BUG)
                kind = (row.timing if (cls_name, method) in suite.timing else
                        row.failed if design.startswith(BUG) else row.expected)
                kind.append(failure)
            elif skipped is not None:
                row.skipped[f"skips itself: {skipped}"] += 1
            else:
                row.passed += 1
            if progress is not None:
                progress(f"{cls_name}.{method}")
    return row


def _outcome(suite: Suite, cls_name: str, method: str,
             strategies: Iterable[str]) -> tuple[str | None, str | None]:
    """The first failure of the test under ``strategies`` (a report), and why it skipped
    itself, if it did."""
    skipped = None
    for strategy in strategies:
        result, skips = suite.explore(cls_name, method, strategy)
        if result.failure is not None:
            return f"{cls_name}.{method} under {strategy}: {result.failure}", None
        skipped = skipped or (skips[0] if skips else None)
    return None, skipped
