"""Stress-suite fixtures: seeds, sizes, and the no-leaked-threads check.

Environment (see README.md in this folder):

* ``COORDKIT_STRESS_SCALE`` (default 1): multiplies every size (threads' operation
  counts, items, rounds).  The nightly run uses 5 or more.
* ``COORDKIT_STRESS_SEED`` (default 20261122): the base seed.  Each test derives
  its own seed from the base and its node id (which, under pytest-repeat's
  ``--count``, includes the repetition), so every repetition makes different
  random decisions and CI is reproducible.
* ``COORDKIT_STRESS_REPLAY_SEED``: use exactly this seed (the one a failure
  printed) for every test.
* ``COORDKIT_STRESS_SWITCH_INTERVAL`` (default 1e-5 s): ``sys.setswitchinterval``
  during each test, so threads are preempted often.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import zlib
from collections.abc import Iterator

import pytest

BASE_SEED = int(os.environ.get("COORDKIT_STRESS_SEED", "20261122"))
REPLAY_SEED = os.environ.get("COORDKIT_STRESS_REPLAY_SEED")
SCALE = float(os.environ.get("COORDKIT_STRESS_SCALE", "1"))
if not SCALE > 0:
    raise ValueError(f"COORDKIT_STRESS_SCALE must be a number > 0; got {SCALE!r}")

# How long leftover threads get to end after a test before they count as leaked.
LEAK_GRACE_SECS = 30.0

# The interpreter's thread switch interval during a stress test: far below the
# default 5 ms, so that threads are preempted in the middle of queue calls.
SWITCH_INTERVAL_SECS = float(os.environ.get("COORDKIT_STRESS_SWITCH_INTERVAL", "1e-5"))


def scaled(n: int) -> int:
    """``n`` times the stress scale, at least 1."""
    return max(1, round(n * SCALE))


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This test's seed, printed so that a failure shows it (with how to reuse it)."""
    if REPLAY_SEED is not None:
        value = int(REPLAY_SEED)
    else:
        value = zlib.crc32(f"{BASE_SEED}:{request.node.nodeid}".encode())
    print(
        f"stress seed {value} (base {BASE_SEED}, scale {SCALE}); "
        f"reuse with COORDKIT_STRESS_REPLAY_SEED={value}"
    )
    request.node.user_properties.append(("stress_seed", value))
    return value


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for name, value in item.user_properties:
            if name == "stress_seed":
                report.sections.append(
                    ("stress seed", f"{value}  (COORDKIT_STRESS_REPLAY_SEED={value})")
                )


@pytest.fixture(autouse=True)
def frequent_thread_switches() -> Iterator[None]:
    """Preempt threads often (``sys.setswitchinterval``) for the test's duration."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_SECS)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Every thread a stress test started has ended when it returns.

    Threads that are still alive get ``LEAK_GRACE_SECS`` in all to end (joined,
    not polled); any still alive then is a leak.
    """
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + LEAK_GRACE_SECS
    leaked = []
    for t in threading.enumerate():
        if t in before or t is threading.current_thread():
            continue
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():
            leaked.append(t.name)
    assert not leaked, f"threads leaked by the test: {leaked}"
