"""A seventh sweep of ordinary JAX programs outside `axle bench` (2026-11-28, seventh
session): layers scanned over stacked weights (Flax's nn.scan), rematerialized blocks,
blockwise (flash-style) attention, recommendation models (embedding bags, DLRM
interactions, word2vec negative sampling), optimizers (LAMB, Lion, Shampoo-style inverse
roots), audio front ends (framed STFT, mel filter banks, mu-law), random samplers built
on while loops (gamma, Dirichlet, truncated normal), branches inside scans (cond,
switch), batched while loops with different trip counts, antialiased image resizing,
SciPy-style signal convolution, special functions with series (incomplete gamma / beta),
matrix functions (norms, ranks, polynomial fits) and padding modes.

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_7.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy as jsp
from jax import lax

import unseen_programs as U

R = np.random.default_rng(7)
f32 = U.f32
P, prog = U.sweep()
def ints(lo, hi, *s, dt=np.int32): return R.integers(lo, hi, s).astype(dt)
def key(): return jax.random.key_data(jax.random.PRNGKey(7))
def pkey(k): return jax.random.wrap_key_data(k)


def _block(x, p):  # a pre-norm transformer block, params as a dict of arrays
    def ln(v, g): return (v - v.mean(-1, keepdims=True)) * lax.rsqrt(v.var(-1, keepdims=True) + 1e-5) * g
    b, t, d = x.shape
    h = ln(x, p["g1"])
    q, k, v = jnp.split(h @ p["wqkv"], 3, -1)
    q, k, v = (a.reshape(b, t, 4, d // 4).transpose(0, 2, 1, 3) for a in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // 4)
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -1e9)
    a = (jax.nn.softmax(s, -1) @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
    x = x + a @ p["wo"]
    h = ln(x, p["g2"])
    return x + jax.nn.gelu(h @ p["w1"]) @ p["w2"]


def _params(n, d):
    return {"g1": np.ones((n, d), np.float32), "g2": np.ones((n, d), np.float32),
            "wqkv": f32(n, d, 3 * d, scale=d ** -0.5), "wo": f32(n, d, d, scale=d ** -0.5),
            "w1": f32(n, d, 4 * d, scale=d ** -0.5), "w2": f32(n, 4 * d, d, scale=(4 * d) ** -0.5)}


@prog("scan_over_layers")
def _():
    def f(x, p):
        y, _ = lax.scan(lambda h, lp: (_block(h, lp), None), x, p)
        return y
    return f, (f32(4, 64, 128), _params(4, 128))
@prog("scan_layers_remat_grad")
def _():
    def loss(p, x):
        y, _ = lax.scan(lambda h, lp: (jax.checkpoint(_block)(h, lp), None), x, p)
        return jnp.mean(y ** 2)
    return jax.grad(loss), (_params(2, 128), f32(4, 64, 128))
@prog("flash_attention_scan")
def _():
    def f(q, k, v):  # online softmax over key blocks of 128
        kb, vb = k.reshape(8, 128, 64), v.reshape(8, 128, 64)
        def step(c, kv):
            m, l, o = c
            s = q @ kv[0].T / 8.0
            mn = jnp.maximum(m, s.max(-1))
            p = jnp.exp(s - mn[:, None]); a = jnp.exp(m - mn)
            return (mn, l * a + p.sum(-1), o * a[:, None] + p @ kv[1]), None
        (m, l, o), _ = lax.scan(step, (jnp.full(1024, -jnp.inf), jnp.zeros(1024), jnp.zeros((1024, 64))), (kb, vb))
        return o / l[:, None]
    return f, (f32(1024, 64), f32(1024, 64), f32(1024, 64))
@prog("dot_product_attention")
def _():
    return (lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True)), (f32(4, 256, 8, 64), f32(4, 256, 8, 64), f32(4, 256, 8, 64))
@prog("embedding_bag_mean")
def _():
    def f(tab, ids, seg):
        return jax.ops.segment_sum(tab[ids], seg, 2048) / jnp.maximum(jax.ops.segment_sum(jnp.ones_like(seg, jnp.float32), seg, 2048), 1)[:, None]
    return f, (f32(100000, 64), ints(0, 100000, 65536), np.sort(ints(0, 2048, 65536)))
@prog("dlrm_interaction")
def _():
    def f(dense, embs, w):
        z = jnp.concatenate([jax.nn.relu(dense @ w)[:, None], embs], 1)  # B x 27 x 64
        zz = z @ z.transpose(0, 2, 1)
        i, j = np.tril_indices(27, -1)
        return jnp.concatenate([dense @ w, zz[:, i, j]], 1)
    return f, (f32(2048, 13), f32(2048, 26, 64), f32(13, 64))
@prog("word2vec_neg_grad")
def _():
    def loss(win, wout, c, o, neg):
        vc = win[c]
        pos = jax.nn.log_sigmoid(jnp.sum(vc * wout[o], -1))
        ng = jax.nn.log_sigmoid(-jnp.einsum("bd,bkd->bk", vc, wout[neg])).sum(-1)
        return -jnp.mean(pos + ng)
    return jax.grad(loss, argnums=(0, 1)), (f32(50000, 128, scale=0.1), f32(50000, 128, scale=0.1), ints(0, 50000, 4096), ints(0, 50000, 4096), ints(0, 50000, 4096, 5))
@prog("lamb_update")
def _():
    def f(p, g, m, v):
        m = 0.9 * m + 0.1 * g; v = 0.999 * v + 0.001 * g * g
        u = m / (jnp.sqrt(v) + 1e-6) + 0.01 * p
        r = jnp.linalg.norm(p, axis=(1, 2)) / jnp.maximum(jnp.linalg.norm(u, axis=(1, 2)), 1e-9)
        return p - 1e-3 * r[:, None, None] * u, m, v
    return f, (f32(24, 512, 512), f32(24, 512, 512), f32(24, 512, 512), f32(24, 512, 512) ** 2)
@prog("lion_update")
def _():
    def f(p, g, m):
        u = jnp.sign(0.9 * m + 0.1 * g)
        return p * (1 - 1e-4) - 1e-4 * u, 0.99 * m + 0.01 * g
    return f, (f32(1 << 22), f32(1 << 22), f32(1 << 22))
@prog("shampoo_inverse_root")
def _():
    def f(g):
        l = g @ g.T + 1e-3 * jnp.eye(g.shape[0])
        w, v = jnp.linalg.eigh(l)
        return (v * w ** -0.25) @ v.T @ g
    return f, (f32(256, 1024),)
@prog("stft_mel")
def _():
    def f(x, mel):
        fr = jnp.stack([x[:, i * 160:i * 160 + 400] for i in range(98)], 1) * jnp.hanning(400)
        s = jnp.abs(jnp.fft.rfft(fr, 512)) ** 2
        return jnp.log(s @ mel + 1e-6)
    return f, (f32(32, 16000), np.abs(f32(257, 80)))
@prog("mu_law")
def _():
    def f(x):
        y = jnp.sign(x) * jnp.log1p(255 * jnp.abs(x)) / np.log(256.0)
        q = jnp.round((y + 1) / 2 * 255).astype(jnp.int32)
        yy = 2 * q.astype(jnp.float32) / 255 - 1
        return q, jnp.sign(yy) * (jnp.power(256.0, jnp.abs(yy)) - 1) / 255
    return f, (np.tanh(f32(64, 16384)),)
@prog("random_gamma")
def _():
    return (lambda k, a: jax.random.gamma(pkey(k), a)), (key(), np.abs(f32(1 << 16)) + 0.5)
@prog("random_dirichlet")
def _():
    return (lambda k, a: jax.random.dirichlet(pkey(k), a, (4096,))), (key(), np.abs(f32(32)) + 0.5)
@prog("truncated_normal")
def _():
    return (lambda k: jax.random.truncated_normal(pkey(k), -2.0, 2.0, (1 << 20,))), (key(),)
@prog("scan_with_cond")
def _():
    def f(x, w):
        def step(h, xt):
            h = lax.cond(jnp.sum(xt) > 0, lambda a: jnp.tanh(a @ w + xt), lambda a: a * 0.5 + xt, h)
            return h, h.sum()
        return lax.scan(step, jnp.zeros((64, 256)), x)
    return f, (f32(128, 64, 256), f32(256, 256, scale=0.06))
@prog("switch_in_loop")
def _():
    def f(x, ops):
        def body(i, v):
            return lax.switch(ops[i], [jnp.sin, jnp.cos, lambda a: a * a, jnp.tanh], v)
        return lax.fori_loop(0, 32, body, x)
    return f, (f32(1 << 16), ints(0, 4, 32))
@prog("vmap_while_newton")
def _():
    def sqrt_newton(a):
        def cond(c): return jnp.abs(c[0] * c[0] - a) > 1e-4 * a
        def body(c): return ((c[0] + a / c[0]) / 2, c[1] + 1)
        return lax.while_loop(cond, body, (a, 0))
    return jax.vmap(sqrt_newton), (np.abs(f32(1 << 16)) * 100 + 1,)
@prog("resize_lanczos")
def _():
    return (lambda x: jax.image.resize(x, (8, 96, 96, 3), "lanczos3")), (f32(8, 256, 256, 3),)
@prog("resize_bicubic_up")
def _():
    return (lambda x: jax.image.resize(x, (8, 256, 256, 16), "cubic")), (f32(8, 64, 64, 16),)
@prog("scipy_convolve2d")
def _():
    return (lambda a, k: jsp.signal.convolve2d(a, k, mode="same")), (f32(512, 512), f32(9, 9))
@prog("scipy_correlate_1d")
def _():
    return jax.vmap(lambda a, k: jsp.signal.correlate(a, k, mode="valid")), (f32(64, 8192), f32(64, 129))
@prog("gammainc_betainc")
def _():
    return (lambda a, x, b: (jsp.special.gammainc(a, x), jsp.special.betainc(a, b, jax.nn.sigmoid(x)))), (np.abs(f32(1 << 16)) + 0.5, np.abs(f32(1 << 16)) * 2, np.abs(f32(1 << 16)) + 0.5)
@prog("matrix_norms")
def _():
    return (lambda a: (jnp.linalg.norm(a, "fro", axis=(1, 2)), jnp.linalg.norm(a, 1, axis=(1, 2)), jnp.linalg.norm(a, jnp.inf, axis=(1, 2)))), (f32(64, 256, 256),)
@prog("spectral_norm_power")
def _():
    def f(w, u):
        for _ in range(4):
            v = w.T @ u; v = v / jnp.linalg.norm(v)
            u = w @ v; u = u / jnp.linalg.norm(u)
        return w / (u @ w @ v)
    return f, (f32(1024, 1024), f32(1024))
@prog("polyfit_batched")
def _():
    x = np.linspace(-1, 1, 256).astype(np.float32)
    return jax.vmap(lambda y: jnp.polyfit(x, y, 5)), (f32(512, 256),)
@prog("pad_wrap_symmetric")
def _():
    return (lambda x: (jnp.pad(x, ((0, 0), (8, 8), (8, 8)), mode="wrap"), jnp.pad(x, ((0, 0), (5, 5), (5, 5)), mode="symmetric"))), (f32(32, 256, 256),)
@prog("rnnt_lattice")
def _():
    def f(lp_blank, lp_label):  # alpha over (T, U) by anti-diagonal-free row scan
        T, U = lp_blank.shape[1], lp_label.shape[2]
        def row(prev, t):
            a0 = prev[:, 0] + lp_blank[:, t - 1, 0]
            def col(c, u):
                v = jnp.logaddexp(prev[:, u] + lp_blank[:, t - 1, u], c + lp_label[:, t, u - 1])
                return v, v
            _, rest = lax.scan(col, a0, jnp.arange(1, U + 1))
            a = jnp.concatenate([a0[:, None], rest.T], 1)
            return a, None
        a0 = jnp.concatenate([jnp.zeros((lp_blank.shape[0], 1)), jnp.cumsum(lp_label[:, 0], 1)], 1)
        a, _ = lax.scan(row, a0, jnp.arange(1, T))
        return a[:, -1]
    return f, (f32(16, 64, 33, scale=0.1) - 2, f32(16, 64, 32, scale=0.1) - 2)
@prog("sinusoidal_posenc")
def _():
    def f(pos):
        i = jnp.arange(0, 512, 2) / 512.0
        a = pos[..., None] / (10000 ** i)
        return jnp.concatenate([jnp.sin(a), jnp.cos(a)], -1)
    return f, (ints(0, 4096, 16, 512).astype(np.float32),)
@prog("resnet_block_bf16_grad")
def _():
    def loss(w1, w2, x):
        dn = ("NHWC", "HWIO", "NHWC")
        c = lambda a, w: lax.conv_general_dilated(a.astype(jnp.bfloat16), w.astype(jnp.bfloat16), (1, 1), "SAME", dimension_numbers=dn, preferred_element_type=jnp.float32)
        h = jax.nn.relu(c(x, w1))
        return jnp.mean(jax.nn.relu(c(h, w2) + x) ** 2)
    return jax.grad(loss, argnums=(0, 1)), (f32(3, 3, 64, 64, scale=0.05), f32(3, 3, 64, 64, scale=0.05), f32(8, 32, 32, 64))
@prog("vit_block_train")
def _():
    def loss(p, x): return jnp.mean(_block(x, p) ** 2)
    p = {k: v[0] for k, v in _params(1, 192).items()}
    return jax.grad(loss), (p, f32(8, 197, 192))
@prog("avg_pool_exclude_pad")
def _():
    def f(x):
        s = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        n = lax.reduce_window(jnp.ones_like(x[:1, :, :, :1]), 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        return s / n
    return f, (f32(16, 112, 112, 64),)
@prog("instance_norm_nchw_grad")
def _():
    def loss(x, g):
        m = x.mean((2, 3), keepdims=True); v = x.var((2, 3), keepdims=True)
        return jnp.sum(((x - m) * lax.rsqrt(v + 1e-5) * g[None, :, None, None]) ** 3)
    return jax.grad(loss, argnums=(0, 1)), (f32(16, 64, 64, 64), f32(64))
@prog("argwhere_sized")
def _():
    return (lambda x: jnp.argwhere(x > 1.5, size=8192, fill_value=-1)), (f32(512, 512),)
@prog("cross_outer")
def _():
    return (lambda a, b, u, v: (jnp.cross(a, b), jnp.outer(u, v))), (f32(1 << 18, 3), f32(1 << 18, 3), f32(2048), f32(2048))
@prog("xlogy_entropy")
def _():
    return (lambda p, q: (jnp.sum(jsp.special.xlogy(p, p / q), -1), jsp.special.entr(p).sum(-1))), (jax.nn.softmax(f32(4096, 1000)), jax.nn.softmax(f32(4096, 1000)))
@prog("int8_attention_scores")
def _():
    def f(q, k, sq, sk):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=jnp.int32)
        return jax.nn.softmax(s.astype(jnp.float32) * sq * sk, -1)
    return f, (ints(-127, 128, 4, 8, 256, 64, dt=np.int8), ints(-127, 128, 4, 8, 256, 64, dt=np.int8), np.float32(0.01), np.float32(0.01))
@prog("ddim_sampling_loop")
def _():
    def f(x, w1, w2):
        def step(i, x):
            t = 1.0 - i / 20.0
            eps = jnp.tanh(jnp.concatenate([x, jnp.full((x.shape[0], 1), t)], 1) @ w1) @ w2
            a, an = jnp.cos(t * 1.5), jnp.cos((t - 0.05) * 1.5)
            x0 = (x - jnp.sqrt(1 - a * a) * eps) / a
            return an * x0 + jnp.sqrt(1 - an * an) * eps
        return lax.fori_loop(0, 20, step, x)
    return f, (f32(512, 256), f32(257, 1024, scale=0.06), f32(1024, 256, scale=0.03))
@prog("logistic_newton")
def _():
    def f(X, y):
        def step(w, _):
            p = jax.nn.sigmoid(X @ w)
            H = (X * (p * (1 - p))[:, None]).T @ X + 1e-3 * jnp.eye(X.shape[1])
            return w - jnp.linalg.solve(H, X.T @ (p - y)), None
        w, _ = lax.scan(step, jnp.zeros(X.shape[1]), None, length=8)
        return w
    return f, (f32(8192, 64), (R.random(8192) > 0.5).astype(np.float32))
@prog("cumulative_trapezoid")
def _():
    return (lambda y: jnp.cumsum((y[:, 1:] + y[:, :-1]) * 0.5, 1)), (f32(256, 8192),)
@prog("bincount_weighted")
def _():
    return (lambda i, w: jnp.bincount(i, w, length=65536)), (ints(0, 65536, 1 << 20), f32(1 << 20))

if __name__ == "__main__":
    U.main(P)
