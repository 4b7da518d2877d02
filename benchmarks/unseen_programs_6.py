"""A sixth sweep of ordinary JAX programs outside `axle bench` (2026-11-28, sixth
session): image operations (colour spaces, median filters, morphology, adaptive pooling,
grid sampling, unfold), statistics (Gaussian mixtures, kernel density, ranks, ECDFs,
covariance / PCA, bootstrap), reinforcement learning (GAE, discounted returns, PPO), graph
algorithms (PageRank, Floyd-Warshall, triangle counts), simulations (wave equation, Ising
model, Monte Carlo, Lennard-Jones), Mamba-style causal convolutions, relative position
buckets, bit operations, rounding and fake quantization.

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_6.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

import unseen_programs as U

R = np.random.default_rng(6)
f32 = U.f32
P, prog = U.sweep()
def ints(lo, hi, *s, dt=np.int32): return R.integers(lo, hi, s).astype(dt)
def key(): return jax.random.key_data(jax.random.PRNGKey(1))

@prog("rgb_to_hsv")
def _():
    def f(img):
        r, g, b = img[..., 0], img[..., 1], img[..., 2]
        mx, mn = jnp.max(img, -1), jnp.min(img, -1)
        d = mx - mn
        h = jnp.where(mx == r, (g - b) / (d + 1e-8) % 6, jnp.where(mx == g, (b - r) / (d + 1e-8) + 2, (r - g) / (d + 1e-8) + 4))
        return jnp.stack([h / 6, jnp.where(mx > 0, d / (mx + 1e-8), 0), mx], -1)
    return f, (R.random((16, 256, 256, 3)).astype(np.float32),)
@prog("median_filter_3x3")
def _():
    def f(x):
        p = jnp.pad(x, ((0, 0), (1, 1), (1, 1)), mode="edge")
        n, h, w = x.shape
        st = jnp.stack([p[:, i:i + h, j:j + w] for i in range(3) for j in range(3)], -1)
        return jnp.median(st, -1)
    return f, (f32(8, 256, 256),)
@prog("morph_dilate_erode")
def _():
    def f(x):
        d = lax.reduce_window(x, -jnp.inf, lax.max, (1, 5, 5, 1), (1, 1, 1, 1), "SAME")
        return lax.reduce_window(d, jnp.inf, lax.min, (1, 5, 5, 1), (1, 1, 1, 1), "SAME")
    return f, (f32(8, 128, 128, 16),)
@prog("adaptive_avg_pool")
def _():
    def f(x):  # 56 -> 7 per side, NCHW
        n, c, h, w = x.shape
        return x.reshape(n, c, 7, h // 7, 7, w // 7).mean((3, 5))
    return f, (f32(16, 256, 56, 56),)
@prog("grid_sample_bilinear")
def _():
    def f(img, grid):  # img N x H x W x C, grid N x h x w x 2 in [-1, 1]
        n, H, W, C = img.shape
        x = (grid[..., 0] + 1) * (W - 1) / 2; y = (grid[..., 1] + 1) * (H - 1) / 2
        x0 = jnp.clip(jnp.floor(x).astype(jnp.int32), 0, W - 2); y0 = jnp.clip(jnp.floor(y).astype(jnp.int32), 0, H - 2)
        wx, wy = (x - x0)[..., None], (y - y0)[..., None]
        bi = jnp.arange(n)[:, None, None]
        g = lambda yy, xx: img[bi, yy, xx]
        return (g(y0, x0) * (1 - wx) * (1 - wy) + g(y0, x0 + 1) * wx * (1 - wy)
                + g(y0 + 1, x0) * (1 - wx) * wy + g(y0 + 1, x0 + 1) * wx * wy)
    return f, (f32(8, 128, 128, 16), R.uniform(-1, 1, (8, 96, 96, 2)).astype(np.float32))
@prog("unfold_patches")
def _():
    def f(x):  # im2col as torch.nn.Unfold: N x C x H x W -> N x (C k k) x L
        p = lax.conv_general_dilated_patches(x, (3, 3), (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return p.reshape(p.shape[0], p.shape[1], -1)
    return f, (f32(8, 32, 64, 64),)
@prog("gmm_loglik")
def _():
    def f(x, mu, logs, logw):
        z = (x[:, None, :] - mu[None]) * jnp.exp(-logs)[None]
        lp = -0.5 * jnp.sum(z * z, -1) - jnp.sum(logs, -1)[None] + jax.nn.log_softmax(logw)[None]
        return jnp.sum(jax.nn.logsumexp(lp, 1)), jax.nn.softmax(lp, 1)
    return f, (f32(32768, 8), f32(16, 8), f32(16, 8, scale=0.1), f32(16))
@prog("kde")
def _():
    def f(x, q): return jnp.mean(jnp.exp(-0.5 * jnp.sum((q[:, None] - x[None]) ** 2, -1) / 0.25), 1)
    return f, (f32(4096, 2), f32(1024, 2))
@prog("rank_transform")
def _():
    return (lambda x: jnp.argsort(jnp.argsort(x, 0), 0).astype(jnp.float32) / x.shape[0]), (f32(16384, 16),)
@prog("spearman_corr")
def _():
    def f(x):
        r = jnp.argsort(jnp.argsort(x, 0), 0).astype(jnp.float32)
        r = (r - r.mean(0)) / r.std(0)
        return r.T @ r / x.shape[0]
    return f, (f32(8192, 64),)
@prog("ecdf_eval")
def _():
    def f(s, q):
        s = jnp.sort(s)
        return jnp.searchsorted(s, q, side="right") / s.shape[0]
    return f, (f32(1 << 18), f32(1 << 16))
@prog("covariance_pca")
def _():
    def f(x):
        xc = x - x.mean(0)
        c = xc.T @ xc / (x.shape[0] - 1)
        w, v = jnp.linalg.eigh(c)
        return xc @ v[:, -8:], w
    return f, (f32(8192, 64),)
@prog("bootstrap_mean")
def _():
    def f(x, k):
        idx = jax.random.randint(jax.random.wrap_key_data(k), (512, x.shape[0]), 0, x.shape[0])
        return jnp.mean(x[idx], 1)
    return f, (f32(4096), key())
@prog("gae_reverse_scan")
def _():
    def f(r, v, done):
        def step(a, t):
            rt, vt, vn, d = t
            delta = rt + 0.99 * vn * (1 - d) - vt
            a = delta + 0.99 * 0.95 * (1 - d) * a
            return a, a
        vn = jnp.concatenate([v[1:], v[-1:]], 0)
        _, adv = lax.scan(step, jnp.zeros(r.shape[1]), (r, v, vn, done), reverse=True)
        return adv
    return f, (f32(512, 64), f32(512, 64), (R.random((512, 64)) < 0.01).astype(np.float32))
@prog("discounted_returns")
def _():
    def f(r):
        return lax.associative_scan(lambda a, b: (a[0] * b[0], a[1] * b[0] + b[1]),
                                    (jnp.full_like(r, 0.99), r), reverse=True, axis=1)[1]
    return f, (f32(256, 1024),)
@prog("ppo_loss_grad")
def _():
    def loss(logits, old_lp, act, adv):
        lp = jnp.take_along_axis(jax.nn.log_softmax(logits), act[:, None], 1)[:, 0]
        ratio = jnp.exp(lp - old_lp)
        clip = jnp.clip(ratio, 0.8, 1.2)
        ent = -jnp.sum(jax.nn.softmax(logits) * jax.nn.log_softmax(logits), 1)
        return -jnp.mean(jnp.minimum(ratio * adv, clip * adv)) - 0.01 * jnp.mean(ent)
    return jax.grad(loss), (f32(8192, 18), f32(8192, scale=0.1) - 3, ints(0, 18, 8192), f32(8192))
@prog("pagerank")
def _():
    def f(src, dst, n_out):
        n = n_out.shape[0]
        def body(_, r):
            contrib = r[src] / n_out[src]
            return 0.15 / n + 0.85 * jax.ops.segment_sum(contrib, dst, num_segments=n)
        return lax.fori_loop(0, 30, body, jnp.full(n, 1.0 / n))
    src, dst = ints(0, 8192, 131072), ints(0, 8192, 131072)
    return f, (src, dst, np.maximum(np.bincount(src, minlength=8192), 1).astype(np.float32))
@prog("floyd_warshall")
def _():
    def f(d):
        def body(k, d): return jnp.minimum(d, d[:, k][:, None] + d[k, :][None, :])
        return lax.fori_loop(0, d.shape[0], body, d)
    return f, (np.abs(f32(256, 256)) * 10,)
@prog("triangle_count")
def _():
    def f(a): return jnp.sum((a @ a) * a) / 6
    a = (R.random((1024, 1024)) < 0.02).astype(np.float32); a = np.triu(a, 1); a = a + a.T
    return f, (a,)
@prog("wave_equation")
def _():
    def f(u0):
        def body(_, s):
            u, up = s
            lap = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u
            return 2 * u - up + 0.1 * lap, u
        return lax.fori_loop(0, 100, body, (u0, u0))[0]
    return f, (f32(256, 256),)
@prog("ising_checkerboard")
def _():
    def f(s, k):
        k = jax.random.wrap_key_data(k)
        mask = (jnp.arange(s.shape[0])[:, None] + jnp.arange(s.shape[1])[None]) % 2
        def body(i, st):
            s, k = st
            k, sub = jax.random.split(k)
            nb = jnp.roll(s, 1, 0) + jnp.roll(s, -1, 0) + jnp.roll(s, 1, 1) + jnp.roll(s, -1, 1)
            flip = jax.random.uniform(sub, s.shape) < jnp.exp(-2 * 0.4 * s * nb)
            return jnp.where((mask == i % 2) & flip, -s, s), k
        return lax.fori_loop(0, 20, body, (s, k))[0]
    return f, (np.sign(f32(256, 256)), key())
@prog("monte_carlo_pi")
def _():
    def f(k):
        xy = jax.random.uniform(jax.random.wrap_key_data(k), (1 << 22, 2))
        return 4 * jnp.mean(jnp.sum(xy * xy, 1) < 1)
    return f, (key(),)
@prog("lennard_jones")
def _():
    def f(x):
        d = x[:, None] - x[None]
        r2 = jnp.sum(d * d, -1) + jnp.eye(x.shape[0])
        inv6 = (1.0 / r2) ** 3
        e = jnp.where(jnp.eye(x.shape[0]) > 0, 0.0, 4 * (inv6 * inv6 - inv6))
        return jnp.sum(e) / 2, jax.grad(lambda x: jnp.sum(jnp.where(jnp.eye(x.shape[0]) > 0, 0.0, 4 * ((1 / (jnp.sum((x[:, None] - x[None]) ** 2, -1) + jnp.eye(x.shape[0]))) ** 6 - (1 / (jnp.sum((x[:, None] - x[None]) ** 2, -1) + jnp.eye(x.shape[0]))) ** 3))))(x)
    return f, (f32(512, 3) * 5,)
@prog("mamba_causal_conv")
def _():
    def f(x, w, b):  # x: B x L x D, depthwise causal conv of width 4, then silu
        y = lax.conv_general_dilated(x, w, (1,), [(3, 0)], dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=x.shape[-1])
        return jax.nn.silu(y + b)
    return f, (f32(4, 2048, 512), f32(4, 1, 512, scale=0.3), f32(512))
@prog("t5_relative_buckets")
def _():
    def f(q, k):
        rel = jnp.arange(k)[None, :] - jnp.arange(q)[:, None]
        n = -jnp.minimum(rel, 0)
        exact = n < 16
        large = 16 + (jnp.log(n.astype(jnp.float32) / 16 + 1e-6) / np.log(128 / 16) * 16).astype(jnp.int32)
        return jnp.where(exact, n, jnp.minimum(large, 31))
    return (lambda x: f(x.shape[0], x.shape[1]) + x), (ints(0, 2, 1024, 1024),)
@prog("popcount_hamming")
def _():
    def f(a, b):  # pairwise Hamming distances of 256-bit codes
        x = lax.population_count(a[:, None, :] ^ b[None, :, :])
        return jnp.sum(x, -1)
    return f, (ints(0, 2 ** 31 - 1, 1024, 8, dt=np.uint32), ints(0, 2 ** 31 - 1, 512, 8, dt=np.uint32))
@prog("round_modes")
def _():
    def f(x):
        return (jnp.round(x) + jnp.floor(x) * 2 + jnp.ceil(x) * 3 + jnp.trunc(x) * 4
                + lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO) + x.astype(jnp.int32).astype(jnp.float32))
    return f, (f32(1 << 22) * 100,)
@prog("fake_quant_grad")
def _():
    def fq(x, s):
        q = jnp.clip(jnp.round(x / s), -128, 127) * s
        return x + lax.stop_gradient(q - x)
    def loss(w, x): return jnp.sum(jnp.tanh(fq(x, 0.05) @ fq(w, 0.01)) ** 2)
    return jax.grad(loss), (f32(512, 512, scale=0.1), f32(256, 512))
@prog("per_channel_int8_matmul")
def _():
    def f(xq, wq, sx, sw):
        acc = lax.dot_general(xq, wq, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
        return acc.astype(jnp.float32) * sx[:, None] * sw[None, :]
    return f, (ints(-128, 128, 256, 1024, dt=np.int8), ints(-128, 128, 1024, 1024, dt=np.int8), np.abs(f32(256)), np.abs(f32(1024)))
@prog("nan_to_num_isclose")
def _():
    def f(a, b):
        a = jnp.where(a > 3, jnp.inf, jnp.where(a < -3, jnp.nan, a))
        c = jnp.nan_to_num(a, posinf=1e4)
        return jnp.isclose(c, b, atol=1e-3), c
    return f, (f32(4096, 1024), f32(4096, 1024))
@prog("einsum_four")
def _():
    return (lambda a, b, c, d: jnp.einsum("ij,jk,kl,lm->im", a, b, c, d)), (f32(512, 64), f32(64, 512), f32(512, 64), f32(64, 512))
@prog("tensordot_axes")
def _():
    return (lambda a, b: jnp.tensordot(a, b, axes=([1, 3], [2, 0]))), (f32(32, 16, 64, 8), f32(8, 48, 16, 32))
@prog("batched_trace_diag")
def _():
    return (lambda a: (jnp.trace(a, axis1=1, axis2=2), jnp.diagonal(a, axis1=1, axis2=2) * 2)), (f32(4096, 64, 64),)
@prog("tril_indices_gather")
def _():
    def f(a):
        i, j = jnp.tril_indices(a.shape[1])
        return a[:, i, j]
    return f, (f32(256, 64, 64),)
@prog("pad_edge_reflect")
def _():
    return (lambda x: jnp.pad(x, ((0, 0), (8, 8), (8, 8), (0, 0)), mode="edge")
            + jnp.pad(x, ((0, 0), (8, 8), (8, 8), (0, 0)), mode="reflect")), (f32(16, 128, 128, 8),)
@prog("digitize_histogram2d")
def _():
    def f(x, y):
        bx = jnp.digitize(x, jnp.linspace(-3, 3, 63)); by = jnp.digitize(y, jnp.linspace(-3, 3, 63))
        return jnp.zeros((64, 64)).at[bx, by].add(1.0)
    return f, (f32(1 << 18), f32(1 << 18))
@prog("lexsort_keys")
def _():
    return (lambda a, b: jnp.lexsort((a, b))), (ints(0, 100, 1 << 18), f32(1 << 18))
@prog("topk_axis0")
def _():
    return (lambda x: lax.top_k(x.T, 8)[0].T), (f32(4096, 256),)
@prog("int_divmod")
def _():
    return (lambda a, b: (a // b, a % b, jnp.right_shift(a, 3), a * b)), (ints(-10 ** 6, 10 ** 6, 1 << 20), ints(1, 1000, 1 << 20))
@prog("mixture_density_loss")
def _():
    def loss(logits, mu, ls, y):
        lp = jax.nn.log_softmax(logits) - ls - 0.5 * ((y[:, None] - mu) * jnp.exp(-ls)) ** 2
        return -jnp.mean(jax.nn.logsumexp(lp, 1))
    return jax.value_and_grad(loss, argnums=(0, 1, 2)), (f32(16384, 32), f32(16384, 32), f32(16384, 32, scale=0.1), f32(16384))

if __name__ == "__main__":
    U.main(P)
