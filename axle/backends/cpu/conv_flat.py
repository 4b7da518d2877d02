"""2-D filter gradients as 1-D ones over the flattened pixel stream (`flat_filter_gradient`).

The filter gradient of a stride-1 2-D convolution in the NHWC form ([f, 0, 1, b] x
[i, 0, 1, o] -> [0, 1, b, f]: the images' batch contracted, the channels as the batch) is

    dW[kh, kw, c, o] = sum over (n, h, w) of xp[n, h + kh, w + kw, c] * dy[n, h, w, o]

with xp the padded input, [N, Hp, Wp, C]. Number the padded pixels q = (n Hp + h) Wp + w
and extend dy to every q, with zeros where h >= Ho or w >= Wo: then xp[n, h + kh, w + kw]
is pixel q + kh Wp + kw of the flat stream (plus a tail of zeros past the last image), and

    dW[kh] = the filter gradient of a 1-D convolution of window KW over the stream shifted
             by kh Wp rows,

whose patch matrix is a strided view of the stream: rows (kw, c) one run of KW x C floats,
columns q C floats apart. kernels_conv_strided.py runs such a GEMM reading the input in
place; as a 2-D convolution the general path gathered a patch matrix element by element
(K = N Ho Wo columns per tile of rows): PyTorch's 16 -> 32 3 x 3 filter gradient on 16 x
32 x 32 images took 3.2 ms there (oneDNN 1.8 ms). The zero rows of dy cost (Hp Wp) / (Ho
Wo) more multiplications: 1.13x on 32 x 32 maps.

When KW x C is below the strided kernel's row run (few channels: a first layer's RGB), the
KH taps are stacked into the channels first (KH copies of the stream, [q, (kh, c)]), one
1-D gradient of rows (kw, kh, c)."""
from __future__ import annotations

import numpy as np

from axle.ir import attributes as A
from axle.ir.core import Operation
from axle.ir.types import TensorType, i64
from axle.passes.rewrite import Builder, i64_array, padded, reshaped, sliced

NHWC_FILTER_GRAD = (3, 0, (1, 2), 0, 3, (1, 2), 2, 3, (0, 1))  # [f, 0, 1, b] x [i, 0, 1, o] -> [0, 1, b, f]
MAX_WASTE = 2.0  # (Hp Wp) / (Ho Wo) above which the zero rows cost too much
MAX_STACK = 16  # most KH copies of the stream made for few channels
# input features from which the general path is left as it is: its patches copy runs of C
# floats there, and is within 10% (64 -> 64 on 16 x 16: 5.8 against 5.6 ms; 128 -> 128 on
# 28 x 28: 29 against 26), without the stream's copies (0.5 MiB more at the peak there)
MAX_CHANNELS = 64
# ...unless the gradient has fewer output features than this: the general path's GEMMs are
# as narrow (Glow's 64 -> 12 3 x 3 on 16 x 16 x 16: 2.3-3.5 ms there, 1.45-1.75 here)
WIDE_OUTPUTS = 32
# phase taps / taps above which a strided gradient is left as it is: 7 x 7 stride 2 (64 /
# 49, ResNet's stem) 20 -> 14 ms; 3 x 3 stride 2 (16 / 9) 23 -> 32 ms; 4 x 4 stride 2: none
MAX_TAP_WASTE = 1.35
# ...and input features from which it is left as it is too: the phases' stream is read
# through a transpose once per tap row, which the general path beat with more channels
# (4 x 4 stride 2, 16 -> 32 on 64 x 64: 1.5 ms general, 2.1-2.3 through the phases;
# 3 -> 64 7 x 7 stride 2: 20 -> 14 ms through them)
PHASES_MAX_CHANNELS = 8


def _gradient_1d(b: Builder, op: Operation, stream, dyf, kw: int):
    """The 1-D filter gradient of window kw: stream [S, C'] (S = L + kw - 1) against dyf
    [L, O] -> [kw, C', O], as a 2-D convolution with a unit row (the form the strided
    path takes: [f, 0, 1, b] x [i, 0, 1, o] -> [0, 1, b, f])."""
    s, c = stream.type.shape
    length, o = dyf.type.shape
    x = reshaped(b, stream, (1, 1, s, c))
    k = reshaped(b, dyf, (1, 1, length, o))
    attrs = {k_: v for k_, v in op.attributes.items() if k_ in ("precision_config",)}
    attrs.update({
        "dimension_numbers": A.ConvDimensionNumbersAttr(*NHWC_FILTER_GRAD),
        "window_strides": i64_array([1, 1]), "lhs_dilation": i64_array([1, 1]), "rhs_dilation": i64_array([1, 1]),
        "padding": A.DenseElementsAttr(TensorType((2, 2), i64), np.zeros((2, 2), np.int64)),
        "feature_group_count": A.IntegerAttr(1, i64), "batch_group_count": A.IntegerAttr(1, i64)})
    out_t = TensorType((1, kw, c, o), stream.type.element_type)
    conv = b.create("stablehlo.convolution", [x, k], [out_t], attrs, regions=[])
    return reshaped(b, conv.result, (kw, c, o))


def flat_filter_gradient(op: Operation, phases: bool = False) -> bool:
    """Rewrite filter-gradient convolution op (module docstring) when the strided path
    takes the 1-D gradients; returns whether it did. (phases: op is _space_to_depth's, its
    features s x s times the input's.)"""
    from axle.backends.cpu.kernels_conv_general import conv_window
    from axle.backends.cpu.kernels_conv_strided import ENABLED, MIN_K, MIN_M, MIN_N
    lhs, rhs = op.operands
    res = op.results[0]
    if not ENABLED or not all(isinstance(v.type, TensorType) and v.type.is_static and str(v.type.element_type) == "f32"
                              for v in (lhs, rhs, res)):
        return False
    dn = op.attributes.get("dimension_numbers")
    if not isinstance(dn, A.ConvDimensionNumbersAttr) or _numbers(dn) != NHWC_FILTER_GRAD:
        return False
    strides, _, ldil, rdil, rev, fgc, bgc = conv_window(op)
    if fgc != 1 or bgc != 1 or any(v != 1 for v in (*strides, *ldil)) or any(rev):
        return False
    n, h, w, c = lhs.type.shape
    n2, ho, wo, o = rhs.type.shape
    kh, kw, c2, o2 = res.type.shape
    pad = op.attributes.get("padding")
    pads = np.asarray(pad.array, np.int64).reshape(2, 2) if pad is not None else np.zeros((2, 2), np.int64)
    if (pads < 0).any() or 0 in (n, h, w, c, ho, wo, o) or (n2, c2, o2) != (n, c, o):
        return False
    hp, wp = h + int(pads[0].sum()), w + int(pads[1].sum())
    sh, sw = int(rdil[0]), int(rdil[1])  # the forward convolution's strides
    if hp - (ho - 1) * sh != kh or wp - (wo - 1) * sw != kw:
        return False
    if (sh, sw) != (1, 1):
        return _space_to_depth(op, pads, sh, sw)
    length = n * hp * wp
    if c >= MAX_CHANNELS and o >= WIDE_OUTPUTS and not phases:
        return False
    stack = kw * c < MIN_M
    if hp * wp > MAX_WASTE * ho * wo or length < MIN_K or o < MIN_N or stack and (kw * kh * c < MIN_M or kh > MAX_STACK):
        return False
    b = Builder.before(op)
    x = padded(b, lhs, [0, int(pads[0][0]), int(pads[1][0]), 0], [0, int(pads[0][1]), int(pads[1][1]), 0])
    tail = (kh - 1) * wp + kw - 1
    flat = padded(b, reshaped(b, x, (length, c)), [0, 0], [tail, 0])  # [L + tail, C]
    dyf = reshaped(b, padded(b, rhs, [0, 0, 0, 0], [0, hp - ho, wp - wo, 0]), (length, o))
    span = length + kw - 1
    if stack:  # [q, (kh, c)]: KH shifted copies side by side
        parts = [reshaped(b, sliced(b, flat, [i * wp, 0], [i * wp + span, c]), (span, 1, c)) for i in range(kh)]
        stacked = parts[0] if kh == 1 else b.create(
            "stablehlo.concatenate", parts, [TensorType((span, kh, c), lhs.type.element_type)],
            {"dimension": A.IntegerAttr(1, i64)}).result
        g = _gradient_1d(b, op, reshaped(b, stacked, (span, kh * c)), dyf, kw)  # [kw, (kh, c), o]
        g = reshaped(b, g, (kw, kh, c, o))
        out = b.create("stablehlo.transpose", [g], [res.type], {"permutation": i64_array([1, 0, 2, 3])}).result
    else:
        rows = [reshaped(b, _gradient_1d(b, op, sliced(b, flat, [i * wp, 0], [i * wp + span, c]), dyf, kw),
                         (1, kw, c, o)) for i in range(kh)]
        out = rows[0] if kh == 1 else b.create("stablehlo.concatenate", rows, [res.type],
                                                {"dimension": A.IntegerAttr(0, i64)}).result
    res.replace_all_uses_with(out)
    op.erase()
    return True


def _space_to_depth(op: Operation, pads, sh: int, sw: int) -> bool:
    """A strided filter gradient (the forward stride s as rhs dilation) as a stride-1 one
    over the input's s x s phases stacked as channels: x[s u + i, s v + j, c] =
    z[u, v, (i, j, c)], so tap (s a + i, s b + j) of the gradient is tap (a, b) of z's at
    feature (i, j, c). ResNet's 7 x 7 stride-2 stem on RGB: 12 features, a 4 x 4 window."""
    lhs, rhs = op.operands
    res = op.results[0]
    n, h, w, c = lhs.type.shape
    _, ho, wo, o = rhs.type.shape
    kh, kw = res.type.shape[:2]
    hp, wp = h + int(pads[0].sum()), w + int(pads[1].sum())
    hz, wz = -(-hp // sh), -(-wp // sw)
    kh2, kw2 = hz - ho + 1, wz - wo + 1
    if c >= PHASES_MAX_CHANNELS or (kh2 * kw2) * sh * sw > MAX_TAP_WASTE * (kh * kw) \
            or (hz * wz) * (kh2 * kw2) * sh * sw > MAX_WASTE * (ho * wo) * (kh * kw):
        return False
    b = Builder.before(op)
    x = padded(b, lhs, [0, int(pads[0][0]), int(pads[1][0]), 0],
             [0, int(pads[0][1]) + hz * sh - hp, int(pads[1][1]) + wz * sw - wp, 0])
    x = reshaped(b, x, (n, hz, sh, wz, sw, c))
    et = lhs.type.element_type
    x = b.create("stablehlo.transpose", [x], [TensorType((n, hz, wz, sh, sw, c), et)],
                 {"permutation": i64_array([0, 1, 3, 2, 4, 5])}).result
    z = reshaped(b, x, (n, hz, wz, sh * sw * c))
    attrs = dict(op.attributes)
    attrs["rhs_dilation"] = i64_array([1, 1])
    attrs["padding"] = A.DenseElementsAttr(TensorType((2, 2), i64), np.zeros((2, 2), np.int64))
    conv = b.create("stablehlo.convolution", [z, rhs], [TensorType((kh2, kw2, sh * sw * c, o), et)], attrs,
                    regions=[])
    g = reshaped(b, conv.result, (kh2, kw2, sh, sw, c, o))
    g = b.create("stablehlo.transpose", [g], [TensorType((kh2, sh, kw2, sw, c, o), et)],
                 {"permutation": i64_array([0, 2, 1, 3, 4, 5])}).result
    g = reshaped(b, g, (kh2 * sh, kw2 * sw, c, o))
    out = g if (kh2 * sh, kw2 * sw) == (kh, kw) else sliced(b, g, [0, 0, 0, 0], [kh, kw, c, o])
    res.replace_all_uses_with(out)
    op.erase()
    flat_filter_gradient(conv, phases=True)  # the stride-1 gradient: flat when the strided path takes it
    return True


def _numbers(dn: A.ConvDimensionNumbersAttr) -> tuple:
    return (dn.input_batch_dimension, dn.input_feature_dimension, tuple(dn.input_spatial_dimensions),
            dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension,
            tuple(dn.kernel_spatial_dimensions), dn.output_batch_dimension, dn.output_feature_dimension,
            tuple(dn.output_spatial_dimensions))
