"""What counts as one location, and what race detection does not touch (RACE-3)."""

from __future__ import annotations

import gc
import sys
import threading
import weakref

import pytest

import coordkit
from coordkit.engine.accesses import access_sites

COUNT = 0


def _races(program, **options):
    options.setdefault("granularity", "sync")
    return coordkit.explore(program, seed=1, max_schedules=3, **options).races


def _in_two_threads(first, second):
    def program():
        ts = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    return program


def test_different_keys_of_one_dict_are_different_locations():
    # RACE-3: a key of one dict is a location
    shared: dict = {}

    def a():
        shared["a"] = 1

    def b():
        shared["b"] = 2

    def also_a():
        shared["a"] = 3

    assert _races(_in_two_threads(a, b)) == []
    races = _races(_in_two_threads(a, also_a))
    assert [r.location for r in races] == ["dict item ['a']"]


def test_a_whole_container_method_touches_every_key():
    # RACE-3: append/setdefault/get on a container touch all of it
    shared: dict = {}

    def writer():
        shared["k"] = 1

    def whole():
        shared.update(other=0)

    races = _races(_in_two_threads(writer, whole))
    assert races and {r.location for r in races} <= {"dict item ['k']", "dict (whole)"}


def test_a_method_given_a_key_touches_that_key():
    # RACE-3: get/setdefault/pop/add name the key they touch
    shared: dict = {}

    def get_a():
        shared.get("a")

    def store_b():
        shared["b"] = 1

    def setdefault_b():
        shared.setdefault("b", [])

    assert _races(_in_two_threads(get_a, store_b)) == []
    assert {r.location for r in _races(_in_two_threads(setdefault_b, store_b))} == {"dict item ['b']"}


def test_globals_and_closure_variables_are_locations():
    # RACE-3: a global by name in its module; a closure variable by name
    def bump_global():
        global COUNT
        COUNT += 1

    assert {r.location for r in _races(_in_two_threads(bump_global, bump_global))} == {"global COUNT"}

    def program():
        n = 0

        def bump():
            nonlocal n
            n += 1

        _in_two_threads(bump, bump)()

    assert {r.location for r in _races(program)} == {"closure variable n"}


def test_a_module_attribute_is_its_global():
    # RACE-3: ``module.name`` and ``name`` inside the module are one location
    this = sys.modules[__name__]

    def via_module():
        this.COUNT = 5

    def via_global():
        global COUNT
        COUNT = 6

    assert {r.location for r in _races(_in_two_threads(via_module, via_global))} == {"global COUNT"}


def test_properties_are_not_run_by_the_detector():
    # RACE-3: operands are read without running the program's code
    calls = []

    class Lazy:
        @property
        def inner(self):
            calls.append(1)
            return self

        value = 0

    obj = Lazy()

    def touch():
        obj.inner.value = 1

    _races(_in_two_threads(touch, touch))
    assert len(calls) == 2 * 3  # two threads, three schedules: the detector added no call


def test_race_detection_keeps_no_object_alive():
    # RACE-3: a weak reference to an object the program dropped dies in the run
    refs = []

    class Thing:
        value = 0

    def program():
        thing = Thing()
        refs.append(weakref.ref(thing))

        def touch():
            thing.value = 1

        _in_two_threads(touch, touch)()

    coordkit.explore(program, seed=1, max_schedules=2, granularity="sync")
    gc.collect()
    assert refs and all(r() is None for r in refs)


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="bytecode of 3.10-3.13")
def test_access_sites_name_the_operands_of_augmented_assignments():
    # RACE-3: ``self.count += 1`` reads and writes the attribute of ``self``
    def bump(self, d, k):
        self.count += 1
        d[k] = 1
        return k in d

    sites = list(access_sites(bump.__code__).values())
    kinds = {(s.kind, s.access, s.name, s.owner) for s in sites}
    assert ("attr", "read", "count", ("fast", "self")) in kinds
    assert ("attr", "write", "count", ("fast", "self")) in kinds
    assert ("item", "write", "[]", ("fast", "d")) in kinds
    assert ("item", "read", "in", ("fast", "d")) in kinds


def test_a_thread_locals_attributes_are_each_threads_own():
    # RACE-3: no race between two threads' own values
    def program():
        local = threading.local()

        def work(i):
            local.x = i
            assert local.x == i

        ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    result = coordkit.explore(program, seed=1, max_schedules=20, races="fail")
    assert result.failure is None and result.races == []


def test_an_access_behind_extended_arg_is_seen():
    # RACE-3: an instruction whose argument needs EXTENDED_ARG (the 300th attribute name
    # of a function) is seen where the tracer sees it (before 3.12, at the prefix)
    names = [f"a{i}" for i in range(300)]
    source = "def bump(o):\n" + "".join(f"    o.{n} = 0\n" for n in names[:-1])
    source += "    o.a299 = o.a299 + 1\n"
    namespace: dict = {}
    exec(compile(source, "extended_arg_program.py", "exec"), namespace)

    class Box:
        a299 = 0

    box = Box()
    races = _races(_in_two_threads(lambda: namespace["bump"](box), lambda: namespace["bump"](box)))
    assert "attribute Box.a299" in {r.location for r in races}


def test_a_method_the_program_replaces_is_looked_up_again():
    # RACE-10: a call is named by what it calls when it is made.  The tracer remembers the
    # lookups of builtin classes and of coordkit's own only: a program's class may change
    # while it runs (here from Python code, which touches nothing, to heapq's C code).
    import heapq

    class Heap:
        def push(self, items, item):
            return None

    def program():
        heap, items = Heap(), []
        heap.push(items, 0)  # looked up while ``push`` is the Python method
        Heap.push = staticmethod(heapq.heappush)
        _in_two_threads(lambda: heap.push(items, 1), lambda: heap.push(items, 2))()

    races = _races(program)
    assert any(r.location.startswith("list") for r in races), races


def test_what_the_detector_knew_of_an_object_dies_with_it():
    # RACE-14: an object's attributes are kept under its ``__dict__``'s id; when the object
    # dies, that shadow goes too (a later object's ``__dict__`` may get the same id)
    from coordkit.engine.accesses import Site
    from coordkit.engine.points import WRITE
    from coordkit.engine.races import RaceDetector

    class Thing:
        pass

    detector = RaceDetector()
    detector.spawn(None, 0)
    thing = Thing()
    site = Site("attr", WRITE, "x", None, None, 1, 0)
    detector.access(0, id(vars(thing)), "x", thing, WRITE, "T0", site, ())
    detector.access(0, id(thing), "<any>", thing, WRITE, "T0", site, ())  # (a guessed C call)
    assert len(detector._shadow) == 2
    del thing
    assert not detector._shadow and not detector._alive


def test_a_truth_test_of_a_value_made_plain_there_is_no_site():
    # RACE-15: the truth of a comparison's result touches nothing, so it is not traced; a
    # local's truth still asks the object (a container's size: SCHED-58)
    def f(a, b):
        if a == b:
            return 1
        if a:
            return 2
        return 3

    operands = [s for s in access_sites(f.__code__).values() if s.kind == "operand"]
    assert len(operands) == 1 and operands[0].owner == ("fast", "a"), operands
