"""Queue-based input pipelines and a monitored run (TensorFlow's ``tf.train`` input helpers).

The rules are numbered in ``specs/pipeline.md`` (``PIPE-n`` after the team's
TensorFlow digest, ``MON-n`` for the monitored run); the places where coordkit
departs from TensorFlow are listed there as ``DEV-PIPE-n``.

**What stands for a tensor.** TensorFlow builds a graph and evaluates tensors
with ``sess.run``. Here a *tensor* is any zero-argument callable, and calling it
is running it: ``q.dequeue`` (a bound method) is a tensor, and so is
``lambda: next_record()``. Each helper builds its queue and a ``QueueRunner``
exactly as TensorFlow did, adds the runner to the current registry
(``coordkit.queue_runner_scope``), and returns a tensor for the next stage::

    with coordkit.queue_runner_scope():               # a fresh "graph"
        q = input_producer(range(100), num_epochs=1, shuffle=False)
        get_batch = shuffle_batch(q.dequeue, batch_size=10, capacity=20,
                                  min_after_dequeue=18, num_threads=4, seed=7)
        with MonitoredRun() as run:                    # starts the runners
            while not run.should_stop():
                print(get_batch())                     # a list of 10 elements

The rest of TensorFlow's input helpers are here too: ``string_input_producer``
and ``range_input_producer`` (queues, as ``input_producer``),
``slice_input_producer`` (one tensor per sliced sequence, sharing one dequeue
per round), ``batch_join`` and ``shuffle_batch_join`` (one enqueue thread per
list of tensors), and ``enqueue_many=True`` to batch batches (PIPE-9..15).

The end of the input travels down the chain as ``OutOfRangeError``: the epoch
limit runs out, the producer's runner closes its queue, the batch runner's
dequeue from it fails, that runner closes the batch queue, and the consumer's
batch dequeue fails; ``MonitoredRun`` turns that into a clean stop (PIPE-3, MON-4).

Every lock, thread and clock read comes from ``coordkit.sync``; build a
pipeline inside the controlled run that uses it, as with the queues.
"""

from coordkit.pipeline._ops import Op, Tensor
from coordkit.pipeline.batching import batch, batch_join, shuffle_batch, shuffle_batch_join
from coordkit.pipeline.monitored import MonitoredRun
from coordkit.pipeline.producers import (
    input_producer,
    limit_epochs,
    range_input_producer,
    slice_input_producer,
    string_input_producer,
)

__all__ = [
    "MonitoredRun",
    "Op",
    "Tensor",
    "batch",
    "batch_join",
    "input_producer",
    "limit_epochs",
    "range_input_producer",
    "shuffle_batch",
    "shuffle_batch_join",
    "slice_input_producer",
    "string_input_producer",
]
