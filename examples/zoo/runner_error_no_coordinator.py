"""A QueueRunner thread dies of an error and nobody closes the queue (RUNNER-7a).

A loader feeds a FIFOQueue from two shards with a ``QueueRunner``, one enqueue
op per shard, and no Coordinator ("we only need the queue").  The main thread
consumes until the queue is closed and drained.  One shard is unreadable: its op
raises ``OSError`` on its first call.  Without a coordinator, a runner thread
that dies of an error other than a queue-closed exception just ends (RUNNER-4
step 5); only a thread that leaves through ``OutOfRangeError`` counts down and,
if it is the last one, closes the queue.  So everything depends on which thread
ends last.  Usually the broken thread, started first, dies first; the good
thread later runs out of records and closes the queue, and the consumer
finishes (with one shard silently missing, which is a second reason for the
fix).  But if the good thread runs first and reaches the end of its shard
before the broken thread has failed, the good thread is not the last to
leave, the broken one then dies without closing, and the consumer waits for
ever.  A race: the plain round-robin schedule passes; the shrunk failing
schedule needs no preemption, only a different pick of the next thread when
the consumer blocks (the good reader instead of the broken one).  With real
threads it depends on thread start-up latency, so tests pass and the job hangs
once in a while.  The fix is a Coordinator: the error is reported to it, the
close-on-stop thread cancels the queue (RUNNER-5), the consumer gets
``OutOfRangeError``, and ``coord.join`` re-raises the error, so it is reported
instead of hanging.
"""

from __future__ import annotations

from coordkit import Coordinator, FIFOQueue, OutOfRangeError, QueueRunner

# The broken thread dies of OSError by design (and the fixed version's runner
# reports it to the coordinator); what matters is whether the consumer finishes.
EXPLORE = {"fail_on_thread_exception": False}
KIND = "deadlock"
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail
RULES = ("RUNNER-4", "RUNNER-5", "RUNNER-7a")


def _shard_reader(queue: FIFOQueue, records: list[int]):
    it = iter(records)

    def read_good_shard() -> None:
        for record in it:
            queue.enqueue(record)
            return
        raise OutOfRangeError("shard exhausted")  # a queue-closed exception: counts down

    return read_good_shard


def read_broken_shard() -> None:
    raise OSError("shard-00001: permission denied")


def buggy() -> None:
    queue = FIFOQueue(capacity=4, name="records")
    runner = QueueRunner(queue, [read_broken_shard, _shard_reader(queue, [1, 2])])
    threads = runner.create_threads(start=True)  # RUNNER-7a: no coordinator
    consumed = []
    try:
        while True:
            consumed.append(queue.dequeue())  # hangs if nobody ever closes the queue
    except OutOfRangeError:
        pass
    for t in threads:
        t.join()


def fixed() -> None:
    queue = FIFOQueue(capacity=4, name="records")
    coord = Coordinator()
    runner = QueueRunner(queue, [read_broken_shard, _shard_reader(queue, [1, 2])])
    threads = runner.create_threads(coord=coord, start=True)
    consumed = []
    try:
        while True:
            consumed.append(queue.dequeue())
    except OutOfRangeError:
        pass  # closed by the last reader, or cancelled by the stop (RUNNER-5)
    coord.request_stop()
    reported = []
    try:
        coord.join(threads)
    except OSError as e:  # the broken shard, re-raised by join (COORD-15)
        reported.append(e)
    assert len(reported) == 1, "the unreadable shard must be reported"
