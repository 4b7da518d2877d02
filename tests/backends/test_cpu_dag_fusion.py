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


def test_transcendental_read_by_a_wide_broadcast_gets_a_buffer():
    """Rotary embeddings: cos and sin of [positions, d/2] broadcast over batch and heads
    are computed once per element of their own shape (fusion.REUSE_FACTOR), not once per
    element of the 4-D result."""
    def f(x, pos):
        d = x.shape[-1] // 2
        a = pos[:, None] * (1.0 / (10000 ** (jnp.arange(d) / d)))[None]
        c, s = jnp.cos(a)[None, :, None], jnp.sin(a)[None, :, None]
        x1, x2 = x[..., :d], x[..., d:]
        return jnp.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)
    r = np.random.default_rng(3)
    x, pos = r.standard_normal((2, 64, 4, 32)).astype(np.float32), np.arange(64, dtype=np.float32)
    exe = _compile(f, x, pos)
    names = [k.name for k in _loops(exe)]
    assert any("cosine" in n for n in names) and any("sine" in n for n in names), names
    np.testing.assert_allclose(exe.execute([x, pos])[0], np.asarray(jax.jit(f)(x, pos)), rtol=1e-5, atol=1e-5)


def test_sparse_products_keep_gathers_out_of_the_scatter():
    """BCOO sparse @ dense and a sparse attention (jax.experimental.sparse): the gathered
    rows times their values are one loop of their own (fusion: a scatter's updates
    computed with a gather get a buffer), and a gathered normalizer broadcast over the
    features is computed once per nonzero (REUSE_COSTLY), not inside the serial scatter
    per element; results as jax.jit's."""
    from jax.experimental import sparse
    r = np.random.default_rng(4)
    n, nnz, d = 512, 8192, 64
    rows, cols = r.integers(0, n, nnz), r.integers(0, n, nnz)
    idx = np.stack([rows, cols], 1).astype(np.int32)
    vals, dense = r.standard_normal(nnz).astype(np.float32), r.standard_normal((n, d)).astype(np.float32)

    def spmm(v, i, b):
        return sparse.BCOO((v, i), shape=(n, n)) @ b

    def attention(v, i, b):
        e = jnp.exp(v - v.max())
        z = jax.ops.segment_sum(e, i[:, 0], num_segments=n)
        return sparse.BCOO((e / z[i[:, 0]], i), shape=(n, n)) @ b
    for f in (spmm, attention):
        exe = _compile(f, vals, idx, dense)
        scatters = [k for k in exe.program.kernels if k.name == "stablehlo.scatter" and k.depth == 0]
        wide = [k for k in scatters if any(len(getattr(v.type, "shape", ())) == 2 for v in k.op.results)]
        gathered_rows = [o for k in wide for o in k.fused if o.name == "stablehlo.gather"
                         and str(o.results[0].type.element_type) == "f32"]
        assert wide and not gathered_rows, [str(o.results[0].type) for o in gathered_rows]
        np.testing.assert_allclose(exe.execute([vals, idx, dense])[0], np.asarray(jax.jit(f)(vals, idx, dense)),
                                   rtol=2e-5, atol=2e-5)


def test_a_scalar_broadcast_stays_fused():
    """A broadcast scalar is loop-invariant: no buffer for it, one loop."""
    f = lambda x, y: x * jnp.exp(jnp.sum(y))  # noqa: E731
    x, y = np.ones((256, 256), np.float32), np.full(8, 0.1, np.float32)
    exe = _compile(f, x, y)
    np.testing.assert_allclose(exe.execute([x, y])[0], np.asarray(jax.jit(f)(x, y)), rtol=1e-6)
    assert not any("exponential" in k.name for k in _loops(exe))


def test_reshape_of_a_broadcast_product_loops_over_the_operand():
    """kron: the reshape's loop runs over the 4-D product (no division of the result index
    per element), stored at the same linear index."""
    r = np.random.default_rng(4)
    a, b = r.standard_normal((12, 10)).astype(np.float32), r.standard_normal((7, 9)).astype(np.float32)
    exe = _compile(jnp.kron, a, b)
    np.testing.assert_array_equal(exe.execute([a, b])[0], np.kron(a, b))
    ir = exe._native(((12, 10), (7, 9))).optimized_ir
    assert " urem " not in ir and " udiv " not in ir


def test_a_reshape_and_its_inverse_read_at_the_loop_index():
    """vmap's dot: the library GEMM's [B*M, N] result is read back as [B, M, N] through two
    fused reshapes; the chain is one identity reshape (Emitter._op_at), so the in-place
    tanh over it reads the address it writes and vectorizes (LLVM's run-time overlap check
    sent it to the scalar loop before)."""
    f = lambda w, x: jnp.tanh(x @ w)  # noqa: E731
    r = np.random.default_rng(5)
    w, x = r.standard_normal((64, 96)).astype(np.float32), r.standard_normal((6, 50, 64)).astype(np.float32)
    exe = _compile(f, w, x)
    # (atol: a sum of 64 unit products rounded in another order; 16-lane partial sums on AVX-512)
    np.testing.assert_allclose(exe.execute([w, x])[0], np.asarray(jax.jit(f)(w, x)), rtol=3e-6, atol=2e-5)
    ir = exe._native(((64, 96), (6, 50, 64))).optimized_ir
    tanh = [f for f in ir.split("\ndefine ") if f.split("(")[0].endswith("tanh")]  # (the GEMM's units divide)
    assert len(tanh) == 1 and " urem " not in tanh[0] and " udiv " not in tanh[0]


def test_a_reshape_adding_a_unit_dimension_between_others_costs_no_division():
    """[8, 64, 1, 493] -> [8, 64, 493] (a mean's gradient broadcast back, from PyTorch): the
    dimensions on both sides are the same but for the unit one, mapped one to one (it was a
    division by 493 per element, and the loop did not vectorize: 14x slower)."""
    def f(s, x):
        g = jnp.broadcast_to((s / 493.0)[:, :, None, None], (8, 64, 1, 493)).reshape(8, 64, 493)
        return jnp.where(x <= 0, 0.0, g)
    r = np.random.default_rng(6)
    s, x = r.standard_normal((8, 64)).astype(np.float32), r.standard_normal((8, 64, 493)).astype(np.float32)
    exe = _compile(f, s, x)
    np.testing.assert_allclose(exe.execute([s, x])[0], np.asarray(jax.jit(f)(s, x)), rtol=1e-6)  # (XLA: * 1/493)
    ir = exe._native(((8, 64), (8, 64, 493))).optimized_ir
    assert " urem " not in ir and " udiv " not in ir


def test_tiled_index_arrays_are_built_once_outside_a_loop():
    """Index arrays made by jnp.repeat / tile (a broadcast, then reshapes) and read in
    every trip of a loop by a gather and a scatter are computed once before the loop: kept
    fused, the loop rebuilt them element by element in each trip (a FEM CG solve 2x XLA)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    r = np.random.default_rng(12)
    tri = r.integers(0, 300, (500, 3)).astype(np.int32)
    vals = r.standard_normal((500, 9)).astype(np.float32)
    x0 = r.standard_normal(300).astype(np.float32)

    def f(tri, vals, x0):
        rows, cols = jnp.repeat(tri, 3, 1).ravel(), jnp.tile(tri, (1, 3)).ravel()
        v = vals.ravel()

        def step(_, x):
            y = jax.ops.segment_sum(v * x[cols], rows, num_segments=300)
            return x - 0.01 * y
        return jax.lax.fori_loop(0, 20, step, x0)
    exe = axle.compile(jax.jit(f).lower(tri, vals, x0).as_text(), backend="cpu")
    loops = [k for k in exe.program.kernels if k.depth == 0 and k.kind == "control"]
    assert loops and not any(o.name == "stablehlo.reshape" for k in loops for o in k.fused)
    np.testing.assert_allclose(exe(tri, vals, x0), np.asarray(jax.jit(f)(tri, vals, x0)), rtol=2e-5, atol=2e-5)


def test_shared_index_arithmetic_is_recomputed_not_stored():
    """Reflected positions computed from iotas (a reflection pad's backward, PyTorch's
    decomposition) and read by the gathers of two images are recomputed in each gather's
    loop (fusion.INDEX_DUPLICATE_COST) rather than stored as an int32 buffer (too large to
    be folded to a constant): no temporaries, results equal to jax.jit."""
    import re
    n = 320

    def reflected(i):
        return jnp.where(i < 0, -i, jnp.where(i >= n, 2 * (n - 1) - i, i))

    def f(a, b):
        i = jnp.arange(-3, n + 3)[:, None] + jnp.zeros((1, n + 6), jnp.int32)
        j = jnp.arange(-3, n + 3)[None, :] + jnp.zeros((n + 6, 1), jnp.int32)
        ri, rj = reflected(i).astype(jnp.uint32), reflected(j).astype(jnp.uint32)  # (no negative-index wrap)
        pick = lambda x: x.at[ri, rj].get(mode="promise_in_bounds")  # noqa: E731
        return pick(a) * 2.0, pick(b) + 1.0
    a, b = (np.random.default_rng(k).standard_normal((n, n)).astype(np.float32) for k in (1, 2))
    exe = _compile(f, a, b)
    for g, w in zip(exe.execute([a, b]), jax.jit(f)(a, b)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    plans = str(exe.program.plans)
    assert re.search(r"(\d+) temporaries", plans).group(1) == "0", plans
    assert len(_loops(exe)) == 2


@pytest.mark.parametrize("window,strides,split", [((1, 5, 1, 1), (1, 1, 1, 1), True),   # LRN: 5 channels
                                                  ((1, 1, 3, 3), (1, 1, 1, 1), True),   # a 3 x 3 sum
                                                  ((1, 1, 2, 2), (1, 1, 2, 2), False)])  # no reuse
def test_window_over_a_costly_input_reads_it_from_a_buffer(window, strides, split):
    """A reduce_window whose windows read each input element several times gets its input
    from a buffer when that input holds a transcendental function (fusion._window_reuse):
    computed once per element, not once per tap; a window without reuse keeps it fused."""
    def f(x, s):
        y = jnp.power(s, -0.25) * x / (1.0 + s)
        return jax.lax.reduce_window(y, 0.0, jax.lax.add, window, strides, "SAME")
    r = np.random.default_rng(4)
    x = r.standard_normal((2, 16, 12, 12)).astype(np.float32)
    s = r.uniform(0.5, 2.0, (2, 16, 12, 12)).astype(np.float32)
    exe = _compile(f, x, s)
    names = [k.name for k in _loops(exe)]
    assert (len(names) >= 2) == split, names
    np.testing.assert_allclose(exe.execute([x, s])[0], np.asarray(jax.jit(f)(x, s)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("interior,split", [(1, True), (0, False)])
def test_interior_pad_of_a_costly_operand_reads_it_from_a_buffer(interior, split):
    """An interior pad (an avg-pool's backward) loops over its padded result: an operand
    computed with a transcendental function gets a buffer of its own (one vectorized loop)
    instead of being computed there element by element; a pad without interior padding
    keeps it fused."""
    def f(x, s):
        y = jnp.power(s, 0.75) * x
        return jax.lax.pad(y, 0.0, ((0, 0, 0), (0, 0, 0), (1, 1, interior), (1, 1, interior)))
    r = np.random.default_rng(6)
    x = r.standard_normal((2, 8, 16, 16)).astype(np.float32)
    s = r.uniform(0.5, 2.0, (2, 8, 16, 16)).astype(np.float32)
    exe = _compile(f, x, s)
    names = [k.name for k in _loops(exe)]
    assert (len(names) >= 2) == split, names
    np.testing.assert_allclose(exe.execute([x, s])[0], np.asarray(jax.jit(f)(x, s)), rtol=1e-5, atol=1e-5)
