"""What a queue element is: TensorFlow's component model for the reference queues.

Untyped (no ``dtypes``), an element is any Python object, stored as it is
(``AnyObject``); an untyped PriorityQueue checks only that it is a ``(priority,
...)`` tuple (``PriorityTuples``).  Typed, an element is a tuple of components
with TensorFlow's dtypes and shapes (``Components``): values are converted as
``convert_to_tensor`` would, checked against the shapes, packed back into a
tuple, a dict (with ``names``) or a single value, and batches of a
PaddingFIFOQueue are padded.  Error messages use TensorFlow's wording.

Nothing here locks or waits: ``coordkit.queues`` converts an element before it
takes its lock.  The rules are in ``specs/queues.md`` (Q-API, Q-DTYPE,
Q-UNTYPED, PAD).
"""

from __future__ import annotations

import math
import operator
import reprlib
import struct
from collections.abc import Callable, Sequence
from typing import Any

from coordkit.errors import InvalidArgumentError

__all__ = ["AnyObject", "Components", "PriorityTuples", "Shape", "priority_signature", "signature"]


# ---------------------------------------------------------------------------
# Component types, shapes and values (typed mode)
# ---------------------------------------------------------------------------


class _DType:
    """A component type: its name, its kind of Python value, its pad value."""

    __slots__ = ("high", "kind", "low", "name", "pack", "pad")

    def __init__(
        self,
        name: str,
        kind: str,
        pad: Any,
        low: int = 0,
        high: int = 0,
        pack: str = "",
    ) -> None:
        self.name = name
        self.kind = kind  # "int", "float", "bool" or "string"
        self.pad = pad
        self.low = low
        self.high = high
        self.pack = pack  # struct format that rounds a float to this precision

    def __repr__(self) -> str:
        return self.name

    def cast(self, x: Any) -> Any:
        """Convert one scalar as ``convert_to_tensor(x, dtype)`` would, or raise TypeError
        (ValueError for None), with TensorFlow's wording."""
        if x is None:
            raise ValueError("None values not supported.")
        kind = self.kind
        if kind == "int":
            if isinstance(x, int):  # bool included: TensorFlow takes True as 1
                x = int(x)
                if not self.low <= x <= self.high:
                    raise InvalidArgumentError(f"Value {x} is out of range for {self.name}")
                return x
        elif kind == "float":
            if isinstance(x, (int, float)):
                x = float(x)
                if self.pack:
                    try:
                        (x,) = struct.unpack(self.pack, struct.pack(self.pack, x))
                    except OverflowError:
                        x = math.copysign(math.inf, x)
                return x
        elif kind == "bool":
            if isinstance(x, bool):
                return x
        elif isinstance(x, bytes):
            return x
        elif isinstance(x, str):
            return x.encode()
        elif isinstance(x, (bytearray, memoryview)):
            return bytes(x)
        raise TypeError(
            f"Expected {self.name}, but got {x} of type '{type(x).__name__}'."
        )


def _int_dtype(bits: int, signed: bool) -> _DType:
    name = f"{'' if signed else 'u'}int{bits}"
    if signed:
        return _DType(name, "int", 0, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return _DType(name, "int", 0, 0, 2**bits - 1)


_DTYPES: dict[str, _DType] = {
    dt.name: dt
    for dt in (
        *(_int_dtype(bits, signed) for bits in (8, 16, 32, 64) for signed in (True, False)),
        _DType("float16", "float", 0.0, pack="<e"),
        _DType("float32", "float", 0.0, pack="<f"),
        _DType("float64", "float", 0.0),
        _DType("bool", "bool", False),
        _DType("string", "string", b""),
    )
}
_DTYPE_ALIASES = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "bool_": "bool",
    "str_": "string",
    "bytes_": "string",
    "object_": "string",
}
# Python types that TensorFlow's as_dtype() accepts.
_PYTHON_DTYPES = {float: "float32", bool: "bool", object: "string"}


def _as_dtype(spec: Any) -> _DType:
    if isinstance(spec, _DType):
        return spec
    key = _PYTHON_DTYPES.get(spec) if isinstance(spec, type) else None
    if key is None:
        if isinstance(spec, str):
            key = spec
        elif isinstance(getattr(spec, "name", None), str):  # tf.DType, numpy.dtype
            key = spec.name
        else:  # numpy scalar types such as numpy.int32
            key = getattr(spec, "__name__", None)
    dtype = _DTYPES.get(_DTYPE_ALIASES.get(key, key)) if isinstance(key, str) else None
    if dtype is None:
        raise TypeError(
            f"Unsupported dtype {reprlib.repr(spec)}; expected one of {', '.join(_DTYPES)} "
            "(or a TensorFlow or numpy dtype with one of those names)"
        )
    return dtype


def _as_dtype_list(dtypes: Any, arg: str = "dtypes") -> list[_DType]:
    """The dtypes, one or a list; a TypeError that names ``arg`` and its value otherwise."""
    items = dtypes if isinstance(dtypes, (list, tuple)) else [dtypes]
    try:
        return [_as_dtype(dt) for dt in items]
    except TypeError as exc:
        raise TypeError(f"{arg}={reprlib.repr(dtypes)}: {exc}") from None


Shape = tuple  # a tuple of dimension sizes; None is an unknown size (padding queues only)


def _as_dim(dim: Any, shape: Any) -> int | None:
    if dim is None:
        return None
    if isinstance(dim, bool) or not hasattr(dim, "__index__"):
        raise TypeError(f"Shape dimensions must be ints or None, got {dim!r} in shape {shape!r}")
    dim = operator.index(dim)
    if dim < 0:
        raise ValueError(f"Shape dimensions must be >= 0, got {dim} in shape {shape!r}")
    return dim


def _as_shape(shape: Any) -> Shape | None:
    """One shape: an int, a sequence of ints and Nones, a TensorShape; None = unknown rank."""
    if shape is None or getattr(shape, "rank", 0) is None:
        return None
    if hasattr(shape, "as_list"):  # tf.TensorShape
        shape = shape.as_list()
    if isinstance(shape, (list, tuple)):
        return tuple(_as_dim(dim, shape) for dim in shape)
    return (_as_dim(shape, shape),)


def _as_shape_list(shapes: Any, partial: bool) -> list[Shape] | None:
    """TensorFlow's ``_as_shape_list``: one shape or a list of them (Q-API-1, PAD-1)."""
    if partial and (
        not isinstance(shapes, Sequence)
        or isinstance(shapes, str)
        or not shapes
        or any(shape is None or isinstance(shape, int) for shape in shapes)
    ):
        raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if hasattr(shapes, "as_list") or hasattr(shapes, "rank"):
        shapes = [shapes]
    if not isinstance(shapes, (list, tuple)):
        raise TypeError(
            f"Shapes must be a shape or a list or tuple of shapes, got {shapes!r} instead."
        )
    if all(shape is None or isinstance(shape, int) for shape in shapes):
        shapes = [shapes]  # a single shape such as (3, 2) or ()
    result = [_as_shape(shape) for shape in shapes]
    if not partial and any(s is None or None in s for s in result):
        raise ValueError(f"All shapes must be fully defined: {result}")
    if any(s is None for s in result):
        raise ValueError(f"All shapes must have a defined rank: {result}")
    return result


def _as_name_list(names: Any, count: int) -> list[str] | None:
    if names is None:
        return None
    if not isinstance(names, (list, tuple)):
        names = [names]
    if len(names) != count:
        raise ValueError(
            "List of names must have the same length as the list of dtypes, "
            f"received len(names)={len(names)},len(dtypes)={count}"
        )
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"Queue component names must be strings, got {name!r}")
    return list(names)


def _shape_str(dims: Sequence[int | None]) -> str:
    """A shape as TensorFlow prints it in kernel messages: ``[2,?,3]``."""
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _nested(value: Any, cast: Callable[[Any], Any]) -> tuple[Any, tuple[int, ...]]:
    """Convert a scalar or a rectangular nested sequence; return (data, dims).

    Lists and tuples are dimensions; anything else is a scalar.  Below an empty
    dimension nothing can be seen, so the dims returned then end with that 0.
    """
    if isinstance(value, (list, tuple)):
        if not value:
            return [], (0,)
        parts = [_nested(item, cast) for item in value]
        dims = parts[0][1]
        for _, item_dims in parts:
            if item_dims != dims:
                raise InvalidArgumentError(
                    "Can't convert non-rectangular Python sequence to Tensor."
                )
        return [data for data, _ in parts], (len(value), *dims)
    if hasattr(value, "tolist") and hasattr(value, "shape"):  # a numpy array or scalar
        return _convert(value, cast)
    return cast(value), ()


def _convert(value: Any, cast: Callable[[Any], Any]) -> tuple[Any, tuple[int, ...]]:
    """Like ``_nested``, but a numpy array's own shape is exact even when it has a 0."""
    if hasattr(value, "tolist") and hasattr(value, "shape"):
        exact = tuple(int(d) for d in value.shape)
        data, _ = _nested(value.tolist(), cast)
        return data, exact
    return _nested(value, cast)


def _compatible(dims: tuple[int, ...], spec: Sequence[int | None]) -> bool:
    """Whether converted dims fit a shape spec (None in the spec matches any size)."""
    # Nested lists cannot show the dimensions below an empty one.
    if len(dims) != len(spec) and not (dims and dims[-1] == 0 and len(dims) < len(spec)):
        return False
    return all(s is None or s == d for d, s in zip(dims, spec))


def _dims_of(value: Any, rank: int) -> list[int]:
    dims = []
    for _ in range(rank):
        size = len(value)
        dims.append(size)
        value = value[0] if size else ()
    return dims


def _filled(dims: Sequence[int], fill: Any) -> Any:
    if not dims:
        return fill
    return [_filled(dims[1:], fill) for _ in range(dims[0])]


def _padded(value: Any, dims: Sequence[int], fill: Any) -> Any:
    if not dims:
        return value
    rest = dims[1:]
    out = [_padded(item, rest, fill) for item in value]
    out.extend(_filled(rest, fill) for _ in range(dims[0] - len(value)))
    return out


# ---------------------------------------------------------------------------
# Element formats: what enqueue accepts and what dequeue returns
# ---------------------------------------------------------------------------


class AnyObject:
    """Untyped mode: an element is any Python object, stored as it is (Q-UNTYPED-1)."""

    dtypes = shapes = names = None
    can_batch = True  # TensorFlow needs shapes for dequeue_many; coordkit does not here

    def element(self, vals: Any) -> Any:
        return vals

    def elements(self, vals: Any) -> list[Any]:
        try:
            return list(vals)
        except TypeError:
            raise InvalidArgumentError(
                "enqueue_many(vals) needs an iterable of elements; "
                f"got {vals!r} of type '{type(vals).__name__}'"
            ) from None

    def unpack(self, element: Any) -> Any:
        return element

    def batch(self, taken: list[Any]) -> list[Any]:
        return taken


class PriorityTuples(AnyObject):
    """Untyped PriorityQueue: an element is a tuple whose first item is an int priority."""

    def element(self, vals: Any) -> tuple:
        if not isinstance(vals, (list, tuple)) or not vals:
            raise InvalidArgumentError(
                "A PriorityQueue element is a (priority, ...) tuple whose first item is "
                f"an int; got {vals!r}"
            )
        priority = vals[0]
        if not isinstance(priority, int):
            raise TypeError(
                f"Expected int64, but got {priority!r} of type '{type(priority).__name__}'."
            )
        return (int(priority), *vals[1:])

    def elements(self, vals: Any) -> list[tuple]:
        return [self.element(item) for item in super().elements(vals)]


class Components:
    """Typed mode: an element is a tuple of components with given dtypes (and shapes).

    ``partial`` allows None dimensions and pads batches (PaddingFIFOQueue);
    ``priority`` marks component 0 as a PriorityQueue's scalar priority.
    """

    def __init__(
        self,
        dtypes: list[_DType],
        shapes: list[Shape] | None,
        names: list[str] | None,
        partial: bool = False,
        priority: bool = False,
    ) -> None:
        self._dtypes = dtypes
        self._shapes = shapes
        self._names = names
        self._partial = partial
        self._priority = priority
        self.can_batch = shapes is not None

    @property
    def dtypes(self) -> list[str]:
        return [dt.name for dt in self._dtypes]

    @property
    def shapes(self) -> list[Shape | None]:
        return list(self._shapes) if self._shapes is not None else [None] * len(self._dtypes)

    @property
    def names(self) -> list[str] | None:
        return list(self._names) if self._names is not None else None

    def _split(self, vals: Any) -> list[Any]:
        """The component values of ``vals`` in order (Q-API-4)."""
        names = self._names
        if isinstance(vals, dict):
            if not names:
                raise ValueError("Queue must have names to enqueue a dictionary")
            if sorted(names, key=str) != sorted(vals, key=str):
                raise ValueError(
                    "Keys in dictionary to enqueue do not match names of Queue.  "
                    f"Dictionary: {sorted(vals, key=str)},Queue: {sorted(names, key=str)}"
                )
            values = [vals[name] for name in names]
        elif names:
            raise ValueError("You must enqueue a dictionary in a Queue with names")
        elif isinstance(vals, (list, tuple)):
            values = list(vals)
        else:
            values = [vals]
        if len(values) != len(self._dtypes):
            raise InvalidArgumentError(
                "Wrong number of components in tuple. "
                f"Expected {len(self._dtypes)}, got {len(values)}"
            )
        return values

    def _mismatch(self, index: int, expected: Sequence[int | None], dims: Sequence[int]) -> None:
        raise InvalidArgumentError(
            f"Shape mismatch in tuple component {index}. "
            f"Expected {_shape_str(expected)}, got {_shape_str(dims)}"
        )

    def _check_priority(self, dims: tuple[int, ...]) -> None:
        if self._priority and self._shapes is None and dims:
            raise InvalidArgumentError(
                "Expected the priority element to be a scalar, but received shape: "
                + _shape_str(dims)
            )

    def element(self, vals: Any) -> tuple:
        converted = [
            _convert(value, dtype.cast) for value, dtype in zip(self._split(vals), self._dtypes)
        ]
        if self._shapes is not None:
            for index, ((_, dims), spec) in enumerate(zip(converted, self._shapes)):
                if not _compatible(dims, spec):
                    self._mismatch(index, spec, dims)
        self._check_priority(converted[0][1])
        return tuple(data for data, _ in converted)

    def elements(self, vals: Any) -> list[tuple]:
        converted = [
            _convert(value, dtype.cast) for value, dtype in zip(self._split(vals), self._dtypes)
        ]
        for index, (_, dims) in enumerate(converted):
            if not dims:
                raise InvalidArgumentError(
                    f"Shape [] must have rank at least 1: enqueue_many needs a batch "
                    f"dimension, but tuple component {index} is a scalar"
                )
        batch_size = converted[0][1][0]
        if self._shapes is not None:
            for index, ((_, dims), spec) in enumerate(zip(converted, self._shapes)):
                expected = (batch_size, *spec)
                if not _compatible(dims, expected):
                    self._mismatch(index, expected, dims)
        else:
            for index, (_, dims) in enumerate(converted[1:], 1):
                if dims[0] != batch_size:
                    raise InvalidArgumentError(
                        "All input tensors must have the same size in the 0th dimension. "
                        f"Component {index} has {dims[0]}, and should have {batch_size}"
                    )
        if batch_size:
            self._check_priority(converted[0][1][1:])
        columns = [data for data, _ in converted]
        return [tuple(column[i] for column in columns) for i in range(batch_size)]

    def _pack(self, components: Sequence[Any]) -> Any:
        if self._names is not None:
            return dict(zip(self._names, components))
        if len(components) == 1:
            return components[0]
        return tuple(components)

    def unpack(self, element: tuple) -> Any:
        return self._pack(element)

    def batch(self, taken: list[tuple]) -> Any:
        columns = [[element[i] for element in taken] for i in range(len(self._dtypes))]
        if self._partial:
            columns = [
                self._pad(column, spec, dtype.pad)
                for column, spec, dtype in zip(columns, self._shapes, self._dtypes)
            ]
        return self._pack(columns)

    @staticmethod
    def _pad(column: list[Any], spec: Shape, fill: Any) -> list[Any]:
        """Pad every value to the largest size in the batch along each None dimension (PAD-3)."""
        if None not in spec:
            return column
        sizes = [_dims_of(value, len(spec)) for value in column]
        dims = [
            size if size is not None else max((s[d] for s in sizes), default=0)
            for d, size in enumerate(spec)
        ]
        return [_padded(value, dims, fill) for value in column]

# ---------------------------------------------------------------------------
# Element formats of the four queue classes
# ---------------------------------------------------------------------------


def signature(
    dtypes: Any, shapes: Any, names: Any, partial: bool = False
) -> AnyObject | Components:
    if dtypes is None:
        if shapes is not None or names is not None:
            raise ValueError("shapes and names need dtypes; pass dtypes=... as well")
        return AnyObject()
    dtype_list = _as_dtype_list(dtypes)
    shape_list = _as_shape_list(shapes, partial)
    if shape_list is not None and len(shape_list) != len(dtype_list):
        if partial:
            raise ValueError(
                "Shapes must be provided for all components, but received "
                f"{len(dtype_list)} dtypes and {len(shape_list)} shapes."
            )
        raise ValueError(
            "Queue shapes must have the same length as dtypes, received "
            f"len(shapes)={len(shape_list)}, len(dtypes)={len(dtype_list)}"
        )
    return Components(dtype_list, shape_list, _as_name_list(names, len(dtype_list)), partial)


def priority_signature(types: Any, shapes: Any, names: Any) -> PriorityTuples | Components:
    """A PriorityQueue's element format: the int64 priority, then ``types`` (PQ-1)."""
    if types is None:
        if shapes is not None or names is not None:
            raise ValueError("shapes and names need types; pass types=... as well")
        return PriorityTuples()
    dtype_list = [_DTYPES["int64"], *_as_dtype_list(types, "types")]
    shape_list = _as_shape_list(shapes, partial=False)
    if shape_list is not None:
        if len(shape_list) != len(dtype_list) - 1:
            # TF counts the priority component on both sides.
            raise ValueError(
                "Queue shapes must have the same length as dtypes, received "
                f"len(shapes)={len(shape_list) + 1}, len(dtypes)={len(dtype_list)}"
            )
        shape_list = [(), *shape_list]
    return Components(dtype_list, shape_list, _as_name_list(names, len(dtype_list)), priority=True)
