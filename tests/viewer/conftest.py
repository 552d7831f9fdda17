"""A headless Debian chromium, driven by Selenium through Debian's chromedriver.

No browser is downloaded: the executables are found on PATH (``apt-get install
chromium chromium-driver``; ``.ci/run`` installs them), and the browser tests skip
with the reason when either, or selenium, is missing.  One browser per test module.
Screenshots go to ``$COORDKIT_ARTIFACTS`` (default: a pytest temporary directory).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install coordkit[test])"
    if _chromium() is None:
        return "Debian's chromium is not installed (apt-get install chromium)"
    if shutil.which("chromedriver") is None:
        return "chromedriver is not installed (apt-get install chromium-driver)"
    return None


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    reason = _missing()
    if reason is not None:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = _chromium()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")),
                              options=options)
    driver.set_window_size(1500, 1000)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots are kept."""
    chosen = os.environ.get("COORDKIT_ARTIFACTS")
    path = Path(chosen) if chosen else tmp_path_factory.mktemp("viewer-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path
