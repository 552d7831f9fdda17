"""Coordinator and LooperThread against specs/coordinator.md.

Each test names the rules it checks. Ports of TensorFlow's coordinator_test.py
keep TensorFlow's test name in the docstring. Blocking is arranged with
threading.Event and bounded waits (10 s caps); nothing sleeps and hopes.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time

import pytest

from coordkit import Coordinator, LooperThread, OutOfRangeError, explore, sync

CAP = 10.0  # upper bound on any wait in these tests


def start_thread(target, *args, name=None, coord=None):
    t = threading.Thread(target=target, args=args, name=name, daemon=True)
    if coord is not None:
        coord.register_thread(t)
    t.start()
    return t


class ProbeThread(threading.Thread):
    """A thread that signals `probed` when someone asks whether it is alive.

    join() calls is_alive() only after taking its snapshot, so `probed` tells a
    test that join is under way; `join_called` tells that join's watcher thread
    is waiting on this thread (join itself is then about to block).
    """

    def __init__(self, target=None, name=None):
        super().__init__(target=target, name=name, daemon=True)
        self.probed = threading.Event()
        self.join_called = threading.Event()

    def is_alive(self):
        self.probed.set()
        return super().is_alive()

    def join(self, timeout=None):
        self.join_called.set()
        super().join(timeout)


class Stuck:
    """A started thread blocked until release(); releases itself on teardown."""

    def __init__(self, name, coord=None):
        self.release_event = threading.Event()
        self.thread = start_thread(self.release_event.wait, CAP, name=name, coord=coord)

    def release(self):
        self.release_event.set()
        self.thread.join(CAP)
        assert not self.thread.is_alive()


@pytest.fixture
def stuck():
    made = []

    def make(name, coord=None):
        s = Stuck(name, coord)
        made.append(s)
        return s

    yield make
    for s in made:
        s.release()


def join_in_thread(coord, **kwargs):
    """Run coord.join(**kwargs) in a helper thread; return (thread, outcome dict)."""
    outcome = {}

    def body():
        try:
            coord.join(**kwargs)
            outcome["returned"] = time.monotonic()
        except BaseException as e:
            outcome["raised"] = e
            outcome["returned"] = time.monotonic()

    t = start_thread(body, name="joiner")
    return t, outcome


def run_in_turn(worker, *messages):
    """Run worker(message) in one thread per message, each after the previous one ended."""
    threads = []
    for message in messages:
        t = start_thread(worker, message)
        t.join(CAP)
        assert not t.is_alive()
        threads.append(t)
    return threads


def raise_and_report(coord, exc, as_exc_info):
    try:
        raise exc
    except BaseException as e:
        coord.request_stop(sys.exc_info() if as_exc_info else e)


# -- stopping (COORD-2..10) -----------------------------------------------------------------


def test_stop_api():
    """COORD-2, COORD-10. testStopAPI."""
    coord = Coordinator()
    assert not coord.should_stop()
    assert not coord.wait_for_stop(0.01)
    coord.request_stop()
    assert coord.should_stop()
    assert coord.wait_for_stop(0.01)
    assert coord.wait_for_stop()


def test_stop_async():
    """COORD-10. testStopAsync: a stop requested by another thread wakes wait_for_stop."""
    coord = Coordinator()
    go = threading.Event()

    def stopper():
        go.wait(CAP)
        coord.request_stop()

    t = start_thread(stopper)
    assert not coord.should_stop()
    go.set()
    assert coord.wait_for_stop(CAP)
    assert coord.should_stop()
    t.join(CAP)


def test_wait_for_stop_zero_negative_and_bad_timeouts():
    """COORD-10."""
    coord = Coordinator()
    started = time.monotonic()
    assert coord.wait_for_stop(0) is False
    assert coord.wait_for_stop(-5) is False
    assert time.monotonic() - started < 1.0
    with pytest.raises(TypeError, match="timeout"):
        coord.wait_for_stop("1")
    with pytest.raises(ValueError, match="NaN"):
        coord.wait_for_stop(math.nan)
    coord.request_stop()
    assert coord.wait_for_stop(-1) is True
    assert coord.wait_for_stop(math.inf) is True


def test_clean_stop_types_default_and_subclasses():
    """COORD-1, COORD-3. testJoinIgnoresOutOfRange, plus a subclass of OutOfRangeError."""

    class EndOfFiles(OutOfRangeError):
        pass

    for exc in (OutOfRangeError("eof"), EndOfFiles("sub")):
        coord = Coordinator()
        assert coord.clean_stop_exception_types == (OutOfRangeError,)
        raise_and_report(coord, exc, as_exc_info=False)
        assert coord.should_stop()
        assert coord.statistics().exc_info is None
        coord.join([])  # returns normally


def test_join_ignores_my_exception_type():
    """COORD-1, COORD-3. testJoinIgnoresMyExceptionType.

    With an instance, a subclass and an exc_info triple.
    """
    coord = Coordinator(clean_stop_exception_types=(ValueError,))
    raise_and_report(coord, UnicodeError("subclass of ValueError"), as_exc_info=True)
    coord.join([])
    coord = Coordinator(clean_stop_exception_types=[ValueError, KeyError])
    assert coord.clean_stop_exception_types == (ValueError, KeyError)
    raise_and_report(coord, KeyError("k"), as_exc_info=False)
    coord.join([])
    # OutOfRangeError is no longer clean once the types are given.
    coord = Coordinator(clean_stop_exception_types=(ValueError,))
    raise_and_report(coord, OutOfRangeError("eof"), as_exc_info=False)
    with pytest.raises(OutOfRangeError, match="eof"):
        coord.join([])


def test_empty_clean_types_filters_nothing():
    """COORD-1."""
    coord = Coordinator(clean_stop_exception_types=[])
    assert coord.clean_stop_exception_types == ()
    raise_and_report(coord, OutOfRangeError("eof"), as_exc_info=False)
    with pytest.raises(OutOfRangeError, match="eof"):
        coord.join([])


@pytest.mark.parametrize(
    "bad",
    [ValueError, "ValueError", 3, [ValueError, "x"], (int,), [ValueError()]],
    ids=["bare-class", "string", "int", "string-element", "non-exception-class", "instance"],
)
def test_clean_types_are_checked(bad):
    """COORD-1, DEV-COORD-5."""
    with pytest.raises(TypeError, match="clean_stop_exception_types") as info:
        Coordinator(clean_stop_exception_types=bad)
    assert repr(bad) in str(info.value)


def test_join_raise_report_exc_info_first_wins():
    """COORD-4, COORD-5. testJoinRaiseReportExcInfo: 'First' is re-raised, 'Too late' is dropped."""
    coord = Coordinator()
    raise_and_report(coord, RuntimeError("First"), as_exc_info=True)
    raise_and_report(coord, RuntimeError("Too late"), as_exc_info=True)
    with pytest.raises(RuntimeError, match="First"):
        coord.join([])


def test_join_raise_report_exception_first_wins():
    """COORD-4, COORD-5. testJoinRaiseReportException: the same with exception instances from a handler."""
    coord = Coordinator()

    def worker(msg):
        try:
            raise RuntimeError(msg)
        except RuntimeError as e:
            coord.request_stop(e)

    threads = run_in_turn(worker, "First", "Too late")
    with pytest.raises(RuntimeError, match="First"):
        coord.join(threads)


def test_plain_stop_first_drops_later_exceptions():
    """COORD-4."""
    coord = Coordinator()
    coord.request_stop()
    raise_and_report(coord, ValueError("late"), as_exc_info=False)
    raise_and_report(coord, ValueError("later"), as_exc_info=True)
    assert coord.statistics().exc_info is None
    coord.join([])


def test_clean_stop_first_drops_later_exceptions():
    """COORD-4."""
    coord = Coordinator()
    raise_and_report(coord, OutOfRangeError("eof"), as_exc_info=False)
    raise_and_report(coord, RuntimeError("real"), as_exc_info=False)
    coord.join([])


def test_handled_exception_is_recorded_not_the_argument():
    """COORD-5."""
    coord = Coordinator()
    passed = ValueError("passed")
    try:
        raise KeyError("handled")
    except KeyError as handled:
        coord.request_stop(passed)
        expected = handled
    assert coord.statistics().exc_info[1] is expected
    with pytest.raises(KeyError, match="handled"):
        coord.join([])


def test_handled_exception_further_up_the_stack():
    """COORD-5."""
    coord = Coordinator()

    def report():
        coord.request_stop(ValueError("passed"))

    try:
        raise KeyError("outer")
    except KeyError:
        report()
    with pytest.raises(KeyError, match="outer"):
        coord.join([])


def test_exc_info_triple_is_stored_as_is():
    """COORD-5, COORD-21."""
    coord = Coordinator()
    try:
        raise ValueError("boom")
    except ValueError:
        triple = sys.exc_info()
    coord.request_stop(triple)
    assert coord.statistics().exc_info is triple


def test_recording_logs_the_error(caplog):
    """COORD-5."""
    coord = Coordinator()
    with caplog.at_level(logging.INFO, logger="coordkit"):
        coord.request_stop(ValueError("logged"))
    assert any(
        "Error reported to Coordinator" in r.getMessage() and "logged" in r.getMessage()
        for r in caplog.records
    )


def test_request_stop_outside_except_records_the_argument():
    """COORD-6, DEV-COORD-1. TF raises TypeError here and stays poisoned; coordkit records ex itself."""
    coord = Coordinator()
    assert sys.exc_info() == (None, None, None)
    ex = ValueError("no handler")
    coord.request_stop(ex)
    assert coord.should_stop()
    info = coord.statistics().exc_info
    assert info[0] is ValueError and info[1] is ex
    with pytest.raises(ValueError) as raised:
        coord.join([])
    assert raised.value is ex


@pytest.mark.parametrize(
    "bad",
    ["oops", 1, (None, None, None), (ValueError, "x", None), (ValueError("x"),)],
    ids=["string", "int", "empty-exc-info", "non-exception-value", "short-tuple"],
)
def test_malformed_stop_reason_is_refused(bad):
    """COORD-18, DEV-COORD-6."""
    coord = Coordinator()
    with pytest.raises(TypeError, match="request_stop") as info:
        coord.request_stop(bad)
    assert repr(bad) in str(info.value)
    stats = coord.statistics()
    assert not stats.stop_requested and stats.exc_info is None
    coord.request_stop()  # still usable
    coord.join([])


def test_request_stop_raises_if_joined():
    """COORD-7. testRequestStopRaisesIfJoined."""
    coord = Coordinator()
    coord.join([])
    assert coord.joined
    assert not coord.should_stop()
    with pytest.raises(RuntimeError, match="Too late"):
        try:
            raise RuntimeError("Too late")
        except RuntimeError as e:
            coord.request_stop(e)
    assert not coord.should_stop()  # a raising call does not stop
    assert coord.statistics().exc_info is None  # nor record
    coord.clear_stop()
    try:
        raise ValueError("After clear")
    except ValueError as e:
        coord.request_stop(e)
    with pytest.raises(ValueError, match="After clear"):
        coord.join([])


def test_request_stop_raises_if_joined_exc_info():
    """COORD-7. testRequestStopRaisesIfJoined_ExcInfo."""
    coord = Coordinator()
    coord.join([])
    with pytest.raises(RuntimeError, match="Too late"):
        try:
            raise RuntimeError("Too late")
        except RuntimeError:
            coord.request_stop(sys.exc_info())
    coord.clear_stop()
    try:
        raise ValueError("After clear")
    except ValueError:
        coord.request_stop(sys.exc_info())
    with pytest.raises(ValueError, match="After clear"):
        coord.join([])


def test_request_stop_after_join_variants():
    """COORD-7, DEV-COORD-1."""
    coord = Coordinator()
    coord.join([])
    # Outside a handler the passed exception itself is raised (TF raises TypeError).
    ex = KeyError("mine")
    with pytest.raises(KeyError) as raised:
        coord.request_stop(ex)
    assert raised.value is ex
    # Inside a handler of another exception, the handled one is raised.
    with pytest.raises(IndexError, match="handled"):
        try:
            raise IndexError("handled")
        except IndexError:
            coord.request_stop(KeyError("passed"))
    # A clean stop, or None, just sets the stop.
    assert not coord.should_stop()
    coord.request_stop(OutOfRangeError("eof"))
    assert coord.should_stop()
    coord.request_stop()
    assert coord.joined and coord.statistics().exc_info is None


def test_clear_stop_clears_exception_too():
    """COORD-8. testClearStopClearsExceptionToo; registered threads survive clear_stop."""
    coord = Coordinator()
    raise_and_report(coord, RuntimeError("First"), as_exc_info=True)
    with pytest.raises(RuntimeError, match="First"):
        coord.join([])
    t = threading.Thread(target=lambda: None)
    coord.register_thread(t)
    coord.clear_stop()
    stats = coord.statistics()
    assert not stats.stop_requested and not stats.joined and stats.exc_info is None
    assert stats.registered_threads == (t,)
    assert not coord.should_stop() and not coord.joined
    raise_and_report(coord, RuntimeError("Second"), as_exc_info=True)
    with pytest.raises(RuntimeError, match="Second"):
        coord.join([])


def test_join_raise_report_exception_using_handler():
    """COORD-9. testJoinRaiseReportExceptionUsingHandler: the body's exception is swallowed."""
    coord = Coordinator()
    after_with = []

    def worker(msg):
        with coord.stop_on_exception():
            raise RuntimeError(msg)
        after_with.append(msg)  # runs: the exception was swallowed

    threads = run_in_turn(worker, "First", "Too late")
    with pytest.raises(RuntimeError, match="First"):
        coord.join(threads)
    assert after_with == ["First", "Too late"]


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt(), OutOfRangeError("eof")])
def test_stop_on_exception_swallows_everything(exc):
    """COORD-9."""
    coord = Coordinator()
    with coord.stop_on_exception():
        raise exc
    assert coord.should_stop()
    if isinstance(exc, OutOfRangeError):
        coord.join([])  # a clean stop: silent
    else:
        with pytest.raises(type(exc)) as raised:
            coord.join([])
        assert raised.value is exc


def test_stop_on_exception_without_exception_does_nothing():
    """COORD-9."""
    coord = Coordinator()
    with coord.stop_on_exception():
        pass
    assert not coord.should_stop()


def test_stop_on_exception_after_join_escapes():
    """COORD-9, COORD-7."""
    coord = Coordinator()
    coord.join([])
    with pytest.raises(ValueError, match="escapes"), coord.stop_on_exception():
        raise ValueError("escapes")


# -- threads and join (COORD-11..21) -----------------------------------------------------


def test_join():
    """COORD-13. testJoin: join returns once short threads end; none is alive afterwards."""
    coord = Coordinator()
    threads = [start_thread(lambda: sum(range(1000))) for _ in range(3)]
    coord.join(threads)
    assert not any(t.is_alive() for t in threads)
    assert coord.joined


def test_join_all_registered():
    """COORD-11, COORD-12. testJoinAllRegistered: threads register themselves; join() waits for them all."""
    coord = Coordinator()
    registered = threading.Barrier(4, timeout=CAP)
    go = threading.Event()

    def worker():
        coord.register_thread(threading.current_thread())
        registered.wait()
        go.wait(CAP)

    threads = [start_thread(worker) for _ in range(3)]
    registered.wait()
    joiner, outcome = join_in_thread(coord)
    go.set()
    joiner.join(CAP)
    assert "raised" not in outcome and "returned" in outcome
    assert not any(t.is_alive() for t in threads)


def test_join_some_registered():
    """COORD-12. testJoinSomeRegistered: two registered plus one passed to join."""
    coord = Coordinator()
    go = threading.Event()
    registered = [start_thread(go.wait, CAP, coord=coord) for _ in range(2)]
    passed = start_thread(go.wait, CAP)
    joiner, outcome = join_in_thread(coord, threads=[passed])
    go.set()
    joiner.join(CAP)
    assert "returned" in outcome and "raised" not in outcome
    assert not any(t.is_alive() for t in [*registered, passed])


def test_register_thread_ignores_duplicates_and_checks_type():
    """COORD-11, DEV-COORD-10."""
    coord = Coordinator()
    t = threading.Thread(target=lambda: None)
    coord.register_thread(t)
    coord.register_thread(t)
    assert coord.statistics().registered_threads == (t,)
    with pytest.raises(TypeError, match="register_thread"):
        coord.register_thread("not a thread")


def test_join_snapshot_ignores_threads_registered_later():
    """COORD-12."""
    coord = Coordinator()
    probe_go = threading.Event()
    probe = ProbeThread(target=lambda: probe_go.wait(CAP))
    coord.register_thread(probe)
    probe.start()
    joiner, outcome = join_in_thread(coord)
    assert probe.probed.wait(CAP)  # join has taken its snapshot
    late_go = threading.Event()
    late = start_thread(late_go.wait, CAP, coord=coord)
    probe_go.set()
    joiner.join(CAP)
    assert "returned" in outcome and "raised" not in outcome
    assert late.is_alive()  # join did not wait for it
    # ...and join emptied the registered set, so it is not remembered either.
    assert coord.statistics().registered_threads == ()
    late_go.set()
    late.join(CAP)


def test_join_empties_registered_set():
    """COORD-12, COORD-15."""
    coord = Coordinator()
    t = start_thread(lambda: None, coord=coord)
    coord.join()
    assert coord.statistics().registered_threads == ()
    assert not t.is_alive()


def test_join_without_stop_waits_for_live_threads(stuck):
    """COORD-13. No stop request and a live thread: join keeps waiting (it never stops anything)."""
    coord = Coordinator()
    s = stuck("worker", coord)
    joiner, outcome = join_in_thread(coord, stop_grace_period_secs=0)
    joiner.join(0.3)  # a bounded look: join must still be waiting
    assert joiner.is_alive() and not outcome
    assert not coord.should_stop()
    s.release()
    joiner.join(CAP)
    assert "returned" in outcome and "raised" not in outcome


def test_join_skips_never_started_threads():
    """COORD-13."""
    coord = Coordinator()
    never = threading.Thread(target=lambda: None, name="never-started")
    coord.register_thread(never)
    coord.join()
    assert coord.joined


def test_join_notices_the_last_thread_promptly():
    """DEV-COORD-2. TF polls once a second; coordkit returns within milliseconds of the end."""
    coord = Coordinator()
    ended = {}

    def body():
        # End only once join is watching this thread.
        assert worker.probed.wait(CAP)
        ended["at"] = time.monotonic()

    worker = ProbeThread(target=body, name="worker")
    worker.start()
    coord.join([worker])
    delay = time.monotonic() - ended["at"]
    assert delay < 0.5, delay


def test_join_notices_a_stop_promptly():
    """COORD-13, DEV-COORD-2: no one-second poll; a stop request wakes phase one at once."""
    coord = Coordinator()
    release = threading.Event()
    worker = ProbeThread(target=lambda: release.wait(CAP), name="worker")
    coord.register_thread(worker)
    worker.start()
    joiner, outcome = join_in_thread(coord, stop_grace_period_secs=0)
    assert worker.join_called.wait(CAP)  # join's watcher waits on the worker
    asked = time.monotonic()
    coord.request_stop()
    joiner.join(CAP)
    assert isinstance(outcome.get("raised"), RuntimeError)
    assert outcome["returned"] - asked < 0.5
    release.set()


def test_join_watcher_thread():
    """COORD-13: phase one's helper is a daemon named coordkit-join-watcher that ends with the threads."""
    coord = Coordinator()
    release = threading.Event()
    worker = ProbeThread(target=lambda: release.wait(CAP), name="worker")
    worker.start()
    before = set(threading.enumerate())
    joiner, outcome = join_in_thread(coord, threads=[worker])
    assert worker.join_called.wait(CAP)
    watchers = [t for t in set(threading.enumerate()) - before if t.name == "coordkit-join-watcher"]
    assert len(watchers) == 1 and watchers[0].daemon
    release.set()
    joiner.join(CAP)
    assert "returned" in outcome and "raised" not in outcome
    watchers[0].join(CAP)
    assert not watchers[0].is_alive()


def test_join_never_joins_one_thread_twice_at_once():
    """COORD-13, COORD-14: only the watcher joins, in every interleaving of a stop that
    arrives while it waits (two joins of one thread at once fail inside CPython < 3.13)."""

    class JoinSpy:
        """A thread-like object that counts the joins in progress."""

        def __init__(self) -> None:
            self.name = "spy"
            self.done = threading.Event()
            self.inside = 0
            self.most = 0

        def is_alive(self) -> bool:
            return not self.done.is_set()

        def join(self, timeout: float | None = None) -> None:
            self.inside += 1
            self.most = max(self.most, self.inside)
            try:
                self.done.wait(timeout)
            finally:
                self.inside -= 1

    spies: list[JoinSpy] = []

    def program() -> None:
        coord = Coordinator()
        spy = JoinSpy()
        spies.append(spy)
        stopper = threading.Thread(target=coord.request_stop)
        finisher = threading.Thread(target=spy.done.set)
        stopper.start()
        finisher.start()
        coord.join([spy], stop_grace_period_secs=5)
        stopper.join()
        finisher.join()

    result = explore(program, strategy="dfs", max_preemptions=2, max_schedules=3000)
    assert result.failure is None, result.failure
    assert len(spies) > 20 and max(spy.most for spy in spies) == 1

    def joins_again_and_again() -> None:
        coord = Coordinator()
        spy = JoinSpy()
        spies.append(spy)
        coord.request_stop()
        for _ in range(3):  # a stuck thread: each join gives up at once
            with pytest.raises(RuntimeError, match="still running: spy"):
                coord.join([spy], stop_grace_period_secs=0)
        spy.done.set()
        coord.join([spy], stop_grace_period_secs=5)

    spies.clear()
    result = explore(joins_again_and_again, strategy="dfs", max_preemptions=2, max_schedules=3000)
    assert result.failure is None, result.failure
    assert spies and max(spy.most for spy in spies) == 1  # one watcher, not one per join


def test_grace_phase_returns_when_the_last_thread_ends():
    """COORD-14, DEV-COORD-3."""
    coord = Coordinator()
    coord.request_stop()
    ended = {}
    release = threading.Event()

    def body():
        release.wait(CAP)
        ended["at"] = time.monotonic()

    worker = ProbeThread(target=body, name="slow-to-stop")
    worker.start()
    joiner, outcome = join_in_thread(coord, threads=[worker], stop_grace_period_secs=CAP)
    assert worker.probed.wait(CAP)
    release.set()
    joiner.join(CAP)
    assert "returned" in outcome and "raised" not in outcome
    assert outcome["returned"] - ended["at"] < 0.5


@pytest.mark.parametrize("grace", [1e-10, 0.002, 1.0, 0])
def test_join_grace_expires(stuck, grace):
    """COORD-14, COORD-15. testJoinGraceExpires (grace 1e-10, 0.002, 1.0) plus a grace of zero."""
    coord = Coordinator()
    s = stuck("stuck-worker")
    coord.request_stop()
    started = time.monotonic()
    with pytest.raises(RuntimeError) as raised:
        coord.join([s.thread], stop_grace_period_secs=grace)
    took = time.monotonic() - started
    assert str(raised.value) == "Coordinator stopped with threads still running: stuck-worker"
    assert grace - 0.01 <= took < grace + 2.0
    assert coord.joined


def test_join_without_grace_expires_logs(stuck, caplog):
    """COORD-15. testJoinWithoutGraceExpires: ignore_live_threads logs instead of raising."""
    coord = Coordinator()
    s = stuck("stuck-worker")
    coord.request_stop()
    with caplog.at_level(logging.INFO, logger="coordkit"):
        coord.join([s.thread], stop_grace_period_secs=1e-10, ignore_live_threads=True)
    assert "Coordinator stopped with threads still running: stuck-worker" in caplog.text


def test_straggler_names_in_snapshot_order(stuck):
    """COORD-15, DEV-COORD-7."""
    coord = Coordinator()
    stuck("bravo", coord)
    a = stuck("alpha", coord)
    c = stuck("charlie")
    coord.request_stop()
    with pytest.raises(RuntimeError) as raised:
        coord.join([c.thread, a.thread], stop_grace_period_secs=0)
    assert str(raised.value) == ("Coordinator stopped with threads still running: bravo alpha charlie")


def test_recorded_exception_beats_live_threads(stuck):
    """COORD-15."""
    coord = Coordinator()
    s = stuck("laggard")
    raise_and_report(coord, ValueError("boom"), as_exc_info=False)
    with pytest.raises(ValueError, match="boom"):
        coord.join([s.thread], stop_grace_period_secs=0)


def test_same_instance_raised_until_clear_stop():
    """COORD-15, COORD-16, COORD-17."""
    coord = Coordinator()
    assert coord.raise_requested_exception() is None
    try:
        raise ValueError("first")
    except ValueError as e:
        original = e
        coord.request_stop(e)
    for _ in range(2):
        with pytest.raises(ValueError) as raised:
            coord.join([])
        assert raised.value is original
        assert coord.joined
    with pytest.raises(ValueError) as raised:
        coord.raise_requested_exception()
    assert raised.value is original
    assert coord.joined  # raise_requested_exception changes nothing
    coord.clear_stop()
    assert coord.raise_requested_exception() is None
    coord.request_stop()
    coord.join([])


def test_joined_property():
    """COORD-16."""
    coord = Coordinator()
    assert not coord.joined
    coord.join([])
    assert coord.joined
    coord.clear_stop()
    assert not coord.joined


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"stop_grace_period_secs": -1}, ValueError, "-1"),
        ({"stop_grace_period_secs": math.nan}, ValueError, "NaN"),
        ({"stop_grace_period_secs": "10"}, TypeError, "'10'"),
        ({"threads": threading.Thread(target=lambda: None, name="single")}, TypeError, "single"),
        ({"threads": 5}, TypeError, "5"),
        ({"threads": ["not-a-thread"]}, TypeError, "not-a-thread"),
    ],
    ids=["negative", "nan", "string", "single-thread", "int", "bad-element"],
)
def test_join_checks_arguments(kwargs, error, text):
    """COORD-19, DEV-COORD-4, DEV-COORD-10."""
    coord = Coordinator()
    coord.request_stop()
    with pytest.raises(error, match="join") as raised:
        coord.join(**kwargs)
    assert text in str(raised.value)
    assert not coord.joined  # nothing changed


def test_join_with_infinite_grace_waits_for_the_end():
    """COORD-14."""
    coord = Coordinator()
    coord.request_stop()
    release = threading.Event()
    worker = ProbeThread(target=lambda: release.wait(CAP))
    worker.start()
    joiner, outcome = join_in_thread(coord, threads=[worker], stop_grace_period_secs=math.inf)
    assert worker.probed.wait(CAP)
    release.set()
    joiner.join(CAP)
    assert "returned" in outcome and "raised" not in outcome


def test_join_from_a_thread_of_the_snapshot():
    """COORD-20."""
    coord = Coordinator()
    outcome = {}
    other_go = threading.Event()
    other = start_thread(other_go.wait, CAP, name="other", coord=coord)

    def self_joiner():
        try:
            coord.join(stop_grace_period_secs=CAP)
        except BaseException as e:
            outcome["raised"] = e

    me = threading.Thread(target=self_joiner, name="self-joiner", daemon=True)
    coord.register_thread(me)
    me.start()
    other_go.set()
    other.join(CAP)
    me.join(0.3)  # with only itself alive, join waits for a stop
    assert me.is_alive()
    coord.request_stop()
    me.join(CAP)  # the grace is CAP, but join does not wait on its own thread
    assert not me.is_alive()
    assert str(outcome["raised"]) == "Coordinator stopped with threads still running: self-joiner"


def test_statistics_snapshot():
    """COORD-21."""
    coord = Coordinator()
    t = threading.Thread(target=lambda: None)
    coord.register_thread(t)
    stats = coord.statistics()
    assert stats.stop_requested is False and stats.joined is False
    assert stats.exc_info is None and stats.registered_threads == (t,)
    with pytest.raises(AttributeError):
        stats.joined = True  # frozen


def test_join_uses_the_sync_seam_for_its_clock(monkeypatch, stuck):
    """COORD-14. The grace deadline is read from coordkit.sync.monotonic (what virtual time replaces)."""
    reads = []
    real = sync.monotonic

    def counting():
        reads.append(1)
        return real()

    monkeypatch.setattr(sync, "monotonic", counting)
    coord = Coordinator()
    s = stuck("late")
    coord.request_stop()
    with pytest.raises(RuntimeError):
        coord.join([s.thread], stop_grace_period_secs=0.01)
    assert reads


# -- LooperThread (LOOP-1..6) ------------------------------------------------------------


def test_looper_constructor_errors():
    """LOOP-1."""
    coord = Coordinator()
    with pytest.raises(ValueError, match="'coord' argument must be a Coordinator: notcoord"):
        LooperThread("notcoord", 1)
    with pytest.raises(ValueError, match="'args' and 'kwargs' argument require that you also pass 'target'"):
        LooperThread(coord, 1, args=(1,))
    with pytest.raises(ValueError, match="require that you also pass 'target'"):
        LooperThread(coord, 1, kwargs={"a": 1})
    LooperThread(coord, 1, args=(), kwargs={})  # empty ones are fine, as in TF


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"timer_interval_secs": -0.5}, ValueError),
        ({"timer_interval_secs": math.nan}, ValueError),
        ({"timer_interval_secs": "1"}, TypeError),
        ({"timer_interval_secs": 1, "target": "not callable"}, TypeError),
    ],
    ids=["negative", "nan", "string", "target"],
)
def test_looper_argument_checks(kwargs, error):
    """LOOP-6, DEV-COORD-9."""
    with pytest.raises(error, match="LooperThread"):
        LooperThread(Coordinator(), **kwargs)


def test_looper_is_daemon_and_registers_itself():
    """LOOP-1."""
    coord = Coordinator()
    looper = LooperThread(coord, None, target=lambda: None)
    assert looper.daemon
    assert not looper.is_alive()
    assert coord.statistics().registered_threads == (looper,)


def _countdown(coord, n, counter):
    counter[0] += 1
    if counter[0] >= n:
        coord.request_stop()


@pytest.mark.parametrize("interval", [0, None])
def test_target_args(interval):
    """LOOP-3, LOOP-4, LOOP-5. testTargetArgs (TF passes 0; None is the back-to-back path)."""
    coord = Coordinator()
    counter = [0]
    looper = LooperThread.loop(coord, interval, _countdown, args=(coord, 5, counter))
    assert looper.is_alive() or counter[0] == 5
    coord.join(stop_grace_period_secs=CAP)
    assert counter[0] == 5


def test_target_kwargs():
    """LOOP-5. testTargetKwargs."""
    coord = Coordinator()
    counter = [0]
    LooperThread.loop(coord, 0, _countdown, kwargs={"coord": coord, "n": 3, "counter": counter})
    coord.join(stop_grace_period_secs=CAP)
    assert counter[0] == 3


def test_target_mixed_args():
    """LOOP-5. testTargetMixedArgs."""
    coord = Coordinator()
    counter = [0]
    LooperThread.loop(coord, 0, _countdown, args=(coord,), kwargs={"n": 4, "counter": counter})
    coord.join(stop_grace_period_secs=CAP)
    assert counter[0] == 4


class Recorder(LooperThread):
    def __init__(self, coord, interval, stop_after=None, fail_in=None):
        super().__init__(coord, interval)
        self.calls = []
        self.stop_after = stop_after
        self.fail_in = fail_in

    def start_loop(self):
        self.calls.append("start")
        if self.fail_in == "start":
            raise ValueError("start failed")

    def run_loop(self):
        self.calls.append("run")
        if self.fail_in == "run":
            raise ValueError("run failed")
        if self.calls.count("run") == self.stop_after:
            self._coord.request_stop()

    def stop_loop(self):
        self.calls.append("stop")


@pytest.mark.parametrize("interval", [None, 0])
def test_hooks_order(interval):
    """LOOP-2."""
    coord = Coordinator()
    looper = Recorder(coord, interval, stop_after=2)
    looper.start()
    coord.join(stop_grace_period_secs=CAP)
    assert looper.calls == ["start", "run", "run", "stop"]


@pytest.mark.parametrize("interval", [None, 0, 5.0])
def test_hooks_when_already_stopped(interval):
    """LOOP-2, LOOP-4."""
    coord = Coordinator()
    coord.request_stop()
    looper = Recorder(coord, interval)
    looper.start()
    coord.join(stop_grace_period_secs=CAP)
    assert looper.calls == ["start", "stop"]


@pytest.mark.parametrize("where", ["start", "run"])
def test_exception_goes_to_coordinator_and_skips_stop_loop(where):
    """LOOP-2."""
    coord = Coordinator()
    looper = Recorder(coord, None, fail_in=where)
    looper.start()
    with pytest.raises(ValueError, match=f"{where} failed"):
        coord.join(stop_grace_period_secs=CAP)
    assert "stop" not in looper.calls
    assert not looper.is_alive()


def test_timer_grid_with_catch_up(monkeypatch):
    """LOOP-4, DEV-COORD-8. P13's shape: interval 1, first call takes 3.5 -> calls at 0, 3.5, 3.5, 3.5, 4, 5.

    The clock is sync.monotonic (faked here) and the waits go through
    wait_for_stop, so the grid is checked without any real waiting.
    """
    clock = [100.0]
    monkeypatch.setattr(sync, "monotonic", lambda: clock[0])
    coord = Coordinator()
    offsets = []
    timeouts = []

    def fake_wait_for_stop(timeout=None):
        timeouts.append(timeout)
        if len(offsets) == 6:
            coord.request_stop()
        elif timeout > 0:
            clock[0] += timeout
        return coord.should_stop()

    def target():
        offsets.append(clock[0] - 100.0)
        if len(offsets) == 1:
            clock[0] += 3.5

    looper = LooperThread(coord, 1.0, target=target)
    monkeypatch.setattr(coord, "wait_for_stop", fake_wait_for_stop)
    looper.run()  # in this thread
    assert offsets == [0.0, 3.5, 3.5, 3.5, 4.0, 5.0]
    assert timeouts[:6] == [0.0, -2.5, -1.5, -0.5, 0.5, 1.0]


def test_timer_calls_on_the_grid_in_real_time():
    """LOOP-4. With a real clock the calls stay on the t0 + k*T grid (within scheduling noise)."""
    coord = Coordinator()
    times = []

    def target():
        times.append(time.monotonic())
        if len(times) == 4:
            coord.request_stop()

    LooperThread.loop(coord, 0.05, target)
    coord.join(stop_grace_period_secs=CAP)
    assert len(times) == 4
    offsets = [t - times[0] for t in times]
    for k, off in enumerate(offsets):
        assert off >= k * 0.05 - 0.01


def test_timer_never_calls_when_stopped():
    """LOOP-4."""
    coord = Coordinator()
    coord.request_stop()
    calls = []
    LooperThread.loop(coord, 0.01, lambda: calls.append(1))
    coord.join(stop_grace_period_secs=CAP)
    assert calls == []


def test_default_run_loop_without_target():
    """LOOP-5."""
    coord = Coordinator()
    looper = LooperThread(coord, None)
    looper.run_loop()  # does nothing
    coord.request_stop()
    looper.start()
    coord.join(stop_grace_period_secs=CAP)


# -- under the controlled scheduler (coordkit.explore / coordkit.replay) -------------------


def _stuck_thread_with_long_grace(elapsed):
    coord = Coordinator()
    stuck = threading.Event()  # created inside the run: a controlled Event
    t = threading.Thread(target=stuck.wait, name="stuck", daemon=True)
    coord.register_thread(t)
    t.start()
    coord.request_stop()
    started = sync.monotonic()
    try:
        coord.join(stop_grace_period_secs=120)
    except RuntimeError as e:
        assert str(e) == "Coordinator stopped with threads still running: stuck"
    else:
        raise AssertionError("join did not report the stuck thread")
    elapsed.append(sync.monotonic() - started)


def test_grace_period_is_virtual_time_under_the_scheduler():
    """COORD-14, COORD-15: join(stop_grace_period_secs=120) with a stuck thread costs no wall time."""
    elapsed = []
    started = time.monotonic()
    result = explore(lambda: _stuck_thread_with_long_grace(elapsed), max_schedules=20, seed=0)
    assert result.ok, result.failure
    assert time.monotonic() - started < 5.0
    assert elapsed and all(120 <= e < 121 for e in elapsed)


def test_join_that_nobody_stops_is_a_deadlock_under_the_scheduler():
    """COORD-13, DEV-COORD-2: no polling, so a join that can never return is a deadlock report."""

    def never_stopped():
        coord = Coordinator()
        stuck = threading.Event()
        t = threading.Thread(target=stuck.wait, name="stuck")
        coord.register_thread(t)
        t.start()
        coord.join()

    result = explore(never_stopped, max_schedules=3, seed=0)
    assert result.failure is not None and result.failure.kind == "deadlock"
    assert "coordkit-join-watcher" in str(result.failure)


def test_first_stop_wins_in_every_interleaving():
    """COORD-4, COORD-15: two reporters race; join raises exactly the one whose stop came first."""

    def race():
        coord = Coordinator()
        order = []
        order_lock = threading.Lock()

        def report(exc):
            with order_lock:  # the same order as the coordinator's lock
                order.append(exc)
                coord.request_stop(exc)

        threads = [
            threading.Thread(target=report, args=(ValueError("a"),)),
            threading.Thread(target=report, args=(KeyError("b"),)),
        ]
        for t in threads:
            t.start()
        try:
            coord.join(threads)
        except (ValueError, KeyError) as e:
            assert e is order[0]
        else:
            raise AssertionError("join raised nothing")

    result = explore(race, strategy="dfs", max_schedules=200, seed=0)
    assert result.ok, result.failure


def test_timer_grid_on_virtual_time():
    """LOOP-4, DEV-COORD-8: on the sync clock, calls land exactly on t0, t0+T, t0+2T."""
    offsets = []

    def scenario():
        coord = Coordinator()
        times = []

        def tick():
            times.append(sync.monotonic())
            if len(times) == 3:
                coord.request_stop()

        LooperThread.loop(coord, 10.0, tick)
        coord.join(stop_grace_period_secs=120)
        offsets.append([t - times[0] for t in times])

    started = time.monotonic()
    result = explore(scenario, max_schedules=10, seed=0)
    assert result.ok, result.failure
    assert time.monotonic() - started < 5.0
    assert offsets and all(o == [0.0, 10.0, 20.0] for o in offsets)
