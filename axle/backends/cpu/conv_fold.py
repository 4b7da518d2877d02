"""Convolutions over three or more spatial dimensions as 2-D ones: the first spatial
dimension's window taps are folded into the features (`fold_leading_spatial`).

out[o] = sum_k x[o * s + k * r] along a spatial dimension (x padded, dilated) is a sum over
the pairs (o, k) of one tensor, x_taps[o, k] = x[o * s + k * r]: with o joined to the batch
and k to the input features (the kernel's tap index joined to its input features to match),
the convolution loses that spatial dimension. x_taps is built by min(O, K) strided slices
of the padded input, stacked; one transpose puts it in the layout the 2-D kernels take.

The same tensor serves both shapes a 3-D convolution comes in:
- forward and input-gradient convolutions (few taps K, many positions O): x_taps is K
  copies of the input, [batch x O, H, W, K x features] (NHWC), the kernel [kh, kw, K x in,
  out] (HWIO);
- filter gradients (the "window" is the image: K = the output gradient's depth, O = the
  filter's depth, few): x_taps is O copies, in the NHWC filter-gradient form [K x features,
  H, W, batch x O] against the output gradient as [K x in, kh, kw, out].

Why: the n-D general path (im2col + GEMM) ran PyTorch's Conv3d(3, 16, 3) on 2 x 8 x 32 x
32 clips at 16 GFLOP/s on one thread (2.55 ms; oneDNN 0.97 ms); folded, the 2-D direct
kernel takes it at 80 GFLOP/s. With 16 -> 32 channels on 4 x 16 x 16: 1.16 -> 0.5 ms.
The copies cost the input K times over, as im2col's would have."""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Operation
from axle.ir.types import TensorType, i1, i64
from axle.passes.rewrite import Builder, i64_array, padded, reshaped, sliced, transposed

MAX_COPIES = 16  # copies of the input (taps, or positions for a filter gradient) folding may make
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")


def _pad(b: Builder, x, dim: int, lo: int, hi: int, ldil: int):
    """x padded along dim: lo / hi at the edges (negative: cut), ldil - 1 between elements."""
    if not (lo or hi or ldil != 1):
        return x
    low, high, interior = [0] * x.type.rank, [0] * x.type.rank, [0] * x.type.rank
    low[dim], high[dim], interior[dim] = lo, hi, ldil - 1
    return padded(b, x, low, high, interior)


def _stack(b: Builder, x, dim: int, count: int, step: int, length: int, along: int, at: int):
    """The `count` strided slices of x along dim (slice j: `length` elements from j * step,
    `along` apart), stacked as a new dimension inserted at `at` (an index of the result,
    which has x's rank + 1)."""
    t = x.type
    shape = list(t.shape)
    parts = []
    for j in range(count):
        start, limit, strides = [0] * t.rank, list(shape), [1] * t.rank
        start[dim], limit[dim], strides[dim] = j * step, j * step + (length - 1) * along + 1, along
        piece = sliced(b, x, start, limit, strides)
        piece_shape = list(piece.type.shape)
        parts.append(reshaped(b, piece, piece_shape[:at] + [1] + piece_shape[at:]))
    if len(parts) == 1:
        return parts[0]
    out_shape = list(parts[0].type.shape)
    out_shape[at] = count
    return b.create("stablehlo.concatenate", parts, [TensorType(tuple(out_shape), t.element_type)],
                    {"dimension": A.IntegerAttr(at, i64)}).result


def fold_leading_spatial(op: Operation) -> Optional[Operation]:
    """Replace convolution op (three or more spatial dimensions, static, floating point) by
    one over its spatial dimensions but the first (see the module docstring); returns the
    new convolution, or None when op is left as it is."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    lhs, rhs = op.operands
    res = op.results[0]
    if not all(isinstance(v.type, TensorType) and v.type.is_static and str(v.type.element_type) in FLOAT_TYPES
               for v in (lhs, rhs, res)):
        return None
    dn = op.attributes.get("dimension_numbers")
    if not isinstance(dn, A.ConvDimensionNumbersAttr) or len(dn.input_spatial_dimensions) < 3:
        return None
    lt, kt, ot = lhs.type, rhs.type, res.type
    if 0 in lt.shape or 0 in kt.shape or 0 in ot.shape:
        return None
    from axle.backends.cpu.kernels_conv_rows import channels_plan, rows_plan
    if channels_plan(op) is not None or rows_plan(op) is not None:
        return None  # the n-D channels (depthwise) and rows kernels take it as it is
    strides, _, ldil, rdil, rev, fgc, bgc = conv_window(op)
    pad = op.attributes.get("padding")
    nsp = len(dn.input_spatial_dimensions)
    pads = np.asarray(pad.array, np.int64).reshape(nsp, 2) if pad is not None else np.zeros((nsp, 2), np.int64)
    a, kk, oo = dn.input_spatial_dimensions[0], dn.kernel_spatial_dimensions[0], dn.output_spatial_dimensions[0]
    size, taps, positions = lt.shape[a], kt.shape[kk], ot.shape[oo]
    lo, hi = int(pads[0][0]), int(pads[0][1])
    s, ld, r = int(strides[0]), int(ldil[0]), int(rdil[0])
    padded = lo + hi + (size - 1) * ld + 1
    if padded < (taps - 1) * r + 1 or positions != (padded - (taps - 1) * r - 1) // s + 1:
        return None
    et = lt.element_type
    B, F = lt.shape[dn.input_batch_dimension], lt.shape[dn.input_feature_dimension]
    # the features split as (group, feature within the group), in lhs's own order
    fd = dn.input_feature_dimension
    shape = list(lt.shape)
    shape[fd:fd + 1] = [fgc, F // fgc]

    def at(d):  # lhs dimension d's index in x
        return d if d < fd else d + 1
    g_d, fg_d, b_d, d_d = fd, fd + 1, at(dn.input_batch_dimension), at(a)
    rest = [at(d) for d in dn.input_spatial_dimensions[1:]]
    rest_sizes = [lt.shape[d] for d in dn.input_spatial_dimensions[1:]]
    I, O = kt.shape[dn.kernel_input_feature_dimension], kt.shape[dn.kernel_output_feature_dimension]
    k_rest = list(dn.kernel_spatial_dimensions[1:])
    k_rest_sizes = [kt.shape[d] for d in k_rest]
    o_rest_sizes = [ot.shape[d] for d in dn.output_spatial_dimensions[1:]]
    m = len(rest)
    spatial = tuple(range(1, m + 1))
    out_b = B // bgc
    k_taps_in = [kk, dn.kernel_input_feature_dimension]
    # a filter gradient when the output's spatial extent is below the window's
    filter_grad = int(np.prod(o_rest_sizes)) * positions < int(np.prod(k_rest_sizes)) * taps
    if filter_grad and positions > MAX_COPIES or not filter_grad and taps > MAX_COPIES:
        return None
    b = Builder.before(op)
    x = reshaped(b, lhs, shape)
    w = rhs
    if rev[0]:
        w = b.create("stablehlo.reverse", [w], [kt], {"dimensions": i64_array([kk])}).result
    if filter_grad:
        # [g, D, fg, rest.., b] padded; per output position o (few) the taps k (strided by
        # the dilation) stacked innermost: [(g, k, fg), rest.., (b, o)]
        x = _pad(b, transposed(b, x, [g_d, d_d, fg_d, *rest, b_d]), 1, lo, hi, ld)
        x = _stack(b, x, 1, positions, s, taps, r, m + 4)
        x = reshaped(b, x, [F * taps, *rest_sizes, B * positions])
        w = transposed(b, w, [*k_taps_in, *k_rest, dn.kernel_output_feature_dimension])
        w = reshaped(b, w, [taps * I, *k_rest_sizes, O])
        new_dn = A.ConvDimensionNumbersAttr(m + 1, 0, spatial, 0, m + 1, spatial, m, m + 1, tuple(range(m)))
        out_shape = [*o_rest_sizes, out_b * positions, O]
        unfolded = [*o_rest_sizes, out_b, positions, O]
        order = {"b": m, "o": m + 1, "f": m + 2, "rest": list(range(m))}
    else:
        # [b, D, rest.., g, fg] padded; per tap k (few) the positions o (strided by the
        # stride) stacked between g and fg: [(b, o), rest.., (g, k, fg)]
        x = _pad(b, transposed(b, x, [b_d, d_d, *rest, g_d, fg_d]), 1, lo, hi, ld)
        x = _stack(b, x, 1, taps, r, positions, s, m + 3)
        x = reshaped(b, x, [B * positions, *rest_sizes, F * taps])
        w = transposed(b, w, [*k_rest, *k_taps_in, dn.kernel_output_feature_dimension])
        w = reshaped(b, w, [*k_rest_sizes, taps * I, O])
        new_dn = A.ConvDimensionNumbersAttr(0, m + 1, spatial, m, m + 1, tuple(range(m)), 0, m + 1, spatial)
        out_shape = [out_b * positions, *o_rest_sizes, O]
        unfolded = [out_b, positions, *o_rest_sizes, O]
        order = {"b": 0, "o": 1, "f": m + 2, "rest": list(range(2, m + 2))}
    attrs = dict(op.attributes)
    attrs["dimension_numbers"] = new_dn
    attrs["window_strides"] = i64_array(list(strides)[1:])
    attrs["padding"] = A.DenseElementsAttr(TensorType((m, 2), i64), pads[1:].copy())
    attrs["lhs_dilation"] = i64_array(list(ldil)[1:])
    attrs["rhs_dilation"] = i64_array(list(rdil)[1:])
    if "window_reversal" in attrs:
        attrs["window_reversal"] = A.DenseArrayAttr(i1, tuple(bool(v) for v in list(rev)[1:]))
    conv = b.create("stablehlo.convolution", [x, w], [TensorType(tuple(out_shape), et)], attrs, regions=[])
    y = reshaped(b, conv.result, unfolded)
    # back to op's output layout: output dim d comes from unfolded's ...
    src = {dn.output_batch_dimension: order["b"], dn.output_feature_dimension: order["f"], oo: order["o"]}
    for d, u in zip(dn.output_spatial_dimensions[1:], order["rest"]):
        src[d] = u
    y = transposed(b, y, [src[d] for d in range(ot.rank)])
    res.replace_all_uses_with(y)
    op.erase()
    return conv
