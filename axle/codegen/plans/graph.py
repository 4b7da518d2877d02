"""Data flow of one block as a backend's planners see it, target independent.

A planner splits a block's ops into *materialized* values (`want`: each gets a buffer,
written by the kernel that computes it) and fused ones (computed inside the loop of
whoever reads them). These helpers answer the questions every planner asks about that
split: which values an op reads (its operands and, for ops with regions, the outside
values its bodies use), which materialized values a kernel reads through the ops fused
into it, which ops form a kernel, and which kernel reads a buffer last.

Tables are keyed by the Value and Operation objects themselves (they hash by identity),
never by `id()`.
"""
from __future__ import annotations

import threading
from typing import Optional

from axle.ir.core import Block, Operation, Value
from axle.ir.types import TensorType

# during one compilation: .memo: op -> the values its regions read from outside it
_STATE = threading.local()


class compilation:
    """Context manager: memoize `free_values` for the duration of one compilation (the ops
    of a module being compiled do not change under it)."""

    def __enter__(self):
        self.saved = getattr(_STATE, "memo", None)
        _STATE.memo = {}
        return self

    def __exit__(self, *exc):
        _STATE.memo = self.saved
        return False


def reads(op: Operation) -> list:
    """Operands of op and the outside values its regions use."""
    return list(op.operands) + free_values(op) if op.regions else list(op.operands)


def free_values(op: Operation) -> list:
    """The values op's regions use that are defined outside op, each once, in order of
    first use. Memoized per compilation, so that nested while loops cost time linear in
    their depth (walking every subtree again at each level was quadratic)."""
    memo = getattr(_STATE, "memo", None)
    if memo is not None and op in memo:
        return memo[op]
    defined: set = set()
    for r in op.regions:
        for blk in r.blocks:
            defined.update(blk.arguments)
            for inner in blk.operations:
                defined.update(inner.results)
    out: list = []
    seen: set = set()
    for r in op.regions:
        for blk in r.blocks:
            for inner in blk.operations:
                for v in (reads(inner) if inner.regions else inner.operands):
                    if v not in defined and v not in seen:
                        seen.add(v)
                        out.append(v)
    if memo is not None:
        memo[op] = out
    return out


def deps(v: Value, want: set, block: Block, memo: dict) -> set:
    """The materialized values of `block` that computing v reads (through fused ops)."""
    if v in memo:
        return memo[v]
    owner = getattr(v, "owner", None)
    if v in want or not isinstance(owner, Operation) or owner.parent is not block:
        out = {v} if v in want else set()
    else:
        out = set()
        for x in reads(owner):
            out |= deps(x, want, block, memo)
    memo[v] = out
    return out


def op_deps(op: Operation, want: set, block: Block, memo: dict) -> set:
    """The materialized values of `block` that kernel op reads (through fused ops)."""
    out: set = set()
    for x in reads(op):
        out |= deps(x, want, block, memo)
    return out


def fusion_of(op: Operation, want: set, block: Block) -> tuple[list, list]:
    """The ops of `block` computed inside op's kernel (in block order) and the materialized
    values it reads (tensors only), walking from op through fused producers."""
    fused: list = []
    inputs: list = []
    seen: set = set()
    stack = reads(op)  # values defined outside op only (none from op's own bodies)
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = getattr(v, "owner", None)
        if v in want or not isinstance(owner, Operation) or owner.parent is not block:
            if isinstance(getattr(v, "type", None), TensorType):
                inputs.append(v)
            continue
        if owner not in fused:
            fused.append(owner)
            stack.extend(reads(owner))
    order = {o: k for k, o in enumerate(block.operations)}
    fused.sort(key=lambda o: order.get(o, 0))
    return fused, inputs


def last_readers(kernels: list, want: set, block: Block) -> dict:
    """emitting op -> the materialized values whose last reader it is, with the kernels run
    in the order of `kernels`."""
    memo: dict = {}
    last: dict = {}
    for op in kernels:
        for d in op_deps(op, want, block, memo):
            last[d] = op
    out: dict = {}
    for v, op in last.items():
        out.setdefault(op, []).append(v)
    return out


def computed_in(v: Value, block: Block) -> Optional[Operation]:
    """v's defining op when it is an op of `block` (not a block argument), else None."""
    o = getattr(v, "owner", None)
    return o if isinstance(o, Operation) and o.parent is block else None
