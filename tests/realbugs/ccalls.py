"""Ports of real, fixed races whose racing accesses are made inside C calls or the
stdlib's containers (RACE-10, RACE-11): heapq and list methods on a shared list, a
deque's emptiness checked before another thread's ``popleft``, a set or dict changed
while another thread goes over it, one generator advanced by two threads.

Same format as ``programs.py``: each keeps the upstream mechanism in a few lines; the
citation names the upstream issue or pull request.
"""

from __future__ import annotations

import heapq
import threading
from collections import deque

from tests.realbugs.programs import RealBug, _bug, run_threads


def _guarded(lock: threading.Lock, fixed: bool):
    """The fix's lock, or none."""
    return lock if fixed else _NoLock()


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def sched_cancel_vs_run(fixed: bool) -> None:
    """bpo-8684 (sched): run() looks at the queue's head and pops it with heapq while
    cancel() removes an event and re-heapifies from another thread; the fix (3.3) takes
    the scheduler's lock in both (IndexError or the cancelled event run)."""
    queue: list = [(1, "a"), (2, "b")]
    heapq.heapify(queue)
    lock = threading.Lock()
    ran = []

    def run() -> None:
        while True:
            with _guarded(lock, fixed):
                if not queue:
                    return
                event = heapq.heappop(queue)
            ran.append(event)

    def cancel() -> None:
        with _guarded(lock, fixed):
            if (2, "b") in queue:
                queue.remove((2, "b"))
                heapq.heapify(queue)
                return
        raise AssertionError("cancel() came too late")  # (fine: it was run)

    def cancel_quietly() -> None:
        try:
            cancel()
        except AssertionError:
            pass

    run_threads(run, cancel_quietly)
    assert (2, "b") not in ran or (2, "b") not in queue


def priority_queue_pop(fixed: bool) -> None:
    """SSC-ICT-Innovatie/nl-kat-coordination#4128: the scheduler's priority queue's
    ``pop`` and ``push`` lacked the lock its other methods take: two pops both see one
    item left (IndexError: index out of range)."""
    items: list = [(1, "task")]
    lock = threading.Lock()

    def pop() -> None:
        with _guarded(lock, fixed):
            if items:
                heapq.heappop(items)

    def push_then_pop() -> None:
        with _guarded(lock, fixed):
            heapq.heappush(items, (0, "urgent"))
        pop()

    run_threads(pop, pop, push_then_pop)


def team_queue_pop(fixed: bool) -> None:
    """Ryan-Amaral/PyTPG#5: getNextTeam() pops the team queue after checking it is not
    empty outside the lock another trainer thread also pops under (IndexError: pop from
    empty list)."""
    teams = ["t1"]
    lock = threading.Lock()

    def next_team() -> None:
        with _guarded(lock, fixed):
            ready = len(teams) > 0
        if fixed:
            with lock:
                if teams:
                    teams.pop()
        elif ready:
            teams.pop()

    run_threads(next_team, next_team)


def op_buffer_index(fixed: bool) -> None:
    """ray-project/ray#43015: OpBufferQueue scans its deque by index up to a length read
    first, while another thread pops from it (IndexError: deque index out of range);
    the fix takes the queue's lock in both."""
    buffer = deque(["r1", "r2"])
    lock = threading.Lock()
    seen = []

    def scan() -> None:
        with _guarded(lock, fixed):
            for i in range(len(buffer)):
                seen.append(buffer[i])

    def pop() -> None:
        with _guarded(lock, fixed):
            if buffer:
                buffer.popleft()

    run_threads(scan, pop)


def deque_emptiness(fixed: bool) -> None:
    """wummel/linkchecker#135: the checker's incoming deque, which the docs call
    thread-safe, is walked with enumerate() while another thread appends a URL
    (RuntimeError: deque mutated during iteration); the fix locks both places."""
    incoming = deque(["u1", "u2"])
    lock = threading.Lock()

    def get_url() -> None:
        with _guarded(lock, fixed):
            for _i, url in enumerate(incoming):
                if url == "ready":
                    break

    def add_url() -> None:
        with _guarded(lock, fixed):
            incoming.append("u3")

    run_threads(get_url, add_url)


def emitters_start(fixed: bool) -> None:
    """gorakhargosh/watchdog#544: Observer.start() goes over its set of emitters while
    another thread schedules a new one (RuntimeError: Set changed size during
    iteration); fixed by going over ``self._emitters.copy()``."""
    emitters = {"e1", "e2"}
    started = []

    def start() -> None:
        walked = emitters
        if fixed:
            walked = emitters.copy()
        for emitter in walked:
            started.append(emitter)

    def schedule() -> None:
        emitters.add("e3")

    run_threads(start, schedule)


def executor_sentinels(fixed: bool) -> None:
    """bpo-43498, python/cpython#24868 (concurrent.futures.process): the manager thread
    lists its worker processes' sentinels from ``self.processes.values()`` while
    another thread adds a worker (RuntimeError: dictionary changed size during
    iteration); fixed by iterating a copy."""
    processes = {1: "s1", 2: "s2"}

    def sentinels() -> None:
        values = processes.values()
        if fixed:
            values = processes.copy().values()
        readers = [s for s in values]  # (the manager thread waits on these)
        assert len(readers) >= 2

    def spawn() -> None:
        processes[3] = "s3"

    run_threads(sentinels, spawn)


def schema_keys(fixed: bool) -> None:
    """Aiven-Open/karapace#517: a subject's schema versions are read through the dict's
    ``keys()`` view while the reader thread adds one under load (RuntimeError:
    dictionary changed size during iteration); fixed by copying the keys first."""
    versions = {1: "v1", 2: "v2"}

    def latest() -> None:
        keys = versions.keys()
        if fixed:
            keys = list(versions.keys())
        for key in keys:
            versions.get(key)

    def register() -> None:
        versions[3] = "v3"

    run_threads(latest, register)


def active_swaps(fixed: bool) -> None:
    """basicswap/basicswap#579: the loops over the active swaps crash when another thread
    adds or removes a swap mid-loop (RuntimeError: dictionary changed size during
    iteration); fixed by looping over a snapshot copy."""
    swaps = {"a": 1, "b": 2}

    def check() -> None:
        walked = swaps
        if fixed:
            walked = swaps.copy()
        for _key, _swap in walked.items():
            pass

    def finish() -> None:
        swaps.pop("a", None)

    run_threads(check, finish)


def compute_node_cycle(fixed: bool) -> None:
    """Juniper/contrail-test#160: VMs launched from parallel threads each take their zone
    with ``next(self.compute_nodes)`` on one shared generator, resumed by a thread while
    another is inside it (ValueError: generator already executing); fixed with a lock
    on the generator."""
    launched: dict = {}
    lock = threading.Lock()

    def cycle():
        while True:
            for node in ("cn1", "cn2"):
                launched["count"] = launched.get("count", 0) + 1
                yield node

    nodes = cycle()

    def launch() -> None:
        with _guarded(lock, fixed):
            next(nodes)

    run_threads(launch, launch)


def sse_response(fixed: bool) -> None:
    """TargetProcess/signalr-client-py#42: the listener thread and invoke() both advance
    the server-sent-events generator with ``next(self.__response)`` (ValueError:
    generator already executing); fixed with a lock around the ``next``."""
    chunks = deque(["c1", "c2", "c3"])
    lock = threading.Lock()

    def events():
        while chunks:
            yield chunks.popleft()

    response = events()

    def receive() -> None:
        with _guarded(lock, fixed):
            next(response, None)

    run_threads(receive, receive)


C_CALL_BUGS: list[RealBug] = [
    _bug("sched_cancel_vs_run", "bpo-8684 (sched.scheduler, thread-safe since 3.3)",
         "heap shared", sched_cancel_vs_run),
    _bug("priority_queue_pop", "SSC-ICT-Innovatie/nl-kat-coordination#4128", "heap shared",
         priority_queue_pop),
    _bug("team_queue_pop", "Ryan-Amaral/PyTPG#5", "check-then-pop", team_queue_pop),
    _bug("op_buffer_index", "ray-project/ray#43015", "check-then-pop", op_buffer_index),
    _bug("deque_emptiness", "wummel/linkchecker#135", "mutated while iterated",
         deque_emptiness),
    _bug("emitters_start", "gorakhargosh/watchdog#544", "mutated while iterated",
         emitters_start, lock_free_fix=True),
    _bug("executor_sentinels", "bpo-43498, python/cpython#24868", "mutated while iterated",
         executor_sentinels, lock_free_fix=True),
    _bug("schema_keys", "Aiven-Open/karapace#517", "mutated while iterated", schema_keys,
         lock_free_fix=True),
    _bug("active_swaps", "basicswap/basicswap#579", "mutated while iterated", active_swaps,
         lock_free_fix=True),
    _bug("compute_node_cycle", "Juniper/contrail-test#160", "generator shared",
         compute_node_cycle),
    _bug("sse_response", "TargetProcess/signalr-client-py#42", "generator shared",
         sse_response),
]
