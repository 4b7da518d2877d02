"""Expansions compute what the expanded op computes (interpreter before and after)."""
import numpy as np

from axle.interpreter.evaluator import run_function
from axle.ir import parse_module
from axle.passes import PassManager, make_pass

BN = """
func.func @main(%x: tensor<4x2x3xf32>, %s: tensor<3xf32>, %o: tensor<3xf32>, %dy: tensor<4x2x3xf32>)
    -> (tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x2x3xf32>) {
  %0:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {epsilon = 1.0e-3 : f32, feature_index = 2 : i64} : (tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  %1:3 = "stablehlo.batch_norm_grad"(%x, %s, %0#1, %0#2, %dy) {epsilon = 1.0e-3 : f32, feature_index = 2 : i64} : (tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x2x3xf32>) -> (tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  %2 = "stablehlo.batch_norm_inference"(%x, %s, %o, %0#1, %0#2) {epsilon = 1.0e-3 : f32, feature_index = 2 : i64} : (tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x2x3xf32>
  return %0#0, %0#1, %0#2, %1#0, %1#1, %1#2, %2 : tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x2x3xf32>
}"""


def test_batch_norm_expansions_match_the_interpreter():
    r = np.random.default_rng(0)
    args = [r.standard_normal((4, 2, 3)).astype(np.float32), r.standard_normal(3).astype(np.float32),
            r.standard_normal(3).astype(np.float32), r.standard_normal((4, 2, 3)).astype(np.float32)]
    m = parse_module(BN)
    before = run_function(m, args)
    PassManager([make_pass("expand-batch-norm")], verify_each=True).run(m)
    assert not any("batch_norm" in op.name for op in m.walk())
    after = run_function(m, args)
    for a, b in zip(after, before):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def test_logistic_and_complex_expansions_match_the_interpreter():
    text = """
func.func @main(%x: tensor<5xf32>, %a: tensor<3xcomplex<f32>>, %b: tensor<3xcomplex<f32>>) -> (tensor<5xf32>, tensor<3xcomplex<f32>>) {
  %0 = stablehlo.logistic %x : tensor<5xf32>
  %1 = stablehlo.multiply %a, %b : tensor<3xcomplex<f32>>
  %2 = stablehlo.subtract %1, %a : tensor<3xcomplex<f32>>
  %3 = stablehlo.negate %2 : tensor<3xcomplex<f32>>
  return %0, %3 : tensor<5xf32>, tensor<3xcomplex<f32>>
}"""
    x = np.array([-30.0, -1.0, 0.0, 2.0, 40.0], np.float32)
    a = np.array([1 + 2j, -0.5 + 1j, 3 - 4j], np.complex64)
    b = np.array([2 - 1j, 0.25 + 0.5j, -1 - 1j], np.complex64)
    m = parse_module(text)
    before = run_function(m, [x, a, b])
    PassManager([make_pass("expand-logistic"), make_pass("expand-complex")], verify_each=True).run(m)
    assert not any(op.name == "stablehlo.logistic" for op in m.walk())
    after = run_function(m, [x, a, b])
    np.testing.assert_allclose(after[0], before[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(after[1], before[1], rtol=1e-6)
