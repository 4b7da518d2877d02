"""simplify's reduce over size-1 dimensions (reduce_trivial) on complex inits: only an
exact identity of the body may drop the reduce; 5j under add must stay an addition."""
import numpy as np

import axle

TEXT = """
func.func @main(%x: tensor<3x1xcomplex<f32>>) -> tensor<3xcomplex<f32>> {
  %init = stablehlo.constant dense<(0.0, 5.0)> : tensor<complex<f32>>
  %r = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [1] : (tensor<3x1xcomplex<f32>>, tensor<complex<f32>>) -> tensor<3xcomplex<f32>>
  return %r : tensor<3xcomplex<f32>>
}
"""


def test_complex_init_not_an_identity_keeps_the_reduce():
    x = np.array([[1 + 2j], [3 - 1j], [0.5j]], np.complex64)
    want = x[:, 0] + 5j
    np.testing.assert_allclose(axle.compile(TEXT, backend="cpu").execute([x])[0], want)
    ref = axle.interpret(TEXT, x)
    np.testing.assert_allclose(np.asarray(ref[0] if isinstance(ref, (list, tuple)) else ref), want)
