"""scatter on the CPU backend: per update, the index loads and the window's bounds check
are made once and a window that lies inside runs as a plain (vectorized) loop; windows
that cross an edge are applied element by element, skipping what falls outside. Against
jax.jit, numpy and the interpreter (bit for bit where updates meet at one element)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402


def _compile(fn, *args):
    return axle.compile(jax.jit(fn).lower(*args).as_text(), backend="cpu")


@pytest.mark.parametrize("mode", ["drop", "clip"])
def test_row_scatter_add_with_indices_outside(mode):
    r = np.random.default_rng(1)
    x = r.standard_normal((300, 67)).astype(np.float32)
    i = r.integers(-20, 320, 5000).astype(np.int32)  # some below 0 and past the end
    u = r.standard_normal((5000, 67)).astype(np.float32)
    fn = lambda x, i, u: x.at[i].add(u, mode=mode)  # noqa: E731
    got = _compile(fn, x, i, u).execute([x, i, u])[0]
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(x, i, u)), rtol=1e-5, atol=1e-4)


def test_windows_crossing_the_edge_are_cut():
    """2-D windows of 4 x 5 at starts near the edges: the part inside is updated."""
    r = np.random.default_rng(2)
    x = np.zeros((10, 12), np.float32)
    starts = np.array([[0, 0], [8, 9], [-2, 3], [6, 10], [9, 11], [3, 4]], np.int32)
    u = r.standard_normal((6, 4, 5)).astype(np.float32)
    dn = jax.lax.ScatterDimensionNumbers(update_window_dims=(1, 2), inserted_window_dims=(),
                                         scatter_dims_to_operand_dims=(0, 1))

    def fn(x, s, u):
        return jax.lax.scatter_add(x, s, u, dn, mode=jax.lax.GatherScatterMode.PROMISE_IN_BOUNDS)
    text = jax.jit(fn).lower(x, starts, u).as_text()
    got = axle.compile(text, backend="cpu").execute([x, starts, u])[0]
    want = axle.interpret(text, x, starts, u)
    want = want[0] if isinstance(want, (list, tuple)) else want
    np.testing.assert_array_equal(got, want)


def test_segment_sum():
    r = np.random.default_rng(3)
    d = r.standard_normal((20000, 16)).astype(np.float32)
    s = r.integers(0, 100, 20000).astype(np.int32)
    fn = lambda d, s: jax.ops.segment_sum(d, s, num_segments=100)  # noqa: E731
    got = _compile(fn, d, s).execute([d, s])[0]
    want = np.zeros((100, 16))
    np.add.at(want, s, d.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


WINDOW_FIRST = """
func.func @main(%x: tensor<6x4xf32>, %i: tensor<5x1xi32>, %u: tensor<4x5xf32>) -> tensor<6x4xf32> {
  %r = "stablehlo.scatter"(%x, %i, %u) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.multiply %a, %b : tensor<f32>
      %t = stablehlo.add %s, %b : tensor<f32>
      stablehlo.return %t : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}
    : (tensor<6x4xf32>, tensor<5x1xi32>, tensor<4x5xf32>) -> tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}
"""


def test_window_dimension_first_keeps_the_update_order():
    """Updates whose window dimension comes first, duplicate targets, a combiner whose
    result depends on the order (a * b + b): the interpreter's order, bit for bit."""
    x = np.linspace(0.5, 2, 24, dtype=np.float32).reshape(6, 4)
    i = np.array([[1], [3], [1], [5], [1]], np.int32)
    u = np.linspace(-1, 1.5, 20, dtype=np.float32).reshape(4, 5)
    got = axle.compile(WINDOW_FIRST, backend="cpu").execute([x, i, u])[0]
    np.testing.assert_array_equal(got, axle.interpret(WINDOW_FIRST, x, i, u))


def test_scatter_add_same_bits_on_any_thread_count():
    """Many float updates per row are applied in update order: bit for bit the same on 1,
    2 and 3 threads, and equal to numpy's unbuffered add in that order."""
    import subprocess
    import sys
    script = """
import hashlib, numpy as np, jax, axle
r = np.random.default_rng(4)
x = r.standard_normal((1000, 64)).astype(np.float32)
i = r.integers(0, 1000, 200000).astype(np.int32)
u = r.standard_normal((200000, 64)).astype(np.float32)
fn = lambda x, i, u: x.at[i].add(u)
out = axle.compile(jax.jit(fn).lower(x, i, u).as_text(), backend="cpu").execute([x, i, u])[0]
want = x.astype(np.float32).copy()
for k in range(0, 200000, 50000):  # numpy's unbuffered add in update order, in f32
    np.add.at(want, i[k:k + 50000], u[k:k + 50000])
print(hashlib.sha256(np.ascontiguousarray(out).tobytes()).hexdigest(), bool((out == want).all()))
"""
    outs = set()
    for threads in ("1", "2", "3"):
        env = dict(__import__("os").environ, AXLE_NUM_THREADS=threads, AXLE_CACHE_DIR="off")
        res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        digest, equal = res.stdout.split()
        assert equal == "True"
        outs.add(digest)
    assert len(outs) == 1


@pytest.mark.parametrize("op,dtype", [("sum", np.float32), ("min", np.float32), ("max", np.float32),
                                      ("prod", np.float32), ("sum", np.int32), ("sum", "bfloat16")])
@pytest.mark.parametrize("order", ["sorted", "unsorted"])
def test_sorted_segments_keep_the_running_element(op, dtype, order, monkeypatch):
    """indices_are_sorted scatters of one element per update keep the element last updated
    in a register (kernels_indexing._apply_running): the same bits as the interpreter and
    as the plain path, with NaN, signed zeros and out-of-range ids among the updates, and
    with ids that break the promise (unsorted: the running element is stored and replaced)."""
    import ml_dtypes
    from axle.backends.cpu import kernels_indexing
    from axle.backends.cpu import executable as cpu_exe
    from axle.interpreter import interpret
    from axle.ir import parse_module
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    r = np.random.default_rng(5)
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    n, segs = 3000, 40
    x = (r.standard_normal(n) * 10).astype(np.float32).astype(dt)
    if np.dtype(dt).kind == "f":
        x[[5, 700]] = np.nan
        x[[9, 10, 11]] = [-0.0, 0.0, -0.0]
    ids = r.integers(-3, segs + 3, n).astype(np.int32)  # some outside [0, segs)
    if order == "sorted":
        ids = np.sort(ids)
    fn = {"sum": jax.ops.segment_sum, "min": jax.ops.segment_min, "max": jax.ops.segment_max,
          "prod": jax.ops.segment_prod}[op]
    f = lambda x, i: fn(x, i, segs, indices_are_sorted=True)  # noqa: E731
    text = jax.jit(f).lower(x, ids).as_text()
    assert "indices_are_sorted = true" in text
    want = interpret(parse_module(text), x, ids)
    want = np.asarray(want[0] if isinstance(want, (tuple, list)) else want)
    used = []
    real = kernels_indexing._apply_running
    monkeypatch.setattr(kernels_indexing, "_apply_running", lambda *a: used.append(1) or real(*a))
    cpu_exe.clear_memory_cache()
    got = np.asarray(axle.compile(text, backend="cpu").execute([x, ids])[0])
    assert used  # the running element was emitted
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    monkeypatch.setattr(kernels_indexing, "RUNNING", False)
    cpu_exe.clear_memory_cache()
    plain = np.asarray(axle.compile(text, backend="cpu").execute([x, ids])[0])
    np.testing.assert_array_equal(got.view(np.uint8), plain.view(np.uint8))


@pytest.mark.parametrize("shape,collide", [((4, 16, 24, 20), True), ((2, 3, 2, 18, 16), True), ((3, 5, 16, 20), False)])
def test_window_outside_keeps_the_order_at_each_target(shape, collide, monkeypatch):
    """A scatter whose window lies far apart in the operand (N x C, indexed over the last
    two dimensions: an upsampling's backward) runs the window's loop outside: each target
    sees its updates in the same order, so float sums over colliding indices are the
    interpreter's bit for bit; out-of-range indices are skipped."""
    from axle.backends.cpu import kernels_indexing
    from axle.backends.cpu import executable as cpu_exe
    from axle.interpreter import interpret
    from axle.ir import parse_module
    r = np.random.default_rng(9)
    h, w = shape[-2], shape[-1]
    x = r.standard_normal(shape).astype(np.float32)
    hi = r.integers(0, h if collide else h, 2 * h)
    wi = r.integers(-1, w + 1, 2 * w)  # some outside
    if not collide:
        hi, wi = np.arange(h), np.arange(w)
    lead = len(shape) - 2
    # updates [Hi, Wi, N, C...]: the window last in the updates (as the torch bridge's
    # index_put writes it), N x C... in the operand
    u = (r.standard_normal((len(hi), len(wi)) + shape[:-2]) * 1e3).astype(np.float32)
    dn = jax.lax.ScatterDimensionNumbers(update_window_dims=tuple(range(2, 2 + lead)),
                                         inserted_window_dims=(lead, lead + 1),
                                         scatter_dims_to_operand_dims=(lead, lead + 1))

    def f(x, hi, wi, u):
        idx = jnp.stack(jnp.broadcast_arrays(hi[:, None], wi[None, :]), -1)
        return jax.lax.scatter_add(x, idx, u, dn, mode=jax.lax.GatherScatterMode.FILL_OR_DROP)
    args = (x, hi.astype(np.int32), wi.astype(np.int32), u)
    text = jax.jit(f).lower(*args).as_text()
    used = []
    real = kernels_indexing._window_outside
    monkeypatch.setattr(kernels_indexing, "_window_outside", lambda *a: used.append(real(*a)) or used[-1])
    cpu_exe.clear_memory_cache()
    from axle.backends.cpu import disk_cache
    with disk_cache.disabled():
        got = np.asarray(axle.compile(text, backend="cpu").execute(list(args))[0])
    assert any(used)
    want = interpret(parse_module(text), *args)
    want = np.asarray(want[0] if isinstance(want, (tuple, list)) else want)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
