"""The plan of one block, computed before any of its code is emitted: fusion (fusion.py),
schedule (scheduling.py), and the buffer decisions that follow from them — which values
are written straight into the block's result buffers, in-place reuse (inplace.py),
donation (aliasing.py), live ranges. block.py emits the block by reading it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from axle.backends.cpu.abi import BufRef
from axle.backends.cpu.fusion import (fusion_plan, kernels_of, materialized, plan_pooled_convolutions,
                                      plan_row_fusion)
from axle.backends.cpu.inplace import in_place_operand, share_loop_invariants
from axle.backends.cpu.registry import check_supported
from axle.backends.cpu.scheduling import schedule_block
from axle.codegen.plans.fusion import FusionPlan
from axle.codegen.plans.graph import last_readers, op_deps
from axle.codegen.plans.schedule import Schedule
from axle.ir.core import Block, Operation


@dataclass(eq=False)
class BlockPlan:
    block: Block
    level: int
    fusion: FusionPlan
    schedule: Schedule
    kernels: list  # the kernel ops in run order
    targets: dict  # value -> the buffer (BufRef) it is written into directly
    copies: list  # (value, buffer): returned values copied into their result buffer at the end
    last_read: dict  # kernel op -> the materialized values whose last reader it is
    in_place: dict = field(default_factory=dict)  # kernel op -> operand whose temporary its result may take
    until: Optional[dict] = None  # top level: value -> position of the last kernel reading it
    first_write: dict = field(default_factory=dict)  # top level: result slot -> position first written
    aliases: dict = field(default_factory=dict)  # top level: accepted donations {result k: argument j}
    invariant: dict = field(default_factory=dict)  # result -> operand whose buffer it may share (while, reshape)


def plan_block(ctx, block: Block, results_into: Optional[list], level: int) -> BlockPlan:
    """Plan `block`: `results_into[k]`, when given, is the buffer the k-th returned value is
    written to (directly by its producer when possible, else by a copy)."""
    check_supported(block)
    ops = block.operations[:-1]
    ret = block.operations[-1]
    uses: dict = {}
    for op in block.operations:
        for v in op.operands:
            uses[v] = uses.get(v, 0) + 1
    targets: dict = {}
    copies = []
    for k, v in enumerate(ret.operands):
        dst = results_into[k] if results_into is not None else None
        if dst is None:
            continue
        owner = getattr(v, "owner", None)
        if v in targets or not isinstance(owner, Operation) or owner.parent is not block \
                or (owner.name == "stablehlo.constant"):
            copies.append((v, dst))
        else:
            targets[v] = dst
    want = materialized(ops, block, targets, set(ret.operands) if results_into is None else set(), uses)
    top = level == 0 and results_into is not None  # the program's own block
    row_fusions: dict = {}
    conv_rows: dict = {}
    if top:
        returned = set(ret.operands)
        conv_rows = plan_pooled_convolutions(ops, want, targets, returned, block, uses)
        want, row_fusions = plan_row_fusion(ops, want, targets, returned, block, uses)
    kernels = kernels_of(ops, want)
    ops, schedule = schedule_block(ops, kernels, want, block, targets, ret, enabled=top)
    kernels = kernels_of(ops, want)
    last_read = last_readers(kernels, want, block)
    # a while loop's pass-through carries and reshapes live in their operands' buffers
    # (before the in-place decisions below, which read the live ranges this extends)
    invariant = share_loop_invariants(kernels, want, block, last_read)
    sharers: dict = {}  # value -> the values that may share its buffer
    for r in invariant:
        v = r
        while v in invariant:
            v = invariant[v]
            sharers.setdefault(v, set()).add(r)
    memo: dict = {}

    def overwrites_shared(op, v) -> bool:
        """Whether kernel op, taking over v's buffer, also reads a value sharing that buffer
        (at positions other than those it writes, perhaps)."""
        return v in sharers and bool(op_deps(op, want, block, memo) & sharers[v])
    aliases: dict = {}
    # in place: an elementwise kernel whose result is returned lets the producer of an
    # operand it reads only at the same index (and last) write straight into the result
    # buffer, and then overwrites it element by element (XLA's in-place elementwise
    # buffer sharing; e.g. a weight update w - lr * dot(...) needs no temporary)
    if top and ctx.aliases:  # donated arguments: which results may be written into them
        from axle.backends.cpu.aliasing import plan_aliases
        aliases = plan_aliases(ctx, block, ops, want, targets, ret, results_into, ctx.aliases)
    alias_slots = set(aliases.values()) if top else set()
    # in a loop body, only into the scratch buffers the body's results go to before they
    # are copied back (ctx.fresh_results, set by the while kernel): a carried buffer that
    # a result is written into directly still holds the carry the body reads
    fresh = ctx.__dict__.pop("fresh_results", None) or set()
    if level == 0 or fresh:
        for op in ops:
            if op.results and op.results[0] in targets and getattr(
                    targets[op.results[0]], "slot", None) not in alias_slots \
                    and (level == 0 or targets[op.results[0]] in fresh):
                v = in_place_operand(op, want, block, last_read)
                if v is not None and v not in targets and v not in ret.operands and not overwrites_shared(op, v):
                    targets[v] = targets[op.results[0]]
    plan = BlockPlan(block, level, fusion_plan(block, level, want, kernels, row_fusions, conv_rows),
                     schedule, kernels, targets, copies, last_read, aliases=aliases, invariant=invariant)
    for op in kernels:
        if op.results and op.results[0] not in targets:
            shared = in_place_operand(op, want, block, last_read)
            if shared is not None and not overwrites_shared(op, shared):
                plan.in_place[op] = shared
    if top:
        until: dict = {}
        for k, op in enumerate(kernels):
            for r in op.results:
                until[r] = k
            for v in last_read.get(op, ()):
                until[v] = max(until.get(v, k), k)
        plan.until = until
        for k, op in enumerate(kernels):
            for r in op.results:
                dst = targets.get(r)
                if isinstance(dst, BufRef) and dst.slot not in plan.first_write:
                    plan.first_write[dst.slot] = k
    return plan
