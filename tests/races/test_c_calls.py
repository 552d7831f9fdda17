"""Calls into C code are accesses (RACE-10, RACE-11)."""

from __future__ import annotations

import array
import bisect
import copy
import heapq
import json
import threading
from collections import deque

import pytest

import coordkit
from tests.sched.programs import needs_switching


def _races(program, **options):
    options.setdefault("granularity", "sync")
    return coordkit.explore(program, seed=1, max_schedules=3, **options).races


def _threads(*targets):
    def program():
        ts = [threading.Thread(target=t) for t in targets]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    return program


def _locations(races):
    return {race.location for race in races}


def test_heapq_functions_write_the_list_they_are_given():
    # RACE-10: heappush and heappop change their list; bisect reads it
    heap: list = []
    program = _threads(lambda: heapq.heappush(heap, 1), lambda: bisect.bisect(heap, 0))
    races = _races(program)
    assert [(r.first.access, r.second.access) for r in races] in (
        [("write", "read")], [("read", "write")])


@pytest.mark.parametrize("reader", [json.dumps, copy.copy], ids=["json.dumps", "copy.copy"])
def test_stdlib_functions_in_the_table_read_what_they_are_given(reader):
    # RACE-10: the table names these stdlib Python functions as reads through
    shared: dict = {"k": 0}

    def write():
        shared["k"] = 1

    races = _races(_threads(lambda: reader(shared), write))
    assert races and all({r.first.access, r.second.access} == {"read", "write"} for r in races)


def test_a_containers_truth_reads_its_size():
    # RACE-10: ``if d:`` reads the deque another thread's popleft changes
    d = deque([1])

    def pop():
        if d:
            d.popleft()

    races = _races(_threads(pop, pop))
    assert {(r.first.access, r.second.access) for r in races} >= {("write", "read")}


def test_two_threads_advancing_one_generator_race():
    # RACE-10: next() changes a generator's state
    def numbers():
        yield from range(10)

    gen = numbers()
    races = _races(_threads(lambda: next(gen), lambda: next(gen)))
    assert len(races) == 1 and "generator" in races[0].location


def test_an_unknown_c_method_writes_its_receiver():
    # RACE-11: array.append is not in the table: a write of the array
    arr = array.array("i")
    races = _races(_threads(lambda: arr.append(1), lambda: arr.append(2)))
    assert [(r.first.access, r.second.access) for r in races] == [("write", "write")]


def test_an_unknown_c_method_under_a_lock_does_not_race():
    # RACE-11 with RACE-2: the lock orders the guessed writes
    def program():
        arr = array.array("i")
        lock = threading.Lock()

        def add():
            with lock:
                arr.append(1)

        _threads(add, add)()

    assert _races(program) == []


def test_objects_each_thread_keeps_to_itself_do_not_race():
    # RACE-10, RACE-11: a list or array only one thread touches is not shared
    def work():
        heap: list = []
        heapq.heappush(heap, 1)
        arr = array.array("i")
        arr.append(len(heap))
        if heap:
            heapq.heappop(heap)

    assert _races(_threads(work, work)) == []


@needs_switching
def test_a_deque_emptied_between_check_and_popleft_is_found_at_defaults():
    # RACE-10, RACE-5: the truth test and the popleft become scheduling points
    def program():
        d = deque([1])

        def pop():
            if d:
                d.popleft()

        _threads(pop, pop)()

    result = coordkit.explore(program, seed=1, max_schedules=50)
    assert result.failure is not None and "IndexError" in str(result.failure)
