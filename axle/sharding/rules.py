"""Sharding rules, one per op family: given the shardings of an op's operands, the shardings
the op wants its operands in, the shardings of its results, and why.

    rule(op, shardings, mesh) -> Decision(operands=[...], results=[...], note="...")

Shardings are canonical NamedShardings (`dims` per dimension, `partial` axes). An operand
whose wanted sharding differs from the one it has is resharded by the partitioner (a local
slice when only axes are added, else a collective). `partial` marks a pending sum: linear
ops (add/subtract of equally partial values, negate, multiply by a non-partial value,
broadcast, reshape, transpose, dot_general, an add-reduce, float converts) keep it; every
other op asks for the summed value. Ops without a rule get replicated operands and results
(always correct, and said so in the note).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from axle.ir.ops import ELEMENTWISE, OPS
from axle.sharding.mesh import Mesh, NamedSharding


@dataclass
class Decision:
    operands: list  # wanted NamedSharding per operand
    results: list  # NamedSharding per result
    note: str
    extra: dict = field(default_factory=dict)  # e.g. "mirror_axes" (reverse): for the partitioner


RULES: dict[str, Callable] = {}


def rule(*names):
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return deco


def _nbytes(t) -> int:
    return int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.element_type.dtype).itemsize


def _rank(v) -> int:
    return len(v.type.shape)


def _mk(mesh: Mesh, dims, partial=()) -> NamedSharding:
    return NamedSharding.from_dims(mesh, dims, sorted(set(partial)))


def _desc(s: NamedSharding, rank: int) -> str:
    return str(s.normalized(rank))


def fallback(op, shs, mesh):
    sharded = any(not s.is_replicated() for s in shs)
    note = (f"no sharding rule for {op.name}: operands gathered, results replicated" if sharded
            else "replicated (no sharded operand)")
    return Decision([_mk(mesh, [()] * _rank(v)) for v in op.operands],
                    [_mk(mesh, [()] * len(r.type.shape)) for r in op.results], note)


def lookup(op) -> Callable:
    fn = RULES.get(op.name)
    if fn is not None:
        return fn
    d = OPS.get(op.name)
    if d is not None and d.has(ELEMENTWISE):
        return elementwise
    return fallback


# ---------------------------------------------------------------- elementwise


_LINEAR_BOTH = {"stablehlo.add", "stablehlo.subtract"}
_LINEAR_ONE = {"stablehlo.multiply", "stablehlo.negate"}


def _float(v) -> bool:
    return getattr(v.type.element_type, "is_float", False)


@rule("stablehlo.convert")
def convert(op, shs, mesh):
    d = elementwise(op, shs, mesh)
    s = shs[0]
    if s.partial and _float(op.operands[0]) and _float(op.results[0]):
        rank = _rank(op.operands[0])
        d.operands = [s]
        d.results = [_mk(mesh, s.dims(rank), s.partial)]
        d.note = "float convert keeps the pending sum " + _desc(s, rank)
    return d


def elementwise(op, shs, mesh):
    rank = _rank(op.results[0])
    # the operand with the most sharded axes decides (the first on a tie); scalar operands
    # (clamp's bounds, select's predicate may be 0-d) are replicated
    full = [i for i, v in enumerate(op.operands) if _rank(v) == rank] or [0]
    best = max(full, key=lambda i: (len(shs[i].used_axes()), -i))
    dims = shs[best].dims(rank) if rank == _rank(op.operands[best]) else ((),) * rank
    partials = [frozenset(s.partial) for s in shs]
    keep: frozenset = frozenset()
    why = ""
    if op.name in _LINEAR_BOTH and len(set(partials)) == 1 and partials[0]:
        keep = partials[0]
        why = "; the sum stays pending (linear in both)"
    elif op.name in _LINEAR_ONE and sum(1 for p in partials if p) == 1:
        keep = next(p for p in partials if p)
        why = "; the sum stays pending (linear in the partial operand)"
    elif any(partials):
        why = "; pending sums are reduced first (the op is not linear in them)"
    if len(partials) == 1 or keep:
        wanted = [_mk(mesh, dims, p if p == keep else ()) for p in partials]
    else:
        wanted = [_mk(mesh, dims) for _ in shs]
    wanted = [w if _rank(v) == rank else _mk(mesh, [()] * _rank(v)) for w, v in zip(wanted, op.operands)]
    conflicts = [i for i, s in enumerate(shs) if s.dims(rank) != dims]
    note = f"follows operand {best} {_desc(shs[best], rank)}"
    if conflicts and any(shs[i].used_axes() for i in conflicts):
        note += f"; operands {conflicts} resharded to match"
    return Decision(wanted, [_mk(mesh, dims, keep)], note + why)


# ---------------------------------------------------------------- layout ops


@rule("stablehlo.broadcast_in_dim")
def broadcast_in_dim(op, shs, mesh):
    s = shs[0]
    src = op.operands[0].type.shape
    dst = op.results[0].type.shape
    bdims = list(op.attr("broadcast_dimensions"))
    in_dims = list(s.dims(len(src)))
    out = [()] * len(dst)
    dropped = []
    for i, d in enumerate(bdims):
        if src[i] != dst[d] and in_dims[i]:
            dropped.append(i)
            in_dims[i] = ()
        out[d] = in_dims[i]
    note = "operand dims map through broadcast_dimensions"
    if dropped:
        note += f"; expanded dims {dropped} gathered"
    return Decision([_mk(mesh, in_dims, s.partial)], [_mk(mesh, out, s.partial)], note)


@rule("stablehlo.transpose")
def transpose(op, shs, mesh):
    s = shs[0]
    perm = list(op.attr("permutation"))
    dims = s.dims(len(perm))
    return Decision([s], [_mk(mesh, [dims[p] for p in perm], s.partial)], "dims follow the permutation")


def _reshape_groups(src, dst):
    """Pairs (input dims, output dims) of equal products, in order."""
    groups, i, j = [], 0, 0
    while i < len(src) or j < len(dst):
        gi, gj, pi, pj = [], [], 1, 1
        if i < len(src):
            gi.append(i); pi *= src[i]; i += 1
        if j < len(dst):
            gj.append(j); pj *= dst[j]; j += 1
        while pi != pj:
            if pi < pj and i < len(src):
                gi.append(i); pi *= src[i]; i += 1
            elif j < len(dst):
                gj.append(j); pj *= dst[j]; j += 1
            else:
                return None
        while i < len(src) and src[i] == 1 and j >= len(dst):
            gi.append(i); i += 1
        groups.append((gi, gj))
    return groups


@rule("stablehlo.reshape")
def reshape(op, shs, mesh):
    s = shs[0]
    src, dst = list(op.operands[0].type.shape), list(op.results[0].type.shape)
    in_dims = list(s.dims(len(src)))
    out = [()] * len(dst)
    groups = _reshape_groups(src, dst) or []
    kept, dropped = [], []
    for gi, gj in groups:
        sharded = [d for d in gi if in_dims[d]]
        if not sharded:
            continue
        first_in = next((d for d in gi if src[d] != 1), gi[0])
        first_out = next((d for d in gj if dst[d] != 1), gj[0] if gj else None)
        d = sharded[0]
        tiles = int(np.prod([mesh.axis_size(a) for a in in_dims[d]]))
        if len(sharded) == 1 and d == first_in and first_out is not None and dst[first_out] % tiles == 0:
            out[first_out] = in_dims[d]
            kept.append(d)
        else:
            dropped += sharded
            for x in sharded:
                in_dims[x] = ()
    if not groups and s.used_axes():
        dropped = [d for d in range(len(src)) if in_dims[d]]
        in_dims = [()] * len(src)
    note = "sharded major dims carried through the reshape" if kept else "reshape"
    if dropped:
        note += f"; dims {dropped} gathered (their blocks are not contiguous in the result)"
    return Decision([_mk(mesh, in_dims, s.partial)], [_mk(mesh, out, s.partial)], note)


@rule("sdy.sharding_constraint", "sdy.reshard")
def constraint(op, shs, mesh):
    from axle.sharding.annotations import constraint_sharding
    want = constraint_sharding(op, mesh)
    return Decision([want], [want], f"constraint {_desc(want, _rank(op.results[0]))}")


@rule("stablehlo.custom_call")
def custom_call(op, shs, mesh):
    if op.attr("call_target_name") == "Sharding" and "mhlo.sharding" in op.attributes:
        return constraint(op, shs, mesh)
    return fallback(op, shs, mesh)


@rule("sdy.manual_computation")
def manual_computation(op, shs, mesh):
    """shard_map: the body is per-device code along its manual axes. Operands are resharded
    to its in_shardings, results come out in its out_shardings. In a partially manual
    region (some mesh axes left automatic) the values are whole along the automatic axes:
    every device of such an axis runs the body on the same data (correct, not split)."""
    from axle.sharding.annotations import _from_attr
    manual = set(op.attr("manual_axes") or ())
    auto = [n for n, size in mesh.axes if size > 1 and n not in manual]

    def only_manual(s, rank):
        return _mk(mesh, [[a for a in d if a in manual] for d in s.dims(rank)],
                   [a for a in s.partial if a in manual])
    ins = [only_manual(_from_attr(a, mesh, _rank(v), op.where()), _rank(v)) for a, v in
           zip(op.attributes["in_shardings"].shardings, op.operands)]
    outs = [only_manual(_from_attr(a, mesh, len(r.type.shape), op.where()), len(r.type.shape)) for a, r in
            zip(op.attributes["out_shardings"].shardings, op.results)]
    note = f"manual computation (shard_map) over {sorted(manual)}: its body runs per device"
    if auto:
        note += f"; whole along the automatic axes {auto} inside it"
    return Decision(ins, outs, note)
