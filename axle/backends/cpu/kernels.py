"""Kernels of the CPU backend that are not plain elementwise loops: reduce, dot_general.

Each is registered with `@kernel(op name)`; see compiler.py for the contract.
"""
from __future__ import annotations

from axle.backends.cpu import scalar as S
from axle.backends.cpu.compiler import Context, kernel
from axle.backends.cpu.emitter import _ty, element_mapper
from axle.backends.cpu.scalar import Unsupported
from axle.backends.cpu.scalar_ops import RULES, convert
from axle.ir.core import Operation
from axle.ir.types import f32


# ops a scalar region body may hold besides the elementwise RULES (see Emitter.region_scalars)
SCALAR_BODY_OPS = ("stablehlo.return", "stablehlo.convert", "stablehlo.constant", "stablehlo.real",
                   "stablehlo.imag", "stablehlo.complex")


def _check_reduce(op: Operation) -> None:
    """Every region of op must be scalar code the emitter can inline."""
    for o in (o for r in op.regions for o in r.blocks[0].operations):
        if o.name not in RULES and o.name not in SCALAR_BODY_OPS:
            raise Unsupported(f"{o.where()} inside the body of {op.where()}")


@kernel("stablehlo.reduce", check=_check_reduce)
def emit_reduce(ctx: Context, op: Operation) -> None:
    em, b = ctx.em, ctx.b
    n = len(op.results)
    inputs, inits = op.operands[:n], op.operands[n:]
    dims = sorted(op.attr("dimensions"))
    in_t = _ty(inputs[0])
    out_ts = [_ty(r) for r in op.results]
    kept = [d for d in range(in_t.rank) if d not in dims]
    region = op.regions[0]
    body_ets = [a.type.element_type for a in region.blocks[0].arguments[:n]]

    def body(out_idx):
        accs = []
        for init, et in zip(inits, body_ets):
            slot = em.alloca(S.reg_type(et))
            b.store(em.value_at(init, []), slot)
            accs.append(slot)

        def inner(red_idx):
            full = [None] * in_t.rank
            for d, i in zip(kept, out_idx):
                full[d] = i
            for d, i in zip(dims, red_idx):
                full[d] = i
            elems = [em.value_at(v, full) for v in inputs]
            new = em.region_scalars(region, [b.load(a) for a in accs] + elems)
            for a, v in zip(accs, new):
                b.store(v, a)

        em.loop_nest([in_t.shape[d] for d in dims], inner)
        for a, r, t in zip(accs, op.results, out_ts):
            S.store(b, b.load(a), em.element_ptr(ctx.buffer(r), t.element_type, em.linear(out_idx, t.shape)),
                    t.element_type)

    em.loop_nest(list(out_ts[0].shape), body)


def _check_dot(op: Operation) -> None:
    for v in list(op.operands) + list(op.results):
        S.reg_type(_ty(v).element_type)  # raises Unsupported for types without registers


@element_mapper("stablehlo.real", "stablehlo.imag")
def real_imag_at(em, op: Operation, idx):
    """real/imag of a complex element; of a real element: itself / zero."""
    v = op.operands[0]
    et = _ty(v).element_type
    x = em.value_at(v, idx)
    if not et.is_complex:
        return x if op.name == "stablehlo.real" else S.constant(et, 0)
    return em.b.extract_value(x, 0 if op.name == "stablehlo.real" else 1)


@element_mapper("stablehlo.complex")
def complex_at(em, op: Operation, idx):
    """complex(re, im) element."""
    from axle.backends.cpu.scalar_ops import make
    t = S.reg_type(_ty(op.results[0]).element_type)
    return make(em.b, t, em.value_at(op.operands[0], idx), em.value_at(op.operands[1], idx))


@kernel("stablehlo.dot_general", memory_operands=True, check=_check_dot)
def emit_dot(ctx: Context, op: Operation) -> None:
    em, b = ctx.em, ctx.b
    lhs, rhs = op.operands
    lt, rt_, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    dn = op.attr("dot_dimension_numbers")
    lb, rb = dn["lhs_batching_dimensions"], dn["rhs_batching_dimensions"]
    lc, rc = dn["lhs_contracting_dimensions"], dn["rhs_contracting_dimensions"]
    lfree = [d for d in range(lt.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rt_.rank) if d not in rb and d not in rc]
    oet = ot.element_type
    acc_et = (f32 if oet.bitwidth <= 32 else oet) if oet.is_float else oet  # complex: itself
    add, mul = RULES["stablehlo.add"], RULES["stablehlo.multiply"]
    dst = ctx.buffer(op.results[0])

    def body(oidx):
        nb = len(lb)
        bidx, li, ri = oidx[:nb], oidx[nb:nb + len(lfree)], oidx[nb + len(lfree):]
        acc = em.alloca(S.reg_type(acc_et))
        b.store(S.constant(acc_et, 0), acc)

        def inner(cidx):
            lfull, rfull = [None] * lt.rank, [None] * rt_.rank
            for dims, idx, full in ((lb, bidx, lfull), (rb, bidx, rfull), (lfree, li, lfull),
                                    (rfree, ri, rfull), (lc, cidx, lfull), (rc, cidx, rfull)):
                for d, i in zip(dims, idx):
                    full[d] = i
            x = convert(em, lt.element_type, acc_et, em.value_at(lhs, lfull))
            y = convert(em, rt_.element_type, acc_et, em.value_at(rhs, rfull))
            b.store(add(em, acc_et, [b.load(acc), mul(em, acc_et, [x, y], op)], op), acc)

        em.loop_nest([lt.shape[d] for d in lc], inner)
        out = S.finish(b, convert(em, acc_et, oet, b.load(acc)), oet)
        S.store(b, out, em.element_ptr(dst, oet, em.linear(oidx, ot.shape)), oet)

    em.loop_nest(list(ot.shape), body)
