"""Run every conformance scenario on real TensorFlow and record the outcomes.

Usage (from the repository root; TensorFlow lives in its own venv, never in the
project's dependencies)::

    ../tfvenv/bin/python tests/conformance/record_tf.py            # re-record all
    ../tfvenv/bin/python tests/conformance/record_tf.py --only NAME [NAME ...]
    ../tfvenv/bin/python tests/conformance/record_tf.py --out /tmp/live.json

The output, ``tests/conformance/tf_outcomes.json``, is only ever written by this
script: its header names the generator and carries a checksum of the recorded
entries, and each entry carries the hash of the scenario it was recorded from, so
the test suite detects a hand edit or a stale record.

TensorFlow runs in graph mode (``tf.compat.v1``): every scenario gets a fresh
Graph in which all of its ops are built before the first step runs, and one
Session; timeouts are ``RunOptions(timeout_in_ms=...)``. A background operation
is considered blocked when it has not finished after a settle delay (recording
is offline, so waiting here is fine). Scenarios flagged ``tf_subprocess`` (TF
aborts the process on them) run in a child process whose outcomes are streamed
back line by line; a crash is recorded as such.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):
    sys.path.insert(0, str(HERE.parent))
    from conformance import engine, scenarios  # type: ignore[no-redef]
    from conformance.steps import (  # type: ignore[no-redef]
        canonical_json,
        parse_ref,
        scenario_hash,
    )
else:
    from . import engine, scenarios
    from .steps import canonical_json, parse_ref, scenario_hash

GENERATOR = "tests/conformance/record_tf.py"
FORMAT = 1
# Bump when the TF driver changes what it records for an unchanged scenario.
DRIVER_VERSION = 2
DEFAULT_OUT = HERE / "tf_outcomes.json"
SETTLE = 1.0  # seconds a background TF op must stay unfinished to count as blocked


def record_checksum(entries: dict) -> str:
    return hashlib.sha256(canonical_json(entries).encode()).hexdigest()


class TFBackend:
    """Runs scenario steps on TensorFlow (graph mode)."""

    name = "tensorflow"
    cap = engine.DEFAULT_CAP

    def __init__(self) -> None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import numpy as np
        import tensorflow as tf

        tf.get_logger().setLevel("ERROR")
        self.np = np
        self.tf = tf
        self.tf1 = tf.compat.v1
        self.tf1.disable_eager_execution()
        self.Coordinator = self.tf1.train.Coordinator
        self.LooperThread = self.tf1.train.LooperThread
        self.version = tf.__version__

    # -- classes and errors ------------------------------------------------------------

    def error_class(self, name: str) -> type:
        return getattr(self.tf.errors, name)

    def make_op_error(self, cls: type, msg: str) -> BaseException:
        return cls(None, None, msg)

    def error_outcome(self, e: BaseException) -> list:
        return engine.error_outcome(e)

    # -- lifecycle ---------------------------------------------------------------------

    def begin(self, scenario: dict, st: engine.State) -> None:
        tf1 = self.tf1
        self.graph = self.tf.Graph()
        self.built: dict = {}
        self.tf_vars: dict = {}
        with self.graph.as_default():
            for i, step in enumerate(scenario["steps"]):
                s = step["do"] if step["op"] == "start" else step
                if s["op"] in engine.BACKEND_OPS:
                    self.built[i] = self._build(st, s)
            # (local variables: the epoch counters of the input helpers)
            init = tf1.group(tf1.global_variables_initializer(), tf1.local_variables_initializer())
        config = tf1.ConfigProto(inter_op_parallelism_threads=2, intra_op_parallelism_threads=1)
        self.sess = tf1.Session(graph=self.graph, config=config)
        self.sess.run(init)

    def end(self, st: engine.State) -> None:
        try:
            self.sess.close()  # cancels every op still blocked
        except Exception:
            pass

    def op(self, st: engine.State, key: Any, step: dict) -> Any:
        return self.built[key]

    def is_pending(self, st: engine.State, h: engine.Handle) -> bool:
        return not h.done.wait(SETTLE)

    # -- building ----------------------------------------------------------------------

    def _build(self, st: engine.State, s: dict) -> Any:
        try:
            return getattr(self, "_b_" + s["op"])(st, s)
        except Exception as e:  # a Python-level (graph construction) error
            err = e

            def fail() -> None:
                raise err

            return fail

    def run(self, fetch: Any, feed: dict | None = None, timeout: float | None = None) -> Any:
        opts = None
        if timeout is not None:
            opts = self.tf1.RunOptions(timeout_in_ms=round(timeout * 1000))
        return self.sess.run(fetch, feed_dict=feed, options=opts)

    def _b_make_queue(self, st: engine.State, s: dict) -> Any:
        tf, tf1 = self.tf, self.tf1
        dtypes = [tf.as_dtype(d) for d in s["dtypes"]] if s.get("dtypes") is not None else None
        kw = {"shapes": s.get("shapes"), "names": s.get("names"), "name": s["q"]}
        cls = s["cls"]
        cap = s["capacity"]
        if cls == "FIFOQueue":
            q = tf1.FIFOQueue(cap, dtypes, **kw)
        elif cls == "RandomShuffleQueue":
            q = tf1.RandomShuffleQueue(
                cap, s.get("min_after_dequeue", 0), dtypes, seed=s.get("seed"), **kw
            )
        elif cls == "PaddingFIFOQueue":
            q = tf1.PaddingFIFOQueue(cap, dtypes, **kw)
        elif cls == "PriorityQueue":
            q = tf1.PriorityQueue(cap, dtypes, **kw)
        else:
            raise ValueError(f"unknown queue class {cls}")
        st.queues[s["q"]] = q
        op = q.queue_ref.op
        return lambda: self.run(op)

    def _component(self, q: Any, v: Any, i: int, many: bool, feed: dict) -> Any:
        np, tf = self.np, self.tf
        dts = q.dtypes
        dt = dts[i] if i < len(dts) else None
        if dt is None:
            arr = np.asarray(v)
            dt = tf.as_dtype(arr.dtype if arr.dtype != object else np.bytes_)
        else:
            # The Python value goes through TF's own conversion first, exactly as if
            # it had been passed to enqueue (its TypeError/ValueError for a wrong
            # type or a ragged list); then it is fed through a placeholder so that
            # shapes are checked by the kernel at run time, not by shape inference.
            tf.convert_to_tensor(v, dtype=dt)
            # (strings as objects; numbers cast as TF converts them, wrapping around)
            arr = (np.asarray(v, dtype=object) if dt == tf.string
                   else np.asarray(v).astype(dt.as_numpy_dtype))
        # A Python [] cannot show the sizes below its empty dimension; like coordkit
        # (Q-API-4), read it as an empty array of the component's shape: [0] + shape
        # for enqueue_many, [0] + shape[1:] for enqueue (None dimensions as 0).
        shapes = q.shapes
        if arr.shape == (0,) and i < len(shapes) and shapes[i].rank:
            dims = tuple(d if d is not None else 0 for d in shapes[i].as_list())
            arr = arr.reshape((0, *dims) if many else (0, *dims[1:]))
        ph = self.tf1.placeholder(dt)
        feed[ph] = arr
        return ph

    def _feed(self, q: Any, vals: Any, many: bool) -> tuple:
        feed: dict = {}
        if isinstance(vals, dict):
            names = list(q.names or [])
            phs = {
                k: self._component(q, v, names.index(k) if k in names else 0, many, feed)
                for k, v in vals.items()
            }
        elif isinstance(vals, (list, tuple)):
            phs = [self._component(q, v, i, many, feed) for i, v in enumerate(vals)]
        else:
            phs = self._component(q, vals, 0, many, feed)
        return phs, feed

    def _b_enqueue(self, st: engine.State, s: dict) -> Any:
        q = st.queues[s["q"]]
        phs, feed = self._feed(q, s["vals"], False)
        op = q.enqueue(phs)
        return lambda: self.run(op, feed, s.get("timeout"))

    def _b_enqueue_many(self, st: engine.State, s: dict) -> Any:
        q = st.queues[s["q"]]
        phs, feed = self._feed(q, s["vals"], True)
        op = q.enqueue_many(phs)
        return lambda: self.run(op, feed, s.get("timeout"))

    def _b_dequeue(self, st: engine.State, s: dict) -> Any:
        t = st.queues[s["q"]].dequeue()
        return lambda: self.run(t, None, s.get("timeout"))

    # n is fed at run time (like the values), so that it is checked by the kernel,
    # not by graph-construction shape inference.
    def _b_dequeue_many(self, st: engine.State, s: dict) -> Any:
        n = self.tf1.placeholder(self.tf.int32, shape=[])
        t = st.queues[s["q"]].dequeue_many(n)
        return lambda: self.run(t, {n: s["n"]}, s.get("timeout"))

    def _b_dequeue_up_to(self, st: engine.State, s: dict) -> Any:
        n = self.tf1.placeholder(self.tf.int32, shape=[])
        t = st.queues[s["q"]].dequeue_up_to(n)
        return lambda: self.run(t, {n: s["n"]}, s.get("timeout"))

    def _b_close(self, st: engine.State, s: dict) -> Any:
        op = st.queues[s["q"]].close(cancel_pending_enqueues=bool(s.get("cancel")))
        return lambda: self.run(op, None, s.get("timeout"))

    def _b_size(self, st: engine.State, s: dict) -> Any:
        t = st.queues[s["q"]].size()
        return lambda: self.run(t)

    def _b_is_closed(self, st: engine.State, s: dict) -> Any:
        t = st.queues[s["q"]].is_closed()
        return lambda: self.run(t)

    def _b_wait_size(self, st: engine.State, s: dict) -> Any:
        import time

        t = st.queues[s["q"]].size()

        def fn() -> int:
            deadline = time.monotonic() + self.cap
            while self.run(t) != s["n"] and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(SETTLE)  # let a producer reach its blocked enqueue
            return self.run(t)

        return fn

    # -- counters and queue runners ----------------------------------------------------

    def _b_var(self, st: engine.State, s: dict) -> Any:
        v = self.tf1.Variable(0, dtype=self.tf.int64, name=s["id"])
        self.tf_vars[s["id"]] = v
        return lambda: None

    def _b_var_value(self, st: engine.State, s: dict) -> Any:
        v = self.tf_vars[s["id"]]
        return lambda: self.run(v)

    def _runner_op(self, st: engine.State, o: dict) -> Any:
        tf = self.tf
        kind = o["kind"]
        deps = [st.queues[o["gate"]].dequeue()] if o.get("gate") else []
        with tf.control_dependencies(deps):
            if kind == "count":
                x = self.tf_vars[o["var"]].count_up_to(o["limit"])
                return tf.group(x, name=o["name"])
            if kind == "count_enqueue":
                x = self.tf_vars[o["var"]].count_up_to(o["limit"])
                return st.queues[o["q"]].enqueue(x, name=o["name"])
            if kind == "enqueue_const":
                q = st.queues[o["q"]]
                return q.enqueue(tf.constant(o["value"], dtype=q.dtypes[0]), name=o["name"])
            if kind == "move":
                return st.queues[o["dst"]].enqueue(st.queues[o["src"]].dequeue(), name=o["name"])
            if kind == "fail":
                a = tf.debugging.Assert(tf.constant(False), [tf.constant(o["msg"])])
                return tf.group(a, name=o["name"])
        raise ValueError(f"unknown runner op {kind}")

    def _b_qr(self, st: engine.State, s: dict) -> Any:
        tf = self.tf
        q = st.queues[s["q"]] if s.get("q") is not None else None
        built: dict = {}  # an op listed twice is the same op twice
        ops = []
        for o in s["ops"]:
            key = canonical_json(o)
            if key not in built:
                built[key] = self._runner_op(st, o)
            ops.append(built[key])
        types = s.get("types")
        if types is None:
            qtypes = None
        elif types == "list":
            qtypes = [tf.errors.OutOfRangeError]
        elif types == "empty":
            qtypes = ()
        elif types == "non_op_error":
            qtypes = (ValueError,)
        else:
            qtypes = tuple(getattr(tf.errors, n) for n in types)
        r = self.tf1.train.QueueRunner(q, ops, queue_closed_exception_types=qtypes)
        st.runners[s["id"]] = r
        return lambda: None

    def _b_qr_create(self, st: engine.State, s: dict) -> Any:
        def fn() -> dict:
            r = st.runners[s["id"]]
            c = st.coords[s["c"]] if s.get("c") else None
            ts = r.create_threads(
                self.sess, coord=c, daemon=bool(s.get("daemon")), start=bool(s.get("start"))
            )
            st.threads[s["t"]] = list(ts)
            st.all_threads.extend(ts)
            return {"n": len(ts), "names": [t.name for t in ts]}

        return fn

    def _b_qr_add(self, st: engine.State, s: dict) -> Any:
        self.tf1.train.add_queue_runner(st.runners[s["id"]])  # the graph's collection
        return lambda: None

    def _b_qr_start_all(self, st: engine.State, s: dict) -> Any:
        def fn() -> dict:
            c = st.coords[s["c"]] if s.get("c") else None
            ts = self.tf1.train.start_queue_runners(sess=self.sess, coord=c)
            st.threads[s["t"]] = list(ts)
            st.all_threads.extend(ts)
            return {
                "names": [t.name for t in ts],
                "daemon": [t.daemon for t in ts],
                "started": [t.ident is not None for t in ts],
            }

        return fn

    def _b_qr_exceptions(self, st: engine.State, s: dict) -> Any:
        def fn() -> list:
            return [
                engine.error_outcome(e)[1:] for e in st.runners[s["id"]].exceptions_raised
            ]

        return fn

    def _b_qr_info(self, st: engine.State, s: dict) -> Any:
        def fn() -> dict:
            r = st.runners[s["id"]]
            return {
                "name": r.name,
                "types": [c.__name__ for c in r.queue_closed_exception_types],
            }

        return fn


    # -- input pipelines ------------------------------------------------------------------

    def _expr(self, built: dict, e: Any) -> Any:
        """A tensor expression (steps.py) as TF tensors."""
        if isinstance(e, str):
            ref = parse_ref(e)
            if ref[0] == "op":
                method = getattr(built[ref[1]], ref[2])
                return method() if ref[3] is None else method(ref[3])
            return built[ref[1]][ref[2]] if ref[0] == "item" else built[ref[1]]
        if isinstance(e, list):
            return [self._expr(built, x) for x in e]
        if set(e) == {"const"}:
            return self.tf.constant(e["const"])
        if set(e) == {"add"}:
            return self._expr(built, e["add"][0]) + e["add"][1]
        return {k: self._expr(built, v) for k, v in e.items()}

    def _stage(self, built: dict, stage: dict) -> Any:
        tf, tf1 = self.tf, self.tf1
        args = dict(stage["args"])
        for key in ("tensors", "tensors_list"):
            if key in args:
                args[key] = self._expr(built, args[key])
        args.pop("dtypes", None)  # coordkit's typed queues; TF infers the types
        runtime = args.get("string_tensor")
        if isinstance(runtime, dict):  # a value known only at run time
            default = tf.constant(runtime["runtime"], dtype=tf.string)
            args["string_tensor"] = tf1.placeholder_with_default(default, shape=[None])
        return getattr(tf1.train, stage["kind"])(**args)

    def _b_pipeline(self, st: engine.State, s: dict) -> Any:
        tf1 = self.tf1
        before = list(tf1.get_collection(tf1.GraphKeys.QUEUE_RUNNERS))
        built: dict = {}
        for stage in s["stages"]:
            built[stage["id"]] = self._stage(built, stage)
        fetch = self._expr(built, s["fetch"])
        runners = [r for r in tf1.get_collection(tf1.GraphKeys.QUEUE_RUNNERS) if r not in before]

        def fn() -> dict:
            coord = tf1.train.Coordinator()
            threads: list = []
            for r in runners:
                threads.extend(r.create_threads(self.sess, coord=coord, daemon=True, start=True))
            st.all_threads.extend(threads)
            return engine.drive_pipeline(runners, threads, coord, lambda: self.run(fetch),
                                         s["max_fetches"], self.error_outcome)

        return fn


# --------------------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------------------


def run_in_subprocess(name: str) -> dict:
    """Run one scenario in a child process; survive (and record) an abort."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--stream", name]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    outcomes = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("[")]
    entry: dict = {"outcomes": outcomes}
    if p.returncode != 0:
        tail = [ln for ln in p.stderr.strip().splitlines() if "Check failed" in ln]
        entry["crashed"] = {
            "returncode": p.returncode,
            "check_failure": tail[-1].split("] ", 1)[-1] if tail else None,
        }
    return entry


def record(names: list[str] | None = None, verbose: bool = True) -> dict:
    backend = TFBackend()
    eng = engine.Engine(backend)
    entries: dict = {}
    for s in scenarios.SCENARIOS:
        if names and s["name"] not in names:
            continue
        entry = run_in_subprocess(s["name"]) if s["tf_subprocess"] else {"outcomes": eng.run(s)}
        entry["hash"] = scenario_hash(s)
        entry["tensorflow"] = backend.version
        entry["recorded_at"] = _now()
        entries[s["name"]] = entry
        if verbose:
            flag = " CRASHED" if "crashed" in entry else ""
            print(f"recorded {s['name']}{flag}", file=sys.stderr, flush=True)
    return {"tensorflow": backend.version, "entries": entries}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def write(path: Path, tf_version: str, entries: dict) -> None:
    entries = {k: entries[k] for k in sorted(entries)}
    doc = {
        "generator": GENERATOR,
        "format": FORMAT,
        "driver_version": DRIVER_VERSION,
        "tensorflow": tf_version,
        "python": platform.python_version(),
        "recorded_at": _now(),
        "settle_seconds": SETTLE,
        "checksum": record_checksum(entries),
        "scenarios": entries,
    }
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--only", nargs="+", help="re-record these scenarios, keep the rest")
    ap.add_argument("--stream", help=argparse.SUPPRESS)  # child mode: one scenario, JSON lines
    args = ap.parse_args(argv)

    if args.stream:
        s = scenarios.BY_NAME[args.stream]
        eng = engine.Engine(TFBackend())
        eng.run(s, emit=lambda e: print(json.dumps(e), flush=True))
        return 0

    unknown = [n for n in (args.only or []) if n not in scenarios.BY_NAME]
    if unknown:
        ap.error(f"unknown scenarios: {unknown}")
    result = record(args.only)
    entries = result["entries"]
    if args.only:
        if not args.out.exists():
            ap.error(f"--only needs an existing record at {args.out}")
        old = json.loads(args.out.read_text())
        if old.get("tensorflow") != result["tensorflow"]:
            ap.error("the existing record is from another TensorFlow version; re-record all")
        merged = {
            k: v for k, v in old["scenarios"].items() if k in scenarios.BY_NAME
        }
        merged.update(entries)
        entries = merged
    write(args.out, result["tensorflow"], entries)
    print(f"wrote {len(entries)} scenarios to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
