"""Dead code elimination (pass "dce").

Guarantees: every op without side effects (rewrite.is_pure: no SIDE_EFFECT trait, no
calls, loops or collectives, pure regions) whose results are all unused is removed,
in function bodies and in nested regions, until nothing more can go.
Leaves alone: terminators, side-effecting ops, function signatures and block arguments.
"""
from __future__ import annotations

from axle.ir.core import Module
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import is_pure, walk_blocks


def _dead(op) -> bool:
    return bool(op.results) and all(not r._uses for r in op.results) and is_pure(op)


@register_pass
class DeadCode(Pass):
    name = "dce"

    def run(self, module: Module) -> bool:
        changed = False
        while True:
            removed = False
            for block in walk_blocks(module):
                # users stand after their operands: walking backwards, an op dropped here frees
                # the ops it read before they are looked at
                dropped = set()
                for op in reversed(block.operations):
                    if _dead(op):
                        op.drop_all_references()
                        dropped.add(op)
                if dropped:
                    block.operations[:] = [op for op in block.operations if op not in dropped]
                    removed = True
            if not removed:
                return changed
            changed = True
