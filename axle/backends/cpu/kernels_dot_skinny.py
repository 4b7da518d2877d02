"""dot_general with fewer than 8 rows (8 on AVX-512): matrix-vector products, decode attention
over a cache.

A dot whose lhs (or rhs) has at most MAX_ROWS (MAX_ROWS_WIDE) free elements per batch is bound by reading
the other operand once; BLAS would pack that operand (a copy per call) and run a register
tile mostly of padding. Here the small operand gives R <= MAX_ROWS "rows", the large one N
"columns", and both are read where they are, through their strides
(kernels_dot_skinny_ir.py emits the code):

* "axpy" (the large operand's free dimension contiguous, e.g. x @ W, p @ V): R x U vector
  accumulators for U vectors of columns, k in blocks of rows, so B is read row by row.
* "dot" (the large operand's contracting dimension contiguous, e.g. q . K^T over a key
  cache, W @ v): R x J vector accumulators along k for J columns at once, summed by a
  fixed tree. A small operand whose k is strided is packed first (a pass over it only).

The vector width W is the host's (target.py: 16 f32 with AVX-512, 8 with AVX2), U and J as
many as fit the registers (32 or 16). Work is split across the pool (parallel.py) by
batch x blocks of BLOCK columns, or for an axpy dot over an operand beyond the caches by
batch x KPARTS parts of k (partial results added in part order). Block and part
boundaries depend on the shapes only, and a column's value is computed by the same
sequence of operations whichever unit or thread computes it, so results do not depend on
the number of threads.
"""
from __future__ import annotations

from typing import Optional

from axle.backends.cpu.kernels_dot_skinny_ir import KB, P8, TYPES, kernel
from axle.codegen.dot import run_stride
from axle.codegen.emitter import _ty
from axle.ir.core import Operation

MAX_ROWS = 7  # dots with at most this many rows per batch (8 or more: BLAS / the GEMM kernels)...
MAX_ROWS_WIDE = 8  # ...or this many with 32 vector registers (AVX-512): A @ v with v [1024, 8] took
# 0.34 ms in OpenBLAS (a tile mostly of padding) and 0.18 here, a power iteration's step
BLOCK = 128  # columns per unit of parallel work (fixed: results do not depend on threads)
MAX_UNROLL = 4  # vectors of columns per axpy block / columns per dot group (at most)
KPARTS = 8  # parts of k of an axpy dot over a large operand (fixed: results do not depend on threads)
SPLIT_K_BYTES = 8 << 20  # large operand bytes (per batch, beyond the L2 caches) from which k is cut into parts
PARTIAL_BYTES = 4 << 20  # most arena bytes for the parts' partial results
_TYPES = TYPES



def _prod(t, dims) -> int:
    p = 1
    for d in dims:
        p *= t.shape[d]
    return p


ENABLED = [True]  # [False]: every dot takes the other paths (benchmarks compare; clear the caches)


def _enabled() -> bool:
    return ENABLED[0]


def _vector_bits() -> int:
    """The host's vector width (target.py): 512 with AVX-512, 256 with AVX2 (Zen 3), else 128."""
    from axle.backends.cpu.target import CPU
    return CPU.vector_bits


def _width(et: str) -> int:
    return max(1, _vector_bits() // (32 if et == "f32" else 64))


def _registers() -> int:
    return 32 if _vector_bits() >= 512 else 16


def skinny_plan(op: Operation, ctx=None) -> Optional[dict]:
    """The plan of a dot this kernel takes, or None: f32 / f64 throughout, static shapes,
    operands in memory (with ctx: not computed in place by a fused producer from an
    enclosing block), at most MAX_ROWS free elements on one side, every group of
    dimensions one strided run, and a layout with one of the two modes' unit strides."""
    lhs, rhs = op.operands
    if ctx is not None and not (ctx.has_buffer(lhs) and ctx.has_buffer(rhs)):
        return None
    lt, rt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    if not (lt.is_static and rt.is_static and ot.is_static):
        return None
    et = str(ot.element_type)
    if et not in _TYPES or str(lt.element_type) != et or str(rt.element_type) != et or not _enabled():
        return None
    from axle.codegen.dot import DotDims
    d = DotDims(op)
    batch, m, n, k = _prod(lt, d.lb), _prod(lt, d.lfree), _prod(rt, d.rfree), _prod(lt, d.lc)
    max_rows = MAX_ROWS_WIDE if _registers() >= 32 else MAX_ROWS
    if min(m, n) > max_rows or batch * m * n * k == 0 or max(batch * m * k, batch * k * n, batch * m * n) >= 2 ** 40:
        return None
    s = [run_stride(lt, d.lb), run_stride(lt, d.lfree), run_stride(lt, d.lc),
         run_stride(rt, d.rb), run_stride(rt, d.rc), run_stride(rt, d.rfree)]
    if any(x is None for x in s):
        return None
    sa_b, sa_m, sa_k, sb_b, sb_k, sb_n = s
    if k <= 1:
        sa_k = sb_k = 1
    w = _width(et)
    sides = []  # (rows, cols, small (batch, row, k) strides, large (batch, k, col) strides, out (row, col))
    if m <= max_rows:
        sides.append((m, n, (0, sa_b, sa_m, sa_k), (1, sb_b, sb_k, sb_n), (n, 1)))
    if n <= max_rows:
        sides.append((n, m, (1, sb_b, sb_n, sb_k), (0, sa_b, sa_k, sa_m), (1, n)))
    plans = []
    for rows, cols, a, bb, out in sides:
        col_unit = bb[3] == 1 or cols == 1
        k_unit = bb[2] == 1
        if col_unit and (cols >= w or not k_unit):
            if out[1] != 1 and rows > 1:
                continue  # vector results stored lane by lane: LLVM takes 0.3-0.5 s over that code
            mode = "axpy"
        elif k_unit:
            mode = "dot"  # the small operand packed first when its k is strided
        else:
            continue
        plans.append(dict(et=et, mode=mode, batch=batch, rows=rows, cols=cols, k=k, a=a, b=bb, out=out,
                          c_batch=m * n, pack=mode == "dot" and a[3] != 1))
    return min(plans, key=lambda p: (p["pack"], p["rows"]), default=None)  # no packing, fewest rows


def _unroll(mode: str, rows: int) -> int:
    regs = _registers()
    if mode == "axpy":  # rows x U accumulators, U loads, one broadcast
        return max(1, min(MAX_UNROLL, (regs - 2) // (rows + 1)))
    j = max(1, min(2 * MAX_UNROLL, (regs - rows) // (rows + 1)))  # rows x J accumulators, J + rows loads
    return 1 << (j.bit_length() - 1)  # a power of two: the J sums of a row reduced together


def emit_skinny_dot(ctx, op: Operation, plan: dict) -> None:
    from axle.backends.cpu.parallel import split_ranges
    em = ctx.em
    et, rows, cols, k, batch = plan["et"], plan["rows"], plan["cols"], plan["k"], plan["batch"]
    a_side, sa_b, sa_r, sa_k = plan["a"]
    b_side, sb_b, sb_k, sb_c = plan["b"]
    sc_r, sc_c = plan["out"]
    esize = 4 if et == "f32" else 8
    if (plan["mode"] == "axpy" and k * cols * esize >= SPLIT_K_BYTES and k >= 2 * KPARTS * KB
            and batch * KPARTS * rows * cols * esize <= PARTIAL_BYTES):
        _emit_k_parts(ctx, op, plan, esize)
        return
    fn = _kernel(ctx.mod, et, rows, plan["mode"], sc_c == 1)
    nblocks = (cols + BLOCK - 1) // BLOCK
    c64 = em.const_i64
    token = object()
    packed = _pack_small(ctx, op, plan, token) if plan["pack"] else None
    if packed is not None:
        sa_b, sa_r, sa_k = rows * k, k, 1

    def at(v, elems):
        b = ctx.b
        base = ctx.resolve(packed) if v is None else ctx.buffer(v)
        return b.gep(b.bitcast(base, P8), [b.mul(elems, c64(esize))], inbounds=True)

    def emit(lo, hi):
        def one(u):
            b = ctx.b
            bi = b.udiv(u, c64(nblocks))
            j0 = b.mul(b.urem(u, c64(nblocks)), c64(BLOCK))
            j1 = b.add(j0, c64(BLOCK))
            j1 = b.select(b.icmp_unsigned("<", j1, c64(cols)), j1, c64(cols))
            b.call(fn, [at(None if packed is not None else op.operands[a_side], b.mul(bi, c64(sa_b))),
                        at(op.operands[b_side], b.mul(bi, c64(sb_b))),
                        at(op.results[0], b.mul(bi, c64(plan["c_batch"]))), j0, j1, c64(k),
                        c64(sa_r), c64(sa_k), c64(sb_k), c64(sb_c), c64(sc_r), c64(sc_c)])
        em.for_range_dynamic(lo, hi, one)
    split_ranges(ctx, batch * nblocks, batch * rows * cols * max(k, 1), emit)
    if packed is not None:
        ctx.release(token)
    ctx.mark_library(f"skinny.{plan['mode']}")


def _pack_small(ctx, op: Operation, plan: dict, token):
    """The small operand copied into rows contiguous in k (batch x rows x k on the arena),
    for the "dot" mode when its k is strided (W @ X with X of a few columns): a pass over
    the small operand only. Returns the temporary's reference."""
    from axle.ir.types import TensorType, element_type
    em = ctx.em
    et, rows, k, batch = plan["et"], plan["rows"], plan["k"], plan["batch"]
    a_side, sa_b, sa_r, sa_k = plan["a"]
    ref = ctx.temp_ref(TensorType((batch * rows * k,), element_type(et)), token)
    pt = _TYPES[et].as_pointer()
    c64 = em.const_i64
    src = ctx.b.bitcast(ctx.buffer(op.operands[a_side]), pt)
    dst = ctx.b.bitcast(ctx.resolve(ref), pt)

    def row(bi, r):
        def one(kk):
            b = ctx.b
            x = b.load(b.gep(src, [b.add(b.add(b.mul(bi, c64(sa_b)), b.mul(r, c64(sa_r))), b.mul(kk, c64(sa_k)))]))
            b.store(x, b.gep(dst, [b.add(b.mul(b.add(b.mul(bi, c64(rows)), r), c64(k)), kk)]))
        em.for_range_dynamic(c64(0), c64(k), one)
    em.for_range_dynamic(c64(0), c64(batch), lambda bi: em.for_range_dynamic(c64(0), c64(rows),
                                                                              lambda r: row(bi, r)))
    return ref


def _emit_k_parts(ctx, op: Operation, plan: dict, esize: int) -> None:
    """An axpy dot whose large operand does not fit the caches: k cut into KPARTS parts,
    each (batch, part) a unit of work reading its rows of B from first to last into partial
    results (on the arena), which are then added in part order. Columns split across
    threads would each read a short piece of every row (a pattern that reaches half the
    memory bandwidth or less). Fixed parts: the results do not depend on the threads."""
    from axle.backends.cpu.parallel import split_ranges
    from axle.ir.types import TensorType, element_type
    em = ctx.em
    et, rows, cols, k, batch = plan["et"], plan["rows"], plan["cols"], plan["k"], plan["batch"]
    a_side, sa_b, sa_r, sa_k = plan["a"]
    b_side, sb_b, sb_k, sb_c = plan["b"]
    sc_r, sc_c = plan["out"]
    t = _TYPES[et]
    part = rows * cols
    token = object()
    ref = ctx.temp_ref(TensorType((batch * KPARTS * part,), element_type(et)), token)
    fn = _kernel(ctx.mod, et, rows, "axpy", True)
    c64 = em.const_i64

    def at(ptr, elems):
        b = ctx.b
        return b.gep(b.bitcast(ptr, P8), [b.mul(elems, c64(esize))], inbounds=True)

    def emit(lo, hi):
        def one(u):
            b = ctx.b
            bi, p = b.udiv(u, c64(KPARTS)), b.urem(u, c64(KPARTS))
            k0 = b.udiv(b.mul(p, c64(k)), c64(KPARTS))
            k1 = b.udiv(b.mul(b.add(p, c64(1)), c64(k)), c64(KPARTS))
            b.call(fn, [at(ctx.buffer(op.operands[a_side]), b.add(b.mul(bi, c64(sa_b)), b.mul(k0, c64(sa_k)))),
                        at(ctx.buffer(op.operands[b_side]), b.add(b.mul(bi, c64(sb_b)), b.mul(k0, c64(sb_k)))),
                        at(ctx.resolve(ref), b.mul(u, c64(part))), c64(0), c64(cols), b.sub(k1, k0),
                        c64(sa_r), c64(sa_k), c64(sb_k), c64(sb_c), c64(cols), c64(1)])
        em.for_range_dynamic(lo, hi, one)
    split_ranges(ctx, batch * KPARTS, batch * rows * cols * k, emit)
    tmp = ctx.b.bitcast(ctx.resolve(ref), t.as_pointer())
    out = ctx.b.bitcast(ctx.buffer(op.results[0]), t.as_pointer())

    def combine(bi, r):
        def col(j):
            b = ctx.b
            e = b.add(b.mul(r, c64(cols)), j)
            total = None
            for p in range(KPARTS):  # in part order
                x = b.load(b.gep(tmp, [b.add(b.mul(b.add(b.mul(bi, c64(KPARTS)), c64(p)), c64(part)), e)]))
                total = x if total is None else b.fadd(total, x)
            dst = b.add(b.mul(bi, c64(plan["c_batch"])), b.add(b.mul(r, c64(sc_r)), b.mul(j, c64(sc_c))))
            b.store(total, b.gep(out, [dst]))
        em.for_range_dynamic(c64(0), c64(cols), col)
    em.for_range_dynamic(c64(0), c64(batch), lambda bi: em.for_range_dynamic(c64(0), c64(rows),
                                                                              lambda r: combine(bi, r)))
    ctx.release(token)
    ctx.mark_library("skinny.axpy")


def _kernel(mod, et: str, rows: int, mode: str, unit_out: bool):
    return kernel(mod, et, rows, mode, unit_out, _unroll(mode, rows), _width(et))
