"""stablehlo.cholesky on the CPU backend, as the interpreter (ops_linalg.py) computes it:
Cholesky–Banachiewicz in f64 (complex<f64>) on the triangle `lower` names (for an upper
factor, on the transpose: element (i, j) is read from (j, i) and the factor is written
transposed), then rounded once. A matrix that meets a negative or NaN pivot gives NaNs
everywhere (as XLA); the opposite triangle of the result is zero. Sums run in the index
order, so results may differ from numpy's einsum in the last bit of f64.
"""
from __future__ import annotations

from llvmlite import ir

from axle.codegen import scalar as S
from axle.codegen.emitter import _ty
from axle.codegen.scalar import I1
from axle.codegen.scalar_ops import RULES, convert, im, make, re
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.ir.types import TensorType, c128, f64


def _check(op) -> None:
    t = _ty(op.operands[0])
    if t.rank < 2 or t.shape[-1] != t.shape[-2] or not (t.element_type.is_float or t.element_type.is_complex):
        raise Unsupported(f"{op.where()}: cholesky of {t}")
    S.reg_type(t.element_type)


@kernel("stablehlo.cholesky", memory_operands=True, check=_check)
def cholesky(ctx: Context, op) -> None:
    em, b = ctx.em, ctx.b
    a = op.operands[0]
    t = _ty(a)
    et = t.element_type
    w = c128 if et.is_complex else f64
    n = t.shape[-1]
    nb = t.rank - 2
    lower = bool(op.attr("lower", False))
    out = ctx.buffer(op.results[0])
    scratch = ctx.temp(TensorType((n, n), w))
    sub, mul, div = RULES["stablehlo.subtract"], RULES["stablehlo.multiply"], RULES["stablehlo.divide"]
    F64 = S.F64
    sqrt = em.module.declare_intrinsic("llvm.sqrt", [F64], ir.FunctionType(F64, [F64]))
    failed_slot = em.alloca(I1)

    def conj(v):
        return make(b, v.type, re(b, v), b.fneg(im(b, v))) if w.is_complex else v

    def lptr(i, j):
        return em.element_ptr(scratch, w, b.add(b.mul(i, em.const_i64(n)), j))

    def per_matrix(bidx):
        def aval(i, j):  # A'(i, j): a's triangle read as a lower triangle
            idx = list(bidx) + ([i, j] if lower else [j, i])
            return convert(em, et, w, em.value_at(a, idx))

        b.store(ir.Constant(I1, 0), failed_slot)
        zero = S.constant(w, 0)
        em.loop_nest([n, n], lambda ij: b.store(zero, lptr(ij[0], ij[1])))

        def column(j):
            def dot(i):
                """sum_{k<j} L[i, k] * conj(L[j, k])"""
                acc = em.alloca(S.reg_type(w))
                b.store(zero, acc)

                def term(k):
                    with b.if_then(b.icmp_unsigned("<", k, j)):
                        p = mul(em, w, [b.load(lptr(i, k)), conj(b.load(lptr(j, k)))], op)
                        b.store(RULES["stablehlo.add"](em, w, [b.load(acc), p], op), acc)
                em.for_range(n, term)
                return b.load(acc)

            d = sub(em, w, [aval(j, j), dot(j)], op)
            pivot = b.call(sqrt, [re(b, d) if w.is_complex else d])
            nan = b.fcmp_unordered("uno", pivot, pivot)
            b.store(b.or_(b.load(failed_slot), nan), failed_slot)
            pv = make(b, S.reg_type(w), pivot, ir.Constant(F64, 0.0)) if w.is_complex else pivot
            b.store(pv, lptr(j, j))

            def below(i):
                with b.if_then(b.icmp_unsigned(">", i, j)):
                    v = sub(em, w, [aval(i, j), dot(i)], op)
                    if w.is_complex:  # complex / real, part by part
                        q = make(b, v.type, b.fdiv(re(b, v), pivot), b.fdiv(im(b, v), pivot))
                    else:
                        q = div(em, w, [v, pivot], op)
                    b.store(q, lptr(i, j))
            em.for_range(n, below)

        em.for_range(n, column)
        failed = b.load(failed_slot)
        nan = S.constant(et, complex(float("nan"), 0.0) if et.is_complex else float("nan"))  # as np.where

        def write(ij):
            i, j = ij
            v = S.finish(b, convert(em, w, et, b.load(lptr(i, j))), et)
            v = b.select(failed, nan, v)
            idx = list(bidx) + ([i, j] if lower else [j, i])
            S.store(b, v, em.element_ptr(out, et, em.linear(idx, t.shape)), et)
        em.loop_nest([n, n], write)

    em.loop_nest(list(t.shape[:nb]), per_matrix)
