"""An "idempotent" ``shutdown()`` that two threads call at once closes the queue twice (Q-CLOSE-2).

A chat relay has a network reader thread that puts incoming messages on a
FIFOQueue and a main thread that relays them.  Either side may end the
session: the reader at end of stream, the main thread when it relays
``/quit``.  Both call ``Relay.shutdown()``, written to be safe to call twice::

    if not self.inbox.is_closed():
        self.inbox.close()

That is check-then-act.  Under TensorFlow's rules a plain ``close()`` of a
queue that is already closed raises ``CancelledError: Queue 'inbox' is already
closed.`` (Q-CLOSE-2).  When ``/quit`` is the last message before the end of
the stream, both threads shut down at about the same time.  Usually one of
them gets through both lines before the other looks (the round-robin schedule
passes), but if one is switched out between the check and the close, both
close and the second one dies.  A race needing one preemption.  The fix
elects a single closer under a lock (a flag set once) and closes outside it.
(``close(cancel_pending_enqueues=True)`` never raises either, but it would also
cancel a pending enqueue, which is not what an end of stream means.)
"""

from __future__ import annotations

import threading

from coordkit import FIFOQueue, OutOfRangeError

KIND = "exception"  # CancelledError: Queue 'inbox' is already closed.
RACE = True  # the plain round-robin schedule passes; it takes a scheduling choice to fail
RULES = ("Q-CLOSE-2",)

STREAM = ["hi", "how are you?", "/quit"]


class Relay:
    def __init__(self, elect_closer: bool) -> None:
        self.inbox = FIFOQueue(capacity=8, name="inbox")
        self._elect_closer = elect_closer
        self._lock = threading.Lock()
        self._closing = False

    def shutdown(self) -> None:
        if self._elect_closer:
            with self._lock:
                if self._closing:
                    return
                self._closing = True
            self.inbox.close()
        elif not self.inbox.is_closed():
            self.inbox.close()  # Q-CLOSE-2: a second plain close raises CancelledError


def _session(elect_closer: bool) -> None:
    relay = Relay(elect_closer)

    def network_reader() -> None:
        for message in STREAM:
            relay.inbox.enqueue(message)
        relay.shutdown()  # end of stream

    reader = threading.Thread(target=network_reader, name="network-reader")
    reader.start()
    relayed = []
    try:
        while True:
            message = relay.inbox.dequeue()
            if message == "/quit":
                relay.shutdown()
                break
            relayed.append(message)
    except OutOfRangeError:
        pass
    reader.join()
    assert relayed == ["hi", "how are you?"]


def buggy() -> None:
    _session(elect_closer=False)


def fixed() -> None:
    _session(elect_closer=True)
