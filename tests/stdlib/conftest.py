"""CPython's tests write scratch files (``os_helper.TESTFN``) into the working directory:
give each test an empty one of its own."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _scratch_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
