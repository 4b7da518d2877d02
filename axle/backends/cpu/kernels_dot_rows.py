"""dot_general that no library routine takes, as vectorized rows: int32 / int64 / uint32
products, real floats below BLAS's size or without BLAS, any layout whose rhs free
dimensions are its trailing ones.

The generic dot loop runs a scalar sum per result element (k innermost), which LLVM cannot
vectorize for floats (the order is fixed) and strides through the rhs. Here the loop order
is (batch, block of IB lhs rows, tile of the rhs free dimensions; k; j): for each k the
block's lhs elements are loaded once and every result of the block's rows in the tile gets
`out += a * rhs[k, j]`, the j loop running along contiguous rhs and result elements (it
vectorizes: vpmulld for int32, fma-free mul + add for floats as the region rules write
them). Each result element still sums its products in increasing k from zero, so the bits
equal the generic loop's; the block of rows reads each rhs element once per IB results.
"""
from __future__ import annotations

from typing import Optional

from axle.codegen import scalar as S
from axle.codegen.dot import DotDims, accumulator_type, run_stride
from axle.codegen.emitter import _ty
from axle.codegen.scalar_ops import RULES, convert
from axle.ir.core import Operation

IB = 4  # lhs rows per block
JT = 512  # results per row in one tile (IB x JT accumulators stay in L1)
MIN_N = 8  # rhs free elements: fewer, and the generic loop is as good


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def rows_plan(op: Operation) -> Optional[dict]:
    """The plan when the rhs free dimensions are its trailing dimensions in order, the result
    is its own accumulator type (ints, f32, f64) and they are at least MIN_N elements."""
    lhs, rhs = op.operands
    lt, rt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    oet = ot.element_type
    if oet.is_complex or oet.is_bool or not (oet.is_int or oet.is_float) or accumulator_type(oet) != oet:
        return None
    if any(t.element_type.is_complex for t in (lt, rt)):
        return None
    dims = DotDims(op)
    if not dims.rfree or dims.rfree != list(range(rt.rank - len(dims.rfree), rt.rank)):
        return None
    if run_stride(rt, dims.rfree) not in (0, 1):
        return None
    n = _prod(rt.shape[d] for d in dims.rfree)
    if n < MIN_N:
        return None
    return {"dims": dims, "batch": _prod(lt.shape[d] for d in dims.lb), "m": _prod(lt.shape[d] for d in dims.lfree),
            "n": n, "k": _prod(lt.shape[d] for d in dims.lc)}


def emit_rows_dot(ctx, op: Operation, plan: dict) -> None:
    from axle.backends.cpu.scopes import _result_scopes, reads_buffer_of
    from axle.backends.cpu.parallel import split_ranges
    em = ctx.em
    c64 = em.const_i64
    lhs, rhs = op.operands
    lt, rt, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    oet = ot.element_type
    dims = plan["dims"]
    nb, m, n, k = plan["batch"], plan["m"], plan["n"], plan["k"]
    bshape = [lt.shape[d] for d in dims.lb]
    lshape = [lt.shape[d] for d in dims.lfree]
    cshape = [lt.shape[d] for d in dims.lc]
    rshape = [rt.shape[d] for d in dims.rfree]
    add, mul = RULES["stablehlo.add"], RULES["stablehlo.multiply"]
    scopes = None
    if not reads_buffer_of(ctx, list(op.operands), op.results[0]):
        scopes = _result_scopes(ctx)
    mine = {"alias.scope": scopes} if scopes is not None else None
    other = {"noalias": scopes} if scopes is not None else None
    n_tiles = -(-n // JT)

    def block(bi, i0, rows: int, tile):
        """Results [bi, i0 .. i0 + rows, tile]: zero, then every k in order."""
        b = em.b
        bidx = em.delinear(bi, bshape) if bshape else []
        jlo = b.mul(tile, c64(JT))
        jhi = em.tile_end(jlo, JT, n)
        dst = ctx.buffer(op.results[0])
        rbuf = ctx.buffer(rhs)
        out_rows = [b.mul(b.add(b.mul(bi, c64(m)), b.add(i0, c64(r))), c64(n)) for r in range(rows)]

        def zero(j):
            for base in out_rows:
                S.store(em.b, S.constant(oet, 0), em.element_ptr(dst, oet, em.b.add(base, j)), oet, mine)
        em.for_range_dynamic(jlo, jhi, zero)

        def step(kk):
            bb = em.b
            cidx = em.delinear(kk, cshape) if cshape else []
            zeros = [c64(0)] * len(rshape)
            a = []
            with em.reading(other):
                for r in range(rows):
                    li = em.delinear(bb.add(i0, c64(r)), lshape) if lshape else []
                    lfull, _ = dims.operand_indices(bidx, li, zeros, cidx)
                    a.append(convert(em, lt.element_type, oet, em.value_at(lhs, lfull)))
            _, rfull = dims.operand_indices(bidx, [], zeros, cidx)
            rbase = em.linear(rfull, list(rt.shape))

            def element(j):
                b3 = em.b
                y = convert(em, rt.element_type, oet,
                            S.load(b3, em.element_ptr(rbuf, rt.element_type, b3.add(rbase, j)), rt.element_type, other))
                for base, x in zip(out_rows, a):
                    p = em.element_ptr(dst, oet, b3.add(base, j))
                    acc = S.load(b3, p, oet, mine)
                    S.store(b3, add(em, oet, [acc, mul(em, oet, [x, y], op)], op), p, oet, mine)
            em.for_range_dynamic(jlo, jhi, element)
        em.for_range_dynamic(c64(0), c64(k), step)

    full = m // IB
    units = nb * full * n_tiles

    def blocks(lo, hi):
        def unit(u):
            b = em.b
            tile = b.urem(u, c64(n_tiles))
            rest = b.udiv(u, c64(n_tiles))
            block(b.udiv(rest, c64(full)), b.mul(b.urem(rest, c64(full)), c64(IB)), IB, tile)
        em.for_range_dynamic(lo, hi, unit)

    if units:
        split_ranges(ctx, units, nb * full * IB * n * max(k, 1), blocks)
    if m % IB:
        def leftover(u):  # the last m % IB rows of every batch, one row at a time
            b = em.b
            tile = b.urem(u, c64(n_tiles))
            rest = b.udiv(u, c64(n_tiles))
            block(b.udiv(rest, c64(m % IB)), b.add(c64(full * IB), b.urem(rest, c64(m % IB))), 1, tile)
        em.for_range_dynamic(c64(0), c64(nb * (m % IB) * n_tiles), leftover)
