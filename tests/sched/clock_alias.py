"""A module that imports time functions by name, as much library code does."""

from time import monotonic, sleep


def sleep_and_measure() -> float:
    t0 = monotonic()
    sleep(7)
    return monotonic() - t0
