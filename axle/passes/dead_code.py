"""Dead code elimination (pass "dce").

Guarantees: every op without side effects (rewrite.is_pure: no SIDE_EFFECT trait, no
calls, loops or collectives, pure regions) whose results are all unused is removed,
in function bodies and in nested regions, until nothing more can go.
Leaves alone: terminators, side-effecting ops, function signatures and block arguments.
"""
from __future__ import annotations

from axle.ir.core import Module
from axle.passes import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import is_pure, use_counts, walk_blocks


@register_pass
class DeadCode(Pass):
    name = "dce"

    def run(self, module: Module) -> bool:
        changed = False
        while True:
            uses = use_counts(module)
            removed = False
            for block in walk_blocks(module):
                keep = []
                for op in block.operations:
                    if op.results and all(uses.get(id(r), 0) == 0 for r in op.results) and is_pure(op):
                        removed = True
                        continue
                    keep.append(op)
                block.operations[:] = keep
            if not removed:
                return changed
            changed = True
