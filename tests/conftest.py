"""Shared test configuration: Hypothesis profiles.

* ``default``: fast, for local edit-test loops.
* ``ci``: more examples, derandomized so a CI run is reproducible.
* ``nightly``: long campaigns (``--hypothesis-profile=nightly``), DPOR's hour-long
  soundness campaign included (``tests/sched/test_dpor_shapes.py``, SCHED-51).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

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
