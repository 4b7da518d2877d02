"""Short rows emitted straight for the SLP vectorizer (elementwise.SHORT_ROW): row reductions
over fewer than 16 elements (a softmax over 8 experts) and elementwise loops whose last dimension
is short and cannot merge (cos(x - mu) with mu broadcast along the rows). Against numpy, at
every short length and just past the limit, with NaN and -inf in rows, in place."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu import elementwise  # noqa: E402
from axle.backends.cpu import executable as cpu_exe  # noqa: E402

R = np.random.default_rng(11)


def _run(fn, *args):
    cpu_exe.clear_memory_cache()
    exe = axle.compile(jax.jit(fn).lower(*args).as_text(), backend="cpu")
    return np.asarray(exe.execute(list(args))[0])


def _softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("n", [2, 5, 8, 13, 16, 17])
def test_softmax_over_short_rows(n, monkeypatch):
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    x = R.standard_normal(((1 << 15) // n + 999, n)).astype(np.float32) * 4  # (small kernels stay loops)
    x[3, 0] = -np.inf
    x[7, :] = -np.inf  # a row of -inf: NaN, as numpy's
    x[11, n // 2] = np.nan
    from axle.codegen.emitter import Emitter
    unrolled = []
    real = Emitter.loop_nest
    monkeypatch.setattr(Emitter, "loop_nest", lambda self, *a, **k: (unrolled.append(k.get("unroll", 0)),
                                                                    real(self, *a, **k))[1])
    got = _run(lambda x: jax.nn.softmax(x, -1), x)
    assert any(unrolled) == (n < 16)  # the row reductions straight below 16 elements
    monkeypatch.setattr(Emitter, "loop_nest", real)
    with np.errstate(invalid="ignore"):
        want = _softmax(x)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
    monkeypatch.setattr(elementwise, "SHORT_ROW", 0)  # the loops as before: the same values
    np.testing.assert_allclose(_run(lambda x: jax.nn.softmax(x, -1), x), got, rtol=2e-6, atol=1e-7)


def test_softmax_of_a_sorted_row_in_place(monkeypatch):
    """The row kernel writes its result over the sort's buffer: a short row's stores into the
    result come after all of the row's loads."""
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    x = R.standard_normal((4500, 8)).astype(np.float32)
    got = _run(lambda x: jax.nn.softmax(jnp.sort(x, -1) * 3.0, -1), x)
    np.testing.assert_allclose(got, _softmax(np.sort(x, -1) * 3.0), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("n", [3, 8, 16, 17])
def test_short_last_dimension_with_a_broadcast_along_rows(n, monkeypatch):
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    th = R.uniform(-3, 3, (1 << 15) // n + 100).astype(np.float32)
    mu = R.uniform(-3, 3, n).astype(np.float32)
    got = _run(lambda th, mu: jnp.cos(th[:, None] - mu) * mu + th[:, None], th, mu)
    want = np.cos(th[:, None].astype(np.float64) - mu) * mu + th[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,fn,straight", [
    ("a broadcast along the rows", lambda x, w: jnp.cos(x - w) * w, True),
    ("shifted reads (a roll)", lambda x, w: jnp.roll(x, 1, axis=0) * w + x, False),
])
def test_straight_code_only_over_plain_reads(name, fn, straight, monkeypatch):
    """The short last dimension goes straight only when the kernel's ops are elementwise,
    broadcasts and constants (elementwise._plain_reads): a lattice-Boltzmann streaming step
    over [N, N, 9] by slices and concatenates ran slower packed by the SLP vectorizer."""
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    seen = []
    real = elementwise.split_loop
    monkeypatch.setattr(elementwise, "split_loop", lambda *a, **k: (seen.append(k.get("unroll_inner", 0)), real(*a, **k))[1])
    x = R.standard_normal((8192, 9)).astype(np.float32)
    w = R.standard_normal(9).astype(np.float32)
    got = _run(fn, x, w)
    assert any(seen) == straight, seen
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(x, w)), rtol=1e-5, atol=1e-5)
