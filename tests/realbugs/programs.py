"""Small ports of real, public, fixed upstream race bugs, each with its fixed version.

Each port keeps the mechanism of the upstream bug (which shared state, which two
operations interleave badly, what the symptom is) in a few lines of our own; the
citation names the upstream issue or pull request where the bug and its fix are
described.  A buggy program fails (an exception, an assertion, a hang) under some
interleaving; its fixed version passes under every one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RealBug:
    id: str
    citation: str
    style: str
    buggy: Callable[[], None]
    fixed: Callable[[], None]
    # The upstream fix relies on operations that are atomic under the GIL (dict.pop,
    # dict.copy, a plain flag): the fixed version has no failure, but its accesses are
    # still unordered, and race detection still reports them.
    lock_free_fix: bool = False


def run_threads(*targets: Callable[[], None]) -> None:
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# -- A: check-then-act on a dict cache -----------------------------------------------

def linecache_checkcache(fixed: bool) -> None:
    """bpo-25872: two threads find the same stale entry and both delete it (KeyError)."""
    cache = {"mod.py": ("stale", 1)}

    def checkcache() -> None:
        entry = cache.get("mod.py")
        if entry is not None and entry[0] == "stale":
            if fixed:
                cache.pop("mod.py", None)
            else:
                del cache["mod.py"]

    run_threads(checkcache, checkcache)


def linecache_keys_snapshot(fixed: bool) -> None:
    """gh-126775: a snapshot of the keys, then a lookup of each in the live dict, which
    another thread has shrunk meanwhile (KeyError)."""
    cache = {"a.py": 1, "b.py": 2}
    total = []

    def checkcache() -> None:
        if fixed:
            for _name, size in cache.copy().items():
                total.append(size)
        else:
            for name in list(cache):
                total.append(cache[name])

    def forget() -> None:
        cache.pop("b.py", None)

    run_threads(checkcache, forget)


def dask_function_cache(fixed: bool) -> None:
    """dask/dask#2511: two threads see the memo full and both evict the same keys."""
    cache = {i: i for i in range(4)}
    lock = threading.Lock()

    def evict() -> None:
        for key in list(cache)[::2]:
            del cache[key]

    def add(key: int) -> None:
        if fixed:
            with lock:
                if len(cache) >= 4:
                    evict()
                cache[key] = key
        else:
            if len(cache) >= 4:
                evict()
            cache[key] = key

    run_threads(lambda: add(10), lambda: add(11))


# -- B: lazy initialisation without a lock ---------------------------------------------

def lazy_loader(fixed: bool) -> None:
    """gh-114763 (importlib.util.LazyLoader): the module is marked loaded before its
    namespace is filled; another thread then misses the attribute."""

    class LazyModule:
        def __init__(self) -> None:
            self.loaded = False
            self.namespace: dict = {}
            self.lock = threading.Lock()

        def _load(self) -> None:
            self.loaded = True
            self.namespace["answer"] = 42

        def get(self, name: str) -> int:
            if fixed:
                with self.lock:
                    if not self.loaded:
                        self._load()
            elif not self.loaded:
                self._load()
            return self.namespace[name]

    module = LazyModule()
    run_threads(lambda: module.get("answer"), lambda: module.get("answer"))


def pool_lazy_lock(fixed: bool) -> None:
    """psycopg/psycopg#1300: the pool's lock is made on first use, so two threads can
    make one each and both enter the section it guards."""

    class Pool:
        def __init__(self) -> None:
            self._lock = threading.Lock() if fixed else None
            self.workers: list = []
            self.opened = False

        def _ensure_lock(self) -> threading.Lock:
            if self._lock is None:
                self._lock = threading.Lock()
            return self._lock

        def open(self) -> None:
            with self._ensure_lock():
                if self.opened:
                    return
                assert not self.workers, "workers started twice"
                self.workers.append("worker")
                self.opened = True

    pool = Pool()
    run_threads(pool.open, pool.open)


def pool_double_create(fixed: bool) -> None:
    """litestar-org/sqlspec#347: two callers each build the pool; a connection from the
    losing pool is released to the winning one (invalid connection)."""

    class Pool:
        def __init__(self) -> None:
            self.given: set = set()
            self.lock = threading.Lock()

        def acquire(self) -> object:
            conn = object()
            with self.lock:
                self.given.add(conn)
            return conn

        def release(self, conn: object) -> None:
            with self.lock:
                if conn not in self.given:
                    raise RuntimeError("release() received an invalid connection")

    class Config:
        def __init__(self) -> None:
            self.pool: Pool | None = None
            self.lock = threading.Lock()

        def provide_pool(self) -> Pool:
            if fixed:
                with self.lock:
                    if self.pool is None:
                        self.pool = Pool()
            elif self.pool is None:
                self.pool = Pool()
            return self.pool

    config = Config()

    def use() -> None:
        conn = config.provide_pool().acquire()
        config.provide_pool().release(conn)

    run_threads(use, use)


def singleton_reset(fixed: bool) -> None:
    """ets-labs/python-dependency-injector#322: the instance is built under the lock but
    read again after it, when a concurrent reset() has set it back to None."""

    class ThreadSafeSingleton:
        def __init__(self) -> None:
            self.storage: object | None = None
            self.lock = threading.Lock()

        def provide(self) -> object | None:
            with self.lock:
                if self.storage is None:
                    self.storage = object()
                if fixed:
                    return self.storage
            return self.storage

        def reset(self) -> None:
            with self.lock:
                self.storage = None

    single = ThreadSafeSingleton()

    def client() -> None:
        assert single.provide() is not None, "provide() returned None"

    run_threads(client, single.reset)


# -- C: a counter bumped from several threads ------------------------------------------

def object_counter(fixed: bool) -> None:
    """forseti-security/forseti-security#3080: ``count += 1`` from several threads."""

    class Stats:
        def __init__(self) -> None:
            self.count = 0
            self.lock = threading.Lock()

        def bump(self) -> None:
            if fixed:
                with self.lock:
                    self.count += 1
            else:
                self.count += 1

    stats = Stats()
    run_threads(stats.bump, stats.bump)
    assert stats.count == 2, f"lost update: count is {stats.count}"


def per_ip_limit(fixed: bool) -> None:
    """chmouel/ftp-cloudfs#33: a per-IP connection count read, compared and written back
    without a lock: two logins both pass a limit of one."""
    counts: dict = {}
    lock = threading.Lock()
    admitted = []

    def login() -> None:
        def admit() -> None:
            n = counts.get("10.0.0.1", 0)
            if n < 1:
                counts["10.0.0.1"] = n + 1
                admitted.append(1)

        if fixed:
            with lock:
                admit()
        else:
            admit()

    run_threads(login, login)
    assert len(admitted) == 1, f"limit of 1 exceeded: {len(admitted)} admitted"


# -- D: a stop flag --------------------------------------------------------------------

def dispatcher_stop(fixed: bool) -> None:
    """python-telegram-bot/python-telegram-bot#887: ``running`` is set by the new thread,
    so a stop() right after start() sees it false and does nothing; the loop never ends."""

    class Dispatcher:
        def __init__(self) -> None:
            self.running = False
            self.ready = threading.Event()

        def start(self) -> None:
            self.running = True
            self.ready.set()
            for _ in range(100):
                if not self.running:
                    return
                threading.Event().wait(0.01)

        def stop(self) -> None:
            if self.running:
                self.running = False

    d = Dispatcher()
    t = threading.Thread(target=d.start)
    t.start()
    if fixed:
        d.ready.wait()
    d.stop()
    t.join(timeout=0.5)
    assert not t.is_alive(), "the dispatcher ignored stop()"
    t.join()


def sampler_stop(fixed: bool) -> None:
    """DataDog/dd-trace-py#19924: ``thread_running`` is set inside the sampler thread; a
    stop() just after start() returns early and leaves the sampler running."""

    class Sampler:
        def __init__(self) -> None:
            self.thread_running = False
            self.quit = threading.Event()
            self.thread = threading.Thread(target=self._run)

        def _run(self) -> None:
            if not fixed:
                self.thread_running = True
            self.quit.wait(timeout=1.0)

        def start(self) -> None:
            if fixed:
                self.thread_running = True
            self.thread.start()

        def stop(self) -> bool:
            if not self.thread_running:
                return False
            self.quit.set()
            self.thread.join()
            return True

    s = Sampler()
    s.start()
    stopped = s.stop()
    assert stopped, "stop() returned early: the sampler is still running"


def restart_after_stop(fixed: bool) -> None:
    """gorakhargosh/watchdog#1002: the watcher checks whether the process exited before
    checking whether it was stopped, so a stop-then-kill restarts the process."""
    stopped = threading.Event()
    process = {"exited": False}
    restarts = []

    def watch() -> None:
        while True:
            if process["exited"]:
                if not (fixed and stopped.is_set()):
                    restarts.append(1)
                return
            if stopped.wait(timeout=0.1):
                return

    t = threading.Thread(target=watch)
    t.start()
    stopped.set()
    process["exited"] = True
    t.join()
    assert not restarts, "the process was restarted after stop()"


# -- E: a container mutated while another thread iterates ------------------------------

class Bar:
    def __init__(self) -> None:
        self.pos = 0


def bar_positions(fixed: bool) -> None:
    """tqdm/tqdm#754: a class-level set of bars iterated without the lock while another
    thread adds bars (RuntimeError: Set changed size during iteration)."""
    instances: set = set()
    lock = threading.Lock()
    instances.add(Bar())

    def free_position() -> None:
        def scan() -> int:
            return max((bar.pos for bar in instances), default=0) + 1

        if fixed:
            with lock:
                scan()
        else:
            scan()

    def new_bars() -> None:
        for i in range(2):
            bar = Bar()
            if fixed:
                with lock:
                    instances.add(bar)
                    bar.pos = i
            else:
                instances.add(bar)
                bar.pos = i

    run_threads(free_position, new_bars)


def module_walk(fixed: bool) -> None:
    """bpo-13487 (inspect.getmodule): a walk over sys.modules while another thread
    imports (RuntimeError: dictionary changed size during iteration)."""

    class Module:
        def __init__(self, file: str) -> None:
            self.file = file

    modules = {"a": Module("a.py")}

    def getmodule() -> None:
        walk = modules.copy() if fixed else modules
        for _name, module in walk.items():
            if module.file == "nowhere.py":
                return

    def imports() -> None:
        for name in ("b", "c"):
            modules[name] = Module(f"{name}.py")

    run_threads(getmodule, imports)


def unanswered_searches(fixed: bool) -> None:
    """caproto/caproto#214: entries are added under a lock, but the loop that walks them
    does not take it (RuntimeError: dictionary changed size during iteration)."""
    searches: dict = {}
    lock = threading.Lock()
    send_lock = threading.Lock()
    sent = []

    def add(name: str) -> None:
        with lock:
            searches[name] = [name, 0]

    def retry() -> None:
        def walk() -> None:
            for name, _tries in searches.values():
                with send_lock:  # the transport's own lock
                    sent.append(name)

        if fixed:
            with lock:
                walk()
        else:
            walk()

    add("pv0")
    run_threads(retry, lambda: (add("pv1"), add("pv2")))


# -- F: join or wait, then read state a background thread still writes -----------------

def processed_after_join(fixed: bool) -> None:
    """seung-lab/neuroglancer#165: the worker calls task_done() before counting the task,
    so queue.join() can return while the count is one short."""
    q: queue.Queue = queue.Queue()
    stats = {"processed": 0}

    def worker() -> None:
        while q.get() is not None:
            if fixed:
                stats["processed"] += 1
                q.task_done()
            else:
                q.task_done()
                stats["processed"] += 1
        q.task_done()

    t = threading.Thread(target=worker)
    t.start()
    for i in range(2):
        q.put(i)
    q.join()
    assert stats["processed"] == 2, f"join() returned with {stats['processed']} of 2 processed"
    q.put(None)
    t.join()


# -- G: close or shutdown vs in-flight work ----------------------------------------------

def submit_vs_shutdown(fixed: bool) -> None:
    """bpo-31783 (concurrent.futures): submit() checks the shutdown flag, then registers
    its worker; a shutdown in between snapshots the workers without it and never joins it."""
    lock = threading.Lock()
    state = {"shutdown": False, "accepted": False, "joined": 0}
    workers: list = []

    def submit() -> None:
        def start() -> None:
            if state["shutdown"]:
                return
            state["accepted"] = True
            t = threading.Thread(target=lambda: None)
            t.start()
            workers.append(t)

        if fixed:
            with lock:
                start()
        else:
            start()

    def shutdown() -> None:
        def snapshot() -> list:
            state["shutdown"] = True
            return list(workers)

        if fixed:
            with lock:
                joining = snapshot()
        else:
            joining = snapshot()
        for t in joining:
            t.join()
        state["joined"] = len(joining)

    run_threads(submit, shutdown)
    for t in workers:
        t.join()
    if state["accepted"]:
        assert state["joined"] == 1, "shutdown() never joined the worker that submit() started"


def pool_close_vs_connect(fixed: bool) -> None:
    """psycopg/psycopg#786: close() empties the pool while a worker is still connecting;
    the worker then adds an open connection to the closed pool."""

    class Connection:
        def __init__(self) -> None:
            self.closed = False

    lock = threading.Lock()
    pool: list = []
    made: list = []

    def grow() -> None:
        conn = Connection()
        made.append(conn)
        with lock:
            pool.append(conn)

    worker = threading.Thread(target=grow)
    worker.start()
    if fixed:
        worker.join()  # stop the workers first
    with lock:
        closing, pool[:] = list(pool), []
    for conn in closing:
        conn.closed = True
    worker.join()
    assert all(c.closed for c in made), "an open connection was left in the closed pool"


# -- H: a double shutdown ------------------------------------------------------------------

def listener_double_stop(fixed: bool) -> None:
    """gh-114706 (logging.handlers.QueueListener): stop() joins the thread and sets it to
    None; a second stop() ('NoneType' object has no attribute 'join').  Upstream the two
    calls came one after the other; here from two threads, so the fix takes a lock."""

    class Listener:
        def __init__(self) -> None:
            self.thread: threading.Thread | None = threading.Thread(target=lambda: None)
            self.thread.start()
            self.lock = threading.Lock()

        def stop(self) -> None:
            def stop_once() -> None:
                if self.thread is not None:
                    self.thread.join()
                    self.thread = None

            if fixed:
                with self.lock:
                    stop_once()
            else:
                stop_once()

    listener = Listener()
    run_threads(listener.stop, listener.stop)


# -- I: get-or-create per key -------------------------------------------------------------

def pool_manager(fixed: bool) -> None:
    """urllib3/urllib3#204: two threads both miss the pool for a host and both create one;
    storing the second disposes of the first, which the first thread then uses."""

    class ConnectionPool:
        def __init__(self) -> None:
            self.closed = False

        def urlopen(self) -> None:
            if self.closed:
                raise RuntimeError("urlopen on a closed pool")

    pools: dict = {}
    lock = threading.Lock()

    def connection_from_host() -> ConnectionPool:
        pool = pools.get("example.org")
        if pool is None:
            pool = ConnectionPool()
            old = pools.get("example.org")
            pools["example.org"] = pool
            if old is not None:
                old.closed = True  # the container disposes of a replaced value
        return pool

    def request() -> None:
        if fixed:
            with lock:
                pool = connection_from_host()
        else:
            pool = connection_from_host()
        pool.urlopen()

    run_threads(request, request)


def component_locator(fixed: bool) -> None:
    """pynamodb/PynamoDB#393 (botocore's ComponentLocator): two threads both take the
    deferred path for one component and both delete it (KeyError)."""
    deferred = {"credential_provider": object}
    components: dict = {}
    lock = threading.Lock()

    def get_component(name: str) -> object:
        if name in deferred:
            factory = deferred[name]
            components[name] = factory()
            del deferred[name]
        return components[name]

    def create_client() -> None:
        if fixed:
            with lock:
                get_component("credential_provider")
        else:
            get_component("credential_provider")

    run_threads(create_client, create_client)


# -- J: a callback registered after the event fired ------------------------------------------

def late_callback(fixed: bool) -> None:
    """apache/cassandra-python-driver#95 / #728: add_callback() sees the future not done
    and appends its callback after set_result() has run the callbacks: it is never called."""

    class ResponseFuture:
        def __init__(self) -> None:
            self.done = False
            self.result = None
            self.callbacks: list = []
            self.lock = threading.Lock()

        def add_callback(self, fn: Callable) -> None:
            def add() -> bool:
                if self.done:
                    return True
                self.callbacks.append(fn)
                return False

            if fixed:
                with self.lock:
                    now = add()
            else:
                now = add()
            if now:
                fn(self.result)

        def set_result(self, value: object) -> None:
            def finish() -> list:
                self.result = value
                self.done = True
                return list(self.callbacks)

            if fixed:
                with self.lock:
                    todo = finish()
            else:
                todo = finish()
            for fn in todo:
                fn(value)

    future = ResponseFuture()
    called = []
    run_threads(lambda: future.add_callback(called.append), lambda: future.set_result("rows"))
    assert called == ["rows"], "the callback was never called"


def _bug(id: str, citation: str, style: str, program: Callable[[bool], None], *,
         lock_free_fix: bool = False) -> RealBug:
    def buggy() -> None:
        program(False)

    def fixed() -> None:
        program(True)

    buggy.__name__, fixed.__name__ = f"{id}_buggy", f"{id}_fixed"
    return RealBug(id, citation, style, buggy, fixed, lock_free_fix)


REAL_BUGS = [
    _bug("linecache_checkcache", "bpo-25872, python/cpython#18007", "check-then-act",
         linecache_checkcache, lock_free_fix=True),
    _bug("linecache_keys_snapshot", "gh-126775, python/cpython#126776", "check-then-act",
         linecache_keys_snapshot, lock_free_fix=True),
    _bug("dask_function_cache", "dask/dask#2511", "check-then-act", dask_function_cache),
    _bug("lazy_loader", "gh-114763, python/cpython#114781", "lazy init", lazy_loader),
    _bug("pool_lazy_lock", "psycopg/psycopg#1300", "lazy init", pool_lazy_lock),
    _bug("pool_double_create", "litestar-org/sqlspec#347", "lazy init", pool_double_create),
    _bug("singleton_reset", "ets-labs/python-dependency-injector#322", "lazy init",
         singleton_reset),
    _bug("object_counter", "forseti-security/forseti-security#3080", "counter", object_counter),
    _bug("per_ip_limit", "chmouel/ftp-cloudfs#33", "counter", per_ip_limit),
    _bug("dispatcher_stop", "python-telegram-bot/python-telegram-bot#887", "stop flag",
         dispatcher_stop, lock_free_fix=True),
    _bug("sampler_stop", "DataDog/dd-trace-py#19924", "stop flag", sampler_stop),
    _bug("restart_after_stop", "gorakhargosh/watchdog#1002", "stop flag", restart_after_stop,
         lock_free_fix=True),
    _bug("bar_positions", "tqdm/tqdm#754", "mutated while iterated", bar_positions),
    _bug("module_walk", "bpo-13487, python/cpython#18786", "mutated while iterated", module_walk,
         lock_free_fix=True),
    _bug("unanswered_searches", "caproto/caproto#214", "mutated while iterated",
         unanswered_searches),
    _bug("processed_after_join", "seung-lab/neuroglancer#165", "join then read",
         processed_after_join),
    _bug("submit_vs_shutdown", "bpo-31783, python/cpython#13171", "shutdown vs work",
         submit_vs_shutdown),
    _bug("pool_close_vs_connect", "psycopg/psycopg#786", "shutdown vs work",
         pool_close_vs_connect),
    _bug("listener_double_stop", "gh-114706, python/cpython#114748", "double shutdown",
         listener_double_stop),
    _bug("pool_manager", "urllib3/urllib3#204", "get-or-create", pool_manager),
    _bug("component_locator", "pynamodb/PynamoDB#393", "get-or-create", component_locator),
    _bug("late_callback", "apache/cassandra-python-driver#95", "late callback", late_callback),
]
