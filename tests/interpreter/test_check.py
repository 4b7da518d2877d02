"""The check dialect and interpreter.probe (ops_check.py)."""
import ml_dtypes
import numpy as np
import pytest

from axle.ir.types import element_type_of, tensor
from axle.interpreter.collectives import ExecContext
from axle.interpreter.ops_check import (
    CHECK_TARGETS, CheckFailure, reset_default_probes, ulp_difference,
)
from axle.interpreter.registry import InterpreterError, OpCall, lookup


def run(name, operands, attrs=None, ctx=None, result_types=()):
    operands = [np.asarray(o) for o in operands]
    types = [tensor(o.shape, element_type_of(o.dtype)) for o in operands]
    c = OpCall(name, operands, types, list(result_types), attrs or {}, [], ctx)
    return lookup(name)(c)


def custom(target, *operands):
    operands = [np.asarray(o) for o in operands]
    types = [tensor(o.shape, element_type_of(o.dtype)) for o in operands]
    c = OpCall("stablehlo.custom_call", operands, types, [],
               {"call_target_name": target, "has_side_effect": True})
    return CHECK_TARGETS[target](c)


def test_check_failure_is_an_interpreter_error():
    assert issubclass(CheckFailure, InterpreterError)


# ---------------------------------------------------------------- expect_eq


def test_expect_eq_passes_and_reports_first_mismatch():
    assert run("check.expect_eq", [np.int64([-2, 0, 2]), np.int64([-2, 0, 2])]) == []
    with pytest.raises(CheckFailure) as info:
        run("check.expect_eq", [np.int64([[1, 2], [3, 4]]), np.int64([[1, 2], [5, 6]])])
    message = str(info.value)
    assert "2 of 4 elements differ" in message and "(1, 0)" in message
    assert "3 (actual)" in message and "5 (expected)" in message


def test_expect_eq_const_with_every_kind_of_element():
    run("check.expect_eq_const", [np.array([True, False])],
        {"value": np.array([True, False])})
    run("check.expect_eq_const", [np.uint64([2 ** 64 - 1])], {"value": np.uint64([2 ** 64 - 1])})
    run("check.expect_eq_const", [np.array([1, -8], ml_dtypes.int4)],
        {"value": np.array([1, -8], ml_dtypes.int4)})
    run("check.expect_eq_const", [np.complex64([1 + 2j])], {"value": np.complex64([1 + 2j])})
    run("check.expect_eq_const", [np.zeros((2, 0, 3), np.int8)], {"value": np.zeros((2, 0, 3),
                                                                                     np.int8)})
    with pytest.raises(CheckFailure):
        run("check.expect_eq_const", [np.array([True])], {"value": np.array([False])})
    with pytest.raises(CheckFailure, match="shapes differ"):
        run("check.expect_eq_const", [np.int8([1, 2])], {"value": np.int8([1, 2, 3])})


def test_expect_eq_floats_nan_equals_nan_and_zero_equals_negative_zero():
    run("check.expect_eq", [np.float32([np.nan, 0.0, np.inf]),
                            np.float32([np.nan, -0.0, np.inf])])
    with pytest.raises(CheckFailure):
        run("check.expect_eq", [np.float32([1.0]), np.float32([np.nextafter(1, 2,
                                                                           dtype=np.float32)])])


def test_expect_eq_const_splat_value():
    run("check.expect_eq_const", [np.full((2, 3), 7, np.int32)], {"value": np.int32(7)})


# ---------------------------------------------------------------- expect_almost_eq


def test_expect_almost_eq_default_tolerance():
    run("check.expect_almost_eq", [np.float64(5.0), np.float64(5.0001)])
    with pytest.raises(CheckFailure, match="tolerance 0.0001"):
        run("check.expect_almost_eq", [np.float64(5.0), np.float64(5.001)])
    run("check.expect_almost_eq", [np.float64(5.0), np.float64(5.05)], {"tolerance": 0.1})
    run("check.expect_almost_eq_const", [np.float64(5.0)], {"value": np.float64(5.1),
                                                             "tolerance": 0.1})


def test_expect_almost_eq_special_values():
    inf, nan = np.inf, np.nan
    run("check.expect_almost_eq_const", [np.float32([inf, -inf, nan, 0.0])],
        {"value": np.float32([inf, -inf, nan, -0.0])})
    for actual, expected in [(inf, 1e38), (nan, 0.0), (inf, -inf), (1.0, nan)]:
        with pytest.raises(CheckFailure):
            run("check.expect_almost_eq", [np.float32([actual]), np.float32([expected])])


def test_expect_almost_eq_narrow_floats_and_complex():
    bf16 = ml_dtypes.bfloat16
    run("check.expect_almost_eq_const", [np.array([8.0, 0.4003906], bf16)],
        {"value": np.array([8.0, 0.4003906], bf16)})
    run("check.expect_almost_eq", [np.complex128([1 + 1j]), np.complex128([1.00005 + 0.99995j])])
    with pytest.raises(CheckFailure):
        run("check.expect_almost_eq", [np.complex64([1 + 1j]), np.complex64([1 + 1.01j])])


# ---------------------------------------------------------------- expect_close


def test_ulp_difference():
    f16 = np.float16
    np.testing.assert_array_equal(
        ulp_difference(np.array([5.0, 0.0, 1.0, np.inf, np.nan], f16),
                       np.array([5.01, -0.0, -1.0, np.inf, np.nan], f16)),
        [3, 0, 2 * 15360, 0, 0])
    one = np.float32(1.0)
    assert ulp_difference(np.array([one]), np.array([np.nextafter(one, 2)]))[0] == 1
    assert ulp_difference(np.array([np.inf]), np.array([1e308]))[0] == 2 ** 64 - 1
    tiny = np.float64(5e-324)
    assert ulp_difference(np.array([tiny]), np.array([-tiny]))[0] == 2
    f8 = ml_dtypes.float8_e4m3fn
    assert ulp_difference(np.array([1.0], f8), np.array([1.25], f8))[0] == 2
    assert ulp_difference(np.array([1 + 1j]), np.array([1 + np.nextafter(1, 2) * 1j]))[0] == 1


def test_expect_close_limits():
    a, b = np.float16(5.0), np.float16(5.010)
    run("check.expect_close", [a, b], {"max_ulp_difference": 3})
    with pytest.raises(CheckFailure) as info:
        run("check.expect_close", [a, b], {"max_ulp_difference": 2})
    assert "3 ULPs apart" in str(info.value)
    with pytest.raises(CheckFailure, match=r"within \[1, 1\]"):
        run("check.expect_close", [a, a], {"min_ulp_difference": 1})


def test_expect_close_default_is_one_ulp():
    one = np.float64(1.0)
    run("check.expect_close", [one, np.nextafter(one, 2)])
    with pytest.raises(CheckFailure):
        run("check.expect_close", [one, np.nextafter(np.nextafter(one, 2), 2)])


# ---------------------------------------------------------------- probes


def test_probe_and_expect_serialized_eq_with_iterations():
    ctx = ExecContext.single_process()
    for value in [1, 2, 3]:
        out = run("interpreter.probe", [np.int64(value)], {"probe_id": "p/0"}, ctx)
        assert out == value
    run("check.expect_serialized_eq", [np.int64(1)], {"probe_id": "p/0"}, ctx)
    run("check.expect_serialized_eq", [np.int64(3)], {"probe_id": "p/0", "iteration": 2}, ctx)
    with pytest.raises(CheckFailure):
        run("check.expect_serialized_eq", [np.int64(3)], {"probe_id": "p/0", "iter": 1}, ctx)
    with pytest.raises(CheckFailure, match="no value"):
        run("check.expect_serialized_eq", [np.int64(3)], {"probe_id": "p/0", "iteration": 3},
            ctx)
    with pytest.raises(CheckFailure, match="type"):
        run("check.expect_serialized_eq", [np.int32(1)], {"probe_id": "p/0"}, ctx)


def test_probe_records_a_copy_and_default_store():
    reset_default_probes()
    x = np.float32([1.0, 2.0])
    run("interpreter.probe", [x], {"probe_id": "a"})
    x[0] = 7
    run("check.expect_serialized_eq", [np.float32([1.0, 2.0])], {"probe_id": "a"})
    reset_default_probes()
    with pytest.raises(CheckFailure):
        run("check.expect_serialized_eq", [np.float32([1.0, 2.0])], {"probe_id": "a"})


# ---------------------------------------------------------------- custom_call targets


def test_custom_call_check_eq_returns_true_or_fails():
    result, = custom("check.eq", np.float32([1.0, 2.0]), np.float32([1.00005, 2.0]))
    assert result.dtype == np.bool_ and result.shape == () and bool(result)
    with pytest.raises(CheckFailure):
        custom("check.eq", np.float32([1.0]), np.float32([1.001]))
    with pytest.raises(CheckFailure):
        custom("check.eq", np.int32([1]), np.int32([2]))


def test_custom_call_expect_close_allows_three_ulps():
    one = np.float32(1.0)
    three = one
    for _ in range(3):
        three = np.nextafter(three, np.float32(2))
    assert custom("check.expect_close", np.float32([one]), np.float32([three])) == []
    with pytest.raises(CheckFailure):
        custom("check.expect_close", np.float32([one]), np.float32([np.nextafter(three, 2)]))


def test_custom_call_expect_almost_eq_and_expect_eq():
    custom("check.expect_almost_eq", np.float32([1.0]), np.float32([1.0009]))
    with pytest.raises(CheckFailure):
        custom("check.expect_almost_eq", np.float32([1.0]), np.float32([1.002]))
    custom("check.expect_eq", np.array(True), np.array(True))
    with pytest.raises(CheckFailure):
        custom("check.expect_eq", np.uint8([255]), np.uint8([254]))


def test_interpreter_print(capsys):
    assert run("interpreter.print", [np.int32([0, 1])]) == []
    assert capsys.readouterr().out == "tensor<2xi32> {\n  [0, 1]\n}\n"
