"""A constant operand of a kernel that reads its operands from memory (a GEMM on zeros, as an
LSTM's first step computes h0 @ W) is read from the constant's global data."""
import numpy as np

import axle
from axle.interpreter import interpret
from axle.ir import parse_module

TEXT = """
func.func @main(%w: tensor<64x16xf32>, %b: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<4x16xf32>
  %d = stablehlo.dot_general %z, %w, contracting_dims = [1] x [1] : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
  %r = stablehlo.add %d, %b : tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}
"""


def test_dot_with_a_splat_constant_operand():
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((64, 16)).astype(np.float32), rng.standard_normal((4, 64)).astype(np.float32)
    got = axle.compile(TEXT, backend="cpu")(w, b)
    np.testing.assert_allclose(got, interpret(parse_module(TEXT), w, b), rtol=1e-5, atol=1e-5)
