"""Scatters of many updates into a small integer result, by a copy of the result per
thread combined at the end (kernels_indexing._private_copies): max, min, add, or, and, with
window dimensions, out-of-bounds indices dropped, negative ones, against numpy and the
serial loop (the copies are off when PRIVATE_MIN_RATIO cannot be met)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu import kernels_indexing as KI  # noqa: E402

R = np.random.default_rng(31)


def _both(fn, *args, calls_of, edit=None):
    text = jax.jit(fn).lower(*args).as_text()
    if edit is not None:
        text = edit(text)
    private = calls_of("axle.backends.cpu.kernels_indexing", "_private_copies")
    got = axle.compile(text, backend="cpu").execute(list(args))
    old = KI.PRIVATE_MIN_RATIO
    KI.PRIVATE_MIN_RATIO = 1 << 40
    try:
        from axle.backends.cpu import executable
        executable.clear_memory_cache()
        serial = axle.compile(text, backend="cpu").execute(list(args))
    finally:
        KI.PRIVATE_MIN_RATIO = old
    for g, s in zip(got, serial):
        np.testing.assert_array_equal(g, s)
    return got, private


def _bitwise_text(kind, text):
    """jnp's .at has no or / and: the max scatter's text with the combiner replaced."""
    return text.replace("stablehlo.maximum", f"stablehlo.{kind}")


@pytest.mark.parametrize("kind", ["max", "min", "add", "or", "and"])
def test_scatter_into_a_small_result(kind, calls_of):
    idx = R.integers(-50, 5000, 200_000).astype(np.int32)  # some out of bounds (dropped), some negative (wrapped)
    val = R.integers(-1000, 1000, 200_000).astype(np.int32)
    base = R.integers(-5, 5, 4096).astype(np.int32)

    def fn(base, idx, val):
        return getattr(base.at[idx], "max" if kind in ("or", "and") else kind)(val, mode="drop")
    (got,), private = _both(fn, base, idx, val, calls_of=calls_of,
                            edit=(lambda t: _bitwise_text(kind, t)) if kind in ("or", "and") else None)
    want = base.copy()
    ufunc = {"max": np.maximum, "min": np.minimum, "add": np.add, "or": np.bitwise_or, "and": np.bitwise_and}[kind]
    wrapped = np.where(idx < 0, idx + 4096, idx)  # (jnp's .at wraps negative indices, drops the rest)
    ok = wrapped < 4096
    ufunc.at(want, wrapped[ok], val[ok])
    np.testing.assert_array_equal(got, want)
    assert True in private


def test_histogram_rows_with_windows(calls_of):
    idx = R.integers(0, 64, 100_000).astype(np.int32)
    rows = R.integers(0, 3, (100_000, 4)).astype(np.int32)
    (got,), private = _both(lambda i, r: jnp.zeros((64, 4), jnp.int32).at[i].add(r), idx, rows, calls_of=calls_of)
    want = np.zeros((64, 4), np.int64)
    np.add.at(want, idx, rows)
    np.testing.assert_array_equal(got, want)
    assert True in private


def test_float_and_replace_scatters_stay_serial(calls_of):
    idx = R.integers(0, 100, 100_000).astype(np.int32)
    val = R.standard_normal(100_000).astype(np.float32)
    (got,), private = _both(lambda i, v: jnp.zeros(100, jnp.float32).at[i].max(v), idx, val, calls_of=calls_of)
    want = np.zeros(100, np.float32)
    np.maximum.at(want, idx, val)
    np.testing.assert_array_equal(got, want)
    (got,), private2 = _both(lambda i, v: jnp.zeros(100, jnp.float32).at[i].set(v), idx, val, calls_of=calls_of)
    assert True not in private and True not in private2
