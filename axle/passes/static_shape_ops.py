"""Pass "static-shape-ops": dynamic shape ops with known shapes become their static forms.

`get_dimension_size` of a static dimension becomes a constant; `dynamic_iota`,
`dynamic_broadcast_in_dim`, `dynamic_reshape`, `dynamic_pad`, `real_dynamic_slice`,
`dynamic_gather` and `dynamic_conv` whose shape operands are constants become `iota`,
`broadcast_in_dim`, `reshape`, `pad`, `slice`, `gather` and `convolution` (the patterns of
refine-shapes, passes/refine_shapes.py), and result types are refined from their operands
where that made them static. An op whose static form the spec forbids (shape inference
raises: a program that breaks the spec once its shapes are known) is left as it is, for
the specialization of shapes (refine-shapes) to report, as it did before this pass ran.

Unlike refine-shapes it runs no folding or dead-code elimination of its own, so it may run
late in a pipeline (a backend's lowering part) without changing anything else. What stays
dynamic (shapes only known at run time) is left alone; a backend that needs static shapes
refuses it.
"""
from __future__ import annotations

from axle.ir.core import Module
from axle.ir.shape_inference import InferenceError
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.refine_shapes import PATTERNS as _REFINE, refine_types
from axle.passes.rewrite import Patterns, apply_patterns

OPS = ("stablehlo.get_dimension_size", "stablehlo.dynamic_iota", "stablehlo.dynamic_broadcast_in_dim",
       "stablehlo.dynamic_reshape", "stablehlo.dynamic_pad", "stablehlo.real_dynamic_slice",
       "stablehlo.dynamic_gather", "stablehlo.dynamic_conv")


def _guarded(pattern):
    def run(op, b):
        start = b.index
        try:
            return pattern(op, b)
        except InferenceError:  # the static form breaks the spec: keep the op (and nothing built)
            del b.block.operations[start:b.index]
            b.index = start
            return None
    run.__name__ = pattern.__name__
    return run


PATTERNS = Patterns("static-shape-ops", _REFINE.erase_replaced)
for _name, _patterns in _REFINE.table.items():
    for _p in _patterns:
        PATTERNS.on(_name)(_guarded(_p))


@register_pass
class StaticShapeOps(Pass):
    """Pass 'static-shape-ops' (see the module docstring)."""

    name = "static-shape-ops"

    def run(self, module: Module) -> bool:
        if not any(op.name in OPS for op in module.walk()):
            return False
        changed = apply_patterns(module, PATTERNS)
        if changed:
            refine_types(module)
        return changed
