"""The loop modes at every entry point (AIO-47), and the cancellation search refusing a
strategy it would ignore (AIO-48)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import find, settings

import coordkit
from coordkit.engine.trace import Choices, Schedule
from coordkit.errors import InterleavingFailure
from coordkit.strategies import context_switches
from tests.aio.test_adversarial import publish_then_close
from tests.aio.test_cancel import guarded
from tests.test_cli import run as cli

ROOT = Path(__file__).resolve().parents[2]

# Module-level programs, for the command line's MODULE:FUNCTION.
lock_kept = guarded(safe=False)  # a worker cancelled at its await keeps the lock
lock_released = guarded(safe=True)

BAD_OPTIONS = [
    ({"cancel": "all"}, ValueError, r"cancel must be None or 'tasks', got 'all'"),
    ({"adversarial": "yes"}, TypeError, r"adversarial must be a bool, got 'yes'"),
    ({"cancel": "tasks", "strategy": "random"}, ValueError,
     r"cancel='tasks' runs its own search in place of the strategy, so strategy='random' "
     r"would be ignored"),
]


@pytest.mark.parametrize(("options", "error", "message"), BAD_OPTIONS)
def test_explore_refuses_a_bad_mode_or_an_ignored_strategy(options, error, message):
    """AIO-47, AIO-48: ``explore`` checks the modes, naming the argument and the value;
    ``cancel="tasks"`` with a strategy other than the default is refused, not ignored."""
    with pytest.raises(error, match=message):
        coordkit.explore(lock_kept, **options)


def test_explore_takes_the_default_strategy_with_cancel():
    """AIO-48: the default strategy, even named, is not refused."""
    result = coordkit.explore(lock_released, cancel="tasks", strategy="pct")
    assert result.failure is None and result.exhausted


def test_the_decorator_takes_the_modes():
    """AIO-47: ``@coordkit.interleavings(cancel="tasks")`` runs the cancellation search
    (the failure names the cancellation), ``adversarial=True`` reorders ready callbacks."""
    @coordkit.interleavings(cancel="tasks")
    async def test_cancelled() -> None:
        await lock_kept()

    with pytest.raises(InterleavingFailure, match=r"It depends on this: cancelled Task-2 'fetch'"):
        test_cancelled()

    @coordkit.interleavings(adversarial=True, seed=1)
    async def test_reordered() -> None:
        await publish_then_close()

    with pytest.raises(InterleavingFailure, match=r"found only in adversarial mode"):
        test_reordered()


@pytest.mark.parametrize(("options", "error", "message"), BAD_OPTIONS)
def test_the_decorator_refuses_a_bad_mode_at_its_call(options, error, message):
    """AIO-47, AIO-48: the error comes from the decorator's call, before any test runs."""
    with pytest.raises(error, match=message):
        coordkit.interleavings(**options)


MARKED = '''
import pytest
from tests.aio.test_adversarial import publish_then_close
from tests.aio.test_entry_points import lock_kept


@pytest.mark.coordkit(cancel="tasks")
def test_cancelled():
    return lock_kept()


@pytest.mark.coordkit(adversarial=True, seed=1)
def test_reordered():
    return publish_then_close()


@pytest.mark.coordkit(cancel="all")
def test_bad_mode():
    pass
'''


def test_the_marker_takes_the_modes(pytester, monkeypatch):
    """AIO-47, AIO-48: ``@pytest.mark.coordkit(cancel="tasks")`` and ``(adversarial=True)``
    find what only those modes find; a bad mode fails its test naming the argument; the
    command line's ``--coordkit-strategy`` gives way to a test's ``cancel="tasks"``."""
    monkeypatch.syspath_prepend(str(ROOT))  # pytester's test module imports ours
    pytester.makepyfile(MARKED)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--coordkit-strategy", "random")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        "*It depends on this: cancelled Task-2 'fetch'*",
        "*found only in adversarial mode*",
        "*ValueError: cancel must be None or 'tasks', got 'all'*",
    ])


def test_the_hypothesis_strategy_takes_the_modes():
    """AIO-47: ``schedules(cancel="tasks")`` makes ``Choices`` that record the mode, so
    replaying one offers the cancellations: Hypothesis finds the unsafe await; the same
    choices without the mode cancel nothing."""
    def fails(choices: Choices) -> bool:
        try:
            coordkit.replay(lock_kept, choices)
        except asyncio.TimeoutError:
            return True
        return False

    quick = settings(max_examples=100, database=None, derandomize=True)
    found = find(coordkit.schedules(cancel="tasks", max_switches=2, max_gap=8), fails,
                 settings=quick)
    assert found.cancel and not found.adversarial
    assert repr(found) == f"Choices({list(found.values)}, cancel=True)"
    assert not fails(Choices(found.values))
    assert context_switches([(0, 1)], adversarial=True) == Choices((1,), adversarial=True)


@pytest.mark.parametrize(("options", "error", "message"), BAD_OPTIONS[:2])
def test_the_hypothesis_strategy_refuses_a_bad_mode(options, error, message):
    """AIO-47: the error comes from ``schedules(...)`` and ``context_switches(...)``."""
    with pytest.raises(error, match=message):
        coordkit.schedules(**options)
    with pytest.raises(error, match=message):
        context_switches([], **options)
    with pytest.raises(TypeError, match=r"cancel must be a bool, got 'tasks'"):
        Choices((), cancel="tasks")


def test_the_command_line_takes_the_modes():
    """AIO-47: ``coordkit explore --cancel tasks`` and ``--adversarial``; the trace it
    prints records the mode, so ``coordkit replay`` needs nothing else."""
    code, out = cli("explore", "tests.aio.test_entry_points:lock_kept", "--cancel", "tasks")
    assert code == 1, out
    assert "It depends on this: cancelled Task-2 'fetch'" in out
    trace = next(word for word in out.split() if word.startswith("ck2_"))
    assert Schedule.decode(trace).cancel
    assert cli("replay", "tests.aio.test_entry_points:lock_kept", trace)[0] == 1
    code, out = cli("explore", "tests.aio.test_adversarial:publish_then_close", "--adversarial",
                    "--seed", "1")
    assert code == 1, out
    assert "found only in adversarial mode" in out


def test_the_command_line_refuses_a_strategy_it_would_ignore(capsys):
    """AIO-48: ``--cancel tasks --strategy random`` is a usage error naming the strategy;
    a ``--cancel`` other than ``tasks`` is argparse's."""
    code, _ = cli("explore", "tests.aio.test_entry_points:lock_kept", "--cancel", "tasks",
                  "--strategy", "random")
    assert code == 2
    assert "strategy='random' would be ignored" in capsys.readouterr().err
    assert cli("explore", "tests.aio.test_entry_points:lock_kept", "--cancel", "all")[0] == 2
    assert "invalid choice: 'all'" in capsys.readouterr().err
