"""A worker's catch-all ``except Exception`` swallows the queue's stop signal.

A log indexer has a worker thread that takes records from a FIFOQueue, parses
them and stores the result.  One malformed record must not kill the worker,
so the loop body is wrapped in a catch-all::

    while True:
        try:
            record = records.dequeue()
            index.append(parse(record))
        except Exception:
            logger.debug("skipping bad record")

In a TensorFlow-style pipeline the end of input is an exception: once the
queue is closed and drained, ``dequeue`` raises ``OutOfRangeError`` (Q-DEQ-1),
which is also the coordinator's clean-stop type (COORD-1).  The catch-all
swallows it, so the worker never leaves: every further ``dequeue`` fails at
once, the loop spins, burning a core, and the main thread waits in ``join``
for ever.  coordkit reports it as a livelock (``step_limit``).  Deterministic,
not a race: every schedule spins, round-robin included.  The value of
exploring it is the report -- a step table ending in the spinning loop, on the
first schedule -- instead of a CI job killed by its timeout with no stack.
Unit tests of the worker miss it because they feed records and check the
index without ever closing the queue.  The fix lets the stop signal through:
``except OutOfRangeError: return`` before the catch-all (or narrow the
catch-all to the parse errors it was meant for).
"""

from __future__ import annotations

import logging
import threading

from coordkit import FIFOQueue, OutOfRangeError

EXPLORE = {"max_steps": 4000}  # a spinning loop reaches this quickly
KIND = "step_limit"
RACE = False  # deterministic: every schedule fails, round-robin included
RULES = ("Q-DEQ-1", "COORD-1")

logger = logging.getLogger("zoo.swallowed_stop")

RECORDS = ["level=info msg=start", "garbage", "level=warn msg=disk"]


def parse(record: str) -> dict[str, str]:
    try:
        return dict(field.split("=", 1) for field in record.split())
    except ValueError:
        raise ValueError(f"malformed record {record!r}") from None


def _worker_catch_all(records: FIFOQueue, index: list[dict[str, str]]) -> None:
    while True:
        try:
            record = records.dequeue()
            index.append(parse(record))
        except Exception:  # also catches OutOfRangeError, the end of input: spins for ever
            logger.debug("skipping bad record")


def _worker_lets_stop_through(records: FIFOQueue, index: list[dict[str, str]]) -> None:
    while True:
        try:
            record = records.dequeue()
            index.append(parse(record))
        except OutOfRangeError:
            return  # closed and drained: done
        except Exception:
            logger.debug("skipping bad record")


def _index(worker) -> None:
    records = FIFOQueue(capacity=2, name="records")
    index: list[dict[str, str]] = []
    t = threading.Thread(target=worker, args=(records, index), name="indexer")
    t.start()
    for record in RECORDS:
        records.enqueue(record)
    records.close()
    t.join()
    assert [entry["msg"] for entry in index] == ["start", "disk"]


def buggy() -> None:
    _index(_worker_catch_all)


def fixed() -> None:
    _index(_worker_lets_stop_through)
