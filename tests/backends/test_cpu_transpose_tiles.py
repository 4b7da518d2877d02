"""Transposes that move the innermost dimension run over 16 x 16 tiles (elementwise.py
_tiled_transpose), also when fused under elementwise ops at the same index (x.T + 1), and
the row-major <-> column-major copies around LAPACK calls (kernels_lapack.py
_transposing_nest). Exact against numpy: edge tiles, several permutations, batches."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402

R = np.random.default_rng(0)


def _run(fn, *args):
    exe = axle.compile(jax.jit(fn).lower(*args).as_text(), backend="cpu")
    return exe, exe.execute(list(args))


@pytest.mark.parametrize("shape,perm", [
    ((77, 130), (1, 0)),                # edge tiles on both sides
    ((5, 40, 33), (0, 2, 1)),           # a batch outside the tiles
    ((3, 36, 35, 50), (0, 3, 1, 2)),    # NHWC -> NCHW
    ((34, 3, 47), (2, 1, 0)),           # the middle dimension outside
    ((8, 20), (1, 0)),                  # too small to tile: the plain nest
])
def test_transpose_exact(shape, perm):
    x = R.standard_normal(shape).astype(np.float32)
    _, got = _run(lambda x: jnp.transpose(x, perm), x)
    np.testing.assert_array_equal(got[0], np.transpose(x, perm))


def test_transpose_fused_under_elementwise_ops_is_tiled(monkeypatch):
    from axle.backends.cpu import elementwise
    tiled = []
    real = elementwise._tiled_transpose
    monkeypatch.setattr(elementwise, "_tiled_transpose", lambda *a: tiled.append(real(*a)) or tiled[-1])
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    x = R.standard_normal((100, 70)).astype(np.float32)
    y = R.standard_normal((70, 100)).astype(np.float32)
    _, got = _run(lambda x, y: jnp.tanh(x.T + 1.0) * y, x, y)
    np.testing.assert_allclose(got[0], np.tanh(x.T + 1.0) * y, rtol=2e-6, atol=2e-6)
    assert tiled == [True]


def test_lapack_copies_through_tiles():
    a = R.standard_normal((3, 70, 70)).astype(np.float32) + 20 * np.eye(70, dtype=np.float32)
    b = R.standard_normal((3, 70, 45)).astype(np.float32)
    _, got = _run(lambda a, b: jax.scipy.linalg.solve_triangular(a, b, lower=True), a, b)
    want = np.stack([np.linalg.solve(np.tril(a[i]), b[i]) for i in range(3)])
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4)
