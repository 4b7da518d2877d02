"""A second sweep of ordinary JAX programs outside `axle bench` (2026-11-28, fourth session).

Same harness as unseen_programs.py (axle against jax.jit in one process, outputs checked,
seven interleaved rounds, medians), on kinds the first sweep did not cover: attention
with masks, normalization layers and their gradients, image resizing, depthwise and
strided convolutions, more linear algebra (QR, LU, triangular solves, inverses, SVD),
quantization, distances and nearest neighbours, windowed sums, rotary embeddings,
sparse products by segment sums, multi-key sorts, special functions, integer hashing.

Usage: python benchmarks/unseen_programs_2.py [name,name,...]   (default: all)
Results: benchmarks/results/unseen-programs.md (second sweep)."""

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax
import ml_dtypes

import unseen_programs as U

R = np.random.default_rng(1)
f32 = U.f32
BF = ml_dtypes.bfloat16
P, prog = U.sweep()
def ints(lo, hi, *s, dt=np.int32): return R.integers(lo, hi, s).astype(dt)

@prog("causal_attention")
def _():
    def f(q, k, v):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 8.0
        m = jnp.tril(jnp.ones((s.shape[-1], s.shape[-1]), bool))
        s = jnp.where(m, s, -1e9)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)
    return f, (f32(4, 8, 256, 64), f32(4, 8, 256, 64), f32(4, 8, 256, 64))
@prog("group_norm")
def _():
    def f(x, g, b):
        n, h, w, c = x.shape
        y = x.reshape(n, h, w, 32, c // 32)
        m = y.mean((1, 2, 4), keepdims=True); v = y.var((1, 2, 4), keepdims=True)
        return ((y - m) * lax.rsqrt(v + 1e-5)).reshape(x.shape) * g + b
    return f, (f32(16, 32, 32, 128), f32(128), f32(128))
@prog("batchnorm_train_grad")
def _():
    def loss(p, x):
        m = x.mean((0, 1, 2)); v = x.var((0, 1, 2))
        y = (x - m) * lax.rsqrt(v + 1e-5) * p[0] + p[1]
        return jnp.sum(jax.nn.relu(y) ** 2)
    return jax.grad(loss, argnums=(0, 1)), ((f32(64), f32(64)), f32(32, 32, 32, 64))
@prog("resize_bilinear")
def _(): return (lambda x: jax.image.resize(x, (8, 128, 128, 32), "bilinear")), (f32(8, 64, 64, 32),)
@prog("resize_nearest")
def _(): return (lambda x: jax.image.resize(x, (8, 128, 128, 32), "nearest")), (f32(8, 64, 64, 32),)
@prog("depthwise_fwd")
def _():
    def f(x, w): return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=128)
    return f, (f32(16, 56, 56, 128), f32(3, 3, 1, 128, scale=0.1))
@prog("resnet_stem")
def _():
    def f(x, w): return jax.nn.relu(lax.conv_general_dilated(x, w, (2, 2), [(3, 3), (3, 3)], dimension_numbers=("NHWC", "HWIO", "NHWC")))
    return f, (f32(8, 112, 112, 3), f32(7, 7, 3, 64, scale=0.05))
@prog("wavenet_dilated")
def _():
    def f(x, w1, w2):
        a = lax.conv_general_dilated(x, w1, (1,), [(4, 0)], rhs_dilation=(4,), dimension_numbers=("NWC", "WIO", "NWC"))
        b = lax.conv_general_dilated(x, w2, (1,), [(4, 0)], rhs_dilation=(4,), dimension_numbers=("NWC", "WIO", "NWC"))
        return jnp.tanh(a) * jax.nn.sigmoid(b) + x
    return f, (f32(8, 4096, 64), f32(2, 64, 64, scale=0.1), f32(2, 64, 64, scale=0.1))
@prog("conv_transpose_1d")
def _():
    def f(x, w): return lax.conv_transpose(x, w, (4,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))
    return f, (f32(8, 1024, 64), f32(8, 64, 32, scale=0.05))
@prog("nchw_train_s2")
def _():
    def loss(w, x): return jnp.sum(jax.nn.relu(lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))))
    return jax.grad(loss, argnums=(0, 1)), (f32(64, 32, 3, 3, scale=0.05), f32(16, 32, 32, 32))
@prog("maxpool_valid")
def _(): return (lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")), (f32(32, 64, 64, 64),)
@prog("avgpool_nchw")
def _(): return (lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 1, 3, 3), (1, 1, 1, 1), "SAME") / 9.0), (f32(16, 64, 56, 56),)
@prog("moving_avg_1d")
def _(): return (lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 64), (1, 1), "VALID") / 64.0), (f32(64, 16384),)
@prog("cumprod")
def _(): return (lambda x: jnp.cumprod(x, axis=-1)), (1.0 + 0.001 * f32(256, 4096),)
@prog("logcumsumexp")
def _(): return (lambda x: lax.cumlogsumexp(x, axis=1)), (f32(256, 4096),)
@prog("cummax_axis0")
def _(): return (lambda x: lax.cummax(x, axis=0)), (f32(4096, 256),)
@prog("reverse_cumsum")
def _(): return (lambda x: jnp.flip(jnp.cumsum(jnp.flip(x, -1), -1), -1)), (f32(512, 2048),)
@prog("int32_matmul")
def _(): return (lambda a, b: a @ b), (ints(-100, 100, 256, 512), ints(-100, 100, 512, 256))
@prog("triangular_solve")
def _():
    a = np.tril(f32(512, 512)) + 30 * np.eye(512, dtype=np.float32)
    return (lambda a, b: jax.scipy.linalg.solve_triangular(a, b, lower=True)), (a, f32(512, 128))
@prog("qr")
def _(): return (lambda a: jnp.linalg.qr(a)), (f32(512, 256),)
@prog("lu")
def _(): return (lambda a: jax.scipy.linalg.lu_factor(a)), (f32(512, 512),)
@prog("slogdet")
def _(): return (lambda a: jnp.linalg.slogdet(a)), (f32(256, 256) + 20 * np.eye(256, dtype=np.float32),)
@prog("inv_batched")
def _(): return (lambda a: jnp.linalg.inv(a)), (f32(256, 16, 16) + 8 * np.eye(16, dtype=np.float32),)
@prog("svd_small")
def _(): return (lambda a: jnp.linalg.svd(a, compute_uv=False)), (f32(64, 32, 32),)
@prog("kron")
def _(): return (lambda a, b: jnp.kron(a, b)), (f32(64, 64), f32(32, 32))
@prog("vmap_grad_linear")
def _():
    def loss(w, x, y): return jnp.sum((jnp.tanh(x @ w) - y) ** 2)
    def f(w, xs, ys): return jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    return f, (f32(64, 32, scale=0.1), f32(256, 64), f32(256, 32))
@prog("topk_1d")
def _(): return (lambda x: lax.top_k(x, 100)), (f32(1 << 20),)
@prog("quantile")
def _(): return (lambda x: jnp.quantile(x, jnp.array([0.1, 0.5, 0.9]), axis=-1)), (f32(256, 2048),)
@prog("unique_sized")
def _(): return (lambda x: jnp.unique(x, size=4096, fill_value=-1)), (ints(0, 3000, 65536),)
@prog("histogram")
def _(): return (lambda x: jnp.histogram(x, bins=256, range=(-4.0, 4.0))[0]), (f32(1 << 20),)
@prog("interp")
def _(): return (lambda x, xp, fp: jnp.interp(x, xp, fp)), (f32(1 << 18), np.sort(f32(1024)), f32(1024))
@prog("bilinear_warp")
def _():
    def f(img, c): return jax.vmap(lambda im: jax.scipy.ndimage.map_coordinates(im, [c[0], c[1]], order=1))(img)
    return f, (f32(16, 128, 128), (R.random((2, 128, 128)) * 127).astype(np.float32))
@prog("dus_fori")
def _():
    def f(x, rows):
        def body(i, acc): return lax.dynamic_update_slice(acc, jnp.tanh(rows[i:i + 1] * i), (i * 4, 0))
        return lax.fori_loop(0, 64, body, x)
    def g(x, rows):
        def body(i, acc): return lax.dynamic_update_slice(acc, jnp.tanh(lax.dynamic_slice(rows, (i, 0), (1, 512)) * i), (i * 4, 0))
        return lax.fori_loop(0, 64, body, x)
    return g, (f32(256, 512), f32(64, 512))
@prog("power_iteration")
def _():
    def f(a, v):
        def cond(c): return (c[2] < 100) & (c[1] > 1e-6)
        def body(c):
            w = a @ c[0]; w = w / jnp.linalg.norm(w)
            return (w, jnp.linalg.norm(w - c[0]), c[2] + 1)
        return lax.while_loop(cond, body, (v, jnp.float32(1.0), 0))[0]
    a = f32(512, 512); a = (a + a.T) / 2
    return f, (a, f32(512))
@prog("nonzero_sized")
def _(): return (lambda x: jnp.nonzero(x > 1.5, size=8192, fill_value=0)[0]), (f32(1 << 18),)
@prog("nanmean")
def _():
    x = f32(1024, 1024); x[R.random(x.shape) < 0.1] = np.nan
    return (lambda x: jnp.nanmean(x, axis=-1)), (x,)
@prog("clip_global_norm")
def _():
    def f(g):
        n = jnp.sqrt(sum(jnp.sum(x * x) for x in jax.tree_util.tree_leaves(g)))
        return jax.tree_util.tree_map(lambda x: x * jnp.minimum(1.0, 1.0 / n), g)
    return f, ({"a": f32(1024, 1024), "b": f32(1024), "c": f32(512, 256), "d": f32(3, 3, 64, 64)},)
@prog("xent_smooth_grad")
def _():
    def loss(l, y):
        t = jax.nn.one_hot(y, l.shape[-1]) * 0.9 + 0.1 / l.shape[-1]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(l) * t, -1))
    return jax.grad(loss), (f32(128, 32000), ints(0, 32000, 128))
@prog("quantize_int8")
def _():
    def f(x):
        s = jnp.max(jnp.abs(x), axis=-1, keepdims=True) / 127.0
        q = jnp.clip(jnp.round(x / s), -127, 127).astype(jnp.int8)
        return q, s
    return f, (f32(4096, 1024),)
@prog("dequant_matmul")
def _():
    def f(x, q, s): return x @ (q.astype(jnp.float32) * s)
    return f, (f32(256, 1024), ints(-127, 127, 1024, 1024, dt=np.int8), f32(1, 1024, scale=0.01))
@prog("cdist")
def _():
    def f(a, b): return jnp.sqrt(jnp.maximum(jnp.sum(a * a, 1)[:, None] + jnp.sum(b * b, 1)[None] - 2 * a @ b.T, 0))
    return f, (f32(2048, 64), f32(2048, 64))
@prog("knn")
def _():
    def f(a, b):
        d = jnp.sum(a * a, 1)[:, None] + jnp.sum(b * b, 1)[None] - 2 * a @ b.T
        return lax.top_k(-d, 8)[1]
    return f, (f32(1024, 32), f32(8192, 32))
@prog("embedding_grad")
def _():
    def loss(t, i): return jnp.sum(jnp.tanh(t[i]))
    return jax.grad(loss), (f32(30000, 128), ints(0, 30000, 64, 64))
@prog("take_clip")
def _(): return (lambda x, i: jnp.take(x, i, axis=0, mode="clip")), (f32(8192, 256), ints(-100, 8300, 16384))
@prog("rotary")
def _():
    def f(x, pos):
        d = x.shape[-1] // 2
        inv = 1.0 / (10000 ** (jnp.arange(d) / d))
        a = pos[:, None] * inv[None]
        c, s = jnp.cos(a)[None, :, None], jnp.sin(a)[None, :, None]
        x1, x2 = x[..., :d], x[..., d:]
        return jnp.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)
    return f, (f32(8, 512, 16, 64), np.arange(512, dtype=np.float32))
@prog("spmv_segment")
def _():
    def f(vals, rows, cols, x): return jax.ops.segment_sum(vals * x[cols], rows, num_segments=65536)
    return f, (f32(1 << 20), np.sort(ints(0, 65536, 1 << 20)), ints(0, 65536, 1 << 20), f32(65536))
@prog("sort_two_keys")
def _(): return (lambda a, b, c: lax.sort((a, b, c), num_keys=2)), (ints(0, 100, 1 << 18), f32(1 << 18), f32(1 << 18))
@prog("special_fns")
def _(): return (lambda x: jax.scipy.special.gammaln(x) + jax.scipy.special.digamma(x) + jax.scipy.special.erf(x)), (1.0 + np.abs(f32(1 << 20)),)
@prog("gelu_exact_bf16")
def _(): return (lambda x: jax.nn.gelu(x, approximate=False)), (f32(2048, 2048).astype(BF),)
@prog("gelu_exact_f32")
def _(): return (lambda x: jax.nn.gelu(x, approximate=False)), (f32(2048, 2048),)
@prog("erfc_f32")
def _(): return (lambda x: jax.scipy.special.erfc(x)), (f32(1 << 22, scale=3.0),)
@prog("sin_cos")
def _(): return (lambda x: jnp.sin(x) * jnp.cos(2 * x)), (f32(1 << 22, scale=10.0),)
@prog("lgamma_digamma")
def _(): return (lambda x: jax.scipy.special.gammaln(x) + jax.scipy.special.digamma(x)), (1.0 + np.abs(f32(1 << 20)),)
@prog("int_hash")
def _():
    def f(x):
        x = x ^ (x >> 16); x = x * np.uint32(0x45d9f3b); x = x ^ (x >> 16)
        return jnp.sum(lax.population_count(x) & 1)
    return f, (R.integers(0, 2**32 - 1, 1 << 22, dtype=np.uint64).astype(np.uint32),)
@prog("tril_mask_big")
def _(): return (lambda x: jnp.tril(x) @ x), (f32(1024, 1024),)
@prog("mean_int8")
def _(): return (lambda x: jnp.mean(x.astype(jnp.float32), axis=-1)), (ints(-128, 127, 4096, 1024, dt=np.int8),)
@prog("ema_scan")
def _():
    def f(x):
        def step(c, xt): c = 0.9 * c + 0.1 * xt; return c, c
        return lax.scan(step, jnp.zeros(x.shape[1:]), x)[1]
    return f, (f32(1024, 1024),)
@prog("mha_train_bf16")
def _():
    def loss(w, x):
        q = (x @ w[0]).reshape(8, 128, 8, 64); k = (x @ w[1]).reshape(8, 128, 8, 64); v = (x @ w[2]).reshape(8, 128, 8, 64)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) / 8.0
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1).astype(BF), v).reshape(1024, 512)
        return jnp.sum((o @ w[3]).astype(jnp.float32) ** 2)
    return jax.grad(loss), ([f32(512, 512, scale=0.04).astype(BF) for _ in range(4)], f32(1024, 512).astype(BF))
@prog("lstm_cell_bf16")
def _():
    def f(x, h, c, w, u):
        z = (x @ w + h @ u).astype(jnp.float32)
        i, fg, g, o = jnp.split(z, 4, -1)
        c = jax.nn.sigmoid(fg) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        return jax.nn.sigmoid(o) * jnp.tanh(c), c
    return f, (f32(64, 512).astype(BF), f32(64, 512).astype(BF), f32(64, 512), f32(512, 2048, scale=0.04).astype(BF), f32(512, 2048, scale=0.04).astype(BF))
@prog("pad_reflect_conv")
def _():
    def f(x, w):
        x = jnp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), mode="reflect")
        return lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return f, (f32(8, 64, 64, 32), f32(3, 3, 32, 32, scale=0.05))
@prog("roll_concat")
def _(): return (lambda x: jnp.concatenate([jnp.roll(x, 3, 1), jnp.roll(x, -5, 0)], -1) * 2), (f32(2048, 1024),)
@prog("argmin_int")
def _(): return (lambda x: jnp.argmin(x, axis=1)), (ints(-10**6, 10**6, 2048, 2048),)

if __name__ == "__main__":
    U.main(P)
