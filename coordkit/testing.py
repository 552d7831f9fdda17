"""Explore a test function's interleavings: the ``@coordkit.interleavings`` decorator.

Works with or without pytest; under pytest, the coordkit plugin's command-line
options set the defaults and the seed defaults to one derived from the test's id.
"""

from __future__ import annotations

import functools
import inspect
import warnings
import zlib
from collections.abc import Callable
from typing import Any

from coordkit.errors import InterleavingFailure

__all__ = ["InterleavingFailure", "check_options", "defaults", "explore_or_fail", "interleavings",
           "set_current_test"]

_current_nodeid: str | None = None


def set_current_test(nodeid: str | None) -> None:
    """The pytest node id of the test running now (its id seeds the exploration)."""
    global _current_nodeid
    _current_nodeid = nodeid


# Options the pytest command line set (--coordkit-seed, ...); a test's own options win.
defaults: dict[str, Any] = {}


def _options_for(nodeid: str | None, options: dict[str, Any]) -> dict[str, Any]:
    merged = {k: v for k, v in defaults.items() if v is not None}
    if options.get("cancel") is not None and "strategy" not in options:
        # The test's cancellation search replaces the command line's strategy (AIO-48).
        merged.pop("strategy", None)
    merged.update(options)
    seed = merged.get("seed")
    if isinstance(seed, str) and seed == "random":
        merged["seed"] = None
    elif seed is None and nodeid is not None:
        merged["seed"] = zlib.crc32(nodeid.encode())
    return merged


def _replay_target(test: Callable[..., Any]) -> str:
    """How the failure's replay line calls ``test``: a lambda that passes its fixtures."""
    name = test.__qualname__
    params = [p.name for p in inspect.signature(test).parameters.values()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not params:
        return name
    return f"lambda: {name}({', '.join(f'{p}={p}' for p in params)})"


def check_options(options: dict[str, Any]) -> None:
    """The event loops' modes among a test's ``explore`` options, checked where they are
    given (the decorator's call, the marker's test) as ``explore`` checks them (AIO-47)."""
    from coordkit.engine.run import check_loop_modes

    check_loop_modes(options.get("cancel"), options.get("adversarial", False),
                     options.get("strategy", "pct"))


def _for_workers(fn: Callable[[], Any], sendable: Callable[[], Any] | None, nodeid: str | None,
                 options: dict[str, Any]) -> Callable[[], Any]:
    """What ``explore`` runs when ``options`` ask for workers (``--coordkit-workers``):
    ``sendable`` (``fn`` as a worker can import it) where the search can run in workers;
    else ``fn``, in this process, with a warning saying why (PAR-15)."""
    workers = options.get("workers")
    if workers is None or workers == 1:
        return fn
    from coordkit.engine.parallel import check_sendable

    strategy = options.get("strategy", "pct")
    reason = None
    if options.get("cancel") is not None or not (isinstance(strategy, str)
                                                 and strategy in ("random", "pct", "dfs")):
        reason = f"its search (strategy={strategy!r}, cancel={options.get('cancel')!r}) runs in one process"
    elif sendable is None:
        reason = "its function was not given in a form a worker can import"
    else:
        try:
            check_sendable("fn", sendable)
        except TypeError as exc:
            reason = str(exc)
    if reason is None:
        return sendable  # type: ignore[return-value]
    del options["workers"]
    warnings.warn(f"coordkit: {nodeid or 'the test'} is explored in this process, not in "
                  f"{workers} workers: {reason}", UserWarning, stacklevel=3)
    return fn


def explore_or_fail(fn: Callable[[], Any], nodeid: str | None, options: dict[str, Any],
                    test: Callable[..., Any] | None = None, *,
                    sendable: Callable[[], Any] | None = None) -> Any:
    """Explore ``fn`` with ``options`` over the command line's defaults (seeded from the
    test's id ``nodeid``); raise ``InterleavingFailure`` with the report if a schedule fails.
    ``sendable`` is ``fn`` in a form worker processes can import, for ``--coordkit-workers``."""
    from coordkit.engine.search import explore

    merged = _options_for(nodeid, options)
    fn = _for_workers(fn, sendable, nodeid, merged)
    result = explore(fn, **merged)
    if result.failure is not None:
        if test is not None:  # so that the failure's replay line names the test
            result.failure.target = _replay_target(test)
        raise InterleavingFailure(str(result.failure))
    return result


def interleavings(**options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a test so that its body runs under ``coordkit.explore(**options)``.

    The test may take fixtures; they are created once, outside the controlled
    runs, and the body runs in every schedule.  Called from inside a controlled
    run (as the failure's replay line does), the decorated test just runs its
    body, under that run's schedule.  ``cancel`` and ``adversarial`` are checked here,
    at the decorator's call (AIO-47).
    """
    check_options(options)

    def decorate(test: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(test)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            from coordkit.engine.runtime import current_execution

            if current_execution() is not None:
                # Inside a run (a replay line) the body runs under it; an async test's
                # coroutine is returned for the run to run (AIO-1).
                return test(*args, **kwargs)
            # A test returns None (pytest warns otherwise); explore() gives the result.
            explore_or_fail(lambda: test(*args, **kwargs), _current_nodeid, options, test,
                            sendable=functools.partial(wrapper, *args, **kwargs))

        wrapper.__signature__ = inspect.signature(test)  # type: ignore[attr-defined]
        return wrapper

    return decorate
