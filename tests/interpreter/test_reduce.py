"""Unit tests of the region-applying ops (ops_reduce.py): reduce, reduce_window,
select_and_scatter, map and chlo.scan.

Regions are plain Python callables here; most work on arrays of any shape (as an elementwise
StableHLO body does), some only on 0-d values, to exercise the element-by-element fallback.
A few tests run real MLIR through the evaluator.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import axle.interpreter.ops_reduce as ops_reduce
from axle.interpreter.registry import OpCall, lookup
from axle.ir.types import TensorType, element_type_of, tensor


def tensor_type(x) -> TensorType:
    x = np.asarray(x)
    return TensorType(x.shape, element_type_of(x.dtype))


def run(name, operands, attrs, result_types, regions, operand_types=None):
    operands = [np.asarray(x) for x in operands]
    if operand_types is None:
        operand_types = [tensor_type(x) for x in operands]
    call = OpCall(name, operands, list(operand_types), list(result_types), dict(attrs), list(regions))
    return lookup(name)(call)


def add(a, b):
    return [np.asarray(a + b)]


def scalar_only(fn):
    """A region that refuses arrays, like a body whose ops are not elementwise."""

    def region(*args):
        if any(np.ndim(a) for a in args):
            raise ValueError("scalar region")
        return fn(*args)

    return region


class Counting:
    """A region that counts its calls."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fn(*args)


# ---------------------------------------------------------------- reduce


def test_reduce_spec_example():
    x = np.array([[0, 1, 2, 3, 4, 5]], np.int64)
    out = run("stablehlo.reduce", [x, np.int64(0)], {"dimensions": [1]}, [tensor((1,), "i64")], [add])
    np.testing.assert_array_equal(out[0], [15])
    assert out[0].dtype == np.int64


def test_reduce_folds_in_order_from_init():
    # float32 addition is not associative: the result must be ((init + x0) + x1) + ...
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 7, 5)) * 10.0 ** rng.integers(-4, 5, (3, 7, 5))).astype(np.float32)
    init = np.float32(0.25)
    out = run("stablehlo.reduce", [x, init], {"dimensions": [0, 2]}, [tensor((7,), "f32")], [add])[0]
    expected = np.full(7, init, np.float32)
    for i, k in itertools.product(range(3), range(5)):
        expected = expected + x[i, :, k]
    assert out.tobytes() == expected.tobytes()


def test_reduce_variadic_argmax():
    x = np.array([[3, 9, 9, 1], [5, 2, 5, 5]], np.int32)
    index = np.broadcast_to(np.arange(4, dtype=np.int32), x.shape)

    def argmax(v0, i0, v1, i1):
        take_first = (v0 > v1) | ((v0 == v1) & (i0 < i1))
        return [np.where(take_first, v0, v1), np.where(take_first, i0, i1)]

    values, indices = run("stablehlo.reduce", [x, index, np.int32(-100), np.int32(0)], {"dimensions": [1]},
                          [tensor((2,), "i32"), tensor((2,), "i32")], [argmax])
    np.testing.assert_array_equal(values, [9, 5])
    np.testing.assert_array_equal(indices, [1, 0])


def test_reduce_zero_sized_dimension_gives_init():
    x = np.zeros((0, 3), np.float32)
    out = run("stablehlo.reduce", [x, np.float32(-np.inf)], {"dimensions": [0]}, [tensor((3,), "f32")],
              [lambda a, b: [np.maximum(a, b)]])[0]
    np.testing.assert_array_equal(out, [-np.inf] * 3)
    empty = run("stablehlo.reduce", [np.zeros((2, 0), np.int8), np.int8(7)], {"dimensions": [0]},
                [tensor((0,), "i8")], [add])[0]
    assert empty.shape == (0,) and empty.dtype == np.int8


def test_reduce_no_dimensions_applies_body_once():
    x = np.array([1, 2, 3], np.int32)
    out = run("stablehlo.reduce", [x, np.int32(10)], {"dimensions": []}, [tensor((3,), "i32")], [add])[0]
    np.testing.assert_array_equal(out, [11, 12, 13])


def test_reduce_wraps_integers():
    x = np.array([200, 100, 7], np.uint8)
    with np.errstate(over="ignore"):
        out = run("stablehlo.reduce", [x, np.uint8(0)], {"dimensions": [0]}, [tensor((), "ui8")], [add])[0]
    assert out == np.uint8(51)


def test_reduce_promotes_inputs_to_body_type():
    # (C6) is_promotable: i8 inputs reduced by an i32 body
    x = np.array([100, 100, 100], np.int8)
    out = run("stablehlo.reduce", [x, np.int8(0)], {"dimensions": [0]}, [tensor((), "i32")], [add])[0]
    assert out.dtype == np.int32 and out == 300


def test_reduce_scalar_only_body_falls_back_to_elements():
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    out = run("stablehlo.reduce", [x, np.int64(0)], {"dimensions": [1]}, [tensor((3,), "i64")],
              [scalar_only(add)])[0]
    np.testing.assert_array_equal(out, x.sum(axis=1))


def test_reduce_rejects_array_results_that_disagree_with_elements():
    # applied to arrays this body returns a different function (a sum over everything), so the
    # spot check must catch it and evaluate element by element
    def body(a, b):
        return [np.asarray(a + b) if np.ndim(a) == 0 else np.full(np.shape(a), np.sum(a) + np.sum(b))]

    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    out = run("stablehlo.reduce", [x, np.int64(0)], {"dimensions": [1]}, [tensor((2,), "i64")], [body])[0]
    np.testing.assert_array_equal(out, [3, 12])


def test_long_reduction_folds_in_blocks():
    n = 3 * ops_reduce.FOLD_BLOCK + 17
    x = np.arange(n, dtype=np.int64)
    body = Counting(add)
    out = run("stablehlo.reduce", [x, np.int64(5)], {"dimensions": [0]}, [tensor((), "i64")], [body])[0]
    assert out == x.sum() + 5
    assert body.calls < 2 * ops_reduce.FOLD_BLOCK + 10


# ---------------------------------------------------------------- reduce_window


def naive_reduce_window(x, init, fn, window, strides, base, dilations, padding):
    """The spec's definition, literally: pad (with interior base dilation), slice each window
    and fold it in index order from the init value."""
    rank = x.ndim
    dilated = [(n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, base)]
    padded_shape = [lo + d + hi for (lo, hi), d in zip(padding, dilated)]
    big = np.full([d + max(-lo, 0) + max(-hi, 0) for (lo, hi), d in zip(padding, padded_shape)], init, x.dtype)
    offset = [max(-lo, 0) + lo for lo, _ in padding]
    for index in np.ndindex(*x.shape):
        big[tuple(o + i * b for o, i, b in zip(offset, index, base))] = x[index]
    padded = big[tuple(slice(max(-lo, 0), max(-lo, 0) + s) for (lo, _), s in zip(padding, padded_shape))]
    counts = [ops_reduce.num_windows(s, w, st, d) for s, w, st, d in zip(padded.shape, window, strides, dilations)]
    out = np.empty(counts, x.dtype)
    for o in np.ndindex(*counts):
        acc = np.asarray(init)
        for k in np.ndindex(*window):
            acc = fn(acc, padded[tuple(oi * s + ki * d for oi, s, ki, d in zip(o, strides, k, dilations))])
        out[o] = acc
    assert out.ndim == rank
    return out


def test_reduce_window_spec_examples():
    x = np.array([[1, 2], [3, 4], [5, 6]], np.int64)
    attrs = {"base_dilations": [2, 1], "padding": np.array([[2, 1], [0, 0]]), "window_dilations": [3, 1],
             "window_dimensions": [2, 1], "window_strides": [4, 1]}
    out = run("stablehlo.reduce_window", [x, np.int64(0)], attrs, [tensor((2, 2), "i64")], [add])[0]
    np.testing.assert_array_equal(out, [[0, 0], [3, 4]])
    attrs["window_dimensions"] = [3, 1]
    out = run("stablehlo.reduce_window", [x, np.int64(0)], attrs, [tensor((1, 2), "i64")], [add])[0]
    np.testing.assert_array_equal(out, [[5, 6]])


def test_reduce_window_defaults():
    x = np.arange(10, dtype=np.int32)
    out = run("stablehlo.reduce_window", [x, np.int32(0)], {"window_dimensions": [3]}, [tensor((8,), "i32")],
              [add])[0]
    np.testing.assert_array_equal(out, x[:-2] + x[1:-1] + x[2:])


@pytest.mark.parametrize("seed", range(6))
def test_reduce_window_matches_the_spec_definition(seed):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 4))
    x = rng.integers(-50, 50, size=rng.integers(0, 5, rank)).astype(np.int64)
    window = rng.integers(1, 4, rank).tolist()
    strides = rng.integers(1, 3, rank).tolist()
    base = rng.integers(1, 3, rank).tolist()
    dilations = rng.integers(1, 3, rank).tolist()
    padding = rng.integers(-1, 3, (rank, 2))
    dilated = [(n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, base)]
    padding[:, 0] = np.maximum(padding[:, 0], -np.array(dilated))  # keep padded sizes >= 0
    padding[:, 1] = np.maximum(padding[:, 1], -(np.array(dilated) + padding[:, 0]))
    maximum = lambda a, b: np.maximum(a, b)  # noqa: E731
    expected = naive_reduce_window(x, np.int64(-1000), maximum, window, strides, base, dilations, padding)
    attrs = {"window_dimensions": window, "window_strides": strides, "base_dilations": base,
             "window_dilations": dilations, "padding": padding}
    out = run("stablehlo.reduce_window", [x, np.int64(-1000)], attrs, [tensor(expected.shape, "i64")],
              [lambda a, b: [maximum(a, b)]])[0]
    np.testing.assert_array_equal(out, expected)


def test_reduce_window_variadic_with_scalar_body():
    x = np.array([4.0, 1.0, 3.0, 2.0], np.float32)
    i = np.arange(4, dtype=np.int32)

    def argmin(v0, i0, v1, i1):
        first = v0 <= v1
        return [np.where(first, v0, v1), np.where(first, i0, i1)]

    values, indices = run("stablehlo.reduce_window", [x, i, np.float32(np.inf), np.int32(-1)],
                          {"window_dimensions": [2]}, [tensor((3,), "f32"), tensor((3,), "i32")],
                          [scalar_only(argmin)])
    np.testing.assert_array_equal(values, [1.0, 1.0, 2.0])
    np.testing.assert_array_equal(indices, [1, 1, 3])


# ---------------------------------------------------------------- select_and_scatter


def ge(a, b):
    return [np.asarray(a >= b)]


def test_select_and_scatter_spec_example():
    operand = np.array([[1, 5], [2, 5], [3, 6], [4, 4]], np.int64)
    source = np.array([[5, 6], [7, 8]], np.int64)
    attrs = {"window_dimensions": [3, 1], "window_strides": [2, 1], "padding": np.array([[0, 1], [0, 0]])}
    out = run("stablehlo.select_and_scatter", [operand, source, np.int64(0)], attrs, [tensor((4, 2), "i64")],
              [ge, add])
    np.testing.assert_array_equal(out, [[0, 0], [0, 0], [5, 14], [7, 0]])


def test_select_and_scatter_ties_keep_the_first_and_overlaps_accumulate():
    operand = np.array([2.0, 2.0, 1.0, 2.0], np.float32)
    source = np.array([10.0, 20.0, 30.0], np.float32)
    out = run("stablehlo.select_and_scatter", [operand, source, np.float32(0.5)], {"window_dimensions": [2]},
              [tensor((4,), "f32")], [scalar_only(ge), scalar_only(add)])
    # windows [2,2] -> 0, [2,1] -> 1, [1,2] -> 3
    np.testing.assert_array_equal(out, [10.5, 20.5, 0.5, 30.5])


def test_select_and_scatter_never_selects_padding():
    operand = np.array([-5, -7], np.int32)
    source = np.array([1, 2, 3], np.int32)
    attrs = {"window_dimensions": [2], "padding": np.array([[1, 1]])}
    out = run("stablehlo.select_and_scatter", [operand, source, np.int32(0)], attrs, [tensor((2,), "i32")],
              [ge, add])
    np.testing.assert_array_equal(out, [1 + 2, 3])


def test_select_and_scatter_scatter_order_is_source_order():
    # a non-commutative scatter: result = ((init * 10 + s0) * 10 + s1) ...
    operand = np.array([0, 9, 0], np.int64)  # both windows select index 1
    source = np.array([1, 2], np.int64)
    out = run("stablehlo.select_and_scatter", [operand, source, np.int64(7)], {"window_dimensions": [2]},
              [tensor((3,), "i64")], [ge, lambda acc, s: [np.asarray(acc * 10 + s)]])
    np.testing.assert_array_equal(out, [7, 712, 7])


# ---------------------------------------------------------------- map


def test_map_spec_example_and_scalar_fallback():
    a = np.array([[0, 1], [2, 3]], np.int64)
    b = np.array([[4, 5], [6, 7]], np.int64)
    for region in (lambda x, y: [np.asarray(x * y)], scalar_only(lambda x, y: [np.asarray(x * y)])):
        out = run("stablehlo.map", [a, b], {"dimensions": [0, 1]}, [tensor((2, 2), "i64")], [region])
        np.testing.assert_array_equal(out, [[0, 5], [12, 21]])


def test_map_changes_element_type_and_handles_zero_size():
    a = np.array([1.5, -2.0], np.float32)
    out = run("stablehlo.map", [a], {"dimensions": [0]}, [tensor((2,), "i1")], [lambda x: [np.asarray(x > 0)]])
    np.testing.assert_array_equal(out, [True, False])
    empty = run("stablehlo.map", [np.zeros((0, 2), np.float32)], {"dimensions": [0, 1]},
                [tensor((0, 2), "f32")], [lambda x: [x]])
    assert empty.shape == (0, 2)


# ---------------------------------------------------------------- chlo.scan


def cumsum_body(x, carry):
    total = np.asarray(x + carry)
    return [total, total]


def test_scan_cumsum_forward_and_reverse():
    x = np.array([1, 2, 3, 4], np.int32)
    types = [tensor((4,), "i32"), tensor((), "i32")]
    out, carry = run("chlo.scan", [x, np.int32(0)], {"dimension": 0}, types, [cumsum_body])
    np.testing.assert_array_equal(out, [1, 3, 6, 10])
    assert carry == 10
    out, carry = run("chlo.scan", [x, np.int32(0)], {"dimension": 0, "is_reverse": True}, types, [cumsum_body])
    np.testing.assert_array_equal(out, [10, 9, 7, 4])


def test_scan_along_inner_dimension_with_rank_reduced_carry():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    out, carry = run("chlo.scan", [x, np.zeros(2, np.int32)], {"dimension": 1},
                     [tensor((2, 3), "i32"), tensor((2,), "i32")], [cumsum_body])
    np.testing.assert_array_equal(out, [[1, 3, 6], [4, 9, 15]])
    np.testing.assert_array_equal(carry, [6, 15])


def test_scan_with_segment_sizes_and_two_carries():
    x = np.array([3, 1, 4], np.int32)

    def body(v, best, count):
        best = np.maximum(best, v)
        return [best, best, np.asarray(count + 1)]

    out = run("chlo.scan", [x, np.int32(0), np.int32(0)], {"dimension": 0, "operandSegmentSizes": [1, 2]},
              [tensor((3,), "i32"), tensor((), "i32"), tensor((), "i32")], [body])
    np.testing.assert_array_equal(out[0], [3, 3, 4])
    assert out[1] == 4 and out[2] == 3


# ---------------------------------------------------------------- through the evaluator


MLIR = """
func.func @main(%x: tensor<4x6xf32>, %w: tensor<6xf32>) -> (tensor<6xf32>, tensor<2x6xf32>, tensor<6xf32>) {
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %sum = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [0]
      : (tensor<4x6xf32>, tensor<f32>) -> tensor<6xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %max = "stablehlo.reduce_window"(%x, %ninf) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 2, 1>, window_strides = array<i64: 2, 1>}
      : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x6xf32>
  %mapped = "stablehlo.map"(%sum, %w) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %two = stablehlo.constant dense<2.0> : tensor<f32>
      %p = stablehlo.multiply %a, %b : tensor<f32>
      %q = stablehlo.multiply %p, %two : tensor<f32>
      stablehlo.return %q : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %sum, %max, %mapped : tensor<6xf32>, tensor<2x6xf32>, tensor<6xf32>
}
"""


def test_real_regions_through_the_evaluator():
    from axle.interpreter import interpret
    from axle.ir import parse_module

    x = np.arange(24, dtype=np.float32).reshape(4, 6) - 7.5
    w = np.linspace(-1, 1, 6).astype(np.float32)
    total, window_max, mapped = interpret(parse_module(MLIR), x, w)
    np.testing.assert_array_equal(total, ((x[0] + x[1]) + x[2]) + x[3])
    np.testing.assert_array_equal(window_max, np.maximum(x[0::2], x[1::2]))
    np.testing.assert_array_equal(mapped, total * w * np.float32(2))


def _region_of(text: str):
    from axle.ir import parse_module

    module = parse_module(text)
    return next(op for op in module.walk() if op.regions and op.name != "func.func").regions[0]


ELEMENTWISE_BODY = """
func.func @f(%x: tensor<8xf32>, %i: tensor<f32>) -> tensor<f32> {
  %r = stablehlo.reduce(%x init: %i) applies stablehlo.add across dimensions = [0]
      : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
"""

RESHAPING_BODY = """
func.func @f(%x: tensor<8xf32>, %i: tensor<f32>) -> tensor<f32> {
  %r = "stablehlo.reduce"(%x, %i) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.reshape %a : (tensor<f32>) -> tensor<1xf32>
      %d = stablehlo.reshape %c : (tensor<1xf32>) -> tensor<f32>
      %e = stablehlo.add %d, %b : tensor<f32>
      stablehlo.return %e : tensor<f32>
  }) {dimensions = array<i64: 0>} : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
"""


def test_exposed_regions_decide_how_bodies_are_applied():
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    for text, array_calls in ((ELEMENTWISE_BODY, True), (RESHAPING_BODY, False)):
        body = Counting(add)
        body.region = _region_of(text)
        shapes = []
        body.batched = lambda *args: (shapes.append(np.shape(args[0])), add(*args))[1]
        out = run("stablehlo.reduce", [x, np.float32(0)], {"dimensions": [1]}, [tensor((3,), "f32")], [body])[0]
        np.testing.assert_array_equal(out, x.sum(axis=1))
        if array_calls:  # known elementwise: 8 array calls, no spot checks
            assert shapes == [(3,)] * 8 and body.calls == 0
        else:  # not elementwise: never called on arrays
            assert shapes == [] and body.calls == 3 * 8


def test_scan_split_read_from_the_region_when_exposed():
    # a carry of shape [4] looks like a stacked output of a 4x4 input scanned along dimension 0;
    # the body's argument types say it is a carry
    from axle.ir import Block, Region

    x = np.arange(16, dtype=np.int32).reshape(4, 4)
    region = Region([Block([tensor((4,), "i32"), tensor((4,), "i32")])])

    def body(row, carry):
        total = np.asarray(row + carry)
        return [total, total]

    body.region = region
    out, carry = run("chlo.scan", [x, np.zeros(4, np.int32)], {"dimension": 0},
                     [tensor((4, 4), "i32"), tensor((4,), "i32")], [body])
    np.testing.assert_array_equal(out, np.cumsum(x, axis=0))
    np.testing.assert_array_equal(carry, x.sum(axis=0))
