"""sink-transposes: elementwise ops between NCHW convolutions run in the kernels' NHWC
layout, and the transposes around them cancel. Checked on the CPU lowering pipeline's
output: the results equal the interpreter's on the original module, what is left of the
transposes, and the compiled program against the interpreter."""
import numpy as np

import axle
from axle.backends.cpu.pipeline import lowering_pipeline
from axle.interpreter.evaluator import run_function
from axle.ir import parse_module
from axle.ir.core import Operation
from axle.ir.verifier import verify
from axle.passes import PassManager

CONV = ('"stablehlo.convolution"(%{x}, %{w}) {{dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, '
        'window_strides = array<i64: 1, 1>, padding = dense<1> : tensor<2x2xi64>, feature_group_count = 1 : i64, '
        'batch_group_count = 1 : i64}} : ({xt}, {wt}) -> {ot}')

# conv -> bias -> batch-norm statistics and normalization -> relu -> conv; the activation is
# also returned (a training graph's forward saves it for the backward)
BLOCK = f"""
func.func @main(%x: tensor<2x8x6x6xf32>, %w1: tensor<16x8x3x3xf32>, %b1: tensor<16xf32>,
                %w2: tensor<8x16x3x3xf32>) -> (tensor<2x16x6x6xf32>, tensor<2x8x6x6xf32>) {{
  %c = {CONV.format(x="x", w="w1", xt="tensor<2x8x6x6xf32>", wt="tensor<16x8x3x3xf32>", ot="tensor<2x16x6x6xf32>")}
  %bb = stablehlo.broadcast_in_dim %b1, dims = [1] : (tensor<16xf32>) -> tensor<2x16x6x6xf32>
  %y = stablehlo.add %c, %bb : tensor<2x16x6x6xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%y init: %zero) applies stablehlo.add across dimensions = [0, 2, 3]
     : (tensor<2x16x6x6xf32>, tensor<f32>) -> tensor<16xf32>
  %n = stablehlo.constant dense<72.0> : tensor<16xf32>
  %mean = stablehlo.divide %s, %n : tensor<16xf32>
  %mb = stablehlo.broadcast_in_dim %mean, dims = [1] : (tensor<16xf32>) -> tensor<2x16x6x6xf32>
  %d = stablehlo.subtract %y, %mb : tensor<2x16x6x6xf32>
  %zeros = stablehlo.constant dense<0.0> : tensor<2x16x6x6xf32>
  %r = stablehlo.maximum %d, %zeros : tensor<2x16x6x6xf32>
  %o = {CONV.format(x="r", w="w2", xt="tensor<2x16x6x6xf32>", wt="tensor<8x16x3x3xf32>", ot="tensor<2x8x6x6xf32>")}
  return %r, %o : tensor<2x16x6x6xf32>, tensor<2x8x6x6xf32>
}}
"""

# the convolution's result read by a dot: the transpose stays in front of it
TO_DOT = f"""
func.func @main(%x: tensor<2x8x6x6xf32>, %w1: tensor<16x8x3x3xf32>, %m: tensor<6x6xf32>) -> tensor<2x16x6x6xf32> {{
  %c = {CONV.format(x="x", w="w1", xt="tensor<2x8x6x6xf32>", wt="tensor<16x8x3x3xf32>", ot="tensor<2x16x6x6xf32>")}
  %e = stablehlo.exponential %c : tensor<2x16x6x6xf32>
  %d = stablehlo.dot_general %e, %m, contracting_dims = [3] x [0] : (tensor<2x16x6x6xf32>, tensor<6x6xf32>) -> tensor<2x16x6x6xf32>
  return %d : tensor<2x16x6x6xf32>
}}
"""

# a residual: the sum of the convolution's result and an NCHW argument (read through the
# inverse transpose), then a [16, 6] bias broadcast along dimensions 1 and 3 (made
# along NHWC's 3 and 2: its operand transposed)
RESIDUAL = f"""
func.func @main(%x: tensor<2x8x6x6xf32>, %w1: tensor<16x8x3x3xf32>, %skip: tensor<2x16x6x6xf32>,
                %b: tensor<16x6xf32>, %w2: tensor<8x16x3x3xf32>) -> tensor<2x8x6x6xf32> {{
  %c = {CONV.format(x="x", w="w1", xt="tensor<2x8x6x6xf32>", wt="tensor<16x8x3x3xf32>", ot="tensor<2x16x6x6xf32>")}
  %s = stablehlo.add %c, %skip : tensor<2x16x6x6xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1, 3] : (tensor<16x6xf32>) -> tensor<2x16x6x6xf32>
  %t = stablehlo.multiply %s, %bb : tensor<2x16x6x6xf32>
  %u = stablehlo.tanh %t : tensor<2x16x6x6xf32>
  %o = {CONV.format(x="u", w="w2", xt="tensor<2x16x6x6xf32>", wt="tensor<8x16x3x3xf32>", ot="tensor<2x8x6x6xf32>")}
  return %o : tensor<2x8x6x6xf32>
}}
"""


def _args(m, seed=0):
    r = np.random.default_rng(seed)
    return [(0.3 * r.standard_normal(a.type.shape)).astype(np.float32) for a in m.main.body.arguments]


def _lowered(text):
    m = parse_module(text)
    verify(m)
    args = _args(m)
    want = run_function(m, args)
    PassManager(lowering_pipeline(), verify_each=True).run(m)
    got = run_function(m, args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return m, args, want


def _ops(m, name):
    return [op for op in m.walk() if op.name == name]


def _transpose_of_transpose(m):
    return [op for op in _ops(m, "stablehlo.transpose")
            if isinstance(op.operands[0].owner, Operation) and op.operands[0].owner.name == "stablehlo.transpose"]


def test_batch_norm_block_runs_in_the_convolutions_layout():
    m, args, want = _lowered(BLOCK)
    convs = _ops(m, "stablehlo.convolution")
    assert len(convs) == 2
    first, second = convs
    # the second convolution reads the relu computed in NHWC: no transpose between them
    r = second.operands[0].owner
    assert r.name == "stablehlo.maximum", r.name
    # the statistics read the first convolution's NHWC result (through the bias add)
    red = _ops(m, "stablehlo.reduce")[0]
    assert red.operands[0].owner.name == "stablehlo.add"
    assert [int(d) for d in red.attr("dimensions")] == [0, 1, 2]
    assert not _transpose_of_transpose(m)
    # one transpose gives back the returned NCHW activation
    ret = m.main.body.operations[-1]
    assert ret.operands[0].owner.name == "stablehlo.transpose"
    exe = axle.compile(BLOCK, backend="cpu")
    for g, w in zip(exe.execute(args), want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-4)


def test_transpose_stays_before_a_reader_that_cannot_take_it():
    m, args, want = _lowered(TO_DOT)
    dot = _ops(m, "stablehlo.dot_general")[0]
    # the exponential moved down to the NHWC result; the transpose sits before the dot
    assert dot.operands[0].owner.name == "stablehlo.transpose"
    assert dot.operands[0].owner.operands[0].owner.name == "stablehlo.exponential"
    exe = axle.compile(TO_DOT, backend="cpu")
    np.testing.assert_allclose(np.asarray(exe.execute(args)[0]), want[0], rtol=1e-4, atol=1e-4)


def test_residual_and_two_dimensional_broadcast():
    m, args, want = _lowered(RESIDUAL)
    second = _ops(m, "stablehlo.convolution")[1]
    assert second.operands[0].owner.name == "stablehlo.tanh"
    assert not _transpose_of_transpose(m)
    exe = axle.compile(RESIDUAL, backend="cpu")
    np.testing.assert_allclose(np.asarray(exe.execute(args)[0]), want[0], rtol=1e-4, atol=1e-4)


def test_program_transposes_are_left_alone():
    text = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %e = stablehlo.exponential %t : tensor<8x4xf32>
  return %e : tensor<8x4xf32>
}
"""
    m, _, _ = _lowered(text)
    assert _ops(m, "stablehlo.exponential")[0].operands[0].owner.name == "stablehlo.transpose"


# max pooling and a channel concatenate (an Inception / U-Net skip) between convolutions
POOL_CONCAT = f"""
func.func @main(%x: tensor<2x8x8x8xf32>, %w1: tensor<16x8x3x3xf32>, %skip: tensor<2x4x4x4xf32>,
                %w2: tensor<8x20x3x3xf32>) -> (tensor<2x16x4x4xf32>, tensor<2x8x4x4xf32>) {{
  %c = {CONV.format(x="x", w="w1", xt="tensor<2x8x8x8xf32>", wt="tensor<16x8x3x3xf32>", ot="tensor<2x16x8x8xf32>")}
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %p = "stablehlo.reduce_window"(%c, %ninf) ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
  }}) {{window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>,
      padding = dense<[[0, 0], [0, 0], [0, 0], [0, 1]]> : tensor<4x2xi64>}} : (tensor<2x16x8x8xf32>, tensor<f32>) -> tensor<2x16x4x4xf32>
  %k = stablehlo.concatenate %p, %skip, dim = 1 : (tensor<2x16x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x20x4x4xf32>
  %o = {CONV.format(x="k", w="w2", xt="tensor<2x20x4x4xf32>", wt="tensor<8x20x3x3xf32>", ot="tensor<2x8x4x4xf32>")}
  return %p, %o : tensor<2x16x4x4xf32>, tensor<2x8x4x4xf32>
}}
"""


def test_pooling_and_concatenate_in_the_convolutions_layout():
    m, args, want = _lowered(POOL_CONCAT)
    second = _ops(m, "stablehlo.convolution")[1]
    assert second.operands[0].owner.name == "stablehlo.concatenate"
    rw = _ops(m, "stablehlo.reduce_window")[0]
    assert rw.operands[0].owner.name == "stablehlo.convolution"
    assert [int(v) for v in rw.attr("window_dimensions")] == [1, 2, 2, 1]
    assert not _transpose_of_transpose(m)
    exe = axle.compile(POOL_CONCAT, backend="cpu")
    for g, w in zip(exe.execute(args), want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-4)


def test_program_transpose_whose_paths_all_cancel_sinks():
    """A channels-last backward's SiLU derivative: a saved NHWC argument read as NCHW,
    elementwise work on it, every path transposed back to NHWC. The pair cancels (no
    transpose left), where a program transpose with a path that does not cancel stays
    (test_program_transposes_are_left_alone); compiled against the interpreter."""
    text = """
func.func @main(%a: tensor<2x4x4x8xf32>, %c: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %t = stablehlo.transpose %a, dims = [0, 3, 1, 2] : (tensor<2x4x4x8xf32>) -> tensor<2x8x4x4xf32>
  %s = stablehlo.logistic %t : tensor<2x8x4x4xf32>
  %sb = stablehlo.transpose %s, dims = [0, 2, 3, 1] : (tensor<2x8x4x4xf32>) -> tensor<2x4x4x8xf32>
  %g = stablehlo.multiply %c, %sb : tensor<2x4x4x8xf32>
  %one = stablehlo.constant dense<1.0> : tensor<2x8x4x4xf32>
  %d = stablehlo.subtract %one, %s : tensor<2x8x4x4xf32>
  %e = stablehlo.multiply %t, %d : tensor<2x8x4x4xf32>
  %f = stablehlo.add %e, %one : tensor<2x8x4x4xf32>
  %fb = stablehlo.transpose %f, dims = [0, 2, 3, 1] : (tensor<2x8x4x4xf32>) -> tensor<2x4x4x8xf32>
  %r = stablehlo.multiply %g, %fb : tensor<2x4x4x8xf32>
  return %r : tensor<2x4x4x8xf32>
}
"""
    m, args, want = _lowered(text)
    assert not _ops(m, "stablehlo.transpose")
    exe = axle.compile(text, backend="cpu")
    np.testing.assert_allclose(exe.execute(args)[0], want[0], rtol=1e-6, atol=1e-6)
