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
the original layout is the better choice)."""
from __future__ import annotations

import dataclasses

from axle.ir import attributes as A
from axle.ir.core import Module, Operation
from axle.ir.types import TensorType, i64
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder

SMALL_FEATURES = 8  # output features below which the rows layout is used


def _transpose(b: Builder, v, perm: list):
    t = v.type
    return b.create("stablehlo.transpose", [v], [TensorType(tuple(t.shape[p] for p in perm), t.element_type)],
                    {"permutation": A.DenseArrayAttr(i64, tuple(perm))}).result


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
    x = _transpose(b, lhs, in_perm)
    conv = b.create("stablehlo.convolution", [x, rhs], [out_t], attrs, regions=[])
    back = [out_perm.index(d) for d in range(rank)]
    out = _transpose(b, conv.result, back)
    res.replace_all_uses_with(out)
    op.erase()
    return True


class CpuConvRowsLayout(Pass):
    """Pass 'cpu-conv-rows-layout' (see the module docstring)."""

    name = "cpu-conv-rows-layout"

    def run(self, module: Module) -> bool:
        changed = False
        for op in [o for o in module.walk() if o.name == "stablehlo.convolution"]:
            changed = _rewrite(op) or changed
        return changed
