"""Traces are bounded: decoding never trusts a number it cannot afford, a Schedule is
checked when made, and a strict replay fits only a run that uses every choice
(TRACE-2, TRACE-4; issue 18's decoding items)."""

from __future__ import annotations

import base64
import binascii
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import coordkit
from coordkit.engine.trace import CHOICES_PER_STEP, MAX_STEPS, TRACE_THREADS, Schedule
from coordkit.errors import TraceDivergedError, TraceFormatError


def _trace(values: list[int]) -> str:
    """A well-formed ck2 string around a raw varint payload."""
    out = bytearray()
    for n in values:
        while True:
            b = n & 0x7F
            n >>= 7
            out.append(b | (0x80 if n else 0))
            if not n:
                break
    payload = bytes(out)
    b32 = lambda data: base64.b32encode(data).decode().rstrip("=").lower()  # noqa: E731
    check = b32((binascii.crc32(payload) & 0xFFFFFFFF).to_bytes(4, "big"))
    return f"ck2_{b32(payload)}_{check}"


def test_a_short_trace_cannot_ask_for_a_huge_list():
    # flags 0, default budget, then (2 candidates, choice 1) repeated 2**28 times
    text = _trace([0, 0, 2, 1, 2**28])
    assert len(text) < 40
    with pytest.raises(TraceFormatError, match=r"more than \d+ choice points for a budget of 20000"):
        Schedule.decode(text)


def test_the_bound_follows_the_recorded_budget():
    limit = CHOICES_PER_STEP * TRACE_THREADS * 10 + 1
    assert len(Schedule.decode(_trace([0, 10, 2, 1, limit])).choices) == limit
    with pytest.raises(TraceFormatError, match="more than"):
        Schedule.decode(_trace([0, 10, 2, 1, limit + 1]))
    with pytest.raises(TraceFormatError, match="a step budget of"):
        Schedule.decode(_trace([0, 10**12]))


@pytest.mark.parametrize("bad", [-1, 0, 10**12, 1.5, True, "9"])
def test_a_schedule_refuses_a_bad_budget_when_made(bad):
    with pytest.raises((ValueError, TypeError), match=f"max_steps must be None or an int in 1..{10**9}"):
        Schedule(((2, 1),), max_steps=bad)


def test_a_schedule_refuses_bad_flags_and_choices():
    with pytest.raises(TypeError, match="fail_on_thread_exception must be a bool, got 'no'"):
        Schedule((), fail_on_thread_exception="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"choice 0 must be two ints"):
        Schedule((("2", 1),))  # type: ignore[arg-type]
    with pytest.raises(TraceFormatError, match="choice points, but a run with a budget of 1 steps"):
        Schedule(((2, 1),) * (CHOICES_PER_STEP * TRACE_THREADS + 2), max_steps=1)


def test_a_printed_schedule_round_trips():
    s = Schedule(((2, 1), (3, 2), (2, 0)), max_steps=500, granularity="line")
    assert Schedule.decode(str(s)) == s


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    st.text(max_size=80),
    st.lists(st.integers(0, 2**40), max_size=12).map(_trace),
    st.from_regex(r"ck2_[a-z2-7]{0,40}_[a-z2-7]{7}", fullmatch=True),
))
def test_any_string_decodes_or_is_refused_quickly(text):
    try:
        schedule = Schedule.decode(text)
    except TraceFormatError:
        return
    assert len(schedule.choices) <= schedule.choice_limit() <= CHOICES_PER_STEP * TRACE_THREADS * 10**9 + 1


@pytest.mark.parametrize("bad", [0, -1, 10**30])
def test_schedules_bounds_its_sizes(bad):
    with pytest.raises(ValueError, match=r"max_gap must be an integer in 1\.\.1000000"):
        coordkit.schedules(max_gap=bad)


def _two_threads_fail() -> None:
    def boom() -> None:
        raise ValueError("boom")

    t = threading.Thread(target=boom)
    t.start()
    t.join()


def test_a_strict_replay_with_choices_left_after_the_failure_does_not_fit():
    found = coordkit.explore(_two_threads_fail, max_schedules=5, seed=1).failure
    assert found is not None
    recorded = Schedule.decode(found.trace)
    extra = Schedule((*recorded.choices, (2, 1), (2, 1)), max_steps=recorded.max_steps)
    with pytest.raises(TraceDivergedError, match=r"failed \(exception: ValueError: boom\) after"):
        coordkit.replay(_two_threads_fail, extra)
    with pytest.raises(ValueError, match="boom"):  # leniently, the old schedule still fails
        coordkit.replay(_two_threads_fail, extra, strict=False)


def test_a_run_that_only_re_parks_ends_at_the_choice_budget():
    """Woken waiters that find the lock taken park again: a choice without a step.  The
    run ends as a step limit once its choices reach the budget's bound, so its trace stays
    decodable."""

    def crowd() -> None:
        lock = threading.Lock()
        lock.acquire()
        threads = [threading.Thread(target=lock.acquire) for _ in range(30)]
        for t in threads:
            t.start()
        while True:  # lets the lock go and takes it back before any waiter can
            lock.release()
            lock.acquire()

    class WaitersWhileHeld(coordkit.Scheduler):
        """The main thread takes the lock back at once; while it holds it, every woken
        waiter gets to run (and park again)."""

        def choose(self, point, enabled):
            if point.thread == 0 and point.op == "acquire":
                return 0
            return len(enabled) - 1

    result = coordkit.explore(crowd, strategy=WaitersWhileHeld(), max_schedules=1, max_steps=200,
                              granularity="sync",  # its choose() knows the sync points
                              shrink=False)  # shrunk, it would be a plain step limit
    assert result.failure is not None and result.failure.kind == "step_limit"
    assert "scheduling choices" in result.failure.message, result.failure.message
    trace = Schedule.decode(result.failure.trace)
    assert len(trace.choices) <= trace.choice_limit()


def test_the_default_budget_is_the_engines():
    from coordkit.engine.run import RunOptions

    assert RunOptions().max_steps == MAX_STEPS
