"""Sharding rules of dot_general and reduce (see rules.py for the contract).

dot_general, dimension by dimension (batch, then contracting, then free; an axis is used
once per tensor):
* batch dims: the sharded side wins; the other is sliced to match (no communication);
* contracting dims sharded alike on both sides: each device multiplies its blocks and the
  result is a pending sum over those axes (an all_reduce or reduce_scatter later);
  sharded on one side only: either slice the other side (free) and leave a pending sum, or
  all_gather the sharded side; the cheaper by bytes moved is taken, and the note says so;
* free dims keep their operand's axes (lhs first), unless an axis is taken already.
reduce with an `add` body over sharded dims leaves a pending sum over their axes; any other
body (max, min, ...) gathers the reduced dims first.
"""
from __future__ import annotations

import numpy as np

from axle.sharding.rules import Decision, _mk, _nbytes, _rank, rule


def _size(mesh, axes) -> int:
    return int(np.prod([mesh.axis_size(a) for a in axes], dtype=np.int64))


@rule("stablehlo.dot_general", "stablehlo.dot")
def dot_general(op, shs, mesh):
    lhs, rhs = op.operands[:2]
    out = op.results[0]
    if op.name == "stablehlo.dot":
        lb, rb, lc, rc = [], [], [_rank(lhs) - 1], [0]
    else:
        dn = op.attr("dot_dimension_numbers")
        lb, rb = list(dn["lhs_batching_dimensions"]), list(dn["rhs_batching_dimensions"])
        lc, rc = list(dn["lhs_contracting_dimensions"]), list(dn["rhs_contracting_dimensions"])
    L, R = list(shs[0].dims(_rank(lhs))), list(shs[1].dims(_rank(rhs)))
    notes = []

    def free_of(dims, exclude):
        return {a for i, d in enumerate(dims) if i not in exclude for a in d}

    batch_out = []
    for i, j in zip(lb, rb):
        a = L[i] or R[j]
        if L[i] and R[j] and L[i] != R[j]:
            notes.append(f"batch dims {i}/{j} sharded differently: rhs follows lhs")
        L[i] = R[j] = a
        batch_out.append(a)
    partial = set()
    for i, j in zip(lc, rc):
        if L[i] == R[j]:
            if L[i]:
                partial |= set(L[i])
                notes.append(f"contracting dims {i}x{j} both on {list(L[i])}: pending sum")
            continue
        # which side keeps its sharding; the other is sliced to match (or the kept side gathered)
        side, axes = ("lhs", L[i]) if L[i] else ("rhs", R[j])
        other_dims, other_k = (R, j) if side == "lhs" else (L, i)
        clash = set(axes) & free_of(other_dims, {other_k})
        g = _size(mesh, axes)
        held = shs[0] if side == "lhs" else shs[1]
        shard_bytes = _nbytes((lhs if side == "lhs" else rhs).type) // _size(mesh, held.used_axes())
        gather_cost = (g - 1) * shard_bytes
        # estimate: the result is split over the free dims' axes
        out_axes = (free_of(L, set(lc) | set(lb)) | free_of(R, set(rc) | set(rb))) - set(axes)
        reduce_cost = 2 * (g - 1) * (_nbytes(out.type) // _size(mesh, out_axes)) // g
        if L[i] and R[j]:
            clash = set(axes) & free_of(R, {j})
            if not clash:
                R[j] = L[i]
                partial |= set(axes)
                notes.append(f"contracting dims {i}x{j} sharded differently: rhs resharded to "
                             f"{list(axes)}, pending sum")
                continue
            L[i] = R[j] = ()
            notes.append(f"contracting dims {i}x{j} sharded differently: both gathered")
            continue
        if not clash and reduce_cost <= gather_cost:
            other_dims[other_k] = axes
            partial |= set(axes)
            notes.append(f"contracting dim of {side} on {list(axes)}: other side sliced, pending "
                         f"sum (all_reduce ~{reduce_cost} B/device < all_gather {gather_cost} B)")
        else:
            if side == "lhs":
                L[i] = ()
            else:
                R[j] = ()
            why = "its axes shard the other side" if clash else \
                f"all_gather {gather_cost} B/device < all_reduce ~{reduce_cost} B"
            notes.append(f"contracting dim of {side} on {list(axes)} gathered ({why})")
    used = {a for d in batch_out for a in d} | partial
    result_dims = list(batch_out)
    for dims, contract, batch, name in ((L, lc, lb, "lhs"), (R, rc, rb, "rhs")):
        for d in range(len(dims)):
            if d in contract or d in batch:
                continue
            if set(dims[d]) & used:
                notes.append(f"free dim {d} of {name} gathered: its axes {list(dims[d])} are taken")
                dims[d] = ()
            used |= set(dims[d])
            result_dims.append(dims[d])
    # pending sums of the operands: linear in each, so one may stay pending
    lp, rp = set(shs[0].partial), set(shs[1].partial)
    keep_l = lp if lp and not rp and not (lp & used) else set()
    keep_r = rp if rp and not keep_l and not (rp & used) else set()
    if (lp and not keep_l) or (rp and not keep_r):
        notes.append("pending sums of an operand reduced first")
    partial |= keep_l | keep_r
    wanted = [_mk(mesh, L, keep_l), _mk(mesh, R, keep_r)]
    return Decision(wanted, [_mk(mesh, result_dims, partial)], "; ".join(notes) or "free dims keep their sharding")


def _is_add_body(op) -> bool:
    ops = op.regions[0].blocks[0].operations if op.regions else []
    return len(ops) == 2 and ops[0].name == "stablehlo.add"


@rule("stablehlo.reduce")
def reduce(op, shs, mesh):
    from axle.sharding.rules import fallback
    if len(op.results) != 1:
        return fallback(op, shs, mesh)
    x = op.operands[0]
    s = shs[0]
    dims = list(s.dims(_rank(x)))
    reduced = list(op.attr("dimensions"))
    add = _is_add_body(op)
    partial = set(s.partial) if add else set()
    sharded = [d for d in reduced if dims[d]]
    if sharded and add:
        for d in sharded:
            partial |= set(dims[d])
        note = f"add-reduce over sharded dims {sharded}: pending sum over {sorted(partial)}"
    elif sharded:
        for d in sharded:
            dims[d] = ()
        note = f"non-add reduce: sharded dims {sharded} gathered first"
    else:
        note = "kept dims keep their sharding"
    out_dims = [dims[d] for d in range(len(dims)) if d not in reduced]
    wanted = [_mk(mesh, dims, s.partial if add else ()), _mk(mesh, [])]
    return Decision(wanted, [_mk(mesh, out_dims, partial)], note)
