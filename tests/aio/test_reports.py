"""Tasks in reports (AIO-9): named by creation order in the run and coroutine."""

from __future__ import annotations

import asyncio

import coordkit


def test_tasks_are_numbered_per_run():
    """AIO-9: a task's default name is its creation order in the run, in every run."""
    async def main() -> None:
        assert asyncio.current_task().get_name() == "Task-1"
        child = asyncio.create_task(asyncio.sleep(0))
        named = asyncio.create_task(asyncio.sleep(0), name="mine")
        await asyncio.gather(child, named)
        assert (child.get_name(), named.get_name()) == ("Task-2", "mine")

    result = coordkit.explore(main, max_schedules=20, seed=1)
    assert result.failure is None, result.failure


def test_a_failures_rows_name_the_tasks_each_loop_step_runs():
    """AIO-9: a recorded failure's rows say which task (name and coroutine) or callback
    each step of the loop runs."""
    async def main() -> None:
        async def worker() -> None:
            await asyncio.sleep(1)
            raise RuntimeError("worker failed")

        await asyncio.create_task(worker())

    result = coordkit.explore(main, max_schedules=5, seed=1)
    text = str(result.failure)
    # (the rows' column is narrow: the coroutines' qualnames are cut short there)
    assert "» runs Task-1 test_a_failures_r" in text
    assert "» runs Task-2 test_a_failures_r" in text
    assert "» runs _set_result_unless_cancelled" in text  # the sleep(1) timer
