"""The bytecode analysis behind race detection is total: it reads any code (RACE-3)."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from coordkit.engine.accesses import access_sites

MODULES = ["threading", "queue", "concurrent.futures.thread", "asyncio.base_events", "json.decoder",
           "collections", "dataclasses", "logging", "email.message", "argparse", "inspect"]


def _codes(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


@pytest.mark.parametrize("name", MODULES)
def test_every_code_object_of_a_module_is_analysed(name):
    # RACE-3: an operand it cannot name is unknown, never an error
    module = __import__(name, fromlist=["_"])
    source = Path(module.__file__).read_text(encoding="utf-8")
    count = 0
    for code in _codes(compile(source, module.__file__, "exec")):
        sites = access_sites(code)
        assert all(s.access in ("read", "write") for s in sites.values())
        count += len(sites)
    assert count > 0
