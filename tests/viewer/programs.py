"""Programs the viewer tests draw: a lock-order deadlock and a hostile report."""

from __future__ import annotations

import queue
import threading

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: what follows it reads backwards
SCRIPT = "</script><script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=2">'
SVG = "\"'><svg onload=\"window.__pwned=3\">"
COMMENT = "<!--"


class Evil:
    """A queue item whose repr is markup."""

    def __repr__(self) -> str:
        return f'<img src=x onerror="window.__pwned=4">{RLO}'


def hostile() -> None:
    """Thread names, an exception message and queue items made of markup and a bidi control."""
    items: queue.SimpleQueue = queue.SimpleQueue()
    lock = threading.Lock()

    def worker() -> None:
        items.put(Evil())
        items.put(SCRIPT + COMMENT)
        with lock:
            raise ValueError(IMG + SVG + RLO)

    t = threading.Thread(target=worker, name=SCRIPT + RLO)
    t.start()
    t.join()
