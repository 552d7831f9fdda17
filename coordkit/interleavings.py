"""Explore a test function's interleavings: the ``@coordkit.interleavings`` decorator.

Works with or without pytest; under pytest, the coordkit plugin's command-line
options set the defaults and the seed defaults to one derived from the test's id.
"""

from __future__ import annotations

import functools
import inspect
import zlib
from collections.abc import Callable
from typing import Any

__all__ = ["InterleavingFailure", "interleavings"]

_current_nodeid: str | None = None


def _set_current_test(nodeid: str | None) -> None:
    global _current_nodeid
    _current_nodeid = nodeid


_defaults: dict[str, Any] = {}


class InterleavingFailure(AssertionError):
    """A test's exploration found a failing schedule (the message shows it and how to replay)."""


def _options_for(nodeid: str | None, options: dict[str, Any]) -> dict[str, Any]:
    merged = {k: v for k, v in _defaults.items() if v is not None}
    merged.update(options)
    seed = merged.get("seed")
    if seed == "random":
        merged["seed"] = None
    elif seed is None and nodeid is not None:
        merged["seed"] = zlib.crc32(nodeid.encode())
    return merged


def _explore_or_fail(fn: Callable[[], Any], nodeid: str | None, options: dict[str, Any],
                     name: str | None = None) -> Any:
    from coordkit.explore import explore

    if name is not None:  # so that the failure's replay line names the test
        fn.__name__ = fn.__qualname__ = name
    result = explore(fn, **_options_for(nodeid, options))
    if result.failure is not None:
        raise InterleavingFailure(str(result.failure))
    return result


def interleavings(**options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a test so that its body runs under ``coordkit.explore(**options)``.

    The test may take fixtures; they are created once, outside the controlled
    runs, and the body runs in every schedule.
    """

    def decorate(test: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(test)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return _explore_or_fail(lambda: test(*args, **kwargs), _current_nodeid, options,
                                    test.__qualname__)

        wrapper.__signature__ = inspect.signature(test)  # type: ignore[attr-defined]
        return wrapper

    return decorate
