"""Shape inference rules of linear algebra, fft, batch norm, collectives and chlo.top_k."""
from __future__ import annotations

from typing import Optional

import numpy as np

from axle.ir.attributes import DenseElementsAttr
from axle.ir.types import ELEMENT_TYPES, TensorType
from axle.ir.shape_inference.core import (_Ctx, _quant_match, _result, _rule, _shape_text, _sig_text,
                                          baseline_element, i32, is_promotable, kind_matches,
                                          region_signature, shapes_compatible)
from axle.ir.shape_inference.elementwise import FLOATISH, FLOAT_Q, _check_kinds

# ---------------------------------------------------------------- linear algebra, fft, batch norm


@_rule("fft")
def _fft(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    kind = c.value("fft_type")
    n = c.ints("fft_length")
    c.need(len(n) <= t.rank, "C1", f"fft_length {n} has more entries than the operand's rank {t.rank}")
    c.need(1 <= len(n) <= 3, "C3", f"fft_length must have 1 to 3 entries, found {n}")
    et = t.element_type
    shape = list(t.shape)
    k = len(n)
    if kind in ("FFT", "IFFT"):
        c.need(kind_matches(et, {"complex"}), "C2", f"{kind} needs a complex operand, found {t}")
        # not a numbered spec constraint, but XLA's rule: backends transform exactly these dims
        c.need(shapes_compatible(shape[-k:], n), None,
               f"the operand's trailing dimensions {_shape_text(shape[-k:])} must be fft_length {n}")
        res = et
    elif kind == "RFFT":
        c.need(et in (ELEMENT_TYPES["f32"], ELEMENT_TYPES["f64"]), "C2",
               f"RFFT needs an f32 or f64 operand, found {t}")
        c.need(shapes_compatible(shape[-k:], n), "C4",
               f"the operand's trailing dimensions {_shape_text(shape[-k:])} must be fft_length {n}")
        res = ELEMENT_TYPES[f"complex<{et.name}>"]
        last = shape[-1]
        shape[-1] = None if last is None else (0 if last == 0 else last // 2 + 1)
    elif kind == "IRFFT":
        c.need(kind_matches(et, {"complex"}), "C2", f"IRFFT needs a complex operand, found {t}")
        res = et.component
        want = list(n)
        want[-1] = 0 if n[-1] == 0 else n[-1] // 2 + 1
        c.need(shapes_compatible(shape[-k:], want), "C5",
               f"the operand's trailing dimensions {_shape_text(shape[-k:])} must be {want} for fft_length {n}")
        shape[-k:] = n
    else:
        c.fail("I2", f"unknown fft_type {kind}")
    return [_result(TensorType(tuple(shape), res), "exact", "C5")]


@_rule("cholesky")
def _cholesky(c: _Ctx):
    c.count(1)
    a = c.tensor(0)
    _check_kinds(c, [a], FLOATISH)
    c.need(a.rank >= 2, "C2", f"operand must have rank >= 2, found {a}")
    x, y = a.shape[-2], a.shape[-1]
    c.need(x is None or y is None or x == y, "C3", f"the two minor dimensions must be equal, found {a}")
    return [_result(a, _quant_match(a.element_type), "C1")]


@_rule("triangular_solve")
def _triangular_solve(c: _Ctx):
    c.count(2)
    a, b = c.tensors()
    _check_kinds(c, [a, b], FLOATISH)
    c.need(baseline_element(a.element_type) == baseline_element(b.element_type), "C1",
           f"a and b must have the same element type, found {a.element_type} and {b.element_type}")
    c.need(2 <= a.rank == b.rank, "C2", f"a and b must have the same rank >= 2, found {a} and {b}")
    left = bool(c.value("left_side", False))
    c.need(shapes_compatible(a.shape[:-2], b.shape[:-2]), "C3",
           f"batch dimensions of a and b differ: {a} and {b}")
    k = b.shape[-2] if left else b.shape[-1]
    dims = [a.shape[-2], a.shape[-1], k]
    known = [x for x in dims if x is not None]
    c.need(len(set(known)) <= 1, "C3", f"a must be square and match b's {'rows' if left else 'columns'}, "
           f"found {a} and {b}")
    return [_result(b, _quant_match(b.element_type), "C4")]


def _feature(c: _Ctx, operand: TensorType, scales: list[TensorType], first_c: int):
    fi = c.int("feature_index")
    c.need(0 <= fi < operand.rank, "C1", f"feature_index {fi} is out of range for rank {operand.rank}")
    base = baseline_element(operand.element_type)
    for t in scales:
        c.need(baseline_element(t.element_type) == base, "C2",
               f"all operands must have the element type {operand.element_type}, found {t}")
        c.need(t.rank == 1, "I2", f"scale/offset/mean/variance must be 1-d, found {t}")
    n = operand.shape[fi]
    for k, t in enumerate(scales):
        c.need(n is None or t.shape[0] is None or t.shape[0] == n, f"C{first_c + k}",
               f"size {t.shape[0]} must be the feature dimension size {n}")
    return fi, n


@_rule("batch_norm_inference")
def _bn_inference(c: _Ctx):
    c.count(5)
    ts = c.tensors()
    _check_kinds(c, ts[:1], FLOAT_Q)
    _feature(c, ts[0], ts[1:], 3)
    return [_result(ts[0], _quant_match(ts[0].element_type), "C7")]


@_rule("batch_norm_training")
def _bn_training(c: _Ctx):
    c.count(3)
    ts = c.tensors()
    _check_kinds(c, ts[:1], FLOAT_Q)
    fi, n = _feature(c, ts[0], ts[1:], 3)
    vec = TensorType((n,), ts[0].element_type)
    return [_result(ts[0], _quant_match(ts[0].element_type), "C7"), _result(vec, "exact", "C5"),
            _result(vec, "exact", "C6")]


@_rule("batch_norm_grad")
def _bn_grad(c: _Ctx):
    c.count(5)
    operand, scale, mean, var, grad = c.tensors()
    _check_kinds(c, [operand], FLOAT_Q)
    fi, n = _feature(c, operand, [scale, mean, var], 5)
    c.need(baseline_element(grad.element_type) == baseline_element(operand.element_type), "C2",
           f"grad_output must have the element type {operand.element_type}, found {grad}")
    c.need(shapes_compatible(grad.shape, operand.shape), "C3",
           f"grad_output must have the operand's shape, found {grad} and {operand}")
    vec = TensorType((n,), operand.element_type)
    return [_result(operand, "exact", "C3"), _result(vec, "exact", "C4"), _result(vec, "exact", "C4")]


# ---------------------------------------------------------------- collectives


def _group_size(c: _Ctx, key: str = "replica_groups") -> Optional[int]:
    """dim(process_groups, 1) where it is known before run time: not for the
    cross_replica_and_partition mode (a channel id without use_global_device_ids), whose
    groups also span every partition, nor for empty replica groups (all replicas)."""
    ch = c.raw("channel_handle")
    handle = ch.to_python().get("handle", 0) if ch is not None and hasattr(ch, "fields") else 0
    if handle > 0 and c.raw("use_global_device_ids") is None and c.name != "stablehlo.all_to_all":
        return None
    a = c.raw(key)
    if isinstance(a, DenseElementsAttr):
        shape = tuple(a.type.shape)
        if len(shape) == 2 and shape[1] is not None and shape[0] != 0:
            return shape[1]
    return None


def _check_groups(c: _Ctx, constraint: str, key: str = "replica_groups") -> None:
    a = c.raw(key)
    if isinstance(a, DenseElementsAttr):
        vals = [int(x) for x in np.asarray(a.array).reshape(-1) if int(x) != -1]
        c.need(len(set(vals)) == len(vals), constraint, f"{key} must be unique, found {vals}")
        c.need(all(x >= 0 for x in vals), constraint, f"{key} must be non-negative, found {vals}")


@_rule("all_gather")
def _all_gather(c: _Ctx):
    ts = c.tensors()
    dim = c.int("all_gather_dim")
    _check_groups(c, "C2")
    n = _group_size(c)
    out = []
    for t in ts:
        c.need(0 <= dim < t.rank, "C1", f"all_gather_dim {dim} is out of range for rank {t.rank}")
        shape = list(t.shape)
        shape[dim] = None if (n is None or shape[dim] is None) else shape[dim] * n
        out.append(_result(TensorType(tuple(shape), t.element_type), "exact", "C6"))
    return out


def _reduction_computation(c: _Ctx, elems: list, constraint: str) -> Optional[list]:
    """A collective's computation (tensor<E>, tensor<E>) -> tensor<E> with every operand
    element type promotable to E; [E] * len(elems), or None without the region."""
    if not c.regions:
        return None
    ins, outs = region_signature(c.regions[0])
    e0 = ins[0].element_type if ins and isinstance(ins[0], TensorType) else None
    s = TensorType((), e0) if e0 is not None else None
    c.need(s is not None and len(ins) == 2 and ins[0] == s and ins[1] == s and outs == [s], constraint,
           f"computation must have type (tensor<E>, tensor<E>) -> tensor<E>, found {_sig_text(ins, outs)}")
    for e in elems:
        c.need(is_promotable(e, e0), constraint, f"computation element type {e0} cannot hold {e}")
    return [e0] * len(elems)


@_rule("all_reduce")
def _all_reduce(c: _Ctx):
    ts = c.tensors()
    _check_groups(c, "C1")
    elems = [t.element_type for t in ts]
    es = _reduction_computation(c, elems, "C5") or elems
    return [_result(TensorType(t.shape, e), "exact", "C6") for t, e in zip(ts, es)]


@_rule("collective_reduce")
def _collective_reduce(c: _Ctx):
    ts = c.tensors()
    _check_groups(c, "C1")
    if c.raw("has_dynamic_root") is not None:
        c.need(len(ts) >= 2, "C3", f"has_dynamic_root needs at least 2 operands, found {len(ts)}")
        ts = ts[:-1]
    elems = [t.element_type for t in ts]
    es = _reduction_computation(c, elems, "C4") or elems
    return [_result(TensorType(t.shape, e), "exact", "C3") for t, e in zip(ts, es)]


@_rule("reduce_scatter")
def _reduce_scatter(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    dim = c.int("scatter_dimension")
    c.need(0 <= dim < t.rank, "C2", f"scatter_dimension {dim} is out of range for rank {t.rank}")
    _check_groups(c, "C3")
    n = _group_size(c)
    if n is not None and t.shape[dim] is not None:
        c.need(t.shape[dim] % n == 0, "C1", f"dimension size {t.shape[dim]} must be divisible by the group size {n}")
    e = (_reduction_computation(c, [t.element_type], "C7") or [t.element_type])[0]
    shape = list(t.shape)
    shape[dim] = None if (n is None or shape[dim] is None) else shape[dim] // n
    return [_result(TensorType(tuple(shape), e), "exact", "C8")]


@_rule("all_to_all")
def _all_to_all(c: _Ctx):
    ts = c.tensors()
    sd, cd, k = c.int("split_dimension"), c.int("concat_dimension"), c.int("split_count")
    c.need(k > 0, "C4", f"split_count must be positive, found {k}")
    _check_groups(c, "C5")
    n = _group_size(c)
    if n is not None:
        c.need(n == k, "C8", f"replica groups must have split_count ({k}) members, found {n}")
    out = []
    for t in ts:
        c.need(0 <= sd < t.rank, "C1", f"split_dimension {sd} is out of range for rank {t.rank}")
        c.need(0 <= cd < t.rank, "C3", f"concat_dimension {cd} is out of range for rank {t.rank}")
        shape = list(t.shape)
        c.need(shape[sd] is None or shape[sd] % k == 0, "C2",
               f"split dimension size {shape[sd]} must be divisible by split_count {k}")
        if sd != cd:
            shape[sd] = None if shape[sd] is None else shape[sd] // k
            shape[cd] = None if shape[cd] is None else shape[cd] * k
        out.append(_result(TensorType(tuple(shape), t.element_type), "exact", "C9"))
    return out


@_rule("collective_permute")
def _collective_permute(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    a = c.raw("source_target_pairs")
    if isinstance(a, DenseElementsAttr):
        arr = np.asarray(a.array)
        shape = tuple(a.type.shape)
        c.need(len(shape) == 2 and (shape[1] == 2 or shape[0] == 0), "C1",
               f"source_target_pairs must have shape [N, 2], found {list(shape)}")
        if arr.size:
            arr = np.broadcast_to(arr, shape)
            c.need(len(set(arr[:, 0].tolist())) == shape[0], "C2", "sources in source_target_pairs must be unique")
            c.need(len(set(arr[:, 1].tolist())) == shape[0], "C3", "targets in source_target_pairs must be unique")
            c.need(bool((arr >= 0).all()), "C4", "source_target_pairs must be non-negative")
    return [_result(t, "exact", "C5")]


@_rule("collective_broadcast")
def _collective_broadcast(c: _Ctx):
    ts = c.tensors()
    _check_groups(c, "C1")
    dyn = bool(c.value("has_dynamic_root", False))
    if dyn:
        c.need(len(ts) >= 2, "C4", f"has_dynamic_root needs at least 2 operands, found {len(ts)}")
        ts = ts[:-1]
    else:
        c.need(len(ts) >= 1, "C3", "needs at least one operand")
    return [_result(t, "exact", "C3") for t in ts]


# ---------------------------------------------------------------- chlo


@_rule("chlo.top_k")
def _top_k(c: _Ctx):
    c.count(1)
    t = c.tensor(0)
    k = c.int("k")
    c.need(t.rank >= 1, None, f"operand must have rank >= 1, found {t}")
    last = t.shape[-1]
    c.need(k >= 0 and (last is None or k <= last), None, f"k = {k} must be in [0, {last}]")
    shape = tuple(t.shape[:-1]) + (k,)
    return [_result(TensorType(shape, t.element_type)), _result(TensorType(shape, i32))]
