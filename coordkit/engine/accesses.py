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

* ``obj.name``: the attribute ``name`` of that object, however it is reached
  (``setattr``, ``vars(obj)[...]``: its ``__dict__`` names it, SCHED-44; a module's
  attribute is its global);
* ``container[key]`` on a dict, list, set or deque: that key of that container;
  a method call that reads or changes the whole container (``append``, iteration,
  ``update``) is an access to every key of it at once;
* a global: that name in that module's globals;
* a closure variable: that name in that file.  Closures made twice from one function
  share the location, so two threads that each bump a closure of their own can be
  reported as racing: the one place the detector can invent a race (Python 3.11+
  does not expose a running frame's cells).

A thread-local's attributes are no location: each thread has its own.

An access made by a call is made at the call, once its arguments are evaluated
(SCHED-41): a method's load only names its object.  A call of the user's code runs
traced code; one of the synchronisation library is modelled by its operations; the C
functions and methods listed here (``_FUNCTIONS``, the containers' methods) are named
by what they touch (SCHED-43).  Anything else, and any access whose operand the
analysis cannot name, is ``UNNAMED``: the step depends on everything (SCHED-42); an
unknown C call's receiver and arguments are then ``Pending.guessed`` as written, for race
detection only (RACE-11).  A container's truth (``if d:``) reads its size (RACE-10).
Accesses inside the stdlib, installed packages and coordkit are not traced, nor
``exec``'d module-level code.
"""

from __future__ import annotations

import _threading_local
import concurrent.futures
import dis
import functools
import gc
import itertools
import os
import queue
import sys
import sysconfig
import threading
import types
import weakref
import zlib
from collections import OrderedDict, defaultdict, deque
from collections.abc import Iterator
from typing import Any, NamedTuple

from coordkit.engine.points import READ, WRITE

__all__ = ["ANY", "CARRIES", "UNNAMED", "CodeCache", "Frame", "Pending", "Site", "access_sites",
           "call_locations", "carries_nothing", "carry", "describe", "is_user_code", "locations",
           "owner_name", "seen_instructions", "site_key"]

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
    "EXTENDED_ARG": (0, 0), "PRECALL": (0, 0), "KW_NAMES": (0, 0),
    "BINARY_OP": (2, 1), "COMPARE_OP": (2, 1), "IS_OP": (2, 1), "CONTAINS_OP": (2, 1),
    "UNARY_NEGATIVE": (1, 1), "UNARY_NOT": (1, 1), "UNARY_INVERT": (1, 1),
    "UNARY_POSITIVE": (1, 1), "TO_BOOL": (1, 1), "GET_ITER": (1, 1),
    "BINARY_SUBSCR": (2, 1), "STORE_SUBSCR": (3, 0), "DELETE_SUBSCR": (2, 0),
    "STORE_ATTR": (2, 0), "DELETE_ATTR": (1, 0), "BINARY_SLICE": (3, 1), "STORE_SLICE": (4, 0),
    "STORE_GLOBAL": (1, 0), "STORE_DEREF": (1, 0), "DELETE_GLOBAL": (0, 0),
    "DELETE_DEREF": (0, 0), "LOAD_CLOSURE": (0, 1),
    "LOAD_ASSERTION_ERROR": (0, 1), "LOAD_BUILD_CLASS": (0, 1), "BEFORE_WITH": (1, 2),
    # (a display's item added to the container below it, which stays)
    "LIST_EXTEND": (1, 0), "SET_UPDATE": (1, 0), "DICT_UPDATE": (1, 0), "DICT_MERGE": (1, 0),
    "LIST_APPEND": (1, 0), "SET_ADD": (1, 0), "MAP_ADD": (2, 0),
}
_BINARY_PREFIXES = ("BINARY_", "INPLACE_")  # 3.10's one instruction per operator


def _depends_on_local(expr: Any, name: str) -> bool:
    if not isinstance(expr, tuple) or not expr or expr[0] == "const":
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


def _load(stack: _Stack, ins: dis.Instruction, offset: int) -> bool:
    """The instructions that push a value the frame can name; True when ``ins`` was one."""
    op = ins.opname
    if op in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR"):
        stack.push(("fast", ins.argval))
    elif op in ("LOAD_DEREF", "LOAD_CLASSDEREF"):
        stack.push(("cell", ins.argval))
    elif op == "LOAD_FAST_LOAD_FAST":
        stack.push(("fast", ins.argval[0]), ("fast", ins.argval[1]))
    elif op == "PUSH_NULL":
        stack.push(_NULL)
    elif op == "LOAD_CONST":
        stack.push(("const", ins.argval))
    elif op == "LOAD_GLOBAL":
        call = sys.version_info >= (3, 11) and ins.arg is not None and ins.arg & 1
        if call and sys.version_info < (3, 13):
            stack.push(_NULL)  # the NULL a call needs, below the global
        stack.push(("global", ins.argval, offset))  # (the value at the load: ``Pending``)
        if call and sys.version_info >= (3, 13):
            stack.push(_NULL)  # above it from 3.13
    elif op == "LOAD_NAME":
        stack.push(("global", ins.argval))
    elif op == "LOAD_METHOD" or (op == "LOAD_ATTR" and _method_name(ins) is not None):
        # The method and its self (or NULL and the attribute): both slots hold a marker,
        # so that the call can tell which method of which object it calls; the object is
        # the one at the load (``Pending.loaded``), whatever the arguments do to the name.
        owner = stack.pop()[0]
        marker = ("method", owner, ins.argval, offset) if owner is not _UNKNOWN else _UNKNOWN
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


# Calls: (inputs, outputs) come from ``dis.stack_effect`` (one output: the result).
_CALLS = frozenset({"CALL", "CALL_FUNCTION", "CALL_METHOD", "CALL_FUNCTION_KW", "CALL_KW",
                    "CALL_FUNCTION_EX"})
# Instructions that change what a name or an attribute holds: an expression over
# anything but the frame's own locals may hold another value after them.
_CHANGES_STATE = _CALLS | frozenset({
    "STORE_ATTR", "DELETE_ATTR", "STORE_SUBSCR", "DELETE_SUBSCR", "STORE_SLICE", "STORE_GLOBAL",
    "DELETE_GLOBAL", "STORE_DEREF", "DELETE_DEREF", "STORE_NAME", "DELETE_NAME"})
# Instructions that push one value, whatever number they take.
_ONE_RESULT = frozenset({
    "MAKE_FUNCTION", "BUILD_SLICE", "FORMAT_VALUE", "LIST_TO_TUPLE", "IMPORT_NAME",
    "CALL_INTRINSIC_1", "CALL_INTRINSIC_2", "SET_FUNCTION_ATTRIBUTE", "FORMAT_SIMPLE",
    "FORMAT_WITH_SPEC", "CONVERT_VALUE", "LOAD_BUILD_CLASS", "GET_LEN"})
# Pushed values whose meaning a call cannot change: locals, constants, a method's object
# (taken at its load) and the place of a call's result.
_STABLE_TAGS = frozenset({"fast", "const", "method", "result", "exit", "null", "fresh", "str",
                          "bool"})
_EITHER = "either"  # a slot two ways into a jump target fill differently
_NULL = ("null",)  # what a call finds below its callable when it is given no self


_A_STRING = ("str",)  # a string made here (an f-string's)
_A_DISPLAY = ("fresh",)  # a list, tuple, set or dict made here: nobody else holds it yet
# A truth value: what ``is``, ``in``, ``not`` and a truth test give, and what a comparison
# gives (a builtin's is a bool; a user's ``__eq__`` is traced, and one of a foreign type's
# is unnamed where it runs, SCHED-42).
_A_BOOL = ("bool",)
# (and what ``__exit__`` gives when an exception ends a ``with``: the library's is None or
# a bool, a user's is traced)
_MADE_PLAIN = (_A_BOOL, _A_STRING)
_BOOLS = frozenset({"IS_OP", "CONTAINS_OP", "UNARY_NOT", "TO_BOOL", "COMPARE_OP",
                    "WITH_EXCEPT_START", "CHECK_EXC_MATCH"})
_FORMATS = frozenset({"FORMAT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE"})


def _operator(ins: dis.Instruction) -> tuple[str, bool] | None:
    """``(symbol, in place)`` of an arithmetic or comparison instruction (3.10 has one
    instruction per operator, ``INPLACE_*`` for the augmented ones)."""
    op = ins.opname
    if op in ("BINARY_OP", "COMPARE_OP"):
        symbol = ins.argrepr
        if symbol.startswith("bool("):  # 3.13's comparison whose result is made a bool
            symbol = symbol[5:-1]
        return symbol, op == "BINARY_OP" and symbol.endswith("=")
    if op.startswith(_BINARY_PREFIXES) and op not in ("BINARY_SUBSCR", "BINARY_SLICE"):
        return op, op.startswith("INPLACE_")
    return None


def _stable(expr: Any) -> Any:
    if isinstance(expr, tuple) and (expr[0] in _STABLE_TAGS or (expr[0] == "global" and len(expr) > 2)):
        return expr  # (a global's load keeps what it loaded, for its call)
    return _UNKNOWN


def _step(stack: _Stack, ins: dis.Instruction, offset: int) -> None:
    """Apply ``ins`` (seen at ``offset``) to the symbolic stack."""
    op = ins.opname
    if _load(stack, ins, offset) or _store(stack, ins) or _shuffle(stack, op, ins.arg or 0):
        return
    if op in _CHANGES_STATE:
        stack.items = [_stable(e) for e in stack.items]
    if not (_derive(stack, ins, offset) or _build(stack, ins)):
        _other(stack, ins)


def _derive(stack: _Stack, ins: dis.Instruction, offset: int) -> bool:
    """Apply ``ins`` if it makes a value named after its inputs (a call's result, an item,
    a with's exit, a bool, an operator's result); False if it is none of those."""
    op = ins.opname
    if op in _CALLS:
        # (3.11 counts a CALL's arguments in the PRECALL before it)
        stack.pop((ins.arg or 0) + 2 if op == "CALL" and sys.version_info < (3, 12)
                  else 1 - dis.stack_effect(ins.opcode, ins.arg, jump=False))
        stack.push(("result", offset))
    elif op == "BINARY_SUBSCR":
        key, owner = stack.pop(2)
        stack.push(("item", owner, key) if owner is not _UNKNOWN else _UNKNOWN)
    elif op in ("BEFORE_WITH", "SETUP_WITH"):
        owner = stack.pop()[0]
        stack.push(("exit", owner), _UNKNOWN)
    elif op in _BOOLS:
        stack.pop(1 - dis.stack_effect(ins.opcode, ins.arg, jump=False))
        stack.push(_A_BOOL)
    elif _operator(ins) is not None:
        right, left = stack.pop(2)
        stack.push(("op", left, right))
    else:
        return False
    return True


def _build(stack: _Stack, ins: dis.Instruction) -> bool:
    """Apply ``ins`` if it builds a display, a string or a function; False if not."""
    op = ins.opname
    if op in ("BUILD_LIST", "BUILD_TUPLE", "BUILD_SET", "BUILD_MAP", "LIST_TO_TUPLE"):
        inputs = 2 * (ins.arg or 0) if op == "BUILD_MAP" else 1 if op == "LIST_TO_TUPLE" else ins.arg or 0
        items = stack.pop(inputs)[::-1]
        known = op != "BUILD_MAP" and op != "LIST_TO_TUPLE" and _UNKNOWN not in items
        stack.push(("build", *items) if known and len(items) <= 8 else _A_DISPLAY)
    elif op in _FORMATS or op == "BUILD_STRING":
        stack.pop(ins.arg if op == "BUILD_STRING" else
                  1 - dis.stack_effect(ins.opcode, ins.arg, jump=False))
        stack.push(_A_STRING)
    elif op == "SET_FUNCTION_ATTRIBUTE":  # (3.13) the function made here stays on top
        stack.push(stack.pop(2)[0])
    elif op in _ONE_RESULT:
        taken = stack.pop(1 - dis.stack_effect(ins.opcode, ins.arg, jump=False))
        # a function made here: its code object names what calling it runs
        code = [e for e in taken if isinstance(e, tuple) and e[0] == "const"
                and isinstance(e[1], types.CodeType)] if op == "MAKE_FUNCTION" else ()
        stack.push(code[0] if code else _UNKNOWN)
    else:
        return False
    return True


def _other(stack: _Stack, ins: dis.Instruction) -> None:
    """Apply any other ``ins``: a known count of values taken and unknown ones pushed, or
    (an instruction not known) forget the stack."""
    op = ins.opname
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

def _method_name(ins: dis.Instruction) -> str | None:
    if ins.opname == "LOAD_METHOD":
        return ins.argval
    if ins.opname == "LOAD_ATTR" and sys.version_info >= (3, 12) and ins.arg is not None and ins.arg & 1:
        return ins.argval
    return None


# Where a call's callable lies, below its arguments (and the keyword names on top of
# them, for the calls that keep those on the stack): 3.10's CALL_FUNCTION has it right
# below them, 3.11-3.12's CALL there above a NULL or below a self, 3.13's below its NULL
# or self.
_KW_ON_STACK = frozenset({"CALL_FUNCTION_KW", "CALL_KW"})


def _call_site(stack: _Stack, ins: dis.Instruction, kw_names: tuple[str, ...]
               ) -> tuple[str, str, str, Any, Any]:
    """The ``call`` site of a call instruction: the callable (a ``method`` marker, or an
    expression) and the arguments (positional, then keyword values), as expressions; the
    arguments are None when the call unpacks them (``f(*args)``)."""
    op, argc = ins.opname, ins.arg or 0
    if op == "CALL_FUNCTION_EX":
        below = 2 + (argc & 1)
        callee = stack.peek(below + (1 if sys.version_info >= (3, 13) else 0))
        args = (("star", stack.peek(below - 1), stack.peek(1) if argc & 1 else _A_DISPLAY), None)
        if isinstance(stack.peek(below + 1), tuple) and stack.peek(below + 1)[0] == "method":
            callee = stack.peek(below + 1)
    else:
        top = 1 if op in _KW_ON_STACK else 0
        if top:
            names = stack.peek(1)
            kw_names = names[1] if isinstance(names, tuple) and names[0] == "const" else ()
        values = tuple(stack.peek(i) for i in range(top + argc, top, -1))
        npos = argc - len(kw_names)
        args = (values[:npos], values[npos:]) if npos >= 0 else None
        below, callee = stack.peek(top + argc + 1), stack.peek(top + argc + 2)
        if isinstance(below, tuple) and below[0] in ("method", "exit"):
            callee = below
        elif sys.version_info < (3, 11) or (sys.version_info < (3, 13) and callee == _NULL):
            callee = below  # (3.11-3.12: with no NULL below it, the callable has a self)
    name = callee[2] if isinstance(callee, tuple) and callee[0] == "method" else (
        callee[1] if isinstance(callee, tuple) and callee[0] == "global" else "call")
    if isinstance(callee, tuple) and callee[0] == "exit":
        return ("exit", READ, "exit", callee, None)
    return ("call", WRITE if name in _MUTATORS else READ, name, callee, args)


def _exit_call(previous: list[dis.Instruction], ins: dis.Instruction) -> bool:
    """The call of ``__exit__`` that ends a ``with`` block without an exception: the three
    ``None`` it is given are loaded right before it (3.10 loads one and copies it)."""
    if ins.opname not in ("CALL", "CALL_FUNCTION") or ins.arg not in (2, 3):
        return False
    last = [i for i in previous[-5:] if i.opname not in ("PRECALL", "CACHE")][-3:]
    shape = [(i.opname, i.argval) for i in last]
    return shape in ([("LOAD_CONST", None)] * 3,
                     [("LOAD_CONST", None), ("DUP_TOP", None), ("DUP_TOP", None)])


def _site_of(stack: _Stack, ins: dis.Instruction, kw_names: tuple[str, ...],
             previous: list[dis.Instruction]) -> tuple[str, str, str, Any, Any] | None:
    """``(kind, access, name, owner, key)`` when ``ins`` touches shared memory, or loads
    what a later instruction needs (a method's object)."""
    op = ins.opname
    method = _method_name(ins)
    if method is not None:
        # No access yet: the call makes it (SCHED-41); the load names the object.
        return ("method", READ, method, stack.peek(1), None)
    if op in _CALLS:
        if _exit_call(previous, ins):
            return ("exit", READ, "exit", None, None)
        return _call_site(stack, ins, kw_names)
    if op == "WITH_EXCEPT_START":
        return ("exit", READ, "exit", None, None)
    operator = _operator(ins)
    if operator is not None:
        # C code of a container's (``+``, ``==``, ``+=``) reads it through, or changes it
        return ("op", WRITE if operator[1] else READ, operator[0], stack.peek(2), stack.peek(1))
    if op in ("UNPACK_SEQUENCE", "UNPACK_EX", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE",
              "DICT_MERGE"):
        return ("unpack", READ, op, stack.peek(1), None)  # C code iterates it
    if op in _FORMATS:  # (3.10-3.12's FORMAT_VALUE has a format spec above it with flag 4)
        spec = op == "FORMAT_WITH_SPEC" or (op == "FORMAT_VALUE" and (ins.arg or 0) & 4)
        return ("op", READ, "format", stack.peek(2 if spec else 1), _A_STRING)
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
        return ("iter", READ, "iter", stack.peek(1), None)
    if op == "FOR_ITER":
        return ("next", READ, "next", None, None)
    if op in ("BEFORE_WITH", "SETUP_WITH"):
        return ("with", READ, "with", stack.peek(1), None)
    if op in ("LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL"):
        return ("global", READ if op == "LOAD_GLOBAL" else WRITE, ins.argval, None, None)
    if op in ("LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF"):
        return ("cell", READ if op == "LOAD_DEREF" else WRITE, ins.argval, None, None)
    if op in _TRUTH_TESTS or op in _UNARY or op == "GET_LEN":
        # C code asks its operand for its truth, size or negation (SCHED-58); a truth value
        # or a string made here answers without touching anything (RACE-15)
        operand = stack.peek(1)
        return None if operand in _MADE_PLAIN else ("operand", READ, op, operand, None)
    if op in _NO_ACCESS or (op in _INTRINSICS and ins.argrepr in _NO_ACCESS_INTRINSICS):
        return None
    return ("opaque", WRITE, op, None, None)  # not understood: depends on everything (SCHED-58)


# The instructions that test their operand's truth (its ``__bool__`` or ``__len__``): from
# 3.13 only TO_BOOL (a jump or ``not`` after it takes a bool), before it the conditional
# jumps and ``not``.
_TRUTH_TESTS = frozenset({"TO_BOOL"} if sys.version_info >= (3, 13) else {
    "POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP",
    "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_FALSE", "UNARY_NOT"})
_UNARY = frozenset({"UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_INVERT"})
# The instructions known to touch nothing another thread shares, whatever they are given
# (or whose access another instruction's site names: a call's, a loop's): the stack, the
# frame's locals and constants, jumps (but truth tests), building a new value from the
# stack, making a function, exceptions and blocks, a generator's own yield.  Every other
# instruction that ``_site_of`` does not name is opaque (SCHED-58): an import, a class
# body's names, pattern matching, ``yield from`` and ``await``, an unknown intrinsic, and
# any instruction a later Python adds.
_NO_ACCESS = frozenset({
    "CACHE", "NOP", "RESUME", "EXTENDED_ARG", "PRECALL", "KW_NAMES", "POP_TOP", "PUSH_NULL",
    "COPY", "SWAP", "DUP_TOP", "DUP_TOP_TWO", "ROT_TWO", "ROT_THREE", "ROT_FOUR", "ROT_N",
    "LOAD_CONST", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_FAST_LOAD_FAST",
    "STORE_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_MAYBE_NULL",
    "DELETE_FAST", "LOAD_CLOSURE", "MAKE_CELL", "COPY_FREE_VARS", "LOAD_ASSERTION_ERROR",
    "RETURN_CONST", "RETURN_VALUE", "RETURN_GENERATOR", "GEN_START", "YIELD_VALUE",
    "JUMP", "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_ABSOLUTE", "JUMP_NO_INTERRUPT",
    "JUMP_BACKWARD_NO_INTERRUPT", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NONE",
    "POP_JUMP_BACKWARD_IF_NOT_NONE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "UNARY_NOT",
    "IS_OP", "END_FOR", "END_SEND", "EXIT_INIT_CHECK",
    "BUILD_LIST", "BUILD_TUPLE", "BUILD_SET", "BUILD_MAP", "BUILD_CONST_KEY_MAP",
    "BUILD_STRING", "BUILD_SLICE", "LIST_APPEND", "SET_ADD", "MAP_ADD", "LIST_TO_TUPLE",
    "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE", "LOAD_BUILD_CLASS", "MATCH_MAPPING",
    "MATCH_SEQUENCE",
    "POP_BLOCK", "POP_EXCEPT", "PUSH_EXC_INFO", "SETUP_FINALLY", "SETUP_CLEANUP",
    "RAISE_VARARGS", "RERAISE", "CHECK_EXC_MATCH", "CHECK_EG_MATCH", "JUMP_IF_NOT_EXC_MATCH",
    "PREP_RERAISE_STAR", "CLEANUP_THROW",
})
_INTRINSICS = frozenset({"CALL_INTRINSIC_1", "CALL_INTRINSIC_2"})
_NO_ACCESS_INTRINSICS = frozenset({
    "INTRINSIC_LIST_TO_TUPLE", "INTRINSIC_STOPITERATION_ERROR", "INTRINSIC_UNARY_POSITIVE",
    "INTRINSIC_ASYNC_GEN_WRAP", "INTRINSIC_PREP_RERAISE_STAR"})


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


_LIBRARY_ROOTS = tuple(
    os.path.realpath(p) + os.sep
    for p in {
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["platstdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # coordkit itself
    }
)
_user_code_cache = CodeCache()  # id(code) -> is_user_code(code)


def is_user_code(code: Any) -> bool:
    """True for code the user wrote (not the stdlib, installed packages or coordkit)."""
    known: bool | None = _user_code_cache.get(id(code))
    if known is None:
        fn = code.co_filename
        # "<string>" and friends are generated code (dataclass methods, namedtuples).
        known = _user_code_cache.put(
            code, not fn.startswith("<") and not os.path.realpath(fn).startswith(_LIBRARY_ROOTS))
    return known


_sites_cache = CodeCache()
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def _jump_sources(code: Any) -> dict[int, list[int]]:
    """Jump target -> the offsets of the jumps to it (an exception handler has none)."""
    out: dict[int, list[int]] = {}
    for ins in dis.get_instructions(code):
        if ins.opcode in _JUMPS and isinstance(ins.argval, int):
            out.setdefault(ins.argval, []).append(ins.offset)
    return out


def _jumped(stack: _Stack, ins: dis.Instruction) -> list[Any]:
    """The stack a jump leaves at its target."""
    items = list(stack.items)
    effect = dis.stack_effect(ins.opcode, ins.arg, jump=True)
    if effect < 0:
        del items[len(items) + effect:]
    return items + [_UNKNOWN] * max(effect, 0)


def _merge(stack: _Stack, falls: bool, jumped: list[list[Any]], sources: list[int] | None,
           target: int) -> None:
    """The stack at a jump target: what every way in leaves there.  Known only when every
    jump to it comes from before it (a loop's back edge, an exception handler: unknown);
    a slot the ways in fill differently holds either."""
    if not sources or any(source >= target for source in sources) or len(jumped) != len(sources):
        stack.forget()
        return
    ways = ([stack.items] if falls else []) + jumped
    if len({len(w) for w in ways}) != 1:
        stack.forget()
        return
    merged = []
    for slot in zip(*ways):
        first = slot[0]
        if all(e == first for e in slot):
            merged.append(first)
        elif all(e is not _UNKNOWN for e in slot):
            merged.append(("either", *dict.fromkeys(slot)))
        else:
            merged.append(_UNKNOWN)
    stack.items = merged


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
    kw_names: tuple[str, ...] = ()  # 3.11-3.12's KW_NAMES, for the call after it
    previous: list[dis.Instruction] = []
    get_iter = None  # the last GET_ITER: the iterable of the FOR_ITER after it
    sources = _jump_sources(code)
    incoming: dict[int, list[list[Any]]] = {}  # target -> stacks of the jumps seen to it
    falls = True
    for offset, head, ins in seen_instructions(code):
        if head.is_jump_target or ins.is_jump_target:
            # reached from elsewhere too: what it holds is what every way in holds
            _merge(stack, falls, incoming.pop(head.offset, []), sources.get(head.offset),
                   head.offset)
        line = _line(ins, _line(head, line))
        found = _site_of(stack, ins, kw_names, previous)
        if ins.opname == "GET_ITER":
            get_iter = offset
        elif ins.opname == "FOR_ITER":
            # a comprehension's own code loops over its argument ``.0``
            found = ("next", READ, "next", ("fast", ".0") if get_iter is None else
                     ("iterated", get_iter), None)
            get_iter = None
        if found is not None:
            kind, access, name, owner, key = found
            if kind in ("method", "iter") or ins.opname == "LOAD_GLOBAL":
                key = offset  # where the call or the loop finds what this names
            elif kind == "call":
                key = (*(key or (None, None)), offset)
            known[offset] = Site(kind, access, name, owner, key, line,
                                 site_key(qualname, line, kind, access, name))
        kw_names = code.co_consts[ins.arg] if ins.opname == "KW_NAMES" else (
            kw_names if ins.opname in ("PRECALL", "CACHE") else ())
        if ins.opcode in _JUMPS and isinstance(ins.argval, int) and ins.argval > offset:
            incoming.setdefault(ins.argval, []).append(_jumped(stack, ins))
        _step(stack, ins, offset)
        if ins.opname == "FOR_ITER" and stack.items:
            stack.items[-1] = ("element", found[3])  # the loop's next element
        previous = [*previous[-5:], ins]
        falls = not (ins.opname.startswith(("JUMP", "RETURN", "RAISE", "RERAISE"))
                     and "IF" not in ins.opname)
        if not falls:
            stack.forget()  # nothing falls through
    return _sites_cache.put(code, known)


# -- evaluating operands in a frame ---------------------------------------------

def _attribute(obj: Any, name: str) -> Any:
    """``obj.name`` without running user code (no properties, no ``__getattr__``), or
    ``_MISSING`` when that cannot be done."""
    if isinstance(obj, type):
        return _looked_up(obj, name)
    descriptor = _looked_up(type(obj), name)
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


_looked_up_cache: dict[tuple[type, str], Any] = {}
_unchanging_cache: dict[type, bool] = {}
_OWN_PREFIX = __name__.rsplit(".", 2)[0] + "."  # coordkit's own modules


def _looked_up(kind: type, name: str) -> Any:
    """``name`` as the first class of ``kind``'s MRO that has it holds it, or ``_MISSING``;
    remembered for a class that cannot change (``_unchanging``)."""
    key = (kind, name)
    found = _looked_up_cache.get(key, _NOT_KNOWN)
    if found is not _NOT_KNOWN:
        return found
    found = _MISSING
    for klass in kind.__mro__:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            break
    if _unchanging(kind):
        _looked_up_cache[key] = found
    return found


_NOT_KNOWN = object()


def _unchanging(kind: type) -> bool:
    """Every class of ``kind``'s MRO is one no program changes: a builtin's (static or
    immutable) or coordkit's own (its shims, which no patch replaces)."""
    known = _unchanging_cache.get(kind)
    if known is None:
        known = all(not klass.__flags__ & _HEAPTYPE or klass.__flags__ & _IMMUTABLETYPE
                    or klass.__module__.startswith(_OWN_PREFIX) for klass in kind.__mro__)
        _unchanging_cache[kind] = known
    return known


class Frame:
    """A frame whose locals are read at most once per access (reading them costs a copy
    before Python 3.13)."""

    __slots__ = ("_locals", "frame", "results")

    def __init__(self, frame: Any, results: dict[Any, Any] | None = None) -> None:
        self.frame = frame
        self._locals: Any = None
        self.results = {} if results is None else results  # (``Pending.loaded``)

    def value(self, expr: Any) -> Any:
        """The value of a symbolic expression now, or ``_MISSING``."""
        if expr is None:
            return _MISSING
        tag = expr[0]
        if tag == "fast" or tag == "cell":
            if self._locals is None:
                self._locals = self.frame.f_locals
            try:
                return self._locals[expr[1]]
            except KeyError:
                return _MISSING
        if tag == "const":
            return expr[1]
        if tag == "global":
            value = self.frame.f_globals.get(expr[1], _MISSING)
            return self.frame.f_builtins.get(expr[1], _MISSING) if value is _MISSING else value
        if tag == "item":
            return _item(self.value(expr[1]), self.value(expr[2]))
        if tag in ("attr", "method"):
            owner = self.value(expr[1])
            return _MISSING if owner is _MISSING else _attribute(owner, expr[2])
        if tag == "op":  # what an operator made of two plain values is a plain value
            plain = all(type(v) in _PLAIN or v is _SOME_PLAIN for v in map(self.value, expr[1:]))
            return _SOME_PLAIN if plain else _MISSING
        if tag == "str" or tag == "bool":
            return _SOME_PLAIN
        if tag == "fresh":
            return _FRESH
        if tag == "build":
            values = tuple(map(self.value, expr[1:]))
            return _MISSING if any(v is _MISSING for v in values) else values  # (new)
        if tag == "result":
            made = self.results.get((id(self.frame), ("value", expr[1])), _MISSING)
            return made if made is _SOME_PLAIN or made is _FRESH else _MISSING
        return _MISSING  # a with's exit: not a value of the frame


# Values an operator on plain values makes (not ``tuple``: it may hold containers).
_PLAIN = frozenset({int, float, complex, str, bytes, bool, type(None)})


class _SomePlain:
    """A plain value (``_PLAIN``) the analysis has not computed: C code reaches nothing
    through it; it names no key."""

    __slots__ = ()


_SOME_PLAIN = _SomePlain()
_FRESH = _SomePlain()  # a container made here (a comprehension's): nobody else holds it


def _item(owner: Any, key: Any) -> Any:
    """``owner[key]`` for a builtin dict, list or tuple and a plain key (no user code
    runs), or ``_MISSING``."""
    kind = type(owner)
    if kind is dict and type(key) in (str, int, bytes, bool, float, type(None)):
        return owner.get(key, _MISSING)
    if kind in (list, tuple) and type(key) is int and -len(owner) <= key < len(owner):
        return owner[key]
    return _MISSING


def _hashable(key: Any) -> Any:
    if type(key) in (str, int, bytes, float, bool, tuple, type(None), frozenset):
        try:
            hash(key)
        except TypeError:
            return ANY
        return key
    return ANY  # a user key's __hash__ or __eq__ is user code: do not call it


UNNAMED = None  # what ``locations`` gives for an access it cannot name (SCHED-42)


class Pending:
    """What one run's tracer carries from an instruction to a later one of the same
    frame: the object a method was loaded from (for its call, SCHED-41), what a loop
    iterates (for each ``FOR_ITER``, SCHED-41) and what iterating a call's result would
    read, and the context managers a frame is inside (for their ``__exit__``)."""

    __slots__ = ("entered", "guessed", "loaded")

    def __init__(self) -> None:
        self.loaded: dict[tuple[int, Any], Any] = {}
        self.entered: dict[int, list[Any]] = {}
        # What a call of C code the table does not know was given (its receiver and
        # arguments that can be shared): each counts as written, for race detection only
        # (RACE-11); set by the call that ``locations`` found ``UNNAMED``.
        self.guessed: list[Location] = []


Location = tuple[Any, Any, Any, str]  # (owner, field, owner object, READ or WRITE)


def locations(site: Site, frame: Frame, pending: Pending) -> list[Location] | None:
    """The locations ``site`` touches in ``frame`` now, each ``(owner, field,
    owner_object, access)``: ``owner`` is a hashable identity (an ``id``, or a tuple for
    globals and cells), ``owner_object`` is kept alive by the caller so that the ``id``
    is not reused while the run lasts.  Empty when it touches nothing shared, or only
    through code that is traced or modelled; ``UNNAMED`` when what it touches cannot be
    named (an operand the analysis lost, code the tracer does not see: SCHED-42)."""
    kind = site.kind
    if kind == "global":
        f = frame.frame
        g, name = f.f_globals, site.name
        if site.key is not None:  # a load: what it loaded, for a call of it (SCHED-41)
            value = g.get(name, _MISSING)
            pending.loaded[id(f), site.key] = (f.f_builtins.get(name, _MISSING)
                                               if value is _MISSING else value)
        return [(id(g), name, g, site.access)]
    if kind == "cell":
        return [(("cell", frame.frame.f_code.co_filename), site.name, None, site.access)]
    owner = site.owner
    if isinstance(owner, tuple) and owner[0] == _EITHER and kind != "with":
        ways = [locations(site._replace(owner=way), frame, pending) for way in owner[1:]]
        return UNNAMED if any(w is UNNAMED for w in ways) else [x for w in ways for x in w]
    if kind in _RUNTIME:
        out: list[Location] = []
        return out if _RUNTIME[kind](site, frame, pending, out) else UNNAMED
    owner = frame.value(site.owner)
    if owner is _MISSING:
        return UNNAMED
    out = []
    if kind == "attr":
        _attr(owner, site.name, site.access, out)
        return out
    key: Any = ANY
    if site.key is not ANY:
        key = frame.value(site.key)
        key = ANY if key is _MISSING else _hashable(key)
    return out if _item_of(owner, key, site.access, out) else UNNAMED


# The kinds of site that may leave something for a later instruction of their frame
# (see ``Pending``): a global's load does when a call may call what it loaded.
CARRIES = frozenset({"call", "exit", "with", "method", "iter", "global"})


def carry(site: Site, frame: Frame, pending: Pending) -> None:
    """What ``site`` leaves in ``pending`` for a later instruction of its frame, as
    ``locations`` leaves it, without naming what it touches: for a step whose footprint
    is known already (a search's replayed prefix, SCHED-68), where a later step of the
    frame may be new and still needs it."""
    kind = site.kind
    if kind == "global":
        if site.key is not None:
            pending.loaded[_frame_key(frame, site.key)] = frame.value(("global", site.name))
        return
    if kind not in CARRIES:
        return
    if kind == "call" and site.key[2] not in _results_read(frame.frame.f_code):
        return  # (no site reads its result: a stale entry under its key is never read)
    owner = site.owner
    if isinstance(owner, tuple) and owner[0] == _EITHER and kind != "with":
        for way in owner[1:]:
            _RUNTIME[kind](site._replace(owner=way), frame, pending, None)
        return
    _RUNTIME[kind](site, frame, pending, None)


def carries_nothing(site: Site, code: Any) -> bool:
    """``carry`` leaves nothing in ``pending`` for ``site`` in any frame of ``code``."""
    kind = site.kind
    if kind == "global":
        return site.key is None
    if kind not in CARRIES:
        return True
    return kind == "call" and site.key[2] not in _results_read(code)


_results_cache = CodeCache()  # id(code) -> _results_read(code)


def _results_read(code: Any) -> frozenset[int]:
    """The offsets of ``code``'s calls whose result a site of ``code`` reads (names an
    ``("result", offset)``): what ``carry`` must leave for a call."""
    known: frozenset[int] | None = _results_cache.get(id(code))
    if known is None:
        found: set[int] = set()
        for site in access_sites(code).values():
            _find_results((site.owner, site.key), found)
        known = _results_cache.put(code, frozenset(found))
    return known


def _find_results(expr: Any, found: set[int]) -> None:
    if type(expr) is tuple:
        if len(expr) == 2 and expr[0] == "result" and type(expr[1]) is int:
            found.add(expr[1])
        for part in expr:
            _find_results(part, found)


def call_locations(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Location] | None:
    """What ``fn(*args, **kwargs)`` touches that the tracer does not see, as ``locations``
    gives it: for a call the library makes, from its own untraced code, of a callable the
    program gave it (a thread's target, a Timer's function: SCHED-59).  The user's code
    is traced and the library's modelled (nothing here), a C function or method the
    tracer knows is named (SCHED-43), anything else is ``UNNAMED`` (SCHED-42)."""
    out: list[Location] = []
    return out if _calls(fn, _NOBIND, tuple(args), tuple(kwargs.values()), out) else UNNAMED


def _attr(owner: Any, name: Any, access: str, out: list[Location]) -> None:
    """Attribute ``name`` of ``owner``: one location whichever way it is reached
    (``obj.a``, ``setattr(obj, "a", v)``, ``vars(obj)["a"]``: the object's ``__dict__``
    names it when it has one; a module's attribute is its global); none on what cannot
    be shared (immutable values, a thread-local's attributes)."""
    if type(owner) in _IMMUTABLE or isinstance(owner, _THREAD_LOCALS):
        return
    try:
        namespace = object.__getattribute__(owner, "__dict__")
    except AttributeError:
        namespace = None
    if type(namespace) is dict:
        keep = namespace if type(owner) is types.ModuleType else owner
        out.append((id(namespace), name, keep, access))
        if access == WRITE or name in namespace or type(owner) is types.ModuleType:
            return
    else:
        out.append((id(owner), name, owner, access))
        if access == WRITE:
            return
    # A read that its object does not answer is answered by its class (or a base): it
    # reads the class's attribute too, which a write to the class changes.
    for klass in (owner.__mro__[1:] if isinstance(owner, type) else type(owner).__mro__):
        if klass is object or klass in _ATOMS or klass in _CONTAINER_TYPES:
            break
        out.append((id(klass), name, klass, READ))
        if name in klass.__dict__:
            break


def _item_of(owner: Any, key: Any, access: str, out: list[Location]) -> bool:
    """Item ``key`` (or ``ANY``: all) of ``owner``, touched by C code; False when that
    code is not known to touch only it."""
    kind = _kind_of_type(type(owner))
    if kind == "container":
        out.append((id(owner), key, owner, access))
        return True
    return kind != "foreign"  # immutable, or the user's own (traced) methods


# -- what C code does to an object ----------------------------------------------

_ATOMS = frozenset({int, float, complex, str, bytes, bool, type(None), range, slice,
                    type(Ellipsis), type(NotImplemented), tuple, frozenset})
# Objects C code reaches only by identity (a function's repr, a module passed along).
_OPAQUE = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType,
           types.CodeType, type, property, staticmethod, classmethod, types.MethodWrapperType,
           types.MethodDescriptorType, types.WrapperDescriptorType, weakref.ref)
_HEAPTYPE, _IMMUTABLETYPE = 1 << 9, 1 << 8
_type_kinds: dict[type, str] = {}


def _kind_of_type(kind: type) -> str:
    """How C code reaches into an object of type ``kind`` (its repr, comparisons, items):
    ``"atom"`` (immutable, or by identity only), ``"container"`` (a builtin container's
    C code reads and writes it, as one location), ``"user"`` (only through methods of
    the user's code or the modelled library: traced, or modelled) or ``"foreign"``
    (through code the tracer does not see)."""
    known = _type_kinds.get(kind)
    if known is None:
        known = _type_kind(kind)
        _type_kinds[kind] = known
    return known


def _type_kind(kind: type) -> str:
    if kind in _ATOMS or issubclass(kind, _OPAQUE):
        return "atom"
    known = "user"
    for klass in kind.__mro__:
        if klass is object or klass in _ATOMS:
            continue
        if klass in _CONTAINER_TYPES:
            known = "container"
            continue
        flags = klass.__flags__
        if not flags & _HEAPTYPE or flags & _IMMUTABLETYPE:
            return "foreign"  # a class written in C, which the tracer does not know
        for value in vars(klass).values():
            code = getattr(getattr(value, "__func__", value), "__code__", None)
            if code is not None and _code_kind(code) == "foreign":
                return "foreign"
    return known


# Code the runtime models: its shared effects are the synchronisation operations it
# makes (scheduling points with footprints, SCHED-30), not memory the user shares.
_MODELLED_FILES = tuple(
    os.path.realpath(path) for path in (
        threading.__file__, queue.__file__, _threading_local.__file__,
        os.path.dirname(concurrent.futures.__file__) + os.sep,
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep))
_kinds_cache = CodeCache()


def _code_kind(code: Any) -> str:
    """``"user"`` (traced), ``"modelled"`` (the synchronisation library and coordkit) or
    ``"foreign"`` (run untraced, touching what it likes)."""
    known: str | None = _kinds_cache.get(id(code))
    if known is None:
        if is_user_code(code):
            known = "user"
        elif os.path.realpath(code.co_filename).startswith(_MODELLED_FILES):
            known = "modelled"
        else:
            known = "foreign"
        _kinds_cache.put(code, known)
    return known


def _read(value: Any, out: list[Location], seen: set[int]) -> bool:
    """C code reads ``value`` through and through (its repr, a comparison, a copy): every
    container it holds; False when that cannot be named.  A callable is called (as
    ``map`` calls its function) on values read here already."""
    if value is _MISSING or len(seen) > _READ_AT_MOST:
        return False
    if value is _SOME_PLAIN:
        return True
    if value is _FRESH:
        return False  # a new container: what it holds is not known
    kind = type(value)
    if kind in _ATOMS and kind not in (tuple, frozenset):
        return True
    if id(value) in seen:
        return True
    seen.add(id(value))
    if callable(value) and not isinstance(value, CONTAINERS):
        return _calls(value, _NOBIND, (), (), out)
    what = _kind_of_type(kind)
    if what == "atom" or what == "user":
        return True  # by identity, or through the user's (traced) methods
    if what == "container":
        out.append((id(value), ANY, value, READ))
        if len(value) > _READ_AT_MOST:
            return False
        inner = [*value.keys(), *value.values()] if isinstance(value, dict) else value
    elif kind in (tuple, frozenset):
        inner = value
    elif kind in _ITERATORS or isinstance(value, types.GeneratorType):
        return _iterates(value, out, seen)
    else:
        return False
    return all(_read(v, out, seen) for v in inner)


_READ_AT_MOST = 256  # values one access reads through, beyond which it is unnamed


def _read_all(pos: tuple[Any, ...] | None, kw: tuple[Any, ...] | None,
              out: list[Location]) -> bool:
    if pos is None or kw is None:
        return False
    seen: set[int] = set()
    return all(_read(v, out, seen) for v in (*pos, *kw))


def _iterates(value: Any, out: list[Location], seen: set[int] | None = None) -> bool:
    """One step of iterating ``value`` (a loop's next element, ``next(it)``): it reads the
    container it goes over and moves the iterator on; a generator or an iterator of the
    user's code runs traced code."""
    seen = set() if seen is None else seen
    kind = type(value)
    what = _kind_of_type(kind)
    if isinstance(value, types.GeneratorType):
        # advancing a generator changes its state: two threads doing it race (RACE-10)
        out.append((id(value), "next", value, WRITE))
        return _code_kind(value.gi_code) != "foreign"
    if what == "container":
        out.append((id(value), ANY, value, READ))
        return True
    if kind in _ITERATORS:
        out.append((id(value), "next", value, WRITE))
        return all(_read(r, out, seen) if callable(r) else _iterates(r, out, seen)
                   for r in _inner(value))
    if what == "atom":
        return True
    return what == "user" and "__next__" in dir(kind)


def _inner(iterator: Any) -> Iterator[Any]:
    """What a builtin iterator goes over (its container, its inner iterators) and the
    function it calls; not the values it last gave (a ``zip``'s or ``items``'s result
    tuple)."""
    for r in gc.get_referents(iterator):
        if type(r) is tuple:
            yield from (x for x in r if type(x) in _ITERATORS or isinstance(x, CONTAINERS))
        else:
            yield r


def _iterator_types() -> frozenset[type]:
    """The builtin iterators, views and lazy wrappers, whose state ``gc.get_referents``
    shows (the container, the function, the inner iterators)."""
    d: dict[Any, Any] = {}
    samples: list[Any] = [
        iter([]), reversed([]), iter(()), iter(d), iter(d.values()), iter(d.items()),
        reversed(d), d.keys(), d.values(), d.items(), iter(set()), iter(deque()),
        reversed(deque()), iter(bytearray()), iter(""), iter(b""), iter(range(0)),
        map(len, ()), filter(None, ()), zip(), enumerate(()), iter(len, 0)]
    samples += [itertools.chain(), itertools.islice((), 0), itertools.count(),
                itertools.cycle(()), itertools.repeat(0), itertools.starmap(len, ()),
                itertools.takewhile(len, ()), itertools.dropwhile(len, ()),
                itertools.accumulate(()), itertools.compress((), ()),
                itertools.zip_longest(), itertools.product(), itertools.permutations(()),
                itertools.combinations((), 0), itertools.groupby(()), itertools.filterfalse(len, ())]
    return frozenset(type(s) for s in samples)


_ITERATORS = _iterator_types()


# -- calls: what code a call runs, and what it touches in C ----------------------

_NOBIND = object()  # a call with no ``self`` bound to it
# Methods of the containers that only store their arguments (no reading of them).
_STORES_ONLY = frozenset({"append", "appendleft", "insert", "add", "setdefault", "__setitem__",
                          "get", "pop", "discard", "__delitem__", "__getitem__", "__contains__"})
# Methods that compare their container's elements with something: they read them through.
_COMPARES = frozenset({"index", "count", "remove", "__contains__", "sort", "__eq__", "__ne__",
                       "__lt__", "__le__", "__gt__", "__ge__", "__repr__", "__str__", "copy"})
# What a C function of a module does with its arguments, by (module, name):
# "pure" reads nothing shared, "len" reads its argument's size, "read" reads its
# arguments through; the others are named by what they touch.
_FUNCTIONS: dict[tuple[str, str], str] = {
    **{("builtins", n): "pure" for n in (
        "id", "isinstance", "issubclass", "callable", "vars", "locals", "globals", "iter",
        "hash", "chr", "ord", "abs", "round", "divmod", "pow", "bin", "oct", "hex")},
    **{("builtins", n): "read" for n in (
        "print", "repr", "ascii", "format", "sorted", "sum", "min", "max", "any", "all",
        "dir")},
    ("builtins", "len"): "len", ("builtins", "next"): "next",
    ("builtins", "setattr"): "setattr", ("builtins", "delattr"): "setattr",
    ("builtins", "getattr"): "getattr", ("builtins", "hasattr"): "getattr",
    **{("_operator", n): "read" for n in (
        "add", "sub", "mul", "truediv", "floordiv", "mod", "neg", "pos", "abs", "eq", "ne",
        "lt", "le", "gt", "ge", "not_", "truth", "is_", "is_not", "and_", "or_", "xor",
        "concat", "index", "invert", "lshift", "rshift", "matmul", "pow", "contains",
        "countOf", "indexOf", "length_hint")},
    **{("_operator", n): "inplace" for n in (
        "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "iand", "ior", "ixor",
        "iconcat", "ilshift", "irshift", "imatmul", "ipow")},
    ("_operator", "setitem"): "setitem", ("_operator", "delitem"): "setitem",
    ("_operator", "getitem"): "getitem",
    ("_functools", "reduce"): "read",
    # heapq's and bisect's C functions: the list they are given first (RACE-10)
    **{("_heapq", n): "inplace" for n in (
        "heappush", "heappop", "heapify", "heapreplace", "heappushpop", "heappush_max",
        "heappop_max", "heapify_max", "heapreplace_max", "heappushpop_max", "_heappop_max",
        "_heapify_max", "_heapreplace_max")},
    **{("_bisect", n): "inplace" for n in ("insort", "insort_left", "insort_right")},
    **{("_bisect", n): "read" for n in ("bisect", "bisect_left", "bisect_right")},
    # stdlib functions written in Python that only read what they are given
    **{(m, n): "read" for m, n in (
        ("copy", "copy"), ("copy", "deepcopy"), ("json", "dumps"), ("pprint", "pformat"),
        ("heapq", "nlargest"), ("heapq", "nsmallest"), ("statistics", "mean"),
        ("statistics", "median"))},
    **{("math", n): "read" for n in ("floor", "ceil", "sqrt", "fsum", "prod", "isclose",
                                     "gcd", "lcm", "log", "exp", "fabs", "trunc")},
}
# Classes whose construction only reads its arguments through (or not at all: the lazy
# ones, whose iteration reads, SCHED-41).
_LAZY = frozenset({map, filter, zip, enumerate, reversed, range, slice, object, property,
                   staticmethod, classmethod, super, functools.partial})
_RESULTS_ITERATE = frozenset({"items", "keys", "values"})  # a view of their container


def _bind(owner: Any, name: str) -> tuple[Any, Any]:
    """``(function, self)`` that ``owner.name(...)`` calls, without running user code;
    ``(_MISSING, _)`` when that cannot be told (a property, a ``__getattr__``)."""
    raw = _looked_up(type(owner), name)
    if type(raw) is types.FunctionType and not isinstance(owner, (type, types.ModuleType)):
        try:  # a method its object's own attributes do not hide (the common case)
            own = object.__getattribute__(owner, "__dict__")
        except AttributeError:
            own = None
        if type(own) is not dict or name not in own:
            return raw, owner
    if isinstance(owner, types.ModuleType):
        return owner.__dict__.get(name, _MISSING), _NOBIND
    raw = _attribute(owner, name)
    if isinstance(owner, type):
        if isinstance(raw, classmethod):
            return raw.__func__, owner
        return getattr(raw, "__func__", raw) if isinstance(raw, staticmethod) else raw, _NOBIND
    try:
        own = object.__getattribute__(owner, "__dict__")
    except AttributeError:
        own = None
    if type(own) is dict and name in own:
        return own[name], _NOBIND
    if isinstance(raw, staticmethod):
        return raw.__func__, _NOBIND
    if isinstance(raw, classmethod):
        return raw.__func__, type(owner)
    if isinstance(raw, (types.FunctionType, types.MethodDescriptorType,
                        types.WrapperDescriptorType)):
        return raw, owner
    return raw, _NOBIND


def _calls(fn: Any, bound: Any, pos: tuple[Any, ...] | None, kw: tuple[Any, ...] | None,
           out: list[Location]) -> bool:
    """What calling ``fn`` (with ``bound`` as its self) on ``pos`` and ``kw`` touches that
    the tracer does not see: the user's functions are traced, the modelled library's
    effects are its synchronisation operations, C functions and methods the tracer
    knows are named here (SCHED-43); False for any other code (SCHED-42)."""
    kind = type(fn)
    if kind is types.MethodType:
        return _calls(fn.__func__, fn.__self__, pos, kw, out)
    if kind is types.FunctionType:
        if _code_kind(fn.__code__) != "foreign":
            return True
        return (fn.__module__, fn.__name__) in _FUNCTIONS and _c_function(
            fn.__module__, fn.__name__, pos, kw, out)
    if kind is types.CodeType:  # a function made where it is called (a comprehension's)
        return _code_kind(fn) != "foreign"
    if isinstance(fn, functools.partial):
        return _calls(fn.func, _NOBIND, None if pos is None else (*fn.args, *pos),
                      (*kw, *fn.keywords.values()) if kw is not None else None, out)
    if kind is types.BuiltinFunctionType:
        owner = fn.__self__
        if owner is None or isinstance(owner, types.ModuleType):
            return _c_function(getattr(owner, "__name__", "builtins"), fn.__name__, pos, kw, out)
        return _c_method(owner, fn.__name__, pos, kw, out)
    if kind in (types.MethodDescriptorType, types.WrapperDescriptorType):
        if bound is _NOBIND:
            if not pos:
                return False
            bound, pos = pos[0], pos[1:]
        return _c_method(bound, fn.__name__, pos, kw, out)
    if kind is types.MethodWrapperType:
        return _c_method(fn.__self__, fn.__name__, pos, kw, out)
    if isinstance(fn, type):
        return _constructs(fn, pos, kw, out)
    call = _attribute(kind, "__call__")
    return type(call) is types.FunctionType and _code_kind(call.__code__) != "foreign"


def _c_function(module: str, name: str, pos: tuple[Any, ...] | None,
                kw: tuple[Any, ...] | None, out: list[Location]) -> bool:
    what = _FUNCTIONS.get((module, name))
    if what == "pure":
        return True
    if what == "read":
        return _read_all(pos, kw, out)
    if what is None or not pos:
        return False
    target = pos[0]
    if what == "len":
        return _item_of(target, ANY, READ, out)
    if what == "next":
        return _iterates(target, out)
    if what in ("setattr", "getattr"):
        if len(pos) < 2 or type(pos[1]) is not str or target is _MISSING:
            return False
        _attr(target, pos[1], WRITE if what == "setattr" else READ, out)
        return True
    if what in ("setitem", "getitem"):
        key = _hashable(pos[1]) if len(pos) > 1 and pos[1] is not _MISSING else ANY
        return target is not _MISSING and _item_of(
            target, key, WRITE if what == "setitem" else READ, out)
    # "inplace": the left operand is changed in place when it is a container
    return (target is not _MISSING and _item_of(target, ANY, WRITE, out)
            and _read_all(pos[1:], kw, out))


_GENERATOR_STEPS = frozenset({"send", "throw", "close", "__next__"})


def _c_method(owner: Any, name: str, pos: tuple[Any, ...] | None, kw: tuple[Any, ...] | None,
              out: list[Location]) -> bool:
    """A method written in C of ``owner``: a container's, named by what it does to the
    container (one key, or all of it) and to its arguments; an attribute's ``__setattr__``;
    a method of an immutable value reads its arguments; one of a user's object reaches
    it by identity."""
    if owner is _MISSING:
        return False
    if isinstance(owner, types.GeneratorType) and name in _GENERATOR_STEPS:
        return _iterates(owner, out)
    if name in ("__setattr__", "__delattr__", "__getattribute__"):
        if not pos or type(pos[0]) is not str:
            return False
        _attr(owner, pos[0], READ if name == "__getattribute__" else WRITE, out)
        return True
    what = _kind_of_type(type(owner))
    if what == "container":
        access = WRITE if name in _MUTATORS else READ
        key = ANY
        if name in _KEYED_METHODS and pos and pos[0] is not _MISSING:
            key = _hashable(pos[0])
        if name in _COMPARES and not _read(owner, out, set()):
            return False
        out.append((id(owner), key, owner, access))
        return name in _STORES_ONLY or _read_all(pos, kw, out)
    if what == "atom":
        return _read_all(pos, kw, out)
    return what == "user" and name not in ("__init__", "__new__")


def _constructs(cls: type, pos: tuple[Any, ...] | None, kw: tuple[Any, ...] | None,
                out: list[Location]) -> bool:
    """``cls(...)``: what its ``__new__`` and ``__init__`` run (a builtin container or value
    reads its arguments through, a lazy one reads when iterated)."""
    if cls in _LAZY or issubclass(cls, BaseException):
        return True
    if cls in _ATOMS or cls in _CONTAINER_TYPES:
        return _read_all(pos, kw, out)
    call = _attribute(type(cls), "__call__")
    if call is not _attribute(type, "__call__"):
        return _calls(call, cls, pos, kw, out)  # a metaclass's
    for name in ("__new__", "__init__"):
        for klass in cls.__mro__:
            if name in klass.__dict__:
                break
        if klass is object:
            continue
        impl = klass.__dict__[name]
        impl = getattr(impl, "__func__", impl)
        if type(impl) is types.FunctionType:
            if _code_kind(impl.__code__) == "foreign":
                return False
        elif klass in _ATOMS or klass in _CONTAINER_TYPES:
            if not _read_all(pos, kw, out):
                return False
        else:
            return False
    return True


def _result_iterates(fn: Any, bound: Any, pos: tuple[Any, ...] | None) -> Any:
    """What iterating the result of ``fn(*pos)`` reads, as the values to iterate (each
    read with ``_iterates``), for the calls whose result a loop commonly goes over; None
    when it is not known."""
    if id(fn) in _FRESH:
        return ()  # nothing shared: a range or a new object
    if id(fn) in _OVER_ARGUMENTS and pos is not None:
        return tuple(v for v in pos if not callable(v) or isinstance(v, CONTAINERS))
    name = getattr(fn, "__name__", None)
    if name in _RESULTS_ITERATE and bound is not _NOBIND and _kind_of_type(type(bound)) == "container":
        return (bound,)
    return None


_FRESH = frozenset(map(id, (range, sorted, list, tuple, set, frozenset, dict, str)))
_OVER_ARGUMENTS = frozenset(map(id, (enumerate, reversed, iter, zip, map, filter)))


class _Iterates(tuple):  # type: ignore[type-arg]
    """The values a loop over a call's result reads at each step (``_result_iterates``);
    ``tuples``: each element it gives is a new tuple."""

    tuples = False


_TUPLES = frozenset(map(id, (enumerate, zip)))


# -- the accesses of each kind of site that needs more than an operand -----------

def _frame_key(frame: Frame, offset: Any) -> tuple[int, Any]:
    return id(frame.frame), offset


def _load_method(site: Site, frame: Frame, pending: Pending,
                 out: list[Location] | None) -> bool:
    """A method's load: no access; its object, for the call (SCHED-41)."""
    pending.loaded[_frame_key(frame, site.key)] = frame.value(site.owner)
    return True


def _call(site: Site, frame: Frame, pending: Pending,
          out: list[Location] | None) -> bool:
    """A call, once its arguments are evaluated: what it touches (SCHED-41, SCHED-43), or
    False when it runs code whose accesses cannot be named (SCHED-42)."""
    pos_exprs, kw_exprs, offset = site.key
    fn, bound = _callee(site.owner, frame, pending)
    pos = kw = None
    starred = bool(pos_exprs) and pos_exprs[0] == "star"  # f(*args, **kwargs): C unpacks them
    if type(fn) is types.FunctionType and not starred and _python_call(fn, bound, frame, pending,
                                                                        offset):
        return True
    if starred and out is None:
        pass
    elif starred:
        starred = all(_shallow(frame.value(e), out) for e in pos_exprs[1:])
    elif pos_exprs is not None:
        pos = tuple(_operand(e, frame, pending) for e in pos_exprs)
        kw = tuple(_operand(e, frame, pending) for e in kw_exprs)
    # What its result is, for what reads it next; written at every call, known or not
    # (the frame's id may be a dead frame's, which left its own there).
    known = fn is not _MISSING
    pending.loaded[_frame_key(frame, ("value", offset))] = _result_value(fn, pos) if known else None
    result: Any = None
    iterates = _result_iterates(fn, bound, pos) if known else None
    if iterates is not None:
        result = _Iterates(iterates)
        result.tuples = id(fn) in _TUPLES or getattr(fn, "__name__", None) == "items"
    elif isinstance(fn, type) and _modelled_class(fn):
        result = _Made(fn)
    pending.loaded[_frame_key(frame, ("result", offset))] = result
    if out is None:
        return True
    if not known or (pos_exprs and pos_exprs[0] == "star" and not starred):
        return False
    if _calls(fn, bound, pos, kw, out):
        return True
    pending.guessed = _guess(fn, bound, pos, kw)
    return False


def _python_call(fn: types.FunctionType, bound: Any, frame: Frame, pending: Pending,
                 offset: int) -> bool:
    """``_call``'s answer, without evaluating the arguments, for a function whose code is
    traced or modelled (it touches nothing here); False for any other function."""
    kind = _code_kind(fn.__code__)
    if kind == "foreign":
        return False
    key = id(frame.frame)
    plain = kind == "modelled" and _declared_plain(fn)
    pending.loaded[key, ("value", offset)] = _SOME_PLAIN if plain else None
    result = None
    name = fn.__name__
    if name in _RESULTS_ITERATE and bound is not _NOBIND and _kind_of_type(type(bound)) == "container":
        result = _Iterates((bound,))
        result.tuples = name == "items"
    pending.loaded[key, ("result", offset)] = result
    return True


_C_CALLABLES = (types.BuiltinFunctionType, types.MethodDescriptorType,
                types.WrapperDescriptorType, types.MethodWrapperType)


def _guess(fn: Any, bound: Any, pos: tuple[Any, ...] | None,
           kw: tuple[Any, ...] | None) -> list[Location]:
    """A call of C code the table does not know: a write of its receiver and of each
    argument that can be shared (a container, an object of C code's), for race detection
    (RACE-11).  Nothing for code written in Python (the stdlib's is RACE-12's)."""
    if not isinstance(fn, _C_CALLABLES):
        return []
    receiver = getattr(fn, "__self__", None) if bound is _NOBIND else bound
    out: list[Location] = []
    for value in (receiver, *(pos or ()), *(kw or ())):
        if value is _MISSING or value is None or isinstance(value, _THREAD_LOCALS):
            continue
        if _kind_of_type(type(value)) in ("container", "foreign"):
            out.append((id(value), ANY, value, WRITE))
    return out


def _callee(expr: Any, frame: Frame, pending: Pending) -> tuple[Any, Any]:
    """``(function, self)`` a call calls: a method of the object its load loaded, a global's
    value at its load, or ``_MISSING``."""
    if isinstance(expr, tuple) and expr[0] == "method":
        owner = pending.loaded.pop(_frame_key(frame, expr[3]), _MISSING)
        if owner is _MISSING:
            owner = frame.value(expr[1])
        if owner is not _MISSING:
            return _bind(owner, expr[2])
        return _method_of_result(expr[1], expr[2], frame, pending), _NOBIND
    if isinstance(expr, tuple) and expr[0] == "global" and len(expr) > 2:
        fn = pending.loaded.pop(_frame_key(frame, expr[2]), _MISSING)
        return frame.value(expr) if fn is _MISSING else fn, _NOBIND
    if isinstance(expr, tuple) and expr[0] == "attr":  # (3.10's ``obj.name(k=v)``: bound)
        owner = frame.value(expr[1])
        return (_MISSING, _NOBIND) if owner is _MISSING else _bind(owner, expr[2])
    return frame.value(expr), _NOBIND


# Builtins whose result is a plain value whatever they are given; and those that make a
# new container of their arguments' elements, plain when those are.
_PLAIN_RESULTS = frozenset(map(id, (
    len, isinstance, issubclass, id, hash, str, repr, ascii, format, ord, chr, bin, hex, oct,
    callable, bool, int, float)))
_COPIES = frozenset(map(id, (sorted, list, tuple, set, frozenset, sum, min, max)))
_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})


def _result_value(fn: Any, pos: tuple[Any, ...] | None) -> Any:
    """What a call's result is, as far as C code reading it is concerned: ``_SOME_PLAIN``,
    ``_FRESH`` (a comprehension's new container), or None (not known)."""
    if id(fn) in _PLAIN_RESULTS or _declared_plain(fn):
        return _SOME_PLAIN
    if id(fn) in _COPIES and pos is not None and all(_all_plain(v) for v in pos):
        return _SOME_PLAIN  # (a new container of plain values reads as one)
    if type(fn) is types.CodeType and fn.co_name in _COMPREHENSIONS:
        return _FRESH
    return None


_PLAIN_ANNOTATIONS = ("bool", "int", "float", "str", "None", bool, int, float, str)
_declared_cache = CodeCache()  # (the library's annotations do not change)


def _declared_plain(fn: Any) -> bool:
    """A function of the synchronisation library (coordkit's own, typed) declared to give
    a plain value (``Lock.acquire() -> bool``)."""
    if type(fn) is not types.FunctionType or _code_kind(fn.__code__) != "modelled":
        return False
    known: bool | None = _declared_cache.get(id(fn.__code__))
    if known is None:
        result = fn.__annotations__.get("return", _MISSING)
        known = _declared_cache.put(fn.__code__, any(
            result is a or (type(result) is str and result == a) for a in _PLAIN_ANNOTATIONS))
    return known


def _all_plain(value: Any, depth: int = 0) -> bool:
    """``value`` holds plain values only (a container's read elsewhere: SCHED-43)."""
    if type(value) in _PLAIN or value is _SOME_PLAIN:
        return True
    if depth > 2 or type(value) not in (list, tuple, set, frozenset, deque) or len(value) > 64:
        return False
    return all(_all_plain(v, depth + 1) for v in value)


def _operand(expr: Any, frame: Frame, pending: Pending) -> Any:
    """An argument's value: a global's is what its load loaded."""
    if isinstance(expr, tuple) and expr[0] == "global" and len(expr) > 2:
        return pending.loaded.get(_frame_key(frame, expr[2]), _MISSING)
    return frame.value(expr)


class _Made(tuple):  # type: ignore[type-arg]
    """A call's result that is a new object of a modelled class (``_modelled_class``)."""

    def __new__(cls, kind: type) -> _Made:
        return super().__new__(cls, (kind,))


def _modelled_class(kind: type) -> bool:
    """A class of the synchronisation library (``threading.Thread``, a Timer): what its
    instances' methods are is its own (its ``__init__`` sets no attribute that hides one)."""
    init = _attribute(kind, "__init__")
    code = getattr(init, "__code__", None)
    return (code is not None and _code_kind(code) == "modelled"
            and _attribute(kind, "__new__") is object.__new__)


def _method_of_result(expr: Any, name: str, frame: Frame, pending: Pending) -> Any:
    """``f(...).name``, where ``f(...)`` made an object of a modelled class: the method."""
    if not (isinstance(expr, tuple) and expr[0] == "result"):
        return _MISSING
    made = pending.loaded.pop(_frame_key(frame, expr), None)
    if type(made) is not _Made:
        return _MISSING
    raw = _attribute(made[0], name)
    return raw if type(raw) is types.FunctionType else _MISSING


def _enter(site: Site, frame: Frame, pending: Pending,
           out: list[Location] | None) -> bool:
    """``with obj:``: ``obj.__enter__()`` runs now, ``__exit__`` at the block's end."""
    expr = site.owner
    ways = expr[1:] if isinstance(expr, tuple) and expr[0] == _EITHER else (expr,)
    owners = tuple(frame.value(way) for way in ways)
    pending.entered.setdefault(id(frame.frame), []).append(owners)
    return out is None or _special(owners, "__enter__", out)


def _exit(site: Site, frame: Frame, pending: Pending,
          out: list[Location] | None) -> bool:
    entered = pending.entered.get(id(frame.frame))
    if not entered:
        return False
    owners = entered.pop()
    return out is None or _special(owners, "__exit__", out)


def _special(owners: tuple[Any, ...], name: str, out: list[Location]) -> bool:
    """What calling special method ``name`` of one of ``owners`` touches."""
    args = (None, None, None) if name == "__exit__" else ()
    return all(owner is not _MISSING and _calls(*_bind_special(owner, name), args, (), out)
               for owner in owners)


def _bind_special(owner: Any, name: str) -> tuple[Any, Any]:
    """A special method, which Python looks up on the type."""
    raw = _attribute(type(owner), name)
    if type(raw) is types.FunctionType or isinstance(raw, (types.MethodDescriptorType,
                                                            types.WrapperDescriptorType)):
        return raw, owner
    return _MISSING, _NOBIND


def _get_iter(site: Site, frame: Frame, pending: Pending,
              out: list[Location] | None) -> bool:
    """A loop's ``iter()``: no access (the loop's steps read, SCHED-41); what it goes over."""
    owner = site.owner
    if isinstance(owner, tuple) and owner[0] == "result":
        value = pending.loaded.pop(_frame_key(frame, owner), None)
        value = _MISSING if value is None or type(value) is _Made else value
    else:
        value = frame.value(owner)
    pending.loaded[_frame_key(frame, site.key)] = value
    return True


def _next(site: Site, frame: Frame, pending: Pending, out: list[Location]) -> bool:
    """A loop's step: it reads what the loop goes over (SCHED-41)."""
    owner = site.owner
    if owner[0] == "iterated":
        value = pending.loaded.get(_frame_key(frame, owner[1]), _MISSING)
    else:
        value = frame.value(owner)
    if value is _MISSING:
        return False
    if type(value) is _Iterates:
        return all(_iterates(v, out) for v in value)
    return _iterates(value, out)


def _operation(site: Site, frame: Frame, pending: Pending, out: list[Location]) -> bool:
    """An operator: a container's C code reads both operands through (``==``, ``+``, an
    f-string), an augmented one (``+=``) changes its left operand in place; a user's
    object runs its own (traced) method (SCHED-43)."""
    left, right = frame.value(site.owner), frame.value(site.key)
    if site.access == WRITE and left is not _MISSING and _kind_of_type(type(left)) == "container":
        out.append((id(left), ANY, left, WRITE))
    if site.name in _COMPARISONS or site.name == "format":
        return _read_all((left, right), (), out)
    return _shallow(left, out) and _shallow(right, out)  # (``+``, ``*`` copy references)


def _unpack(site: Site, frame: Frame, pending: Pending, out: list[Location]) -> bool:
    """``a, b = seq``, ``[*seq]``, ``{**d}``: C code iterates ``seq`` (its own items, not
    theirs).  A loop's element is known to be a tuple when the loop goes over
    ``enumerate``, ``zip`` or ``items()``, or over a container of tuples only."""
    expr = site.owner
    if isinstance(expr, tuple) and expr[0] == "element":
        loop = expr[1]
        over = pending.loaded.get(_frame_key(frame, loop[1]), _MISSING) if loop[0] == "iterated" \
            else frame.value(loop)
        return _yields_tuples(over)
    value = frame.value(expr)
    return _shallow(value, out) if type(value) not in _ITERATORS else _iterates(value, out)


def _yields_tuples(over: Any) -> bool:
    if type(over) is _Iterates:
        return over.tuples
    if type(over) in (list, tuple, deque) and len(over) <= 64:
        return all(type(v) is tuple for v in over)
    return False


_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "COMPARE_OP"})


def _shallow(value: Any, out: list[Location]) -> bool:
    """C code reads ``value`` itself, not what it holds (a concatenation)."""
    if value is _MISSING:
        return False
    if value is _SOME_PLAIN or value is _FRESH:
        return True
    what = _kind_of_type(type(value))
    if what == "container":
        out.append((id(value), ANY, value, READ))
    return what != "foreign"


def _asks_operand(site: Site, frame: Frame, pending: Pending, out: list[Location]) -> bool:
    """A truth test, ``len``'s instruction or a unary operator: a container's C code reads
    its size (SCHED-58); a user's object runs its own (traced) method; a value the analysis
    lost, or a foreign one, is unnamed (SCHED-42)."""
    return _shallow(frame.value(site.owner), out)


def _opaque(site: Site, frame: Frame, pending: Pending, out: list[Location]) -> bool:
    """An instruction the analysis does not understand: unnamed (SCHED-58)."""
    return False


_RUNTIME = {"call": _call, "exit": _exit, "with": _enter, "method": _load_method,
            "iter": _get_iter, "next": _next, "op": _operation, "unpack": _unpack,
            "operand": _asks_operand, "opaque": _opaque}


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
