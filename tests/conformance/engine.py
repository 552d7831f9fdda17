"""The scenario interpreter shared by the TensorFlow recorder and the coordkit driver.

A scenario (see ``scenarios.py``) is plain data: a list of steps. The engine walks
the steps in order, runs each one, and records one normalised outcome per step:

* ``["ok", value]``: the call returned ``value`` (already normalised: numpy values
  become Python lists and scalars, tuples become lists, bytes stay bytes);
* ``["error", ClassName, message]``: the call raised; the message is normalised
  (TensorFlow's graph-execution wrapper, ``{{function_node ...}}`` prefix and
  ``[Op:...]`` suffix are stripped, and a queue's resource name becomes
  ``'<name>'``);
* ``["pending"]`` / ``["finished"]``: at a ``pending`` checkpoint, whether a
  background operation is still blocked;
* ``["blocked"]``: a synchronous step did not return within the cap (every step
  runs on a worker thread so that a wrong scenario cannot hang the run);
* ``["harness-error", text]``: the engine itself failed (a bug in a scenario or a
  backend, never a product outcome).

Everything Python-level (Coordinator, LooperThread, plain threads and events) is
interpreted here, identically for both backends: the backend only supplies the
classes. Queue, QueueRunner and counter operations are delegated to the backend,
because TensorFlow needs graph ops and a Session while coordkit takes callables.

Backends implement:

``begin(scenario, state)`` / ``end(state)``
    set up (TensorFlow builds the whole graph here, before any step runs) and tear
    down (release every blocked operation, join every thread).
``op(state, key, step)``
    a zero-argument callable that performs a backend step (queue op, runner op...)
    and returns its raw value or raises.
``is_pending(state, handle)``
    True when the background operation ``handle`` is blocked.
``Coordinator``, ``LooperThread``, ``error_class(name)``, ``error_outcome(exc)``.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# How long anything in the engine may wait for a thread or an event before it
# gives up and records what it saw. Backends may lower it (coordkit: 10 s).
DEFAULT_CAP = 30.0

# Steps the backend implements (everything else is interpreted here).
BACKEND_OPS = frozenset(
    {
        "make_queue",
        "enqueue",
        "enqueue_many",
        "dequeue",
        "dequeue_many",
        "dequeue_up_to",
        "close",
        "size",
        "is_closed",
        "var",
        "var_value",
        "qr",
        "qr_create",
        "qr_exceptions",
        "qr_info",
        "qr_add",
        "qr_start_all",
        "wait_size",
        "pipeline",
    }
)

# Which waiter list of a queue a background op occupies (used to detect blocking).
OP_KIND = {
    "enqueue": "enqueue",
    "enqueue_many": "enqueue",
    "close": "close",
    "dequeue": "dequeue",
    "dequeue_many": "dequeue",
    "dequeue_up_to": "dequeue",
}

_BUILTIN_EXCEPTIONS = {
    name: getattr(__import__("builtins"), name)
    for name in (
        "ValueError",
        "RuntimeError",
        "KeyError",
        "TypeError",
        "SystemExit",
        "StopIteration",
        "IndexError",
        "ZeroDivisionError",
        "Exception",
    )
}

OP_ERROR_NAMES = (
    "OpError",
    "OutOfRangeError",
    "CancelledError",
    "DeadlineExceededError",
    "InvalidArgumentError",
    "UnimplementedError",
    "AbortedError",
    "DataLossError",
)


# --------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------


def _encode(o: Any) -> Any:
    if isinstance(o, bytes):
        return {"__bytes__": o.decode("latin-1")}
    if hasattr(o, "tolist"):  # numpy arrays and scalars
        return _encode(o.tolist())
    if isinstance(o, (list, tuple)):
        return [_encode(x) for x in o]
    if isinstance(o, dict):
        return {str(k): _encode(v) for k, v in sorted(o.items(), key=lambda kv: str(kv[0]))}
    if isinstance(o, (set, frozenset)):
        return sorted((_encode(x) for x in o), key=repr)
    if o is None or isinstance(o, (bool, int, float, str)):
        return o
    return {"__repr__": repr(o)}


def canon(o: Any) -> Any:
    """The JSON-safe canonical form of an outcome (what is recorded and compared)."""
    return json.loads(json.dumps(_encode(o), sort_keys=True))


def decode_bytes(o: Any) -> Any:
    """Inverse of the bytes encoding, for scenario values read back from JSON."""
    if isinstance(o, dict):
        if set(o) == {"__bytes__"}:
            return o["__bytes__"].encode("latin-1")
        return {k: decode_bytes(v) for k, v in o.items()}
    if isinstance(o, list):
        return [decode_bytes(x) for x in o]
    return o


_QUEUE_NAME = re.compile(
    r"\b(FIFOQueue|RandomShuffleQueue|PaddingFIFOQueue|PriorityQueue|Queue|Shared queue) '[^']*'"
)
_FUNCTION_NODE = re.compile(r"^\{\{function_node [^}]*\}\}\s*")
_OP_SUFFIX = re.compile(r"\s*\[Op:[^\]]*\]( name: .*)?$")
_CLASS_REPR = re.compile(r"<class '(?:[\w.]+\.)?(\w+)'>")


def normalise_message(msg: str) -> str:
    """Strip TensorFlow's wrappers and the queue resource name from an error message."""
    msg = str(msg)
    if msg.startswith("Graph execution error:"):
        if "\nNode: " in msg:
            msg = msg.split("\nNode: ", 1)[1]
            msg = msg.split("\n", 1)[1] if "\n" in msg else ""
        else:
            msg = msg[len("Graph execution error:"):]
    msg = msg.split("\n\t [[", 1)[0]
    msg = msg.split("\n\nOriginal stack trace", 1)[0]
    msg = _FUNCTION_NODE.sub("", msg)
    msg = _OP_SUFFIX.sub("", msg)
    msg = _QUEUE_NAME.sub(lambda m: f"{m.group(1)} '<name>'", msg)
    msg = _CLASS_REPR.sub(r"<class '\1'>", msg)
    return msg.strip()


def error_outcome(exc: BaseException) -> list:
    msg = getattr(exc, "message", None)
    if not isinstance(msg, str):
        msg = str(exc)
    return ["error", type(exc).__name__, normalise_message(msg)]


# --------------------------------------------------------------------------------------
# State
# --------------------------------------------------------------------------------------


@dataclass
class Handle:
    """A queue (or other) operation started in a background thread."""

    name: str
    key: Any
    step: dict
    queue: str | None
    kind: str | None
    thread: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)
    outcome: Any = None


@dataclass
class State:
    """Everything a scenario has created, by the ids the scenario gave them."""

    queues: dict = field(default_factory=dict)
    coords: dict = field(default_factory=dict)
    events: dict = field(default_factory=dict)
    threads: dict = field(default_factory=dict)  # id -> Thread or list of Threads
    counters: dict = field(default_factory=dict)  # looper counters and hook logs
    runners: dict = field(default_factory=dict)
    vars: dict = field(default_factory=dict)
    bags: dict = field(default_factory=dict)
    handles: dict = field(default_factory=dict)
    all_threads: list = field(default_factory=list)
    thread_errors: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # backend-private

    def event(self, name: str) -> threading.Event:
        if name not in self.events:
            self.events[name] = threading.Event()
        return self.events[name]

    def thread_list(self, ids) -> list:
        """Threads by id; ``"ts[i]"`` picks one thread of a group."""
        out = []
        for t in ids:
            m = re.fullmatch(r"(.+)\[(\d+)\]", t)
            if m:
                out.append(self.threads[m.group(1)][int(m.group(2))])
                continue
            v = self.threads[t]
            out.extend(v if isinstance(v, list) else [v])
        return out


def label(i: int, step: dict) -> str:
    """A readable, stable label for a step's outcome in the record."""
    op = step["op"]
    if op == "start":
        inner = step["do"]
        return f"{i:02d} start {step['h']}: {inner['op']}"
    target = step.get("q") or step.get("c") or step.get("h") or step.get("id") or step.get("t")
    return f"{i:02d} {op}" + (f" {target}" if target else "")


# --------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------


class Engine:
    def __init__(self, backend: Any) -> None:
        self.b = backend
        self.cap = getattr(backend, "cap", DEFAULT_CAP)

    # -- public ------------------------------------------------------------------------

    def run(self, scenario: dict, emit: Callable[[list], None] | None = None) -> list:
        """Run one scenario; returns ``[[label, outcome], ...]``."""
        st = State()
        outcomes: list = []
        old_hook = threading.excepthook

        def quiet_hook(args: Any) -> None:  # threads that die are part of some scenarios
            st.thread_errors.append((args.thread.name if args.thread else None, args.exc_type))

        threading.excepthook = quiet_hook
        try:
            self.b.begin(scenario, st)
            for i, step in enumerate(scenario["steps"]):
                try:
                    out = self.step(st, i, step)
                except KeyboardInterrupt:
                    raise
                except BaseException as e:  # a bug in the harness or a scenario
                    out = ["harness-error", f"{type(e).__name__}: {e}"]
                entry = [label(i, step), canon(out)]
                outcomes.append(entry)
                if emit is not None:
                    emit(entry)
        finally:
            try:
                self._release(st)
                self.b.end(st)
                self._join_all(st)
            finally:
                threading.excepthook = old_hook
        return outcomes

    # -- plumbing ----------------------------------------------------------------------

    def call(self, fn: Callable[[], Any]) -> list:
        try:
            return ["ok", fn()]
        except KeyboardInterrupt:
            raise
        except BaseException as e:
            return self.b.error_outcome(e)

    def _release(self, st: State) -> None:
        for e in st.events.values():
            e.set()
        for c in st.coords.values():
            try:
                c.request_stop()
            except BaseException:
                pass

    def _join_all(self, st: State) -> None:
        deadline = time.monotonic() + self.cap
        threads = list(st.all_threads)
        for h in st.handles.values():
            if h.thread is not None:
                threads.append(h.thread)
        for t in threads:
            if t.ident is None:
                continue
            t.join(max(0.0, deadline - time.monotonic()))

    def _spawn(self, st: State, fn: Callable[[], None], name: str) -> threading.Thread:
        t = threading.Thread(target=fn, name=name, daemon=True)
        st.all_threads.append(t)
        t.start()
        return t

    # -- steps -------------------------------------------------------------------------

    def step(self, st: State, i: int, step: dict) -> Any:
        op = step["op"]
        if op == "start":
            return self.start(st, i, step)
        if op == "pending":
            h = st.handles[step["h"]]
            if h.done.is_set():
                return ["finished"]
            return ["pending"] if self.b.is_pending(st, h) else ["finished"]
        if op == "wait":
            h = st.handles[step["h"]]
            if not h.done.wait(min(step.get("cap", self.cap), self.cap)):
                return ["pending"]
            return h.outcome
        if op == "bag":
            return ["ok", sorted(st.bags.get(step["bag"], []), key=_sort_key)]
        return self.run_op(st, i, step)

    def run_op(self, st: State, key: Any, step: dict) -> list:
        op = step["op"]
        fn = self.b.op(st, key, step) if op in BACKEND_OPS else getattr(self, "op_" + op)(st, step)
        out = self.call_capped(st, fn)
        return self.shape_result(st, step, out)

    def call_capped(self, st: State, fn: Callable[[], Any]) -> list:
        """``call`` on a worker thread: a step that blocks for good (a scenario bug)
        records ``["blocked"]`` after the cap instead of hanging the run."""
        box: list = []
        t = threading.Thread(target=lambda: box.append(self.call(fn)), daemon=True,
                             name="conformance-step")
        st.all_threads.append(t)
        t.start()
        t.join(self.cap)
        return box[0] if box else ["blocked"]

    def shape_result(self, st: State, step: dict, out: list) -> list:
        rec = step.get("rec")
        if step["op"] == "pipeline" and out[0] == "ok":
            value = canon(out[1])
            value["fetched"] = shape_fetched(rec, value["fetched"])
            return ["ok", value]
        if rec is None or out[0] != "ok":
            return out
        value = canon(out[1])
        if rec == "sorted":
            return ["ok", sorted(value, key=_sort_key)]
        if rec == "len":
            return ["ok", len(value)]
        if rec.startswith("keep:"):
            # kept for a later ``same`` step, not recorded (its value is backend-specific)
            st.extra.setdefault("kept", {})[rec[5:]] = value
            return ["ok", f"<kept as {rec[5:]}>"]
        if rec.startswith("bagrows:"):
            # a multi-component batch comes as one list per component: bag its rows
            name = rec[len("bagrows:"):]
            st.bags.setdefault(name, []).extend([list(r) for r in zip(*value)])
            return ["ok", f"<into {name}>"]
        if rec.startswith("bag:"):
            bag = st.bags.setdefault(rec[4:], [])
            many = step["op"] in ("dequeue_many", "dequeue_up_to")
            if many:
                bag.extend(value)
            else:
                bag.append(value)
            return ["ok", f"<into {rec[4:]}>"]
        raise ValueError(f"unknown rec mode {rec!r}")

    def start(self, st: State, i: int, step: dict) -> list:
        inner = step["do"]
        name = step["h"]
        h = Handle(
            name=name,
            key=i,
            step=inner,
            queue=inner.get("q"),
            kind=OP_KIND.get(inner["op"]),
        )
        if inner["op"] == "close" and inner.get("cancel"):
            h.kind = None
        st.handles[name] = h
        # Build the callable on this thread (a backend may need to), run it on another.
        if inner["op"] in BACKEND_OPS:
            fn = self.b.op(st, i, inner)
        else:
            fn = getattr(self, "op_" + inner["op"])(st, inner)

        def body() -> None:
            try:
                h.outcome = canon(self.shape_result(st, inner, self.call(fn)))
            finally:
                h.done.set()

        h.thread = threading.Thread(target=body, name=f"conformance-{name}", daemon=True)
        h.thread.start()
        return ["ok", None]

    # -- exceptions --------------------------------------------------------------------

    def exc_class(self, name: str) -> type:
        if name in _BUILTIN_EXCEPTIONS:
            return _BUILTIN_EXCEPTIONS[name]
        return self.b.error_class(name)

    def make_exc(self, spec: dict) -> BaseException:
        cls = self.exc_class(spec["cls"])
        if spec["cls"] in OP_ERROR_NAMES:
            return self.b.make_op_error(cls, spec["msg"])
        if spec["cls"] == "SystemExit":
            return cls(int(spec["msg"]))
        return cls(spec["msg"])

    def do_request_stop(self, c: Any, spec: dict | None) -> Any:
        if spec is None:
            return c.request_stop()
        ex = self.make_exc(spec)
        how = spec["how"]
        if how == "instance":
            try:
                raise ex
            except BaseException as e:
                return c.request_stop(e)
        if how == "exc_info":
            try:
                raise ex
            except BaseException:
                return c.request_stop(sys.exc_info())
        if how == "bare":
            return c.request_stop(ex)
        if how == "other_handler":
            try:
                raise KeyError("handler-exc")
            except KeyError:
                return c.request_stop(ex)
        if how == "tuple":
            return c.request_stop((type(ex), ex, None))
        raise ValueError(f"unknown how {how!r}")

    # -- coordinator ops ---------------------------------------------------------------

    def op_coord(self, st: State, step: dict) -> Callable[[], Any]:
        def fn() -> None:
            kw = {}
            if step.get("clean") is not None:
                kw["clean_stop_exception_types"] = [self.exc_class(n) for n in step["clean"]]
            st.coords[step["c"]] = self.b.Coordinator(**kw)

        return fn

    def op_request_stop(self, st: State, step: dict) -> Callable[[], Any]:
        return lambda: self.do_request_stop(st.coords[step["c"]], step.get("ex"))

    def op_should_stop(self, st: State, step: dict) -> Callable[[], Any]:
        return lambda: st.coords[step["c"]].should_stop()

    def op_wait_for_stop(self, st: State, step: dict) -> Callable[[], Any]:
        def fn() -> Any:
            c = st.coords[step["c"]]
            if "timeout" in step:
                return c.wait_for_stop(step["timeout"])
            return c.wait_for_stop()

        return fn

    def op_join(self, st: State, step: dict) -> Callable[[], Any]:
        def fn() -> Any:
            kw: dict = {}
            if step.get("threads") is not None:
                kw["threads"] = st.thread_list(step["threads"])
            if step.get("grace") is not None:
                kw["stop_grace_period_secs"] = step["grace"]
            if step.get("ignore_live") is not None:
                kw["ignore_live_threads"] = step["ignore_live"]
            return st.coords[step["c"]].join(**kw)

        return fn

    def op_clear_stop(self, st: State, step: dict) -> Callable[[], Any]:
        return lambda: st.coords[step["c"]].clear_stop()

    def op_joined(self, st: State, step: dict) -> Callable[[], Any]:
        return lambda: st.coords[step["c"]].joined

    def op_raise_requested(self, st: State, step: dict) -> Callable[[], Any]:
        return lambda: st.coords[step["c"]].raise_requested_exception()

    def op_stop_on_exception(self, st: State, step: dict) -> Callable[[], Any]:
        def fn() -> str:
            c = st.coords[step["c"]]
            with c.stop_on_exception():
                if step.get("ex") is not None:
                    raise self.make_exc(step["ex"])
            return "after"

        return fn

    def op_exc_identity(self, st: State, step: dict) -> Callable[[], Any]:
        """Report an exception, then check that join() and raise_requested_exception()
        raise that very object (COORD-17)."""

        def fn() -> dict:
            c = st.coords[step["c"]]
            ex = self.make_exc(step["ex"])
            try:
                raise ex
            except BaseException as e:
                c.request_stop(e)
            out = {}
            for what, call in (("join", c.join), ("raise_requested", c.raise_requested_exception)):
                try:
                    call()
                    out[what] = "returned"
                except BaseException as e:
                    out[what] = "same object" if e is ex else f"other: {type(e).__name__}"
            return out

        return fn

    def op_register(self, st: State, step: dict) -> Callable[[], Any]:
        def fn() -> None:
            for t in st.thread_list([step["t"]]):
                st.coords[step["c"]].register_thread(t)

        return fn

    # -- threads and events ------------------------------------------------------------

    def run_actions(self, st: State, actions: list) -> None:
        for a in actions:
            kind = a[0]
            if kind == "wait":
                st.event(a[1]).wait(self.cap)
            elif kind == "set":
                st.event(a[1]).set()
            elif kind == "sleep":
                time.sleep(a[1])
            elif kind == "request_stop":
                self.do_request_stop(st.coords[a[1]], a[2])
            elif kind == "stop_on_exception":
                with st.coords[a[1]].stop_on_exception():
                    raise self.make_exc(a[2])
            elif kind == "wait_for_stop":
                st.coords[a[1]].wait_for_stop()
            else:
                raise ValueError(f"unknown action {kind!r}")

    def op_thread(self, st: State, step: dict) -> Callable[[], Any]:
        def fn() -> None:
            actions = step["actions"]
            t = threading.Thread(
                target=self.run_actions, args=(st, actions), name=step["name"], daemon=True
            )
            st.threads[step["t"]] = t
            st.all_threads.append(t)
            if step.get("start", True):
                t.start()

        return fn

    def op_start_threads(self, st: State, step: dict) -> Callable[[], Any]:
        def fn() -> None:
            for t in st.thread_list([step["t"]]):
                t.start()

        return fn

    def op_join_threads(self, st: State, step: dict) -> Callable[[], Any]:
        """Thread.join each thread (capped); returns the list of is_alive() flags."""

        def fn() -> list:
            deadline = time.monotonic() + self.cap
            ts = st.thread_list([step["t"]])
            for t in ts:
                if t.ident is not None:
                    t.join(max(0.0, deadline - time.monotonic()))
            return [t.is_alive() for t in ts]

        return fn

    def op_alive(self, st: State, step: dict) -> Callable[[], Any]:
        return lambda: [t.is_alive() for t in st.thread_list([step["t"]])]

    def op_daemon(self, st: State, step: dict) -> Callable[[], Any]:
        return lambda: [bool(t.daemon) for t in st.thread_list([step["t"]])]

    def op_same(self, st: State, step: dict) -> Callable[[], Any]:
        kept = st.extra.get("kept", {})
        return lambda: kept[step["a"]] == kept[step["b"]]

    def op_set_event(self, st: State, step: dict) -> Callable[[], Any]:
        return lambda: st.event(step["e"]).set()

    def op_wait_event(self, st: State, step: dict) -> Callable[[], Any]:
        return lambda: st.event(step["e"]).wait(self.cap)

    # -- LooperThread ------------------------------------------------------------------

    def _looper_target(self, st: State, step: dict) -> tuple:
        """(target, args, kwargs) for a looper step."""
        lid = step["id"]
        target = step.get("target")
        if target is None:
            return None, None, None
        n = [step.get("n", 0)]
        st.counters[lid] = n
        if target == "countdown":

            def stop_at_0(coord: Any, n: list) -> None:  # LooperTest._StopAt0
                if n[0] == 0:
                    coord.request_stop()
                else:
                    n[0] -= 1

            coord = st.coords[step["c"]]
            mode = step.get("argmode", "args")
            if mode == "args":
                return stop_at_0, (coord, n), None
            if mode == "kwargs":
                return stop_at_0, None, {"coord": coord, "n": n}
            return stop_at_0, (coord,), {"n": n}
        if target == "count":

            def count() -> None:
                n[0] += 1

            return count, None, None
        if target == "raise":

            def boom() -> None:
                raise ValueError(step.get("msg", "looper boom"))

            return boom, None, None
        raise ValueError(f"unknown looper target {target!r}")

    def _hooked_class(self, st: State, step: dict) -> type:
        base = self.b.LooperThread
        log: list = []
        st.counters[step["id"]] = log
        runs = step["hooks"].get("runs", 2)
        raise_in = step["hooks"].get("raise_in")
        coord = st.coords[step["c"]]

        class Hooked(base):  # type: ignore[misc, valid-type]
            def start_loop(self) -> None:
                log.append("start")
                if raise_in == "start_loop":
                    raise ValueError("start boom")

            def run_loop(self) -> None:
                log.append("run")
                if raise_in == "run_loop":
                    raise ValueError("run boom")
                if log.count("run") >= runs:
                    coord.request_stop()

            def stop_loop(self) -> None:
                log.append("stop")

        return Hooked

    def op_looper(self, st: State, step: dict) -> Callable[[], Any]:
        def fn() -> None:
            coord = st.coords[step["c"]] if step.get("c") is not None else step.get("bad_coord")
            timer = step.get("timer")
            if step.get("hooks") is not None:
                t = self._hooked_class(st, step)(coord, timer)
                if step.get("start", True):
                    t.start()
            else:
                target, args, kwargs = self._looper_target(st, step)
                if step.get("args_without_target"):
                    target, args, kwargs = None, (1,), None
                if step.get("via") == "loop":
                    t = self.b.LooperThread.loop(coord, timer, target, args, kwargs)
                else:
                    t = self.b.LooperThread(coord, timer, target=target, args=args, kwargs=kwargs)
                    if step.get("start", True):
                        t.start()
            st.threads[step["id"]] = t
            st.all_threads.append(t)

        return fn

    def op_looper_value(self, st: State, step: dict) -> Callable[[], Any]:
        def fn() -> Any:
            v = st.counters[step["id"]]
            return list(v) if step.get("what") == "log" else v[0]

        return fn


def drive_pipeline(runners: list, threads: list, coord: Any, fetch_once: Callable[[], Any],
                   max_fetches: int, error_outcome: Callable[[BaseException], list]) -> dict:
    """The run of a pipeline step, the same on both backends: fetch until the first error
    (the end of the input, normally), then request a stop and join (see steps.py)."""
    out: dict = {
        "runners": [[r.name, [op.name for op in r.enqueue_ops]] for r in runners],
        "threads": [t.name for t in threads],
        "fetched": [],
        "end": None,
    }
    for _ in range(max_fetches):
        try:
            out["fetched"].append(fetch_once())
        except Exception as e:
            out["end"] = _uncounted(error_outcome(e))
            break
    coord.request_stop()
    try:
        coord.join(threads, stop_grace_period_secs=10)
        out["join"] = ["ok", None]
    except Exception as e:
        out["join"] = error_outcome(e)
    return out


_COUNTS = re.compile(r"\(requested \d+, current size \d+\)$")


def _uncounted(outcome: list) -> list:
    """An end-of-input error without its counts: how many elements the last dequeue had taken
    when the queue closed depends on the thread timing, on TF as on coordkit (Q-DEQ-4)."""
    if outcome[0] == "error" and isinstance(outcome[2], str):
        return [*outcome[:2], _COUNTS.sub("(requested N, current size M)", outcome[2])]
    return outcome


def shape_fetched(rec: str | None, fetched: list) -> Any:
    """The values a pipeline step fetched, in the form ``rec`` asks for (see steps.py)."""
    if rec is None:
        return fetched
    if rec == "each_sorted":
        return [sorted(v, key=_sort_key) for v in fetched]
    if rec.startswith("groups:"):
        n = int(rec[len("groups:"):])
        return [sorted(fetched[i:i + n], key=_sort_key) for i in range(0, len(fetched), n)]
    if rec == "bag":
        sizes, items = [len(v) for v in fetched], [x for v in fetched for x in v]
    elif rec == "bagrows":
        sizes = [len(v[0]) for v in fetched]
        items = [list(row) for v in fetched for row in zip(*v)]
    elif rec == "bagdict":
        keys = sorted(fetched[0]) if fetched else []
        sizes = [len(v[keys[0]]) for v in fetched]
        items = [list(row) for v in fetched for row in zip(*(v[k] for k in keys))]
    else:
        raise ValueError(f"unknown pipeline rec mode {rec!r}")
    return {"sizes": sizes, "items": sorted(items, key=_sort_key)}


def _sort_key(v: Any) -> tuple:
    """A total order over canonical values: numbers numerically, then text, then lists."""
    if isinstance(v, bool):
        return (0, int(v), "")
    if isinstance(v, (int, float)):
        return (0, v, "")
    if isinstance(v, str):
        return (1, 0, v)
    if isinstance(v, dict) and set(v) == {"__bytes__"}:
        return (1, 0, v["__bytes__"])
    if isinstance(v, list):
        return (2, 0, json.dumps([_sort_key(x) for x in v]))
    return (3, 0, json.dumps(v, sort_keys=True))
