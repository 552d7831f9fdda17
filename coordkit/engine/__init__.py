"""The exploration engine: unmodified threaded code, one thread at a time.

Layers, each importing only those below it (checked by ``tests/test_layers.py``):

* ``runtime``     Execution: the baton, parking on a ``WaitQueue``, virtual time,
                  the step budget, deadlock detection; ``points``: what a thread is
                  about to do and what a step did; ``frames``: where in the user's code.
* ``shims``, ``patch``, ``lines``  the stdlib objects a run hands out, the patching
                  that makes unmodified code use them, and line granularity.
* ``schedulers``  one strategy per module behind ``choose(point, enabled)``.
* ``run``         THE one way to run one schedule: ``Session.run(fn, scheduler) -> Run``.
* ``report``      a ``Run`` made readable; the failure is mapped here, once.
* ``shrink``, ``search``, ``hypothesis_search``, ``replay``, ``harness``
                  what callers use: explore, replay, and the step-by-step harness.

The engine never imports a reference primitive (queues, coordinator, ...).
"""
