"""Convolutions in every form JAX emits (layouts, strides, dilations, groups, gradients) run
as im2col + BLAS (kernels_conv_general.py) and give XLA's and the interpreter's results."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402


def _conv(x, w, strides=(1, 1), padding="SAME", lhs_dil=None, rhs_dil=None, dn=("NHWC", "HWIO", "NHWC"),
          fgc=1, bgc=1):
    return jax.lax.conv_general_dilated(x, w, strides, padding, lhs_dilation=lhs_dil, rhs_dilation=rhs_dil,
                                        dimension_numbers=dn, feature_group_count=fgc, batch_group_count=bgc)


def _check(fn, *args, interpreter=True, dtype=np.float32, blas=True):
    args = [a.astype(dtype) for a in args]
    text = jax.jit(fn).lower(*args).as_text()
    exe = axle.compile(text, backend="cpu")
    got = exe.execute(args)
    want = [np.asarray(t) for t in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    if interpreter:
        ref = axle.compile(text, backend="interpreter").execute(args)
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol)
    libs = [k.library for k in exe.program.kernels if k.library]
    if not blas:  # another kernel's case (test_cpu_conv_channels.py)
        assert not libs, libs
        return got
    assert libs and all(lib == ("blas.dgemm" if dtype == np.float64 else "blas.sgemm") for lib in libs), libs
    return got


def _r(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradients_of_a_same_conv(dtype):
    """Input gradient ([0, 1, o, i] kernel, reversed) and filter gradient ([f, 0, 1, b] x
    [i, 0, 1, o] -> [0, 1, b, f]), strided too."""
    with jax.enable_x64(dtype == np.float64):
        for strides in ((1, 1), (2, 2)):
            def loss(x, w):
                return (_conv(x, w, strides) ** 2).sum()
            _check(lambda x, w: jax.grad(loss, argnums=(0, 1))(x, w), _r(2, 9, 10, 6), _r(3, 3, 6, 5, seed=1) * 0.2,
                   dtype=dtype)


def test_nchw_oihw_and_strided_dilated():
    _check(lambda x, w: _conv(x, w, (2, 1), [(1, 0), (2, 2)], rhs_dil=(1, 2), dn=("NCHW", "OIHW", "NCHW")),
           _r(2, 5, 11, 9), _r(7, 5, 3, 3, seed=2))


def test_transposed_conv_lhs_dilation():
    _check(lambda x, w: jax.lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
           _r(2, 6, 5, 4), _r(3, 3, 4, 6, seed=3))
    _check(lambda x, w: _conv(x, w, (1, 1), [(2, 1), (0, 2)], lhs_dil=(3, 2)), _r(1, 4, 5, 3), _r(2, 3, 3, 4, seed=4))


def test_feature_groups_and_depthwise():
    _check(lambda x, w: _conv(x, w, fgc=3), _r(2, 7, 6, 6), _r(3, 3, 2, 9, seed=5))
    # depthwise NHWC: the channels kernel, not im2col
    _check(lambda x, w: _conv(x, w, fgc=8), _r(2, 7, 6, 8), _r(3, 3, 1, 8, seed=6), blas=False)


def test_batch_groups_filter_gradient_of_grouped_conv():
    def loss(x, w):
        return (_conv(x, w, fgc=2) ** 2).sum()
    _check(lambda x, w: jax.grad(loss, argnums=1)(x, w), _r(3, 6, 5, 4), _r(3, 3, 2, 6, seed=7))
    _check(lambda x, w: _conv(x, w, bgc=2), _r(4, 6, 5, 3), _r(3, 3, 3, 8, seed=8))


def test_one_and_three_spatial_dimensions():
    _check(lambda x, w: _conv(x, w, (2,), [(3, 1)], rhs_dil=(2,), dn=("NWC", "WIO", "NWC")), _r(3, 40, 6),
           _r(4, 6, 5, seed=9))
    _check(lambda x, w: _conv(x, w, (1, 2, 1), "SAME", dn=("NCDHW", "OIDHW", "NCDHW")), _r(1, 3, 5, 6, 4),
           _r(4, 3, 2, 3, 2, seed=10))


@pytest.mark.parametrize("case", [
    # (input, kernel, lhs dilation, padding, rhs dilation)
    ((2, 7, 6, 3), (3, 3, 3, 5), (2, 2), [(2, 1), (1, 2)], (1, 1)),
    ((1, 5, 9, 4), (4, 2, 4, 3), (3, 2), [(3, 3), (0, 1)], (1, 2)),
    ((2, 6, 6, 3), (1, 1, 3, 4), (2, 3), [(0, 1), (2, 0)], (1, 1)),  # phases with no tap: zeros
    ((1, 4, 4, 2), (3, 3, 2, 2), (4, 4), [(2, 2), (2, 2)], (2, 1)),
])
def test_lhs_dilated_convolutions_by_phase(case):
    """Stride-1 convolutions with lhs dilation run one dense convolution per output phase
    (only the window taps that meet input elements): same results as the definition."""
    xs, ws, ld, pads, rd = case
    _check(lambda x, w: _conv(x, w, (1, 1), pads, lhs_dil=ld, rhs_dil=rd), _r(*xs), _r(*ws, seed=11))
    _check(lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), pads, lhs_dilation=ld, rhs_dilation=rd,
                                                     dimension_numbers=("NCHW", "OIHW", "NCHW")),
           _r(xs[0], xs[3], xs[1], xs[2]), _r(ws[3], ws[2], ws[0], ws[1], seed=12))
