"""The viewer in headless chromium: keys, the slider and the panels follow the run's steps.

Pages come from real explorations (a lock-order deadlock, the demo's shutdown race);
the tests press keys as a reader would and read what the page shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coordkit._demo import shutdown_race
from tests.sched.programs import lock_order_deadlock
from tests.viewer._pages import explored_page, step_rows


@pytest.fixture(scope="module")
def deadlock(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    return explored_page(lock_order_deadlock, tmp_path_factory.mktemp("pages"), "deadlock")


def _load(browser: Any, page: Path) -> None:
    browser.get(page.as_uri())


def _text(browser: Any, selector: str) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, selector).text


def _press(browser: Any, key: str, times: int = 1) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    for _ in range(times):
        ActionChains(browser).send_keys(key).perform()


def _row(browser: Any, panel: str, label: str) -> list[str]:
    """The cells of ``label``'s row in one of the main pane's panels."""
    from selenium.webdriver.common.by import By

    for row in browser.find_elements(By.CSS_SELECTOR, f"#pane-main .{panel} tr"):
        cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        if cells and cells[0] == label:
            return cells
    raise AssertionError(f"{label} is not in {panel}: {_text(browser, f'#pane-main .{panel}')}")


def _owner(browser: Any, lock: str) -> str:
    return _row(browser, "locks", lock)[1]


def test_keys_move_the_counter_the_source_line_and_the_lock_owners(browser, deadlock, artifacts):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    # VIEW-3 (stepping, the lanes), VIEW-1 (the panels follow the world)
    page, report = deadlock
    rows = step_rows(report)
    n = report.steps
    _load(browser, page)
    assert _text(browser, "#pane-main .counter") == f"step {n} / {n}"  # it opens at the failure
    lanes = browser.find_elements(By.CSS_SELECTOR, "#pane-main table.lanes thead th")
    assert [th.text for th in lanes] == ["step", "T0 MainThread", "T1 Thread-1 (ab)", "T2 Thread-2 (ba)"]
    _press(browser, Keys.HOME)
    assert _text(browser, "#pane-main .counter") == f"step 1 / {n}"
    assert _owner(browser, "Lock#1") == "free" and _owner(browser, "Lock#2") == "free"
    # T1 (ab) takes Lock#1 at `with a, b:`: the panel shows the step as it begins, so the
    # lock is free at that step and T1's at the next.
    k = next(i for i, e in enumerate(rows) if (e.tid, e.kind, e.target) == (1, "acquire", "Lock#1"))
    _press(browser, Keys.ARROW_RIGHT, k)
    assert _text(browser, "#pane-main .counter") == f"step {k + 1} / {n}"
    assert _text(browser, "#pane-main .source tr.hl .text").strip() == "with a, b:"
    assert _text(browser, "#pane-main tr.step.current th.n") == str(k + 1)
    assert _owner(browser, "Lock#1") == "free"
    _press(browser, Keys.ARROW_RIGHT)
    assert _text(browser, "#pane-main .counter") == f"step {k + 2} / {n}"
    assert _owner(browser, "Lock#1").startswith("T1 ")
    browser.save_screenshot(str(artifacts / "deadlock-lock-taken.png"))
    _press(browser, Keys.ARROW_LEFT)
    assert _owner(browser, "Lock#1") == "free"  # stepping back shows the world before
    _press(browser, Keys.END)
    assert _text(browser, "#pane-main .counter") == f"step {n} / {n}"
    assert _owner(browser, "Lock#1").startswith("T1 ") and _owner(browser, "Lock#2").startswith("T2 ")
    browser.save_screenshot(str(artifacts / "deadlock-failing-step.png"))


def test_the_slider_moves_one_step_per_key(browser, deadlock):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    # VIEW-3
    page, report = deadlock
    _load(browser, page)
    slider = browser.find_element(By.CSS_SELECTOR, "#pane-main input.slider")
    slider.send_keys(Keys.HOME)
    assert _text(browser, "#pane-main .counter") == f"step 1 / {report.steps}"
    slider.send_keys(Keys.ARROW_RIGHT)  # the slider moves itself; the page does not move it twice
    assert _text(browser, "#pane-main .counter") == f"step 2 / {report.steps}"


def test_the_failing_step_is_highlighted_and_the_passing_neighbour_is_beside_it(browser, deadlock):
    from selenium.webdriver.common.by import By

    # VIEW-3 (the failing step, preemption marks), VIEW-4 (the passing neighbour)
    page, report = deadlock
    _load(browser, page)
    failing = browser.find_elements(By.CSS_SELECTOR, "#pane-main tr.step.failing")
    assert len(failing) == 1
    assert "current" in failing[0].get_attribute("class")
    assert failing[0].find_element(By.CSS_SELECTOR, "th.n").text == str(report.steps)
    assert "The failing step." in _text(browser, "#pane-main .now")
    # A preemption mark per preemption the run made.
    marks = browser.find_elements(By.CSS_SELECTOR, "#pane-main tr.step.preempt")
    assert len(marks) == report.preemptions >= 1
    assert "⚡ preempted" in marks[0].text
    neighbour = _text(browser, "#pane-neighbour")
    assert "This run passes." in neighbour and "Failure" not in neighbour
    assert "Passing neighbour: the same schedule without its last preemption" in _text(
        browser, ".neighbour-note")
    total = int(_text(browser, "#pane-neighbour .counter").split(" / ")[1])
    assert total == len(browser.find_elements(By.CSS_SELECTOR, "#pane-neighbour tr.step"))
    assert not browser.find_elements(By.CSS_SELECTOR, "#pane-neighbour tr.step.failing")


def test_the_counter_counts_the_runs_steps_not_its_rows(browser, tmp_path, artifacts):
    # VIEW-2. Issue 19 measured "63 steps for a run of 45": rows that open an operation ("call")
    # or park a thread ("block") are not steps.
    from selenium.webdriver.common.keys import Keys

    page, report = explored_page(shutdown_race, tmp_path, "demo", seed=0)
    assert len(report.events) > report.steps == len(step_rows(report))
    _load(browser, page)
    _press(browser, Keys.HOME)
    assert _row(browser, "queues", "'items'")[-1] == "open"
    _press(browser, Keys.END)
    assert _text(browser, "#pane-main .counter") == f"step {report.steps} / {report.steps}"
    assert _row(browser, "queues", "'items'")[-1] == "closed"  # the second close fails
    browser.save_screenshot(str(artifacts / "demo-failing-step.png"))
