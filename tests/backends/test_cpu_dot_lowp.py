"""int8 / bf16 dot_general: the VNNI / AVX512-BF16 kernels (where this host has them) and
the widening fallback (forced by --cpu_lowp_dot=false), against numpy and jax.jit, on
several shapes: odd sizes, K not a multiple of the group, transposed operands, batches,
uint8 lhs, K longer than one packed block, extreme values."""
import ml_dtypes
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu.lowp_runtime import supported_kinds  # noqa: E402

SHAPES = [(1, 1, 1), (3, 5, 7), (8, 32, 4), (17, 33, 1030), (9, 70, 2053), (64, 96, 128)]


@pytest.fixture(params=["native", "fallback"])
def mode(request, monkeypatch):
    if request.param == "fallback":
        monkeypatch.setenv("AXLE_FLAGS", "--cpu_lowp_dot=false")
    else:
        monkeypatch.delenv("AXLE_FLAGS", raising=False)
    return request.param


def _compile(fn, *args):
    text = jax.jit(fn).lower(*args).as_text()
    return axle.compile(text, backend="cpu")


def _libraries(exe):
    return {k.library for k in exe.program.kernels if k.library}


def _int8(r, shape, lo=-128, hi=128, dt=np.int8):
    return r.integers(lo, hi, shape).astype(dt)


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_int8_matmul(mode, m, n, k):
    r = np.random.default_rng(m * 1000 + k)
    a, b = _int8(r, (m, k)), _int8(r, (k, n))

    def fn(a, b):
        return jnp.matmul(a, b, preferred_element_type=jnp.int32)
    exe = _compile(fn, a, b)
    got = np.asarray(exe.execute([a, b])[0])
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))
    np.testing.assert_array_equal(got, np.asarray(jax.jit(fn)(a, b)))
    kind = _int8_kind()
    native = mode == "native" and kind is not None and m * n * k >= 4096
    assert (f"lowp.{kind}" in _libraries(exe)) == native


def _int8_kind():
    """The kernel an int8 dot runs on here: VNNI (AVX-512), else vpmaddwd (AVX2), else none."""
    return next((k for k in ("vnni", "pmaddwd") if k in supported_kinds()), None)


def test_int8_extremes_and_uint8(mode):
    """-128 everywhere (the sign flip's correction at its largest), 0/255 uint8 lhs."""
    k = 300
    a = np.full((16, k), -128, np.int8)
    b = np.full((k, 40), -128, np.int8)
    fn = lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.int32)  # noqa: E731
    got = np.asarray(_compile(fn, a, b).execute([a, b])[0])
    np.testing.assert_array_equal(got, np.full((16, 40), 128 * 128 * k, np.int64))
    r = np.random.default_rng(5)
    au = _int8(r, (33, 257), 0, 256, np.uint8)
    bs = _int8(r, (257, 65))
    got = np.asarray(_compile(fn, au, bs).execute([au, bs])[0])
    np.testing.assert_array_equal(got, au.astype(np.int64) @ bs.astype(np.int64))


def test_int8_transposed_and_batched(mode):
    r = np.random.default_rng(7)
    a, b = _int8(r, (3, 37, 130)), _int8(r, (3, 45, 130))

    def fn(a, b):  # rhs stored [batch, N, K]; lhs read as [K, M] in the second product
        x = jnp.einsum("bmk,bnk->bmn", a, b, preferred_element_type=jnp.int32)
        y = jnp.einsum("bkm,bkn->bmn", jnp.swapaxes(a, 1, 2), jnp.swapaxes(b, 1, 2),
                       preferred_element_type=jnp.int32)
        return x, y
    outs = _compile(fn, a, b).execute([a, b])
    want = np.einsum("bmk,bnk->bmn", a.astype(np.int64), b.astype(np.int64))
    for o in outs:
        np.testing.assert_array_equal(np.asarray(o), want)


@pytest.mark.parametrize("batch,m,n,k", [(3, 37, 70, 128), (2, 9, 64, 64), (2, 20, 40, 2200)])
def test_transposed_rhs_packed_by_words(mode, batch, m, n, k):
    """An rhs stored [N, K] whose groups of k are whole 4-byte words (bf16 pairs, int8
    quads) is packed by register transposes of words (lowp_runtime._pack_panel_other):
    whole panels, edge columns, K over one packed block; and a row-major lhs packed row by
    row (_pack_a). Exact for int8, to the bf16 products' rounding for bf16."""
    r = np.random.default_rng(batch * m + k)
    a, b = _int8(r, (batch, m, k)), _int8(r, (batch, n, k))
    fn = lambda a, b: jnp.einsum("bmk,bnk->bmn", a, b, preferred_element_type=jnp.int32)  # noqa: E731
    want = np.einsum("bmk,bnk->bmn", a.astype(np.int64), b.astype(np.int64))
    np.testing.assert_array_equal(np.asarray(_compile(fn, a, b).execute([a, b])[0]), want)
    x, y = _bf16(r, (batch, m, k)), _bf16(r, (batch, n, k))
    fn = lambda a, b: jnp.einsum("bmk,bnk->bmn", a, b, preferred_element_type=jnp.float32)  # noqa: E731
    got = np.asarray(_compile(fn, x, y).execute([x, y])[0])
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    want = np.einsum("bmk,bnk->bmn", x64, y64)
    scale = np.einsum("bmk,bnk->bmn", np.abs(x64), np.abs(y64))
    assert np.all(np.abs(got - want) <= 1e-5 * scale + 1e-30)


def _avx2() -> bool:
    return "pmaddwd16" in supported_kinds()


@pytest.mark.parametrize("k", [1, 3, 300, 1031])
def test_int16_matmul_wraps_like_int32(mode, k):
    """int16 x int16 -> int32 (vpmaddwd as it stands): -32768 everywhere overflows int32
    (2**30 per product); the sums must wrap as int32 additions do."""
    a = np.full((13, k), -32768, np.int16)
    b = np.full((k, 35), -32768, np.int16)
    r = np.random.default_rng(k)
    a[:, ::2] = r.integers(-32768, 32768, a[:, ::2].shape)
    fn = lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.int32)  # noqa: E731
    exe = _compile(fn, a, b)
    got = np.asarray(exe.execute([a, b])[0])
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.uint64).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.asarray(jax.jit(fn)(a, b)))
    assert ("lowp.pmaddwd16" in _libraries(exe)) == (mode == "native" and _avx2() and 13 * 35 * k >= 4096)


@pytest.mark.parametrize("lt,rt", [(np.uint8, np.int8), (np.int8, np.uint8), (np.uint8, np.uint8)])
def test_mixed_int8_einsum(mode, lt, rt):
    """JAX widens mixed int8 / uint8 einsum operands to int32 before the dot; the
    simplifier gives the kernels the narrow operands (int16 when they differ)."""
    r = np.random.default_rng(11)

    def ints(shape, dt):
        info = np.iinfo(dt)
        return r.integers(info.min, info.max + 1, shape).astype(dt)
    a, b = ints((4, 37, 130), lt), ints((4, 130, 70), rt)
    fn = lambda a, b: jnp.einsum("bmk,bkn->bmn", a, b, preferred_element_type=jnp.int32)  # noqa: E731
    exe = _compile(fn, a, b)
    got = np.asarray(exe.execute([a, b])[0])
    np.testing.assert_array_equal(got, np.einsum("bmk,bkn->bmn", a.astype(np.int64), b.astype(np.int64)))
    if mode == "native" and lt != rt:
        assert ("lowp.pmaddwd16" in _libraries(exe)) == _avx2()


def _bf16(r, shape):
    return r.standard_normal(shape).astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_bf16_matmul_f32_accumulation(mode, m, n, k):
    r = np.random.default_rng(m + 31 * k)
    a, b = _bf16(r, (m, k)), _bf16(r, (k, n))

    def fn(a, b):
        return jnp.matmul(a, b, preferred_element_type=jnp.float32)
    exe = _compile(fn, a, b)
    got = np.asarray(exe.execute([a, b])[0])
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(got - want) <= 1e-5 * scale + 1e-30)
    ref = np.asarray(jax.jit(fn)(a, b))
    assert np.all(np.abs(got - ref) <= 2e-5 * scale + 1e-30)
    kind = next((k for k in ("bf16", "bf16_fma") if k in supported_kinds()), None)
    native = mode == "native" and kind is not None and m * n * k >= 4096
    assert (f"lowp.{kind}" in _libraries(exe)) == native


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_bf16_matmul_bf16_result(mode, m, n, k):
    """bf16 x bf16 -> bf16 (a bf16 model's x @ W): summed in f32, rounded once; on hosts with
    the bf16 kernel it runs there (cpu-lowp-dot-results), else on f32 copies."""
    r = np.random.default_rng(m + 7 * k)
    a, b = _bf16(r, (m, k)), _bf16(r, (k, n))
    exe = _compile(jnp.matmul, a, b)
    got = np.asarray(exe.execute([a, b])[0])
    assert got.dtype == ml_dtypes.bfloat16
    got = got.astype(np.float64)
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(got - want) <= 1e-5 * scale + 2.0 ** -8 * np.abs(want) + 1e-30)
    native = mode == "native" and "bf16" in supported_kinds() and m * n * k >= 4096
    assert ("lowp.bf16" in _libraries(exe)) == native


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_f16_matmul_f32_accumulation(mode, m, n, k):
    """f16 x f16 -> f32 (F16C widening on AVX2 hosts), subnormal f16 inputs included."""
    r = np.random.default_rng(m + 17 * k)
    a = r.standard_normal((m, k)).astype(np.float16)
    b = r.standard_normal((k, n)).astype(np.float16)
    a[::3, ::2] *= np.float16(1e-5)  # f16 subnormals (below 6.1e-5) and their products
    fn = lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.float32)  # noqa: E731
    exe = _compile(fn, a, b)
    got = np.asarray(exe.execute([a, b])[0])
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(got - want) <= 1e-5 * scale + 1e-30)
    native = mode == "native" and "f16_fma" in supported_kinds() and m * n * k >= 4096
    assert ("lowp.f16_fma" in _libraries(exe)) == native


def test_bf16_batched_transposed(mode):
    r = np.random.default_rng(11)
    a, b = _bf16(r, (2, 4, 40, 66)), _bf16(r, (2, 4, 50, 66))

    def fn(a, b):
        return jnp.einsum("bhqd,bhkd->bhqk", a, b, preferred_element_type=jnp.float32)
    for dt in (ml_dtypes.bfloat16, np.float16):
        x, y = a.astype(dt), b.astype(dt)
        got = np.asarray(_compile(fn, x, y).execute([x, y])[0])
        want = np.einsum("bhqd,bhkd->bhqk", x.astype(np.float64), y.astype(np.float64))
        scale = np.einsum("bhqd,bhkd->bhqk", np.abs(x.astype(np.float64)), np.abs(y.astype(np.float64)))
        assert np.all(np.abs(got - want) <= 1e-5 * scale + 1e-30)


@pytest.mark.parametrize("m,n,k,batch", [(8, 32, 1, 1), (9, 33, 7, 1), (32, 512, 512, 1), (64, 100, 1030, 1),
                                         (13, 70, 300, 3), (8, 16, 600, 1), (40, 1024, 1030, 2),
                                         # an rhs of 4 MB and more: several panels packed at once
                                         # (AVX2), partial groups and panels, K over several blocks
                                         (9, 1100, 1030, 1), (20, 2064, 520, 2), (8, 4096, 300, 1)])
def test_skinny_f32_matmul(mode, m, n, k, batch):
    """f32 dots of 8-64 rows with a row-major rhs: the FMA kernel reading the rhs unpacked
    (partial panels and K longer than a block packed; on AVX2 an rhs beyond the L2s packed
    for several panels at once), against numpy in f64."""
    r = np.random.default_rng(m * 7 + n)
    a = r.standard_normal((batch, m, k)).astype(np.float32)
    b = r.standard_normal((batch, k, n)).astype(np.float32)
    if batch == 1:
        a, b = a[0], b[0]
    def fn(a, b):  # inside a loop body (where the rhs would be repacked every iteration)
        return jax.lax.fori_loop(0, 2, lambda i, c: c + jnp.matmul(a, b), jnp.zeros(a.shape[:-1] + b.shape[-1:]))
    exe = _compile(fn, a, b)
    got = np.asarray(exe.execute([a, b])[0])
    want = 2 * np.matmul(a.astype(np.float64), b.astype(np.float64))
    scale = 2 * np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    assert np.all(np.abs(got - want) <= 4e-6 * scale + 1e-30)
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(a, b)), rtol=1e-4, atol=1e-4)
    kinds = supported_kinds()  # AVX-512: 32 columns and more; AVX2: below 64 rows, 16 columns and more
    kind = ("f32" if "f32" in kinds and n >= 32 else
            "f32_avx2" if "f32_avx2" in kinds and m < 64 and n >= 16 else None)
    native = mode == "native" and kind is not None and m * n * k >= 4096
    assert (f"lowp.{kind}" in _libraries(exe)) == native


def test_f32_outside_the_kernel_goes_to_blas():
    """Fewer than 8 rows or fewer than 32 columns: BLAS, at the top level and in loops
    (the kernel of lowp_runtime.py takes the other f32 dots: tests/backends/test_cpu_gemm_f32.py)."""
    r = np.random.default_rng(2)
    for a, b in [(np.ones((4, 256), np.float32), np.ones((256, 256), np.float32)),
                 (r.standard_normal((65, 256)).astype(np.float32), r.standard_normal((256, 20)).astype(np.float32))]:
        fn = lambda x, y: jax.lax.fori_loop(0, 1, lambda i, c: c + x @ y,  # noqa: E731
                                            jnp.zeros((x.shape[0], y.shape[1]), jnp.float32))
        top = lambda x, y: jnp.matmul(x, y)  # noqa: E731
        assert "lowp.f32" not in _libraries(_compile(top, a, b))
        exe = _compile(fn, a, b)
        np.testing.assert_allclose(np.asarray(exe.execute([a, b])[0]), a @ b, rtol=1e-4, atol=1e-3)
        assert "lowp.f32" not in _libraries(exe)
