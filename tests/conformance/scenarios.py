"""The conformance scenarios (see ``steps.py`` for the format).

Each scenario cites the rule ids it checks (``COORD-n``, ``Q-CLOSE-n``, ... from
``../shared/research/tf_semantics.md`` and the specs) and, when it ports one,
the TensorFlow unit test it comes from (``file.Class.testName``; the class is
omitted when the file has one). Probe ids (``[TF Q6]``) refer to the digest's
TensorFlow probe runs.

Order matters only for readability: coordinator, looper, queue runner, FIFO,
RandomShuffle, Padding, Priority.
"""

from __future__ import annotations

from .steps import (
    ERR,
    OK,
    PENDING,
    TIMED_OUT,
    alive,
    bag,
    clear_stop,
    close,
    coord,
    daemon,
    deq,
    deq_many,
    deq_up_to,
    deviation,
    enq,
    enq_many,
    exc,
    exc_identity,
    fifo,
    insufficient,
    is_closed,
    join,
    join_threads,
    joined,
    looper,
    looper_value,
    op_count,
    op_count_enqueue,
    op_enqueue_const,
    op_fail,
    op_gated_count,
    op_move,
    padding,
    pending,
    pipeline,
    pq,
    qr,
    qr_add,
    qr_create,
    qr_exceptions,
    qr_info,
    qr_start_all,
    queue,
    raise_requested,
    register,
    request_stop,
    rsq,
    same,
    scenario,
    set_event,
    should_stop,
    size,
    stage,
    start,
    start_threads,
    started,
    stop_on_exception,
    thread,
    var,
    var_value,
    wait,
    wait_event,
    wait_for_stop,
    wait_size,
)

CT = "coordinator_test.CoordinatorTest."
LT = "coordinator_test.LooperTest."
QRT = "queue_runner_test."
FQ = "fifo_queue_test.FIFOQueueTest."
FQU = "fifo_queue_test.UnconvertedFIFOQueueTests."
FQP = "fifo_queue_test.FIFOQueueParallelTests."
FQT = "fifo_queue_test.FIFOQueueWithTimeoutTest."
RT = "random_shuffle_queue_test."
PT = "padding_fifo_queue_test.PaddingFIFOQueueTest."
PQT = "priority_queue_test."

SPEC_COORD = "specs/coordinator.md"
SPEC_Q = "specs/queues.md"
SPEC_QR = "specs/queue_runner.md"
SPEC_PIPE = "specs/pipeline.md"

S: list[dict] = []
add = S.append

# ======================================================================================
# 1. Coordinator
# ======================================================================================

add(scenario("coord_stop_api", ["COORD-2", "COORD-10"], [
    coord(), should_stop(), wait_for_stop(timeout=0.01),
    request_stop(), should_stop(), wait_for_stop(timeout=0.01),
], tf_test=CT + "testStopAPI"))

add(scenario("coord_stop_async", ["COORD-2", "COORD-10"], [
    coord(),
    thread("t1", [["wait", "go"], ["request_stop", "c", None], ["set", "done"]]),
    should_stop(), wait_for_stop(timeout=0.01),
    set_event("go"), wait_for_stop(timeout=10.0), should_stop(), wait_event("done"),
], tf_test=CT + "testStopAsync"))

add(scenario("coord_join", ["COORD-12", "COORD-13", "COORD-15"], [
    coord(),
    thread("t1", [["sleep", 0.01]]), thread("t2", [["sleep", 0.02]]),
    thread("t3", [["sleep", 0.03]]),
    join(threads=["t1", "t2", "t3"]), alive("t1"), alive("t2"), alive("t3"),
], tf_test=CT + "testJoin"))

add(scenario("coord_join_all_registered", ["COORD-11", "COORD-12", "COORD-13"], [
    coord(),
    thread("t1", [["sleep", 0.01]], start=False), thread("t2", [["sleep", 0.02]], start=False),
    thread("t3", [["sleep", 0.03]], start=False),
    register("c", "t1"), register("c", "t2"), register("c", "t3"),
    start_threads("t1"), start_threads("t2"), start_threads("t3"),
    join(), alive("t1"), alive("t2"), alive("t3"),
], tf_test=CT + "testJoinAllRegistered"))

add(scenario("coord_join_some_registered", ["COORD-11", "COORD-12"], [
    coord(),
    thread("t1", [["sleep", 0.01]], start=False), thread("t2", [["sleep", 0.02]], start=False),
    thread("t3", [["sleep", 0.03]], start=False),
    register("c", "t1"), register("c", "t2"),
    start_threads("t1"), start_threads("t2"), start_threads("t3"),
    join(threads=["t3"]), alive("t1"), alive("t2"), alive("t3"),
], tf_test=CT + "testJoinSomeRegistered"))

add(scenario("coord_join_grace_expires", ["COORD-14", "COORD-15"], [
    coord(),
    thread("stray", [["wait", "release"]]),
    request_stop(),
    join(threads=["stray"], grace=1e-10),
    join(threads=["stray"], grace=0.002),
    join(threads=["stray"], grace=1.0),
    set_event("release"), join_threads("stray"),
], tf_test=CT + "testJoinGraceExpires"))

add(scenario("coord_join_grace_zero_or_negative", ["COORD-14", "COORD-15"], [
    coord(), thread("laggard", [["wait", "release"]]), request_stop(),
    join(threads=["laggard"], grace=0), join(threads=["laggard"], grace=-1, tag="negative"),
    set_event("release"), join_threads("laggard"),
], note="[TF P8]", deviation=deviation(
    "DEV-COORD-4", SPEC_COORD,
    tf={"negative": ERR("RuntimeError", "Coordinator stopped with threads still running: laggard")},
    coordkit={"negative": ERR("ValueError", "join(stop_grace_period_secs) must be >= 0; got -1")},
    note="TF treats a negative grace period as zero; coordkit refuses it.")))

add(scenario("coord_join_without_grace_expires", ["COORD-14", "COORD-15"], [
    coord(), thread("stray", [["wait", "release"]]), request_stop(),
    join(threads=["stray"], grace=1e-10, ignore_live=True),
    joined(), set_event("release"), join_threads("stray"),
], tf_test=CT + "testJoinWithoutGraceExpires"))

add(scenario("coord_join_exception_wins_over_live_threads", ["COORD-15"], [
    coord(), thread("laggard", [["wait", "release"]]),
    request_stop(ex=exc("ValueError", "boom")),
    join(threads=["laggard"], grace=0.05),
    set_event("release"), join_threads("laggard"),
], note="[TF P8]"))

for _how, _test in (("exc_info", "testJoinRaiseReportExcInfo"),
                    ("instance", "testJoinRaiseReportException")):
    add(scenario(f"coord_join_raise_report_{_how}", ["COORD-4", "COORD-5", "COORD-15"], [
        coord(),
        thread("t1", [["wait", "e1"], ["request_stop", "c", exc("RuntimeError", "First", _how)],
                      ["set", "e2"]]),
        thread("t2", [["wait", "e2"],
                      ["request_stop", "c", exc("RuntimeError", "Too late", _how)]]),
        set_event("e1"), join(threads=["t1", "t2"]),
    ], tf_test=CT + _test))

add(scenario("coord_join_ignores_out_of_range", ["COORD-1", "COORD-3"], [
    coord(),
    thread("t1", [["request_stop", "c", exc("OutOfRangeError", "eof")]]),
    join(threads=["t1"]), should_stop(),
], tf_test=CT + "testJoinIgnoresOutOfRange"))

add(scenario("coord_join_ignores_my_exception_type", ["COORD-1", "COORD-3"], [
    coord(clean=["ValueError"]),
    thread("t1", [["request_stop", "c", exc("ValueError", "Clean stop")]]),
    join(threads=["t1"]),
], tf_test=CT + "testJoinIgnoresMyExceptionType"))

add(scenario("coord_join_raise_report_exception_using_handler",
             ["COORD-4", "COORD-9", "COORD-15"], [
    coord(),
    thread("t1", [["wait", "e1"], ["stop_on_exception", "c", exc("RuntimeError", "First")],
                  ["set", "e2"]]),
    thread("t2", [["wait", "e2"], ["stop_on_exception", "c", exc("RuntimeError", "Too late")]]),
    set_event("e1"), join(threads=["t1", "t2"]),
], tf_test=CT + "testJoinRaiseReportExceptionUsingHandler"))

add(scenario("coord_clear_stop_clears_exception_too", ["COORD-8", "COORD-15"], [
    coord(),
    thread("t1", [["request_stop", "c", exc("RuntimeError", "First", "exc_info")]]),
    join(threads=["t1"]),
    clear_stop(), should_stop(), joined(),
    thread("t2", [["request_stop", "c", exc("RuntimeError", "Second", "exc_info")]]),
    join(threads=["t2"]),
], tf_test=CT + "testClearStopClearsExceptionToo"))

for _how, _test in (("instance", "testRequestStopRaisesIfJoined"),
                    ("exc_info", "testRequestStopRaisesIfJoined_ExcInfo")):
    add(scenario(f"coord_request_stop_raises_if_joined_{_how}", ["COORD-7", "COORD-8"], [
        coord(), join(threads=[]),
        request_stop(ex=exc("RuntimeError", "Too late", _how)),
        clear_stop(),
        request_stop(ex=exc("RuntimeError", "After clear", _how)),
        join(threads=[]),
    ], tf_test=CT + _test))

add(scenario("coord_request_stop_outside_handler", ["COORD-5", "COORD-6"], [
    coord(),
    request_stop(ex=exc("ValueError", "x", "bare"), tag="stop"),
    should_stop(tag="should"),
    join(tag="join"),
], note="[TF P1]", deviation=deviation(
    "DEV-COORD-1", SPEC_COORD,
    tf={"stop": ERR("TypeError", "not all arguments converted during string formatting"),
        "should": OK(False),
        "join": ERR("TypeError", "exceptions must derive from BaseException")},
    coordkit={"stop": OK(None), "should": OK(True), "join": ERR("ValueError", "x")},
    note="TF's message formatting fails, the stop is not set and the coordinator is "
         "poisoned; coordkit records the exception passed in.")))

add(scenario("coord_request_stop_outside_handler_after_join", ["COORD-6", "COORD-7"], [
    coord(), join(threads=[]),
    request_stop(ex=exc("ValueError", "x", "bare"), tag="stop"), should_stop(),
    request_stop(ex=exc("ValueError", "y", "instance")), should_stop(),
], deviation=deviation(
    "DEV-COORD-1", SPEC_COORD,
    tf={"stop": ERR("TypeError", "exceptions must derive from BaseException")},
    coordkit={"stop": ERR("ValueError", "x")},
    note="After a join TF raises sys.exc_info()[1], None outside a handler; coordkit "
         "raises the exception passed in.")))

add(scenario("coord_first_stop_wins", ["COORD-4"], [
    coord(), request_stop(), request_stop(ex=exc("ValueError", "late")), join(),
    raise_requested(),
], note="[TF P2]"))

add(scenario("coord_clean_stop_then_error", ["COORD-3", "COORD-4"], [
    coord(), request_stop(ex=exc("OutOfRangeError", "eof")),
    request_stop(ex=exc("RuntimeError", "later")), join(),
], note="[TF P4]"))

add(scenario("coord_join_reraises_until_clear", ["COORD-15", "COORD-16"], [
    coord(), raise_requested(), request_stop(ex=exc("ValueError", "first")),
    raise_requested(), join(), join(), raise_requested(), joined(),
    clear_stop(), raise_requested(), joined(), should_stop(), join(),
], note="[TF P3]"))

add(scenario("coord_no_clean_types", ["COORD-1", "COORD-3"], [
    coord(clean=[]), request_stop(ex=exc("OutOfRangeError", "eof")), should_stop(), join(),
], note="[TF P4]"))

add(scenario("coord_clean_type_exc_info", ["COORD-3"], [
    coord(clean=["StopIteration"]), request_stop(ex=exc("StopIteration", "done", "exc_info")),
    should_stop(), join(),
], note="[TF P4]"))

add(scenario("coord_clean_type_subclass", ["COORD-3"], [
    coord(clean=["Exception"]), request_stop(ex=exc("KeyError", "sub")), join(),
]))

add(scenario("coord_stop_on_exception_swallows", ["COORD-9"], [
    coord(), stop_on_exception(ex=exc("KeyError", "k")), should_stop(), join(),
], note="[TF P5]"))

add(scenario("coord_stop_on_exception_system_exit", ["COORD-9"], [
    coord(), stop_on_exception(ex=exc("SystemExit", "3")), should_stop(), join(),
], note="[TF P5]"))

add(scenario("coord_stop_on_exception_clean_body", ["COORD-9"], [
    coord(), stop_on_exception(), should_stop(),
    stop_on_exception(ex=exc("OutOfRangeError", "eof")), should_stop(), join(),
], note="[TF P5]"))

add(scenario("coord_wait_for_stop_timeouts", ["COORD-10"], [
    coord(), wait_for_stop(timeout=0.05), wait_for_stop(timeout=0), wait_for_stop(timeout=-1),
    request_stop(), wait_for_stop(timeout=0.05), wait_for_stop(timeout=0), wait_for_stop(),
], note="[TF P6]"))

add(scenario("coord_join_without_stop_request", ["COORD-13", "COORD-15"], [
    coord(), thread("t", [["sleep", 0.05]], start=False), register("c", "t"),
    start_threads("t"), join(), should_stop(), joined(), alive("t"),
], note="[TF P7] (timing not compared: TF returns up to 1 s late)"))

add(scenario("coord_after_join", ["COORD-7", "COORD-8", "COORD-16"], [
    coord(), join(threads=[]), joined(), should_stop(),
    request_stop(), should_stop(),
    request_stop(ex=exc("OutOfRangeError", "eof")),
    request_stop(ex=exc("RuntimeError", "late")),
    request_stop(ex=exc("RuntimeError", "late tuple", "tuple")),
    raise_requested(),
    clear_stop(), joined(), should_stop(),
], note="[TF P9]"))

add(scenario("coord_join_never_started_thread", ["COORD-13"], [
    coord(), thread("t", [], start=False), register("c", "t"), join(), joined(),
], note="[TF P10]"))

add(scenario("coord_join_empties_registered_set", ["COORD-12", "COORD-15"], [
    coord(), thread("laggard", [["wait", "release"]], start=False), register("c", "laggard"),
    start_threads("laggard"), request_stop(),
    join(grace=0), join(grace=0),
    set_event("release"), join_threads("laggard"),
], note="[TF P10]"))

add(scenario("coord_records_handled_exception", ["COORD-5"], [
    coord(), request_stop(ex=exc("ValueError", "x", "other_handler")), join(),
], note="[TF P11]: sys.exc_info() is recorded, not the exception passed in"))

add(scenario("coord_request_stop_tuple", ["COORD-5", "COORD-15"], [
    coord(), request_stop(ex=exc("RuntimeError", "t", "tuple")), raise_requested(), join(),
]))

add(scenario("coord_raises_the_same_object", ["COORD-15", "COORD-16", "COORD-17"], [
    coord(), exc_identity(), joined(), should_stop(),
]))

# ======================================================================================
# 1b. LooperThread
# ======================================================================================

for _mode, _test in (("args", "testTargetArgs"), ("kwargs", "testTargetKwargs"),
                     ("mixed", "testTargetMixedArgs")):
    add(scenario(f"looper_target_{_mode}", ["LOOP-4", "LOOP-5", "COORD-11"], [
        coord(), looper("L", timer=0, target="countdown", n=3, argmode=_mode, via="loop"),
        join(threads=["L"]), looper_value("L"), should_stop(),
    ], tf_test=LT + _test))

add(scenario("looper_hooks_order", ["LOOP-2", "LOOP-3"], [
    coord(), looper("L", timer=None, hooks={"runs": 2}), join(threads=["L"]),
    looper_value("L", "log"),
], note="[TF P12]"))

add(scenario("looper_hooks_when_already_stopped", ["LOOP-2", "LOOP-4"], [
    coord(), request_stop(), looper("L", timer=0.01, hooks={"runs": 2}),
    join_threads("L"), looper_value("L", "log"),
], note="[TF P12]"))

add(scenario("looper_run_loop_raises", ["LOOP-2", "COORD-9"], [
    coord(), looper("L", timer=None, hooks={"runs": 5, "raise_in": "run_loop"}),
    join(threads=["L"]), looper_value("L", "log"),
], note="[TF P12]: stop_loop is skipped"))

add(scenario("looper_start_loop_raises", ["LOOP-2"], [
    coord(), looper("L", timer=None, hooks={"runs": 5, "raise_in": "start_loop"}),
    join(threads=["L"]), looper_value("L", "log"),
]))

add(scenario("looper_target_raises", ["LOOP-2", "LOOP-5"], [
    coord(), looper("L", timer=None, target="raise"), join(threads=["L"]),
], note="[TF P12]"))

add(scenario("looper_timer_when_already_stopped", ["LOOP-4"], [
    coord(), request_stop(), looper("L", timer=0.1, target="count", via="loop"),
    join_threads("L"), looper_value("L"),
], note="[TF P12]"))

add(scenario("looper_daemon_and_registered", ["LOOP-1", "COORD-11"], [
    coord(), looper("L", timer=0.01, target="count"), daemon("L"),
    thread("stopper", [["sleep", 0.05], ["request_stop", "c", None]]),
    join(), alive("L"),
], note="[TF P12]: join() with no argument waits for the looper (it registered itself)"))

add(scenario("looper_bad_coord", ["LOOP-1"], [
    looper("L", c=None, timer=0.1, bad_coord="notcoord"),
], note="[TF P12]"))

add(scenario("looper_args_without_target", ["LOOP-1"], [
    coord(), looper("L", timer=0.1, args_without_target=True, start=False),
], note="[TF P12]"))

# ======================================================================================
# 2. QueueRunner
# ======================================================================================

add(scenario("qr_basic", ["RUNNER-3", "RUNNER-4"], [
    var("v"), fifo("q", 10, ["float32"]),
    qr("r", "q", [op_count("v", 3, "count")]),
    qr_create("r", "ts"), start_threads("ts"), join_threads("ts"),
    var_value("v"), qr_exceptions("r"), is_closed("q"),
], tf_test=QRT + "testBasic"))

add(scenario("qr_two_ops", ["RUNNER-3", "RUNNER-4"], [
    var("v1"), var("v2"), fifo("q", 10, ["float32"]),
    qr("r", "q", [op_count("v1", 3, "count_a"), op_count("v2", 30, "count_b")]),
    qr_create("r", "ts"), start_threads("ts"), join_threads("ts"),
    var_value("v1"), var_value("v2"), qr_exceptions("r"), is_closed("q"),
], tf_test=QRT + "testTwoOps"))

add(scenario("qr_exceptions_captured", ["RUNNER-4", "RUNNER-7"], [
    fifo("q", 10, ["float32"]),
    qr("r", "q", [op_fail("boom", "bad_a"), op_fail("boom", "bad_b")]),
    qr_create("r", "ts"), start_threads("ts"), join_threads("ts"),
    qr_exceptions("r"), is_closed("q"),
], tf_test=QRT + "testExceptionsCaptured",
   note="[TF QR3] a runner dying of an error leaves the queue open"))

add(scenario("qr_real_dequeue_enqueue", ["RUNNER-4", "PIPE-3"], [
    fifo("q0", 10, ["float32"]), fifo("q1", 10, ["float32"]),
    qr("r", "q1", [op_move("q0", "q1", "move")]),
    qr_create("r", "ts", start=True),
    enq("q0", [10.0]), deq("q1"), enq("q0", [10.0]), deq("q1"),
    close("q0"), join_threads("ts"), deq("q1"), is_closed("q1"),
], tf_test=QRT + "testRealDequeueEnqueue"))

add(scenario("qr_respect_coord_should_stop", ["RUNNER-3", "RUNNER-5", "RUNNER-6"], [
    var("v"), fifo("q", 10, ["int64"]), coord(), request_stop(),
    qr("r", "q", [op_count_enqueue("q", "v", 3, "enq")]),
    qr_create("r", "ts", c="c"), start_threads("ts"), join(),
    var_value("v"), size("q"), is_closed("q"),
], tf_test=QRT + "testRespectCoordShouldStop", note="[TF QR8]"))

add(scenario("qr_request_stop_on_exception", ["RUNNER-4", "COORD-15"], [
    fifo("q", 10, ["float32"]), coord(),
    qr("r", "q", [op_fail("boom", "bad")]),
    qr_create("r", "ts", c="c", start=True), join(), qr_exceptions("r"),
], tf_test=QRT + "testRequestStopOnException"))

add(scenario("qr_grace_period", ["RUNNER-5", "COORD-4", "Q-CLOSE-3"], [
    fifo("q", 2, ["int32"]), coord(),
    qr("r", "q", [op_enqueue_const("q", 1, "enq")]),
    qr_create("r", "ts", c="c", start=True),
    wait_size("q", 2, blocked_enqueues=1), deq("q"),
    request_stop(), join(grace=1.0), is_closed("q"),
], tf_test=QRT + "testGracePeriod"))

add(scenario("qr_ignore_multi_starts", ["RUNNER-2"], [
    var("v"), fifo("q", 10, ["int64"]),
    qr("r", "q", [op_count_enqueue("q", "v", 3, "enq")]),
    qr_create("r", "ts"), qr_create("r", "ts2", tag="second"),
    start_threads("ts"), join_threads("ts"), qr_create("r", "ts3"),
    start_threads("ts3"), join_threads("ts3"),
], tf_test=QRT + "testIgnoreMultiStarts", note="[TF QR1, QR2]", deviation=deviation(
    "DEV-RUNNER-2", SPEC_QR, tf={"second": OK({"n": 0, "names": []})},
    coordkit={"second": ERR("RuntimeError", "Threads are already running from a previous "
                                            "call to Threads() for this queue runner.")},
    note="TF silently returns no threads; coordkit raises, as TF's first version did.")))

add(scenario("qr_threads_reset_exceptions", ["RUNNER-2", "RUNNER-4"], [
    var("v"), fifo("q", 10, ["float32"]),
    qr("r", "q", [op_count("v", 3, "good"), op_fail("boom", "bad")]),
    qr_create("r", "ts", start=True), join_threads("ts"), qr_exceptions("r"),
    qr_create("r", "ts2", start=True), join_threads("ts2"), qr_exceptions("r"),
    var_value("v"),
], tf_test=QRT + "testThreads"))

add(scenario("qr_close_when_last_exits_by_out_of_range", ["RUNNER-4", "RUNNER-7"], [
    fifo("gate", 10, ["int32"]), fifo("q", 10, ["int32"]), var("v"),
    qr("r", "q", [op_fail("boom", "bad"), op_gated_count("gate", "v", 0, "good")]),
    qr_create("r", "ts", start=True), join_threads("ts[0]"),
    enq("gate", [1]), join_threads("ts"), is_closed("q"), qr_exceptions("r"),
], note="[TF QR4] error first, OutOfRange last: the queue is closed"))

add(scenario("qr_error_last_leaves_queue_open", ["RUNNER-4", "RUNNER-7"], [
    fifo("gate", 10, ["int32"]), fifo("q", 10, ["int32"]), var("v"),
    qr("r", "q", [op_count("v", 0, "good"), op_fail("boom", "bad", gate="gate")]),
    qr_create("r", "ts", start=True), join_threads("ts[0]"),
    enq("gate", [1]), join_threads("ts"), is_closed("q"), qr_exceptions("r"),
], note="[TF QR4] OutOfRange first, error last: the queue stays open"))

add(scenario("qr_constructor_errors", ["RUNNER-1"], [
    fifo("q", 10, ["int32"]), var("v"),
    qr("r1", None, [op_count("v", 3, "a")], tag="no_queue"),
    qr("r2", "q", [], tag="no_ops"),
    qr("r3", "q", [op_count("v", 3, "a")], types="non_op_error", tag="non_op_error"),
    qr("r4", "q", [op_count("v", 3, "a")], types="list", tag="list"),
    qr("r5", "q", [op_count("v", 3, "a")], types=["OutOfRangeError", "CancelledError"]),
    qr_info("r5"),
], note="[TF QR6]", deviation=deviation(
    "DEV-RUNNER-3", SPEC_QR,
    tf={"no_queue": ERR("ValueError", "Must provide queue and enqueue_ops."),
        "no_ops": ERR("ValueError", "Must provide queue and enqueue_ops."),
        "non_op_error": ERR("TypeError", "queue_closed_exception_types, when provided, must be "
                                         "a tuple of tf.error types, but saw: <class 'ValueError'>"),
        "list": ERR("TypeError", "queue_closed_exception_types, when provided, must be a tuple "
                                 "of tf.error types, but saw: [<class 'OutOfRangeError'>]")},
    coordkit={"no_queue": ERR("ValueError", None), "no_ops": ERR("ValueError", None),
              "non_op_error": OK(None), "list": ERR("TypeError", None)},
    note="coordkit's messages show the values; any exception class is a valid closed type.")))

add(scenario("qr_empty_types_tuple", ["RUNNER-1", "RUNNER-7"], [
    fifo("q", 10, ["int32"]), var("v"),
    qr("r", "q", [op_count("v", 3, "a")], types="empty", tag="empty"),
], note="[TF QR6] TF's message formatting fails on an empty tuple", deviation=deviation(
    "DEV-RUNNER-3", SPEC_QR,
    tf={"empty": ERR("TypeError", "not enough arguments for format string")},
    coordkit={"empty": ERR("TypeError", None)},
    note="TF's %-formatting of the message fails; coordkit raises its own TypeError.")))

add(scenario("qr_properties", ["RUNNER-1", "RUNNER-3"], [
    fifo("q", 10, ["int64"]), var("v"),
    qr("r", "q", [op_count_enqueue("q", "v", 5, "enq_a")] * 2),
    qr_info("r"), qr_create("r", "ts", daemon=True), daemon("ts"), alive("ts"),
    start_threads("ts"), join_threads("ts"), size("q"), is_closed("q"), qr_exceptions("r"),
    var_value("v"),
], note="[TF QR1] duplicate ops give duplicate thread names"))

add(scenario("qr_user_close_cancels_runner", ["RUNNER-7", "Q-CLOSE-3"], [
    fifo("q", 2, ["int32"]),
    qr("r", "q", [op_enqueue_const("q", 1, "enq")]),
    qr_create("r", "ts", start=True), wait_size("q", 2, blocked_enqueues=1),
    close("q", cancel=True), join_threads("ts"), qr_exceptions("r"), size("q"),
], note="[TF QR7] CancelledError is not a queue-closed type by default"))

add(scenario("qr_cancelled_in_types_is_clean", ["RUNNER-1", "RUNNER-7"], [
    fifo("q", 2, ["int32"]),
    qr("r", "q", [op_enqueue_const("q", 1, "enq")], types=["OutOfRangeError", "CancelledError"]),
    qr_create("r", "ts", start=True), wait_size("q", 2, blocked_enqueues=1),
    close("q", cancel=True), join_threads("ts"), qr_exceptions("r"), is_closed("q"),
], note="[TF QR7]"))

add(scenario("qr_stop_cancels_blocked_runner", ["RUNNER-3", "RUNNER-5"], [
    fifo("q", 2, ["int32"]), coord(),
    qr("r", "q", [op_enqueue_const("q", 7, "forever")]),
    qr_create("r", "ts", c="c", start=True), wait_size("q", 2, blocked_enqueues=1),
    request_stop(), join(), alive("ts"), is_closed("q"), deq("q"), deq("q"), deq("q"),
    qr_exceptions("r"),
], note="[TF QR5]"))

# ======================================================================================
# 3. FIFOQueue
# ======================================================================================

add(scenario("fifo_enqueue", ["Q-ENQ-2", "Q-API-6"], [
    fifo("q", 10, ["float32"]), enq("q", [10.0]), size("q"),
], tf_test=FQ + "testEnqueue"))

add(scenario("fifo_enqueue_with_shape", ["Q-ENQ-1"], [
    fifo("q", 10, ["float32"], [[3, 2]]),
    enq("q", [[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]]),
    enq("q", [[1.0, 2.0, 3.0]]), size("q"),
], tf_test=FQ + "testEnqueueWithShape+GPUCompatibleFIFOQueueTests.testEnqueueWithShape"))

add(scenario("fifo_enqueue_many_with_shape", ["Q-ENQ-3"], [
    fifo("q", 10, ["int32", "int32"], [[], [2]]),
    enq_many("q", [[1, 2, 3, 4], [[1, 1], [2, 2], [3, 3], [4, 4]]]), size("q"),
    deq_many("q", 4),
], tf_test=FQ + "testEnqueueManyWithShape"))

add(scenario("fifo_multiple_dequeues", ["Q-DEQ-1"], [
    fifo("q", 10, ["int32"]), enq_many("q", [[1, 2, 3]]), deq("q"), deq("q"), deq("q"),
], tf_test=FQ + "testMultipleDequeues"))

add(scenario("fifo_enqueue_dict_without_names", ["Q-API-4"], [
    fifo("q", 10, ["int32"]), enq("q", {"a": 12}), enq_many("q", {"a": [12, 12]}), size("q"),
], tf_test=FQ + "testEnqueueDictWithoutNames"))

add(scenario("fifo_dequeue_order", ["Q-DEQ-1"], [
    fifo("q", 10, ["float32"]), enq("q", [10.0]), enq("q", [20.0]), enq("q", [30.0]),
    deq("q"), deq("q"), deq("q"),
], tf_test=FQ + "testDequeue+GPUCompatibleFIFOQueueTests.testEnqueueDequeue"))

add(scenario("fifo_multi_enqueue_and_dequeue", ["Q-DEQ-1", "Q-API-5"], [
    fifo("q", 10, ["int32", "float32"]),
    enq("q", [10, 10.0]), enq("q", [20, 20.0]), enq("q", [30, 30.0]),
    deq("q"), deq("q"), deq("q"),
], tf_test=FQ + "testMultiEnqueueAndDequeue"))

add(scenario("fifo_size", ["Q-API-6"], [
    fifo("q", 10, ["float32"]), size("q"), enq("q", [10.0]), size("q"), deq("q"), size("q"),
], tf_test=FQ + "testQueueSizeEmpty+testQueueSizeAfterEnqueueAndDequeue"))

add(scenario("fifo_enqueue_many", ["Q-ENQ-3", "Q-DEQ-1"], [
    fifo("q", 10, ["float32"]),
    enq_many("q", [[10.0, 20.0, 30.0, 40.0]]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    size("q"), *[deq("q") for _ in range(8)], size("q"),
], tf_test=FQ + "testEnqueueMany"))

add(scenario("fifo_empty_enqueue_many", ["Q-ENQ-4"], [
    fifo("q", 10, ["float32"], [[2, 3]]), enq_many("q", [[]]), size("q"),
], tf_test=FQ + "testEmptyEnqueueMany"))

add(scenario("fifo_empty_dequeue_many_and_up_to", ["Q-DEQ-2"], [
    fifo("q", 10, ["float32"], [[]]),
    deq_many("q", 0), deq_up_to("q", 0), enq("q", [10.0]),
    deq_many("q", 0), deq_up_to("q", 0), size("q"),
], tf_test=FQ + "testEmptyDequeueMany+testEmptyDequeueUpTo"))

add(scenario("fifo_empty_dequeue_many_with_no_shape", ["Q-DEQ-2"], [
    fifo("q", 10, ["float32"], None), enq("q", [10.0]),
    deq_many("q", 0), deq_up_to("q", 0), deq_many("q", 1), deq_up_to("q", 1), size("q"),
], tf_test=FQ + "testEmptyDequeueManyWithNoShape", note="[TF Q2]"))

add(scenario("fifo_multi_enqueue_many", ["Q-ENQ-3", "Q-API-5"], [
    fifo("q", 10, ["float32", "int32"], [[], [2]]),
    enq_many("q", [[10.0, 20.0, 30.0, 40.0], [[1, 2], [3, 4], [5, 6], [7, 8]]]),
    enq_many("q", [[10.0, 20.0, 30.0, 40.0], [[1, 2], [3, 4], [5, 6], [7, 8]]]),
    *[deq("q") for _ in range(8)],
], tf_test=FQ + "testMultiEnqueueMany"))

add(scenario("fifo_dequeue_many", ["Q-DEQ-3"], [
    fifo("q", 10, ["float32"]), enq_many("q", [[float(x) for x in range(10)]]),
    deq_many("q", 4), deq_many("q", 4), size("q"),
], tf_test=FQ + "testDequeueMany"))

add(scenario("fifo_dequeue_up_to_no_blocking", ["Q-DEQ-5"], [
    fifo("q", 10, ["float32"]), enq_many("q", [[float(x) for x in range(10)]]),
    deq_up_to("q", 4), deq_up_to("q", 4), size("q"),
], tf_test=FQ + "testDequeueUpToNoBlocking"))

add(scenario("fifo_multi_dequeue_many", ["Q-DEQ-3", "Q-API-5"], [
    fifo("q", 10, ["float32", "int32"], [[], [2]]),
    enq_many("q", [[float(x) for x in range(10)], [[x, -x] for x in range(10)]]),
    deq_many("q", 4), deq("q"), deq_many("q", 4), size("q"), close("q"), deq_up_to("q", 4),
], tf_test=FQ + "testMultiDequeueMany+testMultiDequeueUpToNoBlocking"))

_hd = [[[[[16 * i + 8 * a + 4 * b + 2 * c + d for d in range(2)] for c in range(2)]
         for b in range(2)] for a in range(2)] for i in range(3)]
add(scenario("fifo_high_dimension", ["Q-DEQ-3"], [
    fifo("q", 10, ["int32"], [[2, 2, 2, 2]]), enq_many("q", [_hd]), deq_many("q", 3),
], tf_test=FQ + "testHighDimension"))

add(scenario("fifo_enqueue_wrong_shape_at_runtime", ["Q-ENQ-1"], [
    fifo("q", 10, ["int32", "int32"], [[2, 2], [3, 3]]),
    enq("q", [[[1, 1], [1, 1]], [[1, 1, 1, 1]] * 3]), size("q"),
], tf_test=FQU + "testEnqueueWrongShapeAtRuntime"))

add(scenario("fifo_enqueue_dequeue_many_wrong_shape", ["Q-ENQ-1"], [
    fifo("q", 10, ["int32", "int32"], [[2, 2], [3, 3]]),
    enq_many("q", [[[[1, 1], [1, 1]]] * 2, [[[1, 1, 1, 1]] * 3] * 2]), size("q"),
], tf_test=FQU + "testEnqueueDequeueManyWrongShape"))

add(scenario("fifo_enqueue_wrong_shape_scalar", ["Q-ENQ-1"], [
    fifo("q", 10, ["int32"], [[2]]), enq("q", [[1, 2, 3]]),
    enq_many("q", [[[1, 2, 3], [3, 4, 5]]]), size("q"),
], tf_test=FQ + "testEnqueueWrongShape", note="[TF Q2] (fed at run time: the kernel's message)"))

_NUMPY_RAGGED = ("setting an array element with a sequence. The requested array has an "
                 "inhomogeneous shape after 1 dimensions. The detected shape was (2,) + "
                 "inhomogeneous part.")
_TF1_RAGGED = "Can't convert non-rectangular Python sequence to Tensor."

add(scenario("fifo_ragged_value", ["Q-API-4"], [
    fifo("q", 10, ["int32"], [[2]]), enq_many("q", [[[1, 2], [3, 4, 5]]], tag="many"),
    enq("q", [[[1], []]], tag="one"), size("q"),
], note="a ragged Python list fails TF's conversion (numpy's ValueError in TF 2.21)",
   deviation=deviation(
    "DEV-Q-15", SPEC_Q,
    tf={"many": ERR("ValueError", _NUMPY_RAGGED), "one": ERR("ValueError", _NUMPY_RAGGED)},
    coordkit={"many": ERR("InvalidArgumentError", _TF1_RAGGED),
              "one": ERR("InvalidArgumentError", _TF1_RAGGED)},
    note="Both raise a ValueError at the call and store nothing; coordkit's is the "
         "InvalidArgumentError subclass with TF 1.x's text.")))

add(scenario("fifo_batch_size_mismatch", ["Q-API-4", "Q-ENQ-1"], [
    fifo("q", 10, ["int32", "int32", "int32"]),
    enq_many("q", [[1, 2, 3], [1, 2], [1, 2, 3]]), size("q"),
], tf_test=FQU + "testBatchSizeMismatch"))

add(scenario("fifo_batch_size_mismatch_no_shapes", ["Q-ENQ-1"], [
    fifo("q", 10, ["int32", "int32"], None),
    enq_many("q", [[1, 2, 3], [1, 2]]), size("q"),
]))

add(scenario("fifo_dequeue_from_closed_queue", ["Q-CLOSE-5", "Q-DEQ-1"], [
    fifo("q", 10, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]), close("q"),
    deq("q"), deq("q"), deq("q"), deq("q"), deq("q"),
], tf_test=FQU + "testDequeueFromClosedQueue"))

add(scenario("fifo_does_not_lose_value", ["Q-API-6"], [
    fifo("q", 1, ["float32"]), enq("q", [10.0]), size("q"), size("q"), size("q"),
], tf_test=FQU + "testDoesNotLoseValue"))

add(scenario("fifo_dtypes", ["Q-API-1", "Q-DEQ-3"], [
    fifo("q", 10, ["float32", "int32", "int64", "bool", "string"], [[2]] * 5),
    enq_many("q", [[[1.5, -2.0], [0.25, 3.0]], [[1, -2], [3, 4]], [[2**40, -5], [6, 7]],
                   [[True, False], [False, True]], [[b"a", b""], [b"bc", b"\x00d"]]]),
    deq_many("q", 2),
], tf_test=FQU + "testDtypes"))

add(scenario("fifo_names_one_component", ["Q-API-4", "Q-API-5"], [
    fifo("q", 10, ["float32"], [[]], names=["f"]),
    enq("q", [10.0]), enq("q", {}), enq("q", {"x": 12.0}), enq("q", {"f": 10.0, "s": 1.0}),
    enq("q", {"f": 10.0}), enq("q", {"f": 20.0}), enq("q", {"f": 30.0}),
    enq_many("q", [[40.0, 50.0]]), enq_many("q", {}), enq_many("q", {"x": [12.0]}),
    enq_many("q", {"f": [40.0, 50.0]}),
    deq("q"), deq_many("q", 2), deq_many("q", 2),
], tf_test=FQU + "testEnqueueDequeueOneComponent"))

add(scenario("fifo_names_multiple_components", ["Q-API-4", "Q-API-5"], [
    fifo("q", 10, ["float32", "int32", "string"], [[], [], []], names=["f", "i", "s"]),
    enq("q", [10.0, 123, b"aa"]), enq("q", {"x": 10.0}), enq("q", {"i": 12, "s": b"aa"}),
    enq("q", {"i": 123, "s": b"aa", "f": 10.0, "x": 10.0}),
    enq("q", {"i": 123, "s": b"aa", "f": 10.0}), enq("q", {"i": 124, "s": b"bb", "f": 20.0}),
    enq("q", {"i": 125, "s": b"cc", "f": 30.0}),
    enq_many("q", [[40.0, 50.0], [126, 127], [b"dd", b"ee"]]),
    enq_many("q", {"f": [40.0, 50.0], "i": [126, 127], "s": [b"dd", b"ee"]}),
    deq("q"), deq_many("q", 2), deq_many("q", 2),
], tf_test=FQU + "testEnqueueDequeueMultipleComponent"))

add(scenario("fifo_enqueue_and_blocking_dequeue", ["Q-DEQ-1", "Q-MODEL-3"], [
    fifo("q", 3, ["float32"]),
    *started("a", deq("q")), *started("b", deq("q")), *started("c", deq("q")),
    enq("q", [10.0]), wait("a"), enq("q", [20.0]), wait("b"), enq("q", [30.0]), wait("c"),
], tf_test=FQP + "testEnqueueAndBlockingDequeue", note="[TF Q8] waiters served in order"))

add(scenario("fifo_big_dequeue_many", ["Q-DEQ-3"], [
    fifo("q", 2, ["int32"]), *started("h", deq_many("q", 4)),
    enq("q", [0]), pending("h"), enq("q", [1]), enq("q", [2]), enq("q", [3]), wait("h"),
    size("q"),
], tf_test=FQP + "testBigDequeueMany"))

add(scenario("fifo_big_enqueue_many", ["Q-ENQ-3"], [
    fifo("q", 5, ["int32"]), *started("h", enq_many("q", [list(range(1, 11))])),
    size("q"), deq("q"), deq_many("q", 3), deq_many("q", 5), wait("h"), size("q"), deq("q"),
], tf_test=FQP + "testBigEnqueueMany", note="[TF Q9]"))

add(scenario("fifo_blocking_dequeue_from_closed_queue", ["Q-CLOSE-4", "Q-CLOSE-5"], [
    fifo("q", 10, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    deq("q"), deq("q"), deq("q"), deq("q"),
    *started("h", deq("q")), close("q"), wait("h"),
], tf_test=FQP + "testBlockingDequeueFromClosedQueue"))

add(scenario("fifo_blocking_dequeue_from_closed_empty_queue", ["Q-CLOSE-4", "Q-DEQ-1"], [
    fifo("q", 10, ["float32"]), *started("h", deq("q")), close("q"), wait("h"),
], tf_test=FQP + "testBlockingDequeueFromClosedEmptyQueue"))

add(scenario("fifo_blocking_dequeue_many_from_closed_queue", ["Q-CLOSE-4", "Q-DEQ-4"], [
    fifo("q", 10, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    deq_many("q", 4), *started("h", deq_many("q", 4)), close("q"), wait("h"), size("q"),
], tf_test=FQP + "testBlockingDequeueManyFromClosedQueue"))

add(scenario("fifo_blocking_dequeue_many_but_not_all_from_closed_queue",
             ["Q-CLOSE-4", "Q-DEQ-3", "Q-DEQ-4"], [
    fifo("q", 10, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    deq_many("q", 3), *started("h", deq_many("q", 3)), size("q"),
    close("q"), wait("h"), size("q"), deq("q"),
], tf_test=FQP + "testBlockingDequeueManyButNotAllFromClosedQueue"))

add(scenario("fifo_dequeue_up_to_from_closed_queue_returns_remainder", ["Q-DEQ-5"], [
    fifo("q", 10, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    deq_up_to("q", 3), *started("h", deq_up_to("q", 3)), close("q"), wait("h"), size("q"),
], tf_test=FQP + "testDequeueUpToFromClosedQueueReturnsRemainder"))

add(scenario("fifo_enqueue_many_larger_than_capacity_with_concurrent_dequeue_many",
             ["Q-ENQ-3", "Q-CLOSE-1", "Q-DEQ-4"], [
    fifo("q", 2, ["int32"]),
    *started("e", enq_many("q", [[1, 2, 3, 4]])), *started("c", close("q")),
    deq_many("q", 3), wait("e"), wait("c"), is_closed("q"),
    deq_many("q", 3), size("q"), deq("q"),
], tf_test=FQP + "testEnqueueManyLargerThanCapacityWithConcurrentDequeueMany"))

add(scenario("fifo_closed_blocking_dequeue_many_restores_partial_batch",
             ["Q-DEQ-3", "Q-DEQ-4"], [
    fifo("q", 4, ["float32", "float32"], [[], []]),
    enq_many("q", [[10.0, 20.0, 30.0], [1.0, 2.0, 3.0]]),
    *started("h", deq_many("q", 4)), size("q"), close("q"), wait("h"),
    size("q"), deq_many("q", 3),
], tf_test=FQP + "testClosedBlockingDequeueManyRestoresPartialBatch"))

add(scenario("fifo_blocking_dequeue_many_from_closed_empty_queue", ["Q-CLOSE-4", "Q-DEQ-4"], [
    fifo("q", 10, ["float32"]), *started("h", deq_many("q", 4)), close("q"), wait("h"),
], tf_test=FQP + "testBlockingDequeueManyFromClosedEmptyQueue"))

add(scenario("fifo_blocking_dequeue_up_to_from_closed_empty_queue",
             ["Q-CLOSE-4", "Q-DEQ-5"], [
    fifo("q", 10, ["float32"]), *started("h", deq_up_to("q", 4)), close("q"), wait("h"),
], tf_test=FQP + "testBlockingDequeueUpToFromClosedEmptyQueue"))

add(scenario("fifo_enqueue_to_closed_queue", ["Q-ENQ-2"], [
    fifo("q", 10, ["float32"]), enq("q", [10.0]), close("q"), enq("q", [20.0]), size("q"),
], tf_test=FQP + "testEnqueueToClosedQueue"))

add(scenario("fifo_enqueue_many_to_closed_queue", ["Q-ENQ-2", "Q-ENQ-4"], [
    fifo("q", 10, ["float32"]), enq_many("q", [[10.0, 20.0]]), close("q"),
    enq_many("q", [[30.0, 40.0]]), enq_many("q", [[]]), size("q"),
], tf_test=FQP + "testEnqueueManyToClosedQueue", note="[TF Q1] empty batches pass"))

add(scenario("fifo_blocking_enqueue_to_full_queue", ["Q-ENQ-2", "Q-MODEL-3"], [
    fifo("q", 4, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    *started("h", enq("q", [50.0])), deq("q"), wait("h"),
    deq("q"), deq("q"), deq("q"), deq("q"), size("q"),
], tf_test=FQP + "testBlockingEnqueueToFullQueue"))

add(scenario("fifo_blocking_enqueue_many_to_full_queue", ["Q-ENQ-3"], [
    fifo("q", 4, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    *started("h", enq_many("q", [[50.0, 60.0]])), deq("q"), size("q"), pending("h"),
    deq("q"), wait("h"), deq_many("q", 4), size("q"),
], tf_test=FQP + "testBlockingEnqueueManyToFullQueue"))

add(scenario("fifo_blocking_enqueue_before_close", ["Q-CLOSE-1"], [
    fifo("q", 4, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    *started("e", enq("q", [50.0])), *started("c", close("q")), is_closed("q"),
    *started("late", enq("q", [60.0])),
    deq("q"), wait("e"), wait("c"), wait("late"), is_closed("q"),
    deq("q"), deq("q"), deq("q"), deq("q"), deq("q"),
], tf_test=FQP + "testBlockingEnqueueBeforeClose", note="[TF Q4]"))

add(scenario("fifo_blocking_enqueue_many_before_close", ["Q-CLOSE-1", "Q-ENQ-3"], [
    fifo("q", 4, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0]]),
    *started("e", enq_many("q", [[50.0, 60.0]])), size("q"),
    *started("c", close("q")), is_closed("q"),
    deq("q"), wait("e"), wait("c"), is_closed("q"),
    deq_up_to("q", 10), deq("q"),
], tf_test=FQP + "testBlockingEnqueueManyBeforeClose"))

add(scenario("fifo_parallel_enqueue", ["Q-ENQ-2"], [
    fifo("q", 10, ["float32"]),
    *[start(f"h{i}", enq("q", [float(10 * i)])) for i in range(10)],
    *[wait(f"h{i}") for i in range(10)], size("q"), deq_many("q", 10, rec="sorted"),
], tf_test=FQP + "testParallelEnqueue"))

add(scenario("fifo_parallel_dequeue", ["Q-DEQ-1"], [
    fifo("q", 10, ["float32"]), enq_many("q", [[float(10 * i) for i in range(10)]]),
    *[start(f"h{i}", deq("q", rec="bag:b")) for i in range(10)],
    *[wait(f"h{i}") for i in range(10)], bag("b"), size("q"),
], tf_test=FQP + "testParallelDequeue"))

add(scenario("fifo_parallel_dequeue_up_to", ["Q-DEQ-5"], [
    fifo("q", 1000, ["int32"]), enq_many("q", [list(range(100))]), close("q"),
    *[start(f"h{i}", deq_up_to("q", 30, rec="bag:b")) for i in range(4)],
    *[wait(f"h{i}") for i in range(4)], bag("b"), deq_up_to("q", 30),
], tf_test=FQP + "testParallelDequeueUpTo"))

add(scenario("fifo_blocking_dequeue_many", ["Q-DEQ-3"], [
    fifo("q", 10, ["float32"]), *started("h", deq_many("q", 4)),
    enq_many("q", [[10.0, 20.0, 30.0, 40.0]]), wait("h"),
], tf_test=FQP + "testBlockingDequeueMany"))

add(scenario("fifo_blocking_dequeue_up_to", ["Q-DEQ-5"], [
    fifo("q", 10, ["float32"]), *started("h", deq_up_to("q", 4)),
    enq_many("q", [[10.0, 20.0]]), pending("h"), enq_many("q", [[30.0, 40.0]]), wait("h"),
], tf_test=FQP + "testBlockingDequeueUpTo", note="[TF Q11] up_to waits for n while open"))

add(scenario("fifo_dequeue_with_timeout", ["Q-API-7"], [
    fifo("q", 10, ["float32"]), deq("q", timeout=0.05),
], tf_test=FQT + "testDequeueWithTimeout"))

add(scenario("fifo_reusable_after_timeout", ["Q-API-7", "Q-DEQ-7"], [
    fifo("q", 10, ["int32"]), deq("q", timeout=0.05), deq("q", timeout=0.05),
    enq("q", [37]), deq("q"),
], tf_test=FQT + "testReusableAfterTimeout"))

add(scenario("fifo_close_twice", ["Q-CLOSE-1", "Q-CLOSE-2"], [
    fifo("q", 10, ["float32"]), is_closed("q"), close("q"), is_closed("q"),
    close("q"), close("q", cancel=True), is_closed("q"),
], note="[TF Q1]"))

add(scenario("fifo_closed_queue_operations", ["Q-CLOSE-5", "Q-DEQ-2", "Q-DEQ-4", "Q-DEQ-5"], [
    fifo("q", 10, ["float32"]), enq_many("q", [[1.0, 1.0]]), close("q"),
    enq("q", [2.0]), enq_many("q", [[2.0]]), enq_many("q", [[]]),
    deq_many("q", 3), size("q"), deq_up_to("q", 3), deq_up_to("q", 3), deq("q"),
    deq_many("q", 0), deq_up_to("q", 0),
], note="[TF Q1]"))

add(scenario("fifo_negative_counts", ["Q-DEQ-2"], [
    fifo("q", 10, ["float32"]), enq("q", [1.0]), deq_many("q", -1), deq_up_to("q", -1),
    close("q"), deq_many("q", -1), size("q"),
], note="[TF Q2]"))

add(scenario("fifo_unbounded_capacity", ["Q-API-2"], [
    fifo("q", -1, ["int32"]), enq_many("q", [list(range(500))]), enq("q", [500]), size("q"),
], note="[TF Q3]"))

add(scenario("fifo_capacity_zero", ["Q-API-2"], [
    fifo("q", 0, ["int32"]), enq("q", [1], timeout=0.2), size("q"),
], note="[TF Q3]"))

add(scenario("fifo_close_cancel_pending_enqueues", ["Q-CLOSE-3"], [
    fifo("q", 2, ["float32"]), enq_many("q", [[1.0, 2.0]]),
    *started("e", enq("q", [3.0])), *started("m", enq_many("q", [[4.0, 5.0]])),
    close("q", cancel=True), wait("e"), wait("m"), size("q"), is_closed("q"),
], note="[TF Q4b]"))

add(scenario("fifo_close_cancel_partial_enqueue_many", ["Q-CLOSE-3", "Q-ENQ-3"], [
    fifo("q", 3, ["float32"]), enq("q", [1.0]),
    *started("m", enq_many("q", [[10.0, 20.0, 30.0, 40.0]])), size("q"),
    close("q", cancel=True), wait("m"), deq_up_to("q", 10),
], note="[TF Q4c]"))

add(scenario("fifo_close_never_cancels_dequeuers", ["Q-CLOSE-4"], [
    fifo("q", 10, ["float32"]),
    *started("d", deq("q")), *started("m", deq_many("q", 2)),
    close("q", cancel=True), wait("d"), wait("m"),
], note="[TF Q5]"))

add(scenario("fifo_dequeue_many_restores_on_close", ["Q-DEQ-3", "Q-DEQ-4", "Q-API-6"], [
    fifo("q", 10, ["float32"]), *started("h", deq_many("q", 5)),
    enq("q", [1.0]), enq("q", [2.0]), pending("h"), size("q"),
    close("q"), wait("h"), size("q"), deq_many("q", 2),
], note="[TF Q6]"))

add(scenario("fifo_timeout_partial_dequeue_many", ["Q-DEQ-6", "Q-DEQ-7"], [
    fifo("q", 10, ["float32"]), enq_many("q", [[1.0, 2.0]]),
    deq_many("q", 5, timeout=0.2), size("q", tag="size"), enq("q", [3.0]),
    deq("q", tag="next"),
], note="[TF Q7]", deviation=deviation(
    "DEV-Q-1", SPEC_Q,
    tf={"size": OK(0), "next": OK(3.0)},
    coordkit={"size": OK(2), "next": OK(1.0)},
    note="TF discards the elements a timed-out dequeue_many held; coordkit puts them back.")))

add(scenario("fifo_timeout_partial_dequeue_up_to", ["Q-DEQ-5", "Q-DEQ-6"], [
    fifo("q", 10, ["int32"]), enq_many("q", [[1, 2]]),
    deq_up_to("q", 5, timeout=0.2), size("q", tag="size"), close("q"),
    deq_up_to("q", 5, tag="rest"),
], note="[TF Q11]", deviation=deviation(
    "DEV-Q-1", SPEC_Q,
    tf={"size": OK(0), "rest": insufficient("FIFOQueue", 5, 0)},
    coordkit={"size": OK(2), "rest": OK([1, 2])},
    note="TF discards the elements a timed-out dequeue_up_to held; coordkit puts them back.")))

add(scenario("fifo_timeout_enqueue_on_full", ["Q-API-7", "Q-ENQ-3"], [
    fifo("q", 2, ["float32"]), enq_many("q", [[1.0, 2.0]]),
    enq("q", [3.0], timeout=0.2), enq_many("q", [[3.0, 4.0]], timeout=0.2), size("q"),
    close("q"), deq_up_to("q", 10),
], note="[TF Q7]"))

add(scenario("fifo_timeout_partial_enqueue_many_keeps_elements", ["Q-ENQ-3"], [
    fifo("q", 3, ["float32"]), enq("q", [0.0]),
    enq_many("q", [[1.0, 2.0, 3.0, 4.0]], timeout=0.2), size("q"), close("q"),
    deq_up_to("q", 10),
], note="[TF Q7b]"))

add(scenario("fifo_head_of_line_blocking", ["Q-MODEL-3", "Q-DEQ-3"], [
    fifo("q", 10, ["int32"]),
    *started("m", deq_many("q", 3)), *started("d", deq("q")),
    enq("q", [7]), enq("q", [8]), pending("m"), size("q"), pending("d"),
    enq("q", [9]), wait("m"), pending("d"), enq("q", [10]), wait("d"),
], note="[TF Q8]"))

add(scenario("fifo_enqueue_waiters_in_order", ["Q-MODEL-3"], [
    fifo("q", 1, ["int32"]), enq("q", [0]),
    *started("a", enq("q", [1])), *started("b", enq("q", [2])), *started("c", enq("q", [3])),
    deq("q"), deq("q"), deq("q"), deq("q"), wait("a"), wait("b"), wait("c"), size("q"),
], note="[TF Q8]"))

add(scenario("fifo_blocked_enqueue_many_holds_up_smaller_enqueue", ["Q-MODEL-3", "Q-ENQ-3"], [
    fifo("q", 2, ["int32"]), enq("q", [0]),
    *started("m", enq_many("q", [[1, 2, 3]])), *started("e", enq("q", [9])),
    size("q"), deq("q"), pending("m"), pending("e"), deq("q"), deq("q"),
    wait("m"), deq("q"), wait("e"), deq("q"), size("q"),
], note="Q-MODEL-3: a blocked enqueue_many at the head holds up enqueues behind it"))

add(scenario("fifo_dequeue_up_to_after_close_sequence", ["Q-DEQ-5"], [
    fifo("q", 10, ["int32"]), enq_many("q", [[1, 2, 3, 4, 5]]), close("q"),
    deq_up_to("q", 2), deq_up_to("q", 2), deq_up_to("q", 2), deq_up_to("q", 2),
], note="[TF Q12]"))

add(scenario("fifo_dequeue_up_to_waits_for_queued_enqueue", ["Q-DEQ-5", "Q-CLOSE-1"], [
    fifo("q", 2, ["int32"]), enq_many("q", [[1, 2]]),
    *started("e", enq_many("q", [[3, 4, 5]])), *started("c", close("q")),
    deq_up_to("q", 10), wait("e"), wait("c"), is_closed("q"), size("q"),
], note="[TF Q12]"))

add(scenario("fifo_cancel_cancels_queued_close_and_later_enqueues", ["Q-CLOSE-3"], [
    fifo("q", 1, ["int32"]), enq("q", [1]),
    *started("e", enq("q", [2])), *started("c", close("q")), *started("late", enq("q", [3])),
    close("q", cancel=True), wait("e"), wait("c"), wait("late"), is_closed("q"),
    size("q"), deq("q"), deq("q"),
], note="[TF X1]"))

add(scenario("fifo_close_timeout_still_closes", ["Q-CLOSE-1", "Q-CLOSE-6", "Q-API-7"], [
    fifo("q", 1, ["int32"]), enq("q", [1]), *started("e", enq("q", [2])),
    start("c", close("q", timeout=0.2)), is_closed("q"),
    wait("c", cap=3.0, tag="timeout"), is_closed("q"),
    deq("q"), wait("e"), wait("c", tag="after"), is_closed("q"), deq("q"), deq("q"),
], note="[TF X6]", deviation=deviation(
    "DEV-Q-7", SPEC_Q,
    tf={"timeout": PENDING, "after": TIMED_OUT},
    coordkit={"timeout": TIMED_OUT, "after": TIMED_OUT},
    note="TF's close() ignores the run timeout until the close really happens (then raises "
         "DeadlineExceeded); coordkit raises at the timeout. Both close the queue later.")))

add(scenario("fifo_component_count", ["Q-API-4", "Q-ENQ-1"], [
    fifo("q", 10, ["float32", "int32"]), enq("q", [1.0], tag="missing"),
    enq("q", [1.0, 2, 99], tag="extra"), size("q", tag="size"), deq("q", timeout=0.5, tag="deq"),
], note="[TF X5] missing components fail; extra ones are dropped", deviation=deviation(
    "DEV-Q-9", SPEC_Q,
    tf={"missing": ERR("InvalidArgumentError",
                       "Signature mismatch, have: resource, float-> expected: resource, float, "
                       "int32->"),
        "extra": OK(None), "size": OK(1), "deq": OK([1.0, 2])},
    coordkit={"missing": ERR("InvalidArgumentError",
                             "Wrong number of components in tuple. Expected 2, got 1"),
              "extra": ERR("InvalidArgumentError",
                           "Wrong number of components in tuple. Expected 2, got 3"),
              "size": OK(0), "deq": TIMED_OUT},
    note="TF drops extra components silently; coordkit refuses both cases.")))

add(scenario("fifo_dtype_conversions", ["Q-API-4", "Q-DTYPE-1"], [
    fifo("qi", 10, ["int32"]), enq("qi", [2.0]), enq("qi", [True]), enq("qi", [[1]]),
    enq("qi", [-7]), deq("qi"), deq("qi"),
    fifo("qf", 10, ["float32"]), enq("qf", [1]), enq("qf", [True]), enq("qf", [0.1]),
    enq("qf", [1e40]), deq("qf"), deq("qf"), deq("qf"), deq("qf"),
    fifo("qb", 10, ["bool"]), enq("qb", [1]), enq("qb", [False]), deq("qb"),
    fifo("qs", 10, ["string"]), enq("qs", ["ab"]), enq("qs", [b"cd"]), enq("qs", [1]),
    deq("qs"), deq("qs"),
    fifo("q2", 10, ["int64"], [[2]]), enq("q2", [[1, 2.5]]), size("q2"),
], note="convert_to_tensor's rules for Python values"))

add(scenario("fifo_int_out_of_range", ["Q-DTYPE-1"], [
    fifo("q", 10, ["int32"]), enq("q", [2**31], tag="wrap"), size("q", tag="size"),
], deviation=deviation(
    "DEV-Q-11", SPEC_Q, tf={"wrap": OK(None), "size": OK(1)},
    coordkit={"wrap": ERR("InvalidArgumentError", None), "size": OK(0)},
    note="TF wraps 2**31 around to -2**31; coordkit refuses it.")))

add(scenario("fifo_untyped_dequeue_many", ["Q-DEQ-2", "Q-UNTYPED-3"], [
    queue("q", "FIFOQueue", 10, ["int32"], ck_untyped=True),
    enq("q", 1), enq("q", 2), enq("q", 3),
    deq_many("q", 2, tag="many"), deq_up_to("q", 0, tag="zero"), size("q", tag="size"),
    deq("q", tag="next"),
], note="TF refuses batches without shapes", deviation=deviation(
    "DEV-Q-5", SPEC_Q,
    tf={"many": ERR("InvalidArgumentError", "FIFOQueue's DequeueMany and DequeueUpTo require "
                                            "the components to have specified shapes."),
        "zero": ERR("InvalidArgumentError", "FIFOQueue's DequeueMany and DequeueUpTo require "
                                            "the components to have specified shapes."),
        "size": OK(3), "next": OK(1)},
    coordkit={"many": OK([1, 2]), "zero": OK([]), "size": OK(1), "next": OK(3)},
    note="An untyped coordkit queue batches into a list.")))

add(scenario("fifo_single_value_is_wrapped", ["Q-API-4", "Q-API-5"], [
    fifo("q", 10, ["int32"]), enq("q", 5), enq_many("q", [[6, 7]]), deq("q"), deq_many("q", 2),
]))

# ======================================================================================
# 4. RandomShuffleQueue
# ======================================================================================

add(scenario("rsq_enqueue", ["Q-ENQ-2", "Q-API-6"], [
    rsq("q", 10, 0, ["float32"]), enq("q", [10.0]), size("q"),
], tf_test=RT + "testEnqueue"))

add(scenario("rsq_dequeue_is_a_permutation", ["RSQ-4", "RSQ-5"], [
    rsq("q", 10, 0, ["float32"]), enq("q", [10.0]), enq("q", [20.0]), enq("q", [30.0]),
    size("q"), deq("q", rec="bag:b"), deq("q", rec="bag:b"), deq("q", rec="bag:b"),
    bag("b"), size("q"),
], tf_test=RT + "testDequeue", note="order not compared (RSQ-5)"))

add(scenario("rsq_multi_component_rows_stay_together", ["RSQ-4", "Q-API-5"], [
    rsq("q", 10, 0, ["int32", "int32"]), enq_many("q", [[1, 2, 3, 4], [-1, -2, -3, -4]]),
    *[deq("q", rec="bag:b") for _ in range(4)], bag("b"),
], tf_test=RT + "testMultiEnqueueAndDequeue"))

add(scenario("rsq_empty_dequeue_many_with_no_shape", ["Q-DEQ-2", "RSQ-6"], [
    rsq("q", 10, 0, ["float32"], None), enq("q", [10.0]),
    deq_many("q", 0), deq_up_to("q", 0),
], tf_test=RT + "testEmptyDequeueManyWithNoShape+testEmptyDequeueUpToWithNoShape",
   note="[TF R4]"))

add(scenario("rsq_empty_dequeue_many", ["Q-DEQ-2"], [
    rsq("q", 10, 5, ["float32"], [[]]), deq_many("q", 0), deq_up_to("q", 0),
    enq("q", [10.0]), deq_many("q", 0), close("q"), deq_many("q", 0),
], tf_test=RT + "testEmptyDequeueMany+testEmptyDequeueUpTo"))

add(scenario("rsq_big_enqueue_many", ["Q-ENQ-3"], [
    rsq("q", 5, 0, ["int32"]), *started("h", enq_many("q", [list(range(10))])),
    size("q"), deq_many("q", 10, rec="sorted"), wait("h"), size("q"),
], tf_test=RT + "testBigEnqueueMany"))

add(scenario("rsq_big_dequeue_many", ["Q-DEQ-3"], [
    rsq("q", 2, 0, ["int32"]), *started("h", deq_many("q", 4, rec="sorted")),
    enq("q", [0]), enq("q", [1]), enq("q", [2]), enq("q", [3]), wait("h"),
], tf_test=RT + "testBigDequeueMany", note="[TF X3]"))

add(scenario("rsq_dequeue_from_closed_queue", ["RSQ-3", "RSQ-6"], [
    rsq("q", 10, 2, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]), close("q"),
    *[deq("q", rec="bag:b") for _ in range(4)], bag("b"), deq("q"),
], tf_test=RT + "testDequeueFromClosedQueue"))

add(scenario("rsq_blocking_dequeue_from_closed_queue", ["RSQ-2", "RSQ-3"], [
    rsq("q", 10, 2, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    deq("q", rec="bag:b"), deq("q", rec="bag:b"), *started("h", deq("q", rec="bag:b")),
    size("q"), close("q"), wait("h"), deq("q", rec="bag:b"), deq("q"), bag("b"),
], tf_test=RT + "testBlockingDequeueFromClosedQueue"))

add(scenario("rsq_blocking_dequeue_from_closed_empty_queue", ["Q-CLOSE-4"], [
    rsq("q", 10, 0, ["float32"]), *started("h", deq("q")), close("q"), wait("h"),
], tf_test=RT + "testBlockingDequeueFromClosedEmptyQueue"))

add(scenario("rsq_blocking_dequeue_many_from_closed_queue", ["Q-DEQ-4", "RSQ-6"], [
    rsq("q", 10, 0, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    deq_many("q", 4, rec="sorted"), *started("h", deq_many("q", 4)), close("q"), wait("h"),
], tf_test=RT + "testBlockingDequeueManyFromClosedQueue"))

add(scenario("rsq_blocking_dequeue_up_to_from_closed_queue_returns_remainder",
             ["Q-DEQ-5", "RSQ-3"], [
    rsq("q", 10, 0, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    deq_up_to("q", 3, rec="bag:b"), *started("h", deq_up_to("q", 3, rec="bag:b")),
    close("q"), wait("h"), bag("b"), size("q"),
], tf_test=RT + "testBlockingDequeueUpToFromClosedQueueReturnsRemainder"))

add(scenario("rsq_blocking_dequeue_up_to_smaller_than_min_after_dequeue",
             ["RSQ-2", "RSQ-3", "Q-DEQ-5"], [
    rsq("q", 10, 2, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    *started("h", deq_up_to("q", 3, rec="len")), size("q"), close("q"), wait("h"),
    deq_up_to("q", 3, rec="len"), size("q"),
], tf_test=RT + "testBlockingDequeueUpToSmallerThanMinAfterDequeue"))

add(scenario("rsq_blocking_dequeue_many_with_elements_remaining", ["Q-DEQ-4", "RSQ-3"], [
    rsq("q", 10, 0, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    deq_many("q", 3, rec="bag:b"), *started("h", deq_many("q", 3)), size("q"),
    close("q"), wait("h"), size("q"), deq_many("q", 1, rec="bag:b"), bag("b"),
], tf_test=RT + "testBlockingDequeueManyFromClosedQueueWithElementsRemaining"))

add(scenario("rsq_blocking_dequeue_many_from_closed_empty_queue", ["Q-DEQ-4", "RSQ-6"], [
    rsq("q", 10, 5, ["float32"]), *started("h", deq_many("q", 4)), close("q"), wait("h"),
], tf_test=RT + "testBlockingDequeueManyFromClosedEmptyQueue"))

add(scenario("rsq_blocking_dequeue_up_to_from_closed_empty_queue", ["Q-DEQ-5", "RSQ-6"], [
    rsq("q", 10, 5, ["float32"]), *started("h", deq_up_to("q", 4)), close("q"), wait("h"),
], tf_test=RT + "testBlockingDequeueUpToFromClosedEmptyQueue"))

add(scenario("rsq_enqueue_to_closed_queue", ["Q-ENQ-2", "RSQ-6"], [
    rsq("q", 10, 4, ["float32"], None), enq("q", [10.0]), close("q"), enq("q", [20.0]),
    size("q"),
], tf_test=RT + "testEnqueueToClosedQueue"))

add(scenario("rsq_enqueue_many_to_closed_queue", ["Q-ENQ-2", "RSQ-6"], [
    rsq("q", 10, 5, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]), close("q"),
    enq_many("q", [[50.0]]), size("q"),
], tf_test=RT + "testEnqueueManyToClosedQueue"))

add(scenario("rsq_blocking_enqueue_to_full_queue", ["Q-ENQ-2"], [
    rsq("q", 4, 0, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    *started("h", enq("q", [50.0])), deq("q", rec="bag:b"), wait("h"),
    *[deq("q", rec="bag:b") for _ in range(4)], bag("b"),
], tf_test=RT + "testBlockingEnqueueToFullQueue"))

add(scenario("rsq_blocking_enqueue_many_to_full_queue", ["Q-ENQ-3"], [
    rsq("q", 4, 0, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    *started("h", enq_many("q", [[50.0, 60.0]])), deq("q", rec="bag:b"), pending("h"),
    deq("q", rec="bag:b"), wait("h"), deq_many("q", 4, rec="bag:b"), bag("b"),
], tf_test=RT + "testBlockingEnqueueManyToFullQueue"))

add(scenario("rsq_blocking_enqueue_to_closed_queue", ["Q-CLOSE-1"], [
    rsq("q", 4, 0, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    *started("e", enq("q", [50.0])), *started("c", close("q")), is_closed("q"),
    deq("q", rec="bag:b"), wait("e"), wait("c"), is_closed("q"), enq("q", [60.0]),
    deq_up_to("q", 10, rec="bag:b"), bag("b"),
], tf_test=RT + "testBlockingEnqueueToClosedQueue"))

add(scenario("rsq_blocking_enqueue_many_to_closed_queue", ["Q-CLOSE-1", "Q-ENQ-3"], [
    rsq("q", 4, 0, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0]]),
    *started("e", enq_many("q", [[50.0, 60.0]])), size("q"), *started("c", close("q")),
    deq("q", rec="bag:b"), wait("e"), wait("c"), enq_many("q", [[70.0]]),
    deq_up_to("q", 10, rec="bag:b"), bag("b"),
], tf_test=RT + "testBlockingEnqueueManyToClosedQueue"))

add(scenario("rsq_constructor_checks", ["RSQ-1"], [
    rsq("a", 10, 10, ["int32"]), rsq("b", 10, 11, ["int32"]), rsq("c", 10, -1, ["int32"]),
    rsq("d", -1, 5, ["int32"]), enq_many("d", [list(range(8))]), size("d"),
], note="[TF R1]"))

add(scenario("rsq_min_after_dequeue", ["RSQ-2", "RSQ-3"], [
    rsq("q", 10, 2, ["int32"]), enq_many("q", [[1, 2, 3, 4]]),
    deq("q", rec="bag:b"), deq("q", rec="bag:b"), deq("q", timeout=0.2),
    deq_many("q", 1, timeout=0.2), size("q"),
    enq_many("q", [[5, 6, 7]]), deq_many("q", 3, rec="bag:b"), size("q"),
    close("q"), deq_up_to("q", 5, rec="bag:b"), deq("q"), bag("b"),
], note="[TF R2]"))

add(scenario("rsq_timeout_partial_dequeue_many", ["RSQ-2", "Q-DEQ-6"], [
    rsq("q", 10, 1, ["int32"]), enq_many("q", [[1, 2, 3]]),
    deq_many("q", 4, timeout=0.2), size("q", tag="size"),
], note="[TF R2b]", deviation=deviation(
    "DEV-Q-1", SPEC_Q, tf={"size": OK(1)}, coordkit={"size": OK(3)},
    note="TF discards the elements a timed-out dequeue_many held; coordkit puts them back.")))

add(scenario("rsq_partial_dequeue_many_restored_on_close", ["RSQ-2", "RSQ-3", "Q-DEQ-4"], [
    rsq("q", 10, 1, ["int32"]), enq_many("q", [[1, 2, 3]]),
    *started("h", deq_many("q", 4)), size("q"), close("q"), wait("h"), size("q"),
    deq_up_to("q", 5, rec="sorted"),
], note="[TF R2b] (restored elements are appended)"))

add(scenario("rsq_dequeue_up_to_after_close_ignores_min_after_dequeue", ["RSQ-3"], [
    rsq("q", 10, 3, ["int32"]), enq_many("q", [[1, 2]]), close("q"),
    deq_up_to("q", 5, rec="sorted"), deq_up_to("q", 5),
], note="[TF R2]"))

add(scenario("rsq_same_seed_same_order", ["RSQ-5"], [
    rsq("a", 10, 0, ["int32"], seed=5), rsq("b", 10, 0, ["int32"], seed=5),
    enq_many("a", [list(range(10))]), enq_many("b", [list(range(10))]),
    deq_many("a", 10, rec="sorted"), deq_many("b", 10, rec="sorted"),
], note="[TF R3] order itself is not compared (RSQ-5); each output is a permutation"))

# ======================================================================================
# 5. PaddingFIFOQueue
# ======================================================================================

add(scenario("pad_dequeue_many_pads_per_batch", ["PAD-3", "PAD-4"], [
    padding("q", 10, ["string", "int32", "bool"], [[None], [1, None], [None]]),
    enq("q", [[b"a"], [[1]], [True]]),
    enq("q", [[b"ab", b"c", b"d"], [[1, 2]], [True, True]]),
    enq("q", [[], [[]], []]),
    deq_many("q", 3),
    enq("q", [[], [[]], []]), deq_many("q", 1),
    enq("q", [[b"xyz"], [[1, 2, 3]], [False]]), deq("q"),
], tf_test=PT + "testMultiDequeueManyWithPartiallyKnownShapesAndVariableSizeInput",
   note="[TF PAD-P1]"))

add(scenario("pad_empty_dequeue_many_with_dynamic_shape", ["PAD-5", "Q-DEQ-2"], [
    padding("q", 10, ["float32"], [[None]]), enq("q", [[10.0]]),
    deq_many("q", 0), deq_up_to("q", 0), size("q"),
], tf_test=PT + "testEmptyDequeueManyWithDynamicShape+testEmptyDequeueUpToWithDynamicShape"))

add(scenario("pad_construct_with_no_shape", ["PAD-1"], [
    padding("q", 10, ["float32"], None),
    padding("r", 10, ["float32", "int32"], [[None]]),
], tf_test=PT + "testConstructPaddingFIFOQueueWithNoShape", note="[TF PAD-P1]"))

add(scenario("pad_enqueue_wrong_partially_known_shape", ["PAD-2"], [
    padding("q", 10, ["int32", "int32"], [[2, None], [None, 3]]),
    enq("q", [[[1, 2], [3, 4]], [[1, 2, 3, 4]] * 3]),
    enq("q", [[[1], [2]], [[1, 2, 3]]]), size("q"),
], tf_test=PT + "testEnqueueWrongPartiallyKnownShapeAtRuntime"))

add(scenario("pad_enqueue_many_wrong_partially_known_shape", ["PAD-2"], [
    padding("q", 10, ["int32", "int32"], [[2, None], [None, 3]]),
    enq_many("q", [[[[1, 2], [3, 4]]] * 2, [[[1, 2, 3, 4]] * 3] * 2]), size("q"),
], tf_test=PT + "testEnqueueDequeueManyWrongPartiallyKnownShape"))

add(scenario("pad_single_dequeue_is_not_padded", ["PAD-4"], [
    padding("q", 10, ["int32"], [[None]]), enq("q", [[1, 2, 3]]), enq("q", [[4]]),
    deq("q"), deq("q"),
], tf_test=PT + "testDequeue"))

add(scenario("pad_dequeue_up_to_after_close_pads_remainder", ["PAD-7", "Q-DEQ-5"], [
    padding("q", 10, ["int32"], [[None]]), enq("q", [[1, 2, 3]]), enq("q", [[4]]),
    close("q"), deq_up_to("q", 5), deq_up_to("q", 5),
], tf_test=PT + "testDequeueUpToFromClosedQueueReturnsRemainder", note="[TF PAD-P2]"))

add(scenario("pad_closed_error_texts", ["PAD-7"], [
    padding("q", 10, ["int32"], [[None]]), enq("q", [[1]]), close("q"), enq("q", [[2]]),
    deq_many("q", 2), deq("q"), deq("q"), deq_up_to("q", 2),
], tf_test=PT + "testEnqueueToClosedQueue+testDequeueFromClosedQueue", note="[TF X7]"))

add(scenario("pad_closed_blocking_dequeue_many_restores_partial_batch", ["PAD-7", "Q-DEQ-4"], [
    padding("q", 10, ["int32"], [[None]]), enq("q", [[1]]), enq("q", [[2, 3]]),
    *started("h", deq_many("q", 3)), size("q"), close("q"), wait("h"), size("q"),
    deq_many("q", 2),
], tf_test=PT + "testClosedBlockingDequeueManyRestoresPartialBatch"))

add(scenario("pad_blocking_dequeue_many_from_closed_empty_queue", ["PAD-7", "Q-CLOSE-4"], [
    padding("q", 10, ["int32"], [[None]]), *started("h", deq_many("q", 2)),
    close("q"), wait("h"),
], tf_test=PT + "testBlockingDequeueManyFromClosedEmptyQueue"))

add(scenario("pad_enqueue_many_fixed_batches", ["PAD-3", "Q-ENQ-3"], [
    padding("q", 10, ["int32", "int32"], [[None], []]),
    enq_many("q", [[[1, 2], [3, 4], [5, 6]], [1, 2, 3]]),
    deq_up_to("q", 2), enq("q", [[7, 8, 9], 4]), deq_many("q", 2),
], tf_test=PT + "testMultiEnqueueManyWithPartiallyKnownShapes+testMultiDequeueManyWithPartiallyKnownShapes"))

add(scenario("pad_high_rank_dequeue_many", ["PAD-3", "PAD-6"], [
    padding("q", 10, ["int32"], [[None, None, None, None]]),
    enq("q", [[[[[1]]]]]), enq("q", [[[[[1, 2]]], [[[3, 4]]]]]), deq_many("q", 2),
], tf_test=PT + "testPartiallyKnownHighDimension"))

add(scenario("pad_rank5_batch_unimplemented", ["PAD-6"], [
    padding("q", 10, ["int32"], [[None, None, None, None, None]]),
    enq("q", [[[[[[0]]]]]]), enq("q", [[[[[[1]]]]]]), enq("q", [[[[[[2, 3]]]]]]), deq("q"),
    deq_many("q", 2, tag="batch"), size("q", tag="size"),
], note="[TF PAD-P1]", deviation=deviation(
    "DEV-Q-6", SPEC_Q,
    tf={"batch": ERR("UnimplementedError", "CopyElementToLargerSlice Unhandled rank: 5"),
        "size": OK(0)},
    coordkit={"batch": OK([[[[[[1, 0]]]]], [[[[[2, 3]]]]]]), "size": OK(0)},
    note="TF fails the batch and loses its elements; coordkit pads any rank.")))

# ======================================================================================
# 6. PriorityQueue
# ======================================================================================

_PRIOS = [7, 3, 11, 0, 19, 5, 2, 13, 17, 1, 8, 4, 15, 9, 6, 14, 12, 18, 10, 16]

add(scenario("pq_round_trip_insert_read_once_sorts", ["PQ-2", "PQ-4"], [
    pq("q", 100, ["int64"]), *[enq("q", [p, 10 * p]) for p in _PRIOS], deq_many("q", 20),
], tf_test=PQT + "testRoundTripInsertReadOnceSorts"))

add(scenario("pq_round_trip_insert_once_read_many_sorts", ["PQ-2", "PQ-4"], [
    pq("q", 100, ["string"]),
    enq_many("q", [_PRIOS, [f"v{p}".encode() for p in _PRIOS]]),
    deq_many("q", 5), deq_many("q", 5), deq_many("q", 5), deq_many("q", 5), size("q"),
], tf_test=PQT + "testRoundTripInsertOnceReadManySorts"))

add(scenario("pq_round_trip_insert_once_read_once_lots_sorts", ["PQ-2"], [
    pq("q", 100, ["int64"]), enq_many("q", [_PRIOS[:12], [-p for p in _PRIOS[:12]]]),
    *[deq("q") for _ in range(12)], size("q"),
], tf_test=PQT + "testRoundTripInsertOnceReadOnceLotsSorts"))

add(scenario("pq_round_trip_parallel_enqueue", ["PQ-2"], [
    pq("q", 100, ["int64"]),
    *[start(f"h{i}", enq("q", [p, p])) for i, p in enumerate(_PRIOS[:10])],
    *[wait(f"h{i}") for i in range(10)], deq_many("q", 10),
], tf_test=PQT + "testRoundTripInsertMultiThreadedReadOnceSorts"))

add(scenario("pq_ties_follow_heap_order", ["PQ-2"], [
    pq("q", 20, ["int64"]), enq_many("q", [[0] * 10, list(range(10))]), deq_many("q", 10),
    *[enq("q", [0, t]) for t in range(10)], *[deq("q") for _ in range(10)],
], note="[TF PQ4]"))

add(scenario("pq_mixed_priorities_order", ["PQ-2"], [
    pq("q", 20, ["string"]),
    *[enq("q", [p, v]) for p, v in ((5, b"a"), (1, b"b"), (3, b"c"), (1, b"d"), (-2, b"e"),
                                    (3, b"f"), (1, b"g"))],
    deq_many("q", 7),
    *[enq("q", [p, v]) for p, v in ((5, b"a"), (1, b"b"), (3, b"c"), (1, b"d"), (-2, b"e"),
                                    (3, b"f"), (1, b"g"))],
    *[deq("q") for _ in range(7)],
], note="[TF PQ1]"))

add(scenario("pq_inserting_non_scalar_fails", ["PQ-3"], [
    pq("q", 10, ["string"]), enq("q", [[1, 2], b"x"]),
    enq_many("q", [[[1, 2], [3, 4]], [b"a", b"b"]]), size("q"),
], tf_test=PQT + "testInsertingNonScalarFails", note="[TF PQ2]"))

add(scenario("pq_dequeue_many_waits_for_full_batch", ["PQ-4"], [
    pq("q", 10, ["int64"]), enq("q", [2, 20]), enq("q", [1, 10]),
    deq_many("q", 3, timeout=0.2), size("q"), deq_many("q", 2),
], note="[TF PQ1]"))

add(scenario("pq_dequeue_many_more_than_capacity_never_completes", ["PQ-4", "Q-API-7"], [
    pq("q", 2, ["int64"]), enq("q", [0, 0]), enq("q", [1, 1]),
    enq("q", [2, 2], timeout=0.2), deq_many("q", 3, timeout=0.3), size("q"),
], note="[TF X2]"))

add(scenario("pq_blocking_dequeue_many_then_close", ["PQ-4", "Q-CLOSE-4"], [
    pq("q", 10, ["int64"]), *started("h", deq_many("q", 3)), enq("q", [5, 50]), size("q"),
    close("q"), wait("h"), size("q"), deq("q"),
], note="PQ-4: closed with 0 < size < n"))

add(scenario("pq_blocking_dequeue", ["Q-DEQ-1", "PQ-2"], [
    pq("q", 10, ["int64"]), *started("h", deq("q")), enq("q", [5, 50]), wait("h"),
    *started("h2", deq_many("q", 2)), enq("q", [9, 90]), pending("h2"), enq("q", [1, 10]),
    wait("h2"),
]))

add(scenario("pq_closed_errors", ["PQ-3", "PQ-4", "Q-CLOSE-2"], [
    pq("q", 10, ["string"]), enq("q", [1, b"a"]), close("q"), enq("q", [2, b"b"]),
    deq_many("q", 2), close("q"), deq("q"), deq("q"), deq_up_to("q", 5), deq_many("q", 0),
], note="[TF PQ1]"))

add(scenario("pq_dequeue_up_to_exactly_n_after_close", ["PQ-5"], [
    pq("q", 10, ["int64"]), enq_many("q", [[3, 1, 2], [30, 10, 20]]), close("q"),
    deq_up_to("q", 3), deq_many("q", 0),
], note="[TF PQ3]"))

add(scenario("pq_dequeue_up_to_after_close_with_fewer", ["PQ-5"], [
    pq("q", 10, ["int64"]), enq("q", [2, 20]), enq("q", [1, 10]), close("q"),
    deq_up_to("q", 5, tag="up_to"), size("q", tag="size"),
], note="[TF PQ3]", deviation=deviation(
    "DEV-Q-2", SPEC_Q,
    tf={"up_to": insufficient("PriorityQueue", 3, 0), "size": OK(0)},
    coordkit={"up_to": OK([[1, 2], [10, 20]]), "size": OK(0)},
    note="TF pops the remaining elements, fails and loses them; coordkit returns them.")))

add(scenario("pq_shapes_none", ["PQ-1"], [
    pq("q", 10, ["string"], None, tag="make"),
], note="[TF PQ2]", deviation=deviation(
    "DEV-Q-8", SPEC_Q,
    tf={"make": ERR("TypeError", "Expected list for 'shapes' argument to 'priority_queue_v2' "
                                 "Op, not None.")},
    coordkit={"make": OK(None)},
    note="TF's op wrapper fails on shapes=None; coordkit accepts it.")))

add(scenario("pq_dequeue_up_to_open_waits", ["PQ-5", "Q-DEQ-5"], [
    pq("q", 10, ["int64"]), *started("h", deq_up_to("q", 2)), enq("q", [3, 30]),
    pending("h"), size("q"), enq("q", [1, 10]), wait("h"),
]))

# ======================================================================================
# 7. More ports of TF's tests, and constructor rules
# ======================================================================================

add(scenario("qr_start_queue_runners", ["RUNNER-9", "RUNNER-3"], [
    var("v"), fifo("q", 10, ["int64"]),
    qr("r", "q", [op_count_enqueue("q", "v", 3, "enq")]), qr_add("r"),
    qr_start_all("ts"), join_threads("ts"), size("q"), is_closed("q"), var_value("v"),
    deq_many("q", 3),
], tf_test=QRT + "testStartQueueRunners"))

add(scenario("qr_start_queue_runners_with_coord", ["RUNNER-9", "RUNNER-3", "RUNNER-5"], [
    var("v1"), var("v2"), fifo("q1", 10, ["int64"]), fifo("q2", 10, ["int64"]), coord(),
    qr("r1", "q1", [op_count_enqueue("q1", "v1", 2, "enq1")]),
    qr("r2", "q2", [op_count_enqueue("q2", "v2", 4, "enq2")]),
    qr_add("r1"), qr_add("r2"), qr_start_all("ts", c="c"),
    join_threads("ts[0]"), join_threads("ts[2]"), size("q1"), size("q2"),
    is_closed("q1"), is_closed("q2"), should_stop(),
    request_stop(), join(), alive("ts"), is_closed("q1"), is_closed("q2"),
], tf_test=QRT + "testStartQueueRunners"))

add(scenario("queue_constructor_errors", ["Q-API-1", "RSQ-1", "PAD-1"], [
    queue("a", "FIFOQueue", 10, ["int32", "int32"], [[]]),
    queue("b", "FIFOQueue", 10, ["int32"], [[None]], tag="partial"),
    queue("c", "FIFOQueue", 10, ["int32"], [[]], names=["x", "y"]),
    queue("d", "FIFOQueue", 10, ["int32"], [2]), enq("d", [[1, 2]]), deq_many("d", 1),
    queue("e", "FIFOQueue", 10, ["int32"], []), enq("e", [5]), deq_many("e", 1),
    queue("f", "RandomShuffleQueue", 0, ["int32"], [[]], min_after_dequeue=0),
    queue("g", "PaddingFIFOQueue", 10, ["int32", "int32"], [[None]]),
], note="[TF Q2, R1, PAD-P1]; a single shape such as [2] or [] is wrapped into a list",
   deviation=deviation(
    "DEV-Q-12", SPEC_Q,
    tf={"partial": ERR("ValueError", "All shapes must be fully defined: [TensorShape([None])]")},
    coordkit={"partial": ERR("ValueError", "All shapes must be fully defined: [(None,)]")},
    note="coordkit's shapes are tuples, TF's TensorShapes (visible in the message).")))

add(scenario("pq_shapes_length_mismatch", ["PQ-1", "Q-API-1"], [
    pq("q", 10, ["int32"], [[], []]),
], note="TF counts the priority in both numbers"))

add(scenario("fifo_half", ["Q-DTYPE-1", "Q-API-5"], [
    fifo("q", 10, ["float16"]), enq("q", [1.5]), enq("q", [0.1]), enq("q", [70000.0]),
    enq_many("q", [[2.0, -0.5]]), deq("q"), deq("q"), deq("q"), deq_many("q", 2),
], tf_test=FQ + "testEnqueueHalf+testDequeueHalf"))

add(scenario("fifo_enqueue_many_empty_type_conversion", ["Q-ENQ-4", "Q-API-4"], [
    fifo("q", 10, ["float32", "int32", "string"]), enq_many("q", [[], [], []]), size("q"),
    deq_many("q", 0),
], tf_test=FQ + "testEnqueueManyEmptyTypeConversion"))

add(scenario("fifo_dequeue_many_with_varying_counts", ["Q-DEQ-2", "Q-DEQ-3"], [
    fifo("q", 100, ["int32"]), enq_many("q", [list(range(20))]),
    *[deq_many("q", k) for k in (2, 0, 5, 1, 3)], deq_up_to("q", 4), size("q"),
    close("q"), deq_up_to("q", 10), deq_many("q", 0),
], tf_test=FQU + "testDequeueManyWithTensorParameter"))

add(scenario("fifo_mixture_of_enqueue_and_enqueue_many", ["Q-ENQ-3", "Q-MODEL-3"], [
    fifo("q", 3, ["int32"]), *started("a", enq_many("q", [[0, 1, 2, 3]])),
    *started("b", enq("q", [4])), *started("c", enq_many("q", [[5, 6]])),
    *started("d", enq_many("q", [[]])), deq_many("q", 7), wait("a"), wait("b"), wait("c"),
    wait("d"), size("q"),
], tf_test=FQP + "testMixtureOfEnqueueAndEnqueueMany",
   note="an empty enqueue_many returns at once, even behind blocked enqueues (Q-ENQ-4)"))

add(scenario("fifo_mixture_of_dequeue_and_dequeue_many", ["Q-DEQ-3", "Q-MODEL-3"], [
    fifo("q", 3, ["int32"]), *started("p", enq_many("q", [list(range(10))])),
    deq("q"), deq_many("q", 3), deq_many("q", 0), deq("q"), deq_many("q", 5), wait("p"),
    size("q"),
], tf_test=FQP + "testMixtureOfDequeueAndDequeueMany"))

add(scenario("fifo_parallel_enqueue_many", ["Q-ENQ-3"], [
    fifo("q", 100, ["int32"]),
    *[start(f"h{i}", enq_many("q", [list(range(10 * i, 10 * i + 10))])) for i in range(5)],
    *[wait(f"h{i}") for i in range(5)], size("q"), deq_many("q", 50, rec="sorted"),
], tf_test=FQP + "testParallelEnqueueMany"))

add(scenario("fifo_parallel_dequeue_many", ["Q-DEQ-3"], [
    fifo("q", 1000, ["int32"]), enq_many("q", [list(range(100))]),
    *[start(f"h{i}", deq_many("q", 10, rec="bag:b")) for i in range(10)],
    *[wait(f"h{i}") for i in range(10)], bag("b"), size("q"),
], tf_test=FQP + "testParallelDequeueMany"))

add(scenario("fifo_parallel_enqueue_and_dequeue", ["Q-ENQ-3", "Q-DEQ-3", "Q-MODEL-3"], [
    fifo("q", 5, ["int32"]),
    *[start(f"p{i}", enq_many("q", [list(range(4 * i, 4 * i + 4))])) for i in range(5)],
    *[start(f"c{i}", deq_many("q", 4, rec="bag:b")) for i in range(5)],
    *[wait(f"p{i}") for i in range(5)], *[wait(f"c{i}") for i in range(5)],
    bag("b"), size("q"),
], tf_test=FQP + "testParallelEnqueueAndDequeue"))

add(scenario("rsq_enqueue_with_shape", ["Q-ENQ-1", "RSQ-6"], [
    rsq("q", 10, 0, ["float32"], [[3, 2]]), enq("q", [[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]]),
    enq("q", [[1.0, 2.0, 3.0]]), size("q"),
], tf_test=RT + "testEnqueueWithShape"))

add(scenario("rsq_enqueue_many_with_shape", ["Q-ENQ-3"], [
    rsq("q", 10, 0, ["int32", "int32"], [[], [2]]),
    enq_many("q", [[1, 2, 3, 4], [[1, 1], [2, 2], [3, 3], [4, 4]]]), size("q"),
    deq_many("q", 4, rec="bagrows:b"), bag("b"),
], tf_test=RT + "testEnqueueManyWithShape"))

add(scenario("rsq_scalar_shapes", ["Q-API-5", "RSQ-4"], [
    rsq("q", 10, 0, ["int32", "int32"], [[], [1]]),
    enq_many("q", [[10, 20, 30], [[1], [2], [3]]]), enq("q", [40, [4]]),
    *[deq("q", rec="bag:b") for _ in range(4)], bag("b"),
], tf_test=RT + "testScalarShapes"))

add(scenario("rsq_enqueue_and_blocking_dequeue", ["Q-DEQ-1", "Q-MODEL-3"], [
    rsq("q", 3, 0, ["float32"]), *started("a", deq("q", rec="bag:b")),
    *started("c", deq("q", rec="bag:b")), enq("q", [10.0]), enq("q", [20.0]),
    wait("a"), wait("c"), bag("b"),
], tf_test=RT + "testEnqueueAndBlockingDequeue"))

add(scenario("rsq_size", ["Q-API-6"], [
    rsq("q", 10, 0, ["float32"]), size("q"), enq("q", [10.0]), size("q"),
    deq("q"), size("q"),
], tf_test=RT + "testQueueSizeEmpty+testQueueSizeAfterEnqueueAndDequeue"))

add(scenario("rsq_enqueue_many", ["Q-ENQ-3"], [
    rsq("q", 10, 0, ["float32"]), enq_many("q", [[10.0, 20.0, 30.0, 40.0]]),
    enq_many("q", [[10.0, 20.0, 30.0, 40.0]]), size("q"),
    *[deq("q", rec="bag:b") for _ in range(8)], bag("b"), size("q"),
], tf_test=RT + "testEnqueueMany"))

add(scenario("rsq_empty_enqueue_many", ["Q-ENQ-4"], [
    rsq("q", 10, 5, ["float32"], [[2, 3]]), enq_many("q", [[]]), size("q"),
], tf_test=RT + "testEmptyEnqueueMany"))

add(scenario("rsq_dequeue_many_and_up_to", ["Q-DEQ-3", "Q-DEQ-5"], [
    rsq("q", 10, 0, ["float32"]), enq_many("q", [[float(x) for x in range(10)]]),
    deq_many("q", 4, rec="bag:b"), deq_up_to("q", 4, rec="bag:b"), size("q"), close("q"),
    deq_up_to("q", 10, rec="bag:b"), bag("b"),
], tf_test=RT + "testDequeueMany+testDequeueUpToNoBlocking"))

add(scenario("rsq_blocking_dequeue_many", ["Q-DEQ-3"], [
    rsq("q", 10, 0, ["float32"]), *started("h", deq_many("q", 4, rec="sorted")),
    enq_many("q", [[10.0, 20.0, 30.0, 40.0]]), wait("h"),
], tf_test=RT + "testBlockingDequeueMany"))

add(scenario("rsq_blocking_dequeue_up_to", ["Q-DEQ-5"], [
    rsq("q", 10, 0, ["float32"]), *started("h", deq_up_to("q", 4, rec="sorted")),
    enq_many("q", [[10.0, 20.0]]), pending("h"), enq_many("q", [[30.0, 40.0]]), wait("h"),
], tf_test=RT + "testBlockingDequeueUpTo"))

add(scenario("rsq_dequeue_with_varying_counts", ["Q-DEQ-2", "RSQ-2"], [
    rsq("q", 100, 0, ["int32"]), enq_many("q", [list(range(20))]),
    *[deq_many("q", k, rec="bag:b") for k in (2, 0, 5, 1)],
    *[deq_up_to("q", k, rec="bag:b") for k in (3, 0, 4)], size("q"), close("q"),
    deq_up_to("q", 10, rec="bag:b"), bag("b"),
], tf_test=RT + "testDequeueManyWithTensorParameter+testDequeueUpToWithTensorParameter"))

add(scenario("rsq_parallel_dequeue_up_to_random_partition", ["Q-DEQ-5", "RSQ-3"], [
    rsq("q", 100, 0, ["int32"]), enq_many("q", [list(range(40))]), close("q"),
    *[start(f"h{i}", deq_up_to("q", k, rec="bag:b")) for i, k in enumerate((1, 2, 3, 4, 30))],
    *[wait(f"h{i}") for i in range(5)], bag("b"), size("q"),
], tf_test=RT + "testParallelDequeueUpTo+testParallelDequeueUpToRandomPartition"))

add(scenario("rsq_parallel_enqueue_and_dequeue_many", ["Q-ENQ-3", "Q-DEQ-3"], [
    rsq("q", 5, 0, ["int32"]),
    *[start(f"p{i}", enq_many("q", [list(range(3 * i, 3 * i + 3))])) for i in range(4)],
    *[start(f"c{i}", deq_many("q", 3, rec="bag:b")) for i in range(4)],
    *[wait(f"p{i}") for i in range(4)], *[wait(f"c{i}") for i in range(4)], bag("b"),
], tf_test=RT + "testParallelEnqueueMany+testParallelDequeueMany"))

add(scenario("pad_size_and_empty_enqueue_many", ["Q-API-6", "Q-ENQ-4", "PAD-5"], [
    padding("q", 10, ["int32"], [[None, 3]]), size("q"), enq_many("q", [[]]), size("q"),
    enq("q", [[[1, 2, 3]]]), size("q"), deq_many("q", 0), deq("q"), size("q"),
], tf_test=PT + "testQueueSizeEmpty+testEmptyEnqueueMany"))

add(scenario("pad_batch_size_mismatch", ["Q-ENQ-1", "PAD-2"], [
    padding("q", 10, ["int32", "int32"], [[None], [None]]),
    enq_many("q", [[[1], [2], [3]], [[1], [2]]]), size("q"),
], tf_test=PT + "testBatchSizeMismatch"))

add(scenario("pad_dtypes_are_padded_with_zeros", ["PAD-3"], [
    padding("q", 10, ["float32", "int64", "bool", "string"], [[None]] * 4),
    enq("q", [[1.5], [1, 2, 3], [True], [b"x", b"y"]]),
    enq("q", [[], [7], [True, True, True], []]),
    deq_many("q", 2),
], tf_test=PT + "testDtypes"))

add(scenario("pad_blocking_dequeue_up_to", ["Q-DEQ-5", "PAD-3"], [
    padding("q", 10, ["int32"], [[None]]), *started("h", deq_up_to("q", 3)),
    enq("q", [[1]]), enq("q", [[2, 3]]), pending("h"), enq("q", [[]]), wait("h"),
], tf_test=PT + "testBlockingDequeueUpTo"))

add(scenario("pad_big_dequeue_many", ["Q-DEQ-3", "PAD-3"], [
    padding("q", 2, ["int32"], [[None]]), *started("h", deq_many("q", 4)),
    enq("q", [[1]]), enq("q", [[2, 2]]), enq("q", [[3, 3, 3]]), enq("q", [[]]), wait("h"),
], tf_test=PT + "testBigDequeueMany"))

add(scenario("pq_inserting_non_int64_fails", ["PQ-3"], [
    pq("q", 10, ["string"]), enq("q", [b"x", b"y"]), enq("q", [1.5, b"y"]),
    enq("q", [True, b"t"]), deq("q"),
], tf_test=PQT + "testInsertingNonInt64Fails"))

add(scenario("pq_round_trip_fills_capacity_multithreaded", ["PQ-2", "PQ-4"], [
    pq("q", 10, ["int64"]),
    *[start(f"p{i}", enq_many("q", [[(7 * (5 * i + j)) % 20 for j in range(5)],
                                     [5 * i + j for j in range(5)]])) for i in range(4)],
    *[start(f"c{i}", deq_many("q", 5, rec="bagrows:b")) for i in range(4)],
    *[wait(f"p{i}") for i in range(4)], *[wait(f"c{i}") for i in range(4)],
    bag("b"), size("q"),
], tf_test=PQT + "testRoundTripFillsCapacityMultiThreadedEnqueueAndDequeue"))

add(scenario("pq_insert_many_read_many_multithreaded", ["PQ-2", "PQ-4"], [
    pq("q", 100, ["int64"]),
    *[start(f"p{i}", enq_many("q", [[(11 * (4 * i + j)) % 16 for j in range(4)],
                                     [4 * i + j for j in range(4)]])) for i in range(4)],
    *[wait(f"p{i}") for i in range(4)], size("q"),
    *[start(f"c{i}", deq_many("q", 4, rec="bagrows:b")) for i in range(4)],
    *[wait(f"c{i}") for i in range(4)], bag("b"),
], tf_test=PQT + "testRoundTripInsertManyMultiThreadedReadManyMultithreadedSorts"))

add(scenario("fifo_queues_dont_share", ["Q-API-1"], [
    fifo("q1", 10, ["int32"]), fifo("q2", 10, ["int32"]), enq("q1", [1]), enq("q2", [2]),
    size("q1"), size("q2"), deq("q2"), deq("q1"), close("q1"), is_closed("q2"),
], tf_test=FQ + "testQueuesDontShare"))

add(scenario("pad_dequeue_up_to_variable_input_no_blocking", ["PAD-3", "Q-DEQ-5"], [
    padding("q", 10, ["int32", "string"], [[None], [None, 2]]),
    enq("q", [[1], [[b"a", b"b"]]]), enq("q", [[1, 2, 3], []]), enq("q", [[], [[b"c", b"d"]] * 3]),
    deq_up_to("q", 2), close("q"), deq_up_to("q", 2),
], tf_test=PT + "testMultiDequeueUpToPartiallyKnownShapesAndVariableInputNoBlocking"))

add(scenario("pad_unknown_rank", ["PAD-1"], [
    padding("q", 10, ["int32"], [None]),
], tf_test=PT + "testUnknownRank"))

add(scenario("pq_round_trip_insert_once_read_once_sorts", ["PQ-2", "PQ-4"], [
    pq("q", 100, ["string", "int64"]),
    enq_many("q", [_PRIOS, [f"s{p}".encode() for p in _PRIOS], [-p for p in _PRIOS]]),
    deq_many("q", 20),
], tf_test=PQT + "testRoundTripInsertOnceReadOnceSorts"))

add(scenario("pq_round_trip_insert_many_multithreaded_read_once", ["PQ-2", "PQ-4"], [
    pq("q", 100, ["int64"]),
    *[start(f"p{i}", enq_many("q", [_PRIOS[5 * i:5 * i + 5], _PRIOS[5 * i:5 * i + 5]]))
      for i in range(4)],
    *[wait(f"p{i}") for i in range(4)], deq_many("q", 20),
], tf_test=PQT + "testRoundTripInsertManyMultiThreadedReadOnceSorts"))

add(scenario("rsq_dequeue_in_different_orders", ["RSQ-5"], [
    rsq("a", 10, 5, ["int32"], seed=1729), rsq("b", 10, 5, ["int32"], seed=87539319),
    rsq("c", 10, 5, ["int32"], seed=1729),
    *[enq_many(q, [[1, 2, 3, 4, 5]]) for q in "abc"],
    *[enq_many(q, [[6, 7, 8, 9, 10]]) for q in "abc"],
    *[deq_many(q, 5, rec=f"keep:{q}1") for q in "abc"],
    *[close(q) for q in "abc"],
    *[deq_many(q, 5, rec=f"keep:{q}2") for q in "abc"],
    same("a1", "b1"), same("a2", "b2"), same("a1", "c1"), same("a2", "c2"),
], tf_test=RT + "testDequeueManyInDifferentOrders",
   note="RSQ-5/DEV-Q-4: orders are not TF's, but differ between seeds and repeat per seed"))

add(scenario("rsq_dequeue_up_to_and_single_in_different_orders", ["RSQ-5"], [
    rsq("a", 10, 5, ["int32"], seed=1729), rsq("b", 10, 5, ["int32"], seed=87539319),
    *[enq_many(q, [list(range(1, 11))]) for q in "ab"],
    *[deq_up_to(q, 5, rec=f"keep:{q}1") for q in "ab"],
    *[close(q) for q in "ab"],
    *[deq(q, rec=f"keep:{q}2") for q in "ab"],
    same("a1", "b1"),
], tf_test=RT + "testDequeueUpToInDifferentOrders+testDequeueInDifferentOrders"))

# ======================================================================================
# 8. PaddingFIFOQueue ports derived from the FIFO ones, and the remaining RSQ ports
# ======================================================================================

add(scenario("fifo_enqueue_wrong_type", ["Q-API-4", "Q-DTYPE-1"], [
    fifo("q", 10, ["int32", "float32"]),
    enq("q", [1.5, 2.0]), enq("q", [1, b"x"]), enq("q", ["x", 2.0]),
    enq_many("q", [[1.5, 2.5], [1.0, 2.0]]), enq_many("q", [[1, 2], [b"x", b"y"]]),
    size("q"), enq("q", [1, 2.0]), deq("q"),
], tf_test=FQ + "testEnqueueWrongType",
   note="TF's test feeds tensors of the wrong dtype (a ValueError when the op is built); "
        "here Python values that do not convert to the component dtype fail the call and "
        "store nothing"))


def padding_variant(fifo_name: str, tf_test: str, rules: tuple = ("PAD-7",),
                    name: str | None = None, note: str = "") -> dict:
    """The FIFO scenario ``fifo_name`` run on a PaddingFIFOQueue (PAD-7: the rest is FIFO).

    Every ``fifo(...)`` step becomes ``padding(...)`` with the same name, capacity,
    dtypes and (explicit, required) shapes; every other step is unchanged. The new
    scenario is ``pad_<rest of the name>`` and ports ``tf_test`` (names relative to
    ``PT``, joined with '+'). The FIFO original must have no deviation."""
    src = next(s for s in S if s["name"] == fifo_name)
    assert src["deviation"] is None and not src["tf_subprocess"], fifo_name
    steps = []
    for st in src["steps"]:
        if st["op"] == "make_queue":
            assert st["cls"] == "FIFOQueue" and st.get("shapes") is not None, fifo_name
            st = padding(st["q"], st["capacity"], st["dtypes"], st["shapes"], tag=st.get("tag"))
        steps.append(st)
    rules_all = list(dict.fromkeys([*src["rules"], *rules]))
    return scenario(name or "pad_" + fifo_name.removeprefix("fifo_"), rules_all, steps,
                    tf_test=PT + tf_test, note=note or f"{fifo_name} on a PaddingFIFOQueue")


# (FIFO scenario, the padding test(s) it ports, extra rules)
_PADDING_VARIANTS = [
    ("fifo_enqueue", "testEnqueue", ()),
    ("fifo_enqueue_with_shape", "testEnqueueWithShape", ("PAD-2",)),
    ("fifo_enqueue_many_with_shape", "testEnqueueManyWithShape", ("PAD-3",)),
    ("fifo_parallel_enqueue", "testParallelEnqueue", ()),
    ("fifo_parallel_dequeue", "testParallelDequeue", ()),
    ("fifo_enqueue_and_blocking_dequeue", "testEnqueueAndBlockingDequeue", ()),
    ("fifo_multi_enqueue_and_dequeue", "testMultiEnqueueAndDequeue", ("PAD-4",)),
    ("fifo_size", "testQueueSizeEmpty+testQueueSizeAfterEnqueueAndDequeue", ()),
    ("fifo_enqueue_many", "testEnqueueMany", ()),
    ("fifo_empty_dequeue_many_and_up_to", "testEmptyDequeueMany", ("PAD-5",)),
    ("fifo_multi_enqueue_many", "testMultiEnqueueMany", ("PAD-4",)),
    ("fifo_dequeue_many", "testDequeueMany", ("PAD-3",)),
    ("fifo_dequeue_up_to_no_blocking", "testDequeueUpToNoBlocking", ("PAD-3",)),
    ("fifo_multi_dequeue_many", "testMultiDequeueMany", ("PAD-3", "PAD-4")),
    ("fifo_high_dimension", "testHighDimension", ("PAD-3", "PAD-6")),
    ("fifo_enqueue_wrong_shape_scalar", "testEnqueueWrongShape", ("PAD-2",)),
    ("fifo_enqueue_many_empty_type_conversion", "testEnqueueManyEmptyTypeConversion",
     ("PAD-5",)),
    ("fifo_enqueue_wrong_type", "testEnqueueWrongType", ()),
    ("fifo_parallel_enqueue_many", "testParallelEnqueueMany", ("PAD-3",)),
    ("fifo_parallel_dequeue_many", "testParallelDequeueMany", ("PAD-3",)),
    ("fifo_parallel_dequeue_up_to", "testParallelDequeueUpTo", ("PAD-3",)),
    ("fifo_parallel_enqueue_and_dequeue", "testParallelEnqueueAndDequeue", ("PAD-3",)),
    ("fifo_mixture_of_enqueue_and_enqueue_many", "testMixtureOfEnqueueAndEnqueueMany", ()),
    ("fifo_mixture_of_dequeue_and_dequeue_many", "testMixtureOfDequeueAndDequeueMany",
     ("PAD-3",)),
    ("fifo_blocking_dequeue_many", "testBlockingDequeueMany", ("PAD-3",)),
    ("fifo_dequeue_many_with_varying_counts", "testDequeueManyWithTensorParameter",
     ("PAD-3", "PAD-5")),
    ("fifo_blocking_dequeue_from_closed_queue", "testBlockingDequeueFromClosedQueue", ()),
    ("fifo_blocking_dequeue_from_closed_empty_queue", "testBlockingDequeueFromClosedEmptyQueue",
     ()),
    ("fifo_blocking_dequeue_many_from_closed_queue", "testBlockingDequeueManyFromClosedQueue",
     ()),
    ("fifo_blocking_dequeue_many_but_not_all_from_closed_queue",
     "testBlockingDequeueManyButNotAllFromClosedQueue", ()),
    ("fifo_enqueue_many_larger_than_capacity_with_concurrent_dequeue_many",
     "testEnqueueManyLargerThanCapacityWithConcurrentDequeueMany", ()),
    ("fifo_blocking_dequeue_up_to_from_closed_empty_queue",
     "testBlockingDequeueUpToFromClosedEmptyQueue", ()),
    ("fifo_enqueue_many_to_closed_queue", "testEnqueueManyToClosedQueue", ()),
    ("fifo_blocking_enqueue_to_full_queue", "testBlockingEnqueueToFullQueue", ()),
    ("fifo_blocking_enqueue_many_to_full_queue", "testBlockingEnqueueManyToFullQueue", ()),
    ("fifo_blocking_enqueue_before_close", "testBlockingEnqueueBeforeClose", ()),
    ("fifo_blocking_enqueue_many_before_close", "testBlockingEnqueueManyBeforeClose", ()),
    ("fifo_does_not_lose_value", "testDoesNotLoseValue", ()),
    ("fifo_big_enqueue_many", "testBigEnqueueMany", ()),
]

for _src, _test, _rules in _PADDING_VARIANTS:
    add(padding_variant(_src, _test, ("PAD-7", *_rules)))

add(scenario("rsq_parallel_enqueue", ["Q-ENQ-2", "RSQ-5"], [
    rsq("q", 10, 0, ["float32"]),
    *[start(f"h{i}", enq("q", [float(10 * i)])) for i in range(10)],
    *[wait(f"h{i}") for i in range(10)], size("q"), deq_many("q", 10, rec="sorted"),
], tf_test=RT + "testParallelEnqueue"))

add(scenario("rsq_parallel_dequeue", ["Q-DEQ-1", "RSQ-4"], [
    rsq("q", 10, 0, ["float32"]), enq_many("q", [[float(10 * i) for i in range(10)]]),
    *[start(f"h{i}", deq("q", rec="bag:b")) for i in range(10)],
    *[wait(f"h{i}") for i in range(10)], bag("b"), size("q"),
], tf_test=RT + "testParallelDequeue"))

add(scenario("rsq_multi_enqueue_many", ["Q-ENQ-3", "Q-API-5", "RSQ-4"], [
    rsq("q", 10, 0, ["float32", "int32"], [[], [2]]),
    enq_many("q", [[10.0, 20.0, 30.0, 40.0], [[1, 2], [3, 4], [5, 6], [7, 8]]]),
    enq_many("q", [[10.0, 20.0, 30.0, 40.0], [[1, 2], [3, 4], [5, 6], [7, 8]]]),
    size("q"), *[deq("q", rec="bag:b") for _ in range(8)], bag("b"), size("q"),
], tf_test=RT + "testMultiEnqueueMany"))

_RSQ_ROWS = [[float(10 * x), [x, -x]] for x in range(10)]
add(scenario("rsq_multi_dequeue_many", ["Q-DEQ-3", "Q-API-5", "RSQ-4"], [
    rsq("q", 10, 0, ["float32", "int32"], [[], [2]]),
    enq_many("q", [[r[0] for r in _RSQ_ROWS], [r[1] for r in _RSQ_ROWS]]),
    deq_many("q", 4, rec="bagrows:b"), deq_many("q", 4, rec="bagrows:b"),
    deq("q", rec="bag:b"), size("q"), deq_many("q", 1, rec="bagrows:b"), bag("b"),
], tf_test=RT + "testMultiDequeueMany"))

add(scenario("rsq_multi_dequeue_up_to_no_blocking", ["Q-DEQ-5", "Q-API-5", "RSQ-4"], [
    rsq("q", 10, 0, ["float32", "int32"], [[], [2]]),
    enq_many("q", [[r[0] for r in _RSQ_ROWS], [r[1] for r in _RSQ_ROWS]]),
    deq_up_to("q", 4, rec="bagrows:b"), deq_up_to("q", 4, rec="bagrows:b"),
    deq("q", rec="bag:b"), size("q"), close("q"), deq_up_to("q", 4, rec="bagrows:b"),
    bag("b"), deq_up_to("q", 4),
], tf_test=RT + "testMultiDequeueUpToNoBlocking"))

add(scenario("rsq_high_dimension", ["Q-DEQ-3", "RSQ-4"], [
    rsq("q", 10, 0, ["int32"], [[2, 2, 2, 2]]), enq_many("q", [_hd]),
    deq_many("q", 3, rec="sorted"), size("q"),
], tf_test=RT + "testHighDimension"))

# The remaining scenario needs a subprocess on TF: TF 2.21 aborts the process.
add(scenario("fifo_enqueue_many_rank0_without_shapes", ["Q-ENQ-5"], [
    fifo("q", 10, ["int32"], None), enq_many("q", [5], tag="rank0"), size("q", tag="size"),
], tf_subprocess=True, note="[TF CRASH]", deviation=deviation(
    "DEV-Q-3", SPEC_Q,
    tf={"rank0": None}, coordkit={"rank0": ERR("InvalidArgumentError", None), "size": OK(0)},
    tf_crashes=True,
    note="TF aborts the process (CHECK failure); coordkit raises InvalidArgumentError.")))

# ======================================================================================
# 8. Input pipelines (tf.train's input helpers; coordkit.pipeline)
# ======================================================================================
# TensorFlow's input_test.py checks these with count_up_to variables and sparse tensors,
# which the scenario format does not model, so the scenarios below follow its tests
# (named in the notes) rather than port them; none is in TF_TESTS.

WORDS = [b"to", b"be", b"or", b"not", b"to", b"be"]
FILES = [b"f0", b"f1", b"f2", b"f3", b"f4"]


def _files(epochs: int = 2) -> dict:
    return stage("string_input_producer", "q", string_tensor=FILES, num_epochs=epochs, shuffle=False)


def _range(sid: str, limit: int, epochs: int = 1) -> dict:
    return stage("range_input_producer", sid, limit=limit, num_epochs=epochs, shuffle=False, name=sid)


add(scenario("pipe_string_producer_no_shuffle", ["PIPE-9", "PIPE-2"], [
    pipeline("p", [stage("string_input_producer", "q", string_tensor=WORDS, num_epochs=3,
                         shuffle=False)], "q.dequeue_many:18"),
], note="after input_test.StringInputProducerTest.testNoShuffle"))

add(scenario("pipe_string_producer_shuffles_within_epochs", ["PIPE-9", "DEV-PIPE-11"], [
    pipeline("p", [stage("string_input_producer", "q", string_tensor=[b"a", b"b", b"c"],
                         num_epochs=30, shuffle=True, seed=271828)],
             "q.dequeue_many:3", rec="each_sorted"),
], note="after input_test.StringInputProducerTest.testShuffle (orders not compared: DEV-PIPE-11)"))

add(scenario("pipe_string_producer_null_at_run_time", ["PIPE-9"], [
    pipeline("p", [stage("string_input_producer", "q", string_tensor={"runtime": []})],
             "q.dequeue"),
], note="after input_test.StringInputProducerTest.testNullString: the runner fails, the "
        "queue is closed, the dequeue gets OutOfRangeError and join raises the assertion"))

add(scenario("pipe_range_producer_no_shuffle", ["PIPE-10", "PIPE-2"], [
    pipeline("p", [stage("range_input_producer", "q", limit=5, num_epochs=3, shuffle=False)],
             "q.dequeue_many:15"),
], note="after input_test.RangeInputProducerTest.testNoShuffle"))

add(scenario("pipe_range_producer_shuffles_within_epochs", ["PIPE-10", "DEV-PIPE-11"], [
    pipeline("p", [stage("range_input_producer", "q", limit=4, num_epochs=10, shuffle=True,
                         seed=314159)], "q.dequeue_many:4", rec="each_sorted"),
], note="after input_test.RangeInputProducerTest.testShuffle"))

add(scenario("pipe_slice_producer_no_shuffle", ["PIPE-11"], [
    pipeline("p", [stage("slice_input_producer", "s",
                         tensor_list=[[b"Alpha", b"Beta", b"Delta", b"Gamma"], [2, 3, 5, 7]],
                         num_epochs=3, shuffle=False)], "s"),
], note="after input_test.SliceInputProducerTest.testNoShuffle"))

add(scenario("pipe_slice_producer_shuffle_keeps_rows", ["PIPE-11", "DEV-PIPE-11"], [
    pipeline("p", [stage("slice_input_producer", "s",
                         tensor_list=[[b"A", b"B", b"D", b"G"], [7, 3, 5, 2]], num_epochs=5,
                         shuffle=True, seed=161803, name="sip")], "s", rec="groups:4"),
], note="after input_test.SliceInputProducerTest.testShuffle: each epoch is a permutation "
        "of whole rows"))

add(scenario("pipe_batch_one_element_list", ["PIPE-13", "PIPE-3"], [
    pipeline("p", [_files(), stage("batch", "b", tensors=["q.dequeue"], batch_size=3,
                                   allow_smaller_final_batch=True)], "b"),
], note="batch([t], n) returns the batch itself, not a list of one batch"))

add(scenario("pipe_batch_single_key_dict", ["PIPE-13"], [
    pipeline("p", [_range("q", 4), stage("batch", "b", tensors={"a": "q.dequeue"}, batch_size=2)],
             "b"),
], note="a one-key dict stays a dict (TF's _as_original_type)"))

add(scenario("pipe_batch_list_of_two", ["PIPE-13", "PIPE-3"], [
    pipeline("p", [_range("q", 5), stage("batch", "b", tensors=["q.dequeue", {"const": b"string"}],
                                          batch_size=2)], "b"),
], note="after input_test.BatchTest.testOneThread (dense part)"))

add(scenario("pipe_batch_enqueue_many", ["PIPE-12"], [
    pipeline("p", [_range("q", 10), stage("batch", "b", tensors=["q.dequeue_many:4"], batch_size=3,
                                           enqueue_many=True, allow_smaller_final_batch=True)], "b"),
], note="batches of 4 re-batched by 3; the last 2 elements never leave the producer's queue"))

add(scenario("pipe_batch_rebatches_a_batch", ["PIPE-12", "PIPE-13"], [
    pipeline("p", [
        _range("q", 12),
        stage("batch", "pre", tensors=["q.dequeue", {"const": b"string"}], batch_size=2, name="pre"),
        stage("batch", "b", tensors="pre", batch_size=5, enqueue_many=True, name="b"),
    ], "b"),
], note="after input_test.BatchTest.testOneThreadEnqueueMany"))

add(scenario("pipe_shuffle_batch_enqueue_many", ["PIPE-12", "PIPE-4"], [
    pipeline("p", [_range("q", 6), stage("shuffle_batch", "b", tensors=["q.dequeue_many:2"],
                                          batch_size=4, capacity=10, min_after_dequeue=0, seed=3,
                                          enqueue_many=True, allow_smaller_final_batch=True)],
             "b", rec="bag"),
]))

add(scenario("pipe_batch_join_two_lists", ["PIPE-14", "PIPE-13"], [
    pipeline("p", [
        _range("r1", 5), _range("r2", 3),
        stage("batch_join", "b", tensors_list=[["r1.dequeue"], [{"add": ["r2.dequeue", 100]}]],
              batch_size=3, allow_smaller_final_batch=True),
    ], "b", rec="bag"),
], note="after input_test.BatchJoinTest.testTwoThreads: one thread per list"))

add(scenario("pipe_batch_join_closes_when_every_list_ran_out", ["PIPE-14"], [
    pipeline("p", [
        _range("r1", 10), _range("r2", 2),
        stage("batch_join", "b", tensors_list=[["r1.dequeue"], [{"add": ["r2.dequeue", 100]}]],
              batch_size=4),
    ], "b", rec="bag"),
], note="the short list runs out first; its thread ends, the other goes on, nothing is lost"))

add(scenario("pipe_batch_join_enqueue_many", ["PIPE-14", "PIPE-12"], [
    pipeline("p", [
        _range("r1", 6), _range("r2", 4),
        stage("batch_join", "b",
              tensors_list=[["r1.dequeue_many:2"], [{"add": ["r2.dequeue_many:2", 100]}]],
              batch_size=3, enqueue_many=True, allow_smaller_final_batch=True),
    ], "b", rec="bag"),
]))

add(scenario("pipe_batch_join_dicts", ["PIPE-14", "PIPE-13"], [
    pipeline("p", [
        _range("r1", 4), _range("r2", 2),
        stage("batch_join", "b", tensors_list=[{"n": "r1.dequeue", "s": {"const": b"a"}},
                                               {"n": "r2.dequeue", "s": {"const": b"b"}}],
              batch_size=2),
    ], "b", rec="bagdict"),
], note="after input_test.BatchJoinTest.testTwoThreadsDict"))

add(scenario("pipe_shuffle_batch_join_two_lists", ["PIPE-15", "PIPE-14"], [
    pipeline("p", [
        _range("r1", 5), _range("r2", 3),
        stage("shuffle_batch_join", "b",
              tensors_list=[["r1.dequeue"], [{"add": ["r2.dequeue", 100]}]], batch_size=3,
              capacity=10, min_after_dequeue=2, seed=1, allow_smaller_final_batch=True),
    ], "b", rec="bag"),
], note="after input_test.ShuffleBatchJoinTest.testTwoThreads"))

add(scenario("pipe_shuffle_batch_join_capacity_check", ["PIPE-15", "DEV-PIPE-9"], [
    pipeline("p", [
        _range("r1", 5),
        stage("shuffle_batch_join", "b", tensors_list=[["r1.dequeue"]], batch_size=2, capacity=5,
              min_after_dequeue=5),
    ], "b", tag="build"),
], deviation=deviation(
    "DEV-PIPE-9", SPEC_PIPE,
    tf={"build": ERR("ZeroDivisionError", "float division by zero")},
    coordkit={"build": ERR("ValueError", "capacity 5 must be bigger than min_after_dequeue 5.")},
    note="TF's shuffle_batch_join does not check capacity > min_after_dequeue; its summary "
         "then divides by zero")))

SCENARIOS = S
BY_NAME = {s["name"]: s for s in SCENARIOS}
assert len(BY_NAME) == len(SCENARIOS), "duplicate scenario names"

# ======================================================================================
# TensorFlow's own tests: which are ported, which are not (and why)
# ======================================================================================


def _names(prefix: str, names: str) -> list[str]:
    return [prefix + n for n in names.split()]


# Every test named in section 8 (8.1 to 8.6) of the digest, as ``file.Class.testName``
# (the class omitted when the file has one). Copied here so that the suite does not
# depend on the digest's path.
TF_TESTS: frozenset[str] = frozenset([
    # 8.1 python/training/coordinator_test.py
    *_names(CT, """
        testStopAPI testStopAsync testJoin testJoinAllRegistered testJoinSomeRegistered
        testJoinGraceExpires testJoinWithoutGraceExpires testJoinRaiseReportExcInfo
        testJoinRaiseReportException testJoinIgnoresOutOfRange testJoinIgnoresMyExceptionType
        testJoinRaiseReportExceptionUsingHandler testClearStopClearsExceptionToo
        testRequestStopRaisesIfJoined testRequestStopRaisesIfJoined_ExcInfo"""),
    *_names(LT, "testTargetArgs testTargetKwargs testTargetMixedArgs"),
    # 8.2 python/training/queue_runner_test.py
    *_names(QRT, """
        testBasic testTwoOps testExceptionsCaptured testRealDequeueEnqueue
        testRespectCoordShouldStop testRequestStopOnException testGracePeriod
        testMultipleSessions testIgnoreMultiStarts testThreads testName testStartQueueRunners
        testStartQueueRunnersRaisesIfNotASession testStartQueueRunnersIgnoresMonitoredSession
        testStartQueueRunnersNonDefaultGraph testQueueRunnerSerializationRoundTrip"""),
    # 8.3 python/kernel_tests/data_structures/fifo_queue_test.py
    *_names(FQ, """
        testConstructor testMultiQueueConstructor testConstructorWithShapes testEnqueue
        testEnqueueHalf testEnqueueWithShape testEnqueueManyWithShape testMultipleDequeues
        testQueuesDontShare testQueueInFunction testEnqueueDictWithoutNames testDequeue
        testDequeueHalf testMultiEnqueueAndDequeue testQueueSizeEmpty
        testQueueSizeAfterEnqueueAndDequeue testEnqueueMany testEmptyEnqueueMany
        testEmptyDequeueMany testEmptyDequeueUpTo testEmptyDequeueManyWithNoShape
        testMultiEnqueueMany testDequeueMany testDequeueUpToNoBlocking testMultiDequeueMany
        testMultiDequeueUpToNoBlocking testHighDimension testEnqueueWrongShape
        testEnqueueManyEmptyTypeConversion testEnqueueWrongType"""),
    *_names("fifo_queue_test.GPUCompatibleFIFOQueueTests.",
            "testEnqueueWithShape testEnqueueDequeue"),
    *_names(FQU, """
        testDequeueManyWithTensorParameter testDequeueFromClosedQueue testDoesNotLoseValue
        testSharedQueueSameSession testIncompatibleSharedQueueErrors testSelectQueue
        testSelectQueueOutOfRange testDtypes testEnqueueDequeueOneComponent
        testEnqueueDequeueMultipleComponent testBatchSizeMismatch testEnqueueWrongShapeAtRuntime
        testEnqueueDequeueManyWrongShape"""),
    *_names(FQP, """
        testParallelEnqueue testParallelDequeue testEnqueueAndBlockingDequeue testBigDequeueMany
        testBigEnqueueMany testResetOfBlockingOperation testBlockingDequeueFromClosedQueue
        testBlockingDequeueFromClosedEmptyQueue testBlockingDequeueManyFromClosedQueue
        testBlockingDequeueManyButNotAllFromClosedQueue
        testDequeueUpToFromClosedQueueReturnsRemainder
        testEnqueueManyLargerThanCapacityWithConcurrentDequeueMany
        testClosedBlockingDequeueManyRestoresPartialBatch
        testBlockingDequeueManyFromClosedEmptyQueue testBlockingDequeueUpToFromClosedEmptyQueue
        testEnqueueToClosedQueue testEnqueueManyToClosedQueue testBlockingEnqueueToFullQueue
        testBlockingEnqueueManyToFullQueue testBlockingEnqueueBeforeClose
        testBlockingEnqueueManyBeforeClose testParallelEnqueueMany testParallelDequeueMany
        testParallelDequeueUpTo testParallelEnqueueAndDequeue testMixtureOfEnqueueAndEnqueueMany
        testMixtureOfDequeueAndDequeueMany testBlockingDequeueMany testBlockingDequeueUpTo
        testDequeueEnqueueFail"""),
    *_names("fifo_queue_test.FIFOQueueDictTest.", "testConstructor testConstructorWithShapes"),
    *_names(FQT, "testDequeueWithTimeout testReusableAfterTimeout"),
    *_names("fifo_queue_test.QueueContainerTest.", "testContainer"),
    # 8.4 python/kernel_tests/random_shuffle_queue_test.py
    *_names(RT, """
        testEnqueue testEnqueueWithShape testEnqueueManyWithShape testScalarShapes
        testParallelEnqueue testParallelDequeue testDequeue testEnqueueAndBlockingDequeue
        testMultiEnqueueAndDequeue testQueueSizeEmpty testQueueSizeAfterEnqueueAndDequeue
        testEnqueueMany testEmptyEnqueueMany testEmptyDequeueMany testEmptyDequeueUpTo
        testEmptyDequeueManyWithNoShape testEmptyDequeueUpToWithNoShape testMultiEnqueueMany
        testDequeueMany testDequeueUpToNoBlocking testMultiDequeueMany
        testMultiDequeueUpToNoBlocking testHighDimension testParallelEnqueueMany
        testParallelDequeueMany testParallelDequeueUpTo testParallelDequeueUpToRandomPartition
        testBlockingDequeueMany testBlockingDequeueUpTo testDequeueManyWithTensorParameter
        testDequeueUpToWithTensorParameter testDequeueFromClosedQueue
        testBlockingDequeueFromClosedQueue testBlockingDequeueFromClosedEmptyQueue
        testBlockingDequeueManyFromClosedQueue
        testBlockingDequeueUpToFromClosedQueueReturnsRemainder
        testBlockingDequeueUpToSmallerThanMinAfterDequeue
        testBlockingDequeueManyFromClosedQueueWithElementsRemaining
        testBlockingDequeueManyFromClosedEmptyQueue testBlockingDequeueUpToFromClosedEmptyQueue
        testEnqueueToClosedQueue testEnqueueManyToClosedQueue testBlockingEnqueueToFullQueue
        testBlockingEnqueueManyToFullQueue testBlockingEnqueueToClosedQueue
        testBlockingEnqueueManyToClosedQueue testSharedQueueSameSession
        testSharedQueueSameSessionGraphSeedNone testIncompatibleSharedQueueErrors
        testSelectQueue testSelectQueueOutOfRange testResetOfBlockingOperation
        testDequeueManyInDifferentOrders testDequeueUpToInDifferentOrders
        testDequeueInDifferentOrders testBigEnqueueMany testBigDequeueMany"""),
    # 8.5 python/kernel_tests/data_structures/padding_fifo_queue_test.py
    *_names(PT, """
        testConstructor testMultiQueueConstructor testConstructorWithShapes testEnqueue
        testEnqueueWithShape testEnqueueManyWithShape testParallelEnqueue testParallelDequeue
        testDequeue testEnqueueAndBlockingDequeue testMultiEnqueueAndDequeue testQueueSizeEmpty
        testQueueSizeAfterEnqueueAndDequeue testEnqueueMany testEmptyEnqueueMany
        testEmptyDequeueMany testEmptyDequeueManyWithDynamicShape
        testEmptyDequeueUpToWithDynamicShape testConstructPaddingFIFOQueueWithNoShape
        testMultiEnqueueMany testMultiEnqueueManyWithPartiallyKnownShapes testDequeueMany
        testDequeueUpToNoBlocking testMultiDequeueMany
        testMultiDequeueManyWithPartiallyKnownShapes
        testMultiDequeueManyWithPartiallyKnownShapesAndVariableSizeInput
        testMultiDequeueUpToPartiallyKnownShapesAndVariableInputNoBlocking testHighDimension
        testPartiallyKnownHighDimension testEnqueueWrongShape testBatchSizeMismatch
        testEnqueueManyEmptyTypeConversion testEnqueueWrongType
        testEnqueueWrongPartiallyKnownShapeAtRuntime
        testEnqueueDequeueManyWrongPartiallyKnownShape testParallelEnqueueMany
        testParallelDequeueMany testParallelDequeueUpTo testParallelEnqueueAndDequeue
        testMixtureOfEnqueueAndEnqueueMany testMixtureOfDequeueAndDequeueMany
        testBlockingDequeueMany testBlockingDequeueUpTo testDequeueManyWithTensorParameter
        testDequeueFromClosedQueue testBlockingDequeueFromClosedQueue
        testDequeueUpToFromClosedQueueReturnsRemainder testBlockingDequeueFromClosedEmptyQueue
        testBlockingDequeueManyFromClosedQueue testBlockingDequeueManyButNotAllFromClosedQueue
        testEnqueueManyLargerThanCapacityWithConcurrentDequeueMany
        testClosedBlockingDequeueManyRestoresPartialBatch
        testBlockingDequeueManyFromClosedEmptyQueue testBlockingDequeueUpToFromClosedEmptyQueue
        testEnqueueToClosedQueue testEnqueueManyToClosedQueue testBlockingEnqueueToFullQueue
        testBlockingEnqueueManyToFullQueue testBlockingEnqueueBeforeClose
        testBlockingEnqueueManyBeforeClose testDoesNotLoseValue testSharedQueueSameSession
        testIncompatibleSharedQueueErrors testSelectQueue testSelectQueueOutOfRange
        testResetOfBlockingOperation testBigEnqueueMany testBigDequeueMany testDtypes
        testUnknownRank"""),
    *_names("padding_fifo_queue_test.QueueFromListTest.",
            "testQueueFromListShapes testQueueFromListShapesMultipleComponents"),
    # 8.6 python/kernel_tests/data_structures/priority_queue_test.py
    *_names(PQT, """
        testRoundTripInsertReadOnceSorts testRoundTripInsertMultiThreadedReadOnceSorts
        testRoundTripFillsCapacityMultiThreadedEnqueueAndDequeue
        testRoundTripInsertManyMultiThreadedReadManyMultithreadedSorts
        testRoundTripInsertManyMultiThreadedReadOnceSorts testRoundTripInsertOnceReadOnceSorts
        testRoundTripInsertOnceReadManySorts testRoundTripInsertOnceReadOnceLotsSorts
        testInsertingNonInt64Fails testInsertingNonScalarFails"""),
])

_NODE_DEF = "checks the graph NodeDef attributes of the queue op; coordkit builds no graph"
_SHARED = "shared_name: queues shared through TF's resource manager (DEV-Q-13)"
_FROM_LIST = "QueueBase.from_list, a queue selected by a tensor (DEV-Q-13)"
_RESET = ("Session.close() cancels blocked ops; coordkit has no sessions (Q-CANCEL-1, "
          "DEV-Q-10); the cancelling close is covered by fifo_close_cancel_pending_enqueues")

# The tests of TF_TESTS that no scenario ports, and why.
NOT_PORTED: dict[str, str] = {
    # queue_runner_test
    QRT + "testMultipleSessions": "threads counted per session; there are no sessions "
                                  "(DEV-RUNNER-1)",
    QRT + "testName": "qr.name under a graph name scope and the QUEUE_RUNNERS graph collection "
                      "filtered by scope (DEV-RUNNER-5); qr.name itself is read in qr_properties",
    QRT + "testStartQueueRunnersRaisesIfNotASession": "session argument check (DEV-RUNNER-6)",
    QRT + "testStartQueueRunnersIgnoresMonitoredSession": "MonitoredSession check (DEV-RUNNER-6)",
    QRT + "testStartQueueRunnersNonDefaultGraph": "a session on a non-default graph; no graphs "
                                                  "or sessions (DEV-RUNNER-6)",
    QRT + "testQueueRunnerSerializationRoundTrip": "to_proto/from_proto: callables cannot be "
                                                   "serialised (specs/queue_runner.md)",
    # fifo_queue_test
    FQ + "testConstructor": _NODE_DEF,
    FQ + "testMultiQueueConstructor": _NODE_DEF + " (and shared_name)",
    FQ + "testConstructorWithShapes": _NODE_DEF,
    FQ + "testQueueInFunction": "tf.function tracing and eager resource lifetime; no counterpart",
    "fifo_queue_test.FIFOQueueDictTest.testConstructor":
        _NODE_DEF + "; the names' behaviour is in fifo_names_*",
    "fifo_queue_test.FIFOQueueDictTest.testConstructorWithShapes":
        _NODE_DEF + "; the names' behaviour is in fifo_names_*",
    FQU + "testSharedQueueSameSession": _SHARED,
    FQU + "testIncompatibleSharedQueueErrors": _SHARED,
    FQU + "testSelectQueue": _FROM_LIST,
    FQU + "testSelectQueueOutOfRange": _FROM_LIST,
    FQP + "testResetOfBlockingOperation": _RESET,
    FQP + "testDequeueEnqueueFail": "a failing Assert in the same Session.run as the queue ops: "
                                    "graph execution order, not queue semantics",
    "fifo_queue_test.QueueContainerTest.testContainer": "ops.container() resource attribute "
                                                        "(DEV-Q-13)",
    # random_shuffle_queue_test
    RT + "testSharedQueueSameSession": _SHARED,
    RT + "testSharedQueueSameSessionGraphSeedNone": _SHARED + " (and graph-level seeds)",
    RT + "testIncompatibleSharedQueueErrors": _SHARED,
    RT + "testSelectQueue": _FROM_LIST,
    RT + "testSelectQueueOutOfRange": _FROM_LIST,
    RT + "testResetOfBlockingOperation": _RESET,
    # padding_fifo_queue_test
    PT + "testConstructor": _NODE_DEF,
    PT + "testMultiQueueConstructor": _NODE_DEF + " (and shared_name)",
    PT + "testConstructorWithShapes": _NODE_DEF,
    PT + "testSharedQueueSameSession": _SHARED,
    PT + "testIncompatibleSharedQueueErrors": _SHARED,
    PT + "testSelectQueue": _FROM_LIST,
    PT + "testSelectQueueOutOfRange": _FROM_LIST,
    PT + "testResetOfBlockingOperation": _RESET,
    "padding_fifo_queue_test.QueueFromListTest.testQueueFromListShapes":
        "static shape merging of QueueBase.from_list (DEV-Q-13)",
    "padding_fifo_queue_test.QueueFromListTest.testQueueFromListShapesMultipleComponents":
        "static shape merging of QueueBase.from_list (DEV-Q-13)",
}


def tf_test_names(tf_test: str) -> list[str]:
    """The full names in a scenario's ``tf_test``: ``file.Class.testA+testB+Other.testC``
    (a later name without a dot keeps the first one's file and class; with one, its file)."""
    first, *rest = tf_test.split("+")
    file, prefix = first.split(".", 1)[0], first.rsplit(".", 1)[0]
    return [first, *(f"{file}.{n}" if "." in n else f"{prefix}.{n}" for n in rest)]
