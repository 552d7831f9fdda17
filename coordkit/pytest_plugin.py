"""pytest integration, registered through the ``pytest11`` entry point.

Three ways to explore a test's interleavings:

* the decorator ``@coordkit.interleavings(max_schedules=..., strategy=..., seed=...)``;
* the marker ``@pytest.mark.coordkit(...)`` with the same keywords;
* the fixture ``coordkit_explore``: ``coordkit_explore(fn, **options)`` explores ``fn``.

A failing exploration fails the test with the shrunk interleaving, its trace and
the one line that replays it.  Command-line options set the defaults:
``--coordkit-seed`` (an int, or ``random``; by default a seed derived from the
test's id so a run is reproducible), ``--coordkit-strategy``,
``--coordkit-max-schedules``, ``--coordkit-time-budget`` and ``--coordkit-workers`` (worker
processes for each random or PCT exploration, PAR-15).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest

from coordkit.testing import defaults, explore_or_fail, set_current_test


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("coordkit", "coordkit interleaving exploration")
    group.addoption("--coordkit-seed", default=None,
                    help="seed for explored tests: an int, or 'random' (default: from the test id)")
    group.addoption("--coordkit-strategy", default=None,
                    help="exploration strategy: pct, random, dfs or hypothesis")
    group.addoption("--coordkit-max-schedules", type=int, default=None,
                    help="schedules to explore per test")
    group.addoption("--coordkit-time-budget", type=float, default=None,
                    help="wall-clock seconds to explore per test")
    group.addoption("--coordkit-workers", type=int, default=None,
                    help="run each test's pct/random schedules in N worker processes "
                         "(the result one process gives; PAR-15)")


_SAVED_DEFAULTS = pytest.StashKey[dict[str, Any]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "coordkit(**options): run the test body under coordkit.explore(**options)"
    )
    seed = config.getoption("--coordkit-seed")
    if seed not in (None, "random"):
        try:
            seed = int(seed)
        except ValueError:
            raise pytest.UsageError(f"--coordkit-seed must be an int or 'random', got {seed!r}") from None
    workers = config.getoption("--coordkit-workers")
    if workers is not None and workers < 1:
        raise pytest.UsageError(f"--coordkit-workers must be a positive int, got {workers}")
    config.stash[_SAVED_DEFAULTS] = dict(defaults)
    defaults.update(
        workers=workers,
        seed=seed,
        strategy=config.getoption("--coordkit-strategy"),
        max_schedules=config.getoption("--coordkit-max-schedules"),
        time_budget=config.getoption("--coordkit-time-budget"),
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    """The defaults go back to what they were: a pytest run inside this process (a test of
    the plugin) must not leave its command line's options to the tests after it."""
    saved = config.stash.get(_SAVED_DEFAULTS, None)
    if saved is not None:
        defaults.clear()
        defaults.update(saved)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    set_current_test(item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    marker = pyfuncitem.get_closest_marker("coordkit")
    if marker is None:
        yield
        return
    if marker.args:
        raise pytest.UsageError("@pytest.mark.coordkit takes keyword options only")
    original = pyfuncitem.obj
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    explore_or_fail(lambda: original(**kwargs), pyfuncitem.nodeid, dict(marker.kwargs), original,
                    sendable=functools.partial(original, **kwargs))
    # The exploration ran the test; give pytest a no-op in its place.
    pyfuncitem.obj = lambda **_: None
    try:
        yield
    finally:
        pyfuncitem.obj = original


@pytest.fixture
def coordkit_explore(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``coordkit_explore(fn, **options)``: explore ``fn``; fail the test on a failing schedule."""

    def run(fn: Callable[[], Any], **options: Any) -> Any:
        return explore_or_fail(fn, request.node.nodeid, options, sendable=fn)

    return run
