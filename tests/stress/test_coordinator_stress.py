"""Coordinator with dozens of real threads raising, stopping, waiting and looping.

Each round gives 40 threads random roles and random amounts of work before they
act: raise an error inside ``stop_on_exception`` (COORD-9), raise a clean-stop
OutOfRangeError (COORD-3), call ``request_stop()``, wait for the stop
(COORD-10), poll ``wait_for_stop`` with short timeouts, or run as a LooperThread
(LOOP-2).  Then ``join`` (COORD-12..15) must return or re-raise consistently
with what happened:

* every thread has ended;
* join raises nothing, or one of the errors a worker raised, the same object that
  ``raise_requested_exception`` raises (COORD-16) and that ``statistics()``
  records (COORD-21);
* if no clean stop was ever requested, join raises (some error stopped the
  threads first) (COORD-4);
* ``clear_stop`` resets everything but the coordinator works again (COORD-8).
"""

from __future__ import annotations

import random
import threading

import pytest

from coordkit import Coordinator, LooperThread
from coordkit.errors import OutOfRangeError

from ._support import JOIN_TIMEOUT_SECS
from .conftest import SCALE, scaled

pytestmark = pytest.mark.timeout(max(120, int(120 * SCALE)))

ROLES = ("raise", "clean", "stop", "wait", "poll", "looper")


class WorkerError(Exception):
    """What a raising worker raises; carries the worker's number."""


def run_round(coord: Coordinator, seed: int, threads: int) -> None:
    rng = random.Random(seed)
    context = f"seed={seed}"
    roles = [rng.choice(ROLES) for _ in range(threads)]
    if not any(r in ("raise", "clean", "stop") for r in roles):
        roles[rng.randrange(threads)] = "stop"  # someone must stop the others
    lock = threading.Lock()  # guards the two lists below
    raised: list[WorkerError] = []
    clean_requests: list[int] = []
    start = threading.Barrier(sum(r != "looper" for r in roles) + 1)
    ticks = [0] * threads

    def worker(i: int, role: str, work: int) -> None:
        start.wait(JOIN_TIMEOUT_SECS)
        with coord.stop_on_exception():
            for _ in range(work):
                if coord.should_stop():
                    return
                ticks[i] += 1
            if role == "raise":
                error = WorkerError(i)
                with lock:
                    raised.append(error)
                raise error
            if role == "clean":
                with lock:
                    clean_requests.append(i)
                raise OutOfRangeError("input exhausted")
            if role == "stop":
                with lock:
                    clean_requests.append(i)
                coord.request_stop()
            elif role == "wait":
                assert coord.wait_for_stop(JOIN_TIMEOUT_SECS), f"{context}: worker {i} never saw the stop"
            elif role == "poll":
                poll_rng = random.Random(f"{seed}:poll:{i}")
                while not coord.wait_for_stop(poll_rng.choice((0, 0.0002, 0.001))):
                    ticks[i] += 1

    def looper_tick(i: int) -> None:
        ticks[i] += 1

    plain: list[threading.Thread] = []
    loopers: list[LooperThread] = []
    for i, role in enumerate(roles):
        if role == "looper":
            loopers.append(
                LooperThread(
                    coord, rng.choice((0.0005, 0.002)), target=looper_tick, args=(i,)
                )  # registers itself (LOOP-1)
            )
        else:
            t = threading.Thread(
                target=worker, args=(i, role, rng.randint(0, 3000)), name=f"worker-{i}-{role}"
            )
            plain.append(t)
    # Half the plain threads are registered, the other half passed to join().
    registered, passed = plain[::2], plain[1::2]
    for t in registered:
        coord.register_thread(t)
    for t in plain + loopers:
        t.start()
    start.wait(JOIN_TIMEOUT_SECS)

    joined_error: BaseException | None = None
    try:
        coord.join(passed, stop_grace_period_secs=JOIN_TIMEOUT_SECS)
    except WorkerError as e:
        joined_error = e

    alive = [t.name for t in plain + loopers if t.is_alive()]
    assert not alive, f"{context}: threads alive after join: {alive}"
    stats = coord.statistics()
    assert stats.stop_requested and stats.joined and coord.joined, f"{context}: {stats}"
    assert stats.registered_threads == (), f"{context}: join forgets the registered threads"
    if joined_error is None:
        assert stats.exc_info is None, f"{context}: join returned, but {stats.exc_info} was recorded"
        assert clean_requests, f"{context}: only errors stopped the threads, yet join raised none"
        coord.raise_requested_exception()  # raises nothing
    else:
        assert any(joined_error is e for e in raised), f"{context}: join raised a foreign {joined_error!r}"
        assert stats.exc_info is not None and stats.exc_info[1] is joined_error, context
        with pytest.raises(WorkerError) as again:
            coord.raise_requested_exception()
        assert again.value is joined_error, context
    # After join, an error is raised at once instead of being recorded (COORD-7).
    late = WorkerError("late")
    with pytest.raises(WorkerError) as info:
        coord.request_stop(late)
    assert info.value is late
    coord.clear_stop()
    stats = coord.statistics()
    assert not stats.stop_requested and not stats.joined and stats.exc_info is None, f"{context}: {stats}"
    assert not coord.should_stop()


def test_dozens_of_threads_raise_and_stop(seed: int) -> None:
    """40 threads with random roles, several rounds on one coordinator (cleared between)."""
    coord = Coordinator()
    for r in range(scaled(50)):
        run_round(coord, seed + r, threads=40)


def test_simultaneous_errors_record_exactly_one(seed: int) -> None:
    """40 threads raise at once (released by a barrier): exactly one error is recorded,
    and join re-raises that one (COORD-4)."""
    coord = Coordinator()
    for r in range(scaled(50)):
        n = 40
        go = threading.Barrier(n)
        errors = [WorkerError(i) for i in range(n)]

        def worker(go: threading.Barrier, error: WorkerError) -> None:
            go.wait(JOIN_TIMEOUT_SECS)
            with coord.stop_on_exception():
                raise error

        threads = [
            threading.Thread(target=worker, args=(go, errors[i]), name=f"raiser-{i}") for i in range(n)
        ]
        for t in threads:
            coord.register_thread(t)
            t.start()
        with pytest.raises(WorkerError) as info:
            coord.join(stop_grace_period_secs=JOIN_TIMEOUT_SECS)
        assert any(info.value is e for e in errors), f"seed={seed} round {r}: {info.value!r}"
        assert coord.statistics().exc_info[1] is info.value  # type: ignore[index]
        assert not any(t.is_alive() for t in threads)
        coord.clear_stop()
