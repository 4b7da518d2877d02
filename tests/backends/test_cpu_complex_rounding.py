"""Complex multiply, divide and abs round as XLA's CPU backend does (re = fma(ar, br, -ai bi),
im = fma(ai, br, ar bi); Smith's quotient with fused multiply-adds; |z| = m sqrt(fma(d, d,
1)) with m the larger part and d the ratio),
bit for bit against jax.jit: an escape-time loop (the Mandelbrot iteration) turns a last-bit
difference into different counts. Special values of abs follow C99's hypot (as numpy)."""
import numpy as np
import pytest

import axle

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402


def _both(fn, *args):
    got = np.asarray(axle.compile(jax.jit(fn).lower(*args).as_text(), backend="cpu")(*args))
    return got, np.asarray(jax.jit(fn)(*args))


def _z(rng, n, scale=1.0):
    return (rng.standard_normal(n) * scale + 1j * rng.standard_normal(n)).astype(np.complex64)


@pytest.mark.parametrize("name", ["multiply", "square_add", "abs", "divide", "divide_by_magnitude"])
def test_complex64_arithmetic_is_bitwise_xla(name):
    rng = np.random.default_rng(17)
    z = _z(rng, 50_000, np.exp(rng.uniform(-30, 30, 50_000)))
    c = _z(rng, 50_000)
    fn = {"multiply": lambda z, c: z * c, "square_add": lambda z, c: z * z + c,
          "abs": lambda z, c: jnp.abs(z) - jnp.abs(c), "divide": lambda z, c: z / c,
          "divide_by_magnitude": lambda z, c: z / jnp.maximum(jnp.abs(z), 1e-8) + c}[name]
    got, want = _both(fn, z, c)
    np.testing.assert_array_equal(got, want)


def test_mandelbrot_counts_equal_xla():
    re, im = np.meshgrid(np.linspace(-2.2, 0.8, 160), np.linspace(-1.3, 1.3, 120))
    c = (re + 1j * im).astype(np.complex64)

    def f(c):
        def body(_, s):
            z, n = s
            act = jnp.abs(z) <= 2.0
            return jnp.where(act, z * z + c, z), n + act.astype(jnp.int32)
        return lax.fori_loop(0, 96, body, (jnp.zeros_like(c), jnp.zeros(c.shape, jnp.int32)))[1]
    got, want = _both(f, c)
    np.testing.assert_array_equal(got, want)


def test_abs_special_values_follow_hypot():
    vals = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-30]
    z = np.array([complex(a, b) for a in vals for b in vals], np.complex64)
    t = f"tensor<{z.size}xcomplex<f32>>"
    got = axle.compile(f"func.func @main(%z: {t}) -> tensor<{z.size}xf32> {{ %0 = stablehlo.abs %z : "
                       f"({t}) -> tensor<{z.size}xf32> return %0 : tensor<{z.size}xf32> }}", backend="cpu")(z)
    np.testing.assert_array_equal(got, np.abs(z))
