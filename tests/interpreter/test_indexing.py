"""Unit tests of gather, scatter, dynamic_slice, dynamic_update_slice, sort and chlo.top_k
(ops_indexing.py) and dynamic_gather (ops_dynamic.py).

gather and scatter are also checked against a literal, element-by-element transcription of
the spec's formulas on random dimension numbers.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import axle.interpreter.ops_dynamic  # noqa: F401  (registers the ops)
import axle.interpreter.ops_indexing  # noqa: F401
from axle.interpreter.registry import InterpreterError, OpCall, lookup
from axle.ir.types import TensorType, element_type_of


def tensor_type(x) -> TensorType:
    x = np.asarray(x)
    return TensorType(x.shape, element_type_of(x.dtype))


def run(name, operands, attrs=None, result_types=None, regions=()):
    operands = [np.asarray(x) for x in operands]
    types = [tensor_type(x) for x in operands]
    call = OpCall(name, operands, types, list(result_types or []), dict(attrs or {}),
                  list(regions))
    return lookup(name)(call)


def add_region(a, b):
    assert a.shape == () and b.shape == ()
    return [np.asarray(a + b, dtype=a.dtype)]


# ---------------------------------------------------------------- literal spec references


def gather_reference(operand, start_indices, dn, slice_sizes):
    offset_dims, collapsed = dn["offset_dims"], dn["collapsed_slice_dims"]
    obatch, sbatch = dn["operand_batching_dims"], dn["start_indices_batching_dims"]
    start_index_map, ivd = dn["start_index_map"], dn["index_vector_dim"]
    batch_sizes = [s for d, s in enumerate(start_indices.shape) if d != ivd]
    offset_sizes = [s for d, s in enumerate(slice_sizes) if d not in collapsed and d not in obatch]
    rank = len(batch_sizes) + len(offset_sizes)
    shape, bi, oi = [], iter(batch_sizes), iter(offset_sizes)
    for d in range(rank):
        shape.append(next(oi) if d in offset_dims else next(bi))
    result = np.zeros(shape, operand.dtype)
    for result_index in np.ndindex(*shape):
        batch_dims = [d for d in range(rank) if d not in offset_dims]
        batch_index = [result_index[d] for d in batch_dims]
        if ivd < start_indices.ndim:
            sl = list(batch_index)
            sl.insert(ivd, slice(None))
            start_index = start_indices[tuple(sl)]
        else:
            start_index = [start_indices[tuple(batch_index)]]
        operand_index = []
        offset_index = iter(result_index[d] for d in offset_dims)
        for d in range(operand.ndim):
            full_start = 0
            if d in start_index_map:
                s = int(start_index[start_index_map.index(d)])
                full_start = min(max(s, 0), operand.shape[d] - slice_sizes[d])
            full_batching = 0
            if d in obatch:
                d_start = sbatch[obatch.index(d)]
                full_batching = batch_index[d_start - (0 if d_start < ivd else 1)]
            full_offset = 0 if d in collapsed or d in obatch else next(offset_index)
            operand_index.append(full_start + full_batching + full_offset)
        result[result_index] = operand[tuple(operand_index)]
    return result


def scatter_reference(inputs, indices, updates, dn, computation):
    uwd, iwd = dn["update_window_dims"], dn["inserted_window_dims"]
    ibd, sibd = dn["input_batching_dims"], dn["scatter_indices_batching_dims"]
    to_operand, ivd = dn["scatter_dims_to_operand_dims"], dn["index_vector_dim"]
    results = [x.copy() for x in inputs]
    for update_index in np.ndindex(*updates[0].shape):
        scatter_dims = [d for d in range(updates[0].ndim) if d not in uwd]
        update_scatter_index = [update_index[d] for d in scatter_dims]
        if ivd < indices.ndim:
            sl = list(update_scatter_index)
            sl.insert(ivd, slice(None))
            start_index = indices[tuple(sl)]
        else:
            start_index = [indices[tuple(update_scatter_index)]]
        window_index = iter(update_index[d] for d in uwd)
        result_index = []
        for d in range(inputs[0].ndim):
            full_start = int(start_index[to_operand.index(d)]) if d in to_operand else 0
            full_batching = 0
            if d in ibd:
                d_start = sibd[ibd.index(d)]
                full_batching = update_scatter_index[d_start - (0 if d_start < ivd else 1)]
            full_window = 0 if d in iwd or d in ibd else next(window_index)
            result_index.append(full_start + full_batching + full_window)
        if all(0 <= i < n for i, n in zip(result_index, inputs[0].shape)):
            index = tuple(result_index)
            new = computation(*[np.array(r[index]) for r in results],
                              *[np.array(u[update_index]) for u in updates])
            for r, v in zip(results, new):
                r[index] = v
    return results


def random_layout(rng, operand_shape, want_batching):
    """Random valid gather/scatter dimension numbers on `operand_shape`: returns
    (batching operand dims, collapsed dims, start_index_map, window sizes per operand dim,
    index batch shape (without the index vector), index batching dims, index_vector_dim)."""
    rank = len(operand_shape)
    dims = list(rng.permutation(rank))
    n_batching = 1 if want_batching and rank >= 2 else 0
    obatch = sorted(int(d) for d in dims[:n_batching])
    rest = [int(d) for d in dims[n_batching:]]
    collapsed = sorted(d for d in rest if rng.random() < 0.4)
    start_map = [d for d in rest if d in collapsed or rng.random() < 0.5]
    start_map = [int(d) for d in rng.permutation(start_map)] if start_map else [rest[0]]
    sizes = [1 if d in collapsed or d in obatch
             else int(rng.integers(0 if rng.random() < 0.1 else 1, operand_shape[d] + 1))
             for d in range(rank)]
    n_extra = int(rng.integers(0, 3))
    batch_shape = [int(rng.integers(1, 4)) for _ in range(n_extra)]
    positions = list(range(n_extra + n_batching))
    batching_positions = [int(p) for p in rng.choice(positions, n_batching, replace=False)]
    full_batch, extra = [], iter(batch_shape)
    for p in positions:
        if p in batching_positions:
            full_batch.append(operand_shape[obatch[batching_positions.index(p)]])
        else:
            full_batch.append(next(extra))
    implicit = len(start_map) == 1 and rng.random() < 0.5
    ivd = len(full_batch) if implicit else int(rng.integers(0, len(full_batch) + 1))
    sbatch = [p if p < ivd else p + 1 for p in batching_positions]
    return obatch, collapsed, start_map, sizes, full_batch, sbatch, ivd


def random_indices(rng, full_batch, ivd, start_map, operand_shape, implicit):
    shape = list(full_batch)
    if not implicit:
        shape.insert(ivd, len(start_map))
    hi = max(operand_shape) + 2
    return rng.integers(-2, hi + 1, size=shape).astype(np.int32)


# ---------------------------------------------------------------- gather


SPEC_OPERAND = np.arange(1, 49, dtype=np.int64).reshape(2, 3, 4, 2)
SPEC_INDICES = np.array([[[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]],
                         [[[0, 0], [2, 1], [2, 2]], [[1, 2], [0, 1], [1, 0]]]])


def test_gather_spec_example():
    dn = dict(offset_dims=[3, 4], collapsed_slice_dims=[1], operand_batching_dims=[0],
              start_indices_batching_dims=[1], start_index_map=[2, 1], index_vector_dim=3)
    out = run("stablehlo.gather", [SPEC_OPERAND, SPEC_INDICES],
              {"dimension_numbers": dn, "slice_sizes": [1, 1, 2, 2]})
    assert out.shape == (2, 2, 3, 2, 2)
    np.testing.assert_array_equal(out[0, 1, 2], [[41, 42], [43, 44]])  # [0, 9] is clamped
    np.testing.assert_array_equal(out[1, 1, 0], [[43, 44], [45, 46]])
    np.testing.assert_array_equal(out, gather_reference(SPEC_OPERAND, SPEC_INDICES, dn, [1, 1, 2, 2]))


def test_gather_implicit_index_vector_dim():
    x = np.arange(10, dtype=np.float32) * 10
    dn = dict(offset_dims=[], collapsed_slice_dims=[0], operand_batching_dims=[],
              start_indices_batching_dims=[], start_index_map=[0], index_vector_dim=1)
    out = run("stablehlo.gather", [x, np.array([3, 0, 12, -4], np.int64)],
              {"dimension_numbers": dn, "slice_sizes": [1]})
    np.testing.assert_array_equal(out, [30, 0, 90, 0])


def test_gather_unsigned_huge_index_clamps_high():
    x = np.arange(5, dtype=np.int8)
    dn = dict(offset_dims=[1], collapsed_slice_dims=[], operand_batching_dims=[],
              start_indices_batching_dims=[], start_index_map=[0], index_vector_dim=1)
    out = run("stablehlo.gather", [x, np.array([[2**64 - 1]], np.uint64)],
              {"dimension_numbers": dn, "slice_sizes": [2]})
    np.testing.assert_array_equal(out, [[3, 4]])


def test_gather_random_against_spec():
    rng = np.random.default_rng(1)
    for case in range(60):
        operand_shape = [int(s) for s in rng.integers(1, 4, size=rng.integers(1, 4))]
        operand = rng.integers(-100, 100, size=operand_shape).astype(np.int16)
        obatch, collapsed, start_map, sizes, full_batch, sbatch, ivd = random_layout(
            rng, operand_shape, want_batching=case % 2 == 0)
        # index_vector_dim == rank(start_indices): implicit index vectors of size 1
        implicit = ivd == len(full_batch) and len(start_map) == 1 and case % 3 == 0
        indices = random_indices(rng, full_batch, ivd, start_map, operand_shape, implicit)
        n_offset = sum(1 for d in range(len(operand_shape)) if d not in collapsed and d not in obatch)
        result_rank = len(full_batch) + n_offset
        offset_dims = sorted(int(d) for d in rng.choice(result_rank, n_offset, replace=False))
        dn = dict(offset_dims=offset_dims, collapsed_slice_dims=collapsed,
                  operand_batching_dims=obatch, start_indices_batching_dims=sbatch,
                  start_index_map=start_map, index_vector_dim=ivd)
        out = run("stablehlo.gather", [operand, indices], {"dimension_numbers": dn,
                                                            "slice_sizes": sizes})
        expected = gather_reference(operand, indices, dn, sizes)
        assert out.dtype == operand.dtype
        np.testing.assert_array_equal(out, expected, err_msg=str(dn))


def test_gather_zero_sized_batch():
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    dn = dict(offset_dims=[1], collapsed_slice_dims=[0], operand_batching_dims=[],
              start_indices_batching_dims=[], start_index_map=[0], index_vector_dim=1)
    out = run("stablehlo.gather", [x, np.zeros((0, 1), np.int32)],
              {"dimension_numbers": dn, "slice_sizes": [1, 3]})
    assert out.shape == (0, 3)


def test_dynamic_gather():
    operand = np.arange(1, 25, dtype=np.int64).reshape(3, 4, 2)
    indices = np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 2]]])
    dn = dict(offset_dims=[2, 3], collapsed_slice_dims=[0], start_index_map=[1, 0],
              index_vector_dim=2)
    out = run("stablehlo.dynamic_gather", [operand, indices, np.array([1, 2, 2])],
              {"dimension_numbers": dn})
    np.testing.assert_array_equal(out[1, 2], [[17, 18], [19, 20]])
    np.testing.assert_array_equal(out[0, 1], [[3, 4], [5, 6]])


# ---------------------------------------------------------------- scatter


def test_scatter_spec_example():
    dn = dict(update_window_dims=[3, 4], inserted_window_dims=[1], input_batching_dims=[0],
              scatter_indices_batching_dims=[1], scatter_dims_to_operand_dims=[2, 1],
              index_vector_dim=3)
    updates = np.ones((2, 2, 3, 2, 2), np.int64)
    (out,) = run("stablehlo.scatter", [SPEC_OPERAND, SPEC_INDICES, updates],
                 {"scatter_dimension_numbers": dn}, [tensor_type(SPEC_OPERAND)], [add_region])
    expected = [[[[3, 4], [6, 7], [6, 7], [7, 8]], [[9, 10], [11, 12], [15, 16], [17, 18]],
                 [[17, 18], [19, 20], [22, 23], [24, 25]]],
                [[[25, 26], [28, 29], [30, 31], [31, 32]], [[35, 36], [38, 39], [38, 39], [39, 40]],
                 [[41, 42], [44, 45], [46, 47], [47, 48]]]]
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(SPEC_OPERAND, np.arange(1, 49).reshape(2, 3, 4, 2))


def test_scatter_skips_out_of_bounds_elements():
    x = np.zeros(5, np.float32)
    dn = dict(update_window_dims=[1], inserted_window_dims=[], input_batching_dims=[],
              scatter_indices_batching_dims=[], scatter_dims_to_operand_dims=[0],
              index_vector_dim=1)
    indices = np.array([[3], [-1], [9]], np.int32)
    updates = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.float32)
    (out,) = run("stablehlo.scatter", [x, indices, updates], {"scatter_dimension_numbers": dn},
                 [tensor_type(x)], [add_region])
    # per element: window [3, 4, 5] writes 1, 2 (5 is out); window [-1, 0, 1] writes 5, 6
    np.testing.assert_array_equal(out, [5, 6, 0, 1, 2])


def test_scatter_variadic_in_schedule_order():
    seen = []

    def replace_and_count(cur_a, cur_b, upd_a, upd_b):
        seen.append(int(upd_a))
        return [upd_a, np.asarray(cur_b + upd_b, dtype=cur_b.dtype)]

    a = np.zeros(3, ml_dtypes.bfloat16)
    b = np.zeros(3, np.uint8)
    dn = dict(update_window_dims=[], inserted_window_dims=[0], input_batching_dims=[],
              scatter_indices_batching_dims=[], scatter_dims_to_operand_dims=[0],
              index_vector_dim=1)
    indices = np.array([1, 1, 0, 1], np.int64)
    ua = np.array([10, 20, 30, 40], ml_dtypes.bfloat16)
    ub = np.array([250, 7, 1, 1], np.uint8)
    out_a, out_b = run("stablehlo.scatter", [a, b, indices, ua, ub],
                       {"scatter_dimension_numbers": dn}, [tensor_type(a), tensor_type(b)],
                       [replace_and_count])
    assert seen == [10, 20, 30, 40]
    np.testing.assert_array_equal(out_a.astype(np.float32), [30, 40, 0])
    np.testing.assert_array_equal(out_b, [1, 2, 0])  # 250 + 7 + 1 wraps around
    assert out_a.dtype == ml_dtypes.bfloat16 and out_b.dtype == np.uint8


def test_scatter_promoted_result_type():
    x = np.array([100, 100], np.int8)
    dn = dict(update_window_dims=[], inserted_window_dims=[0], input_batching_dims=[],
              scatter_indices_batching_dims=[], scatter_dims_to_operand_dims=[0],
              index_vector_dim=1)
    (out,) = run("stablehlo.scatter", [x, np.array([0]), np.array([100], np.int8)],
                 {"scatter_dimension_numbers": dn},
                 [TensorType((2,), element_type_of(np.int32))], [add_region])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [200, 100])


def test_scatter_random_against_spec():
    rng = np.random.default_rng(2)
    for case in range(60):
        input_shape = [int(s) for s in rng.integers(1, 4, size=rng.integers(1, 4))]
        x = rng.integers(-50, 50, size=input_shape).astype(np.int32)
        ibd, iwd, to_operand, sizes, full_batch, sibd, ivd = random_layout(
            rng, input_shape, want_batching=case % 2 == 1)
        implicit = ivd == len(full_batch) and len(to_operand) == 1 and case % 3 == 0
        indices = random_indices(rng, full_batch, ivd, to_operand, input_shape, implicit)
        window_sizes = [sizes[d] for d in range(len(input_shape)) if d not in iwd and d not in ibd]
        rank = len(full_batch) + len(window_sizes)
        uwd = sorted(int(d) for d in rng.choice(rank, len(window_sizes), replace=False))
        shape, bi, wi = [], iter(full_batch), iter(window_sizes)
        for d in range(rank):
            shape.append(next(wi) if d in uwd else next(bi))
        updates = rng.integers(-50, 50, size=shape).astype(np.int32)
        dn = dict(update_window_dims=uwd, inserted_window_dims=iwd, input_batching_dims=ibd,
                  scatter_indices_batching_dims=sibd, scatter_dims_to_operand_dims=to_operand,
                  index_vector_dim=ivd)

        def keep_last(cur, upd):  # order-sensitive: checks the row-major schedule
            return [upd]

        for region in (add_region, keep_last):
            (out,) = run("stablehlo.scatter", [x, indices, updates],
                         {"scatter_dimension_numbers": dn}, [tensor_type(x)], [region])
            (expected,) = scatter_reference([x], indices, [updates], dn, region)
            np.testing.assert_array_equal(out, expected, err_msg=str(dn))


# ---------------------------------------------------------------- dynamic slices


def test_dynamic_slice_clamps():
    x = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]], np.int32)
    out = run("stablehlo.dynamic_slice", [x, np.array(-1), np.array(3)], {"slice_sizes": [2, 2]})
    np.testing.assert_array_equal(out, [[1, 1], [1, 1]])
    out = run("stablehlo.dynamic_slice", [x, np.array(2**64 - 1, np.uint64), np.array(0, np.uint64)],
              {"slice_sizes": [1, 4]})
    np.testing.assert_array_equal(out, [[0, 0, 0, 0]])


def test_dynamic_update_slice_clamps_and_copies():
    x = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]], np.int32)
    update = np.ones((2, 2), np.int32)
    out = run("stablehlo.dynamic_update_slice", [x, update, np.array(-1), np.array(3)])
    np.testing.assert_array_equal(out, np.ones((4, 4)))
    assert x[0, 3] == 0


def test_dynamic_update_slice_zero_sized_update():
    x = np.arange(4, dtype=np.float32)
    out = run("stablehlo.dynamic_update_slice", [x, np.zeros(0, np.float32), np.array(7)])
    np.testing.assert_array_equal(out, x)


# ---------------------------------------------------------------- sort


def compare_region(direction, index=0):
    def comparator(*args):
        lhs, rhs = args[2 * index], args[2 * index + 1]
        assert lhs.shape == () and rhs.shape == ()
        return [np.asarray(lhs > rhs if direction == "GT" else lhs < rhs)]
    return comparator


def test_sort_spec_example():
    a = np.array([[1, 2, 3], [3, 2, 1]], np.int64)
    b = np.array([[3, 2, 1], [1, 2, 3]], np.int64)
    r0, r1 = run("stablehlo.sort", [a, b], {"dimension": 0, "is_stable": True},
                 regions=[compare_region("GT")])
    np.testing.assert_array_equal(r0, [[3, 2, 3], [1, 2, 1]])
    np.testing.assert_array_equal(r1, [[1, 2, 1], [3, 2, 3]])


def test_sort_is_stable_and_carries_other_operands():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 4, size=(3, 40)).astype(np.uint8)
    payload = np.tile(np.arange(40, dtype=np.int32), (3, 1))
    for dimension in (1, -1):
        k, p = run("stablehlo.sort", [keys, payload], {"dimension": dimension, "is_stable": True},
                   regions=[compare_region("LT")])
        order = np.argsort(keys, axis=1, kind="stable")
        np.testing.assert_array_equal(k, np.take_along_axis(keys, order, 1))
        np.testing.assert_array_equal(p, order)


def test_sort_by_second_operand_along_axis_0():
    x = np.array([[1.5, 2.0], [0.5, -1.0], [3.0, 0.0]], np.float16)
    y = np.array([[3, 1], [1, 2], [2, 0]], np.int16)
    rx, ry = run("stablehlo.sort", [x, y], {"dimension": 0}, regions=[compare_region("LT", 1)])
    np.testing.assert_array_equal(ry, [[1, 0], [2, 1], [3, 2]])
    np.testing.assert_array_equal(rx, np.array([[0.5, 0.0], [3.0, 2.0], [1.5, -1.0]], np.float16))
    assert rx.dtype == np.float16


def test_sort_zero_sized():
    (out,) = run("stablehlo.sort", [np.zeros((0, 3), np.float32)], {"dimension": 1},
                 regions=[compare_region("LT")])
    assert out.shape == (0, 3)


# ---------------------------------------------------------------- top_k


def test_top_k_ties_keep_order():
    x = np.array([[1, 3, 3, 2, 3], [5, 4, 5, 4, 0]], np.int16)
    values, indices = run("chlo.top_k", [x], {"k": 3},
                          [tensor_type(np.zeros((2, 3), np.int16)),
                           tensor_type(np.zeros((2, 3), np.int32))])
    np.testing.assert_array_equal(values, [[3, 3, 3], [5, 5, 4]])
    np.testing.assert_array_equal(indices, [[1, 2, 4], [0, 2, 1]])
    assert indices.dtype == np.int32


def test_top_k_floats_total_order():
    x = np.array([0.0, -0.0, np.nan, -np.inf, 1.0], np.float32)
    values, indices = run("chlo.top_k", [x], {"k": 5},
                          [tensor_type(x), tensor_type(np.zeros(5, np.int32))])
    np.testing.assert_array_equal(indices, [2, 4, 0, 1, 3])


def test_top_k_unsigned_and_bool():
    x = np.array([2**64 - 1, 0, 2**63], np.uint64)
    values, indices = run("chlo.top_k", [x], {"k": 2},
                          [tensor_type(x[:2]), tensor_type(np.zeros(2, np.int32))])
    np.testing.assert_array_equal(values, [2**64 - 1, 2**63])
    b = np.array([False, True, False, True])
    values, indices = run("chlo.top_k", [b], {"k": 3},
                          [tensor_type(b[:3]), tensor_type(np.zeros(3, np.int32))])
    np.testing.assert_array_equal(values, [True, True, False])
    np.testing.assert_array_equal(indices, [1, 3, 0])


def test_top_k_rejects_large_k():
    with pytest.raises(InterpreterError):
        run("chlo.top_k", [np.zeros(3, np.float32)], {"k": 4},
            [tensor_type(np.zeros(4, np.float32)), tensor_type(np.zeros(4, np.int32))])


def test_rank_0_dynamic_slices():
    x = np.array(7, np.int8)
    out = run("stablehlo.dynamic_slice", [x], {"slice_sizes": []})
    assert isinstance(out, np.ndarray) and out.shape == () and out == 7
    out = run("stablehlo.dynamic_update_slice", [x, np.array(3, np.int8)])
    assert isinstance(out, np.ndarray) and out.shape == () and out == 3


def _total_order(x):
    bits = x.astype(np.float64).view(np.int64)
    return np.where(bits < 0, -(bits & np.int64(2**63 - 1)) - 1, bits)


def jax_float_less(a, b):
    """JAX's float comparator: -0 == +0, NaNs equal to each other and above everything."""
    def canon(v):
        v = np.float64(v)
        return (2, 0.0) if np.isnan(v) else (1, v + 0.0)
    return canon(a) < canon(b)


SORT_COMPARATORS = {
    "jax_float": (lambda a, b: jax_float_less(a, b), 1),
    "total_order": (lambda a, b: _total_order(np.asarray(a)) < _total_order(np.asarray(b)), 1),
    "greater": (lambda a, b: float(a) > float(b) if not np.isnan(float(a) + float(b)) else False, 1),
    "by_magnitude": (lambda a, b: abs(float(a)) < abs(float(b)), 1),
    "second_desc": (lambda a0, b0, a1, b1: a1 > b1, 2),
    "lexicographic": (lambda a0, b0, a1, b1: (float(a0), int(a1)) < (float(b0), int(b1)), 2),
}


@pytest.mark.parametrize("name", sorted(SORT_COMPARATORS))
def test_sort_matches_a_plain_stable_sort(name):
    import functools
    fn, arity = SORT_COMPARATORS[name]
    rng = np.random.default_rng(4)
    pool = np.array([0.0, -0.0, 1.5, -1.5, 2.0, np.nan, -np.nan, np.inf], np.float32)
    keys = rng.choice(pool, size=(3, 24)).astype(np.float32)
    if name in ("greater", "by_magnitude"):
        keys = np.where(np.isnan(keys), 1.0, keys).astype(np.float32)  # strict weak orders only
    second = rng.integers(0, 3, size=(3, 24)).astype(np.int32)
    position = np.tile(np.arange(24, dtype=np.int32), (3, 1))
    operands = [keys, second, position][:arity] + [position]

    def comparator(*args):
        assert all(a.shape == () for a in args)
        return [np.asarray(bool(fn(*args[:2 * arity])))]

    out = run("stablehlo.sort", operands, {"dimension": 1, "is_stable": True},
              regions=[comparator])
    for row in range(3):
        def cmp(i, j, row=row):
            def less(p, q):
                return fn(*[o[row, k] for o in operands[:arity] for k in (p, q)])
            return -1 if less(i, j) else 1 if less(j, i) else 0

        expected = sorted(range(24), key=functools.cmp_to_key(cmp))
        np.testing.assert_array_equal(out[-1][row], expected)
        np.testing.assert_array_equal(out[0][row].view(np.int32), keys[row][expected].view(np.int32))
