"""1-D convolutions run as 2-D ones over [1, W] (pass cpu-conv-rows-layout, `_as_2d`):
every layout (NCW / NWC, OIW / WIO, the gradients' forms), strides, padding, rhs and lhs
dilation, groups, window reversal, f32 and f64, against jax.jit and the interpreter; the
compiled module has no 1-D convolution left."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
from jax import lax  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu import disk_cache  # noqa: E402
from axle.backends.cpu import executable as cpu_exe  # noqa: E402
from axle.backends.cpu.conv_rows_layout import CpuConvRowsLayout  # noqa: E402
from axle.ir.text import parse_module  # noqa: E402

R = np.random.default_rng(11)


def f32(*s, scale=1.0):
    return (R.standard_normal(s) * scale).astype(np.float32)


def _rank_of_convolutions(text):
    m = parse_module(text)
    CpuConvRowsLayout().run(m)
    return {len(op.operands[0].type.shape) for op in m.walk() if op.name == "stablehlo.convolution"}


def _check(fn, *args, tol=2e-5):
    text = jax.jit(fn).lower(*args).as_text()
    assert _rank_of_convolutions(text) == {4}, "a 1-D convolution was left as it is"
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(text, backend="cpu")
    got = exe.execute(list(args))
    want = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=tol, atol=tol)
    ref = axle.interpret(text, *args)
    for g, w in zip(got, ref if isinstance(ref, (list, tuple)) else [ref]):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


CASES = [  # (layout, input, kernel, stride, padding, lhs dilation, rhs dilation, groups)
    (("NCH", "OIH", "NCH"), (4, 1, 800), (32, 1, 80), (4,), "VALID", None, None, 1),  # an audio filter bank
    (("NHC", "HIO", "NHC"), (3, 300, 16), (7, 16, 24), (2,), "SAME", None, None, 1),
    (("NHC", "HIO", "NHC"), (2, 100, 8), (3, 8, 8), (1,), [(4, 0)], None, (2,), 1),  # causal, dilated
    (("NCH", "OIH", "NCH"), (2, 12, 90), (12, 4, 5), (1,), "SAME", None, None, 3),  # grouped
    (("NHC", "HIO", "NHC"), (2, 64, 16), (9, 1, 16), (1,), [(8, 0)], None, None, 16),  # depthwise causal
    (("NHC", "HIO", "NHC"), (2, 40, 6), (4, 6, 5), (1,), [(3, 3)], (2,), None, 1),  # transposed (lhs dilation)
]


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_forward_and_both_gradients(case):
    dn, xs, ws, stride, pad, ldil, rdil, groups = case

    def conv(x, w):
        return lax.conv_general_dilated(x, w, stride, pad, lhs_dilation=ldil, rhs_dilation=rdil,
                                        dimension_numbers=dn, feature_group_count=groups)
    x, w = f32(*xs), f32(*ws, scale=0.2)
    _check(conv, x, w)
    _check(jax.grad(lambda x, w: (conv(x, w) ** 2).sum(), argnums=(0, 1)), x, w, tol=5e-4)


def test_f64_and_window_reversal():
    text = """func.func @main(%x: tensor<2x30x3xf64>, %w: tensor<5x3x4xf64>) -> tensor<2x28x4xf64> {
      %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],
           window = {stride = [1], pad = [[1, 1]], lhs_dilate = [1], rhs_dilate = [1], reverse = [true]}
           {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x30x3xf64>, tensor<5x3x4xf64>) -> tensor<2x28x4xf64>
      return %0 : tensor<2x28x4xf64>
    }"""
    assert _rank_of_convolutions(text) == {4}
    x, w = R.standard_normal((2, 30, 3)), R.standard_normal((5, 3, 4))
    with disk_cache.disabled():
        got = axle.compile(text, backend="cpu").execute([x, w])[0]
    np.testing.assert_allclose(got, axle.interpret(text, x, w), rtol=1e-12, atol=1e-12)
