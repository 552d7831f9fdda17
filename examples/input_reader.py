"""The canonical input pipeline of TensorFlow's QueueRunner docstring, over real files.

Three sets of threads, as ``tf.train.QueueRunner`` describes them::

    string_input_producer        reader threads (yours)            batch
    file names, 2 epochs  --->   read, parse, enqueue   --->   examples queue  --->  batches --> main
    (a QueueRunner)              (registered with the           (a QueueRunner)
                                  Coordinator)

* ``string_input_producer`` feeds the names of the files, shuffled per epoch with a seed; when
  the epochs run out its runner closes the file-name queue.
* Each reader thread dequeues a file name, reads the file's records (``value,label`` lines),
  parses them and enqueues ``(value, label)`` examples. When the file-name queue raises
  OutOfRangeError the reader is done; the *last* reader to finish closes the examples queue.
* ``batch`` turns the examples into batches; once the examples queue is closed and drained, the
  final smaller batch comes out, then OutOfRangeError, which ends the main loop. Main then
  requests a stop and joins every thread.

Every record arrives once per epoch, and nothing is left running::

    python examples/input_reader.py              # real threads
    python examples/input_reader.py --replay     # the controlled scheduler: identical every run
    python examples/input_reader.py --find-bug   # plant a bug (no reader closes the queue), find it

``main(bug="no_close")`` plants the bug of the last line: nobody closes the examples queue, so the
batch stage waits for ever for examples that never come, and so does main. ``bug="first_closes"``
plants a race instead: the first reader to finish closes the queue, although another may still
be enqueuing (its next enqueue then fails, or its error comes after the stop and is lost with its
records). ``coordkit.explore`` finds either and hands back a trace that replays it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading

import coordkit
from coordkit.pipeline import batch, string_input_producer

NUM_FILES = 4
RECORDS_PER_FILE = 5
LABELS = 3


def write_files(directory: str, num_files: int = NUM_FILES, records: int = RECORDS_PER_FILE) -> list[str]:
    """Write ``num_files`` files of ``records`` lines ``value,label`` each; return their paths.

    The values are ``0 .. num_files * records - 1``, each in exactly one file.
    """
    paths = []
    for i in range(num_files):
        path = os.path.join(directory, f"part-{i:02d}.csv")
        with open(path, "w", encoding="utf-8") as f:
            for j in range(records):
                value = i * records + j
                f.write(f"{value},{value % LABELS}\n")
        paths.append(path)
    return paths


def read_records(path: str) -> list[tuple[int, int]]:
    """The parsed records of one file: ``(value, label)`` pairs."""
    with open(path, encoding="utf-8") as f:
        return [(int(value), int(label)) for value, label in (line.strip().split(",") for line in f)]


def start_readers(
    coord: coordkit.Coordinator,
    filenames: coordkit.FIFOQueue,
    examples: coordkit.FIFOQueue,
    num_readers: int,
    bug: str | None = None,
) -> list[threading.Thread]:
    """Start ``num_readers`` reader threads, registered with ``coord``; the last one closes ``examples``."""
    lock = threading.Lock()
    running = [num_readers]  # guarded by lock

    def finished() -> None:
        with lock:
            running[0] -= 1
            last = running[0] == 0
        if bug == "first_closes":
            if not examples.is_closed():  # the bug: "I am done, so the input is done"
                examples.close()
        elif last and bug != "no_close":
            examples.close()

    def read() -> None:
        try:
            with coord.stop_on_exception():
                while not coord.should_stop():
                    try:
                        path = filenames.dequeue()
                    except coordkit.OutOfRangeError:
                        return  # every epoch has been read
                    for record in read_records(path):
                        examples.enqueue(record)
        finally:
            finished()

    threads = [threading.Thread(target=read, name=f"reader-{i}", daemon=True) for i in range(num_readers)]
    for t in threads:
        coord.register_thread(t)
        t.start()
    return threads


def run_pipeline(
    paths: list[str],
    num_epochs: int = 2,
    num_readers: int = 2,
    batch_size: int = 6,
    seed: int = 7,
    bug: str | None = None,
    verbose: bool = False,
) -> list[list[tuple[int, int]]]:
    """Run the three stages over the files at ``paths`` to the end of the epochs; return the batches."""
    batches: list[list[tuple[int, int]]] = []
    with coordkit.queue_runner_scope():  # a fresh registry: the "graph" of this run
        filenames = string_input_producer(paths, num_epochs=num_epochs, seed=seed)
        examples = coordkit.FIFOQueue(8, name="examples")
        get_batch = batch(examples.dequeue, batch_size, allow_smaller_final_batch=True)
        coord = coordkit.Coordinator()
        threads = coordkit.start_queue_runners(coord) + start_readers(
            coord, filenames, examples, num_readers, bug
        )
        try:
            while not coord.should_stop():
                batches.append(get_batch())
                if verbose:
                    print(f"batch {len(batches) - 1}: {batches[-1]}")
        except coordkit.OutOfRangeError:
            pass  # the end of the epochs
        finally:
            coord.request_stop()
            examples.close(cancel_pending_enqueues=True)  # releases a reader blocked on a full queue
            coord.join(stop_grace_period_secs=10)
    if verbose:
        stopped = sum(not t.is_alive() for t in threads)
        print(f"{sum(map(len, batches))} examples in {len(batches)} batches; "
              f"{stopped} of {len(threads)} threads stopped")
    return batches


def main(bug: str | None = None, verbose: bool = True) -> list[list[tuple[int, int]]]:
    """Write the files into a temporary directory and run the pipeline over them."""
    with tempfile.TemporaryDirectory() as directory:
        return run_pipeline(write_files(directory), bug=bug, verbose=verbose)


def find_bug() -> None:
    """Explore the planted bug (no reader closes the examples queue), then replay its trace."""
    with tempfile.TemporaryDirectory() as directory:
        paths = write_files(directory)

        def buggy() -> None:
            run_pipeline(paths, bug="no_close")

        result = coordkit.explore(buggy, seed=1, max_schedules=20, max_steps=200_000)
        failure = result.failure
        if failure is None:
            raise SystemExit(f"not found: {result}")
        print("\n".join(str(failure).splitlines()[:4]))  # the whole report: print(failure)
        print(failure.replay_line())
        try:
            coordkit.replay(buggy, failure.trace, max_steps=200_000)
        except coordkit.Deadlock:
            print("replayed: the same deadlock")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replay", action="store_true", help="run under the controlled scheduler")
    parser.add_argument("--find-bug", action="store_true", help="explore the planted bug and replay it")
    args = parser.parse_args()
    if args.find_bug:
        find_bug()
    elif args.replay:
        coordkit.replay(main, [], max_steps=200_000)
    else:
        main()
