"""Linear algebra kernels of the CPU backend: triangular_solve.

Real triangles of order BLAS_MIN_ORDER or more: BLAS's trsm in the working precision
(kernels_lapack.trsm_row_major), as XLA (jaxlib's custom call) and PyTorch solve them.
Others: substitution in the order the triangle allows, one right-hand side at a time, for
every batch element. op(a) is a, its transpose or its adjoint; only the `lower` (or
upper) triangle of a is read, and a unit diagonal is not read at all. Floats are
accumulated in f64 (complex in complex<f64>) and rounded once.
"""
from __future__ import annotations

from axle.codegen import scalar as S
from axle.codegen.emitter import _ty
from axle.codegen.scalar_ops import RULES, convert
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.ir.core import Operation
from axle.ir.types import c128, f64


def _check(op: Operation) -> None:
    et = _ty(op.operands[0]).element_type
    if not (et.is_float or et.is_complex):
        raise Unsupported(f"{op.where()} on {et}")
    S.reg_type(et)


# real triangles of this order or larger: BLAS's trsm on the row-major buffers
# (kernels_lapack.trsm_row_major), as jaxlib's custom call and PyTorch run them; smaller
# ones (a batch of 3 x 3 poses) by the substitution below
BLAS_MIN_ORDER = 16


@kernel("stablehlo.triangular_solve", memory_operands=True, check=_check)
def triangular_solve(ctx: Context, op: Operation) -> None:
    em, b = ctx.em, ctx.b
    a, rhs = op.operands
    at, xt = _ty(a), _ty(op.results[0])
    et = xt.element_type
    acc_et = c128 if et.is_complex else f64
    left, lower, unit = op.attr("left_side", False), op.attr("lower", False), op.attr("unit_diagonal", False)
    trans = op.attr("transpose_a", "NO_TRANSPOSE")
    transposed = trans != "NO_TRANSPOSE"
    m = at.shape[-1]
    nb = at.rank - 2
    n = xt.shape[-1] if left else xt.shape[-2]
    if et.name in ("f32", "f64") and m >= BLAS_MIN_ORDER and ctx.has_buffer(a):
        from axle.backends.cpu.kernels_lapack import trsm_row_major
        batch = 1
        for d in at.shape[:nb]:
            batch *= d
        trsm_row_major(ctx, a, rhs, op.results[0], batch, left, lower, ord("N" if not transposed else "T"), unit,
                       xt.shape[-2], xt.shape[-1])
        return
    x = ctx.buffer(op.results[0])
    ctx.copy(rhs, x)
    sub, mul, div = RULES["stablehlo.subtract"], RULES["stablehlo.multiply"], RULES["stablehlo.divide"]
    a_lower = lower != transposed  # op(a) is lower triangular
    forward = a_lower if left else not a_lower

    def body(bidx):
        def coef(p, q):
            """op(a)[p, q] as an accumulator value."""
            idx = list(bidx) + ([q, p] if transposed else [p, q])
            v = convert(em, at.element_type, acc_et, em.value_at(a, idx))
            if trans == "ADJOINT" and acc_et.is_complex:
                from axle.codegen.scalar_ops import im, make, re
                v = make(b, v.type, re(b, v), b.fneg(im(b, v)))
            return v

        def xptr(i, c):
            idx = list(bidx) + ([i, c] if left else [c, i])
            return em.element_ptr(x, et, em.linear(idx, xt.shape))

        def per_rhs(c):
            def step(s):
                i = s if forward else b.sub(em.const_i64(m - 1), s)
                acc = em.alloca(S.reg_type(acc_et))
                b.store(convert(em, et, acc_et, S.load(b, xptr(i, c), et)), acc)

                def term(k):
                    before = b.icmp_signed("<", k, i) if forward else b.icmp_signed(">", k, i)
                    with b.if_then(before):
                        aik = coef(i, k) if left else coef(k, i)
                        xk = convert(em, et, acc_et, S.load(b, xptr(k, c), et))
                        b.store(sub(em, acc_et, [b.load(acc), mul(em, acc_et, [aik, xk], op)], op), acc)

                em.for_range(m, term)
                v = b.load(acc)
                if not unit:
                    v = div(em, acc_et, [v, coef(i, i)], op)
                S.store(b, S.finish(b, convert(em, acc_et, et, v), et), xptr(i, c), et)

            em.for_range(m, step)

        em.for_range(n, per_rhs)

    em.loop_nest(list(at.shape[:nb]), body)
