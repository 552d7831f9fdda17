"""The public surface is what ``coordkit.__all__`` says, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import coordkit


def test_all_names_resolve():
    for name in coordkit.__all__:
        assert getattr(coordkit, name) is not None, name


def test_import_is_light():
    code = "import sys, coordkit; print('hypothesis' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_errors_hierarchy():
    assert issubclass(coordkit.DeadlineExceededError, TimeoutError)
    assert issubclass(coordkit.DeadlineExceededError, coordkit.OpError)
    assert issubclass(coordkit.InvalidArgumentError, ValueError)
    for cls in (coordkit.OutOfRangeError, coordkit.CancelledError, coordkit.InvalidArgumentError):
        assert issubclass(cls, coordkit.OpError)
    assert coordkit.OutOfRangeError("x").message == "x"
