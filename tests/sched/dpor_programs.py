"""Small programs for the DPOR differential test (SCHED-37), each written to end by
reporting what it observed.  In ``PROGRAMS`` shared state is read or written under a
lock, through a primitive, or after a join; in ``RACY`` two threads race on plain
variables, which DPOR tells apart through the memory accesses in the footprints."""

from __future__ import annotations

import queue
import threading
import time

from coordkit.errors import CancelledError, OutOfRangeError
from coordkit.queues import FIFOQueue
from tests.sched import programs
from tests.sched.dpor_oracle import report


def _run(*targets) -> list[threading.Thread]:
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return threads


def locked_appends():
    lock, out = threading.Lock(), []

    def w(i):
        with lock:
            out.append(i)
        with lock:
            out.append(i + 10)

    _run(lambda: w(1), lambda: w(2))
    report(tuple(out))


def locked_read_across_condition_wait():
    """The issue's case: a Condition.wait releases the lock inside the wait's step."""
    lock = threading.Lock()
    cond = threading.Condition(lock)
    seen = []

    def waiter():
        with cond:
            cond.wait(timeout=1.0)

    def observer():
        seen.append(lock.locked())

    _run(waiter, observer)
    report(tuple(seen))


def try_acquire_across_default_condition_wait():
    """The same with a default Condition (an RLock): another thread's try-acquire."""
    cond = threading.Condition()
    seen = []

    def waiter():
        with cond:
            cond.wait(timeout=1.0)

    def observer():
        got = cond.acquire(blocking=False)
        seen.append(got)
        if got:
            cond.release()

    _run(waiter, observer)
    report(tuple(seen))


def is_alive_vs_last_step():
    """A thread's last step ends it: another thread's is_alive() races with it."""
    ev = threading.Event()
    seen = []

    def worker():
        ev.set()

    t = threading.Thread(target=worker)
    t.start()
    ev.wait()
    seen.append(t.is_alive())
    t.join()
    report(tuple(seen))


def join_with_timeout():
    def worker():
        time.sleep(1.0)

    t = threading.Thread(target=worker)
    t.start()
    t.join(timeout=0.5)
    first = t.is_alive()
    t.join()
    report((first, t.is_alive()))


def join_timeout_vs_lock():
    lock = threading.Lock()

    def worker():
        with lock:
            pass

    lock.acquire()
    t = threading.Thread(target=worker)
    t.start()
    t.join(timeout=0.1)
    alive = t.is_alive()
    lock.release()
    t.join()
    report(alive)


def sleep_as_last_op():
    lock, out = threading.Lock(), []

    def a():
        with lock:
            out.append("a")
        time.sleep(0.1)

    def b():
        with lock:
            out.append("b")

    ta = threading.Thread(target=a)
    tb = threading.Thread(target=b)
    ta.start()
    tb.start()
    alive = ta.is_alive()
    tb.join()
    ta.join()
    report((tuple(out), alive))


def sleepers_race_on_lock():
    lock, out = threading.Lock(), []

    def w(i, delay):
        time.sleep(delay)
        with lock:
            out.append(i)

    _run(lambda: w(1, 0.2), lambda: w(2, 0.1))
    report(tuple(out))


def notify_chooses_a_waiter():
    """Two waiters, one notify: which one wakes depends on which began waiting first."""
    cond = threading.Condition(threading.Lock())
    woke = []

    def waiter(i):
        with cond:
            cond.wait()
            woke.append(i)

    threads = [threading.Thread(target=waiter, args=(i,)) for i in (1, 2)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # both wait, in either order
    with cond:
        cond.notify()
    time.sleep(1.0)
    with cond:
        first = tuple(woke)
        cond.notify()
    for t in threads:
        t.join()
    report(first)


def notify_all_waiters():
    cond = threading.Condition(threading.Lock())
    state = {"go": False}
    woke = []

    def waiter():
        with cond:
            while not state["go"]:
                if not cond.wait(timeout=0.5):
                    woke.append("timeout")
                    return
            woke.append("go")

    t = threading.Thread(target=waiter)
    t.start()
    with cond:
        state["go"] = True
        cond.notify_all()
    t.join()
    report(tuple(woke))


def condition_wait_for():
    cond = threading.Condition()
    box = {"n": 0}
    got = []

    def consumer():
        with cond:
            got.append(cond.wait_for(lambda: box["n"] >= 2, timeout=1.0))

    def producer():
        for _ in range(2):
            with cond:
                box["n"] += 1
                cond.notify()

    _run(consumer, producer)
    report(tuple(got))


def queue_put_get():
    q = queue.Queue(maxsize=1)

    def producer():
        q.put(1)
        q.put(2)

    t = threading.Thread(target=producer)
    t.start()
    got = (q.get(), q.qsize())
    t.join()
    report(got)


def queue_get_timeout():
    q = queue.Queue()
    got = []

    def consumer():
        try:
            got.append(q.get(timeout=0.5))
        except queue.Empty:
            got.append("empty")

    def producer():
        time.sleep(0.5)
        q.put("x")

    _run(consumer, producer)
    report((tuple(got), q.qsize()))


def lifo_queue_order():
    q = queue.LifoQueue()
    out = []

    def put(i):
        q.put(i)

    _run(lambda: put(1), lambda: put(2))
    out.extend(q.get_nowait() for _ in range(2))
    report(tuple(out))


def simple_queue_timeout():
    q = queue.SimpleQueue()
    got = []

    def consumer():
        try:
            got.append(q.get(timeout=0.2))
        except queue.Empty:
            got.append(None)

    def producer():
        q.put(1)

    _run(consumer, producer)
    report((tuple(got), q.qsize()))


def fifo_queue_close_with_pending_dequeue():
    """coordkit's own queue: close() while a dequeue may be waiting."""
    q = FIFOQueue(1)
    got = []

    def consumer():
        try:
            got.append(q.dequeue())
        except OutOfRangeError:
            got.append("closed")

    t = threading.Thread(target=consumer)
    t.start()
    q.close()
    t.join()
    report(tuple(got))


def fifo_queue_close_cancels_pending_enqueue():
    q = FIFOQueue(1)
    out = []

    def producer():
        for i in (1, 2):
            try:
                q.enqueue(i)
                out.append(i)
            except CancelledError:
                out.append(-i)

    t = threading.Thread(target=producer)
    t.start()
    q.close(cancel_pending_enqueues=True)
    t.join()
    report((tuple(out), q.size()))


def rlock_reentry():
    r = threading.RLock()
    out = []

    def a():
        with r:
            out.append("a1")
            with r:
                out.append("a2")

    def b():
        with r:
            out.append("b")

    _run(a, b)
    report(tuple(out))


def barrier_indices():
    barrier = threading.Barrier(2)
    out = []

    def w():
        out.append(barrier.wait())

    t = threading.Thread(target=w)
    t.start()
    mine = barrier.wait()
    t.join()
    report((mine, tuple(out)))


def barrier_timeout_breaks():
    barrier = threading.Barrier(2, timeout=0.5)
    out = []

    def w(delay):
        time.sleep(delay)
        try:
            barrier.wait()
            out.append("ok")
        except threading.BrokenBarrierError:
            out.append("broken")

    _run(lambda: w(0.0), lambda: w(1.0))
    report(tuple(sorted(out)))


def semaphore_order():
    sem = threading.Semaphore(1)
    out = []

    def w(i):
        with sem:
            out.append(i)

    _run(lambda: w(1), lambda: w(2))
    report(tuple(out))


def semaphore_timeout():
    sem = threading.Semaphore(0)
    out = []

    def taker():
        out.append(sem.acquire(timeout=0.5))

    def giver():
        sem.release()

    _run(taker, giver)
    report(tuple(out))


def event_set_clear_wait():
    ev = threading.Event()
    out = []

    def setter():
        ev.set()

    def clearer():
        ev.clear()

    def waiter():
        out.append(ev.wait(timeout=0.1))

    _run(setter, clearer, waiter)
    report((tuple(out), ev.is_set()))


def event_wait_timeout_vs_sleep():
    ev = threading.Event()
    out = []

    def waiter():
        out.append(ev.wait(timeout=1.0))

    def setter():
        time.sleep(1.0)
        ev.set()

    _run(waiter, setter)
    report(tuple(out))


def two_timeouts_then_event():
    """Found by the generated programs (plan ``(('wait', 'is_set'), ('cwait', 'set'))``):
    the main thread waits 0.1 s on an Event, then reads it; the other waits 0.1 s on a
    Condition, then sets the Event.  Both waits time out at the same instant."""
    ev, cond = threading.Event(), threading.Condition(threading.Lock())
    seen = []

    def other():
        with cond:
            timed = cond.wait(timeout=0.1)
        ev.set()
        seen.append(timed)

    t = threading.Thread(target=other)
    t.start()
    waited = ev.wait(timeout=0.1)
    now = ev.is_set()
    t.join()
    report((waited, now, tuple(seen)))


def two_timeouts_then_join():
    """As ``two_timeouts_then_event``, with a join: the main thread's join times out at
    the instant the other's wait does, and it reads whether the other has ended."""
    cond = threading.Condition(threading.Lock())

    def other():
        with cond:
            cond.wait(timeout=0.1)

    t = threading.Thread(target=other)
    t.start()
    t.join(timeout=0.1)
    alive = t.is_alive()
    t.join()
    report(alive)


def two_timeouts_then_lock():
    """As ``two_timeouts_then_event``, with a lock: the main thread's acquire times out
    at the instant the holder's wait does, and the holder then releases the lock."""
    lock, cond = threading.Lock(), threading.Condition(threading.Lock())
    held = threading.Event()

    def holder():
        with lock:
            held.set()
            with cond:
                cond.wait(timeout=0.1)

    t = threading.Thread(target=holder)
    t.start()
    held.wait()
    got = lock.acquire(timeout=0.1)
    free = not lock.locked()
    if got:
        lock.release()
    t.join()
    report((got, free))


def failed_try_then_critical_sections():
    """Found by the generated programs (plan ``(('lock0', 'lock0'), ('try0', 'lock0',
    'lock0'))``): the other thread's try fails, it blocks on the lock and is woken by the
    release.  The step that resumes it names the acquire twice (the one it began, the one
    it retried), which once counted as a re-entry: the lock looked held for good, and the
    order of the later critical sections was never reversed."""
    lock = threading.Lock()
    log, tried = [], []

    def other():
        got = lock.acquire(blocking=False)
        if got:
            log.append("t")
            lock.release()
        tried.append(got)
        for _ in range(2):
            with lock:
                log.append(1)

    t = threading.Thread(target=other)
    t.start()
    for _ in range(2):
        with lock:
            log.append(0)
    t.join()
    report((tuple(log), tuple(tried)))


def second_set_hides_a_lock_race():
    """Found by the generated programs (plan ``(('set', 'lock0', 'set'), ('wait', 'try0'))``):
    the other thread's wait returns at once (the Event is set), then it tries the lock.
    The main thread's second set changes nothing; counted as a set that let the wait
    proceed, it ordered the wait after it without a race, which hid the race between
    the main thread's release and the try (9 schedules, the failed try never seen)."""
    ev, lock = threading.Event(), threading.Lock()
    seen = []

    def other():
        seen.append(ev.wait(timeout=0.1))
        got = lock.acquire(blocking=False)
        if got:
            lock.release()
        seen.append(got)

    t = threading.Thread(target=other)
    t.start()
    ev.set()
    with lock:
        pass
    ev.set()
    t.join()
    report(tuple(seen))


def lock_acquire_timeout():
    lock = threading.Lock()
    out = []

    def holder():
        with lock:
            time.sleep(1.0)

    def taker():
        out.append(lock.acquire(timeout=0.5))
        if out[-1]:
            lock.release()

    _run(holder, taker)
    report(tuple(out))


def try_acquire_pair():
    lock = threading.Lock()
    out = []

    def w(i):
        if lock.acquire(blocking=False):
            out.append(i)
            lock.release()

    _run(lambda: w(1), lambda: w(2))
    report(tuple(out))


def lock_order_deadlock():
    a, b = threading.Lock(), threading.Lock()

    def ab():
        with a, b:
            pass

    def ba():
        with b, a:
            pass

    _run(ab, ba)
    report("done")


def missed_notify():
    cond = threading.Condition()
    flag = []

    def waiter():
        with cond:
            if not flag:
                cond.wait()

    def notifier():
        with cond:
            flag.append(1)
            cond.notify()

    _run(waiter, notifier)
    report("done")


def enumerate_observer():
    lock = threading.Lock()
    seen = []

    def worker():
        with lock:
            pass

    t = threading.Thread(target=worker)
    t.start()
    seen.append(len(threading.enumerate()))
    seen.append(threading.active_count())
    t.join()
    report(tuple(seen))


def daemon_cut_off():
    """The main thread's end, with a daemon able to run, depends on everything (SCHED-31);
    the daemon's steps after it run after the return (SCHED-53) and change no outcome."""
    lock, out = threading.Lock(), []

    def daemon():
        with lock:
            out.append("d")

    threading.Thread(target=daemon, daemon=True).start()
    with lock:
        report(tuple(out))


def yield_then_append():
    lock, out = threading.Lock(), []

    def w(i):
        time.sleep(0)
        with lock:
            out.append(i)

    _run(lambda: w(1), lambda: w(2))
    report(tuple(out))


def join_then_read():
    box = {}

    def worker():
        box["x"] = 1

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    report(box["x"])


def timer_vs_cancel():
    out = []
    lock = threading.Lock()

    def fire():
        with lock:
            out.append("fired")

    timer = threading.Timer(0.5, fire)
    timer.start()
    time.sleep(0.5)
    timer.cancel()
    timer.join()
    report(tuple(out))


def turn_taking():
    cond = threading.Condition()
    state = {"turn": 0}
    order = []

    def w(i):
        with cond:
            while state["turn"] != i:
                if not cond.wait(timeout=1.0):
                    order.append(f"t{i}")
                    return
            order.append(i)
            state["turn"] += 1
            cond.notify_all()

    _run(lambda: w(1), lambda: w(0))
    report(tuple(order))


def exception_in_thread():
    ev = threading.Event()

    def a():
        if not ev.is_set():
            raise ValueError("a saw it unset")

    def b():
        ev.set()

    _run(a, b)
    report("done")


PROGRAMS = [
    locked_appends, locked_read_across_condition_wait,
    try_acquire_across_default_condition_wait, is_alive_vs_last_step, join_with_timeout,
    join_timeout_vs_lock, sleep_as_last_op, sleepers_race_on_lock, notify_chooses_a_waiter,
    notify_all_waiters, condition_wait_for, queue_put_get, queue_get_timeout, lifo_queue_order,
    simple_queue_timeout, fifo_queue_close_with_pending_dequeue,
    fifo_queue_close_cancels_pending_enqueue, rlock_reentry, barrier_indices,
    barrier_timeout_breaks, semaphore_order, semaphore_timeout, event_set_clear_wait,
    event_wait_timeout_vs_sleep, lock_acquire_timeout, try_acquire_pair, lock_order_deadlock,
    missed_notify, enumerate_observer, daemon_cut_off, yield_then_append, join_then_read,
    timer_vs_cancel, turn_taking, exception_in_thread, two_timeouts_then_event,
    two_timeouts_then_join, two_timeouts_then_lock, failed_try_then_critical_sections,
    second_set_hides_a_lock_race,
]


def racy_appends():
    out = []

    def w(i):
        out.append(i)

    _run(lambda: w(1), lambda: w(2))
    report(tuple(out))


def racy_flag_then_lock():
    lock = threading.Lock()
    box = {"flag": False, "seen": None}

    def a():
        box["flag"] = True
        with lock:
            pass

    def b():
        with lock:
            pass
        box["seen"] = box["flag"]

    _run(a, b)
    report(box["seen"])


def write_then_join_in_one_step():
    """A join of an ended thread is no point: the writer's write shares a step with one
    (its lock only ends the step before), and the reader's read races with the write
    through the reader's end only, which the join waits for."""
    box, seen, ev, lock = [0], [], threading.Event(), threading.Lock()

    def read():
        seen.append(box[0])
        ev.set()

    reader = threading.Thread(target=read)

    def write():
        with lock:
            pass
        box[0] = 1
        reader.join()

    writer = threading.Thread(target=write)
    reader.start()
    writer.start()
    reader.join()
    writer.join()
    report(tuple(seen))


# Plain variables written by two threads without synchronisation.
RACY = [racy_appends, racy_flag_then_lock, write_then_join_in_one_step]


# --- issue 30, DPOR rules (mechanisms 2, 3, 4) ---
# Each missed an outcome the unreduced search reaches before its rule (SCHED-45..49).


def poll_after_a_stutter():
    """SCHED-45: the poller's acquire(timeout=0) depends on everything; when it runs, the
    main thread's latest step is a join that only parked, after a join of the writer.
    Through that stutter the writer's append looked ordered before the poll, and the
    stutter races with nothing: the poll was never tried before the append."""
    sem = threading.Semaphore(1)
    sem.acquire()  # held for good: the poll finds it taken (and DFS guesses it would wait)
    box, seen = [], []

    def poller():
        got = sem.acquire(timeout=0)
        seen.append((got, len(box)))

    def writer():
        box.append(1)

    tp, tw = threading.Thread(target=poller), threading.Thread(target=writer)
    tp.start()
    tw.start()
    tw.join()
    tp.join()
    report(tuple(seen))


def two_polls_then_a_join():
    """SCHED-45 (the shape generator's U12), at line granularity: both threads poll one
    Semaphore(1) with timeout 0; T1's failed poll depends on everything, and the main
    thread's latest step is then its join of T1 that only parked, after its own poll.
    Through the stutter the two polls looked ordered: T1's was never tried first."""
    sem = threading.Semaphore(1)
    threads = [threading.current_thread()] + [None] * 1
    s0, s1 = [], []

    def t1(seen=s1):
        seen.append(sem.acquire(timeout=0))
    threads[1] = threading.Thread(target=t1, daemon=False)
    seen = s0
    threads[1].start()
    seen.append(sem.acquire(timeout=0))
    threads[1].join()
    report((tuple(s0), tuple(s1)))


def event_wait_zero_before_the_set():
    """SCHED-46: a wait(timeout=0) before the set returns False at once; after it, True.
    The set does not only let it proceed: the wait would not have waited."""
    ev, seen = threading.Event(), []

    def setter():
        ev.set()

    def waiter():
        got = ev.wait(timeout=0)
        seen.append(got)

    _run(setter, waiter)
    report(tuple(seen))


def timed_join_without_preemption():
    """SCHED-46: the schedule with no preemption: the main thread's join(timeout) parks
    and times out.  A join that may give up is no stutter (and bound 0 pruned the run
    that has one: the other threads there were over the bound, not explored)."""
    gate, seen = threading.Event(), []

    def worker():
        gate.wait()

    t = threading.Thread(target=worker)
    t.start()
    t.join(timeout=0.5)
    seen.append(t.is_alive())
    gate.set()
    t.join()
    report(tuple(seen))


def wait_before_the_clear():
    """SCHED-47: the set only lets a wait after it proceed; but before the clear it
    replaced, the wait returns at once and reads the list before the append."""
    ev = threading.Event()
    ev.set()
    box, seen = [], []

    def flipper():
        ev.clear()
        box.append(1)
        ev.set()

    def waiter():
        ev.wait()
        seen.append(len(box))

    _run(flipper, waiter)
    report(tuple(seen))


def _observe_before_start(look):
    """A program whose observer thread, started first, looks at a thread the main thread
    starts next (``look(t)``)."""
    def program():
        seen = []
        t = threading.Thread(target=lambda: None)

        def observer():
            try:
                seen.append(look(t))
            except RuntimeError as exc:
                seen.append(str(exc))

        o = threading.Thread(target=observer)
        o.start()
        t.start()
        o.join()
        t.join()
        report(tuple(seen))

    program.__name__ = program.__qualname__ = f"{look.__name__.strip('_')}_around_a_start"
    return program


def _joined(t):
    t.join()
    return "joined"


def _ident_is_none(t):
    return t.ident is None


def _is_alive(t):
    return t.is_alive()


def _made_daemon(t):
    t.daemon = True
    return "daemon"


def join_of_a_thread_another_starts():
    """SCHED-49 (found by the shape generator): T1 starts T2 while the main thread joins
    T2: before the start the join raises RuntimeError."""
    seen = []
    t2 = threading.Thread(target=lambda: None)
    t1 = threading.Thread(target=t2.start)
    t1.start()
    try:
        t2.join()
        seen.append("joined")
    except RuntimeError:
        seen.append("not started")
    t1.join()
    report(tuple(seen))


def join_of_a_timer_another_starts():
    """SCHED-47 (the shape generator's V3): T1 starts a Timer of interval 0 (its wait
    polls: a step that depends on everything) while the main thread joins the Timer.  The
    Timer's end only lets the join proceed; the poll before it, and T1's start before
    that, were ordered before the join through the end, though the join, run before the
    end, would have been a stutter conflicting with both: before the start it raises."""
    seen = []
    timer = threading.Timer(0.0, lambda: None)
    t1 = threading.Thread(target=timer.start)
    t1.start()
    try:
        timer.join()
        seen.append("joined")
    except RuntimeError:
        seen.append("not started")
    t1.join()
    report(tuple(seen))


def join_of_a_thread_another_starts_then_a_read():
    """SCHED-47 (the shape generator's W1): as ``join_of_a_timer_another_starts``, the
    joined thread appending under a lock, which the main thread's join step then reads.
    That read orders the append before the join, and the start before it: but the join,
    run before the end, would have been a stutter, which does not read the list."""
    lock, log = threading.Lock(), []

    def t2():
        with lock:
            log.append(2)

    t2_thread = threading.Thread(target=t2)
    t1 = threading.Thread(target=t2_thread.start)
    t1.start()
    try:
        t2_thread.join()
    except RuntimeError:
        log.append("not started")
    t1.join()
    report(tuple(log))


def join_whose_step_ends_at_the_join():
    """SCHED-49 (generated): the main thread's step that goes on to join T1 ends at the
    join's scheduling point only because T1 has not ended; had T1 ended first, it would
    have run on through the join and the report.  Sleep sets took T1's last step to
    commute with it, so T2's count between the main thread's wait and its report (T1
    ended, the main thread not) was never run."""
    ev, sem, seen = threading.Event(), threading.Semaphore(0), []

    def t2():
        ev.set()
        seen.append(("count", threading.active_count()))

    last = threading.Thread(target=t2)

    def t1():
        seen.append(("t1 waited", ev.wait(timeout=0.1)))
        seen.append(("t1 polled", sem.acquire(timeout=0)))
        last.start()

    first = threading.Thread(target=t1)
    first.start()
    seen.append(("alive", last.is_alive()))
    seen.append(("main waited", ev.wait(timeout=0.1)))
    first.join()
    report(tuple(seen))


def join_tried_before_the_start():
    """SCHED-45 (generated): T1 joins T2, which T1 starts after its join and the main
    thread starts too (one of the two starts raises).  The run where T1's join only
    parks, tried before T2's end, was a repeat from its stutter on, and the stutter's
    own race with the main thread's start, which would make the join raise, was never
    analysed."""
    seen = []

    def t2():
        time.sleep(0)
        seen.append("t2")

    last = threading.Thread(target=t2)

    def t1():
        try:
            last.join()
            seen.append("joined")
        except RuntimeError:
            seen.append("early")
        try:
            last.start()
        except RuntimeError:
            seen.append("t1 started it twice")

    first = threading.Thread(target=t1)
    first.start()
    try:
        last.start()
    except RuntimeError:
        seen.append("main started it twice")
    time.sleep(0)
    first.join()
    report(tuple(seen))


def a_race_reversed_by_a_join_that_only_parks():
    """SCHED-45 (generated): T3's sleep(0) reads a list T2 appends to; the race between
    them was to be reversed at a choice point where the main thread could run, and the
    main thread was picked for it: its join only parked there, which made the run a
    repeat "because the other threads there are explored", while no other had been put
    in that choice point's backtrack set.  T3's read before the append was never run."""
    ev, sem, box, seen = threading.Event(), threading.Semaphore(0), [], []

    def t3():
        time.sleep(0)
        seen.append(("t3", len(box)))

    last = threading.Thread(target=t3)

    def t1():
        try:
            last.join()
        except RuntimeError:
            seen.append("early")
        last.start()

    first = threading.Thread(target=t1)
    second = threading.Thread(target=lambda: box.append(1))
    first.start()
    second.start()
    seen.append(("polled", sem.acquire(timeout=0)))
    seen.append(("waited", ev.wait(0)))
    first.join()
    second.join()
    report((tuple(seen), tuple(box)))


joined_around_a_start = _observe_before_start(_joined)
ident_is_none_around_a_start = _observe_before_start(_ident_is_none)
is_alive_around_a_start = _observe_before_start(_is_alive)
made_daemon_around_a_start = _observe_before_start(_made_daemon)

RULE_PROGRAMS = [
    poll_after_a_stutter, event_wait_zero_before_the_set, wait_before_the_clear,
    joined_around_a_start, ident_is_none_around_a_start, is_alive_around_a_start,
    made_daemon_around_a_start, join_of_a_thread_another_starts, join_of_a_timer_another_starts,
    join_of_a_thread_another_starts_then_a_read, join_whose_step_ends_at_the_join,
    join_tried_before_the_start, a_race_reversed_by_a_join_that_only_parks,
]
# At line granularity (where the generator found it: at sync its steps differ).
RULE_PROGRAMS_AT_LINE = [two_polls_then_a_join]
# Whose schedule with no preemption DPOR's bound-0 level pruned (SCHED-34, SCHED-46).
RULE_PROGRAMS_AT_BOUND_ZERO = [timed_join_without_preemption, joined_around_a_start]

# --- issue 30, tracer (mechanisms 1, 5) ---
# Accesses made by a call, recorded in the step in which the call happens (SCHED-41);
# accesses made in C that the tracer cannot name make the step depend on everything
# (SCHED-42); the ones it models are named precisely (SCHED-43, SCHED-44).
import bisect  # noqa: E402
import functools  # noqa: E402
import operator  # noqa: E402
import random  # noqa: E402


class _Box:
    a = 0


def append_of_a_point():
    """The append happens in the step of ``is_set`` (its argument's point), not before:
    recorded before, it would race with ``b``'s read of ``box.a`` only."""
    box, log, ev = _Box(), [], threading.Event()

    def a():
        box.a = 1
        log.append(ev.is_set())

    def b():
        log.append(box.a)

    _run(a, b)
    report(tuple(log))


def insert_of_a_point():
    box, log, ev = _Box(), [], threading.Event()

    def a():
        box.a = 1
        log.insert(0, ev.is_set())

    def b():
        log.insert(0, box.a)

    _run(a, b)
    report(tuple(log))


def extend_of_a_point():
    box, log, ev = _Box(), [], threading.Event()

    def a():
        box.a = 1
        log.extend([ev.is_set()])

    def b():
        log.extend([box.a])

    _run(a, b)
    report(tuple(log))


def setattr_between_points():
    """Two writes made in C (``setattr``), each in a thread's only step."""
    box = _Box()
    _run(lambda: setattr(box, "a", 1), lambda: setattr(box, "a", 2))
    report(box.a)


def truth_between_points():
    """``if log`` asks the list its size in C: a read of it (SCHED-58), in the step that
    tests it; the appender appends between two points of its own."""
    log, seen = [], []
    mine, theirs = threading.Event(), threading.Event()

    def test():
        mine.set()
        found = 1 if log else 0
        seen.append(found)
        mine.clear()

    _run(test, lambda: (theirs.set(), log.append(1), theirs.clear()))
    report(tuple(seen))


TRACER_PROGRAMS = [append_of_a_point, insert_of_a_point, extend_of_a_point,
                   setattr_between_points, truth_between_points]


# --- issue 30, a thread whose body is C code (SCHED-59) ---
# ``Thread.run`` and ``Timer.run`` are the library's code, which the tracer does not trace;
# the target they call is C code here: its call is named where it is made.

def c_target_vs_len():
    """A thread whose target is ``log.append``: its write is in its only step."""
    log, mark = [], threading.Event()
    t = threading.Thread(target=log.append, args=(1,))
    t.start()
    mark.set()  # (a point of its own: at sync granularity the append may come before it)
    seen = len(log)
    t.join()
    report(seen)


def c_targets_both_append():
    """Two threads whose targets append to one list: both orders."""
    log = []
    a = threading.Thread(target=log.append, args=(1,))
    b = threading.Thread(target=log.append, args=(2,))
    a.start()
    b.start()
    a.join()
    b.join()
    report(tuple(log))


def c_timer_setitem_vs_get():
    """A Timer whose function is ``d.__setitem__``: its write is in the step after its wait."""
    d, mark = {}, threading.Event()
    t = threading.Timer(0, d.__setitem__, args=("k", 1))
    t.start()
    mark.set()
    mark.set()  # (two points of its own: the Timer's wait and its call may come first)
    seen = d.get("k")
    t.join()
    report(seen)


def c_timer_cancelled_or_not():
    """A Timer's C function, called unless the main thread cancels it first."""
    log = []
    t = threading.Timer(0.05, log.append, args=(1,))
    t.start()
    time.sleep(0.05)
    t.cancel()
    seen = tuple(log)
    t.join()
    report(seen)


C_TARGET_PROGRAMS = [c_target_vs_len, c_targets_both_append, c_timer_setitem_vs_get,
                     c_timer_cancelled_or_not]


def _beside(other):
    """Run ``other`` in a thread beside the caller's next line: few lines, few points."""
    t = threading.Thread(target=other)
    t.start()
    return t


def line_setattr():
    box = _Box()
    t = _beside(lambda: setattr(box, "a", 1))
    setattr(box, "a", 2)  # noqa: B010 (the shape tested)
    t.join()
    report(box.a)


def line_getattr_vs_setattr():
    box = _Box()
    t = _beside(lambda: setattr(box, "a", 1))
    seen = getattr(box, "a")  # noqa: B009 (the shape tested)
    t.join()
    report(seen)


def line_delattr_vs_getattr():
    box = _Box()
    box.a = 1
    t = _beside(lambda: delattr(box, "a"))
    seen = getattr(box, "a")  # noqa: B009 (the shape tested)
    t.join()
    report(seen)


def line_operator_setitem():
    box = {"v": 0}
    t = _beside(lambda: operator.setitem(box, "v", 1))
    operator.setitem(box, "v", 2)
    t.join()
    report(box["v"])


def line_vars_item():
    box = _Box()
    t = _beside(lambda: vars(box).__setitem__("a", 1))
    box.a = 2
    t.join()
    report(box.a)


def line_unbound_dict_update():
    box = {"v": 0}
    t = _beside(lambda: dict.update(box, v=1))
    box["v"] = 2
    t.join()
    report(box["v"])


def line_sorted_vs_append():
    log = [2]
    t = _beside(lambda: list.append(log, 1))
    seen = sorted(log)
    t.join()
    report(tuple(seen))


def line_reduce_vs_extend():
    log = [1]
    t = _beside(lambda: log.extend([2]))
    seen = functools.reduce(operator.add, log)
    t.join()
    report(seen)


def line_map_vs_setitem():
    log = [1]
    t = _beside(lambda: log.__setitem__(0, 2))
    seen = list(map(str, log))
    t.join()
    report(tuple(seen))


def line_loop_vs_insert():
    """A loop reads its list at each of its steps, not once at ``iter()``."""
    log, seen = [1], []
    t = _beside(lambda: log.insert(0, 0))
    for x in log:
        seen.append(x)
    t.join()
    report(tuple(seen))


def line_read_through_an_item():
    """Operands reached through a subscript (the shapes campaign's U0)."""
    seens = [[], []]
    t = _beside(lambda: seens[1].append(1))
    seen = tuple(seens[1])
    t.join()
    report(seen)


def line_iadd_through_an_alias():
    """``+=`` on a list changes it in place, through whatever name holds it."""
    log = [1]

    def add(alias=log):
        alias += [2]

    t = _beside(add)
    seen = tuple(log)
    t.join()
    report(seen)


def line_compare_vs_append():
    """``==`` on lists reads them through, in C."""
    log = [1]
    t = _beside(lambda: log.append(2))
    seen = log == [1]
    t.join()
    report(seen)


def line_tested_compare_vs_append():
    """A comparison a jump tests (3.13 compiles it as ``bool(==)``) reads its lists through,
    in C: the inner list too (SCHED-43, SCHED-57)."""
    box = [[]]
    inner = box[0]
    t = _beside(lambda: inner.append(1))
    seen = 1 if box == [[]] else 0
    t.join()
    report(seen)


def line_truth_vs_append():
    """``if log`` asks the list its size in C (SCHED-58)."""
    log = []
    t = _beside(lambda: log.append(1))
    seen = 1 if log else 0
    t.join()
    report(seen)


def line_not_vs_append():
    """So does ``not log`` (before 3.13 ``UNARY_NOT``, from 3.13 ``TO_BOOL``)."""
    log = []
    t = _beside(lambda: log.append(1))
    seen = not log
    t.join()
    report(seen)


def line_format_vs_append():
    """An f-string reads its list through, in C."""
    log = [1]
    t = _beside(lambda: log.append(2))
    seen = f"{log}"
    t.join()
    report(seen)


def line_unpack_vs_setitem():
    """Unpacking a list iterates it in C."""
    log = [1, 2]
    t = _beside(lambda: log.__setitem__(0, 3))
    a, _ = log
    t.join()
    report(a)


def line_starred_vs_append():
    """A starred display iterates its list in C."""
    log = [1]
    t = _beside(lambda: log.append(2))
    seen = (*log,)
    t.join()
    report(seen)


def line_class_attribute():
    """An instance's attribute read that its class answers reads the class's."""

    class Box:
        a = 0

    box = Box()
    t = _beside(lambda: setattr(Box, "a", 1))
    seen = box.a
    t.join()
    report(seen)


def line_insort_vs_append():
    """A C function the tracer does not know (``bisect.insort``): the step depends on
    everything."""
    log = [1]
    t = _beside(lambda: bisect.insort(log, 3))
    log.append(2)
    t.join()
    report(tuple(log))


def line_shuffle_vs_read():
    """Library code the tracer does not trace (``random.Random.shuffle``, Python in the
    stdlib): the step depends on everything."""
    log = [1, 2]
    t = _beside(lambda: random.Random(1).shuffle(log))
    seen = log[0]
    t.join()
    report(seen)


TRACER_LINE_PROGRAMS = [line_setattr, line_getattr_vs_setattr, line_delattr_vs_getattr,
                        line_operator_setitem, line_vars_item, line_unbound_dict_update,
                        line_sorted_vs_append, line_reduce_vs_extend, line_map_vs_setitem,
                        line_loop_vs_insert, line_read_through_an_item, line_iadd_through_an_alias,
                        line_compare_vs_append, line_tested_compare_vs_append,
                        line_format_vs_append, line_unpack_vs_setitem, line_starred_vs_append,
                        line_class_attribute, line_insort_vs_append,
                        line_shuffle_vs_read, line_truth_vs_append, line_not_vs_append]


# --- issue 30, auto granularity: a point that exists only when a thread waits ---
# At auto granularity a release (set, notify, put) that wakes a waiter is followed by a
# point of its own (RACE-9); one that wakes nobody is not.  The waker's steps therefore
# depend on whether another thread was parked, so neither the parking nor the waking is
# pruned as "only lets proceed" or as a stutter there (SCHED-56).

def release_point_made_by_a_waiter():
    """The shape generator's X1: the main thread reports before ``t`` appends only when it
    blocked on the lock, so that ``t``'s release woke it and made a point before the
    append (whose argument calls into what the tracer cannot name)."""
    lock, log, seen, box = threading.Lock(), [], [], {}

    def t():
        with lock:
            log.append(1)
        seen.append(box.get("L") is not None and box["L"].acquire(timeout=0))

    th = threading.Thread(target=t)
    th.start()
    with lock:
        log.append(0)
    report((tuple(log), tuple(seen)))


def set_point_made_by_a_waiter():
    """As ``release_point_made_by_a_waiter``, with an Event's set waking the main thread."""
    ev, seen = threading.Event(), []

    def t():
        ev.set()
        seen.append(1)

    th = threading.Thread(target=t)
    th.start()
    ev.wait()
    report(tuple(seen))
    th.join()


AUTO_PROGRAMS = [release_point_made_by_a_waiter, set_point_made_by_a_waiter]


# --- critical sections and Condition waits (SCHED-80, SCHED-81) ---
# What the lock-aware equivalence lets commute, and what it must not: each reaches an
# outcome that only one order of two critical sections (or of two waits) reaches.

def buffer(producers: int, consumers: int, items: int):
    """Issue 33's one-slot Condition buffer (while-loop waits, ``notify_all``), reporting
    the order the items were taken in."""

    def program():
        report(programs.condition_buffer(producers, consumers, items))

    program.__name__ = f"buffer_{producers}p{consumers}c{items}"  # too big for the oracle
    return program


def read_after_a_section_of_what_another_section_wrote():
    """Two critical sections that do not conflict (one writes ``a``, one reads ``b``);
    after its section the second thread reads ``a``: only the order of the sections
    decides what it reads (SCHED-80: the lock's release -> acquire orders nothing)."""
    lock, box, seen = threading.Lock(), {"a": 0, "b": 0}, []

    def writer():
        with lock:
            box["a"] = 1

    def reader():
        with lock:
            seen.append(box["b"])
        seen.append(box["a"])

    _run(writer, reader)
    report(tuple(seen))


def write_before_an_empty_section_read_after_another():
    """A write before an empty critical section, a read after another thread's: ordered
    only through the lock, which the lock-aware equivalence drops, so the two race."""
    lock, box, seen = threading.Lock(), {"a": 0}, []

    def writer():
        box["a"] = 1
        with lock:
            pass

    def reader():
        with lock:
            pass
        seen.append(box["a"])

    _run(writer, reader)
    report(tuple(seen))


def _alongside(other, own) -> None:
    """Run ``other`` in a thread while the main thread runs ``own``, then join it."""
    t = threading.Thread(target=other)
    t.start()
    own()
    t.join()


def sections_conflicting_through_a_third_object():
    """Sections on one lock that do not conflict with each other (one writes ``a``, one
    reads ``b``); the second thread's read of ``a`` outside its section conflicts with
    the first section."""
    lock, box, seen = threading.Lock(), {"a": 0, "b": 0}, []

    def w():
        with lock:
            box["a"] = 1

    def r():
        with lock:
            seen.append(box["b"])
        seen.append(box["a"])

    _alongside(w, r)
    report(tuple(seen))


def read_only_sections_and_a_write():
    """Two read-only sections and one that writes: what each reader saw depends on the
    order of its section and the writer's."""
    lock, box, seen = threading.Lock(), {"a": 0}, []

    def reader():
        with lock:
            seen.append(box["a"])

    def writer():
        with lock:
            box["a"] = 1
        reader()

    _alongside(reader, writer)
    report(tuple(seen))


def nested_locks_in_either_order():
    """Lock-order inversion: a deadlock that only the order of two critical sections,
    each nested in another, reaches (nested sections are never relaxed: SCHED-80)."""
    a, b, seen = threading.Lock(), threading.Lock(), []

    def one():
        with a, b:
            seen.append(1)

    def two():
        with b, a:
            seen.append(2)

    _alongside(one, two)
    report(tuple(seen))


def _two_while_waiters(notify_all: bool):
    """Two while-loop waiters; the main thread makes one ticket (``notify`` or
    ``notify_all``), then a second (``notify_all``): who took the first."""
    cond, state, woke = threading.Condition(), {"go": 0}, []

    def waiter(i):
        with cond:
            while not state["go"]:
                cond.wait()
            state["go"] -= 1
            woke.append(i)

    threads = [threading.Thread(target=waiter, args=(i,)) for i in (1, 2)]
    for t in threads:
        t.start()
    with cond:
        state["go"] = 1
        cond.notify_all() if notify_all else cond.notify()
    with cond:
        state["go"] += 1
        cond.notify_all()
    for t in threads:
        t.join()
    report(tuple(woke))


def notify_one_of_two_while_waiters():
    """``notify`` picks the waiter that began waiting first (SCHED-81: it observes their
    order)."""
    _two_while_waiters(False)


def notify_all_of_two_while_waiters():
    """``notify_all`` wakes both: who takes the ticket depends on the order of their
    sections after waking, not of their waits."""
    _two_while_waiters(True)


def section_with_a_blocking_wait():
    """A section that waits on an Event the other thread sets after its own section: the
    order of the sections decides whether they deadlock (a section that blocks is never
    relaxed: SCHED-80)."""
    lock, ev, seen = threading.Lock(), threading.Event(), []

    def waiter():
        with lock:
            ev.wait()
            seen.append("w")

    def setter():
        with lock:
            seen.append("s")
        ev.set()

    _run(waiter, setter)
    report(tuple(seen))


def try_acquire_of_a_relaxable_lock():
    """A non-blocking acquire observes whether the lock is held: no section of its lock
    is relaxed (SCHED-80)."""
    lock, seen = threading.Lock(), []

    def holder():
        with lock:
            seen.append("h")

    def trier():
        if lock.acquire(blocking=False):
            seen.append("t")
            lock.release()
        else:
            seen.append("busy")

    _run(holder, trier)
    report(tuple(seen))


def _awaiter(cond, state, seen, timeout=None):
    """A while-loop waiter that reports what it saw; with a ``timeout``, one that gives up."""
    def wait():
        with cond:
            while not state["v"]:
                if not cond.wait(timeout) and timeout is not None:
                    seen.append("gave up")
                    return
            seen.append(state["v"])
    return wait


def await_lost_wakeup_in_a_section():
    """SCHED-96: a section makes the predicate true and notifies no one (a lost wake-up): a
    waiter that checked before it waits for ever (a deadlock) unless a later section
    notifies; one that checked after it goes on.  Its check races with that section."""
    cond, state, seen = threading.Condition(), {"v": 0}, []

    def lose():
        with cond:
            state["v"] = 1

    _run(_awaiter(cond, state, seen), lose)
    report(tuple(seen))


def await_woken_by_a_later_section():
    """SCHED-96: the section that makes the predicate true notifies nobody; a later one of
    the same thread notifies without writing: the waiter's check races with the first."""
    cond, state, seen = threading.Condition(), {"v": 0}, []

    def split():
        with cond:
            state["v"] = 1
        with cond:
            state["v"] += 1
            cond.notify_all()

    _run(_awaiter(cond, state, seen), split)
    report(tuple(seen))


def await_notified_before_the_write():
    """SCHED-96: a section that notifies, then writes: the woken waiter re-checks after the
    section, and sees the write either way."""
    cond, state, seen = threading.Condition(), {"v": 0}, []

    def first():
        with cond:
            cond.notify_all()
            state["v"] = 1

    _run(_awaiter(cond, state, seen), first)
    report(tuple(seen))


def await_read_before_the_lock():
    """SCHED-96: what a waiter read before it took the lock, in the step that took it (one
    line), is not read again by its woken check: that read keeps its race."""
    cond, state, seen = threading.Condition(), {"v": 0, "w": 0}, []

    def waiter():
        x = state["w"]; cond.acquire()  # noqa: E702 (one step at line granularity)
        try:
            while not state["v"]:
                cond.wait()
            seen.append((x, state["v"]))
        finally:
            cond.release()

    def writer():
        with cond:
            state["w"] = 1
            state["v"] = 1
            cond.notify_all()

    _run(waiter, writer)
    report(tuple(seen))


def await_timed_waiter_and_a_writer():
    """SCHED-96: a waiter with a timeout and a writer: whether it gives up depends on when
    the writer runs (a timeout is no notify)."""
    cond, state, seen = threading.Condition(), {"v": 0}, []

    def write():
        with cond:
            state["v"] = 1
            cond.notify()

    _run(_awaiter(cond, state, seen, 0.5), write)
    report(tuple(seen))


def await_taken_before_the_woken_check():
    """SCHED-96: a while-loop taker; a thread that puts one item (notifying), then takes it
    back in its next section if it is still there: the woken taker's re-check may find
    it gone and wait again, for ever (a deadlock)."""
    cond, state, got = threading.Condition(), {"v": 0}, []

    def take():
        with cond:
            while not state["v"]:
                cond.wait()
            got.append("taken")
            state["v"] = 0

    def put_then_take_back():
        with cond:
            state["v"] = 1
            cond.notify_all()
        with cond:
            if state["v"]:
                got.append("taken back")
                state["v"] = 0

    _run(take, put_then_take_back)
    report(tuple(got))


AWAIT_PROGRAMS = [
    await_lost_wakeup_in_a_section, await_woken_by_a_later_section,
    await_notified_before_the_write, await_read_before_the_lock,
    await_timed_waiter_and_a_writer, await_taken_before_the_woken_check,
]


SECTION_PROGRAMS = [
    read_after_a_section_of_what_another_section_wrote,
    write_before_an_empty_section_read_after_another,
    sections_conflicting_through_a_third_object, read_only_sections_and_a_write,
    nested_locks_in_either_order, section_with_a_blocking_wait,
    try_acquire_of_a_relaxable_lock,
]
# Too big for the unreduced oracle (over 20,000 schedules): compared with DPOR under
# trace equivalence (itself compared with the oracle, SCHED-37).
SECTION_PROGRAMS_BEYOND_THE_ORACLE = [
    notify_one_of_two_while_waiters, notify_all_of_two_while_waiters,
    buffer(1, 2, 2), buffer(2, 1, 1), buffer(2, 2, 1),
]


def queue_puts_from_two_threads():
    """A queue's sections touch its deque in untraced library code: its mutex is never
    relaxed (SCHED-80), so both orders of the puts are reached."""
    q = queue.Queue()
    _run(lambda: q.put(1), lambda: q.put(2))
    report((q.get(), q.get()))


SECTION_PROGRAMS.append(queue_puts_from_two_threads)
