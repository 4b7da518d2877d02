"""Elementwise DAGs in one loop: a value read by several fused ops is computed once per
element (Emitter.op_at's memo) instead of getting a buffer (fusion._shared_in_one_loop),
and short counted loops are unrolled (passes/unroll_loops.py) so that JAX's threefry
rounds fuse. Results against jax.jit (random bits bit for bit) and float64 references."""
import numpy as np
import pytest
import scipy.special as sp

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402


def _compile(fn, *args):
    return axle.compile(jax.jit(fn).lower(*args).as_text(), backend="cpu")


def _loops(exe):
    return [k for k in exe.program.kernels if k.depth == 0]


def test_shared_values_computed_once_in_one_loop():
    """t = sin(x) * exp(x) read four times, u = t * t + x read twice: one loop."""
    def f(x):
        t = jnp.sin(x) * jnp.exp(x)
        u = t * t + x
        return (u - t) * (u + t) / (1.0 + t * t)
    x = np.linspace(-3, 3, 100003, dtype=np.float32)
    exe = _compile(f, x)
    assert len(_loops(exe)) == 1
    np.testing.assert_allclose(exe.execute([x])[0], np.asarray(jax.jit(f)(x)), rtol=2e-6, atol=1e-6)


def test_shared_value_read_through_a_broadcast_keeps_its_buffer():
    """A shared value also read at another index (through a transpose) stays materialized:
    the memo only serves reads at the same index."""
    def f(x):
        t = jnp.sin(x) * jnp.exp(x) + jnp.cos(x)
        return t * t + t.T
    x = np.random.default_rng(0).standard_normal((129, 129)).astype(np.float32)
    exe = _compile(f, x)
    assert len(_loops(exe)) == 2
    np.testing.assert_allclose(exe.execute([x])[0], np.asarray(jax.jit(f)(x)), rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize("shape", [(1024, 1024), (3, 1001)])
def test_random_bits_and_normals(shape):
    """jax.random: threefry's five loop trips unrolled and fused; bits equal XLA's, normals
    within 2 ulp of erfinv in float64 of the same uniforms."""
    key = np.array([0, 42], np.uint32)

    def f(k):
        k = jax.random.wrap_key_data(k)
        return jax.random.bits(k, shape), jax.random.normal(k, shape), jax.random.uniform(k, shape, minval=-1.0)
    exe = _compile(f, key)
    assert len(_loops(exe)) <= 8  # 26 with a buffer per shared round, 2 with the loop kept
    bits, normal, uniform = exe.execute([key])
    want_bits, _, want_uniform = jax.jit(f)(key)
    np.testing.assert_array_equal(bits, np.asarray(want_bits))
    np.testing.assert_array_equal(uniform, np.asarray(want_uniform))
    # jax.random.normal: sqrt(2) erfinv(u) for u uniform in [nextafter(-1, 0), 1)
    u = np.asarray(jax.jit(lambda k: jax.random.uniform(jax.random.wrap_key_data(k), shape,
                                                        minval=np.nextafter(np.float32(-1), np.float32(0)),
                                                        maxval=1.0))(key))
    ref = (np.sqrt(2.0) * sp.erfinv(u.astype(np.float64))).astype(np.float32)
    ulp = np.abs(normal.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    assert ulp.max() <= 2, (ulp.max(), u.reshape(-1)[ulp.argmax()])
