"""Every machine against coordkit's own classes, with the active Hypothesis profile (MUT-2).

Under ``--hypothesis-profile=ci`` each machine runs 100 derandomized examples
of 50 steps.  A failure here is either a bug in a reference class or in a
model; the message says which operation disagreed and how.
"""

from __future__ import annotations

from coordkit.stateful import (
    CoordinatorMachine,
    FIFOQueueMachine,
    PaddingFIFOQueueMachine,
    PriorityQueueMachine,
    QueueRunnerMachine,
    RandomShuffleQueueMachine,
)

# MACH-1, MACH-2, MACH-3, MACH-4, MACH-5, MACH-6, MACH-7: what each of these exercises.
TestFIFOQueue = FIFOQueueMachine.TestCase
TestRandomShuffleQueue = RandomShuffleQueueMachine.TestCase
TestPaddingFIFOQueue = PaddingFIFOQueueMachine.TestCase
TestPriorityQueue = PriorityQueueMachine.TestCase
TestCoordinator = CoordinatorMachine.TestCase
TestQueueRunner = QueueRunnerMachine.TestCase
