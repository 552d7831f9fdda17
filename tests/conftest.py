"""Shared test configuration: Hypothesis profiles.

* ``default``: fast, for local edit-test loops.
* ``ci``: more examples, derandomized so a CI run is reproducible.
* ``nightly``: long campaigns (``--hypothesis-profile=nightly``), DPOR's hour-long
  soundness campaign included (``tests/sched/test_dpor_shapes.py``, SCHED-51).
"""

from __future__ import annotations

import signal

from hypothesis import HealthCheck, settings

# A shell without job control starts a background command with SIGINT ignored, and an
# ignored signal stays ignored in every child it executes: the tests of Ctrl-C (SIG-*,
# the interrupt tests) then see no KeyboardInterrupt, here or in their child processes.
# They test coordkit, not how the suite was launched: Python's own handler, as a
# foreground run has it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile(
    "default",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "nightly",
    max_examples=5000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("default")

pytest_plugins = ["pytester"]
