"""Task lanes (AIO-46): an asyncio run's viewer shows a lane per task beside the threads,
marked in the rows whose loop step runs the task; checked in the data and in chromium."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from coordkit.viewer.model import pane
from tests.viewer._pages import explored_page


async def lost_item() -> None:
    """A producer's item is never the one the consumer expects: fails in every run."""
    async def producer(items: asyncio.Queue[int]) -> None:
        await asyncio.sleep(0.5)
        await items.put(1)

    items: asyncio.Queue[int] = asyncio.Queue()
    task = asyncio.create_task(producer(items))
    got = await items.get()
    await task
    assert got == 2, "wrong item"


@pytest.fixture(scope="module")
def tasks_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    return explored_page(lost_item, tmp_path_factory.mktemp("pages"), "tasks", max_schedules=20)


def test_the_pane_has_a_lane_per_task_marked_where_it_runs(tasks_page):
    """AIO-46: the lanes are the tasks a loop step runs, in creation order, named with
    their coroutines; each row lists the lanes of the tasks it runs: the loop's step that
    runs them, where the note was made (a note of what a step does belongs to that step)."""
    _, report = tasks_page
    data = pane(report.events, report.thread_names, failure="x", trace=None,
                task_names=report.task_names)
    assert data["tasks"][:2] == ["Task-1 lost_item", "Task-2 lost_item.<locals>.producer"]
    assert any(0 in row["tasks"] for row in data["rows"])
    assert any(1 in row["tasks"] for row in data["rows"])
    assert all(row["tasks"] == [] for row in data["rows"] if row["tid"] != 0)  # loop thread
    # On the loop step that runs the task, not on the step after it.
    assert all(row["op"].startswith("loop ") for row in data["rows"] if row["tasks"]), \
        [(row["op"], row["tasks"]) for row in data["rows"]]
    threads_only = pane(report.events, report.thread_names, failure=None, trace=None)
    assert threads_only["tasks"] == []


def test_the_page_shows_task_lanes_beside_the_threads(browser, tasks_page, artifacts):
    """AIO-46: in the page, the task lanes follow the thread lanes; a row whose loop step
    runs Task-2 marks Task-2's lane; stepping still moves the counter."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    page, report = tasks_page
    browser.get(page.as_uri())
    heads = [th.text for th in browser.find_elements(
        By.CSS_SELECTOR, "#pane-main table.lanes thead th")]
    assert heads[:2] == ["step", "T0 MainThread"]
    tasks = [th.text for th in browser.find_elements(
        By.CSS_SELECTOR, "#pane-main table.lanes thead th.task")]
    assert tasks[:2] == ["Task-1 lost_item", "Task-2 lost_item.<locals>.producer"]
    assert heads.index(tasks[0]) > heads.index("T0 MainThread")
    lane = heads.index(tasks[1])  # Task-2's column, counting the step column
    marked = [row for row in browser.find_elements(By.CSS_SELECTOR, "#pane-main tr.step")
              if row.find_elements(By.CSS_SELECTOR, "td")[lane - 1].text == "▶ runs"]
    assert marked, "no row marks Task-2's lane"
    assert "runs Task-2 lost_item.<locals>.producer" in marked[0].text
    ActionChains(browser).send_keys(Keys.HOME).perform()
    counter = browser.find_element(By.CSS_SELECTOR, "#pane-main .counter").text
    assert counter == f"step 1 / {report.steps}"
    browser.save_screenshot(str(artifacts / "task-lanes.png"))
