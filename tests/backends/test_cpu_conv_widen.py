"""Convolutions of bf16 / f16 / int8 operands run in f32 / f64 (cpu-widen-convolutions):
against jax.jit and numpy, with the f32 kernels (not the generic loop) doing the work."""
import ml_dtypes
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import axle  # noqa: E402

DN = ("NHWC", "HWIO", "NHWC")


def _conv(pref=None, groups=1, stride=(1, 1)):
    def f(x, w):
        return lax.conv_general_dilated(x, w, stride, "SAME", dimension_numbers=DN, feature_group_count=groups,
                                        preferred_element_type=pref)
    return f


def _reference(x, w):
    """A 3 x 3 SAME NHWC convolution, stride 1, in float64 (exact for the integers here)."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    n, h, wd, _ = x.shape
    out = np.zeros((n, h, wd, w.shape[-1]))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nhwc,co->nhwo", xp[:, i:i + h, j:j + wd], w[i, j].astype(np.float64))
    return out


def _run(f, x, w):
    text = jax.jit(f).lower(x, w).as_text()
    exe = axle.compile(text, backend="cpu")
    assert "stablehlo.convolution" not in {k.op for k in exe.program.kernels if k.library is None}
    return exe.execute([x, w])[0], np.asarray(jax.jit(f)(x, w))


@pytest.mark.parametrize("dt", [ml_dtypes.bfloat16, np.float16])
@pytest.mark.parametrize("pref", [jnp.float32, None])
def test_half_precision_conv(dt, pref):
    r = np.random.default_rng(0)
    x = r.standard_normal((2, 9, 11, 24)).astype(dt)
    w = (r.standard_normal((3, 3, 24, 16)) * 0.1).astype(dt)
    got, want = _run(_conv(pref), x, w)
    assert got.dtype == want.dtype
    exact = _reference(x, w)
    # f32 accumulation of exact products; a half-precision result is rounded once
    tol = 1e-5 if pref is not None else (1e-2 if dt == ml_dtypes.bfloat16 else 2e-3)
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(exact), rtol=tol, atol=tol)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2 * tol, atol=2 * tol)


def test_bf16_grouped_strided_conv():
    r = np.random.default_rng(1)
    x = r.standard_normal((2, 16, 16, 32)).astype(ml_dtypes.bfloat16)
    w = (r.standard_normal((3, 3, 8, 32)) * 0.1).astype(ml_dtypes.bfloat16)
    got, want = _run(_conv(jnp.float32, groups=4, stride=(2, 2)), x, w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cin", [8, 200])  # window x 128 x 128 <= 2**24 (f32), and past it (f64)
def test_int8_conv_exact(cin):
    r = np.random.default_rng(2)
    x = r.integers(-128, 128, (2, 7, 7, cin)).astype(np.int8)
    w = r.integers(-128, 128, (3, 3, cin, 5)).astype(np.int8)
    got, want = _run(_conv(jnp.int32), x, w)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, _reference(x, w).astype(np.int64))
