"""ENGINE-7: every public call answers bad input clearly, and leaves nothing broken.

The table (``bad_input_table``) gives each parameter of each public name and command-line
verb each hostile value: wrong types, NaN, infinities, negative and huge numbers, empty,
huge and bidi-control strings, None, callables that raise, objects whose ``__eq__`` and
``__hash__`` raise.  Each case is classified:

* clear: refused with a coordkit exception, or a ValueError/TypeError/OverflowError whose
  message names the parameter and the value (the command line: exit status 2, the
  message naming the option and the value);
* valid: accepted, where the table documents the value as valid (a callable's own error
  raised unchanged is valid too: that is what a callable parameter does with it);
* unclear: accepted where it must be refused, or refused without naming both, or with
  another exception (from deep inside);
* broken: afterwards something is still patched or running, or a known-good ``explore``
  fails;
* hang: the case ran past its watchdog (which interrupts it with SIGINT).

The totals are printed; the test asserts 0 unclear, 0 broken, 0 hangs.
"""

from __future__ import annotations

import contextlib
import io
import reprlib
import signal
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

import coordkit
from coordkit.errors import OpError, ScheduleError, UsageError
from tests.reliability._support import broken_after, stdlib_snapshot, thread_idents
from tests.reliability.bad_input_table import (
    BAD,
    CLI_BAD,
    ENTRIES,
    KINDS,
    SCHEDULERS,
    TF_WORDING,
    Boom,
    Entry,
    Param,
)

# A hang is a call that never returns: the bound only has to be far above what a case
# takes on a loaded machine (5 s was once overrun by a good call while two suites ran).
CASE_SECONDS = 15.0
CLEAR_TYPES = (ValueError, TypeError, OverflowError)


@dataclass
class Case:
    entry: Entry
    param: Param | None
    key: str  # which bad value ("" for the entry's good call)

    @property
    def label(self) -> str:
        return f"{self.entry.name}({self.param.name if self.param else ''}={self.key})"

    @property
    def value(self) -> Any:
        return (CLI_BAD if self.entry.cli else BAD)[self.key]

    def expect(self) -> str:
        """"error", "valid" or "either"."""
        if self.param is None:
            return "valid"
        errors, valid = KINDS[self.param.kind]
        if self.key in self.param.either or (self.entry.cli and self.param.kind.endswith("name")):
            return "either"  # (on a command line every value is a string, so a name)
        return "error" if self.key in errors else "valid" if self.key in valid else "either"

    def kwargs(self) -> dict[str, Any]:
        kwargs = {p.name: p.good for p in self.entry.params}
        if self.param is not None:
            kwargs[self.param.name] = self.value
        return kwargs


def cases() -> list[Case]:
    out = []
    for entry in ENTRIES:
        out.append(Case(entry, None, ""))
        for param in entry.params:
            values = CLI_BAD if entry.cli else BAD
            out += [Case(entry, param, key) for key in values if key not in param.skip]
    return out


class _Hang(KeyboardInterrupt):
    """The watchdog's interruption of a case that ran too long."""


class Watchdog:
    """Interrupts the main thread (SIGINT) if a case runs past ``CASE_SECONDS``."""

    def __init__(self) -> None:
        self.fired = False
        self._timer = threading.Timer(CASE_SECONDS, self._fire)

    def _fire(self) -> None:
        self.fired = True
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # type: ignore[arg-type]

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        self._timer.join()


def _names(text: str, case: Case) -> bool:
    """The message names the parameter and the value (or the value's type)."""
    assert case.param is not None
    name = case.param.name.strip("_").replace("_", "-")
    flat = text.replace("_", "-")
    value = case.value
    marks = [repr(value)[:40], str(value)[:40], reprlib.repr(value), type(value).__name__]
    if isinstance(value, (str, list)) and value:  # or the element that is wrong
        marks += [repr(value[0]), str(value[0])]
    return name in flat and any(m and m in text for m in marks)


def classify(case: Case, outcome: Any, error: BaseException | None, stderr: str) -> str:
    expect = case.expect()
    if case.entry.cli and error is None:
        if outcome != 2:
            return "unclear" if expect == "error" else "valid"
        return "clear" if case.param is not None and _names(stderr, case) else "unclear"
    if error is None:
        return "unclear" if expect == "error" else "valid"
    if (isinstance(error, Boom) and str(error) == "boom") or (
            case.key == "raises" and "Boom: boom" in str(error)):
        return "valid"  # a callable's own error, raised unchanged or reported as the failure
    if isinstance(error, (ScheduleError, UsageError)) or (
            isinstance(error, OpError) and not isinstance(error, ValueError)):
        return "valid" if expect == "valid" else "clear"
    if isinstance(error, CLEAR_TYPES) and case.param is not None and (
            _names(str(error), case) or str(error) in TF_WORDING):
        return "unclear" if expect == "valid" else "clear"
    return "unclear"


def run_case(case: Case) -> tuple[str, str]:
    """(outcome, what happened) for one case, checked for breakage afterwards."""
    before, idents = stdlib_snapshot(), thread_idents()
    error: BaseException | None = None
    outcome: Any = None
    stderr = io.StringIO()
    dog = Watchdog()
    try:
        with dog, contextlib.redirect_stderr(stderr), coordkit.queue_runner_scope():
            outcome = case.entry.call(**case.kwargs())
    except KeyboardInterrupt as exc:
        if dog.fired:
            return "hang", f"ran over {CASE_SECONDS}s"
        error = exc
    except BaseException as exc:  # every outcome is classified
        error = exc
    problems = broken_after(before, idents)
    if problems:
        return "broken", "; ".join(problems)
    verdict = classify(case, outcome, error, stderr.getvalue())
    if error is not None:
        return verdict, f"{type(error).__name__}: {str(error)[:300]}"
    if case.entry.cli:
        return verdict, f"exit {outcome}: {stderr.getvalue()[:300]}"
    try:  # what was accepted must work: a result that cannot even be shown is broken
        return verdict, f"returned {repr(outcome)[:300]}"
    except Exception as exc:
        return "unclear", f"returned an object whose repr raises {type(exc).__name__}: {exc}"


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Case, str, str]]:
    """Every case, run once: (case, verdict, what happened)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("cli"))  # the command line writes pages here
        return [(case, *run_case(case)) for case in cases()]


def _not_clear(rows: list[tuple[Case, str, str]]) -> list[str]:
    return [f"{verdict}: {case.label}: {detail!r}"[:400] for case, verdict, detail in rows
            if verdict not in ("clear", "valid")]


# The totals, for the session's terminal summary (tests/reliability/conftest.py).
SUMMARY: list[str] = []


@pytest.mark.timeout(400)  # it builds the module's table: ~60 s alone, 3x that on a loaded machine
def test_every_public_call_answers_bad_input_clearly(table):
    ours = [row for row in table if row[0].entry.owner is None]
    owned = [row for row in table if row[0].entry.owner is not None]
    totals = Counter(verdict for _, verdict, _ in ours)
    bad = _not_clear(ours)
    SUMMARY[:] = [
        f"bad-input table: {len(ours)} cases over {len({case.entry.name for case, _, _ in ours})} "
        "public calls and command lines: "
        + ", ".join(f"{totals[v]} {v}" for v in ("clear", "valid", "unclear", "broken", "hang")),
        f"  and {len(owned)} cases of the scheduler constructors ({SCHEDULERS}): "
        f"{len(_not_clear(owned))} not clear",
        *("  " + line for line in bad),
    ]
    print("\n" + "\n".join(SUMMARY))
    assert not bad, f"{len(bad)} case(s) not clear or valid (see the printed table)"


def test_the_scheduler_constructors_answer_bad_input_clearly(table):
    bad = _not_clear([row for row in table if row[0].entry.owner is not None])
    assert not bad, "\n".join(bad)


def test_the_scheduler_base_class_is_refused_as_a_strategy():
    # ENGINE-7: the base class has no choose(): explore says so, naming the argument
    with pytest.raises(TypeError, match=r"strategy=.* does not implement choose\(point, enabled\)"):
        coordkit.explore(lambda: None, strategy=coordkit.Scheduler())
    with pytest.raises(NotImplementedError, match="does not implement choose"):
        coordkit.Scheduler().choose(None, [])
