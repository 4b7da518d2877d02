"""The lower-quant pass: quantized programs as integer/float ops, exactly as the interpreter
computes them (interpreter before == interpreter after, bit for bit), and compiled by the CPU
backend (which runs the pass before code generation) with the interpreter's answers."""
import os
import subprocess

import numpy as np
import pytest

from axle.backends.cpu import Unsupported
from axle.backends.cpu import compile as cpu_compile
from axle.backends.cpu.executable import CpuExecutable
from axle.interpreter.evaluator import run_function
from axle.ir import parse_module
from axle.ir.verifier import verify
from axle.passes import PassManager, make_pass
from axle.passes.lower_quant import has_quantized_types, prepare_for_cpu

# the interpreter's bf16/f16 rounding of the infinities among the random inputs
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "conformance")


def lower(module):
    p = make_pass("lower-quant")
    PassManager([p], verify_each=True).run(module)
    return p


def assert_same(got, want, what=""):
    got, want = [np.asarray(g) for g in got], [np.asarray(w) for w in want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, what
        assert g.tobytes() == w.tobytes(), f"{what}: {g} != {w}"


def float_contraction(module) -> bool:
    """Whether the lowered module contracts floats (dequantize -> dot/convolution ->
    quantize): the CPU backend sums those in its own order (BLAS, tiling), so they match
    the interpreter only up to float rounding, which can move a quantized result by one."""
    return any(op.name in ("stablehlo.dot_general", "stablehlo.convolution", "stablehlo.dot")
               and op.operands[0].type.element_type.is_float for op in module.walk())


def assert_cpu_matches(got, want, exact, what="cpu"):
    if exact:
        assert_same(got, want, what)
        return
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, what
        if g.dtype.kind in "iu":
            assert np.max(np.abs(g.astype(np.int64) - w.astype(np.int64)), initial=0) <= 1, what
            assert np.mean(g != w) <= 0.02, f"{what}: {np.sum(g != w)} of {g.size} differ"
        elif g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=what)


def check_program(text, args, entry="main"):
    """interpreter(original) == interpreter(lowered) exactly, and == cpu (exactly unless
    the program contracts floats); returns the interpreter's results."""
    want = run_function(parse_module(text), args, entry)
    m = parse_module(text)
    p = lower(m)
    assert not p.refused, p.refused
    assert not has_quantized_types(m), str(m)
    assert_same(run_function(m, args, entry), want, "interpreter after lowering")
    # the default pipeline (inlining calls), then lower-quant before code generation
    got = cpu_compile(parse_module(text), entry).execute(args)
    assert_cpu_matches(got, want, not float_contraction(m))
    return want


# ---------------------------------------------------------------- hand-written programs


Q8 = "!quant.uniform<i8:f32, 0.5:-3>"


def test_quantize_dequantize_per_tensor():
    text = f"""
func.func @main(%x: tensor<6xf32>) -> (tensor<6x{Q8}>, tensor<6xf32>) {{
  %q = stablehlo.uniform_quantize %x : (tensor<6xf32>) -> tensor<6x{Q8}>
  %d = stablehlo.uniform_dequantize %q : (tensor<6x{Q8}>) -> tensor<6xf32>
  return %q, %d : tensor<6x{Q8}>, tensor<6xf32>
}}"""
    x = np.float32([1.0, -2.25, 100.0, 0.75, np.nan, -np.inf])
    q, d = check_program(text, [x])
    # round_nearest_even(clamp(x / 0.5 - 3)), NaN -> 0
    np.testing.assert_array_equal(q, np.int8([-1, -8, 127, -2, 0, -128]))
    np.testing.assert_array_equal(d, np.float32([1.0, -2.5, 65.0, 0.5, 1.5, -62.5]))


def test_requantize_per_axis_spec_example():
    a = "!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>"
    b = "!quant.uniform<i8:f32:0, {0.1:-20,0.2:-30}>"
    text = f"""
func.func @main(%x: tensor<2x{a}>) -> tensor<2x{b}> {{
  %r = stablehlo.uniform_quantize %x : (tensor<2x{a}>) -> tensor<2x{b}>
  return %r : tensor<2x{b}>
}}"""
    r, = check_program(text, [np.int8([10, 10])])
    np.testing.assert_array_equal(r, [20, 45])


def test_requantize_per_tensor_to_per_axis_and_narrow_range():
    a = "!quant.uniform<i8:f32, 0.5>"
    b = "!quant.uniform<i8:f32:1, {0.25:1,1.0:-1}>"
    n = "!quant.uniform<i8<-100:100>:f32, 0.125:4>"
    text = f"""
func.func @main(%x: tensor<2x2x{a}>) -> (tensor<2x2x{b}>, tensor<2x2x{n}>) {{
  %r = stablehlo.uniform_quantize %x : (tensor<2x2x{a}>) -> tensor<2x2x{b}>
  %s = stablehlo.uniform_quantize %x : (tensor<2x2x{a}>) -> tensor<2x2x{n}>
  return %r, %s : tensor<2x2x{b}>, tensor<2x2x{n}>
}}"""
    r, s = check_program(text, [np.int8([[2, 4], [-6, 8]])])
    np.testing.assert_array_equal(r, [[5, 1], [-11, 3]])  # values 1, 2, -3, 4
    np.testing.assert_array_equal(s, [[12, 20], [-20, 36]])
    r, s = check_program(text, [np.int8([[127, -128], [60, -60]])])
    np.testing.assert_array_equal(s, [[100, -100], [100, -100]])  # clamped to the narrow range


def test_quantized_add_spec_example_and_saturation():
    lq, rq = "!quant.uniform<i8:f32, 0.1:-30>", "!quant.uniform<i8:f32, 0.5:-20>"
    text = f"""
func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2x{rq}> {{
  %qa = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> tensor<2x{lq}>
  %qb = stablehlo.uniform_quantize %b : (tensor<2xf32>) -> tensor<2x{rq}>
  %r = stablehlo.add %qa, %qb : (tensor<2x{lq}>, tensor<2x{rq}>) -> tensor<2x{rq}>
  return %r : tensor<2x{rq}>
}}"""
    r, = check_program(text, [np.float32([1.0, 2.0]), np.float32([3.0, 4.0])])
    np.testing.assert_array_equal(r, [-12, -8])
    r, = check_program(text, [np.float32([15.0, -15.0]), np.float32([70.0, -60.0])])
    np.testing.assert_array_equal(r, [127, -128])


def test_quantized_add_per_axis_i32():
    q = "!quant.uniform<i32:f32:0, {1.0:1,2.0:-1}>"
    text = f"""
func.func @main(%a: tensor<2x3x{q}>, %b: tensor<2x3x{q}>) -> tensor<2x3x{q}> {{
  %r = stablehlo.add %a, %b : tensor<2x3x{q}>
  return %r : tensor<2x3x{q}>
}}"""
    a = np.int32([[5, 6, 7], [5, 2147483647, -3]])
    b = np.int32([[5, 1, 0], [5, 1, -3]])
    r, = check_program(text, [a, b])
    zp = np.int64([[1], [-1]])
    want = (a.astype(np.int64) + b - zp + 2 ** 31) % 2 ** 32 - 2 ** 31  # wraps like i32
    np.testing.assert_array_equal(r, want)


def _dot_expected(lhs, rhs, lq, rq, oq):
    """The integer dot product with zero-point correction and the 0.001 rule, in numpy."""
    (ls, lz), (rs, rz), (os_, oz) = lq, rq, oq
    raw = lhs.astype(np.int64) @ rhs.astype(np.int64)
    centered = (lhs.astype(np.int64) - lz) @ (rhs.astype(np.int64) - rz)
    offset = raw - centered
    c = ls * rs / os_
    if abs(c - 1) > 0.001:
        raw = np.trunc(raw.astype(np.float32) * np.float32(c)).astype(np.int64)
        offset = np.trunc(offset.astype(np.float32) * np.float32(c)).astype(np.int64)
    return (raw + oz - offset).astype(np.int32)


@pytest.mark.parametrize("lz,rz,os_", [(1, 0, 0.1), (-7, 3, 0.0005), (0, 0, 0.125), (5, -2, 0.1251)])
def test_quantized_dot_general_in_integers(lz, rz, os_):
    lq = f"!quant.uniform<i8:f32, 0.5:{lz}>"
    rq = f"!quant.uniform<i8:f32, 0.25:{rz}>"
    oq = f"!quant.uniform<i32:f32, {os_}:3>"
    text = f"""
func.func @main(%a: tensor<3x4x{lq}>, %b: tensor<4x2x{rq}>) -> tensor<3x2x{oq}> {{
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<3x4x{lq}>, tensor<4x2x{rq}>) -> tensor<3x2x{oq}>
  return %r : tensor<3x2x{oq}>
}}"""
    rng = np.random.default_rng(abs(lz) + 10 * abs(rz))
    a = rng.integers(-128, 128, (3, 4)).astype(np.int8)
    b = rng.integers(-128, 128, (4, 2)).astype(np.int8)
    r, = check_program(text, [a, b])
    np.testing.assert_array_equal(r, _dot_expected(a, b, (0.5, lz), (0.25, rz), (os_, 3)))


def test_spec_dot_general_example():
    lq, rq = "!quant.uniform<i8:f32, 0.5:1>", "!quant.uniform<i8:f32, 0.25>"
    oq = "!quant.uniform<i32:f32, 0.1:3>"
    text = f"""
func.func @main(%a: tensor<2x2x{lq}>, %b: tensor<2x2x{rq}>) -> tensor<2x2x{oq}> {{
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x2x{lq}>, tensor<2x2x{rq}>) -> tensor<2x2x{oq}>
  return %r : tensor<2x2x{oq}>
}}"""
    r, = check_program(text, [np.int8([[1, 2], [3, 4]]), np.int8([[1, 0], [2, 1]])])
    np.testing.assert_array_equal(r, [[6, 4], [13, 7]])


# Programs checked only against the interpreter (before and after lowering, and on the CPU).
PROGRAMS = {
    "per_axis_dot_general": ("""
func.func @main(%a: tensor<2x3x4x!quant.uniform<i8:f32, 0.02:-5>>, %b: tensor<2x4x5x!quant.uniform<i8:f32:2, {0.1,0.2,0.3,0.4,0.5}>>)
    -> tensor<2x3x5x!quant.uniform<i32:f32:2, {0.002,0.004,0.006,0.008,0.01}>> {
  %r = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x3x4x!quant.uniform<i8:f32, 0.02:-5>>, tensor<2x4x5x!quant.uniform<i8:f32:2, {0.1,0.2,0.3,0.4,0.5}>>) -> tensor<2x3x5x!quant.uniform<i32:f32:2, {0.002,0.004,0.006,0.008,0.01}>>
  return %r : tensor<2x3x5x!quant.uniform<i32:f32:2, {0.002,0.004,0.006,0.008,0.01}>>
}""", [(2, 3, 4), (2, 4, 5)]),
    "hybrid_dot_general": ("""
func.func @main(%a: tensor<3x4xf32>, %b: tensor<4x2x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<3x2xf32> {
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x2x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}""", [(3, 4), (4, 2)]),
    "integer_convolution_nhwc": ("""
func.func @main(%a: tensor<1x5x5x2x!quant.uniform<i8:f32, 0.02:-7>>, %b: tensor<2x2x2x3x!quant.uniform<i8:f32, 0.03>>)
    -> tensor<1x6x6x3x!quant.uniform<i32:f32, 0.0005:11>> {
  %r = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x5x5x2x!quant.uniform<i8:f32, 0.02:-7>>, tensor<2x2x2x3x!quant.uniform<i8:f32, 0.03>>) -> tensor<1x6x6x3x!quant.uniform<i32:f32, 0.0005:11>>
  return %r : tensor<1x6x6x3x!quant.uniform<i32:f32, 0.0005:11>>
}""", [(1, 5, 5, 2), (2, 2, 2, 3)]),
    "convolution_dequantized": ("""
func.func @main(%a: tensor<1x5x5x2x!quant.uniform<i8:f32, 0.02:-7>>, %b: tensor<2x2x2x3x!quant.uniform<i8:f32, 0.03:4>>)
    -> tensor<1x4x4x3x!quant.uniform<i8:f32, 0.05:-2>> {
  %r = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x5x5x2x!quant.uniform<i8:f32, 0.02:-7>>, tensor<2x2x2x3x!quant.uniform<i8:f32, 0.03:4>>) -> tensor<1x4x4x3x!quant.uniform<i8:f32, 0.05:-2>>
  return %r : tensor<1x4x4x3x!quant.uniform<i8:f32, 0.05:-2>>
}""", [(1, 5, 5, 2), (2, 2, 2, 3)]),
    "order_ops_and_compare": ("""
func.func @main(%a: tensor<8x!quant.uniform<i8:f32, 0.1:2>>, %b: tensor<8x!quant.uniform<i8:f32, 0.1:2>>, %c: tensor<8x!quant.uniform<i8:f32, 0.07:-1>>)
    -> (tensor<8x!quant.uniform<i8:f32, 0.1:2>>, tensor<8x!quant.uniform<i8:f32, 0.1:2>>, tensor<8xi1>, tensor<8x!quant.uniform<i8:f32, 0.1:2>>, tensor<8x!quant.uniform<i8:f32, 0.05>>) {
  %0 = stablehlo.maximum %a, %b : tensor<8x!quant.uniform<i8:f32, 0.1:2>>
  %1 = stablehlo.minimum %a, %c : (tensor<8x!quant.uniform<i8:f32, 0.1:2>>, tensor<8x!quant.uniform<i8:f32, 0.07:-1>>) -> tensor<8x!quant.uniform<i8:f32, 0.1:2>>
  %2 = stablehlo.compare GT, %a, %c : (tensor<8x!quant.uniform<i8:f32, 0.1:2>>, tensor<8x!quant.uniform<i8:f32, 0.07:-1>>) -> tensor<8xi1>
  %3 = stablehlo.select %2, %a, %b : tensor<8xi1>, tensor<8x!quant.uniform<i8:f32, 0.1:2>>
  %4 = stablehlo.multiply %a, %c : (tensor<8x!quant.uniform<i8:f32, 0.1:2>>, tensor<8x!quant.uniform<i8:f32, 0.07:-1>>) -> tensor<8x!quant.uniform<i8:f32, 0.05>>
  return %0, %1, %2, %3, %4 : tensor<8x!quant.uniform<i8:f32, 0.1:2>>, tensor<8x!quant.uniform<i8:f32, 0.1:2>>, tensor<8xi1>, tensor<8x!quant.uniform<i8:f32, 0.1:2>>, tensor<8x!quant.uniform<i8:f32, 0.05>>
}""", [(8,), (8,), (8,)]),
    "moves_and_rescaling_reshape": ("""
func.func @main(%a: tensor<2x3x!quant.uniform<i8:f32, 0.1:2>>) -> (tensor<3x2x!quant.uniform<i8:f32, 0.1:2>>, tensor<6x!quant.uniform<i8:f32, 0.3:-4>>, tensor<2x1x!quant.uniform<i8:f32, 0.1:2>>) {
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3x!quant.uniform<i8:f32, 0.1:2>>) -> tensor<3x2x!quant.uniform<i8:f32, 0.1:2>>
  %1 = stablehlo.reshape %a : (tensor<2x3x!quant.uniform<i8:f32, 0.1:2>>) -> tensor<6x!quant.uniform<i8:f32, 0.3:-4>>
  %2 = stablehlo.slice %a [0:2, 1:2] : (tensor<2x3x!quant.uniform<i8:f32, 0.1:2>>) -> tensor<2x1x!quant.uniform<i8:f32, 0.1:2>>
  return %0, %1, %2 : tensor<3x2x!quant.uniform<i8:f32, 0.1:2>>, tensor<6x!quant.uniform<i8:f32, 0.3:-4>>, tensor<2x1x!quant.uniform<i8:f32, 0.1:2>>
}""", [(2, 3)]),
    "reduce_with_quantized_body": ("""
func.func @main(%a: tensor<4x5x!quant.uniform<i8:f32, 0.1:2>>, %init: tensor<!quant.uniform<i8:f32, 0.1:2>>) -> tensor<4x!quant.uniform<i8:f32, 0.1:2>> {
  %r = stablehlo.reduce(%a init: %init) applies stablehlo.add across dimensions = [1] : (tensor<4x5x!quant.uniform<i8:f32, 0.1:2>>, tensor<!quant.uniform<i8:f32, 0.1:2>>) -> tensor<4x!quant.uniform<i8:f32, 0.1:2>>
  return %r : tensor<4x!quant.uniform<i8:f32, 0.1:2>>
}""", [(4, 5), ()]),
    "while_and_call": ("""
func.func private @step(%x: tensor<4x!quant.uniform<i8:f32, 0.1:2>>) -> tensor<4x!quant.uniform<i8:f32, 0.1:2>> {
  %r = stablehlo.add %x, %x : tensor<4x!quant.uniform<i8:f32, 0.1:2>>
  return %r : tensor<4x!quant.uniform<i8:f32, 0.1:2>>
}
func.func @main(%a: tensor<4x!quant.uniform<i8:f32, 0.1:2>>) -> tensor<4x!quant.uniform<i8:f32, 0.1:2>> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %c3 = stablehlo.constant dense<3> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %a) : tensor<i32>, tensor<4x!quant.uniform<i8:f32, 0.1:2>>
    cond {
      %p = stablehlo.compare LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %n = stablehlo.add %i, %c1 : tensor<i32>
      %w = func.call @step(%v) : (tensor<4x!quant.uniform<i8:f32, 0.1:2>>) -> tensor<4x!quant.uniform<i8:f32, 0.1:2>>
      stablehlo.return %n, %w : tensor<i32>, tensor<4x!quant.uniform<i8:f32, 0.1:2>>
    }
  return %r#1 : tensor<4x!quant.uniform<i8:f32, 0.1:2>>
}""", [(4,)]),
    "other_storage_and_expressed_types": ("""
func.func @main(%x: tensor<6xf32>, %y: tensor<6xbf16>, %z: tensor<6xf16>) -> (tensor<6xf32>, tensor<6xbf16>, tensor<6xf16>, tensor<6x!quant.uniform<ui8:f32, 0.25:128>>) {
  %0 = stablehlo.uniform_quantize %x : (tensor<6xf32>) -> tensor<6x!quant.uniform<ui8:f32, 0.25:128>>
  %1 = stablehlo.uniform_quantize %0 : (tensor<6x!quant.uniform<ui8:f32, 0.25:128>>) -> tensor<6x!quant.uniform<i4:f32, 0.75:1>>
  %2 = stablehlo.uniform_dequantize %1 : (tensor<6x!quant.uniform<i4:f32, 0.75:1>>) -> tensor<6xf32>
  %3 = stablehlo.uniform_quantize %y : (tensor<6xbf16>) -> tensor<6x!quant.uniform<i8:bf16, 0.3:5>>
  %4 = stablehlo.uniform_quantize %3 : (tensor<6x!quant.uniform<i8:bf16, 0.3:5>>) -> tensor<6x!quant.uniform<i16:bf16, 0.01:-3>>
  %5 = stablehlo.uniform_dequantize %4 : (tensor<6x!quant.uniform<i16:bf16, 0.01:-3>>) -> tensor<6xbf16>
  %6 = stablehlo.uniform_quantize %z : (tensor<6xf16>) -> tensor<6x!quant.uniform<i32:f16, 0.001:7>>
  %7 = stablehlo.uniform_dequantize %6 : (tensor<6x!quant.uniform<i32:f16, 0.001:7>>) -> tensor<6xf16>
  return %2, %5, %7, %0 : tensor<6xf32>, tensor<6xbf16>, tensor<6xf16>, tensor<6x!quant.uniform<ui8:f32, 0.25:128>>
}""", [(6,), (6,), (6,)]),
    "elementwise_dequantize_op_quantize": ("""
func.func @main(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %q = stablehlo.uniform_quantize %x : (tensor<3x4xf32>) -> tensor<3x4x!quant.uniform<i8:f32:1, {0.05:1,0.1:-2,0.02,0.5:3}>>
  %t = stablehlo.tanh %q : (tensor<3x4x!quant.uniform<i8:f32:1, {0.05:1,0.1:-2,0.02,0.5:3}>>) -> tensor<3x4x!quant.uniform<i8:f32, 0.0078125>>
  %n = stablehlo.negate %q : (tensor<3x4x!quant.uniform<i8:f32:1, {0.05:1,0.1:-2,0.02,0.5:3}>>) -> tensor<3x4x!quant.uniform<i8:f32:1, {0.05:1,0.1:-2,0.02,0.5:3}>>
  %d = stablehlo.uniform_dequantize %t : (tensor<3x4x!quant.uniform<i8:f32, 0.0078125>>) -> tensor<3x4xf32>
  %e = stablehlo.uniform_dequantize %n : (tensor<3x4x!quant.uniform<i8:f32:1, {0.05:1,0.1:-2,0.02,0.5:3}>>) -> tensor<3x4xf32>
  return %d, %e : tensor<3x4xf32>, tensor<3x4xf32>
}""", [(3, 4)]),
}


def _random_args(module, shapes, seed):
    rng = np.random.default_rng(seed)
    args = []
    for t, shape in zip(module.main.function_type.inputs, shapes):
        dtype = np.dtype(t.dtype)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            args.append(rng.integers(info.min, int(info.max) + 1, shape).astype(dtype))
        else:
            x = rng.standard_normal(shape) * 3
            if x.size > 2:
                x.reshape(-1)[:2] = [np.inf, np.nan]
            args.append(x.astype(dtype))
    return args


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_lowers_exactly(name):
    text, shapes = PROGRAMS[name]
    for seed in range(3):
        check_program(text, _random_args(parse_module(text), shapes, seed))


def test_refused_ops_stay_quantized_and_the_cpu_backend_says_so():
    # the interpreter contracts i32 storage in float64 (not exactly): not lowered
    q = "!quant.uniform<i32:f32, 0.5>"
    text = f"""
func.func @main(%a: tensor<2x2x{q}>, %b: tensor<2x2x{q}>) -> tensor<2x2x{q}> {{
  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x2x{q}>) -> tensor<2x2x{q}>
  %r = stablehlo.dot_general %t, %b, contracting_dims = [1] x [0] : (tensor<2x2x{q}>, tensor<2x2x{q}>) -> tensor<2x2x{q}>
  return %r : tensor<2x2x{q}>
}}"""
    args = [np.int32([[1, 2], [3, 4]]), np.int32([[5, 6], [7, 8]])]
    m = parse_module(text)
    p = lower(m)
    assert [op.name for op, _ in p.refused] == ["stablehlo.dot_general"]
    assert "16 bits" in p.refused[0][1]
    verify(m)
    assert_same(run_function(m, args), run_function(parse_module(text), args))
    with pytest.raises(Unsupported, match="dot_general"):
        prepare_for_cpu(parse_module(text))
    with pytest.raises(Unsupported, match="quantized"):
        CpuExecutable(parse_module(text)).execute(args)


def test_prepare_for_cpu_lowers_a_copy():
    text, shapes = PROGRAMS["integer_convolution_nhwc"]
    m = parse_module(text)
    lowered = prepare_for_cpu(m)
    assert lowered is not m and not has_quantized_types(lowered)
    assert m == parse_module(text)  # the caller's module (the interpreter may run it) is intact
    ex = CpuExecutable(m)
    assert m == parse_module(text)
    args = _random_args(m, shapes, 7)
    assert_same(ex.execute(args), run_function(m, args))


def test_modules_without_quantized_types_are_left_alone():
    text = """
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %r = stablehlo.add %a, %a : tensor<2xf32>
  return %r : tensor<2xf32>
}"""
    m = parse_module(text)
    assert not make_pass("lower-quant").run(m)
    assert m == parse_module(text)


# ---------------------------------------------------------------- conformance programs


def _quantized_conformance_cases():
    if not os.path.isdir(ROOT):
        return []
    from axle.tools.conformance import collect_cases
    files = subprocess.run(["grep", "-rl", "quant.uniform", ROOT], capture_output=True,
                           text=True).stdout.split()
    return [c for c in collect_cases(sorted(files)) if "quant.uniform" in c.text]


CASES = _quantized_conformance_cases()
needs_suite = pytest.mark.skipif(not CASES, reason="../shared/conformance is not beside the project")


def _lifted(case):
    from axle.tools.conformance import entry_functions
    from axle.tools.lifting import lift
    entries = entry_functions(parse_module(case.text, case.file))
    return [lift(parse_module(case.text, case.file), e) for e in entries]


@needs_suite
def test_every_quantized_conformance_case_lowers_exactly():
    """interpreter(lowered) == interpreter(original), bit for bit, on the values each case
    returns and checks."""
    assert len(CASES) > 90
    for case in CASES:
        for lifted in _lifted(case):
            want = run_function(lifted.module, lifted.args, lifted.entry)
            p = lower(lifted.module)
            assert not p.refused and not has_quantized_types(lifted.module), case.name
            assert_same(run_function(lifted.module, lifted.args, lifted.entry), want, case.name)


@needs_suite
@pytest.mark.parametrize("pattern", ["quantized_ops", "add_qi8", "dot_general", "tf_conversion_path_2d",
                                     "gather_qi8", "tanh_qi8", "round_nearest_afz"])
def test_quantized_conformance_cases_on_the_cpu_backend(pattern):
    cases = [c for c in CASES if pattern in os.path.basename(c.file)][:6]
    assert cases
    for case in cases:
        for lifted in _lifted(case):
            want = run_function(lifted.module, lifted.args, lifted.entry)
            exact = not float_contraction(prepare_for_cpu(lifted.module))
            got = CpuExecutable(lifted.module, lifted.entry).execute(lifted.args)
            assert_cpu_matches(got, want, exact, case.name)
            lifted.run_checks(got)
