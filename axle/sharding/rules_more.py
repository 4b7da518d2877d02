"""Sharding rules for convolution, gather, scatter, sort, reverse and control flow (the
others: rules.py, rules_dot.py). Each keeps a sharding where the op's local form computes the
local block by itself, and gathers only the dimensions it cannot:

* convolution: like dot_general. The input's batch dim and the kernel's output-feature dim
  keep their axes (data / filter parallelism); the input-feature dims (contracting) sharded
  alike on both sides leave a pending sum over their axes (a side sharded alone slices the
  other: no bytes). Spatial dims are gathered: splitting them needs halo exchanges of the
  window's overlap (collective_permute of the borders) that are not emitted; the note says
  so. Grouped convolutions (feature/batch_group_count > 1) are replicated.
* gather: the indices' batch dims keep their axes (an embedding lookup of batch-sharded ids
  is batch-sharded, the table replicated); an operand dim taken whole by every slice and not
  indexed keeps its axes on its offset dim of the result. Indexed dims are gathered (the
  index could point into any block).
* scatter: an operand dim not indexed, updated whole by every update window, keeps its axes
  (the updates' window dim is sliced alike), so every device scatters into its own block;
  indices and the scattered dims are replicated.
* sort: every dim but the sorted one keeps its axes (rows sort independently); the sorted
  dim is gathered.
* reverse: a reversed dim keeps its axes: each device reverses its block and the blocks are
  exchanged mirror-wise (a collective_permute, inserted by the partitioner).
* while / if / case: operands and values the regions capture are made whole and the
  regions run unchanged on every device (always correct; a loop whose carries stay sharded
  would need its body partitioned at a fixed point of the carries' shardings, not done).
"""
from __future__ import annotations

import numpy as np

from axle.sharding.rules import Decision, _desc, _mk, _rank, fallback, rule


def _dims(s, v):
    return [list(d) for d in s.dims(_rank(v))]


def _free(axes, used):
    return [a for a in axes if a not in used]


@rule("stablehlo.convolution")
def convolution(op, shs, mesh):
    if int(op.attr("feature_group_count") or 1) != 1 or int(op.attr("batch_group_count") or 1) != 1:
        d = fallback(op, shs, mesh)
        d.note = "grouped convolution: " + d.note
        return d
    dn = op.attributes["dimension_numbers"]
    lhs, rhs = op.operands[0], op.operands[1]
    ld, rd = _dims(shs[0], lhs), _dims(shs[1], rhs)
    b = ld[dn.input_batch_dimension]
    c = ld[dn.input_feature_dimension] or _free(rd[dn.kernel_input_feature_dimension], b)
    c = _free(c, b)
    o = _free(rd[dn.kernel_output_feature_dimension], b + c)
    lw = [[] for _ in ld]
    lw[dn.input_batch_dimension], lw[dn.input_feature_dimension] = b, c
    rw = [[] for _ in rd]
    rw[dn.kernel_input_feature_dimension], rw[dn.kernel_output_feature_dimension] = c, o
    out = [[] for _ in range(_rank(op.results[0]))]
    out[dn.output_batch_dimension], out[dn.output_feature_dimension] = b, o
    spatial = [d for d in dn.input_spatial_dimensions if ld[d]] + [d for d in dn.kernel_spatial_dimensions if rd[d]]
    note = f"batch {b or '-'}, output features {o or '-'}"
    if c:
        note += f", input features split over {c}: a pending sum"
    if spatial:
        note += "; spatial dims gathered (halo exchange not emitted)"
    return Decision([_mk(mesh, lw), _mk(mesh, rw)], [_mk(mesh, out, c)], note)


def _dn(op, name="dimension_numbers"):
    return op.attributes[name].to_python()


@rule("stablehlo.gather")
def gather(op, shs, mesh):
    dn = _dn(op)
    operand, idx = op.operands[0], op.operands[1]
    if dn.get("operand_batching_dims"):
        return fallback(op, shs, mesh)
    sizes = [int(s) for s in op.attr("slice_sizes")]
    offset = [int(d) for d in dn.get("offset_dims", [])]
    collapsed = set(int(d) for d in dn.get("collapsed_slice_dims", []))
    indexed = set(int(d) for d in dn.get("start_index_map", []))
    ivd = int(dn.get("index_vector_dim", _rank(idx)))
    rank = _rank(op.results[0])
    out = [[] for _ in range(rank)]
    iw = _dims(shs[1], idx)
    if ivd < len(iw):
        iw[ivd] = []
    batch_out = [d for d in range(rank) if d not in offset]
    batch_in = [d for d in range(_rank(idx)) if d != ivd]
    used = []
    for bo, bi in zip(batch_out, batch_in):
        out[bo] = iw[bi]
        used += iw[bi]
    ow = [[] for _ in range(_rank(operand))]
    od = _dims(shs[0], operand)
    kept = []
    for o_dim, r_dim in zip([d for d in range(_rank(operand)) if d not in collapsed], offset):
        axes = od[o_dim]
        if axes and o_dim not in indexed and sizes[o_dim] == operand.type.shape[o_dim] and not set(axes) & set(used):
            ow[o_dim] = out[r_dim] = axes
            used += axes
            kept.append(o_dim)
    note = "indices' batch dims keep their axes"
    d = Decision([_mk(mesh, ow), _mk(mesh, iw)], [_mk(mesh, out)], note)
    if kept:  # the local gather takes the local block of those dims
        from axle.ir.attributes import dense_array
        local = list(sizes)
        for o_dim in kept:
            local[o_dim] //= int(np.prod([mesh.axis_size(a) for a in ow[o_dim]]))
        d.extra["local_attrs"] = {"slice_sizes": dense_array(local)}
    if kept:
        note += f"; operand dims {kept} (taken whole, not indexed) keep theirs"
    if any(od[d] for d in range(len(od)) if d not in kept):
        note += "; other operand dims gathered (an index may point into any block)"
    d.note = note
    return d


@rule("stablehlo.scatter")
def scatter(op, shs, mesh):
    n = (len(op.operands) - 1) // 2
    dn = _dn(op, "scatter_dimension_numbers")
    if dn.get("input_batching_dims"):
        return fallback(op, shs, mesh)
    operand, upd = op.operands[0], op.operands[n + 1]
    inserted = set(int(d) for d in dn.get("inserted_window_dims", []))
    indexed = set(int(d) for d in dn.get("scatter_dims_to_operand_dims", []))
    window = [int(d) for d in dn.get("update_window_dims", [])]
    od = _dims(shs[0], operand)
    ow = [[] for _ in od]
    uw = [[] for _ in range(_rank(upd))]
    kept = []
    for o_dim, u_dim in zip([d for d in range(len(od)) if d not in inserted], window):
        if od[o_dim] and o_dim not in indexed and upd.type.shape[u_dim] == operand.type.shape[o_dim]:
            ow[o_dim] = uw[u_dim] = od[o_dim]
            kept.append(o_dim)
    want = [_mk(mesh, ow)] * n + [_mk(mesh, [[]] * _rank(op.operands[n]))] + [_mk(mesh, uw)] * n
    note = f"operand dims {kept} (not indexed, updated whole) keep their axes" if kept else "replicated"
    if any(od[d] for d in range(len(od)) if d not in kept):
        note += "; scattered dims gathered"
    return Decision(want, [_mk(mesh, ow) for _ in op.results], note)


@rule("stablehlo.sort")
def sort(op, shs, mesh):
    dim = int(op.attr("dimension"))
    first = op.operands[0]
    dims = _dims(shs[0], first)
    dims[dim] = []
    s = _mk(mesh, dims)
    note = f"rows sort independently: {_desc(s, _rank(first))}"
    if shs[0].dims(_rank(first))[dim]:
        note += f"; the sorted dim {dim} gathered"
    return Decision([s for _ in op.operands], [s for _ in op.results], note)


@rule("stablehlo.reverse")
def reverse(op, shs, mesh):
    v = op.operands[0]
    dims = _dims(shs[0], v)
    rev = [int(d) for d in op.attr("dimensions")]
    axes = [a for d in rev for a in dims[d]]
    d = Decision([shs[0]], [_mk(mesh, dims, shs[0].partial)],
                 "dims keep their axes" + (f"; blocks mirrored over {axes} (collective_permute)" if axes else ""))
    if axes:
        d.extra["mirror_axes"] = axes
    return d


@rule("stablehlo.while", "stablehlo.if", "stablehlo.case")
def control_flow(op, shs, mesh):
    d = fallback(op, shs, mesh)
    d.note = (f"{op.name}: operands and captured values made whole, regions run unchanged on every "
              f"device ({d.note})")
    return d
