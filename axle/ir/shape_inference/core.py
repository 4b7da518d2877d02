"""Shape inference: errors, the rule context, type helpers and the rule table (RULES)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from axle.ir.attributes import ArrayAttr, Attribute, DenseArrayAttr, DenseElementsAttr, IntegerAttr
from axle.ir.types import ELEMENT_TYPES, ElementType, FunctionType, QuantizedType, TensorType, TupleType, Type

i1 = ELEMENT_TYPES["i1"]
i32 = ELEMENT_TYPES["i32"]
ui32 = ELEMENT_TYPES["ui32"]


# ======================================================================= errors


class InferenceError(ValueError):
    """An op's operands/attributes/regions break a spec constraint, so no result type
    follows. `constraint` is the spec's id ("C3", or "I1" for an input's type) or None;
    `detail` is the message without the op name."""

    def __init__(self, detail: str, constraint: Optional[str] = None, op_name: Optional[str] = None):
        self.detail = detail
        self.constraint = constraint
        self.op_name = op_name
        super().__init__(self._text())

    def _text(self) -> str:
        c = f"({self.constraint}) " if self.constraint else ""
        who = f"'{self.op_name}': " if self.op_name else ""
        return f"{who}{c}{self.detail}"

    def __str__(self) -> str:
        return self._text()


class ResultTypeRequired(InferenceError):
    """The op's result type does not follow from its inputs: it must be given."""


# ======================================================================= type helpers


def shapes_compatible(a: Sequence[Optional[int]], b: Sequence[Optional[int]]) -> bool:
    """Same rank, and each pair of dimensions equal or at least one dynamic."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def is_compatible(a: Type, b: Type) -> bool:
    """Types equal up to dynamic dimensions (and bounds/encodings, which are ignored)."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return a.element_type == b.element_type and shapes_compatible(a.shape, b.shape)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.types) == len(b.types) and all(is_compatible(x, y) for x, y in zip(a.types, b.types))
    return a == b


def baseline_element(et):
    """The spec's baseline_element_type: quantized types without scales and zero points."""
    if isinstance(et, QuantizedType):
        return ("quant", et.storage_type, et.expressed_type, et.min_value, et.max_value, et.quantized_dimension)
    return et


def _elem(t: Type):
    return t.element_type if isinstance(t, TensorType) else None


def _is_quant(et) -> bool:
    return isinstance(et, QuantizedType)


def _per_axis(et) -> bool:
    return isinstance(et, QuantizedType) and et.quantized_dimension is not None


def _shape_text(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _merge_dims(a: Optional[int], b: Optional[int]) -> Optional[int]:
    return b if a is None else a


def _dsum(*xs):
    return None if any(x is None for x in xs) else sum(xs)


_KIND_WORDS = {"bool": "boolean", "int": "integer", "sint": "signed integer", "uint": "unsigned integer",
               "float": "floating-point", "complex": "complex", "quant": "quantized"}


def kind_matches(et, kinds) -> bool:
    """Whether element type `et` belongs to one of the categories in `kinds`
    ("bool", "int", "sint", "uint", "float", "complex", "quant")."""
    if isinstance(et, QuantizedType):
        return "quant" in kinds
    if not isinstance(et, ElementType):
        return False
    if et.is_bool:
        return "bool" in kinds
    if et.is_int:
        return "int" in kinds or ("sint" in kinds and et.is_signed) or ("uint" in kinds and et.is_unsigned)
    if et.is_float:
        return "float" in kinds
    if et.is_complex:
        return "complex" in kinds
    return False


def kinds_text(kinds) -> str:
    order = ["bool", "int", "sint", "uint", "float", "complex", "quant"]
    words = [_KIND_WORDS[k] for k in order if k in kinds]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def is_promotable(x, y) -> bool:
    """The spec's is_promotable (reduction bodies may accumulate in a wider type)."""
    if isinstance(x, QuantizedType) or isinstance(y, QuantizedType):
        return (isinstance(x, QuantizedType) and isinstance(y, QuantizedType)
                and x.expressed_type == y.expressed_type
                and x.storage_type.bitwidth <= y.storage_type.bitwidth)
    if not isinstance(x, ElementType) or not isinstance(y, ElementType):
        return False
    if x.is_bool or y.is_bool:
        return x.is_bool and y.is_bool
    for pred in ("is_int", "is_float", "is_complex"):
        if getattr(x, pred) and getattr(y, pred):
            return x.bitwidth <= y.bitwidth
    return False


def region_signature(region) -> tuple[list[Type], list[Type]]:
    """(argument types, returned types) of a region: a core.Region (entry block arguments
    and the terminator's operands) or a FunctionType."""
    if isinstance(region, FunctionType):
        return list(region.inputs), list(region.results)
    if not region.blocks:
        return [], []
    entry = region.blocks[0]
    last = region.blocks[-1].terminator
    outs = [v.type for v in last.operands] if last is not None else []
    return [a.type for a in entry.arguments], outs


def _sig_text(ins, outs) -> str:
    return "(" + ", ".join(map(str, ins)) + ") -> (" + ", ".join(map(str, outs)) + ")"


# ======================================================================= the inferred result


@dataclass(frozen=True)
class Inferred:
    """One inferred result. `match` says how the op's actual result must relate to `type`:
    "exact"    - equal up to dynamic dimensions;
    "baseline" - also the scales and zero points of a quantized element type may differ;
    "shape"    - only the shape is fixed (the element type is free, e.g. dot_general)."""

    type: Type
    match: str = "exact"
    constraint: Optional[str] = None  # the spec constraint that fixes this result


# ======================================================================= rule context


_MISSING = object()


class _Ctx:
    def __init__(self, name: str, operand_types, attributes, regions):
        self.name = name
        self.types = list(operand_types)
        self.attrs = dict(attributes or {})
        self.regions = list(regions or ())

    # -- errors
    def fail(self, constraint: Optional[str], detail: str):
        raise InferenceError(detail, constraint, self.name)

    def need(self, cond: bool, constraint: Optional[str], detail: str) -> None:
        if not cond:
            self.fail(constraint, detail)

    # -- operands
    def count(self, n: int, what: str = "operands") -> None:
        if len(self.types) != n:
            self.fail(None, f"expects {n} {what}, found {len(self.types)}")

    def at_least(self, n: int) -> None:
        if len(self.types) < n:
            self.fail(None, f"expects at least {n} operand{'s' if n != 1 else ''}, found {len(self.types)}")

    def tensor(self, i: int, what: Optional[str] = None) -> TensorType:
        t = self.types[i]
        if not isinstance(t, TensorType):
            self.fail(None, f"{what or f'operand #{i}'} must be a tensor, found {t}")
        return t

    def tensors(self, lo: int = 0, hi: Optional[int] = None) -> list[TensorType]:
        hi = len(self.types) if hi is None else hi
        return [self.tensor(i) for i in range(lo, hi)]

    # -- attributes
    def raw(self, key: str):
        return self.attrs.get(key)

    def value(self, key: str, default=_MISSING):
        a = self.attrs.get(key)
        if a is None:
            if default is _MISSING:
                self.fail(None, f"missing attribute '{key}'")
            return default
        return a.to_python()

    def ints(self, key: str, default=_MISSING) -> list[int]:
        a = self.attrs.get(key)
        if a is None:
            if default is _MISSING:
                self.fail(None, f"missing attribute '{key}'")
            return list(default)
        v = ints_of(a)
        if v is None:
            self.fail(None, f"attribute '{key}' must be a list of integers, found {a}")
        return v

    def int(self, key: str, default=_MISSING) -> int:
        a = self.attrs.get(key)
        if a is None:
            if default is _MISSING:
                self.fail(None, f"missing attribute '{key}'")
            return default
        if isinstance(a, IntegerAttr):
            return int(a.value)
        v = ints_of(a)
        if v is not None and len(v) == 1:
            return v[0]
        self.fail(None, f"attribute '{key}' must be an integer, found {a}")

    def matrix(self, key: str, rows: int):
        """An [rows, 2] integer matrix attribute (padding) and its shape; zeros when absent."""
        a = self.attrs.get(key)
        if a is None:
            return [[0, 0] for _ in range(rows)], (rows, 2)
        if isinstance(a, DenseElementsAttr):
            shape = tuple(a.type.shape)
            arr = np.asarray(a.array)
            if arr.shape != shape:  # a splat held as a scalar
                arr = np.broadcast_to(arr, shape)
            return arr.astype(np.int64).tolist(), shape
        v = self.value(key)
        arr = np.asarray(v, dtype=np.int64)
        return arr.tolist(), arr.shape


def _as_int(x) -> int:
    """A dimension number: an integer (1e400 or 1.5 in dimension numbers is malformed, not
    an OverflowError or a silent truncation)."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise ValueError(f"expected an integer dimension number, found {x!r}")
    return int(x)


def ints_of(a: Attribute) -> Optional[list[int]]:
    """A list of Python ints from a DenseArrayAttr, 1-D DenseElementsAttr, ArrayAttr of
    IntegerAttr or a single IntegerAttr; None when the attribute is none of those."""
    if isinstance(a, DenseArrayAttr):
        return [int(x) for x in a.values]
    if isinstance(a, DenseElementsAttr):
        shape = tuple(a.type.shape)
        if len(shape) > 1:
            return None
        return [int(x) for x in np.broadcast_to(np.asarray(a.array), shape).reshape(-1)]
    if isinstance(a, ArrayAttr):
        out = []
        for e in a.elements:
            if not isinstance(e, IntegerAttr):
                return None
            out.append(int(e.value))
        return out
    if isinstance(a, IntegerAttr):
        return [int(a.value)]
    return None


# ======================================================================= the rule table


RULES: dict[str, Callable[[_Ctx], list]] = {}


def _rule(*names):
    def deco(fn):
        for n in names:
            RULES[n if "." in n else "stablehlo." + n] = fn
        return fn
    return deco


def _result(t: Type, match: str = "exact", constraint: Optional[str] = None) -> Inferred:
    return Inferred(t, match, constraint)


def _quant_match(et, default="exact") -> str:
    return "baseline" if _is_quant(et) else default
