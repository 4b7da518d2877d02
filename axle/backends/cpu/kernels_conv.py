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
    plan = _gemm_plan(op)
    if plan is not None:
        _conv_as_gemm(ctx, op, *plan)
        return
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


# ----------------------------------------------------------------- convolution as GEMM
PATCH_BYTES = 256 * 1024  # target size of one tile of patches (stays in L2)


def _gemm_plan(op: Operation):
    """(prefix, nsp, rows P, patch width Kdim, Cout) when op can run as tiled im2col + GEMM:
    one element type BLAS has, output [N, spatial..., F], kernel [spatial..., I, O], no
    grouping, no lhs dilation, no window reversal. Else None (the direct loop runs)."""
    from axle.backends.cpu import blas
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    key = str(ot.element_type)
    if key not in ("f32", "f64") or str(lt.element_type) != key or str(kt.element_type) != key:
        return None
    if blas.PREFIX[key] not in blas.available():
        return None
    dn = op.attr("dimension_numbers")
    nsp = len(dn["input_spatial_dimensions"])
    if op.attr("feature_group_count", 1) != 1 or op.attr("batch_group_count", 1) != 1:
        return None
    if any(d != 1 for d in (op.attr("lhs_dilation") or [1] * nsp)) or any(op.attr("window_reversal") or []):
        return None
    if list(dn["output_spatial_dimensions"]) != list(range(1, nsp + 1)) or dn["output_batch_dimension"] != 0 \
            or dn["output_feature_dimension"] != nsp + 1:
        return None
    if list(dn["kernel_spatial_dimensions"]) != list(range(nsp)) or dn["kernel_input_feature_dimension"] != nsp \
            or dn["kernel_output_feature_dimension"] != nsp + 1:
        return None
    rows = 1
    for d in ot.shape[:-1]:
        rows *= d
    kdim = 1
    for d in kt.shape[:-1]:
        kdim *= d
    cout = ot.shape[-1]
    if min(rows, kdim, cout) < 1 or max(rows, kdim, cout) >= 2 ** 31 or rows * kdim * cout < blas.MIN_WORK:
        return None
    return blas.PREFIX[key], nsp, rows, kdim, cout


def _conv_as_gemm(ctx: Context, op: Operation, p: str, nsp: int, rows: int, kdim: int, cout: int) -> None:
    """Tiles of T output pixels: gather their input windows into a [T, Kdim] patch matrix
    (zeros where the window is in padding), then out[T, Cout] = patches @ W[Kdim, Cout]."""
    import numpy as np

    from axle.backends.cpu import blas
    from axle.ir.types import TensorType
    em, b = ctx.em, ctx.b
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    et = ot.element_type
    dn = op.attr("dimension_numbers")
    ib, if_, isp = dn["input_batch_dimension"], dn["input_feature_dimension"], dn["input_spatial_dimensions"]
    strides = op.attr("window_strides") or [1] * nsp
    pad = op.attr("padding")
    pad_lo = [int(pad[i][0]) for i in range(nsp)] if pad is not None else [0] * nsp
    rhs_dil = op.attr("rhs_dilation") or [1] * nsp
    ksizes = list(kt.shape[:nsp])
    cin = kt.shape[nsp]
    out_sp = list(ot.shape[1:nsp + 1])
    itemsize = np.dtype(et.dtype).itemsize
    tile = max(1, min(rows, PATCH_BYTES // (kdim * itemsize)))
    n_tiles = (rows + tile - 1) // tile
    from axle.backends.cpu.parallel import max_threads, split_ranges
    slots = max_threads() if n_tiles > 1 else 1  # one patch matrix per thread of the pool
    token = object()  # names the scratch buffer for the buffer report
    patches_ref = ctx.temp_ref(TensorType((slots, tile, kdim), et), token)
    zero = S.constant(et, 0)

    def fill(patches, row0, nrows):
        b = ctx.b
        lhs_buf = ctx.buffer(lhs)

        def row_body(ri):
            b = ctx.b
            r = b.add(row0, ri)
            # r -> (batch, output position...)
            pos = []
            rem = r
            for extent in reversed(out_sp):
                pos.append(b.urem(rem, em.const_i64(extent)))
                rem = b.udiv(rem, em.const_i64(extent))
            pos.reverse()
            batch = rem

            def col_body(kidx):
                ks, c = kidx[:nsp], kidx[nsp]
                ok = ir.Constant(I1, 1)
                lidx = [None] * lt.rank
                lidx[ib] = batch
                lidx[if_] = c
                for i in range(nsp):
                    q = b.sub(b.add(b.mul(pos[i], em.const_i64(strides[i])),
                                    b.mul(ks[i], em.const_i64(rhs_dil[i]))), em.const_i64(pad_lo[i]))
                    inside = b.and_(b.icmp_signed(">=", q, em.const_i64(0)),
                                    b.icmp_signed("<", q, em.const_i64(lt.shape[isp[i]])))
                    ok = b.and_(ok, inside)
                    lidx[isp[i]] = b.select(inside, q, em.const_i64(0))  # always a valid address
                x = S.load(b, em.element_ptr(lhs_buf, lt.element_type, em.linear(lidx, lt.shape)), lt.element_type)
                col = em.linear(list(ks) + [c], ksizes + [cin])
                dst = em.element_ptr(patches, et, b.add(b.mul(ri, em.const_i64(kdim)), col))
                S.store(b, b.select(ok, x, zero), dst, et)
            em.loop_nest(ksizes + [cin], col_body)
        em.for_range_dynamic(em.const_i64(0), nrows, row_body)

    def tiles(lo, hi, tid):
        b = ctx.b
        patches = b.gep(ctx.resolve(patches_ref), [b.mul(tid, em.const_i64(tile * kdim * itemsize))], inbounds=True)

        def one_tile(t):
            b = ctx.b
            row0 = b.mul(t, em.const_i64(tile))
            left = b.sub(em.const_i64(rows), row0)
            nrows = b.select(b.icmp_unsigned("<", left, em.const_i64(tile)), left, em.const_i64(tile))
            fill(patches, row0, nrows)
            blas.call_gemm(ctx, p, et, m=tile, n=cout, k=kdim, lhs=patches, rhs=ctx.buffer(rhs),
                           out=ctx.buffer(op.results[0]), out_offset=b.mul(row0, em.const_i64(cout * itemsize)),
                           m_count=nrows)
        em.for_range_dynamic(lo, hi, one_tile)
    split_ranges(ctx, n_tiles, rows * kdim * cout // 8, tiles, max_threads=slots)
    ctx.release(token)
    ctx.mark_library(f"blas.{p}gemm")
