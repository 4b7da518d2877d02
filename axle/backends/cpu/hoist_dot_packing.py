"""Pass "cpu-hoist-dot-packing": a loop-invariant dot operand packed on every trip, packed
once before the loop.

A dot_general whose operand's dimensions are not in an order BLAS reads (the exchange
term of a Hartree-Fock step, einsum("ikjl,kl->ij", eri, D): contracting dimensions 1 and 3
of a [32, 32, 32, 32] tensor) goes through kernels_dot_packed.py, which copies that
operand into scratch in GEMM order, one pass over it per call. In a loop body reading a
value from outside the loop (a weight, an integral tensor), that copy is the same on
every trip: in the SCF loop, 4 MiB copied per trip, twice the time of the product. Here
such an operand is transposed into the order the packed path would copy it to, by a
transpose placed before the outermost loop it is invariant in; the dot reads that, in
place. Memory: the transposed copy lives across the loop (XLA's layout assignment makes
the same trade by giving the operand another physical layout).

Only dots the packed path takes (not the low-precision, skinny or plain BLAS kernels'),
operands of the dot's own compute type (a widening convert would be another copy kept)
and of at least MIN_BYTES."""
from __future__ import annotations

from typing import Optional

from axle.ir import attributes as A
from axle.ir.core import Module, Operation
from axle.ir.types import TensorType
from axle.passes import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder, transposed
from axle.passes.while_licm import defined_inside

MIN_BYTES = 64 << 10
LOOPS = ("stablehlo.while",)


def _loops_around(op: Operation) -> list:
    """The loops op is nested in, innermost first."""
    out = []
    blk = op.parent
    while blk is not None and blk.parent_op is not None:
        p = blk.parent_op
        if p.name in LOOPS:
            out.append(p)
        blk = p.parent
    return out


def _order(op: Operation, which: int) -> Optional[list]:
    """The dimension order operand `which` is packed in by the packed path, or None when it
    is read in place (or the dot is not the packed path's)."""
    from axle.backends.cpu import blas
    from axle.backends.cpu.kernels_dot_lowp import lowp_plan
    from axle.backends.cpu.kernels_dot_packed import _operand_layout, packed_plan
    from axle.backends.cpu.kernels_dot_skinny import skinny_plan
    if lowp_plan(op) is not None or skinny_plan(op) is not None or blas.gemm_shape(op) is not None:
        return None
    plan = packed_plan(op)
    if plan is None:
        return None
    v = op.operands[which]
    if str(v.type.element_type) != plan["ct"]:
        return None
    dims = plan["lhs"] if which == 0 else plan["rhs"]
    flipped, in_place = _operand_layout(v.type, plan["ct"], dims)
    if in_place:
        return None
    bd, a, b_ = (list(d) for d in dims)
    return bd + (b_ + a if flipped else a + b_)


def _renumbered(op: Operation, which: int, order: list) -> A.StructAttr:
    """op's dot_dimension_numbers with operand `which`'s dimensions renumbered by order."""
    dn = op.attr("dot_dimension_numbers")
    side = "lhs" if which == 0 else "rhs"
    fields = []
    for name in ("lhs_batching_dimensions", "rhs_batching_dimensions",
                 "lhs_contracting_dimensions", "rhs_contracting_dimensions"):
        dims = [int(d) for d in dn[name]]
        if name.startswith(side):
            dims = [order.index(d) for d in dims]
        if dims or "contracting" in name:
            fields.append((name, A.ArrayAttr(tuple(A.IntegerAttr(d) for d in dims))))
    return A.StructAttr("stablehlo.dot", tuple(fields))


@register_pass
class CpuHoistDotPacking(Pass):
    """Pass 'cpu-hoist-dot-packing' (see the module docstring)."""

    name = "cpu-hoist-dot-packing"

    def run(self, module: Module) -> bool:
        changed = False
        for op in [o for o in module.walk() if o.name == "stablehlo.dot_general"]:
            loops = _loops_around(op)
            if not loops:
                continue
            for which in (0, 1):
                v = op.operands[which]
                t = v.type
                if not isinstance(t, TensorType) or not t.is_static or t.rank < 2 \
                        or t.num_elements * t.element_type.bitwidth // 8 < MIN_BYTES:
                    continue
                outer = [lp for lp in loops if not defined_inside(v, lp)]
                if not outer or outer[0] is not loops[0]:
                    continue  # computed in the innermost loop: not invariant there
                order = _order(op, which)
                if order is None:
                    continue
                hoisted = transposed(Builder.before(outer[-1]), v, order)
                attrs = dict(op.attributes)
                attrs["dot_dimension_numbers"] = _renumbered(op, which, order)
                operands = list(op.operands)
                operands[which] = hoisted
                new = Builder.before(op).create(op.name, operands, [r.type for r in op.results], attrs)
                op.results[0].replace_all_uses_with(new.results[0])
                op.erase()
                op = new
                changed = True
        return changed
