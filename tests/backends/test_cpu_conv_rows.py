"""Convolutions with few features per group and a spatial dimension innermost
(kernels_conv_rows.py): depthwise NCHW (stride, padding, channel multiplier 2, 3-D),
one-channel 1-D filters (dilation, padding wider than the window, rows longer than a
tile), f64. Against jax.jit and the interpreter."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
from jax import lax  # noqa: E402

import axle  # noqa: E402

R = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _used(calls_of):
    """Every test here must run through emit_rows_conv (tests/backends/conftest.py)."""
    calls = calls_of("axle.backends.cpu.kernels_conv_rows", "emit_rows_conv")
    yield
    assert calls, "the rows convolution kernel was not used"


def _check(fn, *args, rtol=2e-5):
    text = jax.jit(fn).lower(*args).as_text()
    got = axle.compile(text, backend="cpu").execute(list(args))[0]
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(*args)), rtol=rtol, atol=rtol)
    want = axle.interpret(text, *args)
    want = want[0] if isinstance(want, (list, tuple)) else want
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def f32(*s, scale=1.0):
    return (R.standard_normal(s) * scale).astype(np.float32)


@pytest.mark.parametrize("stride,padding", [((1, 1), "SAME"), ((2, 2), "SAME"), ((1, 2), "VALID"),
                                            ((1, 1), [(3, 0), (2, 4)])])
def test_depthwise_nchw(stride, padding):
    x, w = f32(2, 6, 19, 37), f32(6, 1, 3, 3, scale=0.3)
    fn = lambda x, w: lax.conv_general_dilated(x, w, stride, padding, dimension_numbers=("NCHW", "OIHW", "NCHW"),  # noqa: E731
                                               feature_group_count=6)
    _check(fn, x, w)


def test_depthwise_channel_multiplier_two_with_dilation():
    x, w = f32(2, 4, 21, 40), f32(8, 1, 3, 3, scale=0.3)
    fn = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", rhs_dilation=(2, 3),  # noqa: E731
                                               dimension_numbers=("NCHW", "OIHW", "NCHW"), feature_group_count=4)
    _check(fn, x, w)


def test_depthwise_3d():
    x, w = f32(1, 3, 5, 9, 20), f32(3, 1, 3, 3, 3, scale=0.3)
    fn = lambda x, w: lax.conv_general_dilated(x, w, (1, 1, 1), "SAME",  # noqa: E731
                                               dimension_numbers=("NCDHW", "OIDHW", "NCDHW"), feature_group_count=3)
    _check(fn, x, w)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_one_channel_signal(mode):
    x, k = f32(1300), f32(45)  # three tiles of 512 in "full"
    import jax.numpy as jnp
    _check(lambda x, k: jnp.convolve(x, k, mode=mode), x, k)


def test_one_channel_rows_strided_and_dilated():
    x, k = f32(7, 600), f32(1, 1, 9)
    fn = lambda x, k: lax.conv_general_dilated(x[:, None, :], k, (3,), [(20, 5)], rhs_dilation=(2,))  # noqa: E731
    _check(fn, x, k)


def test_f64_and_two_input_features():
    jax.config.update("jax_enable_x64", True)
    try:
        x = R.standard_normal((3, 2, 50)).astype(np.float64)
        w = R.standard_normal((2, 2, 5)).astype(np.float64)  # 2 x 2 features per group (4 <= MAX)
        fn = lambda x, w: lax.conv_general_dilated(x, w, (1,), "SAME", dimension_numbers=("NCH", "OIH", "NCH"))  # noqa: E731
        _check(fn, x, w, rtol=1e-12)
    finally:
        jax.config.update("jax_enable_x64", False)
