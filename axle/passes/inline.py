"""Inlining of `func.call`.

Guarantees: every `func.call` whose callee has a body and is not (directly or
indirectly) recursive is replaced by a copy of the callee's body, at any nesting depth
(calls inside while/reduce/... regions included); afterwards, private functions that
nothing refers to any more (no call, no composite decomposition, no run_parallel program,
no other symbol reference) are erased. Public functions stay.
Leaves alone: calls of declarations (no body) and recursive calls.
"""
from __future__ import annotations

from axle.ir import attributes as A
from axle.ir.clone import clone_ops, clone_region  # noqa: F401  (also imported from here)
from axle.ir.core import Module
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass


def _symbol_refs(attr, out: set) -> None:
    if isinstance(attr, A.SymbolRefAttr):
        out.add(attr.path[0])
    elif isinstance(attr, A.ArrayAttr):
        for e in attr.elements:
            _symbol_refs(e, out)
    elif isinstance(attr, A.DictAttr):
        for _, e in attr.entries:
            _symbol_refs(e, out)


def referenced_symbols(module: Module) -> set:
    refs: set = set()
    for op in module.walk():
        if op.name == "func.func":
            continue
        for a in op.attributes.values():
            _symbol_refs(a, refs)
    return refs


def _recursive(module: Module) -> set:
    """Names of functions that can reach themselves through calls."""
    calls = {}
    for name, fn in module.functions.items():
        calls[name] = {op.attributes["callee"].name for op in fn.walk() if op.name == "func.call"}
    bad = set()
    for start in calls:
        stack, seen = list(calls[start]), set()
        while stack:
            n = stack.pop()
            if n == start:
                bad.add(start)
                break
            if n in seen:
                continue
            seen.add(n)
            stack.extend(calls.get(n, ()))
    return bad


@register_pass
class Inline(Pass):
    name = "inline"

    def run(self, module: Module) -> bool:
        fns = module.functions
        recursive = _recursive(module)
        changed = False
        progress = True
        while progress:
            progress = False
            for op in list(module.walk()):
                if op.name != "func.call":
                    continue
                callee = fns.get(op.attributes["callee"].name)
                if callee is None or callee.is_declaration or callee.sym_name in recursive:
                    continue
                block = op.parent
                mapping = dict(zip(callee.body.arguments, op.operands))
                body = clone_ops(callee.body.operations, mapping)
                ret = body.pop()  # func.return
                at = block.operations.index(op)
                for k, new in enumerate(body):
                    block.insert(at + k, new)
                for r, v in zip(op.results, ret.operands):
                    r.replace_all_uses_with(v)
                ret.drop_all_references()  # the copied return is not kept
                op.erase()
                changed = progress = True
        refs = referenced_symbols(module)
        calls = {op.attributes["callee"].name for op in module.walk() if op.name == "func.call"}
        for fn in list(module.functions.values()):
            if fn.visibility == "private" and fn.sym_name not in refs and fn.sym_name not in calls:
                module.operations.remove(fn)
                changed = True
        return changed
