"""``close()`` wakes one waiter with ``notify()`` where every waiter must see it.

A download manager runs two fetcher threads that take URLs from a hand-written
``UrlFrontier`` (a list and a Condition); ``get()`` waits while the frontier is
empty and open, and returns None once it is closed and empty.  ``put()``
rightly wakes one waiter with ``notify()`` -- one URL, one fetcher -- and
``close()``, written by analogy, also calls ``notify()``.  But closing changes
the predicate of every waiter: if both fetchers are idle in ``wait()`` when the
frontier is closed, one wakes and exits and the other sleeps for ever, so the
manager's ``join`` hangs.  If at most one fetcher is waiting at that moment
(the other is busy or has not reached ``get()`` yet), it works, which is what
the round-robin schedule and most real runs do.  A race needing one
preemption: both fetchers must be parked before the close.  The fix:
``notify_all()`` on close, a state change that every waiter must see.
"""

from __future__ import annotations

import threading

KIND = "deadlock"
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail


class UrlFrontier:
    def __init__(self, wake_all_on_close: bool) -> None:
        self._urls: list[str] = []
        self._closed = False
        self._cond = threading.Condition()
        self._wake_all_on_close = wake_all_on_close

    def put(self, url: str) -> None:
        with self._cond:
            self._urls.append(url)
            self._cond.notify()  # one URL: one fetcher is enough

    def get(self) -> str | None:
        with self._cond:
            while not self._urls and not self._closed:
                self._cond.wait()
            return self._urls.pop(0) if self._urls else None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            if self._wake_all_on_close:
                self._cond.notify_all()
            else:
                self._cond.notify()  # wakes one idle fetcher; another may sleep for ever


def _crawl(wake_all_on_close: bool) -> None:
    frontier = UrlFrontier(wake_all_on_close)
    fetched: list[str] = []

    def fetcher() -> None:
        while (url := frontier.get()) is not None:
            fetched.append(url)

    fetchers = [threading.Thread(target=fetcher, name=f"fetcher-{i}") for i in range(2)]
    for f in fetchers:
        f.start()
    frontier.put("https://example.org/")
    frontier.close()
    for f in fetchers:
        f.join()
    assert fetched == ["https://example.org/"]


def buggy() -> None:
    _crawl(wake_all_on_close=False)


def fixed() -> None:
    _crawl(wake_all_on_close=True)
