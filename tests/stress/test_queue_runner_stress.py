"""QueueRunners feeding chains of queues, on real threads.

A closed source queue holds the input; each stage is a QueueRunner with 1 to 4
threads moving elements (one at a time, or in batches with ``dequeue_up_to`` /
``enqueue_many``) from one queue into the next, a FIFOQueue or a
RandomShuffleQueue of small capacity.  Runners are added to a scoped registry and
started with ``start_queue_runners(coord)`` (RUNNER-9, RUNNER-12).

* Input exhausted: each stage's runner threads leave through OutOfRangeError;
  the last one closes the next queue (RUNNER-4), so the close travels down the
  chain and the consumer sees OutOfRangeError after exactly the input, each
  element once.
* Stopped half way: the consumer raises inside ``stop_on_exception``; every
  runner's close-on-stop thread closes its queue cancelling pending enqueues
  (RUNNER-5), the runner threads leave, ``join`` re-raises the consumer's error.
  Conservation: every input element is in the output, still in a queue, or was
  in flight in a runner whose enqueue was cancelled (for a batch, only a suffix
  of it is lost, Q-ENQ-3 and Q-CLOSE-3).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from coordkit import (
    Coordinator,
    FIFOQueue,
    QueueRunner,
    RandomShuffleQueue,
    add_queue_runner,
    queue_runner_scope,
    start_queue_runners,
)
from coordkit.errors import CancelledError, OutOfRangeError

from ._support import JOIN_TIMEOUT_SECS
from .conftest import SCALE, scaled

pytestmark = pytest.mark.timeout(max(120, int(120 * SCALE)))


class ConsumerStopped(Exception):
    """The consumer's reason to stop the pipeline half way."""


class Chain:
    """A source queue, ``stages`` runner-fed queues, and what was lost in flight."""

    def __init__(self, seed: int, items: int, stages: int) -> None:
        rng = random.Random(f"{seed}:chain")
        self.items = items
        source = FIFOQueue(-1, name="source")
        source.enqueue_many(range(items))
        source.close()
        self.queues: list[Any] = [source]
        for k in range(1, stages + 1):
            capacity = rng.randint(1, 6)
            if rng.random() < 0.3 and capacity > 1:
                q: Any = RandomShuffleQueue(
                    capacity, rng.randint(0, capacity - 1), seed=rng.randrange(1 << 30), name=f"stage{k}"
                )
            else:
                q = FIFOQueue(capacity, name=f"stage{k}")
            self.queues.append(q)
        self._lock = threading.Lock()  # guards the lost lists
        # (hop, element) and (hop, batch) of enqueues cancelled in flight; hop k
        # moves from queues[k] to queues[k + 1].
        self.lost_singles: list[tuple[int, int]] = []
        self.lost_batches: list[tuple[int, tuple[int, ...]]] = []
        self.runners: list[QueueRunner] = []
        for k in range(stages):
            q_in, q_out = self.queues[k], self.queues[k + 1]
            ops = [self._op(k, q_in, q_out, rng.choice((0, 0, 2, 3))) for _ in range(rng.randint(1, 4))]
            self.runners.append(
                QueueRunner(q_out, ops, queue_closed_exception_types=(OutOfRangeError, CancelledError))
            )

    def _op(self, hop: int, q_in: Any, q_out: Any, batch: int) -> Callable[[], None]:
        """An enqueue op moving one element (batch 0) or up to ``batch`` elements."""

        def move_one() -> None:
            x = q_in.dequeue()
            try:
                q_out.enqueue(x)
            except CancelledError:
                with self._lock:
                    self.lost_singles.append((hop, x))
                raise

        def move_batch() -> None:
            b = q_in.dequeue_up_to(batch)
            try:
                q_out.enqueue_many(b)
            except CancelledError:
                with self._lock:
                    self.lost_batches.append((hop, tuple(b)))
                raise

        return move_batch if batch else move_one

    @property
    def last(self) -> Any:
        return self.queues[-1]

    def drain_all(self) -> list[int]:
        """Everything still in any queue (all of them must be closed by now)."""
        found: list[int] = []
        for q in self.queues:
            assert q.is_closed(), f"{q.name} is still open"
            while True:
                try:
                    found.extend(q.dequeue_up_to(100, timeout=0))
                except OutOfRangeError:
                    break
        return found

    def check_conservation(self, found: list[int], context: str) -> None:
        """Each input element is found once, or was lost once, in flight at one hop.

        A cancelled single enqueue loses its element.  A cancelled enqueue_many at hop
        k pushed a prefix of its batch (Q-ENQ-3): the prefix went on (found, or lost
        at a later hop) and the rest was lost at hop k.
        """
        counts = Counter(found)
        duplicates = [x for x, n in counts.items() if n > 1]
        assert not duplicates, f"{context}: elements found twice: {duplicates[:10]}"
        inputs = set(range(self.items))
        assert set(counts) <= inputs, f"{context}: foreign elements {sorted(set(counts) - inputs)[:10]}"
        losses: list[tuple[int, int]] = list(self.lost_singles)  # (hop, element) lost there
        for hop, batch in self.lost_batches:
            later = {x for h, x in self.lost_singles if h > hop}
            later.update(x for h, b in self.lost_batches if h > hop for x in b)
            went_on = [x in counts or x in later for x in batch]
            k = sum(went_on)
            assert went_on == [True] * k + [False] * (len(batch) - k), (
                f"{context}: a cancelled enqueue_many at hop {hop} passed on a non-prefix of {batch}"
            )
            losses.extend((hop, x) for x in batch[k:])
        lost = Counter(x for _, x in losses)
        twice = [x for x, n in lost.items() if n > 1]
        assert not twice, f"{context}: elements lost twice: {twice[:10]}"
        both = sorted(set(lost) & set(counts))
        assert not both, f"{context}: lost yet found: {both[:10]}"
        missing = inputs - set(counts)
        assert missing == set(lost), (
            f"{context}: missing {sorted(missing - set(lost))[:10]} unaccounted for; "
            f"{sorted(set(lost) - missing)[:10]} lost but found"
        )


def start(chain: Chain, coord: Coordinator) -> list[threading.Thread]:
    with queue_runner_scope():
        for qr in chain.runners:
            add_queue_runner(qr)
        return start_queue_runners(coord)  # daemon threads, started (RUNNER-9)


def test_input_exhausted_close_propagates_down_the_chain(seed: int) -> None:
    """RUNNER-4: the close travels stage by stage; the output is the input, exactly."""
    for r in range(scaled(15)):
        context = f"seed={seed} round {r}"
        rng = random.Random(f"{seed}:{r}")
        chain = Chain(seed + r, items=scaled(3000), stages=rng.randint(2, 4))
        coord = Coordinator()
        threads = start(chain, coord)
        out: list[int] = []
        while True:
            try:
                out.extend(chain.last.dequeue_up_to(rng.randint(1, 5), timeout=JOIN_TIMEOUT_SECS))
            except OutOfRangeError:
                break
        assert sorted(out) == list(range(chain.items)), f"{context}: output is not the input"
        assert not chain.lost_singles and not chain.lost_batches, context
        # Every queue was closed by its runner's last thread, in order down the chain.
        assert all(q.is_closed() for q in chain.queues), context
        for t in threads:
            if not t.name.endswith("close_on_stop"):
                t.join(JOIN_TIMEOUT_SECS)  # the runner threads leave once their input is closed
        assert all(qr.statistics().running_threads == 0 for qr in chain.runners), context
        coord.request_stop()  # lets the close-on-stop threads go
        coord.join(threads, stop_grace_period_secs=JOIN_TIMEOUT_SECS)
        assert not any(t.is_alive() for t in threads), context
        assert chain.drain_all() == [], context
        assert all(not qr.exceptions_raised for qr in chain.runners), context


def test_stop_half_way_cancels_and_loses_only_what_was_in_flight(seed: int) -> None:
    """RUNNER-5: a consumer error stops everything; join re-raises it; conservation holds."""
    for r in range(scaled(15)):
        run_stop_round(seed, r)


def run_stop_round(seed: int, r: int) -> None:
    context = f"seed={seed} round {r}"
    rng = random.Random(f"{seed}:{r}")
    chain = Chain(seed + r, items=scaled(3000), stages=rng.randint(2, 4))
    coord = Coordinator()
    threads = start(chain, coord)
    stop_after = rng.randint(0, chain.items - 1)
    out: list[int] = []
    error = ConsumerStopped(stop_after)

    def consume() -> None:
        with coord.stop_on_exception():
            while len(out) < stop_after:
                out.extend(chain.last.dequeue_up_to(rng.randint(1, 3), timeout=JOIN_TIMEOUT_SECS))
            raise error

    consumer = threading.Thread(target=consume, name="consumer")
    coord.register_thread(consumer)
    consumer.start()
    with pytest.raises(ConsumerStopped) as info:
        coord.join(threads, stop_grace_period_secs=JOIN_TIMEOUT_SECS)
    assert info.value is error, context
    assert not any(t.is_alive() for t in [*threads, consumer]), context
    remaining = chain.drain_all()
    chain.check_conservation(out + remaining, context)
    in_flight = len(chain.lost_singles) + sum(len(b) for b in chain.lost_batches)
    assert in_flight <= sum(3 * len(qr.enqueue_ops) for qr in chain.runners), context
    print(f"{context}: {len(out)} out, {len(remaining)} left in queues, {in_flight} lost in flight")
