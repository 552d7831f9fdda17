"""The bug zoo: small, realistic coordination bugs, each with its fix.

Every entry is a module ``examples/zoo/<name>.py`` with

* a module docstring telling the story: what the code is for, what goes wrong
  and in which interleaving, why ordinary testing misses it, and the fix;
* ``buggy()`` and ``fixed()``, zero-argument functions to hand to
  ``coordkit.explore`` / ``coordkit.replay``;
* ``KIND``: the kind of failure coordkit reports for ``buggy``
  (``"exception"``, ``"deadlock"`` or ``"step_limit"``), or a tuple of kinds
  when ``buggy`` has two bugs and which one is met first depends on the
  interpreter;
* ``RACE``: True when the plain round-robin schedule
  (``coordkit.replay(buggy, [], strict=False)``) passes, so that finding the
  bug takes at least one deliberate scheduling choice; False for a
  deterministic bug;
* optionally ``EXPLORE``: keyword options that both ``explore`` and ``replay``
  need for this entry (``granularity``, ``max_steps``,
  ``fail_on_thread_exception``), and ``RULES``: the spec rule IDs it exercises.

``ZOO`` maps each entry's name to its module, in the order of the README
table; ``options(name)`` returns the entry's ``EXPLORE`` dict (a copy).
``python -m examples.zoo`` explores every entry and prints the README table.
"""

from __future__ import annotations

import importlib
from types import ModuleType

NAMES = (
    "runner_error_no_coordinator",
    "join_before_request_stop",
    "close_without_notify",
    "lost_wakeup_if",
    "check_then_act_queue",
    "double_close",
    "last_worker_closes",
    "swallowed_stop",
    "error_lost_to_first_stop",
    "lock_order_two_queues",
    "looper_never_stops",
    "producer_ignores_cancelled",
    "sentinel_loses_items",
    "batcher_drops_on_timeout",
    "notify_one_on_close",
)

# How the README table and tests/test_zoo.py look for each bug (deterministic: SCHED-16).
FIND = {"strategy": "pct", "seed": 1, "max_schedules": 500}

ZOO: dict[str, ModuleType] = {name: importlib.import_module(f"{__name__}.{name}") for name in NAMES}


def options(name: str) -> dict:
    """The keyword options ``explore`` and ``replay`` need for entry ``name``."""
    return dict(getattr(ZOO[name], "EXPLORE", {}))


def story(name: str) -> str:
    """The first sentence of the entry's docstring: its one-line story."""
    doc = (ZOO[name].__doc__ or "").strip()
    return doc.split("\n\n", 1)[0].replace("\n", " ")


__all__ = ["FIND", "NAMES", "ZOO", "options", "story"]
