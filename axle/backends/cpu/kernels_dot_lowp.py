"""Low-precision dot_general with the host's dot-product instructions (lowp_runtime.py).

Taken before BLAS (blas.py) and the packed f32 path (kernels_dot_packed.py), when the host
has the instructions (picked at compile time from llvmlite's host CPU features):

* int8 x int8 -> int32 and uint8 x int8 -> int32: AVX512-VNNI (`vpdpbusd`);
  on AVX2 hosts without it, `vpmaddwd` on pairs of k widened to i16 while packing
  (exact: each pair's sum fits an i32 lane); int16 x int16 -> int32 on every AVX2 host
  with `vpmaddwd` as it stands (also int8 x uint8, which the simplifier widens to int16);
* bf16 x bf16 -> f32: AVX512-BF16 (`vdpbf16ps`; products of bf16 are exact in f32, the
  sums are f32 as with f32 accumulation, denormal inputs count as zero as the instruction
  does); on AVX2 hosts without it, and f16 x f16 -> f32 on every AVX2 host (F16C): both
  operands widened to f32 while packing (exactly), then 8-lane fma;
* f32 x f32 -> f32 with at least 8 rows and 32 columns on AVX-512 hosts, at the top level
  and in loop bodies: FMA on an 8 x 32 register tile, faster here than SciPy's OpenBLAS
  with either its Haswell or its SkylakeX kernels (docs/gemm-f32.md). The im2col
  convolutions call it per tile too (`call_f32_gemm`). On AVX2 hosts, f32 dots of 8-159
  rows and at least 16 columns with a row-major rhs (RNN steps, decode steps, small
  batches): FMA on a 6 x 16 tile, where OpenBLAS would pack the whole rhs on every call.

Any dimension numbers whose contracting and free dimensions each form one strided run of
the operand (every layout dot-canonicalize, transpose-fold and dot_views leave, including
transposed operands), with any batch dimensions (each with its own strides): the operands
are read in place through their strides where the kernel can (f32: the lhs [M, K] or
[K, M], no temporary; a row-major rhs below DIRECT_M rows), else the lhs is
packed once per batch and the rhs per panel of 32 columns on the thread's stack. The
result is written in place. Work is split across the pool by units of (batch, panel of
32 columns, range of row tiles), each element computed by one unit in a fixed order.

Elsewhere (no AVX2 for int8, no AVX512-BF16 / AVX-512 for bf16 and f32, e.g. AMD Zen 3;
other type combinations; flag `--cpu_lowp_dot=false`) these dots keep the exact widening path:
integer operands converted to f32 / f64 and multiplied by BLAS, bf16 / f16 converted to
f32 (packed path), f32 by BLAS.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from axle.codegen.dot import run_stride
from axle.codegen.emitter import _strides, _ty
from axle.ir.core import Operation
from axle.ir.types import TensorType, element_type

I64 = ir.IntType(64)
P8 = ir.IntType(8).as_pointer()
MIN_WORK = 16 * 16 * 16  # multiply-adds below which the generated loop is cheaper than packing


UNITS = 16  # units of work a dot is cut into at least (when it has that many row tiles)
MR_F32 = 8  # f32 dots with at least one register tile of rows (fewer: the decode kernel's)...
NR_F32 = 32  # ...and at least one panel of columns (fewer: most of the tile is wasted work)
# convolutions' GEMMs of at least this many output features run on the f32 kernel (at most
# 16 in a panel's one-vector tiles: a 64 -> 12 filter gradient's GEMMs 3.3 -> 2.4 ms
# against BLAS's sgemm)
CONV_MIN_COLUMNS = 8
NR_AVX2 = 16  # (the AVX2 f32 kernel's panel)
TRANSPOSED_RHS_AVX2 = True  # AVX2: an rhs stored [N, K] (q . k^T, x @ W.T) too (benchmarks switch it off)


def _kind(lt: str, rt: str, ot: str, m: int = 0) -> Optional[tuple]:
    """(kind, flip) for operand / result element types the kernels take."""
    if lt == rt == ot == "f32":
        from axle.backends.cpu.lowp_runtime import AVX2_MAX_M, supported_kinds
        if "f32" in supported_kinds():
            return ("f32", 0) if MR_F32 <= m else None
        # AVX2: dots of up to AVX2_MAX_M rows with a row-major rhs (lowp_plan)
        return ("f32_avx2", 0) if MR_F32 <= m < AVX2_MAX_M else None
    if lt in ("i8", "ui8") and rt == "i8" and ot in ("i32", "si32"):
        from axle.backends.cpu.lowp_runtime import supported_kinds
        return "vnni" if "vnni" in supported_kinds() else "pmaddwd", 1 if lt == "i8" else 0
    if lt == rt == "i16" and ot in ("i32", "si32"):
        return "pmaddwd16", 0
    if lt == rt == "bf16" and ot == "f32":
        from axle.backends.cpu.lowp_runtime import supported_kinds
        return ("bf16" if "bf16" in supported_kinds() else "bf16_fma"), 0
    if lt == rt == "f16" and ot == "f32":
        return "f16_fma", 0
    return None



def _enabled() -> bool:
    try:
        from axle.flags import flag
        return bool(flag("cpu_lowp_dot"))
    except KeyError:  # the flag is not registered (an older flags table)
        return True


def lowp_plan(op: Operation, ctx=None) -> Optional[dict]:
    """The plan of a dot_general on this host's kernels (module docstring), or None. The
    same at the top level and in loop bodies (ctx is not consulted)."""
    from axle.codegen.dot import DotDims
    from axle.backends.cpu.lowp_runtime import supported_kinds
    lhs, rhs = op.operands
    lt, rt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    if not (lt.is_static and rt.is_static and ot.is_static):
        return None
    d = DotDims(op)

    def prod(t, dims):
        p = 1
        for x in dims:
            p *= t.shape[x]
        return p
    batch, m, n, k = prod(lt, d.lb), prod(lt, d.lfree), prod(rt, d.rfree), prod(lt, d.lc)
    kind = _kind(str(lt.element_type), str(rt.element_type), str(ot.element_type), m)
    if kind is None or not _enabled() or kind[0] not in supported_kinds():
        return None
    if min(batch, m, n, k) < 1 or m * n * k < MIN_WORK or max(batch * m * k, batch * k * n, batch * m * n) >= 2 ** 31:
        return None
    lc, rc, outer_k = list(d.lc), list(d.rc), []
    if kind[0] in ("f32", "f32_avx2"):  # contracting pairs outside one run: loops accumulating into C
        lc, rc, outer_k = _outer_contracting(lt, rt, lc, rc)
        k = prod(lt, lc)
    strides = [0, run_stride(lt, d.lfree), run_stride(lt, lc), 0, run_stride(rt, rc), run_stride(rt, d.rfree)]
    if any(s is None for s in strides) or outer_k and strides[1] != 1 and strides[2] != 1:
        return None  # (with outer loops the lhs must be read in place: [M, K] or [K, M])
    if outer_k and (k < MIN_OUTER_K or kind[0] == "f32" and strides[1] == 1 and _pack_rows("f32", m, n, k)):
        return None
    if kind[0] == "f32" and n < NR_F32:
        return None
    if kind[0] == "f32_avx2" and (n < NR_AVX2 or (strides[5] != 1 and strides[4] != 1) or not TRANSPOSED_RHS_AVX2
                                  and strides[5] != 1):
        return None  # a row-major rhs, or one stored [N, K] (packed by 16 x 16 transposes)
    return dict(kind=kind[0], flip=kind[1], batch=batch, m=m, n=n, k=k, strides=strides,
                batch_dims=_batch_dims(lt, rt, d.lb, d.rb), outer_k=outer_k)


MIN_OUTER_K = 64  # the inner contracting run under loops over the others (shorter: C reloaded too often)


def _outer_contracting(lt: TensorType, rt: TensorType, lc: list, rc: list):
    """(inner lhs pairs, inner rhs pairs, [(extent, lhs stride, rhs stride)] of the outer
    ones): the longest tail of the contracting pairs that forms one strided run in both
    operands, the pairs before it looped over, each step's product added to C (an einsum
    "etd,edf->tf", the dense form of lax.ragged_dot). No loops when every pair is in the run."""
    if run_stride(lt, lc) is not None and run_stride(rt, rc) is not None:
        return lc, rc, []
    ls, rs = _strides(lt.shape), _strides(rt.shape)
    best = None
    pairs = list(zip(lc, rc))  # in the given order, and innermost last in either operand
    for order in (pairs, sorted(pairs, key=lambda p: -ls[p[0]]), sorted(pairs, key=lambda p: -rs[p[1]])):
        for cut in range(1, len(order)):
            il, ir_ = [a for a, _ in order[cut:]], [b for _, b in order[cut:]]
            if run_stride(lt, il) is not None and run_stride(rt, ir_) is not None:
                k = 1
                for a in il:
                    k *= lt.shape[a]
                if best is None or k > best[0]:
                    best = (k, il, ir_, [(lt.shape[a], ls[a], rs[b]) for a, b in order[:cut] if lt.shape[a] > 1])
                break
    return (lc, rc, []) if best is None else best[1:]


def _batch_dims(lt: TensorType, rt: TensorType, lb: list, rb: list) -> list:
    """[(extent, lhs stride, rhs stride)] of the batch dimensions (size-1 ones left out,
    runs that are contiguous in both operands merged): the batch dimensions need not be
    adjacent (attention's [B, S, H, D] operands batch over B and H)."""
    ls, rs = _strides(lt.shape), _strides(rt.shape)
    dims = []
    for a, b in zip(lb, rb):
        if lt.shape[a] == 1:
            continue
        e, sa, sb = lt.shape[a], ls[a], rs[b]
        if dims and dims[-1][1] == sa * e and dims[-1][2] == sb * e:
            pe, _, _ = dims.pop()
            e = pe * e
        dims.append((e, sa, sb))
    return dims


def _batch_offset(b, bi, dims: list, which: int, c64):
    """Element offset of batch bi (an i64) in the lhs (which=1) or the rhs (which=2)."""
    off = c64(0)
    inner = 1
    for dim in reversed(dims):
        idx = b.urem(b.udiv(bi, c64(inner)), c64(dim[0])) if len(dims) > 1 else bi
        off = b.add(off, b.mul(idx, c64(dim[which])))
        inner *= dim[0]
    return off


def _fn(ctx, name: str, args: list):
    return ctx.mod.globals.get(name) or ir.Function(ctx.mod, ir.FunctionType(ir.VoidType(), args), name)


# An f32 lhs stored [K, M] (weight gradients x^T @ dy) of at least this many bytes, under
# at least PACK_T_MIN_N columns, is packed to [M, K] (16 x 16 register transposes) rather
# than read in place: every panel of 32 columns reads the whole lhs, each k of a tile in
# another line, rows M x 4 bytes apart, a power of two in transformer shapes (every k in one
# cache set). 4096 tokens x 1024 -> 1024: 217 -> 104 ms (XLA 105-117); with few panels the
# copy costs more than it saves (4096 x 1000 -> 48: 5.6 -> 8.4 ms packed).
PACK_T_MIN_BYTES = 2 << 20
PACK_T_MIN_N = 256


def _pack_rows(kind: str, m: int, n: int, k: int) -> bool:
    return kind == "f32" and m * k * 4 >= PACK_T_MIN_BYTES and n >= PACK_T_MIN_N


def emit_lowp_dot(ctx, op: Operation, plan: dict) -> None:
    from axle.backends.cpu.lowp_runtime import GEOMETRY, GROUP_MIN_BYTES, GROUP_PANELS, KINDS, register
    from axle.backends.cpu.parallel import split_ranges
    register("gemm")  # the kernels' addresses, for linking this module
    em = ctx.em
    kind, flip = plan["kind"], plan["flip"]
    batch, m, n, k = plan["batch"], plan["m"], plan["n"], plan["k"]
    _, sa_m, sa_k, _, sb_k, sb_n = plan["strides"]
    bdims = plan["batch_dims"]
    outer = plan.get("outer_k") or []
    n_outer = 1
    for e, _, _ in outer:
        n_outer *= e
    g, et, _ = KINDS[kind]
    MR, NR, _ = GEOMETRY[kind]
    esize = et.width // 8  # of the stored operands (packed words are 4 bytes in every kind)
    kg = (k + g - 1) // g
    mpad = (m + MR - 1) // MR * MR
    a_bytes = mpad * kg * 4
    token = object()
    # f32: the lhs is read in place through its strides ([M, K] or [K, M]); others packed
    unpacked_lhs = kind in ("f32", "f32_avx2") and (sa_k == 1 or (sa_m == 1 and not _pack_rows(kind, m, n, k)))
    ap_ref = None if unpacked_lhs else ctx.temp_ref(TensorType((batch * a_bytes,), element_type("i8")), token)
    pack_a = _fn(ctx, f"axle_lowp_{kind}_pack_a", [P8, I64, I64, I64, I64, P8, I64])
    panels = _fn(ctx, f"axle_lowp_{kind}_panels", [P8, P8, I64, I64, P8] + [I64] * 11)
    unpacked = unpacked_lhs
    c64 = em.const_i64

    def at(ptr, elems, size):
        b = ctx.b
        return b.gep(b.bitcast(ptr, P8), [b.mul(elems, c64(size))], inbounds=True)

    def pack(bi):
        b = ctx.b
        b.call(pack_a, [at(ctx.buffer(op.operands[0]), _batch_offset(b, bi, bdims, 1, c64), esize),
                        c64(sa_m), c64(sa_k),
                        c64(m), c64(k), at(ctx.resolve(ap_ref), bi, a_bytes), c64(flip)])
    if not unpacked:
        em.for_range_dynamic(c64(0), c64(batch), pack)

    def lhs_at(b, bi):
        if unpacked:
            return at(ctx.buffer(op.operands[0]), _batch_offset(b, bi, bdims, 1, c64), esize)
        return at(ctx.resolve(ap_ref), bi, a_bytes)
    npanels = (n + NR - 1) // NR
    # f32 on AVX2, a row-major rhs beyond the L2s: units of several panels, packed together
    per_unit = GROUP_PANELS if kind == "f32_avx2" and sb_n == 1 and k * n * 4 >= GROUP_MIN_BYTES else 1
    npanels = (npanels + per_unit - 1) // per_unit  # (units of panels from here on)
    mtiles = (m + MR - 1) // MR
    # units of work: (batch, panel, part of the row tiles); rows are split too when there
    # are few panels, so that every thread gets work (fixed, whatever the thread count)
    mparts = max(1, min(mtiles, -(-UNITS // (batch * npanels)), mtiles // 2 or 1))
    units = batch * npanels * mparts

    def emit(lo, hi):
        def one(u):
            b = ctx.b
            bp = b.udiv(u, c64(mparts))
            part = b.urem(u, c64(mparts))
            bi = b.udiv(bp, c64(npanels))
            p = b.urem(bp, c64(npanels))
            t0 = b.udiv(b.mul(part, c64(mtiles)), c64(mparts))
            t1 = b.udiv(b.mul(b.add(part, c64(1)), c64(mtiles)), c64(mparts))

            def call(q):  # q: the step of the outer contracting loops (0 when there are none)
                b2 = ctx.b
                qa, qb = _batch_offset(b2, q, outer, 1, c64), _batch_offset(b2, q, outer, 2, c64)
                b2.call(panels, [b2.gep(lhs_at(b2, bi), [b2.mul(qa, c64(esize))], inbounds=True),
                                 at(ctx.buffer(op.operands[1]), b2.add(_batch_offset(b2, bi, bdims, 2, c64), qb), esize),
                                 c64(sb_k), c64(sb_n),
                                 at(ctx.buffer(op.results[0]), b2.mul(bi, c64(m * n)), 4), c64(n),
                                 c64(m), c64(n), c64(k), b2.mul(p, c64(per_unit)),
                                 b2.mul(b2.add(p, c64(1)), c64(per_unit)),
                                 b2.zext(b2.icmp_unsigned("!=", q, c64(0)), I64) if outer else c64(flip),
                                 c64(sa_m if unpacked else kg), t0, t1, c64(sa_k if unpacked else 1)])
            if outer:  # (f32 kinds: `flip` 1 adds to C)
                em.for_range_dynamic(c64(0), c64(n_outer), call)
            else:
                call(c64(0))
        em.for_range_dynamic(lo, hi, one)
    split_ranges(ctx, units, batch * m * n * k * n_outer // 16, emit)
    if ap_ref is not None:
        ctx.release(token)
    ctx.mark_library(f"lowp.{kind}")


def f32_kernel_fits(n: int) -> bool:
    """Whether an f32 GEMM of n columns (and at least 8 rows) runs on the f32 kernel here
    (im2col convolutions ask, kernels_conv.py)."""
    from axle.backends.cpu.lowp_runtime import supported_kinds
    return _enabled() and "f32" in supported_kinds() and n >= CONV_MIN_COLUMNS


def call_f32_gemm(ctx, m_count, n: int, k: int, lhs, lda: int, rhs, sb_k: int, sb_n: int, out, ldc: int,
                  ldk: int = 1) -> None:
    """out[i, j] = sum_q lhs[i * lda + q * ldk] * rhs[q * sb_k + j * sb_n] for the rows
    i < m_count (an i64 value) and j < n (lda or ldk 1), in the calling thread (one call
    of the kernel over all panels and row tiles)."""
    from axle.backends.cpu.lowp_runtime import NR, register
    register("gemm")
    em = ctx.em
    c64 = em.const_i64
    panels = _fn(ctx, "axle_lowp_f32_panels", [P8, P8, I64, I64, P8] + [I64] * 11)
    b = ctx.b
    ctx.b.call(panels, [b.bitcast(lhs, P8), b.bitcast(rhs, P8), c64(sb_k), c64(sb_n), b.bitcast(out, P8), c64(ldc),
                        m_count, c64(n), c64(k), c64(0), c64((n + NR - 1) // NR), c64(0), c64(lda), c64(0),
                        c64(2 ** 40), c64(ldk)])
