"""The rest of TensorFlow's input helpers against specs/pipeline.md (PIPE-9 .. PIPE-15).

`string_input_producer`, `range_input_producer`, `slice_input_producer`, `batch_join`,
`shuffle_batch_join`, `enqueue_many=True`, and the structure of a batch. Each test names the
rules it checks.

Most pipelines run under the controlled scheduler (`coordkit.replay` for one fixed schedule,
`coordkit.explore` for many): a pipeline that hangs shows up there as a Deadlock. A few run on
real threads; they block only on calls that the pipeline itself ends (the input runs out), never
on sleeps.

The `TF_*` constants are TensorFlow 2.21's outcomes, copied from the conformance record
(`tests/conformance/tf_outcomes.json`, written by `record_tf.py`); the bracketed name is the
scenario that records them. Those scenarios also run in `tests/conformance`; the tests here check
the same facts directly and the rules TensorFlow's record cannot show (rounds, schedules, errors).
"""

from __future__ import annotations

import itertools

import pipeline_support
import pytest
from pipeline_support import controlled, drain

import coordkit
from coordkit import (
    Coordinator,
    FIFOQueue,
    InvalidArgumentError,
    MonitoredRun,
    OutOfRangeError,
    PaddingFIFOQueue,
    RandomShuffleQueue,
    queue_runner_scope,
    start_queue_runners,
)
from coordkit.pipeline import (
    Op,
    batch,
    batch_join,
    range_input_producer,
    shuffle_batch,
    shuffle_batch_join,
    slice_input_producer,
    string_input_producer,
)

CAP = 10.0  # seconds; a bound for waits on real threads that should end at once

# -- TensorFlow 2.21's outcomes (tests/conformance/tf_outcomes.json) -----------------------
# [TF pipe_string_producer_no_shuffle], [TF pipe_range_producer_no_shuffle]
TF_PRODUCER_RUNNERS = [("input_producer", ["input_producer/input_producer_EnqueueMany"])]
TF_PRODUCER_THREADS = [
    "QueueRunnerThread-input_producer-input_producer/input_producer_EnqueueMany",
    "QueueRunnerThread-input_producer-close_on_stop",
]
# [TF pipe_string_producer_null_at_run_time]
TF_NULL_AT_RUN_TIME = "assertion failed: [string_input_producer requires a non-null input tensor]"
# TensorFlow's build-time messages (tf.compat.v1.train, 2.21)
TF_NULL_STRINGS = "string_input_producer requires a non-null input tensor"
TF_NOT_A_STRING = "Expected string, but got 1 of type 'int'."
TF_NO_SLICE_TENSOR = "Expected at least one tensor in slice_input_producer()"
# [TF pipe_slice_producer_no_shuffle]
TF_SLICE_RUNNERS = [
    ("input_producer/input_producer", ["input_producer/input_producer/input_producer_EnqueueMany"])
]
TF_SLICE_OUTPUT_NAMES = ["input_producer/GatherV2", "input_producer/GatherV2_1"]
TF_SLICE_ROWS = [[b"Alpha", 2], [b"Beta", 3], [b"Delta", 5], [b"Gamma", 7]]
# [TF pipe_batch_one_element_list]: string_input_producer(f0..f4, 2 epochs) -> batch([t], 3)
TF_ONE_ELEMENT_LIST = [[b"f0", b"f1", b"f2"], [b"f3", b"f4", b"f0"], [b"f1", b"f2", b"f3"], [b"f4"]]
# [TF pipe_batch_enqueue_many]: range(10) in batches of 4, re-batched by 3
TF_ENQUEUE_MANY = [[0, 1, 2], [3, 4, 5], [6, 7]]
TF_ENQUEUE_MANY_OP = "batch/fifo_queue_EnqueueMany"
# [TF pipe_batch_rebatches_a_batch]: range(12) -> batch([n, "string"], 2) -> batch(pre, 5, enqueue_many)
TF_REBATCHED = [
    [[0, 1, 2, 3, 4], [b"string"] * 5],
    [[5, 6, 7, 8, 9], [b"string"] * 5],
]
# [TF pipe_batch_single_key_dict]
TF_ONE_KEY_DICT = [{"a": [0, 1]}, {"a": [2, 3]}]
# [TF pipe_batch_join_two_lists]
TF_JOIN_RUNNER = (
    "batch_join/fifo_queue", ["batch_join/fifo_queue_enqueue", "batch_join/fifo_queue_enqueue_1"]
)
TF_JOIN_THREADS = [
    "QueueRunnerThread-batch_join/fifo_queue-batch_join/fifo_queue_enqueue",
    "QueueRunnerThread-batch_join/fifo_queue-batch_join/fifo_queue_enqueue_1",
    "QueueRunnerThread-batch_join/fifo_queue-close_on_stop",
]
# [TF pipe_batch_join_enqueue_many]
TF_JOIN_MANY_OPS = ["batch_join/fifo_queue_EnqueueMany", "batch_join/fifo_queue_EnqueueMany_1"]
# [TF pipe_shuffle_batch_join_two_lists]
TF_SHUFFLE_JOIN_RUNNER = (
    "shuffle_batch_join/random_shuffle_queue",
    ["shuffle_batch_join/random_shuffle_queue_enqueue", "shuffle_batch_join/random_shuffle_queue_enqueue_1"],
)
# shuffle_batch's check, which shuffle_batch_join now makes too (DEV-PIPE-9)
CAPACITY_5_5 = "capacity 5 must be bigger than min_after_dequeue 5."
SIP = "string_input_producer"


@pytest.fixture(autouse=True)
def fresh_registry():
    """Every test builds its pipelines in a fresh registry (RUNNER-12)."""
    with queue_runner_scope() as registry:
        yield registry


def explored(fn, max_schedules=40, **options):
    """Run `fn` (which asserts) under 40 schedules unless told otherwise."""
    return pipeline_support.explored(fn, max_schedules, **options)


def run_all(op):
    """Start the registered runners in a MonitoredRun and drain `op`."""
    with MonitoredRun():
        return drain(op)


def runners(registry):
    return [(qr.name, [op.name for op in qr.enqueue_ops]) for qr in registry.get()]


# ==========================================================================================
# PIPE-9: string_input_producer
# ==========================================================================================


def test_string_input_producer_names_and_epochs_conformance(fresh_registry):
    """PIPE-9, PIPE-2 [TF pipe_string_producer_no_shuffle]: TensorFlow's queue, op and thread names;
    the epochs in order without shuffling; then OutOfRangeError."""
    q = string_input_producer([b"to", b"be", b"or"], num_epochs=2, shuffle=False)
    assert isinstance(q, FIFOQueue) and q.name == "input_producer"
    assert runners(fresh_registry) == TF_PRODUCER_RUNNERS
    coord = Coordinator()
    threads = start_queue_runners(coord)
    assert [t.name for t in threads] == TF_PRODUCER_THREADS
    assert drain(lambda: q.dequeue(timeout=CAP)) == [b"to", b"be", b"or"] * 2
    coord.request_stop()
    coord.join(stop_grace_period_secs=CAP)


def test_string_input_producer_delivers_strings_as_given():
    """PIPE-9, DEV-PIPE-10: str stays str and bytes stay bytes (TensorFlow would give bytes)."""

    def run():
        q = string_input_producer(["a.txt", b"b.txt"], num_epochs=1, shuffle=False)
        return run_all(q.dequeue)

    got = controlled(run)
    assert got == ["a.txt", b"b.txt"]
    assert [type(x) for x in got] == [str, bytes]


def test_string_input_producer_shuffles_within_epochs_evenly():
    """PIPE-9, PIPE-2, DEV-PIPE-11 (after TF's StringInputProducerTest.testShuffle): each epoch is a
    permutation of the strings, and over 600 epochs each of the 6 orders comes up 100 +- 40 times
    (real threads: the runner ends when the epochs run out)."""
    q = string_input_producer(["a", "b", "c"], num_epochs=600, shuffle=True, seed=271828)
    counts = dict.fromkeys(("".join(p) for p in itertools.permutations("abc")), 0)
    with MonitoredRun(grace_period_secs=CAP):
        for _ in range(600):
            key = "".join(q.dequeue_many(3, timeout=CAP))
            assert key in counts
            counts[key] += 1
        with pytest.raises(OutOfRangeError):
            q.dequeue(timeout=CAP)
    assert all(60 < n < 140 for n in counts.values()), counts


def test_string_input_producer_same_seed_same_epochs():
    """PIPE-9, DEV-PIPE-11: one seed gives one sequence of epochs, run after run."""

    def run(seed):
        return lambda: run_all(string_input_producer(list("abcdef"), num_epochs=4, seed=seed).dequeue)

    first = controlled(run(5))
    assert controlled(run(5)) == first
    assert controlled(run(6)) != first
    assert [sorted(first[i : i + 6]) for i in range(0, 24, 6)] == [list("abcdef")] * 4


def test_string_input_producer_empty_at_run_time_conformance():
    """PIPE-9 [TF pipe_string_producer_null_at_run_time]: a tensor returning no strings fails the
    runner with TensorFlow's assertion; the queue closes, the consumer's dequeue gets
    OutOfRangeError, and the assertion comes out of the run."""
    seen = []

    def run():
        q = string_input_producer(lambda: [])
        with MonitoredRun():
            with pytest.raises(OutOfRangeError):
                q.dequeue()
            seen.append(q.is_closed())

    with pytest.raises(InvalidArgumentError) as info:
        controlled(run)
    assert str(info.value) == TF_NULL_AT_RUN_TIME
    assert seen == [True]


def test_string_input_producer_checks_a_tensors_strings_at_run_time():
    """PIPE-9: a tensor returning something other than strings fails the runner, naming the value."""

    def run():
        q = string_input_producer(lambda: ["ok", 1], shuffle=False)
        with MonitoredRun():
            q.dequeue()

    with pytest.raises(TypeError, match=r"Expected string, but got 1 of type 'int'\."):
        controlled(run)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"string_tensor": []}, ValueError, f"{TF_NULL_STRINGS}; got string_tensor=[]"),
        ({"string_tensor": ["a", 1]}, TypeError, f"{SIP}(string_tensor): {TF_NOT_A_STRING}"),
        ({"string_tensor": "abc"}, TypeError, f"{SIP}(string_tensor) must be a list of strings"),
        ({"string_tensor": 7}, TypeError, f"{SIP}(string_tensor) must be a list of strings"),
        ({"string_tensor": ["a"], "capacity": 0}, ValueError, f"{SIP}(capacity) must be >= 1; got 0"),
        ({"string_tensor": ["a"], "shuffle": None}, TypeError, f"{SIP}(shuffle) must be a bool"),
        ({"string_tensor": ["a"], "seed": 1.5}, TypeError, f"{SIP}(seed) must be an int"),
        ({"string_tensor": ["a"], "name": ""}, TypeError, f"{SIP}(name) must be a non-empty"),
        ({"string_tensor": ["a"], "num_epochs": 0}, ValueError, "num_epochs must be > 0 not 0."),
    ],
)
def test_string_input_producer_argument_errors(kwargs, error, message, fresh_registry):
    """PIPE-9: TensorFlow's messages, with the argument and value; nothing is registered."""
    with pytest.raises(error) as info:
        string_input_producer(**kwargs)
    assert str(info.value).startswith(message)
    assert fresh_registry.get() == []


# ==========================================================================================
# PIPE-10: range_input_producer
# ==========================================================================================


def test_range_input_producer_conformance(fresh_registry):
    """PIPE-10 [TF pipe_range_producer_no_shuffle]: 0..limit-1 per epoch, TF's names."""

    def run():
        q = range_input_producer(5, num_epochs=3, shuffle=False)
        assert runners(coordkit.get_queue_runner_registry()) == TF_PRODUCER_RUNNERS
        return run_all(q.dequeue)

    assert controlled(run) == list(range(5)) * 3


def test_range_input_producer_shuffles_each_epoch():
    """PIPE-10, DEV-PIPE-11: each epoch a permutation of 0..limit-1, not all in order."""

    def run():
        return run_all(range_input_producer(6, num_epochs=5, seed=314159).dequeue)

    got = controlled(run)
    epochs = [got[i : i + 6] for i in range(0, 30, 6)]
    assert all(sorted(e) == list(range(6)) for e in epochs)
    assert any(e != list(range(6)) for e in epochs)


@pytest.mark.parametrize(
    "limit, error, message",
    [
        (0, ValueError, "range_input_producer(limit) must be >= 1; got 0"),
        (-3, ValueError, "range_input_producer(limit) must be >= 1; got -3"),
        (2.0, TypeError, "range_input_producer(limit) must be an int; got 2.0"),
        (True, TypeError, "range_input_producer(limit) must be an int; got True"),
    ],
)
def test_range_input_producer_needs_a_positive_int_limit(limit, error, message, fresh_registry):
    """PIPE-10, DEV-PIPE-2: TF accepts an empty range (and then spins without num_epochs)."""
    with pytest.raises(error) as info:
        range_input_producer(limit)
    assert str(info.value).startswith(message)
    assert fresh_registry.get() == []


# ==========================================================================================
# PIPE-11: slice_input_producer
# ==========================================================================================

SOURCE = [[b"Alpha", b"Beta", b"Delta", b"Gamma"], [2, 3, 5, 7]]


def test_slice_input_producer_conformance(fresh_registry):
    """PIPE-11 [TF pipe_slice_producer_no_shuffle]: an index queue named <name>/input_producer,
    outputs named <name>/GatherV2[_i]; calling both outputs gives one row; rows in order for each
    epoch; then OutOfRangeError."""
    outputs = slice_input_producer(SOURCE, num_epochs=3, shuffle=False)
    assert runners(fresh_registry) == TF_SLICE_RUNNERS
    assert [o.name for o in outputs] == TF_SLICE_OUTPUT_NAMES
    assert all(isinstance(o, Op) and o.queue.name == "input_producer/input_producer" for o in outputs)
    named = slice_input_producer(SOURCE, name="sip")
    assert [o.name for o in named] == ["sip/GatherV2", "sip/GatherV2_1"]
    assert runners(fresh_registry)[1] == (
        "sip/input_producer", ["sip/input_producer/input_producer_EnqueueMany"]
    )


def test_slice_outputs_share_one_dequeue_per_round():
    """PIPE-11: each output once (in any order) is one row; an output called again starts the next
    row; when the epochs run out the next dequeuing call raises OutOfRangeError."""

    def run():
        name, number = slice_input_producer(SOURCE, num_epochs=2, shuffle=False)
        with MonitoredRun():
            rows = [[name(), number()], [name(), number()]]
            rows.append(list(reversed([number(), name()])))  # the other order: still one row
            rows.append([name(), name()])  # the second call takes the next row (Alpha, epoch 2)
            rows.append([number()])  # number has not been called in this round: Alpha's 2
            rest = drain(lambda: [name(), number()])
        return rows, rest

    rows, rest = controlled(run)
    assert rows == [[b"Alpha", 2], [b"Beta", 3], [b"Delta", 5], [b"Gamma", b"Alpha"], [2]]
    assert rest == [[b"Beta", 3], [b"Delta", 5], [b"Gamma", 7]]


def test_slice_rows_stay_whole_under_any_schedule():
    """PIPE-11, PIPE-13: `batch` over the outputs with three enqueue threads, each with its own rounds:
    every row arrives whole, once per epoch, under every explored schedule."""

    def scenario():
        outputs = slice_input_producer(SOURCE, num_epochs=2, seed=3)
        get_batch = batch(outputs, 3, num_threads=3, allow_smaller_final_batch=True)
        with MonitoredRun():
            batches = drain(get_batch)
        rows = [list(row) for names, numbers in batches for row in zip(names, numbers)]
        assert sorted(rows) == sorted(TF_SLICE_ROWS * 2)

    explored(scenario, max_schedules=30)


def test_slice_input_producer_shuffles_whole_rows():
    """PIPE-11, DEV-PIPE-11 [TF pipe_slice_producer_shuffle_keeps_rows]: each epoch is a
    permutation of whole rows."""

    def run():
        name, number = slice_input_producer(SOURCE, num_epochs=5, seed=161803)
        with MonitoredRun():
            return drain(lambda: [name(), number()])

    rows = controlled(run)
    epochs = [rows[i : i + 4] for i in range(0, 20, 4)]
    assert all(sorted(e) == TF_SLICE_ROWS for e in epochs)
    assert any(e != TF_SLICE_ROWS for e in epochs)


@pytest.mark.parametrize(
    "tensor_list, error, message",
    [
        ([], ValueError, f"{TF_NO_SLICE_TENSOR}; got tensor_list=[]"),
        ([[1, 2, 3], [4, 5]], ValueError, "slice_input_producer(tensor_list): every tensor must have the "
                                          "same size in the first dimension as tensor_list[0], 3; "
                                          "tensor_list[1] has 2"),
        ([[1, 2], [3, 4, 5]], ValueError, "tensor_list[1] has 3"),
        ([[], []], ValueError, "slice_input_producer(tensor_list)[0] must not be empty"),
        ([[1], "ab"], TypeError, "slice_input_producer(tensor_list)[1] must be a sequence of values"),
        ("ab", TypeError, "slice_input_producer(tensor_list) must be a list of sequences"),
    ],
)
def test_slice_input_producer_argument_errors(tensor_list, error, message, fresh_registry):
    """PIPE-11, DEV-PIPE-8: TF's message for no tensors; sizes are checked up front (TF truncates a
    longer tensor and fails at run time on a shorter one); nothing is registered."""
    with pytest.raises(error) as info:
        slice_input_producer(tensor_list)
    assert message in str(info.value)
    assert fresh_registry.get() == []


# ==========================================================================================
# PIPE-12: enqueue_many
# ==========================================================================================


def test_enqueue_many_rebatches_conformance(fresh_registry):
    """PIPE-12 [TF pipe_batch_enqueue_many]: batches of 4 re-batched by 3; the op is
    <queue>_EnqueueMany; the last 2 elements never leave the producer's queue."""
    q = range_input_producer(10, num_epochs=1, shuffle=False)
    get_batch = batch([lambda: q.dequeue_many(4)], 3, enqueue_many=True, allow_smaller_final_batch=True)
    assert runners(fresh_registry)[1] == ("batch/fifo_queue", [TF_ENQUEUE_MANY_OP])

    def run():
        q = range_input_producer(10, num_epochs=1, shuffle=False)
        by_four = [lambda: q.dequeue_many(4)]
        return run_all(batch(by_four, 3, enqueue_many=True, allow_smaller_final_batch=True))

    assert controlled(run) == TF_ENQUEUE_MANY
    assert get_batch.name == "batch/fifo_queue_DequeueUpTo"


def test_the_output_of_a_batch_can_be_batched_again_conformance():
    """PIPE-12, PIPE-13 [TF pipe_batch_rebatches_a_batch] (after TF's testOneThreadEnqueueMany):
    batch's Op stands for its list of two tensors, so batching it with enqueue_many re-batches both
    columns."""

    def run():
        q = range_input_producer(12, num_epochs=1, shuffle=False)
        pre = batch([q.dequeue, lambda: b"string"], 2, name="pre")
        assert pre.structure == 2
        return run_all(batch(pre, 5, enqueue_many=True, name="b"))

    assert controlled(run) == TF_REBATCHED


def test_shuffle_batch_enqueue_many_delivers_everything_once():
    """PIPE-12, PIPE-4: shuffle_batch takes batches too; every element once, in batches of 4 and 2."""

    def scenario():
        q = range_input_producer(6, num_epochs=1, shuffle=False)
        get_batch = shuffle_batch([lambda: q.dequeue_many(2)], 4, 10, 0, seed=3, enqueue_many=True,
                                  allow_smaller_final_batch=True)
        assert isinstance(get_batch.queue, RandomShuffleQueue)
        with MonitoredRun():
            batches = drain(get_batch)
        assert [len(b) for b in batches] == [4, 2]
        assert sorted(x for b in batches for x in b) == list(range(6))

    explored(scenario, max_schedules=20)


def test_enqueue_many_of_a_dict_and_of_a_typed_queue():
    """PIPE-12, PIPE-13: a reader returning a dict of columns (an Op whose structure names them)
    enqueues rows; an empty batch enqueues nothing; with shapes and dtypes (one example's) the typed
    queue converts each example."""

    def run():
        chunks = iter([{"n": [1, 2], "s": ["a", "b"]}, {"n": [], "s": []}, {"n": [3], "s": ["c"]}])
        reader = Op(LimitCalls(lambda: next(chunks), 3), "reader", structure=("n", "s"))
        named = batch(reader, 3, enqueue_many=True, allow_smaller_final_batch=True)
        floats = iter([[[1, 2], [3, 4]], [[5, 6]]])
        typed = batch(LimitCalls(lambda: next(floats), 2), 2, enqueue_many=True, dtypes="float32",
                      shapes=[2], allow_smaller_final_batch=True, name="typed")
        with MonitoredRun():
            return drain(named), drain(typed)

    named, typed = controlled(run)
    assert named == [{"n": [1, 2, 3], "s": ["a", "b", "c"]}]
    assert typed == [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]]]


class LimitCalls:
    """A tensor that runs `fn` `times` times, then raises OutOfRangeError."""

    def __init__(self, fn, times):
        self.fn, self.left = fn, times

    def __call__(self):
        if self.left == 0:
            raise OutOfRangeError("done")
        self.left -= 1
        return self.fn()


@pytest.mark.parametrize(
    "columns, message",
    [
        (([1, 2], [3]), "All input tensors must have the same size in the 0th dimension. "
                        "Component 1 has 1, and should have 2"),
        ((5, [3]), "batch(enqueue_many=True): component 0 must be a batch (a sequence of examples); got 5"),
    ],
)
def test_enqueue_many_checks_the_batches(columns, message):
    """PIPE-12: columns of different lengths, or a value that is not a batch, fail the runner with
    InvalidArgumentError, which the run raises."""

    def run():
        get_batch = batch([lambda: columns[0], lambda: columns[1]], 2, enqueue_many=True)
        with MonitoredRun():
            get_batch()

    with pytest.raises(InvalidArgumentError) as info:
        controlled(run)
    assert str(info.value) == message


def test_enqueue_many_must_be_a_bool(fresh_registry):
    """PIPE-12: a non-bool enqueue_many is a TypeError naming it; nothing is registered."""
    with pytest.raises(TypeError, match=r"batch\(enqueue_many\) must be a bool; got 1"):
        batch(lambda: [1], 2, enqueue_many=1)
    with pytest.raises(TypeError, match=r"batch_join\(enqueue_many\) must be a bool; got 'yes'"):
        batch_join([[lambda: [1]]], 2, enqueue_many="yes")
    assert fresh_registry.get() == []


# ==========================================================================================
# PIPE-13: the structure of a batch
# ==========================================================================================


def test_a_list_of_one_tensor_batches_to_the_batch_itself_conformance():
    """PIPE-13, PIPE-3 [TF pipe_batch_one_element_list]: batch([t], 3) is the list of values, as
    batch(t, 3); untyped and typed."""

    def run():
        q = string_input_producer([b"f0", b"f1", b"f2", b"f3", b"f4"], num_epochs=2, shuffle=False)
        get_batch = batch([q.dequeue], 3, allow_smaller_final_batch=True)
        assert get_batch.structure is None
        return run_all(get_batch)

    assert controlled(run) == TF_ONE_ELEMENT_LIST

    def typed():
        q = range_input_producer(4, num_epochs=1, shuffle=False)
        return run_all(batch((q.dequeue,), 2, dtypes=["int64"], shapes=[[]]))

    assert controlled(typed) == [[0, 1], [2, 3]]


def test_dicts_stay_dicts_and_longer_lists_give_columns_conformance():
    """PIPE-13 [TF pipe_batch_single_key_dict, pipe_batch_list_of_two]: a one-key dict gives a dict;
    a list of two tensors a list of two columns; Op.structure says which."""

    def run():
        q = range_input_producer(4, num_epochs=1, shuffle=False, name="q")
        one_key = batch({"a": q.dequeue}, 2, name="d")
        q2 = range_input_producer(4, num_epochs=1, shuffle=False, name="q2")
        pairs = batch([q2.dequeue, lambda: b"string"], 2, name="pairs")
        assert (one_key.structure, pairs.structure) == (("a",), 2)
        with MonitoredRun():
            return drain(one_key), drain(pairs)

    one_key, pairs = controlled(run)
    assert one_key == TF_ONE_KEY_DICT
    assert pairs == [[[0, 1], [b"string"] * 2], [[2, 3], [b"string"] * 2]]


def test_a_batch_op_without_enqueue_many_batches_each_component():
    """PIPE-13: an Op with a structure stands for its tensors: batching it (one example per run)
    gives one column of batches per component, as TensorFlow batching a list of two tensors."""

    def run():
        q = range_input_producer(8, num_epochs=1, shuffle=False)
        pre = batch({"n": q.dequeue, "s": lambda: "x"}, 2, name="pre")
        return run_all(batch(pre, 2, name="post"))

    assert controlled(run) == [
        {"n": [[0, 1], [2, 3]], "s": [["x", "x"], ["x", "x"]]},
        {"n": [[4, 5], [6, 7]], "s": [["x", "x"], ["x", "x"]]},
    ]


# ==========================================================================================
# PIPE-14: batch_join
# ==========================================================================================


def _counter(name, limit, offset=0):
    q = range_input_producer(limit, num_epochs=1, shuffle=False, name=name)
    return lambda: q.dequeue() + offset


def test_batch_join_names_one_thread_per_list_conformance(fresh_registry):
    """PIPE-14 [TF pipe_batch_join_two_lists]: one runner, one op per list with TensorFlow's names,
    hence one thread per list, each with its own name."""
    get_batch = batch_join([[_counter("r1", 5)], [_counter("r2", 3, 100)]], 3)
    assert runners(fresh_registry)[2] == TF_JOIN_RUNNER
    assert isinstance(get_batch.queue, FIFOQueue) and get_batch.queue.name == "batch_join/fifo_queue"
    names = [t.name for t in fresh_registry.get()[2].create_threads(coord=Coordinator())]
    assert names == TF_JOIN_THREADS


def test_batch_join_closes_only_when_every_list_ran_out():
    """PIPE-14, RUNNER-4 [TF pipe_batch_join_closes_when_every_list_ran_out]: the short list runs out
    first and its thread ends, the queue stays open for the long one; every element arrives once,
    under every explored schedule."""

    def scenario():
        long_, short = _counter("r1", 10), _counter("r2", 2, 100)
        get_batch = batch_join([[long_], [short]], 4)
        with MonitoredRun():
            batches = drain(get_batch)
            assert get_batch.queue.is_closed()
        assert [len(b) for b in batches] == [4, 4, 4]
        assert sorted(x for b in batches for x in b) == [*range(10), 100, 101]

    explored(scenario, max_schedules=40)


def test_batch_join_of_dicts_with_enqueue_many_and_dynamic_pad(fresh_registry):
    """PIPE-14, PIPE-12, PIPE-13 [TF pipe_batch_join_dicts, pipe_batch_join_enqueue_many]: dict
    entries give dict batches; enqueue_many ops are <queue>_EnqueueMany[_i]; dynamic_pad pads."""
    batch_join([[lambda: [1]], [lambda: [2]]], 2, enqueue_many=True)
    assert runners(fresh_registry)[0][1] == TF_JOIN_MANY_OPS

    def run():
        entries = [{"n": _counter("r1", 2), "s": lambda: "a"}, {"n": _counter("r2", 1, 10), "s": lambda: "b"}]
        dicts = batch_join(entries, 3, name="dicts")
        padded = batch_join([[LimitCalls(lambda: [1, 1], 1)], [LimitCalls(lambda: [2], 1)]], 2,
                            dynamic_pad=True, dtypes=["int32"], shapes=[[None]], name="padded")
        with MonitoredRun():
            return drain(dicts), drain(padded), padded.queue

    dicts, padded, queue = controlled(run)
    assert len(dicts) == 1 and set(dicts[0]) == {"n", "s"}
    assert sorted(zip(dicts[0]["n"], dicts[0]["s"])) == [(0, "a"), (1, "a"), (10, "b")]
    assert isinstance(queue, PaddingFIFOQueue) and queue.name == "padded/padding_fifo_queue"
    assert sorted(padded[0]) == [[1, 1], [2, 0]]


@pytest.mark.parametrize(
    "tensors_list, error, message",
    [
        ([], ValueError, "Expected at least one set of tensors in batch_join(tensors_list); got []"),
        (lambda: 1, TypeError, "batch_join(tensors_list) must be a list of tensor lists or dicts"),
        ([[lambda: 1, lambda: 2], [lambda: 3]], ValueError,
         "batch_join(tensors_list): every entry must have the structure of entry 0, a list of 2 "
         "tensors; entry 1 is a list of 1 tensors"),
        ([{"a": lambda: 1}, {"b": lambda: 1}], ValueError,
         "entry 0, a dict with the keys ['a']; entry 1 is a dict with the keys ['b']"),
        ([{"a": lambda: 1}, [lambda: 1]], ValueError, "entry 1 is a list of 1 tensors"),
        ([[lambda: 1], [lambda: 1, 5]], TypeError, "batch_join(tensors_list)[1][1] must be a tensor"),
        ([[]], ValueError, "batch_join(tensors_list)[0] must hold at least one tensor; got []"),
    ],
)
def test_batch_join_argument_errors(tensors_list, error, message, fresh_registry):
    """PIPE-14, DEV-PIPE-3: the list and its entries are checked up front, naming the entry;
    nothing is registered."""
    with pytest.raises(error) as info:
        batch_join(tensors_list, 2)
    assert message in str(info.value)
    assert fresh_registry.get() == []


# ==========================================================================================
# PIPE-15: shuffle_batch_join
# ==========================================================================================


def test_shuffle_batch_join_checks_capacity_first(fresh_registry):
    """PIPE-15, DEV-PIPE-9 [TF pipe_shuffle_batch_join_capacity_check]: TF raises ZeroDivisionError
    (or builds a queue that never delivers); coordkit checks as shuffle_batch does, first."""
    with pytest.raises(ValueError) as info:
        shuffle_batch_join(None, 2, capacity=5, min_after_dequeue=5)
    assert str(info.value) == CAPACITY_5_5
    with pytest.raises(ValueError, match=r"capacity 3 must be bigger than min_after_dequeue 4\."):
        shuffle_batch_join([[lambda: 1]], 2, 3, 4)
    with pytest.raises(TypeError, match=r"shuffle_batch_join\(seed\) must be an int; got 'x'"):
        shuffle_batch_join([[lambda: 1]], 2, 5, 1, seed="x")
    assert fresh_registry.get() == []


def test_shuffle_batch_join_mixes_lists_and_drains(fresh_registry):
    """PIPE-15 [TF pipe_shuffle_batch_join_two_lists]: TF's names; while open a batch leaves
    min_after_dequeue behind; once every list ran out the queue drains; all elements once, under
    every explored schedule."""
    shuffle_batch_join([[lambda: 1], [lambda: 2]], 3, 10, 2)
    assert runners(fresh_registry)[0] == TF_SHUFFLE_JOIN_RUNNER

    def scenario():
        get_batch = shuffle_batch_join([[_counter("r1", 7)], [_counter("r2", 5, 100)]], 3, capacity=8,
                                       min_after_dequeue=2, seed=1, allow_smaller_final_batch=True)
        rsq = get_batch.queue
        assert isinstance(rsq, RandomShuffleQueue) and rsq.name == "shuffle_batch_join/random_shuffle_queue"
        batches = []
        with MonitoredRun():
            while True:
                try:
                    batches.append(get_batch())
                except OutOfRangeError:
                    break
                assert rsq.is_closed() or rsq.size() >= 2
        assert [len(b) for b in batches] == [3, 3, 3, 3]
        assert sorted(x for b in batches for x in b) == [*range(7), *range(100, 105)]

    explored(scenario, max_schedules=30)


def test_shuffle_batch_join_same_seed_same_batches():
    """PIPE-15, DEV-PIPE-11: under one schedule, the same seed gives the same batches."""

    def run(seed):
        def body():
            get_batch = shuffle_batch_join([[_counter("r1", 10)], [_counter("r2", 10, 100)]], 5, 12, 4,
                                           seed=seed)
            return run_all(get_batch)

        return body

    first = controlled(run(9))
    assert controlled(run(9)) == first
    assert sorted(x for b in first for x in b) == [*range(10), *range(100, 110)]


def test_joins_work_on_real_threads():
    """PIPE-14, PIPE-15: the joins on real threads (every wait ends with the input)."""
    get_batch = batch_join([[_counter("r1", 6)], [_counter("r2", 6, 100)]], 4)
    shuffled = shuffle_batch_join([[_counter("s1", 6)], [_counter("s2", 6, 100)]], 4, 8, 2, seed=2)
    with MonitoredRun(grace_period_secs=CAP) as run:
        plain = [x for _ in range(3) for x in get_batch()]
        mixed = [x for _ in range(3) for x in shuffled()]
    assert sorted(plain) == sorted(mixed) == [*range(6), *range(100, 106)]
    assert not any(t.is_alive() for t in run.threads)
