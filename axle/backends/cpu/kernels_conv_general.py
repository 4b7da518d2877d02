"""Every other convolution of f32 / f64 through tiled im2col + BLAS GEMM.

kernels_conv.py runs NHWC/HWIO convolutions without groups or lhs dilation directly or as
im2col + GEMM. This covers the rest of what JAX and PyTorch emit: any dimension numbers
(NCHW, the filter gradient's [f, 0, 1, b] x [i, 0, 1, o] -> [0, 1, b, f], the input
gradient's [0, 1, o, i] kernels), strides, lhs dilation (transposed convolutions, input
gradients of strided convolutions), rhs dilation, window reversal, feature_group_count
(grouped and depthwise) and batch_group_count (filter gradients of grouped convolutions).

Per group g of G = feature_group_count * batch_group_count (one of them is 1), with
Cg = output features / G:
* the weights are packed once into W_g[(k_spatial..., c), Cg] (reversed where the window
  is, the group's output features), unless they are already laid out that way;
* the output's non-feature dimensions, in the output's memory order, are the GEMM's rows;
  tiles of T rows gather their windows into a patch matrix P[T, K] (zero where the window
  falls in padding or between lhs-dilated elements), the batch index offset by g's batch
  block and the feature index by g's feature block; stored transposed, [K, T], when the
  rows step through the input in smaller strides than the window's features (a filter
  gradient: the contraction runs over the input's batch dimension), so that the gather
  reads memory in order;
* out[T, Cg] = P @ W_g, written in place (the output feature dimension is innermost:
  columns g Cg .. of rows of length F) or through a tile of scratch and a scatter.
Tiles are shared across the pool's threads, each with its own patch (and output) scratch.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from llvmlite import ir

from axle.backends.cpu import scalar as S
from axle.backends.cpu.emitter import _ty
from axle.backends.cpu.scalar import I1
from axle.ir.core import Operation
from axle.ir.types import TensorType

PATCH_BYTES = 256 * 1024  # target size of one tile of patches (stays in L2)
MIN_TILE = 64  # fewest rows of a tile


def general_plan(op: Operation) -> Optional[dict]:
    from axle.backends.cpu import blas
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    key = str(ot.element_type)
    if key not in ("f32", "f64") or str(lt.element_type) != key or str(kt.element_type) != key:
        return None
    if blas.PREFIX[key] not in blas.available():
        return None
    dn = op.attr("dimension_numbers")
    fgc = op.attr("feature_group_count", 1)
    bgc = op.attr("batch_group_count", 1)
    if fgc > 1 and bgc > 1:
        return None
    groups = fgc * bgc
    of = dn["output_feature_dimension"]
    ksp = list(dn["kernel_spatial_dimensions"])
    ki = dn["kernel_input_feature_dimension"]
    cout = ot.shape[of]
    if cout % groups:
        return None
    cg = cout // groups
    kdim = kt.shape[ki]
    for d in ksp:
        kdim *= kt.shape[d]
    rows = 1
    for d in range(ot.rank):
        if d != of:
            rows *= ot.shape[d]
    if min(rows, kdim, cg) < 1 or max(rows, kdim, cout) >= 2 ** 31:
        return None
    if rows * kdim * cg * groups < blas.MIN_WORK or 0 in lt.shape:
        return None
    return dict(p=blas.PREFIX[key], groups=groups, cg=cg, kdim=kdim, rows=rows)


def emit_general_conv(ctx, op: Operation, plan: dict) -> None:
    from axle.backends.cpu import blas
    from axle.backends.cpu.parallel import max_threads, split_ranges
    em = ctx.em
    c64 = em.const_i64
    lhs, rhs = op.operands
    res = op.results[0]
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(res)
    et = ot.element_type
    itemsize = np.dtype(et.dtype).itemsize
    dn = op.attr("dimension_numbers")
    ib, if_, isp = dn["input_batch_dimension"], dn["input_feature_dimension"], list(dn["input_spatial_dimensions"])
    ki, ko, ksp = (dn["kernel_input_feature_dimension"], dn["kernel_output_feature_dimension"],
                   list(dn["kernel_spatial_dimensions"]))
    ob, of, osp = dn["output_batch_dimension"], dn["output_feature_dimension"], list(dn["output_spatial_dimensions"])
    nsp = len(isp)
    strides = op.attr("window_strides") or [1] * nsp
    pad = op.attr("padding")
    pad_lo = [int(pad[i][0]) for i in range(nsp)] if pad is not None else [0] * nsp
    ldil = op.attr("lhs_dilation") or [1] * nsp
    rdil = op.attr("rhs_dilation") or [1] * nsp
    rev = op.attr("window_reversal") or [False] * nsp
    fgc = op.attr("feature_group_count", 1)
    bgc = op.attr("batch_group_count", 1)
    groups, cg, kdim, rows, p = plan["groups"], plan["cg"], plan["kdim"], plan["rows"], plan["p"]
    cin = kt.shape[ki]
    ksizes = [kt.shape[d] for d in ksp]
    out_batch = ot.shape[ob]
    row_dims = [d for d in range(ot.rank) if d != of]  # the GEMM's rows: in the output's memory order
    row_shape = [ot.shape[d] for d in row_dims]
    direct_out = of == ot.rank - 1
    tokens = []

    # weights: W[g, (k_spatial..., c), j] = rhs[k_spatial (reversed), c, g cg + j]
    in_place_w = groups == 1 and not any(rev) and list(range(kt.rank)) == ksp + [ki, ko]
    if in_place_w:
        def weights():
            return ctx.buffer(rhs)
    else:
        token = object()
        tokens.append(token)
        wref = ctx.temp_ref(TensorType((groups, kdim, cg), et), token)

        def pack(idx):
            g, kidx, j = idx[0], idx[1:1 + nsp + 1], idx[-1]
            b = em.b
            full = [None] * kt.rank
            for i in range(nsp):
                full[ksp[i]] = b.sub(c64(ksizes[i] - 1), kidx[i]) if rev[i] else kidx[i]
            full[ki] = kidx[nsp]
            full[ko] = b.add(b.mul(g, c64(cg)), j)
            x = S.load(b, em.element_ptr(ctx.buffer(rhs), et, em.linear(full, kt.shape)), et)
            S.store(b, x, em.element_ptr(ctx.resolve(wref), et, em.linear(idx, [groups] + ksizes + [cin, cg])), et)
        em.loop_nest([groups] + ksizes + [cin, cg], pack)

        def weights():
            return ctx.resolve(wref)

    # at least MIN_TILE rows: a long window (a filter gradient's K is batch x image) would
    # otherwise leave skinny GEMMs of a few rows
    tile = max(1, min(rows, max(MIN_TILE, PATCH_BYTES // (kdim * itemsize))))
    n_tiles = (rows + tile - 1) // tile
    slots = max_threads() if n_tiles * groups > 1 else 1
    token = object()
    tokens.append(token)
    slot_elems = tile * kdim + (0 if direct_out else tile * cg)
    scratch = ctx.temp_ref(TensorType((slots, slot_elems), et), token)
    zero = S.constant(et, 0)

    # which way to gather: patches [T, K] (K innermost) when the input's feature dimension is
    # the smaller stride (NHWC), else transposed [K, T] (rows innermost): a filter gradient
    # contracts over the input's batch dimension, whose stride is a whole image, while its
    # rows step along the input's features
    lstr = [1] * lt.rank
    for d in range(lt.rank - 2, -1, -1):
        lstr[d] = lstr[d + 1] * lt.shape[d + 1]
    inner_row = row_dims[-1]
    row_stride = lstr[ib] if inner_row == ob else lstr[isp[osp.index(inner_row)]] * strides[osp.index(inner_row)]
    transposed = lstr[if_] > row_stride

    def element(g, ridx, kidx):
        """(ok, value) of patch element (row, column): the input under the window or 0."""
        b = em.b
        at = dict(zip(row_dims, ridx))
        batch = b.add(b.mul(g, c64(out_batch)), at[ob]) if bgc > 1 else at[ob]
        ks, c = kidx[:nsp], kidx[nsp]
        ok = ir.Constant(I1, 1)
        lidx = [None] * lt.rank
        lidx[ib] = batch
        lidx[if_] = b.add(b.mul(g, c64(cin)), c) if fgc > 1 else c
        for i in range(nsp):
            q = b.sub(b.add(b.mul(at[osp[i]], c64(strides[i])), b.mul(ks[i], c64(rdil[i]))), c64(pad_lo[i]))
            nonneg = b.icmp_signed(">=", q, c64(0))
            ok = b.and_(ok, nonneg)
            if ldil[i] != 1:  # between dilated elements: a hole
                q = b.select(nonneg, q, c64(0))
                ok = b.and_(ok, b.icmp_unsigned("==", b.urem(q, c64(ldil[i])), c64(0)))
                q = b.udiv(q, c64(ldil[i]))
            ok = b.and_(ok, b.icmp_signed("<", q, c64(lt.shape[isp[i]])))
            lidx[isp[i]] = b.select(ok, q, c64(0))  # always a valid address
        x = S.load(b, em.element_ptr(ctx.buffer(lhs), et, em.linear(lidx, lt.shape)), et)
        return b.select(ok, x, zero)

    def fill(patches, g, row0, nrows):
        if transposed:
            def col_body(kidx):
                col = em.linear(list(kidx), ksizes + [cin])

                def row_body(ri):
                    b = em.b
                    x = element(g, em.delinear(b.add(row0, ri), row_shape), kidx)
                    S.store(em.b, x, em.element_ptr(patches, et, em.b.add(em.b.mul(col, c64(tile)), ri)), et)
                em.for_range_dynamic(c64(0), nrows, row_body)
            em.loop_nest(ksizes + [cin], col_body)
            return

        def row_body(ri):
            b = em.b
            ridx = em.delinear(b.add(row0, ri), row_shape)

            def col_body(kidx):
                b = em.b
                col = em.linear(list(kidx), ksizes + [cin])
                S.store(b, element(g, ridx, kidx), em.element_ptr(patches, et, b.add(b.mul(ri, c64(kdim)), col)), et)
            em.loop_nest(ksizes + [cin], col_body)
        em.for_range_dynamic(c64(0), nrows, row_body)

    def scatter(tmp, g, row0, nrows):
        def row_body(ri):
            b = em.b
            ridx = em.delinear(b.add(row0, ri), row_shape)

            def col(j):
                b = em.b
                full = [None] * ot.rank
                for d, i in zip(row_dims, ridx):
                    full[d] = i
                full[of] = b.add(b.mul(g, c64(cg)), j)
                x = S.load(b, em.element_ptr(tmp, et, b.add(b.mul(ri, c64(cg)), j)), et)
                S.store(b, x, em.element_ptr(ctx.buffer(res), et, em.linear(full, ot.shape)), et)
            em.for_range_dynamic(c64(0), c64(cg), col)
        em.for_range_dynamic(c64(0), nrows, row_body)

    def tiles(lo, hi, tid):
        b = ctx.b
        mine = b.gep(b.bitcast(ctx.resolve(scratch), S.mem_type(et).as_pointer()),
                     [b.mul(tid, c64(slot_elems))], inbounds=True)
        patches = mine
        tmp = None if direct_out else b.gep(mine, [c64(tile * kdim)], inbounds=True)

        def one(t):
            b = ctx.b
            g = b.udiv(t, c64(n_tiles))
            row0 = b.mul(b.urem(t, c64(n_tiles)), c64(tile))
            left = b.sub(c64(rows), row0)
            nrows = b.select(b.icmp_unsigned("<", left, c64(tile)), left, c64(tile))
            fill(patches, g, row0, nrows)
            b = ctx.b
            w_off = b.mul(g, c64(kdim * cg * itemsize))
            if direct_out:
                out_off = b.mul(b.add(b.mul(row0, c64(groups * cg)), b.mul(g, c64(cg))), c64(itemsize))
                blas.call_gemm(ctx, p, et, m=tile, n=cg, k=kdim, lhs=patches, rhs=weights(), out=ctx.buffer(res),
                               rhs_offset=w_off, out_offset=out_off, m_count=nrows, ldc=groups * cg, lhs_t=transposed)
            else:
                blas.call_gemm(ctx, p, et, m=tile, n=cg, k=kdim, lhs=patches, rhs=weights(), out=tmp,
                               rhs_offset=w_off, m_count=nrows, lhs_t=transposed)
                scatter(tmp, g, row0, nrows)
        em.for_range_dynamic(lo, hi, one)
    split_ranges(ctx, n_tiles * groups, rows * kdim * cg * groups // 8, tiles, max_threads=slots)
    for t in tokens:
        ctx.release(t)
    ctx.mark_library(f"blas.{p}gemm")
