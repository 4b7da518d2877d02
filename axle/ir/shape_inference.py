"""Result-type inference: the result types of an op from its operand types, attributes
and (for ops with bodies) the signatures of its regions.

    infer_result_types("stablehlo.transpose", [tensor<2x3xf32>], {"permutation": array<i64: 1, 0>})
        -> [tensor<3x2xf32>]

Each rule also checks the spec constraints that involve only operands, attributes and
regions (dimension numbers in range, matching contracting sizes, reducer signatures...)
and raises `InferenceError` naming the constraint (`(C3)`) when one fails. Ops whose
result type is not determined by their inputs (reshape, broadcast_in_dim, convert, iota,
the dynamic_* shape ops, custom_call, ...) raise `ResultTypeRequired`.

Some results are only partly determined: dot_general's result element type is free
(a "preferred element type"), and the scales and zero points of a quantized result may
differ from the operands'. `infer_results` returns, per result, the natural type and a
`match` mode saying how much of it is fixed; the verifier compares with that mode.
`infer_result_types` returns just the natural types.

Dynamic dimensions (`?`, None) propagate: a result dimension computed from a dynamic
operand dimension is dynamic; dynamic dimensions are compatible with any size.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from axle.ir.attributes import (ArrayAttr, Attribute, ConvDimensionNumbersAttr, DenseArrayAttr,
                                DenseElementsAttr, IntegerAttr)
from axle.ir.types import (ELEMENT_TYPES, TOKEN, ElementType, FunctionType, QuantizedType, TensorType,
                           TokenType, TupleType, Type)

__all__ = ["InferenceError", "ResultTypeRequired", "Inferred", "infer_result_types", "infer_results",
           "supports", "SUPPORTED_OPS", "is_compatible", "shapes_compatible", "baseline_element",
           "region_signature"]

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


# ---------------------------------------------------------------- elementwise

ANY = frozenset({"bool", "int", "float", "complex", "quant"})
NUMERIC = frozenset({"int", "float", "complex", "quant"})
FLOATISH = frozenset({"float", "complex", "quant"})
FLOAT_Q = frozenset({"float", "quant"})
INT = frozenset({"int"})
INT_BOOL = frozenset({"int", "bool"})
SIGNED_NUM = frozenset({"sint", "float", "complex", "quant"})

# op -> (allowed operand element kinds, result element rule, shape constraint, element constraint)
# result element rule: "same" | "component" (complex -> its real part) | "i1"
_UNARY: dict[str, tuple] = {
    "abs": (SIGNED_NUM, "component", "C1", "C2"),
    "cbrt": (FLOATISH, "same", "C1", "C1"),
    "ceil": (FLOAT_Q, "same", "C1", "C1"),
    "floor": (FLOAT_Q, "same", "C1", "C1"),
    "round_nearest_afz": (FLOAT_Q, "same", "C1", "C1"),
    "round_nearest_even": (FLOAT_Q, "same", "C1", "C1"),
    "cosine": (FLOATISH, "same", "C1", "C1"),
    "sine": (FLOATISH, "same", "C1", "C1"),
    "tan": (FLOATISH, "same", "C1", "C1"),
    "tanh": (FLOATISH, "same", "C1", "C1"),
    "exponential": (FLOATISH, "same", "C1", "C1"),
    "exponential_minus_one": (FLOATISH, "same", "C1", "C1"),
    "log": (FLOATISH, "same", "C1", "C1"),
    "log_plus_one": (FLOATISH, "same", "C1", "C1"),
    "logistic": (FLOATISH, "same", "C1", "C1"),
    "rsqrt": (FLOATISH, "same", "C1", "C1"),
    "sqrt": (FLOATISH, "same", "C1", "C1"),
    "count_leading_zeros": (INT, "same", "C1", "C1"),
    "popcnt": (INT, "same", "C1", "C1"),
    "is_finite": (FLOAT_Q, "i1", "C1", None),
    "negate": (NUMERIC, "same", "C1", "C1"),
    "not": (INT_BOOL, "same", "C1", "C1"),
    "sign": (SIGNED_NUM, "same", "C1", "C1"),
    "real": (frozenset({"float", "complex"}), "component", "C1", "C2"),
    "imag": (frozenset({"float", "complex"}), "component", "C1", "C2"),
    "reduce_precision": (FLOAT_Q, "same", "C1", "C1"),
}
_BINARY: dict[str, tuple] = {
    "add": (ANY, "C1"),
    "maximum": (ANY, "C1"),
    "minimum": (ANY, "C1"),
    "multiply": (ANY, "C1"),
    "subtract": (NUMERIC, "C1"),
    "divide": (NUMERIC, "C1"),
    "remainder": (NUMERIC, "C1"),
    "power": (NUMERIC, "C1"),
    "atan2": (FLOATISH, "C1"),
    "and": (INT_BOOL, "C1"),
    "or": (INT_BOOL, "C1"),
    "xor": (INT_BOOL, "C1"),
    "shift_left": (INT, "C1"),
    "shift_right_arithmetic": (INT, "C1"),
    "shift_right_logical": (INT, "C1"),
}
# CHLO elementwise ops (not part of the spec; checked loosely)
_CHLO_UNARY = {n: FLOATISH for n in ["acos", "acosh", "asin", "asinh", "atan", "atanh", "bessel_i1e", "conj",
                                     "cosh", "sinh", "tan", "digamma", "erf", "erfc", "erf_inv", "lgamma"]}
_CHLO_UNARY.update({"square": NUMERIC, "sign": SIGNED_NUM})
_CHLO_PRED = {"is_inf", "is_neg_inf", "is_pos_inf"}
_CHLO_BINARY = {"next_after": FLOATISH, "polygamma": FLOATISH, "zeta": FLOATISH, "mulhi": INT}


def _component(et):
    return et.component if isinstance(et, ElementType) else et


def _same_shape(c: _Ctx, ts: list[TensorType], constraint: Optional[str]) -> tuple:
    """Check that all shapes are compatible; return the most static merge."""
    shape = list(ts[0].shape)
    for t in ts[1:]:
        if not shapes_compatible(shape, t.shape):
            c.fail(constraint, "operand shapes must match, found "
                   + ", ".join(_shape_text(x.shape) for x in ts))
        shape = [_merge_dims(a, b) for a, b in zip(shape, t.shape)]
    return tuple(shape)


def _check_kinds(c: _Ctx, ts: list[TensorType], kinds, constraint: str = "I1") -> None:
    for i, t in enumerate(ts):
        if not kind_matches(t.element_type, kinds):
            c.fail(constraint, f"operand #{i} must be a tensor of {kinds_text(kinds)} type, found {t}")


def _unary_rule(opname: str):
    kinds, res, shape_c, elem_c = _UNARY[opname]

    def rule(c: _Ctx):
        c.count(1)
        t = c.tensor(0)
        _check_kinds(c, [t], kinds)
        et = t.element_type
        if res == "i1":
            return [_result(TensorType(t.shape, i1), "exact", shape_c)]
        if res == "component":
            et = _component(et)
        return [_result(TensorType(t.shape, et), _quant_match(et), elem_c or shape_c)]
    return rule


def _binary_rule(opname: str):
    kinds, cons = _BINARY[opname]

    def rule(c: _Ctx):
        c.count(2)
        ts = c.tensors()
        _check_kinds(c, ts, kinds)
        shape = _same_shape(c, ts, cons)
        a, b = (t.element_type for t in ts)
        if _is_quant(a) or _is_quant(b):
            c.need(_is_quant(a) and _is_quant(b), "C2" if opname == "add" else cons,
                   f"operands must both be quantized or both not, found {ts[0]} and {ts[1]}")
            if opname == "add":  # add spells out its quantized rules; per-axis-ness may differ
                c.need(a.storage_type == b.storage_type, "C3",
                       f"quantized operands must have the same storage type, found {a} and {b}")
                c.need(a.expressed_type == b.expressed_type, "C4",
                       f"quantized operands must have the same expressed type, found {a} and {b}")
            else:
                c.need(baseline_element(a) == baseline_element(b), cons,
                       f"operand element types must match up to scales and zero points, found {a} and {b}")
            et = b if (_per_axis(b) and not _per_axis(a)) else a
            return [_result(TensorType(shape, et), "baseline", cons)]
        c.need(a == b, cons, f"operand element types must match, found {a} and {b}")
        return [_result(TensorType(shape, a), "exact", cons)]
    return rule


for _n in _UNARY:
    RULES["stablehlo." + _n] = _unary_rule(_n)
for _n in _BINARY:
    RULES["stablehlo." + _n] = _binary_rule(_n)


def _chlo_rule(kinds, nops: int, pred: bool = False):
    def rule(c: _Ctx):
        c.count(nops)
        ts = c.tensors()
        _check_kinds(c, ts, kinds)
        shape = _same_shape(c, ts, None)
        if nops == 2:
            c.need(baseline_element(ts[0].element_type) == baseline_element(ts[1].element_type), None,
                   f"operand element types must match, found {ts[0]} and {ts[1]}")
        et = i1 if pred else ts[0].element_type
        return [_result(TensorType(shape, et), _quant_match(et))]
    return rule


for _n, _k in _CHLO_UNARY.items():
    RULES["chlo." + _n] = _chlo_rule(_k, 1)
for _n in _CHLO_PRED:
    RULES["chlo." + _n] = _chlo_rule(FLOAT_Q, 1, pred=True)
for _n, _k in _CHLO_BINARY.items():
    RULES["chlo." + _n] = _chlo_rule(_k, 2)


@_rule("compare")
def _compare(c: _Ctx):
    c.count(2)
    lhs, rhs = c.tensors()
    c.need(baseline_element(lhs.element_type) == baseline_element(rhs.element_type), "C1",
           f"operand element types must match, found {lhs.element_type} and {rhs.element_type}")
    shape = _same_shape(c, [lhs, rhs], "C2")
    ct = c.value("compare_type", None)
    if ct is not None:
        et = lhs.element_type
        cands = [et.storage_type, et.expressed_type] if _is_quant(et) else [et]

        def ok(e):
            if ct == "SIGNED":
                return e.is_int and e.is_signed
            if ct == "UNSIGNED":
                return e.is_bool or e.is_unsigned
            if ct == "FLOAT":
                return e.is_float or e.is_complex
            if ct == "TOTALORDER":
                return e.is_float
            return False
        need = {"SIGNED": "a signed integer", "UNSIGNED": "an unsigned integer or boolean",
                "FLOAT": "a floating-point or complex", "TOTALORDER": "a floating-point"}.get(ct)
        c.need(need is not None, "C3", f"unknown compare_type {ct}")
        c.need(any(ok(e) for e in cands), "C3",
               f"compare_type {ct} needs {need} element type, found {et}")
    return [_result(TensorType(shape, i1), "exact", "C2")]


@_rule("complex")
def _complex(c: _Ctx):
    c.count(2)
    lhs, rhs = c.tensors()
    c.need(lhs.element_type in (ELEMENT_TYPES["f32"], ELEMENT_TYPES["f64"]), "I1",
           f"operands must be tensors of f32 or f64, found {lhs}")
    c.need(lhs.element_type == rhs.element_type, "C1",
           f"operand types must match, found {lhs} and {rhs}")
    shape = _same_shape(c, [lhs, rhs], "C1")
    return [_result(TensorType(shape, ELEMENT_TYPES[f"complex<{lhs.element_type.name}>"]), "exact", "C3")]


@_rule("select")
def _select(c: _Ctx):
    c.count(3)
    pred, on_true, on_false = c.tensors()
    c.need(pred.element_type == i1, "I1", f"pred must be a tensor of i1, found {pred}")
    c.need(baseline_element(on_true.element_type) == baseline_element(on_false.element_type), "C2",
           f"on_true and on_false must have the same element type, found {on_true} and {on_false}")
    shape = _same_shape(c, [on_true, on_false], "C2")
    c.need(pred.rank == 0 or shapes_compatible(pred.shape, shape), "C1",
           f"pred must be a scalar or have the shape of on_true {_shape_text(shape)}, found {pred}")
    et = on_true.element_type
    return [_result(TensorType(shape, et), _quant_match(et), "C2")]


@_rule("clamp")
def _clamp(c: _Ctx):
    c.count(3)
    mn, x, mx = c.tensors()
    c.need(mn.rank == 0 or shapes_compatible(mn.shape, x.shape), "C1",
           f"min must be a scalar or have the operand's shape {_shape_text(x.shape)}, found {mn}")
    c.need(mx.rank == 0 or shapes_compatible(mx.shape, x.shape), "C2",
           f"max must be a scalar or have the operand's shape {_shape_text(x.shape)}, found {mx}")
    b = baseline_element(x.element_type)
    c.need(baseline_element(mn.element_type) == b == baseline_element(mx.element_type), "C3",
           f"min, operand and max must have the same element type, found {mn.element_type}, "
           f"{x.element_type} and {mx.element_type}")
    return [_result(x.with_shape(x.shape), _quant_match(x.element_type), "C4")]


@_rule("uniform_dequantize")
def _dequantize(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    c.need(_is_quant(t.element_type), "I1", f"operand must be a quantized tensor, found {t}")
    return [_result(TensorType(t.shape, t.element_type.expressed_type), "exact", "C2")]


@_rule("interpreter.probe", "optimization_barrier")
def _same_types(c: _Ctx):
    return [_result(t, "exact", "C1") for t in c.types]


# ---------------------------------------------------------------- constants, tuples, tokens


@_rule("constant", "chlo.constant")
def _constant(c: _Ctx):
    c.count(0)
    v = c.raw("value")
    if v is None:
        c.fail(None, "missing attribute 'value'")
    t = getattr(v, "type", None)
    if t is None:
        raise ResultTypeRequired("the value attribute carries no type", None, c.name)
    return [_result(t, "exact", "C1")]


@_rule("tuple")
def _tuple(c: _Ctx):
    return [_result(TupleType(tuple(c.types)), "exact", "C1")]


@_rule("get_tuple_element")
def _get_tuple_element(c: _Ctx):
    c.count(1)
    t = c.types[0]
    c.need(isinstance(t, TupleType), "I1", f"operand must be a tuple, found {t}")
    idx = c.int("index")
    c.need(0 <= idx < len(t.types), "C1", f"index {idx} is out of range for {t}")
    return [_result(t.types[idx], "exact", "C2")]


@_rule("after_all", "create_token")
def _token(c: _Ctx):
    for i, t in enumerate(c.types):
        c.need(isinstance(t, TokenType), "I1", f"operand #{i} must be a token, found {t}")
    return [_result(TOKEN)]


@_rule("replica_id", "partition_id")
def _ids(c: _Ctx):
    c.count(0)
    return [_result(TensorType((), ui32))]


@_rule("get_dimension_size")
def _get_dimension_size(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    d = c.int("dimension")
    c.need(0 <= d < t.rank, "C1", f"dimension {d} is out of range for rank {t.rank}")
    return [_result(TensorType((), i32))]


# ---------------------------------------------------------------- shape manipulation


def _perm_check(c: _Ctx, perm, rank, constraint) -> None:
    c.need(sorted(perm) == list(range(rank)), constraint,
           f"permutation {perm} is not a permutation of range({rank})")


@_rule("transpose")
def _transpose(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    perm = c.ints("permutation")
    _perm_check(c, perm, t.rank, "C2")
    et = t.element_type
    if _per_axis(et):
        qd = perm.index(et.quantized_dimension)
        et = QuantizedType(et.storage_type, et.expressed_type, et.scales, et.zero_points, qd,
                           et.storage_min, et.storage_max)
    return [_result(TensorType(tuple(t.shape[p] for p in perm), et), "exact", "C3")]


@_rule("reverse")
def _reverse(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    dims = c.ints("dimensions")
    c.need(len(set(dims)) == len(dims), "C2", f"dimensions {dims} are not unique")
    for d in dims:
        c.need(0 <= d < t.rank, "C3", f"dimension {d} is out of range for rank {t.rank}")
    return [_result(t, "exact", "C1")]


@_rule("broadcast")
def _broadcast(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    sizes = c.ints("broadcast_sizes")
    for s in sizes:
        c.need(s >= 0, None, f"broadcast_sizes must be non-negative, found {sizes}")
    return [_result(TensorType(tuple(sizes) + tuple(t.shape), t.element_type))]


@_rule("slice")
def _slice(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    start, limit = c.ints("start_indices"), c.ints("limit_indices")
    strides = c.ints("strides", [1] * t.rank)
    c.need(len(start) == len(limit) == len(strides) == t.rank, "C2",
           f"start_indices, limit_indices and strides must each have {t.rank} entries (the operand's "
           f"rank), found {len(start)}, {len(limit)} and {len(strides)}")
    shape = []
    for d, (s, l, st, n) in enumerate(zip(start, limit, strides, t.shape)):
        c.need(0 <= s <= l and (n is None or l <= n), "C3",
               f"dimension {d}: need 0 <= start ({s}) <= limit ({l}) <= size ({'?' if n is None else n})")
        c.need(st > 0, "C4", f"strides must be positive, found {strides}")
        shape.append(-(-(l - s) // st))
    return [_result(TensorType(tuple(shape), t.element_type), "exact", "C5")]


def _index_scalars(c: _Ctx, lo: int, constraint_same: str) -> None:
    first = None
    for i in range(lo, len(c.types)):
        t = c.tensor(i, f"start index #{i - lo}")
        c.need(t.rank == 0 and kind_matches(t.element_type, INT), "I2" if constraint_same == "C3" else "I3",
               f"start indices must be 0-d integer tensors, found {t}")
        if first is None:
            first = t
        c.need(t == first, constraint_same, f"start indices must all have the same type, found {first} and {t}")


@_rule("dynamic_slice")
def _dynamic_slice(c: _Ctx):
    c.at_least(1)
    t = c.tensor(0)
    sizes = c.ints("slice_sizes")
    n_idx = len(c.types) - 1
    c.need(n_idx == len(sizes) == t.rank, "C2",
           f"need one start index and one slice size per operand dimension ({t.rank}), found "
           f"{n_idx} start indices and {len(sizes)} slice sizes")
    _index_scalars(c, 1, "C3")
    for d, (s, n) in enumerate(zip(sizes, t.shape)):
        c.need(0 <= s and (n is None or s <= n), "C4",
               f"slice size {s} of dimension {d} must be in [0, {'?' if n is None else n}]")
    return [_result(TensorType(tuple(sizes), t.element_type), "exact", "C5")]


@_rule("dynamic_update_slice")
def _dynamic_update_slice(c: _Ctx):
    c.at_least(2)
    t, u = c.tensor(0), c.tensor(1)
    c.need(u.element_type == t.element_type, "C2",
           f"update element type {u.element_type} must be the operand's {t.element_type}")
    c.need(u.rank == t.rank, "C3", f"update rank {u.rank} must be the operand's {t.rank}")
    c.need(len(c.types) - 2 == t.rank, "C4",
           f"need {t.rank} start indices (the operand's rank), found {len(c.types) - 2}")
    _index_scalars(c, 2, "C5")
    for d, (a, b) in enumerate(zip(u.shape, t.shape)):
        c.need(a is None or b is None or a <= b, "C6",
               f"update dimension {d} ({a}) exceeds the operand's ({b})")
    return [_result(t, "exact", "C1")]


@_rule("concatenate")
def _concatenate(c: _Ctx):
    c.need(len(c.types) > 0, "C3", "needs at least one input")
    ts = c.tensors()
    dim = c.int("dimension")
    first = ts[0]
    for t in ts[1:]:
        c.need(t.element_type == first.element_type, "C1",
               f"inputs must have the same element type, found {first.element_type} and {t.element_type}")
    c.need(0 <= dim < first.rank, "C4", f"dimension {dim} is out of range for rank {first.rank}")
    shape = list(first.shape)
    for t in ts[1:]:
        ok = t.rank == first.rank and all(
            d == dim or a is None or b is None or a == b for d, (a, b) in enumerate(zip(shape, t.shape)))
        c.need(ok, "C2", f"inputs must have the same shape except in dimension {dim}, found "
               + ", ".join(_shape_text(x.shape) for x in ts))
        shape = [a if d == dim else _merge_dims(a, b) for d, (a, b) in enumerate(zip(shape, t.shape))]
    shape[dim] = _dsum(*(t.shape[dim] for t in ts))
    return [_result(TensorType(tuple(shape), first.element_type), "exact", "C6")]


@_rule("pad")
def _pad(c: _Ctx):
    c.count(2)
    t, pv = c.tensors()
    c.need(pv.element_type == t.element_type, "C1",
           f"padding value element type {pv.element_type} must be the operand's {t.element_type}")
    c.need(pv.rank == 0, "I2", f"padding value must be a 0-d tensor, found {pv}")
    lo, hi, it = c.ints("edge_padding_low"), c.ints("edge_padding_high"), c.ints("interior_padding")
    c.need(len(lo) == len(hi) == len(it) == t.rank, "C2",
           f"edge_padding_low, edge_padding_high and interior_padding must each have {t.rank} entries, "
           f"found {len(lo)}, {len(hi)} and {len(it)}")
    c.need(all(x >= 0 for x in it), "C3", f"interior_padding must be non-negative, found {it}")
    shape = []
    for d, n in enumerate(t.shape):
        if n is None:
            shape.append(None)
            continue
        size = n + lo[d] + hi[d] + max(n - 1, 0) * it[d]
        c.need(size >= 0, "C4", f"dimension {d} would have negative size {size}")
        shape.append(size)
    return [_result(TensorType(tuple(shape), t.element_type), "exact", "C4")]


# ---------------------------------------------------------------- contractions


def _dot_dims(c: _Ctx):
    a = c.raw("dot_dimension_numbers")
    d = a.to_python() if a is not None else {}
    get = lambda k: [_as_int(x) for x in d.get(k, [])]  # noqa: E731
    return (get("lhs_batching_dimensions"), get("rhs_batching_dimensions"),
            get("lhs_contracting_dimensions"), get("rhs_contracting_dimensions"))


def _dot_quant(c: _Ctx, lhs: TensorType, rhs: TensorType, rc, shape, first_c: int):
    """Element-type constraints shared by dot_general (first_c = 13) and convolution (27)."""
    le, re_ = lhs.element_type, rhs.element_type
    C = lambda k: f"C{first_c + k}"  # noqa: E731
    if not _is_quant(le) and not _is_quant(re_):
        c.need(le == re_, C(0), f"lhs and rhs element types must match, found {le} and {re_}")
        # The spec ties the result element type to the operands only for convolution
        # (C27), but StableHLO accepts e.g. i8 x i8 -> i32 convolutions (a preferred
        # element type, as dot_general has); the suite has one, so it is free for both.
        return _result(TensorType(shape, le), "shape", C(0))
    if _is_quant(le):
        c.need(_is_quant(re_), C(1), f"a quantized lhs needs a quantized rhs, found {rhs}")
        c.need(le.storage_type == re_.storage_type, C(4),
               f"lhs and rhs storage types must match, found {le.storage_type} and {re_.storage_type}")
        c.need(le.expressed_type == re_.expressed_type, C(5),
               f"lhs and rhs expressed types must match, found {le.expressed_type} and {re_.expressed_type}")
        return _result(TensorType(shape, le), "shape", C(1))
    # hybrid: float lhs, quantized rhs
    c.need(le == re_.expressed_type, C(7),
           f"lhs element type {le} must be the rhs's expressed type {re_.expressed_type}")
    return _result(TensorType(shape, le), "exact", C(7))


@_rule("dot_general")
def _dot_general(c: _Ctx):
    c.count(2)
    lhs, rhs = c.tensors()
    lb, rb, lc, rc = _dot_dims(c)
    c.need(len(lb) == len(rb), "C1", f"lhs_batching_dimensions {lb} and rhs_batching_dimensions {rb} "
           "must have the same size")
    c.need(len(lc) == len(rc), "C2", f"lhs_contracting_dimensions {lc} and rhs_contracting_dimensions {rc} "
           "must have the same size")
    c.need(len(set(lb + lc)) == len(lb + lc), "C3",
           f"lhs batching {lb} and contracting {lc} dimensions must be unique")
    c.need(len(set(rb + rc)) == len(rb + rc), "C4",
           f"rhs batching {rb} and contracting {rc} dimensions must be unique")
    for dims, t, cons, what in ((lb, lhs, "C5", "lhs_batching"), (lc, lhs, "C6", "lhs_contracting"),
                                (rb, rhs, "C7", "rhs_batching"), (rc, rhs, "C8", "rhs_contracting")):
        for d in dims:
            c.need(0 <= d < t.rank, cons, f"{what}_dimensions {dims}: {d} is out of range for rank {t.rank}")
    for cons, ld, rd, what in (("C9", lb, rb, "batching"), ("C10", lc, rc, "contracting")):
        for a, b in zip(ld, rd):
            x, y = lhs.shape[a], rhs.shape[b]
            c.need(x is None or y is None or x == y, cons,
                   f"{what} dimension sizes differ: lhs dim {a} is {x}, rhs dim {b} is {y}")
    pc = c.raw("precision_config")
    if isinstance(pc, ArrayAttr):
        c.need(len(pc.elements) in (0, 2), "C11", f"precision_config must have 2 entries, found {pc}")
    lfree = [d for d in range(lhs.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.rank) if d not in rb and d not in rc]
    shape = tuple([_merge_dims(lhs.shape[a], rhs.shape[b]) for a, b in zip(lb, rb)]
                  + [lhs.shape[d] for d in lfree] + [rhs.shape[d] for d in rfree])
    if _is_quant(rhs.element_type):
        re_ = rhs.element_type
        c.need(all(z == 0 for z in re_.zero_points), "C15", f"rhs zero points must be 0, found {re_}")
        if _per_axis(re_):
            c.need(re_.quantized_dimension not in rc, "C16",
                   f"rhs quantization dimension {re_.quantized_dimension} must not be a contracting dimension")
    return [_dot_quant(c, lhs, rhs, rc, shape, 13)]


@_rule("dot")
def _dot(c: _Ctx):
    c.count(2)
    lhs, rhs = c.tensors()
    c.need(lhs.rank in (1, 2) and rhs.rank in (1, 2), None,
           f"operands must have rank 1 or 2, found {lhs} and {rhs}")
    x, y = lhs.shape[-1], rhs.shape[0]
    c.need(x is None or y is None or x == y, None, f"contracting dimension sizes differ: {x} and {y}")
    shape = tuple(lhs.shape[:-1]) + tuple(rhs.shape[1:])
    return [_dot_quant(c, lhs, rhs, [0], shape, 13)]


def _num_windows(size, window, stride, lo, hi, base_dil=1, win_dil=1):
    if size is None:
        return None
    dilated = 0 if size == 0 else (size - 1) * base_dil + 1
    padded = lo + dilated + hi
    dwin = 0 if window == 0 else (window - 1) * win_dil + 1
    if padded <= 0 or dwin > padded:
        return 0
    return (padded - dwin) // stride + 1


@_rule("convolution")
def _convolution(c: _Ctx):
    c.count(2)
    lhs, rhs = c.tensors()
    return [_conv_common(c, lhs, rhs)]


def _conv_common(c: _Ctx, lhs: TensorType, rhs: TensorType) -> Inferred:
    N = lhs.rank
    c.need(N == rhs.rank, "C1", f"lhs and rhs must have the same rank, found {lhs} and {rhs}")
    c.need(N >= 2, "C1", f"operands must have rank >= 2, found {N}")
    S = N - 2
    strides = c.ints("window_strides", [1] * S)
    c.need(len(strides) == S, "C2", f"window_strides must have {S} entries, found {strides}")
    c.need(all(s > 0 for s in strides), "C3", f"window_strides must be positive, found {strides}")
    pad, pshape = c.matrix("padding", S)
    c.need(tuple(pshape) == (S, 2), "C4", f"padding must have shape [{S}, 2], found {list(pshape)}")
    lhs_dil = c.ints("lhs_dilation", [1] * S)
    rhs_dil = c.ints("rhs_dilation", [1] * S)
    c.need(len(lhs_dil) == S, "C5", f"lhs_dilation must have {S} entries, found {lhs_dil}")
    c.need(all(s > 0 for s in lhs_dil), "C6", f"lhs_dilation must be positive, found {lhs_dil}")
    c.need(len(rhs_dil) == S, "C7", f"rhs_dilation must have {S} entries, found {rhs_dil}")
    c.need(all(s > 0 for s in rhs_dil), "C8", f"rhs_dilation must be positive, found {rhs_dil}")
    rev = c.raw("window_reversal")
    if rev is not None:
        n = len(rev.values) if isinstance(rev, DenseArrayAttr) else len(np.asarray(rev.to_python()).reshape(-1))
        c.need(n == S, "C9", f"window_reversal must have {S} entries, found {n}")
    dn = c.raw("dimension_numbers")
    if not isinstance(dn, ConvDimensionNumbersAttr):
        c.fail(None, "missing or malformed attribute 'dimension_numbers'")
    fgc = c.int("feature_group_count", 1)
    bgc = c.int("batch_group_count", 1)
    c.need(fgc > 0, "C21", f"feature_group_count must be positive, found {fgc}")
    c.need(bgc > 0, "C22", f"batch_group_count must be positive, found {bgc}")
    c.need(fgc == 1 or bgc == 1, "C23", f"feature_group_count ({fgc}) or batch_group_count ({bgc}) must be 1")
    ib, if_, isp = dn.input_batch_dimension, dn.input_feature_dimension, list(dn.input_spatial_dimensions)
    ki, ko, ksp = (dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension,
                   list(dn.kernel_spatial_dimensions))
    ob, of, osp = dn.output_batch_dimension, dn.output_feature_dimension, list(dn.output_spatial_dimensions)
    c.need(len(isp) == S, "C12", f"input_spatial_dimensions must have {S} entries, found {isp}")
    c.need(len(ksp) == S, "C17", f"kernel_spatial_dimensions must have {S} entries, found {ksp}")
    c.need(len(osp) == S, "C19", f"output_spatial_dimensions must have {S} entries, found {osp}")
    for dims, cons, what in (([ib] + isp + [if_], "C13", "input"), (ksp + [ki, ko], "C18", "kernel"),
                             ([ob] + osp + [of], "C20", "output")):
        c.need(len(set(dims)) == len(dims) and all(0 <= d < N for d in dims), cons,
               f"{what} dimensions {dims} must be unique and in [0, {N})")
    bdim, fdim = lhs.shape[ib], lhs.shape[if_]
    c.need(bdim is None or bdim % bgc == 0, "C10",
           f"input batch dimension size {bdim} must be divisible by batch_group_count {bgc}")
    c.need(fdim is None or fdim % fgc == 0, "C11",
           f"input feature dimension size {fdim} must be divisible by feature_group_count {fgc}")
    kin, kout = rhs.shape[ki], rhs.shape[ko]
    c.need(fdim is None or kin is None or kin == fdim // fgc, "C14",
           f"kernel input feature size {kin} must be input feature size {fdim} / feature_group_count {fgc}")
    c.need(kout is None or kout % bgc == 0, "C15",
           f"kernel output feature size {kout} must be divisible by batch_group_count {bgc}")
    c.need(kout is None or kout % fgc == 0, "C16",
           f"kernel output feature size {kout} must be divisible by feature_group_count {fgc}")
    pc = c.raw("precision_config")
    if isinstance(pc, ArrayAttr):
        c.need(len(pc.elements) in (0, 2), "C24", f"precision_config must have 2 entries, found {pc}")
    shape: list = [None] * N
    shape[ob] = None if bdim is None else bdim // bgc
    shape[of] = kout
    for s in range(S):
        lo, hi = pad[s]
        win = rhs.shape[ksp[s]]
        if win is None:  # a dynamic window: a dynamic result dimension
            shape[osp[s]] = None
            continue
        shape[osp[s]] = _num_windows(lhs.shape[isp[s]], win, strides[s], lo, hi, lhs_dil[s], rhs_dil[s])
    le, re_ = lhs.element_type, rhs.element_type
    if _per_axis(re_):
        c.need(re_.quantized_dimension == ko, "C29", f"rhs quantization dimension {re_.quantized_dimension} "
               f"must be kernel_output_feature_dimension {ko}")
    res = _dot_quant(c, lhs, rhs, [], tuple(shape), 27)
    return Inferred(res.type, res.match, "C25" if res.match == "shape" else res.constraint)


# ---------------------------------------------------------------- gather / scatter


@_rule("gather")
def _gather(c: _Ctx):
    c.count(2)
    operand, idx = c.tensors()
    sizes = c.ints("slice_sizes")
    return [_gather_common(c, operand, idx, sizes, batching=True)]


@_rule("dynamic_gather")
def _dynamic_gather(c: _Ctx):
    c.count(3)
    operand, idx, ss = c.tensors()
    c.need(ss.rank == 1 and kind_matches(ss.element_type, INT), "I3",
           f"slice_sizes must be a 1-d integer tensor, found {ss}")
    n = ss.shape[0]
    c.need(n is None or n == operand.rank, "C11", f"slice_sizes must have {operand.rank} entries, found {n}")
    res = _gather_common(c, operand, idx, [None] * operand.rank, batching=False)
    return [res]


def _gather_common(c: _Ctx, operand: TensorType, idx: TensorType, sizes, batching: bool):
    dn = c.raw("dimension_numbers")
    d = dn.to_python() if dn is not None else c.fail(None, "missing attribute 'dimension_numbers'")
    offset = [_as_int(x) for x in d.get("offset_dims", [])]
    collapsed = [_as_int(x) for x in d.get("collapsed_slice_dims", [])]
    obatch = [_as_int(x) for x in d.get("operand_batching_dims", [])]
    ibatch = [_as_int(x) for x in d.get("start_indices_batching_dims", [])]
    sim = [_as_int(x) for x in d.get("start_index_map", [])]
    ivd = _as_int(d.get("index_vector_dim", 0))
    C = (lambda k: k) if batching else (lambda k: {"C1": "C1", "C2": "C2", "C3": "C3", "C4": "C4", "C5": "C5",
                                                   "C6": "C6", "C7": "C6", "C8": "C7", "C9": "C8",
                                                   "C18": "C9", "C19": "C10", "C20": "C11", "C21": "C12",
                                                   "C22": "C13", "C23": "C14"}.get(k, k))
    R, I = operand.rank, idx.rank
    c.need(kind_matches(idx.element_type, INT), "I2", f"start_indices must be an integer tensor, found {idx}")
    c.need(R == len(offset) + len(collapsed) + len(obatch), C("C1"),
           f"operand rank {R} must equal size(offset_dims) {len(offset)} + size(collapsed_slice_dims) "
           f"{len(collapsed)}" + (f" + size(operand_batching_dims) {len(obatch)}" if batching else ""))
    c.need(0 <= ivd <= I, C("C2"), f"index_vector_dim {ivd} must be in [0, {I}]")
    nidx = (idx.shape[ivd] if ivd < I else 1)
    c.need(nidx is None or len(sim) == nidx, C("C3"),
           f"start_index_map {sim} must have {nidx} entries (the index vector size)")
    c.need(offset == sorted(set(offset)), C("C4"), f"offset_dims {offset} must be sorted and unique")
    rank_out = len(offset) + I - (1 if ivd < I else 0)
    for x in offset:
        c.need(0 <= x < rank_out, C("C5"), f"offset_dims {offset}: {x} is out of range for result rank {rank_out}")
    c.need(len(set(collapsed + obatch)) == len(collapsed + obatch), C("C6"),
           f"collapsed_slice_dims {collapsed} and operand_batching_dims {obatch} must be unique")
    c.need(collapsed == sorted(collapsed), C("C7"), f"collapsed_slice_dims {collapsed} must be sorted")
    for x in collapsed:
        c.need(0 <= x < R, C("C8"), f"collapsed_slice_dims {collapsed}: {x} is out of range for rank {R}")
    if len(sizes) == R:
        for x in collapsed:
            c.need(sizes[x] is None or sizes[x] <= 1, C("C9"),
                   f"slice_sizes[{x}] = {sizes[x]} must be <= 1 for a collapsed dimension")
    if batching:
        c.need(obatch == sorted(obatch), "C10", f"operand_batching_dims {obatch} must be sorted")
        for x in obatch:
            c.need(0 <= x < R, "C11", f"operand_batching_dims {obatch}: {x} is out of range for rank {R}")
            if len(sizes) == R:
                c.need(sizes[x] <= 1, "C12", f"slice_sizes[{x}] = {sizes[x]} must be <= 1 for a batching dim")
        c.need(len(set(ibatch)) == len(ibatch), "C13", f"start_indices_batching_dims {ibatch} must be unique")
        for x in ibatch:
            c.need(0 <= x < I, "C14", f"start_indices_batching_dims {ibatch}: {x} is out of range for rank {I}")
        c.need(ivd not in ibatch, "C15", f"index_vector_dim {ivd} must not be in start_indices_batching_dims")
        c.need(len(obatch) == len(ibatch), "C16",
               f"operand_batching_dims {obatch} and start_indices_batching_dims {ibatch} must have equal sizes")
        for a, b in zip(obatch, ibatch):
            x, y = operand.shape[a], idx.shape[b]
            c.need(x is None or y is None or x == y, "C17",
                   f"batching dimension sizes differ: operand dim {a} is {x}, start_indices dim {b} is {y}")
    c.need(len(set(sim + obatch)) == len(sim + obatch), C("C18"),
           f"start_index_map {sim} and operand_batching_dims {obatch} must be unique")
    for x in sim:
        c.need(0 <= x < R, C("C19"), f"start_index_map {sim}: {x} is out of range for rank {R}")
    c.need(len(sizes) == R, C("C20"), f"slice_sizes must have {R} entries (the operand's rank), found {len(sizes)}")
    for dd, (s, n) in enumerate(zip(sizes, operand.shape)):
        c.need(s is None or (0 <= s and (n is None or s <= n)), C("C21"),
               f"slice_sizes[{dd}] = {s} must be in [0, {'?' if n is None else n}]")
    batch_sizes = [n for k, n in enumerate(idx.shape) if k != ivd]
    offset_sizes = [s for k, s in enumerate(sizes) if k not in collapsed and k not in obatch]
    shape: list = []
    bi = oi = 0
    for k in range(rank_out):
        if k in offset:
            shape.append(offset_sizes[oi])
            oi += 1
        else:
            shape.append(batch_sizes[bi])
            bi += 1
    return _result(TensorType(tuple(shape), operand.element_type), "exact", C("C22"))


def _check_reducer(c: _Ctx, ri: int, elems: list, constraint: str, what: str = "body") -> Optional[list]:
    """Check a reduction body of type (tensor<E0>.., tensor<E0>..) -> (tensor<E0>..) with
    is_promotable(elems[i], Ei); return [Ei] (None when the region is not given)."""
    if ri >= len(c.regions):
        return None
    ins, outs = region_signature(c.regions[ri])
    n = len(elems)
    sig = _sig_text(ins, outs)
    c.need(len(ins) == 2 * n and len(outs) == n, constraint,
           f"{what} must take {2 * n} scalars and return {n}, found {sig}")
    es = []
    for i in range(n):
        a, b, r = ins[i], ins[n + i], outs[i]
        ok = (isinstance(a, TensorType) and a.rank == 0 and a == b and isinstance(r, TensorType)
              and r.rank == 0 and r.element_type == a.element_type)
        c.need(ok, constraint, f"{what} must have type (tensor<E0>, ..., tensor<E0>, ...) -> (tensor<E0>, ...), "
               f"found {sig}")
        c.need(is_promotable(elems[i], a.element_type), constraint,
               f"{what} element type {a.element_type} cannot hold input element type {elems[i]}")
        es.append(a.element_type)
    return es


@_rule("scatter")
def _scatter(c: _Ctx):
    n3 = len(c.types)
    c.need(n3 >= 3 and n3 % 2 == 1, "C5", f"needs N inputs, 1 scatter_indices and N updates, found {n3} operands")
    N = (n3 - 1) // 2
    inputs, idx, updates = c.tensors(0, N), c.tensor(N), c.tensors(N + 1)
    d = c.value("scatter_dimension_numbers")
    uwd = [_as_int(x) for x in d.get("update_window_dims", [])]
    iwd = [_as_int(x) for x in d.get("inserted_window_dims", [])]
    ibd = [_as_int(x) for x in d.get("input_batching_dims", [])]
    sibd = [_as_int(x) for x in d.get("scatter_indices_batching_dims", [])]
    sdod = [_as_int(x) for x in d.get("scatter_dims_to_operand_dims", [])]
    ivd = _as_int(d.get("index_vector_dim", 0))
    in0, up0 = inputs[0], updates[0]
    R, I = in0.rank, idx.rank
    _same_shape(c, inputs, "C1")
    c.need(R == len(uwd) + len(iwd) + len(ibd), "C2",
           f"input rank {R} must equal size(update_window_dims) {len(uwd)} + size(inserted_window_dims) "
           f"{len(iwd)} + size(input_batching_dims) {len(ibd)}")
    _same_shape(c, updates, "C3")
    c.need(kind_matches(idx.element_type, INT), "I2", f"scatter_indices must be an integer tensor, found {idx}")
    c.need(0 <= ivd <= I, "C22", f"index_vector_dim {ivd} must be in [0, {I}]")
    c.need(uwd == sorted(set(uwd)), "C7", f"update_window_dims {uwd} must be sorted and unique")
    for x in uwd:
        c.need(0 <= x < up0.rank, "C8", f"update_window_dims {uwd}: {x} is out of range for rank {up0.rank}")
    c.need(len(set(iwd + ibd)) == len(iwd + ibd), "C9",
           f"inserted_window_dims {iwd} and input_batching_dims {ibd} must be unique")
    c.need(iwd == sorted(iwd), "C10", f"inserted_window_dims {iwd} must be sorted")
    for x in iwd:
        c.need(0 <= x < R, "C11", f"inserted_window_dims {iwd}: {x} is out of range for rank {R}")
    c.need(ibd == sorted(ibd), "C12", f"input_batching_dims {ibd} must be sorted")
    for x in ibd:
        c.need(0 <= x < R, "C13", f"input_batching_dims {ibd}: {x} is out of range for rank {R}")
    c.need(len(set(sibd)) == len(sibd), "C14", f"scatter_indices_batching_dims {sibd} must be unique")
    for x in sibd:
        c.need(0 <= x < I, "C15", f"scatter_indices_batching_dims {sibd}: {x} is out of range for rank {I}")
    c.need(ivd not in sibd, "C16", f"index_vector_dim {ivd} must not be in scatter_indices_batching_dims")
    c.need(len(ibd) == len(sibd), "C17",
           f"input_batching_dims {ibd} and scatter_indices_batching_dims {sibd} must have equal sizes")
    for a, b in zip(ibd, sibd):
        x, y = in0.shape[a], idx.shape[b]
        c.need(x is None or y is None or x == y, "C18",
               f"batching dimension sizes differ: input dim {a} is {x}, scatter_indices dim {b} is {y}")
    nidx = idx.shape[ivd] if ivd < I else 1
    c.need(nidx is None or len(sdod) == nidx, "C19",
           f"scatter_dims_to_operand_dims {sdod} must have {nidx} entries (the index vector size)")
    c.need(len(set(sdod + ibd)) == len(sdod + ibd), "C20",
           f"scatter_dims_to_operand_dims {sdod} and input_batching_dims {ibd} must be unique")
    for x in sdod:
        c.need(0 <= x < R, "C21", f"scatter_dims_to_operand_dims {sdod}: {x} is out of range for rank {R}")
    # (C4) the updates' shape
    scatter_sizes = [n for k, n in enumerate(idx.shape) if k != ivd]
    window_bounds = [n for k, n in enumerate(in0.shape) if k not in iwd and k not in ibd]
    want_rank = len(uwd) + len(scatter_sizes)
    c.need(up0.rank == want_rank, "C4", f"updates must have rank {want_rank}, found {up0}")
    si = wi = 0
    for k, n in enumerate(up0.shape):
        if k in uwd:
            b = window_bounds[wi] if wi < len(window_bounds) else None
            c.need(n is None or b is None or n <= b, "C4",
                   f"updates dimension {k} ({n}) exceeds the input's window bound ({b})")
            wi += 1
        else:
            s = scatter_sizes[si]
            c.need(n is None or s is None or n == s, "C4",
                   f"updates dimension {k} ({n}) must be the scatter_indices size {s}")
            si += 1
    for i, (a, u) in enumerate(zip(inputs, updates)):
        c.need(a.element_type == u.element_type, "C6",
               f"updates #{i} element type {u.element_type} must be the input's {a.element_type}")
    es = _check_reducer(c, 0, [t.element_type for t in inputs], "C23", "update_computation")
    es = es or [t.element_type for t in inputs]
    return [_result(TensorType(t.shape, e), "exact", "C25") for t, e in zip(inputs, es)]


# ---------------------------------------------------------------- reductions, windows


@_rule("reduce")
def _reduce(c: _Ctx):
    n2 = len(c.types)
    c.need(n2 >= 2 and n2 % 2 == 0, "C3", f"needs N inputs and N init values, found {n2} operands")
    N = n2 // 2
    inputs, inits = c.tensors(0, N), c.tensors(N)
    shape = _same_shape(c, inputs, "C1")
    for i, (a, b) in enumerate(zip(inputs, inits)):
        c.need(a.element_type == b.element_type, "C2",
               f"init value #{i} element type {b.element_type} must be the input's {a.element_type}")
        c.need(b.rank == 0, "I2", f"init value #{i} must be a 0-d tensor, found {b}")
    dims = c.ints("dimensions")
    for x in dims:
        c.need(0 <= x < len(shape), "C4", f"dimensions {dims}: {x} is out of range for rank {len(shape)}")
    c.need(len(set(dims)) == len(dims), "C5", f"dimensions {dims} must be unique")
    es = _check_reducer(c, 0, [t.element_type for t in inputs], "C6") or [t.element_type for t in inputs]
    out = tuple(n for k, n in enumerate(shape) if k not in dims)
    return [_result(TensorType(out, e), "exact", "C7") for e in es]


def _window_attrs(c: _Ctx, rank: int, first_c: int):
    C = lambda k: f"C{first_c + k}"  # noqa: E731
    wd = c.ints("window_dimensions")
    c.need(len(wd) == rank, C(0), f"window_dimensions must have {rank} entries, found {wd}")
    c.need(all(x > 0 for x in wd), C(1), f"window_dimensions must be positive, found {wd}")
    ws = c.ints("window_strides", [1] * rank)
    c.need(len(ws) == rank, C(2), f"window_strides must have {rank} entries, found {ws}")
    c.need(all(x > 0 for x in ws), C(3), f"window_strides must be positive, found {ws}")
    return wd, ws


@_rule("reduce_window")
def _reduce_window(c: _Ctx):
    n2 = len(c.types)
    c.need(n2 >= 2 and n2 % 2 == 0, "C1", f"needs N inputs and N init values, found {n2} operands")
    N = n2 // 2
    inputs, inits = c.tensors(0, N), c.tensors(N)
    shape = _same_shape(c, inputs, "C2")
    for i, (a, b) in enumerate(zip(inputs, inits)):
        c.need(a.element_type == b.element_type, "C3",
               f"init value #{i} element type {b.element_type} must be the input's {a.element_type}")
    R = len(shape)
    wd, ws = _window_attrs(c, R, 4)
    bd = c.ints("base_dilations", [1] * R)
    c.need(len(bd) == R, "C8", f"base_dilations must have {R} entries, found {bd}")
    c.need(all(x > 0 for x in bd), "C9", f"base_dilations must be positive, found {bd}")
    wdl = c.ints("window_dilations", [1] * R)
    c.need(len(wdl) == R, "C10", f"window_dilations must have {R} entries, found {wdl}")
    c.need(all(x > 0 for x in wdl), "C11", f"window_dilations must be positive, found {wdl}")
    pad, pshape = c.matrix("padding", R)
    c.need(tuple(pshape) == (R, 2), "C12", f"padding must have shape [{R}, 2], found {list(pshape)}")
    es = _check_reducer(c, 0, [t.element_type for t in inputs], "C13") or [t.element_type for t in inputs]
    out = tuple(_num_windows(shape[k], wd[k], ws[k], pad[k][0], pad[k][1], bd[k], wdl[k]) for k in range(R))
    return [_result(TensorType(out, e), "exact", "C15") for e in es]


@_rule("select_and_scatter")
def _select_and_scatter(c: _Ctx):
    c.count(3)
    operand, source, init = c.tensors()
    c.need(operand.element_type == source.element_type, "C1",
           f"source element type {source.element_type} must be the operand's {operand.element_type}")
    c.need(init.element_type == operand.element_type and init.rank == 0, "C3",
           f"init_value must be a 0-d tensor of {operand.element_type}, found {init}")
    R = operand.rank
    wd, ws = _window_attrs(c, R, 4)
    pad, pshape = c.matrix("padding", R)
    c.need(tuple(pshape) == (R, 2), "C8", f"padding must have shape [{R}, 2], found {list(pshape)}")
    want = tuple(_num_windows(operand.shape[k], wd[k], ws[k], pad[k][0], pad[k][1]) for k in range(R))
    c.need(shapes_compatible(want, source.shape), "C2",
           f"source shape must be the number of windows {_shape_text(want)}, found {source}")
    E = operand.element_type
    if len(c.regions) >= 1:
        ins, outs = region_signature(c.regions[0])
        s = TensorType((), E)
        c.need(len(ins) == 2 and ins[0] == s and ins[1] == s and len(outs) == 1
               and outs[0] == TensorType((), i1), "C9",
               f"select must have type ({s}, {s}) -> tensor<i1>, found {_sig_text(ins, outs)}")
    es = _check_reducer(c, 1, [E], "C10", "scatter")
    E2 = es[0] if es else E
    return [_result(TensorType(operand.shape, E2), "exact", "C11")]


@_rule("map")
def _map(c: _Ctx):
    c.need(len(c.types) > 0, "C2", "needs at least one input")
    ts = c.tensors()
    shape = _same_shape(c, ts, "C1")
    dims = c.ints("dimensions", list(range(len(shape))))
    c.need(dims == list(range(len(shape))), "C3", f"dimensions must be {list(range(len(shape)))}, found {dims}")
    if not c.regions:
        raise ResultTypeRequired("needs its computation region to infer the result type", None, c.name)
    ins, outs = region_signature(c.regions[0])
    want = [TensorType((), t.element_type) for t in ts]
    c.need(ins == want and len(outs) == 1 and isinstance(outs[0], TensorType) and outs[0].rank == 0, "C4",
           f"computation must have type ({', '.join(map(str, want))}) -> tensor<E>, found {_sig_text(ins, outs)}")
    return [_result(TensorType(shape, outs[0].element_type), "exact", "C4")]


@_rule("sort")
def _sort(c: _Ctx):
    c.need(len(c.types) > 0, "C1", "needs at least one input")
    ts = c.tensors()
    _same_shape(c, ts, "C3")
    R = ts[0].rank
    dim = c.int("dimension", -1)
    c.need(-R <= dim < R, "C4", f"dimension {dim} must be in [{-R}, {R})")
    if c.regions:
        ins, outs = region_signature(c.regions[0])
        want = []
        for t in ts:
            want += [TensorType((), t.element_type)] * 2
        c.need(ins == want and outs == [TensorType((), i1)], "C5",
               f"comparator must have type ({', '.join(map(str, want))}) -> tensor<i1>, found "
               f"{_sig_text(ins, outs)}")
    return [_result(t, "exact", "C2") for t in ts]


# ---------------------------------------------------------------- control flow


@_rule("while")
def _while(c: _Ctx):
    T = list(c.types)
    if len(c.regions) >= 1:
        ins, outs = region_signature(c.regions[0])
        c.need(len(ins) == len(T) and all(is_compatible(a, b) for a, b in zip(ins, T))
               and len(outs) == 1 and isinstance(outs[0], TensorType) and outs[0].rank == 0
               and outs[0].element_type == i1, "C1",
               f"cond must have type ({', '.join(map(str, T))}) -> tensor<i1>, found {_sig_text(ins, outs)}")
    if len(c.regions) >= 2:
        ins, outs = region_signature(c.regions[1])
        ok = (len(ins) == len(T) == len(outs) and all(is_compatible(a, b) for a, b in zip(ins, T))
              and all(is_compatible(a, b) for a, b in zip(outs, T)))
        c.need(ok, "C2", f"body must have type ({', '.join(map(str, T))}) -> ({', '.join(map(str, T))}), "
               f"found {_sig_text(ins, outs)}")
    return [_result(t, "exact", "C3") for t in T]


def _branches(c: _Ctx, first: int, c_args: str, c_same: str, c_res: str):
    if len(c.regions) < 1:
        raise ResultTypeRequired("needs its branches to infer result types", None, c.name)
    sigs = [region_signature(r) for r in c.regions]
    for k, (ins, outs) in enumerate(sigs):
        c.need(not ins, c_args, f"branch #{k} must take no arguments, found {_sig_text(ins, outs)}")
    outs0 = sigs[0][1]
    for k, (_, outs) in enumerate(sigs[1:], 1):
        c.need(len(outs) == len(outs0) and all(is_compatible(a, b) for a, b in zip(outs, outs0)), c_same,
               f"branches must return the same types, found ({', '.join(map(str, outs0))}) and "
               f"({', '.join(map(str, outs))}) in branch #{k}")
    return [_result(t, "exact", c_res) for t in outs0]


@_rule("if")
def _if(c: _Ctx):
    c.count(1)
    p = c.tensor(0, "pred")
    c.need(p.rank == 0 and p.element_type == i1, "I1", f"pred must be tensor<i1>, found {p}")
    c.need(len(c.regions) in (0, 2), None, f"needs 2 branches, found {len(c.regions)}")
    return _branches(c, 0, "C1", "C2", "C3")


@_rule("case")
def _case(c: _Ctx):
    c.count(1)
    p = c.tensor(0, "index")
    c.need(p.rank == 0 and p.element_type == i32, "I1", f"index must be tensor<i32>, found {p}")
    if not c.regions:
        raise ResultTypeRequired("needs its branches to infer result types", None, c.name)
    return _branches(c, 0, "C2", "C3", "C4")


# ---------------------------------------------------------------- linear algebra, fft, batch norm


@_rule("fft")
def _fft(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    kind = c.value("fft_type")
    n = c.ints("fft_length")
    c.need(len(n) <= t.rank, "C1", f"fft_length {n} has more entries than the operand's rank {t.rank}")
    c.need(1 <= len(n) <= 3, "C3", f"fft_length must have 1 to 3 entries, found {n}")
    et = t.element_type
    shape = list(t.shape)
    k = len(n)
    if kind in ("FFT", "IFFT"):
        c.need(kind_matches(et, {"complex"}), "C2", f"{kind} needs a complex operand, found {t}")
        # not a numbered spec constraint, but XLA's rule: backends transform exactly these dims
        c.need(shapes_compatible(shape[-k:], n), None,
               f"the operand's trailing dimensions {_shape_text(shape[-k:])} must be fft_length {n}")
        res = et
    elif kind == "RFFT":
        c.need(et in (ELEMENT_TYPES["f32"], ELEMENT_TYPES["f64"]), "C2",
               f"RFFT needs an f32 or f64 operand, found {t}")
        c.need(shapes_compatible(shape[-k:], n), "C4",
               f"the operand's trailing dimensions {_shape_text(shape[-k:])} must be fft_length {n}")
        res = ELEMENT_TYPES[f"complex<{et.name}>"]
        last = shape[-1]
        shape[-1] = None if last is None else (0 if last == 0 else last // 2 + 1)
    elif kind == "IRFFT":
        c.need(kind_matches(et, {"complex"}), "C2", f"IRFFT needs a complex operand, found {t}")
        res = et.component
        want = list(n)
        want[-1] = 0 if n[-1] == 0 else n[-1] // 2 + 1
        c.need(shapes_compatible(shape[-k:], want), "C5",
               f"the operand's trailing dimensions {_shape_text(shape[-k:])} must be {want} for fft_length {n}")
        shape[-k:] = n
    else:
        c.fail("I2", f"unknown fft_type {kind}")
    return [_result(TensorType(tuple(shape), res), "exact", "C5")]


@_rule("cholesky")
def _cholesky(c: _Ctx):
    c.count(1)
    a = c.tensor(0)
    _check_kinds(c, [a], FLOATISH)
    c.need(a.rank >= 2, "C2", f"operand must have rank >= 2, found {a}")
    x, y = a.shape[-2], a.shape[-1]
    c.need(x is None or y is None or x == y, "C3", f"the two minor dimensions must be equal, found {a}")
    return [_result(a, _quant_match(a.element_type), "C1")]


@_rule("triangular_solve")
def _triangular_solve(c: _Ctx):
    c.count(2)
    a, b = c.tensors()
    _check_kinds(c, [a, b], FLOATISH)
    c.need(baseline_element(a.element_type) == baseline_element(b.element_type), "C1",
           f"a and b must have the same element type, found {a.element_type} and {b.element_type}")
    c.need(2 <= a.rank == b.rank, "C2", f"a and b must have the same rank >= 2, found {a} and {b}")
    left = bool(c.value("left_side", False))
    c.need(shapes_compatible(a.shape[:-2], b.shape[:-2]), "C3",
           f"batch dimensions of a and b differ: {a} and {b}")
    k = b.shape[-2] if left else b.shape[-1]
    dims = [a.shape[-2], a.shape[-1], k]
    known = [x for x in dims if x is not None]
    c.need(len(set(known)) <= 1, "C3", f"a must be square and match b's {'rows' if left else 'columns'}, "
           f"found {a} and {b}")
    return [_result(b, _quant_match(b.element_type), "C4")]


def _feature(c: _Ctx, operand: TensorType, scales: list[TensorType], first_c: int):
    fi = c.int("feature_index")
    c.need(0 <= fi < operand.rank, "C1", f"feature_index {fi} is out of range for rank {operand.rank}")
    base = baseline_element(operand.element_type)
    for t in scales:
        c.need(baseline_element(t.element_type) == base, "C2",
               f"all operands must have the element type {operand.element_type}, found {t}")
        c.need(t.rank == 1, "I2", f"scale/offset/mean/variance must be 1-d, found {t}")
    n = operand.shape[fi]
    for k, t in enumerate(scales):
        c.need(n is None or t.shape[0] is None or t.shape[0] == n, f"C{first_c + k}",
               f"size {t.shape[0]} must be the feature dimension size {n}")
    return fi, n


@_rule("batch_norm_inference")
def _bn_inference(c: _Ctx):
    c.count(5)
    ts = c.tensors()
    _check_kinds(c, ts[:1], FLOAT_Q)
    _feature(c, ts[0], ts[1:], 3)
    return [_result(ts[0], _quant_match(ts[0].element_type), "C7")]


@_rule("batch_norm_training")
def _bn_training(c: _Ctx):
    c.count(3)
    ts = c.tensors()
    _check_kinds(c, ts[:1], FLOAT_Q)
    fi, n = _feature(c, ts[0], ts[1:], 3)
    vec = TensorType((n,), ts[0].element_type)
    return [_result(ts[0], _quant_match(ts[0].element_type), "C7"), _result(vec, "exact", "C5"),
            _result(vec, "exact", "C6")]


@_rule("batch_norm_grad")
def _bn_grad(c: _Ctx):
    c.count(5)
    operand, scale, mean, var, grad = c.tensors()
    _check_kinds(c, [operand], FLOAT_Q)
    fi, n = _feature(c, operand, [scale, mean, var], 5)
    c.need(baseline_element(grad.element_type) == baseline_element(operand.element_type), "C2",
           f"grad_output must have the element type {operand.element_type}, found {grad}")
    c.need(shapes_compatible(grad.shape, operand.shape), "C3",
           f"grad_output must have the operand's shape, found {grad} and {operand}")
    vec = TensorType((n,), operand.element_type)
    return [_result(operand, "exact", "C3"), _result(vec, "exact", "C4"), _result(vec, "exact", "C4")]


# ---------------------------------------------------------------- collectives


def _group_size(c: _Ctx, key: str = "replica_groups") -> Optional[int]:
    """dim(process_groups, 1) where it is known before run time: not for the
    cross_replica_and_partition mode (a channel id without use_global_device_ids), whose
    groups also span every partition, nor for empty replica groups (all replicas)."""
    ch = c.raw("channel_handle")
    handle = ch.to_python().get("handle", 0) if ch is not None and hasattr(ch, "fields") else 0
    if handle > 0 and c.raw("use_global_device_ids") is None and c.name != "stablehlo.all_to_all":
        return None
    a = c.raw(key)
    if isinstance(a, DenseElementsAttr):
        shape = tuple(a.type.shape)
        if len(shape) == 2 and shape[1] is not None and shape[0] != 0:
            return shape[1]
    return None


def _check_groups(c: _Ctx, constraint: str, key: str = "replica_groups") -> None:
    a = c.raw(key)
    if isinstance(a, DenseElementsAttr):
        vals = [int(x) for x in np.asarray(a.array).reshape(-1) if int(x) != -1]
        c.need(len(set(vals)) == len(vals), constraint, f"{key} must be unique, found {vals}")
        c.need(all(x >= 0 for x in vals), constraint, f"{key} must be non-negative, found {vals}")


@_rule("all_gather")
def _all_gather(c: _Ctx):
    ts = c.tensors()
    dim = c.int("all_gather_dim")
    _check_groups(c, "C2")
    n = _group_size(c)
    out = []
    for t in ts:
        c.need(0 <= dim < t.rank, "C1", f"all_gather_dim {dim} is out of range for rank {t.rank}")
        shape = list(t.shape)
        shape[dim] = None if (n is None or shape[dim] is None) else shape[dim] * n
        out.append(_result(TensorType(tuple(shape), t.element_type), "exact", "C6"))
    return out


def _reduction_computation(c: _Ctx, elems: list, constraint: str) -> Optional[list]:
    """A collective's computation (tensor<E>, tensor<E>) -> tensor<E> with every operand
    element type promotable to E; [E] * len(elems), or None without the region."""
    if not c.regions:
        return None
    ins, outs = region_signature(c.regions[0])
    e0 = ins[0].element_type if ins and isinstance(ins[0], TensorType) else None
    s = TensorType((), e0) if e0 is not None else None
    c.need(s is not None and len(ins) == 2 and ins[0] == s and ins[1] == s and outs == [s], constraint,
           f"computation must have type (tensor<E>, tensor<E>) -> tensor<E>, found {_sig_text(ins, outs)}")
    for e in elems:
        c.need(is_promotable(e, e0), constraint, f"computation element type {e0} cannot hold {e}")
    return [e0] * len(elems)


@_rule("all_reduce")
def _all_reduce(c: _Ctx):
    ts = c.tensors()
    _check_groups(c, "C1")
    elems = [t.element_type for t in ts]
    es = _reduction_computation(c, elems, "C5") or elems
    return [_result(TensorType(t.shape, e), "exact", "C6") for t, e in zip(ts, es)]


@_rule("collective_reduce")
def _collective_reduce(c: _Ctx):
    ts = c.tensors()
    _check_groups(c, "C1")
    if c.raw("has_dynamic_root") is not None:
        c.need(len(ts) >= 2, "C3", f"has_dynamic_root needs at least 2 operands, found {len(ts)}")
        ts = ts[:-1]
    elems = [t.element_type for t in ts]
    es = _reduction_computation(c, elems, "C4") or elems
    return [_result(TensorType(t.shape, e), "exact", "C3") for t, e in zip(ts, es)]


@_rule("reduce_scatter")
def _reduce_scatter(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    dim = c.int("scatter_dimension")
    c.need(0 <= dim < t.rank, "C2", f"scatter_dimension {dim} is out of range for rank {t.rank}")
    _check_groups(c, "C3")
    n = _group_size(c)
    if n is not None and t.shape[dim] is not None:
        c.need(t.shape[dim] % n == 0, "C1", f"dimension size {t.shape[dim]} must be divisible by the group size {n}")
    e = (_reduction_computation(c, [t.element_type], "C7") or [t.element_type])[0]
    shape = list(t.shape)
    shape[dim] = None if (n is None or shape[dim] is None) else shape[dim] // n
    return [_result(TensorType(tuple(shape), e), "exact", "C8")]


@_rule("all_to_all")
def _all_to_all(c: _Ctx):
    ts = c.tensors()
    sd, cd, k = c.int("split_dimension"), c.int("concat_dimension"), c.int("split_count")
    c.need(k > 0, "C4", f"split_count must be positive, found {k}")
    _check_groups(c, "C5")
    n = _group_size(c)
    if n is not None:
        c.need(n == k, "C8", f"replica groups must have split_count ({k}) members, found {n}")
    out = []
    for t in ts:
        c.need(0 <= sd < t.rank, "C1", f"split_dimension {sd} is out of range for rank {t.rank}")
        c.need(0 <= cd < t.rank, "C3", f"concat_dimension {cd} is out of range for rank {t.rank}")
        shape = list(t.shape)
        c.need(shape[sd] is None or shape[sd] % k == 0, "C2",
               f"split dimension size {shape[sd]} must be divisible by split_count {k}")
        if sd != cd:
            shape[sd] = None if shape[sd] is None else shape[sd] // k
            shape[cd] = None if shape[cd] is None else shape[cd] * k
        out.append(_result(TensorType(tuple(shape), t.element_type), "exact", "C9"))
    return out


@_rule("collective_permute")
def _collective_permute(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    a = c.raw("source_target_pairs")
    if isinstance(a, DenseElementsAttr):
        arr = np.asarray(a.array)
        shape = tuple(a.type.shape)
        c.need(len(shape) == 2 and (shape[1] == 2 or shape[0] == 0), "C1",
               f"source_target_pairs must have shape [N, 2], found {list(shape)}")
        if arr.size:
            arr = np.broadcast_to(arr, shape)
            c.need(len(set(arr[:, 0].tolist())) == shape[0], "C2", "sources in source_target_pairs must be unique")
            c.need(len(set(arr[:, 1].tolist())) == shape[0], "C3", "targets in source_target_pairs must be unique")
            c.need(bool((arr >= 0).all()), "C4", "source_target_pairs must be non-negative")
    return [_result(t, "exact", "C5")]


@_rule("collective_broadcast")
def _collective_broadcast(c: _Ctx):
    ts = c.tensors()
    _check_groups(c, "C1")
    dyn = bool(c.value("has_dynamic_root", False))
    if dyn:
        c.need(len(ts) >= 2, "C4", f"has_dynamic_root needs at least 2 operands, found {len(ts)}")
        ts = ts[:-1]
    else:
        c.need(len(ts) >= 1, "C3", "needs at least one operand")
    return [_result(t, "exact", "C3") for t in ts]


# ---------------------------------------------------------------- chlo


@_rule("chlo.top_k")
def _top_k(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    k = c.int("k")
    c.need(t.rank >= 1, None, f"operand must have rank >= 1, found {t}")
    last = t.shape[-1]
    c.need(k >= 0 and (last is None or k <= last), None, f"k = {k} must be in [0, {last}]")
    shape = tuple(t.shape[:-1]) + (k,)
    return [_result(TensorType(shape, t.element_type)), _result(TensorType(shape, i32))]


# ======================================================================= public API


SUPPORTED_OPS = frozenset(RULES)


def supports(op_name: str) -> bool:
    """Whether infer_result_types has a rule for this op."""
    return op_name in RULES


def infer_results(op_name: str, operand_types: Sequence[Type], attributes: Optional[dict] = None,
                  regions: Sequence = ()) -> list[Inferred]:
    """Inferred results with their match modes (see `Inferred`). Raises InferenceError
    when a constraint fails, ResultTypeRequired when the op has no rule or needs more
    (e.g. a branch region) than it was given."""
    rule = RULES.get(op_name)
    if rule is None:
        raise ResultTypeRequired("the result type is not determined by the operands and attributes; "
                                 "it must be given explicitly", None, op_name)
    return rule(_Ctx(op_name, operand_types, attributes, regions))


def infer_result_types(op_name: str, operand_types: Sequence[Type], attributes: Optional[dict] = None,
                       regions: Sequence = ()) -> list[Type]:
    """The result types of `op_name` applied to operands of `operand_types` with
    `attributes` (name -> Attribute) and `regions` (core.Region or FunctionType per
    region, for ops whose results depend on their bodies).

    Where the spec leaves part of the result free (dot_general's element type, a
    quantized result's scales), the natural choice is returned: the lhs element type,
    the operand's quantization parameters."""
    return [r.type for r in infer_results(op_name, operand_types, attributes, regions)]
