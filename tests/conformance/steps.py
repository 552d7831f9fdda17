"""The scenario format: step helpers, outcome constructors and hashing.

A scenario is a dict::

    {
      "name": "fifo_blocking_enqueue_before_close",
      "rules": ["Q-CLOSE-1", ...],          # rule ids of the digest / specs
      "tf_test": "fifo_queue_test.FIFOQueueParallelTests.testBlockingEnqueueBeforeClose",
      "steps": [ {"op": ...}, ... ],        # see the step helpers below
      "deviation": None or {...},           # a known, documented departure from TF
      "tf_subprocess": False,               # run on TF in a child process (it may abort)
      "note": "...",
    }

Every step records exactly one outcome (``engine.py`` explains the outcome
shapes). Operations run synchronously unless wrapped in ``start(h, op)``, which
runs them on a background thread under the handle ``h``; ``pending(h)`` then
records whether ``h`` is blocked at that point, and ``wait(h)`` ("await") records
its outcome. Scenarios are written so that no outcome depends on timing: every
background operation is checked ``pending`` before the next step relies on its
position in a waiter list, and values that TensorFlow returns in a random order
(RandomShuffleQueue) are recorded sorted, as a length, or collected into a "bag"
whose sorted contents are recorded at the end.

Values are Python data: ints, floats (exactly representable in float32), bools,
bytes, nested lists. A value passed to ``enq`` is exactly what both backends pass
to ``enqueue``: a list of components (``[5]``, ``[1.0, b"x"]``) or a dict for a
queue with names. A component given as ``[]`` is read as an empty array of the
component's shape (for ``enqueue_many``: a batch of 0 elements; for ``enqueue``: a
leading dimension of 0), because a Python list cannot show the sizes below an empty
dimension (coordkit's Q-API-4 reads it the same way; TF gets a numpy array).

Nothing here imports TensorFlow or coordkit; the data is hashed (``scenario_hash``)
so that a recorded TF outcome is tied to the exact steps it was recorded from.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# --------------------------------------------------------------------------------------
# Outcome constructors (used by deviations)
# --------------------------------------------------------------------------------------


def OK(value: Any = None) -> list:  # noqa: N802
    return ["ok", value]


def ERR(cls: str, msg: str | None) -> list:  # noqa: N802
    """An error outcome; ``msg=None`` (deviations only) matches any message."""
    return ["error", cls, msg]


PENDING = ["pending"]
FINISHED = ["finished"]


def closed_msg(cls: str = "FIFOQueue") -> list:
    return ERR("CancelledError", f"{cls} '<name>' is closed.")


def insufficient(cls: str, requested: int, size: int) -> list:
    return ERR(
        "OutOfRangeError",
        f"{cls} '<name>' is closed and has insufficient elements "
        f"(requested {requested}, current size {size})",
    )


TIMED_OUT = ERR("DeadlineExceededError", "Timed out waiting for notification")
ENQ_CANCELLED = ERR("CancelledError", "Enqueue operation was cancelled")


# --------------------------------------------------------------------------------------
# Step helpers
# --------------------------------------------------------------------------------------


def _step(op: str, tag: str | None = None, **kw: Any) -> dict:
    d = {"op": op}
    d.update({k: v for k, v in kw.items() if v is not None})
    if tag is not None:
        d["tag"] = tag
    return d


# -- queues -----------------------------------------------------------------------------


def queue(
    q: str,
    cls: str,
    capacity: int,
    dtypes: list | None = None,
    shapes: list | None = None,
    names: list | None = None,
    *,
    min_after_dequeue: int | None = None,
    seed: int | None = None,
    ck_untyped: bool = False,
    tag: str | None = None,
) -> dict:
    """Create a queue. ``dtypes`` are "int32", "int64", "float32", "bool", "string".

    For a PriorityQueue, ``dtypes`` are the value types only (TF's ``types``); the
    int64 priority is component 0 of every enqueue and dequeue tuple.
    ``ck_untyped`` builds the coordkit queue without dtypes/shapes (TF still gets
    ``dtypes``, since TF has no untyped queue).
    """
    return _step(
        "make_queue",
        tag,
        q=q,
        cls=cls,
        capacity=capacity,
        dtypes=dtypes,
        shapes=shapes,
        names=names,
        min_after_dequeue=min_after_dequeue,
        seed=seed,
        ck_untyped=ck_untyped or None,
    )


def fifo(q: str = "q", capacity: int = 10, dtypes: list | None = None, shapes: Any = "scalar",
         names: list | None = None, tag: str | None = None) -> dict:
    dtypes = dtypes or ["int32"]
    if shapes == "scalar":
        shapes = [[] for _ in dtypes]
    return queue(q, "FIFOQueue", capacity, dtypes, shapes, names, tag=tag)


def rsq(q: str = "q", capacity: int = 10, min_after_dequeue: int = 0, dtypes: list | None = None,
        shapes: Any = "scalar", seed: int | None = 42, tag: str | None = None) -> dict:
    dtypes = dtypes or ["int32"]
    if shapes == "scalar":
        shapes = [[] for _ in dtypes]
    return queue(q, "RandomShuffleQueue", capacity, dtypes, shapes,
                 min_after_dequeue=min_after_dequeue, seed=seed, tag=tag)


def padding(q: str = "q", capacity: int = 10, dtypes: list | None = None,
            shapes: Any = None, tag: str | None = None) -> dict:
    return queue(q, "PaddingFIFOQueue", capacity, dtypes or ["int32"], shapes, tag=tag)


def pq(q: str = "q", capacity: int = 10, dtypes: list | None = None, shapes: Any = "scalar",
       tag: str | None = None) -> dict:
    dtypes = dtypes if dtypes is not None else ["string"]
    if shapes == "scalar":
        shapes = [[] for _ in dtypes]
    return queue(q, "PriorityQueue", capacity, dtypes, shapes, tag=tag)


def enq(q: str, vals: Any, timeout: float | None = None, tag: str | None = None) -> dict:
    return _step("enqueue", tag, q=q, vals=vals, timeout=timeout)


def enq_many(q: str, vals: Any, timeout: float | None = None, tag: str | None = None) -> dict:
    return _step("enqueue_many", tag, q=q, vals=vals, timeout=timeout)


def deq(q: str = "q", timeout: float | None = None, rec: str | None = None,
        tag: str | None = None) -> dict:
    return _step("dequeue", tag, q=q, timeout=timeout, rec=rec)


def deq_many(q: str, n: int, timeout: float | None = None, rec: str | None = None,
             tag: str | None = None) -> dict:
    return _step("dequeue_many", tag, q=q, n=n, timeout=timeout, rec=rec)


def deq_up_to(q: str, n: int, timeout: float | None = None, rec: str | None = None,
              tag: str | None = None) -> dict:
    return _step("dequeue_up_to", tag, q=q, n=n, timeout=timeout, rec=rec)


def close(q: str = "q", cancel: bool = False, timeout: float | None = None,
          tag: str | None = None) -> dict:
    return _step("close", tag, q=q, cancel=cancel or None, timeout=timeout)


def size(q: str = "q", tag: str | None = None) -> dict:
    return _step("size", tag, q=q)


def is_closed(q: str = "q", tag: str | None = None) -> dict:
    return _step("is_closed", tag, q=q)


def wait_size(q: str, n: int, blocked_enqueues: int = 0, tag: str | None = None) -> dict:
    """Wait until ``size(q) == n`` (and, on coordkit, that many enqueues block)."""
    return _step("wait_size", tag, q=q, n=n, blocked_enqueues=blocked_enqueues)


# -- background operations ----------------------------------------------------------------


def start(h: str, op: dict) -> dict:
    return {"op": "start", "h": h, "do": op}


def pending(h: str, tag: str | None = None) -> dict:
    return _step("pending", tag, h=h)


def wait(h: str, tag: str | None = None, cap: float | None = None) -> dict:
    """Await the background operation ``h`` and record its outcome (``["pending"]``
    if it is still blocked after ``cap`` seconds, default: the engine's cap)."""
    return _step("wait", tag, h=h, cap=cap)


def started(h: str, op: dict) -> list:
    """Start ``op`` in the background and check that it blocks."""
    return [start(h, op), pending(h)]


def same(a: str, b: str, tag: str | None = None) -> dict:
    """Whether the values kept with ``rec="keep:a"`` and ``rec="keep:b"`` are equal
    (compares two runs of one backend, e.g. two seeds, without recording the values)."""
    return _step("same", tag, a=a, b=b)


def bag(name: str = "bag", tag: str | None = None) -> dict:
    return _step("bag", tag, bag=name)


# -- coordinator ----------------------------------------------------------------------------


def exc(cls: str, msg: str, how: str = "instance") -> dict:
    """An exception handed to ``request_stop``.

    ``how``: "instance" (raised, then ``request_stop(e)`` in the handler),
    "exc_info" (raised, then ``request_stop(sys.exc_info())``), "bare" (passed
    without ever being raised, outside any handler), "other_handler" (passed
    inside the handler of a different exception, ``KeyError('handler-exc')``),
    "tuple" (a hand-made ``(type, value, None)`` triple).
    """
    return {"cls": cls, "msg": msg, "how": how}


def coord(c: str = "c", clean: list | None = None) -> dict:
    return _step("coord", c=c, clean=clean)


def request_stop(c: str = "c", ex: dict | None = None, tag: str | None = None) -> dict:
    return _step("request_stop", tag, c=c, ex=ex)


def should_stop(c: str = "c", tag: str | None = None) -> dict:
    return _step("should_stop", tag, c=c)


def wait_for_stop(c: str = "c", timeout: float | None = None) -> dict:
    d = _step("wait_for_stop", c=c)
    if timeout is not None:
        d["timeout"] = timeout
    return d


def join(c: str = "c", threads: list | None = None, grace: float | None = None,
         ignore_live: bool | None = None, tag: str | None = None) -> dict:
    return _step("join", tag, c=c, threads=threads, grace=grace, ignore_live=ignore_live)


def clear_stop(c: str = "c") -> dict:
    return _step("clear_stop", c=c)


def joined(c: str = "c", tag: str | None = None) -> dict:
    return _step("joined", tag, c=c)


def raise_requested(c: str = "c", tag: str | None = None) -> dict:
    return _step("raise_requested", tag, c=c)


def stop_on_exception(c: str = "c", ex: dict | None = None, tag: str | None = None) -> dict:
    return _step("stop_on_exception", tag, c=c, ex=ex)


def exc_identity(c: str = "c", ex: dict | None = None) -> dict:
    """Report ``ex`` (raised, passed from its handler), then record whether ``join`` and
    ``raise_requested_exception`` raise that same object."""
    return _step("exc_identity", c=c, ex=ex or {"cls": "ValueError", "msg": "same"})


def register(c: str, t: str) -> dict:
    return _step("register", c=c, t=t)


def thread(t: str, actions: list, name: str | None = None, start: bool = True) -> dict:
    """A plain thread running ``actions``: ["wait", e], ["set", e], ["sleep", s],
    ["request_stop", c, exc-or-None], ["stop_on_exception", c, exc], ["wait_for_stop", c]."""
    return _step("thread", t=t, name=name or t, actions=actions, start=None if start else False)


def start_threads(t: str) -> dict:
    return _step("start_threads", t=t)


def join_threads(t: str, tag: str | None = None) -> dict:
    """``Thread.join`` every thread of ``t`` (capped) and record their is_alive() flags."""
    return _step("join_threads", tag, t=t)


def alive(t: str, tag: str | None = None) -> dict:
    return _step("alive", tag, t=t)


def daemon(t: str) -> dict:
    return _step("daemon", t=t)


def set_event(e: str) -> dict:
    return _step("set_event", e=e)


def wait_event(e: str) -> dict:
    return _step("wait_event", e=e)


def looper(lid: str, c: str | None = "c", timer: float | None = 0, *, target: str | None = None,
           n: int | None = None, argmode: str | None = None, via: str | None = None,
           hooks: dict | None = None, start: bool = True, bad_coord: str | None = None,
           args_without_target: bool = False) -> dict:
    """A LooperThread. ``target``: "countdown" (LooperTest._StopAt0 with a counter
    starting at ``n``), "count" (counts calls), "raise" (ValueError 'looper boom').
    ``hooks``: a subclass overriding start_loop/run_loop/stop_loop that logs the
    calls and requests a stop after ``runs`` run_loop calls."""
    d = _step("looper", id=lid, c=c, target=target, n=n, argmode=argmode, via=via, hooks=hooks,
              bad_coord=bad_coord, args_without_target=args_without_target or None)
    d["timer"] = timer
    if not start:
        d["start"] = False
    return d


def looper_value(lid: str, what: str = "n", tag: str | None = None) -> dict:
    return _step("looper_value", tag, id=lid, what=what)


# -- queue runner ---------------------------------------------------------------------------


def var(v: str) -> dict:
    """A counter variable starting at 0 (a TF int64 Variable / a Python int)."""
    return _step("var", id=v)


def var_value(v: str, tag: str | None = None) -> dict:
    return _step("var_value", tag, id=v)


def op_count(v: str, limit: int, name: str) -> dict:
    """``v.count_up_to(limit)``: OutOfRangeError 'Reached limit of <limit>' at the limit."""
    return {"kind": "count", "var": v, "limit": limit, "name": name}


def op_count_enqueue(q: str, v: str, limit: int, name: str) -> dict:
    """``q.enqueue(v.count_up_to(limit))``."""
    return {"kind": "count_enqueue", "q": q, "var": v, "limit": limit, "name": name}


def op_enqueue_const(q: str, value: int, name: str) -> dict:
    return {"kind": "enqueue_const", "q": q, "value": value, "name": name}


def op_move(src: str, dst: str, name: str) -> dict:
    """``dst.enqueue(src.dequeue())``."""
    return {"kind": "move", "src": src, "dst": dst, "name": name}


def op_fail(msg: str, name: str, gate: str | None = None) -> dict:
    """Fails with InvalidArgumentError 'assertion failed: [<msg>]' (after a dequeue
    from the queue ``gate`` when given, so the scenario decides when it fails)."""
    return {"kind": "fail", "msg": msg, "name": name, "gate": gate}


def op_gated_count(gate: str, v: str, limit: int, name: str) -> dict:
    """Dequeue from ``gate``, then ``v.count_up_to(limit)``."""
    return {"kind": "count", "var": v, "limit": limit, "name": name, "gate": gate}


def qr(r: str, q: str, ops: list, types: Any = None, tag: str | None = None) -> dict:
    """A QueueRunner. ``types``: None (default), a list of error class names (passed
    as a tuple), or "list" / "empty" / "non_op_error" for the constructor checks."""
    return _step("qr", tag, id=r, q=q, ops=ops, types=types)


def qr_create(r: str, t: str, c: str | None = None, daemon: bool = False,
              start: bool = False, tag: str | None = None) -> dict:
    """``create_threads``; records the number of threads and their names; the
    threads are stored under ``t``."""
    return _step("qr_create", tag, id=r, t=t, c=c, daemon=daemon or None, start=start or None)


def qr_add(r: str, tag: str | None = None) -> dict:
    """``add_queue_runner(r)`` (TF: the graph's collection; coordkit: a registry of the
    scenario's own, made current with ``queue_runner_scope``)."""
    return _step("qr_add", tag, id=r)


def qr_start_all(t: str, c: str | None = None, tag: str | None = None) -> dict:
    """``start_queue_runners(coord=c)`` with its defaults (daemon, started); records the
    thread names, daemon flags and whether they were started."""
    return _step("qr_start_all", tag, t=t, c=c)


def qr_exceptions(r: str, tag: str | None = None) -> dict:
    return _step("qr_exceptions", tag, id=r)


def qr_info(r: str, tag: str | None = None) -> dict:
    return _step("qr_info", tag, id=r)


# -- input pipelines (tf.train input helpers, coordkit.pipeline) -----------------------------
#
# A pipeline step builds a whole input pipeline from ``stages``, starts its queue runners
# with a Coordinator, calls ``fetch`` until it raises (at most ``max_fetches`` times),
# then requests a stop and joins. Its outcome is one dict:
#
#     {"runners": [[queue name, [enqueue op names]], ...], "threads": [thread names],
#      "fetched": <the fetched values, shaped by rec>, "end": <the outcome that ended
#      the loop>, "join": <the outcome of coord.join>}
#
# Stages name what they build (``sid``); arguments refer to earlier stages with
# expressions: ``"q.dequeue"`` / ``"q.dequeue_many:4"`` (an op of the queue ``q``),
# ``"h"`` (what stage ``h`` returned: the outputs of slice_input_producer or of a batch
# helper), ``"h[1]"`` (one output of a list), ``{"const": v}``, ``{"add": [expr, n]}``,
# lists and dicts of expressions. ``{"runtime": [...]}`` as ``string_tensor`` is a value
# known only at run time (TF: a placeholder with that default; coordkit: a callable).
# TensorFlow strings come back as bytes, so scenarios give strings as bytes. The counts in
# the message of the error that ends the loop ("(requested 3, current size 0)") depend on
# how many elements the last dequeue had taken when the queue closed, which is thread
# timing on both backends: they are recorded as "(requested N, current size M)".
#
# ``rec`` shapes "fetched" where TensorFlow's order is not deterministic (several
# enqueue threads, shuffling): None (the values in order), "each_sorted" (each fetched
# batch sorted), "groups:N" (the fetched values in groups of N, each group sorted),
# "bag" (batch sizes and all elements sorted), "bagrows" (the same for a list of
# columns: the rows, sorted), "bagdict" (the same for a dict of columns).

PIPELINE_STAGES = frozenset({
    "string_input_producer", "range_input_producer", "slice_input_producer",
    "batch", "shuffle_batch", "batch_join", "shuffle_batch_join",
})


def stage(kind: str, sid: str, **args: Any) -> dict:
    """One stage of a pipeline: ``kind`` (a tf.train / coordkit.pipeline function) called
    with ``args`` (expressions resolved), its result stored under ``sid``."""
    assert kind in PIPELINE_STAGES, kind
    return {"kind": kind, "id": sid, "args": args}


def pipeline(p: str, stages: list, fetch: Any, rec: str | None = None, max_fetches: int = 60,
             tag: str | None = None) -> dict:
    return _step("pipeline", tag, id=p, stages=stages, fetch=fetch, rec=rec, max_fetches=max_fetches)


def parse_ref(expr: str) -> tuple:
    """``"q.dequeue_many:4"`` -> ("op", "q", "dequeue_many", 4); ``"h[1]"`` -> ("item", "h", 1);
    ``"h"`` -> ("handle", "h")."""
    if "." in expr:
        sid, op = expr.split(".", 1)
        name, _, n = op.partition(":")
        return ("op", sid, name, int(n) if n else None)
    if expr.endswith("]"):
        sid, index = expr[:-1].split("[")
        return ("item", sid, int(index))
    return ("handle", expr)


# --------------------------------------------------------------------------------------
# Scenario constructor and hashing
# --------------------------------------------------------------------------------------


def deviation(dev_id: str, where: str, *, tf: dict, coordkit: dict, tf_crashes: bool = False,
              note: str = "") -> dict:
    """A documented departure from TF.

    ``tf`` and ``coordkit`` map step tags to the outcome each side must produce at
    that step; every other step must still agree. ``tf_crashes``: TF aborts the
    process at the first tagged step (nothing after it is recorded)."""
    return {"id": dev_id, "where": where, "tf": tf, "coordkit": coordkit,
            "tf_crashes": tf_crashes, "note": note}


def scenario(name: str, rules: list, steps: list, *, tf_test: str | None = None,
             deviation: dict | None = None, tf_subprocess: bool = False, note: str = "") -> dict:
    flat: list = []
    for s in steps:
        flat.extend(s if isinstance(s, list) else [s])
    return {
        "name": name,
        "rules": list(rules),
        "tf_test": tf_test,
        "steps": flat,
        "deviation": deviation,
        "tf_subprocess": tf_subprocess,
        "note": note,
    }


def _encode(o: Any) -> Any:
    if isinstance(o, bytes):
        return {"__bytes__": o.decode("latin-1")}
    if isinstance(o, (list, tuple)):
        return [_encode(x) for x in o]
    if isinstance(o, dict):
        return {k: _encode(v) for k, v in o.items()}
    return o


def canonical_json(o: Any) -> str:
    return json.dumps(_encode(o), sort_keys=True, separators=(",", ":"))


def scenario_hash(s: dict) -> str:
    """Hash of what the TF recorder runs (name, steps, subprocess flag).

    Rules, notes and deviations are not part of it: editing them does not make
    the record stale."""
    payload = {"name": s["name"], "steps": s["steps"], "tf_subprocess": s["tf_subprocess"]}
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:20]
