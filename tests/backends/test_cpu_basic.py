"""The CPU backend on whole programs, against the interpreter."""
import os

import numpy as np
import pytest

import axle
from axle.backends.cpu import Unsupported
from axle.backends.cpu.executable import CpuExecutable
from axle.interpreter.evaluator import ArgumentError, run_function
from axle.ir import parse_module

EXAMPLE = os.path.join(os.path.dirname(axle.__file__), "examples", "mlp.mlir")


def _mlp_args(seed=0):
    r = np.random.default_rng(seed)
    return [r.standard_normal(s).astype(np.float32) for s in [(4, 8), (8, 16), (16,), (16, 4), (4,)]]


def test_mlp_example_matches_interpreter():
    # dots run through BLAS, which sums in its own order: equal to a few f32 rounding steps
    text = open(EXAMPLE, encoding="utf-8").read()
    ex = axle.compile(text, backend="cpu", passes=False)
    args = _mlp_args()
    np.testing.assert_allclose(ex(*args), axle.interpret(parse_module(text), *args), rtol=2e-6, atol=1e-6)


def test_wrong_arguments_are_refused_before_native_code_runs():
    ex = axle.compile(open(EXAMPLE, encoding="utf-8").read(), backend="cpu", passes=False)
    args = _mlp_args()
    with pytest.raises(ArgumentError, match="argument 0 of @main: expected shape f32\\[4,8\\]"):
        ex(np.zeros((3, 8), np.float32), *args[1:])
    with pytest.raises(ArgumentError, match="expected dtype float32"):
        ex(args[0].astype(np.float64), *args[1:])
    with pytest.raises(ArgumentError, match="takes 5 argument"):
        ex(*args[:2])


def test_unsupported_op_is_a_compile_error_naming_it():
    text = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = stablehlo.custom_call @some_library_routine(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}"""
    with pytest.raises(Unsupported, match="stablehlo.custom_call.*pr.mlir:3"):
        CpuExecutable(parse_module(text, "pr.mlir"))


FUSION_TEXT = """
func.func @main(%x: tensor<3x5xf32>, %y: tensor<5xf32>, %i: tensor<3x5xi32>) -> (tensor<5x3xf32>, tensor<3xi32>) {
  %b = stablehlo.broadcast_in_dim %y, dims = [1] : (tensor<5xf32>) -> tensor<3x5xf32>
  %s = stablehlo.subtract %x, %b : tensor<3x5xf32>
  %t = stablehlo.tanh %s : tensor<3x5xf32>
  %tr = stablehlo.transpose %t, dims = [1, 0] : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %k = stablehlo.constant dense<3> : tensor<3x5xi32>
  %d = stablehlo.divide %i, %k : tensor<3x5xi32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %r = stablehlo.reduce(%d init: %z) applies stablehlo.add across dimensions = [1] : (tensor<3x5xi32>, tensor<i32>) -> tensor<3xi32>
  return %tr, %r : tensor<5x3xf32>, tensor<3xi32>
}"""


def test_fused_elementwise_chain_and_integer_reduce():
    r = np.random.default_rng(1)
    args = [r.standard_normal((3, 5)).astype(np.float32), r.standard_normal(5).astype(np.float32),
            r.integers(-20, 20, (3, 5)).astype(np.int32)]
    ex = CpuExecutable(parse_module(FUSION_TEXT))
    got = ex.execute(args)
    want = run_function(parse_module(FUSION_TEXT), args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(got[1], want[1])
    # the chain broadcast -> subtract -> tanh -> transpose is one kernel: only results get buffers
    names = [k[0] for k in ex.program.kernels]
    assert "stablehlo.subtract" not in names and "stablehlo.tanh" not in names


def test_integer_division_edge_cases_match_the_interpreter():
    text = """
func.func @main(%a: tensor<6xi32>, %b: tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi32>) {
  %q = stablehlo.divide %a, %b : tensor<6xi32>
  %r = stablehlo.remainder %a, %b : tensor<6xi32>
  return %q, %r : tensor<6xi32>, tensor<6xi32>
}"""
    a = np.array([7, -7, 5, -2147483648, 0, 9], np.int32)
    b = np.array([2, 2, 0, -1, 0, -4], np.int32)
    got = CpuExecutable(parse_module(text)).execute([a, b])
    want = run_function(parse_module(text), [a, b])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_dynamic_dimensions_are_specialized_per_signature():
    text = """
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %c4 = stablehlo.constant dense<4> : tensor<1xi32>
  %shape = stablehlo.concatenate %n1, %c4, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %ones = stablehlo.dynamic_broadcast_in_dim %one, %shape, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x4xf32>
  %y = stablehlo.add %x, %ones : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}"""
    pytest.importorskip("axle.passes.constant_folding")
    ex = CpuExecutable(parse_module(text))
    for n in (1, 3, 7):
        x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
        np.testing.assert_array_equal(ex(x), x + 1)
    assert len(ex._programs) == 3


def test_ops_without_results_run_and_their_errors_surface():
    """A check with no result must run (it is emitted although nothing reads it), and an
    error raised in its host callback is raised after the native call."""
    from axle.interpreter.ops_check import CheckFailure, reset_default_probes
    text = """
func.func @main(%x: tensor<3xi64>) -> tensor<3xi64> {
  %p = interpreter.probe %x, probe_id = "p" : tensor<3xi64>
  check.expect_serialized_eq %p, probe_id = "%s" : tensor<3xi64>
  return %p : tensor<3xi64>
}"""
    x = np.array([1, 2, 3], np.int64)
    reset_default_probes()
    np.testing.assert_array_equal(CpuExecutable(parse_module(text.replace("%s", "p"))).execute([x])[0], x)
    reset_default_probes()
    with pytest.raises(CheckFailure, match="no value"):
        CpuExecutable(parse_module(text.replace("%s", "missing"))).execute([x])


def test_return_that_does_not_match_the_signature_is_an_error():
    """The result buffers are sized from the signature: a return of another shape must be
    rejected before any code runs (it would write outside them)."""
    from axle.ir.verifier import VerificationError
    text = """func.func @main(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
      return %x : tensor<4x16xf32>
    }"""
    for backend in ("cpu", "interpreter"):
        with pytest.raises(VerificationError, match="returns .tensor<4x16xf32>. but @main has result types"):
            axle.compile(text, backend=backend)
