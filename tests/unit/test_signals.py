"""stop_on_signals against specs/pipeline.md (SIG-1..8).

The signal tests send real SIGINT/SIGTERM to a child process running
`signal_child.py`, which prints a marker line at each step; the test waits for
a marker (with a generous timeout) before it sends the next signal, so nothing
depends on timing. The in-process tests cover arguments, entering and
restoring, plus one round trip with SIGUSR1.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import coordkit
from coordkit import Coordinator, stop_on_signals

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("signal_child.py")
WAIT = 60.0  # seconds; a bound for a marker that should come at once


class Child:
    """A running signal_child.py whose stdout lines can be waited for."""

    def __init__(self, mode, grace, *extra):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), mode, grace, *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        self.lines = queue.Queue()
        self.seen = []  # every line so far
        self.pending = []  # lines no expect() has consumed yet
        self.stderr = []
        pumps = [(self.proc.stdout, self.lines.put, True), (self.proc.stderr, self.stderr.append, False)]
        self._readers = [threading.Thread(target=self._pump, args=args, daemon=True) for args in pumps]
        for t in self._readers:
            t.start()

    @staticmethod
    def _pump(stream, put, mark_end):
        for line in stream:
            put(line.rstrip("\n"))
        if mark_end:
            put(None)  # end of output

    def expect(self, marker):
        """Wait until a line starting with `marker` has appeared; consume and return it.

        Lines that other expectations have not consumed yet are kept, so
        markers printed by concurrent threads may come in any order.
        """
        while True:
            for line in self.pending:
                if line.startswith(marker):
                    self.pending.remove(line)
                    return line
            try:
                line = self.lines.get(timeout=WAIT)
            except queue.Empty:
                raise AssertionError(f"no {marker!r} within {WAIT} s; saw {self.seen}") from None
            if line is None:
                raise AssertionError(f"child ended before {marker!r}; saw {self.seen}; stderr {self.stderr}")
            self.seen.append(line)
            self.pending.append(line)

    def send(self, sig):
        self.proc.send_signal(sig)

    def relay(self, sig):
        """Have the child send ``sig`` to one of its worker threads (mode ``relay``)."""
        self.proc.stdin.write(sig.name.removeprefix("SIG") + "\n")
        self.proc.stdin.flush()

    def finish(self):
        code = self.proc.wait(timeout=WAIT)
        for t in self._readers:
            t.join(WAIT)
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=WAIT)


@pytest.fixture
def child():
    started = []

    def start(mode, grace="none", *extra):
        c = Child(mode, grace, *extra)
        started.append(c)
        return c

    yield start
    for c in started:
        c.kill()


# -- real signals, in a child process ----------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_first_signal_stops_the_threads_in_order(child, sig):
    """SIG-1, SIG-2, SIG-5: the first signal becomes request_stop(); the workers finish, join
    returns, the main thread carries on; the previous handlers are back after the block."""
    c = child("orderly")
    c.expect("READY")
    c.send(sig)
    c.expect("STOP_REQUESTED")
    done = sorted(c.expect("WORKER_DONE") for _ in range(3))
    assert done == ["WORKER_DONE 0", "WORKER_DONE 1", "WORKER_DONE 2"]
    c.expect("JOINED")
    assert c.expect("RECEIVED") == f"RECEIVED {sig.name}"
    assert c.expect("RESTORED") == "RESTORED True True"
    c.send(signal.SIGINT)  # after the block: Python's own handler again
    c.expect("DEFAULT_HANDLER")
    assert c.finish() == 0
    assert any(f"Received {sig.name}: requesting a stop" in line for line in c.stderr)


def _two_sigints_interrupt(c, send):
    """The stubborn child: the first SIGINT stops the coordinator, the second raises
    KeyboardInterrupt in the main thread; then the handlers are Python's own again."""
    c.expect("READY")
    send(signal.SIGINT)
    c.expect("STOP_REQUESTED")
    send(signal.SIGINT)
    c.expect("INTERRUPTED")
    assert c.expect("RECEIVED") == "RECEIVED SIGINT,SIGINT"
    assert c.expect("RESTORED") == "RESTORED True True"
    c.send(signal.SIGINT)
    c.expect("DEFAULT_HANDLER")
    assert c.finish() == 3


def test_second_sigint_raises_keyboard_interrupt(child):
    """SIG-3, SIG-5: with threads that ignore the stop, a second SIGINT raises KeyboardInterrupt in
    the main thread (here blocked in coord.join); the handlers are restored."""
    c = child("stubborn")
    _two_sigints_interrupt(c, c.send)


def test_signals_taken_by_a_worker_thread_still_reach_a_blocked_join(child):
    """SIG-8: the kernel may hand a process signal to any thread; CPython runs the handler only
    in the main thread, which here is parked in coord.join with no time limit. Both signals go to
    a worker thread; the first still stops the workers' coordinator, the second still raises."""
    c = child("stubborn", "none", "relay")
    _two_sigints_interrupt(c, c.relay)


def test_second_sigterm_raises_system_exit(child):
    """SIG-3, SIG-5: a SIGTERM as the second signal raises SystemExit(128 + 15); after the block
    SIGTERM has its default action again (the process dies of it)."""
    c = child("stubborn")
    c.expect("READY")
    c.send(signal.SIGINT)
    c.expect("STOP_REQUESTED")
    c.send(signal.SIGTERM)
    assert c.expect("EXIT") == f"EXIT {128 + signal.SIGTERM}"
    assert c.expect("RECEIVED") == "RECEIVED SIGINT,SIGTERM"
    assert c.expect("RESTORED") == "RESTORED True True"
    c.send(signal.SIGTERM)
    assert c.finish() == -signal.SIGTERM


@pytest.mark.parametrize("sig, marker", [(signal.SIGINT, "INTERRUPTED"), (signal.SIGTERM, "EXIT")])
def test_grace_period_expiry_is_a_second_signal(child, sig, marker):
    """SIG-4: threads still running grace_period_secs after the first signal: the helper thread
    delivers the signal again, which interrupts the main thread's blocking join."""
    c = child("stubborn", grace="0.2")
    c.expect("READY")
    c.send(sig)
    c.expect("STOP_REQUESTED")
    c.expect(marker)
    assert c.expect("RECEIVED") == f"RECEIVED {sig.name},{sig.name}"
    assert c.expect("RESTORED") == "RESTORED True True"
    c.send(signal.SIGINT)
    c.expect("DEFAULT_HANDLER")
    assert c.finish() == (3 if sig == signal.SIGINT else 4)
    assert any("did not finish within 0.2 s" in line for line in c.stderr)


def test_first_signal_ends_an_endless_pipeline_cleanly(child):
    """SIG-2, MON-3, MON-5: stop_on_signals(run.coord) inside a MonitoredRun: the first SIGINT stops
    an endless pipeline; the loop ends, the run joins every runner thread, nothing is raised."""
    c = child("pipeline")
    c.expect("READY")
    c.send(signal.SIGINT)
    c.expect("STOP_REQUESTED")
    c.expect("JOINED")
    assert c.expect("ALIVE") == "ALIVE 0 of 5"  # two producer threads, three batch threads
    assert c.expect("RECEIVED") == "RECEIVED SIGINT"
    assert c.expect("RESTORED") == "RESTORED True True"
    c.send(signal.SIGINT)
    c.expect("DEFAULT_HANDLER")
    assert c.finish() == 0


# -- in process ------------------------------------------------------------------------------------


def test_handlers_are_installed_and_restored():
    """SIG-1, SIG-5: inside the block both signals have coordkit's handler; after it, the previous
    ones, also when the block raises; exceptions are not swallowed."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    coord = Coordinator()
    with pytest.raises(ZeroDivisionError), stop_on_signals(coord) as stopper:
        inside = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        1 / 0  # noqa: B018
    assert all(h == stopper._handle for h in inside)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert stopper.received == [] and not coord.should_stop()


def test_nested_blocks_restore_in_order():
    """SIG-5: an inner block puts back the outer block's handler."""
    before = signal.getsignal(signal.SIGTERM)
    with stop_on_signals(Coordinator()) as outer:
        with stop_on_signals(Coordinator(), signals=[signal.SIGTERM]):
            pass
        assert signal.getsignal(signal.SIGTERM) == outer._handle
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_chosen_signal_round_trip_in_process():
    """SIG-2, SIG-3, SIG-5: with signals=[SIGUSR1], the first SIGUSR1 stops the coordinator, the
    second raises SystemExit(128 + SIGUSR1); SIGINT is left alone."""
    before = signal.getsignal(signal.SIGUSR1)
    sigint = signal.getsignal(signal.SIGINT)
    coord = Coordinator()
    with pytest.raises(SystemExit) as info, stop_on_signals(coord, signals=[signal.SIGUSR1]) as stopper:
        assert signal.getsignal(signal.SIGINT) is sigint
        signal.raise_signal(signal.SIGUSR1)
        assert coord.wait_for_stop(WAIT)
        signal.raise_signal(signal.SIGUSR1)
    assert info.value.code == 128 + signal.SIGUSR1
    assert stopper.received == [signal.SIGUSR1, signal.SIGUSR1]
    assert signal.getsignal(signal.SIGUSR1) == before


def test_the_handler_ignores_signals_once_the_exit_has_started():
    """SIG-6: a signal that still reaches coordkit's handler after the exit began (one the helper
    thread sent just before) is ignored: no stop, no exception, nothing recorded."""
    coord = Coordinator()
    with stop_on_signals(coord, signals=[signal.SIGUSR1]) as stopper:
        handler = signal.getsignal(signal.SIGUSR1)
    for _ in range(2):
        assert handler(signal.SIGUSR1, None) is None
    assert stopper.received == [] and not coord.should_stop()


def test_a_signal_landing_at_the_start_of_the_exit_still_restores():
    """SIG-6, SIG-5: a second signal raising inside the exit, before it is marked as ending, does
    not leave coordkit's handlers installed: they are restored, then the interrupt goes on."""
    before = signal.getsignal(signal.SIGINT)
    stopper = stop_on_signals(Coordinator())
    real_restore = stopper._restore
    calls = []

    def restore_hit_by_a_signal():
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt  # as the handler would, for a second SIGINT
        real_restore()

    stopper._restore = restore_hit_by_a_signal
    with pytest.raises(KeyboardInterrupt), stopper:
        pass
    assert calls == [1, 1]
    assert signal.getsignal(signal.SIGINT) is before


def test_only_in_the_main_thread():
    """SIG-7: entering in another thread is a RuntimeError naming the thread; nothing is installed."""
    errors = []

    def enter():
        try:
            with stop_on_signals(Coordinator()):
                pass
        except RuntimeError as e:
            errors.append(e)

    before = signal.getsignal(signal.SIGINT)
    t = threading.Thread(target=enter, name="not-main")
    t.start()
    t.join(WAIT)
    assert len(errors) == 1 and "must be entered in the main thread; got 'not-main'" in str(errors[0])
    assert signal.getsignal(signal.SIGINT) is before


def test_not_inside_a_controlled_run():
    """SIG-7, SCHED-4: signal handlers cannot be installed inside a controlled run: RuntimeError."""

    def scenario():
        with stop_on_signals(Coordinator()):
            pass

    with pytest.raises(RuntimeError, match="inside a controlled run"):
        coordkit.replay(scenario, [])


def test_entered_only_once():
    """SIG-7: a stop_on_signals object is good for one block."""
    stopper = stop_on_signals(Coordinator())
    with stopper:
        pass
    with pytest.raises(RuntimeError, match="entered only once"), stopper:
        pass


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"coord": object()}, TypeError, "stop_on_signals(coord) must be a Coordinator"),
        ({"grace_period_secs": -1}, ValueError, "(grace_period_secs) must be >= 0 or None; got -1"),
        ({"grace_period_secs": "1"}, TypeError, "stop_on_signals(grace_period_secs) must be a number"),
        ({"signals": []}, ValueError, "must name at least one signal; got []"),
        ({"signals": "INT"}, TypeError, "must be an iterable of signal numbers; got 'INT'"),
        ({"signals": [12345]}, ValueError, "12345 is not a signal number"),
        ({"signals": [signal.SIGKILL]}, ValueError, "SIGKILL cannot be caught"),
    ],
)
def test_argument_errors(kwargs, error, fragment):
    """SIG-7: bad arguments raise at the call, naming the argument and the value."""
    kwargs.setdefault("coord", Coordinator())
    with pytest.raises(error) as info:
        stop_on_signals(**kwargs)
    assert fragment in str(info.value)
