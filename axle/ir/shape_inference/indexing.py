"""Shape inference rules of gather, dynamic_gather and scatter."""
from __future__ import annotations

from typing import Optional

from axle.ir.types import TensorType
from axle.ir.shape_inference.core import (_Ctx, _as_int, _result, _rule, _sig_text, is_promotable,
                                          kind_matches, region_signature)
from axle.ir.shape_inference.elementwise import INT, _same_shape

# ---------------------------------------------------------------- gather / scatter


@_rule("gather")
def _gather(c: _Ctx):
    c.count(2)
    operand, idx = c.tensors()
    sizes = c.ints("slice_sizes")
    return [_gather_common(c, operand, idx, sizes, batching=True)]


@_rule("dynamic_gather")
def _dynamic_gather(c: _Ctx):
    c.count(3)
    operand, idx, ss = c.tensors()
    c.need(ss.rank == 1 and kind_matches(ss.element_type, INT), "I3",
           f"slice_sizes must be a 1-d integer tensor, found {ss}")
    n = ss.shape[0]
    c.need(n is None or n == operand.rank, "C11", f"slice_sizes must have {operand.rank} entries, found {n}")
    res = _gather_common(c, operand, idx, [None] * operand.rank, batching=False)
    return [res]


def _gather_common(c: _Ctx, operand: TensorType, idx: TensorType, sizes, batching: bool):
    dn = c.raw("dimension_numbers")
    d = dn.to_python() if dn is not None else c.fail(None, "missing attribute 'dimension_numbers'")
    offset = [_as_int(x) for x in d.get("offset_dims", [])]
    collapsed = [_as_int(x) for x in d.get("collapsed_slice_dims", [])]
    obatch = [_as_int(x) for x in d.get("operand_batching_dims", [])]
    ibatch = [_as_int(x) for x in d.get("start_indices_batching_dims", [])]
    sim = [_as_int(x) for x in d.get("start_index_map", [])]
    ivd = _as_int(d.get("index_vector_dim", 0))
    C = (lambda k: k) if batching else (lambda k: {"C1": "C1", "C2": "C2", "C3": "C3", "C4": "C4", "C5": "C5",
                                                   "C6": "C6", "C7": "C6", "C8": "C7", "C9": "C8",
                                                   "C18": "C9", "C19": "C10", "C20": "C11", "C21": "C12",
                                                   "C22": "C13", "C23": "C14"}.get(k, k))
    R, I = operand.rank, idx.rank
    c.need(kind_matches(idx.element_type, INT), "I2", f"start_indices must be an integer tensor, found {idx}")
    c.need(R == len(offset) + len(collapsed) + len(obatch), C("C1"),
           f"operand rank {R} must equal size(offset_dims) {len(offset)} + size(collapsed_slice_dims) "
           f"{len(collapsed)}" + (f" + size(operand_batching_dims) {len(obatch)}" if batching else ""))
    c.need(0 <= ivd <= I, C("C2"), f"index_vector_dim {ivd} must be in [0, {I}]")
    nidx = (idx.shape[ivd] if ivd < I else 1)
    c.need(nidx is None or len(sim) == nidx, C("C3"),
           f"start_index_map {sim} must have {nidx} entries (the index vector size)")
    c.need(offset == sorted(set(offset)), C("C4"), f"offset_dims {offset} must be sorted and unique")
    rank_out = len(offset) + I - (1 if ivd < I else 0)
    for x in offset:
        c.need(0 <= x < rank_out, C("C5"), f"offset_dims {offset}: {x} is out of range for result rank {rank_out}")
    c.need(len(set(collapsed + obatch)) == len(collapsed + obatch), C("C6"),
           f"collapsed_slice_dims {collapsed} and operand_batching_dims {obatch} must be unique")
    c.need(collapsed == sorted(collapsed), C("C7"), f"collapsed_slice_dims {collapsed} must be sorted")
    for x in collapsed:
        c.need(0 <= x < R, C("C8"), f"collapsed_slice_dims {collapsed}: {x} is out of range for rank {R}")
    if len(sizes) == R:
        for x in collapsed:
            c.need(sizes[x] is None or sizes[x] <= 1, C("C9"),
                   f"slice_sizes[{x}] = {sizes[x]} must be <= 1 for a collapsed dimension")
    if batching:
        c.need(obatch == sorted(obatch), "C10", f"operand_batching_dims {obatch} must be sorted")
        for x in obatch:
            c.need(0 <= x < R, "C11", f"operand_batching_dims {obatch}: {x} is out of range for rank {R}")
            if len(sizes) == R:
                c.need(sizes[x] <= 1, "C12", f"slice_sizes[{x}] = {sizes[x]} must be <= 1 for a batching dim")
        c.need(len(set(ibatch)) == len(ibatch), "C13", f"start_indices_batching_dims {ibatch} must be unique")
        for x in ibatch:
            c.need(0 <= x < I, "C14", f"start_indices_batching_dims {ibatch}: {x} is out of range for rank {I}")
        c.need(ivd not in ibatch, "C15", f"index_vector_dim {ivd} must not be in start_indices_batching_dims")
        c.need(len(obatch) == len(ibatch), "C16",
               f"operand_batching_dims {obatch} and start_indices_batching_dims {ibatch} must have equal sizes")
        for a, b in zip(obatch, ibatch):
            x, y = operand.shape[a], idx.shape[b]
            c.need(x is None or y is None or x == y, "C17",
                   f"batching dimension sizes differ: operand dim {a} is {x}, start_indices dim {b} is {y}")
    c.need(len(set(sim + obatch)) == len(sim + obatch), C("C18"),
           f"start_index_map {sim} and operand_batching_dims {obatch} must be unique")
    for x in sim:
        c.need(0 <= x < R, C("C19"), f"start_index_map {sim}: {x} is out of range for rank {R}")
    c.need(len(sizes) == R, C("C20"), f"slice_sizes must have {R} entries (the operand's rank), found {len(sizes)}")
    for dd, (s, n) in enumerate(zip(sizes, operand.shape)):
        c.need(s is None or (0 <= s and (n is None or s <= n)), C("C21"),
               f"slice_sizes[{dd}] = {s} must be in [0, {'?' if n is None else n}]")
    batch_sizes = [n for k, n in enumerate(idx.shape) if k != ivd]
    offset_sizes = [s for k, s in enumerate(sizes) if k not in collapsed and k not in obatch]
    shape: list = []
    bi = oi = 0
    for k in range(rank_out):
        if k in offset:
            shape.append(offset_sizes[oi])
            oi += 1
        else:
            shape.append(batch_sizes[bi])
            bi += 1
    return _result(TensorType(tuple(shape), operand.element_type), "exact", C("C22"))


def _check_reducer(c: _Ctx, ri: int, elems: list, constraint: str, what: str = "body") -> Optional[list]:
    """Check a reduction body of type (tensor<E0>.., tensor<E0>..) -> (tensor<E0>..) with
    is_promotable(elems[i], Ei); return [Ei] (None when the region is not given)."""
    if ri >= len(c.regions):
        return None
    ins, outs = region_signature(c.regions[ri])
    n = len(elems)
    sig = _sig_text(ins, outs)
    c.need(len(ins) == 2 * n and len(outs) == n, constraint,
           f"{what} must take {2 * n} scalars and return {n}, found {sig}")
    es = []
    for i in range(n):
        a, b, r = ins[i], ins[n + i], outs[i]
        ok = (isinstance(a, TensorType) and a.rank == 0 and a == b and isinstance(r, TensorType)
              and r.rank == 0 and r.element_type == a.element_type)
        c.need(ok, constraint, f"{what} must have type (tensor<E0>, ..., tensor<E0>, ...) -> (tensor<E0>, ...), "
               f"found {sig}")
        c.need(is_promotable(elems[i], a.element_type), constraint,
               f"{what} element type {a.element_type} cannot hold input element type {elems[i]}")
        es.append(a.element_type)
    return es


@_rule("scatter")
def _scatter(c: _Ctx):
    n3 = len(c.types)
    c.need(n3 >= 3 and n3 % 2 == 1, "C5", f"needs N inputs, 1 scatter_indices and N updates, found {n3} operands")
    N = (n3 - 1) // 2
    inputs, idx, updates = c.tensors(0, N), c.tensor(N), c.tensors(N + 1)
    d = c.value("scatter_dimension_numbers")
    uwd = [_as_int(x) for x in d.get("update_window_dims", [])]
    iwd = [_as_int(x) for x in d.get("inserted_window_dims", [])]
    ibd = [_as_int(x) for x in d.get("input_batching_dims", [])]
    sibd = [_as_int(x) for x in d.get("scatter_indices_batching_dims", [])]
    sdod = [_as_int(x) for x in d.get("scatter_dims_to_operand_dims", [])]
    ivd = _as_int(d.get("index_vector_dim", 0))
    in0, up0 = inputs[0], updates[0]
    R, I = in0.rank, idx.rank
    _same_shape(c, inputs, "C1")
    c.need(R == len(uwd) + len(iwd) + len(ibd), "C2",
           f"input rank {R} must equal size(update_window_dims) {len(uwd)} + size(inserted_window_dims) "
           f"{len(iwd)} + size(input_batching_dims) {len(ibd)}")
    _same_shape(c, updates, "C3")
    c.need(kind_matches(idx.element_type, INT), "I2", f"scatter_indices must be an integer tensor, found {idx}")
    c.need(0 <= ivd <= I, "C22", f"index_vector_dim {ivd} must be in [0, {I}]")
    c.need(uwd == sorted(set(uwd)), "C7", f"update_window_dims {uwd} must be sorted and unique")
    for x in uwd:
        c.need(0 <= x < up0.rank, "C8", f"update_window_dims {uwd}: {x} is out of range for rank {up0.rank}")
    c.need(len(set(iwd + ibd)) == len(iwd + ibd), "C9",
           f"inserted_window_dims {iwd} and input_batching_dims {ibd} must be unique")
    c.need(iwd == sorted(iwd), "C10", f"inserted_window_dims {iwd} must be sorted")
    for x in iwd:
        c.need(0 <= x < R, "C11", f"inserted_window_dims {iwd}: {x} is out of range for rank {R}")
    c.need(ibd == sorted(ibd), "C12", f"input_batching_dims {ibd} must be sorted")
    for x in ibd:
        c.need(0 <= x < R, "C13", f"input_batching_dims {ibd}: {x} is out of range for rank {R}")
    c.need(len(set(sibd)) == len(sibd), "C14", f"scatter_indices_batching_dims {sibd} must be unique")
    for x in sibd:
        c.need(0 <= x < I, "C15", f"scatter_indices_batching_dims {sibd}: {x} is out of range for rank {I}")
    c.need(ivd not in sibd, "C16", f"index_vector_dim {ivd} must not be in scatter_indices_batching_dims")
    c.need(len(ibd) == len(sibd), "C17",
           f"input_batching_dims {ibd} and scatter_indices_batching_dims {sibd} must have equal sizes")
    for a, b in zip(ibd, sibd):
        x, y = in0.shape[a], idx.shape[b]
        c.need(x is None or y is None or x == y, "C18",
               f"batching dimension sizes differ: input dim {a} is {x}, scatter_indices dim {b} is {y}")
    nidx = idx.shape[ivd] if ivd < I else 1
    c.need(nidx is None or len(sdod) == nidx, "C19",
           f"scatter_dims_to_operand_dims {sdod} must have {nidx} entries (the index vector size)")
    c.need(len(set(sdod + ibd)) == len(sdod + ibd), "C20",
           f"scatter_dims_to_operand_dims {sdod} and input_batching_dims {ibd} must be unique")
    for x in sdod:
        c.need(0 <= x < R, "C21", f"scatter_dims_to_operand_dims {sdod}: {x} is out of range for rank {R}")
    # (C4) the updates' shape
    scatter_sizes = [n for k, n in enumerate(idx.shape) if k != ivd]
    window_bounds = [n for k, n in enumerate(in0.shape) if k not in iwd and k not in ibd]
    want_rank = len(uwd) + len(scatter_sizes)
    c.need(up0.rank == want_rank, "C4", f"updates must have rank {want_rank}, found {up0}")
    si = wi = 0
    for k, n in enumerate(up0.shape):
        if k in uwd:
            b = window_bounds[wi] if wi < len(window_bounds) else None
            c.need(n is None or b is None or n <= b, "C4",
                   f"updates dimension {k} ({n}) exceeds the input's window bound ({b})")
            wi += 1
        else:
            s = scatter_sizes[si]
            c.need(n is None or s is None or n == s, "C4",
                   f"updates dimension {k} ({n}) must be the scatter_indices size {s}")
            si += 1
    for i, (a, u) in enumerate(zip(inputs, updates)):
        c.need(a.element_type == u.element_type, "C6",
               f"updates #{i} element type {u.element_type} must be the input's {a.element_type}")
    es = _check_reducer(c, 0, [t.element_type for t in inputs], "C23", "update_computation")
    es = es or [t.element_type for t in inputs]
    return [_result(TensorType(t.shape, e), "exact", "C25") for t, e in zip(inputs, es)]
