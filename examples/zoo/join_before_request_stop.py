"""``coord.join`` before ``coord.request_stop`` in a ``finally`` block.

A training loop reads records that two reader threads (one per shard) push into
a bounded FIFOQueue, and trains on exactly one epoch's worth of them.  Its
clean-up is written "wait for the readers, then stop them"::

    finally:
        coord.join(threads)       # waits until the readers end...
        coord.request_stop()      # ...but only this would make them end
        queue.close(cancel_pending_enqueues=True)

On the happy path the readers have pushed their whole shard by the time the
epoch is done, so they have already ended and the join returns.  When a corrupt
record makes a training step fail, the loop leaves early, and whether the job
then reports the error (as intended) or hangs in ``join`` depends on how far
the readers got: a reader that still holds records is blocked on the full
queue, and nothing will ever unblock it, because the stop and the cancelling
close come after the join (COORD-13: join never requests a stop itself).  A
race on the error path: in the plain round-robin schedule reader ``a`` runs
ahead and the corrupt record (reader ``b``'s first) arrives late enough for
both readers to finish; in the shrunk failing schedule (no preemption, only a
different pick when the main thread blocks) reader ``b`` runs first, the
corrupt record arrives first, and reader ``a`` is stuck with its shard.  Tests
with clean data never take the path at all.  The fix is the order TensorFlow
documents: request the stop and cancel the queue first, then join; the
readers' enqueues fail with CancelledError (Q-CLOSE-3), they end, and the
error is reported.
"""

from __future__ import annotations

import threading

from coordkit import CancelledError, Coordinator, FIFOQueue

KIND = "deadlock"
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail
RULES = ("COORD-13", "Q-CLOSE-3")

SHARDS = {"a": [1, 2, 3], "b": [-1, 4]}  # -1 is the corrupt record


class CorruptRecord(ValueError):
    pass


def _train(join_first: bool) -> None:
    coord = Coordinator()
    queue = FIFOQueue(capacity=2, name="records")

    def reader(records: list[int]) -> None:
        try:
            for record in records:
                if coord.should_stop():
                    return
                queue.enqueue(record)
        except CancelledError:
            pass  # the queue was cancelled at shutdown: stop reading

    threads = [threading.Thread(target=reader, args=(shard,), name=f"reader-{name}")
               for name, shard in SHARDS.items()]
    for t in threads:
        coord.register_thread(t)
        t.start()

    trained, failures = [], []
    try:
        for _ in range(sum(len(s) for s in SHARDS.values())):  # one epoch
            record = queue.dequeue()
            if record < 0:
                raise CorruptRecord(f"corrupt record {record}")
            trained.append(record)
    except CorruptRecord as e:
        failures.append(e)
    finally:
        if join_first:
            coord.join(threads)  # COORD-13: waits for readers that wait for room
            coord.request_stop()
            queue.close(cancel_pending_enqueues=True)
        else:
            coord.request_stop()
            queue.close(cancel_pending_enqueues=True)  # Q-CLOSE-3: blocked readers get CancelledError
            coord.join(threads)
    assert len(failures) == 1  # the corrupt record is reported, not hung on


def buggy() -> None:
    _train(join_first=True)


def fixed() -> None:
    _train(join_first=False)
