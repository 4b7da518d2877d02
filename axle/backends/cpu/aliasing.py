"""Input/output aliasing (buffer donation): result k written into argument j's memory.

A program compiled with `aliases={k: j}` is called with the same pointer in argument
slot j and result slot k. That is only correct when nothing reads argument j after its
memory starts being overwritten, so each requested pair is checked here on the scheduled
top-level kernels and accepted only when:

- result k is argument j itself (returned unchanged), a constant, or another argument
  (then it is copied in at the end, after every kernel ran); or
- result k is produced by one top-level kernel P, written straight into its buffer, that
  runs no earlier than every kernel reading argument j, and P reads argument j in place:
  as the `in_place` operand of its kernel (dynamic_update_slice: only the update is
  written) and nowhere else, or, for an elementwise kernel, only at the linear index it
  writes (through elementwise ops and reshapes);
- argument j is not also returned as another result.

An accepted pair's result buffer is the argument's (BufRef(j)), so kernels see the
sharing (`Context.same_buffer`), its memory is never used for temporaries, and no
producer is redirected into it early. A rejected pair is compiled as usual (the output
gets fresh memory) and the reason is kept in `Program.alias_rejections`, as XLA warns
that "some donated buffers were not usable".
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.backends.cpu.abi import BufRef
from axle.backends.cpu.fusion import kernels_of
from axle.backends.cpu.registry import KERNELS, keeps_positions
from axle.codegen.plans.graph import deps, op_deps, reads
from axle.ir.core import Block, Operation
from axle.ir.types import TensorType


def plan_aliases(ctx, block: Block, ops: list, want: set, targets: dict, ret: Operation,
                 results_into: list, aliases: dict) -> dict:
    """The accepted pairs {result k: argument j}; their targets are rewritten to BufRef(j)."""
    emitted = kernels_of(ops, want)
    accepted: dict = {}
    for k, j in sorted(aliases.items()):
        reason = _unsafe(block, emitted, want, targets, ret, results_into, k, j)
        if reason is None:
            accepted[k] = j
        else:
            ctx.alias_rejections.append(f"result {k} cannot reuse argument {j}: {reason}")
    for k, j in accepted.items():
        old = results_into[k]
        for key, dst in list(targets.items()):
            if dst is old:
                targets[key] = BufRef(j)
    return accepted


def _numel(t) -> int:
    return int(np.prod(t.shape, dtype=np.int64))


def _unsafe(block: Block, emitted: list, want: set, targets: dict, ret: Operation,
            results_into: list, k: int, j: int) -> Optional[str]:
    """Why result k may not be written into argument j's memory, or None when it may."""
    if j >= len(block.arguments) or k >= len(ret.operands):
        return "no such argument or result"
    arg, v = block.arguments[j], ret.operands[k]
    at, vt = arg.type, getattr(v, "type", None)
    if not (isinstance(at, TensorType) and isinstance(vt, TensorType)) or at.shape != vt.shape \
            or at.element_type != vt.element_type:
        return f"types differ ({at} vs {vt})"
    if any(x is arg for i, x in enumerate(ret.operands) if i != k):
        return "the argument is also returned as another result"
    if v is arg:
        return None
    owner = getattr(v, "owner", None)
    produced = isinstance(owner, Operation) and owner.parent is block and targets.get(v) is results_into[k]
    if not produced:
        if isinstance(owner, Block) or (isinstance(owner, Operation) and owner.name == "stablehlo.constant"):
            return None  # copied in after every kernel ran
        return "the result is a copy of a value computed elsewhere"
    pos = {op: i for i, op in enumerate(emitted)}
    if owner not in pos:
        return "the result is not computed by its own kernel"
    with_arg = want | {arg}
    memo: dict = {}
    for op in emitted:
        if pos[op] > pos[owner] and arg in op_deps(op, with_arg, block, memo):
            return f"{op.name} at {op.where()} reads the argument after the result is written"
    kd = KERNELS.get(owner.name)
    if kd is not None:
        if kd.in_place is None or owner.operands[kd.in_place] is not arg:
            return f"{owner.name} does not update the argument in place"
        for i, x in enumerate(reads(owner)):
            if i == kd.in_place and x is arg:
                continue
            if x is arg or arg in deps(x, with_arg, block, memo):
                return f"{owner.name} reads the argument through another operand"
        return None
    if not _pointwise(owner, arg, want, block, memo):
        return f"{owner.name} at {owner.where()} reads the argument at other positions than it writes"
    return None


def _pointwise(op: Operation, arg, want: set, block: Block, memo: dict) -> bool:
    """Whether elementwise kernel op reads `arg` only at the linear index it writes."""
    linear = keeps_positions
    if len(op.results) != 1 or not linear(op):
        return False
    count = _numel(op.results[0].type)
    with_arg = want | {arg}
    stack, seen = [op], set()
    while stack:
        o = stack.pop()
        if o in seen:
            continue
        seen.add(o)
        for x in o.operands:
            if x is arg or x in want:
                continue  # arg at the same index; or a materialized value (not arg's memory)
            owner = getattr(x, "owner", None)
            if not isinstance(owner, Operation) or owner.parent is not block:
                continue  # another argument, or a value from outside
            xt = getattr(x, "type", None)
            if linear(owner) and isinstance(xt, TensorType) and xt.is_static and _numel(xt) == count:
                stack.append(owner)
            elif arg in deps(x, with_arg, block, memo):
                return False  # read through an index mapping (broadcast, slice, reduce...)
    return True
