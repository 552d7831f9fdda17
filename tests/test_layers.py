"""The layer contract (ENGINE-4): imports point down only, and nothing imports in a circle.

    primitives (queues, coordinator, queue_runner, pipeline, signals, _waiting, ...)
        -> sync, errors                     (never the engine)
    engine: search/replay/harness -> shrink -> report -> run -> schedulers -> dpor
        -> shims/patch/lines -> aio -> runtime -> points/frames -> sync, errors
                                            (never a primitive)
    stateful, history, testing, cli, pytest_plugin, viewer, verify: on top

Read from the code's own imports by grimp, those made only for type checkers
included (a circle there is a circle in the design).  A new upward import or circle
fails here.
"""

from __future__ import annotations

import grimp
import pytest

PRIMITIVES = {
    "coordkit.coordinator", "coordkit.queues", "coordkit.queue_runner", "coordkit.pipeline",
    "coordkit.signals", "coordkit._waiting", "coordkit._queue_elements",
}
# What sits above both halves: nothing below may import these.
TOP = {
    "coordkit", "coordkit.cli", "coordkit.__main__", "coordkit.pytest_plugin", "coordkit.testing",
    "coordkit.history", "coordkit.stateful", "coordkit.models", "coordkit.viewer",
    "coordkit.strategies", "coordkit.harness", "coordkit.schedulers", "coordkit.trace", "coordkit._demo",
    "coordkit.verify",
}
# Within the engine, what each layer may import (besides sync, errors and itself).
ENGINE_LAYERS = [
    {"coordkit.engine.points", "coordkit.engine.frames", "coordkit.engine.trace",
     "coordkit.engine.recursion"},
    {"coordkit.engine.accesses"},
    {"coordkit.engine.task"},
    {"coordkit.engine.cause"},
    {"coordkit.engine.failures", "coordkit.engine.record", "coordkit.engine.races",
     "coordkit.engine.snapshots"},
    {"coordkit.engine.runtime"},
    # asyncio's controlled loop: on the runtime, installed by patch, run's programs use it.
    {"coordkit.engine.aio"},
    {"coordkit.engine.shims", "coordkit.engine.patch", "coordkit.engine.tracing"},
    {"coordkit.engine.dpor"},
    {"coordkit.engine.schedulers"},
    {"coordkit.engine.run"},
    {"coordkit.engine.explain", "coordkit.engine.report", "coordkit.engine.report_data"},
    {"coordkit.engine.shrink", "coordkit.engine.strategies"},
    {"coordkit.engine.parallel"},  # workers and units of work (PAR-1)
    {"coordkit.engine.search", "coordkit.engine.hypothesis_search"},
    {"coordkit.engine.replay", "coordkit.engine.harness"},
]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("coordkit")


def _within(module: str, packages: set[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _imports(graph: grimp.ImportGraph, module: str) -> set[str]:
    return graph.find_modules_directly_imported_by(module)


def test_no_module_imports_in_a_circle(graph):
    circles = []
    for module in sorted(graph.modules):
        for imported in _imports(graph, module):
            # A circle through the package's own __init__ (its lazy re-exports) is none.
            if imported == "coordkit" or module == "coordkit":
                continue
            if graph.chain_exists(imported=module, importer=imported):
                circles.append(f"{module} <-> {imported}")
    assert not circles, circles


def test_sync_and_errors_import_nothing_of_coordkit(graph):
    assert _imports(graph, "coordkit.sync") == set()
    assert _imports(graph, "coordkit.errors") == set()


def test_primitives_reach_the_engine_only_through_sync(graph):
    allowed = PRIMITIVES | {"coordkit.sync", "coordkit.errors"}
    wrong = {m: sorted(i for i in _imports(graph, m) if not _within(i, allowed))
             for m in PRIMITIVES if m in graph.modules}
    assert not {m: w for m, w in wrong.items() if w}, wrong


def test_the_engine_never_imports_a_primitive_or_anything_above_it(graph):
    engine = {m for m in graph.modules if _within(m, {"coordkit.engine"})}
    wrong = {}
    for module in engine:
        bad = [i for i in _imports(graph, module) if _within(i, PRIMITIVES) or i in TOP
               or _within(i, TOP - {"coordkit"})]
        if bad:
            wrong[module] = sorted(bad)
    assert not wrong, wrong


def test_engine_layers_point_down(graph):
    level = {}
    for i, layer in enumerate(ENGINE_LAYERS):
        for package in layer:
            for module in graph.modules:
                if _within(module, {package}):
                    level[module] = i
    unplaced = {m for m in graph.modules if _within(m, {"coordkit.engine"})} - set(level) - {
        "coordkit.engine"}
    assert not unplaced, f"engine modules with no layer: {sorted(unplaced)}"
    upward = []
    for module, i in level.items():
        for imported in _imports(graph, module):
            if imported in level and level[imported] > i:
                upward.append(f"{module} (layer {i}) imports {imported} (layer {level[imported]})")
    assert not upward, upward


def test_the_graph_is_read(graph):
    """The checks above see the real imports (an empty graph would pass them all)."""
    assert "coordkit.engine.runtime" in _imports(graph, "coordkit.engine.run")
    assert "coordkit.sync" in _imports(graph, "coordkit.queues")
    assert graph.chain_exists(importer="coordkit.engine.search", imported="coordkit.engine.runtime")


def test_the_engine_reaches_above_itself_in_one_declared_place_only():
    """ENGINE-4: grimp cannot see an import by name, so it is held here: the only one in
    the engine is ``FoundFailure._repr_html_``'s lookup of the viewer (``HTML_VIEW``),
    made when a notebook asks, and the name it looks up exists."""
    import importlib
    import pathlib

    import coordkit.engine
    from coordkit.engine.report import HTML_VIEW

    engine = pathlib.Path(coordkit.engine.__file__).parent
    by_name = sorted(str(p.relative_to(engine)) for p in engine.rglob("*.py")
                     if "import_module(" in p.read_text(encoding="utf-8")
                     or "__import__(" in p.read_text(encoding="utf-8"))
    assert by_name == ["report.py"], by_name
    module, function = HTML_VIEW
    assert callable(getattr(importlib.import_module(module), function))
