"""dot_general that BLAS cannot take as it stands, through BLAS after packing.

blas.gemm_shape takes dots whose operands and result share one BLAS type and whose
dimensions are in BLAS's orders. Every other dot_general of real numbers that is large
enough comes here instead of the generated loop nest (which runs at scalar speed):

* element types: bf16 / f16 operands (and mixed float types) are converted to f32 (f64
  when an operand or the result is f64) and multiplied with sgemm (dgemm); complex results
  with cgemm / zgemm (a real operand converted: x @ (a + 1j b)); the sums are
  in f32 as the loop's accumulator_type would have them. Integer operands of at most 16
  bits (int8 x int8 -> int32, uint8, ...) are converted to floats in which every product
  and every partial sum is an exact integer: f32 when K * max|lhs| * max|rhs| <= 2**24,
  else f64 when <= 2**53, else the loop runs. The exact sum is then converted to the
  integer result type wrapping modulo 2**bits, as integer arithmetic would.
* dimension orders: any batching, contracting and free dimensions, in any positions.
  An operand is packed into scratch [batch, rows, K] (or [batch, K, rows] when its
  contracting dimensions come first, so that the copy reads memory in order) unless it is
  already laid out that way in the compute type; then BLAS reads it in place. The result
  of a dot_general is always [batch..., lhs free..., rhs free...]: row-major [B, M, N],
  so the GEMMs write it in place (or into scratch when it has another element type,
  converted afterwards).

Packing costs one pass over each operand (O(MK + KN)) against the GEMM's O(MNK).
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from axle.codegen import scalar as S
from axle.codegen.emitter import _ty
from axle.ir.core import Operation
from axle.ir.types import TensorType, element_type, int_range

I64 = ir.IntType(64)


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def _compute_type(op: Operation, k: int) -> Optional[str]:
    """'f32', 'f64', 'complex<f32>' or 'complex<f64>' to run this dot in through BLAS, or None."""
    lt, rt, ot = (_ty(v).element_type for v in (op.operands[0], op.operands[1], op.results[0]))
    if ot.is_complex and all(t.is_complex or t.is_float for t in (lt, rt)):
        # complex (or real times complex): cgemm / zgemm on operands converted to the result's type
        return str(ot) if str(ot) in ("complex<f32>", "complex<f64>") else None
    if any(t.is_complex or t.is_bool for t in (lt, rt, ot)):
        return None
    if lt.is_float and rt.is_float and ot.is_float:
        return "f64" if 64 in (lt.bitwidth, rt.bitwidth, ot.bitwidth) else "f32"
    if lt.is_int and rt.is_int and ot.is_int and max(lt.bitwidth, rt.bitwidth) <= 16 and ot.bitwidth <= 64:
        def biggest(t):
            lo, hi = int_range(t)
            return max(abs(lo), abs(hi))
        bound = k * biggest(lt) * biggest(rt)
        if bound <= 2 ** 24:
            return "f32"
        if bound <= 2 ** 53:
            return "f64"
    return None


def packed_plan(op: Operation):
    """The plan of a packed dot (see the module docstring), or None when it does not apply."""
    from axle.backends.cpu import blas
    lhs, rhs = op.operands
    lt, rt = _ty(lhs), _ty(rhs)
    from axle.codegen.dot import DotDims
    dims = DotDims(op)
    lb, rb, lc, rc, lfree, rfree = dims.lb, dims.rb, dims.lc, dims.rc, dims.lfree, dims.rfree
    batch = _prod(lt.shape[d] for d in lb)
    m = _prod(lt.shape[d] for d in lfree)
    n = _prod(rt.shape[d] for d in rfree)
    k = _prod(lt.shape[d] for d in lc)
    if min(batch, m, n, k) < 1 or max(m, n, k) >= 2 ** 31 or m * n * k < blas.MIN_WORK:
        return None
    ct = _compute_type(op, k)
    if ct is None or blas.PREFIX[ct] not in blas.available():
        return None
    return dict(batch=batch, m=m, n=n, k=k, ct=ct, lhs=(lb, lfree, lc), rhs=(rb, rc, rfree))


def _operand_layout(t: TensorType, ct: str, dims: tuple):
    """(transposed, in_place) for an operand whose GEMM view is [batch, A, B] with
    dims = (batch dims, A dims, B dims). transposed: stored (or packed) [batch, B, A]."""
    bd, a, b_ = dims
    order = list(range(t.rank))
    same_type = str(t.element_type) == ct
    if order == bd + a + b_:
        return False, same_type
    if order == bd + b_ + a:
        return True, same_type
    # pack in the order closest to memory: transposed when B's dimensions come first
    return (min(b_) < min(a)) if a and b_ else False, False


def emit_packed_dot(ctx, op: Operation, plan: dict) -> None:
    from axle.backends.cpu import blas
    from axle.backends.cpu.parallel import split_loop, split_ranges
    from axle.codegen.scalar_ops import convert
    em = ctx.em
    ct = element_type(plan["ct"])
    p = blas.PREFIX[plan["ct"]]
    batch, m, n, k = plan["batch"], plan["m"], plan["n"], plan["k"]
    itemsize = ct.bitwidth // 8
    lhs, rhs = op.operands
    res = op.results[0]
    ot = _ty(res)
    tokens = []

    def operand(v, dims, rows):
        """(pointer getter, transposed) of the GEMM view of operand v: [batch, rows, K]
        (lhs) or [batch, K, rows] (rhs), as dims = (batch, first, second) say."""
        t = _ty(v)
        transposed, in_place = _operand_layout(t, plan["ct"], dims)
        if in_place:
            return (lambda: ctx.buffer(v)), transposed
        bd, a, b_ = dims
        order = bd + (b_ + a if transposed else a + b_)
        shape = [t.shape[d] for d in order]
        token = object()
        tokens.append(token)
        ref = ctx.temp_ref(TensorType(tuple(shape), ct), token)
        et = t.element_type

        def body(idx):  # idx over the packed order; the destination is contiguous
            full = [None] * t.rank
            for d, i in zip(order, idx):
                full[d] = i
            x = S.load(em.b, em.element_ptr(ctx.buffer(v), et, em.linear(full, t.shape)), et)
            S.store(em.b, convert(em, et, ct, x), em.element_ptr(ctx.resolve(ref), ct, em.linear(idx, shape)), ct)
        from axle.backends.cpu.parallel import outer_dim
        split_loop(ctx, shape, outer_dim(shape), body)
        return (lambda: ctx.resolve(ref)), transposed

    # lhs view [B, M, K]: dims (batch, free, contracting); rhs view [B, K, N]: (batch, contracting, free)
    lhs_ptr, lhs_t = operand(lhs, plan["lhs"], m)
    rhs_ptr, rhs_t = operand(rhs, plan["rhs"], n)
    direct = str(ot.element_type) == plan["ct"]
    if direct:
        out_ptr = lambda: ctx.buffer(res)  # noqa: E731
    else:
        token = object()
        tokens.append(token)
        out_ref = ctx.temp_ref(TensorType((batch, m, n), ct), token)
        out_ptr = lambda: ctx.resolve(out_ref)  # noqa: E731

    def one(bi):
        b = ctx.b

        def off(elems):
            return b.mul(bi, ir.Constant(I64, elems * itemsize))
        blas.call_gemm(ctx, p, ct, m, n, k, lhs_ptr(), rhs_ptr(), out_ptr(), off(m * k), off(k * n), off(m * n),
                       lhs_t, rhs_t)
    if batch == 1:
        blas.gemm_on_pool(ctx, p, ct, m, n, k, lhs_ptr, rhs_ptr, out_ptr, lhs_t, rhs_t)
    else:
        split_ranges(ctx, batch, batch * m * n * k // 256, lambda lo, hi: em.for_range_dynamic(lo, hi, one))
    if not direct:
        oet = ot.element_type
        flat = [batch * m, n]

        def store(idx):
            b = em.b
            lin = em.linear(idx, flat)
            x = S.load(b, em.element_ptr(ctx.resolve(out_ref), ct, lin), ct)
            if oet.is_int:  # an exact integer: wrap modulo 2**bits like integer sums
                y = b.fptosi(x, I64)
                y = y if oet.bitwidth == 64 else b.trunc(y, S.reg_type(oet))
            else:
                y = S.finish(b, convert(em, ct, oet, x), oet)
            S.store(b, y, em.element_ptr(ctx.buffer(res), oet, lin), oet)
        split_loop(ctx, flat, 0, store)
    for t in tokens:
        ctx.release(t)
    ctx.mark_library(f"blas.{p}gemm")
