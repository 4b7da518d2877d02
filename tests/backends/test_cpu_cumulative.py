"""Cumulative reductions (reduce_window as long as the axis) run as O(n) prefix scans
(kernels_cumulative.py) and give the interpreter's / XLA's results."""
import time

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu.kernels_cumulative import scan_plan  # noqa: E402


def _text(fn, *args):
    return jax.jit(fn).lower(*args).as_text()


FNS = {
    "cumsum1": lambda x: jnp.cumsum(x, axis=1),
    "cumsum0": lambda x: jnp.cumsum(x, axis=0),
    "cumprod0": lambda x: jnp.cumprod(1 + 0.01 * x, axis=0),
    "cummax_rev": lambda x: jax.lax.cummax(x, axis=1, reverse=True),
    "cummin0_rev": lambda x: jax.lax.cummin(x, axis=0, reverse=True),
    "cumlogsumexp": lambda x: jax.lax.cumlogsumexp(x, axis=1),
    "cumsum_rev_fused": lambda x: jax.lax.cumsum(x * x - 1, axis=1, reverse=True),
    "cumsum3d_mid": lambda x: jnp.cumsum(x.reshape(x.shape[0], 3, -1), axis=1),
}


@pytest.mark.parametrize("name", sorted(FNS))
@pytest.mark.parametrize("shape", [(5, 12), (64, 96)])
def test_cumulative_matches_interpreter_and_xla(name, shape):
    fn = FNS[name]
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    text = _text(fn, x)
    got = axle.compile(text, backend="cpu").execute([x])
    ref = axle.compile(text, backend="interpreter").execute([x])
    xla = np.asarray(jax.jit(fn)(x))
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0], xla, rtol=1e-4, atol=1e-4)


def test_integer_cumsum_and_argmax_pairs_are_exact():
    x = np.random.default_rng(4).integers(-1000, 1000, (7, 300)).astype(np.int32)
    fn = lambda v: (jnp.cumsum(v, axis=1), jax.lax.cummax(v, axis=0))  # noqa: E731
    got = axle.compile(_text(fn, x), backend="cpu").execute([x])
    np.testing.assert_array_equal(got[0], np.cumsum(x, axis=1))
    np.testing.assert_array_equal(got[1], np.maximum.accumulate(x, axis=0))


def test_long_cumsum_is_linear_time():
    """4096 x 4096 elements: the windowed loop would do 16G window steps (minutes)."""
    x = np.random.default_rng(5).standard_normal((4, 1 << 20)).astype(np.float32) * 1e-3
    exe = axle.compile(_text(lambda v: jnp.cumsum(v, axis=1), x), backend="cpu")
    t0 = time.perf_counter()
    (out,) = exe.execute([x])
    assert time.perf_counter() - t0 < 5.0
    np.testing.assert_allclose(out, np.cumsum(x.astype(np.float64), axis=1), rtol=1e-3, atol=1e-2)


def test_plan_only_for_whole_axis_windows():
    from axle.ir.text import parse_module
    x = np.zeros((4, 8), np.float32)
    whole = parse_module(_text(lambda v: jnp.cumsum(v, axis=1), x))
    part = parse_module(_text(lambda v: jax.lax.reduce_window(v, 0.0, jax.lax.add, (1, 3), (1, 1), "SAME"), x))

    def windows(m):
        return [o for o in m.walk() if o.name == "stablehlo.reduce_window"]
    ws, wp = windows(whole), windows(part)
    assert scan_plan(ws[0]) == (1, False)
    assert scan_plan(wp[0]) is None


@pytest.mark.parametrize("axis,reverse", [(1, False), (1, True), (0, False)])
def test_bf16_cumsum_carries_f32(axis, reverse):
    """A bf16 cumsum keeps its partial sums in f32 and rounds what it stores (XLA's CPU
    backend takes the same excess precision): within one bf16 rounding of the exact sums,
    where rounding every step drifted by tens of ulps over 4096 elements."""
    import jax
    import jax.numpy as jnp
    import ml_dtypes
    x = np.random.default_rng(5).standard_normal((64, 4096) if axis == 1 else (4096, 64)).astype(ml_dtypes.bfloat16)
    fn = lambda v: jax.lax.cumsum(v, axis=axis, reverse=reverse)  # noqa: E731
    got = np.asarray(axle.compile(jax.jit(fn).lower(x).as_text(), backend="cpu").execute([x])[0])
    x64 = x.astype(np.float64)
    exact = np.flip(np.cumsum(np.flip(x64, axis), axis), axis) if reverse else np.cumsum(x64, axis=axis)
    rounded = exact.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    ulp = np.abs(np.spacing(rounded.astype(ml_dtypes.bfloat16)).astype(np.float64))
    assert np.all(np.abs(got.astype(np.float64) - exact) <= ulp + 1e-6)
    cm = lambda v: jax.lax.cummax(v, axis=axis, reverse=reverse)  # noqa: E731
    got = np.asarray(axle.compile(jax.jit(cm).lower(x).as_text(), backend="cpu").execute([x])[0])
    np.testing.assert_array_equal(got, np.asarray(jax.jit(cm)(x)))
