"""Unit tests of the data-movement and dynamic-shape ops (ops_shape.py, ops_dynamic.py)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import axle.interpreter.ops_dynamic  # noqa: F401  (registers the ops)
import axle.interpreter.ops_shape  # noqa: F401
from axle.interpreter.registry import TOKEN, InterpreterError, OpCall, Token, lookup
from axle.ir.types import QuantizedType, TensorType, element_type, element_type_of, tensor


def tensor_type(x) -> TensorType:
    x = np.asarray(x)
    return TensorType(x.shape, element_type_of(x.dtype))


def run(name, operands, attrs=None, result_types=(), operand_types=None):
    operands = [x if isinstance(x, (tuple, Token)) else np.asarray(x) for x in operands]
    if operand_types is None:
        operand_types = [tensor_type(x) if isinstance(x, np.ndarray) else None for x in operands]
    call = OpCall(name, operands, list(operand_types), list(result_types), dict(attrs or {}))
    return lookup(name)(call)


def assert_same(actual, expected, dtype=None):
    actual = np.asarray(actual)
    expected = np.asarray(expected, dtype=dtype if dtype is not None else actual.dtype)
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual.astype(np.float64) if actual.dtype.kind == "V"
                                  else actual, expected.astype(np.float64)
                                  if expected.dtype.kind == "V" else expected)


# ---------------------------------------------------------------- constant, iota


def test_constant_splat_and_dtype():
    out = run("stablehlo.constant", [], {"value": np.array(1.5, np.float32)}, [tensor((2, 3), "f32")])
    assert_same(out, np.full((2, 3), 1.5, np.float32))


def test_constant_rounds_once_to_bf16():
    # 1 + 2^-8 + 2^-30 is just above the halfway point between two bf16 neighbours: a correct
    # rounding goes up, rounding through f32 first would tie to even and go down.
    value = np.array([1 + 2.0 ** -8 + 2.0 ** -30])
    out = run("stablehlo.constant", [], {"value": value}, [tensor((1,), "bf16")])
    assert out.dtype == ml_dtypes.bfloat16
    assert float(out[0]) == 1 + 2.0 ** -7


def test_constant_keeps_values_and_shape():
    value = np.arange(6, dtype=np.int8).reshape(2, 3)
    out = run("stablehlo.constant", [], {"value": value}, [tensor((2, 3), "i8")])
    assert_same(out, value)
    assert out is not value


@pytest.mark.parametrize("name", ["i4", "i8", "ui64", "f16", "bf16", "f32", "f64", "complex<f32>"])
def test_iota_types(name):
    et = element_type(name)
    out = run("stablehlo.iota", [], {"iota_dimension": 1}, [tensor((2, 3), et)])
    assert out.dtype == et.dtype
    np.testing.assert_array_equal(np.asarray(out).astype(np.complex128),
                                  np.tile(np.arange(3), (2, 1)))


def test_iota_wraps_narrow_integers():
    out = run("stablehlo.iota", [], {"iota_dimension": 0}, [tensor((10,), "i4")])
    np.testing.assert_array_equal(out.astype(np.int64), [0, 1, 2, 3, 4, 5, 6, 7, -8, -7])


def test_iota_quantized():
    q = QuantizedType(element_type("i8"), element_type("f32"), (0.5,), (3,))
    out = run("stablehlo.iota", [], {"iota_dimension": 0}, [TensorType((4,), q)])
    assert_same(out, [3, 5, 7, 9], np.int8)  # round(i / 0.5) + 3


def test_iota_rejects_dynamic_result():
    with pytest.raises(InterpreterError):
        run("stablehlo.iota", [], {"iota_dimension": 0}, [tensor((None,), "f32")])


# ---------------------------------------------------------------- broadcasts


def test_broadcast_in_dim_spec_example():
    out = run("stablehlo.broadcast_in_dim", [np.array([[1, 2, 3]], np.int32)],
              {"broadcast_dimensions": [2, 1]}, [tensor((2, 3, 2), "i32")])
    assert_same(out, [[[1, 1], [2, 2], [3, 3]], [[1, 1], [2, 2], [3, 3]]])


def test_broadcast_in_dim_transposes():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = run("stablehlo.broadcast_in_dim", [x], {"broadcast_dimensions": [1, 0]},
              [tensor((3, 2), "f32")])
    assert_same(out, x.T)


def test_broadcast_in_dim_scalar_and_zero_size():
    out = run("stablehlo.broadcast_in_dim", [np.array(True)], {"broadcast_dimensions": []},
              [tensor((2, 0), "i1")])
    assert out.shape == (2, 0) and out.dtype == np.bool_


def test_broadcast_in_dim_errors():
    with pytest.raises(InterpreterError):
        run("stablehlo.broadcast_in_dim", [np.zeros(2, np.float32)], {"broadcast_dimensions": [0]},
            [tensor((3,), "f32")])


def test_broadcast_in_dim_dynamic_result_from_operand():
    out = run("stablehlo.broadcast_in_dim", [np.arange(3, dtype=np.int64)],
              {"broadcast_dimensions": [1]}, [tensor((2, None), "i64")])
    assert_same(out, [[0, 1, 2], [0, 1, 2]])


def test_broadcast_deprecated():
    out = run("stablehlo.broadcast", [np.array([1, 2], np.int16)], {"broadcast_sizes": [3]})
    assert_same(out, [[1, 2]] * 3)


def test_dynamic_broadcast_in_dim():
    out = run("stablehlo.dynamic_broadcast_in_dim",
              [np.array([[1], [2], [3]], np.int64), np.array([3, 2, 2], np.int64)],
              {"broadcast_dimensions": [0, 2]}, [tensor((None, None, None), "i64")])
    assert_same(out, [[[1, 1], [1, 1]], [[2, 2], [2, 2]], [[3, 3], [3, 3]]])


# ---------------------------------------------------------------- reshape, transpose, slice


def test_reshape():
    x = np.arange(6, dtype=ml_dtypes.bfloat16).reshape(2, 3)
    out = run("stablehlo.reshape", [x], {}, [tensor((3, 2), "bf16")])
    assert_same(out, x.reshape(3, 2))


def test_reshape_infers_one_dynamic_dim_and_rejects_two():
    x = np.arange(6, dtype=np.int32)
    assert run("stablehlo.reshape", [x], {}, [tensor((None, 2), "i32")]).shape == (3, 2)
    with pytest.raises(InterpreterError):
        run("stablehlo.reshape", [x], {}, [tensor((None, None), "i32")])


def test_dynamic_reshape():
    x = np.arange(6, dtype=np.uint8).reshape(1, 6)
    out = run("stablehlo.dynamic_reshape", [x, np.array([2, 3], np.int32)], {},
              [tensor((None, None), "ui8")])
    assert_same(out, np.arange(6).reshape(2, 3))
    with pytest.raises(InterpreterError):
        run("stablehlo.dynamic_reshape", [x, np.array([4], np.int32)], {}, [tensor((None,), "ui8")])


def test_transpose():
    x = np.arange(24, dtype=np.complex64).reshape(2, 3, 4)
    out = run("stablehlo.transpose", [x], {"permutation": [2, 0, 1]})
    assert_same(out, x.transpose(2, 0, 1))
    assert out.flags.c_contiguous


def test_slice_with_strides_and_default():
    x = np.arange(20, dtype=np.int64).reshape(4, 5)
    out = run("stablehlo.slice", [x], {"start_indices": [1, 0], "limit_indices": [4, 5],
                                       "strides": [2, 3]})
    assert_same(out, x[1:4:2, 0:5:3])
    out = run("stablehlo.slice", [x], {"start_indices": [0, 2], "limit_indices": [0, 4]})
    assert out.shape == (0, 2)
    with pytest.raises(InterpreterError):
        run("stablehlo.slice", [x], {"start_indices": [0, 2], "limit_indices": [5, 4]})


def test_real_dynamic_slice():
    x = np.arange(10, dtype=np.float32)
    out = run("stablehlo.real_dynamic_slice",
              [x, np.array([1], np.int32), np.array([8], np.int32), np.array([3], np.int32)],
              {}, [tensor((None,), "f32")])
    assert_same(out, [1, 4, 7])


# ---------------------------------------------------------------- concatenate, pad, reverse


def test_concatenate():
    a = np.arange(6, dtype=np.uint16).reshape(2, 3)
    b = np.zeros((2, 0), np.uint16)
    c = np.ones((2, 1), np.uint16)
    out = run("stablehlo.concatenate", [a, b, c], {"dimension": 1})
    assert_same(out, np.concatenate([a, c], axis=1))


def test_pad_spec_example():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    out = run("stablehlo.pad", [x, np.array(0, np.int32)],
              {"edge_padding_low": [0, 1], "edge_padding_high": [2, 1], "interior_padding": [1, 2]})
    assert_same(out, [[0, 1, 0, 0, 2, 0, 0, 3, 0], [0] * 9, [0, 4, 0, 0, 5, 0, 0, 6, 0],
                      [0] * 9, [0] * 9])


def test_pad_negative_edges_cut_into_interior_padding():
    x = np.array([[0, 0, 0, 0], [0, 1, 2, 0], [0, 3, 4, 0], [0, 5, 6, 0], [0, 0, 0, 0]], np.int64)
    out = run("stablehlo.pad", [x, np.array(-1, np.int64)],
              {"edge_padding_low": [1, -1], "edge_padding_high": [1, -1], "interior_padding": [0, 1]})
    expected = [[-1] * 5, [-1, 0, -1, 0, -1], [-1, 1, -1, 2, -1], [-1, 3, -1, 4, -1],
                [-1, 5, -1, 6, -1], [-1, 0, -1, 0, -1], [-1] * 5]
    assert_same(out, expected)


def test_pad_matches_literal_definition():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(1, 9, size=rng.integers(0, 4, size=2))
        low = rng.integers(-2, 3, size=2)
        high = rng.integers(-2, 3, size=2)
        interior = rng.integers(0, 3, size=2)
        sizes = [n + lo + max(n - 1, 0) * it + hi for n, lo, it, hi in zip(x.shape, low, interior, high)]
        if min(sizes) < 0:
            with pytest.raises(InterpreterError):
                run("stablehlo.pad", [x, np.array(0)], {"edge_padding_low": low,
                    "edge_padding_high": high, "interior_padding": interior})
            continue
        expected = np.zeros(sizes, x.dtype)
        for index in np.ndindex(*x.shape):
            target = tuple(lo + i * (it + 1) for i, lo, it in zip(index, low, interior))
            if all(0 <= t < s for t, s in zip(target, sizes)):
                expected[target] = x[index]
        out = run("stablehlo.pad", [x, np.array(0)], {"edge_padding_low": low,
                  "edge_padding_high": high, "interior_padding": interior})
        assert_same(out, expected)


def test_dynamic_pad():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int64)
    out = run("stablehlo.dynamic_pad", [x, np.array(0, np.int64), np.array([0, 1]),
              np.array([2, 1]), np.array([1, 2])], {}, [tensor((None, None), "i64")])
    assert out.shape == (5, 9) and out[2, 4] == 5


def test_reverse():
    x = np.arange(12, dtype=np.float16).reshape(3, 4)
    assert_same(run("stablehlo.reverse", [x], {"dimensions": [1, 0]}), x[::-1, ::-1])
    assert_same(run("stablehlo.reverse", [x], {"dimensions": []}), x)


# ---------------------------------------------------------------- misc


def test_get_dimension_size():
    out = run("stablehlo.get_dimension_size", [np.zeros((2, 3))], {"dimension": 1},
              [tensor((), "i32")])
    assert_same(out, 3, np.int32)


def test_tuples_barrier_token():
    a, b = np.array(1.0), np.array([1, 2])
    packed = run("stablehlo.tuple", [a, b])
    (value,) = packed
    assert isinstance(value, tuple) and value[1] is b
    assert run("stablehlo.get_tuple_element", [value], {"index": 1}) is b
    assert run("stablehlo.optimization_barrier", [a, b]) == [a, b]
    assert run("stablehlo.after_all", [TOKEN, TOKEN]) is TOKEN


def test_dynamic_iota():
    out = run("stablehlo.dynamic_iota", [np.array([3, 2], np.int64)], {"iota_dimension": 0},
              [tensor((None, 2), "f32")])
    assert_same(out, [[0, 0], [1, 1], [2, 2]], np.float32)
    with pytest.raises(InterpreterError):
        run("stablehlo.dynamic_iota", [np.array([3, 3], np.int64)], {"iota_dimension": 0},
            [tensor((None, 2), "f32")])


def test_rank_0_tensors_stay_rank_0():
    x = np.array(2.5, np.float32)
    scalar = tensor((), "f32")
    results = [
        run("stablehlo.broadcast_in_dim", [x], {"broadcast_dimensions": []}, [scalar]),
        run("stablehlo.reshape", [x], {}, [scalar]),
        run("stablehlo.transpose", [x], {"permutation": []}),
        run("stablehlo.slice", [x], {"start_indices": [], "limit_indices": [], "strides": []}),
        run("stablehlo.reverse", [x], {"dimensions": []}),
        run("stablehlo.pad", [x, np.array(0, np.float32)], {"edge_padding_low": [],
            "edge_padding_high": [], "interior_padding": []}),
        run("stablehlo.constant", [], {"value": x}, [scalar]),
    ]
    for out in results:
        assert isinstance(out, np.ndarray) and out.shape == () and out == 2.5
