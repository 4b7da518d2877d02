"""Regressions (issue 21): the interpreter is the oracle, so its own defects hide the
backend's. Each case is checked against numpy/math and against the CPU backend."""
import math

import numpy as np
import pytest

import axle
from axle.ir import parse_module


@pytest.mark.parametrize("et,dtype,init", [("f32", np.float32, "0.0"), ("i32", np.int32, "7"),
                                           ("f64", np.float64, "-1.5"), ("i1", np.bool_, "true"),
                                           ("bf16", "bfloat16", "2.0")])
def test_reduce_empty_tensor_over_all_dims(et, dtype, init):
    """Reducing a 0x3 tensor over both dimensions gives the init value as a 0-d tensor
    (np.ascontiguousarray made it 1-d and the interpreter refused its own result)."""
    op = "or" if et == "i1" else "add"
    text = f"""
func.func @main(%a: tensor<0x3x{et}>) -> tensor<{et}> {{
  %z = stablehlo.constant dense<{init}> : tensor<{et}>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.{op} across dimensions = [0, 1] : (tensor<0x3x{et}>, tensor<{et}>) -> tensor<{et}>
  return %0 : tensor<{et}>
}}"""
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    a = np.zeros((0, 3), dt)
    want = np.array(True if init == "true" else float(init)).astype(dt)
    for got in (axle.interpret(parse_module(text), a), axle.compile(text)(a)):
        assert got.shape == () and got.dtype == dt
        assert got == want


def test_lgamma_of_the_smallest_subnormals():
    """lgamma(5e-324) = -log(5e-324) = 744.44 (scipy's gammaln overflows to inf there)."""
    text = """
func.func @main(%a: tensor<4xf64>) -> tensor<4xf64> {
  %0 = chlo.lgamma %a : tensor<4xf64> -> tensor<4xf64>
  return %0 : tensor<4xf64>
}"""
    x = np.array([5e-324, -5e-324, 1e-310, 2.0**-70])
    want = np.array([math.lgamma(v) for v in x])
    np.testing.assert_allclose(axle.interpret(parse_module(text), x), want, rtol=1e-15)
    np.testing.assert_allclose(axle.compile(text)(x), want, rtol=1e-12)


def test_custom_call_cannot_mutate_inputs_or_program_values():
    def scribble(call):
        call.operands[0][...] = 99
        return call.operands[0] * 2
    axle.register_custom_call("test.regressions.scribble", scribble)
    text = """
func.func @main(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = stablehlo.custom_call @test.regressions.scribble(%a) : (tensor<2xf32>) -> tensor<2xf32>
  %1 = stablehlo.add %a, %a : tensor<2xf32>
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}"""
    for run in (lambda x: axle.interpret(parse_module(text), x), lambda x: axle.compile(text)(x)):
        a = np.ones(2, np.float32)
        out, twice = run(a)
        np.testing.assert_array_equal(a, [1, 1])          # the caller's array
        np.testing.assert_array_equal(twice, [2, 2])      # the program's value of %a
        np.testing.assert_array_equal(out, [198, 198])    # the target worked on its copy


def test_return_of_an_argument_is_a_new_array():
    text = """
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}"""
    a = np.ones(2, np.float32)
    for got in (axle.interpret(parse_module(text), a), axle.compile(text)(a)):
        assert got is not a and not np.shares_memory(got, a)
        np.testing.assert_array_equal(got, a)
