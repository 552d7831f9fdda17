"""Every real-bug port, in one list (programs, then locks, then threads)."""

from __future__ import annotations

from tests.aio.realbugs.locks import LOCK_BUGS
from tests.aio.realbugs.programs import REAL_BUGS, RealBug
from tests.aio.realbugs.threads import THREAD_BUGS

ALL_BUGS: list[RealBug] = [*REAL_BUGS, *LOCK_BUGS, *THREAD_BUGS]
