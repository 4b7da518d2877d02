"""Emission of one block from its plan (plan.py): buffers for the results of each kernel
in schedule order (written into a result buffer, taken over from an operand that dies
there, or a temporary from the allocator), the kernel itself, then the release of the
temporaries whose last reader it was. Decisions are the plan's; the allocator places
temporaries at offsets (kernels ask for scratch of their own as they are emitted) and the
buffer assignment (ctx.buffer_plan) records where everything went.
"""
from __future__ import annotations

from typing import Optional

from axle.backends.cpu import status
from axle.backends.cpu.abi import BufRef
from axle.codegen.emitter import _ty
from axle.backends.cpu.plan import plan_block
from axle.backends.cpu.program import KernelInfo
from axle.backends.cpu.registry import emitter_of
from axle.ir.core import Block
from axle.limits import check_compile_time


def emit_planned_block(ctx, block: Block, results_into: Optional[list], level: int) -> list:
    """Plan and emit a block's ops; returns its terminator's operands."""
    plan = plan_block(ctx, block, results_into, level)
    top = level == 0 and results_into is not None
    if top and ctx.aliases:
        ctx.aliases = plan.aliases
    ctx.row_fusions.update(plan.fusion.row_fusions)  # what the loop and pooling kernels read
    ctx.conv_rows.update(plan.fusion.conv_rows)
    if ctx.plans is not None:
        ctx.plans.blocks.append(plan.fusion)
        if top:
            ctx.plans.schedules.append((plan.fusion, plan.schedule))
    ret = block.operations[-1]
    targets = plan.targets
    if top:
        ctx._result_pools([None if k in ctx.aliases else d for k, d in enumerate(results_into)],
                          list(ret.operands), plan.first_write)
    saved, ctx.block_plan = ctx.block_plan, plan
    try:
        for k, (op, fk) in enumerate(zip(plan.kernels, plan.fusion.kernels)):
            _buffers_for(ctx, plan, op, k)
            fk.index = len(ctx.kernels)
            ctx.kernels.append(KernelInfo(len(ctx.kernels), op, fk.fused, fk.inputs, depth=level, kind=fk.kind))
            timer = ctx.timer if level == 0 else None
            if timer is not None:
                timer.start()
            emit = emitter_of(op)
            if _views_operand(ctx, plan, op):
                emit = _nothing
            if level == 0:
                check_compile_time(f"kernel {len(ctx.kernels) - 1} ({op.name})")
            if level == 0 and ctx.split_kernels:
                with ctx.kernel_function(f"k{len(ctx.kernels) - 1}.{op.name.split('.')[-1]}"):
                    emit(ctx, op)
            else:
                emit(ctx, op)
            if timer is not None:
                timer.stop()
            if level == 0 and ctx.host_callbacks:  # a callback raised: stop now (status.py)
                status.return_if_failed(ctx)
            # buffer assignment: a temporary whose last reader has run can be reused
            for v in plan.last_read.get(op, ()):
                if v not in targets and v not in ret.operands:
                    ctx.release(v)
    finally:
        ctx.block_plan = saved
    for v, dst in plan.copies:
        ctx.copy(v, dst)
    return list(ret.operands)


def _buffers_for(ctx, plan, op, k: int) -> None:
    """Give each result of kernel op (position k in its block's schedule) its buffer."""
    targets, until = plan.targets, plan.until
    shared = plan.in_place.get(op)
    if shared is not None and shared not in ctx._offsets:
        shared = None  # only a temporary of this block can be taken over
    if shared is not None and until is not None:
        pool = ctx.pools[ctx._offsets[shared][0]]
        if pool.free_until <= until.get(op.results[0], k):
            shared = None  # the result would outlive the room in a result buffer
    bufs = ctx.em.buffers
    record = ctx.buffer_plan
    for r in op.results:
        if ctx.has_buffer(r):
            continue
        last = until.get(r, k) if until is not None else None
        if shared is not None:  # the result overwrites its operand's temporary
            bufs[r] = bufs.raw(shared)
            slot, off = ctx._offsets.pop(shared)
            ctx._offsets[r] = (slot, off)
            pool = ctx.pools[slot]
            pool.live[off] = (pool.live[off][0], r)
            record.add(value=r, place="temporary", size=pool.live[off][0], slot=slot, offset=off, start=k,
                       end=last, depth=plan.level, shares=shared, kernel=len(ctx.kernels))
            continue
        src = _invariant_source(ctx, plan, r)
        if src is not None:  # a while's pass-through carry, a reshape: its operand's buffer
            ref = bufs.raw(src)
            bufs[r] = ref
            record.add(value=r, place="shared", slot=ref.slot, offset=ref.offset, start=k, end=last,
                       depth=plan.level, shares=src, kernel=len(ctx.kernels))
            continue
        dst = targets.get(r)
        if dst is not None:
            bufs[r] = dst
            src = next((v for v, d in targets.items() if d is dst and v is not r and v in bufs), None)
            record.add(value=r, place="result", slot=getattr(dst, "slot", None), offset=getattr(dst, "offset", 0),
                       start=k,
                       depth=plan.level, shares=src, kernel=len(ctx.kernels))
            continue
        bufs[r] = ctx.temp_ref(_ty(r), r, until=last)
        entry = record.of.get(r)
        if entry is not None:
            entry.start, entry.end, entry.depth, entry.kernel = k, last, plan.level, len(ctx.kernels)


def _nothing(ctx, op) -> None:
    """The kernel of a value that is its operand's bytes already."""


def _views_operand(ctx, plan, op) -> bool:
    """Whether op's kernel has nothing to do: its one result holds its one operand's bytes
    (plan.invariant, e.g. a row-major reshape) and was given that operand's buffer. Ops with
    regions run them (a loop's effects and termination), whatever their results."""
    if len(op.results) != 1 or len(op.operands) != 1 or op.regions:
        return False
    r = op.results[0]
    return plan.invariant.get(r) is op.operands[0] and ctx.same_buffer(r, op.operands[0])


def _invariant_source(ctx, plan, r):
    """The operand whose buffer result r shares (plan.invariant: a while loop's pass-through
    carry, a reshape), when that buffer is
    a table buffer (valid in every function) that nothing writes while r is live: not a
    constant's global, not a result buffer r is to be written into, not a donated argument."""
    v = plan.invariant.get(r)
    if v is None or r in plan.targets or v not in ctx.em.buffers:
        return None
    ref = ctx.em.buffers.raw(v)
    if not isinstance(ref, BufRef) or ref.slot in set(ctx.aliases.values()):
        return None
    return v
