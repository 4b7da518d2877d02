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
    ((1, 1, 45, 66), (2, 3, 0, 1)),     # only unit dimensions move: a copy
    ((40, 24, 3, 3), (2, 3, 1, 0)),     # OIHW -> HWIO: rows over I x 3 x 3 of the operand
    ((40, 5, 2, 7), (2, 3, 1, 0)),      # the same with edges on both sides
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


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32])
@pytest.mark.parametrize("shape,perm", [
    ((64, 96), (1, 0)),                 # whole tiles only
    ((77, 130), (1, 0)),                # whole tiles and edges
    ((3, 48, 40), (0, 2, 1)),           # a batch outside
    ((2, 37, 33, 64), (0, 3, 1, 2)),    # NHWC -> NCHW with edges
    ((40, 3, 50), (2, 1, 0)),           # a middle dimension outside
    ((48, 32, 3, 3), (2, 3, 1, 0)),     # OIHW -> HWIO: rows merged over the operand's I, H, W
    ((70, 40, 1, 1), (1, 0, 2, 3)),     # a 1x1 kernel's [O, I] swap: unit dimensions take no part
    ((1, 1, 45, 66), (3, 2, 0, 1)),     # [1, 1, I, O] -> [O, I, 1, 1] (a filter gradient), edges
    ((40, 1, 50), (2, 1, 0)),           # a unit dimension between the two
])
def test_register_transpose_matches_numpy(dtype, shape, perm, monkeypatch):
    """Whole tiles of a plain 4-byte transpose move through vector registers
    (elementwise._register_transpose), the edges element by element: exact, on or off."""
    from axle.backends.cpu import elementwise
    from axle.backends.cpu import executable as cpu_exe
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    cpu_exe.clear_memory_cache()
    made = []
    real = elementwise._register_transpose
    monkeypatch.setattr(elementwise, "_register_transpose", lambda *a: made.append(real(*a)) or made[-1])
    x = (R.standard_normal(shape) * 1000).astype(dtype)
    want = np.transpose(x, perm)
    _, got = _run(lambda x: jnp.transpose(x, perm), x)
    np.testing.assert_array_equal(np.asarray(got[0]), want)
    assert made and made[0] is not None  # the register path was taken
    monkeypatch.setattr(elementwise, "REGISTER_TRANSPOSE", False)
    _, got = _run(lambda x: jnp.transpose(x, perm) + 0, x)
    np.testing.assert_array_equal(np.asarray(got[0]), want)


@pytest.mark.parametrize("name,fn,shape", [
    ("[O, I, 1, 1] -> [I, O]", lambda x: jnp.transpose(x, (1, 0, 2, 3)).reshape(x.shape[1], x.shape[0]), (96, 64, 1, 1)),
    ("edges", lambda x: jnp.transpose(x, (1, 0, 2, 3)).reshape(x.shape[1], x.shape[0]), (77, 45, 1, 1)),
    ("computed operand", lambda x: jnp.transpose(jnp.tanh(x) * 2.0, (1, 0, 2, 3)).reshape(x.shape[1], -1), (64, 80, 1, 1)),
    ("[N, C, H, W] -> [N, H W C]", lambda x: jnp.transpose(x, (0, 2, 3, 1)).reshape(x.shape[0], -1), (2, 40, 6, 7)),
])
def test_reshaped_transpose_is_tiled(name, fn, shape, monkeypatch):
    """A kernel whose root reshapes a fused transpose (a 1x1 kernel's weights transposed and
    flattened for a GEMM) walks the transpose's tiles and stores in the reshape's (the same)
    order: exact against numpy, on and off the register path."""
    from axle.backends.cpu import elementwise
    from axle.backends.cpu import executable as cpu_exe
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    tiled = []
    real = elementwise._tiled_transpose
    monkeypatch.setattr(elementwise, "_tiled_transpose", lambda *a: tiled.append(real(*a)) or tiled[-1])
    x = R.standard_normal(shape).astype(np.float32)
    want = np.asarray(jax.jit(fn)(x))
    cpu_exe.clear_memory_cache()
    _, got = _run(fn, x)
    tiles = np.asarray(got[0])
    np.testing.assert_allclose(tiles, want, rtol=1e-6, atol=1e-6)  # (tanh: XLA's to an ulp)
    assert tiled and tiled[-1]
    monkeypatch.setattr(elementwise, "REGISTER_TRANSPOSE", False)
    cpu_exe.clear_memory_cache()
    _, got = _run(fn, x)
    np.testing.assert_array_equal(np.asarray(got[0]), tiles)


def test_computed_operand_of_a_returned_transpose_gets_a_buffer():
    """exp(x).T returned: exp runs in x's layout, vectorized, and the transpose moves the
    result through registers (fusion._register_transposed): two kernels, the right values."""
    x = R.standard_normal((256, 96)).astype(np.float32)
    exe, got = _run(lambda x: jnp.exp(x).T, x)
    assert [k.op.name for k in exe.program.kernels] == ["stablehlo.exponential", "stablehlo.transpose"]
    np.testing.assert_allclose(np.asarray(got[0]), np.exp(x).T, rtol=2e-6)


@pytest.mark.parametrize("name,fn,shapes,dtype", [
    ("x.T + y", lambda x, y: x.T + y, [(70, 130), (130, 70)], np.float32),
    ("(2x - 1).T * y (computed operand)", lambda x, y: (x * 2.0 - 1.0).T * y, [(64, 96), (96, 64)], np.float32),
    ("NCHW -> NHWC, W = 7: H and W merged", lambda x, b: jnp.maximum(x.transpose(0, 2, 3, 1) + b, 0),
     [(3, 48, 7, 7), (48,)], np.float32),
    ("NHWC -> NCHW: H and W merged on the column side", lambda x, y: jnp.tanh(x.transpose(0, 3, 1, 2)) * y,
     [(2, 9, 11, 40), (2, 40, 9, 11)], np.float32),
    ("int32, x.T + 1", lambda x, y: x.T + y + 1, [(40, 50), (50, 40)], np.int32),
    ("read also at another index", lambda x, y: x.T + jnp.flip(x.T, 1) + y, [(48, 80), (80, 48)], np.float32),
    ("a narrower result", lambda x, y: (x.T * y).astype(jnp.bfloat16), [(40, 72), (72, 40)], np.float32),
    ("bf16, NCHW -> NHWC", lambda x, y: x.transpose(0, 2, 3, 1) * y, [(2, 40, 6, 7), (2, 6, 7, 40)], "bfloat16"),
])
def test_transpose_staged_under_its_consumer(name, fn, shapes, dtype, monkeypatch):
    """A 4-byte transpose under a consumer moves whole tiles through registers into a stack
    tile that the consumer's loop reads (elementwise._register_transpose, staged); edges,
    other indices and other widths element by element. Against jax.jit, and exact against
    the path without registers."""
    from axle.backends.cpu import elementwise
    from axle.backends.cpu import executable as cpu_exe
    import ml_dtypes
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    args = [(R.standard_normal(s) * 100).astype(np.float32).astype(dt) for s in shapes]
    want = np.asarray(jax.jit(fn)(*args)).astype(np.float64)
    made = []
    real = elementwise._register_transpose
    monkeypatch.setattr(elementwise, "_register_transpose", lambda *a: made.append(real(*a)) or made[-1])
    cpu_exe.clear_memory_cache()
    _, got = _run(fn, *args)
    staged = np.asarray(got[0])
    np.testing.assert_allclose(staged.astype(np.float64), want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    if dtype != "bfloat16":
        assert made and made[0] is not None  # the tiles went through registers
    monkeypatch.setattr(elementwise, "REGISTER_TRANSPOSE", False)
    cpu_exe.clear_memory_cache()
    _, got = _run(fn, *args)
    np.testing.assert_array_equal(np.asarray(got[0]), staged)


def test_a_loop_reading_many_buffers_is_vectorized(monkeypatch):
    """The sum of 70 one-hot placed step gradients (a scan's backward written as a Python
    loop: x[:, t] read per step) is one loop reading 140 buffers: past LLVM's run-time
    overlap checks it stays scalar (20x slower); with alias scopes (elementwise.MANY_BUFFERS)
    it is vectorized. Against jax.jit."""
    from axle.backends.cpu import elementwise
    from axle.backends.cpu import executable as cpu_exe
    from axle.tools.compile_cmd import optimized_ir
    monkeypatch.setenv("AXLE_CACHE_DIR", "off")
    L = 70
    xs = [R.standard_normal((4, 128, 16)).astype(np.float32) for _ in range(L)]
    cs = [R.standard_normal((4, 16)).astype(np.float32) for _ in range(L)]

    def f(xs, cs):
        acc = jnp.zeros((4, L, 128, 16), jnp.float32)
        for t in range(L):
            acc = acc + jnp.where((jnp.arange(L) == t)[None, :, None, None], (xs[t] * cs[t][:, None, :])[:, None], 0.0)
        return acc
    text = jax.jit(f).lower(xs, cs).as_text()
    vectorized, default = {}, elementwise.MANY_BUFFERS
    for many in (default, 10 ** 6):
        monkeypatch.setattr(elementwise, "MANY_BUFFERS", many)
        cpu_exe.clear_memory_cache()
        exe = axle.compile(text, backend="cpu")
        np.testing.assert_allclose(np.asarray(exe.execute(xs + cs)[0]), np.asarray(jax.jit(f)(xs, cs)), rtol=1e-6)
        assert len(exe.program.kernels) == 1
        vectorized[many] = "x float>" in optimized_ir(exe.program.llvm_ir, 3)
    assert vectorized == {default: True, 10 ** 6: False}
