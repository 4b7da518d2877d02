"""Pass "cpu-conv-rows-layout": a convolution with few features whose feature dimension is
innermost (NHWC with 1-7 channels: a per-channel Gaussian blur of RGB images, a Sobel
filter, a one-channel 1-D filter in NWC) runs in a layout with a spatial dimension
innermost: its input is transposed to [batch, feature, spatial...], the convolution
produces [batch, feature, spatial...], and a transpose gives the original layout back.

In that layout the rows kernel (kernels_conv_rows.py) takes it: `out[j] += w * x[j + tap]`
along contiguous rows, vectorized. In the original layout nothing vectorizes well: along
the features there are fewer than a vector's lanes, and the general path (im2col + GEMM)
multiplies a patch matrix by a one-column weight per group (an 11 x 11 blur of 8 RGB
images of 128 x 128: 55 ms, 1.5 GFLOP/s). The transposes move the input and output once
each; the rows kernel reads each input element once per window tap from cache.

Applies when the rewritten convolution is one rows_plan accepts (f32/f64, at most
MAX_FEATURES input x output features per group, no lhs dilation or window reversal) and
the output's features are fewer than SMALL_FEATURES (with more, vectorizing along them in
the original layout is the better choice).

The pass also moves 2-D f32 convolutions in other layouts that the direct NHWC x HWIO
kernel would take (PyTorch's NCHW x OIHW with few input channels) to that layout
(`_rewrite_direct`), and first makes every 1-D convolution a 2-D one with a unit spatial
dimension before its own (`_as_2d`: reshapes only), so that the 2-D kernels and rewrites
take 1-D convolutions too."""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Module, Operation
from axle.ir.types import TensorType, i1, i64
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder, i64_array, padded, reshaped, sum_reduce, transposed
from axle.backends.cpu.conv_flat import flat_filter_gradient
from axle.backends.cpu.conv_fold import fold_leading_spatial

SMALL_FEATURES = 8  # output features below which the rows layout is used
# input features from which a 2-D convolution in another layout is moved to NHWC x HWIO even
# when the direct kernel does not take it: im2col there copies each window tap's features
# as one run and the GEMM writes the output rows in place (NCHW 64 -> 48 channels, 3 x 3,
# on 4 x 32 x 32: 30 -> 44 GFLOP/s)
GEMM_MIN_FEATURES = 8


def _as_2d(op: Operation):
    """A 1-D convolution as the 2-D one over [1, W] (a unit spatial dimension inserted
    before the spatial dimension of the input, the kernel and the output: NCW becomes
    NCHW with H = 1, NWC NHWC, WIO HWIO; the window's attributes get a unit first entry);
    returns the new convolution, or None when op is not 1-D. The 1-D forms had only the
    general im2col path: a one-channel audio filter bank (8 x 1 x 8000, 80 taps, stride 4,
    32 filters) took 6.3 ms there and 1.4 ms as 2-D (XLA: 1.3-1.7 ms)."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    lhs, rhs = op.operands
    res = op.results[0]
    if not all(isinstance(v.type, TensorType) and v.type.is_static for v in (lhs, rhs, res)):
        return None
    dn = op.attributes.get("dimension_numbers")
    if not isinstance(dn, A.ConvDimensionNumbersAttr) or len(dn.input_spatial_dimensions) != 1:
        return None
    (si,), (sk,), (so,) = dn.input_spatial_dimensions, dn.kernel_spatial_dimensions, dn.output_spatial_dimensions

    def up(d, s_):  # a dimension's index once a unit dimension sits at s_
        return d + 1 if d >= s_ else d

    def insert(shape, s_):
        return tuple(shape[:s_]) + (1,) + tuple(shape[s_:])
    new_dn = A.ConvDimensionNumbersAttr(
        up(dn.input_batch_dimension, si), up(dn.input_feature_dimension, si), (si, si + 1),
        up(dn.kernel_input_feature_dimension, sk), up(dn.kernel_output_feature_dimension, sk), (sk, sk + 1),
        up(dn.output_batch_dimension, so), up(dn.output_feature_dimension, so), (so, so + 1))
    strides, _, ldil, rdil, rev, _, _ = conv_window(op)
    pad = op.attributes.get("padding")
    lo_hi = np.asarray(pad.array, np.int64).reshape(1, 2) if pad is not None else np.zeros((1, 2), np.int64)
    attrs = dict(op.attributes)
    attrs["dimension_numbers"] = new_dn
    attrs["window_strides"] = A.DenseArrayAttr(i64, (1, int(strides[0])))
    attrs["padding"] = A.DenseElementsAttr(TensorType((2, 2), i64), np.concatenate([np.zeros((1, 2), np.int64), lo_hi]))
    attrs["lhs_dilation"] = A.DenseArrayAttr(i64, (1, int(ldil[0])))
    attrs["rhs_dilation"] = A.DenseArrayAttr(i64, (1, int(rdil[0])))
    if "window_reversal" in attrs:
        attrs["window_reversal"] = A.DenseArrayAttr(i1, (False, bool(rev[0])))
    b = Builder.before(op)
    x = reshaped(b, lhs, insert(lhs.type.shape, si))
    w = reshaped(b, rhs, insert(rhs.type.shape, sk))
    out_t = TensorType(insert(res.type.shape, so), res.type.element_type)
    conv = b.create("stablehlo.convolution", [x, w], [out_t], attrs, regions=[])
    res.replace_all_uses_with(reshaped(b, conv.result, res.type.shape))
    op.erase()
    return conv


def _rewrite(op: Operation) -> bool:
    from axle.backends.cpu.kernels_conv_rows import rows_plan
    lhs, rhs = op.operands
    res = op.results[0]
    if not all(isinstance(v.type, TensorType) and v.type.is_static for v in (lhs, rhs, res)):
        return False
    dn = op.attributes.get("dimension_numbers")
    if not isinstance(dn, A.ConvDimensionNumbersAttr) or not dn.input_spatial_dimensions:
        return False
    rank = lhs.type.rank
    if dn.input_feature_dimension != rank - 1 or dn.output_feature_dimension != rank - 1:
        return False
    if res.type.shape[dn.output_feature_dimension] >= SMALL_FEATURES or rows_plan(op) is not None:
        return False
    in_perm = [dn.input_batch_dimension, dn.input_feature_dimension, *dn.input_spatial_dimensions]
    out_perm = [dn.output_batch_dimension, dn.output_feature_dimension, *dn.output_spatial_dimensions]
    spatial = tuple(range(2, rank))
    new_dn = dataclasses.replace(dn, input_batch_dimension=0, input_feature_dimension=1,
                                 input_spatial_dimensions=spatial, output_batch_dimension=0,
                                 output_feature_dimension=1, output_spatial_dimensions=spatial)
    out_t = TensorType(tuple(res.type.shape[p] for p in out_perm), res.type.element_type)
    in_t = TensorType(tuple(lhs.type.shape[p] for p in in_perm), lhs.type.element_type)
    if rows_plan(op, (in_t, out_t, new_dn.to_python())) is None:
        return False
    attrs = dict(op.attributes)
    attrs["dimension_numbers"] = new_dn
    b = Builder.before(op)
    x = transposed(b, lhs, in_perm)
    conv = b.create("stablehlo.convolution", [x, rhs], [out_t], attrs, regions=[])
    back = [out_perm.index(d) for d in range(rank)]
    out = transposed(b, conv.result, back)
    res.replace_all_uses_with(out)
    op.erase()
    return True


def _pointwise_as_dot(op: Operation) -> bool:
    """A 1 x 1 convolution (stride 1, no padding or dilation, one group) in the channels-
    first layout (PyTorch's NCHW x OIHW): per image a GEMM of the [O, I] weights and the
    [I, H x W] input, written as the batched dot_general [B, O, I] x [B, I, H W] ->
    [B, O, H W] on reshapes, no transposes. Moved to NHWC, it was two transposes of the
    activations around a GEMM of the same size (an EfficientNet block's 16 -> 96
    expansion over 4 x 56 x 56: 0.6 + 1.1 + 0.7 ms). Where the input features outnumber
    the pixels the weights are not broadcast: [O, I] x [B, I, H W] -> [O, B, H W], then
    transposed."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    from axle.passes.dot_canonicalize import dot_numbers
    dn = _static_2d(op, ("f32", "f64"), None)
    if dn is None:
        return False
    lhs, rhs = op.operands
    res = op.results[0]
    strides, _, ldil, _, rev, fgc, bgc = conv_window(op)
    pad = op.attr("padding")
    n = len(dn.input_spatial_dimensions)
    kt, xt, ot = rhs.type, lhs.type, res.type
    if (fgc != 1 or bgc != 1 or any(rev) or any(int(s_) != 1 for s_ in strides) or any(int(d) != 1 for d in ldil)
            or (pad is not None and np.any(np.asarray(pad) != 0))
            or any(kt.shape[d] != 1 for d in dn.kernel_spatial_dimensions)):
        return False
    first = [0, 1, *range(2, 2 + n)]
    if ([dn.input_batch_dimension, dn.input_feature_dimension, *dn.input_spatial_dimensions] != first
            or [dn.output_batch_dimension, dn.output_feature_dimension, *dn.output_spatial_dimensions] != first):
        return False
    B, I, O = xt.shape[0], xt.shape[1], ot.shape[1]
    pixels = int(np.prod(xt.shape[2:], dtype=np.int64))
    et = ot.element_type
    b = Builder.before(op)
    korder = [dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension, *dn.kernel_spatial_dimensions]
    w = rhs if korder == list(range(kt.rank)) else transposed(b, rhs, korder)
    w = reshaped(b, w, [O, I])
    x = reshaped(b, lhs, [B, I, pixels])
    attrs = {}
    if "precision_config" in op.attributes:
        attrs["precision_config"] = op.attributes["precision_config"]
    if I <= pixels:  # the weights broadcast over the batch (B O I values) cost less than
        w = b.create("stablehlo.broadcast_in_dim", [w], [TensorType((B, O, I), et)],  # a transposed result
                     {"broadcast_dimensions": i64_array([1, 2])}).result
        attrs["dot_dimension_numbers"] = dot_numbers(True, 2, 1)
        y = b.create("stablehlo.dot_general", [w, x], [TensorType((B, O, pixels), et)], attrs).result
    else:  # small maps, many features (a late stage's MLP on 2 x 2 maps: the broadcast weights
        # were B copies of a 4 MiB matrix, built at 1.5 GB/s in the backward): one GEMM over
        # the whole batch, [O, B, H W], transposed
        attrs["dot_dimension_numbers"] = dot_numbers(False, 1, 1)
        y = b.create("stablehlo.dot_general", [w, x], [TensorType((O, B, pixels), et)], attrs).result
        y = transposed(b, y, [1, 0, 2])
    res.replace_all_uses_with(reshaped(b, y, list(ot.shape)))
    op.erase()
    return True


SMALL_MAPS_MAX_ROWS = 512  # output pixels (batch x height x width) of a convolution done as one im2col GEMM
SMALL_MAPS_MIN_WEIGHTS = 1 << 18  # weight elements from which reading them in place pays
SMALL_MAPS_MAX_WINDOW = 49  # kernel windows up to 7 x 7 (one slice of the input per window position)


def _small_maps_as_dot(op: Operation) -> bool:
    """A 2-D convolution whose weights outweigh its output pixels (many channels on 2 x 2 or
    4 x 4 maps: ResNet's last stages on small images): im2col of the (small) input, then one
    GEMM that reads the weights where they are, as [O, I kh kw] (OIHW) or [kh kw I, O]
    (HWIO). The convolution kernels took the weights through a transpose into their own
    layout on every call (9.4 MB for 512 x 512 x 3 x 3: 1.5-4 ms) and ran such shapes at
    about 45 GFLOP/s."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    from axle.passes.dot_canonicalize import dot_numbers
    dn = _static_2d(op, ("f32", "f64"))
    if dn is None:
        return False
    x, w = op.operands
    res = op.results[0]
    strides, _, ldil, rdil, rev, fgc, bgc = conv_window(op)
    if fgc != 1 or bgc != 1 or any(int(d) != 1 for d in ldil) or any(rev):
        return False
    xt, wt, ot = x.type, w.type, res.type
    o, i, ks = dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension, list(dn.kernel_spatial_dimensions)
    sp, osp = list(dn.input_spatial_dimensions), list(dn.output_spatial_dimensions)
    n_, c_in, c_out = xt.shape[dn.input_batch_dimension], xt.shape[dn.input_feature_dimension], wt.shape[o]
    kh, kw = wt.shape[ks[0]], wt.shape[ks[1]]
    oh, ow = ot.shape[osp[0]], ot.shape[osp[1]]
    rows, depth = n_ * oh * ow, c_in * kh * kw
    if (not 1 < kh * kw <= SMALL_MAPS_MAX_WINDOW or rows > SMALL_MAPS_MAX_ROWS or 2 * rows > c_out
            or c_out * depth < SMALL_MAPS_MIN_WEIGHTS
            or o not in (0, 3) or ks[0] > ks[1]):
        return False
    rest = [d for d in range(4) if d != o]  # the weights' other dimensions, in memory order
    if rest == [i, ks[0], ks[1]]:
        features_first = True
    elif rest == [ks[0], ks[1], i]:
        features_first = False
    else:
        return False
    b = Builder.before(op)
    pad = op.attr("padding")
    low = [0] * 4
    high = [0] * 4
    for k, d in enumerate(sp):
        low[d], high[d] = (int(pad[k][0]), int(pad[k][1])) if pad is not None else (0, 0)
    xp = padded(b, x, low, high) if any(low) or any(high) else x
    cols = []
    for a in range(kh):
        for c in range(kw):
            start, limit, step = [0] * 4, list(xp.type.shape), [1] * 4
            for d, off, count, s_ in ((sp[0], a * int(rdil[0]), oh, int(strides[0])),
                                      (sp[1], c * int(rdil[1]), ow, int(strides[1]))):
                start[d], limit[d], step[d] = off, off + (count - 1) * s_ + 1, s_
            shape = [limit[d] - start[d] if d not in sp else (oh if d == sp[0] else ow) for d in range(4)]
            piece = b.create("stablehlo.slice", [xp], [TensorType(tuple(shape), xt.element_type)],
                             {"start_indices": i64_array(start), "limit_indices": i64_array(limit),
                              "strides": i64_array(step)}).result
            cols.append(reshaped(b, piece, shape + [1]))
    stacked = cols[0] if len(cols) == 1 else b.create(
        "stablehlo.concatenate", cols, [TensorType(tuple(cols[0].type.shape[:4]) + (kh * kw,), xt.element_type)],
        {"dimension": A.IntegerAttr(4, i64)}).result
    f, window = dn.input_feature_dimension, 4
    order = [dn.input_batch_dimension, sp[0], sp[1]] + ([f, window] if features_first else [window, f])
    xcol = reshaped(b, transposed(b, stacked, order), [rows, depth])
    wflat = reshaped(b, w, [c_out, depth] if o == 0 else [depth, c_out])
    attrs = {"dot_dimension_numbers": dot_numbers(False, 1, 1 if o == 0 else 0)}
    if "precision_config" in op.attributes:
        attrs["precision_config"] = op.attributes["precision_config"]
    y = b.create("stablehlo.dot_general", [xcol, wflat], [TensorType((rows, c_out), ot.element_type)], attrs).result
    y = reshaped(b, y, [n_, oh, ow, c_out])
    where = {dn.output_batch_dimension: 0, osp[0]: 1, osp[1]: 2, dn.output_feature_dimension: 3}
    res.replace_all_uses_with(transposed(b, y, [where[d] for d in range(4)]))
    op.erase()
    return True


def _rewrite_direct(op: Operation) -> bool:
    """A 2-D f32 convolution in another layout (NCHW x OIHW from PyTorch) that the direct
    kernel would take in NHWC x HWIO (kernels_conv._direct_plan: a window of at most
    DIRECT_MAX_WINDOW products, output features in blocks of 8), or with at least
    GEMM_MIN_FEATURES input features (im2col + GEMM, faster in NHWC): operands transposed
    to that layout, the result transposed back. The direct kernel ran an 8 -> 8 channel
    3 x 3 convolution of 4 x 64 x 64 images at 56 GFLOP/s, im2col + GEMM in NCHW at 13.
    Also lhs-dilated ones (PyTorch's transposed convolutions) with enough input features:
    a 1-D 32 -> 16 upsampler, stride 2, on 4 x 2048: 2.08 -> 1.18 ms with the transposes;
    and grouped ones the direct kernel takes (kernels_conv.grouped_block)."""
    from axle.backends.cpu.kernels_conv import DIRECT, DIRECT_MAX_WINDOW, _direct_plan
    from axle.backends.cpu.kernels_conv_general import conv_window
    lhs, rhs = op.operands
    res = op.results[0]
    if not DIRECT or not all(isinstance(v.type, TensorType) and v.type.is_static and str(v.type.element_type) == "f32"
                             for v in (lhs, rhs, res)):
        return False
    dn = op.attributes.get("dimension_numbers")
    if not isinstance(dn, A.ConvDimensionNumbersAttr) or len(dn.input_spatial_dimensions) != 2:
        return False
    _, _, ldil, _, rev, fgc, bgc = conv_window(op)
    if bgc != 1 or any(rev) or _direct_plan(op) is not None:
        return False
    kt = rhs.type
    window = kt.shape[dn.kernel_spatial_dimensions[0]] * kt.shape[dn.kernel_spatial_dimensions[1]]
    out_px = res.type.shape[dn.output_spatial_dimensions[0]] * res.type.shape[dn.output_spatial_dimensions[1]]
    if window > 121 or out_px < window:
        return False  # a filter gradient (the window is the image): not the direct kernel's shape
    cin, cout = kt.shape[dn.kernel_input_feature_dimension], kt.shape[dn.kernel_output_feature_dimension]
    # (lhs dilation, a transposed convolution: not the direct kernel's; im2col's phases)
    direct = window * cin <= DIRECT_MAX_WINDOW and cout % 8 == 0 and all(d == 1 for d in ldil)
    if fgc != 1:  # grouped: the direct kernel's groups only (kernels_conv.grouped_block)
        from axle.backends.cpu.kernels_conv import grouped_width
        if any(d != 1 for d in ldil) or grouped_width(cin, fgc, lhs.type.shape[dn.input_feature_dimension], cout,
                                                      window) is None:
            return False
        direct = True
    if not (direct or cin >= GEMM_MIN_FEATURES) or 0 in res.type.shape or 0 in lhs.type.shape:
        return False
    in_perm = [dn.input_batch_dimension, *dn.input_spatial_dimensions, dn.input_feature_dimension]
    k_perm = [*dn.kernel_spatial_dimensions, dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension]
    out_perm = [dn.output_batch_dimension, *dn.output_spatial_dimensions, dn.output_feature_dimension]
    if in_perm == [0, 1, 2, 3] and k_perm == [0, 1, 2, 3] and out_perm == [0, 1, 2, 3]:
        return False  # NHWC x HWIO already
    _relayout(op, in_perm, k_perm, out_perm, A.ConvDimensionNumbersAttr(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2)))
    return True


def _relayout(op: Operation, in_perm: list, k_perm: list, out_perm: list, new_dn) -> None:
    """Replace convolution op by the one on its operands transposed by in_perm and k_perm,
    with dimension numbers new_dn, whose result (op's transposed by out_perm) is
    transposed back."""
    lhs, rhs = op.operands
    res = op.results[0]
    same = list(range(len(in_perm)))
    b = Builder.before(op)
    x = lhs if in_perm == same else transposed(b, lhs, in_perm)
    w = rhs if k_perm == same else transposed(b, rhs, k_perm)
    out_t = TensorType(tuple(res.type.shape[p] for p in out_perm), res.type.element_type)
    attrs = dict(op.attributes)
    attrs["dimension_numbers"] = new_dn
    conv = b.create("stablehlo.convolution", [x, w], [out_t], attrs, regions=[])
    out = conv.result if out_perm == same else transposed(b, conv.result, [out_perm.index(d) for d in same])
    res.replace_all_uses_with(out)
    op.erase()


def _static_2d(op: Operation, types: tuple, spatial: Optional[int] = 2):
    """The dimension numbers of convolution op when it has `spatial` spatial dimensions
    (None: any number), its operands and result are static, not empty, and of one of
    `types`; else None."""
    lhs, rhs = op.operands
    res = op.results[0]
    if not all(isinstance(v.type, TensorType) and v.type.is_static and str(v.type.element_type) in types
               for v in (lhs, rhs, res)) or 0 in res.type.shape or 0 in lhs.type.shape:
        return None
    dn = op.attributes.get("dimension_numbers")
    if not isinstance(dn, A.ConvDimensionNumbersAttr) or spatial is not None and len(dn.input_spatial_dimensions) != spatial:
        return None
    return dn


def _rewrite_depthwise(op: Operation) -> bool:
    """A depthwise convolution (one filter per channel, at least MIN_CHANNELS of them) with
    its features not innermost, whose rows the rows kernel does not take (fewer than
    MIN_ROW outputs across: ConvNeXt's 7 x 7 on 14 x 14 maps, PyTorch's NCHW; and 3-D ones
    in NCDHW) -> channels innermost (NHWC x HWIO), where the channels kernel vectorizes
    along the channels. In NCHW it went through im2col and one GEMM of a single column per
    channel: 4 x 96 x 14 x 14, 7 x 7 at 1.7 GFLOP/s."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    from axle.backends.cpu.kernels_conv_rows import MIN_CHANNELS, rows_plan
    lhs, rhs = op.operands
    res = op.results[0]
    dn = _static_2d(op, ("f32", "f64"), None)
    if dn is None or len(dn.input_spatial_dimensions) < 2:
        return False
    _, _, ldil, _, rev, fgc, bgc = conv_window(op)
    channels = lhs.type.shape[dn.input_feature_dimension]
    if bgc != 1 or any(d != 1 for d in ldil) or any(rev) or fgc != channels or channels < MIN_CHANNELS \
            or rhs.type.shape[dn.kernel_input_feature_dimension] != 1 \
            or res.type.shape[dn.output_feature_dimension] != channels:
        return False
    rank = lhs.type.rank
    if dn.input_feature_dimension == rank - 1 and dn.output_feature_dimension == rank - 1 or rows_plan(op) is not None:
        return False
    in_perm = [dn.input_batch_dimension, *dn.input_spatial_dimensions, dn.input_feature_dimension]
    k_perm = [*dn.kernel_spatial_dimensions, dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension]
    out_perm = [dn.output_batch_dimension, *dn.output_spatial_dimensions, dn.output_feature_dimension]
    sp = tuple(range(1, rank - 1))
    _relayout(op, in_perm, k_perm, out_perm,
              A.ConvDimensionNumbersAttr(0, rank - 1, sp, rank - 2, rank - 1, tuple(range(rank - 2)), 0, rank - 1, sp))
    return True


def _undilate_depthwise(op: Operation) -> Optional[Operation]:
    """A depthwise convolution with lhs dilation (the input gradient of a strided depthwise
    one: ShuffleNet's and MobileNet's downsampling units) -> the same over its input
    dilated and padded by a pad op, so that the channels kernel takes it: the general path
    ran one-column GEMMs per channel (4 x 58 x 28 x 28 -> 56 x 56, 3 x 3: 11 ms, 1 GFLOP/s).
    Returns the new convolution, or None."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    lhs, rhs = op.operands
    res = op.results[0]
    dn = _static_2d(op, ("f32", "f64"), None)
    if dn is None:
        return None
    _, _, ldil, _, _, fgc, bgc = conv_window(op)
    channels = lhs.type.shape[dn.input_feature_dimension]
    if all(d == 1 for d in ldil) or bgc != 1 or fgc != channels or fgc < 2 \
            or rhs.type.shape[dn.kernel_input_feature_dimension] != 1:
        return None
    nsp = len(dn.input_spatial_dimensions)
    pad = op.attributes.get("padding")
    pads = np.asarray(pad.array, np.int64).reshape(nsp, 2) if pad is not None else np.zeros((nsp, 2), np.int64)
    rank = lhs.type.rank
    low, high, interior = [0] * rank, [0] * rank, [0] * rank
    shape = list(lhs.type.shape)
    for i, d in enumerate(dn.input_spatial_dimensions):
        low[d], high[d], interior[d] = int(pads[i][0]), int(pads[i][1]), int(ldil[i]) - 1
        shape[d] = low[d] + high[d] + (shape[d] - 1) * int(ldil[i]) + 1
    if any(n <= 0 for n in shape):
        return None
    b = Builder.before(op)
    x = padded(b, lhs, low, high, interior)
    attrs = dict(op.attributes)
    attrs["lhs_dilation"] = i64_array([1] * nsp)
    attrs["padding"] = A.DenseElementsAttr(TensorType((nsp, 2), i64), np.zeros((nsp, 2), np.int64))
    conv = b.create("stablehlo.convolution", [x, rhs], [res.type], attrs, regions=[])
    res.replace_all_uses_with(conv.result)
    op.erase()
    return conv


def _rewrite_depthwise_filter_gradient(op: Operation) -> bool:
    """The filter gradient of a 2-D depthwise convolution (JAX's form: batch_group_count =
    channels, the input's channels as its batch, the image batch as features; the output
    [C, 1, kh, kw] in any order) -> a depthwise convolution over the N x C pairs as
    channels (NHWC, batch 1, each pair's output gradient its filter), summed over N: the
    channels kernel then vectorizes along the pairs. As it stood it went through im2col
    and a one-column GEMM per channel (ConvNeXt's 7 x 7 on 4 x 96 x 14 x 14: 4.0 ms at
    1.8 GFLOP/s)."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    from axle.backends.cpu.kernels_conv_rows import MIN_CHANNELS
    lhs, rhs = op.operands
    res = op.results[0]
    dn = _static_2d(op, ("f32", "f64"))
    if dn is None:
        return False
    _, _, ldil, _, rev, fgc, bgc = conv_window(op)
    lt, kt, ot = lhs.type, rhs.type, res.type
    c, n = lt.shape[dn.input_batch_dimension], lt.shape[dn.input_feature_dimension]
    if fgc != 1 or bgc != c or bgc < 2 or any(d != 1 for d in ldil) or any(rev) \
            or kt.shape[dn.kernel_output_feature_dimension] != c or ot.shape[dn.output_batch_dimension] != 1 \
            or n * c < MIN_CHANNELS:
        return False
    et = lt.element_type
    b = Builder.before(op)
    isp, ksp, osp = dn.input_spatial_dimensions, dn.kernel_spatial_dimensions, dn.output_spatial_dimensions
    x = transposed(b, lhs, [*isp, dn.input_feature_dimension, dn.input_batch_dimension])
    x = reshaped(b, x, (1, lt.shape[isp[0]], lt.shape[isp[1]], n * c))
    w = transposed(b, rhs, [*ksp, dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension])
    w = reshaped(b, w, (kt.shape[ksp[0]], kt.shape[ksp[1]], 1, n * c))
    oh, ow = ot.shape[osp[0]], ot.shape[osp[1]]
    attrs = dict(op.attributes)
    attrs["dimension_numbers"] = A.ConvDimensionNumbersAttr(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
    attrs["feature_group_count"] = A.IntegerAttr(n * c, i64)
    attrs["batch_group_count"] = A.IntegerAttr(1, i64)
    conv = b.create("stablehlo.convolution", [x, w], [TensorType((1, oh, ow, n * c), et)], attrs, regions=[])
    pairs = reshaped(b, conv.result, (oh, ow, n, c))
    total = sum_reduce(b, pairs, (2,))
    total = reshaped(b, total, (oh, ow, 1, c))  # [osp0, osp1, ob, of]
    order = [osp[0], osp[1], dn.output_batch_dimension, dn.output_feature_dimension]
    out = total if order == [0, 1, 2, 3] else transposed(b, total, [order.index(d) for d in range(4)])
    res.replace_all_uses_with(out)
    op.erase()
    return True


FILTER_GRAD_MIN_UNITS = 64  # (output batch x features) above which a filter gradient moves to NHWC


def _rewrite_filter_gradient(op: Operation) -> bool:
    """A 2-D f32 filter gradient in another layout (PyTorch's and JAX's NCHW one: the input
    as [f, b, 0, 1], the output gradient as an [i, o, 0, 1] kernel whose window is the
    image) -> the NHWC form ([f, 0, 1, b] x [i, 0, 1, o] -> [0, 1, b, f]: activations and
    gradients NHWC), operands transposed there and the result back. There im2col copies
    each tap's batch run in order; in NCHW it gathered element by element with the batch
    innermost, or ran the window-dot kernel: measured through jax.grad, 3 -> 64 channels
    5 x 5 2.8x faster, 16 -> 16 3 x 3 2.0x, 16 -> 64 1.6x, 32 -> 32 and 64 -> 16 1.1x.
    Not for FILTER_GRAD_MIN_UNITS or fewer output (batch, feature) pairs: the window-dot
    kernel is faster there (8 -> 8 3 x 3: 0.82x as NHWC)."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    lhs, rhs = op.operands
    res = op.results[0]
    dn = _static_2d(op, ("f32",))
    if dn is None:
        return False
    _, _, ldil, _, rev, fgc, bgc = conv_window(op)
    if fgc != 1 or bgc != 1 or any(d != 1 for d in ldil) or any(rev):
        return False
    kt, ot = rhs.type, res.type
    window = kt.shape[dn.kernel_spatial_dimensions[0]] * kt.shape[dn.kernel_spatial_dimensions[1]]
    out_px = ot.shape[dn.output_spatial_dimensions[0]] * ot.shape[dn.output_spatial_dimensions[1]]
    units = ot.shape[dn.output_batch_dimension] * ot.shape[dn.output_feature_dimension]
    if out_px >= window or units <= FILTER_GRAD_MIN_UNITS:
        return False  # not a filter gradient's shape (the window is the image), or few pairs
    in_perm = [dn.input_feature_dimension, *dn.input_spatial_dimensions, dn.input_batch_dimension]
    k_perm = [dn.kernel_input_feature_dimension, *dn.kernel_spatial_dimensions, dn.kernel_output_feature_dimension]
    out_perm = [*dn.output_spatial_dimensions, dn.output_batch_dimension, dn.output_feature_dimension]
    if in_perm == [0, 1, 2, 3] and k_perm == [0, 1, 2, 3] and out_perm == [0, 1, 2, 3]:
        return False  # the NHWC form already
    _relayout(op, in_perm, k_perm, out_perm, A.ConvDimensionNumbersAttr(3, 0, (1, 2), 0, 3, (1, 2), 2, 3, (0, 1)))
    return True


class CpuConvRowsLayout(Pass):
    """Pass 'cpu-conv-rows-layout' (see the module docstring)."""

    name = "cpu-conv-rows-layout"

    def run(self, module: Module) -> bool:
        changed = False
        for op in [o for o in module.walk() if o.name == "stablehlo.convolution"]:
            op = _undilate_depthwise(op) or op
            if _rewrite_depthwise(op):  # any rank: the channels kernel takes n-D depthwise ones
                changed = True
                continue
            if _pointwise_as_dot(op):  # (any number of spatial dimensions)
                changed = True
                continue
            if _small_maps_as_dot(op):
                changed = True
                continue
            while (folded := fold_leading_spatial(op)) is not None:  # 3-D and up, one at a time
                op, changed = folded, True
            two_d = _as_2d(op)
            if two_d is not None:
                op, changed = two_d, True
            changed = (_rewrite(op) or _rewrite_direct(op) or _rewrite_depthwise(op)
                       or _rewrite_depthwise_filter_gradient(op) or _rewrite_filter_gradient(op)) or changed
        for op in [o for o in module.walk() if o.name == "stablehlo.convolution"]:
            changed = flat_filter_gradient(op) or changed  # (the NHWC form the rewrites above make)
        return changed
