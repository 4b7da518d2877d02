"""Shape inference rules of constants, tuples, tokens and the ops that move data
(transpose, reverse, broadcast, slice, dynamic_slice, concatenate, pad)."""
from __future__ import annotations

from axle.ir.types import QuantizedType, TOKEN, TensorType, TokenType, TupleType
from axle.ir.shape_inference.core import (ResultTypeRequired, _Ctx, _dsum, _merge_dims, _per_axis, _result,
                                          _rule, _shape_text, i32, kind_matches, ui32)
from axle.ir.shape_inference.elementwise import INT

# ---------------------------------------------------------------- constants, tuples, tokens


@_rule("constant", "chlo.constant")
def _constant(c: _Ctx):
    c.count(0)
    v = c.raw("value")
    if v is None:
        c.fail(None, "missing attribute 'value'")
    t = getattr(v, "type", None)
    if t is None:
        raise ResultTypeRequired("the value attribute carries no type", None, c.name)
    return [_result(t, "exact", "C1")]


@_rule("tuple")
def _tuple(c: _Ctx):
    return [_result(TupleType(tuple(c.types)), "exact", "C1")]


@_rule("get_tuple_element")
def _get_tuple_element(c: _Ctx):
    c.count(1)
    t = c.types[0]
    c.need(isinstance(t, TupleType), "I1", f"operand must be a tuple, found {t}")
    idx = c.int("index")
    c.need(0 <= idx < len(t.types), "C1", f"index {idx} is out of range for {t}")
    return [_result(t.types[idx], "exact", "C2")]


@_rule("after_all", "create_token")
def _token(c: _Ctx):
    for i, t in enumerate(c.types):
        c.need(isinstance(t, TokenType), "I1", f"operand #{i} must be a token, found {t}")
    return [_result(TOKEN)]


@_rule("replica_id", "partition_id")
def _ids(c: _Ctx):
    c.count(0)
    return [_result(TensorType((), ui32))]


@_rule("get_dimension_size")
def _get_dimension_size(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    d = c.int("dimension")
    c.need(0 <= d < t.rank, "C1", f"dimension {d} is out of range for rank {t.rank}")
    return [_result(TensorType((), i32))]


# ---------------------------------------------------------------- shape manipulation


def _perm_check(c: _Ctx, perm, rank, constraint) -> None:
    c.need(sorted(perm) == list(range(rank)), constraint,
           f"permutation {perm} is not a permutation of range({rank})")


@_rule("transpose")
def _transpose(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    perm = c.ints("permutation")
    _perm_check(c, perm, t.rank, "C2")
    et = t.element_type
    if _per_axis(et):
        qd = perm.index(et.quantized_dimension)
        et = QuantizedType(et.storage_type, et.expressed_type, et.scales, et.zero_points, qd,
                           et.storage_min, et.storage_max)
    return [_result(TensorType(tuple(t.shape[p] for p in perm), et), "exact", "C3")]


@_rule("reverse")
def _reverse(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    dims = c.ints("dimensions")
    c.need(len(set(dims)) == len(dims), "C2", f"dimensions {dims} are not unique")
    for d in dims:
        c.need(0 <= d < t.rank, "C3", f"dimension {d} is out of range for rank {t.rank}")
    return [_result(t, "exact", "C1")]


@_rule("broadcast")
def _broadcast(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    sizes = c.ints("broadcast_sizes")
    for s in sizes:
        c.need(s >= 0, None, f"broadcast_sizes must be non-negative, found {sizes}")
    return [_result(TensorType(tuple(sizes) + tuple(t.shape), t.element_type))]


@_rule("slice")
def _slice(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    start, limit = c.ints("start_indices"), c.ints("limit_indices")
    strides = c.ints("strides", [1] * t.rank)
    c.need(len(start) == len(limit) == len(strides) == t.rank, "C2",
           f"start_indices, limit_indices and strides must each have {t.rank} entries (the operand's "
           f"rank), found {len(start)}, {len(limit)} and {len(strides)}")
    shape = []
    for d, (s, l, st, n) in enumerate(zip(start, limit, strides, t.shape)):
        c.need(0 <= s <= l and (n is None or l <= n), "C3",
               f"dimension {d}: need 0 <= start ({s}) <= limit ({l}) <= size ({'?' if n is None else n})")
        c.need(st > 0, "C4", f"strides must be positive, found {strides}")
        shape.append(-(-(l - s) // st))
    return [_result(TensorType(tuple(shape), t.element_type), "exact", "C5")]


def _index_scalars(c: _Ctx, lo: int, constraint_same: str) -> None:
    first = None
    for i in range(lo, len(c.types)):
        t = c.tensor(i, f"start index #{i - lo}")
        c.need(t.rank == 0 and kind_matches(t.element_type, INT), "I2" if constraint_same == "C3" else "I3",
               f"start indices must be 0-d integer tensors, found {t}")
        if first is None:
            first = t
        c.need(t == first, constraint_same, f"start indices must all have the same type, found {first} and {t}")


@_rule("dynamic_slice")
def _dynamic_slice(c: _Ctx):
    c.at_least(1)
    t = c.tensor(0)
    sizes = c.ints("slice_sizes")
    n_idx = len(c.types) - 1
    c.need(n_idx == len(sizes) == t.rank, "C2",
           f"need one start index and one slice size per operand dimension ({t.rank}), found "
           f"{n_idx} start indices and {len(sizes)} slice sizes")
    _index_scalars(c, 1, "C3")
    for d, (s, n) in enumerate(zip(sizes, t.shape)):
        c.need(0 <= s and (n is None or s <= n), "C4",
               f"slice size {s} of dimension {d} must be in [0, {'?' if n is None else n}]")
    return [_result(TensorType(tuple(sizes), t.element_type), "exact", "C5")]


@_rule("dynamic_update_slice")
def _dynamic_update_slice(c: _Ctx):
    c.at_least(2)
    t, u = c.tensor(0), c.tensor(1)
    c.need(u.element_type == t.element_type, "C2",
           f"update element type {u.element_type} must be the operand's {t.element_type}")
    c.need(u.rank == t.rank, "C3", f"update rank {u.rank} must be the operand's {t.rank}")
    c.need(len(c.types) - 2 == t.rank, "C4",
           f"need {t.rank} start indices (the operand's rank), found {len(c.types) - 2}")
    _index_scalars(c, 2, "C5")
    for d, (a, b) in enumerate(zip(u.shape, t.shape)):
        c.need(a is None or b is None or a <= b, "C6",
               f"update dimension {d} ({a}) exceeds the operand's ({b})")
    return [_result(t, "exact", "C1")]


@_rule("concatenate")
def _concatenate(c: _Ctx):
    c.need(len(c.types) > 0, "C3", "needs at least one input")
    ts = c.tensors()
    dim = c.int("dimension")
    first = ts[0]
    for t in ts[1:]:
        c.need(t.element_type == first.element_type, "C1",
               f"inputs must have the same element type, found {first.element_type} and {t.element_type}")
    c.need(0 <= dim < first.rank, "C4", f"dimension {dim} is out of range for rank {first.rank}")
    shape = list(first.shape)
    for t in ts[1:]:
        ok = t.rank == first.rank and all(
            d == dim or a is None or b is None or a == b for d, (a, b) in enumerate(zip(shape, t.shape)))
        c.need(ok, "C2", f"inputs must have the same shape except in dimension {dim}, found "
               + ", ".join(_shape_text(x.shape) for x in ts))
        shape = [a if d == dim else _merge_dims(a, b) for d, (a, b) in enumerate(zip(shape, t.shape))]
    shape[dim] = _dsum(*(t.shape[dim] for t in ts))
    return [_result(TensorType(tuple(shape), first.element_type), "exact", "C6")]


@_rule("pad")
def _pad(c: _Ctx):
    c.count(2)
    t, pv = c.tensors()
    c.need(pv.element_type == t.element_type, "C1",
           f"padding value element type {pv.element_type} must be the operand's {t.element_type}")
    c.need(pv.rank == 0, "I2", f"padding value must be a 0-d tensor, found {pv}")
    lo, hi, it = c.ints("edge_padding_low"), c.ints("edge_padding_high"), c.ints("interior_padding")
    c.need(len(lo) == len(hi) == len(it) == t.rank, "C2",
           f"edge_padding_low, edge_padding_high and interior_padding must each have {t.rank} entries, "
           f"found {len(lo)}, {len(hi)} and {len(it)}")
    c.need(all(x >= 0 for x in it), "C3", f"interior_padding must be non-negative, found {it}")
    shape = []
    for d, n in enumerate(t.shape):
        if n is None:
            shape.append(None)
            continue
        size = n + lo[d] + hi[d] + max(n - 1, 0) * it[d]
        c.need(size >= 0, "C4", f"dimension {d} would have negative size {size}")
        shape.append(size)
    return [_result(TensorType(tuple(shape), t.element_type), "exact", "C4")]
