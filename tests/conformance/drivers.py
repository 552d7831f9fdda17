"""The coordkit driver: runs conformance scenarios on coordkit (no TensorFlow needed).

The Python-level steps (Coordinator, LooperThread, threads, events) are interpreted
by ``engine.Engine`` exactly as for TensorFlow; this backend supplies coordkit's
classes and implements the queue, counter and QueueRunner steps.

A background operation counts as blocked when the queue's ``statistics()`` shows
as many waiters of its kind (pending enqueues, dequeues or plain closes) as there
are unfinished background operations of that kind on that queue. Since the
statistics count only attempts actually waiting in a waiter list, this is exact:
no settle delay, and a 10 s cap in case an operation never gets there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from . import engine
from .steps import canonical_json, parse_ref

_PENDING_FIELD = {
    "enqueue": "pending_enqueues",
    "dequeue": "pending_dequeues",
    "close": "pending_closes",
}


class CoordkitBackend:
    name = "coordkit"
    cap = 10.0

    def __init__(self) -> None:
        from coordkit import coordinator, errors, queue_runner, queues

        self.errors = errors
        self.queues = queues
        self.queue_runner = queue_runner
        self.Coordinator = coordinator.Coordinator
        self.LooperThread = coordinator.LooperThread

    # -- classes and errors ------------------------------------------------------------

    def error_class(self, name: str) -> type:
        return getattr(self.errors, name)

    def make_op_error(self, cls: type, msg: str) -> BaseException:
        return cls(msg)

    def error_outcome(self, e: BaseException) -> list:
        return engine.error_outcome(e)

    # -- lifecycle ---------------------------------------------------------------------

    def begin(self, scenario: dict, st: engine.State) -> None:
        self.vars: dict = {}
        # The scenario's own collection of runners (TF: the scenario's graph).
        self.registry = self.queue_runner.QueueRunnerRegistry()

    def end(self, st: engine.State) -> None:
        # Release everything still blocked: enqueuers are cancelled, dequeuers
        # then see a closed queue.
        for q in st.queues.values():
            try:
                q.close(cancel_pending_enqueues=True)
            except Exception:
                pass

    def op(self, st: engine.State, key: Any, step: dict) -> Callable[[], Any]:
        return getattr(self, "_" + step["op"])(st, step)

    def is_pending(self, st: engine.State, h: engine.Handle) -> bool:
        q = st.queues.get(h.queue)
        field = _PENDING_FIELD.get(h.kind or "")
        if q is None or field is None:
            return not h.done.wait(self.cap)
        deadline = time.monotonic() + self.cap
        while not h.done.is_set():
            outstanding = sum(
                1
                for x in st.handles.values()
                if x.queue == h.queue and x.kind == h.kind and not x.done.is_set()
            )
            if getattr(q.statistics(), field) >= outstanding:
                return True
            if time.monotonic() > deadline:
                return False
            h.done.wait(0.001)
        return False

    # -- queues ------------------------------------------------------------------------

    def _make_queue(self, st: engine.State, s: dict) -> Callable[[], Any]:
        queues = self.queues

        def fn() -> None:
            untyped = bool(s.get("ck_untyped"))
            dtypes = None if untyped else s.get("dtypes")
            shapes = None if untyped else s.get("shapes")
            names = None if untyped else s.get("names")
            cls, cap, name = s["cls"], s["capacity"], s["q"]
            if cls == "FIFOQueue":
                q = queues.FIFOQueue(cap, dtypes, shapes, names, name=name)
            elif cls == "RandomShuffleQueue":
                q = queues.RandomShuffleQueue(
                    cap, s.get("min_after_dequeue", 0), dtypes, shapes, names,
                    seed=s.get("seed"), name=name,
                )
            elif cls == "PaddingFIFOQueue":
                q = queues.PaddingFIFOQueue(cap, dtypes, shapes, names, name=name)
            elif cls == "PriorityQueue":
                q = queues.PriorityQueue(cap, dtypes, shapes, names, name=name)
            else:
                raise ValueError(f"unknown queue class {cls}")
            st.queues[s["q"]] = q

        return fn

    def _enqueue(self, st: engine.State, s: dict) -> Callable[[], Any]:
        return lambda: st.queues[s["q"]].enqueue(s["vals"], timeout=s.get("timeout"))

    def _enqueue_many(self, st: engine.State, s: dict) -> Callable[[], Any]:
        return lambda: st.queues[s["q"]].enqueue_many(s["vals"], timeout=s.get("timeout"))

    def _dequeue(self, st: engine.State, s: dict) -> Callable[[], Any]:
        return lambda: st.queues[s["q"]].dequeue(timeout=s.get("timeout"))

    def _dequeue_many(self, st: engine.State, s: dict) -> Callable[[], Any]:
        return lambda: st.queues[s["q"]].dequeue_many(s["n"], timeout=s.get("timeout"))

    def _dequeue_up_to(self, st: engine.State, s: dict) -> Callable[[], Any]:
        return lambda: st.queues[s["q"]].dequeue_up_to(s["n"], timeout=s.get("timeout"))

    def _close(self, st: engine.State, s: dict) -> Callable[[], Any]:
        return lambda: st.queues[s["q"]].close(
            cancel_pending_enqueues=bool(s.get("cancel")), timeout=s.get("timeout")
        )

    def _size(self, st: engine.State, s: dict) -> Callable[[], Any]:
        return lambda: st.queues[s["q"]].size()

    def _is_closed(self, st: engine.State, s: dict) -> Callable[[], Any]:
        return lambda: st.queues[s["q"]].is_closed()

    def _wait_size(self, st: engine.State, s: dict) -> Callable[[], Any]:
        def fn() -> int:
            q = st.queues[s["q"]]
            deadline = time.monotonic() + self.cap
            while time.monotonic() < deadline:
                stats = q.statistics()
                if stats.size == s["n"] and stats.pending_enqueues >= s.get("blocked_enqueues", 0):
                    break
                time.sleep(0.001)
            return q.size()

        return fn

    # -- counters and queue runners ----------------------------------------------------

    def _var(self, st: engine.State, s: dict) -> Callable[[], Any]:
        def fn() -> None:
            self.vars[s["id"]] = {"value": 0, "lock": threading.Lock()}

        return fn

    def _var_value(self, st: engine.State, s: dict) -> Callable[[], Any]:
        return lambda: self.vars[s["id"]]["value"]

    def _count_up_to(self, v: str, limit: int) -> int:
        """TF's ``count_up_to``: return the old value and increment, up to ``limit``."""
        var = self.vars[v]
        with var["lock"]:
            old = var["value"]
            if old >= limit:
                raise self.errors.OutOfRangeError(f"Reached limit of {limit}")
            var["value"] = old + 1
            return old

    def _runner_op(self, st: engine.State, o: dict) -> Callable[[], Any]:
        kind = o["kind"]
        gate = o.get("gate")

        def wait_gate() -> None:
            if gate:
                st.queues[gate].dequeue()

        if kind == "count":

            def fn() -> None:
                wait_gate()
                self._count_up_to(o["var"], o["limit"])

        elif kind == "count_enqueue":

            def fn() -> None:
                wait_gate()
                st.queues[o["q"]].enqueue([self._count_up_to(o["var"], o["limit"])])

        elif kind == "enqueue_const":

            def fn() -> None:
                wait_gate()
                st.queues[o["q"]].enqueue([o["value"]])

        elif kind == "move":

            def fn() -> None:
                wait_gate()
                st.queues[o["dst"]].enqueue([st.queues[o["src"]].dequeue()])

        elif kind == "fail":

            def fn() -> None:
                wait_gate()
                raise self.errors.InvalidArgumentError(f"assertion failed: [{o['msg']}]")

        else:
            raise ValueError(f"unknown runner op {kind}")
        fn.name = o["name"]  # type: ignore[attr-defined]  # the op name in thread names
        return fn

    def _qr(self, st: engine.State, s: dict) -> Callable[[], Any]:
        errors = self.errors

        def fn() -> None:
            q = st.queues[s["q"]] if s.get("q") is not None else None
            built: dict = {}  # an op listed twice is the same callable twice
            ops = []
            for o in s["ops"]:
                key = canonical_json(o)
                if key not in built:
                    built[key] = self._runner_op(st, o)
                ops.append(built[key])
            types = s.get("types")
            if types is None:
                qtypes: Any = None
            elif types == "list":
                qtypes = [errors.OutOfRangeError]
            elif types == "empty":
                qtypes = ()
            elif types == "non_op_error":
                qtypes = (ValueError,)
            else:
                qtypes = tuple(getattr(errors, n) for n in types)
            st.runners[s["id"]] = self.queue_runner.QueueRunner(
                q, ops, queue_closed_exception_types=qtypes
            )

        return fn

    def _qr_create(self, st: engine.State, s: dict) -> Callable[[], Any]:
        def fn() -> dict:
            r = st.runners[s["id"]]
            c = st.coords[s["c"]] if s.get("c") else None
            ts = r.create_threads(coord=c, daemon=bool(s.get("daemon")), start=bool(s.get("start")))
            st.threads[s["t"]] = list(ts)
            st.all_threads.extend(ts)
            return {"n": len(ts), "names": [t.name for t in ts]}

        return fn

    def _qr_add(self, st: engine.State, s: dict) -> Callable[[], Any]:
        def fn() -> None:
            with self.queue_runner.queue_runner_scope(self.registry):
                self.queue_runner.add_queue_runner(st.runners[s["id"]])

        return fn

    def _qr_start_all(self, st: engine.State, s: dict) -> Callable[[], Any]:
        def fn() -> dict:
            c = st.coords[s["c"]] if s.get("c") else None
            with self.queue_runner.queue_runner_scope(self.registry):
                ts = self.queue_runner.start_queue_runners(coord=c)
            st.threads[s["t"]] = list(ts)
            st.all_threads.extend(ts)
            return {
                "names": [t.name for t in ts],
                "daemon": [t.daemon for t in ts],
                "started": [t.ident is not None for t in ts],
            }

        return fn

    def _qr_exceptions(self, st: engine.State, s: dict) -> Callable[[], Any]:
        return lambda: [engine.error_outcome(e)[1:] for e in st.runners[s["id"]].exceptions_raised]

    def _qr_info(self, st: engine.State, s: dict) -> Callable[[], Any]:
        def fn() -> dict:
            r = st.runners[s["id"]]
            return {"name": r.name, "types": [c.__name__ for c in r.queue_closed_exception_types]}

        return fn


# -- input pipelines --------------------------------------------------------------------

    def _expr(self, built: dict, e: Any) -> Any:
        """A tensor expression (steps.py) as coordkit tensors: callables."""
        if isinstance(e, str):
            ref = parse_ref(e)
            if ref[0] == "op":
                method = getattr(built[ref[1]], ref[2])
                n = ref[3]
                return method if n is None else (lambda: method(n))
            return built[ref[1]][ref[2]] if ref[0] == "item" else built[ref[1]]
        if isinstance(e, list):
            return [self._expr(built, x) for x in e]
        if set(e) == {"const"}:
            return lambda: e["const"]
        if set(e) == {"add"}:
            f, n = self._expr(built, e["add"][0]), e["add"][1]
            # a tensor plus a number, element by element for a batch (TF broadcasts)
            return lambda: [x + n for x in v] if isinstance(v := f(), list) else v + n
        return {k: self._expr(built, v) for k, v in e.items()}

    def _stage(self, built: dict, stage: dict) -> Any:
        from coordkit import pipeline

        args = dict(stage["args"])
        for key in ("tensors", "tensors_list"):
            if key in args:
                args[key] = self._expr(built, args[key])
        runtime = args.get("string_tensor")
        if isinstance(runtime, dict):  # {"runtime": [...]}: a value known only at run time
            args["string_tensor"] = lambda: list(runtime["runtime"])
        return getattr(pipeline, stage["kind"])(**args)

    def _pipeline(self, st: engine.State, s: dict) -> Callable[[], Any]:
        qr = self.queue_runner

        def fn() -> dict:
            registry = qr.QueueRunnerRegistry()
            with qr.queue_runner_scope(registry):
                built: dict = {}
                for stage in s["stages"]:
                    built[stage["id"]] = self._stage(built, stage)
                fetch = self._expr(built, s["fetch"])
                coord = self.Coordinator()
                threads = qr.start_queue_runners(coord=coord)

            def fetch_once() -> Any:
                if isinstance(fetch, list):
                    return [f() for f in fetch]
                if isinstance(fetch, dict):
                    return {k: f() for k, f in fetch.items()}
                return fetch()

            return engine.drive_pipeline(registry.get(), threads, coord, fetch_once,
                                         s["max_fetches"], self.error_outcome)

        return fn


def run_scenario(scenario: dict) -> list:
    """Run one scenario on coordkit; returns ``[[label, outcome], ...]``."""
    return engine.Engine(CoordkitBackend()).run(scenario)
