"""Pass "forward-tuples": tuples built only to be taken apart again disappear.

After this pass no `get_tuple_element` reads a `tuple` op directly (it is replaced by the
tuple's operand at its index), and no `tuple` op without users remains. Tuples that are
passed on (function arguments and results, calls, custom calls) are left alone; so are
`get_tuple_element`s of anything other than a `tuple` op.

It changes no value the program computes: `get_tuple_element(tuple(x0, .., xn), i)` is xi.
The CPU backend's pipeline runs it so that tuples need no buffers.
"""
from __future__ import annotations

from axle.ir.core import Module, Operation
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Patterns, apply_patterns, walk_blocks

PATTERNS = Patterns("forward-tuples")


@PATTERNS.on("stablehlo.get_tuple_element")
def _tuple_element(op: Operation, b):
    src = getattr(op.operands[0], "owner", None)
    if not isinstance(src, Operation) or src.name != "stablehlo.tuple":
        return None
    return [src.operands[op.attr("index")]]


def drop_unused(module: Module, names: tuple) -> bool:
    """Erase the ops called one of `names` none of whose results is read (repeatedly: an op
    whose only reader went is erased next); returns whether any was erased."""
    changed_any = False
    while True:
        changed = False
        for block in walk_blocks(module):
            keep = []
            for op in block.operations:
                if op.name in names and all(r.use_empty() for r in op.results):
                    changed = True
                    continue
                keep.append(op)
            block.operations[:] = keep
        changed_any |= changed
        if not changed:
            return changed_any


@register_pass
class ForwardTuples(Pass):
    """Pass 'forward-tuples' (see the module docstring)."""

    name = "forward-tuples"

    def run(self, module: Module) -> bool:
        if not any(op.name == "stablehlo.tuple" for op in module.walk()):
            return False
        changed = apply_patterns(module, PATTERNS)
        return drop_unused(module, ("stablehlo.tuple",)) or changed
