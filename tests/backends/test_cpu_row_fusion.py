"""Row fusion (row_fusion.py): reductions computed per row inside the kernel reading them."""
import numpy as np
import pytest

import axle

SOFTMAX = """
func.func @main(%x: tensor<37x300xf32>) -> tensor<37x300xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<37x300xf32>, tensor<f32>) -> tensor<37xf32>
  %m1 = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<37xf32>) -> tensor<37x1xf32>
  %mb = stablehlo.broadcast_in_dim %m1, dims = [0, 1] : (tensor<37x1xf32>) -> tensor<37x300xf32>
  %d = stablehlo.subtract %x, %mb : tensor<37x300xf32>
  %e = stablehlo.exponential %d : tensor<37x300xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1] : (tensor<37x300xf32>, tensor<f32>) -> tensor<37xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<37xf32>) -> tensor<37x300xf32>
  %y = stablehlo.divide %e, %sb : tensor<37x300xf32>
  return %y : tensor<37x300xf32>
}
"""

# layernorm over the last axis of a [1, rows, cols] activation, written to a [rows, cols]
# matrix (the reshape in front of a dense layer): mean and variance, unit dimensions
LAYERNORM = """
func.func @main(%x: tensor<1x24x96xf32>, %g: tensor<96xf32>) -> tensor<24x96xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %n = stablehlo.constant dense<96.0> : tensor<1x24xf32>
  %eps = stablehlo.constant dense<1.0e-5> : tensor<1x24xf32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [2] : (tensor<1x24x96xf32>, tensor<f32>) -> tensor<1x24xf32>
  %mean = stablehlo.divide %s, %n : tensor<1x24xf32>
  %mb = stablehlo.broadcast_in_dim %mean, dims = [0, 1] : (tensor<1x24xf32>) -> tensor<1x24x96xf32>
  %c = stablehlo.subtract %x, %mb : tensor<1x24x96xf32>
  %c2 = stablehlo.multiply %c, %c : tensor<1x24x96xf32>
  %v = stablehlo.reduce(%c2 init: %z) applies stablehlo.add across dimensions = [2] : (tensor<1x24x96xf32>, tensor<f32>) -> tensor<1x24xf32>
  %var = stablehlo.divide %v, %n : tensor<1x24xf32>
  %ve = stablehlo.add %var, %eps : tensor<1x24xf32>
  %r = stablehlo.rsqrt %ve : tensor<1x24xf32>
  %r1 = stablehlo.reshape %r : (tensor<1x24xf32>) -> tensor<1x24x1xf32>
  %rb = stablehlo.broadcast_in_dim %r1, dims = [0, 1, 2] : (tensor<1x24x1xf32>) -> tensor<1x24x96xf32>
  %gb = stablehlo.broadcast_in_dim %g, dims = [2] : (tensor<96xf32>) -> tensor<1x24x96xf32>
  %y = stablehlo.multiply %c, %rb : tensor<1x24x96xf32>
  %yg = stablehlo.multiply %y, %gb : tensor<1x24x96xf32>
  %out = stablehlo.reshape %yg : (tensor<1x24x96xf32>) -> tensor<24x96xf32>
  return %out : tensor<24x96xf32>
}
"""

# the row sums are read by column (%sb[i, j] = s[j]): not a per-row value of the consumer
BY_COLUMN = """
func.func @main(%x: tensor<40x40xf32>) -> tensor<40x40xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<40x40xf32>, tensor<f32>) -> tensor<40xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [1] : (tensor<40xf32>) -> tensor<40x40xf32>
  %y = stablehlo.subtract %x, %sb : tensor<40x40xf32>
  return %y : tensor<40x40xf32>
}
"""

# the row sums are read by two kernels (a transpose and a returned value): no single host
TWO_READERS = """
func.func @main(%x: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<16xf32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<16x32xf32>, tensor<f32>) -> tensor<16xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<16xf32>) -> tensor<16x32xf32>
  %y = stablehlo.divide %x, %sb : tensor<16x32xf32>
  return %y, %s : tensor<16x32xf32>, tensor<16xf32>
}
"""


def _top_kernels(exe):
    return [k for k in exe.program.kernels if k.depth == 0]


def _rand(shape, seed=3):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_softmax_is_one_kernel_without_temporaries():
    x = _rand((37, 300)) * 4
    exe = axle.compile(SOFTMAX)
    kernels = _top_kernels(exe)
    assert len(kernels) == 1 and exe.program.arena_bytes == 0
    assert sum(1 for o in kernels[0].fused if o.name == "stablehlo.reduce") == 2
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(exe(x), e / e.sum(axis=1, keepdims=True), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(exe(x), axle.interpret(SOFTMAX, x), rtol=2e-6, atol=1e-7)


def test_layernorm_chain_with_unit_dimensions():
    x, g = _rand((1, 24, 96)) + 3, _rand((96,), seed=4)
    exe = axle.compile(LAYERNORM)
    assert len(_top_kernels(exe)) == 1 and exe.program.arena_bytes == 0
    mu = x.mean(axis=2, keepdims=True)
    ref = ((x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=2, keepdims=True) + 1e-5) * g).reshape(24, 96)
    np.testing.assert_allclose(exe(x, g), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(exe(x, g), axle.interpret(LAYERNORM, x, g), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("text, kernels", [(BY_COLUMN, 2), (TWO_READERS, 2)])
def test_not_row_fused_when_not_a_per_row_value(text, kernels):
    x = _rand((40, 40) if text is BY_COLUMN else (16, 32))
    exe = axle.compile(text)
    assert len(_top_kernels(exe)) == kernels
    got, want = exe.execute([x]), axle.interpret(text, x)
    want = want if isinstance(want, (list, tuple)) else [want]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_row_fused_softmax_parallel_matches_serial(monkeypatch):
    x = _rand((64, 700))
    serial = axle.compile(SOFTMAX.replace("37", "64").replace("300", "700"))(x)
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_parallel=true")
    par = axle.compile(SOFTMAX.replace("37", "64").replace("300", "700"))
    np.testing.assert_array_equal(par(x), serial)


def _kept_inputs(text, monkeypatch):
    """Compile `text` fresh; the ops whose values a row-fused kernel kept in its result row."""
    from axle.backends.cpu import disk_cache, row_fusion
    from axle.backends.cpu import executable as cpu_exe
    kept = []
    orig = row_fusion._row_kept

    def spy(*a):
        red = orig(*a)
        if red is not None:
            kept.append(red.operands[0].owner.name)
        return red
    monkeypatch.setattr(row_fusion, "_row_kept", spy)
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(text)
        cpu_exe.clear_memory_cache()
    return exe, kept


def test_softmax_keeps_exp_in_the_result_row(monkeypatch):
    """exp(x - max) is computed once per element: kept in the result row by the sum's loop
    and read back by the division."""
    exe, kept = _kept_inputs(SOFTMAX, monkeypatch)
    assert kept == ["stablehlo.exponential"]
    x = _rand((37, 300))
    np.testing.assert_allclose(exe(x), axle.interpret(SOFTMAX, x), rtol=2e-6, atol=1e-7)


def test_layernorm_keeps_nothing(monkeypatch):
    """The variance's input (x - mean)^2 is not what the output reads: nothing kept."""
    exe, kept = _kept_inputs(LAYERNORM, monkeypatch)
    assert kept == []


# softmax of a product whose result also reads x itself (y = x * e / s), on a temporary x
# (a dot's result) that dies in y's kernel: were y given x's buffer, the kept row would
# overwrite x before y's loop reads it. Buffer assignment does not (the row reductions read
# x across the row), and the kernel's own check agrees
IN_PLACE = """
func.func @main(%a: tensor<16x8xf32>, %b: tensor<8x64xf32>, %c: tensor<64x4xf32>) -> tensor<16x4xf32> {
  %x = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x64xf32>) -> tensor<16x64xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<16x64xf32>, tensor<f32>) -> tensor<16xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<16xf32>) -> tensor<16x64xf32>
  %d = stablehlo.subtract %x, %mb : tensor<16x64xf32>
  %e = stablehlo.exponential %d : tensor<16x64xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1] : (tensor<16x64xf32>, tensor<f32>) -> tensor<16xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<16xf32>) -> tensor<16x64xf32>
  %q = stablehlo.divide %e, %sb : tensor<16x64xf32>
  %y = stablehlo.multiply %x, %q : tensor<16x64xf32>
  %o = stablehlo.dot_general %y, %c, contracting_dims = [1] x [0] : (tensor<16x64xf32>, tensor<64x4xf32>) -> tensor<16x4xf32>
  return %o : tensor<16x4xf32>
}
"""


def test_kept_row_never_overwrites_what_the_kernel_still_reads(monkeypatch):
    from axle.backends.cpu import elementwise
    aliased = []
    orig = elementwise.reads_buffer_of
    monkeypatch.setattr(elementwise, "reads_buffer_of", lambda *a: aliased.append(orig(*a)) or aliased[-1])
    exe, kept = _kept_inputs(IN_PLACE, monkeypatch)
    assert kept == ["stablehlo.exponential"] and aliased == [False]
    assert exe.program.arena_bytes == 2 * 16 * 64 * 4  # x and y: two buffers
    a, b, c = _rand((16, 8), 4), _rand((8, 64), 5), _rand((64, 4), 6)
    np.testing.assert_allclose(exe(a, b, c), axle.interpret(IN_PLACE, a, b, c), rtol=2e-5, atol=1e-5)


# attention's masked softmax: exp(scale * select(mask, s, -1e9) - max) costs more than a
# value worth computing twice, and its readers are the sum and the division (then a reshape
# dropping the unit batch dimension): kept in the result row, it needs no kernel and no
# buffer of its own
MASKED = """
func.func @main(%s: tensor<1x3x16x16xf32>, %mask: tensor<16x16xi1>) -> tensor<3x16x16xf32> {
  %mb = stablehlo.broadcast_in_dim %mask, dims = [2, 3] : (tensor<16x16xi1>) -> tensor<1x3x16x16xi1>
  %neg = stablehlo.constant dense<-1.0e9> : tensor<1x3x16x16xf32>
  %x = stablehlo.select %mb, %s, %neg : tensor<1x3x16x16xi1>, tensor<1x3x16x16xf32>
  %c = stablehlo.constant dense<0.125> : tensor<1x3x16x16xf32>
  %xs = stablehlo.multiply %x, %c : tensor<1x3x16x16xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %m = stablehlo.reduce(%xs init: %ninf) applies stablehlo.maximum across dimensions = [3] : (tensor<1x3x16x16xf32>, tensor<f32>) -> tensor<1x3x16xf32>
  %mbb = stablehlo.broadcast_in_dim %m, dims = [0, 1, 2] : (tensor<1x3x16xf32>) -> tensor<1x3x16x16xf32>
  %d = stablehlo.subtract %xs, %mbb : tensor<1x3x16x16xf32>
  %e = stablehlo.exponential %d : tensor<1x3x16x16xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %sum = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [3] : (tensor<1x3x16x16xf32>, tensor<f32>) -> tensor<1x3x16xf32>
  %sb = stablehlo.broadcast_in_dim %sum, dims = [0, 1, 2] : (tensor<1x3x16xf32>) -> tensor<1x3x16x16xf32>
  %p = stablehlo.divide %e, %sb : tensor<1x3x16x16xf32>
  %r = stablehlo.reshape %p : (tensor<1x3x16x16xf32>) -> tensor<3x16x16xf32>
  return %r : tensor<3x16x16xf32>
}
"""


def test_masked_softmax_keeps_its_costly_exp_instead_of_storing_it(monkeypatch):
    exe, kept = _kept_inputs(MASKED, monkeypatch)
    assert kept[-1] == "stablehlo.exponential"
    assert len(_top_kernels(exe)) == 1 and exe.program.arena_bytes == 0
    s = _rand((1, 3, 16, 16), 7)
    mask = np.tril(np.ones((16, 16), bool))
    np.testing.assert_allclose(exe(s, mask), axle.interpret(MASKED, s, mask), rtol=2e-6, atol=1e-7)


# a bias gradient and its SGD step: the sum keeps the innermost dimension (it runs down the
# columns), so computing it per result element would walk memory with a stride; it stays a
# reduce kernel of its own (memory order, vectorized across the columns)
BIAS_STEP = """
func.func @main(%g: tensor<8x64x128xf32>, %b: tensor<128xf32>) -> tensor<128xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%g init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x64x128xf32>, tensor<f32>) -> tensor<128xf32>
  %lr = stablehlo.constant dense<0.01> : tensor<128xf32>
  %d = stablehlo.multiply %lr, %s : tensor<128xf32>
  %y = stablehlo.subtract %b, %d : tensor<128xf32>
  return %y : tensor<128xf32>
}
"""


def test_column_sum_is_not_row_fused():
    exe = axle.compile(BIAS_STEP)
    assert "stablehlo.reduce" in [k.name for k in _top_kernels(exe)]
    g, b = _rand((8, 64, 128), 11), _rand((128,), 12)
    np.testing.assert_allclose(exe(g, b), axle.interpret(BIAS_STEP, g, b), rtol=1e-5, atol=1e-5)


# a softmax along a transposed value's row: the transpose reads each row at a stride of 48
# elements; row fused, it would do so once per reduction and once more for the result
SOFTMAX_OF_TRANSPOSE = """
func.func @main(%x: tensor<4x96x48xf32>) -> tensor<4x48x96xf32> {
  %t = stablehlo.transpose %x, dims = [0, 2, 1] : (tensor<4x96x48xf32>) -> tensor<4x48x96xf32>
  %ni = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %m = stablehlo.reduce(%t init: %ni) applies stablehlo.maximum across dimensions = [2] : (tensor<4x48x96xf32>, tensor<f32>) -> tensor<4x48xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0, 1] : (tensor<4x48xf32>) -> tensor<4x48x96xf32>
  %d = stablehlo.subtract %t, %mb : tensor<4x48x96xf32>
  %e = stablehlo.exponential %d : tensor<4x48x96xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [2] : (tensor<4x48x96xf32>, tensor<f32>) -> tensor<4x48xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0, 1] : (tensor<4x48xf32>) -> tensor<4x48x96xf32>
  %y = stablehlo.divide %e, %sb : tensor<4x48x96xf32>
  return %y : tensor<4x48x96xf32>
}
"""


def test_strided_rows_are_materialized_once_before_the_row_fusion():
    exe = axle.compile(SOFTMAX_OF_TRANSPOSE)
    kernels = _top_kernels(exe)
    assert [k.name for k in kernels] == ["stablehlo.transpose", "stablehlo.divide"]
    assert sum(1 for o in kernels[1].fused if o.name == "stablehlo.reduce") == 2
    assert not any(o.name == "stablehlo.transpose" for o in kernels[1].fused)
    x = _rand((4, 96, 48)) * 3
    t = x.transpose(0, 2, 1)
    e = np.exp(t - t.max(axis=2, keepdims=True))
    np.testing.assert_allclose(exe(x), e / e.sum(axis=2, keepdims=True), rtol=2e-6, atol=1e-7)


def test_short_strided_rows_stay_fused():
    # rows of 4: reading them again costs less than a buffer written and read
    text = SOFTMAX_OF_TRANSPOSE.replace("4x96x48", "4x4x48").replace("4x48x96", "4x48x4")
    exe = axle.compile(text)
    kernels = _top_kernels(exe)
    assert [k.name for k in kernels] == ["stablehlo.divide"]
    x = _rand((4, 4, 48))
    np.testing.assert_allclose(exe(x), axle.interpret(text, x), rtol=2e-6, atol=1e-7)


def test_relative_shift_softmax_matches_jax():
    """Transformer-XL's relative shift (pad, reshape, slice of transposed scores) under a
    masked softmax: the shifted scores get one buffer, the softmax reads them in rows."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def rel_shift(x):
        b, h, q, k = x.shape
        x = jnp.pad(x, ((0, 0), (0, 0), (0, 0), (1, 0)))
        return x.reshape(b, h, k + 1, q)[:, :, 1:].reshape(b, h, q, k)

    def f(q, r):
        s = rel_shift(jnp.einsum("bhqd,hkd->bhqk", q, r))
        s = jnp.where(jnp.tril(jnp.ones((64, 64), bool)), s, -1e30)
        return jax.nn.softmax(s, -1)
    args = (_rand((2, 3, 64, 16), 21), _rand((3, 64, 16), 22))
    exe = axle.compile(jax.jit(f).lower(*args).as_text())
    kernels = _top_kernels(exe)
    host = [k for k in kernels if sum(1 for o in k.fused if o.name == "stablehlo.reduce") == 2]
    assert len(host) == 1 and not any(o.name in ("stablehlo.transpose", "stablehlo.pad")
                                       for o in host[0].fused)
    np.testing.assert_allclose(exe(*args), jax.jit(f)(*args), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [16, 37, 300])
def test_masked_max_min_in_lanes_exact(dtype, n, monkeypatch):
    """A max / min over the innermost axis of masked values (a causal softmax's row max)
    runs as one partial result per vector lane (kernels._lanewise_extreme), row-fused
    and as a reduce kernel of its own: bit for bit the sequential result, with NaNs, signed
    zeros, infinities, fully masked rows and rows shorter than two vectors."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from axle.backends.cpu import kernels
    from axle.backends.cpu import executable as cpu_exe
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    r = np.random.default_rng(n)
    x = r.standard_normal((9, n)).astype(dtype)
    x[1, 3] = np.nan
    x[2, :] = -0.0
    x[2, 1::2] = 0.0
    x[3, 5] = np.inf
    x[4, n - 1] = -np.inf
    mask = np.tril(np.ones((9, n), bool), 2)
    mask[5] = False  # a fully masked row: -inf / +inf

    def f(x, mask):
        s = jnp.where(mask, x * 0.5, -jnp.inf)
        m = jnp.max(s, -1, keepdims=True)
        soft = jnp.exp(s - jnp.where(jnp.isfinite(m), m, 0.0))  # row-fused with its max
        return jnp.max(s, -1), jnp.min(jnp.where(mask, x, jnp.inf), -1), soft

    def ours():
        cpu_exe.clear_memory_cache()
        with jax.enable_x64(dtype == "float64"):
            text = jax.jit(f).lower(x, mask).as_text()
        exe = axle.compile(text, backend="cpu")
        return [np.asarray(o) for o in exe.execute([x, mask])]
    taken = []
    real = kernels._lanewise_extreme
    monkeypatch.setattr(kernels, "_lanewise_extreme", lambda *a: taken.append(1) or real(*a))
    got = ours()
    monkeypatch.setattr(kernels, "_extreme_lanes", lambda *a: 0)
    want = ours()  # the sequential chain
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()
    from axle.backends.cpu.conv_runtime import vector_floats
    lanes = vector_floats() // (1 if dtype == "float32" else 2)
    assert bool(taken) == (n >= 2 * lanes)
    np.testing.assert_array_equal(got[0], np.max(np.where(mask, x * np.asarray(0.5, dtype), -np.inf), -1))
