"""Attributes: the compile-time constants attached to operations.

Every attribute is immutable, comparable with `==` and hashable, prints as MLIR text
(`str(attr)`), and converts to a plain Python value with `to_python()`, which is what
the interpreter and passes read (see axle/interpreter/registry.py for the mapping).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from axle.ir.float_text import format_float  # noqa: F401  (axle.ir.attributes.format_float)
from axle.ir.types import ElementType, QuantizedType, TensorType, Type


class Attribute:
    def to_python(self) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class IntegerAttr(Attribute):
    """`3 : i64`; `type` is None for a bare integer inside a struct attribute."""

    value: int
    type: Optional[Type] = None

    def to_python(self):
        if self.type is not None and getattr(self.type, "name", "") == "i1":
            return bool(self.value)
        return self.value

    def __str__(self) -> str:
        return f"{self.value} : {self.type}" if self.type is not None else str(self.value)


@dataclass(frozen=True)
class FloatAttr(Attribute):
    value: float
    type: Optional[Type] = None

    def to_python(self):
        return self.value

    def __eq__(self, other):
        return (isinstance(other, FloatAttr) and self.type == other.type
                and _float_bits(self.value) == _float_bits(other.value))

    def __hash__(self):
        return hash((_float_bits(self.value), self.type))

    def __str__(self) -> str:
        text = format_float(self.value)
        return f"{text} : {self.type}" if self.type is not None else text


def _float_bits(x: float) -> bytes:
    return np.float64(x).tobytes()


@dataclass(frozen=True)
class BoolAttr(Attribute):
    value: bool

    def to_python(self):
        return self.value

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True)
class StringAttr(Attribute):
    value: str

    def to_python(self):
        return self.value

    def __str__(self) -> str:
        return quote_string(self.value)


@dataclass(frozen=True)
class UnitAttr(Attribute):
    def to_python(self):
        return True

    def __str__(self) -> str:
        return "unit"


@dataclass(frozen=True)
class SymbolRefAttr(Attribute):
    """`@name` or nested `@a::@b`."""

    path: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.path[-1]

    def to_python(self):
        return "::".join(self.path)

    def __str__(self) -> str:
        return "::".join(format_symbol(p) for p in self.path)


@dataclass(frozen=True)
class TypeAttr(Attribute):
    type: Type

    def to_python(self):
        return self.type

    def __str__(self) -> str:
        return str(self.type)


@dataclass(frozen=True)
class ArrayAttr(Attribute):
    """`[a, b, ...]`."""

    elements: tuple[Attribute, ...]

    def to_python(self):
        return [e.to_python() for e in self.elements]

    def __str__(self) -> str:
        return "[" + ", ".join(str(e) for e in self.elements) + "]"


@dataclass(frozen=True)
class DenseArrayAttr(Attribute):
    """`array<i64: 1, 2>`; element_type is an ElementType (ints, i1 or floats)."""

    element_type: ElementType
    values: tuple

    def to_python(self):
        return list(self.values)

    def __str__(self) -> str:
        if not self.values:
            return f"array<{self.element_type}>"
        if self.element_type.is_bool:
            vals = ", ".join("true" if v else "false" for v in self.values)
        elif self.element_type.is_float:
            vals = ", ".join(format_float(v) for v in self.values)
        else:
            vals = ", ".join(str(v) for v in self.values)
        return f"array<{self.element_type}: {vals}>"


def is_lazy_splat(a: np.ndarray) -> bool:
    """An array of more than one element that is one value broadcast (all strides 0): the
    parser holds splat constants this way, so that their size costs no memory until a
    consumer materializes them (and checks its resource limits first)."""
    return a.size > 1 and all(s == 0 for s in a.strides)


class DenseElementsAttr(Attribute):
    """`dense<...> : tensor<...>`: a constant tensor, held as a numpy array.

    For quantized tensor types the array holds the storage integers.
    """

    __slots__ = ("type", "array", "_key")

    def __init__(self, type: TensorType, array: np.ndarray):
        self.type = type
        self.array = array
        self._key = None

    def to_python(self):
        return self.array

    @property
    def is_splat(self) -> bool:
        a = self.array
        if a.size == 0:
            return False
        if is_lazy_splat(a):
            return True
        rows = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, -1)
        return bool(np.all(rows == rows[:1]))

    def key(self):
        if self._key is None:
            a = self.array
            # a splat's key is its one element, so that `dense<1> : tensor<9511627776xi1>`
            # (held lazily, see is_lazy_splat) is never materialized to be compared
            data = (b"splat", a.reshape(-1)[:1].tobytes()) if self.is_splat else np.ascontiguousarray(a).tobytes()
            self._key = (self.type, a.dtype.str, a.shape, data)
        return self._key

    def __eq__(self, other):
        return isinstance(other, DenseElementsAttr) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self) -> str:
        return f"DenseElementsAttr({self.type})"

    def __str__(self) -> str:
        from axle.ir.text.dense import format_dense  # text formatting lives with the printer
        return f"{format_dense(self.array, self.type)} : {self.type}"


@dataclass(frozen=True)
class DictAttr(Attribute):
    """`{name = attr, ...}`; entries keep their order."""

    entries: tuple[tuple[str, Attribute], ...]

    def get(self, name: str, default=None):
        for k, v in self.entries:
            if k == name:
                return v
        return default

    def to_python(self):
        return {k: v.to_python() for k, v in self.entries}

    def __str__(self) -> str:
        return "{" + ", ".join(format_named(k, v) for k, v in self.entries) + "}"


@dataclass(frozen=True)
class EnumAttr(Attribute):
    """An enum value: `#stablehlo<comparison_direction EQ>` (or the bare word `EQ` inside
    struct attributes, where `enum` is empty)."""

    dialect: str
    enum: str
    value: str

    def to_python(self):
        return self.value

    def __str__(self) -> str:
        if not self.enum:
            return self.value
        return f"#{self.dialect}<{self.enum} {self.value}>"


_GATHER = ("offset_dims", "collapsed_slice_dims", "operand_batching_dims", "start_indices_batching_dims",
           "start_index_map")
_SCATTER = ("update_window_dims", "inserted_window_dims", "input_batching_dims",
            "scatter_indices_batching_dims", "scatter_dims_to_operand_dims")
_DOT = ("lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
        "rhs_contracting_dimensions")
# Values of the fields a struct attribute may leave out (the spec's defaults).
STRUCT_DEFAULTS: dict[str, dict] = {
    "stablehlo.gather": {**{k: [] for k in _GATHER}, "index_vector_dim": 0},
    "stablehlo.scatter": {**{k: [] for k in _SCATTER}, "index_vector_dim": 0},
    "stablehlo.dot": {k: [] for k in _DOT},
    "stablehlo.channel_handle": {"handle": 0, "type": 0},
}


@dataclass(frozen=True)
class StructAttr(Attribute):
    """`#stablehlo.gather<offset_dims = [1], index_vector_dim = 1>` and its kin.

    `name` is `stablehlo.gather`; fields are kept in order as (key, Attribute).
    """

    name: str
    fields: tuple[tuple[str, Attribute], ...]

    def get(self, key: str, default=None):
        for k, v in self.fields:
            if k == key:
                return v
        return default

    def to_python(self):
        out = {k: (list(v) if isinstance(v, list) else v) for k, v in STRUCT_DEFAULTS.get(self.name, {}).items()}
        for k, v in self.fields:
            out[k] = v.to_python()
        return out

    def __str__(self) -> str:
        return f"#{self.name}<" + ", ".join(f"{k} = {v}" for k, v in self.fields) + ">"


@dataclass(frozen=True)
class ConvDimensionNumbersAttr(Attribute):
    """`#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>`."""

    input_batch_dimension: int
    input_feature_dimension: int
    input_spatial_dimensions: tuple[int, ...]
    kernel_input_feature_dimension: int
    kernel_output_feature_dimension: int
    kernel_spatial_dimensions: tuple[int, ...]
    output_batch_dimension: int
    output_feature_dimension: int
    output_spatial_dimensions: tuple[int, ...]

    def to_python(self):
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}

    def layout_text(self) -> str:
        def fmt(rank, named, spatial):
            labels = ["?"] * rank
            for letter, d in named:
                labels[d] = letter
            for i, d in enumerate(spatial):
                labels[d] = str(i)
            return "[" + ", ".join(labels) + "]"

        n = len(self.input_spatial_dimensions) + 2
        return (fmt(n, [("b", self.input_batch_dimension), ("f", self.input_feature_dimension)],
                    self.input_spatial_dimensions) + "x"
                + fmt(n, [("i", self.kernel_input_feature_dimension),
                          ("o", self.kernel_output_feature_dimension)], self.kernel_spatial_dimensions)
                + "->"
                + fmt(n, [("b", self.output_batch_dimension), ("f", self.output_feature_dimension)],
                      self.output_spatial_dimensions))

    def __str__(self) -> str:
        return f"#stablehlo.conv<{self.layout_text()}>"


@dataclass(frozen=True)
class OpaqueAttr(Attribute):
    """Any attribute axle does not model (e.g. `#sdy.sharding<...>`, `affine_map<...>`),
    kept as its exact text so that printing reproduces it."""

    text: str

    def to_python(self):
        return self.text

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Location:
    """A source location: the text inside `loc(...)`, with aliases resolved."""

    text: str

    def __str__(self) -> str:
        return f"loc({self.text})"

    def short(self) -> str:
        return self.text


# ---------------------------------------------------------------- text helpers


_BARE_ID_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.")


def is_bare_identifier(s: str) -> bool:
    return bool(s) and (s[0].isalpha() or s[0] == "_") and all(c in _BARE_ID_CHARS for c in s)


def format_symbol(name: str) -> str:
    return "@" + (name if is_bare_identifier(name) else quote_string(name))


def format_named(name: str, attr: Attribute) -> str:
    key = name if is_bare_identifier(name) else quote_string(name)
    if isinstance(attr, UnitAttr):
        return key
    return f"{key} = {attr}"


def quote_string(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\{o:02X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def dense_array(values, element_type: ElementType | str = "i64") -> DenseArrayAttr:
    from axle.ir.types import element_type as _et
    et = _et(element_type) if isinstance(element_type, str) else element_type
    return DenseArrayAttr(et, tuple(values))
