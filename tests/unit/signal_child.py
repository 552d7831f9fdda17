"""The child process of tests/unit/test_signals.py: one scenario of stop_on_signals.

    python signal_child.py MODE GRACE

MODE is ``orderly`` (the workers stop when asked) or ``stubborn`` (they ignore
the stop). GRACE is stop_on_signals' grace period in seconds, or ``none``. The
child prints a marker line at each step, flushed, so the test can wait for it
before sending the next signal:

READY            handlers installed, workers running
STOP_REQUESTED   the coordinator's stop is set (the first signal arrived)
WORKER_DONE n    worker n finished after the stop (orderly)
JOINED           coord.join returned
INTERRUPTED      KeyboardInterrupt reached the main thread
EXIT code        SystemExit(code) reached the main thread
RECEIVED a,b     the signals stop_on_signals handled
RESTORED i t     whether SIGINT / SIGTERM have their previous handlers back
DEFAULT_HANDLER  a SIGINT after the block raised KeyboardInterrupt (Python's own handler)
"""

from __future__ import annotations

import signal
import sys
import threading

import coordkit

_print_lock = threading.Lock()


def say(*parts: object) -> None:
    """Print one marker line, whole, flushed (workers print concurrently)."""
    with _print_lock:
        print(*parts, flush=True)


def main() -> int:
    mode, grace_arg = sys.argv[1], sys.argv[2]
    grace = None if grace_arg == "none" else float(grace_arg)
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    coord = coordkit.Coordinator()
    never = threading.Event()

    def worker(n: int) -> None:
        if mode == "orderly":
            coord.wait_for_stop()
            say("WORKER_DONE", n)
        else:
            never.wait()  # ignores the stop

    def stop_reporter() -> None:
        coord.wait_for_stop()
        say("STOP_REQUESTED")

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(3)]
    code = 0
    stopper = coordkit.stop_on_signals(coord, grace_period_secs=grace)
    try:
        with stopper:
            threading.Thread(target=stop_reporter, daemon=True).start()
            for t in threads:
                t.start()
            say("READY")
            coord.join(threads, stop_grace_period_secs=None)  # no limit: only a signal ends it
            say("JOINED")
    except KeyboardInterrupt:
        say("INTERRUPTED")
        code = 3
    except SystemExit as e:
        say("EXIT", e.code)
        code = 4
    say("RECEIVED", ",".join(signal.Signals(s).name for s in stopper.received))
    now = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        # The test sends one more SIGINT once it reads this line.
        say("RESTORED", now[0] is previous[0], now[1] is previous[1])
        never.wait(120)
    except KeyboardInterrupt:
        say("DEFAULT_HANDLER")
    return code


if __name__ == "__main__":
    sys.exit(main())
