"""Unit tests of the CHLO ops (hand-computed values, Python-int and scipy references)."""
import math

import ml_dtypes
import numpy as np
import pytest
import scipy.special

from axle.interpreter import ops_chlo  # noqa: F401  (registers the ops)
from axle.interpreter.registry import OpCall, lookup
from axle.ir.types import ELEMENT_TYPES, TensorType

ET = ELEMENT_TYPES


def arr(values, type_name):
    et = ET[type_name]
    if et.is_int:
        wide = np.uint64 if et.is_unsigned else np.int64
        return np.array(values, dtype=object).astype(wide).astype(et.dtype)
    return np.array(values).astype(et.dtype)


def run(op, *operands, types, result, result_shape=None, **attrs):
    types = [types] * len(operands) if isinstance(types, str) else list(types)
    values = [v if isinstance(v, np.ndarray) else arr(v, t) for v, t in zip(operands, types)]
    operand_types = [TensorType(np.shape(v), ET[t]) for v, t in zip(values, types)]
    shape = result_shape if result_shape is not None else np.shape(values[0])
    out = lookup(f"chlo.{op}")(OpCall(f"chlo.{op}", values, operand_types,
                                      [TensorType(tuple(shape), ET[result])], attrs))
    assert isinstance(out, np.ndarray) and out.dtype == ET[result].dtype
    return out


# ---------------------------------------------------------------- mulhi


def test_mulhi_small_widths():
    assert run("mulhi", [64, -64, -64], [4, 4, -4], types="i8", result="i8").tolist() == [1, -1, 1]
    assert run("mulhi", [240, 128], [16, 2], types="ui8", result="ui8").tolist() == [15, 1]
    assert run("mulhi", [16384, -16384], [8, 8], types="i16", result="i16").tolist() == [2, -2]
    assert run("mulhi", [2**31 - 1, -2**31], [2**31 - 1, -2**31], types="i32", result="i32").tolist() == \
        [((2**31 - 1) ** 2) >> 32, 2**62 >> 32]


@pytest.mark.parametrize("name", ["i64", "ui64"])
def test_mulhi_64_bits_matches_python_ints(name):
    rng = np.random.default_rng(3)
    signed = name == "i64"
    lo, hi = (-2**63, 2**63 - 1) if signed else (0, 2**64 - 1)
    dtype = np.int64 if signed else np.uint64
    a = [int(x) for x in rng.integers(lo, hi, 200, dtype=dtype)] + [lo, hi, hi, -1 if signed else 1]
    b = [int(x) for x in rng.integers(lo, hi, 200, dtype=dtype)] + [lo, hi, lo, lo]
    got = run("mulhi", a, b, types=name, result=name)
    expected = []
    for x, y in zip(a, b):
        h = (x * y) >> 64
        expected.append(h if signed else h % 2**64)
    assert [int(v) for v in got] == expected


# ---------------------------------------------------------------- math functions


def test_next_after():
    x = np.array([1.0, 1.0, 0.0, -0.0, np.nan, 2.0, -1.0, np.inf], np.float32)
    y = np.array([2.0, 0.0, -1.0, 1.0, 1.0, 2.0, -np.inf, 0.0], np.float32)
    got = run("next_after", x, y, types="f32", result="f32")
    np.testing.assert_array_equal(got, np.nextafter(x, y))
    got = run("next_after", [1.0, 0.0], [2.0, -1.0], types="bf16", result="bf16").astype(np.float64)
    assert got.tolist() == [1.0 + 2.0**-7, -(2.0**-133)]
    got = run("next_after", [448.0, 1.0], [1e4, np.nan], types="f8E4M3FN", result="f8E4M3FN").astype(np.float64)
    assert np.isnan(got).tolist() == [True, True]  # 448 is the largest e4m3fn value; after it comes NaN


def test_lgamma_digamma_special_values():
    x = np.array([0.5, 1.0, 3.0, -0.5, -1.0, 0.0, np.inf, -np.inf, -2.5])
    got = run("lgamma", x, types="f64", result="f64")
    assert got[:5].tolist() == pytest.approx([math.lgamma(0.5), 0.0, math.log(2.0), math.lgamma(-0.5), np.inf])
    assert got[5:8].tolist() == [np.inf, np.inf, np.inf]
    got = run("digamma", x, types="f64", result="f64")
    np.testing.assert_allclose(got[:4], scipy.special.psi(x[:4]))
    assert np.isnan(got[4]) and np.isnan(got[5])  # poles at 0 and the negative integers
    got = run("lgamma", [0.5, 4.0], types="f16", result="f16")
    assert got.tolist() == [np.float16(math.lgamma(0.5)), np.float16(math.log(6.0))]


def test_erf_family_and_bessel():
    x = np.linspace(-0.99, 0.99, 11)
    np.testing.assert_allclose(run("erf", x, types="f64", result="f64"), scipy.special.erf(x))
    np.testing.assert_allclose(run("erfc", x, types="f64", result="f64"), scipy.special.erfc(x))
    np.testing.assert_allclose(run("erf_inv", x, types="f64", result="f64"), scipy.special.erfinv(x))
    got = run("erf_inv", [1.0, -1.0, 2.0], types="f32", result="f32")
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])
    got = run("bessel_i1e", [-3.0, 0.0, 1.0, 30.0], types="bf16", result="bf16")
    expected = scipy.special.i1e([-3.0, 0.0, 1.0, 30.0]).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got, expected)


def test_zeta_and_polygamma():
    x = np.array([2.0, 3.0, 0.5, 1.0, 2.5, 2.0, 3.0])
    q = np.array([1.0, 2.0, 1.0, 1.0, -1.5, -2.0, -2.0])
    got = run("zeta", x, q, types="f64", result="f64")
    assert got[0] == pytest.approx(math.pi ** 2 / 6)
    assert got[1] == pytest.approx(scipy.special.zeta(3.0, 2.0))
    assert np.isnan(got[2]) and got[3] == np.inf and np.isnan(got[4])
    assert got[5] == np.inf and np.isnan(got[6])  # poles: +inf for even x only
    n = np.array([0.0, 1.0, 2.0, 1.5, -1.0])
    xs = np.array([0.5, 0.5, 3.0, 1.0, 1.0])
    got = run("polygamma", n, xs, types="f64", result="f64")
    np.testing.assert_allclose(got[:3], scipy.special.polygamma([0, 1, 2], xs[:3]))
    assert np.isnan(got[3]) and np.isnan(got[4])


@pytest.mark.parametrize("op", ["acos", "acosh", "asin", "asinh", "atan", "atanh", "tan"])
def test_trigonometric_real_and_complex(op):
    fn = {"acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
          "atan": np.arctan, "atanh": np.arctanh, "cosh": np.cosh, "sinh": np.sinh, "tan": np.tan}[op]
    x = np.array([0.25, 0.5, 1.5, -0.75])
    with np.errstate(invalid="ignore"):
        expected = fn(x)
        expected_f16 = fn(x.astype(np.float16).astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(run(op, x, types="f64", result="f64"), expected)
    got = run(op, x.astype(np.float16), types="f16", result="f16")
    np.testing.assert_array_equal(got, expected_f16)
    z = np.array([0.5 + 2j, -1.5 - 0.5j, 3j, 2.0 + 0j])
    np.testing.assert_allclose(run(op, z.astype(np.complex64), types="complex<f32>", result="complex<f32>"),
                               fn(z), rtol=1e-6)


@pytest.mark.parametrize("op,fn", [("cosh", np.cosh), ("sinh", np.sinh)])
def test_cosh_sinh_follow_their_decomposition(op, fn):
    x = np.array([-90.0, -3.5, -0.75, -1e-3, 0.0, 0.5, 1.0, 20.0, 89.0])
    # x + log(1/2) is rounded, so the relative error grows like |x| ulp
    for name, rtol in [("f64", 1e-13), ("f32", 1e-5), ("f16", 1e-3), ("bf16", 1e-2)]:
        got = run(op, x.astype(ET[name].dtype), types=name, result=name).astype(np.float64)
        with np.errstate(over="ignore"):
            expected = fn(x.astype(ET[name].dtype).astype(np.float64)).astype(ET[name].dtype)
        np.testing.assert_allclose(got, expected.astype(np.float64), rtol=rtol)
    assert run(op, [1e-30], types="f32", result="f32")[0] == np.float32(fn(1e-30))  # no cancellation
    z = np.array([0.5 + 2j, -1.5 - 0.5j])
    np.testing.assert_allclose(run(op, z, types="complex<f64>", result="complex<f64>"), fn(z))


def test_conj_square_is_inf():
    z = np.array([1 + 2j, -3j], np.complex64)
    assert run("conj", z, types="complex<f32>", result="complex<f32>").tolist() == [1 - 2j, 3j]
    assert run("square", [100, -3], types="i8", result="i8").tolist() == [16, 9]
    assert run("square", z, types="complex<f32>", result="complex<f32>").tolist() == [-3 + 4j, -9 + 0j]
    assert run("square", [1.5], types="bf16", result="bf16").astype(float).tolist() == [2.25]
    x = [np.inf, -np.inf, np.nan, 1.0]
    assert run("is_inf", x, types="f32", result="i1").tolist() == [True, True, False, False]
    assert run("is_pos_inf", x, types="f16", result="i1").tolist() == [True, False, False, False]
    assert run("is_neg_inf", x, types="bf16", result="i1").tolist() == [False, True, False, False]


# ---------------------------------------------------------------- constants and broadcasting


def test_constant_like_and_constant():
    operand = np.zeros((2, 3), np.float32)
    got = lookup("chlo.constant_like")(OpCall("chlo.constant_like", [operand], [TensorType((2, 3), ET["f32"])],
                                              [TensorType((2, 3), ET["bf16"])], {"value": 0.1}))
    assert got.shape == (2, 3) and got.dtype == ml_dtypes.bfloat16
    assert float(got[0, 0]) == float(ml_dtypes.bfloat16(0.1))
    got = lookup("chlo.constant_like")(OpCall("chlo.constant_like", [np.zeros((0,), np.int8)],
                                              [TensorType((0,), ET["i8"])], [TensorType((0,), ET["i8"])],
                                              {"value": 5}))
    assert got.shape == (0,) and got.dtype == np.int8
    got = lookup("chlo.constant")(OpCall("chlo.constant", [], [], [TensorType((2,), ET["i32"])],
                                         {"value": np.array([1, 2], np.int32)}))
    assert got.tolist() == [1, 2]


def test_broadcast_binary_ops():
    lhs = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = run("broadcast_add", lhs, np.array([10, 20, 30], np.int32), types="i32", result="i32")
    assert got.tolist() == [[10, 21, 32], [13, 24, 35]]
    got = run("broadcast_add", lhs, np.array([100, 200], np.int32), types="i32", result="i32",
              broadcast_dimensions=[0])
    assert got.tolist() == [[100, 101, 102], [203, 204, 205]]
    got = run("broadcast_subtract", np.array(1.0, np.float32), np.array([[1.0], [2.0]], np.float32),
              types="f32", result="f32", result_shape=(2, 1))
    assert got.tolist() == [[0.0], [-1.0]]
    got = run("broadcast_compare", lhs, np.array([1, 4, 4], np.int32), types="i32", result="i1",
              comparison_direction="GE", compare_type="SIGNED")
    assert got.tolist() == [[False, False, False], [True, True, True]]
    got = run("broadcast_select", np.array([[True], [False]]), lhs, np.array(-1, np.int32),
              types=["i1", "i32", "i32"], result="i32", result_shape=(2, 3))
    assert got.tolist() == [[0, 1, 2], [-1, -1, -1]]
    got = run("broadcast_divide", np.array([7, -7], np.int8), np.array(2, np.int8), types="i8", result="i8")
    assert got.tolist() == [3, -3]
    got = run("broadcast_next_after", np.array([1.0, 2.0]), np.array(np.inf), types="f64", result="f64")
    np.testing.assert_array_equal(got, np.nextafter([1.0, 2.0], np.inf))
    got = run("broadcast_complex", np.array([1.0, 2.0], np.float32), np.array(3.0, np.float32),
              types="f32", result="complex<f32>")
    assert got.tolist() == [1 + 3j, 2 + 3j]
    got = run("broadcast_polygamma", np.array(1.0), np.array([0.5, 1.0]), types="f64", result="f64",
              result_shape=(2,))
    np.testing.assert_allclose(got, scipy.special.polygamma(1, [0.5, 1.0]))
