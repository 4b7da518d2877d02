"""Regressions (issue 21): programs that passed verify() and then crashed, or failed deep
inside a backend, or raised the wrong exception. Each must now be a VerificationError
naming the op, from verify() and from compiling."""
import re

import numpy as np
import pytest

import axle
from axle.ir import parse_module
from axle.ir.verifier import VerificationError, verify

Q2 = "!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>"

CASES = {
    # a per-axis quantized type with fewer scales than its quantized dimension has
    # elements: compiled code read the scale table out of bounds (SIGSEGV at this size)
    "quant_scales": (f"""
func.func @main(%a: tensor<100000xi8>) -> tensor<100000xf32> {{
  %q = stablehlo.bitcast_convert %a : (tensor<100000xi8>) -> tensor<100000x{Q2}>
  %0 = stablehlo.uniform_dequantize %q : (tensor<100000x{Q2}>) -> tensor<100000xf32>
  return %0 : tensor<100000xf32>
}}""", "C13"),
    "quant_scales_argument": (f"""
func.func @main(%a: tensor<5x{Q2}>) -> tensor<5xf32> {{
  %0 = stablehlo.uniform_dequantize %a : (tensor<5x{Q2}>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}}""", "C13"),
    "fft_length": ("""
func.func @main(%a: tensor<4x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>> {
  %0 = stablehlo.fft %a, type = FFT, length = [16] : (tensor<4x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>>
  return %0 : tensor<4x8xcomplex<f32>>
}""", "fft_length [16]"),
    "dynamic_conv_lhs_dilation_0": ("""
func.func @main(%a: tensor<1x4x4x1xf32>, %w: tensor<3x3x1x1xf32>, %p: tensor<2x2xi64>) -> tensor<1x2x2x1xf32> {
  %0 = "stablehlo.dynamic_conv"(%a, %w, %p) {dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
      lhs_dilation = array<i64: 0, 1>, feature_group_count = 1 : i64, batch_group_count = 1 : i64}
      : (tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>, tensor<2x2xi64>) -> tensor<1x2x2x1xf32>
  return %0 : tensor<1x2x2x1xf32>
}""", "lhs_dilation must be positive"),
    "scatter_dims_1e400": ("""
func.func @main(%a: tensor<8xf32>, %i: tensor<1x1xi32>, %u: tensor<1xf32>) -> tensor<8xf32> {
  %0 = "stablehlo.scatter"(%a, %i, %u) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    stablehlo.return %y : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [1e400],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<8xf32>, tensor<1x1xi32>, tensor<1xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}""", "integer dimension number"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_verify_refuses(name):
    text, expected = CASES[name]
    with pytest.raises(VerificationError, match=re.escape(expected)):
        verify(parse_module(text))


@pytest.mark.parametrize("name", ["quant_scales", "quant_scales_argument"])
def test_compile_refuses_bad_quantized_type(name):
    """Compiling checks type rules too (it verifies only signatures otherwise): a clear
    VerificationError, never code that reads past the scale table."""
    with pytest.raises(VerificationError, match="C13"):
        axle.compile(CASES[name][0])


def test_matching_per_axis_scales_still_compile():
    text = f"""
func.func @main(%a: tensor<2xi8>) -> tensor<2xf32> {{
  %q = stablehlo.bitcast_convert %a : (tensor<2xi8>) -> tensor<2x{Q2}>
  %0 = stablehlo.uniform_dequantize %q : (tensor<2x{Q2}>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}}"""
    verify(parse_module(text))
    a = np.array([10, -10], np.int8)
    want = (a.astype(np.float32) - np.array([-30, -20], np.float32)) * np.array([0.1, 0.5], np.float32)
    np.testing.assert_allclose(axle.compile(text)(a), want, rtol=1e-6)
    np.testing.assert_allclose(axle.interpret(parse_module(text), a), want, rtol=1e-6)
