"""WaitQueue: the one way a reference primitive waits.

The rule: a primitive never loops on ``Condition.wait`` itself.  A thread that
cannot go on parks in a ``WaitQueue`` bound to the primitive's lock, until

* what it waits for holds (``ready()`` is true; checked before the first park
  and after every wake-up, so spurious and shared wake-ups are harmless),
* its deadline passes (an instant on ``sync.monotonic()``; None: never), or
* it is withdrawn: the wait ends any other way (the deadline, or an exception
  such as KeyboardInterrupt raised while parked), and ``withdraw()`` runs first,
  with the lock held, so that the primitive can take the waiter's request back
  and lose nothing.

Whoever changes what waiters wait for says so with ``notify()`` (the longest
parked waiter) or ``notify_all()``, holding the lock.  Waiters are woken in the
order they parked (FIFO), here and under the controlled scheduler.

This is Trio's ``ParkingLot`` for threads: one blocking idiom with timeouts and
withdrawal written once.  It is built on ``coordkit.sync`` only, so that inside a
controlled run every park is a scheduling point on virtual time.  It adds no
scheduling point of its own: a wait is exactly the ``Condition.wait`` calls and
predicate checks a hand-written loop would make, in the same order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from coordkit import sync

__all__ = ["WaitQueue", "deadline_after", "watch_signals", "time_left"]

# SIG-8: the kernel may hand a process signal to any thread, but CPython runs Python
# handlers only in the main thread, between bytecodes, and a main thread parked in a
# lock wait is not woken for a signal another thread took.  While a stop_on_signals
# block is active, a wait in the real main thread therefore parks in slices this long.
SIGNAL_CHECK_SECS = 0.2
_signal_watches = 0  # active stop_on_signals blocks


def watch_signals(active: bool) -> None:
    """A stop_on_signals block begins (True) or ends (False); see SIG-8."""
    global _signal_watches
    _signal_watches += 1 if active else -1


def _park_limit() -> float | None:
    """The longest one park may last: SIGNAL_CHECK_SECS on a watched main thread, else None."""
    if not _signal_watches or sync.controller() is not None:
        return None
    return SIGNAL_CHECK_SECS if threading.current_thread() is threading.main_thread() else None


def deadline_after(timeout: float | None) -> float | None:
    """The ``sync.monotonic()`` instant ``timeout`` seconds from now; None for None."""
    return None if timeout is None else sync.monotonic() + timeout


def time_left(deadline: float) -> float:
    """Seconds until ``deadline`` (a ``sync.monotonic()`` instant); <= 0 once it passed."""
    return deadline - sync.monotonic()


class WaitQueue:
    """Threads parked under ``lock`` until a condition holds, a deadline passes or
    they are withdrawn (see the module docstring for the rule).

    Every method must be called with ``lock`` held.
    """

    __slots__ = ("_parked",)

    def __init__(self, lock: Any) -> None:
        # The waiters, in the order they parked; notified FIFO.
        self._parked = sync.Condition(lock)

    def __repr__(self) -> str:
        return f"<WaitQueue over {self._parked!r}>"

    def wait(
        self,
        ready: Callable[[], object],
        deadline: float | None = None,
        withdraw: Callable[[], object] | None = None,
    ) -> bool:
        """Park until ``ready()`` is true and return True, or return False once
        ``deadline`` has passed with ``ready()`` still false.

        ``withdraw()`` (if given) runs, with the lock held, whenever the wait ends
        without ``ready()`` being true: before returning False, and before an
        exception raised while parked propagates.
        """
        parked = self._parked
        try:
            while not ready():
                limit = _park_limit()
                if deadline is None:
                    parked.wait(limit)
                    continue
                remaining = time_left(deadline)
                if remaining <= 0:
                    break
                parked.wait(remaining if limit is None else min(remaining, limit))
            else:
                return True
        except BaseException:
            if withdraw is not None and not ready():
                withdraw()
            raise
        if withdraw is not None:
            withdraw()
        return False

    def notify(self) -> None:
        """Wake the waiter that has been parked longest, if any."""
        self._parked.notify()

    def notify_all(self) -> None:
        """Wake every parked waiter; each checks its ``ready()`` again."""
        self._parked.notify_all()
