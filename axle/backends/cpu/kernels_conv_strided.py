"""Convolutions as GEMMs over strided views of the input: no patch matrix.

A convolution is a GEMM whose lhs is the patch matrix: row = (output batch, output
position), column = (input feature, window tap), entry lhs[batch, feature, position *
stride + tap * dilation]. Where the rows' offsets in the input form one strided run (one
stride between consecutive rows) and so do the columns', the patch matrix is a strided
view of the input itself (its rows overlap where the window is longer than the stride),
and axle's f32 kernel (lowp_runtime.py), which reads its lhs in place with any row and
column strides, runs on the input as it is. The dimensions that do not fit the two runs
are loops around the calls: outer rows (one call each), outer columns (calls
accumulating into the same output tile: the kernel's `flip` argument of the f32 kinds).

This is the filter gradient of a 1-D convolution over a long signal in NWC (wav2vec's
feature extractor, audio front ends): the rows are (tap, channel) — the channel's
stride times the channel count is the tap's stride (forward rhs dilation 1) — and the
columns (batch, output position), positions the forward stride apart, one call per
batch. The general path (kernels_conv_general.py) built patches of K = batch x positions
per tile of 64 rows: 8 x 8000 x 16 samples, 80 taps, stride 4, 64 features took
62-84 ms; XLA 26-42 ms. Also taken: 1-D convolutions (forward, and input gradients)
whose window holds more than the direct kernel's 512 products.

Padding (and inputs longer than the window reaches) go through a copy of the input cut
to exactly the extent the window covers, zeros in the padding, so that every view reads
inside it. Only f32 (the kernels are f32), no lhs dilation, window reversal or grouping,
the output's features innermost and the kernel's output features innermost (the
kernel's columns read as a row-major rhs), an inner reduction run of at least MIN_K (a
shorter one reloads the output tile too often: im2col's single long GEMM wins) and an
inner row run of at least MIN_M. At least MIN_N = 8 output features (a panel of at most 16
columns runs one-vector tiles, half used at 8: a 1-D filter gradient 48 -> 16 over 4 x 4096
ran the general path's GEMMs at 16 GFLOP/s, 41 here).
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from axle.codegen.emitter import _strides, _ty
from axle.ir.core import Operation
from axle.ir.types import TensorType, element_type

I1, I8, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(64)
P8 = I8.as_pointer()
MIN_K = 256  # inner reduction run (columns of the patch matrix per call)
MIN_M = 16  # inner row run (rows per call)
# output features (GEMM columns) at least: a panel of at most one vector's columns runs
# one-vector tiles (lowp_runtime._lhs_tiles), half of whose lanes are used at 8 (f32 on
# AVX-512); the general path's gathered patches were slower still (a folded Conv3d 16 -> 8
# filter gradient: 51 ms there)
MIN_N = 8
ENABLED = True  # (benchmarks switch it off to compare with the general path)


def _runs(dims: list) -> list:
    """(extent, lhs stride, other stride) dimensions, extent-1 ones dropped, ordered by the
    other operand's stride (outermost first), adjacent ones merged where both strides nest."""
    out = []
    for e, a, o in sorted((d for d in dims if d[0] > 1), key=lambda d: -d[2]):
        if out and out[-1][1] == e * a and out[-1][2] == e * o:
            pe = out.pop()[0]
            e = pe * e
        out.append((e, a, o))
    return out


def strided_plan(op: Operation) -> Optional[dict]:
    """The plan of a convolution as strided-view GEMMs (module docstring), or None."""
    from axle.backends.cpu.kernels_conv_general import conv_window
    from axle.backends.cpu.kernels_conv_rows import conv_dims
    from axle.backends.cpu.kernels_dot_lowp import MR_F32, _enabled
    from axle.backends.cpu.lowp_runtime import supported_kinds
    lhs, rhs = op.operands
    lt, kt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    if not (lt.is_static and kt.is_static and ot.is_static) or 0 in lt.shape or 0 in kt.shape or 0 in ot.shape:
        return None
    if not ENABLED or not (str(lt.element_type) == str(kt.element_type) == str(ot.element_type) == "f32") \
            or not _enabled():
        return None
    kinds = supported_kinds()
    kind = "f32" if "f32" in kinds else "f32_avx2" if "f32_avx2" in kinds else None
    if kind is None:
        return None
    strides, pad_lo, ldil, rdil, rev, fgc, bgc = conv_window(op)
    if fgc != 1 or bgc != 1 or any(d != 1 for d in ldil) or any(rev):
        return None
    ib, if_, isp, ki, ko, ksp, ob, of, osp = conv_dims(op.attr("dimension_numbers"))
    nsp = len(isp)
    span = [(ot.shape[osp[i]] - 1) * strides[i] + (kt.shape[ksp[i]] - 1) * rdil[i] + 1 for i in range(nsp)]
    padded = any(pad_lo[i] != 0 or span[i] > lt.shape[isp[i]] for i in range(nsp))
    pshape = list(lt.shape)
    if padded:
        for i in range(nsp):
            pshape[isp[i]] = span[i]
    ls, ks, os_ = _strides(pshape), _strides(kt.shape), _strides(ot.shape)
    if os_[of] != 1 or ks[ko] != 1:
        return None
    n = ot.shape[of]
    rows = _runs([(ot.shape[ob], ls[ib], os_[ob])]
                 + [(ot.shape[osp[i]], strides[i] * ls[isp[i]], os_[osp[i]]) for i in range(nsp)])
    cols = _runs([(kt.shape[ki], ls[if_], ks[ki])]
                 + [(kt.shape[ksp[i]], rdil[i] * ls[isp[i]], ks[ksp[i]]) for i in range(nsp)])
    if not rows or not cols:
        return None
    m, lda, ldc = rows[-1]
    k, ldk, sbk = cols[-1]
    if m < max(MR_F32, MIN_M) or k < MIN_K or n < MIN_N:
        return None
    return dict(kind=kind, m=m, n=n, k=k, lda=lda, ldc=ldc, ldk=ldk, sbk=sbk, outer_rows=rows[:-1],
                outer_cols=cols[:-1], pshape=pshape if padded else None, pad_lo=pad_lo, isp=isp)


def _copy_padded(ctx, op: Operation, plan: dict, dst_ref) -> None:
    """dst (plan's pshape, row-major) = the input at position p - pad_lo per spatial
    dimension, zero outside it: row by row (all dimensions but the last), claimed by the
    pool's threads; a row is cleared, then its part inside the input copied."""
    from axle.backends.cpu.parallel import split_ranges
    em = ctx.em
    c64 = em.const_i64
    lt = _ty(op.operands[0])
    pshape, pad_lo, isp = plan["pshape"], plan["pad_lo"], plan["isp"]
    shift = [0] * lt.rank
    for i, d in enumerate(isp):
        shift[d] = pad_lo[i]
    memset = em.module.declare_intrinsic("llvm.memset", [P8, I64])
    memcpy = em.module.declare_intrinsic("llvm.memcpy", [P8, P8, I64])
    nrows = 1
    for e in pshape[:-1]:
        nrows *= e
    last, plast, slast = lt.shape[-1], pshape[-1], shift[-1]
    src_strides = _strides(lt.shape)

    def row(r):
        b = em.b
        src = ctx.buffer(op.operands[0])
        ok = ir.Constant(I1, 1)
        off = c64(0)
        rest = r
        for d in range(lt.rank - 2, -1, -1):
            idx = b.urem(rest, c64(pshape[d])) if d else rest
            rest = b.udiv(rest, c64(pshape[d]))
            j = b.sub(idx, c64(shift[d]))
            ok = b.and_(ok, b.and_(b.icmp_signed(">=", j, c64(0)), b.icmp_signed("<", j, c64(lt.shape[d]))))
            off = b.add(off, b.mul(j, c64(src_strides[d])))
        out = b.gep(b.bitcast(ctx.resolve(dst_ref), P8), [b.mul(r, c64(plast * 4))], inbounds=True)
        b.call(memset, [out, ir.Constant(I8, 0), c64(plast * 4), ir.Constant(I1, 0)])
        lo, hi = max(0, slast), min(plast, last + slast)  # the row's positions inside the input
        if hi > lo:
            with b.if_then(ok):
                s = b.gep(b.bitcast(src, P8), [b.mul(b.add(off, c64(lo - slast)), c64(4))], inbounds=True)
                d_ = b.gep(out, [c64(lo * 4)], inbounds=True)
                b.call(memcpy, [d_, s, c64((hi - lo) * 4), ir.Constant(I1, 0)])
    total = nrows * plast
    split_ranges(ctx, nrows, total // 4, lambda lo, hi: em.for_range_dynamic(lo, hi, row))


def emit_strided_conv(ctx, op: Operation, plan: dict) -> None:
    """Units (outer row index, panel of columns, range of row tiles), claimed by the pool's
    threads; each runs the outer reduction loop itself (the first call sets its tiles of
    the output, the others add to them), so every output element has one fixed order of
    summation."""
    from axle.backends.cpu.kernels_dot_lowp import UNITS, _batch_offset, _fn
    from axle.backends.cpu.lowp_runtime import GEOMETRY, register
    from axle.backends.cpu.parallel import split_ranges
    register("gemm")
    em = ctx.em
    c64 = em.const_i64
    kind, m, n, k = plan["kind"], plan["m"], plan["n"], plan["k"]
    MR, NR, _ = GEOMETRY[kind]
    token = object()
    pad_ref = None
    if plan["pshape"] is not None:
        pad_ref = ctx.temp_ref(TensorType(tuple(plan["pshape"]), element_type("f32")), token)
        _copy_padded(ctx, op, plan, pad_ref)
    panels = _fn(ctx, f"axle_lowp_{kind}_panels", [P8, P8, I64, I64, P8] + [I64] * 11)
    orows, ocols = plan["outer_rows"], plan["outer_cols"]
    n_orows = 1
    for e, _, _ in orows:
        n_orows *= e
    n_ocols = 1
    for e, _, _ in ocols:
        n_ocols *= e
    npanels = (n + NR - 1) // NR
    mtiles = (m + MR - 1) // MR
    mparts = max(1, min(mtiles, -(-UNITS // (n_orows * npanels)), mtiles // 2 or 1))
    units = n_orows * npanels * mparts

    def offsets(b, index, dims):
        """(lhs, other) element offsets of a flat index over dims (outermost first)."""
        return _batch_offset(b, index, dims, 1, c64), _batch_offset(b, index, dims, 2, c64)

    def at(b, ptr, elems):
        return b.gep(b.bitcast(ptr, P8), [b.mul(elems, c64(4))], inbounds=True)

    def unit(u):
        b = ctx.b
        rp = b.udiv(u, c64(mparts))
        part = b.urem(u, c64(mparts))
        r, p = b.udiv(rp, c64(npanels)), b.urem(rp, c64(npanels))
        t0 = b.udiv(b.mul(part, c64(mtiles)), c64(mparts))
        t1 = b.udiv(b.mul(b.add(part, c64(1)), c64(mtiles)), c64(mparts))
        ra, ro = offsets(b, r, orows)
        src = ctx.resolve(pad_ref) if pad_ref is not None else ctx.buffer(op.operands[0])

        def reduction(q):
            b2 = ctx.b
            qa, qk = offsets(b2, q, ocols)
            b2.call(panels, [at(b2, src, b2.add(ra, qa)), at(b2, ctx.buffer(op.operands[1]), qk),
                             c64(plan["sbk"]), c64(1), at(b2, ctx.buffer(op.results[0]), ro), c64(plan["ldc"]),
                             c64(m), c64(n), c64(k), p, b2.add(p, c64(1)),
                             b2.zext(b2.icmp_unsigned("!=", q, c64(0)), I64), c64(plan["lda"]), t0, t1,
                             c64(plan["ldk"])])
        em.for_range_dynamic(c64(0), c64(n_ocols), reduction)
    split_ranges(ctx, units, n_orows * n_ocols * m * n * k // 16,
                 lambda lo, hi: em.for_range_dynamic(lo, hi, unit))
    if pad_ref is not None:
        ctx.release(token)
    ctx.mark_library(f"lowp.{kind}.strided")
