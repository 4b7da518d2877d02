"""Runs of a patch row for im2col (kernels_conv.py, kernels_conv_general.py).

A convolution's patch matrix [T, taps x Cin] holds, for each output pixel and window tap,
Cin input features: in NHWC-like layouts (features innermost, stride 1) they are one
contiguous run of the input, or all padding. Copying the run with one memcpy (or zeroing
it with one memset) instead of element by element with a bounds check each made the
im2col fill, not the GEMM, stop dominating the convolutions of the conv_backward bench
workload.
"""
from __future__ import annotations

from llvmlite import ir

I1, I8, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(64)
P8 = I8.as_pointer()


def copy_or_zero(ctx, ok, src, dst, nbytes: int) -> None:
    """dst[:nbytes] = src[:nbytes] where ok (an i1), else zeros; src is only read when ok."""
    b = ctx.b
    mod = ctx.em.module
    memcpy = mod.declare_intrinsic("llvm.memcpy", [P8, P8, I64])
    memset = mod.declare_intrinsic("llvm.memset", [P8, I64])
    dst = b.bitcast(dst, P8)
    with b.if_else(ok) as (inside, padding):
        with inside:
            b.call(memcpy, [dst, b.bitcast(src, P8), ir.Constant(I64, nbytes), ir.Constant(I1, 0)])
        with padding:
            b.call(memset, [dst, ir.Constant(I8, 0), ir.Constant(I64, nbytes), ir.Constant(I1, 0)])
