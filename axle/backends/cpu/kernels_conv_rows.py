"""Convolutions with few features per group and a spatial dimension innermost, as rows.

Depthwise convolutions in NCHW (PyTorch's layout; MobileNet), one-channel signal and image
filters (`jnp.convolve`, smoothing along rows): each group has one or two input and output
features, so im2col + GEMM multiplies a patch matrix by a matrix of one column, and the
generic loop sums per output element across the window. Here, per row of the output (all
of its indices but the innermost spatial one) and tile of TILE outputs along it, the
outputs are zeroed, then for every input feature of the group and every window position
(the outer spatial taps tested against the input's bounds once, the innermost one bounding
the inner loop) `out[j] += w * x[j * stride + tap * dilation - pad]`: the inner loop runs
along contiguous outputs and inputs (strided by the window stride) and vectorizes; each
output sums its products in (input feature, window position) order.
"""
from __future__ import annotations

import contextlib
from typing import Optional

from llvmlite import ir

from axle.codegen import scalar as S
from axle.codegen.emitter import _ty
from axle.codegen.scalar import I1
from axle.codegen.scalar_ops import RULES
from axle.ir.core import Operation

MAX_FEATURES = 4  # input x output features per group at most (depthwise: 1 x 1)
MIN_ROW = 16  # outputs along the innermost spatial dimension at least
TILE = 512  # outputs of a row combined together


def rows_plan(op: Operation, layout: Optional[tuple] = None) -> Optional[dict]:
    """The rows kernel's plan for op, None where it does not apply; `layout` = (lhs type,
    result type, dimension numbers) asks for op in another layout (conv_rows_layout.py)."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    dn = op.attr("dimension_numbers")
    if layout is not None:
        lt, ot, dn = layout
    et = ot.element_type
    if not (et.is_float and et.bitwidth in (32, 64)) or lt.element_type != et or kt.element_type != et:
        return None
    if not (lt.is_static and kt.is_static and ot.is_static) or 0 in ot.shape or 0 in lt.shape:
        return None
    isp, osp = dn["input_spatial_dimensions"], dn["output_spatial_dimensions"]
    if not isp or isp[-1] != lt.rank - 1 or osp[-1] != ot.rank - 1:
        return None
    strides, pad_lo, ldil, rdil, rev, fgc, bgc = conv_window(op)
    if bgc != 1 or any(d != 1 for d in ldil) or any(rev):
        return None
    cin_g = kt.shape[dn["kernel_input_feature_dimension"]]
    fout = ot.shape[dn["output_feature_dimension"]]
    if fout % fgc or cin_g * (fout // fgc) > MAX_FEATURES or ot.shape[-1] < MIN_ROW:
        return None
    return {"dn": dn, "strides": strides, "pad_lo": pad_lo, "rdil": rdil, "groups": fgc, "cin_g": cin_g,
            "cout_g": fout // fgc}


def conv_dims(dn: dict) -> tuple:
    """(input batch, input feature, input spatial, kernel input feature, kernel output
    feature, kernel spatial, output batch, output feature, output spatial) dimensions."""
    return (dn["input_batch_dimension"], dn["input_feature_dimension"], dn["input_spatial_dimensions"],
            dn["kernel_input_feature_dimension"], dn["kernel_output_feature_dimension"],
            dn["kernel_spatial_dimensions"], dn["output_batch_dimension"], dn["output_feature_dimension"],
            dn["output_spatial_dimensions"])


def window_inputs(em, lt, isp, out_pos, taps, strides, rdil, pad_lo, lidx):
    """For the leading spatial dimensions given (as many as out_pos): the input index of
    output position out_pos[i] at window tap taps[i] into lidx[isp[i]]; returns whether
    all of them are inside the input (else the tap reads padding)."""
    b, c64 = em.b, em.const_i64
    ok = ir.Constant(I1, 1)
    for i, (o, k) in enumerate(zip(out_pos, taps)):
        p = b.sub(b.add(b.mul(o, c64(strides[i])), b.mul(k, c64(rdil[i]))), c64(pad_lo[i]))
        ok = b.and_(ok, b.icmp_signed(">=", p, c64(0)))
        ok = b.and_(ok, b.icmp_signed("<", p, c64(lt.shape[isp[i]])))
        lidx[isp[i]] = p
    return ok


def emit_rows_conv(ctx, op: Operation, plan: dict) -> None:
    from axle.backends.cpu.parallel import split_ranges
    from axle.backends.cpu.scopes import scoped_accesses
    em = ctx.em
    c64 = em.const_i64
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    et = ot.element_type
    dn, strides, pad_lo, rdil = plan["dn"], plan["strides"], plan["pad_lo"], plan["rdil"]
    cin_g, cout_g = plan["cin_g"], plan["cout_g"]
    ib, if_, isp, ki, ko, ksp, ob, of, osp = conv_dims(dn)
    nsp = len(isp)
    add, mul = RULES["stablehlo.add"], RULES["stablehlo.multiply"]
    mine, other = scoped_accesses(ctx, list(op.operands), [op.results[0]])
    row_dims = list(range(ot.rank - 1))  # every output dimension but the innermost spatial one
    row_shape = [ot.shape[d] for d in row_dims]
    rows = 1
    for d in row_shape:
        rows *= d
    length = ot.shape[-1]
    n_tiles = -(-length // TILE)
    s_last, d_last, p_last, n_last = strides[-1], rdil[-1], pad_lo[-1], lt.shape[isp[-1]]
    taps_outer = [kt.shape[d] for d in ksp[:-1]]
    taps_last = kt.shape[ksp[-1]]

    def read(v, idx):
        with em.reading(other):
            return em.value_at(v, idx)

    def unit(u):
        b = em.b
        dst = ctx.buffer(op.results[0])
        ridx = em.delinear(b.udiv(u, c64(n_tiles)), row_shape)
        oidx = dict(zip(row_dims, ridx))
        jlo = b.mul(b.urem(u, c64(n_tiles)), c64(TILE))
        jhi = em.tile_end(jlo, TILE, length)
        base = em.linear([oidx[d] for d in row_dims] + [c64(0)], list(ot.shape))
        fo = oidx[of]
        group = b.udiv(fo, c64(cout_g)) if cout_g > 1 else fo

        def zero(j):
            S.store(em.b, S.constant(et, 0), em.element_ptr(dst, et, em.b.add(base, j)), et, mine)
        em.for_range_dynamic(jlo, jhi, zero)

        def feature(ci):
            def outer_taps(kidx):
                b2 = em.b
                lidx = [None] * lt.rank
                lidx[ib] = oidx[ob]
                lidx[if_] = b2.add(b2.mul(group, c64(cin_g)), ci)
                ok = window_inputs(em, lt, isp, [oidx[osp[i]] for i in range(nsp - 1)], kidx, strides, rdil,
                                   pad_lo, lidx)

                def last_taps(kw):
                    b3 = em.b
                    widx = [None] * kt.rank
                    widx[ki], widx[ko] = ci, fo
                    for i in range(nsp - 1):
                        widx[ksp[i]] = kidx[i]
                    widx[ksp[-1]] = kw
                    w = read(rhs, widx)
                    off = b3.sub(b3.mul(kw, c64(d_last)), c64(p_last))  # input index of output 0
                    lo, hi = em.strided_range(off, s_last, n_last, jlo, jhi)

                    def element(j):
                        b4 = em.b
                        li = list(lidx)
                        li[isp[-1]] = b4.add(b4.mul(j, c64(s_last)), off)
                        p = em.element_ptr(dst, et, b4.add(base, j))
                        acc = S.load(b4, p, et, mine)
                        S.store(b4, add(em, et, [acc, mul(em, et, [w, read(lhs, li)], op)], op), p, et, mine)
                    em.for_range_dynamic(lo, hi, element)

                with em.b.if_then(ok) if nsp > 1 else contextlib.nullcontext():
                    em.for_range_dynamic(c64(0), c64(taps_last), last_taps)
            em.loop_nest(taps_outer, outer_taps)
        em.for_range_dynamic(c64(0), c64(cin_g), feature)

    work = rows * length * cin_g * taps_last
    for t in taps_outer:
        work *= t
    split_ranges(ctx, rows * n_tiles, work, lambda lo, hi: em.for_range_dynamic(lo, hi, unit))


MIN_CHANNELS = 8  # depthwise channels at least (a vector's lanes) for the channels kernel


def channels_plan(op: Operation) -> Optional[dict]:
    """The channels kernel's plan for a depthwise convolution with its feature dimension
    innermost (NHWC / NWC with feature_group_count = channels, one filter per channel), None
    where it does not apply."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    et = ot.element_type
    if not (et.is_float and et.bitwidth in (32, 64)) or lt.element_type != et or kt.element_type != et:
        return None
    if not (lt.is_static and kt.is_static and ot.is_static) or 0 in ot.shape or 0 in lt.shape:
        return None
    dn = op.attr("dimension_numbers")
    if dn["input_feature_dimension"] != lt.rank - 1 or dn["output_feature_dimension"] != ot.rank - 1:
        return None
    strides, pad_lo, ldil, rdil, rev, fgc, bgc = conv_window(op)
    channels = lt.shape[-1]
    if bgc != 1 or any(d != 1 for d in ldil) or any(rev) or fgc != channels or channels < MIN_CHANNELS:
        return None
    if kt.shape[dn["kernel_input_feature_dimension"]] != 1 or ot.shape[-1] != channels:
        return None
    return {"dn": dn, "strides": strides, "pad_lo": pad_lo, "rdil": rdil}


def emit_channels_conv(ctx, op: Operation, plan: dict) -> None:
    """Depthwise, features innermost: per output pixel (every output index but the feature),
    the pixel's channels are zeroed, then for every window position inside the input
    `out[c] += w[tap, c] * x[pixel's tap, c]` along the channels (contiguous in the input,
    the output and, for HWIO filters, the weights), which LLVM vectorizes. Each output sums
    its window's products in window order. Pixels are shared across the pool's threads."""
    from axle.backends.cpu.parallel import split_ranges
    from axle.backends.cpu.scopes import scoped_accesses
    em = ctx.em
    c64 = em.const_i64
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    et = ot.element_type
    dn, strides, pad_lo, rdil = plan["dn"], plan["strides"], plan["pad_lo"], plan["rdil"]
    ib, _, isp, ki, ko, ksp, ob, _, osp = conv_dims(dn)
    channels = ot.shape[-1]
    add, mul = RULES["stablehlo.add"], RULES["stablehlo.multiply"]
    mine, other = scoped_accesses(ctx, list(op.operands), [op.results[0]])
    pix_shape = list(ot.shape[:-1])
    pixels = 1
    for d in pix_shape:
        pixels *= d
    taps = [kt.shape[d] for d in ksp]

    def read(v, idx):
        with em.reading(other):
            return em.value_at(v, idx)

    def pixel(u):
        b = em.b
        dst = ctx.buffer(op.results[0])
        oidx = dict(zip(range(ot.rank - 1), em.delinear(u, pix_shape)))
        base = b.mul(u, c64(channels))

        def zero(c):
            S.store(em.b, S.constant(et, 0), em.element_ptr(dst, et, em.b.add(base, c)), et, mine)
        em.for_range_dynamic(c64(0), c64(channels), zero)

        def tap(kidx):
            lidx = [None] * lt.rank
            lidx[ib] = oidx[ob]
            ok = window_inputs(em, lt, isp, [oidx[d] for d in osp], kidx, strides, rdil, pad_lo, lidx)

            def channel(c):
                b3 = em.b
                widx = [None] * kt.rank
                widx[ki], widx[ko] = c64(0), c
                for i, d in enumerate(ksp):
                    widx[d] = kidx[i]
                li = list(lidx)
                li[lt.rank - 1] = c
                ptr = em.element_ptr(dst, et, b3.add(base, c))
                acc = S.load(b3, ptr, et, mine)
                S.store(b3, add(em, et, [acc, mul(em, et, [read(rhs, widx), read(lhs, li)], op)], op), ptr, et, mine)
            with em.b.if_then(ok):
                em.for_range_dynamic(c64(0), c64(channels), channel)
        em.loop_nest(taps, tap)

    work = pixels * channels
    for t in taps:
        work *= t
    split_ranges(ctx, pixels, work, lambda lo, hi: em.for_range_dynamic(lo, hi, pixel))


MIN_WINDOW_ROW = 16  # the window's innermost extent at least (the vectorized dot products)
MAX_OUT_WINDOW = 256  # output spatial positions per (batch, feature) at most
# output (batch, feature) pairs at most: an 8 -> 8 channel filter gradient (64 pairs) ran 4x
# faster than im2col + GEMM, 3 -> 64 (192) 2x, 32 -> 32 (1024) the same (2026-11-28)
MAX_DOT_UNITS = 256


def window_dot_plan(op: Operation) -> Optional[dict]:
    """The window-dot kernel's plan, None where it does not apply: a convolution whose
    window is large and whose output is spatially small, with the innermost dimension of
    the input and of the kernel both spatial (the filter gradient of an NCHW convolution:
    the input as [f, b, 0, 1], the output gradient as a [i, o, 0, 1] kernel whose window is
    the whole image, 3 x 3 outputs)."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    et = ot.element_type
    if not (et.is_float and et.bitwidth in (32, 64)) or lt.element_type != et or kt.element_type != et:
        return None
    if not (lt.is_static and kt.is_static and ot.is_static) or 0 in ot.shape or 0 in lt.shape or 0 in kt.shape:
        return None
    dn = op.attr("dimension_numbers")
    isp, ksp, osp = dn["input_spatial_dimensions"], dn["kernel_spatial_dimensions"], dn["output_spatial_dimensions"]
    if not isp or isp[-1] != lt.rank - 1 or ksp[-1] != kt.rank - 1:
        return None
    strides, pad_lo, ldil, rdil, rev, fgc, bgc = conv_window(op)
    if fgc != 1 or bgc != 1 or any(d != 1 for d in ldil) or any(rev) or rdil[-1] != 1:
        return None  # (strided rows, a strided convolution's filter gradient: not vectorized, no gain)
    out_window = 1
    for d in osp:
        out_window *= ot.shape[d]
    if kt.shape[ksp[-1]] < MIN_WINDOW_ROW or out_window > MAX_OUT_WINDOW:
        return None
    if ot.shape[dn["output_batch_dimension"]] * ot.shape[dn["output_feature_dimension"]] > MAX_DOT_UNITS:
        return None  # enough rows and columns for im2col + GEMM to be the faster way
    return {"dn": dn, "strides": strides, "pad_lo": pad_lo, "rdil": rdil}


def emit_window_dot_conv(ctx, op: Operation, plan: dict) -> None:
    """Per (output batch, output feature), claimed by the pool's threads: the outputs are
    zeroed, then for every input feature, window position of the outer spatial dimensions
    and output position, `out[.., q] += sum_s x[.., q * stride + s - pad] * w[.., s]` over
    the window's innermost dimension (the part inside the input): a dot product along
    contiguous rows of both operands, reassociated so that LLVM vectorizes it with partial
    sums (like the row sums of kernels.emit_reduce). The operands of one (batch, feature)
    are read once per output position from cache; im2col instead built a patch matrix as
    large as the input per output position (an 8 -> 8 channel 3 x 3 filter gradient of
    4 x 64 x 64 images: 3.6 GFLOP/s)."""
    from axle.backends.cpu.parallel import split_ranges
    from axle.backends.cpu.scopes import scoped_accesses
    em = ctx.em
    c64 = em.const_i64
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    et = ot.element_type
    dn, strides, pad_lo, rdil = plan["dn"], plan["strides"], plan["pad_lo"], plan["rdil"]
    ib, if_, isp, ki, ko, ksp, ob, of, osp = conv_dims(dn)
    nsp = len(isp)
    batch, feats, cin = ot.shape[ob], ot.shape[of], kt.shape[ki]
    taps_outer = [kt.shape[d] for d in ksp[:-1]]
    out_outer = [ot.shape[d] for d in osp[:-1]]
    n_out_last, taps_last, n_last = ot.shape[osp[-1]], kt.shape[ksp[-1]], lt.shape[isp[-1]]
    s_last, p_last, d_last = strides[-1], pad_lo[-1], rdil[-1]
    mine, other = scoped_accesses(ctx, list(op.operands), [op.results[0]])

    def read(v, idx):
        with em.reading(other):
            return em.value_at(v, idx)

    def unit(u):
        b = em.b
        dst = ctx.buffer(op.results[0])
        bi, fo = b.udiv(u, c64(feats)), b.urem(u, c64(feats))

        def out_ptr(pos, q):
            oidx = [None] * ot.rank
            oidx[ob], oidx[of] = bi, fo
            for d, p in zip(osp[:-1], pos):
                oidx[d] = p
            oidx[osp[-1]] = q
            return em.element_ptr(dst, et, em.linear(oidx, list(ot.shape)))

        def zero(idx):
            S.store(em.b, S.constant(et, 0), out_ptr(idx[:-1], idx[-1]), et, mine)
        em.loop_nest(out_outer + [n_out_last], zero)
        acc = em.alloca(S.reg_type(et))

        def feature(ci):
            def outer(kpos):
                kidx, pos = kpos[:nsp - 1], kpos[nsp - 1:]
                lidx = [None] * lt.rank
                lidx[ib], lidx[if_] = bi, ci
                ok = window_inputs(em, lt, isp, pos, kidx, strides, rdil, pad_lo, lidx)
                widx = [None] * kt.rank
                widx[ki], widx[ko] = ci, fo
                for i in range(nsp - 1):
                    widx[ksp[i]] = kidx[i]

                def position(q):
                    b3 = em.b
                    off = b3.sub(b3.mul(q, c64(s_last)), c64(p_last))  # input index of window position 0
                    lo, hi = em.strided_range(off, d_last, n_last, c64(0), c64(taps_last))
                    b3.store(S.constant(et, 0), acc)

                    def tap(s):
                        b4 = em.b
                        li, wi = list(lidx), list(widx)
                        li[isp[-1]], wi[ksp[-1]] = b4.add(off, b4.mul(s, c64(d_last))), s
                        total = b4.fadd(b4.load(acc), b4.fmul(read(lhs, li), read(rhs, wi)))
                        total.flags.append("reassoc")
                        b4.store(total, acc)
                    em.for_range_dynamic(lo, hi, tap)
                    b3 = em.b
                    ptr = out_ptr(pos, q)
                    S.store(b3, b3.fadd(S.load(b3, ptr, et, mine), b3.load(acc)), ptr, et, mine)
                with em.b.if_then(ok) if nsp > 1 else contextlib.nullcontext():
                    em.for_range_dynamic(c64(0), c64(n_out_last), position)
            em.loop_nest(taps_outer + out_outer, outer)
        em.for_range_dynamic(c64(0), c64(cin), feature)

    work = batch * feats * cin * taps_last * n_out_last
    for t in taps_outer + out_outer:
        work *= t
    split_ranges(ctx, batch * feats, work, lambda lo, hi: em.for_range_dynamic(lo, hi, unit))
