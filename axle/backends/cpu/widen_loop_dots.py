"""Pass "cpu-widen-loop-dots": a bf16 / f16 dot_general inside a while loop, one of whose
operands is defined outside the loop (a weight of an RNN cell in a scan), becomes converts
to f32, an f32 dot and a convert of the result; while-licm (run after it) then moves the
weight's convert out of the loop.

The CPU's dot kernel for these types widens both operands to f32 in scratch and calls the
f32 GEMM (blas.py): inside a loop that is a conversion of the whole weight on every trip
(a bf16 GRU over 32 steps of 16 rows, 256 x 256 weights: 40 of the 75 us of each of its six
dots per trip). Exactness: bf16 and f16 widen to f32 exactly, a product of two is exact in
f32 and the sums run in f32 either way; the result is rounded once, as the kernel rounds
it. Dots outside loops, and dots whose operands both change per trip, are left to the
kernel (no buffer for the widened operands)."""
from __future__ import annotations

from axle.ir.core import Module, Operation
from axle.ir.types import TensorType, element_type
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder
from axle.passes.while_licm import defined_inside

_LOW = ("bf16", "f16")


def _loop_of(op: Operation):
    """The innermost while loop op is nested in (None if none)."""
    block = op.parent
    while block is not None:
        up = block.parent_op
        if up is None:
            return None
        if up.name == "stablehlo.while":
            return up
        block = up.parent
    return None


def _rewrite(op: Operation) -> bool:
    if len(op.operands) != 2 or not all(isinstance(v.type, TensorType) and v.type.is_static
                                        for v in (*op.operands, op.results[0])):
        return False
    names = [v.type.element_type.name for v in (*op.operands, op.results[0])]
    if not any(n in _LOW for n in names[:2]) or not all(n in _LOW + ("f32",) for n in names):
        return False
    loop = _loop_of(op)
    if loop is None or all(defined_inside(v, loop) for v in op.operands):
        return False
    f32 = element_type("f32")
    b = Builder.before(op)
    wide = [v if v.type.element_type == f32 else
            b.create("stablehlo.convert", [v], [TensorType(v.type.shape, f32)]).result for v in op.operands]
    rt = op.results[0].type
    attrs = {k: v for k, v in op.attributes.items() if k != "algorithm"}
    dot = b.create(op.name, wide, [TensorType(rt.shape, f32)], attrs, regions=[])
    out = dot.result if rt.element_type == f32 else b.create("stablehlo.convert", [dot.result], [rt]).result
    op.results[0].replace_all_uses_with(out)
    op.erase()
    return True


class CpuWidenLoopDots(Pass):
    """Pass 'cpu-widen-loop-dots' (see the module docstring)."""

    name = "cpu-widen-loop-dots"

    def run(self, module: Module) -> bool:
        changed = False
        for op in [o for o in module.walk() if o.name in ("stablehlo.dot_general", "stablehlo.dot")]:
            changed = _rewrite(op) or changed
        return changed
