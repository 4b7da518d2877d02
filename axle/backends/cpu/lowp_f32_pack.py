"""Vectorized packing for the f32 GEMM kernel (lowp_runtime.py, kind "f32").

Operands stored transposed are packed through 16 x 16 transposes in registers (four
stages of two-source shuffles, each exchanging one bit of the row index with one bit of
the column index) instead of element by element:

* `pack_panel_t`: a panel of 32 columns of an rhs stored [N, K] (x @ W.T, backward
  passes): 32 rows of K, 16 k at a time, become 16 rows of 32 columns of the packed
  block (two transposes). The last K mod 16 are copied one by one.
* `pack_a_t`: an lhs stored [K, M] (weight gradients x^T @ dy): 16 k x 16 rows become 16
  rows x 16 k of the packed lhs; blocks at the M and K edges are left to the generic
  element loop of `_pack_a` (the caller passes the bounds of the done part).
"""
from __future__ import annotations

from llvmlite import ir

I32, I64 = ir.IntType(32), ir.IntType(64)
V16F32 = ir.VectorType(ir.FloatType(), 16)
P = ir.IntType(8).as_pointer()
VP = V16F32.as_pointer()


def _c(v):
    return ir.Constant(I64, v)


def _gep(b, ptr, index):
    return b.gep(b.bitcast(ptr, I32.as_pointer()), [index])


def transpose_square(b, rows: list) -> list:
    """The transpose of the n x n matrix whose rows are n vectors of n lanes (n a power of
    two): log2 n stages of two-source shuffles, each exchanging one bit of the row index
    with one bit of the column index."""
    n = len(rows)
    bit = 1
    while bit < n:
        out = list(rows)
        lo_mask = ir.Constant(ir.VectorType(I32, n), [e if not e & bit else n + (e ^ bit) for e in range(n)])
        hi_mask = ir.Constant(ir.VectorType(I32, n), [(e ^ bit) if not e & bit else n + e for e in range(n)])
        for a in range(n):
            if a & bit:
                continue
            out[a] = b.shuffle_vector(rows[a], rows[a | bit], lo_mask)
            out[a | bit] = b.shuffle_vector(rows[a], rows[a | bit], hi_mask)
        rows = out
        bit *= 2
    return rows


def transpose16(b, rows: list) -> list:
    """The transpose of the 16 x 16 matrix whose rows are 16 vectors of 16 lanes."""
    return transpose_square(b, rows)


def _load16(b, base, index):
    return b.load(b.bitcast(_gep(b, base, index), VP), align=4)


def _store16(b, value, base, index):
    b.store(value, b.bitcast(_gep(b, base, index), VP), align=4)


def pack_panel_t(b, loop, bsrc, sbn, bp, col0, g0, ng, nr=32):
    """bp[q][c] = B[col0 + c][g0 + q] (B rows sbn elements apart, k contiguous) for the nr
    (32, or 16 for the AVX2 kind) columns c and q < ng; the panel is whole and k < K for
    all q (the caller checks)."""
    nq16 = b.udiv(ng, _c(16))
    with loop(b, _c(0), nq16, "tq") as q16:
        k0 = b.add(g0, b.mul(q16, _c(16)))
        for half in range(nr // 16):
            rows = [_load16(b, bsrc, b.add(b.mul(b.add(col0, _c(16 * half + c)), sbn), k0)) for c in range(16)]
            for i, v in enumerate(transpose16(b, rows)):
                _store16(b, v, bp, b.add(b.mul(b.add(b.mul(q16, _c(16)), _c(i)), _c(nr)), _c(16 * half)))
    with loop(b, b.mul(nq16, _c(16)), ng, "tr") as q:
        for c in range(nr):
            x = b.load(_gep(b, bsrc, b.add(b.mul(b.add(col0, _c(c)), sbn), b.add(g0, q))))
            b.store(x, _gep(b, bp, b.add(b.mul(q, _c(nr)), _c(c))))


def pack_a_t(b, loop, a, sak, m, k, ap, ld):
    """ap[r][q] = A[q][r] (A rows sak elements apart, M contiguous; ap rows ld words) for
    r < m16 = m - m mod 16, q < k16 = k - k mod 16; returns (m16, k16)."""
    m16 = b.mul(b.udiv(m, _c(16)), _c(16))
    k16 = b.mul(b.udiv(k, _c(16)), _c(16))
    with loop(b, _c(0), b.udiv(m, _c(16)), "ar") as r16:
        with loop(b, _c(0), b.udiv(k, _c(16)), "aq") as q16:
            r0, q0 = b.mul(r16, _c(16)), b.mul(q16, _c(16))
            rows = [_load16(b, a, b.add(b.mul(b.add(q0, _c(i)), sak), r0)) for i in range(16)]
            for i, v in enumerate(transpose16(b, rows)):
                _store16(b, v, ap, b.add(b.mul(b.add(r0, _c(i)), ld), q0))
    return m16, k16
