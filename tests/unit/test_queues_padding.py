"""PaddingFIFOQueue: partial shapes, padding to the batch maximum, mixed wording.

Scenarios from TensorFlow's padding_fifo_queue_test.py are named after their tests.
"""

from __future__ import annotations

import pytest
from test_queues_support import Call, wait_pending

from coordkit import (
    CancelledError,
    InvalidArgumentError,
    OutOfRangeError,
    PaddingFIFOQueue,
)


def three_kinds() -> PaddingFIFOQueue:
    """The queue of TF probe P1: strings, int rows, bools."""
    return PaddingFIFOQueue(10, ["string", "int32", "bool"], [(None,), (1, None), (None,)], name="p1")


@pytest.mark.parametrize("shapes", [None, 3, [], [None], [3, (None,)]])
def test_constructor_needs_a_list_of_shapes(shapes: object) -> None:
    """PAD-1 (testConstructPaddingFIFOQueueWithNoShape, testUnknownRank)."""
    message = r"^When providing partial shapes, a list of shapes must be provided\.$"
    with pytest.raises(ValueError, match=message):
        PaddingFIFOQueue(10, ["int32"], shapes)


def test_constructor_counts_must_match() -> None:
    """PAD-1."""
    with pytest.raises(
        ValueError,
        match=r"^Shapes must be provided for all components, but received 2 dtypes and 1 shapes\.$",
    ):
        PaddingFIFOQueue(10, ["int32", "int32"], [(None,)])
    q = PaddingFIFOQueue(10, "int32", [(None, 2)], names="x")
    assert (q.dtypes, q.shapes, q.names) == (["int32"], [(None, 2)], ["x"])


def test_enqueue_checks_rank_and_fixed_dimensions() -> None:
    """PAD-2 (testEnqueueWrongPartiallyKnownShapeAtRuntime,
    testEnqueueDequeueManyWrongPartiallyKnownShape; TF probe P1)."""
    q = three_kinds()
    with pytest.raises(
        InvalidArgumentError,
        match=r"^Shape mismatch in tuple component 1\. Expected \[1,\?\], got \[2,3\]$",
    ):
        q.enqueue((["a"], [[1, 2, 3], [4, 5, 6]], [True]))
    with pytest.raises(InvalidArgumentError, match=r"component 0\. Expected \[\?\], got \[1,1\]$"):
        q.enqueue(([["a"]], [[1]], [True]))
    r = PaddingFIFOQueue(10, ["int32", "int32"], [(None,), (None, 3)])
    with pytest.raises(
        InvalidArgumentError, match=r"component 1\. Expected \[2,\?,3\], got \[2,3,4\]$"
    ):
        r.enqueue_many(([[1], [2]], [[[0] * 4] * 3] * 2))
    assert q.size() == r.size() == 0


def test_batches_are_padded_to_the_batch_maximum() -> None:
    """PAD-3: TF probe P1 exactly (testMultiDequeueManyWithPartiallyKnownShapesAndVariableSizeInput)."""
    q = three_kinds()
    q.enqueue((["a"], [[1]], [True]))
    q.enqueue((["ab", "c", "d"], [[1, 2]], [True, True]))
    q.enqueue(([], [[]], []))
    assert q.dequeue_many(3) == (
        [[b"a", b"", b""], [b"ab", b"c", b"d"], [b"", b"", b""]],
        [[[1, 0]], [[1, 2]], [[0, 0]]],
        [[True, False], [True, True], [False, False]],
    )
    q.enqueue(([], [[]], []))
    assert q.dequeue_many(1) == ([[]], [[[]]], [[]])  # probe P1: all-empty element


def test_padding_per_batch_and_float_fill() -> None:
    """PAD-3: the maximum is per batch; floats pad with 0.0; fills are fresh lists."""
    q = PaddingFIFOQueue(10, ["float32"], [(None, None)])
    for element in ([[1.0]], [[2.0, 3.0]], [[4.0], [5.0]]):
        q.enqueue((element,))
    first = q.dequeue_many(2)
    assert first == [[[1.0, 0.0]], [[2.0, 3.0]]]
    assert q.dequeue_many(1) == [[[4.0], [5.0]]]
    first[0][0][1] = 99.0  # padding rows are not shared between elements
    q.enqueue(([[1.0]],))
    q.enqueue(([[1.0, 2.0], [3.0, 4.0]],))
    padded = q.dequeue_many(2)
    assert padded == [[[1.0, 0.0], [0.0, 0.0]], [[1.0, 2.0], [3.0, 4.0]]]
    assert padded[0][1] is not padded[0][0]


def test_single_dequeue_is_not_padded() -> None:
    """PAD-4."""
    q = three_kinds()
    q.enqueue((["ab", "c"], [[1, 2, 3]], []))
    assert q.dequeue() == ([b"ab", b"c"], [[1, 2, 3]], [])


def test_dequeue_many_zero() -> None:
    """PAD-5 (testEmptyDequeueManyWithDynamicShape, testEmptyDequeueUpToWithDynamicShape)."""
    q = three_kinds()
    assert q.dequeue_many(0) == ([], [], [])
    q.close()
    assert q.dequeue_up_to(0) == ([], [], [])


def test_any_rank_is_padded() -> None:
    """PAD-6, DEV-Q-6: TensorFlow fails rank-5 batches and loses them (probe P1)."""
    q = PaddingFIFOQueue(10, ["int32"], [(None, 1, None, 1, None)])
    q.enqueue(([[[[[1]]]]],))  # shape [1,1,1,1,1]
    q.enqueue(([[[[[2, 3]], [[4, 5]]]]],))  # shape [1,1,2,1,2]
    assert q.dequeue_many(2) == [
        [[[[[1, 0]], [[0, 0]]]]],
        [[[[[2, 3]], [[4, 5]]]]],
    ]


def test_mixed_wording() -> None:
    """PAD-7 (TF probe X7): enqueue and single dequeue say FIFOQueue, batches say
    PaddingFIFOQueue."""
    q = PaddingFIFOQueue(10, ["int32"], [(None,)], name="x7")
    q.enqueue(([1],))
    q.close()
    with pytest.raises(CancelledError, match=r"^FIFOQueue 'x7' is closed\.$"):
        q.enqueue(([1],))
    with pytest.raises(
        OutOfRangeError,
        match=r"^PaddingFIFOQueue 'x7' is closed and has insufficient elements "
        r"\(requested 2, current size 1\)$",
    ):
        q.dequeue_many(2)
    assert q.dequeue() == [1]
    with pytest.raises(OutOfRangeError, match=r"^FIFOQueue 'x7' is closed and has insufficient"):
        q.dequeue()


def test_dequeue_up_to_after_close_pads_the_remainder() -> None:
    """PAD-7, Q-DEQ-5: TF probe P2 returned [[1, 2, 3], [4, 0, 0]]
    (testDequeueUpToFromClosedQueueReturnsRemainder)."""
    q = PaddingFIFOQueue(10, ["int32"], [(None,)])
    q.enqueue(([1, 2, 3],))
    q.enqueue(([4],))
    q.close()
    assert q.dequeue_up_to(5) == [[1, 2, 3], [4, 0, 0]]


def test_partial_batch_put_back_and_padded_later() -> None:
    """PAD-7, Q-DEQ-4 (testClosedBlockingDequeueManyRestoresPartialBatch)."""
    q = PaddingFIFOQueue(10, ["int32"], [(None,)])
    waiting = Call(q.dequeue_many, 4)
    wait_pending(q, dequeues=1)
    for row in ([1], [2, 2], [3, 3, 3]):
        q.enqueue((row,))
    assert q.statistics().held == 3
    q.close()
    waiting.raised(OutOfRangeError, "(requested 1, current size 0)")
    assert q.dequeue_up_to(4) == [[1, 0, 0], [2, 2, 0], [3, 3, 3]]


def test_named_components_pad() -> None:
    """PAD-3, Q-API-5 (testMultiDequeueManyWithPartiallyKnownShapes with names)."""
    q = PaddingFIFOQueue(10, ["int32", "string"], [(None,), ()], names=["v", "s"])
    q.enqueue_many({"v": [[1], [2]], "s": ["a", "b"]})
    q.enqueue({"v": [3, 4], "s": "c"})
    assert q.dequeue_many(3) == {"v": [[1, 0], [2, 0], [3, 4]], "s": [b"a", b"b", b"c"]}
