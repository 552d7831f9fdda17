"""Memory labels (``Recorder.memory``, SCHED-30): while a label stands, its object's id
names no other object, whether or not the object can be weakly referenced."""

import gc
from types import SimpleNamespace

from coordkit.engine.record import Recorder


class _Slotted:
    __slots__ = ("a",)


class _Plain:
    pass


def test_an_object_that_cannot_be_weakly_referenced_is_held_for_the_run():
    recorder = Recorder(rows=False, footprints=True)
    task = SimpleNamespace(step=None)
    held = [[], {}, _Slotted(), iter([])]
    for obj in held:
        recorder.memory(task, id(obj), obj, "f", "read")
    assert [recorder._memory[id(obj)] for obj in held] == ["mem#0", "mem#1", "mem#2", "mem#3"]
    assert all(kept is obj for kept, obj in zip(recorder._owners, held))


def test_an_object_weakly_referenced_loses_its_label_when_it_goes():
    recorder = Recorder(rows=False, footprints=True)
    obj = _Plain()
    key = id(obj)
    recorder.memory(SimpleNamespace(step=None), key, obj, "f", "read")
    assert recorder._memory[key] == "mem#0"
    del obj
    gc.collect()
    assert key not in recorder._memory
