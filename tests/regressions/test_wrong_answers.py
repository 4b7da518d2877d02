"""Regressions (issue 21): wrong answers the fuzzers found. Each test compares the CPU
backend and the interpreter with numpy's own answer."""
import ml_dtypes
import numpy as np
import pytest

import axle
from axle.ir import parse_module

SPECIALS = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("name,dtype", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16),
                                        ("f32", np.float32), ("f64", np.float64)])
def test_next_after_every_special_pair(name, dtype):
    """Every pair of signed zeros, ones, infinities and NaN, plus the smallest subnormal and
    the largest finite value: chlo.next_after equals numpy.nextafter in the type itself
    (the CPU backend used to compute f16/bf16 in f32 and round: nextafter(-inf, 0) = -inf,
    nextafter(-0, 1) = 0)."""
    info = ml_dtypes.finfo(dtype)
    values = SPECIALS + [float(info.smallest_subnormal), -float(info.smallest_subnormal),
                         float(info.max), -float(info.max)]
    x = np.array([a for a in values for _ in values], dtype)
    y = np.array([b for _ in values for b in values], dtype)
    n = len(x)
    src = f"""
func.func @main(%a: tensor<{n}x{name}>, %b: tensor<{n}x{name}>) -> tensor<{n}x{name}> {{
  %0 = chlo.next_after %a, %b : (tensor<{n}x{name}>, tensor<{n}x{name}>) -> tensor<{n}x{name}>
  return %0 : tensor<{n}x{name}>
}}"""
    with np.errstate(over="ignore"):
        want = np.nextafter(x, y)
    # C (and numpy for every type but float16) returns y when x == y: nextafter(0, -0) = -0
    want = np.where(x == y, y, want)
    for got in (axle.interpret(parse_module(src), x, y), axle.compile(src)(x, y)):
        np.testing.assert_array_equal(got.view(f"u{x.itemsize}")[~np.isnan(want)],
                                      want.view(f"u{x.itemsize}")[~np.isnan(want)])
        assert np.isnan(got[np.isnan(want)].astype(np.float64)).all()


DS = """
func.func @main(%a: tensor<8xf32>, %i: tensor<ui64>) -> tensor<2xf32> {
  %0 = stablehlo.dynamic_slice %a, %i, sizes = [2] : (tensor<8xf32>, tensor<ui64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}"""
DUS = """
func.func @main(%a: tensor<8xf32>, %u: tensor<2xf32>, %i: tensor<ui64>) -> tensor<8xf32> {
  %0 = stablehlo.dynamic_update_slice %a, %u, %i : (tensor<8xf32>, tensor<2xf32>, tensor<ui64>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}"""
GATHER = """
func.func @main(%a: tensor<8xf32>, %i: tensor<3x1xui64>) -> tensor<3x2xf32> {
  %0 = "stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1],
      start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 2>}
      : (tensor<8xf32>, tensor<3x1xui64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}"""
HUGE = [2**63, 2**63 + 5, 2**64 - 1]


@pytest.mark.parametrize("start", HUGE)
def test_ui64_start_at_or_above_2_63_clamps_to_the_end(start):
    """A ui64 start index >= 2^63 is a huge positive number: it clamps to dim - size (the
    CPU backend read it as a negative i64 and clamped it to 0)."""
    a = np.arange(8, dtype=np.float32)
    i = np.array(start, np.uint64)
    u = np.array([-1, -2], np.float32)
    want_ds = a[6:8]
    want_dus = a.copy()
    want_dus[6:8] = u
    for run in (lambda s, *x: axle.interpret(parse_module(s), *x), lambda s, *x: axle.compile(s)(*x)):
        np.testing.assert_array_equal(run(DS, a, i), want_ds)
        np.testing.assert_array_equal(run(DUS, a, u, i), want_dus)
        idx = np.array([[start], [3], [0]], np.uint64)
        np.testing.assert_array_equal(run(GATHER, a, idx), [a[6:8], a[3:5], a[0:2]])
