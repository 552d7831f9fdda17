"""Input pipelines and MonitoredRun against specs/pipeline.md.

Each test names the rules it checks. Most pipelines run under the controlled
scheduler (`coordkit.replay` for one fixed schedule, `coordkit.explore` for
many): a pipeline that hangs shows up there as a Deadlock, and grace periods
cost virtual time only. A few run on real threads; they block only on calls
that the pipeline itself ends (the input runs out), never on sleeps.

The `TF_*` constants are the facts recorded from TensorFlow 2.21 in the team's
probe log `tf_probe/out/input_probe.txt` (lines I1..I6), copied verbatim.
"""

from __future__ import annotations

import logging
import threading

import pytest
from pipeline_support import controlled, drain, explored

import coordkit
from coordkit import (
    Coordinator,
    FIFOQueue,
    InvalidArgumentError,
    MonitoredRun,
    OutOfRangeError,
    PaddingFIFOQueue,
    RandomShuffleQueue,
    batch,
    input_producer,
    limit_epochs,
    queue_runner_scope,
    shuffle_batch,
    start_queue_runners,
)
from coordkit.pipeline import Op

CAP = 10.0  # seconds; a bound for waits on real threads that should end at once
FILES = ["f0", "f1", "f2", "f3", "f4"]

# -- TensorFlow's recorded outcomes (input_probe.txt) -------------------------------------
TF_I1_LIMIT_2 = "Reached limit of 2"
TF_I1_NUM_EPOCHS_0 = "num_epochs must be > 0 not 0."
TF_I1_NUM_EPOCHS_NEG = "num_epochs must be > 0 not -1."
# input_producer(FILES, num_epochs=2, shuffle=False) -> batch(..., 3)
TF_I2_ALLOW_SMALLER = [["f0", "f1", "f2"], ["f3", "f4", "f0"], ["f1", "f2", "f3"], ["f4"]]
TF_I2_NOT_ALLOWED = [["f0", "f1", "f2"], ["f3", "f4", "f0"], ["f1", "f2", "f3"]]
TF_I2_RUNNERS = [
    ("input_producer", ["input_producer/input_producer_EnqueueMany"]),
    ("batch/fifo_queue", ["batch/fifo_queue_enqueue"]),
]
TF_I2_TWO_THREADS_OPS = ("batch/fifo_queue", ["batch/fifo_queue_enqueue", "batch/fifo_queue_enqueue"])
TF_I2_TWO_THREADS_ITEMS = ["f0", "f0", "f1", "f1", "f2", "f2", "f3", "f3", "f4", "f4"]
TF_I3_CAPACITY = "capacity 10 must be bigger than min_after_dequeue 10."
TF_I4_THREADS = [
    "QueueRunnerThread-input_producer-input_producer/input_producer_EnqueueMany",
    "QueueRunnerThread-input_producer-close_on_stop",
]
TF_I4_ITEMS = ["a", "b", "c"]


@pytest.fixture(autouse=True)
def fresh_registry():
    """Every test builds its pipelines in a fresh registry (RUNNER-12)."""
    with queue_runner_scope() as registry:
        yield registry


def monitored(op):
    """TF's loop: `while not should_stop(): run(op)` inside a monitored run."""
    out = []
    with MonitoredRun() as run:
        while not run.should_stop():
            out.append(op())
    return out


# ==========================================================================================
# PIPE-7: what a tensor is
# ==========================================================================================


def test_ops_are_named_callables_and_producers_return_queues():
    """PIPE-7, DEV-PIPE-1: no graph, no session: helpers return Ops (named zero-argument callables)
    or, for input_producer, the queue itself."""
    q = input_producer(FILES, shuffle=False)
    assert isinstance(q, FIFOQueue)
    get_batch = batch(q.dequeue, 2)
    assert isinstance(get_batch, Op) and callable(get_batch)
    assert get_batch.name == "batch/fifo_queue_DequeueMany"
    assert isinstance(get_batch.queue, FIFOQueue) and get_batch.queue.name == "batch/fifo_queue"
    assert "batch/fifo_queue_DequeueMany" in repr(get_batch)
    assert batch(q.dequeue, 2, allow_smaller_final_batch=True, name="b2").name == "b2/fifo_queue_DequeueUpTo"


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: limit_epochs([1, 2], 1), "limit_epochs(tensor)"),
        (lambda: batch(42, 3), "batch(tensors)"),
        (lambda: batch([lambda: 1, "x"], 3), "batch(tensors)[1]"),
        (lambda: batch({"a": 5}, 3), "batch(tensors)['a']"),
        (lambda: batch({1: lambda: 1}, 3), "keys of a dict of tensors"),
        (lambda: shuffle_batch("abc", 3, 10, 2), "shuffle_batch(tensors)"),
    ],
)
def test_a_tensor_must_be_callable(call, fragment):
    """PIPE-7: a value where a tensor is expected is a TypeError naming the argument and the value."""
    with pytest.raises(TypeError) as info:
        call()
    assert fragment in str(info.value)


def test_no_tensors_at_all_is_an_error():
    """PIPE-7: an empty list of tensors is a ValueError naming it."""
    with pytest.raises(ValueError, match=r"batch\(tensors\) must hold at least one tensor; got \[\]"):
        batch([], 3)


# ==========================================================================================
# PIPE-1: limit_epochs
# ==========================================================================================


def test_limit_epochs_conformance_i1():
    """PIPE-1 [TF I1]: two runs, then OutOfRangeError 'Reached limit of 2' (the tensor is not run)."""
    calls = []
    op = limit_epochs(lambda: calls.append(1) or len(calls), 2)
    assert [op(), op()] == [1, 2]
    for _ in range(2):
        with pytest.raises(OutOfRangeError) as info:
            op()
        assert str(info.value) == TF_I1_LIMIT_2
    assert len(calls) == 2
    assert isinstance(op, Op) and op.name == "limit_epochs"


@pytest.mark.parametrize("num_epochs, message", [(0, TF_I1_NUM_EPOCHS_0), (-1, TF_I1_NUM_EPOCHS_NEG)])
def test_limit_epochs_rejects_non_positive_conformance_i1(num_epochs, message):
    """PIPE-1 [TF I1]: num_epochs <= 0 is TensorFlow's ValueError, word for word."""
    with pytest.raises(ValueError) as info:
        limit_epochs(lambda: 1, num_epochs)
    assert str(info.value) == message


def test_limit_epochs_none_returns_the_tensor_itself_conformance_i1():
    """PIPE-1 [TF I1]: num_epochs=None returns the input unchanged."""

    def tensor():
        return 1

    assert limit_epochs(tensor) is tensor
    assert limit_epochs(tensor, None) is tensor


@pytest.mark.parametrize("bad", [1.5, "2", True])
def test_limit_epochs_num_epochs_must_be_an_int(bad):
    """PIPE-1: a non-int num_epochs is a TypeError naming the value."""
    with pytest.raises(TypeError, match=r"limit_epochs\(num_epochs\) must be an int or None"):
        limit_epochs(lambda: 1, bad)


def test_limit_epochs_counts_before_running_the_tensor():
    """PIPE-1: a run that fails inside the tensor still uses up its epoch."""

    def failing():
        raise KeyError("boom")

    op = limit_epochs(failing, 1)
    with pytest.raises(KeyError):
        op()
    with pytest.raises(OutOfRangeError, match="Reached limit of 1"):
        op()


def test_limit_epochs_never_runs_more_than_the_limit_under_any_schedule():
    """PIPE-1: four threads racing for five epochs: exactly five runs, whatever the schedule."""

    def scenario():
        runs = []
        op = limit_epochs(lambda: runs.append(1), 5)
        denied = []

        def worker():
            for _ in range(3):
                try:
                    op()
                except OutOfRangeError:
                    denied.append(1)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(runs) == 5 and len(denied) == 7

    explored(scenario, max_schedules=40)


# ==========================================================================================
# PIPE-2: input_producer
# ==========================================================================================


def test_input_producer_builds_one_runner_conformance_i2_i4(fresh_registry):
    """PIPE-2 [TF I4]: one runner, one op named <name>/<name>_EnqueueMany; TF's thread names."""
    q = input_producer(TF_I4_ITEMS, num_epochs=1, shuffle=False)
    (qr,) = fresh_registry.get()
    assert qr.queue is q and q.name == "input_producer"
    assert [op.name for op in qr.enqueue_ops] == ["input_producer/input_producer_EnqueueMany"]
    coord = Coordinator()
    threads = start_queue_runners(coord)
    assert [t.name for t in threads] == TF_I4_THREADS
    assert all(t.daemon for t in threads)
    # [TF I4] the main loop gets a, b, c, then OutOfRangeError; then join is clean.
    assert drain(lambda: q.dequeue(timeout=CAP)) == TF_I4_ITEMS
    coord.request_stop()
    coord.join(stop_grace_period_secs=CAP)
    assert not any(t.is_alive() for t in threads)


def test_input_producer_ends_with_out_of_range_after_the_epochs():
    """PIPE-2, PIPE-1: epochs in order without shuffle; then the runner closes the queue."""

    def consume():
        q = input_producer(range(4), num_epochs=3, shuffle=False, capacity=2)
        with MonitoredRun():
            values = drain(q.dequeue)
        return values, q.is_closed()

    got, closed = controlled(consume)
    assert got == [0, 1, 2, 3] * 3  # an epoch larger than the capacity streams in (Q-ENQ-3)
    assert closed


def test_input_producer_shuffles_each_epoch_reproducibly_with_a_seed():
    """PIPE-2: shuffle=True permutes every epoch; the same seed gives the same epochs."""

    def consume(seed):
        def run():
            q = input_producer(range(8), num_epochs=3, seed=seed)
            with MonitoredRun():
                return drain(q.dequeue)

        return run

    first = controlled(consume(11))
    assert len(first) == 24
    for epoch in range(3):
        assert sorted(first[8 * epoch : 8 * epoch + 8]) == list(range(8))
    assert controlled(consume(11)) == first
    assert first != list(range(8)) * 3


def test_input_producer_takes_a_tensor_called_once_per_epoch():
    """PIPE-2: a callable input is evaluated once per epoch."""
    calls = []

    def source():
        calls.append(1)
        return [len(calls)] * 2

    def run():
        q = input_producer(source, num_epochs=3, shuffle=False)
        with MonitoredRun():
            return drain(q.dequeue)

    assert controlled(run) == [1, 1, 2, 2, 3, 3]


def test_input_producer_rejects_an_empty_input_conformance_i3():
    """PIPE-2, DEV-PIPE-2 [TF I3]: an empty list is a ValueError at build time, as in
    string_input_producer; an empty epoch from a callable fails the runner at run time."""
    with pytest.raises(ValueError, match=r"input_producer requires a non-empty input_tensor; got \[\]"):
        input_producer([])

    def run():
        q = input_producer(lambda: [], shuffle=False)
        with MonitoredRun():
            q.dequeue()  # unblocked by the stop: the runner's error closes the queue

    with pytest.raises(InvalidArgumentError, match="requires a non-empty input_tensor"):
        controlled(run)


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"input_tensor": "abc"}, TypeError, "input_producer(input_tensor)"),
        ({"input_tensor": 5}, TypeError, "input_producer(input_tensor)"),
        ({"input_tensor": [1], "capacity": 0}, ValueError, "input_producer(capacity) must be >= 1; got 0"),
        ({"input_tensor": [1], "capacity": 2.0}, TypeError, "input_producer(capacity) must be an int"),
        ({"input_tensor": [1], "seed": "s"}, TypeError, "input_producer(seed) must be an int"),
        ({"input_tensor": [1], "shuffle": 1}, TypeError, "input_producer(shuffle) must be a bool"),
        ({"input_tensor": [1], "name": ""}, TypeError, "input_producer(name) must be a non-empty string"),
        ({"input_tensor": [1], "num_epochs": 0}, ValueError, "num_epochs must be > 0 not 0."),
    ],
)
def test_input_producer_argument_errors(kwargs, error, fragment, fresh_registry):
    """PIPE-2: bad arguments raise before anything is built, naming the argument and the value."""
    with pytest.raises(error) as info:
        input_producer(**kwargs)
    assert fragment in str(info.value)
    assert fresh_registry.get() == []


# ==========================================================================================
# PIPE-3: batch
# ==========================================================================================


def _files_batches(allow):
    q = input_producer(FILES, num_epochs=2, shuffle=False)
    get_batch = batch(q.dequeue, 3, allow_smaller_final_batch=allow)
    return monitored(get_batch), get_batch.queue


@pytest.mark.parametrize("allow, expected", [(True, TF_I2_ALLOW_SMALLER), (False, TF_I2_NOT_ALLOWED)])
def test_batch_final_partial_batch_conformance_i2(allow, expected):
    """PIPE-3, MON-4 [TF I2]: 10 items in batches of 3 give 3 batches, or 4 with a final batch of 1
    when allowed; the end of input ends the loop (code after it in the block does not run)."""

    def run():
        after_loop = []
        batches = []
        q = input_producer(FILES, num_epochs=2, shuffle=False)
        get_batch = batch(q.dequeue, 3, allow_smaller_final_batch=allow)
        with MonitoredRun() as run:
            while not run.should_stop():
                batches.append(get_batch())
            after_loop.append(True)
        return batches, after_loop, get_batch.queue.size()

    batches, after_loop, left = controlled(run)
    assert batches == expected
    assert after_loop == []  # [TF I2] "code after loop ran: False"
    assert left == (0 if allow else 1)  # the final element is put back, not delivered (Q-DEQ-4)


def test_batch_final_partial_batch_on_real_threads():
    """PIPE-3 [TF I2]: the same outcome with real threads (the input's end ends every wait)."""
    batches = []
    q = input_producer(FILES, num_epochs=2, shuffle=False)
    get_batch = batch(q.dequeue, 3, allow_smaller_final_batch=True)
    with MonitoredRun(grace_period_secs=CAP) as run:
        while not run.should_stop():
            batches.append(get_batch())
    assert batches == TF_I2_ALLOW_SMALLER
    assert not any(t.is_alive() for t in run.threads)
    assert q.is_closed() and get_batch.queue.is_closed()  # DEV-PIPE-1: a pipeline serves one run


def test_batch_runners_and_thread_names_conformance_i2(fresh_registry):
    """PIPE-3 [TF I2]: input_producer's runner, then one batch runner with one op per thread."""
    q = input_producer(FILES, num_epochs=2, shuffle=False)
    batch(q.dequeue, 3)
    runners = [(qr.name, [op.name for op in qr.enqueue_ops]) for qr in fresh_registry.get()]
    assert runners == TF_I2_RUNNERS


def test_batch_num_threads_repeats_the_op_conformance_i2(fresh_registry):
    """PIPE-3, RUNNER-11 [TF I2]: num_threads=2 repeats the same op (equal thread names); every item
    still arrives exactly once, whatever the schedule."""
    q = input_producer(FILES, num_epochs=2, shuffle=False)
    batch(q.dequeue, 3, num_threads=2)
    qr = fresh_registry.get()[1]
    assert (qr.name, [op.name for op in qr.enqueue_ops]) == TF_I2_TWO_THREADS_OPS
    assert qr.enqueue_ops[0] is qr.enqueue_ops[1]
    names = [t.name for t in qr.create_threads(coord=Coordinator())]
    assert names[0] == names[1] == "QueueRunnerThread-batch/fifo_queue-batch/fifo_queue_enqueue"

    def scenario():
        q = input_producer(FILES, num_epochs=2, shuffle=False)
        get_batch = batch(q.dequeue, 3, num_threads=2, allow_smaller_final_batch=True)
        with MonitoredRun():
            items = [x for b in drain(get_batch) for x in b]
        assert sorted(items) == TF_I2_TWO_THREADS_ITEMS

    explored(scenario)


def test_end_of_input_travels_down_the_chain():
    """PIPE-3: limit runs out -> producer queue closed -> batch runner closes its queue ->
    the consumer's dequeue_many raises OutOfRangeError, the leftovers put back (Q-DEQ-4)."""

    def scenario():
        q = input_producer(range(7), num_epochs=1, shuffle=False, capacity=3)
        get_batch = batch(q.dequeue, 3, capacity=2)
        with MonitoredRun() as run:
            got = [get_batch(), get_batch()]
            with pytest.raises(OutOfRangeError) as info:
                get_batch()
            assert "is closed and has insufficient elements" in str(info.value)
            assert q.is_closed() and get_batch.queue.is_closed()
            assert get_batch.queue.size() == 1 and not run.should_stop()
        assert got == [[0, 1, 2], [3, 4, 5]]

    explored(scenario)


def test_batch_of_a_list_and_a_dict_of_tensors():
    """PIPE-3: each tensor is called once per element; batches come back one column per tensor."""

    def run():
        q = input_producer(range(4), num_epochs=1, shuffle=False)
        both = batch([q.dequeue, lambda: "x"], 2)
        q2 = input_producer(range(4), num_epochs=1, shuffle=False, name="ip2")
        named = batch({"n": q2.dequeue, "s": lambda: "y"}, 2, name="named")
        with MonitoredRun():
            return drain(both), drain(named)

    lists, dicts = controlled(run)
    assert lists == [[[0, 1], ["x", "x"]], [[2, 3], ["x", "x"]]]
    assert dicts == [{"n": [0, 1], "s": ["y", "y"]}, {"n": [2, 3], "s": ["y", "y"]}]


def test_typed_batch_converts_and_checks_shapes():
    """PIPE-3: shapes and dtypes make the queue typed (values converted, shapes checked)."""

    def run():
        q = input_producer([[1, 2], [3, 4], [5, 6]], num_epochs=1, shuffle=False)
        pairs = batch([q.dequeue, lambda: 7], 3, dtypes=["float32", "int64"], shapes=[[2], []])
        with MonitoredRun():
            return drain(pairs), pairs.queue

    got, queue = controlled(run)
    assert got == [[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [7, 7, 7]]]
    assert queue.dtypes == ["float32", "int64"] and queue.shapes == [(2,), ()]

    def wrong_shape():
        bad = batch(lambda: [1, 2, 3], 1, dtypes="int32", shapes=[2])
        with MonitoredRun():
            bad()

    with pytest.raises(InvalidArgumentError, match="Shape mismatch in tuple component 0"):
        controlled(wrong_shape)


def test_single_typed_tensor_and_named_typed_tensors():
    """PIPE-3: one typed tensor gives one column; a typed dict gives a dict of columns."""

    def run():
        one = batch(lambda: [1, 2], 2, dtypes="int32", shapes=[2], name="one")
        named = batch({"a": lambda: 1.5}, 2, dtypes={"a": "float64"}, shapes={"a": []}, name="named")
        with MonitoredRun() as monitored_run:
            result = one(), named()
            monitored_run.request_stop()
        return result

    one, named = controlled(run)
    assert one == [[1, 2], [1, 2]]
    assert named == {"a": [1.5, 1.5]}


def test_dynamic_pad_pads_each_batch_to_its_longest_element():
    """PIPE-3, PAD-3: dynamic_pad uses a PaddingFIFOQueue; each batch is padded to its own maximum."""

    def run():
        q = input_producer([[1], [2, 2, 2], [3, 3], [4]], num_epochs=1, shuffle=False)
        get_batch = batch(
            q.dequeue, 2, dynamic_pad=True, dtypes="int32", shapes=[None], allow_smaller_final_batch=True
        )
        with MonitoredRun():
            return drain(get_batch), get_batch.queue

    got, queue = controlled(run)
    assert isinstance(queue, PaddingFIFOQueue) and queue.name == "batch/padding_fifo_queue"
    assert got == [[[1, 0, 0], [2, 2, 2]], [[3, 3], [4, 0]]]


def test_dynamic_pad_needs_shapes_conformance_i3():
    """PIPE-3, DEV-PIPE-3 [TF I3]: TF cannot batch a tensor of unknown rank; coordkit cannot infer
    shapes from callables at all, so dynamic_pad needs them (ValueError naming shapes)."""
    with pytest.raises(ValueError, match=r"batch\(dynamic_pad=True\) needs shapes .*got shapes=None"):
        batch(lambda: [1], 2, dynamic_pad=True)


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"batch_size": 0}, ValueError, "batch(batch_size) must be >= 1; got 0"),
        ({"batch_size": 2.0}, TypeError, "batch(batch_size) must be an int; got 2.0"),
        ({"batch_size": 2, "num_threads": 0}, ValueError, "batch(num_threads) must be >= 1; got 0"),
        ({"batch_size": 2, "capacity": -1}, ValueError, "batch(capacity) must be >= 1; got -1"),
        ({"batch_size": 2, "shapes": [[1]]}, ValueError, "shapes and dtypes go together"),
        ({"batch_size": 2, "dtypes": "int32"}, ValueError, "shapes and dtypes go together"),
        ({"batch_size": 2, "allow_smaller_final_batch": 1}, TypeError, "batch(allow_smaller_final_batch)"),
        ({"batch_size": 2, "dynamic_pad": "yes"}, TypeError, "batch(dynamic_pad) must be a bool"),
        ({"batch_size": 2, "name": 3}, TypeError, "batch(name) must be a non-empty string; got 3"),
    ],
)
def test_batch_argument_errors(kwargs, error, fragment, fresh_registry):
    """PIPE-3, DEV-PIPE-3: sizes below 1 and half-typed queues are refused up front, naming the
    argument and the value; nothing is registered."""
    with pytest.raises(error) as info:
        batch(lambda: 1, **kwargs)
    assert fragment in str(info.value)
    assert fresh_registry.get() == []


def test_structured_shapes_must_match_the_tensors():
    """PIPE-3: shapes/dtypes follow the structure of the tensors."""
    with pytest.raises(ValueError, match=r"batch\(dtypes\) must be a list of 2 entries"):
        batch([lambda: 1, lambda: 2], 2, dtypes=["int32"], shapes=[[], []])
    with pytest.raises(ValueError, match=r"batch\(dtypes\) must be a dict with the keys \['a'\]"):
        batch({"a": lambda: 1}, 2, dtypes=["int32"], shapes={"a": []})


def test_default_names_are_not_made_unique(fresh_registry):
    """DEV-PIPE-7: two pipelines with default names get equal queue names; `name=` tells them apart."""
    first = batch(lambda: 1, 2)
    second = batch(lambda: 1, 2)
    third = batch(lambda: 1, 2, name="other")
    assert first.queue.name == second.queue.name == "batch/fifo_queue"
    assert third.queue.name == "other/fifo_queue"


# ==========================================================================================
# PIPE-4: shuffle_batch
# ==========================================================================================


def test_shuffle_batch_checks_capacity_first_conformance_i3(fresh_registry):
    """PIPE-4 [TF I3]: capacity <= min_after_dequeue is TensorFlow's ValueError, naming both values,
    checked before any other argument."""
    with pytest.raises(ValueError) as info:
        shuffle_batch(None, 0, capacity=10, min_after_dequeue=10)
    assert str(info.value) == TF_I3_CAPACITY
    with pytest.raises(ValueError, match=r"capacity 3 must be bigger than min_after_dequeue 7\."):
        shuffle_batch(lambda: 1, 2, 3, 7)
    assert fresh_registry.get() == []


@pytest.mark.parametrize(
    "args, kwargs, error, fragment",
    [
        ((2, 10, -1), {}, ValueError, "shuffle_batch(min_after_dequeue) must be >= 0; got -1"),
        ((2, 10.0, 1), {}, TypeError, "shuffle_batch(capacity) must be an int"),
        ((2, 10, 1), {"seed": 1.5}, TypeError, "shuffle_batch(seed) must be an int"),
        ((0, 10, 1), {}, ValueError, "shuffle_batch(batch_size) must be >= 1; got 0"),
        ((2, 10, 1), {"num_threads": 0}, ValueError, "shuffle_batch(num_threads) must be >= 1; got 0"),
    ],
)
def test_shuffle_batch_argument_errors(args, kwargs, error, fragment):
    """PIPE-4, DEV-PIPE-3: other bad arguments name the argument and the value."""
    with pytest.raises(error) as info:
        shuffle_batch(lambda: 1, *args, **kwargs)
    assert fragment in str(info.value)


def test_shuffle_batch_keeps_min_after_dequeue_then_drains(fresh_registry):
    """PIPE-4, RSQ-3: a RandomShuffleQueue named <name>/random_shuffle_queue; while open each batch
    leaves at least min_after_dequeue behind; once the input ends everything comes out, once."""

    def scenario():
        q = input_producer(range(30), num_epochs=1, shuffle=False)
        get_batch = shuffle_batch(q.dequeue, 4, capacity=12, min_after_dequeue=6, num_threads=3, seed=5)
        rsq = get_batch.queue
        assert isinstance(rsq, RandomShuffleQueue) and rsq.name == "shuffle_batch/random_shuffle_queue"
        items = []
        with MonitoredRun():
            while True:
                try:
                    items.extend(get_batch())
                except OutOfRangeError:
                    break
                # Only enqueues happen between the dequeue and this check.
                assert rsq.is_closed() or rsq.size() >= 6
        # 30 = 7 batches of 4, and 2 that stay in the closed queue (never delivered).
        assert len(items) == 28 and rsq.size() == 2
        assert sorted(items + rsq.dequeue_up_to(2)) == list(range(30))

    explored(scenario)


def test_shuffle_batch_same_seed_same_batches():
    """PIPE-4, PIPE-8: the same seed and the same schedule give the same batches."""

    def run(seed):
        def body():
            q = input_producer(range(40), num_epochs=1, shuffle=False)
            get_batch = shuffle_batch(q.dequeue, 8, capacity=16, min_after_dequeue=8, seed=seed)
            with MonitoredRun():
                return drain(get_batch)

        return body

    first = controlled(run(3))
    assert controlled(run(3)) == first
    assert sorted(x for b in first for x in b) == list(range(40))
    assert first != [list(range(i, i + 8)) for i in range(0, 40, 8)]


def test_shuffle_batch_allows_a_smaller_final_batch():
    """PIPE-4, PIPE-3: allow_smaller_final_batch delivers the leftovers (dequeue_up_to, Q-DEQ-5)."""

    def run():
        q = input_producer(range(10), num_epochs=1, shuffle=False)
        get_batch = shuffle_batch(q.dequeue, 4, 8, 2, seed=1, allow_smaller_final_batch=True)
        with MonitoredRun():
            return drain(get_batch)

    batches = controlled(run)
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sorted(x for b in batches for x in b) == list(range(10))


# ==========================================================================================
# MON: the monitored run (PIPE-5, PIPE-6)
# ==========================================================================================


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"grace_period_secs": -1}, ValueError, "(grace_period_secs) must be >= 0 or None; got -1"),
        ({"grace_period_secs": float("nan")}, ValueError, "MonitoredRun(grace_period_secs)"),
        ({"grace_period_secs": "5"}, TypeError, "MonitoredRun(grace_period_secs) must be a number"),
        ({"ignore_live_threads": 1}, TypeError, "MonitoredRun(ignore_live_threads) must be a bool; got 1"),
        ({"collection": 3}, TypeError, "MonitoredRun(collection) must be a string; got 3"),
    ],
)
def test_monitored_run_argument_errors(kwargs, error, fragment):
    """MON-1: bad arguments raise at construction, naming the argument and the value."""
    with pytest.raises(error) as info:
        MonitoredRun(**kwargs)
    assert fragment in str(info.value)


def test_monitored_run_with_no_runners_starts_nothing(caplog):
    """MON-2, PIPE-5: an empty collection starts nothing and logs no warning (MonitoredSession)."""
    with caplog.at_level(logging.WARNING, logger="coordkit"), MonitoredRun() as run:
        assert run.threads == []
        assert not run.should_stop()
    assert caplog.records == []
    assert run.should_stop()


def test_monitored_run_starts_registered_runners_as_daemons(fresh_registry):
    """MON-2, PIPE-6: a fresh Coordinator (OutOfRangeError is clean); runner threads daemon, started,
    registered with it; only the chosen collection of the current registry."""
    fresh_registry.add(coordkit.QueueRunner(FIFOQueue(1, name="other"), [lambda: None]), "elsewhere")
    q = input_producer(["a"], num_epochs=1, shuffle=False)
    with MonitoredRun(grace_period_secs=CAP) as run:
        assert run.coord.clean_stop_exception_types == (OutOfRangeError,)
        assert [t.name for t in run.threads] == TF_I4_THREADS
        assert all(t.daemon for t in run.threads)
        registered = run.coord.statistics().registered_threads
        assert list(registered) == run.threads
        assert q.dequeue(timeout=CAP) == "a"
    assert not any(t.is_alive() for t in run.threads)


def test_a_runner_that_refuses_to_start_leaves_nothing_running(fresh_registry):
    """MON-2, RUNNER-OLD-2: if a runner refuses (its earlier threads were created and still count),
    entering raises its RuntimeError and the threads already started are stopped and joined."""
    before = set(threading.enumerate())
    q = input_producer(range(3), shuffle=False)  # starts fine; would run for ever
    stale = coordkit.QueueRunner(FIFOQueue(1, name="stale"), [lambda: None])
    stale.create_threads()  # never started: its count blocks every later start
    fresh_registry.add(stale)
    run = MonitoredRun(grace_period_secs=CAP)
    with pytest.raises(RuntimeError, match="Threads are already running"), run:
        pass
    assert run.should_stop()
    assert set(threading.enumerate()) <= before and q.is_closed()


def test_monitored_run_is_entered_once_and_coord_needs_entering():
    """MON-2: the coordinator exists only once entered; a second entry is a RuntimeError."""
    run = MonitoredRun()
    with pytest.raises(RuntimeError, match="only once the run is entered"):
        run.should_stop()
    with run:
        pass
    with pytest.raises(RuntimeError, match="can be entered only once"), run:
        pass


@pytest.mark.parametrize("end", [OutOfRangeError("done"), StopIteration()])
def test_end_of_input_in_the_body_is_a_clean_stop_conformance_i5_i6(end):
    """MON-4, PIPE-5, PIPE-6 [TF I5, I6]: OutOfRangeError and StopIteration leave the body, are
    swallowed, and the run is stopped (should_stop True)."""
    reached = []
    with MonitoredRun() as run:
        raise end
        reached.append(True)  # never runs
    assert run.should_stop() and reached == []


@pytest.mark.parametrize("error", [ValueError("user bug"), KeyError("k")])
def test_other_body_errors_are_re_raised_conformance_i5_i6(error):
    """MON-6, PIPE-5, PIPE-6 [TF I5, I6]: any other exception of the body comes out unchanged."""
    with pytest.raises(type(error)) as info, MonitoredRun() as run:
        raise error
    assert info.value is error
    assert run.should_stop()


def test_a_runner_error_stops_the_loop_and_is_raised_at_exit():
    """MON-3, MON-5, MON-6, RUNNER-4: a runner's error requests the stop, should_stop() turns True,
    the blocked consumer is released, and the exit raises that error."""

    def failing_tensor():
        raise KeyError("bad record")

    def run():
        get_batch = batch(failing_tensor, 2)
        with MonitoredRun() as monitored_run:
            while not monitored_run.should_stop():
                get_batch()

    with pytest.raises(KeyError, match="bad record"):
        controlled(run)


def test_an_earlier_thread_error_wins_over_the_body_error():
    """MON-6, COORD-4: a thread's error recorded before the body fails is the one raised; the
    body's error is its __context__."""
    thread_error = ValueError("from a thread")
    body_error = TypeError("from the body")
    with pytest.raises(ValueError) as info, MonitoredRun() as run:
        run.request_stop(thread_error)
        raise body_error
    assert info.value is thread_error
    assert info.value.__context__ is body_error


def test_a_body_error_after_a_clean_stop_is_still_raised():
    """MON-7, DEV-PIPE-4: Supervisor drops a body error that follows a clean stop (the first stop
    wins); MonitoredRun re-raises it."""
    with pytest.raises(ValueError, match="after the stop"), MonitoredRun() as run:
        run.request_stop()
        raise ValueError("after the stop")


def _straggler(run, release):
    t = threading.Thread(target=release.wait, args=(CAP,), name="straggler", daemon=True)
    run.coord.register_thread(t)
    t.start()
    return t


def test_threads_that_outlive_the_grace_period():
    """MON-5, MON-6: after the grace period, live threads raise RuntimeError (Supervisor's default),
    are only logged with ignore_live_threads (MonitoredSession's), and never hide a body error."""
    release = threading.Event()
    try:
        stragglers = pytest.raises(RuntimeError, match="threads still running: straggler")
        with stragglers, MonitoredRun(grace_period_secs=0) as run:
            _straggler(run, release)
        with MonitoredRun(grace_period_secs=0, ignore_live_threads=True) as run:
            _straggler(run, release)
        with pytest.raises(ZeroDivisionError), MonitoredRun(grace_period_secs=0) as run:
            _straggler(run, release)
            run.request_stop()
            1 / 0  # noqa: B018
    finally:
        release.set()


def test_grace_period_is_virtual_under_the_controlled_scheduler():
    """MON-5: the exit waits the grace period for a thread that ignores the stop (virtual time)."""

    def run():
        release = threading.Event()
        with MonitoredRun(grace_period_secs=30, ignore_live_threads=True) as monitored_run:
            t = threading.Thread(target=release.wait, daemon=True)
            monitored_run.coord.register_thread(t)
            t.start()
            start = coordkit.sync.monotonic()
        waited = coordkit.sync.monotonic() - start
        release.set()
        return waited

    assert controlled(run) == pytest.approx(30)


def test_keyboard_interrupt_in_the_body_stops_without_waiting():
    """MON-8, DEV-PIPE-5: KeyboardInterrupt requests the stop and leaves at once (virtual time 0,
    although a thread ignores the stop and the grace period is 120 s)."""

    def run():
        release = threading.Event()
        start = None
        try:
            with MonitoredRun() as monitored_run:
                t = threading.Thread(target=release.wait, daemon=True)
                monitored_run.coord.register_thread(t)
                t.start()
                start = coordkit.sync.monotonic()
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            waited = coordkit.sync.monotonic() - start
        stopped = monitored_run.should_stop()
        release.set()
        return waited, stopped

    assert controlled(run) == (0, True)


def test_user_threads_reporting_out_of_range_stop_cleanly():
    """MON-2, DEV-PIPE-6: an OutOfRangeError a user thread reports is a clean stop (Supervisor's
    coordinator), not re-raised at exit as MonitoredSession's coordinator would."""
    with MonitoredRun() as run:
        t = threading.Thread(target=lambda: run.request_stop(OutOfRangeError("input done")))
        run.coord.register_thread(t)
        t.start()
        assert run.coord.wait_for_stop(CAP)
    assert run.coord.statistics().exc_info is None


def test_pipeline_rules_hold_under_many_schedules():
    """PIPE-3, PIPE-4, MON-4, MON-5: a two-stage pipeline with several threads delivers every element
    exactly once and stops cleanly, under each explored schedule (PCT)."""

    def scenario():
        q = input_producer(range(12), num_epochs=2, seed=2)
        get_batch = shuffle_batch(
            q.dequeue, 5, capacity=8, min_after_dequeue=3, num_threads=3, seed=4,
            allow_smaller_final_batch=True,
        )
        items = []
        with MonitoredRun() as run:
            while not run.should_stop():
                items.extend(get_batch())
        assert sorted(items) == sorted(list(range(12)) * 2)

    explored(scenario, max_schedules=30)
