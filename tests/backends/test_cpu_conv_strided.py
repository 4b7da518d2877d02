"""Convolutions as GEMMs over strided views of the input (kernels_conv_strided.py): 1-D
filter gradients over long signals in NWC (the rows of the patch matrix overlap), forward
convolutions and input gradients with large windows, padding through the cut copy, outer
loops of rows and of reductions; against jax.jit, the interpreter where cheap, and an f64
reference for the accuracy of long reductions (two-level sums: lowp_runtime's tiles)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
from jax import lax  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu import disk_cache  # noqa: E402
from axle.backends.cpu import executable as cpu_exe  # noqa: E402
from axle.backends.cpu import kernels_conv_strided as KS  # noqa: E402
from axle.backends.cpu.lowp_runtime import supported_kinds  # noqa: E402

pytestmark = pytest.mark.skipif(not ({"f32", "f32_avx2"} & supported_kinds()),
                                reason="the host has neither of axle's f32 GEMM kernels (AVX2 or AVX-512)")
R = np.random.default_rng(21)
NWC = ("NWC", "WIO", "NWC")


def f32(*s, scale=1.0):
    return (R.standard_normal(s) * scale).astype(np.float32)


def _compile(text, enabled=True):
    old = KS.ENABLED
    KS.ENABLED = enabled
    try:
        with disk_cache.disabled():
            cpu_exe.clear_memory_cache()
            return axle.compile(text, backend="cpu")
    finally:
        KS.ENABLED = old
        cpu_exe.clear_memory_cache()


def _strided(exe):
    return sum(1 for k in exe.program.kernels if (getattr(k, "library", None) or "").endswith(".strided"))


def _check(fn, args, taken=True, tol=3e-5, interpret=False):
    text = jax.jit(fn).lower(*args).as_text()
    exe = _compile(text)
    if taken is not None:
        assert (_strided(exe) > 0) == taken, "strided path taken" if not taken else "strided path not taken"
    got = exe.execute(list(args))
    want = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    for g, w in zip(got, want):
        w = np.asarray(w)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, float(np.abs(w).max())))
    if interpret:
        ref = axle.interpret(text, *args)
        for g, w in zip(got, ref if isinstance(ref, (list, tuple)) else [ref]):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, float(np.abs(w).max())))


def _filter_grad(xs, ws, stride, pad, rdil=None):
    def conv(x, w):
        return lax.conv_general_dilated(x, w, stride, pad, rhs_dilation=rdil, dimension_numbers=NWC)
    x, w = f32(*xs), f32(*ws, scale=0.1)
    dy = f32(*jax.eval_shape(conv, x, w).shape)
    return (lambda x, dy: jax.vjp(lambda w: conv(x, w), w)[1](dy)[0]), (x, dy)


FILTER_GRADS = [  # (input, kernel, stride, padding): every one a strided view
    ((4, 2000, 16), (40, 16, 32), (4,), "VALID"),  # a filter bank, stride 4: rows 64 floats apart, 640 wide
    ((3, 1500, 16), (20, 16, 40), (1,), "VALID"),  # stride 1; 40 output features (partial panels)
    ((2, 1201, 64), (3, 64, 48), (2,), "VALID"),  # wav2vec's later layers
    ((2, 700, 32), (9, 32, 32), (1,), "SAME"),  # padding: the cut copy
    ((1, 900, 24), (5, 24, 64), (3,), [(7, 2)]),  # asymmetric padding, stride 3, batch of one
    ((2, 1103, 16), (16, 16, 32), (4,), [(0, 0)]),  # the last samples beyond the window's reach (cut)
    ((2, 1500, 48), (3, 48, 16), (1,), "SAME"),  # 16 output features: one half-used panel (masked stores)
]


@pytest.mark.parametrize("case", FILTER_GRADS, ids=[f"fg{i}" for i in range(len(FILTER_GRADS))])
def test_filter_gradients(case):
    xs, ws, stride, pad = case
    fn, args = _filter_grad(xs, ws, stride, pad)
    _check(fn, args)


def test_filter_gradient_small_is_interpreted_alike():
    fn, args = _filter_grad((2, 300, 8), (4, 8, 32), (1,), [(2, 1)])
    _check(fn, args, interpret=True)


def test_dilated_filter_gradient_rows_per_tap():
    """Forward rhs dilation 2: the filter gradient's taps are 2 x channels apart, so rows
    are one run per tap (an outer loop of rows) when there are enough channels, else the
    general path."""
    fn, args = _filter_grad((2, 900, 32), (5, 32, 32), (1,), "SAME", rdil=(2,))
    _check(fn, args)
    fn, args = _filter_grad((2, 900, 8), (5, 8, 32), (1,), "SAME", rdil=(2,))
    _check(fn, args, taken=False)


def test_forward_and_input_gradient_large_window():
    """A window of 5 x 128 products (beyond the direct kernel): the forward convolution as
    strided GEMMs, one call per batch element (padding through the cut copy); its input
    gradient (the kernel's features not innermost: another path) agrees too."""
    x, w = f32(3, 400, 128), f32(5, 128, 32, scale=0.05)

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1,), "SAME", dimension_numbers=NWC)
    _check(conv, (x, w))
    dy = f32(3, 400, 32)
    _check(lambda w, dy: jax.vjp(lambda x: conv(x, w), x)[1](dy)[0], (w, dy), taken=None)


def test_short_reductions_stay_general():
    """Filter gradients of short signals keep im2col's long GEMM. (Those of images take the
    strided path as 1-D gradients over the flat pixel stream: test_cpu_conv_flat.py.)"""
    fn, args = _filter_grad((2, 100, 16), (5, 16, 32), (1,), "VALID")
    _check(fn, args, taken=False)


def test_long_reduction_accuracy():
    """K = 8 x 1981 products per output: the tiles sum each block of k from zero and add it
    to the output, as accurate as XLA's (a single f32 chain of 16K products was ~10x worse)."""
    x, dy = f32(8, 8000, 16), f32(8, 1981, 32)

    def fn(x, dy):
        conv = lambda w: lax.conv_general_dilated(x, w, (4,), "VALID", dimension_numbers=NWC)  # noqa: E731
        return jax.vjp(conv, np.zeros((80, 16, 32), np.float32))[1](dy)[0]
    text = jax.jit(fn).lower(x, dy).as_text()
    exe = _compile(text)
    assert _strided(exe) == 1
    got = np.asarray(exe.execute([x, dy])[0], np.float64)
    xd, dyd = x.astype(np.float64), dy.astype(np.float64)
    ref = np.stack([np.einsum("ntc,nto->co", xd[:, k:k + 4 * 1981:4, :], dyd) for k in range(80)])
    err = np.abs(got - ref).max() / np.abs(ref).max()
    xla = np.asarray(jax.jit(fn)(x, dy), np.float64)
    xla_err = np.abs(xla - ref).max() / np.abs(ref).max()
    assert err < 2 * xla_err + 1e-7, (err, xla_err)


def test_same_as_general_path():
    """Both paths agree (the switch benchmarks use)."""
    fn, args = _filter_grad((2, 1000, 16), (12, 16, 32), (2,), "SAME")
    text = jax.jit(fn).lower(*args).as_text()
    on, off = _compile(text, True), _compile(text, False)
    assert _strided(on) == 1 and _strided(off) == 0
    np.testing.assert_allclose(on.execute(list(args))[0], off.execute(list(args))[0], rtol=2e-5, atol=2e-4)


def test_mixed_layout_with_the_spatial_dimension_innermost():
    """An input stored [N, C, W] read by a WIO kernel into NWC (mixed dimension numbers):
    the reduction's inner run is the input features (W apart), the taps an outer loop of
    accumulating calls, and the cut copy pads along the input's innermost dimension."""
    x, w = f32(2, 256, 300), f32(5, 256, 32, scale=0.05)

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1,), [(3, 1)], dimension_numbers=("NCH", "HIO", "NHC"))
    _check(conv, (x, w))


def test_transposed_convolution_in_nchw_moves_to_nhwc(calls_of):
    """An NCHW lhs-dilated convolution (PyTorch's transposed 1-D / 2-D ones) with 32 input
    features runs in NHWC (cpu-conv-rows-layout's _rewrite_direct), against jax.jit."""
    moved = calls_of("axle.backends.cpu.conv_rows_layout", "_rewrite_direct")
    x, w = f32(2, 32, 1, 300), f32(16, 32, 1, 4, scale=0.1)

    def up(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), [(0, 0), (2, 2)], lhs_dilation=(1, 2),
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))
    _check(up, (x, w), taken=None)
    assert True in moved
