"""The CPU backend's schedule of its top-level kernels (codegen/plans/schedule.py).

Only the entry function's block is reordered (bodies of control flow run in program
order). Temporaries are the materialized values that are neither written into a result
buffer nor returned; ops with effects keep their relative order.
"""
from __future__ import annotations

from axle.codegen.emitter import _ty
from axle.codegen.plans.arena import nbytes
from axle.codegen.plans.graph import op_deps
from axle.codegen.plans.schedule import Schedule, list_schedule
from axle.ir.core import Block, Operation
from axle.ir.ops import COLLECTIVE, HOST_IO, names_with

SCHEDULE = True  # order the top-level kernels for low peak memory
# ops whose relative order is observable (tokens are stripped before code generation)
# ops whose order relative to each other is observable: host I/O and collectives (op-table
# traits), custom calls (they may do anything), rng (its state) and optimization barriers
EFFECTS = frozenset(names_with(HOST_IO) | names_with(COLLECTIVE)
                    | {"stablehlo.custom_call", "stablehlo.rng", "stablehlo.optimization_barrier"})


def effectful(op: Operation) -> bool:
    """Whether op's order relative to other such ops is observable."""
    return not op.results or any(o.name in EFFECTS or (o is not op and o.name == "func.call") for o in op.walk())


def schedule_block(ops: list, kernels: list, want: set, block: Block, targets: dict, ret: Operation,
                   enabled: bool = True) -> tuple[list, Schedule]:
    """(the block's ops in run order, the Schedule of its kernels). Ops computed inside
    kernels (fused) keep their places after the kernels; only kernels move."""
    if not enabled or not SCHEDULE:
        return ops, Schedule(kernels, kernels, "program order (scheduling off)")
    memo: dict = {}
    returned = set(ret.operands)
    reads = {k: op_deps(k, want, block, memo) for k in kernels} if len(kernels) >= 3 else {}
    size: dict = {}
    for k in kernels if reads else ():
        for r in k.results:
            if r in want and r not in targets and r not in returned and _ty(r).is_static:
                size[r] = nbytes(_ty(r))
    sched = list_schedule(kernels, reads, size, effectful)
    if not sched.reordered:
        return ops, sched
    index = set(kernels)
    return sched.order + [op for op in ops if op not in index], sched
