"""Reshapes that merge dimensions of a dot_general's operand, folded into the dot (part of
pass "transpose-fold"; no pass of its own).

dot-canonicalize flattens several batch (or contracting, or free) dimensions into one with
a `reshape`, often after a `transpose`: [4, 8, 1024, 64] -> transpose -> reshape
[32, 64, 1024]. A dot_general takes several dimensions of each kind directly, so

    dot_general(reshape(x), y)  ->  reshape(dot_general(x, y'))

when the reshape only merges runs of consecutive dimensions of x (each operand dimension of
the dot is one run of x's dimensions), with every dimension of the dot kept: batch and
contracting runs are listed as several batching / contracting dimensions, free runs stay
free (in order, so the result's row-major order is unchanged and one reshape of the result
gives the old type back). The other operand's paired batch / contracting dimension is split
the same way: it is folded too when it is such a reshape with the same run sizes, or else
reshaped (split) itself, which is done only when it is no larger than the folded operand.

Backends then read the operand as stored: the CPU runs such a dot through BLAS on strided
views (kernels_dot_packed.py) instead of copying the operand into a fresh buffer (a KV cache
of 8 MiB copied once per decode step), and transpose-fold can then fold the transpose under
the reshape into the dot.
"""
from __future__ import annotations

from typing import Optional

from axle.ir.core import Operation
from axle.ir.types import TensorType
from axle.passes.rewrite import Builder


def merge_runs(src: list, dst: list) -> Optional[list]:
    """For a reshape src -> dst that only merges runs of consecutive dimensions: the run of
    src dimensions (a list of indices) each dst dimension is made of, else None. Size-1
    dimensions of src join a neighbouring run; a size-1 dimension of dst that src lacks
    gets an empty run."""
    runs, j = [], 0
    for s in dst:
        run, prod = [], 1
        while j < len(src) and (prod < s or (not run and src[j] == 1 and s == 1)):
            run.append(j)
            prod *= src[j]
            j += 1
        if prod != s:
            return None
        runs.append(run)
    if j < len(src):
        if any(src[k] != 1 for k in range(j, len(src))) or not runs:
            return None
        runs[-1].extend(range(j, len(src)))
    # a size-1 source dimension taken into a run whose size it does not change is harmless
    return runs


def _side(op: Operation, k: int) -> Optional[tuple]:
    """(source value, runs) when operand k of op is a merging reshape, else None."""
    v = op.operands[k]
    r = getattr(v, "owner", None)
    if not isinstance(r, Operation) or r.name != "stablehlo.reshape":
        return None
    x = r.operands[0]
    if not isinstance(x.type, TensorType) or not x.type.is_static or x.type.is_quantized:
        return None
    runs = merge_runs(list(x.type.shape), list(v.type.shape))
    if runs is None or all(len(g) == 1 for g in runs):
        return None
    d = _dims_of(op, k)
    if any(not runs[i] for i in d):
        return None  # a batching / contracting dimension must stay (only free ones vanish)
    return x, runs


def _dims_of(op: Operation, k: int) -> list:
    dn = op.attr("dot_dimension_numbers")
    side = "lhs" if k == 0 else "rhs"
    return list(dn[f"{side}_batching_dimensions"]) + list(dn[f"{side}_contracting_dimensions"])


def fold_reshapes(op: Operation, dims: dict, numbers) -> Optional[object]:
    """Rewrite dot op as above; returns the value replacing its result, or None.
    `dims`: its dimension numbers as lists; `numbers(d)` builds the attribute."""
    lhs, rhs = op.operands
    sides = [_side(op, 0), _side(op, 1)]
    if sides == [None, None]:
        return None
    names = ("lhs", "rhs")
    pairs = [("batching", a, b) for a, b in zip(dims["lhs_batching_dimensions"], dims["rhs_batching_dimensions"])]
    pairs += [("contracting", a, b)
              for a, b in zip(dims["lhs_contracting_dimensions"], dims["rhs_contracting_dimensions"])]
    vals = [lhs, rhs]
    runs = [None, None]
    for k in (0, 1):
        if sides[k] is not None:
            vals[k], runs[k] = sides[k]
        else:
            runs[k] = [[d] for d in range(op.operands[k].type.rank)]

    def sizes(k, d):
        return [vals[k].type.shape[i] for i in runs[k][d]]
    # the paired dimensions must be split alike; an unfolded side is split by a reshape
    split = [dict(), dict()]  # side -> {its dimension: the sizes to split it into}
    for _, a, b in pairs:
        sa, sb = sizes(0, a), sizes(1, b)
        if sa == sb:
            continue
        for k, d, other in ((0, a, sb), (1, b, sa)):
            if sides[k] is None and len(runs[k][d]) == 1 and len(other) > 1:
                split[k][d] = other
                break
        else:
            return None
    for k in (0, 1):
        if split[k]:
            t = op.operands[k].type
            if _nbytes(t) > _nbytes(vals[1 - k].type):
                return None  # a copy of the larger operand would cost more than it saves
            shape, new_runs = [], []
            for d in range(t.rank):
                part = split[k].get(d, [t.shape[d]])
                new_runs.append(list(range(len(shape), len(shape) + len(part))))
                shape.extend(part)
            vals[k] = Builder.before(op).create(
                "stablehlo.reshape", [op.operands[k]], [TensorType(tuple(shape), t.element_type)]).result
            runs[k] = new_runs
    new = {}
    for k, name in enumerate(names):
        for kind in ("batching", "contracting"):
            new[f"{name}_{kind}_dimensions"] = [i for d in dims[f"{name}_{kind}_dimensions"] for i in runs[k][d]]
    # free dimensions keep their order (runs are increasing), so the result's row-major
    # order is the old one: [batch..., lhs free..., rhs free...]
    bshape = [vals[0].type.shape[i] for i in new["lhs_batching_dimensions"]]
    free = []
    for k, name in enumerate(names):
        used = set(new[f"{name}_batching_dimensions"]) | set(new[f"{name}_contracting_dimensions"])
        free += [vals[k].type.shape[i] for i in range(vals[k].type.rank) if i not in used]
    ot = op.results[0].type
    attrs = {"dot_dimension_numbers": numbers(new)}
    for key in ("precision_config", "algorithm"):
        if key in op.attributes:
            attrs[key] = op.attributes[key]
    b = Builder.before(op)
    nt = TensorType(tuple(bshape + free), ot.element_type)
    d = b.create("stablehlo.dot_general", vals, [nt], attrs).result
    if list(nt.shape) != list(ot.shape):
        d = b.create("stablehlo.reshape", [d], [ot]).result
    return d


def _nbytes(t: TensorType) -> int:
    n = 1
    for s in t.shape:
        n *= s
    return n * max(1, t.element_type.bitwidth // 8)
