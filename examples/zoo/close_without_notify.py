"""A hand-written closable queue whose ``close()`` sets the flag but notifies no one.

A small log shipper keeps lines in a hand-written ``LineBuffer`` (a list and a
Condition) so that it can be closed, which ``queue.Queue`` cannot do.  A
shipper thread takes lines until ``get()`` returns None (closed and empty).
``close()`` takes the lock and sets ``closed = True`` -- and forgets
``notify_all()``.  If the shipper is already waiting on the condition when the
buffer is closed, nobody ever wakes it: the shipper sleeps for ever and the
main thread's ``join`` with it.  If instead the main thread gets through
``put``, ``put``, ``close`` before the shipper first looks (what usually
happens, and what the round-robin schedule does), the shipper sees the flag on
its first check and exits.  A race: it takes one preemption, letting the
shipper drain the buffer and start waiting between the last ``put`` and the
``close``; real-thread tests rarely hit it.  The fix: ``close()`` calls
``notify_all()`` under the lock, like every other change the waiters'
predicate depends on.
"""

from __future__ import annotations

import threading

KIND = "deadlock"
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail


class LineBuffer:
    def __init__(self, notify_on_close: bool) -> None:
        self._lines: list[str] = []
        self._closed = False
        self._cond = threading.Condition()
        self._notify_on_close = notify_on_close

    def put(self, line: str) -> None:
        with self._cond:
            self._lines.append(line)
            self._cond.notify()

    def get(self) -> str | None:
        """The next line, or None once the buffer is closed and empty."""
        with self._cond:
            while not self._lines and not self._closed:
                self._cond.wait()
            return self._lines.pop(0) if self._lines else None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            if self._notify_on_close:
                self._cond.notify_all()


def _ship(notify_on_close: bool) -> None:
    buffer = LineBuffer(notify_on_close)
    shipped: list[str] = []

    def shipper() -> None:
        while (line := buffer.get()) is not None:
            shipped.append(line)

    t = threading.Thread(target=shipper, name="shipper")
    t.start()
    buffer.put("GET /index.html 200")
    buffer.put("GET /favicon.ico 404")
    buffer.close()
    t.join()
    assert shipped == ["GET /index.html 200", "GET /favicon.ico 404"]


def buggy() -> None:
    _ship(notify_on_close=False)


def fixed() -> None:
    _ship(notify_on_close=True)
