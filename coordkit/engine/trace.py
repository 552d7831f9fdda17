"""Schedules as data: a versioned, printable, copy-pasteable encoding, and a text rendering.

A schedule is the list of answers given at the choice points of a run, each
stored with the number of candidates there was, so that a replay can tell
exactly where a changed program stops matching.  It counts scheduling points,
never bytecodes, so the same string replays on every supported CPython.

The string form is ``ck2_<payload>_<check>``: ``ck2`` names format version 2,
the payload is base32 (lowercase, no padding) of a varint stream (the run's
options: a flags word and the step budget, then run-length coded
``(candidates, choice, repeat)`` triples), and the check is the CRC-32 of the
payload in base32.  Only ``[a-z0-9_]`` appears, so a double-click selects the
whole trace.  Version 1 (``ck1_``) traces are refused with a clear error: they
come from a scheduler that ordered its choices differently, so the same string
would name a different schedule.
"""

from __future__ import annotations

import base64
import binascii
import reprlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from coordkit.errors import TraceFormatError

__all__ = ["MAX_STEPS", "Choices", "Schedule"]

MAX_STEPS = 20_000  # the default step budget of a run
# A run makes at most this many choices per step of its budget (one at each scheduling
# point, one when a thread parks or ends, and re-parks after a wake-up that came to
# nothing); the runtime ends a run that would make more as a step limit, so a trace that
# holds more is corrupt, and decoding one costs bounded memory.
CHOICES_PER_STEP = 4
# A run's step budget grows by max_steps with every thread it starts (SCHED-20); a trace
# accepts the choices of up to this many threads' budgets, and the runtime stops a run
# before it makes more.
TRACE_THREADS = 64
_LARGEST_BUDGET = 10**9  # a step budget above this is not a budget
_PREFIX = "ck2"
_V1 = "ck1"
_LINE = 1  # flags: the run had line granularity
_THREAD_ERRORS_PASS = 2  # flags: a thread's exception did not fail the run
_INVARIANT = 4  # flags: the run failed on the invariant it was given
_AUTO = 8  # flags: the run had auto granularity; its racing sites follow the header
_CANCEL = 16  # flags: event loops offered to cancel tasks at their suspensions (AIO-40)
_ADVERSARIAL = 32  # flags: event loops could run any ready callback next (AIO-44)
MAX_RACING_SITES = 4096  # more sites than this in a trace is not a trace
GRANULARITIES = ("auto", "sync", "line")


def _varint(n: int, out: bytearray) -> None:
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


def _racing_sites(flags: int, values: list[int]) -> tuple[tuple[int, ...], list[int]]:
    """The racing sites after the header of an auto-granularity trace, and what follows."""
    if not flags & _AUTO:
        return (), values
    if not values or values[0] > MAX_RACING_SITES or len(values) < 1 + values[0]:
        raise TraceFormatError("corrupt trace: a bad list of racing sites")
    count = values[0]
    sites = tuple(values[1 : 1 + count])
    if any(s >= 2**32 for s in sites):
        raise TraceFormatError("corrupt trace: a racing site out of range")
    return sites, values[1 + count :]


def _read_varints(data: bytes) -> list[int]:
    values, n, shift = [], 0, 0
    for b in data:
        n |= (b & 0x7F) << shift
        if b & 0x80:
            shift += 7
            if shift > 63:
                raise TraceFormatError("corrupt trace: a number in the payload is too long")
        else:
            values.append(n)
            n, shift = 0, 0
    if shift:
        raise TraceFormatError("corrupt trace: the payload ends in the middle of a number")
    return values


def _b32(data: bytes) -> str:
    return base64.b32encode(data).decode("ascii").rstrip("=").lower()


def _unb32(text: str) -> bytes:
    pad = "=" * (-len(text) % 8)
    try:
        return base64.b32decode(text.upper() + pad)
    except (binascii.Error, ValueError) as exc:
        raise TraceFormatError(f"corrupt trace: payload is not base32 ({exc})") from None


def _check(payload: bytes) -> str:
    return _b32((binascii.crc32(payload) & 0xFFFFFFFF).to_bytes(4, "big"))


@dataclass(frozen=True)
class Choices:
    """A lenient schedule: choice indices (0 keeps the current thread), reduced modulo the
    number of candidates; missing ones are 0.  What ``coordkit.schedules()`` generates.

    Like a ``Schedule`` it records the event loops' modes its runs offer choices in:
    ``cancel``, whether they offer to cancel tasks (AIO-40), and ``adversarial``, whether
    they may run any ready callback next (AIO-44) (AIO-47).
    """

    values: tuple[int, ...] = ()
    cancel: bool = False
    adversarial: bool = False

    def __post_init__(self) -> None:
        values = self.values
        if isinstance(values, (str, bytes)) or not isinstance(values, (tuple, list, range)) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
            raise TypeError(f"Choices(values) must be a sequence of ints >= 0, got {values!r}")
        for name in ("cancel", "adversarial"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        object.__setattr__(self, "values", tuple(values))

    def __repr__(self) -> str:
        modes = "".join(f", {name}=True" for name in ("cancel", "adversarial") if getattr(self, name))
        return f"Choices({list(self.values)!r}{modes})"


@dataclass(frozen=True)
class Schedule:
    """The choices of one run: ``(number of candidates, index chosen)`` per choice point.

    It also records the options that shape the run's choice points, so a replay
    needs nothing but the string: ``granularity``, ``fail_on_thread_exception``
    and ``max_steps``; ``racing``, at auto granularity, the sites (``accesses.site_key``)
    that were scheduling points; ``cancel``, whether event loops offered to cancel tasks
    (AIO-40); ``adversarial``, whether they could run any ready callback next (AIO-44);
    and ``invariant``, whether the run failed on an invariant (which a replay must be
    given again).
    """

    choices: tuple[tuple[int, int], ...] = ()
    granularity: str = "sync"
    fail_on_thread_exception: bool = True
    max_steps: int | None = None  # None: the default budget
    invariant: bool = False
    racing: tuple[int, ...] = ()
    cancel: bool = False
    adversarial: bool = False

    def __post_init__(self) -> None:
        if self.max_steps is not None and (
                isinstance(self.max_steps, bool) or not isinstance(self.max_steps, int)
                or not 0 < self.max_steps <= _LARGEST_BUDGET):
            raise ValueError(f"max_steps must be None or an int in 1..{_LARGEST_BUDGET}, "
                             f"got {self.max_steps!r}")
        for name in ("fail_on_thread_exception", "invariant", "cancel", "adversarial"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if not isinstance(self.granularity, str) or self.granularity not in GRANULARITIES:
            raise ValueError(f"granularity must be one of {GRANULARITIES}, got {self.granularity!r}")
        if isinstance(self.choices, (str, bytes)) or not isinstance(self.choices, (tuple, list)):
            raise TypeError(f"choices must be a sequence of (candidates, index) pairs, got "
                            f"{self.choices!r}")
        if len(self.choices) > self.choice_limit():
            raise TraceFormatError(
                f"{len(self.choices)} choice points, but a run with a budget of "
                f"{self.max_steps or MAX_STEPS} steps has at most {self.choice_limit()}"
            )
        for i, choice in enumerate(self.choices):
            if not isinstance(choice, (tuple, list)) or len(choice) != 2:
                raise TypeError(f"choices: choice {i} must be two ints (candidates, index), "
                                f"got {choice!r}")
            n, c = choice
            if (not isinstance(n, int) or not isinstance(c, int)
                    or isinstance(n, bool) or isinstance(c, bool)):
                raise TypeError(f"choices: choice {i} must be two ints (candidates, index), "
                                f"got {choice!r}")
            if n < 2 or not 0 <= c < n:
                raise TraceFormatError(
                    f"choice {i} is {c} of {n} candidates: a choice point has at least "
                    "2 candidates and the choice is an index below that number"
                )
        if self.racing and self.granularity != "auto":
            raise ValueError("racing sites are scheduling points only at granularity='auto'")
        if len(self.racing) > MAX_RACING_SITES or not all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**32
                for s in self.racing):
            raise ValueError(f"racing must be at most {MAX_RACING_SITES} site keys in 0..2**32-1, "
                             f"got {self.racing!r:.80}")

    def choice_limit(self) -> int:
        """The most choice points a run under this schedule's step budget can have."""
        return CHOICES_PER_STEP * TRACE_THREADS * (self.max_steps or MAX_STEPS) + 1

    @property
    def preemptions(self) -> int:
        """An upper bound on context switches: the choices that are not 0."""
        return sum(1 for _, c in self.choices if c)

    def encode(self) -> str:
        """The trace string (``ck2_...``)."""
        out = bytearray()
        flags = (
            (_LINE if self.granularity == "line" else 0)
            | (_THREAD_ERRORS_PASS if self.fail_on_thread_exception is False else 0)
            | (_INVARIANT if self.invariant else 0)
            | (_AUTO if self.granularity == "auto" else 0)
            | (_CANCEL if self.cancel else 0)
            | (_ADVERSARIAL if self.adversarial else 0)
        )
        _varint(flags, out)
        _varint(self.max_steps or 0, out)
        if self.granularity == "auto":
            _varint(len(self.racing), out)
            for site in sorted(self.racing):
                _varint(site, out)
        i, choices = 0, self.choices
        while i < len(choices):
            j = i
            while j + 1 < len(choices) and choices[j + 1] == choices[i]:
                j += 1
            n, c = choices[i]
            _varint(n, out)
            _varint(c, out)
            _varint(j - i + 1, out)
            i = j + 1
        payload = bytes(out)
        return f"{_PREFIX}_{_b32(payload)}_{_check(payload)}"

    @classmethod
    def decode(cls, text: str) -> Schedule:
        """Parse a trace string, rejecting a corrupt or unknown one with ``TraceFormatError``."""
        if not isinstance(text, str):
            raise TraceFormatError(f"a trace is a string, got {type(text).__name__}: {text!r}")
        text = text.strip()
        parts = text.split("_")
        if len(parts) != 3:
            raise TraceFormatError(
                f"not a coordkit trace: {text[:40]!r} (expected '{_PREFIX}_<payload>_<check>')"
            )
        version, body, check = parts
        if version == _V1:
            raise TraceFormatError(
                f"{_V1!r} traces come from an earlier coordkit, whose choice points were "
                "ordered differently (before yields, fairness and store points): this one "
                f"would replay another schedule. Explore again to get a {_PREFIX!r} trace"
            )
        if version != _PREFIX:
            raise TraceFormatError(
                f"unknown trace format version {version!r}; this coordkit reads {_PREFIX!r}"
            )
        payload = _unb32(body)
        if _check(payload) != check:
            raise TraceFormatError(
                "corrupt trace: the check does not match the payload (was it truncated or edited?)"
            )
        values = _read_varints(payload)
        if len(values) < 2:
            raise TraceFormatError("corrupt trace: the payload has no options header")
        (flags, max_steps), values = values[:2], values[2:]
        if flags & ~(_LINE | _THREAD_ERRORS_PASS | _INVARIANT | _AUTO | _CANCEL | _ADVERSARIAL) or (
                flags & _LINE and flags & _AUTO):
            raise TraceFormatError(f"corrupt trace: unknown option flags {flags:#x}")
        racing, values = _racing_sites(flags, values)
        if len(values) % 3:
            raise TraceFormatError("corrupt trace: the payload is not a whole number of entries")
        if max_steps > _LARGEST_BUDGET:
            raise TraceFormatError(f"corrupt trace: a step budget of {max_steps}")
        limit = CHOICES_PER_STEP * TRACE_THREADS * (max_steps or MAX_STEPS) + 1
        choices: list[tuple[int, int]] = []
        for k in range(0, len(values), 3):
            n, c, repeat = values[k : k + 3]
            if repeat < 1:
                raise TraceFormatError("corrupt trace: an entry repeats zero times")
            if len(choices) + repeat > limit:  # checked before the list grows
                raise TraceFormatError(
                    f"corrupt trace: more than {limit} choice points for a budget of "
                    f"{max_steps or MAX_STEPS} steps"
                )
            choices.extend([(n, c)] * repeat)
        return cls(
            tuple(choices),
            granularity="line" if flags & _LINE else "auto" if flags & _AUTO else "sync",
            fail_on_thread_exception=not flags & _THREAD_ERRORS_PASS,
            max_steps=max_steps or None,
            invariant=bool(flags & _INVARIANT),
            racing=racing,
            cancel=bool(flags & _CANCEL),
            adversarial=bool(flags & _ADVERSARIAL),
        )

    def describe(self) -> str:
        """One line: the choice points and the recorded options."""
        options = f"granularity={self.granularity!r}"
        if not self.fail_on_thread_exception:
            options += ", fail_on_thread_exception=False"
        if self.max_steps:
            options += f", max_steps={self.max_steps}"
        if self.racing:
            options += f", {len(self.racing)} racing site(s) scheduled"
        if self.cancel:
            options += ", cancel='tasks'"
        if self.adversarial:
            options += ", adversarial=True"
        if self.invariant:
            options += "; failed on its invariant"
        return (f"{len(self.choices)} choice points, {self.preemptions} preemption(s) at most; "
                f"{options}")

    @classmethod
    def from_choices(cls, choices: Iterable[tuple[int, int]], **options: Any) -> Schedule:
        """A schedule of ``(candidates, index)`` pairs; a TypeError naming ``choices``
        unless it is an iterable of pairs of ints."""
        try:
            pairs = tuple((int(n), int(c)) for n, c in choices)
        except (TypeError, ValueError):
            raise TypeError("choices must be an iterable of (candidates, index) pairs of ints, "
                            f"got {reprlib.repr(choices)}") from None
        return cls(pairs, **options)

    def __str__(self) -> str:
        return self.encode()
