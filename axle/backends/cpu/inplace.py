"""In-place reuse: which operand's buffer a kernel's result may take over.

XLA's in-place elementwise buffer sharing: an elementwise kernel whose operand dies there
and is read only at the linear index the kernel writes may write its result over that
operand's buffer (a weight update w - lr * dot(...) needs no temporary); a kernel
registered with `in_place=k` (dynamic_update_slice, scatter...) may take over operand k's
buffer when it reads it nowhere else. Decided before emission, per kernel (plan.py).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.codegen.emitter import _ty
from axle.backends.cpu.registry import KERNELS, KernelDef, keeps_positions
from axle.codegen.plans.arena import nbytes
from axle.codegen.plans.graph import deps, reads
from axle.ir.core import Block, Operation, Value
from axle.ir.types import TensorType


def in_place_operand(op: Operation, want: set, block: Block, last_read: dict) -> Optional[Value]:
    """A materialized operand whose buffer can hold the result of elementwise kernel `op`:
    op is its last reader, reads it only at the linear index it writes (through elementwise
    ops and reshapes, which keep an element's row-major position: no broadcast, transpose,
    slice...), and it has the result's element count and size. None if there is none."""
    kd = KERNELS.get(op.name)
    if kd is not None:
        return in_place_kernel_operand(op, kd, want, block, last_read)
    linear = keeps_positions  # element i of o's result reads element i of its operands
    if len(op.results) != 1 or not linear(op):
        return None
    rt = _ty(op.results[0])
    count = int(np.prod(rt.shape, dtype=np.int64)) if rt.is_static else -1
    size = np.dtype(rt.dtype).itemsize
    same: dict = {}
    other: set = set()
    memo: dict = {}
    seen: set = set()  # (fused ops form a DAG: a shared one is visited once)

    def visit(o: Operation) -> None:
        if o in seen:
            return
        seen.add(o)
        for x in o.operands:
            owner = getattr(x, "owner", None)
            xt = getattr(x, "type", None)
            identical = isinstance(xt, TensorType) and xt.is_static \
                and int(np.prod(xt.shape, dtype=np.int64)) == count
            if x in want:
                if identical and np.dtype(xt.dtype).itemsize == size:
                    same[x] = x
                else:
                    other.add(x)
            elif isinstance(owner, Operation) and owner.parent is block and owner.name != "stablehlo.constant":
                if identical and linear(owner):
                    visit(owner)
                else:  # read through an index mapping: whatever it reads is read elsewhere
                    other.update(deps(x, want, block, memo))
    visit(op)
    dying = set(last_read.get(op, ()))
    for v in same:
        owner = getattr(v, "owner", None)
        if v not in other and v in dying and isinstance(owner, Operation) and owner.parent is block:
            return v
    return None


def in_place_kernel_operand(op: Operation, kd: KernelDef, want: set, block: Block,
                             last_read: dict) -> Optional[Value]:
    """Operand kd.in_place of kernel op, when its buffer can become the result's: it is a
    materialized value of this block of the result's size, op is its last reader, and no
    other operand (or region) of op reads it, directly or through fused ops."""
    if kd.in_place is None or len(op.results) != 1:
        return None
    v = op.operands[kd.in_place]
    owner = getattr(v, "owner", None)
    if v not in want or not isinstance(owner, Operation) or owner.parent is not block:
        return None
    if v not in set(last_read.get(op, ())):
        return None
    vt, rt = getattr(v, "type", None), _ty(op.results[0])
    if not isinstance(vt, TensorType) or nbytes(vt) != nbytes(rt):
        return None
    memo: dict = {}
    for k, x in enumerate(reads(op)):
        if k == kd.in_place and x is v:
            continue
        if x is v or v in deps(x, want, block, memo):
            return None
    return v


def loop_invariant_results(op: Operation) -> list:
    """(result, operand) pairs of while op whose carry its body passes through unchanged
    (the body returns block argument i at position i: the weights a scan closes over, the
    xs it slices). Such a result holds its operand's value at every iteration and after
    the loop, so it may live in the operand's buffer: no copy into a carried buffer, and
    no temporary. (The planner keeps the operand's buffer alive as long as the result's.)"""
    if op.name != "stablehlo.while" or len(op.regions) != 2:
        return []
    body = op.regions[1].blocks[0]
    rets = body.operations[-1].operands
    out = []
    for i, (r, a) in enumerate(zip(op.results, body.arguments)):
        if i < len(rets) and rets[i] is a and i < len(op.operands):
            v = op.operands[i]
            if isinstance(getattr(v, "type", None), TensorType) and getattr(v, "type", None) == r.type:
                out.append((r, v))
    return out


def reshape_view(op: Operation, want: set, block: Block) -> list:
    """[(result, operand)] when op is a reshape kernel of its own whose operand has a buffer
    (materialized here, or from outside the block): a row-major reshape keeps every byte
    where it is, so the result may be the operand's buffer (XLA's bitcast), no copy."""
    if op.name != "stablehlo.reshape" or len(op.results) != 1:
        return []
    v = op.operands[0]
    owner = getattr(v, "owner", None)
    if isinstance(owner, Operation) and owner.parent is block and v not in want:
        return []  # computed inside the kernel: no buffer to share
    return [(op.results[0], v)]


def share_loop_invariants(kernels: list, want: set, block: Block, last_read: dict) -> dict:
    """{result: operand} for the results of a block's kernels that may live in an
    operand's buffer, holding the same bytes: the pass-through carries of while loops
    (loop_invariant_results) and reshapes (reshape_view); with `last_read` updated in place
    so that an operand computed in this block stays live (is neither released nor
    overwritten in place) until the last reader of every result that shares its buffer."""
    pos = {op: k for k, op in enumerate(kernels)}
    last_of = {v: op for op, vs in last_read.items() for v in vs}
    returned = set(block.operations[-1].operands) if block.operations else set()
    shared: dict = {}
    for op in kernels:
        for r, v in loop_invariant_results(op) + reshape_view(op, want, block):
            if r not in returned:  # (read after every kernel: it gets a buffer of its own)
                shared[r] = v
    if not shared:
        return shared

    def root(x):  # the value whose buffer x finally lives in
        while x in shared:
            x = shared[x]
        return x
    for r in shared:  # in block order: a chain of loops sharing one buffer ends at its root
        v = root(r)
        if v not in last_of or r not in last_of:
            continue
        if pos[last_of[r]] > pos[last_of[v]]:
            last_read[last_of[v]].remove(v)
            last_of[v] = last_of[r]
            last_read.setdefault(last_of[r], []).append(v)
    return shared
