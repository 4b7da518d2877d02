"""f32 dot_general through axle's own AVX-512 kernel (lowp_runtime.py, kind "f32"; docs/gemm-f32.md):
every layout JAX programs emit (rhs [K, N] and [N, K], lhs [M, K] and [K, M], batched,
attention's 4-D forms), M / N / K tails, K longer than a packed block, at the top level
and in loop bodies, against numpy in float64; bit-for-bit equal across thread counts; the
BLAS path with --cpu_lowp_dot=false."""
import os
import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu.lowp_runtime import supported_kinds  # noqa: E402

NATIVE = "f32" in supported_kinds()


@pytest.fixture(params=["native", "blas"])
def mode(request, monkeypatch):
    if request.param == "blas":
        monkeypatch.setenv("AXLE_FLAGS", "--cpu_lowp_dot=false")
    else:
        monkeypatch.delenv("AXLE_FLAGS", raising=False)
    return request.param


def _compile(fn, *args):
    return axle.compile(jax.jit(fn).lower(*args).as_text(), backend="cpu")


def _libraries(exe):
    return {k.library for k in exe.program.kernels if k.library}


def _check(got, spec, a, b, times=1):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = times * np.einsum(spec, a64, b64)
    scale = times * np.einsum(spec, np.abs(a64), np.abs(b64))
    err = np.abs(np.asarray(got, np.float64) - want)
    assert np.all(err <= 4e-6 * scale + 1e-30), float((err / (scale + 1e-30)).max())


def _operands(spec, sizes, seed):
    r = np.random.default_rng(seed)
    ins = spec.split("->")[0].split(",")
    return [r.standard_normal([sizes[c] for c in s]).astype(np.float32) for s in ins]


LAYOUTS = ["mk,kn->mn", "mk,nk->mn", "km,kn->mn", "km,nk->mn"]
SIZES = [(8, 32, 1), (9, 33, 7), (17, 45, 16), (31, 100, 17), (64, 96, 513), (100, 130, 1030), (129, 257, 45),
         (256, 64, 64), (72, 40, 600)]


@pytest.mark.parametrize("spec", LAYOUTS)
@pytest.mark.parametrize("m,n,k", SIZES)
def test_top_level_layouts(mode, spec, m, n, k):
    a, b = _operands(spec, dict(m=m, n=n, k=k), m * 31 + n * 7 + k)
    exe = _compile(lambda x, y: jnp.einsum(spec, x, y), a, b)
    _check(exe.execute([a, b])[0], spec, a, b)
    native = mode == "native" and NATIVE and m * n * k >= 4096
    assert ("lowp.f32" in _libraries(exe)) == native
    if mode == "native" and "f32_avx2" in supported_kinds() and 8 <= m < 160 and n >= 16 and m * n * k >= 4096:
        # AVX2 hosts: the 6 x 16 kernel, the rhs row-major or stored [N, K] (16 x 16 transposes)
        assert "lowp.f32_avx2" in _libraries(exe)


def test_large_transposed_lhs_is_packed(mode):
    """x^T @ dy with a large [K, M] lhs and many panels: packed to [M, K] by register
    transposes (kernels_dot_lowp.PACK_T_MIN_BYTES; read in place, every panel would walk
    the whole lhs a cache set at a time), M and K tails included; fewer columns keep it in place."""
    from axle.backends.cpu.kernels_dot_lowp import PACK_T_MIN_BYTES, PACK_T_MIN_N
    m, k = 520, 1030
    assert m * k * 4 >= PACK_T_MIN_BYTES
    for n, packed in ((PACK_T_MIN_N + 4, True), (PACK_T_MIN_N - 56, False)):
        a, b = _operands("km,kn->mn", dict(m=m, n=n, k=k), n)
        exe = _compile(lambda x, y: x.T @ y, a, b)
        _check(exe.execute([a, b])[0], "km,kn->mn", a, b)
        if mode == "native" and NATIVE:
            assert (exe.program.arena_bytes >= m * k * 4) == packed


OUTER_K = [("etd,edf->tf", dict(e=4, t=70, d=96, f=40), True), ("etd,efd->tf", dict(e=3, t=33, d=130, f=64), True),
           ("dte,def->tf", dict(e=5, t=40, d=3, f=48), False), ("betd,bedf->btf", dict(b=2, e=3, t=24, d=80, f=36), True),
           ("xtey,xeyf->tf", dict(x=2, t=17, e=3, y=70, f=33), True), ("etd,edf->tf", dict(e=2, t=9, d=16, f=32), False),
           ("edt,efd->tf", dict(e=3, d=72, t=20, f=40), True)]


@pytest.mark.parametrize("spec,sizes,kernel", OUTER_K)
def test_contracting_pairs_outside_one_run(mode, spec, sizes, kernel):
    """Contracting dimensions that are not one strided run in both operands (the dense form
    of lax.ragged_dot: "etd,edf->tf"): the longest run is the kernel's K, the other pairs
    loops whose products add into C; too short a run (16, or 5) goes elsewhere."""
    a, b = _operands(spec, sizes, sum(sizes.values()))
    fn = lambda x, y: jnp.einsum(spec, x, y)  # noqa: E731
    exe = _compile(fn, a, b)
    _check(exe.execute([a, b])[0], spec, a, b)
    if mode == "native" and NATIVE:
        assert ("lowp.f32" in _libraries(exe)) == kernel
    looped = _compile(lambda x, y: jax.lax.fori_loop(0, 2, lambda i, c: c + fn(x, y), jnp.zeros_like(fn(x, y))), a, b)
    _check(looped.execute([a, b])[0], spec, a, b, times=2)


BATCHED = [("bmk,bkn->bmn", dict(b=3, m=37, k=70, n=45)), ("bmk,bnk->bmn", dict(b=2, m=64, k=96, n=130)),
           ("bkm,bkn->bmn", dict(b=3, m=40, k=33, n=64)), ("bhqd,bhkd->bhqk", dict(b=2, h=3, q=24, k=40, d=16)),
           ("bhqk,bhkd->bhqd", dict(b=2, h=3, q=24, k=40, d=64)), ("bmk,kn->bmn", dict(b=4, m=10, k=50, n=70)),
           ("bmk,bkn->bmn", dict(b=2, m=128, k=1100, n=96)),
           # batch dimensions apart (attention over [B, S, H, D]: batched over B and H)
           ("bqhd,bkhd->bhqk", dict(b=2, q=24, h=3, k=40, d=32)), ("bhqk,bkhd->bqhd", dict(b=2, h=3, q=24, k=40, d=64)),
           ("bqhd,bkhd->bqhk", dict(b=3, q=40, h=2, k=36, d=16))]


@pytest.mark.parametrize("spec,sizes", BATCHED)
def test_batched(mode, spec, sizes):
    a, b = _operands(spec, sizes, len(spec) + sum(sizes.values()))
    exe = _compile(lambda x, y: jnp.einsum(spec, x, y), a, b)
    _check(exe.execute([a, b])[0], spec, a, b)
    if mode == "native" and NATIVE and spec.startswith("bqhd"):
        assert "lowp.f32" in _libraries(exe)


@pytest.mark.parametrize("spec", LAYOUTS + ["bmk,bnk->bmn"])
def test_in_loop_body(mode, spec):
    sizes = dict(b=2, m=40, n=70, k=300)
    a, b = _operands(spec, sizes, 3)
    out_shape = np.einsum(spec, a, b).shape

    def fn(x, y):
        return jax.lax.fori_loop(0, 3, lambda i, c: c + jnp.einsum(spec, x, y), jnp.zeros(out_shape, jnp.float32))
    exe = _compile(fn, a, b)
    _check(exe.execute([a, b])[0], spec, a, b, times=3)
    assert ("lowp.f32" in _libraries(exe)) == (mode == "native" and NATIVE)


def test_mlp_training_step_matches_jax(mode):
    """Forward, input and weight gradients of a two-layer MLP (x @ W, dy @ W.T, x.T @ dy)."""
    r = np.random.default_rng(4)
    x = r.standard_normal((64, 120)).astype(np.float32)
    w1 = (r.standard_normal((120, 96)) * 0.1).astype(np.float32)
    w2 = (r.standard_normal((96, 40)) * 0.1).astype(np.float32)

    def loss(w1, w2, x):
        return jnp.sum(jnp.tanh(jnp.maximum(x @ w1, 0) @ w2) ** 2)
    fn = jax.grad(loss, argnums=(0, 1))
    exe = _compile(fn, w1, w2, x)
    got = exe.execute([w1, w2, x])
    for g, w in zip(got, jax.jit(fn)(w1, w2, x)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-4)


_DETERMINISM = r"""
import hashlib, sys
import numpy as np, jax, jax.numpy as jnp, axle
out = hashlib.sha256()
for spec, sizes in [("mk,kn->mn", (200, 300, 530)), ("mk,nk->mn", (96, 64, 700)), ("km,kn->mn", (300, 40, 129)),
                    ("bmk,bnk->bmn", (16, 120, 64))]:
    r = np.random.default_rng(1)
    m, n, k = sizes
    dims = dict(m=m, n=n, k=k, b=3)
    ins = spec.split("->")[0].split(",")
    a, b = [r.standard_normal([dims[c] for c in s]).astype(np.float32) for s in ins]
    exe = axle.compile(jax.jit(lambda x, y: jnp.einsum(spec, x, y)).lower(a, b).as_text(), backend="cpu")
    libs = {kk.library for kk in exe.program.kernels if kk.library}
    out.update(np.ascontiguousarray(exe.execute([a, b])[0]).tobytes())
print(out.hexdigest(), sorted(libs))
"""


@pytest.mark.skipif(not NATIVE, reason="no AVX-512 on this host: f32 dots go to BLAS")
def test_results_do_not_depend_on_the_thread_count(tmp_path):
    outs = []
    for threads in ("1", "2", "3"):
        env = dict(os.environ, AXLE_NUM_THREADS=threads, AXLE_CACHE_DIR=str(tmp_path / threads))
        env.pop("AXLE_FLAGS", None)
        res = subprocess.run([sys.executable, "-c", _DETERMINISM], env=env, capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        outs.append(res.stdout.strip().splitlines()[-1])
    assert "lowp.f32" in outs[0]
    assert outs[0] == outs[1] == outs[2]


CONVS = [((2, 9, 11, 24), (3, 3, 24, 40), (1, 1), "SAME", 1), ((3, 16, 16, 64), (3, 3, 64, 64), (1, 1), "SAME", 1),
         ((2, 13, 10, 16), (5, 3, 16, 33), (2, 1), "VALID", 1), ((2, 12, 12, 64), (3, 3, 32, 64), (1, 1), "SAME", 2),
         ((1, 40, 40, 8), (3, 3, 8, 96), (2, 2), ((1, 2), (0, 1)), 1)]


@pytest.mark.parametrize("xs,ws,strides,pad,groups", CONVS)
def test_convolution_and_its_gradients(mode, xs, ws, strides, pad, groups):
    """im2col GEMMs (kernels_conv.py, kernels_conv_general.py) on the f32 kernel: forward,
    input gradient (a conv with the flipped kernel) and filter gradient (contracting over
    batch and space: patches stored [K, T], read with rows contiguous)."""
    r = np.random.default_rng(sum(xs) + sum(ws))
    x = r.standard_normal(xs).astype(np.float32)
    w = (r.standard_normal(ws) * 0.1).astype(np.float32)

    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, strides, pad, dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                            feature_group_count=groups)

    def fn(x, w):
        y, pull = jax.vjp(conv, x, w)
        return (y,) + pull(jnp.tanh(y))
    exe = _compile(fn, x, w)
    got = exe.execute([x, w])
    with jax.default_matmul_precision("highest"):
        want = jax.jit(fn)(x, w)
    for g, e in zip(got, want):
        e = np.asarray(e)
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-4, atol=1e-4 * float(np.abs(e).max()))
    if mode == "blas" or not NATIVE:
        assert "lowp.f32" not in _libraries(exe)
    elif ws[-1] == 64 and groups == 1:  # 64 output features: every GEMM on the kernel (the filter
        # gradient's as strided views of the flat pixel stream: conv_flat.py)
        libs = {k.library for k in exe.program.kernels if k.op.name == "stablehlo.convolution"}
        assert "lowp.f32" in libs and libs <= {"lowp.f32", "lowp.f32.strided"}


def test_hosts_without_avx512_keep_blas(monkeypatch):
    """An AVX2-only host (no f32 kind): dots and im2col convolutions go to BLAS."""
    from axle.backends.cpu import disk_cache, lowp_runtime
    from axle.backends.cpu import executable as cpu_exe
    monkeypatch.setattr(lowp_runtime, "supported_kinds", lambda: frozenset())
    monkeypatch.delenv("AXLE_FLAGS", raising=False)
    r = np.random.default_rng(8)
    a, b = r.standard_normal((64, 96)).astype(np.float32), r.standard_normal((96, 80)).astype(np.float32)
    x, w = r.standard_normal((2, 8, 8, 64)).astype(np.float32), r.standard_normal((3, 3, 64, 64)).astype(np.float32)

    def fn(a, b, x, w):
        return a @ b, jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = _compile(fn, a, b, x, w)
        cpu_exe.clear_memory_cache()
    got = exe.execute([a, b, x, w])
    _check(got[0], "mk,kn->mn", a, b)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(jax.jit(fn)(a, b, x, w)[1]), rtol=1e-4, atol=1e-3)
    assert "lowp.f32" not in _libraries(exe) and "blas.sgemm" in _libraries(exe)


@pytest.mark.skipif(not NATIVE, reason="no AVX-512 on this host")
def test_kernel_object_code_comes_from_the_disk_cache(tmp_path):
    """The kernels are compiled once per machine (1-2.5 s), then loaded from the disk cache."""
    from axle.backends.cpu import disk_cache, lowp_runtime
    from axle.backends.cpu.llvm_env import compile_to_object
    kinds = sorted(lowp_runtime.supported_kinds())

    def refuse(*a):
        raise AssertionError("compiled again")
    with disk_cache.using(str(tmp_path)):
        first = lowp_runtime._object(kinds, compile_to_object)
        assert lowp_runtime._object(kinds, refuse) == first
    with disk_cache.disabled():
        with pytest.raises(AssertionError):
            lowp_runtime._object(kinds, refuse)
