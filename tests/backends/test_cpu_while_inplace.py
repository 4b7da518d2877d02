"""While loops whose carried value is updated by an in-place kernel (a scan's stacked
outputs by dynamic_update_slice, a histogram by scatter) write only the update into the
carried buffer; checked against jax.jit, plus the cases that must keep the scratch copy
(the old value read again in the body)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402
import axle.jax  # noqa: E402


def _check(fn, *args, rtol=2e-5, atol=2e-5):
    got = axle.jax.jit(fn)(*args)
    ref = jax.jit(fn)(*args)
    for g, r in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=rtol, atol=atol)


@pytest.mark.parametrize("steps,batch,din,dh", [(5, 3, 7, 9), (17, 8, 16, 33), (1, 1, 1, 1), (3, 32, 256, 515)])
def test_rnn_scan_stacked_outputs(steps, batch, din, dh):
    r = np.random.default_rng(steps)

    def fn(wx, wh, b, xs, h0):
        def cell(h, x):
            h = jnp.tanh(x @ wx + h @ wh + b)
            return h, h
        return jax.lax.scan(cell, h0, xs)
    _check(fn, r.standard_normal((din, dh), np.float32) / 4, r.standard_normal((dh, dh), np.float32) / 4,
           r.standard_normal(dh).astype(np.float32), r.standard_normal((steps, batch, din), np.float32),
           r.standard_normal((batch, dh), np.float32))


def test_scan_two_stacked_outputs_and_reverse():
    xs = np.arange(24, dtype=np.float32).reshape(8, 3)

    def fn(xs):
        def cell(c, x):
            c = c * 0.5 + x
            return c, (c, x * c)
        return jax.lax.scan(cell, jnp.zeros(3, jnp.float32), xs, reverse=True)
    _check(fn, xs)


def test_fori_loop_scatter_histogram():
    idx = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8], np.int32)

    def fn(idx):
        def body(i, h):
            return h.at[idx[i]].add(1.0)
        return jax.lax.fori_loop(0, idx.shape[0], body, jnp.zeros(10, jnp.float32))
    _check(fn, idx)


def test_dynamic_update_reading_old_value_keeps_copy():
    """The carried buffer is read again after the update (old row shifted in): updating
    in place would read the new values; the result must match jax."""
    x = np.arange(20, dtype=np.float32).reshape(5, 4)

    def fn(x):
        def body(i, a):
            new = jax.lax.dynamic_update_slice(a, a[(i + 1) % 5][None] + 1.0, (i, 0))
            return new + a[0]  # reads the old carried value too
        return jax.lax.fori_loop(0, 7, body, x)
    _check(fn, x)


def test_dynamic_update_slice_chain_in_loop():
    """The update itself reads the carried value (a row copied to another row): the kernel
    computes the update from the old buffer before writing."""
    x = np.arange(30, dtype=np.float32).reshape(6, 5)

    def fn(x):
        def body(i, a):
            return jax.lax.dynamic_update_slice(a, jax.lax.dynamic_slice_in_dim(a, i, 1) * 2.0, ((i + 1) % 6, 0))
        return jax.lax.fori_loop(0, 6, body, x)
    _check(fn, x)


def test_scan_temporaries_hold_no_copy_of_the_stacked_outputs():
    """64 steps of [32, 512] outputs (4 MiB stacked): neither a scratch copy of the stack
    per iteration nor a temporary for its zero initial value."""
    import axle

    def fn(wx, wh, xs, h0):
        def cell(h, x):
            h = jnp.tanh(x @ wx + h @ wh)
            return h, h
        return jax.lax.scan(cell, h0, xs)
    r = np.random.default_rng(0)
    args = (r.standard_normal((16, 512), np.float32) / 8, r.standard_normal((512, 512), np.float32) / 32,
            r.standard_normal((64, 32, 16), np.float32), np.zeros((32, 512), np.float32))
    text = jax.jit(fn).lower(*args).as_text()
    exe = axle.compile(text, backend="cpu")
    stacked = 64 * 32 * 512 * 4
    assert exe.program.arena_bytes < stacked, exe.program.arena_bytes
    got = exe.execute([np.asarray(a) for a in args])
    ref = jax.jit(fn)(*args)
    for g, e in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=2e-5, atol=2e-5)


def test_scan_body_gemms_run_on_the_pool():
    """A scan whose body GEMMs are large enough calls the pool from inside the loop (its
    buffers are all table buffers), and still matches jax.jit."""
    import axle
    from axle.backends.cpu import parallel

    def fn(w, xs, h0):
        def cell(h, x):
            h = jnp.tanh(h @ w + x)
            return h, h.sum()
        return jax.lax.scan(cell, h0, xs)
    r = np.random.default_rng(1)
    args = (r.standard_normal((512, 512), np.float32) / 32, r.standard_normal((6, 64, 512), np.float32),
            r.standard_normal((64, 512), np.float32))
    text = jax.jit(fn).lower(*args).as_text()
    exe = axle.compile(text, backend="cpu")
    got = exe.execute([np.asarray(a) for a in args])
    ref = jax.jit(fn)(*args)
    for g, e in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-4, atol=1e-4)
    if parallel.enabled():
        import subprocess
        import sys
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
            f.write(text)
        ir_text = subprocess.run([sys.executable, "-m", "axle", "compile", f.name, "--emit", "llvm"],
                                 capture_output=True, text=True, check=True).stdout
        body = ir_text.split('define internal void @"k0.while"', 1)[1].split("\ndefine", 1)[0]
        assert "axle_pool_run" in body


@pytest.mark.parametrize("column", [False, True])
def test_update_computed_from_the_carry_writes_in_place(column):
    """out[i + 1] = f(out[i]): the update reads the carried buffer, gets a buffer of its
    own, and the carry is updated in place (no scratch copy of the [41, 4096] carry per
    trip: the arena holds less than one copy of it)."""
    import axle
    x = np.random.default_rng(5).standard_normal(4096).astype(np.float32)

    def fn(x):
        out = jnp.zeros((4096, 41) if column else (41, 4096), jnp.float32)

        def body(i, out):
            if column:
                return out.at[:, i + 1].set(out[:, i] * 0.5 + x)
            return out.at[i + 1].set(out[i] * 0.5 + x)
        return jax.lax.fori_loop(0, 40, body, out)
    text = jax.jit(fn).lower(x).as_text()
    exe = axle.compile(text, backend="cpu")
    assert exe.program.arena_bytes < 41 * 4096 * 4, exe.program.arena_bytes
    np.testing.assert_allclose(np.asarray(exe.execute([x])[0]), np.asarray(jax.jit(fn)(x)), rtol=1e-6, atol=1e-6)


def test_update_from_the_carry_with_the_old_value_read_later_keeps_copy():
    """As above, but the body also returns a value read from the old carry after the update
    (another carry): in place would read new rows; must match jax."""
    x = np.arange(24, dtype=np.float32).reshape(6, 4)

    def fn(x):
        def body(i, c):
            a, s = c
            new = a.at[(i + 1) % 6].set(a[i % 6] * 2.0 + 1.0)
            return new, s + a[(i + 1) % 6].sum()
        return jax.lax.fori_loop(0, 9, body, (x, jnp.float32(0)))
    _check(fn, x)


def _stencil(x):
    return 0.2 * x + 0.1 * (jnp.pad(x[1:] - x[:-1], ((0, 1), (0, 0))) + jnp.roll(x, 1, 1))


@pytest.mark.parametrize("trips", [0, 1, 2, 3, 8])
def test_carried_values_trade_buffers_with_their_scratch(trips, monkeypatch):
    """A body result that reads its carry at other indices (a stencil) is written to a
    scratch buffer, which then trades places with the carried one instead of being
    copied back; after an odd number of trips the last value lies in the scratch and is
    copied once. Carries that move to another position, a while_loop with a
    data-dependent trip count and nested loops; the same bits as with the copies."""
    from jax import lax
    from axle.backends.cpu import disk_cache, kernels_control
    from axle.backends.cpu import executable as cpu_exe
    r = np.random.default_rng(trips)
    a = (r.random((130, 70)) * 0.5).astype(np.float32)
    b = r.random((130, 70)).astype(np.float32)
    fns = [
        lambda x, y: lax.fori_loop(0, trips, lambda i, c: _stencil(c) + y, x),
        lambda x, y: lax.fori_loop(0, trips, lambda i, c: (_stencil(c[0]) + c[1], c[0], c[2] + 1.0), (x, y, x)),
        lambda x, y: lax.while_loop(lambda c: c[1] < trips, lambda c: (_stencil(c[0]) + y, c[1] + 1), (x, 0))[0],
        lambda x, y: lax.fori_loop(0, trips, lambda i, c: lax.fori_loop(0, i + 1, lambda j, d: _stencil(d) + y, c), x),
    ]
    for fn in fns:
        text = jax.jit(fn).lower(a, b).as_text()
        outs = []
        for swap in (True, False):
            monkeypatch.setattr(kernels_control, "SWAP_BUFFERS", swap)
            with disk_cache.disabled():
                cpu_exe.clear_memory_cache()
                outs.append(axle.compile(text, backend="cpu").execute([a, b]))
                cpu_exe.clear_memory_cache()
        for got, plain, want in zip(outs[0], outs[1], jax.tree_util.tree_leaves(jax.jit(fn)(a, b))):
            np.testing.assert_array_equal(got, plain)
            np.testing.assert_allclose(got, np.asarray(want), rtol=2e-5, atol=2e-5)


def test_a_scan_with_host_callbacks_keeps_its_status_word():
    """The loop counter is the arena's first temporary, at the arena's base, where the
    status word that stops a loop after a failed host callback lives: the base has a
    buffer-table entry of its own, which no loop swaps (a scan whose step calls the FFT
    read its status through the swapped entry and stopped after two steps)."""
    from jax import lax
    a0 = np.random.default_rng(0).standard_normal(512).astype(np.float32)

    def f(a):
        def step(a, _):
            e = jnp.fft.irfft(jnp.fft.rfft(a) * 0.9, n=512)
            return e, jnp.sum(e * e)
        return lax.scan(step, a, None, length=6)
    _check(f, a0, rtol=1e-5, atol=1e-4)
