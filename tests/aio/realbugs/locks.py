"""Ports of real, fixed bugs in asyncio's synchronization primitives (AIO-5).

Each buggy class is the upstream code of the version named, cut to the methods the
program calls; its twin is the fix's.  Every trigger is a timer: a ``call_later`` that
releases, notifies or cancels, which real time can make due in the same loop iteration
as an earlier one (AIO-5 (a)): that is how a cancellation lands between "waiter woken"
and "waiter resumed", and how a newcomer gets ahead of a woken waiter.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from tests.aio.realbugs.programs import RealBug

# -- D: Lock.acquire cancelled after release woke it: the next waiter hangs -----------
# bpo-27585, fixed by python/cpython#1031 ("bpo-27585: Cancelled lock waiter wakes up
# the next one"; first proposed as python/asyncio#467; the buggy class already has the
# issue's first fix, python/asyncio#393, the barging check on cancelled waiters):
# release() woke the first waiter; cancelled before its task resumed, that waiter left
# without taking the lock or waking the next one, which then waited forever.


class _Lock35:
    """asyncio.Lock of 3.5/3.6 before the fix (no wake-up on cancellation)."""

    def __init__(self) -> None:
        self._waiters: deque[asyncio.Future[Any]] = deque()
        self._locked = False

    async def acquire(self) -> bool:
        if not self._locked and all(w.cancelled() for w in self._waiters):
            self._locked = True
            return True
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
            self._locked = True
            return True
        finally:
            self._waiters.remove(fut)

    def release(self) -> None:
        self._locked = False
        self._wake_up_first()

    def _wake_up_first(self) -> None:
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(True)
                break


class _Lock36Fixed(_Lock35):
    """After bpo-27585 (python/cpython#1031): a cancelled waiter wakes the next one."""

    async def acquire(self) -> bool:
        if not self._locked and all(w.cancelled() for w in self._waiters):
            self._locked = True
            return True
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
            self._locked = True
            return True
        except asyncio.CancelledError:
            if not self._locked:
                self._wake_up_first()
            raise
        finally:
            self._waiters.remove(fut)


def _woken_then_cancelled(make: Callable[[], Any]) -> Callable[[], Any]:
    """Two waiters; the holder releases at t=1; the first waiter is cancelled at t=1.5
    (in stock order it holds the lock by then and the cancel does nothing).  The second
    waiter must get the lock: a hang is the run's deadlock."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        lock = make()
        await lock.acquire()
        got: list[str] = []

        async def waiter(name: str) -> None:
            await lock.acquire()
            got.append(name)
            lock.release()

        first = asyncio.create_task(waiter("first"))
        second = asyncio.create_task(waiter("second"))
        await asyncio.sleep(0)
        loop.call_later(1, lock.release)
        loop.call_later(1.5, first.cancel)
        await asyncio.gather(first, second, return_exceptions=True)
        assert "second" in got, "the second waiter never got the lock"

    return main


# -- E: Lock: a cancelled waiter's hand-off lets two tasks hold the lock --------------
# bpo-32734, fixed by python/cpython#5466 ("bpo-32734: Fix asyncio.Lock multiple acquire
# safety issue"): a waiter cancelled while release() woke the next one also woke
# the one after (its handler saw the lock free), and both took the lock.  The fix wakes
# only the first waiter, and only if it was not woken already.


class _Lock36(_Lock36Fixed):
    """asyncio.Lock of 3.6 after bpo-27585, before bpo-32734."""


class _Lock37(_Lock35):
    """After bpo-32734 (python/cpython#5466)."""

    async def acquire(self) -> bool:
        if not self._locked and all(w.cancelled() for w in self._waiters):
            self._locked = True
            return True
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            try:
                await fut
            finally:
                self._waiters.remove(fut)
        except asyncio.CancelledError:
            if not self._locked:
                self._wake_up_first()
            raise
        self._locked = True
        return True

    def _wake_up_first(self) -> None:
        if self._waiters and not self._waiters[0].done():
            self._waiters[0].set_result(True)


def _cancel_then_release(make: Callable[[], Any]) -> Callable[[], Any]:
    """Three waiters; the first is cancelled at t=1, the lock released at t=1.5 (stock
    order: the cancelled waiter has left by then).  At most one task holds the lock."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        lock = make()
        await lock.acquire()
        holding: list[str] = []

        async def waiter(name: str) -> None:
            await lock.acquire()
            holding.append(name)
            assert len(holding) == 1, f"{holding} hold the lock together"
            await asyncio.sleep(0.1)
            holding.remove(name)
            lock.release()

        tasks = [asyncio.create_task(waiter(n)) for n in ("first", "second", "third")]
        await asyncio.sleep(0)
        loop.call_later(1, tasks[0].cancel)
        loop.call_later(1.5, lock.release)
        done = await asyncio.gather(*tasks, return_exceptions=True)
        for outcome in done[1:]:
            if isinstance(outcome, AssertionError):
                raise outcome

    return main


# -- F: Semaphore: a woken waiter cancelled, the other waiter hangs -------------------
# python/asyncio#270, "Does asyncio.Semaphore have the same bug as asyncio.Queue?"
# (Guido's scenario: two tasks blocked in acquire(), one release(), the woken one
# cancelled before it runs: the other hangs), fixed by python/asyncio#271.


class _Semaphore34:
    """asyncio.Semaphore of 3.4/3.5.0."""

    def __init__(self, value: int = 1) -> None:
        self._value = value
        self._waiters: deque[asyncio.Future[Any]] = deque()

    async def acquire(self) -> bool:
        if not self._waiters and self._value > 0:
            self._value -= 1
            return True
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
            self._value -= 1
            return True
        finally:
            self._waiters.remove(fut)

    def release(self) -> None:
        self._value += 1
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(True)
                break


class _Semaphore35:
    """After python/asyncio#271 (3.5.1 to 3.10): Queue's hand-off."""

    def __init__(self, value: int = 1) -> None:
        self._value = value
        self._waiters: deque[asyncio.Future[Any]] = deque()

    def _wake_up_next(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def acquire(self) -> bool:
        while self._value <= 0:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except BaseException:
                fut.cancel()
                if self._value > 0 and not fut.cancelled():
                    self._wake_up_next()
                raise
        self._value -= 1
        return True

    def release(self) -> None:
        self._value += 1
        self._wake_up_next()


# -- G: Semaphore stuck after a woken waiter is cancelled (3.11.0) --------------------
# gh-90155, "asyncio.Semaphore waiters deque doesn't work" (python/cpython#90155): the
# first fix for its fairness (python/cpython#31910, with backports) added
# ``_wakeup_scheduled``; a waiter
# woken and then cancelled, with no other waiter, left it True, and every later
# acquire() waited forever.  Fixed by python/cpython#93222 ("Fix broken
# asyncio.Semaphore and strengthen FIFO guarantee"); the twin is 3.12's Semaphore.


class _Semaphore3110:
    """asyncio.Semaphore after python/cpython#31910, before python/cpython#93222."""

    def __init__(self, value: int = 1) -> None:
        self._value = value
        self._waiters: deque[asyncio.Future[Any]] = deque()
        self._wakeup_scheduled = False

    def _wake_up_next(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self._wakeup_scheduled = True
                return

    async def acquire(self) -> bool:
        while self._wakeup_scheduled or self._value <= 0:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
                self._wakeup_scheduled = False
            except asyncio.CancelledError:
                self._wake_up_next()
                raise
        self._value -= 1
        return True

    def release(self) -> None:
        self._value += 1
        self._wake_up_next()


class _Semaphore312:
    """asyncio.Semaphore of 3.12 (python/cpython#93222 and its follow-ups)."""

    def __init__(self, value: int = 1) -> None:
        self._value = value
        self._waiters: deque[asyncio.Future[Any]] = deque()

    def locked(self) -> bool:
        return self._value == 0 or any(not w.cancelled() for w in self._waiters)

    async def acquire(self) -> bool:
        if not self.locked():
            self._value -= 1
            return True
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            try:
                await fut
            finally:
                self._waiters.remove(fut)
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self._value += 1  # woken, then cancelled: pass the unit on
            raise
        finally:
            while self._value > 0 and self._wake_up_next():
                pass
        return True

    def release(self) -> None:
        self._value += 1
        self._wake_up_next()

    def _wake_up_next(self) -> bool:
        for fut in self._waiters:
            if not fut.done():
                self._value -= 1
                fut.set_result(True)
                return True
        return False


def _semaphore_woken_then_cancelled(make: Callable[[], Any]) -> Callable[[], Any]:
    """A waiter woken at t=1, cancelled at t=1.5 (stock order: it is done by then);
    later acquires must still succeed."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        sem = make()
        await sem.acquire()
        got: list[str] = []

        async def waiter(name: str) -> None:
            await sem.acquire()
            got.append(name)
            sem.release()

        names = ("first", "second")
        tasks = [asyncio.create_task(waiter(n)) for n in names]
        await asyncio.sleep(0)
        loop.call_later(1, sem.release)
        loop.call_later(1.5, tasks[0].cancel)
        await asyncio.gather(*tasks, return_exceptions=True)
        assert "second" in got, "the second waiter never got the semaphore"
        await sem.acquire()  # a newcomer after the storm

    return main


def _semaphore_single_waiter(make: Callable[[], Any]) -> Callable[[], Any]:
    """One waiter, woken at t=1 and cancelled at t=1.5; a later acquire must not hang."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        sem = make()
        await sem.acquire()

        async def waiter() -> None:
            await sem.acquire()
            sem.release()

        task = asyncio.create_task(waiter())
        await asyncio.sleep(0)
        loop.call_later(1, sem.release)
        loop.call_later(1.5, task.cancel)
        await asyncio.gather(task, return_exceptions=True)
        await sem.acquire()  # hangs on a semaphore left "wake-up scheduled"

    return main


# -- H: Semaphore barging: a newcomer takes the unit a woken waiter was given ---------
# gh-90155 / bpo-45997 (python/cpython#90155), the report itself: a task calling
# acquire() between a release() and the woken waiter's resumption finds the value > 0
# and takes it; the woken waiter goes back to the end of the queue (starved).  Fixed by
# python/cpython#93222 ("strengthen FIFO guarantee"); the buggy class is 3.10's.


def _semaphore_barging(make: Callable[[], Any]) -> Callable[[], Any]:
    """A waiter queued at t=0; a newcomer arrives at t=1; the holder releases at t=1.5.
    First come, first served: the waiter gets the semaphore first."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        sem = make()
        await sem.acquire()
        order: list[str] = []

        async def user(name: str, delay: float) -> None:
            if delay:
                await asyncio.sleep(delay)
            await sem.acquire()
            order.append(name)
            await asyncio.sleep(0.1)
            sem.release()

        waiter = asyncio.create_task(user("waiter", 0))
        await asyncio.sleep(0)
        newcomer = asyncio.create_task(user("newcomer", 1))
        loop.call_later(1.5, sem.release)
        await asyncio.gather(waiter, newcomer)
        assert order == ["waiter", "newcomer"], f"{order}: the newcomer barged in"

    return main


# -- I: Condition.wait cancelled after notify: the notification is lost ---------------
# gh-112202, "Race between asyncio Condition.notify() and Task.cancel() may result in
# lost wakeups" (python/cpython#112202), fixed in 3.13 by python/cpython#112201: a
# waiter notified and cancelled before it resumed swallowed the notify(1).


class _Condition312:
    """asyncio.Condition.wait of 3.12 (the lock is asyncio's own Lock)."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._waiters: deque[asyncio.Future[Any]] = deque()

    async def __aenter__(self) -> None:
        await self._lock.acquire()

    async def __aexit__(self, *exc: Any) -> None:
        self._lock.release()

    async def wait(self) -> bool:
        self._lock.release()
        try:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
                return True
            finally:
                self._waiters.remove(fut)
        finally:
            await self._reacquire()

    async def _reacquire(self) -> None:
        cancelled = False
        while True:
            try:
                await self._lock.acquire()
                break
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError

    def notify(self, n: int = 1) -> None:
        idx = 0
        for fut in self._waiters:
            if idx >= n:
                break
            if not fut.done():
                idx += 1
                fut.set_result(False)


class _Condition313(_Condition312):
    """After python/cpython#112201: a waiter woken and then cancelled passes the
    notification on to the next waiter."""

    async def wait(self) -> bool:
        self._lock.release()
        try:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
                return True
            finally:
                self._waiters.remove(fut)
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.notify(1)  # the notification we consumed goes to the next waiter
            raise
        finally:
            await self._reacquire()


def _condition_program(make: Callable[[], Any]) -> Callable[[], Any]:
    """Two consumers wait for one item; it is put and notify(1) called at t=1; the
    first consumer is cancelled at t=1.5 (stock order: it has taken the item)."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        cond = make()
        items: list[str] = []
        taken = asyncio.Event()

        async def consumer() -> None:
            async with cond:
                while not items:
                    await cond.wait()
                items.pop()
                taken.set()

        async def produce() -> None:
            async with cond:
                items.append("item")
                cond.notify(1)

        consumers = [asyncio.create_task(consumer()) for _ in range(2)]
        await asyncio.sleep(0)
        loop.call_later(1, lambda: asyncio.ensure_future(produce()))
        loop.call_later(1.5, consumers[0].cancel)
        await taken.wait()  # a lost notification: nobody takes the item, a deadlock
        for task in consumers:
            task.cancel()
        await asyncio.gather(*consumers, return_exceptions=True)

    return main


# -- J: asyncio.timeout in clean-up: the timeout escapes as a cancellation ------------
# gh-102780, fixed by python/cpython#102815 ("gh-102780: Fix uncancel() call in asyncio
# timeouts", backported to 3.11): Timeout.__aexit__ turned
# its own cancellation into TimeoutError only if uncancel() reached 0, so a timeout in a
# task's clean-up after an outer cancel() let the CancelledError through, past the
# handler for TimeoutError.  Needs Task.uncancel (3.11+).


class _Timeout3110:
    """asyncio.Timeout before python/cpython#102815 (reschedule, state checks cut)."""

    def __init__(self, when: float) -> None:
        self._when = when
        self._expired = False

    async def __aenter__(self) -> _Timeout3110:
        self._task = asyncio.current_task()
        self._cancelling = self._task.cancelling()
        loop = asyncio.get_running_loop()
        self._handle = loop.call_at(self._when, self._on_timeout)
        return self

    def _on_timeout(self) -> None:
        self._task.cancel()
        self._expired = True

    def _own_cancellation(self) -> bool:
        return self._task.uncancel() == 0

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._handle.cancel()
        if self._expired and self._own_cancellation() and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc


class _Timeout3113(_Timeout3110):
    """After python/cpython#102815: compare with the count at entry."""

    def _own_cancellation(self) -> bool:
        return self._task.uncancel() <= self._cancelling


def _timeout_program(make: Callable[[float], Any]) -> Callable[[], Any]:
    """A worker cancelled at t=1 cleans up for at most 1 s (its clean-up takes 0.5 s):
    whether or not the clean-up timed out, the worker marks itself closed."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        closed: list[bool] = []

        async def worker() -> None:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                try:
                    async with make(loop.time() + 1):
                        await asyncio.sleep(0.5)
                except TimeoutError:
                    pass
                closed.append(True)
                raise

        task = asyncio.create_task(worker())
        await asyncio.sleep(1)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert closed, "the clean-up's timeout escaped as a cancellation"

    return main


# -- M: TaskGroup leaves its cancellation of the parent counted ------------------------
# gh-116720, "Nested TaskGroup can silently swallow cancellation request from parent
# TaskGroup", fixed by python/cpython#117407 ("gh-116720: Fix corner cases of
# taskgroups", 3.13): __aexit__ called uncancel() for its own cancellation of the parent
# before waiting for the children, but a child failing during that wait is what sets the
# flag and cancels the parent; that cancellation stayed counted (the fix moves the
# uncancel() below the wait).  Stock order: the child fails at t=0.5 while the body still
# sleeps (the body gets the CancelledError, __aexit__ uncancels); when both timers fire in
# one iteration the body has ended first.  Needs Task.uncancel and BaseExceptionGroup
# (3.11+).


class _TaskGroup312:
    """asyncio.TaskGroup of 3.11/3.12 (after python/cpython#95602), cut to what the
    program uses."""

    def __init__(self) -> None:
        self._aborting = False
        self._parent_cancel_requested = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._errors: list[BaseException] = []
        self._on_completed_fut: asyncio.Future[Any] | None = None

    async def __aenter__(self) -> _TaskGroup312:
        self._loop = asyncio.get_running_loop()
        self._parent_task = asyncio.current_task()
        return self

    def create_task(self, coro: Any) -> asyncio.Task[Any]:
        task = self._loop.create_task(coro)
        task.add_done_callback(self._on_task_done)
        self._tasks.add(task)
        return task

    uncancel_after_wait = False

    def _uncancel(self, propagate: Any) -> Any:
        """Our own cancellation of the parent is taken back (we *must* uncancel)."""
        if self._parent_cancel_requested and self._parent_task.uncancel() == 0:
            return None  # no other cancellation pending: do not propagate
        return propagate

    async def __aexit__(self, et: Any, exc: Any, tb: Any) -> None:
        propagate = exc if et is asyncio.CancelledError else None
        if not self.uncancel_after_wait:
            propagate = self._uncancel(propagate)
        if et is not None and not self._aborting:
            self._abort()
        while self._tasks:
            if self._on_completed_fut is None:
                self._on_completed_fut = self._loop.create_future()
            try:
                await self._on_completed_fut
            except asyncio.CancelledError as ex:
                if not self._aborting:
                    propagate = ex
                    self._abort()
            self._on_completed_fut = None
        if self.uncancel_after_wait:
            propagate = self._uncancel(propagate)
        if propagate and not self._errors:
            raise propagate
        if et is not None and et is not asyncio.CancelledError:
            self._errors.append(exc)
        if self._errors:
            raise BaseExceptionGroup("unhandled errors in a TaskGroup", self._errors)  # noqa: F821

    def _abort(self) -> None:
        self._aborting = True
        for task in self._tasks:
            if not task.done():
                task.cancel()

    def _on_task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        done = self._on_completed_fut
        if done is not None and not self._tasks and not done.done():
            done.set_result(True)
        if task.cancelled() or task.exception() is None:
            return
        self._errors.append(task.exception())
        if not self._aborting and not self._parent_cancel_requested:
            self._abort()
            self._parent_cancel_requested = True
            self._parent_task.cancel()


class _TaskGroup313(_TaskGroup312):
    """After python/cpython#117407: uncancel() once the children are done."""

    uncancel_after_wait = True


def _taskgroup_program(make: Callable[[], Any]) -> Callable[[], Any]:
    """A child fails at t=0.5 while the body sleeps until t=1; after the group (its
    error handled), the parent task has no cancellation request left."""

    async def main() -> None:
        async def child() -> None:
            await asyncio.sleep(0.5)
            raise ValueError("child failed")

        try:
            async with make() as group:
                group.create_task(child())
                await asyncio.sleep(1)
        except BaseException as exc:  # the group's ExceptionGroup, or a CancelledError
            if isinstance(exc, asyncio.CancelledError):
                raise
        left = asyncio.current_task().cancelling()
        assert left == 0, f"the TaskGroup left {left} cancellation request(s) counted"

    return main


LOCK_BUGS = [
    RealBug("lock-woken-waiter-cancelled", "bpo-27585 (python/cpython#1031, python/asyncio#467)",
            _woken_then_cancelled(_Lock35), _woken_then_cancelled(_Lock36Fixed)),
    RealBug("lock-two-holders-after-cancel", "bpo-32734 (python/cpython#5466)",
            _cancel_then_release(_Lock36), _cancel_then_release(_Lock37)),
    RealBug("semaphore-woken-waiter-cancelled", "python/asyncio#270 (fixed by python/asyncio#271)",
            _semaphore_woken_then_cancelled(_Semaphore34),
            _semaphore_woken_then_cancelled(_Semaphore35)),
    RealBug("semaphore-wakeup-scheduled-stuck", "gh-90155 (fixed by python/cpython#93222)",
            _semaphore_single_waiter(_Semaphore3110), _semaphore_single_waiter(_Semaphore312)),
    RealBug("semaphore-barging-acquire", "gh-90155 / bpo-45997 (fixed by python/cpython#93222)",
            _semaphore_barging(_Semaphore35), _semaphore_barging(_Semaphore312)),
    RealBug("condition-notify-lost-on-cancel", "gh-112202 (fixed by python/cpython#112201)",
            _condition_program(_Condition312), _condition_program(_Condition313)),
    RealBug("timeout-in-cleanup-escapes", "gh-102780 (fixed by python/cpython#102815)",
            _timeout_program(_Timeout3110), _timeout_program(_Timeout3113),
            min_python=(3, 11)),
    RealBug("taskgroup-parent-cancel-left-counted", "gh-116720 (fixed by python/cpython#117407)",
            _taskgroup_program(_TaskGroup312), _taskgroup_program(_TaskGroup313),
            min_python=(3, 11)),
]
