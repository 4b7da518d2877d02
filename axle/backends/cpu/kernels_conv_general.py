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

from axle.codegen import scalar as S
from axle.codegen.emitter import _strides, _ty
from axle.codegen.scalar import I1
from axle.ir.core import Operation
from axle.ir.types import TensorType

PATCH_BYTES = 256 * 1024  # target size of one tile of patches (stays in L2)
MIN_TILE = 64  # fewest rows of a tile


def conv_window(op: Operation) -> tuple:
    """A convolution's window attributes with the spec's defaults filled in: (strides, low
    paddings, lhs dilation, rhs dilation, window reversal, feature group count, batch group
    count), one entry per spatial dimension for the lists."""
    nsp = len(op.attr("dimension_numbers")["input_spatial_dimensions"])
    pad = op.attr("padding")
    return (op.attr("window_strides") or [1] * nsp,
            [int(pad[i][0]) for i in range(nsp)] if pad is not None else [0] * nsp,
            op.attr("lhs_dilation") or [1] * nsp, op.attr("rhs_dilation") or [1] * nsp,
            op.attr("window_reversal") or [False] * nsp,
            op.attr("feature_group_count", 1), op.attr("batch_group_count", 1))


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


def _phases(ot_sp, ksizes, strides, pad_lo, ldil, rdil):
    """The phases of the output to compute separately, each a list over spatial dimensions
    of (first output, output step, count, first tap, tap step, taps, q_t, q_0, q_step, hole):
    output positions o = first + step t (t < count), window taps k = first tap + tap step j
    (j < taps), input position (q_t t + q_0 + q_step j) / hole (valid only when it divides).
    With lhs dilation s and stride 1 (transposed convolutions, input gradients of strided
    ones), the outputs o = phase (mod s) see only the taps k with o + k rd - pad = 0 (mod
    s): one phase per residue, each a dense convolution with its own taps (no products
    with the holes). Otherwise one phase: every output, every tap, holes checked."""
    import itertools
    nsp = len(ksizes)
    if all(d == 1 for d in ldil) or any(s != 1 for s in strides):
        return [[(0, 1, ot_sp[i], 0, 1, ksizes[i], strides[i], -pad_lo[i], rdil[i], ldil[i]) for i in range(nsp)]]
    out = []
    for phase in itertools.product(*[range(min(ldil[i], ot_sp[i])) for i in range(nsp)]):
        dims = []
        for i in range(nsp):
            s, f = ldil[i], phase[i]
            count = (ot_sp[i] - f + s - 1) // s
            ks = [k for k in range(ksizes[i]) if (f + k * rdil[i] - pad_lo[i]) % s == 0]
            k0 = ks[0] if ks else 0
            kstep = ks[1] - ks[0] if len(ks) > 1 else 1
            assert ks == list(range(k0, k0 + kstep * len(ks), kstep))
            q0 = (f + k0 * rdil[i] - pad_lo[i]) // s
            dims.append((f, s, count, k0, kstep, len(ks), 1, q0, kstep * rdil[i] // s, 1))
        out.append(dims)
    return out


def _rolled_nest(em, shape, body) -> None:
    """for idx in ndindex(shape): body(idx), every level a run-time loop (loop_nest unrolls
    short ones): for code that runs once per call, such as packing the weights, where one
    copy of the loop nest compiles faster than one per tap."""
    c64 = em.const_i64
    if any(d == 0 for d in shape):
        return
    idx: list = []

    def level(k):
        if k == len(shape):
            body(list(idx))
            return
        if shape[k] == 1:
            idx.append(c64(0))
            level(k + 1)
            idx.pop()
            return
        em.for_range_dynamic(c64(0), c64(shape[k]), lambda i: (idx.append(i), level(k + 1), idx.pop()))
    level(0)


def emit_general_conv(ctx, op: Operation, plan: dict) -> None:
    from axle.backends.cpu.parallel import max_threads
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
    strides, pad_lo, ldil, rdil, rev, fgc, bgc = conv_window(op)
    groups, cg, p = plan["groups"], plan["cg"], plan["p"]
    cin = kt.shape[ki]
    ksizes = [kt.shape[d] for d in ksp]
    out_batch = ot.shape[ob]
    row_dims = [d for d in range(ot.rank) if d != of]  # the GEMM's rows: in the output's memory order
    phases = _phases([ot.shape[d] for d in osp], ksizes, strides, pad_lo, ldil, rdil)
    single = len(phases) == 1
    direct_out = single and of == ot.rank - 1
    zero = S.constant(et, 0)
    tokens = []

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

    def phase_shapes(ph):
        taps = [d[5] for d in ph]
        kdim = cin
        for t_ in taps:
            kdim *= t_
        row_shape = [ph[osp.index(d)][2] if d in osp else ot.shape[d] for d in row_dims]
        rows = 1
        for r_ in row_shape:
            rows *= r_
        return taps, kdim, row_shape, rows

    # weights: W[phase][g, (taps..., c), j] = rhs[k (reversed), c, g cg + j], k = first + step tap
    # the order of the GEMM's K (window taps and input features; patches and packed weights
    # agree on it): with one phase, the kernel's own memory order, so that a kernel whose
    # output feature dimension is innermost is W already (a filter gradient's [i, 0, 1, o]
    # dy: no packed copy); else taps..., feature
    korder = [nsp if d == ki else ksp.index(d) for d in range(kt.rank) if d != ko] if single \
        else list(range(nsp + 1))
    in_place_w = single and groups == 1 and not any(rev) and ko == kt.rank - 1
    library = library_enabled()
    w_offsets, w_total = [], 0
    for ph in phases:
        w_offsets.append(w_total)
        w_total += groups * phase_shapes(ph)[1] * cg
    wref = None
    if not in_place_w:
        token = object()
        tokens.append(token)
        wref = ctx.temp_ref(TensorType((max(w_total, 1),), et), token)
        for ph, w_off in zip(phases, w_offsets):
            if library:  # packed by the library routine (_emit_library)
                break
            taps, kdim, _, _ = phase_shapes(ph)
            if kdim == 0:
                continue

            def pack(idx, ph=ph, taps=taps, w_off=w_off):
                g, tidx, j = idx[0], idx[1:1 + nsp + 1], idx[-1]
                b = em.b
                full = [None] * kt.rank
                for i in range(nsp):
                    k = b.add(c64(ph[i][3]), b.mul(tidx[i], c64(ph[i][4])))
                    full[ksp[i]] = b.sub(c64(ksizes[i] - 1), k) if rev[i] else k
                full[ki] = tidx[nsp]
                full[ko] = b.add(b.mul(g, c64(cg)), j)
                x = S.load(b, em.element_ptr(ctx.buffer(rhs), et, em.linear(full, kt.shape)), et)
                ks = list(tidx)
                at = b.add(c64(w_off), em.linear([g] + [ks[i] for i in korder] + [j],
                                                 [groups] + [(taps + [cin])[i] for i in korder] + [cg]))
                S.store(b, x, em.element_ptr(ctx.resolve(wref), et, at), et)
            _rolled_nest(em, [groups] + taps + [cin, cg], pack)

    # at least MIN_TILE rows: a long window (a filter gradient's K is batch x image) would
    # otherwise leave skinny GEMMs of a few rows
    def tile_of(kdim, rows):
        return max(1, min(rows, max(MIN_TILE, PATCH_BYTES // (max(kdim, 1) * itemsize))))

    def weights():
        return ctx.buffer(rhs) if in_place_w else ctx.resolve(wref)

    if library:
        _emit_library(ctx, op, phases, w_offsets, dict(
            korder=korder, in_place_w=in_place_w, weights=weights, wref=None if in_place_w else wref,
            transposed=transposed, direct_out=direct_out, row_dims=row_dims, groups=groups, cg=cg, p=p,
            cin=cin, ksizes=ksizes, rev=rev, out_batch=out_batch, fgc=fgc, bgc=bgc, itemsize=itemsize,
            dims=(ib, if_, isp, ob, of, osp, ki, ko, ksp), phase_shapes=phase_shapes, tile_of=tile_of))
        for t in tokens:
            ctx.release(t)
        return

    slot_elems = 1
    n_work = 0
    for ph in phases:
        _, kdim, _, rows = phase_shapes(ph)
        tile = tile_of(kdim, rows)
        slot_elems = max(slot_elems, tile * kdim + (0 if direct_out else tile * cg))
        n_work += (rows + tile - 1) // tile * groups
    slots = max_threads() if n_work > 1 else 1
    token = object()
    tokens.append(token)
    scratch = ctx.temp_ref(TensorType((slots, slot_elems), et), token)

    for ph, w_off in zip(phases, w_offsets):
        taps, kdim, row_shape, rows = phase_shapes(ph)
        if rows == 0:
            continue
        _emit_phase(ctx, op, locals_=dict(
            ph=ph, taps=taps, kdim=kdim, row_shape=row_shape, rows=rows, w_off=w_off, tile=tile_of(kdim, rows),
            korder=korder,
            slots=slots, slot_elems=slot_elems, scratch=scratch, weights=weights, transposed=transposed,
            direct_out=direct_out, zero=zero, row_dims=row_dims, groups=groups, cg=cg, p=p, cin=cin,
            out_batch=out_batch, fgc=fgc, bgc=bgc, dims=(ib, if_, isp, ob, of, osp), itemsize=itemsize))
    for t in tokens:
        ctx.release(t)
    from axle.backends.cpu.kernels_dot_lowp import f32_kernel_fits
    ctx.mark_library("lowp.f32" if p == "s" and f32_kernel_fits(cg) else f"blas.{p}gemm")


def _emit_phase(ctx, op: Operation, locals_: dict) -> None:
    """The GEMMs of one phase (see _phases), tiles shared across the pool."""
    from axle.backends.cpu import blas
    from axle.backends.cpu.parallel import split_ranges
    em = ctx.em
    c64 = em.const_i64
    L = locals_
    ph, taps, kdim, row_shape, rows, tile = L["ph"], L["taps"], L["kdim"], L["row_shape"], L["rows"], L["tile"]
    groups, cg, cin, zero, transposed = L["groups"], L["cg"], L["cin"], L["zero"], L["transposed"]
    ib, if_, isp, ob, of, osp = L["dims"]
    row_dims, itemsize, slot_elems = L["row_dims"], L["itemsize"], L["slot_elems"]
    lhs, res = op.operands[0], op.results[0]
    lt, ot = _ty(lhs), _ty(res)
    et = ot.element_type
    nsp = len(isp)
    n_tiles = (rows + tile - 1) // tile
    direct_out = L["direct_out"]
    from axle.backends.cpu.kernels_dot_lowp import call_f32_gemm, f32_kernel_fits
    f32_kernel = L["p"] == "s" and f32_kernel_fits(cg)  # axle's kernel (AVX-512 hosts), else BLAS
    from axle.backends.cpu.patch_runs import copy_or_zero
    # features innermost in the input and last in the GEMM's K order: a tap's Cin features
    # are one contiguous run in both
    runs = if_ == lt.rank - 1 and str(lt.element_type) == str(et) and L["korder"][-1] == len(taps)

    def element(g, ridx, kidx):
        """The patch element (row, column): the input under the window, or 0."""
        ok, src = window_at(g, ridx, kidx)
        return em.b.select(ok, S.load(em.b, src, et), zero)

    def window_at(g, ridx, kidx):
        """(inside, address): whether the patch element (row, column) is an input element
        (else padding or a hole) and its address (a valid one either way)."""
        b = em.b
        at = dict(zip(row_dims, ridx))
        batch = b.add(b.mul(g, c64(L["out_batch"])), at[ob]) if L["bgc"] > 1 else at[ob]
        js, c = kidx[:nsp], kidx[nsp]
        ok = ir.Constant(I1, 1)
        lidx = [None] * lt.rank
        lidx[ib] = batch
        lidx[if_] = b.add(b.mul(g, c64(cin)), c) if L["fgc"] > 1 else c
        for i in range(nsp):
            _, _, _, _, _, _, q_t, q_0, q_step, hole = ph[i]
            q = b.add(b.add(b.mul(at[osp[i]], c64(q_t)), b.mul(js[i], c64(q_step))), c64(q_0))
            nonneg = b.icmp_signed(">=", q, c64(0))
            ok = b.and_(ok, nonneg)
            if hole != 1:  # between dilated elements: a hole
                q = b.select(nonneg, q, c64(0))
                ok = b.and_(ok, b.icmp_unsigned("==", b.urem(q, c64(hole)), c64(0)))
                q = b.udiv(q, c64(hole))
            ok = b.and_(ok, b.icmp_signed("<", q, c64(lt.shape[isp[i]])))
            lidx[isp[i]] = b.select(ok, q, c64(0))  # always a valid address
        return ok, em.element_ptr(ctx.buffer(lhs), et, em.linear(lidx, lt.shape))

    def fill(patches, g, row0, nrows):
        if transposed:
            def col_body(kidx):
                col = _k_linear(em, kidx, taps + [cin], L["korder"])

                def row_body(ri):
                    b = em.b
                    x = element(g, em.delinear(b.add(row0, ri), row_shape), kidx)
                    S.store(em.b, x, em.element_ptr(patches, et, em.b.add(em.b.mul(col, c64(tile)), ri)), et)
                em.for_range_dynamic(c64(0), nrows, row_body)
            em.loop_nest(taps + [cin], col_body, copy_nests=True)  # as below: measured
            return

        def row_body(ri):
            b = em.b
            ridx = em.delinear(b.add(row0, ri), row_shape)

            def col_body(kidx):
                b = em.b
                if runs:  # the Cin features of one tap: one contiguous run of the input, or zeros
                    kidx = list(kidx) + [c64(0)]
                col = _k_linear(em, kidx, taps + [cin], L["korder"])
                dst = em.element_ptr(patches, et, b.add(b.mul(ri, c64(kdim)), col))
                if runs:
                    copy_or_zero(ctx, *window_at(g, ridx, kidx), dst, cin * itemsize)
                    return
                S.store(b, element(g, ridx, kidx), dst, et)
            # element by element (NCHW and the like): copies per tap, the tap's indices as
            # constants, are 15% faster than a run-time tap loop (measured)
            em.loop_nest(taps if runs else taps + [cin], col_body, copy_nests=not runs)
        em.for_range_dynamic(c64(0), nrows, row_body)

    def scatter(tmp, g, row0, nrows):
        """Rows of the tile (or zeros when tmp is None: a phase without taps) into the output."""
        def row_body(ri):
            b = em.b
            ridx = em.delinear(b.add(row0, ri), row_shape)

            def col(j):
                b = em.b
                full = [None] * ot.rank
                for d, i in zip(row_dims, ridx):
                    full[d] = b.add(c64(ph[osp.index(d)][0]), b.mul(i, c64(ph[osp.index(d)][1]))) if d in osp else i
                full[of] = b.add(b.mul(g, c64(cg)), j)
                x = zero if tmp is None else S.load(b, em.element_ptr(tmp, et, b.add(b.mul(ri, c64(cg)), j)), et)
                S.store(b, x, em.element_ptr(ctx.buffer(res), et, em.linear(full, ot.shape)), et)
            em.for_range_dynamic(c64(0), c64(cg), col)
        em.for_range_dynamic(c64(0), nrows, row_body)

    def tiles(lo, hi, tid):
        b = ctx.b
        mine = b.gep(b.bitcast(ctx.resolve(L["scratch"]), S.mem_type(et).as_pointer()),
                     [b.mul(tid, c64(slot_elems))], inbounds=True)
        patches = mine
        tmp = None if direct_out else b.gep(mine, [c64(tile * kdim)], inbounds=True)

        def one(t):
            b = ctx.b
            g = b.udiv(t, c64(n_tiles))
            row0 = b.mul(b.urem(t, c64(n_tiles)), c64(tile))
            left = b.sub(c64(rows), row0)
            nrows = b.select(b.icmp_unsigned("<", left, c64(tile)), left, c64(tile))
            if kdim == 0:  # no tap of the window meets an input element here
                scatter(None, g, row0, nrows)
                return
            fill(patches, g, row0, nrows)
            b = ctx.b
            w_off = b.mul(g, c64(kdim * cg * itemsize))
            w_off = b.add(w_off, c64(L["w_off"] * itemsize))
            if f32_kernel:  # axle's own f32 kernel (AVX-512 hosts): no repacking of W per tile
                p8 = ir.IntType(8).as_pointer()
                w = b.gep(b.bitcast(L["weights"](), p8), [w_off])
                if direct_out:
                    out_off = b.mul(b.add(b.mul(row0, c64(groups * cg)), b.mul(g, c64(cg))), c64(itemsize))
                    out, ldc = b.gep(b.bitcast(ctx.buffer(res), p8), [out_off]), groups * cg
                else:
                    out, ldc = tmp, cg
                if transposed:  # patches [K, T]: rows contiguous
                    call_f32_gemm(ctx, nrows, cg, kdim, patches, 1, w, cg, 1, out, ldc, ldk=tile)
                else:
                    call_f32_gemm(ctx, nrows, cg, kdim, patches, kdim, w, cg, 1, out, ldc)
                if not direct_out:
                    scatter(tmp, g, row0, nrows)
                return
            if direct_out:
                out_off = b.mul(b.add(b.mul(row0, c64(groups * cg)), b.mul(g, c64(cg))), c64(itemsize))
                blas.call_gemm(ctx, L["p"], et, m=tile, n=cg, k=kdim, lhs=patches, rhs=L["weights"](),
                               out=ctx.buffer(res), rhs_offset=w_off, out_offset=out_off, m_count=nrows,
                               ldc=groups * cg, lhs_t=transposed)
            else:
                blas.call_gemm(ctx, L["p"], et, m=tile, n=cg, k=kdim, lhs=patches, rhs=L["weights"](), out=tmp,
                               rhs_offset=w_off, m_count=nrows, lhs_t=transposed)
                scatter(tmp, g, row0, nrows)
        em.for_range_dynamic(lo, hi, one)
    split_ranges(ctx, n_tiles * groups, rows * max(kdim, 1) * cg * groups // 8, tiles, max_threads=L["slots"])


def _k_linear(em, kidx, sizes: list, korder: list):
    """The column of window position kidx (taps..., feature) in the GEMM's K order."""
    ks = list(kidx)
    return em.linear([ks[i] for i in korder], [sizes[i] for i in korder])


def library_enabled() -> bool:
    from axle.flags import flag
    try:
        return bool(flag("cpu_conv_library"))
    except KeyError:  # pragma: no cover - an older flags table
        return True


def _descriptor(op: Operation, ph: list, L: dict, w_off: int, slot: tuple, gemm: int) -> list:
    """The i64 descriptor of one phase for conv_runtime's routines (its module docstring)."""
    from axle.backends.cpu.conv_runtime import FIELDS, ROW_DIMS
    lt, kt, ot = _ty(op.operands[0]), _ty(op.operands[1]), _ty(op.results[0])
    ib, if_, isp, ob, of, osp, ki, ko, ksp = L["dims"]
    nsp = len(isp)
    taps, kdim, row_shape, rows = L["phase_shapes"](ph)
    cg, groups, cin = L["cg"], L["groups"], L["cin"]
    ginner = _groups_inner(L)
    tile = L["tile_of"](kdim * (groups if ginner else 1), rows)
    ls, ks, os_ = _strides(lt.shape), _strides(kt.shape), _strides(ot.shape)
    d = dict.fromkeys(FIELDS, 0)
    # the GEMM's K order (korder over taps..., feature): column strides
    sizes = taps + [cin]
    kst = [0] * (nsp + 1)
    acc = 1
    for dim in reversed(L["korder"]):
        kst[dim] = acc
        acc *= sizes[dim]
    d.update(rows=rows, kdim=kdim, cg=cg, groups=groups, tile=tile, n_tiles=(rows + tile - 1) // tile, cin=cin,
             ginner=int(ginner), ldp=kdim * groups if ginner else kdim, gstep=kdim if ginner else 0,
             s_f=ls[if_], ksc=kst[nsp], transposed=int(L["transposed"]), direct_out=int(L["direct_out"]),
             ldo=groups * cg, os_f=os_[of], w_off=w_off, gemm=gemm, slot_bytes=slot[0], off_tmp=slot[1],
             off_info=slot[2], off_toff=slot[3], off_taps=slot[4], ob_g=cg * os_[of],
             rb_g=(L["out_batch"] * ls[ib] if L["bgc"] > 1 else 0) + (cin * ls[if_] if L["fgc"] > 1 else 0))
    for i in range(3):
        d.update({f"hole_{i}": 1, f"in_{i}": 1, f"taps_{i}": 1})
    obase = 0
    wbase = 0
    for i in range(nsp):
        first, step, _count, k0, kstep, ntaps, q_t, q_0, q_step, hole = ph[i]
        d.update({f"q0_{i}": q_0, f"qs_{i}": q_step, f"hole_{i}": hole, f"in_{i}": lt.shape[isp[i]],
                  f"sp_{i}": ls[isp[i]], f"taps_{i}": ntaps, f"ks_{i}": kst[i]})
        obase += first * os_[osp[i]]
        kstride = ks[ksp[i]]
        if L["rev"][i]:  # tap j reads kernel position size - 1 - (k0 + j kstep)
            wbase += (L["ksizes"][i] - 1 - k0) * kstride
            d[f"wc_{i}"] = -kstep * kstride
        else:
            wbase += k0 * kstride
            d[f"wc_{i}"] = kstep * kstride
    d.update(obase=obase, wbase=wbase, w_si=ks[ki], w_so=ks[ko])
    row_dims = L["row_dims"]
    pad = ROW_DIMS - len(row_dims)
    for k in range(ROW_DIMS):
        d[f"re{k}"] = 1
    for k, (dim, ext) in enumerate(zip(row_dims, row_shape)):
        r = pad + k
        d[f"re{r}"] = ext
        if dim == ob:
            d[f"rb{r}"], d[f"ob{r}"] = ls[ib], os_[ob]
        else:
            i = osp.index(dim)
            d[f"qb{r}_{i}"] = ph[i][6]
            d[f"ob{r}"] = ph[i][1] * os_[dim]
    return [int(d[f]) for f in FIELDS]


def _check_descriptor(op: Operation, d: dict, L: dict, itemsize: int) -> None:
    """Every address the routines can form from descriptor d lies inside its buffer (the
    native code trusts the descriptor; a wrong one is a bug of this file, caught here as an
    internal compiler error instead of a write out of bounds)."""
    from axle.backends.cpu.conv_runtime import ROW_DIMS, INFO

    def size(v):
        n = 1
        for x in _ty(v).shape:
            n *= x
        return n

    def span(pairs):  # largest value of sum(coef * index), index in [0, extent)
        return sum(max(0, c) * (e - 1) for c, e in pairs if e > 0)
    rows = [(d[f"re{r}"]) for r in range(ROW_DIMS)]
    g = d["groups"]
    out_max = d["obase"] + span([(d[f"ob{r}"], rows[r]) for r in range(ROW_DIMS)] +
                                [(d["ob_g"], g), (d["os_f"], d["cg"])])
    in_max = span([(d[f"rb{r}"], rows[r]) for r in range(ROW_DIMS)] + [(d["rb_g"], g), (d["s_f"], d["cin"])] +
                  [(d[f"sp_{i}"], d[f"in_{i}"]) for i in range(3)])
    w_reads = d["wbase"] + span([(d[f"wc_{i}"], d[f"taps_{i}"]) for i in range(3)] +
                                [(d["w_si"], d["cin"]), (d["w_so"], g * d["cg"])])
    w_low = d["wbase"] + sum(min(0, d[f"wc_{i}"]) * (d[f"taps_{i}"] - 1) for i in range(3))
    tile = d["tile"]
    checks = [
        ("output", out_max < size(op.results[0])),
        ("input", in_max < size(op.operands[0])),
        ("weights", 0 <= w_low and w_reads < size(op.operands[1])),
        ("rows", tile * d["n_tiles"] >= d["rows"] and d["kdim"] == d["cin"] * d["taps_0"] * d["taps_1"] * d["taps_2"]),
        ("patches", tile * max(d["ldp"], 1) * itemsize <= d["off_tmp"] and
         (d["direct_out"] or d["off_tmp"] + tile * d["cg"] * itemsize <= d["off_info"])),
        ("scratch", d["off_info"] + tile * INFO * 8 <= d["off_toff"] and d["off_toff"] + tile * 8 <= d["off_taps"] and
         d["off_taps"] + (tile if d["transposed"] else 1) * (d["taps_0"] + d["taps_1"] + d["taps_2"]) * 8
         <= d["slot_bytes"]),
    ]
    if d["direct_out"]:
        checks.append(("direct output", (d["rows"] - 1) * d["ldo"] + g * d["cg"] <= size(op.results[0])))
    bad = [name for name, ok in checks if not ok]
    if bad:
        raise AssertionError(f"conv_runtime descriptor of {op.where()}: {', '.join(bad)} out of bounds: {d}")


def _groups_inner(L: dict) -> bool:
    """Whether the library fills a tile's patches for every group at once (conv_runtime's
    ginner): grouped convolutions with row-major patches written in place, where a group's
    few features (one, depthwise) left the window arithmetic per tap dominating."""
    return L["groups"] > 1 and L["direct_out"] and not L["transposed"]


def _emit_library(ctx, op: Operation, phases: list, w_offsets: list, L: dict) -> None:
    """emit_general_conv through conv_runtime's routines: a descriptor per phase, weights
    packed by pack_w, tiles shared across the pool by calls of tiles."""
    from axle.backends.cpu import blas
    from axle.backends.cpu.conv_runtime import FIELDS, INFO
    from axle.backends.cpu.kernels_dot_lowp import f32_kernel_fits
    from axle.backends.cpu.lowp_runtime import register
    from axle.backends.cpu.parallel import max_threads, split_ranges
    from axle.ir.types import element_type
    register("conv")  # the routines' addresses, for linking this module
    em = ctx.em
    lhs, rhs = op.operands
    res = op.results[0]
    et = _ty(res).element_type
    tname = str(et)
    itemsize = L["itemsize"]
    gemm = 1 if L["p"] == "s" and f32_kernel_fits(L["cg"]) else 0

    def up(n, a=64):
        return (n + a - 1) // a * a
    # one scratch slot per thread, the same layout for every phase
    patch_b = tmp_b = info_b = taps_b = 0
    n_work = 0
    ginner = _groups_inner(L)
    gk = L["groups"] if ginner else 1
    for ph in phases:
        taps, kdim, _, rows = L["phase_shapes"](ph)
        tile = L["tile_of"](kdim * gk, rows)
        taps_b = max(taps_b, (tile if L["transposed"] else 1) * (sum(taps) + 3 - len(taps)) * 8)
        patch_b = max(patch_b, tile * kdim * gk * itemsize)
        tmp_b = max(tmp_b, 0 if L["direct_out"] else tile * L["cg"] * itemsize)
        info_b = max(info_b, tile * INFO * 8)
        n_work += (rows + tile - 1) // tile * (1 if ginner else L["groups"])
    off_tmp = up(patch_b)
    off_info = off_tmp + up(max(tmp_b, itemsize))
    off_toff = off_info + up(info_b)
    off_taps = off_toff + up(info_b // INFO)
    slot_bytes = up(off_taps + taps_b)
    slots = max_threads() if n_work > 1 else 1
    token = object()
    scratch = ctx.temp_ref(TensorType((slots * slot_bytes,), element_type("i8")), token)
    descs = [_descriptor(op, ph, L, w_off, (slot_bytes, off_tmp, off_info, off_toff, off_taps), gemm)
             for ph, w_off in zip(phases, w_offsets)]
    for dv in descs:
        _check_descriptor(op, dict(zip(FIELDS, dv)), L, itemsize)
    p8 = ir.IntType(8).as_pointer()
    i64p = ir.IntType(64).as_pointer()
    mod = ctx.mod

    def fn(name, args):
        return mod.globals.get(name) or ir.Function(mod, ir.FunctionType(ir.VoidType(), args), name)
    tiles_fn = fn(f"axle_lowp_conv_tiles_{tname}", [i64p, p8, p8, p8, p8, p8] + [ir.IntType(64)] * 3)
    pack_fn = fn(f"axle_lowp_conv_pack_w_{tname}", [i64p, p8, p8])
    arr_t = ir.ArrayType(ir.IntType(64), len(FIELDS))

    def global_of(values):
        g = ir.GlobalVariable(mod, arr_t, mod.get_unique_name("conv.desc"))
        g.global_constant = True
        g.linkage = "private"
        g.initializer = ir.Constant(arr_t, values)
        return g

    def as8(v):
        return ctx.b.bitcast(v, p8)
    F = {f: i for i, f in enumerate(FIELDS)}
    # the phases' units one after the other: one pool call shares them all (a phase without
    # rows has none)
    parts, first = [], 0
    for dv in descs:
        if dv[F["rows"]] == 0:
            continue
        units = dv[F["n_tiles"]] * (1 if ginner else L["groups"])
        parts.append((global_of(dv), dv, first, units))
        first += units
    if not L["in_place_w"]:
        for g, dv, _, _ in parts:
            if dv[F["kdim"]] > 0:
                ctx.b.call(pack_fn, [ctx.b.bitcast(g, i64p), as8(ctx.buffer(rhs)), as8(ctx.resolve(L["wref"]))])
    total_units = first
    work = sum(dv[F["rows"]] * max(dv[F["kdim"]], 1) * dv[F["cg"]] * L["groups"] // 8 for _, dv, _, _ in parts)

    def tiles(lo, hi, tid):
        b = ctx.b
        gptr = ir.Constant(p8, None)
        if gemm == 0 and any(dv[F["kdim"]] > 0 for _, dv, _, _ in parts):
            gptr = b.bitcast(blas._gemm_function(ctx, L["p"]), p8)
            blas.set_threads(mod, b, 1)  # one thread per call
        c64 = em.const_i64
        for g, dv, start, units in parts:  # this phase's units of [lo, hi)
            b = ctx.b
            plo = b.sub(lo, c64(start))
            plo = b.select(b.icmp_signed("<", plo, c64(0)), c64(0), plo)
            phi = b.sub(hi, c64(start))
            phi = b.select(b.icmp_signed(">", phi, c64(units)), c64(units), phi)
            with b.if_then(b.icmp_signed("<", plo, phi)):
                ctx.b.call(tiles_fn, [ctx.b.bitcast(g, i64p), as8(ctx.buffer(lhs)), as8(L["weights"]()),
                                      as8(ctx.buffer(res)), as8(ctx.resolve(scratch)), gptr, plo, phi, tid])
    if total_units:
        split_ranges(ctx, total_units, work, tiles, max_threads=slots)
    ctx.release(token)
    ctx.mark_library("lowp.f32" if gemm else f"blas.{L['p']}gemm")
