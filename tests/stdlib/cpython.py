"""CPython's own test suites, run unmodified under ``coordkit.explore``.

The test modules are imported from the running interpreter's ``Lib/test``; none of
their code is copied here.  Where the interpreter ships without one (a trimmed
``Lib/test``), the same minor version's copy from Debian's ``libpython3.X-testsuite``
is used if it is installed (``.ci/run`` installs it), or the directory named by
``COORDKIT_CPYTHON_TESTS``; otherwise the suite is skipped and says why.

CPython builds its concrete test classes at import, binding ``locktype =
staticmethod(threading.Lock)`` and the like to the real objects.  ``concrete``
builds them again over the *names*, looked up when a test calls them, so that inside
a run they give the controlled objects, as they give any program.

Each test method (``setUp``, the test, ``tearDown`` and cleanups) is one program for
``explore``, run under ``STRATEGIES`` with ``SCHEDULES`` schedules each
(``COORDKIT_CPYTHON_SCHEDULES``, default 3; the nightly campaign uses 20 or more).
The few tests that check what a scheduler cannot control (fork, child interpreters,
signals, reference counts, the C types' own reprs) are skipped, each with its reason.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import logging
import os
import random
import shutil
import subprocess
import sys
import unittest
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import coordkit

STRATEGIES = ("random", "pct")
DEFAULT_SCHEDULES = 3
SCHEDULES = int(os.environ.get("COORDKIT_CPYTHON_SCHEDULES", str(DEFAULT_SCHEDULES)))
if SCHEDULES < 1:
    raise ValueError(f"COORDKIT_CPYTHON_SCHEDULES must be >= 1; got {SCHEDULES}")

# Reasons shared by many skips.
FORK = "forks the process: a controlled run is one process and cannot fork (SCHED-4h)"
CHILD = ("runs a child interpreter (script_helper/subprocess): its threads are not this "
         "process's, and no scheduler of this process runs them (SCHED-4h)")
SUBINTERP = "runs a subinterpreter, whose threads no scheduler of this interpreter runs (SCHED-4h)"


def _debian_testsuite() -> Path | None:
    """The ``test`` directory of Debian's testsuite package for this minor version."""
    env = os.environ.get("COORDKIT_CPYTHON_TESTS")
    if env:
        return Path(env)
    dpkg = shutil.which("dpkg")
    if dpkg is None:
        return None
    package = f"libpython{sys.version_info.major}.{sys.version_info.minor}-testsuite"
    try:
        listing = subprocess.run([dpkg, "-L", package], capture_output=True, text=True,
                                 timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in listing.splitlines():
        if line.endswith(os.sep + "test" + os.sep + "lock_tests.py"):
            return Path(line).parent
    return None


def cpython_test_module(name: str) -> ModuleType | str:
    """``test.<name>`` from this interpreter's Lib/test, else Debian's copy of the same
    minor version (loaded as ``test.<name>``); or the reason neither is there.  A dotted
    name (``test_asyncio.test_locks``) is a module of a package, its packages loaded first."""
    full = f"test.{name}"
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError as exc:
        parts = full.split(".")
        if exc.name not in {".".join(parts[:i]) for i in range(1, len(parts) + 1)}:
            raise
    where = _debian_testsuite()
    path = None if where is None else where.joinpath(*name.split("."))
    if path is not None and path.is_dir():
        file, locations = path / "__init__.py", [str(path)]
    else:
        file, locations = (None if path is None else path.with_suffix(".py")), None
    if file is None or not file.is_file():
        return (f"test.{name} is not in this interpreter's Lib/test, and Debian's "
                f"libpython{sys.version_info.major}.{sys.version_info.minor}-testsuite "
                "is not installed (.ci/run installs it; or set COORDKIT_CPYTHON_TESTS)")
    if "." in name:
        package = cpython_test_module(name.rpartition(".")[0])
        if isinstance(package, str):
            return package
    spec = importlib.util.spec_from_file_location(full, file,
                                                  submodule_search_locations=locations)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return module


def late(module: Any, name: str) -> staticmethod:
    """A factory that looks ``module.name`` up when called: inside a run, the controlled one."""

    def make(*args: Any, **kwargs: Any) -> Any:
        return getattr(module, name)(*args, **kwargs)

    make.__name__ = name
    return staticmethod(make)


def concrete(name: str, base: type, **attrs: Any) -> type:
    """A concrete TestCase over ``base`` (made here, so pytest does not collect it)."""
    bases = (base,) if issubclass(base, unittest.TestCase) else (base, unittest.TestCase)
    return type(name, bases, {"__module__": __name__, **attrs})


@dataclass
class Suite:
    """One CPython test module made concrete: its classes, skips and run options."""

    module: str  # the CPython module, as ``test.<module>``
    classes: dict[str, type]
    # (class, method) -> reason; (class, "*") skips the whole class.
    skips: dict[tuple[str, str], str] = field(default_factory=dict)
    # class, or (class, method) -> extra options for explore (``fail_on_thread_exception``).
    options: dict[Any, dict[str, Any]] = field(default_factory=dict)
    # (class, method) -> why the test's assertion holds only under the OS's usual timing:
    # coordkit finds a schedule where it fails (an expected failure, shown with its trace).
    timing: dict[tuple[str, str], str] = field(default_factory=dict)
    # (class, method) -> the failure coordkit reports by design where CPython's test
    # expects what stock asyncio does (it only logs it, say): a strict expected failure.
    expected: dict[tuple[str, str], str] = field(default_factory=dict)
    # (class, method) -> the schedules per strategy of a long test (half a million steps a
    # run): at most this many in the default run, SCHEDULES in a campaign that asks for more.
    heavy: dict[tuple[str, str], int] = field(default_factory=dict)
    # Classes of the module deliberately not run, with the reason (for the table).
    not_run: dict[str, str] = field(default_factory=dict)

    def methods(self, cls_name: str) -> list[str]:
        loader = unittest.TestLoader()
        return list(loader.getTestCaseNames(self.classes[cls_name]))

    def skip_reason(self, cls_name: str, method: str) -> str | None:
        """Why (cls, method) is skipped: its own reason first, then its class's."""
        return self.skips.get((cls_name, method)) or self.skips.get((cls_name, "*"))

    def params(self, strategies: Iterable[str] = STRATEGIES) -> list[Any]:
        """One pytest param per (class, method, strategy); skips carry their reason."""
        out = []
        for cls_name in self.classes:
            for method in self.methods(cls_name):
                reason = self.skip_reason(cls_name, method)
                timing = self.timing.get((cls_name, method))
                for strategy in strategies:
                    marks = [pytest.mark.skip(reason=reason)] if reason else []
                    if timing:
                        marks.append(pytest.mark.xfail(reason=timing, strict=False))
                    if (cls_name, method) in self.expected:
                        marks.append(pytest.mark.xfail(reason=self.expected[cls_name, method],
                                                       strict=True))
                    if (cls_name, method) in self.heavy:
                        marks.append(pytest.mark.slow)
                    out.append(pytest.param(cls_name, method, strategy, marks=marks,
                                            id=f"{cls_name}.{method}-{strategy}"))
        return out

    def schedules(self, cls_name: str, method: str) -> int:
        cap = self.heavy.get((cls_name, method))
        return SCHEDULES if cap is None or SCHEDULES > DEFAULT_SCHEDULES else min(cap, SCHEDULES)

    def explore(self, cls_name: str, method: str, strategy: str,
                **overrides: Any) -> tuple[coordkit.ExploreResult, list[str]]:
        """Explore one test method: the result, and why the test skipped itself (if it did).
        ``overrides`` are options of ``explore`` that take precedence over the suite's."""
        options = {**self.options.get(cls_name, {}), **self.options.get((cls_name, method), {}),
                   **overrides}
        options.setdefault("schedules", self.schedules(cls_name, method))
        return explore_case(self.classes[cls_name], method, strategy,
                            seed=case_seed(self.module, cls_name, method, strategy), **options)

    def run(self, cls_name: str, method: str, strategy: str,
            **overrides: Any) -> coordkit.ExploreResult:
        """Explore one test method; fail with coordkit's report if a schedule fails."""
        result, skipped = self.explore(cls_name, method, strategy, **overrides)
        if result.failure is not None:
            pytest.fail(f"test.{self.module}.{cls_name}.{method} under {strategy}:\n"
                        f"{result.failure}", pytrace=False)
        if skipped:
            pytest.skip(f"CPython's test skips itself: {skipped[0]}")
        return result


def case_seed(*parts: str) -> int:
    """A fixed seed per test and strategy: the same schedules in every CI run."""
    return zlib.crc32(".".join(parts).encode())


def case_program(cls: type, method: str, seed: int, skipped: list[str]) -> Callable[[], None]:
    """``cls(method)`` (setUp, the test, tearDown, cleanups) as a program for ``explore``
    or ``replay``.  Tests that draw from the global ``random`` (thread delays) draw the
    same numbers in every run, so that a schedule replays.  A test that skips itself
    notes why in ``skipped``."""

    def program() -> None:
        random.seed(seed)
        case = cls(method)
        try:
            case.debug()
        except unittest.SkipTest as exc:
            skipped.append(str(exc))

    program.__qualname__ = f"{cls.__name__}.{method}"
    return program


def explore_case(cls: type, method: str, strategy: str, *, schedules: int, seed: int,
                 **options: Any) -> tuple[coordkit.ExploreResult, list[str]]:
    """Explore ``cls(method)`` (``case_program``); the caller's ``random`` state is kept."""
    skipped: list[str] = []
    program = case_program(cls, method, seed, skipped)
    state = random.getstate()
    # CPython's tests expect logging as regrtest leaves it, unconfigured (a record with no
    # handler goes to stderr, which FutureTests checks): pytest's capture is set aside.
    root = logging.getLogger()
    handlers, root.handlers = root.handlers, []
    # Many of the tests call gc.collect(), three times a call (support.gc_collect); on the
    # whole test session's heap each takes tens of milliseconds. Frozen, what is already
    # alive is left out of every collection, and the tests' own objects are collected.
    gc.freeze()
    try:
        # Their subject is the stdlib's behaviour under the scheduler (SCHED-21), not races in
        # CPython's test code: sync granularity, no race detection (which would trace that code).
        options = {"granularity": "sync", "races": "ignore", **options}
        result = coordkit.explore(program, strategy=strategy, max_schedules=schedules, seed=seed,
                                  **options)
    finally:
        gc.unfreeze()
        root.handlers = handlers
        random.setstate(state)
    return result, skipped
