"""Convolution on the CPU: a direct loop nest following the spec's definition.

For each output element (batch, feature, spatial...), sum over the input features of its
feature group and over the kernel window: the input position in the padded, lhs-dilated
input is out * stride + k * rhs_dilation - pad_low; positions in padding or between
dilated elements contribute nothing. Kernel windows may be reversed. batch_group_count
and feature_group_count pick the contiguous block of input batches / features that each
output feature reads. Accumulation is in f32 for floats of 32 bits or less, like dot.
"""
from __future__ import annotations

from llvmlite import ir

from axle.backends.cpu import scalar as S
from axle.backends.cpu.compiler import Context, kernel
from axle.backends.cpu.emitter import _ty
from axle.backends.cpu.kernels import accumulator_type
from axle.backends.cpu.scalar import I1, Unsupported
from axle.backends.cpu.scalar_ops import RULES, convert
from axle.ir.core import Operation


def _check_conv(op: Operation) -> None:
    for v in list(op.operands) + list(op.results):
        S.reg_type(_ty(v).element_type)
        if _ty(v).is_quantized:
            raise Unsupported(f"quantized {op.where()}")


@kernel("stablehlo.convolution", memory_operands=True, check=_check_conv)
def convolution(ctx: Context, op: Operation) -> None:
    em, b = ctx.em, ctx.b
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    dn = op.attr("dimension_numbers")
    nsp = len(dn["input_spatial_dimensions"])
    strides = op.attr("window_strides") or [1] * nsp
    pad = op.attr("padding")
    pad_lo = [int(pad[i][0]) for i in range(nsp)] if pad is not None else [0] * nsp
    lhs_dil = op.attr("lhs_dilation") or [1] * nsp
    rhs_dil = op.attr("rhs_dilation") or [1] * nsp
    reverse = op.attr("window_reversal") or [False] * nsp
    fgc = op.attr("feature_group_count", 1)
    bgc = op.attr("batch_group_count", 1)
    ib, if_, isp = dn["input_batch_dimension"], dn["input_feature_dimension"], dn["input_spatial_dimensions"]
    ki, ko, ksp = (dn["kernel_input_feature_dimension"], dn["kernel_output_feature_dimension"],
                   dn["kernel_spatial_dimensions"])
    ob, of, osp = dn["output_batch_dimension"], dn["output_feature_dimension"], dn["output_spatial_dimensions"]
    out_features = ot.shape[of]
    out_batch = ot.shape[ob]
    cin = kt.shape[ki]  # input features per group
    ksizes = [kt.shape[d] for d in ksp]
    oet = ot.element_type
    acc_et = accumulator_type(oet)
    add, mul = RULES["stablehlo.add"], RULES["stablehlo.multiply"]
    dst = ctx.buffer(op.results[0])

    def body(oidx):
        fo = oidx[of]
        acc = em.alloca(S.reg_type(acc_et))
        b.store(S.constant(acc_et, 0), acc)
        fgroup = b.udiv(fo, em.const_i64(out_features // fgc))
        bgroup = b.udiv(fo, em.const_i64(out_features // bgc))
        batch_in = b.add(b.mul(bgroup, em.const_i64(out_batch)), oidx[ob]) if bgc > 1 else oidx[ob]

        def inner(widx):
            c, ks = widx[0], widx[1:]
            ok = ir.Constant(I1, 1)
            lidx = [None] * lt.rank
            kidx = [None] * kt.rank
            lidx[ib] = batch_in
            lidx[if_] = b.add(b.mul(fgroup, em.const_i64(cin)), c) if fgc > 1 else c
            kidx[ki] = c
            kidx[ko] = fo
            for i in range(nsp):
                p = b.sub(b.add(b.mul(oidx[osp[i]], em.const_i64(strides[i])),
                                b.mul(ks[i], em.const_i64(rhs_dil[i]))), em.const_i64(pad_lo[i]))
                ok = b.and_(ok, b.icmp_signed(">=", p, em.const_i64(0)))
                if lhs_dil[i] != 1:
                    ok = b.and_(ok, b.icmp_unsigned("==", b.urem(p, em.const_i64(lhs_dil[i])), em.const_i64(0)))
                    p = b.udiv(p, em.const_i64(lhs_dil[i]))
                ok = b.and_(ok, b.icmp_signed("<", p, em.const_i64(lt.shape[isp[i]])))
                lidx[isp[i]] = p
                kidx[ksp[i]] = b.sub(em.const_i64(ksizes[i] - 1), ks[i]) if reverse[i] else ks[i]
            with b.if_then(ok):
                x = convert(em, lt.element_type, acc_et, em.value_at(lhs, lidx))
                y = convert(em, kt.element_type, acc_et, em.value_at(rhs, kidx))
                b.store(add(em, acc_et, [b.load(acc), mul(em, acc_et, [x, y], op)], op), acc)

        em.loop_nest([cin] + ksizes, inner)
        out = S.finish(b, convert(em, acc_et, oet, b.load(acc)), oet)
        S.store(b, out, em.element_ptr(dst, oet, em.linear(oidx, ot.shape)), oet)

    em.loop_nest(list(ot.shape), body)
