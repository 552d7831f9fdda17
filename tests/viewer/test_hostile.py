"""A hostile report in a real browser: nothing it carries runs, and it reads literally.

The program's thread name, exception message and queue items are markup
(``</script><script>``, ``<img onerror>``, ``"'><svg onload>``, ``<!--``) and a
RIGHT-TO-LEFT OVERRIDE.  Each page the viewer makes of it (a replay's, a saved
run's, a notebook's ``_repr_html_``) is loaded: no injected script ran, no injected
element exists, and the text is on the page as text, the override shown as
``<U+202E>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import coordkit
from coordkit.viewer import failure_page, render_html
from tests.viewer._pages import explored_page
from tests.viewer.programs import COMMENT, IMG, RLO, SCRIPT, SVG, Evil, hostile


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("hostile")
    replayed, report = explored_page(hostile, directory, "replayed")
    saved = directory / "saved.html"
    saved.write_text(render_html(report.events, report.thread_names, title=SCRIPT,
                                 failure=IMG + SVG, trace=report.trace), encoding="utf-8")
    found = coordkit.explore(hostile, seed=3, max_schedules=50).failure
    assert found is not None
    notebook = directory / "notebook.html"
    notebook.write_text(failure_page(found), encoding="utf-8")
    cell = directory / "cell.html"  # what a notebook puts in its output cell
    cell.write_text(f"<!DOCTYPE html><html><body>{found._repr_html_()}</body></html>",
                    encoding="utf-8")
    return {"replayed": replayed, "saved": saved, "notebook": notebook, "cell": cell}


def _nothing_ran(browser: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    assert browser.execute_script("return window.__pwned === undefined")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    injected = browser.execute_script(
        "return document.querySelectorAll('img, svg, iframe, object, embed, body script').length")
    assert injected == 2  # the page's own two scripts (data, code); no image, no svg
    assert browser.execute_script("return document.scripts.length") == 2


@pytest.mark.parametrize("name", ["replayed", "saved", "notebook"])
def test_a_hostile_report_runs_nothing_and_reads_literally(browser, pages, name, artifacts):
    # VIEW-5
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(pages[name].as_uri())
    _nothing_ran(browser)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert RLO not in body
    lanes = browser.find_element(By.CSS_SELECTOR, "#pane-main table.lanes thead").text
    assert f"T1 {SCRIPT[:40]}" in lanes  # the thread's name, as written (cut to 40 here)
    if name == "saved":
        assert SCRIPT in browser.find_element(By.TAG_NAME, "h1").text
    assert IMG + SVG in browser.find_element(By.CSS_SELECTOR, "#pane-main .failure").text
    # The script ran (its counter is filled) and stepping through every step runs nothing.
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).send_keys(Keys.HOME).perform()
    assert browser.find_element(By.CSS_SELECTOR, "#pane-main .counter").text.startswith("step 1 / ")
    ActionChains(browser).send_keys(Keys.END).perform()
    _nothing_ran(browser)
    if name == "replayed":  # a saved run and a notebook's failure keep rows only (VIEW-1);
        # the viewer's replay shows the queue's items
        queues = browser.find_element(By.CSS_SELECTOR, "#pane-main .queues").text
        assert repr(Evil()).replace(RLO, "<U+202E>") in queues
        assert repr(SCRIPT + COMMENT) in queues
        threads = browser.find_element(By.CSS_SELECTOR, "#pane-main .threads").text
        assert f"T1 {SCRIPT}<U+202E>" in threads  # in full in the threads panel
        browser.save_screenshot(str(artifacts / f"hostile-{name}.png"))


def test_a_notebook_cell_shows_the_viewer_in_a_sandboxed_frame(browser, pages):
    # VIEW-5: FoundFailure._repr_html_ is the page in <iframe sandbox="allow-scripts">: its
    # script runs (the counter is filled) in a document of its own, and nothing injected runs.
    from selenium.webdriver.common.by import By

    browser.get(pages["cell"].as_uri())
    frame = browser.find_element(By.CSS_SELECTOR, "iframe.coordkit-viewer")
    assert frame.get_attribute("sandbox") == "allow-scripts"
    assert browser.execute_script("return window.__pwned === undefined")
    browser.switch_to.frame(frame)
    try:
        _nothing_ran(browser)
        counter = browser.find_element(By.CSS_SELECTOR, "#pane-main .counter").text
        assert counter.startswith("step ") and counter.split()[1] == counter.split()[3]
    finally:
        browser.switch_to.default_content()
