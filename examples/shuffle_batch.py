"""The shuffle-batch example of TensorFlow's "Threading and Queues" guide, on coordkit.

TensorFlow 1.x::

    input = tf.data.Dataset.from_tensor_slices(tf.constant(list(range(100))))
    input = input.make_one_shot_iterator().get_next()
    get_batch = simple_shuffle_batch(input, capacity=20)   # 4 enqueue threads, batches of 10
    sess = tf.train.MonitoredSession()
    while not sess.should_stop():
        print(sess.run(get_batch))

Here the count 0..99 comes from ``input_producer`` (one epoch, in order), and
``shuffle_batch`` builds the RandomShuffleQueue (capacity 20, at least 18 left
behind per batch, as ``simple_shuffle_batch`` did) with 4 enqueue threads.
``MonitoredRun`` starts the runners; when the count runs out, the last batch
dequeue raises OutOfRangeError, which ends the loop as a clean stop.

The batches together hold 0..99 exactly once. With real threads their order
varies with the thread timing; under the controlled scheduler it is the same
every run for a given seed::

    python examples/shuffle_batch.py                 # real threads
    python examples/shuffle_batch.py --replay        # controlled: identical every run
"""

from __future__ import annotations

import argparse

import coordkit


def main(seed: int = 7, capacity: int = 20, batch_size: int = 10, num_threads: int = 4) -> list[list[int]]:
    """Print and return the shuffled batches of 0..99."""
    batches: list[list[int]] = []
    with coordkit.queue_runner_scope():  # a fresh registry: the "graph" of this run
        count = coordkit.input_producer(range(100), num_epochs=1, shuffle=False)
        get_batch = coordkit.shuffle_batch(
            count.dequeue,
            batch_size=batch_size,
            capacity=capacity,
            min_after_dequeue=int(0.9 * capacity),
            num_threads=num_threads,
            seed=seed,
        )
        with coordkit.MonitoredRun() as run:
            while not run.should_stop():
                batch = get_batch()
                print(batch)
                batches.append(batch)
    return batches


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--replay", action="store_true", help="run under the controlled scheduler")
    args = parser.parse_args()
    if args.replay:
        coordkit.replay(lambda: main(args.seed), [], max_steps=200_000)
    else:
        main(args.seed)
