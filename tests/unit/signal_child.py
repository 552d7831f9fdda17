"""The child process of tests/unit/test_signals.py: one scenario of stop_on_signals.

    python signal_child.py MODE GRACE [relay]

MODE is ``orderly`` (worker threads stop when asked), ``stubborn`` (they ignore
the stop) or ``pipeline`` (an endless input pipeline in a MonitoredRun). GRACE
is stop_on_signals' grace period in seconds, or ``none``. With ``relay``, each
line ``INT`` or ``TERM`` read from stdin is sent as that signal to a worker thread
(``signal.pthread_kill``), not to the process: the kernel's choice of thread when
it hands a process signal to a busy main thread (SIG-8). The child prints a
marker line at each step, flushed, so the test can wait for it before it sends
the next signal:

READY            handlers installed, threads running
STOP_REQUESTED   the coordinator's stop is set (the first signal arrived)
WORKER_DONE n    worker n finished after the stop (orderly)
JOINED           coord.join returned, or the MonitoredRun ended (pipeline)
ALIVE n of m     runner threads still alive after the MonitoredRun (pipeline)
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
import time

import coordkit
from coordkit.signals import SignalStop

_print_lock = threading.Lock()
stoppers: list[SignalStop] = []  # the stop_on_signals object of this run, once made


def say(*parts: object) -> None:
    """Print one marker line, whole, flushed (threads print concurrently)."""
    with _print_lock:
        print(*parts, flush=True)


def report_stop(coord: coordkit.Coordinator) -> None:
    threading.Thread(target=lambda: coord.wait_for_stop() and say("STOP_REQUESTED"), daemon=True).start()


def relay_signals_to(thread: threading.Thread) -> None:
    """Send each signal named on stdin to ``thread`` (SIG-8), from a daemon thread."""

    def relay() -> None:
        for line in sys.stdin:
            signal.pthread_kill(thread.ident, getattr(signal, "SIG" + line.strip()))

    threading.Thread(target=relay, daemon=True).start()


def run_workers(mode: str, grace: float | None, relay: bool) -> None:
    """Modes orderly and stubborn: three plain threads under a Coordinator."""
    coord = coordkit.Coordinator()
    never = threading.Event()

    def worker(n: int) -> None:
        if mode == "orderly":
            coord.wait_for_stop()
            say("WORKER_DONE", n)
        else:
            never.wait()  # ignores the stop

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(3)]
    stopper = coordkit.stop_on_signals(coord, grace_period_secs=grace)
    stoppers.append(stopper)
    with stopper:
        report_stop(coord)
        for t in threads:
            t.start()
        if relay:
            relay_signals_to(threads[0])
        say("READY")
        coord.join(threads, stop_grace_period_secs=None)  # no limit: only a signal ends it
        say("JOINED")


def run_pipeline(grace: float | None) -> None:
    """Mode pipeline: an endless input pipeline that only a signal stops."""
    with coordkit.queue_runner_scope():
        q = coordkit.input_producer(range(10), shuffle=False)  # no epoch limit
        get_batch = coordkit.batch(q.dequeue, 5, num_threads=2)
        run = coordkit.MonitoredRun(grace_period_secs=60)
        with run, coordkit.stop_on_signals(run.coord, grace_period_secs=grace) as stopper:
            stoppers.append(stopper)
            report_stop(run.coord)
            get_batch()
            say("READY")
            while not run.should_stop():
                get_batch()
        say("JOINED")
        say("ALIVE", sum(t.is_alive() for t in run.threads), "of", len(run.threads))


def main() -> int:
    mode, grace_arg = sys.argv[1], sys.argv[2]
    relay = sys.argv[3:] == ["relay"]
    grace = None if grace_arg == "none" else float(grace_arg)
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    code = 0
    try:
        if mode == "pipeline":
            run_pipeline(grace)
        else:
            run_workers(mode, grace, relay)
    except KeyboardInterrupt:
        say("INTERRUPTED")
        code = 3
    except SystemExit as e:
        say("EXIT", e.code)
        code = 4
    say("RECEIVED", ",".join(signal.Signals(s).name for s in stoppers[0].received))
    now = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        # The test sends one more SIGINT once it reads this line.
        say("RESTORED", now[0] is previous[0], now[1] is previous[1])
        # Wait in short sleeps, not one long blocking wait: if the kernel hands the signal
        # to another thread still winding down (a join watcher, say), the main thread is
        # not woken from a long wait, and would see the pending KeyboardInterrupt only
        # when the wait ends (seen once in 15 loaded runs).
        for _ in range(1200):
            time.sleep(0.1)
    except KeyboardInterrupt:
        say("DEFAULT_HANDLER")
    return code


if __name__ == "__main__":
    sys.exit(main())
