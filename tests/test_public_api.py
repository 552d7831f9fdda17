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


def test_errors_take_tensorflows_arguments_too():
    import pickle

    import pytest

    err = coordkit.OutOfRangeError(None, "op", "input exhausted")
    assert (err.message, err.node_def, err.op, str(err)) == ("input exhausted", None, "op", "input exhausted")
    assert coordkit.CancelledError().message == ""
    assert pickle.loads(pickle.dumps(coordkit.OutOfRangeError("x"))).message == "x"
    with pytest.raises(TypeError, match=r"takes \(message\) or \(node_def, op, message\); got 2"):
        coordkit.OutOfRangeError("a", "b")
