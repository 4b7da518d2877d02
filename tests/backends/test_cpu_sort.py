"""Sorting (merge sort, kernels_sort.py) and top-k (partial selection) give the
interpreter's, numpy's and XLA's results: stable, multi-operand, any comparator."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402


def _run(fn, *args, interpreter=False):
    text = jax.jit(fn).lower(*args).as_text()
    out = axle.compile(text, backend="cpu").execute(list(args))
    ref = axle.compile(text, backend="interpreter").execute(list(args)) if interpreter else None
    return out, ref


def _data(shape, seed, dtype=np.float32, ties=False):
    r = np.random.default_rng(seed)
    if ties:
        x = r.integers(0, 5, shape).astype(dtype)
    else:
        x = r.standard_normal(shape).astype(dtype)
    if dtype == np.float32 and x.size > 8:
        flat = x.reshape(-1)
        flat[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan]
    return x


@pytest.mark.parametrize("shape,axis", [((1000,), 0), ((7, 333), 1), ((129, 6), 0), ((4, 9, 17), 1), ((3, 8), 1)])
@pytest.mark.parametrize("ties", [False, True])
def test_sort_and_argsort_match_numpy(shape, axis, ties):
    x = _data(shape, 1, ties=ties)
    fn = lambda v: (jnp.sort(v, axis=axis), jnp.argsort(v, axis=axis, stable=True),  # noqa: E731
                    jnp.sort(v, axis=axis, descending=True))
    (s, a, d), _ = _run(fn, x)
    np.testing.assert_array_equal(s, np.sort(x, axis=axis, kind="stable"))
    np.testing.assert_array_equal(a, np.argsort(x, axis=axis, kind="stable"))
    want = np.asarray(jax.jit(fn)(x)[2])
    np.testing.assert_array_equal(d, want)


def test_multi_operand_sort_with_custom_comparator_matches_interpreter():
    """Three operands sorted by two keys (lexicographic: b, then a), the third carried along."""
    r = np.random.default_rng(2)
    a = r.integers(0, 50, (4, 300)).astype(np.int32)
    b = r.integers(0, 4, (4, 300)).astype(np.int32)
    c = r.standard_normal((4, 300)).astype(np.float32)

    (oa, ob, oc), (ra, rb, rc) = _run(lambda a, b, c: jax.lax.sort((b, a, c), dimension=1, num_keys=2), a, b, c,
                                      interpreter=True)
    np.testing.assert_array_equal(oa, ra)
    np.testing.assert_array_equal(ob, rb)
    np.testing.assert_array_equal(oc, rc)
    order = np.lexsort((a, b), axis=1)
    np.testing.assert_array_equal(oc, np.take_along_axis(c, order, axis=1))


@pytest.mark.parametrize("shape,k", [((16, 500), 7), ((3, 64), 1), ((5, 40), 39), ((1000,), 16)])
@pytest.mark.parametrize("ties", [False, True])
def test_top_k_matches_xla(shape, k, ties):
    x = _data(shape, 3, ties=ties)
    fn = lambda v: jax.lax.top_k(v, k)  # noqa: E731
    (vals, idx), (rv, ri) = _run(fn, x, interpreter=True)
    xv, xi = (np.asarray(t) for t in jax.jit(fn)(x))
    np.testing.assert_array_equal(vals, xv)
    np.testing.assert_array_equal(idx, xi)
    np.testing.assert_array_equal(vals, rv)
    np.testing.assert_array_equal(idx, ri)


@pytest.mark.parametrize("shape,k", [((65536,), 1024), ((8, 1000), 33), ((3, 257), 256), ((2, 4096), 40)])
@pytest.mark.parametrize("order", ["random", "ties", "ascending", "descending"])
def test_top_k_through_the_candidate_buffer(shape, k, order, calls_of):
    """k > BUFFERED_K: candidates collected in a buffer of 2k, merged down to k; ties keep
    input order, ascending input accepts every candidate, NaN and -0.0 sort as XLA's."""
    buffered = calls_of("axle.backends.cpu.kernels_sort", "_buffered")
    x = _data(shape, 5, ties=order == "ties")
    if order == "ascending":
        x = np.sort(x, axis=-1)
    elif order == "descending":
        x = np.ascontiguousarray(np.sort(x, axis=-1)[..., ::-1])
    fn = lambda v: jax.lax.top_k(v, k)  # noqa: E731
    (vals, idx), _ = _run(fn, x)
    xv, xi = (np.asarray(t) for t in jax.jit(fn)(x))
    np.testing.assert_array_equal(vals, xv)
    np.testing.assert_array_equal(idx, xi)
    assert buffered


@pytest.mark.parametrize("k", [7, 100, 300])
def test_top_k_of_a_fused_value_stages_candidates(k, calls_of):
    """A top-k of computed values (the operand fused into the selection) computes them in
    blocks on the stack before selecting; the same picks as XLA (values to rounding)."""
    staged = calls_of("axle.backends.cpu.kernels_sort", "_each_candidate")
    x = np.random.default_rng(6).standard_normal((3, 5000)).astype(np.float32)
    for fn in (lambda v: jax.lax.top_k(jnp.log(jnp.abs(v)) * jnp.exp(v), k),
               lambda v: jax.lax.top_k(jnp.round(v * 2), k)):  # ties through a fused value
        (vals, idx), _ = _run(fn, x)
        xv, xi = (np.asarray(t) for t in jax.jit(fn)(x))
        np.testing.assert_allclose(vals, xv, rtol=1e-6)
        np.testing.assert_array_equal(idx, xi)
    assert staged
    xt = np.random.default_rng(7).standard_normal((5000, 3)).astype(np.float32)
    (head,), _ = _run(lambda v: jnp.sort(jnp.sin(v), axis=0)[:600], xt)  # strided slices
    np.testing.assert_allclose(head, np.sort(np.sin(xt), axis=0)[:600], rtol=1e-6)


def test_top_k_of_integers_and_a_sort_read_beyond_k():
    """A sort whose results are also read whole is sorted in full (no partial selection)."""
    x = np.random.default_rng(4).integers(-100, 100, (6, 257)).astype(np.int32)
    fn = lambda v: (jax.lax.top_k(v, 5), jnp.sort(v, axis=1), jnp.sort(v, axis=1)[:, :3])  # noqa: E731
    (vals, idx, full, head), _ = _run(fn, x)
    want = jax.jit(fn)(x)
    np.testing.assert_array_equal(vals, want[0][0])
    np.testing.assert_array_equal(idx, want[0][1])
    np.testing.assert_array_equal(full, np.sort(x, axis=1))
    np.testing.assert_array_equal(head, np.sort(x, axis=1)[:, :3])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "bool", "uint8", "int64", "float64"])
def test_sort_other_element_types_matches_interpreter(dtype):
    import ml_dtypes
    r = np.random.default_rng(5)
    npd = getattr(ml_dtypes, dtype) if dtype == "bfloat16" else np.dtype(dtype)
    x = (r.standard_normal((5, 70)) * 50).astype(np.float64)
    x = (x > 0) if dtype == "bool" else x.astype(npd)
    with jax.enable_x64(dtype in ("int64", "float64")):
        fn = lambda v: (jnp.sort(v, axis=1), jnp.argsort(v, axis=0, stable=True))  # noqa: E731
        (s, a), (rs, ra) = _run(fn, x, interpreter=True)
    np.testing.assert_array_equal(np.asarray(s), np.asarray(rs))
    np.testing.assert_array_equal(a, ra)


def test_top_k_with_k_equal_to_n_is_a_full_sort():
    x = _data((4, 33), 6)
    (vals, idx), _ = _run(lambda v: jax.lax.top_k(v, 33), x)
    want = jax.jit(lambda v: jax.lax.top_k(v, 33))(x)
    np.testing.assert_array_equal(vals, want[0])
    np.testing.assert_array_equal(idx, want[1])
