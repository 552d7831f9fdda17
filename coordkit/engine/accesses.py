"""Where the user's code reads or writes shared memory, and which location it touches.

Race detection needs, for each access to an attribute, an item, a global or a
closure variable, the *location* it touches: which object, which field.  A
tracer sees the instruction about to run but not the interpreter's value stack,
so this module works out, once per code object, what each access instruction's
operands are as expressions over the frame (``self``, ``self.items``, ``G``,
``k``: a symbolic stack over straight-line code), and evaluates them in the
frame when the instruction runs, without side effects (no properties, no
``__getattr__``, no user ``__getitem__``).  An operand it cannot name this way
is unknown, and that access is not seen.

What counts as one location:

* ``obj.name``: the attribute ``name`` of that object (a module's attribute is
  its global);
* ``container[key]`` on a dict, list, set or deque: that key of that container;
  a method call that reads or changes the whole container (``append``,
  ``setdefault``, ``get``, iteration, ``len``-free ``in`` checks on lists) is an
  access to every key of it at once;
* a global: that name in that module's globals;
* a closure variable: that name in that file.  Closures made twice from one function
  share the location, so two threads that each bump a closure of their own can be
  reported as racing: the one place the detector can invent a race (Python 3.11+
  does not expose a running frame's cells).

A thread-local's attributes are no location: each thread has its own.

What it cannot see: accesses made by C code (a C extension's fields,
``__slots__`` written from C, ``dict.update`` from C called by the stdlib),
accesses inside the stdlib, installed packages and coordkit, operands that are
results of calls or properties, and ``exec``'d module-level code.
"""

from __future__ import annotations

import _threading_local
import dis
import sys
import threading
import types
import zlib
from collections import OrderedDict, defaultdict, deque
from collections.abc import Iterator
from typing import Any, NamedTuple

from coordkit.engine.points import READ, WRITE

__all__ = ["ANY", "CodeCache", "Frame", "Site", "access_sites", "describe", "location_of", "owner_name",
           "seen_instructions", "site_key"]

ANY = "<any>"  # the field of an access to a whole container
_UNKNOWN = None
_MISSING = object()

CONTAINERS = (dict, list, set, deque, OrderedDict, defaultdict, bytearray)
_CONTAINER_TYPES = frozenset(CONTAINERS)
# Methods of the containers above that change them; every other method only reads.
_MUTATORS = frozenset({
    "append", "appendleft", "extend", "extendleft", "insert", "pop", "popleft", "popitem",
    "remove", "clear", "update", "setdefault", "add", "discard", "sort", "reverse", "rotate",
    "difference_update", "intersection_update", "symmetric_difference_update",
    "__setitem__", "__delitem__", "__iadd__", "move_to_end",
})
# Methods of the containers above whose first argument is the one key they touch.
_KEYED_METHODS = frozenset({
    "get", "setdefault", "pop", "__contains__", "__getitem__", "__setitem__", "__delitem__",
    "add", "discard", "remove",
})
# Builtins called on one container that read all of it.
_READING_BUILTINS = frozenset(("global", name) for name in (
    "len", "list", "tuple", "set", "frozenset", "dict", "sorted", "sum", "min", "max", "any",
    "all", "iter", "enumerate", "reversed"))
_THREAD_LOCALS = (threading.local, _threading_local.local)
# Owners whose attributes never change: reading one cannot race.
_IMMUTABLE = frozenset({int, float, str, bytes, tuple, bool, type(None), frozenset,
                        types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                        types.CodeType})


class Site(NamedTuple):
    """An instruction that touches shared memory.

    ``kind`` is ``"attr"``, ``"item"``, ``"global"``, ``"cell"``, ``"method"`` (a
    method of an object, which is an access to the whole object when it is a
    container), ``"iter"`` or ``"with"`` (entering a context manager: no access, but
    it names the object used); ``owner`` and ``key`` are the operands as symbolic
    expressions (``None`` when unknown); ``key`` is also the hash that names the
    site in a trace.
    """

    kind: str
    access: str
    name: str
    owner: Any
    key: Any
    line: int
    site_key: int


def site_key(qualname: str, line: int, kind: str, access: str, name: str) -> int:
    """A 32-bit name for a site that survives recompiling: where it is (function and
    line) and what it does, not its byte offset."""
    return zlib.crc32(f"{qualname}:{line}:{kind}:{access}:{name}".encode())


# -- the symbolic stack ---------------------------------------------------------

# Instructions whose number of inputs is fixed: (inputs, outputs).  Any other
# instruction that is not handled below clears what the stack is known to hold.
_FIXED = {
    "POP_TOP": (1, 0), "NOP": (0, 0), "RESUME": (0, 0), "CACHE": (0, 0),
    "EXTENDED_ARG": (0, 0), "PRECALL": (0, 0), "KW_NAMES": (0, 0), "PUSH_NULL": (0, 1),
    "BINARY_OP": (2, 1), "COMPARE_OP": (2, 1), "IS_OP": (2, 1), "CONTAINS_OP": (2, 1),
    "UNARY_NEGATIVE": (1, 1), "UNARY_NOT": (1, 1), "UNARY_INVERT": (1, 1),
    "UNARY_POSITIVE": (1, 1), "TO_BOOL": (1, 1), "GET_ITER": (1, 1),
    "BINARY_SUBSCR": (2, 1), "STORE_SUBSCR": (3, 0), "DELETE_SUBSCR": (2, 0),
    "STORE_ATTR": (2, 0), "DELETE_ATTR": (1, 0), "BINARY_SLICE": (3, 1), "STORE_SLICE": (4, 0),
    "STORE_GLOBAL": (1, 0), "STORE_DEREF": (1, 0), "DELETE_GLOBAL": (0, 0),
    "DELETE_DEREF": (0, 0), "LOAD_CLOSURE": (0, 1),
    "LOAD_ASSERTION_ERROR": (0, 1), "LOAD_BUILD_CLASS": (0, 1), "BEFORE_WITH": (1, 2),
}
_BINARY_PREFIXES = ("BINARY_", "INPLACE_")  # 3.10's one instruction per operator


def _depends_on_local(expr: Any, name: str) -> bool:
    if not isinstance(expr, tuple):
        return False
    if expr[0] == "fast":
        return expr[1] == name
    return any(_depends_on_local(part, name) for part in expr[1:])


class _Stack:
    """The operand stack of straight-line code, as expressions; what lies below what it
    has seen pushed is unknown (popping there gives ``None``)."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[Any] = []

    def pop(self, n: int = 1) -> list[Any]:
        out = []
        for _ in range(n):
            out.append(self.items.pop() if self.items else _UNKNOWN)
        return out

    def peek(self, i: int) -> Any:
        """The ``i``-th value from the top (1 is the top)."""
        return self.items[-i] if len(self.items) >= i else _UNKNOWN

    def push(self, *values: Any) -> None:
        self.items.extend(values)

    def forget(self) -> None:
        self.items.clear()

    def assigned(self, name: str) -> None:
        """Local ``name`` changed: expressions that read it no longer hold."""
        self.items = [_UNKNOWN if _depends_on_local(e, name) else e for e in self.items]


def _shuffle(stack: _Stack, op: str, arg: int) -> bool:
    """The stack-shuffling instructions; True when ``op`` was one."""
    items = stack.items
    if op in ("COPY", "DUP_TOP"):
        stack.push(stack.peek(arg if op == "COPY" else 1))
    elif op == "DUP_TOP_TWO":
        stack.push(stack.peek(2), stack.peek(1))
    elif op in ("SWAP", "ROT_TWO"):
        n = arg if op == "SWAP" else 2
        while len(items) < n:
            items.insert(0, _UNKNOWN)
        items[-1], items[-n] = items[-n], items[-1]
    elif op in ("ROT_THREE", "ROT_FOUR", "ROT_N"):
        n = {"ROT_THREE": 3, "ROT_FOUR": 4}.get(op, arg)
        while len(items) < n:
            items.insert(0, _UNKNOWN)
        items.insert(len(items) - n, items.pop())
    else:
        return False
    return True


def _load(stack: _Stack, ins: dis.Instruction) -> bool:
    """The instructions that push a value the frame can name; True when ``ins`` was one."""
    op = ins.opname
    if op in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_DEREF"):
        stack.push(("fast", ins.argval))
    elif op == "LOAD_FAST_LOAD_FAST":
        stack.push(("fast", ins.argval[0]), ("fast", ins.argval[1]))
    elif op == "LOAD_CONST":
        stack.push(("const", ins.argval))
    elif op == "LOAD_GLOBAL":
        call = sys.version_info >= (3, 11) and ins.arg is not None and ins.arg & 1
        if call and sys.version_info < (3, 13):
            stack.push(_UNKNOWN)  # the NULL a call needs, below the global
        stack.push(("global", ins.argval))
        if call and sys.version_info >= (3, 13):
            stack.push(_UNKNOWN)  # above it from 3.13
    elif op == "LOAD_NAME":
        stack.push(("global", ins.argval))
    elif op == "LOAD_METHOD" or (op == "LOAD_ATTR" and _method_name(ins) is not None):
        # The method and its self (or NULL and the attribute): both slots hold a marker,
        # so that the call can tell which method of which object it calls.
        owner = stack.pop()[0]
        marker = ("method", owner, ins.argval) if owner is not _UNKNOWN else _UNKNOWN
        stack.push(marker, marker)
    elif op == "LOAD_ATTR":
        owner = stack.pop()[0]
        stack.push(("attr", owner, ins.argval) if owner is not _UNKNOWN else _UNKNOWN)
    else:
        return False
    return True


def _store(stack: _Stack, ins: dis.Instruction) -> bool:
    op = ins.opname
    if op == "STORE_FAST" or op == "DELETE_FAST":
        if op == "STORE_FAST":
            stack.pop()
        stack.assigned(ins.argval)
    elif op == "STORE_FAST_LOAD_FAST":
        stack.pop()
        stack.assigned(ins.argval[0])
        stack.push(("fast", ins.argval[1]))
    elif op == "STORE_FAST_STORE_FAST":
        stack.pop(2)
        stack.assigned(ins.argval[0])
        stack.assigned(ins.argval[1])
    else:
        return False
    return True


def _built(op: str, arg: int) -> tuple[int, int] | None:
    """(inputs, outputs) of the instructions that build a value from ``arg`` others."""
    if op in ("BUILD_LIST", "BUILD_TUPLE", "BUILD_SET", "BUILD_STRING"):
        return arg, 1
    if op == "BUILD_MAP":
        return 2 * arg, 1
    if op == "BUILD_CONST_KEY_MAP":
        return arg + 1, 1
    return None


def _step(stack: _Stack, ins: dis.Instruction) -> None:
    """Apply ``ins`` to the symbolic stack."""
    op = ins.opname
    if _load(stack, ins) or _store(stack, ins) or _shuffle(stack, op, ins.arg or 0):
        return
    fixed = _FIXED.get(op) or _built(op, ins.arg or 0)
    if fixed is None and op.startswith(_BINARY_PREFIXES) and op not in (
            "BINARY_SUBSCR", "BINARY_SLICE"):
        fixed = (2, 1)
    if fixed is None:
        stack.forget()
        try:
            pushed = dis.stack_effect(ins.opcode, ins.arg, jump=False)
        except ValueError:
            pushed = 0
        stack.push(*([_UNKNOWN] * max(pushed, 0)))
        return
    stack.pop(fixed[0])
    stack.push(*([_UNKNOWN] * fixed[1]))


# -- the sites of a code object -------------------------------------------------

def _keyed_call(stack: _Stack, argc: int) -> tuple[str, str, str, Any, Any] | None:
    """``d.get(k)``, ``d.setdefault(k, v)``, ``s.add(x)``...: an access to the key that is
    the call's first argument."""
    for depth in (argc + 1, argc + 2):
        callee = stack.peek(depth)
        if isinstance(callee, tuple) and callee[0] == "method" and callee[2] in _KEYED_METHODS:
            name = callee[2]
            return ("item", WRITE if name in _MUTATORS else READ, name, callee[1],
                    stack.peek(argc))
    return None


def _method_name(ins: dis.Instruction) -> str | None:
    if ins.opname == "LOAD_METHOD":
        return ins.argval
    if ins.opname == "LOAD_ATTR" and sys.version_info >= (3, 12) and ins.arg is not None and ins.arg & 1:
        return ins.argval
    return None


def _site_of(stack: _Stack, ins: dis.Instruction) -> tuple[str, str, str, Any, Any] | None:
    """``(kind, access, name, owner, key)`` when ``ins`` touches shared memory."""
    op = ins.opname
    method = _method_name(ins)
    if method is not None:
        if method in _KEYED_METHODS:
            return None  # an access to one key: the call makes it (below)
        return ("method", WRITE if method in _MUTATORS else READ, method, stack.peek(1), None)
    if op in ("CALL", "CALL_METHOD") and ins.arg:
        keyed = _keyed_call(stack, ins.arg)
        if keyed is not None:
            return keyed
    if op == "LOAD_ATTR" and ins.argval in _MUTATORS:
        # a container method loaded as an attribute (a call with keywords before 3.11)
        return ("method", WRITE, ins.argval, stack.peek(1), None)
    if op == "LOAD_ATTR":
        return ("attr", READ, ins.argval, stack.peek(1), None)
    if op in ("STORE_ATTR", "DELETE_ATTR"):
        return ("attr", WRITE, ins.argval, stack.peek(1), None)
    if op == "BINARY_SUBSCR":
        return ("item", READ, "[]", stack.peek(2), stack.peek(1))
    if op in ("STORE_SUBSCR", "DELETE_SUBSCR"):
        return ("item", WRITE, "[]", stack.peek(2), stack.peek(1))
    if op in ("BINARY_SLICE", "STORE_SLICE"):
        return ("item", READ if op == "BINARY_SLICE" else WRITE, "[:]", stack.peek(3), ANY)
    if op == "CONTAINS_OP":
        return ("item", READ, "in", stack.peek(1), stack.peek(2))
    if op == "GET_ITER":
        return ("iter", READ, "iter", stack.peek(1), ANY)
    if op in ("CALL", "CALL_FUNCTION") and ins.arg == 1:
        # len(d), list(d), sorted(d)...: a builtin that reads the whole container
        callee = stack.peek(2) if sys.version_info < (3, 13) else stack.peek(3)
        if callee in _READING_BUILTINS:
            return ("item", READ, callee[1], stack.peek(1), ANY)
    if op in ("BEFORE_WITH", "SETUP_WITH"):
        return ("with", READ, "with", stack.peek(1), None)
    if op in ("LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL"):
        return ("global", READ if op == "LOAD_GLOBAL" else WRITE, ins.argval, None, None)
    if op in ("LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF"):
        return ("cell", READ if op == "LOAD_DEREF" else WRITE, ins.argval, None, None)
    return None


# Before 3.12 a tracer sees an instruction with EXTENDED_ARG prefixes at its first prefix
# (the opcode event fires there, not at the instruction); from 3.12 at its own offset.
_SEEN_AT_PREFIX = sys.version_info < (3, 12)


def seen_instructions(code: Any) -> Iterator[tuple[int, dis.Instruction, dis.Instruction]]:
    """``(offset a tracer sees it at, head, instruction)`` for each instruction of ``code``
    but EXTENDED_ARG; ``head`` is its first EXTENDED_ARG prefix, or the instruction itself
    (a jump lands on the head, a line starts there)."""
    head = None
    for ins in dis.get_instructions(code):
        if ins.opname == "EXTENDED_ARG":
            head = head or ins
            continue
        first, head = head or ins, None
        yield (first.offset if _SEEN_AT_PREFIX else ins.offset), first, ins


def _line(ins: dis.Instruction, line: int) -> int:
    """The source line after ``ins``: its own if it starts one (3.10-3.12 ``starts_line``
    is the number, 3.13's is a flag beside ``line_number``)."""
    if ins.starts_line is not None and not isinstance(ins.starts_line, bool):
        return ins.starts_line
    number = getattr(ins, "line_number", None)
    return line if number is None else number


class CodeCache(dict):  # type: ignore[type-arg]
    """``id(code)`` -> what was worked out about the code object ``code`` (look up with
    ``get(id(code))``, add with ``put``).  Keyed by id because a code object hashes by its
    whole content at every lookup; each code is kept, so no id is reused for another."""

    __slots__ = ("_codes",)

    def __init__(self) -> None:
        super().__init__()
        self._codes: list[Any] = []

    def put(self, code: Any, value: Any) -> Any:
        """Remember ``value`` for ``code``; returns ``value``."""
        self[id(code)] = value
        self._codes.append(code)
        return value


_sites_cache = CodeCache()


def access_sites(code: Any) -> dict[int, Site]:
    """Offset a tracer sees -> ``Site`` for each instruction of ``code`` that touches shared
    memory."""
    known = _sites_cache.get(id(code))
    if known is not None:
        return known
    known = {}
    stack = _Stack()
    qualname = getattr(code, "co_qualname", code.co_name)
    line = code.co_firstlineno
    for offset, head, ins in seen_instructions(code):
        if head.is_jump_target or ins.is_jump_target:
            stack.forget()  # reached from elsewhere too: what it holds is not known
        line = _line(ins, _line(head, line))
        found = _site_of(stack, ins)
        if found is not None:
            kind, access, name, owner, key = found
            known[offset] = Site(kind, access, name, owner, key, line,
                                 site_key(qualname, line, kind, access, name))
        _step(stack, ins)
        if ins.opname.startswith(("JUMP", "RETURN", "RAISE", "RERAISE")) and "IF" not in ins.opname:
            stack.forget()  # nothing falls through
    return _sites_cache.put(code, known)


# -- evaluating operands in a frame ---------------------------------------------

def _attribute(obj: Any, name: str) -> Any:
    """``obj.name`` without running user code (no properties, no ``__getattr__``), or
    ``_MISSING`` when that cannot be done."""
    if isinstance(obj, type):
        for klass in obj.__mro__:
            if name in klass.__dict__:
                return klass.__dict__[name]
        return _MISSING
    descriptor = _MISSING
    for klass in type(obj).__mro__:
        if name in klass.__dict__:
            descriptor = klass.__dict__[name]
            break
    if descriptor is not _MISSING and (hasattr(type(descriptor), "__set__")
                                       or hasattr(type(descriptor), "__delete__")):
        if type(descriptor) is types.MemberDescriptorType:  # a __slots__ field
            try:
                return descriptor.__get__(obj, type(obj))
            except AttributeError:
                return _MISSING
        return _MISSING
    try:
        namespace = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        namespace = None
    if type(namespace) is dict and name in namespace:
        return namespace[name]
    return descriptor


class Frame:
    """A frame whose locals are read at most once per access (reading them costs a copy
    before Python 3.13)."""

    __slots__ = ("_locals", "frame")

    def __init__(self, frame: Any) -> None:
        self.frame = frame
        self._locals: Any = None

    def value(self, expr: Any) -> Any:
        """The value of a symbolic expression now, or ``_MISSING``."""
        if expr is None:
            return _MISSING
        tag = expr[0]
        if tag == "fast":
            if self._locals is None:
                self._locals = self.frame.f_locals
            try:
                return self._locals[expr[1]]
            except KeyError:
                return _MISSING
        if tag == "const":
            return expr[1]
        if tag == "global":
            return self.frame.f_globals.get(expr[1], _MISSING)
        owner = self.value(expr[1])  # "attr"
        return _MISSING if owner is _MISSING else _attribute(owner, expr[2])


def _hashable(key: Any) -> Any:
    if type(key) in (str, int, bytes, float, bool, tuple, type(None), frozenset):
        try:
            hash(key)
        except TypeError:
            return ANY
        return key
    return ANY  # a user key's __hash__ or __eq__ is user code: do not call it


def location_of(site: Site, frame: Frame) -> tuple[Any, Any, Any] | None:
    """``(owner, field, owner_object)`` of the location ``site`` touches in ``frame``, or
    None when it cannot be named (or cannot be shared).  ``owner`` is a hashable identity
    (an ``id``, or a tuple for globals and cells); ``owner_object`` is kept alive by the
    caller so that the ``id`` is not reused while the run lasts."""
    kind = site.kind
    if kind == "global":
        g = frame.frame.f_globals
        return id(g), site.name, g
    if kind == "cell":
        return ("cell", frame.frame.f_code.co_filename), site.name, None
    owner = frame.value(site.owner)
    if owner is _MISSING or type(owner) in _IMMUTABLE or isinstance(owner, _THREAD_LOCALS):
        return None  # (a thread-local's attributes are each thread's own)
    if kind == "attr":
        if type(owner) is types.ModuleType:
            g = owner.__dict__
            return id(g), site.name, g
        return id(owner), site.name, owner
    if type(owner) not in _CONTAINER_TYPES:
        return None  # a method or an item of a user object: its own code does the accesses
    if kind == "item" and site.key is not ANY:
        key = frame.value(site.key)
        return id(owner), (ANY if key is _MISSING else _hashable(key)), owner
    return id(owner), ANY, owner


def owner_name(owner: Any) -> str | None:
    """What a report calls the owner of a location (kept instead of the owner itself, which
    must not be kept alive by a report): a class's name, or None for a module's globals."""
    if owner is None:
        return None
    if isinstance(owner, dict) and "__builtins__" in owner:
        return None
    return owner.__name__ if isinstance(owner, type) else type(owner).__name__


def describe(site: Site, owner: str | None, field: Any) -> str:
    """How a report names the location (``attribute Counter.value``, ``dict item ['k']``)."""
    if site.kind == "global" or (site.kind == "attr" and owner is None):
        return f"global {site.name}"
    if site.kind == "cell":
        return f"closure variable {site.name}"
    if site.kind == "attr":
        return f"attribute {owner}.{site.name}"
    return f"{owner} item [{field!r}]" if field is not ANY else f"{owner} (whole)"
