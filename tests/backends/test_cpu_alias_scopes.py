"""Alias scopes on kernels' result accesses (kernels.scoped_accesses): when nothing a loop
kernel reads shares its result's buffer, the result's stores get a scope of their own and
the reads its noalias, so LLVM keeps loop-invariant loads (a scan's counter in a scalar
buffer) out of the loop and vectorizes it; kernels updating in place get none. Checked on
the optimized IR and against jax.jit."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
from jax import lax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402


def _compile(fn, *args):
    return axle.compile(jax.jit(fn).lower(*args).as_text(), backend="cpu")


def test_update_in_a_scan_vectorizes(monkeypatch):
    """The update of a dynamic_update_slice in a fori_loop reads a row at the loop counter
    (kept in a buffer) and computes tanh: without scopes each element reloaded the counter
    and the loop stayed scalar."""
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")

    def fn(x, rows):
        def body(i, acc):
            r = jnp.tanh(lax.dynamic_slice(rows, (i, 0), (1, 512)) * i)
            return lax.dynamic_update_slice(acc, r, (i * 4, 0))
        return lax.fori_loop(0, 64, body, x)
    r = np.random.default_rng(0)
    x, rows = r.standard_normal((256, 512)).astype(np.float32), r.standard_normal((64, 512)).astype(np.float32)
    exe = _compile(fn, x, rows)
    got = exe.execute([x, rows])[0]
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(x, rows)), rtol=2e-6, atol=2e-6)
    ir = exe._native(((256, 512), (64, 512))).optimized_ir
    assert "alias.scope" in ir
    assert any(f"fdiv <{n} x float>" in ir for n in (4, 8, 16)), "tanh in the update did not vectorize"


def test_in_place_elementwise_carry_has_no_scope_and_is_right():
    """A carry updated in place reads its own buffer: no scope, results as jax.jit's."""
    def fn(c, x):
        def body(i, c):
            return c * 0.5 + jnp.roll(c, 1) * 0.25 + x[i]
        return lax.fori_loop(0, 16, body, c)
    r = np.random.default_rng(1)
    c, x = r.standard_normal(1000).astype(np.float32), r.standard_normal((16, 1000)).astype(np.float32)
    got = _compile(fn, c, x).execute([c, x])[0]
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(c, x)), rtol=1e-5, atol=1e-5)


def test_identical_kernels_still_share_code():
    """Each kernel gets scopes of its own; kernels that are the same code up to them are
    still compiled once (context._renumber_metadata)."""
    fn = lambda a, b: (jnp.tanh(a) * 2, jnp.tanh(b) * 2)  # noqa: E731
    a = np.ones((64, 64), np.float32)
    exe = _compile(fn, a, a)
    shared = [k.shares for k in exe.program.kernels]
    assert shared.count(None) < len(shared), shared
