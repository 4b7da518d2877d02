"""Deep copies of operations, regions and modules.

A copy shares no Operation, Block, Region or Value with the original; attributes and types
are immutable and shared. Locations, source positions, result name hints, block labels and
argument locations are kept, so a cloned module prints identically. Walks with an explicit
stack (nested regions of any depth).
"""
from __future__ import annotations

from axle.ir.core import Block, Module, Operation, Region


def _copy_op(op: Operation, mapping: dict) -> Operation:
    """`op` without its regions, operands renamed through `mapping`; records its results."""
    new = Operation(op.name, [mapping.get(v, v) for v in op.operands], op.result_types,
                    op.attributes, location=op.location)
    new.source = op.source
    for r_old, r_new in zip(op.results, new.results):
        r_new.name_hint = r_old.name_hint
        mapping[r_old] = r_new
    return new


def _copy_block_shell(block: Block, mapping: dict) -> Block:
    nb = Block()
    nb.label = block.label
    for a in block.arguments:
        mapping[a] = nb.add_argument(a.type, a.name_hint, a.location)
    return nb


def clone_op(op: Operation, mapping: dict) -> Operation:
    """A deep copy of `op`. `mapping` (old Value -> new Value) renames operands defined
    outside `op` and is extended with every value defined inside it."""
    root = _copy_op(op, mapping)
    if op.regions:
        _clone_regions_into(op, root, mapping)
    return root


def _clone_regions_into(old: Operation, new: Operation, mapping: dict) -> None:
    # iterative: a stack of (old op, new op) whose regions are still to copy, depth first
    # so that values of outer blocks are mapped before nested ops read them
    work = [(old, new)]
    while work:
        o, n = work.pop()
        for region in o.regions:
            nr = n.add_region(Region())
            for block in region.blocks:
                nb = nr.add_block(_copy_block_shell(block, mapping))
                for inner in block.operations:
                    c = _copy_op(inner, mapping)
                    nb.append(c)
                    if inner.regions:
                        work.append((inner, c))


def clone_ops(ops, mapping: dict) -> list[Operation]:
    """Deep copies of `ops` (in order); `mapping` is as for clone_op."""
    return [clone_op(op, mapping) for op in ops]


def clone_region(region: Region, mapping: dict) -> Region:
    """A deep copy of `region`; `mapping` is as for clone_op."""
    r = Region()
    for block in region.blocks:
        nb = r.add_block(_copy_block_shell(block, mapping))
        for op in block.operations:
            nb.append(clone_op(op, mapping))
    return r


def clone_module(module: Module) -> Module:
    """A deep copy of `module` (see the module docstring)."""
    new = Module(module.name, dict(module.attributes), module.location)
    new.filename = module.filename
    mapping: dict = {}
    for op in module.body.operations:
        new.append(clone_op(op, mapping))
    return new
