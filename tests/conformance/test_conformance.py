"""Differential conformance: coordkit against TensorFlow's recorded behaviour.

Every scenario of ``scenarios.py`` runs on coordkit and its outcomes are compared,
step by step, with what TensorFlow did (``tf_outcomes.json``, written only by
``record_tf.py``). A scenario marked with a deviation is checked on both sides:
coordkit must produce the documented safe outcome at the tagged steps, and the
recorded TensorFlow outcome must be what the deviation says TensorFlow does;
every other step must still agree.

``pytest -m tf`` also runs the scenarios live on TensorFlow (in this interpreter
if it can import ``tensorflow``, else through ``$COORDKIT_TF_PYTHON``) and
compares coordkit, and the committed record, with that live run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from . import engine, scenarios
from .record_tf import DEFAULT_OUT, DRIVER_VERSION, FORMAT, GENERATOR, record_checksum
from .steps import scenario_hash

RECORD_PATH = DEFAULT_OUT
REPO = Path(__file__).resolve().parents[2]
RERECORD = "../tfvenv/bin/python tests/conformance/record_tf.py"

# Scenarios where coordkit disagrees with TensorFlow and no deviation documents it.
# Each is a bug for the team to fix (or a deviation to write down in the specs).
# The tests run and are expected to fail (strict: a fix makes them XPASS -> fail,
# so the entry must then be removed).
KNOWN_DISAGREEMENTS: dict[str, str] = {}


def _load_record() -> dict | None:
    if not RECORD_PATH.exists():
        return None
    return json.loads(RECORD_PATH.read_text())


RECORD = _load_record()


# --------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------


def _matches(actual: list, expected: list) -> bool:
    """Outcome equality; an expected error with message None matches any message."""
    expected = engine.canon(expected)
    if expected[0] == "error" and len(expected) == 3 and expected[2] is None:
        return actual[0] == "error" and actual[1] == expected[1]
    return actual == expected


def compare(s: dict, tf_entry: dict, ck: list) -> list[str]:
    """Differences between a TF entry and coordkit's outcomes (empty: conformant)."""
    dev = s["deviation"] or {"tf": {}, "coordkit": {}, "tf_crashes": False}
    tags = {step["tag"]: i for i, step in enumerate(s["steps"]) if "tag" in step}
    tf = tf_entry["outcomes"]
    problems: list[str] = []

    if dev["tf_crashes"]:
        crash_at = min(tags[t] for t in dev["tf"])
        if "crashed" not in tf_entry:
            problems.append(f"{dev['id']}: TF was expected to abort at step {crash_at}, "
                            f"but it did not (record: {tf[crash_at:crash_at + 1]})")
        elif len(tf) != crash_at:
            problems.append(f"{dev['id']}: TF aborted after {len(tf)} steps, expected at "
                            f"step {crash_at}")
    else:
        if "crashed" in tf_entry:
            problems.append(f"TF aborted unexpectedly: {tf_entry['crashed']}")
        if len(tf) != len(ck):
            problems.append(f"step count differs: TF {len(tf)}, coordkit {len(ck)}")

    for i, (label, ck_out) in enumerate(ck):
        tag = s["steps"][i].get("tag")
        tf_out = tf[i][1] if i < len(tf) else None
        if i < len(tf) and tf[i][0] != label:
            problems.append(f"step {i}: label differs: TF {tf[i][0]!r}, coordkit {label!r}")
        if tag in dev["coordkit"]:
            want_ck = dev["coordkit"][tag]
            if not _matches(ck_out, want_ck):
                problems.append(f"{label}: {dev['id']} says coordkit gives {want_ck}, "
                                f"got {ck_out}")
            want_tf = dev["tf"].get(tag)
            if want_tf is not None and (tf_out is None or not _matches(tf_out, want_tf)):
                problems.append(f"{label}: {dev['id']} says TF gives {want_tf}, "
                                f"the record has {tf_out}")
            continue
        if tf_out is None:
            continue  # after a TF abort there is nothing to compare
        if tf_out != ck_out:
            problems.append(f"{label}: TF {tf_out} != coordkit {ck_out}")
    return problems


def _format(s: dict, problems: list[str], tf: list, ck: list) -> str:
    lines = [f"scenario {s['name']} (rules {', '.join(s['rules'])}"
             + (f"; TF test {s['tf_test']}" if s["tf_test"] else "") + "):"]
    lines += [f"  - {p}" for p in problems]
    lines.append("  full trace (TF | coordkit):")
    for i in range(max(len(tf), len(ck))):
        a = tf[i] if i < len(tf) else ["", "-"]
        b = ck[i] if i < len(ck) else ["", "-"]
        mark = "  " if a[1] == b[1] else "!="
        lines.append(f"   {mark} {(a[0] or b[0]):40} {json.dumps(a[1])} | {json.dumps(b[1])}")
    return "\n".join(lines)


def _params() -> list:
    out = []
    for s in scenarios.SCENARIOS:
        marks = []
        if s["name"] in KNOWN_DISAGREEMENTS:
            marks.append(pytest.mark.xfail(reason=KNOWN_DISAGREEMENTS[s["name"]], strict=True))
        out.append(pytest.param(s, id=s["name"], marks=marks))
    return out


def _run_coordkit(s: dict) -> list:
    from .drivers import run_scenario

    return run_scenario(s)


# --------------------------------------------------------------------------------------
# The record itself
# --------------------------------------------------------------------------------------


def test_record_was_written_by_the_script() -> None:
    assert RECORD is not None, f"{RECORD_PATH} is missing; record it with: {RERECORD}"
    assert RECORD.get("generator") == GENERATOR
    assert RECORD.get("format") == FORMAT
    assert RECORD.get("driver_version") == DRIVER_VERSION, (
        f"the TF driver changed (driver_version {DRIVER_VERSION}); re-record: {RERECORD}"
    )
    assert RECORD.get("checksum") == record_checksum(RECORD["scenarios"]), (
        "tf_outcomes.json does not match its checksum: it was edited by hand. "
        f"Re-record it: {RERECORD}"
    )
    assert RECORD.get("tensorflow") and RECORD.get("recorded_at")


def test_record_is_up_to_date() -> None:
    assert RECORD is not None, f"{RECORD_PATH} is missing; record it with: {RERECORD}"
    recorded = RECORD["scenarios"]
    missing = [s["name"] for s in scenarios.SCENARIOS if s["name"] not in recorded]
    stale = [
        s["name"] for s in scenarios.SCENARIOS
        if s["name"] in recorded and recorded[s["name"]]["hash"] != scenario_hash(s)
    ]
    extra = sorted(set(recorded) - set(scenarios.BY_NAME))
    assert not (missing or stale or extra), (
        f"the TF record is out of date: missing {missing}, stale {stale}, extra {extra}. "
        f"Re-record: {RERECORD} --only <names>  (or without --only for all)"
    )


def test_scenarios_are_well_formed() -> None:
    assert len(scenarios.SCENARIOS) >= 80
    for s in scenarios.SCENARIOS:
        assert s["rules"], s["name"]
        tags = [step["tag"] for step in s["steps"] if "tag" in step]
        assert len(tags) == len(set(tags)), f"{s['name']}: duplicate tags"
        dev = s["deviation"]
        if dev is None:
            continue
        assert dev["id"].startswith("DEV-"), s["name"]
        assert set(dev["coordkit"]) <= set(tags), f"{s['name']}: unknown tags in deviation"
        assert set(dev["tf"]) <= set(tags), f"{s['name']}: unknown tags in deviation"
        if not dev["tf_crashes"]:
            assert set(dev["tf"]) == set(dev["coordkit"]), s["name"]


def _ported_tf_tests() -> dict[str, list[str]]:
    """TF test name -> the scenarios that port it."""
    ported: dict[str, list[str]] = {}
    for s in scenarios.SCENARIOS:
        for name in scenarios.tf_test_names(s["tf_test"]) if s["tf_test"] else []:
            ported.setdefault(name, []).append(s["name"])
    return ported


def test_every_tf_test_is_ported_or_excused() -> None:
    """Each test of the digest's section 8 has a scenario or a NOT_PORTED reason."""
    ported = _ported_tf_tests()
    unknown = sorted(set(ported) - scenarios.TF_TESTS)
    assert not unknown, f"tf_test names that are not in TF_TESTS (typo?): {unknown}"
    missing = sorted(scenarios.TF_TESTS - set(ported) - set(scenarios.NOT_PORTED))
    assert not missing, f"TF tests with neither a scenario nor a NOT_PORTED reason: {missing}"
    both = {n: ported[n] for n in sorted(set(scenarios.NOT_PORTED) & set(ported))}
    assert not both, f"NOT_PORTED names tests that have scenarios: {both}"
    stray = sorted(set(scenarios.NOT_PORTED) - scenarios.TF_TESTS)
    assert not stray, f"NOT_PORTED names tests that are not in TF_TESTS: {stray}"
    assert all(r.strip() for r in scenarios.NOT_PORTED.values())


def test_tf_test_names_parsing() -> None:
    assert scenarios.tf_test_names(
        "fifo_queue_test.FIFOQueueTest.testDequeue+testDequeueHalf"
        "+GPUCompatibleFIFOQueueTests.testEnqueueDequeue"
    ) == [
        "fifo_queue_test.FIFOQueueTest.testDequeue",
        "fifo_queue_test.FIFOQueueTest.testDequeueHalf",
        "fifo_queue_test.GPUCompatibleFIFOQueueTests.testEnqueueDequeue",
    ]
    assert scenarios.tf_test_names("random_shuffle_queue_test.testA+testB") == [
        "random_shuffle_queue_test.testA", "random_shuffle_queue_test.testB"]


def _deviation_params() -> list:
    seen: dict = {}
    for s in scenarios.SCENARIOS:
        if s["deviation"]:
            seen.setdefault((s["deviation"]["id"], s["deviation"]["where"]), s["name"])
    return [pytest.param(k[0], k[1], id=k[0]) for k in sorted(seen)]


@pytest.mark.parametrize(("dev_id", "where"), _deviation_params())
def test_deviation_is_documented(dev_id: str, where: str) -> None:
    spec = REPO / where
    if not spec.exists():
        pytest.skip(f"{where} is not written yet")
    assert dev_id in spec.read_text(), f"{dev_id} is not documented in {where}"


# --------------------------------------------------------------------------------------
# coordkit against the record
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("s", _params())
def test_conformance(s: dict) -> None:
    assert RECORD is not None, f"{RECORD_PATH} is missing; record it with: {RERECORD}"
    entry = RECORD["scenarios"].get(s["name"])
    assert entry is not None, f"no TF record for {s['name']}; record it: {RERECORD} --only"
    assert entry["hash"] == scenario_hash(s), (
        f"the TF record of {s['name']} is stale; re-record: {RERECORD} --only {s['name']}"
    )
    ck = _run_coordkit(s)
    problems = compare(s, entry, ck)
    assert not problems, _format(s, problems, entry["outcomes"], ck)


# --------------------------------------------------------------------------------------
# Live TensorFlow (pytest -m tf)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def live_tf() -> dict:
    """All scenarios run once on TensorFlow, now."""
    if importlib.util.find_spec("tensorflow") is not None:
        from .record_tf import record

        return record(verbose=False)
    python = os.environ.get("COORDKIT_TF_PYTHON")
    if not python:
        pytest.skip("tensorflow is not importable here; set COORDKIT_TF_PYTHON to a Python "
                    "that has it (e.g. ../tfvenv/bin/python) to compare live")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "live.json"
        subprocess.run(
            [python, str(Path(__file__).with_name("record_tf.py")), "--out", str(out)],
            check=True, cwd=REPO, timeout=3600,
        )
        doc = json.loads(out.read_text())
    return {"tensorflow": doc["tensorflow"], "entries": doc["scenarios"]}


@pytest.mark.tf
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("s", _params())
def test_live_tensorflow(s: dict, live_tf: dict) -> None:
    entry = live_tf["entries"][s["name"]]
    ck = _run_coordkit(s)
    problems = compare(s, entry, ck)
    if RECORD is not None and RECORD.get("tensorflow") == live_tf["tensorflow"]:
        rec = RECORD["scenarios"].get(s["name"])
        if rec is not None and rec["hash"] == scenario_hash(s) and rec["outcomes"] != entry[
            "outcomes"
        ]:
            problems.append("the live TF run differs from the committed record "
                            "(TF nondeterminism, or a stale record)")
    assert not problems, _format(s, problems, entry["outcomes"], ck)


def test_coordkit_side_needs_no_tensorflow() -> None:
    """The driver and the scenarios import neither TensorFlow nor numpy."""
    code = (
        "import sys; sys.modules['tensorflow'] = None; sys.modules['numpy'] = None\n"
        f"sys.path.insert(0, {str(REPO / 'tests')!r})\n"
        "from conformance import drivers, scenarios\n"
        "print(len(drivers.run_scenario(scenarios.BY_NAME['fifo_enqueue'])))"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
