"""PT2E quantized graphs (torchao's prepare_pt2e/convert_pt2e): the quantized_decomposed
q/dq ops become StableHLO quantized types, and a convolution or matrix product whose
operands are both dequantized (a per-tensor activation, a per-channel symmetric constant
weight) becomes an integer convolution / dot_general on `!quant.uniform` values with an i32
per-channel result, which axle's `lower-quant` pass turns into integer arithmetic.

uint8 activations are stored as i8 with the zero point shifted by -128: quantizing with
range [0, 255] and zero point z is the same map as range [-128, 127] with z - 128.
Anything else (other dtypes, tensor-valued scales, groups, transposed convolutions) keeps
PyTorch's reference semantics: dequantize to f32 and run the float op."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers quantized_decomposed ops)

from axle.torch.registry import RULES, Unsupported, V, aten, rule, shape_of
from axle.torch.emitter import tensor_type

qd = torch.ops.quantized_decomposed


@dataclass
class PerTensor:
    q: V  # the quantized value (i8 storage)
    scale: float
    zero_point: int  # of the i8 storage


@dataclass
class PerAxis:
    storage: np.ndarray  # int8 constant
    scales: np.ndarray
    axis: int


def _storage_zp(zp: int, qmin: int, qmax: int, dtype) -> int:
    if dtype == torch.uint8 and (qmin, qmax) == (0, 255):
        return zp - 128
    if dtype == torch.int8 and (qmin, qmax) == (-128, 127):
        return zp
    raise Unsupported(f"quantization to {dtype} with range [{qmin}, {qmax}]")


def per_tensor_type(scale: float, zp: int) -> str:
    return f"!quant.uniform<i8:f32, {float(scale)!r}:{int(zp)}>"


def per_axis_type(storage: str, scales, axis: int) -> str:
    return f"!quant.uniform<{storage}:f32:{axis}, {{{', '.join(repr(float(s)) for s in scales)}}}>"


@rule(qd.quantize_per_tensor.default)
def _quantize(em, out, x, scale, zp, qmin, qmax, dtype):
    szp = _storage_zp(zp, qmin, qmax, dtype)
    q = em.op("stablehlo.uniform_quantize", [em.convert(x, "f32")], x.shape, per_tensor_type(scale, szp))
    em.quant[q.name] = PerTensor(q, float(scale), szp)
    return q


@rule(qd.dequantize_per_tensor.default)
def _dequantize(em, out, q, scale, zp, qmin, qmax, dtype, *, out_dtype=None):
    info = em.quant.get(q.name)
    if info is None:  # integer storage from outside the graph: (q - zp) * scale in f32
        f = em.binary("multiply", em.convert(em.binary("subtract", em.convert(q, "i32"), em.const(zp, "i32", q.shape)), "f32"),
                      em.const(scale, "f32", q.shape))
        return em.convert(f, out[1])
    f = em.op("stablehlo.uniform_dequantize", [q], q.shape, "f32")
    em.quant[f.name] = info
    return em.convert(f, out[1])


@rule(qd.dequantize_per_channel.default)
def _dequantize_per_channel(em, out, w, scales, zps, axis, qmin, qmax, dtype, *, out_dtype=None):
    axis = axis + w.rank if axis < 0 else axis
    known = all(v is not None and v.name in em.constants for v in (w, scales, zps))
    if not known or dtype != torch.int8 or np.any(em.constants[zps.name] != 0):
        shape = w.shape
        zp = em.broadcast_in_dim(em.convert(zps, "f32"), shape, [axis])
        s = em.broadcast_in_dim(em.convert(scales, "f32"), shape, [axis])
        return em.convert(em.binary("multiply", em.binary("subtract", em.convert(w, "f32"), zp), s), out[1])
    storage = em.constants[w.name].astype(np.int8)
    info = PerAxis(storage, em.constants[scales.name].astype(np.float64), axis)
    f = em.op("stablehlo.uniform_dequantize", [_per_axis_constant(em, info)], w.shape, "f32")
    em.quant[f.name] = info
    return em.convert(f, out[1])


def _per_axis_constant(em, info: PerAxis) -> V:
    raw = em.dense(info.storage, "i8")
    return em.op("stablehlo.bitcast_convert", [raw], raw.shape, per_axis_type("i8", info.scales, info.axis))


_float_permute = RULES[aten.permute.default]
_float_convolution = RULES[aten.convolution.default]
_float_addmm = RULES[aten.addmm.default]
_float_mm = RULES[aten.mm.default]


@rule(aten.permute.default)
def _permute(em, out, a, dims):
    r = _float_permute(em, out, a, dims)
    info = em.quant.get(a.name)
    if isinstance(info, PerAxis):
        perm = [d + a.rank if d < 0 else d for d in dims]
        em.quant[r.name] = PerAxis(np.transpose(info.storage, perm), info.scales, perm.index(info.axis))
    return r


@rule(aten.convolution.default)
def _convolution(em, out, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    xi, wi = em.quant.get(x.name), em.quant.get(w.name)
    if not (isinstance(xi, PerTensor) and isinstance(wi, PerAxis) and wi.axis == 0 and x.rank == 4
            and not transposed and groups == 1 and out[1] == "f32"):
        return _float_convolution(em, out, x, w, bias, stride, padding, dilation, transposed, output_padding, groups)
    from axle.torch.rules_conv import _expand, conv
    stride, padding, dilation = _expand(stride, 2), _expand(padding, 2), _expand(dilation, 2)
    n, c, h, wd = x.shape
    o = w.shape[0]
    oh, ow = shape_of(out)[2:]
    # NHWC x HWIO with the weight quantized along its last dimension: the layout axis's
    # integer convolution takes per-channel weights in
    qx = em.op("stablehlo.transpose", [xi.q], (n, h, wd, c), xi.q.dtype, "permutation = array<i64: 0, 2, 3, 1>")
    qw = _per_axis_constant(em, PerAxis(np.transpose(wi.storage, (2, 3, 1, 0)), wi.scales, 3))
    rtype = per_axis_type("i32", [xi.scale * s for s in wi.scales], 3)
    acc = conv(em, qx, qw, (n, oh, ow, o), stride, padding, padding, dilation,
               layout="[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]")
    acc = V(acc.name, acc.shape, rtype)
    em.lines[-1] = em.lines[-1].rsplit("->", 1)[0] + "-> " + acc.type
    y = em.transpose(em.op("stablehlo.uniform_dequantize", [acc], acc.shape, "f32"), [0, 3, 1, 2])
    if bias is not None:
        y = em.binary("add", y, em.broadcast_in_dim(em.convert(bias, "f32"), y.shape, [1]))
    return y


def _int_matmul(em, a: V, b: V):
    ai, bi = em.quant.get(a.name), em.quant.get(b.name)
    if not (isinstance(ai, PerTensor) and isinstance(bi, PerAxis) and bi.axis == 1 and a.rank == 2):
        return None
    qb = _per_axis_constant(em, bi)
    rtype = per_axis_type("i32", [ai.scale * s for s in bi.scales], 1)
    dn = ("#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>")
    acc = em.op("stablehlo.dot_general", [ai.q, qb], (a.shape[0], b.shape[1]), rtype, f"dot_dimension_numbers = {dn}")
    return em.op("stablehlo.uniform_dequantize", [acc], acc.shape, "f32")


@rule(aten.addmm.default)
def _addmm(em, out, bias, a, b, *, beta=1, alpha=1):
    y = _int_matmul(em, a, b) if (beta, alpha, out[1]) == (1, 1, "f32") else None
    if y is None:
        return _float_addmm(em, out, bias, a, b, beta=beta, alpha=alpha)
    return em.binary("add", y, em.broadcast_to(em.convert(bias, "f32"), y.shape))


@rule(aten.mm.default)
def _mm(em, out, a, b):
    y = _int_matmul(em, a, b) if out[1] == "f32" else None
    return y if y is not None else _float_mm(em, out, a, b)


__all__ = ["tensor_type"]


# ---- fake quantization (quantization-aware training): x rounded to the grid in float

def _fake_quant(em, x: V, scale: V, zp: V, qmin: int, qmax: int, out_dtype: str):
    """PyTorch's fake_quantize: q = zp + nearbyint(x * (1 / scale)); y = (clamp(q, qmin,
    qmax) - zp) * scale in f32; the mask (q inside [qmin, qmax]) is what the gradient
    passes through. scale and zp broadcast to x's shape already."""
    xf = em.convert(x, "f32")
    inv = em.binary("divide", em.const(1.0, "f32", x.shape), scale)
    q = em.binary("add", em.unary("round_nearest_even", em.binary("multiply", xf, inv)), zp)
    lo, hi = em.const(float(qmin), "f32", x.shape), em.const(float(qmax), "f32", x.shape)
    mask = em.binary("and", em.compare("GE", q, lo), em.compare("LE", q, hi))
    y = em.binary("multiply", em.binary("subtract", em.binary("minimum", em.binary("maximum", q, lo), hi), zp), scale)
    return em.convert(y, out_dtype), mask


def _param(em, v, x: V, axis=None) -> V:
    """A scale / zero point (a number, a one-element tensor, or per channel along axis) as
    f32 broadcast to x's shape."""
    if not isinstance(v, V):
        return em.const(float(v), "f32", x.shape)
    v = em.convert(v, "f32")
    if axis is None:
        return em.broadcast_in_dim(em.reshape(v, ()), x.shape, [])
    return em.broadcast_in_dim(v, x.shape, [axis])


@rule(aten.fake_quantize_per_tensor_affine.default, aten.fake_quantize_per_tensor_affine.tensor_qparams)
def _fq_tensor(em, out, x, scale, zp, qmin, qmax):
    return _fake_quant(em, x, _param(em, scale, x), _param(em, zp, x), qmin, qmax, out[1])[0]


@rule(aten.fake_quantize_per_tensor_affine_cachemask.default)
def _fq_tensor_mask(em, out, x, scale, zp, qmin, qmax):
    return _fake_quant(em, x, _param(em, scale, x), _param(em, zp, x), qmin, qmax, out[0][1])


@rule(aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default)
def _fq_tensor_mask_qparams(em, out, x, scale, zp, enabled, qmin, qmax):
    y, mask = _fake_quant(em, x, _param(em, scale, x), _param(em, zp, x), qmin, qmax, out[0][1])
    on = em.broadcast_in_dim(em.compare("NE", em.reshape(em.convert(enabled, "f32"), ()), em.const(0.0, "f32")), x.shape, [])
    return em.select(on, y, x), em.select(on, mask, em.const(True, "i1", x.shape))


@rule(aten.fake_quantize_per_channel_affine.default)
def _fq_channel(em, out, x, scale, zp, axis, qmin, qmax):
    axis = axis % x.rank
    return _fake_quant(em, x, _param(em, scale, x, axis), _param(em, zp, x, axis), qmin, qmax, out[1])[0]


@rule(aten.fake_quantize_per_channel_affine_cachemask.default)
def _fq_channel_mask(em, out, x, scale, zp, axis, qmin, qmax):
    axis = axis % x.rank
    return _fake_quant(em, x, _param(em, scale, x, axis), _param(em, zp, x, axis), qmin, qmax, out[0][1])


@rule(aten.fake_quantize_per_tensor_affine_cachemask_backward.default)
def _fq_backward(em, out, g, mask):
    return em.select(mask, g, em.const(0, g.dtype, g.shape))
