"""CPU kernels against the interpreter on the same programs with random inputs."""
import numpy as np
import pytest

from axle.backends.cpu.executable import CpuExecutable
from axle.interpreter.evaluator import run_function
from axle.ir import parse_module

PROGRAMS = {
    "scatter_add_out_of_bounds_skipped": ("""
func.func @main(%x: tensor<5x3xf32>, %i: tensor<4x1xi32>, %u: tensor<4x3xf32>) -> tensor<5x3xf32> {
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}""", [("f32", (5, 3)), ("idx", (4, 1), -2, 7), ("f32", (4, 3))]),
    "gather_rows_clamped": ("""
func.func @main(%x: tensor<6x4xi32>, %i: tensor<3x1xi64>) -> tensor<3x2xi32> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 2>}> : (tensor<6x4xi32>, tensor<3x1xi64>) -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
}""", [("i32", (6, 4)), ("idx64", (3, 1), -3, 9)]),
    "sort_two_operands_stable": ("""
func.func @main(%k: tensor<3x7xf32>, %v: tensor<3x7xi32>) -> (tensor<3x7xf32>, tensor<3x7xi32>) {
  %0:2 = "stablehlo.sort"(%k, %v) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
    %lt = stablehlo.compare LT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<3x7xf32>, tensor<3x7xi32>) -> (tensor<3x7xf32>, tensor<3x7xi32>)
  return %0#0, %0#1 : tensor<3x7xf32>, tensor<3x7xi32>
}""", [("small", (3, 7)), ("i32", (3, 7))]),
    "reduce_window_max_padded_strided": ("""
func.func @main(%x: tensor<7x5xf32>) -> tensor<4x3xf32> {
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %init) <{window_dimensions = array<i64: 3, 2>, window_strides = array<i64: 2, 2>, padding = dense<[[1, 1], [1, 0]]> : tensor<2x2xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<7x5xf32>, tensor<f32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}""", [("f32", (7, 5))]),
    "while_sum_of_powers": ("""
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<i32>) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %acc0 = stablehlo.constant dense<0.0> : tensor<4xf32>
  %r:3 = stablehlo.while(%i = %zero, %acc = %acc0, %p = %x) : tensor<i32>, tensor<4xf32>, tensor<4xf32>
  cond {
    %five = stablehlo.constant dense<5> : tensor<i32>
    %c = stablehlo.compare LT, %i, %five : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %i1 = stablehlo.add %i, %one : tensor<i32>
    %a1 = stablehlo.add %acc, %p : tensor<4xf32>
    %p1 = stablehlo.multiply %p, %x : tensor<4xf32>
    stablehlo.return %i1, %a1, %p1 : tensor<i32>, tensor<4xf32>, tensor<4xf32>
  }
  return %r#1, %r#0 : tensor<4xf32>, tensor<i32>
}""", [("f32", (4,))]),
    "convolution_grouped_padded_dilated": ("""
func.func @main(%x: tensor<2x4x7x6xf32>, %k: tensor<6x2x3x2xf32>) -> tensor<2x6x4x5xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 1], pad = [[1, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 2], reverse = [false, true]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>) -> tensor<2x6x4x5xf32>
  return %0 : tensor<2x6x4x5xf32>
}""", [("small", (2, 4, 7, 6)), ("small", (6, 2, 3, 2))]),
    "dynamic_update_slice_clamped": ("""
func.func @main(%x: tensor<5x4xi16>, %u: tensor<2x3xi16>, %a: tensor<i32>, %b: tensor<i32>) -> tensor<5x4xi16> {
  %0 = stablehlo.dynamic_update_slice %x, %u, %a, %b : (tensor<5x4xi16>, tensor<2x3xi16>, tensor<i32>, tensor<i32>) -> tensor<5x4xi16>
  return %0 : tensor<5x4xi16>
}""", [("i16", (5, 4)), ("i16", (2, 3)), ("idx", (), -2, 9), ("idx", (), -2, 9)]),
}


def _arg(r, spec):
    kind, shape = spec[0], spec[1]
    if kind == "f32":
        return r.standard_normal(shape).astype(np.float32)
    if kind == "small":  # few distinct keys: ties exercise stability
        return r.integers(0, 3, shape).astype(np.float32)
    if kind in ("idx", "idx64"):
        return r.integers(spec[2], spec[3], shape).astype(np.int64 if kind == "idx64" else np.int32)
    return r.integers(-100, 100, shape).astype({"i32": np.int32, "i16": np.int16}[kind])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_matches_interpreter(name, seed):
    text, specs = PROGRAMS[name]
    r = np.random.default_rng(seed)
    args = [_arg(r, s) for s in specs]
    want = run_function(parse_module(text), args)
    got = CpuExecutable(parse_module(text)).execute(args)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_integer_power_and_complex_ops_match_the_interpreter():
    text = """
func.func @main(%x: tensor<9xi32>, %n: tensor<9xi32>, %z: tensor<4xcomplex<f64>>, %w: tensor<4xcomplex<f64>>)
    -> (tensor<9xi32>, tensor<4xcomplex<f64>>, tensor<4xf64>, tensor<4xcomplex<f64>>) {
  %p = stablehlo.power %x, %n : tensor<9xi32>
  %q = stablehlo.divide %z, %w : tensor<4xcomplex<f64>>
  %a = stablehlo.abs %q : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
  %e = stablehlo.exponential %z : tensor<4xcomplex<f64>>
  %m = stablehlo.multiply %e, %w : tensor<4xcomplex<f64>>
  return %p, %q, %a, %m : tensor<9xi32>, tensor<4xcomplex<f64>>, tensor<4xf64>, tensor<4xcomplex<f64>>
}"""
    x = np.array([2, -2, 1, -1, -1, 0, 3, 7, 5], np.int32)
    n = np.array([10, 3, -4, -3, -2, 0, 0, 2, 31], np.int32)
    z = np.array([1 + 2j, -3 + 0.5j, 0j, 2 - 2j])
    w = np.array([0.5 - 1j, 4 + 0j, 1j, -1e-3 + 2j])
    want = run_function(parse_module(text), [x, n, z, w])
    got = CpuExecutable(parse_module(text)).execute([x, n, z, w])
    np.testing.assert_array_equal(got[0], want[0])
    for g, w_ in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w_, rtol=1e-13)
