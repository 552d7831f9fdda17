"""Programs the reliability tests explore (importable by ``coordkit explore`` in a subprocess)."""

from __future__ import annotations

import os
import signal
import threading

from coordkit import sync

# Set by the test: at which run the program signals, and how.
PLAN: dict = {"at_run": 5, "how": "kill", "signal": "SIGINT", "spin": False}
SEEN: dict = {"runs": 0, "sent_at": None, "started": 0, "ended": 0}


def reset(**plan: object) -> None:
    PLAN.update({"at_run": 5, "how": "kill", "signal": "SIGINT", "spin": True}, **plan)
    SEEN.update(runs=0, sent_at=None, started=0, ended=0)


def _send() -> None:
    signum = getattr(signal, PLAN["signal"])
    SEEN["sent_at"] = sync.real_monotonic()  # the program's own clocks are virtual
    if PLAN["how"] == "kill":
        os.kill(os.getpid(), signum)
    elif PLAN["how"] == "raise_signal":
        signal.raise_signal(signum)  # delivered to this (the worker's) OS thread
    else:
        import _thread

        _thread.interrupt_main()  # KeyboardInterrupt in the main thread


def signals_itself() -> None:
    """Two threads and a lock.  At run ``PLAN["at_run"]`` the second thread, once it has
    started, signals its own process and (with ``spin``) then computes without end (no
    scheduling point, no step budget to stop it): the run is in progress when the signal
    is handled, and that thread must be ended.  ``SEEN`` counts the threads that started
    and ended."""
    SEEN["runs"] += 1
    lock = threading.Lock()
    chosen = SEEN["runs"] == PLAN["at_run"] and SEEN["sent_at"] is None

    def worker() -> None:
        SEEN["started"] += 1
        try:
            with lock:
                pass
            if chosen:
                _send()
            while chosen and PLAN["spin"]:
                pass
        finally:
            SEEN["ended"] += 1

    t = threading.Thread(target=worker)
    t.start()
    with lock:
        pass
    t.join()


def cli_target() -> None:
    """For the command line: the plan comes from the environment."""
    if SEEN["runs"] == 0:
        reset(signal=os.environ.get("SIGNAL", "SIGINT"), at_run=5, spin=True)
    signals_itself()
