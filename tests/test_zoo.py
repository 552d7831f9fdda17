"""The bug zoo (examples/zoo/): coordkit finds every buggy version, replays it, and
passes every fixed one.

Each entry's module says which failure kind coordkit must report (``KIND``),
whether the plain round-robin schedule already fails (``RACE``), and the
options it needs (``EXPLORE``: line granularity, a smaller step budget for the
livelocks, ``fail_on_thread_exception=False`` where a thread dies by design).
All explorations use fixed seeds (SCHED-16), so every run explores the same
schedules.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import coordkit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from examples.zoo import FIND, NAMES, ZOO, options, story  # noqa: E402

KINDS = ("exception", "deadlock", "step_limit")
# What replay raises for each kind (TRACE-3); for "exception" the program's own exception.
REPLAY_RAISES = {"deadlock": coordkit.Deadlock, "step_limit": coordkit.StepLimitExceeded}


def _needs_line(name):
    return options(name).get("granularity") == "line" and sys.version_info < (3, 11)


ENTRIES = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(_needs_line(name), reason="granularity='line' needs Python 3.11+"),
        id=name,
    )
    for name in NAMES
]


def kinds(module) -> tuple[str, ...]:
    """The failure kinds an entry may report (``KIND``: one, or a tuple when the buggy
    version has two bugs and which is met first depends on the interpreter)."""
    return module.KIND if isinstance(module.KIND, tuple) else (module.KIND,)


def test_the_zoo_is_complete():
    assert len(NAMES) >= 12
    assert len(set(NAMES)) == len(NAMES)
    for name, module in ZOO.items():
        assert callable(module.buggy) and callable(module.fixed), name
        assert set(kinds(module)) <= set(KINDS), name
        assert isinstance(module.RACE, bool), name
        assert set(options(name)) <= {"granularity", "max_steps", "fail_on_thread_exception"}, name
        doc = module.__doc__ or ""
        assert len(doc.split()) > 80, f"{name}: the story is missing or too short"
        assert "fix" in doc.lower(), f"{name}: the story does not say what the fix is"
        assert ("race" in doc.lower()) or ("deterministic" in doc.lower()), name


def test_readme_lists_every_entry_with_its_kind():
    readme = (ROOT / "examples" / "zoo" / "README.md").read_text()
    for name, module in ZOO.items():
        rows = [line for line in readme.splitlines() if line.startswith(f"| [`{name}`]")]
        assert len(rows) == 1, f"{name} is not in the README table"
        assert f"| {kinds(module)[0]}" in rows[0], f"{name}: the README gives another kind"


@pytest.mark.parametrize("name", ENTRIES)
def test_buggy_is_found_and_replays(name):
    # SCHED-10 (the failure kinds), SCHED-17 (shrunk), TRACE-3 (replay is exact)
    module, opts = ZOO[name], options(name)
    result = coordkit.explore(module.buggy, **FIND, **opts)
    failure = result.failure
    assert failure is not None, f"coordkit did not find {name} in {result.schedules_run} schedules"
    assert failure.kind in kinds(module), str(failure)
    assert failure.preemptions <= failure.original_preemptions

    expected = REPLAY_RAISES.get(failure.kind, type(failure.exception))
    for _ in range(2):  # the same failure, every time
        with pytest.raises(expected) as raised:
            coordkit.replay(module.buggy, failure.trace, **opts)
        if failure.kind == "exception":
            assert str(raised.value) == str(failure.exception)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="scheduling at racing sites needs 3.11")
@pytest.mark.parametrize("name", NAMES)
def test_buggy_is_found_with_default_options(name):
    # RACE-5: auto granularity finds every entry, the ones that need granularity='line'
    # by hand included; only the options that change what the program means are kept
    module = ZOO[name]
    semantics = {k: v for k, v in options(name).items() if k != "granularity"}
    result = coordkit.explore(module.buggy, seed=1, **semantics)
    assert result.failure is not None and result.failure.kind in kinds(module), str(result)


@pytest.mark.parametrize("name", ENTRIES)
def test_round_robin_matches_the_story(name):
    # SCHED-14: choice 0 everywhere is the plain round-robin schedule. A race passes it;
    # a deterministic bug fails it the same way exploration does.
    module, opts = ZOO[name], options(name)
    if module.RACE:
        coordkit.replay(module.buggy, [], strict=False, **opts)
    else:
        with pytest.raises(BaseException):  # noqa: B017 - the kind is checked above
            coordkit.replay(module.buggy, [], strict=False, **opts)


@pytest.mark.parametrize("name", ENTRIES)
def test_fixed_passes(name):
    module, opts = ZOO[name], options(name)
    pct = coordkit.explore(module.fixed, strategy="pct", seed=1, max_schedules=300, **opts)
    assert pct.ok, str(pct.failure)
    dfs = coordkit.explore(module.fixed, strategy="dfs", max_preemptions=2, max_schedules=2000, **opts)
    assert dfs.ok, str(dfs.failure)
    assert dfs.exhausted or dfs.schedules_run == 2000


@pytest.mark.parametrize("name", ENTRIES)
def test_story_line(name):
    assert story(name).endswith((".", ")")), story(name)
