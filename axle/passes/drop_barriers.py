"""Pass "drop-optimization-barriers": each `optimization_barrier` becomes its operands.

A barrier only forbids optimizations that move computations across it; its results are
its operands. Run it after every pass that must respect barriers (a backend's lowering
part of its pipeline): code generated afterwards keeps program order anyway. After this
pass no `optimization_barrier` remains.
"""
from __future__ import annotations

from axle.ir.core import Module, Operation
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Patterns, apply_patterns

PATTERNS = Patterns("drop-optimization-barriers", erase_replaced=("stablehlo.optimization_barrier",))


@PATTERNS.on("stablehlo.optimization_barrier")
def _barrier(op: Operation, b):
    return list(op.operands)


@register_pass
class DropOptimizationBarriers(Pass):
    """Pass 'drop-optimization-barriers' (see the module docstring)."""

    name = "drop-optimization-barriers"

    def run(self, module: Module) -> bool:
        if not any(op.name == "stablehlo.optimization_barrier" for op in module.walk()):
            return False
        return apply_patterns(module, PATTERNS)
