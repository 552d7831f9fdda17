"""Construction, properties, element formats (typed and untyped), bad arguments."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from coordkit import (
    CancelledError,
    FIFOQueue,
    InvalidArgumentError,
    PaddingFIFOQueue,
    PriorityQueue,
    QueueStatistics,
    RandomShuffleQueue,
)


class FakeArray:
    """Just enough of a numpy array: ``shape`` and ``tolist()``."""

    def __init__(self, data: Any, shape: tuple[int, ...]) -> None:
        self._data, self.shape = data, shape

    def tolist(self) -> Any:
        return self._data


class FakeDType:
    def __init__(self, name: str) -> None:
        self.name = name


# -- constructors and properties ---------------------------------------------------


def test_constructor_defaults() -> None:
    """Q-API-1, Q-API-3: TensorFlow's argument order and default names."""
    assert FIFOQueue(10).name == "fifo_queue"
    assert RandomShuffleQueue(10, 2).name == "random_shuffle_queue"
    assert PaddingFIFOQueue(10, ["int32"], [(None,)]).name == "padding_fifo_queue"
    assert PriorityQueue(10).name == "priority_queue"
    q = RandomShuffleQueue(10, 2, ["int32", "string"], [(), (2,)], ["a", "b"], 7, "r")
    assert (q.dtypes, q.shapes, q.names, q.name) == (["int32", "string"], [(), (2,)], ["a", "b"], "r")


def test_untyped_properties_are_none() -> None:
    """Q-API-3, Q-UNTYPED-1."""
    for q in (FIFOQueue(1), RandomShuffleQueue(2, 1), PriorityQueue(1)):
        assert (q.dtypes, q.shapes, q.names) == (None, None, None)


def test_dtypes_and_shapes_single_or_list() -> None:
    """Q-API-1, Q-API-3: one dtype or a list; one shape or a list; unknown shapes are None."""
    q = FIFOQueue(10, "int32")
    assert (q.dtypes, q.shapes, q.names) == (["int32"], [None], None)
    assert FIFOQueue(10, ["int32"], shapes=(3, 2)).shapes == [(3, 2)]
    assert FIFOQueue(10, ["int32"], shapes=()).shapes == [()]
    assert FIFOQueue(10, ["int32", "bool"], shapes=[(), [2]]).shapes == [(), (2,)]
    assert FIFOQueue(10, "int32", names="x").names == ["x"]


def test_shapes_must_be_fully_defined() -> None:
    """Q-API-1: only PaddingFIFOQueue takes None dimensions."""
    for make in (
        lambda s: FIFOQueue(10, ["int32"], shapes=s),
        lambda s: RandomShuffleQueue(10, 0, ["int32"], shapes=s),
        lambda s: PriorityQueue(10, ["int32"], shapes=s),
    ):
        with pytest.raises(ValueError, match=r"^All shapes must be fully defined: "):
            make([(None, 2)])


def test_shapes_and_names_must_match_dtypes() -> None:
    """Q-API-1: TensorFlow's messages."""
    with pytest.raises(
        ValueError,
        match=r"^Queue shapes must have the same length as dtypes, "
        r"received len\(shapes\)=1, len\(dtypes\)=2$",
    ):
        FIFOQueue(10, ["int32", "int32"], shapes=[(2,)])
    with pytest.raises(
        ValueError,
        match=r"^List of names must have the same length as the list of dtypes, "
        r"received len\(names\)=2,len\(dtypes\)=1$",
    ):
        FIFOQueue(10, ["int32"], names=["a", "b"])


def test_no_tensorflow_resource_api() -> None:
    """DEV-Q-13: no shared_name, container, queue_ref or from_list."""
    with pytest.raises(TypeError):
        FIFOQueue(10, shared_name="shared")  # type: ignore[call-arg]
    q = FIFOQueue(10)
    for attribute in ("queue_ref", "from_list", "capacity"):
        assert not hasattr(q, attribute)  # Q-API-2: no capacity either


def test_dtype_spellings() -> None:
    """Q-DTYPE-1: names, TensorFlow spellings, dtype-like objects, Python types."""
    q = FIFOQueue(1, ["half", "float", "double", float, bool, object, FakeDType("uint16")])
    assert q.dtypes == ["float16", "float32", "float64", "float32", "bool", "string", "uint16"]

    class int8:  # noqa: N801 - shaped like numpy.int8, a type with __name__
        pass

    assert FIFOQueue(1, int8).dtypes == ["int8"]


@pytest.mark.parametrize("bad", ["complex64", int, str, 3, None, FakeDType("quint8")])
def test_unsupported_dtypes(bad: Any) -> None:
    """Q-ARG-5: TypeError listing the supported names."""
    with pytest.raises(TypeError, match=r"Unsupported dtype .*int32.*string"):
        FIFOQueue(1, [bad])


def test_statistics_is_a_frozen_snapshot() -> None:
    """Q-API-8."""
    q = FIFOQueue(10)
    q.enqueue_many([1, 2])
    stats = q.statistics()
    assert stats == QueueStatistics(
        size=2, closed=False, pending_enqueues=0, pending_dequeues=0, pending_closes=0, held=0
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.size = 3  # type: ignore[misc]
    q.close()
    assert q.statistics().closed


def test_repr_names_class_name_size_and_flag() -> None:
    """Q-API-3: the repr shows the name."""
    q = FIFOQueue(3, name="r")
    q.enqueue(1)
    assert repr(q) == "<FIFOQueue 'r' size=1 closed=False>"


# -- untyped mode ------------------------------------------------------------------


def test_untyped_stores_objects_as_they_are() -> None:
    """Q-UNTYPED-1: same object out, never copied or converted."""
    q = FIFOQueue(10)
    things = [None, [1, [2]], {"k": "v"}, object(), "text", 1.5]
    for thing in things:
        q.enqueue(thing)
    out = [q.dequeue() for _ in things]
    assert all(a is b for a, b in zip(out, things))


def test_untyped_enqueue_many_takes_any_iterable() -> None:
    """Q-UNTYPED-2."""
    q = FIFOQueue(-1)
    q.enqueue_many(range(3))
    q.enqueue_many(x * 10 for x in range(3))
    q.enqueue_many((7, 8))
    assert q.dequeue_many(8) == [0, 1, 2, 0, 10, 20, 7, 8]


def test_untyped_enqueue_many_of_a_non_iterable() -> None:
    """Q-UNTYPED-2, Q-ENQ-5, DEV-Q-3: InvalidArgumentError naming the value."""
    q = FIFOQueue(10)
    with pytest.raises(InvalidArgumentError, match=r"got 5 of type 'int'"):
        q.enqueue_many(5)
    assert q.size() == 0


def test_untyped_batches_are_lists() -> None:
    """Q-UNTYPED-3, DEV-Q-5: no shapes needed for dequeue_many."""
    for q in (FIFOQueue(10), RandomShuffleQueue(10, 0, seed=1)):
        q.enqueue_many(["a", "b", "c"])
        batch = q.dequeue_many(2)
        assert isinstance(batch, list) and len(batch) == 2
        q.close()
        assert isinstance(q.dequeue_up_to(5), list)


def test_shapes_and_names_need_dtypes() -> None:
    """Q-UNTYPED-4."""
    with pytest.raises(ValueError, match="need dtypes"):
        FIFOQueue(10, shapes=[()])
    with pytest.raises(ValueError, match="need dtypes"):
        RandomShuffleQueue(10, 0, names=["a"])
    with pytest.raises(ValueError, match="need types"):
        PriorityQueue(10, shapes=[()])


# -- typed mode: converting values -------------------------------------------------


def test_typed_batches_need_shapes() -> None:
    """Q-DEQ-2 step 2, RSQ-6: even for n == 0 (testEmptyDequeueManyWithNoShape)."""
    q = FIFOQueue(10, ["int32"])
    q.enqueue(1)
    message = (
        r"^FIFOQueue's DequeueMany and DequeueUpTo require the components to have "
        r"specified shapes\.$"
    )
    for call in (lambda: q.dequeue_many(0), lambda: q.dequeue_many(1), lambda: q.dequeue_up_to(1)):
        with pytest.raises(InvalidArgumentError, match=message):
            call()
    assert q.dequeue() == 1
    r = RandomShuffleQueue(10, 0, ["int32"])
    with pytest.raises(InvalidArgumentError, match=r"^RandomShuffleQueue's DequeueMany and DequeueUpTo"):
        r.dequeue_up_to(0)


def test_dict_rules() -> None:
    """Q-API-4: dicts need names, names need dicts, keys must match
    (testEnqueueDictWithoutNames, testEnqueueDequeueMultipleComponent)."""
    plain = FIFOQueue(10, ["int32"])
    with pytest.raises(ValueError, match=r"^Queue must have names to enqueue a dictionary$"):
        plain.enqueue({"a": 1})
    with pytest.raises(ValueError, match=r"^Queue must have names to enqueue a dictionary$"):
        plain.enqueue_many({"a": [1]})
    named = FIFOQueue(10, ["int32", "string"], shapes=[(), ()], names=["i", "s"])
    with pytest.raises(ValueError, match=r"^You must enqueue a dictionary in a Queue with names$"):
        named.enqueue((1, "x"))
    with pytest.raises(
        ValueError,
        match=r"^Keys in dictionary to enqueue do not match names of Queue\.  "
        r"Dictionary: \['i', 't'\],Queue: \['i', 's'\]$",
    ):
        named.enqueue({"i": 1, "t": "x"})
    named.enqueue({"s": "x", "i": 1})
    named.enqueue_many({"i": [2, 3], "s": ["y", "z"]})
    assert named.dequeue() == {"i": 1, "s": b"x"}
    assert named.dequeue_many(2) == {"i": [2, 3], "s": [b"y", b"z"]}


def test_component_count_must_match() -> None:
    """Q-API-4, DEV-Q-9: extra values are an error, not silently dropped."""
    q = FIFOQueue(10, ["int32", "int32"])
    with pytest.raises(
        InvalidArgumentError, match=r"^Wrong number of components in tuple\. Expected 2, got 3$"
    ):
        q.enqueue((1, 2, 3))
    with pytest.raises(InvalidArgumentError, match=r"Expected 2, got 1$"):
        q.enqueue_many(([1, 2],))
    one = FIFOQueue(10, ["int32"])
    with pytest.raises(InvalidArgumentError, match=r"Expected 1, got 2$"):
        one.enqueue([1, 2])  # TensorFlow would enqueue 1 and drop 2
    one.enqueue(([1, 2],))  # a vector component is a 1-tuple
    assert one.dequeue() == [1, 2]


def test_non_list_value_is_one_component() -> None:
    """Q-API-4: a bare value, or an array, is wrapped as a 1-tuple."""
    q = FIFOQueue(10, ["int32"])
    q.enqueue(5)
    q.enqueue(FakeArray([1, 2], (2,)))
    assert [q.dequeue(), q.dequeue()] == [5, [1, 2]]


def test_none_is_not_a_value() -> None:
    """Q-API-4, Q-DTYPE-1: as TensorFlow's conversion, ValueError for None in a typed queue."""
    for dtype in ("int32", "float64", "string"):
        q = FIFOQueue(2, dtypes=[dtype], shapes=[[]])
        with pytest.raises(ValueError, match=r"^None values not supported\.$"):
            q.enqueue(None)
        assert q.size() == 0


def test_wrong_python_type_is_a_type_error() -> None:
    """Q-API-4, Q-DTYPE-1 (testEnqueueWrongType; TF probe Q2)."""
    cases = [
        ("int32", 2.0, r"^Expected int32, but got 2\.0 of type 'float'\.$"),
        ("int64", "7", r"^Expected int64, but got 7 of type 'str'\.$"),
        ("float32", "a", r"^Expected float32, but got a of type 'str'\.$"),
        ("bool", 1, r"^Expected bool, but got 1 of type 'int'\.$"),
        ("string", 3, r"^Expected string, but got 3 of type 'int'\.$"),
        ("float16", b"x", r"^Expected float16, but got b'x' of type 'bytes'\.$"),
    ]
    for dtype, value, message in cases:
        with pytest.raises(TypeError, match=message):
            FIFOQueue(10, [dtype]).enqueue(value)


def test_conversions() -> None:
    """Q-DTYPE-1, Q-API-5: bools count as ints, floats are rounded, strings become bytes."""
    q = FIFOQueue(10, ["int32", "float32", "float16", "float64", "string", "string", "bool"])
    q.enqueue((True, 0.1, 0.1, 0.1, "héllo", bytearray(b"raw"), False))
    i, f32, f16, f64, text, raw, flag = q.dequeue()
    assert (i, type(i)) == (1, int)
    assert f32 == 0.10000000149011612
    assert f16 == 0.0999755859375
    assert f64 == 0.1
    assert (text, raw, flag) == ("héllo".encode(), b"raw", False)
    q.enqueue((1, 3, 1e40, -1e300, b"", b"", True))
    _, f32, f16, f64, *_ = q.dequeue()
    assert (f32, type(f32)) == (3.0, float)
    assert f16 == math.inf and f64 == -1e300


def test_out_of_range_ints_are_rejected() -> None:
    """Q-DTYPE-1, DEV-Q-11: TensorFlow wraps 2**31 to -2**31; coordkit refuses."""
    for dtype, value in (("int32", 2**31), ("int8", -129), ("uint8", -1), ("uint64", 2**64)):
        with pytest.raises(InvalidArgumentError, match=rf"Value {value} is out of range for {dtype}"):
            FIFOQueue(10, [dtype]).enqueue(value)
    q = FIFOQueue(10, ["int8", "uint64"])
    q.enqueue((-128, 2**64 - 1))
    assert q.dequeue() == (-128, 2**64 - 1)


def test_float_arrays_into_int_components_are_rejected() -> None:
    """DEV-Q-11: TensorFlow truncates a numpy float array into an int32 queue."""
    q = FIFOQueue(10, ["int32"])
    with pytest.raises(TypeError, match=r"Expected int32, but got 1\.7"):
        q.enqueue(FakeArray([1.7, -2.5], (2,)))


def test_ragged_values_are_rejected() -> None:
    """Q-API-4 (TF: "Can't convert non-rectangular Python sequence to Tensor.")."""
    q = FIFOQueue(10, ["int32"])
    with pytest.raises(InvalidArgumentError, match=r"^Can't convert non-rectangular Python sequence"):
        q.enqueue(([[1, 2], [3]],))


def test_arrays_and_empty_dimensions() -> None:
    """Q-API-4: arrays are read through tolist() and keep their exact shape; [] fits
    any shape with leading size 0."""
    q = FIFOQueue(10, ["int32"], shapes=[(2,)])
    q.enqueue_many(FakeArray([], (0, 2)))
    q.enqueue_many(([],))
    assert q.size() == 0
    q.enqueue_many(FakeArray([[1, 2], [3, 4]], (2, 2)))
    q.enqueue(FakeArray([5, 6], (2,)))
    q.enqueue([FakeArray([7, 8], (2,))])
    assert q.dequeue_many(4) == [[1, 2], [3, 4], [5, 6], [7, 8]]
    with pytest.raises(InvalidArgumentError, match=r"Expected \[2\], got \[0,3\]"):
        q.enqueue(FakeArray([], (0, 3)))


def test_wrong_shapes() -> None:
    """Q-ENQ-1 (testEnqueueWrongShapeAtRuntime, testEnqueueDequeueManyWrongShape,
    testEnqueueWrongShape; TF probe Q2)."""
    q = FIFOQueue(10, ["int32", "int32"], shapes=[(), (3, 3)])
    with pytest.raises(
        InvalidArgumentError,
        match=r"^Shape mismatch in tuple component 1\. Expected \[3,3\], got \[3,4\]$",
    ):
        q.enqueue((1, [[0] * 4] * 3))
    with pytest.raises(
        InvalidArgumentError,
        match=r"^Shape mismatch in tuple component 1\. Expected \[2,3,3\], got \[2,3,4\]$",
    ):
        q.enqueue_many(([1, 2], [[[0] * 4] * 3] * 2))
    with pytest.raises(InvalidArgumentError, match=r"component 0\. Expected \[\], got \[2\]$"):
        q.enqueue(([1, 2], [[0] * 3] * 3))
    assert q.size() == 0


def test_batch_size_mismatch() -> None:
    """Q-ENQ-1 (testBatchSizeMismatch): kernel wording with and without shapes."""
    no_shapes = FIFOQueue(10, ["int32", "int32", "int32"])
    with pytest.raises(
        InvalidArgumentError,
        match=r"^All input tensors must have the same size in the 0th dimension\. "
        r"Component 2 has 3, and should have 2$",
    ):
        no_shapes.enqueue_many(([1, 2], [3, 4], [5, 6, 7]))
    shaped = FIFOQueue(10, ["int32", "int32"], shapes=[(), ()])
    with pytest.raises(InvalidArgumentError, match=r"component 1\. Expected \[2\], got \[3\]$"):
        shaped.enqueue_many(([1, 2], [5, 6, 7]))


def test_scalar_to_enqueue_many() -> None:
    """Q-ENQ-5, DEV-Q-3: an error at the call, not a crashed process."""
    for q in (FIFOQueue(10, ["int32"]), FIFOQueue(10, ["int32"], shapes=[()])):
        with pytest.raises(InvalidArgumentError, match=r"^Shape \[\] must have rank at least 1"):
            q.enqueue_many(3)
        assert q.size() == 0


def test_validation_comes_first() -> None:
    """Q-ENQ-1: count, then dtypes, then shapes; before waiting, even when closed."""
    q = FIFOQueue(1, ["int32", "int32"], shapes=[(2,), ()])
    q.enqueue(([1, 2], 3))
    # The queue is full: a bad value still fails at once instead of waiting.
    with pytest.raises(TypeError):
        q.enqueue(([1], "x"))  # shape of 0 and dtype of 1 are wrong: dtype first
    with pytest.raises(InvalidArgumentError, match="Wrong number"):
        q.enqueue(([1, "x"],))  # count before dtype
    q.close()
    with pytest.raises(InvalidArgumentError, match="Shape mismatch"):
        q.enqueue(([1], 3))  # closed, but validation wins over "is closed"
    with pytest.raises(CancelledError, match="is closed"):
        q.enqueue(([1, 2], 3))


def test_several_components_come_back_as_a_tuple() -> None:
    """Q-API-5, DEV-Q-12 (testMultiEnqueueAndDequeue, testMultiDequeueMany)."""
    q = FIFOQueue(10, ["int32", "float32"], shapes=[(), (2,)])
    q.enqueue((10, [1.0, 2.0]))
    q.enqueue_many(([20, 30], [[3.0, 4.0], [5.0, 6.0]]))
    assert q.dequeue() == (10, [1.0, 2.0])
    ints, floats = q.dequeue_many(2)
    assert (ints, floats) == ([20, 30], [[3.0, 4.0], [5.0, 6.0]])
    q.close()
    assert q.dequeue_many(0) == ([], [])


def test_one_named_component() -> None:
    """Q-API-5 (testEnqueueDequeueOneComponent)."""
    q = FIFOQueue(10, "float32", shapes=(), names="x")
    q.enqueue({"x": 1})
    q.enqueue_many({"x": [2, 3]})
    assert q.dequeue() == {"x": 1.0}
    assert q.dequeue_many(2) == {"x": [2.0, 3.0]}
    assert q.dequeue_up_to(0) == {"x": []}


def test_high_dimension_round_trip() -> None:
    """Q-API-5 (testHighDimension): rank-4 elements as nested lists."""
    element = [
        [[[i * 64 + j * 16 + k * 4 + m for m in range(4)] for k in range(4)] for j in range(4)]
        for i in range(4)
    ]
    q = FIFOQueue(10, ["int32"], shapes=[(4, 4, 4, 4)])
    q.enqueue_many(([element, element],))
    assert q.dequeue_many(2) == [element, element]


def test_empty_batches_convert() -> None:
    """Q-ENQ-4 (testEnqueueManyEmptyTypeConversion)."""
    q = FIFOQueue(10, ["int32", "float32"], shapes=[(), ()])
    q.enqueue_many(([], []))
    assert q.size() == 0


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        ("int8", [-128, 127]),
        ("int16", [-3, 300]),
        ("int32", [1, -2]),
        ("int64", [2**40, -(2**40)]),
        ("uint8", [0, 255]),
        ("uint16", [1, 65535]),
        ("uint32", [0, 2**32 - 1]),
        ("uint64", [0, 2**64 - 1]),
        ("float16", [0.5, -2.0]),
        ("float32", [0.25, 1e10]),
        ("float64", [0.1, -1e300]),
        ("bool", [True, False]),
        ("string", [b"a", b""]),
    ],
)
def test_dtypes_round_trip(dtype: str, values: list[Any]) -> None:
    """Q-DTYPE-1 (testDtypes): enqueue_many then dequeue_many."""
    q = FIFOQueue(10, [dtype], shapes=[(2,)])
    q.enqueue_many(([values, values],))
    assert q.dequeue_many(2) == [values, values]


# -- bad arguments -----------------------------------------------------------------


@pytest.mark.parametrize("bad", ["3", 2.5, True, None])
def test_capacity_must_be_an_int(bad: Any) -> None:
    """Q-ARG-1: TypeError naming the value."""
    with pytest.raises(TypeError, match=rf"^capacity must be an int, got {bad!r}"):
        FIFOQueue(bad)


def test_capacity_accepts_index_types() -> None:
    """Q-ARG-1: numpy ints have __index__."""

    class NumpyLikeInt:
        def __index__(self) -> int:
            return 2

    q = FIFOQueue(NumpyLikeInt())  # type: ignore[arg-type]
    q.enqueue_many([1, 2])
    with pytest.raises(Exception, match="Timed out"):
        q.enqueue(3, timeout=0)


@pytest.mark.parametrize("bad", ["2", 2.5, True, None])
def test_n_must_be_an_int(bad: Any) -> None:
    """Q-ARG-2."""
    q = FIFOQueue(10)
    with pytest.raises(TypeError, match=rf"^n must be an int, got {bad!r}"):
        q.dequeue_many(bad)
    with pytest.raises(TypeError, match=r"^n must be an int"):
        q.dequeue_up_to(bad)


@pytest.mark.parametrize("bad", [-1, -0.5, float("nan"), -math.inf])
def test_negative_or_nan_timeout_is_invalid(bad: float) -> None:
    """Q-ARG-3: -1 does not mean "for ever" here, and it does not mean "now"."""
    q = FIFOQueue(10)
    q.enqueue(1)
    calls = [
        lambda: q.enqueue(2, timeout=bad),
        lambda: q.enqueue_many([2], timeout=bad),
        lambda: q.dequeue(timeout=bad),
        lambda: q.dequeue_many(1, timeout=bad),
        lambda: q.dequeue_up_to(1, timeout=bad),
        lambda: q.close(timeout=bad),
        lambda: q.close(cancel_pending_enqueues=True, timeout=bad),
    ]
    for call in calls:
        with pytest.raises(InvalidArgumentError, match=r"^timeout must be a non-negative number"):
            call()
    assert (q.size(), q.is_closed()) == (1, False)


@pytest.mark.parametrize("bad", ["1", True, [1]])
def test_timeout_must_be_a_number(bad: Any) -> None:
    """Q-ARG-3."""
    q = FIFOQueue(10)
    with pytest.raises(TypeError, match=r"^timeout must be a number of seconds or None"):
        q.dequeue(timeout=bad)


def test_other_constructor_arguments() -> None:
    """Q-ARG-4."""
    with pytest.raises(TypeError, match="name must be a string"):
        FIFOQueue(1, name=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed must be an int"):
        RandomShuffleQueue(10, 0, seed="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="min_after_dequeue must be an int"):
        RandomShuffleQueue(10, 1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="names must be strings"):
        FIFOQueue(1, ["int32"], names=[1])
    with pytest.raises(ValueError, match="must be >= 0"):
        FIFOQueue(1, ["int32"], shapes=[(-1,)])
    with pytest.raises(TypeError, match="must be ints or None"):
        FIFOQueue(1, ["int32"], shapes=[(1.5,)])
    with pytest.raises(TypeError, match="PaddingFIFOQueue needs dtypes"):
        PaddingFIFOQueue(1, None, [(None,)])


def test_failed_calls_change_nothing() -> None:
    """Q-ARG-6: a call rejected for its arguments leaves size, contents and waiters."""
    q = FIFOQueue(3, ["int32"], shapes=[(2,)])
    q.enqueue_many(([[1, 2], [3, 4]],))
    before = q.statistics()
    bad_calls = [
        lambda: q.enqueue([1, 2]),
        lambda: q.enqueue(([1, 2, 3],)),
        lambda: q.enqueue_many(([[1, 2], [3]],)),
        lambda: q.enqueue_many(([[1, 2], [3, "x"]],)),
        lambda: q.dequeue_many(-1),
        lambda: q.dequeue_many("1"),
        lambda: q.dequeue(timeout=-1),
        lambda: q.close(timeout="soon"),
    ]
    for call in bad_calls:
        with pytest.raises((TypeError, ValueError)):
            call()
        assert q.statistics() == before
    assert q.dequeue_many(2) == [[1, 2], [3, 4]]


@pytest.mark.parametrize("bad", ["no", 1, None])
def test_close_flag_must_be_a_bool(bad):
    """Q-ARG-7, Q-ARG-6: TypeError naming the value; the queue stays open."""
    q = FIFOQueue(2)
    with pytest.raises(TypeError, match=rf"^cancel_pending_enqueues must be a bool, got {bad!r}"):
        q.close(cancel_pending_enqueues=bad)
    assert not q.is_closed()
