"""A module with global synchronisation state, imported for the first time inside a run."""

import queue
import threading

LOCK = threading.Lock()
READY = threading.Event()
JOBS: queue.Queue = queue.Queue()


class Registry:
    lock = threading.RLock()
