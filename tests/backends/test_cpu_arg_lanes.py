"""Arg-max / arg-min reductions in vector lanes (arg_lanes.py): the same (index, value) as
the sequential fold, bit for bit against jax.jit, with NaNs (the first wins), infinities,
signed zeros and repeated maxima; bodies that are not a selection keep the sequential fold."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu import arg_lanes, disk_cache  # noqa: E402
from axle.backends.cpu import executable as cpu_exe  # noqa: E402

R = np.random.default_rng(21)


def _rows(n, dtype=np.float32):
    x = R.standard_normal((12, n)).astype(np.float32)
    x[1, [5, n - 3]] = np.nan  # two NaNs: the first
    x[2, :] = -np.inf
    x[3, [7, n // 2, n - 1]] = 50.0  # a repeated maximum: the first
    x[4, :] = 0.0
    x[4, ::3] = -0.0  # signed zeros compare equal: the first
    x[5, n // 3:] = np.nan
    x[6, [2, 9]] = [-np.nan, np.nan]
    x[7, [0, n - 1]] = [-60.0, -60.0]  # a repeated minimum
    if np.dtype(dtype).kind == "i":
        x = np.nan_to_num(x * 100, nan=0, posinf=1000, neginf=-1000)
    return x.astype(dtype)


def _check(f, x, monkeypatch, taken=True):
    used = []
    real = arg_lanes.lanewise_arg
    monkeypatch.setattr(arg_lanes, "lanewise_arg", lambda *a: used.append(1) or real(*a))
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(jax.jit(f).lower(x).as_text(), backend="cpu")
    want = jax.tree_util.tree_leaves(jax.jit(f)(x))
    got = exe.execute([x])
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8))
    assert bool(used) == taken


@pytest.mark.parametrize("n", [64, 101, 1024])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_argmax_argmin_bit_for_bit(kind, dtype, n, monkeypatch):
    if dtype == np.float64:
        jax.config.update("jax_enable_x64", True)
    try:
        x = _rows(n, dtype)
        fn = jnp.argmax if kind == "argmax" else jnp.argmin
        _check(lambda x: fn(x, -1), x, monkeypatch)
    finally:
        jax.config.update("jax_enable_x64", False)


def test_value_and_index_from_one_pair(monkeypatch):
    """A body whose value and index come from the same pair (torch's max with indices) may
    have its value result read: the values are the row maxima, signed zeros as the first."""
    def first_max(a, b):
        (av, ai), (bv, bi) = a, b
        take = (av > bv) | (av != av) | ((av == bv) & (ai < bi))
        take = take & ~((bv != bv) & (av == av))
        return jnp.where(take, av, bv), jnp.where(take, ai, bi)

    def f(x):
        i = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)
        return jax.lax.reduce((x, i), (np.float32(-np.inf), np.int32(-1)), first_max, (1,))
    _check(f, _rows(200), monkeypatch)


def test_last_index_on_ties_keeps_the_sequential_fold(monkeypatch):
    """Ties going to the right (the last maximum) is not a selection that keeps the left:
    the sequential fold, and its answer."""
    def last_max(a, b):
        (av, ai), (bv, bi) = a, b
        take = av > bv
        return jnp.where(take, av, bv), jnp.where(take, ai, bi)

    def f(x):
        i = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)
        return jax.lax.reduce((x, i), (np.float32(-np.inf), np.int32(-1)), last_max, (1,))[1]
    _check(f, np.round(_rows(200) * 2) / 2, monkeypatch, taken=False)
