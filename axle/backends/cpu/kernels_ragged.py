"""chlo.ragged_dot (jax.lax.ragged_dot_general) on the CPU backend, as the interpreter
(ops_linalg.py) computes it: lhs's ragged dimension is cut into groups of `group_sizes`
consecutive positions (bounds = 0, then the running sums of the sizes, read at run time).

* ragged free dimension, rhs has a group dimension: an output position in group g is the
  dot with rhs's slice g (the last group containing the position wins, as in the
  interpreter); positions in no group are 0;
* ragged contracting dimension: one result per group (a leading dimension), contracting
  only that group's positions (the others contribute 0 * 0);
* ragged batch dimension: the dot, with 0 for batch positions past the last bound.

Products are summed one at a time in the contracting order, in the dot kernel's
accumulator type (f32 for floats of 32 bits or less), and rounded once.
"""
from __future__ import annotations

from llvmlite import ir

from axle.codegen import scalar as S
from axle.codegen.dot import accumulator_type
from axle.codegen.elemental import index_i64 as _index
from axle.codegen.emitter import _ty
from axle.codegen.scalar import I1
from axle.codegen.scalar_ops import RULES, convert
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.ir.core import Operation


def _dims(op: Operation):
    dn = op.attr("ragged_dot_dimension_numbers")
    get = (lambda k: list(dn.get(k, []))) if isinstance(dn, dict) else (lambda k: list(dn[k]))
    return (get("lhs_batching_dimensions"), get("rhs_batching_dimensions"), get("lhs_contracting_dimensions"),
            get("rhs_contracting_dimensions"), get("lhs_ragged_dimensions"), get("rhs_group_dimensions"))


def _check(op: Operation) -> None:
    lb, rb, lc, rc, ragged, group = _dims(op)
    gt = _ty(op.operands[2])
    et = _ty(op.results[0]).element_type
    if len(ragged) != 1 or len(group) > 1 or gt.rank != 1 or not gt.element_type.is_int:
        raise Unsupported(f"{op.where()}: ragged dimensions {ragged}, group dimensions {group}, "
                          f"group sizes {op.operands[2].type}")
    if et.is_bool:
        raise Unsupported(f"{op.where()}: ragged_dot on {et}")
    S.reg_type(et)
    r = ragged[0]
    if group and r in lb + lc:
        raise Unsupported(f"{op.where()}: a group dimension with a ragged batch/contracting dimension")
    if group and gt.shape[0] == 0:
        raise Unsupported(f"{op.where()}: ragged_dot needs at least one group")
    if not group and r not in lb + lc:
        raise Unsupported(f"{op.where()}: a ragged free dimension needs a group dimension")


@kernel("chlo.ragged_dot", memory_operands=True, check=_check)
def ragged_dot(ctx: Context, op: Operation) -> None:
    em, b = ctx.em, ctx.b
    lhs, rhs, sizes = op.operands
    lt, rt_, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    oet = ot.element_type
    acc_et = accumulator_type(oet)
    lb, rb, lc, rc, (ragged,), group = _dims(op)
    lfree = [d for d in range(lt.rank) if d not in lb + lc]
    rfree = [d for d in range(rt_.rank) if d not in rb + rc + group]
    n_groups = _ty(sizes).shape[0]
    # group bounds, at run time
    bounds = [em.const_i64(0)]
    for g in range(n_groups):
        bounds.append(b.add(bounds[-1], _index(em, sizes, [em.const_i64(g)])))
    add, mul = RULES["stablehlo.add"], RULES["stablehlo.multiply"]
    csizes = [lt.shape[d] for d in lc]
    dst = ctx.buffer(op.results[0])
    mode2 = not group and ragged in lc
    zero = S.constant(acc_et, 0)

    def between(p, g):
        return b.and_(b.icmp_signed(">=", p, bounds[g]), b.icmp_signed("<", p, bounds[g + 1]))

    def group_range(g):
        """(bounds[g], bounds[g + 1]) for a run-time group index g."""
        lo, hi = bounds[0], bounds[1]
        for k in range(1, n_groups):
            at = b.icmp_unsigned("==", g, em.const_i64(k))
            lo, hi = b.select(at, bounds[k], lo), b.select(at, bounds[k + 1], hi)
        return lo, hi

    def body(idx):
        out_idx = idx
        if mode2:
            glo, ghi = group_range(idx[0])
            idx = idx[1:]
        nb, nlf = len(lb), len(lfree)
        bat, lf, rf = idx[:nb], idx[nb:nb + nlf], idx[nb + nlf:]
        lidx = [None] * lt.rank
        ridx = [None] * rt_.rank
        for d, i in zip(lb, bat):
            lidx[d] = i
        for d, i in zip(rb, bat):
            ridx[d] = i
        for d, i in zip(lfree, lf):
            lidx[d] = i
        for d, i in zip(rfree, rf):
            ridx[d] = i
        valid = ir.Constant(I1, 1)
        if group:  # the group of the ragged (free) position: the last one holding it
            p = lidx[ragged]
            gi = em.const_i64(0)
            valid = ir.Constant(I1, 0)
            for g in range(n_groups):
                hit = between(p, g)
                gi = b.select(hit, em.const_i64(g), gi)
                valid = b.or_(valid, hit)
            ridx[group[0]] = gi
        elif not mode2:  # ragged batch dimension
            valid = b.icmp_signed("<", lidx[ragged], bounds[-1])
        acc = em.alloca(S.reg_type(acc_et))
        b.store(zero, acc)

        def term(cidx):
            li, ri = list(lidx), list(ridx)
            for d, e, i in zip(lc, rc, cidx):
                li[d] = i
                ri[e] = i
            x = convert(em, lt.element_type, acc_et, em.value_at(lhs, li))
            y = convert(em, rt_.element_type, acc_et, em.value_at(rhs, ri))
            prod = mul(em, acc_et, [x, y], op)
            if mode2:
                inside = b.and_(b.icmp_signed(">=", i_r := li[ragged], glo), b.icmp_signed("<", i_r, ghi))
                prod = b.select(inside, prod, zero)
            b.store(add(em, acc_et, [b.load(acc), prod], op), acc)

        with b.if_then(valid):
            em.loop_nest(csizes, term)
        out = S.finish(b, convert(em, acc_et, oet, b.load(acc)), oet)
        S.store(b, out, em.element_ptr(dst, oet, em.linear(out_idx, ot.shape)), oet)

    em.loop_nest(list(ot.shape), body)  # (ragged contracting: the group index leads)
