"""A sentinel shutdown overtakes a retried job: the job is lost.

An upload worker takes jobs from a bounded ``queue.Queue``; an upload that
fails transiently is put back on the queue to be retried.  The main thread
queues the jobs and then a ``None`` sentinel meaning "no more work"; the worker
stops when it takes the sentinel.  FIFO order makes this look safe -- the
sentinel is behind every job -- except for a job that is put back *after* the
sentinel went in: it is now behind the sentinel, the worker stops first, and
the job is silently never uploaded.  Whether that happens depends on whether
the failing upload is retried before or after the main thread queues the
sentinel.  A race needing one preemption: in the round-robin schedule the
worker retries before the main thread gets to run again.  The fix uses the
queue's own work accounting: the worker calls ``task_done()`` for every job it
takes (a re-queued job counts as new work first), and the main thread waits in
``jobs.join()`` for all work, retries included, before it sends the sentinel.
"""

from __future__ import annotations

import queue
import threading

KIND = "exception"  # AssertionError: a job was never uploaded
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail
FILES = ["a.log", "b.log"]


def _upload_all(wait_for_work: bool) -> None:
    jobs: queue.Queue[str | None] = queue.Queue(maxsize=2)
    uploaded: list[str] = []
    flaky = {"b.log"}  # fails once, then works

    def worker() -> None:
        while (path := jobs.get()) is not None:
            if path in flaky:
                flaky.discard(path)
                jobs.put(path)  # retry later (counted as new work before task_done)
            else:
                uploaded.append(path)
            jobs.task_done()
        jobs.task_done()

    t = threading.Thread(target=worker, name="uploader")
    t.start()
    for path in FILES:
        jobs.put(path)
    if wait_for_work:
        jobs.join()  # every job, retries included, is done
    jobs.put(None)
    t.join()
    assert sorted(uploaded) == FILES, f"never uploaded: {sorted(set(FILES) - set(uploaded))}"


def buggy() -> None:
    _upload_all(wait_for_work=False)


def fixed() -> None:
    _upload_all(wait_for_work=True)
