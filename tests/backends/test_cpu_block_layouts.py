"""Blockwise programs over reshaped and transposed values (an MX-FP8 quantizer of w.T):
a transposed value read along its strided dimension under a reduction or through a
reshape gets a buffer (fusion._strided_transposes); a loop whose result is a reshape
that splits its dimensions runs over the finer shape and reads through it without
division (elementwise._refined_loop, Emitter.index_digits). Against jax.jit and numpy."""
import numpy as np
import pytest

import axle
from axle.backends.cpu import disk_cache
from axle.backends.cpu import executable as cpu_exe
from axle.backends.cpu.elementwise import refine

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402


def _fresh(text):
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        return axle.compile(text, backend="cpu")


def _kernels(exe, name):
    """The kernel functions of the optimized IR whose names end with `name`."""
    ir = exe._static.optimized_ir
    return [f for f in ir.split("\ndefine ") if f.split("(")[0].endswith(name)]


def test_refine():
    assert refine([1024, 2048], [1024, 64, 32]) == [1024, 64, 32]
    assert refine([8, 32, 64], [8, 4, 512]) == [8, 4, 8, 64]
    assert refine([4, 6], [6, 4]) is None
    assert refine([2, 3], [6]) == [2, 3]


def _scale_blocks(x, s, t):
    """x [N, K] scaled per block of 32 along K (s, t: [N, K / 32, 1]) and cast through bf16."""
    n, k = x.shape
    b = x.reshape(n, k // 32, 32) * s
    return (jnp.clip(b, -448, 448) * t).reshape(n, k).astype(jnp.bfloat16)


def test_a_reshaped_block_scale_runs_over_the_finer_shape():
    r = np.random.default_rng(0)
    x = r.standard_normal((96, 512)).astype(np.float32) * 300
    s = np.exp2(r.integers(-2, 3, (96, 16, 1))).astype(np.float32)
    t = np.exp2(r.integers(-2, 3, (96, 16, 1))).astype(np.float32)
    exe = _fresh(jax.jit(_scale_blocks).lower(x, s, t).as_text())
    got = np.asarray(exe(x, s, t)).astype(np.float32)
    np.testing.assert_array_equal(got, np.asarray(jax.jit(_scale_blocks)(x, s, t)).astype(np.float32))
    loop = [f for f in exe._static.optimized_ir.split("\ndefine ") if ".convert" in f.split("(")[0]]
    assert any("x float>" in f for f in loop), "the block loop did not vectorize"
    assert loop and not any(" udiv " in f or " urem " in f for f in loop)


def _mx_quantize_wt(w):
    """MX-style: per 32 of K of w.T, a power-of-two scale from the block's absolute max."""
    wt = w.T
    b = wt.reshape(wt.shape[0], -1, 32)
    m = jnp.max(jnp.abs(b), -1, keepdims=True)
    e = jnp.floor(jnp.log2(jnp.maximum(m, 1e-30))) - 8
    q = jnp.clip(b * jnp.exp2(-e), -448, 448).astype(jnp.float8_e4m3fn)
    return (q.astype(jnp.float32) * jnp.exp2(e)).reshape(wt.shape), m[..., 0]


def test_a_transposed_operand_of_block_maxima_gets_a_buffer():
    w = np.random.default_rng(1).standard_normal((512, 256)).astype(np.float32)
    text = jax.jit(_mx_quantize_wt).lower(w).as_text()
    exe = _fresh(text)
    plans = exe.program.plans if isinstance(exe.program.plans, str) else None
    got = [np.asarray(v) for v in exe(w)]
    want = [np.asarray(v) for v in jax.jit(_mx_quantize_wt)(w)]
    np.testing.assert_array_equal(got[1], np.abs(w.T).reshape(256, 16, 32).max(-1))
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=0)
    assert plans is None or "transpose" in plans
    assert _kernels(exe, "transpose"), "the transpose is not a kernel of its own"


def _bn_backward_nhwc(x, g, m, r, w):
    # a batch norm's backward in NCHW (per-channel statistics broadcast, a ReLU mask), then
    # laid out NHWC for a filter gradient
    c = lambda v: v[None, :, None, None]  # noqa: E731
    dx = (g * (x > 0) - c(m) - (x - c(m)) * c(r) * c(w)) * c(r) * c(w)
    return jnp.transpose(dx, (0, 2, 3, 1))


def test_a_costly_operand_of_a_moving_transpose_gets_a_buffer():
    """The operand (about 12 ops per element) is computed by a vectorized loop in its own
    layout and the transpose only moves it: two kernels, the last a transpose."""
    r = np.random.default_rng(3)
    x, g = (r.standard_normal((4, 64, 16, 16)).astype(np.float32) for _ in range(2))
    m, rs, w = (r.standard_normal(64).astype(np.float32) for _ in range(3))
    text = jax.jit(_bn_backward_nhwc).lower(x, g, m, rs, w).as_text()
    exe = _fresh(text)
    out = exe(x, g, m, rs, w)
    got = np.asarray(out[0] if isinstance(out, (list, tuple)) else out)
    want = np.asarray(jax.jit(_bn_backward_nhwc)(x, g, m, rs, w))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert _kernels(exe, "transpose"), "the transpose is not a kernel of its own"
    assert len(exe.program.kernels) >= 2
