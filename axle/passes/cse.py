"""Common subexpression elimination (pass "cse").

Guarantees: two pure ops (rewrite.is_pure) without regions, with the same name, the
same operands (in any order for COMMUTATIVE ops), equal attributes and equal result
types compute the same values; the later one is replaced by the earlier one. Scoped
like SSA visibility: an op inside a region may reuse a value of an enclosing block,
never the other way round. Side-effecting ops never merge. Leaves the dead duplicates
to be removed here directly (they are erased once replaced).
"""
from __future__ import annotations

from collections import Counter

from axle.ir.core import Block, Module
from axle.ir.ops import COMMUTATIVE, lookup
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import is_pure


def _key(op):
    d = lookup(op.name)
    if d is not None and d.has(COMMUTATIVE):
        ops = op.operands
        if len(ops) == 2 and ops[0] is not ops[1]:
            operands = frozenset(ops)  # {a, b}: (a, b) and (b, a) alike
        else:
            operands = frozenset(Counter(ops).items())  # the operands as a multiset
    else:
        operands = tuple(op.operands)  # Values hash by identity
    attrs = tuple(sorted(op.attributes.items(), key=lambda kv: kv[0]))
    return (op.name, operands, attrs, tuple(op.result_types))


@register_pass
class CSE(Pass):
    name = "cse"

    def run(self, module: Module) -> bool:
        self.changed = False
        for fn in module.functions.values():
            if not fn.is_declaration:
                self._block(fn.body, [{}])
        return self.changed

    def _block(self, block: Block, scopes: list) -> None:
        scope: dict = {}
        scopes = scopes + [scope]
        keep = []
        for op in block.operations:
            for r in op.regions:
                for b in r.blocks:
                    self._block(b, scopes)
            if op.regions or not op.results or not is_pure(op):
                keep.append(op)
                continue
            k = _key(op)
            prev = next((s[k] for s in reversed(scopes) if k in s), None)
            if prev is not None:
                for a, b in zip(op.results, prev.results):
                    a.replace_all_uses_with(b)
                self.changed = True
                continue
            scope[k] = op
            keep.append(op)
        if len(keep) != len(block.operations):
            block.operations[:] = keep
