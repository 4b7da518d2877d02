"""bf16 / f16 sums and products accumulate in f32 on the CPU (pass widen-lowp-reductions),
as XLA's do: the result is the exact sum rounded once, where accumulating in the element
type stops a bf16 sum of ones at 256 and an f16 one at 2048."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import axle

BF16 = ml_dtypes.bfloat16


def _run(text, *args):
    return [np.asarray(r) for r in axle.compile(text, backend="cpu").execute(list(args))]


@pytest.mark.parametrize("ty,dt", [("bf16", BF16), ("f16", np.float16)])
def test_sum_over_rows_is_the_rounded_exact_sum(ty, dt):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, (4096, 24)).astype(dt)
    text = f"""func.func @main(%x: tensor<4096x24x{ty}>) -> (tensor<24x{ty}>, tensor<4096x{ty}>) {{
  %z = stablehlo.constant dense<0.0> : tensor<{ty}>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4096x24x{ty}>, tensor<{ty}>) -> tensor<24x{ty}>
  %r = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4096x24x{ty}>, tensor<{ty}>) -> tensor<4096x{ty}>
  return %s, %r : tensor<24x{ty}>, tensor<4096x{ty}>
}}"""
    cols, rows = _run(text, x)
    exact = x.astype(np.float64)
    for got, want in ((cols, exact.sum(0)), (rows, exact.sum(1))):
        # f32 accumulation, one rounding: within one unit of the element type's last place
        mantissa = 7 if dt is BF16 else 10
        ulp = 2.0 ** (np.floor(np.log2(np.abs(want))) - mantissa)
        assert np.all(np.abs(got.astype(np.float64) - want) <= ulp), (ty, np.abs(got.astype(np.float64) - want).max())


def test_sum_of_ones_is_not_stuck_at_the_type_s_precision():
    ones = np.ones((8, 4096), BF16)
    text = """func.func @main(%x: tensor<8x4096xbf16>) -> (tensor<8xbf16>, tensor<8x1xbf16>) {
  %z = stablehlo.constant dense<0.0> : tensor<bf16>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<8x4096xbf16>, tensor<bf16>) -> tensor<8xbf16>
  %w = "stablehlo.reduce_window"(%x, %z) ({
    ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
      %t = stablehlo.add %a, %b : tensor<bf16>
      stablehlo.return %t : tensor<bf16>
  }) {window_dimensions = array<i64: 1, 4096>} : (tensor<8x4096xbf16>, tensor<bf16>) -> tensor<8x1xbf16>
  return %s, %w : tensor<8xbf16>, tensor<8x1xbf16>
}"""
    s, w = _run(text, ones)
    assert s.astype(np.float32).tolist() == [4096.0] * 8
    assert w.astype(np.float32).ravel().tolist() == [4096.0] * 8


def test_f16_product_rounds_once():
    x = np.full((1, 2048), 1.0009765625, np.float16)  # 1 + 2**-10, exact in f16
    text = """func.func @main(%x: tensor<1x2048xf16>) -> tensor<1xf16> {
  %one = stablehlo.constant dense<1.0> : tensor<f16>
  %p = stablehlo.reduce(%x init: %one) applies stablehlo.multiply across dimensions = [1] : (tensor<1x2048xf16>, tensor<f16>) -> tensor<1xf16>
  return %p : tensor<1xf16>
}"""
    (p,) = _run(text, x)
    want = np.float16(np.float32(1.0009765625) ** 2048)  # f32 running product: within f32's rounding of the exact 7.38...
    assert abs(float(p[0]) - 1.0009765625 ** 2048) <= float(np.spacing(want)), (p, want)


def test_max_and_argmax_keep_their_type():
    """Exact in any type: not widened (the module keeps its bf16 reduce)."""
    from axle.ir import parse_module, print_module
    from axle.passes import PassManager, make_pass
    text = """func.func @main(%x: tensor<4x8xbf16>) -> tensor<8xbf16> {
  %z = stablehlo.constant dense<0xFF80> : tensor<bf16>
  %m = stablehlo.reduce(%x init: %z) applies stablehlo.maximum across dimensions = [0] : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<8xbf16>
  return %m : tensor<8xbf16>
}"""
    m = parse_module(text)
    PassManager([make_pass("widen-lowp-reductions")]).run(m)
    assert "f32" not in print_module(m)
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(BF16)
    (got,) = _run(text, x)
    np.testing.assert_array_equal(got, x.max(0))
