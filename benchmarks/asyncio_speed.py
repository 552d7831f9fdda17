#!/usr/bin/env python3
"""coordkit's event loop beside stock asyncio on the same programs (issue 29, item 10).

* **Cost per loop step**: ``tasks`` tasks each awaiting ``asyncio.sleep(0)`` ``spins``
  times, run once by stock ``asyncio.run`` and once by ``coordkit.explore`` (one schedule,
  sync granularity, no race detection: the loop's own cost); handles per second of each
  and the ratio (issue target: at most 2x).
* **Small programs**: schedules per second of ``explore`` at its defaults on a program
  that sleeps, hands work to ``to_thread`` and gathers two tasks over a Queue (the issue's
  measured program; target: 2,000 schedules/s or more), and on the same program without
  the thread (tasks only); beside each, how many times per second stock ``asyncio.run``
  runs it on real threads (its sleep made 0: stock sleeps in real time): one schedule is
  one run of the program, so stock's rate is what a run costs without coordkit.

Best of ``--repeat`` (wall clock: the loop's cost is what a user waits for). Run from the
repository root::

    python benchmarks/asyncio_speed.py
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import coordkit


def spinning(tasks: int, spins: int):
    async def main() -> None:
        async def spin() -> None:
            for _ in range(spins):
                await asyncio.sleep(0)

        await asyncio.gather(*(spin() for _ in range(tasks)))

    return main


async def small(delay: float = 0.1, thread: bool = True) -> None:
    queue: asyncio.Queue[int | None] = asyncio.Queue()
    got: list[int] = []

    async def producer() -> None:
        for i in range(3):
            await queue.put(i)
        await queue.put(None)

    async def consumer() -> None:
        while (item := await queue.get()) is not None:
            got.append(item)

    await asyncio.gather(producer(), consumer())
    await asyncio.sleep(delay)
    assert (await asyncio.to_thread(sum, got) if thread else sum(got)) == 3


async def tasks_only() -> None:
    """``small`` without its ``to_thread``."""
    await small(thread=False)


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--spins", type=int, default=2000)
    parser.add_argument("--schedules", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    program = spinning(args.tasks, args.spins)
    handles = args.tasks * args.spins
    stock = best(lambda: asyncio.run(program()), args.repeat)
    ours = best(lambda: coordkit.explore(program, max_schedules=1, max_steps=10**7,
                                         granularity="sync", races="ignore"), args.repeat)
    print(f"Python {sys.version.split()[0]}")
    print(f"loop step: stock asyncio {handles / stock:,.0f} handles/s, coordkit "
          f"{handles / ours:,.0f} handles/s: {ours / stock:.2f}x stock's time")
    runs = args.schedules
    for name, fn, stock_fn in (("small program", small, lambda: small(0)),
                               ("tasks only", tasks_only, lambda: small(0, thread=False))):
        elapsed = best(lambda fn=fn: coordkit.explore(fn, max_schedules=runs, seed=1),
                       args.repeat)
        stock = best(lambda again=stock_fn: [asyncio.run(again()) for _ in range(runs)],
                     args.repeat)
        print(f"{name}: {runs / elapsed:,.0f} schedules/s at explore's defaults; stock "
              f"asyncio.run {runs / stock:,.0f} runs/s: {elapsed / stock:.2f}x stock's time per run")


if __name__ == "__main__":
    main()
