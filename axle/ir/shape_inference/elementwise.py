"""Shape inference rules of elementwise ops (StableHLO and CHLO), compare, select, clamp."""
from __future__ import annotations

from typing import Optional

from axle.ir.types import ELEMENT_TYPES, ElementType, TensorType
from axle.ir.shape_inference.core import (RULES, _Ctx, _is_quant, _merge_dims, _per_axis, _quant_match,
                                          _result, _rule, _shape_text, baseline_element, i1, kind_matches,
                                          kinds_text, shapes_compatible)

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
