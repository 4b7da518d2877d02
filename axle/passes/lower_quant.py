"""Lowering of quantized types to integer and float arithmetic (pass "lower-quant").

After this pass no value of the module has a `!quant.uniform` type (except around the ops
it refuses, see below): a quantized tensor becomes the tensor of its storage integers
(`tensor<4x!quant.uniform<i8:f32, 0.5:-3>>` -> `tensor<4xi8>`), which is exactly the
interpreter's runtime value of it. Function signatures, block arguments of regions and
constants change type accordingly. Every op that touches a quantized type is rewritten
into ordinary StableHLO ops that compute, bit for bit, what the interpreter computes for it
(axle/interpreter/ops_quant.py, whose dispatch this pass mirrors op for op):

* `uniform_quantize` float -> quant is the spec's `quantize` (numerics.py), each step in
  the expressed type: `divide` by the scale, `add` the zero point, `clamp` to the storage
  range (in f64 when the range's bounds are not exact in the expressed type),
  `round_nearest_even`, `convert` to the storage type (saturating, NaN -> 0).
* `uniform_dequantize` is `(convert(x) - zero_point)` in i32 (i64 for 32-bit storage),
  `convert` to the expressed type, `multiply` by the scale.
* Requantization (`uniform_quantize` quant -> quant) with f32 expressed types: `convert`
  the storage to f32, `multiply` by the merged scale `in_scale / out_scale`, `add` the
  merged zero point `out_zp - in_zp * merged_scale` (when not zero), `clamp` (storage
  narrower than 32 bits), `round_nearest_even`, `convert`. Other expressed types, or a
  change of quantized dimension: dequantize then quantize.
* `add` of per-tensor quantized operands (f32 expressed): both operands requantized to the
  result's parameters as i32, `lhs + rhs - zero_point` in i32, clamped to the storage range,
  converted. Per-axis add with one i32 type everywhere: `lhs + rhs - zero_point` per slice.
* `dot_general` (per-tensor lhs; rhs and result both per-tensor or both per-axis; f32
  expressed) and `convolution` (in the cases the interpreter lists in
  `_integer_convolution_supported`) in integers: an i32 dot/convolution of the storage
  values (wrapping, as the interpreter's `wrap_int` does), its zero-point part (a second dot
  of the zero-point-shifted values; for convolution `lhs_zp` times each output feature's
  kernel sum, a `reduce`), each multiplied in f32 by `lhs_scale * rhs_scale / result_scale`
  and truncated to i32 unless that factor is within 0.001 of 1, plus the result zero point.
* Ops that only move or select elements (one quantized type among operands and results,
  or any op with regions, and maximum/minimum/select with one quantized type) keep their
  op and work on the storage values: only their types change.
* Every other op is dequantize -> the op on the expressed types -> quantize (compare with
  `compare_type = FLOAT`), per tensor or per axis.

Per-axis scales and zero points are rank-1 constants broadcast along the quantized
dimension (`broadcast_in_dim`); per-tensor ones are scalars broadcast to the shape.

Refused (left quantized, with `bitcast_convert`s between storage and quantized types around
it, so the module stays valid and means the same): the ops the interpreter runs natively on
quantized values (collectives, send/recv, infeed/outfeed), arithmetic on storage types
wider than 32 bits, integer dot/convolution of storage types wider than 16 bits (the
interpreter computes those in float64, exact only for narrow storage), and arithmetic on
tensors of dynamic shape. `refused` lists them with the reason.

The CPU pipeline runs it as `LowerQuant(target="cpu")` (backends/cpu/pipeline.py), which
raises `Unsupported` for the first refused op instead of leaving it; `prepare_for_cpu`
does the same on a copy. The lowered program computes the interpreter's
answers bit for bit wherever the CPU backend itself does on the ops it is lowered to; the
one place it does not is a float contraction (the dequantize -> dot_general/convolution ->
quantize path): the backend sums floats in its own order (BLAS, tiling), which can move a
quantized result by one step.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.interpreter import ops_quant as Q
from axle.interpreter.numerics import round_float
from axle.interpreter.registry import OpCall
from axle.ir import attributes as A
from axle.ir.core import Block, Module, Operation, Region, Value
from axle.ir.types import (ELEMENT_TYPES, FunctionType, QuantizedType, TensorType, TupleType,
                           Type, i64)
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder

__all__ = ["LowerQuant", "has_quantized_types", "quantized_ops", "prepare_for_cpu"]

_SH = "stablehlo."
_F32 = ELEMENT_TYPES["f32"]
_F64 = ELEMENT_TYPES["f64"]
_I32 = ELEMENT_TYPES["i32"]
_I64 = ELEMENT_TYPES["i64"]

# Ops the interpreter evaluates itself (evaluator._SPECIAL) or that end a block: their
# quantized values are passed along as storage values.
_PASS_THROUGH = frozenset([
    "func.call", "func.return", "stablehlo.return", "stablehlo.while", "stablehlo.if",
    "stablehlo.case", "stablehlo.composite", "stablehlo.custom_call", "interpreter.run_parallel",
])

# Native ops (ops_quant.NATIVE_OPS) other than these two are left quantized and refused.
_QUANTIZE_OPS = frozenset([_SH + "uniform_quantize", _SH + "uniform_dequantize"])


class _CannotLower(Exception):
    """An op this pass leaves quantized; the message says why."""


# ---------------------------------------------------------------- types


def _has_quant(t) -> bool:
    if isinstance(t, TensorType):
        return isinstance(t.element_type, QuantizedType)
    if isinstance(t, TupleType):
        return any(_has_quant(x) for x in t.types)
    if isinstance(t, FunctionType):
        return any(_has_quant(x) for x in (*t.inputs, *t.results))
    return False


def _storage_type(t):
    """`t` with every quantized element type replaced by its storage type."""
    if isinstance(t, TensorType) and isinstance(t.element_type, QuantizedType):
        return t.with_element_type(t.element_type.storage_type)
    if isinstance(t, TupleType):
        return TupleType(tuple(_storage_type(x) for x in t.types))
    if isinstance(t, FunctionType):
        return FunctionType(tuple(_storage_type(x) for x in t.inputs),
                            tuple(_storage_type(x) for x in t.results))
    return t


def _qtype(t) -> Optional[QuantizedType]:
    return Q.quantized_element(t)


def has_quantized_types(module: Module) -> bool:
    """Whether any value, block argument or function signature of `module` is quantized."""
    return bool(quantized_ops(module, first_only=True))


def quantized_ops(module: Module, first_only: bool = False) -> list:
    """The ops that have a quantized operand, result, block argument or signature."""
    found = []
    for op in module.walk():
        types = [*(v.type for v in op.operands), *op.result_types]
        for r in op.regions:
            for b in r.blocks:
                types.extend(a.type for a in b.arguments)
        if op.name == "func.func":
            types.append(op.function_type)
        if any(_has_quant(t) for t in types):
            found.append(op)
            if first_only:
                break
    return found


# ---------------------------------------------------------------- building blocks


class _Emit:
    """Builds the integer/float ops of one lowering before the op being lowered."""

    def __init__(self, b: Builder):
        self.b = b

    def op(self, name: str, operands, t: Type, attrs: Optional[dict] = None, regions=()) -> Value:
        return self.b.create(name, list(operands), [t], attrs or {}, regions).result

    def convert(self, x: Value, et) -> Value:
        if x.type.element_type == et:
            return x
        return self.op(_SH + "convert", [x], x.type.with_element_type(et))

    def binary(self, name: str, x: Value, y: Value) -> Value:
        return self.op(_SH + name, [x, y], x.type)

    def unary(self, name: str, x: Value) -> Value:
        return self.op(_SH + name, [x], x.type)

    def clamp(self, lo: Value, x: Value, hi: Value) -> Value:
        return self.op(_SH + "clamp", [lo, x, hi], x.type)

    def param(self, values, et, shape, axis: Optional[int]) -> Value:
        """A tensor of `shape` and element type `et` holding `values`: one value everywhere
        (axis None), or values[i] in slice i along `axis`. `values` must already be exact
        in `et` (float constants are rounded by the caller with numerics.round_float)."""
        values = np.asarray(values).reshape(-1)
        if axis is None:
            scalar = self.b.constant(values[:1].reshape(()), TensorType((), et))
            if not shape:  # scalar code (e.g. a reduction body) has no broadcasts
                return scalar
            dims: tuple = ()
        else:
            if len(values) != shape[axis]:  # never broadcast a table of another size
                raise ValueError(f"{len(values)} per-axis values for a quantized dimension of size "
                                 f"{shape[axis]} (the verifier's C13 refuses such a type)")
            scalar = self.b.constant(values, TensorType((len(values),), et))
            dims = (axis,)
        return self.op(_SH + "broadcast_in_dim", [scalar], TensorType(tuple(shape), et),
                       {"broadcast_dimensions": A.DenseArrayAttr(i64, dims)})


def _static_shape(t) -> tuple:
    if not isinstance(t, TensorType) or not t.is_static:
        raise _CannotLower(f"dynamic shape {t}")
    return tuple(t.shape)


def _check_storage(q: QuantizedType) -> None:
    if q.storage_type.bitwidth > 32:
        raise _CannotLower(f"arithmetic on the {q.storage_type} storage of {q}")


def _exact_in(value: float, et) -> bool:
    return float(round_float(np.float64(value), et)) == float(value)


def _quantize(e: _Emit, x: Value, q: QuantizedType) -> Value:
    """The spec's quantize (numerics.quantize) of float tensor `x`: storage values of `q`."""
    _check_storage(q)
    shape = _static_shape(x.type)
    expressed = q.expressed_type
    axis = q.quantized_dimension
    scales = round_float(np.asarray(q.scales, np.float64), expressed)
    zero_points = round_float(np.asarray(q.zero_points, np.float64), expressed)
    if x.type.element_type == expressed:
        scaled = e.binary("divide", x, e.param(scales, expressed, shape, axis))
    else:  # computed from the float64 value of x, rounded once to the expressed type
        wide = e.convert(x, _F64)
        scaled = e.convert(e.binary("divide", wide, e.param(np.asarray(scales, np.float64), _F64,
                                                               shape, axis)), expressed)
    shifted = e.binary("add", scaled, e.param(zero_points, expressed, shape, axis))
    lo, hi = q.min_value, q.max_value
    if _exact_in(lo, expressed) and _exact_in(hi, expressed):
        clamp_et, value = expressed, shifted
    else:  # the bounds are not exact in the expressed type: clamp as the interpreter does
        clamp_et, value = _F64, e.convert(shifted, _F64)
    clamped = e.clamp(e.param(round_float(np.float64(lo), clamp_et), clamp_et, shape, None), value,
                      e.param(round_float(np.float64(hi), clamp_et), clamp_et, shape, None))
    return e.convert(e.unary("round_nearest_even", clamped), q.storage_type)


def _dequantize(e: _Emit, x: Value, q: QuantizedType) -> Value:
    """The spec's dequantize (numerics.dequantize) of storage values `x`."""
    _check_storage(q)
    shape = _static_shape(x.type)
    expressed = q.expressed_type
    axis = q.quantized_dimension
    wide_et = _I32 if q.storage_type.bitwidth <= 16 and all(
        abs(int(z)) < 2 ** 30 for z in q.zero_points) else _I64
    centered = e.convert(x, wide_et)
    if any(int(z) != 0 for z in q.zero_points):
        centered = e.binary("subtract", centered,
                            e.param(np.asarray(q.zero_points, np.int64), wide_et, shape, axis))
    scales = round_float(np.asarray(q.scales, np.float64), expressed)
    return e.binary("multiply", e.convert(centered, expressed),
                    e.param(scales, expressed, shape, axis))


def _requantize(e: _Emit, x: Value, source: QuantizedType, target: QuantizedType,
                storage=None) -> Value:
    """ops_quant.requantize: storage values of `source` -> of `target` (or of the integer
    type `storage`)."""
    storage = storage or target.storage_type
    if source == target:
        return e.convert(x, storage)
    _check_storage(source)
    _check_storage(target)
    if source.expressed_type != _F32 or target.expressed_type != _F32 \
            or Q._changes_quantized_dimension(source, target):
        return e.convert(_quantize(e, _dequantize(e, x, source), target), storage)
    shape = _static_shape(x.type)
    merged_scale, merged_zp = Q._merged_scale_and_zero_point(source, target, len(shape))
    axis = target.quantized_dimension
    if axis is None:
        axis = source.quantized_dimension
    if np.ndim(merged_scale) == 0:
        axis = None
    value = e.binary("multiply", e.convert(x, _F32),
                     e.param(np.asarray(merged_scale, np.float32), _F32, shape, axis))
    if np.any(merged_zp != 0):
        value = e.binary("add", value, e.param(np.asarray(merged_zp, np.float32), _F32, shape, axis))
    if storage.bitwidth < 32:
        value = e.clamp(e.param(np.float32(target.min_value), _F32, shape, None), value,
                        e.param(np.float32(target.max_value), _F32, shape, None))
    return e.convert(e.unary("round_nearest_even", value), storage)


# ---------------------------------------------------------------- integer kernels


def _call(op: Operation, operand_types, result_types) -> OpCall:
    """What the interpreter's quantized kernels look at: types and attributes."""
    return OpCall(op.name, [], list(operand_types), list(result_types),
                  {k: a.to_python() for k, a in op.attributes.items()})


def _add(e: _Emit, op: Operation, operands, call: OpCall) -> Optional[list]:
    """ops_quant._quantized_add; None where the interpreter uses dequantize_op_quantize."""
    lhs_q, rhs_q, result_q = (_qtype(t) for t in (*call.operand_types, call.result_type))
    if not (lhs_q and rhs_q and result_q and Q._all_f32(lhs_q, rhs_q, result_q)):
        return None
    lhs, rhs = operands
    shape = _static_shape(lhs.type)
    if any(Q._is_per_axis(q) for q in (lhs_q, rhs_q, result_q)):
        if not (lhs_q == rhs_q == result_q and result_q.storage_type == _I32):
            return None
        zero_points = e.param(np.asarray(result_q.zero_points, np.int64), _I32, shape,
                              result_q.quantized_dimension)
        return [e.binary("subtract", e.binary("add", lhs, rhs), zero_points)]
    _check_storage(result_q)
    lhs32 = _requantize(e, lhs, lhs_q, result_q, storage=_I32)
    rhs32 = _requantize(e, rhs, rhs_q, result_q, storage=_I32)
    total = e.binary("add", lhs32, rhs32)
    zp = int(result_q.zero_points[0])
    if zp != 0:
        total = e.binary("subtract", total, e.param(np.int64(zp), _I32, shape, None))
    if result_q.storage_type.bitwidth < 32:
        total = e.clamp(e.param(np.int64(result_q.min_value), _I32, shape, None), total,
                        e.param(np.int64(result_q.max_value), _I32, shape, None))
    return [e.convert(total, result_q.storage_type)]


def _check_exact_contraction(*qs: QuantizedType) -> None:
    for q in qs:
        if q.storage_type.bitwidth > 16:
            raise _CannotLower(f"integer contraction of {q} storage (the interpreter computes it "
                               f"in float64, exact only for storage of up to 16 bits)")


def _dot_general(e: _Emit, op: Operation, operands, call: OpCall) -> Optional[list]:
    """ops_quant._quantized_dot_general."""
    if Q._dot_like_kind(call) is None:
        return None
    lhs_q, rhs_q = (_qtype(t) for t in call.operand_types[:2])
    _check_exact_contraction(lhs_q, rhs_q)
    result_t = call.result_type
    shape = _static_shape(result_t)
    out_t = TensorType(shape, _I32)
    lhs, rhs = (e.convert(v, _I32) for v in operands[:2])
    attrs = {k: a for k, a in op.attributes.items() if k != "algorithm"}
    raw = e.op(op.name, [lhs, rhs], out_t, attrs)
    lhs_zp = int(lhs_q.zero_points[0])
    rhs_zp = 0 if Q._is_per_axis(rhs_q) else int(rhs_q.zero_points[0])
    if lhs_zp == 0 and rhs_zp == 0:
        return [_dot_like_in_integers(e, call, raw, None)]
    if lhs_zp != 0:
        lhs = e.binary("subtract", lhs, e.param(np.int64(lhs_zp), _I32, lhs.type.shape, None))
    if rhs_zp != 0:
        rhs = e.binary("subtract", rhs, e.param(np.int64(rhs_zp), _I32, rhs.type.shape, None))
    centered = e.op(op.name, [lhs, rhs], out_t, attrs)
    return [_dot_like_in_integers(e, call, raw, e.binary("subtract", raw, centered))]


def _convolution(e: _Emit, op: Operation, operands, call: OpCall) -> Optional[list]:
    """ops_quant._quantized_convolution."""
    if Q._dot_like_kind(call) is None or not Q._integer_convolution_supported(call):
        return None
    lhs_q, rhs_q = (_qtype(t) for t in call.operand_types[:2])
    _check_exact_contraction(lhs_q, rhs_q)
    shape = _static_shape(call.result_type)
    out_t = TensorType(shape, _I32)
    lhs, rhs = (e.convert(v, _I32) for v in operands[:2])
    lhs_zp = int(lhs_q.zero_points[0])
    if lhs_zp != 0:
        lhs = e.binary("subtract", lhs, e.param(np.int64(lhs_zp), _I32, lhs.type.shape, None))
    centered = e.op(op.name, [lhs, rhs], out_t, dict(op.attributes))
    if lhs_zp == 0:
        return [_dot_like_in_integers(e, call, centered, None)]
    # the zero-point part: lhs_zp times the sum of each output feature's kernel
    dn = call.attrs["dimension_numbers"]
    kernel_out = dn["kernel_output_feature_dimension"]
    rank = len(rhs.type.shape)
    scalar = TensorType((), _I32)
    body = Block([scalar, scalar])
    add = Operation(_SH + "add", body.arguments, [scalar])
    body.append(add)
    body.append(Operation(_SH + "return", add.results))
    zero = e.b.constant(np.zeros((), np.int32), scalar)
    sums = e.b.create(_SH + "reduce", [rhs, zero], [TensorType((rhs.type.shape[kernel_out],), _I32)],
                      {"dimensions": A.DenseArrayAttr(i64, tuple(d for d in range(rank)
                                                                  if d != kernel_out))},
                      [Region([body])]).result
    sums = e.binary("multiply", sums, e.param(np.int64(lhs_zp), _I32, sums.type.shape, None))
    offset = e.op(_SH + "broadcast_in_dim", [sums], out_t,
                  {"broadcast_dimensions": A.DenseArrayAttr(i64, (dn["output_feature_dimension"],))})
    return [_dot_like_in_integers(e, call, e.binary("add", centered, offset), offset)]


def _dot_like_in_integers(e: _Emit, call: OpCall, raw: Value, zp_offset: Optional[Value]) -> Value:
    """ops_quant._dot_like_in_integers on i32 values; zp_offset None stands for zeros."""
    lhs_q, rhs_q = (_qtype(t) for t in call.operand_types[:2])
    result_q = _qtype(call.result_type)
    shape = raw.type.shape
    combined_scale = lhs_q.scales[0] * rhs_q.scales[0] / result_q.scales[0]
    if abs(combined_scale - 1.0) > 0.001:
        scale = e.param(np.float32(combined_scale), _F32, shape, None)

        def scaled(v):
            return e.convert(e.binary("multiply", e.convert(v, _F32), scale), _I32)
        raw = scaled(raw)
        if zp_offset is not None:
            zp_offset = scaled(zp_offset)
    result_zp = 0 if Q._is_per_axis(result_q) else int(result_q.zero_points[0])
    if zp_offset is not None:
        correction = e.binary("subtract", e.param(np.int64(result_zp), _I32, shape, None), zp_offset)
        raw = e.binary("add", raw, correction)
    elif result_zp != 0:
        raw = e.binary("add", raw, e.param(np.int64(result_zp), _I32, shape, None))
    return e.convert(raw, result_q.storage_type)


_INTEGER_KERNELS = {
    _SH + "add": _add,
    _SH + "dot_general": _dot_general,
    _SH + "convolution": _convolution,
}


def _dequantize_op_quantize(e: _Emit, op: Operation, operands, call: OpCall) -> list:
    """ops_quant.dequantize_op_quantize: the op on expressed types between dequantize and
    quantize."""
    floats = []
    for v, t in zip(operands, call.operand_types):
        q = _qtype(t)
        floats.append(_dequantize(e, v, q) if q else v)
    attrs = dict(op.attributes)
    if op.name == _SH + "compare":
        attrs["compare_type"] = A.EnumAttr("stablehlo", "comparison_type", "FLOAT")
    float_types = [t.with_element_type(_qtype(t).expressed_type) if _qtype(t) else t
                   for t in call.result_types]
    for t in float_types:
        if isinstance(t, TensorType):
            _static_shape(t)
    new = e.b.create(op.name, floats, float_types, attrs)
    results = []
    for r, t in zip(new.results, call.result_types):
        q = _qtype(t)
        results.append(_quantize(e, r, q) if q else r)
    return results


# ---------------------------------------------------------------- the pass


@register_pass
class LowerQuant(Pass):
    """Pass 'lower-quant' (see the module docstring). After `run`, `refused` lists
    (op, reason) for the ops left quantized. With `target` (a backend's name, as its
    pipeline builds it) a refused op, or any quantized type left, raises Unsupported
    naming the op, the backend and the reason instead."""

    name = "lower-quant"

    def __init__(self, target: Optional[str] = None):
        self.refused: list = []
        self.target = target

    def run(self, module: Module) -> bool:
        self.refused = []
        if not has_quantized_types(module):
            return False
        _Lowering(self.refused).block(module.body)
        if self.target is not None:
            from axle.errors import Unsupported
            # an op refused for its dynamic shapes may be lowered once they are known (a
            # backend runs this pass again after specializing): not an error yet
            final = [(op, why) for op, why in self.refused if not _dynamic(op)]
            if final:
                op, why = final[0]
                raise Unsupported(f"quantized {op.where()} is not supported by the {self.target} backend: {why}")
            left = [op for op in quantized_ops(module) if not _dynamic(op)]
            if left and not self.refused:
                raise Unsupported(f"quantized {left[0].where()} is not supported by the {self.target} backend")
        return True


def _dynamic(op: Operation) -> bool:
    return any(isinstance(v.type, TensorType) and not v.type.is_static
               for v in list(op.operands) + list(op.results))


class _Lowering:
    def __init__(self, refused: list):
        self.refused = refused
        self.logical: dict[Value, Type] = {}  # value -> its quantized type before lowering
        self.mapping: dict[Value, Value] = {}  # replaced result -> its replacement

    # -- values
    def type_of(self, v: Value) -> Type:
        return self.logical.get(v, v.type)

    def retype(self, v: Value) -> None:
        """Give `v` its storage type in place, remembering the quantized one."""
        if _has_quant(v.type):
            self.logical[v] = v.type
            v.type = _storage_type(v.type)

    def resolve(self, v: Value) -> Value:
        while v in self.mapping:
            v = self.mapping[v]
        return v

    # -- structure
    def block(self, block: Block) -> None:
        for a in block.arguments:
            self.retype(a)
        for op in list(block.operations):
            op.operands = [self.resolve(v) for v in op.operands]
            self.op(op)

    def regions(self, op: Operation) -> None:
        for r in op.regions:
            for b in r.blocks:
                self.block(b)

    def op(self, op: Operation) -> None:
        if op.name == "func.func":
            ftype = op.function_type
            if _has_quant(ftype):
                op.attributes["function_type"] = A.TypeAttr(_storage_type(ftype))
            self.regions(op)
            return
        operand_types = [self.type_of(v) for v in op.operands]
        result_types = list(op.result_types)
        if not any(_has_quant(t) for t in (*operand_types, *result_types)):
            self.regions(op)
            return
        try:
            replacement = self.lower(op, operand_types, result_types)
        except _CannotLower as why:
            self.refuse(op, str(why))
            return
        if replacement is None:  # lowered in place: the op works on storage values
            self.on_storage(op)
            return
        block = op.parent
        for r, new in zip(op.results, replacement):
            self.mapping[r] = new
            self.logical[new] = r.type
        block.operations.remove(op)

    def on_storage(self, op: Operation) -> None:
        for r in op.results:
            self.retype(r)
        if op.name == _SH + "constant":
            value = op.attributes.get("value")
            if isinstance(value, A.DenseElementsAttr) and _has_quant(value.type):
                t = _storage_type(value.type)
                op.attributes["value"] = A.DenseElementsAttr(t, np.asarray(value.array).astype(t.dtype))
        self.regions(op)

    def lower(self, op: Operation, operand_types: list, result_types: list) -> Optional[list]:
        """The values replacing op's results, or None to keep op on storage values. Builds
        the replacement before op; raises _CannotLower (having built nothing) to refuse it."""
        name = op.name
        if name in _PASS_THROUGH:
            return None
        if name in Q.NATIVE_OPS and name not in _QUANTIZE_OPS:
            raise _CannotLower("the interpreter runs it on quantized values natively")
        call = _call(op, operand_types, result_types)
        # build into a scratch block first: a refusal must leave the module untouched
        scratch = Block()
        e = _Emit(Builder(scratch, 0, op.location, op.source))
        operands = list(op.operands)
        out = None
        if name == _SH + "uniform_quantize":
            target, source = _qtype(result_types[0]), _qtype(operand_types[0])
            out = [_quantize(e, operands[0], target) if source is None
                   else _requantize(e, operands[0], source, target)]
        elif name == _SH + "uniform_dequantize":
            out = [_dequantize(e, operands[0], _qtype(operand_types[0]))]
        else:
            special = _INTEGER_KERNELS.get(name)
            if special is not None:
                out = special(e, op, operands, call)
            if out is None:
                if name in Q._DEQUANTIZE_OP_QUANTIZE:
                    if name in Q._ORDER_ONLY and Q._single_quantized_type(call):
                        return None
                    out = _dequantize_op_quantize(e, op, operands, call)
                elif op.regions or Q._single_quantized_type(call):
                    return None
                else:
                    out = _dequantize_op_quantize(e, op, operands, call)
        block = op.parent
        index = block.operations.index(op)
        for new in scratch.operations:
            block.insert(index, new)
            index += 1
        return out

    def refuse(self, op: Operation, why: str) -> None:
        """Leave `op` quantized, with bitcast_convert between storage values and it."""
        self.refused.append((op, why))
        block = op.parent
        b = Builder.before(op)

        def shim(v: Value) -> Value:
            v = self.resolve(v)
            t = self.type_of(v)
            if t == v.type:
                return v
            return b.create(_SH + "bitcast_convert", [v], [t]).result

        op.operands = [shim(v) for v in op.operands]
        for inner in op.walk():  # values the op's regions capture from outside
            if inner is not op:
                inner.operands = [shim(v) if v in self.mapping or v in self.logical
                                  else v for v in inner.operands]
        after = Builder(block, block.operations.index(op) + 1, op.location, op.source)
        for r in op.results:
            if _has_quant(r.type) and isinstance(r.type, TensorType):
                back = after.create(_SH + "bitcast_convert", [r], [_storage_type(r.type)]).result
                self.mapping[r] = back
                self.logical[back] = r.type


def prepare_for_cpu(module: Module) -> Module:
    """`module` itself when it has no quantized types, else a lowered copy (the caller's
    module, which the interpreter may be running, is left as it is). Raises Unsupported for
    an op that cannot be lowered. (The CPU pipeline runs LowerQuant(target="cpu") itself;
    this is for callers that lower outside a pipeline.)"""
    if not has_quantized_types(module):
        return module
    module = module.clone()
    LowerQuant(target="cpu").run(module)
    return module
