"""MLIR as other exporters write it (torch-mlir, stablehlo-translate, MLIR with debug info):
arith.constant, dense_resource blobs, dynamic_iota, stablehlo.dot, calls of private functions,
location aliases. Read, verified, interpreted and compiled; results against numpy."""
import numpy as np

import axle
from axle.interpreter.evaluator import run_function
from axle.ir import parse_module, print_module
from axle.ir.verifier import verify

W = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
BLOB = "0x04000000" + W.tobytes().hex().upper()  # torch-mlir: 4-byte alignment, then the data

TEXT = """#loc1 = loc("model.py":12:3)
#loc2 = loc("linear"(#loc1))
module @torch_like attributes {torch.debug_module_name = "M"} {
  func.func private @scale(%x: tensor<2x3xf32> loc("helper.py":1:1)) -> tensor<2x3xf32> {
    %c = arith.constant dense<2.0> : tensor<2x3xf32> loc(#loc2)
    %0 = stablehlo.multiply %x, %c : tensor<2x3xf32> loc(#loc2)
    return %0 : tensor<2x3xf32> loc(#loc1)
  } loc(#loc1)
  func.func @main(%arg0: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<5xi32>) {
    %w = stablehlo.constant dense_resource<torch_tensor_3_4_torch.float32> : tensor<3x4xf32> loc(fused["a.py":1:2, "b.py":3:4])
    %h = call @scale(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc(callsite("f"("x.py":1:1) at "y.py":2:2))
    %d = stablehlo.dot %h, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc(unknown)
    %t = arith.constant dense<1.5> : tensor<f32>
    %b = stablehlo.broadcast_in_dim %t, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %r = stablehlo.add %d, %b : tensor<2x4xf32>
    %n = stablehlo.constant dense<5> : tensor<1xi64>
    %i = stablehlo.dynamic_iota %n, dim = 0 : (tensor<1xi64>) -> tensor<5xi32>
    return %r, %i : tensor<2x4xf32>, tensor<5xi32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_3_4_torch.float32: "BLOB"
    }
  }
#-}
""".replace("BLOB", BLOB)


def _expected(x):
    return (2 * x) @ W + 1.5, np.arange(5, dtype=np.int32)


def test_exporter_mlir_reads_verifies_interprets_and_compiles():
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    m = parse_module(TEXT, "torch_like.mlir")
    verify(m)
    text = print_module(m)
    assert 'loc("linear"("model.py":12:3))' in text  # nested location aliases resolved
    assert "#loc" not in text
    assert parse_module(text) == m
    want = _expected(x)
    for got in (run_function(m, [x]), axle.compile(parse_module(TEXT)).execute([x])):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_array_equal(got[1], want[1])


def test_dynamic_iota_with_dynamic_result_through_the_interpreter():
    text = """func.func @main(%n: tensor<1xi64>) -> tensor<?xf32> {
      %i = stablehlo.dynamic_iota %n, dim = 0 : (tensor<1xi64>) -> tensor<?xf32>
      return %i : tensor<?xf32>
    }"""
    m = parse_module(text)
    verify(m)
    np.testing.assert_array_equal(run_function(m, [np.array([4])])[0], np.arange(4, dtype=np.float32))
