"""Happens-before race detection: vector clocks over synchronisation, shadow memory over
the accesses the tracer sees.

Every thread carries a vector clock.  Synchronisation orders threads: a thread's
start is ordered after what its starter did before; an operation that changes a
synchronisation object (a release, a ``set``, a ``put``, a notify, a thread's
end) publishes the thread's clock on the object, and every later operation on
that object (an acquire, a ``wait`` that returns, a ``get``, a ``join``) is
ordered after it; a thread woken by another is ordered after what the waker did.
Two accesses to one location, at least one a write, are a *race* when neither
is ordered before the other (FastTrack's check, with full read sets).

The detector only ever adds order the program really had, with one
simplification that can hide a race but never invent one: every operation on a
synchronisation object counts as an acquire of it (a ``locked()`` that returned
True, an ``is_set()`` that returned False).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from coordkit.engine.accesses import ANY, describe, owner_name
from coordkit.engine.frames import place
from coordkit.engine.points import WRITE

__all__ = ["Access", "Race", "RaceDetector", "format_stack"]


@dataclass(frozen=True)
class Access:
    """One side of a race: which thread did what, and where (innermost frame first)."""

    thread: str
    access: str
    stack: tuple[str, ...]

    @property
    def where(self) -> str:
        return self.stack[0] if self.stack else "?"

    def __str__(self) -> str:
        return f"{self.thread} {self.access} at {self.where}"


@dataclass(frozen=True)
class Race:
    """Two unordered accesses to ``location``, at least one a write."""

    location: str
    first: Access
    second: Access
    sites: tuple[int, int]  # the two instructions, as site keys (see accesses.site_key)

    @property
    def identity(self) -> tuple[str, frozenset[tuple[str, str]]]:
        """Races at the same two places on the same location are one race."""
        return self.location, frozenset({(self.first.where, self.first.access),
                                         (self.second.where, self.second.access)})

    def __str__(self) -> str:
        return f"race on {self.location}: {self.first} / {self.second}"


class _Record:
    """An access in shadow memory: its thread's epoch, and what to report."""

    __slots__ = ("access", "clock", "describe", "site", "stack", "thread", "tid")

    def __init__(self, tid: int, clock: int, access: str, thread: str, site: int,
                 stack: tuple[tuple[str, int, str], ...], describe: Any) -> None:
        self.tid = tid
        self.clock = clock
        self.access = access
        self.thread = thread
        self.site = site
        self.stack = stack
        self.describe = describe


class _Shadow:
    __slots__ = ("reads", "write")

    def __init__(self) -> None:
        self.write: _Record | None = None
        self.reads: dict[int, _Record] = {}


def format_stack(stack: tuple[tuple[str, int, str], ...]) -> tuple[str, ...]:
    """``file.py:LINE in function`` for each ``(file, line, function)``, innermost first."""
    return tuple(place(*frame) for frame in stack)


def _join(into: list[int], other: list[int]) -> None:
    if len(into) < len(other):
        into.extend([0] * (len(other) - len(into)))
    for i, c in enumerate(other):
        if c > into[i]:
            into[i] = c


class RaceDetector:
    """The clocks and shadow memory of one run; ``races`` lists what it found."""

    def __init__(self) -> None:
        self.clocks: list[list[int]] = []
        self._sync: dict[str, list[int]] = {}
        self._shadow: dict[Any, dict[Any, _Shadow]] = {}
        # Owners by id, so that an id is not reused for another object while its shadow
        # lasts: a weak reference that drops the shadow with the object where one can be
        # made (the program's gc behaviour stays its own), else the object itself.
        self._alive: dict[int, Any] = {}
        self._names: dict[Any, str | None] = {}  # owner -> what a report calls it
        self._owners: dict[int, list[Any]] = {}  # id of a kept object -> its owners
        self.races: list[Race] = []
        self._seen: set[Any] = set()

    # -- synchronisation ----------------------------------------------------

    def spawn(self, parent: int | None, child: int) -> None:
        """Thread ``child`` starts: ordered after what ``parent`` did before starting it."""
        while len(self.clocks) <= child:
            self.clocks.append([])
        clock = list(self.clocks[parent]) if parent is not None else []
        if len(clock) <= child:
            clock.extend([0] * (child + 1 - len(clock)))
        clock[child] = 1
        self.clocks[child] = clock
        if parent is not None:
            self._tick(parent)

    def _tick(self, tid: int) -> None:
        clock = self.clocks[tid]
        clock[tid] += 1

    def synchronise(self, tid: int, obj: str, access: str) -> None:
        """Thread ``tid`` operates on the synchronisation object labelled ``obj``: ordered
        after every earlier change of it; a change (``WRITE``) publishes its clock there."""
        clock = self.clocks[tid]
        published = self._sync.get(obj)
        if published is not None:
            _join(clock, published)
        if access == WRITE:
            if published is None:
                self._sync[obj] = list(clock)
            else:
                _join(published, clock)
            clock[tid] += 1

    def wake(self, waker: int, wakee: int) -> None:
        """``waker`` made ``wakee`` runnable: the wakee is ordered after the waker."""
        _join(self.clocks[wakee], self.clocks[waker])
        self._tick(waker)

    # -- memory ---------------------------------------------------------------

    def access(self, tid: int, owner: Any, field: Any, keep: Any, access: str, thread: str,
               site: Any, stack: tuple[tuple[str, int, str], ...]) -> None:
        """Thread ``tid`` reads or writes ``field`` of ``owner`` (``ANY``: every field) at
        ``site`` (an ``accesses.Site``); ``keep`` is the owner object, held while the run lasts."""
        fields = self._shadow.get(owner)
        if fields is None:
            if keep is not None:
                self._keep(keep, owner)
            fields = self._shadow[owner] = {}
            self._names[owner] = owner_name(keep)
        clock = self.clocks[tid]
        record = _Record(tid, clock[tid], access, thread, site, stack, (self._names[owner], field))
        shadow = fields.get(field)
        if shadow is None:
            shadow = fields[field] = _Shadow()
        if field is ANY:
            for other in fields.values():
                self._check(other, record, clock)
        else:
            self._check(shadow, record, clock)
            whole = fields.get(ANY)
            if whole is not None:
                self._check(whole, record, clock)
        if access == WRITE:
            shadow.write = record
            shadow.reads.clear()
        else:
            shadow.reads[tid] = record

    def _keep(self, obj: Any, owner: Any) -> None:
        """Hold ``obj`` while its shadow (under ``owner``: its id, or its ``__dict__``'s)
        lasts: weakly where it can be, and then its shadow goes with it (RACE-14)."""
        key = id(obj)
        owners = self._owners.get(key)
        if owners is not None:
            owners.append(owner)
            return
        self._owners[key] = [owner]
        try:
            self._alive[key] = weakref.ref(obj, lambda _ref: self._forget(key))
        except TypeError:  # dicts, lists: no weak references
            self._alive[key] = obj

    def _forget(self, key: int) -> None:
        self._alive.pop(key, None)
        for owner in self._owners.pop(key, ()):
            self._shadow.pop(owner, None)
            self._names.pop(owner, None)

    def _check(self, shadow: _Shadow, record: _Record, clock: list[int]) -> None:
        write = shadow.write
        if write is not None and write.tid != record.tid and not self._ordered(write, clock):
            self._report(write, record)
        if record.access == WRITE:
            for read in shadow.reads.values():
                if read.tid != record.tid and not self._ordered(read, clock):
                    self._report(read, record)

    @staticmethod
    def _ordered(earlier: _Record, clock: list[int]) -> bool:
        return earlier.tid < len(clock) and earlier.clock <= clock[earlier.tid]

    def _report(self, first: _Record, second: _Record) -> None:
        owner, field = second.describe
        race = Race(
            describe(second.site, owner, field),
            Access(first.thread, first.access, format_stack(first.stack)),
            Access(second.thread, second.access, format_stack(second.stack)),
            (first.site.site_key, second.site.site_key),
        )
        if race.identity not in self._seen:
            self._seen.add(race.identity)
            self.races.append(race)

    def close(self) -> None:
        """The run is over: let go of the objects it kept alive."""
        self._alive.clear()
        self._shadow.clear()
        self._names.clear()
        self._owners.clear()

