"""A sweep of ordinary JAX programs outside `axle bench`: axle against jax.jit in one process.

Each program is lowered with jax.jit(...).lower(...).as_text(), compiled by axle, checked
against XLA's outputs (max relative difference printed) and timed side by side: seven
interleaved rounds (axle then XLA, XLA then axle, ...), each a batch of calls of about 50 ms,
medians reported. The programs are samples of what users run (sorts, convolutions in
other forms and dtypes, low-precision matmuls, scans, gathers and scatters, random
numbers, FFTs, linear algebra, optimizers), written to find where axle falls into slow
generic code, not tuned on: a ratio far below 1 is a gap to close in the general mechanism.

Usage: python benchmarks/unseen_programs.py [name,name,...]   (default: all; ~10 min)
Results and what they led to: benchmarks/results/unseen-programs.md."""
import sys
import time

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax
import axle
jax.config.update("jax_enable_x64", False)
R = np.random.default_rng(0)
def f32(*s, scale=1.0): return (R.standard_normal(s) * scale).astype(np.float32)

P = {}
def prog(name):
    def deco(f): P[name] = f; return f
    return deco

@prog("sort_1d_1M")
def _(): return (lambda x: jnp.sort(x)), (f32(1 << 20),)
@prog("sort_axis0")
def _(): return (lambda x: jnp.sort(x, axis=0)), (f32(4096, 64),)
@prog("sort_int32")
def _(): return (lambda x: jnp.sort(x)), (R.integers(-1e9, 1e9, (64, 8192)).astype(np.int32),)
@prog("argsort_desc")
def _(): return (lambda x: jnp.argsort(-x, axis=-1)), (f32(256, 2048),)
@prog("sort_kv")
def _(): return (lambda k, v: lax.sort((k, v), num_keys=1)), (f32(262144), f32(262144))
@prog("topk_k1")
def _(): return (lambda x: lax.top_k(x, 1)), (f32(512, 4096),)
@prog("topk_k256")
def _(): return (lambda x: lax.top_k(x, 256)), (f32(64, 8192),)
@prog("median")
def _(): return (lambda x: jnp.median(x, axis=-1)), (f32(512, 1024),)
@prog("searchsorted")
def _(): return (lambda s, q: jnp.searchsorted(s, q)), (np.sort(f32(65536)), f32(65536))
@prog("conv_nchw")
def _():
    def f(x, w): return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return f, (f32(8, 64, 32, 32), f32(64, 64, 3, 3, scale=0.05))
@prog("conv1d_audio")
def _():
    def f(x, w): return lax.conv_general_dilated(x, w, (2,), [(3, 3)], dimension_numbers=("NWC", "WIO", "NWC"))
    return f, (f32(16, 4096, 32), f32(7, 32, 64, scale=0.05))
@prog("conv3d")
def _():
    def f(x, w): return lax.conv_general_dilated(x, w, (1, 1, 1), "SAME", dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))
    return f, (f32(2, 16, 32, 32, 16), f32(3, 3, 3, 16, 32, scale=0.05))
@prog("conv_grouped")
def _():
    def f(x, w): return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=8)
    return f, (f32(16, 32, 32, 128), f32(3, 3, 16, 128, scale=0.05))
@prog("conv_dilated")
def _():
    def f(x, w): return lax.conv_general_dilated(x, w, (1, 1), "SAME", rhs_dilation=(2, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return f, (f32(8, 32, 32, 64), f32(3, 3, 64, 64, scale=0.05))
@prog("conv_strided_grad")
def _():
    def loss(w, x): return jnp.sum(lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) ** 2)
    return jax.grad(loss, argnums=(0, 1)), (f32(3, 3, 32, 64, scale=0.05), f32(16, 32, 32, 32))
@prog("conv_transpose_s2")
def _():
    def f(x, w): return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return f, (f32(8, 16, 16, 64), f32(4, 4, 64, 32, scale=0.05))
@prog("depthwise_grad")
def _():
    def loss(w, x): return jnp.sum(jnp.tanh(lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=64)))
    return jax.grad(loss), (f32(3, 3, 1, 64, scale=0.1), f32(16, 32, 32, 64))
@prog("cnn_train_step")
def _():
    def loss(p, x, y):
        h = lax.conv_general_dilated(x, p[0], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(h)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = lax.conv_general_dilated(h, p[1], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(h).mean(axis=(1, 2))
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ p[2]) * y, -1))
    def step(p, x, y):
        g = jax.grad(loss)(p, x, y)
        return [a - 0.01 * b for a, b in zip(p, g)]
    p = [f32(3, 3, 3, 32, scale=0.1), f32(3, 3, 32, 64, scale=0.05), f32(64, 10, scale=0.1)]
    return step, (p, f32(32, 32, 32, 3), np.eye(10, dtype=np.float32)[R.integers(0, 10, 32)])
@prog("int8_uint8_batched")
def _():
    def f(a, b): return jnp.einsum("bmk,bkn->bmn", a, b, preferred_element_type=jnp.int32)
    return f, (R.integers(0, 255, (8, 128, 512)).astype(np.uint8), R.integers(-128, 127, (8, 512, 256)).astype(np.int8))
@prog("bf16_attention")
def _():
    import ml_dtypes
    def f(q, k):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=jnp.float32)
        return jax.nn.softmax(s, axis=-1)
    return f, (f32(4, 8, 256, 64).astype(ml_dtypes.bfloat16), f32(4, 8, 256, 64).astype(ml_dtypes.bfloat16))
@prog("bf16_mlp")
def _():
    import ml_dtypes
    def f(x, w1, w2):
        h = jax.nn.gelu(jnp.dot(x, w1, preferred_element_type=jnp.float32)).astype(jnp.bfloat16)
        return jnp.dot(h, w2, preferred_element_type=jnp.float32)
    bf = ml_dtypes.bfloat16
    return f, (f32(128, 512).astype(bf), f32(512, 2048, scale=0.05).astype(bf), f32(2048, 512, scale=0.02).astype(bf))
@prog("c64_matmul")
def _(): return (lambda a, b: a @ b), ((f32(128, 256) + 1j * f32(128, 256)).astype(np.complex64), (f32(256, 256) + 1j * f32(256, 256)).astype(np.complex64))
@prog("einsum_odd")
def _(): return (lambda a, b: jnp.einsum("ikjl,jlkm->mik", a, b)), (f32(64, 16, 32, 8), f32(32, 8, 16, 96))
@prog("batched_small_mm")
def _(): return (lambda a, b: a @ b), (f32(4096, 4, 4), f32(4096, 4, 4))
@prog("matvec")
def _(): return (lambda a, x: a @ x), (f32(4096, 4096), f32(4096))
@prog("cumsum_axis0")
def _(): return (lambda x: jnp.cumsum(x, axis=0)), (f32(4096, 256),)
@prog("cumsum_int")
def _(): return (lambda x: jnp.cumsum(x, axis=-1)), (R.integers(0, 10, (256, 4096)).astype(np.int32),)
@prog("cummin_rev")
def _(): return (lambda x: lax.cummin(x, axis=1, reverse=True)), (f32(256, 4096),)
@prog("lstm_scan")
def _():
    def cell(c, x):
        h, cc = c
        z = x @ W + h @ U
        i, f, o, g = jnp.split(z, 4, axis=-1)
        cc = jax.nn.sigmoid(f) * cc + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(cc)
        return (h, cc), h
    W, U = f32(128, 1024, scale=0.05), f32(256, 1024, scale=0.05)
    def f(xs, W_, U_):
        nonlocal W, U
        W, U = W_, U_  # (the cell reads them)
        return lax.scan(cell, (jnp.zeros((32, 256)), jnp.zeros((32, 256))), xs)[1]
    return f, (f32(64, 32, 128), W, U)
@prog("gru_train")
def _():
    def loss(p, xs):
        W, U = p
        def cell(h, x):
            z = jax.nn.sigmoid(x @ W[:, :128] + h @ U[:, :128])
            r = jax.nn.sigmoid(x @ W[:, 128:256] + h @ U[:, 128:256])
            n = jnp.tanh(x @ W[:, 256:] + (r * h) @ U[:, 256:])
            h = (1 - z) * n + z * h
            return h, h
        return jnp.sum(lax.scan(cell, jnp.zeros((16, 128)), xs)[1] ** 2)
    return jax.grad(loss), ((f32(64, 384, scale=0.1), f32(128, 384, scale=0.1)), f32(32, 16, 64))
@prog("fori_matmul")
def _(): return (lambda x, w: lax.fori_loop(0, 20, lambda i, h: jnp.tanh(h @ w), x)), (f32(64, 512), f32(512, 512, scale=0.05))
@prog("embedding_lookup")
def _(): return (lambda t, i: t[i].sum(axis=1)), (f32(50000, 128), R.integers(0, 50000, (256, 32)).astype(np.int32))
@prog("segment_sum")
def _(): return (lambda d, s: jax.ops.segment_sum(d, s, num_segments=1000)), (f32(200000, 16), R.integers(0, 1000, 200000).astype(np.int32))
@prog("scatter_add_2d")
def _(): return (lambda x, i, u: x.at[i].add(u)), (f32(10000, 64), R.integers(0, 10000, 50000).astype(np.int32), f32(50000, 64))
@prog("take_along")
def _(): return (lambda x, i: jnp.take_along_axis(x, i, axis=1)), (f32(512, 4096), R.integers(0, 4096, (512, 512)).astype(np.int32))
@prog("one_hot_xent")
def _(): return (lambda l, y: -jnp.sum(jax.nn.log_softmax(l) * jax.nn.one_hot(y, 32000), -1)), (f32(64, 32000), R.integers(0, 32000, 64).astype(np.int32))
@prog("rng_normal")
def _(): return (lambda k: jax.random.normal(jax.random.wrap_key_data(k), (1024, 1024))), (np.array([0, 42], np.uint32),)
@prog("argmax_axis0")
def _(): return (lambda x: jnp.argmax(x, axis=0)), (f32(4096, 1024),)
@prog("var_mid_axis")
def _(): return (lambda x: jnp.var(x, axis=1)), (f32(64, 512, 128),)
@prog("logsumexp_axis0")
def _(): return (lambda x: jax.nn.logsumexp(x, axis=0)), (f32(4096, 512),)
@prog("transpose_3d")
def _(): return (lambda x: jnp.transpose(x, (2, 0, 1)) * 2), (f32(256, 256, 64),)
@prog("layer_norm_bwd")
def _():
    def loss(x, g):
        m = x.mean(-1, keepdims=True); v = x.var(-1, keepdims=True)
        return jnp.sum(((x - m) / jnp.sqrt(v + 1e-5) * g) ** 2)
    return jax.grad(loss, argnums=(0, 1)), (f32(1024, 768), f32(768))
@prog("attention_train")
def _():
    def loss(w, x):
        q, k, v = jnp.split(x @ w, 3, axis=-1)
        q = q.reshape(8, 128, 8, 64).transpose(0, 2, 1, 3); k = k.reshape(8, 128, 8, 64).transpose(0, 2, 1, 3); v = v.reshape(8, 128, 8, 64).transpose(0, 2, 1, 3)
        s = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / 8.0 + jnp.tril(jnp.zeros((128, 128))) , -1)
        return jnp.sum((s @ v) ** 2)
    return jax.grad(loss), (f32(512, 1536, scale=0.03), f32(8, 128, 512))
@prog("fft")
def _(): return (lambda x: jnp.abs(jnp.fft.rfft(x, axis=-1))), (f32(256, 4096),)
@prog("cholesky_solve")
def _():
    a = f32(256, 256); a = a @ a.T + 256 * np.eye(256, dtype=np.float32)
    return (lambda a, b: jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a), b)), (a, f32(256, 64))
@prog("avg_pool_grad")
def _():
    def loss(x): return jnp.sum(lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME") ** 2)
    return jax.grad(loss), (f32(16, 64, 64, 32),)
@prog("max_pool_grad")
def _():
    def loss(x): return jnp.sum(lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME") ** 2)
    return jax.grad(loss), (f32(16, 64, 64, 32),)

@prog("transpose_2d")
def _(): return (lambda x: x.T + 1.0), (f32(4096, 4096),)
@prog("nhwc_to_nchw")
def _(): return (lambda x: jnp.transpose(x, (0, 3, 1, 2))), (f32(32, 56, 56, 64),)

@prog("adam_pytree")
def _():
    shapes = [(512, 512), (512,), (512, 2048), (2048,), (2048, 512), (512,)] * 6
    ps = [f32(*sh, scale=0.05) for sh in shapes]
    gs = [f32(*sh, scale=0.01) for sh in shapes]
    ms = [np.zeros(sh, np.float32) for sh in shapes]
    vs = [np.zeros(sh, np.float32) for sh in shapes]
    def upd(p, g, m, v):
        out = []
        for a, b, c, d in zip(p, g, m, v):
            c = 0.9 * c + 0.1 * b
            d = 0.999 * d + 0.001 * b * b
            a = a - 1e-3 * c / (jnp.sqrt(d) + 1e-8)
            out.append((a, c, d))
        return out
    return upd, (ps, gs, ms, vs)
@prog("bincount")
def _(): return (lambda x: jnp.bincount(x, length=4096)), (R.integers(0, 4096, 1 << 20).astype(np.int32),)
@prog("dropout_mlp")
def _():
    def f(k, x, w):
        k = jax.random.wrap_key_data(k)
        h = jax.nn.relu(x @ w)
        keep = jax.random.bernoulli(k, 0.9, h.shape)
        return jnp.where(keep, h / 0.9, 0.0)
    return f, (np.array([0, 7], np.uint32), f32(256, 512), f32(512, 2048, scale=0.05))
@prog("assoc_scan")
def _(): return (lambda x: lax.associative_scan(jnp.add, x, axis=1)), (f32(64, 8192),)
@prog("linalg_solve")
def _(): return (lambda a, b: jnp.linalg.solve(a, b)), (f32(256, 256) + 16 * np.eye(256, dtype=np.float32), f32(256, 32))
@prog("eigh")
def _():
    a = f32(128, 128); a = (a + a.T) / 2
    return (lambda a: jnp.linalg.eigh(a)[0]), (a,)
@prog("sum_16M")
def _(): return (lambda x: jnp.sum(x)), (f32(1 << 24),)
@prog("bf16_conv")
def _():
    import ml_dtypes
    def f(x, w): return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), preferred_element_type=jnp.float32)
    return f, (f32(8, 32, 32, 64).astype(ml_dtypes.bfloat16), f32(3, 3, 64, 64, scale=0.05).astype(ml_dtypes.bfloat16))
@prog("while_dynamic")
def _():
    def f(x):
        def cond(c): return jnp.max(jnp.abs(c[0])) > 1e-3
        def body(c): return (c[0] * 0.5 + jnp.sin(c[0]) * 0.01, c[1] + 1)
        return lax.while_loop(cond, body, (x, 0))
    return f, (f32(1 << 16),)
@prog("gumbel_sample")
def _():
    def f(k, logits):
        return jax.random.categorical(jax.random.wrap_key_data(k), logits, axis=-1)
    return f, (np.array([1, 2], np.uint32), f32(64, 32000))

import ml_dtypes
BF = ml_dtypes.bfloat16
@prog("bf16_maxpool")
def _(): return (lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")), (f32(16, 64, 64, 32).astype(BF),)
@prog("bf16_cumsum")
def _(): return (lambda x: jnp.cumsum(x, axis=-1)), (f32(256, 4096).astype(BF),)
@prog("bf16_sort")
def _(): return (lambda x: jnp.sort(x, axis=-1)), (f32(256, 4096).astype(BF),)
@prog("bf16_softmax")
def _(): return (lambda x: jax.nn.softmax(x, axis=-1)), (f32(256, 4096).astype(BF),)
@prog("bf16_layernorm")
def _():
    def f(x):
        m = x.mean(-1, keepdims=True); v = x.var(-1, keepdims=True)
        return (x - m) / jnp.sqrt(v + 1e-5)
    return f, (f32(1024, 1024).astype(BF),)
@prog("f16_einsum")
def _(): return (lambda q, k: jnp.einsum("bhqd,bhkd->bhqk", q, k)), (f32(4, 8, 256, 64).astype(np.float16), f32(4, 8, 256, 64).astype(np.float16))
@prog("bf16_matmul_bf16out")
def _(): return (lambda a, b: a @ b), (f32(256, 1024).astype(BF), f32(1024, 1024, scale=0.03).astype(BF))
@prog("int32_argsort")
def _(): return (lambda x: jnp.argsort(x, axis=-1)), (R.integers(-1000, 1000, (256, 2048)).astype(np.int32),)
@prog("bf16_reduce_sum")
def _(): return (lambda x: jnp.sum(x.astype(jnp.float32), axis=0)), (f32(4096, 1024).astype(BF),)
@prog("int8_conv")
def _():
    def f(x, w): return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), preferred_element_type=jnp.int32)
    return f, (R.integers(-128, 127, (8, 32, 32, 64)).astype(np.int8), R.integers(-128, 127, (3, 3, 64, 64)).astype(np.int8))
@prog("f16_conv_grad")
def _():
    def loss(w, x): return jnp.sum(lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")).astype(jnp.float32) ** 2)
    return jax.grad(loss), (f32(3, 3, 32, 32, scale=0.05).astype(np.float16), f32(8, 32, 32, 32).astype(np.float16))

def bench(name: str, reps: int = 7) -> None:
    fn, args = P[name]()
    leaves = jax.tree_util.tree_leaves(args)
    jf = jax.jit(fn, keep_unused=True)  # (the harness passes every leaf)
    text = jf.lower(*args).as_text()
    t1 = time.perf_counter(); exe = axle.compile(text, backend="cpu"); ct = time.perf_counter() - t1
    want = jax.tree_util.tree_leaves(jf(*args))
    got = exe.execute(leaves)
    err = 0.0
    for g, w in zip(got, want):
        g = np.asarray(g).astype(np.float64); w = np.asarray(w).astype(np.float64)
        if g.size: err = max(err, float(np.abs(g - w).max() / (np.abs(w).max() + 1e-30)))
    def once_ax(): exe.execute(leaves)
    def once_xla(): jax.block_until_ready(jf(*args))
    for f in (once_ax, once_xla): f()
    t = time.perf_counter(); once_ax(); est = time.perf_counter() - t
    inner = max(1, int(0.05 / max(est, 1e-6)))
    ax, xl = [], []
    for r in range(reps):
        for which, lst in ((once_ax, ax), (once_xla, xl)) if r % 2 == 0 else ((once_xla, xl), (once_ax, ax)):
            t = time.perf_counter()
            for _ in range(inner): which()
            lst.append((time.perf_counter() - t) / inner)
    a, x = np.median(ax) * 1e3, np.median(xl) * 1e3
    libs = sorted({k.library for k in exe.program.kernels if getattr(k, "library", None)})
    print(f"{name:22s} axle {a:9.3f} ms  xla {x:9.3f} ms  xla/axle {x / a:6.2f}  err {err:.1e}  compile {ct:.2f}s  {','.join(libs)[:60]}", flush=True)

def sweep():
    """(table, decorator) for a further sweep's programs (unseen_programs_2.py, _3.py): the
    decorator registers each in the sweep's table and in P, where bench() finds it."""
    table = {}

    def program(name):
        def deco(f):
            table[name] = P[name] = f
            return f
        return deco
    return table, program


def ln(x):
    """Layer norm over the last axis without scale or shift (the later sweeps' models)."""
    return (x - x.mean(-1, keepdims=True)) * lax.rsqrt(x.var(-1, keepdims=True) + 1e-5)


def xent(logits, y):
    """Mean cross-entropy of integer labels y under logits (the later sweeps' classifiers)."""
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], -1))


def mha(x, Wqkv, Wo, H):
    """Multi-head self-attention of x [n, l, D] with a fused qkv projection."""
    n, l, D = x.shape
    q, k, v = (x @ Wqkv).reshape(n, l, 3, H, D // H).transpose(2, 0, 3, 1, 4)
    a = jax.nn.softmax(q @ k.swapaxes(-1, -2) / np.sqrt(D // H), -1)
    return (a @ v).transpose(0, 2, 1, 3).reshape(n, l, D) @ Wo


def helpers(seed: int):
    """The later sweeps' input makers, drawing from one generator seeded with `seed`:
    (R, f32, unif, ints, key, pkey, mlp_params, mlp)."""
    import jax
    r = np.random.default_rng(seed)

    def f32(*s, scale=1.0):
        return (r.standard_normal(s) * scale).astype(np.float32)

    def unif(lo, hi, *s):
        return r.uniform(lo, hi, s).astype(np.float32)

    def ints(lo, hi, *s, dt=np.int32):
        return r.integers(lo, hi, s).astype(dt)

    def key(k=seed):
        return np.asarray(jax.random.key_data(jax.random.PRNGKey(k)))

    def pkey(k):
        return jax.random.wrap_key_data(k)

    def mlp_params(*dims, scale=1.0):
        return [(f32(a, b, scale=scale / np.sqrt(a)), np.zeros(b, np.float32)) for a, b in zip(dims[:-1], dims[1:])]

    def mlp(ps, x, act=jax.nn.gelu):
        for i, (w, b) in enumerate(ps):
            x = x @ w + b
            if i < len(ps) - 1:
                x = act(x)
        return x
    return r, f32, unif, ints, key, pkey, mlp_params, mlp


def main(table) -> None:
    """Bench the programs named on the command line (comma-separated), else all of table's."""
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else list(table)
    for n in names:
        try:
            bench(n)
        except Exception as e:  # a failure is a finding: report it and go on
            print(f"{n:22s} FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)


if __name__ == "__main__":
    main(P)
