"""Peak temporary memory (the buffer-assignment arena) of representative programs, and
that what shares memory still computes what jax.jit computes: a while loop's pass-through
carries (the weights a scan closes over) live in their operands' buffers, the operand
stays alive as long as the loop's result is read."""
import numpy as np
import pytest

import axle

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle.jax  # noqa: E402


def _arena(fn, *args) -> int:
    text = jax.jit(fn).lower(*args).as_text()
    return axle.compile(text, backend="cpu").program.arena_bytes


def _check(fn, *args, donate=(), rtol=2e-5, atol=2e-5):
    ref = jax.jit(fn)(*args)
    got = axle.jax.jit(fn, donate_argnums=donate)(*[jnp.array(a) for a in args])
    for g, r in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=rtol, atol=atol)


def _scan_over_table(n):
    def fn(table, xs):
        def cell(c, x):
            c = c * 0.5 + x * jnp.sum(table)
            return c, c
        return jax.lax.scan(cell, jnp.zeros(8, jnp.float32), xs)
    r = np.random.default_rng(n)
    return fn, (r.standard_normal(n).astype(np.float32), r.standard_normal((16, 8)).astype(np.float32))


def test_scan_temporaries_do_not_scale_with_what_it_closes_over():
    fn, args = _scan_over_table(1000)
    small = _arena(fn, *args)
    fn, args = _scan_over_table(100_000)
    big = _arena(fn, *args)
    assert big == small  # the table is read where it is, not copied into a carried buffer
    assert big < 100_000 * 4 // 4
    _check(fn, *args)


def test_rnn_scan_weights_not_copied():
    r = np.random.default_rng(0)
    din, dh, steps, batch = 256, 512, 8, 4

    def fn(wx, wh, b, xs, h0):
        def cell(h, x):
            h = jnp.tanh(x @ wx + h @ wh + b)
            return h, h
        return jax.lax.scan(cell, h0, xs)
    args = (r.standard_normal((din, dh), np.float32) / 16, r.standard_normal((dh, dh), np.float32) / 23,
            r.standard_normal(dh).astype(np.float32), r.standard_normal((steps, batch, din), np.float32),
            r.standard_normal((batch, dh), np.float32))
    weights = (din * dh + dh * dh) * 4
    assert _arena(fn, *args) < weights // 8  # per-step rows only (was: the weights, copied)
    # per step: h's next value (scratch, which x @ wx is written into first, the sum then in
    # place), h @ wh, and the slice of xs; no fourth [batch, dh] buffer
    row = batch * dh * 4
    assert _arena(fn, *args) <= 2 * row + batch * din * 4 + 256
    _check(fn, *args)


def _loop(w):
    """A while loop passing w through; w's value read again after the loop."""
    def body(c):
        i, acc, w_ = c
        return i + 1, acc + w_, w_
    return jax.lax.while_loop(lambda c: c[0] < 3, body, (0, jnp.zeros_like(w), w))


def test_pass_through_result_read_after_its_operand_dies():
    """w (a temporary) is last read by the loop; the loop's copy of it is read later, after a
    kernel that could overwrite a dying w in place: w must stay alive."""
    x = np.arange(48, dtype=np.float32).reshape(6, 8)

    def fn(x):
        w = jnp.exp(x * 0.01) @ jnp.ones((8, 8), jnp.float32)
        _, acc, w2 = _loop(w)
        z = jnp.tanh(acc) * 2.0 + 1.0  # elementwise: may reuse acc's buffer
        return z * w2 + jnp.flip(w2, 0)
    _check(fn, x)


def test_pass_through_of_a_value_updated_in_place_later():
    """The operand is read once more after the loop, by an elementwise kernel that could
    take its buffer over in place, and the loop's result later still."""
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)

    def fn(x):
        w = x @ x
        _, acc, w2 = _loop(w)
        u = w * 3.0 + 1.0  # last reader of w: in place would clobber w2's buffer
        return u @ acc, w2.T @ u
    _check(fn, x)


def test_nested_scans_share_weights_and_results_returned():
    r = np.random.default_rng(3)

    def fn(w, xs):
        def outer(h, x):
            def inner(g, _):
                return jnp.tanh(g @ w + x), None
            g, _ = jax.lax.scan(inner, h, None, length=3)
            return g, g.sum()
        return jax.lax.scan(outer, jnp.zeros((2, 16), jnp.float32), xs)
    args = (r.standard_normal((16, 16)).astype(np.float32) / 4, r.standard_normal((5, 2, 16)).astype(np.float32))
    _check(fn, *args)
    assert _arena(fn, *args) < 16 * 16 * 4  # w copied into no loop's carried buffer


def test_pass_through_of_a_donated_argument():
    x = np.linspace(0, 1, 32, dtype=np.float32).reshape(4, 8)

    def fn(w):
        _, acc, w2 = _loop(w)
        return w2 + acc, w2 * 2.0
    _check(fn, x, donate=(0,))


def test_pass_through_of_a_constant():
    def fn(x):
        _, acc, c = _loop(jnp.arange(12, dtype=jnp.float32).reshape(3, 4))
        return acc + x, c
    _check(fn, np.ones((3, 4), np.float32))


# (trip counts above unroll-loops' MAX_TRIPS: the loops stay loops)
# %w (a temporary) passes through the loop; its last direct reader %u could overwrite it in
# place, but the loop's result %r#1, which shares %w's buffer, is read after that
READ_AFTER = """
func.func @main(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %w = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %i0, %a = %w) : tensor<i32>, tensor<8x8xf32>
    cond {
      %n = stablehlo.constant dense<13> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %j, %a : tensor<i32>, tensor<8x8xf32>
    }
  %u = stablehlo.multiply %w, %w : tensor<8x8xf32>
  %e = stablehlo.exponential %u : tensor<8x8xf32>
  %s = stablehlo.dot_general %e, %r#1, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}
"""

# the same value passed through two loops in a row, the second's result returned
CHAIN = """
func.func @main(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %w = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %i0, %a = %w) : tensor<i32>, tensor<8x8xf32>
    cond {
      %n = stablehlo.constant dense<12> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %j, %a : tensor<i32>, tensor<8x8xf32>
    }
  %q:3 = stablehlo.while(%i = %i0, %a = %r#1, %acc = %x) : tensor<i32>, tensor<8x8xf32>, tensor<8x8xf32>
    cond {
      %n = stablehlo.constant dense<13> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %t = stablehlo.add %acc, %a : tensor<8x8xf32>
      stablehlo.return %j, %a, %t : tensor<i32>, tensor<8x8xf32>, tensor<8x8xf32>
    }
  %w2 = stablehlo.negate %w : tensor<8x8xf32>
  %o = stablehlo.add %q#1, %q#2 : tensor<8x8xf32>
  %o2 = stablehlo.multiply %o, %w2 : tensor<8x8xf32>
  return %o2, %q#1 : tensor<8x8xf32>, tensor<8x8xf32>
}
"""


@pytest.mark.parametrize("text,shape", [(READ_AFTER, (8, 8)), (CHAIN, (8, 8))])
def test_pass_through_operand_kept_alive(text, shape):
    x = np.linspace(-0.5, 0.5, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    exe = axle.compile(text)
    got = exe(x)
    ref = axle.interpret(text, x)
    for g, r in zip(got if isinstance(got, (list, tuple)) else [got], ref if isinstance(ref, (list, tuple)) else [ref]):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)
    plans = str(exe.program.plans)
    # no copy of %w: the loop's result lives in %w's buffer, or (while-licm) the loop no
    # longer carries it and its readers read %w
    assert "shared with %w" in plans or "%r#1" not in plans


@pytest.mark.parametrize("n", [4096, 4097])
def test_sort_scratch_is_one_run_per_operand(n):
    """A sort of contiguous slices merges between its result and one scratch run: the
    operand is read by the first pass where it is, the last pass writes the result."""
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    fn = lambda v: jnp.sort(v, stable=True)  # noqa: E731
    assert _arena(fn, x) <= (n * 4 + 63) // 64 * 64
    _check(fn, x)
    v, i = (np.random.default_rng(1).integers(0, 9, (2, n)).astype(np.float32),
            np.arange(2 * n, dtype=np.int32).reshape(2, n))
    two = lambda v, i: jax.lax.sort((v, i), dimension=1, num_keys=1)  # noqa: E731
    assert _arena(two, v, i) <= 2 * 2 * ((n * 4 + 63) // 64 * 64)  # a run per operand per thread
    _check(two, v, i)


def test_top_k_needs_no_buffer_of_the_sorted_size():
    """top_k (a sort read only as its first k) writes its k per row straight into the
    results (cpu.top_k): no temporary of the full sorted size."""
    x = np.random.default_rng(5).integers(0, 50, (64, 2048)).astype(np.float32)  # many ties
    fn = lambda v: jax.lax.top_k(v * 2.0, 16)  # noqa: E731  (the operand a fused product)
    assert _arena(fn, x) == 0
    _check(fn, x)
    y = np.random.default_rng(6).standard_normal((3, 300, 5)).astype(np.float32)

    def middle(v):  # the first 4 along a middle dimension, a sort read as a slice
        s = jax.lax.sort((v, jax.lax.broadcasted_iota(jnp.int32, v.shape, 1)), dimension=1, num_keys=1)
        return s[0][:, :4, :], s[1][:, :4, :]
    assert _arena(middle, y) == 0
    _check(middle, y)


def test_top_k_lowered_module_prints_parses_and_compiles_the_same():
    from axle.backends import cpu
    from axle.backends.cpu import disk_cache
    from axle.ir import parse_module, print_module
    x = np.random.default_rng(7).standard_normal((6, 50)).astype(np.float32)
    exe = axle.compile(jax.jit(lambda v: jax.lax.top_k(v, 5)).lower(x).as_text())
    want = exe.execute([x])
    low = print_module(exe._optimized_module())
    assert '"cpu.top_k"' in low and "stablehlo.sort" not in low
    with disk_cache.disabled():
        again = cpu.compile(parse_module(low), passes=False).execute([x])
    for a, b in zip(want, again):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(want[0], np.asarray(jax.lax.top_k(x, 5)[0]))


def test_arena_grows_from_a_released_block_at_its_end():
    """A request no released block fits starts in a released block that ends at the top
    (the arena grows by the difference), not after it."""
    from axle.codegen.plans.arena import Pool
    pool = Pool(0)
    a = pool.alloc(512, "a")
    b = pool.alloc(1024, "b")
    pool.release(b)
    assert pool.alloc(2048, "c") == 512 and pool.top == 512 + 2048  # was 512 + 1024 + 2048
    pool.release(a)
    assert pool.alloc(256, "d") == 0  # a released block that fits is still taken first
    fixed = Pool(1, limit=4096)
    x = fixed.alloc(1024, "x")
    fixed.alloc(1024, "y")
    fixed.release(fixed.alloc(1024, "z"))
    assert fixed.alloc(2048, "w") == 2048 and fixed.alloc(64, "v") is None and x == 0


# an inner loop's pass-through result returned by the outer body, temporaries made after it
RETURNED = """
func.func @main(%a0: tensor<8x8xf32>, %b0: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %z = stablehlo.constant dense<0> : tensor<i32>
  %o:3 = stablehlo.while(%k = %z, %a = %a0, %b = %b0) : tensor<i32>, tensor<8x8xf32>, tensor<8x8xf32>
    cond {
      %n = stablehlo.constant dense<2> : tensor<i32>
      %c = stablehlo.compare LT, %k, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %kn = stablehlo.add %k, %one : tensor<i32>
      %w = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      %r:2 = stablehlo.while(%i = %z, %x = %w) : tensor<i32>, tensor<8x8xf32>
        cond {
          %n3 = stablehlo.constant dense<3> : tensor<i32>
          %c3 = stablehlo.compare LT, %i, %n3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
          stablehlo.return %c3 : tensor<i1>
        } do {
          %one3 = stablehlo.constant dense<1> : tensor<i32>
          %j = stablehlo.add %i, %one3 : tensor<i32>
          stablehlo.return %j, %x : tensor<i32>, tensor<8x8xf32>
        }
      %t = stablehlo.dot_general %b, %b, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      %t2 = stablehlo.dot_general %t, %a, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      %u = stablehlo.tanh %t2 : tensor<8x8xf32>
      stablehlo.return %kn, %r#1, %u : tensor<i32>, tensor<8x8xf32>, tensor<8x8xf32>
    }
  return %o#1, %o#2 : tensor<8x8xf32>, tensor<8x8xf32>
}
"""


def test_pass_through_result_returned_by_a_loop_body():
    r = np.random.default_rng(0)
    a, b = [(r.standard_normal((8, 8)) / 3).astype(np.float32) for _ in range(2)]
    got = axle.compile(RETURNED)(a, b)
    for g, w in zip(got, axle.interpret(RETURNED, a, b)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


# %f, a reshape of %d, is %d's buffer; the dynamic_update_slice that could update %d in
# place reads its update from %f at other rows than it writes (rows 0-1 into rows 1-2)
VIEW_READ_BY_IN_PLACE = """
func.func @main(%x: tensor<8x8xf32>, %y: tensor<16x4xf32>, %z: tensor<8x1xf32>) -> (tensor<8x1xf32>, tensor<4x4xf32>) {
  %d = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %f = stablehlo.reshape %d : (tensor<8x8xf32>) -> tensor<4x16xf32>
  %g = stablehlo.dot_general %f, %y, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
  %s = stablehlo.slice %f [0:1, 0:16] : (tensor<4x16xf32>) -> tensor<1x16xf32>
  %u = stablehlo.reshape %s : (tensor<1x16xf32>) -> tensor<2x8xf32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %e = stablehlo.dynamic_update_slice %d, %u, %one, %zero : (tensor<8x8xf32>, tensor<2x8xf32>, tensor<i32>, tensor<i32>) -> tensor<8x8xf32>
  %h = stablehlo.dot_general %e, %z, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  return %h, %g : tensor<8x1xf32>, tensor<4x4xf32>
}
"""


def test_reshape_is_a_view_and_not_overwritten_while_read():
    r = np.random.default_rng(0)
    x, y, z = (r.standard_normal(s).astype(np.float32) for s in ((8, 8), (16, 4), (8, 1)))
    exe = axle.compile(VIEW_READ_BY_IN_PLACE)
    for g, w in zip(exe(x, y, z), axle.interpret(VIEW_READ_BY_IN_PLACE, x, y, z)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    plans = str(exe.program.plans)
    assert "%f f32[4,16]  arena +0 shared with %d" in plans  # no copy for the reshape
    assert "in place of %d" not in plans


def test_reshaped_weights_are_not_copied():
    """A dense layer's weights reshaped for the dot are read where they are."""
    w = np.random.default_rng(1).standard_normal((4096, 10)).astype(np.float32)
    x = np.random.default_rng(2).standard_normal((16, 8, 8, 64)).astype(np.float32)
    fn = lambda x, w: jax.lax.dot_general(x, w.reshape(8, 8, 64, 10),  # noqa: E731
                                          (((1, 2, 3), (0, 1, 2)), ((), ())))
    assert _arena(fn, x, w) == 0
    _check(fn, x, w, rtol=1e-4, atol=1e-4)
