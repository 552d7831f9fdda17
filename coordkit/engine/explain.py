"""The words of a failure report, root cause first.

A report opens with one paragraph: what went wrong and where (file:line), an
exception that ended a thread earlier (a thread that died holding a lock is why
the others wait), the preemptions the failing schedule needs (which thread was
switched away from, where, for which), and the racing accesses the race detector
saw.  Then the program's threads at the failure (what each holds and waits for),
then the exceptions that ended threads earlier.  ``Explanation`` is that content as
data: the text report, the terminal's tables and ``--json`` all read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coordkit.engine.cause import Preemption, ThreadState
from coordkit.engine.failures import Failure
from coordkit.engine.races import Race
from coordkit.errors import FailureKind

__all__ = ["Explanation", "describe", "explain"]

# Races named in the opening paragraph; the rest are listed with the result.
_RACES_NAMED = 2


@dataclass(frozen=True)
class Explanation:
    """What a report says about one failing run."""

    what: str  # what went wrong, and where
    earlier: tuple[str, ...]  # exceptions that ended threads before it, one sentence each
    schedule: str  # the preemptions it needs
    races: str  # the racing accesses seen in it ("" when none)
    threads: tuple[ThreadState, ...]  # the program's threads at the failure
    died_earlier: tuple[ThreadState, ...]  # those an exception other than the failure ended
    tasks: tuple[str, ...] = ()  # the asyncio tasks not done, with their await chains (AIO-45)

    @property
    def root_cause(self) -> str:
        """The opening paragraph's sentences, one per line."""
        return "\n".join(s for s in (self.what, *self.earlier, self.schedule, self.races) if s)

    def threads_text(self) -> str:
        """The threads at the failure, one line each (a blocked thread's stack under it)."""
        if not self.threads:
            return ""
        width = max(len(t.who) for t in self.threads)
        lines = ["Threads at the failure:"]
        for t in self.threads:
            lines.append(f"  {t.who.ljust(width)}  {describe(t)}")
            lines.extend("      " + ln for ln in t.stack.rstrip().splitlines())
        return "\n".join(lines)

    def tasks_text(self) -> str:
        """The asyncio tasks at the failure, each with its await chain (AIO-45)."""
        if not self.tasks:
            return ""
        return "\n".join(["Tasks at the failure:"] + ["  " + t.replace("\n", "\n  ")
                                                       for t in self.tasks])

    def earlier_text(self) -> str:
        if not self.died_earlier:
            return ""
        return "\n".join(["Exceptions that ended threads earlier:"]
                         + [f"  {t.who}: {t.exception} at {t.raised_at}" + _holding(t)
                            for t in self.died_earlier])


def describe(t: ThreadState) -> str:
    """A thread's state in a few words: ``blocked on Lock#1 held by T1 at f.py:3 in g``."""
    if t.state == "died":
        text = f"ended by {t.exception.partition(':')[0]} at {t.raised_at}"
    elif t.state == "blocked":
        text = f"blocked on {t.waits_on} at {t.where}"
    elif t.state == "runnable":
        text = f"runnable at {t.where}"
    else:
        text = t.state
    return text + (f"; holds {', '.join(t.holds)}" if t.holds else "")


def _holding(t: ThreadState) -> str:
    return f", still holding {', '.join(t.holds)}" if t.holds else ""


def explain(failure: Failure, preempted: Sequence[Preemption], races: Sequence[Race], *,
            preemptions: int | None = None, minimal: bool = False) -> Explanation:
    """The explanation of ``failure``, in a run with ``preemptions`` preemptions (default:
    those ``preempted`` describes; a run that was not recorded describes none);
    ``minimal`` when a bounded search confirmed that no schedule with fewer fails this way."""
    threads = failure.threads
    failed = _failing_thread(failure)
    died = tuple(t for t in threads if t.state == "died" and t is not failed)
    what = _what(failure, failed)
    return Explanation(
        what=f"After the program returned: {what}" if failure.after_return else what,
        earlier=tuple(_died_earlier(t, threads) for t in died),
        schedule=_schedule(preempted, len(preempted) if preemptions is None else preemptions, minimal),
        races=_races(races),
        threads=threads,
        died_earlier=died,
        tasks=failure.tasks,
    )


def _failing_thread(failure: Failure) -> ThreadState | None:
    """The thread whose exception is the failure, if that is what failed."""
    if failure.kind != FailureKind.EXCEPTION:
        return None
    for t in failure.threads:
        if t.state == "died" and t.name == failure.thread and t.exception == failure.message:
            return t
    return None


def _what(failure: Failure, failed: ThreadState | None) -> str:
    kind = failure.kind
    if kind == FailureKind.EXCEPTION:
        if failed is None:
            thread = f" in thread {failure.thread!r}" if failure.thread else ""
            return f"{failure.message}, raised{thread}."
        name, _, message = failed.exception.partition(": ")
        text = f"{failed.who} raised {name} at {failed.raised_at}" + (f": {message}" if message else "")
        return text.rstrip(".") + "." + (f" It held {', '.join(failed.holds)}." if failed.holds else "")
    if kind == FailureKind.DEADLOCK and failure.threads:
        blocked = [f"{t.who} on {t.waits_on} at {t.where}" for t in failure.threads
                   if t.state == "blocked"]
        return "Every live thread is blocked: " + "; ".join(blocked) + "."
    text = failure.message.rstrip(".") + "."
    if kind == FailureKind.INVARIANT:
        at = [t for t in failure.threads if t.name == failure.thread and t.where]
        if at:
            text += f" {at[0].who} was at {at[0].where}."
    return text


def _died_earlier(t: ThreadState, threads: Sequence[ThreadState]) -> str:
    text = f"Earlier, {t.who} died with {t.exception} at {t.raised_at}" + _holding(t)
    waiting = [w.label for w in threads if w.state == "blocked"
               and any(w.waits_on.startswith(f"{lock} held by ") for lock in t.holds)]
    if waiting:
        text += f" ({', '.join(waiting)} wait{'s' if len(waiting) == 1 else ''} for it)"
    return text.rstrip(".") + "."


def _schedule(preempted: Sequence[Preemption], n: int, minimal: bool) -> str:
    if n == 0:
        return ("It needs no preemption: it fails in the default schedule, where each thread "
                "runs until it blocks or ends.")
    if len(preempted) != n:  # a run that was not recorded: where they were is not known
        return f"The schedule has {n} preemption{'s' if n > 1 else ''}."
    switches = "; ".join(str(p) for p in preempted)
    if minimal:
        return (f"It needs {n} preemption{'s' if n > 1 else ''} (no schedule with fewer fails "
                f"this way): {switches}.")
    return f"The schedule has {n} preemption{'s' if n > 1 else ''}: {switches}."


def _races(races: Sequence[Race]) -> str:
    if not races:
        return ""
    named = "; ".join(str(r) for r in races[:_RACES_NAMED])
    more = len(races) - _RACES_NAMED
    return (f"Racing accesses in this run (no synchronisation orders them): {named}"
            + (f"; and {more} more." if more > 0 else "."))
