"""Unit tests of the StableHLO elementwise ops and of numerics.py (hand-computed values and
numpy/Python-int references, independent of the conformance suites)."""
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from axle.interpreter import ops_elementwise  # noqa: F401  (registers the ops)
from axle.interpreter import numerics
from axle.interpreter.registry import OpCall, lookup
from axle.ir.types import ELEMENT_TYPES, QuantizedType, TensorType

ET = ELEMENT_TYPES


def arr(values, type_name):
    """A numpy array of element type `type_name` (Python ints of any size are exact)."""
    et = ET[type_name]
    if et.is_int:
        wide = np.uint64 if et.is_unsigned else np.int64
        return np.array(values, dtype=object).astype(wide).astype(et.dtype)
    return np.array(values).astype(et.dtype)


def run(op, *operands, types, result, **attrs):
    """Evaluates stablehlo.<op> on numpy operands of the given element types."""
    types = [types] * len(operands) if isinstance(types, str) else list(types)
    values = [arr(v, t) if not isinstance(v, np.ndarray) else v for v, t in zip(operands, types)]
    operand_types = [TensorType(np.shape(v), ET[t]) for v, t in zip(values, types)]
    result_type = TensorType(np.shape(values[-1]), ET[result])
    impl = lookup(op if "." in op else f"stablehlo.{op}")
    out = impl(OpCall(op, values, operand_types, [result_type], attrs))
    assert isinstance(out, np.ndarray)
    assert out.dtype == ET[result].dtype, (out.dtype, result)
    return out


def bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- integer arithmetic


@pytest.mark.parametrize("name,lo,hi", [("i2", -2, 1), ("i4", -8, 7), ("ui4", 0, 15),
                                        ("i8", -128, 127), ("ui8", 0, 255), ("i16", -2**15, 2**15 - 1),
                                        ("ui32", 0, 2**32 - 1), ("i64", -2**63, 2**63 - 1),
                                        ("ui64", 0, 2**64 - 1)])
def test_integer_ops_wrap_around(name, lo, hi):
    width = ET[name].bitwidth
    rng = np.random.default_rng(width)
    a = [int(x) for x in rng.integers(lo, hi, 50, endpoint=True, dtype=np.int64 if lo < 0 else np.uint64)] + [lo, hi]
    b = [int(x) for x in rng.integers(lo, hi, 50, endpoint=True, dtype=np.int64 if lo < 0 else np.uint64)] + [hi, hi]

    def wrap(v):
        v %= 1 << width
        return v - (1 << width) if lo < 0 and v > hi else v

    for op, fn in [("add", lambda x, y: x + y), ("subtract", lambda x, y: x - y),
                   ("multiply", lambda x, y: x * y), ("and", lambda x, y: x & y),
                   ("or", lambda x, y: x | y), ("xor", lambda x, y: x ^ y)]:
        got = run(op, a, b, types=name, result=name)
        assert [int(x) for x in got] == [wrap(fn(x, y)) for x, y in zip(a, b)], op
    got = run("negate", a, types=name, result=name)
    assert [int(x) for x in got] == [wrap(-x) for x in a]
    got = run("not", a, types=name, result=name)
    assert [int(x) for x in got] == [wrap(~x) for x in a]


def test_bool_arithmetic_is_logical():
    a, b = [False, False, True, True], [False, True, False, True]
    assert run("add", a, b, types="i1", result="i1").tolist() == [False, True, True, True]
    assert run("multiply", a, b, types="i1", result="i1").tolist() == [False, False, False, True]
    assert run("xor", a, b, types="i1", result="i1").tolist() == [False, True, True, False]
    assert run("not", a, types="i1", result="i1").tolist() == [True, True, False, False]
    assert run("maximum", a, b, types="i1", result="i1").tolist() == [False, True, True, True]
    assert run("minimum", a, b, types="i1", result="i1").tolist() == [False, False, False, True]


def test_integer_divide_and_remainder():
    lhs, rhs = [17, -17, 17, -17, 7, -7, 0], [3, 3, -3, -3, 0, 0, 5]
    assert run("divide", lhs, rhs, types="i64", result="i64").tolist() == [5, -5, -5, 5, -1, -1, 0]
    assert run("remainder", lhs, rhs, types="i64", result="i64").tolist() == [2, -2, 2, -2, 7, -7, 0]
    for name, lo in [("i8", -128), ("i32", -2**31), ("i64", -2**63)]:
        assert run("divide", [lo], [-1], types=name, result=name).tolist() == [lo]
        assert run("remainder", [lo], [-1], types=name, result=name).tolist() == [0]
    assert run("divide", [17, 5], [3, 0], types="ui8", result="ui8").tolist() == [5, 255]
    assert run("remainder", [17, 5], [3, 0], types="ui8", result="ui8").tolist() == [2, 5]
    assert run("divide", [2**64 - 1], [2], types="ui64", result="ui64").tolist() == [2**63 - 1]
    assert run("divide", [-7, 7], [2, -2], types="i4", result="i4").tolist() == [-3, -3]


def test_integer_power():
    got = run("power", [-1, -1, -3, 1, -3, 0, 2, -1], [1, 0, -3, -3, 3, 2, 63, -2**63],
              types="i64", result="i64")
    assert got.tolist() == [-1, 1, 0, 1, -27, 0, 2**63 % 2**64 - 2**64, 1]
    got = run("power", [0, 0, 1, 1, 5, 3], [0, 1, 0, 2, 5, 40], types="ui64", result="ui64")
    assert got.tolist() == [1, 0, 1, 1, 3125, 3**40 % 2**64]
    assert run("power", [3, -2], [5, 3], types="i8", result="i8").tolist() == [(243 + 128) % 256 - 128, -8]


def test_abs_sign_of_integers():
    assert run("abs", [-128, -1, 0, 5], types="i8", result="i8").tolist() == [-128, 1, 0, 5]
    assert run("sign", [-128, -1, 0, 5], types="i8", result="i8").tolist() == [-1, -1, 0, 1]
    assert run("sign", [0, 200], types="ui8", result="ui8").tolist() == [0, 1]


def test_popcnt_and_count_leading_zeros():
    assert run("popcnt", [0, 1, 2, 127, -1], types="i64", result="i64").tolist() == [0, 1, 1, 7, 64]
    assert run("popcnt", [-1, 7, -8], types="i4", result="i4").tolist() == [4, 3, 1]
    assert run("count_leading_zeros", [0, 1, 128, -1], types="i64", result="i64").tolist() == [64, 63, 56, 0]
    assert run("count_leading_zeros", [0, 1, 7, -8], types="i4", result="i4").tolist() == [4, 3, 1, 0]
    assert run("count_leading_zeros", [0, 255, 16], types="ui8", result="ui8").tolist() == [8, 0, 3]


def test_shifts_including_out_of_range_amounts():
    lhs, rhs = [-1, 0, 1, 1, -8, 5], [1, 2, 3, 64, 70, -1]
    assert run("shift_left", lhs, rhs, types="i64", result="i64").tolist() == [-2, 0, 8, 0, 0, 0]
    assert run("shift_right_logical", [-1, 0, 8, -1, 9], [1, 2, 3, 64, -3], types="i64",
               result="i64").tolist() == [2**63 - 1, 0, 1, 0, 0]
    assert run("shift_right_arithmetic", [-1, 0, 8, -8, 8, -8], [1, 2, 3, 64, 99, -1], types="i64",
               result="i64").tolist() == [-1, 0, 1, -1, 0, -1]
    assert run("shift_left", [1, 3, 1], [3, 2, 4], types="i4", result="i4").tolist() == [-8, -4, 0]
    assert run("shift_right_logical", [-8, -1], [1, 3], types="i4", result="i4").tolist() == [4, 1]
    assert run("shift_right_arithmetic", [-8, 7], [1, 9], types="i4", result="i4").tolist() == [-4, 0]
    assert run("shift_right_arithmetic", [0x80, 0x80], [1, 8], types="ui8", result="ui8").tolist() == [0xC0, 0xFF]


# ---------------------------------------------------------------- floats


def test_float_special_values_round_once():
    nan, inf = np.nan, np.inf
    for name in ("f16", "bf16", "f32", "f64"):
        got = run("add", [0.0, -0.0, 1.0, inf, inf], [0.0, -0.0, 7.0, 0.0, -inf], types=name, result=name)
        assert np.array_equal(got.astype(np.float64), [0.0, -0.0, 8.0, inf, nan], equal_nan=True)
        assert np.signbit(got[1].astype(np.float64))


def test_bf16_add_is_correctly_rounded():
    # 1 + 2^-8 is a tie in bf16 (rounds to even: 1.0), but 1 + 2^-8 + 2^-15 is above it.
    got = run("add", [1.0, 1.0], [2.0**-8, 2.0**-8 + 2.0**-15], types="bf16", result="bf16")
    assert got.astype(np.float64).tolist() == [1.0, 1.0 + 2.0**-7]


def test_f8_arithmetic_rounds_to_the_type():
    got = run("multiply", [3.0, 448.0], [1.25, 2.0], types="f8E4M3FN", result="f8E4M3FN")
    assert got.astype(np.float64)[0] == 3.75
    assert np.isnan(got.astype(np.float64)[1])  # no infinity in e4m3fn: overflow is NaN
    got = run("add", [1.0], [0.25], types="f4E2M1FN", result="f4E2M1FN")
    assert got.astype(np.float64).tolist() == [1.0]


def test_divide_remainder_power_floats():
    got = run("divide", [17.1, -17.1, 1.0, -1.0, 0.0], [3.0, 3.0, 0.0, 0.0, 0.0], types="f64", result="f64")
    assert np.array_equal(got, [17.1 / 3, -17.1 / 3, np.inf, -np.inf, np.nan], equal_nan=True)
    got = run("remainder", [17.1, -17.1, 17.1, -17.1], [3.0, 3.0, -3.0, -3.0], types="f64", result="f64")
    assert got.tolist() == [2.1000000000000014, -2.1000000000000014, 2.1000000000000014, -2.1000000000000014]
    got = run("remainder", [5.5, -5.5], [2.0, 2.0], types="bf16", result="bf16")
    assert got.astype(np.float64).tolist() == [1.5, -1.5]
    got = run("power", [-2.0, -0.0, -36.0, 5.0, 3.0, 10000.0], [2.0, 2.0, 1.1, 2.0, -1.0, 10.0],
              types="f64", result="f64")
    assert np.array_equal(got, [4.0, 0.0, np.nan, 25.0, 1 / 3, 1e40], equal_nan=True)


def test_maximum_minimum_nan_and_signed_zero():
    a, b = [np.nan, 1.0, -0.0, 0.0, 2.0], [1.0, np.nan, 0.0, -0.0, -3.0]
    got = run("maximum", a, b, types="f32", result="f32")
    assert np.array_equal(got, [np.nan, np.nan, 0.0, 0.0, 2.0], equal_nan=True)
    assert not np.signbit(got[2]) and not np.signbit(got[3])
    got = run("minimum", a, b, types="f32", result="f32")
    assert np.array_equal(got, [np.nan, np.nan, -0.0, -0.0, -3.0], equal_nan=True)
    assert np.signbit(got[2]) and np.signbit(got[3])


def test_complex_maximum_minimum_are_lexicographic():
    a = np.array([1 + 5j, 2 + 1j, 3 + 3j], np.complex64)
    b = np.array([1 + 6j, 1 + 9j, 3 + 3j], np.complex64)
    assert run("maximum", a, b, types="complex<f32>", result="complex<f32>").tolist() == [1 + 6j, 2 + 1j, 3 + 3j]
    assert run("minimum", a, b, types="complex<f32>", result="complex<f32>").tolist() == [1 + 5j, 1 + 9j, 3 + 3j]


def test_clamp_with_scalar_bounds():
    got = run("clamp", np.array(5, np.int32), [3, 13, 23], np.array(20, np.int32), types="i32", result="i32")
    assert got.tolist() == [5, 13, 20]
    got = run("clamp", [5, 10, 15], [3, 13, 23], [10, 15, 20], types="i32", result="i32")
    assert got.tolist() == [5, 13, 20]
    got = run("clamp", np.array(0.0, np.float32), [np.nan, -1.0, 2.0], np.array(1.0, np.float32),
              types="f32", result="f32")
    assert np.array_equal(got, [np.nan, 0.0, 1.0], equal_nan=True)


def test_rounding_ops():
    x = [-2.5, -0.5, 0.4, 0.5, 0.6, 2.5, 0.49999999999999994, -0.3]
    got = run("round_nearest_afz", x, types="f64", result="f64")
    assert got.tolist() == [-3.0, -1.0, 0.0, 1.0, 1.0, 3.0, 0.0, -0.0]
    assert np.signbit(got[-1])
    got = run("round_nearest_even", x, types="f64", result="f64")
    assert got.tolist() == [-2.0, -0.0, 0.0, 0.0, 1.0, 2.0, 0.0, -0.0]
    x = [-0.8166, -0.2530, 0.2530, 0.8166, 2.0]
    got = run("ceil", x, types="f32", result="f32")
    assert got.tolist() == [-0.0, -0.0, 1.0, 1.0, 2.0] and np.signbit(got[0])
    assert run("floor", x, types="bf16", result="bf16").astype(float).tolist() == [-1.0, -1.0, 0.0, 0.0, 2.0]


def test_sign_of_floats_and_complex():
    got = run("sign", [np.nan, -1.5, -0.0, 0.0, 3.0], types="f64", result="f64")
    assert np.array_equal(got, [np.nan, -1.0, -0.0, 0.0, 1.0], equal_nan=True)
    assert np.signbit(got[2]) and not np.signbit(got[3])
    got = run("sign", np.array([3 + 4j, 0j, complex(np.nan, 1)]), types="complex<f64>", result="complex<f64>")
    np.testing.assert_allclose(got[:2], [0.6 + 0.8j, 0])
    assert np.isnan(got[2].real) and np.isnan(got[2].imag)


@pytest.mark.parametrize("name", ["f16", "bf16", "f32", "f64"])
def test_transcendental_functions_match_numpy(name):
    x = np.linspace(0.1, 3.0, 17).astype(ET[name].dtype)
    x64 = x.astype(np.float64)
    for op, fn in [("exponential", np.exp), ("log", np.log), ("sine", np.sin), ("cosine", np.cos),
                   ("tan", np.tan), ("tanh", np.tanh), ("sqrt", np.sqrt), ("cbrt", np.cbrt),
                   ("rsqrt", lambda v: 1 / np.sqrt(v)), ("log_plus_one", np.log1p),
                   ("exponential_minus_one", np.expm1), ("logistic", lambda v: 1 / (1 + np.exp(-v)))]:
        got = run(op, x, types=name, result=name)
        expected = fn(x64).astype(ET[name].dtype)
        np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64), err_msg=op)
    got = run("atan2", x, x[::-1], types=name, result=name)
    np.testing.assert_array_equal(got, np.arctan2(x64, x64[::-1]).astype(ET[name].dtype))


def test_complex_functions():
    z = np.array([1.5 + 2.5j, -0.5 + 0.25j, 3 - 1j])
    got = run("exponential_minus_one", z, types="complex<f64>", result="complex<f64>")
    np.testing.assert_allclose(got, np.exp(z) - 1)
    got = run("log_plus_one", z, types="complex<f64>", result="complex<f64>")
    np.testing.assert_allclose(got, np.log(1 + z))
    got = run("cbrt", z, types="complex<f64>", result="complex<f64>")
    np.testing.assert_allclose(got ** 3, z)
    got = run("atan2", z, z[::-1], types="complex<f64>", result="complex<f64>")
    np.testing.assert_allclose(np.tan(got), z / z[::-1])
    got = run("abs", z.astype(np.complex64), types="complex<f32>", result="f32")
    np.testing.assert_allclose(got, np.abs(z), rtol=1e-6)
    got = run("divide", np.array([1.5 + 2.5j]), np.array([2.5 + 1.5j]), types="complex<f64>", result="complex<f64>")
    np.testing.assert_allclose(got, [0.88235294117647056 + 0.4705882352941177j])


def test_complex_real_imag():
    got = run("complex", [1.0, 3.0], [2.0, np.inf], types="f32", result="complex<f32>")
    assert got.tolist() == [1 + 2j, complex(3, np.inf)]
    z = np.array([1 + 2j, 3 + 4j], np.complex64)
    assert run("real", z, types="complex<f32>", result="f32").tolist() == [1.0, 3.0]
    assert run("imag", z, types="complex<f32>", result="f32").tolist() == [2.0, 4.0]
    assert run("imag", [1.0, -2.0], types="f16", result="f16").tolist() == [0.0, 0.0]
    assert run("real", [1.0, -2.0], types="bf16", result="bf16").astype(float).tolist() == [1.0, -2.0]


def test_is_finite():
    got = run("is_finite", [-np.inf, np.inf, np.nan, -10.0, -0.0, 0.0, 10.0], types="f64", result="i1")
    assert got.tolist() == [False, False, False, True, True, True, True]
    got = run("is_finite", [np.nan, 448.0], types="f8E4M3FN", result="i1")
    assert got.tolist() == [False, True]


def test_reduce_precision():
    x = np.array([0x7FF0000000000000, 0x7FFFFFFFFFFFFFFF, 1, 0, 0], np.uint64).view(np.float64)
    x[3:] = [65519.0, 65520.0]
    got = run("reduce_precision", x, types="f64", result="f64", exponent_bits=5, mantissa_bits=10)
    expected = np.array([np.inf, 0, 0.0, 65504.0, np.inf])
    assert bits_equal(got[1], x[1])  # NaN keeps its payload
    np.testing.assert_array_equal(np.delete(got, 1), np.delete(expected, 1))
    got = run("reduce_precision", np.array([np.nan]), types="f64", result="f64", exponent_bits=5, mantissa_bits=0)
    assert got.tolist() == [np.inf]
    # reduce_precision to e8m7 is rounding to bf16
    values = np.random.default_rng(0).standard_normal(100).astype(np.float32) * 1e3
    got = run("reduce_precision", values, types="f32", result="f32", exponent_bits=8, mantissa_bits=7)
    np.testing.assert_array_equal(got, values.astype(ml_dtypes.bfloat16).astype(np.float32))
    # and to e5m10 is rounding to f16 without subnormals
    got = run("reduce_precision", np.array([2.76674843, 1e-6, 70000.0], np.float32), types="f32",
              result="f32", exponent_bits=5, mantissa_bits=10)
    assert got.tolist() == [np.float32(2.76757813), 0.0, np.inf]


# ---------------------------------------------------------------- comparison and selection


def test_compare_integers_and_bools():
    lhs, rhs = [-2, -1, 0, 2, 2], [-2, -2, 0, 1, 2]
    expected = {"EQ": [1, 0, 1, 0, 1], "NE": [0, 1, 0, 1, 0], "GE": [1, 1, 1, 1, 1],
                "GT": [0, 1, 0, 1, 0], "LE": [1, 0, 1, 0, 1], "LT": [0, 0, 0, 0, 0]}
    for direction, values in expected.items():
        got = run("compare", lhs, rhs, types="i64", result="i1", comparison_direction=direction,
                  compare_type="SIGNED")
        assert got.tolist() == [bool(v) for v in values], direction
    got = run("compare", [2**64 - 1], [1], types="ui64", result="i1", comparison_direction="GT")
    assert got.tolist() == [True]
    got = run("compare", [-1], [1], types="i8", result="i1", comparison_direction="GT",
              compare_type="UNSIGNED")
    assert got.tolist() == [True]
    got = run("compare", [True, False], [False, True], types="i1", result="i1", comparison_direction="LT")
    assert got.tolist() == [False, True]


def test_compare_floats_quiet_and_total_order():
    lhs = [np.nan, 1.0, -0.0, np.nan, -np.inf]
    rhs = [np.nan, 2.0, 0.0, 1.0, -np.nan]
    got = run("compare", lhs, rhs, types="f32", result="i1", comparison_direction="EQ", compare_type="FLOAT")
    assert got.tolist() == [False, False, True, False, False]
    got = run("compare", lhs, rhs, types="f32", result="i1", comparison_direction="NE")
    assert got.tolist() == [True, True, False, True, True]
    got = run("compare", lhs, rhs, types="f32", result="i1", comparison_direction="EQ",
              compare_type="TOTALORDER")
    assert got.tolist() == [True, False, False, False, False]
    got = run("compare", lhs, rhs, types="f32", result="i1", comparison_direction="LT",
              compare_type="TOTALORDER")
    assert got.tolist() == [False, True, True, False, False]  # -inf > -nan in total order
    values = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0], np.float32)
    keys = numerics.total_order_key(values, ET["f32"])
    order = values[np.argsort(keys)]
    assert bits_equal(order, np.array([-np.nan, -np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan], np.float32))


def test_compare_complex():
    a = np.array([1 + 2j, 1 + 2j, complex(np.nan, 0)])
    b = np.array([1 + 2j, 1 + 3j, complex(np.nan, 0)])
    expected = {"EQ": [True, False, False], "NE": [False, True, True],
                "LT": [False, True, False], "GE": [True, False, False]}
    for direction, values in expected.items():
        got = run("compare", a, b, types="complex<f64>", result="i1", comparison_direction=direction)
        assert got.tolist() == values, direction


def test_select_with_scalar_and_tensor_predicate():
    got = run("select", [[False, True], [True, False]], [[1, 2], [3, 4]], [[5, 6], [7, 8]],
              types=["i1", "i32", "i32"], result="i32")
    assert got.tolist() == [[5, 2], [3, 8]]
    got = run("select", np.array(True), [1.0, 2.0], [3.0, 4.0], types=["i1", "bf16", "bf16"], result="bf16")
    assert got.astype(float).tolist() == [1.0, 2.0]


# ---------------------------------------------------------------- conversions


def test_convert_bool_int_float_complex():
    assert run("convert", [True, False], types="i1", result="f64").tolist() == [1.0, 0.0]
    assert run("convert", [True, False], types="i1", result="complex<f64>").tolist() == [1, 0]
    assert run("convert", [-1, 0, 1], types="i64", result="i1").tolist() == [True, False, True]
    assert run("convert", [-1.0, 0.0, -0.0, np.nan], types="f64", result="i1").tolist() == [True, False, False, True]
    z = np.array([-1 + 0j, 1j, 1 + 0j])
    assert run("convert", z, types="complex<f64>", result="i1").tolist() == [True, False, True]
    assert run("convert", z, types="complex<f64>", result="i64").tolist() == [-1, 0, 1]
    assert run("convert", z, types="complex<f64>", result="f32").tolist() == [-1.0, 0.0, 1.0]
    assert run("convert", [-1, 0, 1], types="i4", result="complex<f64>").tolist() == [-1, 0, 1]
    assert run("convert", [-1, 7], types="i4", result="ui64").tolist() == [2**64 - 1, 7]
    assert run("convert", [300, -129], types="i32", result="i8").tolist() == [44, 127]
    assert run("convert", [15], types="ui4", result="i4").tolist() == [-1]
    assert run("convert", [2**64 - 1], types="ui64", result="f32").tolist() == [2.0**64]


def test_convert_float_to_int_truncates_and_saturates():
    x = [1.9, -1.9, 1e10, -1e10, np.nan, np.inf, -np.inf, -0.5]
    assert run("convert", x, types="f64", result="i32").tolist() == [1, -1, 2**31 - 1, -2**31, 0, 2**31 - 1, -2**31, 0]
    assert run("convert", x, types="f64", result="ui8").tolist() == [1, 0, 255, 0, 0, 255, 0, 0]
    assert run("convert", [9.3e18, -9.3e18], types="f64", result="i64").tolist() == [2**63 - 1, -2**63]
    assert run("convert", [1.9e19, 2.0**63], types="f64", result="ui64").tolist() == [2**64 - 1, 2**63]
    assert run("convert", [9.0, -9.0, 7.9], types="f32", result="i4").tolist() == [7, -8, 7]


def test_convert_between_floats_rounds_once():
    x = np.array([1 + 2.0**-8 + 2.0**-30, 1 + 2.0**-8, 3.0e38, 1e-40])
    got = run("convert", x, types="f64", result="bf16").astype(np.float64)
    assert got[0] == 1 + 2.0**-7 and got[1] == 1.0 and got[2] == np.float64(ml_dtypes.bfloat16(3.0e38))
    got = run("convert", [1e9, 300.0, 3.6], types="f32", result="f8E4M3FN").astype(np.float64)
    assert np.isnan(got[0]) and got[1] == 288.0 and got[2] == 3.5
    got = run("convert", [1e9, 3.6], types="f32", result="f8E5M2").astype(np.float64)
    assert got.tolist() == [np.inf, 3.5]
    got = run("convert", [100, -3], types="i32", result="f8E4M3FN").astype(np.float64)
    assert got.tolist() == [96.0, -3.0]
    got = run("convert", np.array([1 + 2j]), types="complex<f64>", result="complex<f32>")
    assert got.dtype == np.complex64 and got.tolist() == [1 + 2j]
    got = run("convert", [2.5], types="f16", result="complex<f32>")
    assert got.tolist() == [2.5 + 0j]


def test_round_float_is_correct_for_every_small_type():
    rng = np.random.default_rng(1)
    for name in ["bf16", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ",
                 "f8E4M3", "f8E3M4", "f4E2M1FN", "f6E2M3FN", "f6E3M2FN", "f16"]:
        et = ET[name]
        codes = np.arange(2 ** et.bitwidth, dtype=np.uint64)
        with np.errstate(invalid="ignore"):
            values = numerics.from_raw_bits(codes, et).astype(np.float64)
        finite = np.unique(values[np.isfinite(values)])
        mids = (finite[:-1] + finite[1:]) / 2
        x = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                            rng.uniform(finite[0], finite[-1], 500)])
        got = numerics.round_float(x, et).astype(np.float64)
        for xi, gi in zip(x[::7], got[::7]):
            i = np.searchsorted(finite, xi)
            lo, hi = finite[max(i - 1, 0)], finite[min(i, len(finite) - 1)]
            dlo, dhi = Fraction(xi) - Fraction(lo), Fraction(hi) - Fraction(xi)
            if dlo != dhi:
                expected = lo if dlo < dhi else hi
            else:
                lo_code = int(numerics.raw_bits(np.array(lo).astype(et.dtype), et))
                expected = lo if lo_code % 2 == 0 else hi
            assert gi == expected, (name, xi, gi, expected)


# ---------------------------------------------------------------- bitcast_convert


def test_bitcast_convert_changes_widths_little_endian():
    word = np.array(0x0123456789ABCDEF, np.int64)
    bits = [bool((0x0123456789ABCDEF >> i) & 1) for i in range(64)]
    assert run("bitcast_convert", word, types="i64", result="i1").tolist() == bits
    got = lookup("stablehlo.bitcast_convert")(OpCall(
        "bitcast_convert", [np.array(bits)], [TensorType((64,), ET["i1"])], [TensorType((), ET["i64"])], {}))
    assert got.shape == () and int(got) == 0x0123456789ABCDEF
    halves = lookup("stablehlo.bitcast_convert")(OpCall(
        "bitcast_convert", [word.view(np.float64)], [TensorType((), ET["f64"])],
        [TensorType((4,), ET["f16"])], {}))
    assert halves.view(np.uint16).tolist() == [0xCDEF, 0x89AB, 0x4567, 0x0123]
    c = np.array(complex(np.int64(0x0123456789ABCDEF).view(np.float64), np.int64(0x11111111).view(np.float64)))
    got = lookup("stablehlo.bitcast_convert")(OpCall(
        "bitcast_convert", [c], [TensorType((), ET["complex<f64>"])],
        [TensorType((2,), ET["complex<f32>"])], {}))
    assert got.view(np.uint32).tolist() == [0x89ABCDEF, 0x01234567, 0x11111111, 0]


def test_bitcast_convert_sub_byte_and_same_width():
    nibbles = np.array([[0x1, -0x8], [0x7, -0x1]]).astype(ml_dtypes.int4)
    got = lookup("stablehlo.bitcast_convert")(OpCall(
        "bitcast_convert", [nibbles], [TensorType((2, 2), ET["i4"])], [TensorType((2,), ET["ui8"])], {}))
    assert got.tolist() == [0x81, 0xF7]
    assert run("bitcast_convert", [1.0, -2.0], types="f32", result="i32").tolist() == [0x3F800000, -0x40000000]
    got = run("bitcast_convert", [0x3F80, 0x7FC0], types="i16", result="bf16").astype(np.float64)
    assert got[0] == 1.0 and np.isnan(got[1])
    got = run("bitcast_convert", [6.0, -0.5], types="f4E2M1FN", result="ui4")
    assert got.tolist() == [0x7, 0x9]
    empty = np.zeros((0, 3), np.float32)
    assert run("bitcast_convert", empty, types="f32", result="ui32").shape == (0, 3)


# ---------------------------------------------------------------- shapes and quantization


def test_zero_sized_and_scalar_operands():
    empty = np.zeros((2, 0, 3), ml_dtypes.int4)
    assert run("add", empty, empty, types="i4", result="i4").shape == (2, 0, 3)
    assert run("exponential", np.zeros((0,), np.float16), types="f16", result="f16").shape == (0,)
    assert run("count_leading_zeros", np.zeros((0, 2), np.int8), types="i8", result="i8").shape == (0, 2)
    got = run("add", np.array(2).astype(ml_dtypes.int4), np.array(3).astype(ml_dtypes.int4), types="i4", result="i4")
    assert got.shape == () and int(got) == 5
    got = run("multiply", np.array(2**62), np.array(4), types="i64", result="i64")
    assert got.shape == () and int(got) == 0


def test_dequantize_and_quantize():
    q_in = QuantizedType(ET["i8"], ET["f32"], (0.5,), (-10,))
    storage = np.array([-10, -8, 0, 100], np.int8)
    assert numerics.dequantize(storage, q_in).tolist() == [0.0, 1.0, 5.0, 55.0]
    q_out = QuantizedType(ET["i8"], ET["f32"], (0.25,), (0,))
    values = np.array([0.3, 0.25, 0.375, np.nan, 1e3, -1e3], np.float32)
    assert numerics.quantize(values, q_out).tolist() == [1, 1, 2, 0, 127, -128]
    narrow = QuantizedType(ET["i8"], ET["f32"], (1.0,), (0,), storage_min=-5, storage_max=5)
    assert numerics.quantize(np.array([9.0, -9.0], np.float32), narrow).tolist() == [5, -5]
    per_axis = QuantizedType(ET["i8"], ET["f32"], (1.0, 2.0), (0, 1), quantized_dimension=1)
    assert numerics.dequantize(np.array([[1, 1], [2, 3]], np.int8), per_axis).tolist() == [[1.0, 0.0], [2.0, 4.0]]
