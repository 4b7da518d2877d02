"""A fifth sweep of ordinary JAX programs outside `axle bench` (2026-11-28, sixth
session): classical ML and scientific programs (k-means, Gaussian processes, ODE and
N-body integrators, stencils, conjugate gradients, Viterbi and CTC-style scans),
higher-order autodiff (Hessian-vector products, MAML), losses and optimizers of vision
and language models (contrastive, focal, dice, ignore-index cross-entropy, Adafactor,
loss scaling), image filters, FFT convolutions, graph message passing, nucleus sampling,
selective (Mamba-style) scans, ViT / U-Net / ConvLSTM pieces, VAE steps, a KV-cache
decode loop, int4 dequantization and small batched linear algebra.

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_5.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax
import ml_dtypes

import unseen_programs as U

R = np.random.default_rng(5)
f32 = U.f32
BF = ml_dtypes.bfloat16
P, prog = U.sweep()
def ints(lo, hi, *s, dt=np.int32): return R.integers(lo, hi, s).astype(dt)
def conv(x, w, stride=(1, 1), pad="SAME", groups=1):
    return lax.conv_general_dilated(x, w, stride, pad, dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=groups)
def mlp(ps, x):
    for i, (w, b) in enumerate(ps):
        x = x @ w + b
        if i < len(ps) - 1: x = jax.nn.relu(x)
    return x
def params(*sizes, scale=0.05):
    return [(f32(a, b, scale=scale), f32(b, scale=scale)) for a, b in zip(sizes, sizes[1:])]

@prog("kmeans_step")
def _():
    def f(x, c):
        d = jnp.sum(x * x, 1)[:, None] - 2 * x @ c.T + jnp.sum(c * c, 1)[None, :]
        a = jnp.argmin(d, 1)
        s = jax.ops.segment_sum(x, a, num_segments=c.shape[0])
        n = jax.ops.segment_sum(jnp.ones_like(a, jnp.float32), a, num_segments=c.shape[0])
        return s / jnp.maximum(n, 1.0)[:, None], jnp.sum(jnp.min(d, 1))
    return f, (f32(16384, 32), f32(64, 32))
@prog("ctc_style_scan")
def _():
    def f(lp):  # log-space forward recursion over time: T x B x S
        def step(alpha, l):
            shifted = jnp.concatenate([jnp.full_like(alpha[:, :1], -1e30), alpha[:, :-1]], 1)
            return jnp.logaddexp(alpha, shifted) + l, None
        a, _ = lax.scan(step, lp[0], lp[1:])
        return jax.nn.logsumexp(a, 1)
    return f, (jax.nn.log_softmax(f32(128, 16, 64), -1),)
@prog("viterbi")
def _():
    def f(em, tr):  # T x B x N emissions, N x N transitions
        def step(s, e):
            c = s[:, :, None] + tr[None]
            return jnp.max(c, 1) + e, jnp.argmax(c, 1)
        s, bp = lax.scan(step, em[0], em[1:])
        return s, bp
    return f, (f32(256, 8, 64), f32(64, 64))
@prog("nerf_mlp")
def _():
    def f(ps, p):
        fr = 2.0 ** jnp.arange(10)
        e = (p[:, None, :] * fr[None, :, None]).reshape(p.shape[0], -1)
        h = jnp.concatenate([p, jnp.sin(e), jnp.cos(e)], 1)
        return mlp(ps, h)
    return f, (params(63, 256, 256, 4), f32(8192, 3))
@prog("gp_posterior")
def _():
    def f(x, y, xs):
        def k(a, b): return jnp.exp(-0.5 * jnp.sum((a[:, None] - b[None]) ** 2, -1))
        K = k(x, x) + 0.1 * jnp.eye(x.shape[0])
        L = jnp.linalg.cholesky(K)
        al = jax.scipy.linalg.cho_solve((L, True), y)
        ks = k(xs, x)
        v = jax.scipy.linalg.solve_triangular(L, ks.T, lower=True)
        return ks @ al, 1.0 - jnp.sum(v * v, 0)
    return f, (f32(512, 4), f32(512), f32(256, 4))
@prog("rk4_ode")
def _():
    def f(ps, y0):
        def fld(y): return jnp.tanh(mlp(ps, y))
        def step(_, y):
            h = 0.01
            k1 = fld(y); k2 = fld(y + h / 2 * k1); k3 = fld(y + h / 2 * k2); k4 = fld(y + h * k3)
            return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return lax.fori_loop(0, 50, step, y0)
    return f, (params(32, 64, 32, scale=0.2), f32(256, 32))
@prog("nbody")
def _():
    def f(x, v):
        def step(_, s):
            x, v = s
            d = x[None, :, :] - x[:, None, :]
            r = jnp.sum(d * d, -1) + 0.01
            a = jnp.sum(d * (r ** -1.5)[..., None], 1)
            v = v + 0.001 * a
            return x + 0.001 * v, v
        return lax.fori_loop(0, 10, step, (x, v))
    return f, (f32(1024, 3), f32(1024, 3))
@prog("jacobi_stencil")
def _():
    def f(u0):
        def body(_, u):
            p = jnp.pad(u, 1)
            return 0.25 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])
        return lax.fori_loop(0, 50, body, u0)
    return f, (f32(512, 512),)
@prog("conjugate_gradient")
def _():
    def f(A, b):
        A = A @ A.T + A.shape[0] * jnp.eye(A.shape[0])
        def cond(s): return (s[4] < 50) & (jnp.sum(s[1] * s[1]) > 1e-10)
        def body(s):
            x, r, p, rs, i = s
            Ap = A @ p
            a = rs / jnp.dot(p, Ap)
            x = x + a * p; r = r - a * Ap
            rn = jnp.dot(r, r)
            return x, r, r + rn / rs * p, rn, i + 1
        s = lax.while_loop(cond, body, (jnp.zeros_like(b), b, b, jnp.dot(b, b), 0))
        return s[0]
    return f, (f32(512, 512, scale=0.05), f32(512))
@prog("hvp_mlp")
def _():
    def loss(ps, x): return jnp.mean(jnp.tanh(mlp(ps, x)) ** 2)
    def f(ps, x, v):
        return jax.jvp(lambda q: jax.grad(loss)(q, x), (ps,), (v,))[1]
    ps = params(128, 256, 256, 10)
    return f, (ps, f32(256, 128), params(128, 256, 256, 10))
@prog("maml_inner")
def _():
    def loss(ps, x, y): return jnp.mean((mlp(ps, x) - y) ** 2)
    def outer(ps, x, y, xq, yq):
        g = jax.grad(loss)(ps, x, y)
        fast = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, ps, g)
        return loss(fast, xq, yq)
    return jax.grad(outer), (params(64, 128, 128, 1), f32(128, 64), f32(128, 1), f32(128, 64), f32(128, 1))
@prog("clip_contrastive")
def _():
    def loss(a, b):
        a = a / jnp.linalg.norm(a, axis=1, keepdims=True)
        b = b / jnp.linalg.norm(b, axis=1, keepdims=True)
        l = a @ b.T * 14.3
        i = jnp.arange(a.shape[0])
        return (jnp.mean(-jax.nn.log_softmax(l, 1)[i, i]) + jnp.mean(-jax.nn.log_softmax(l, 0)[i, i])) / 2
    return jax.value_and_grad(loss, argnums=(0, 1)), (f32(1024, 512), f32(1024, 512))
@prog("focal_loss_grad")
def _():
    def loss(z, t):
        p = jax.nn.sigmoid(z)
        pt = jnp.where(t > 0, p, 1 - p)
        return jnp.sum(-0.25 * (1 - pt) ** 2 * jnp.log(jnp.clip(pt, 1e-7, 1.0)))
    return jax.grad(loss), (f32(16384, 80), (R.random((16384, 80)) > 0.98).astype(np.float32))
@prog("adafactor_update")
def _():
    def f(p, g, vr, vc):
        g2 = g * g + 1e-30
        vr = 0.999 * vr + 0.001 * jnp.mean(g2, 1)
        vc = 0.999 * vc + 0.001 * jnp.mean(g2, 0)
        v = vr[:, None] * vc[None, :] / jnp.mean(vr)
        u = g * lax.rsqrt(v)
        u = u / jnp.maximum(1.0, jnp.sqrt(jnp.mean(u * u)))
        return p - 0.01 * u, vr, vc
    return f, (f32(2048, 2048), f32(2048, 2048), np.abs(f32(2048)), np.abs(f32(2048)))
@prog("loss_scaling_bf16")
def _():
    def loss(ps, x): return jnp.mean(mlp(ps, x.astype(BF)).astype(jnp.float32) ** 2)
    def f(ps, x, scale):
        g = jax.grad(lambda q: loss(q, x) * scale)(ps)
        leaves = jax.tree_util.tree_leaves(g)
        ok = jnp.all(jnp.array([jnp.all(jnp.isfinite(l)) for l in leaves]))
        new = jax.tree_util.tree_map(lambda p, g: jnp.where(ok, p - 0.01 * (g / scale).astype(p.dtype), p), ps, g)
        return new, jnp.where(ok, scale * 2, scale / 2)
    ps = [(w.astype(BF), b.astype(BF)) for w, b in params(512, 1024, 512)]
    return f, (ps, f32(256, 512), np.float32(1024.0))
@prog("int4_dequant_matmul")
def _():
    def f(x, q, s):
        lo = (q & 0xF).astype(jnp.int8) - 8
        hi = (q >> 4).astype(jnp.int8) - 8
        w = jnp.stack([lo, hi], 1).reshape(-1, q.shape[1]).astype(jnp.float32) * s[None, :]
        return x @ w
    return f, (f32(64, 2048), ints(0, 256, 1024, 2048, dt=np.uint8), np.abs(f32(2048, scale=0.01)))
@prog("xent_ignore_index")
def _():
    def loss(l, y):
        ok = y != -100
        lp = jax.nn.log_softmax(l)
        nll = -jnp.take_along_axis(lp, jnp.where(ok, y, 0)[:, None], 1)[:, 0]
        return jnp.sum(jnp.where(ok, nll, 0)) / jnp.maximum(jnp.sum(ok), 1)
    y = ints(0, 8192, 1024); y[R.random(1024) < 0.2] = -100
    return jax.value_and_grad(loss), (f32(1024, 8192), y)
@prog("dice_loss_grad")
def _():
    def loss(z, t):
        p = jax.nn.sigmoid(z)
        i = jnp.sum(p * t, (1, 2)); u = jnp.sum(p, (1, 2)) + jnp.sum(t, (1, 2))
        return jnp.mean(1 - (2 * i + 1) / (u + 1))
    return jax.grad(loss), (f32(16, 256, 256), (R.random((16, 256, 256)) > 0.7).astype(np.float32))
@prog("gaussian_blur_ssim")
def _():
    g = np.exp(-0.5 * ((np.arange(11) - 5) / 1.5) ** 2); g = (g / g.sum()).astype(np.float32)
    wk = jnp.asarray(np.tile((g[:, None] * g[None, :])[:, :, None, None], (1, 1, 1, 3)))
    def blur(x): return conv(x, wk, pad="VALID", groups=3)
    def f(a, b):
        ma, mb = blur(a), blur(b)
        va, vb, cab = blur(a * a) - ma ** 2, blur(b * b) - mb ** 2, blur(a * b) - ma * mb
        s = ((2 * ma * mb + 1e-4) * (2 * cab + 9e-4)) / ((ma ** 2 + mb ** 2 + 1e-4) * (va + vb + 9e-4))
        return jnp.mean(s)
    return f, (np.abs(f32(8, 128, 128, 3)), np.abs(f32(8, 128, 128, 3)))
@prog("sobel_edges")
def _():
    sx = np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]], np.float32)
    w = jnp.asarray(np.stack([sx, sx.T], -1)[:, :, None, :])
    def f(x):
        g = conv(x, w)
        return jnp.sqrt(jnp.sum(g * g, -1) + 1e-6)
    return f, (f32(16, 256, 256, 1),)
@prog("fft_convolve")
def _():
    def f(x, k):
        n = x.shape[-1] + k.shape[-1]
        return jnp.fft.irfft(jnp.fft.rfft(x, n) * jnp.fft.rfft(k, n), n)[..., :x.shape[-1]]
    return f, (f32(64, 8192), f32(64, 8192))
@prog("random_crop_flip")
def _():
    def f(img, oy, ox, fl):
        def one(im, y, x, fl):
            c = lax.dynamic_slice(im, (y, x, 0), (32, 32, 3))
            return jnp.where(fl, c[:, ::-1], c)
        return jax.vmap(one)(img, oy, ox, fl)
    return f, (f32(256, 40, 40, 3), ints(0, 9, 256), ints(0, 9, 256), R.random(256) > 0.5)
@prog("gnn_message_passing")
def _():
    def f(h, src, dst, w1, w2):
        m = jax.nn.relu(jnp.concatenate([h[src], h[dst]], 1) @ w1)
        agg = jax.ops.segment_sum(m, dst, num_segments=h.shape[0])
        return jax.nn.relu(jnp.concatenate([h, agg], 1) @ w2)
    return f, (f32(4096, 64), ints(0, 4096, 32768), ints(0, 4096, 32768), f32(128, 64, scale=0.1), f32(128, 64, scale=0.1))
@prog("top_p_sampling")
def _():
    def f(logits, key):
        idx = jnp.argsort(-logits, -1)
        s = jnp.take_along_axis(logits, idx, -1)
        p = jax.nn.softmax(s, -1)
        keep = jnp.cumsum(p, -1) - p < 0.9
        s = jnp.where(keep, s, -jnp.inf)
        choice = jax.random.categorical(key, s, -1)
        return jnp.take_along_axis(idx, choice[:, None], -1)[:, 0]
    return f, (f32(32, 32000), jax.random.key_data(jax.random.PRNGKey(0)))
@prog("selective_scan")
def _():
    def f(dt, A, B, C, x):  # L x D, D x N, L x N, L x N, L x D
        dA = jnp.exp(dt[:, :, None] * A[None])          # L x D x N
        dBx = dt[:, :, None] * B[:, None, :] * x[:, :, None]
        def comb(a, b): return a[0] * b[0], b[0] * a[1] + b[1]
        _, h = lax.associative_scan(comb, (dA, dBx))
        return jnp.einsum("ldn,ln->ld", h, C)
    return f, (np.abs(f32(1024, 128, scale=0.1)), -np.abs(f32(128, 16)), f32(1024, 16), f32(1024, 16), f32(1024, 128))
@prog("vit_patch_embed")
def _():
    def f(x, w, pos):
        y = conv(x, w, (16, 16), "VALID")
        y = y.reshape(x.shape[0], -1, w.shape[-1]) + pos
        return (y - y.mean(-1, keepdims=True)) * lax.rsqrt(y.var(-1, keepdims=True) + 1e-6)
    return f, (f32(8, 224, 224, 3), f32(16, 16, 3, 384, scale=0.02), f32(196, 384))
@prog("unet_block")
def _():
    def f(x, w1, w2, w3):
        a = jax.nn.relu(conv(x, w1))
        d = lax.reduce_window(a, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        b = jax.nn.relu(conv(d, w2))
        u = jnp.repeat(jnp.repeat(b, 2, 1), 2, 2)
        return jax.nn.relu(conv(jnp.concatenate([a, u], -1), w3))
    return f, (f32(4, 64, 64, 32), f32(3, 3, 32, 32, scale=0.1), f32(3, 3, 32, 64, scale=0.1), f32(3, 3, 96, 32, scale=0.1))
@prog("conv_lstm_cell")
def _():
    def f(x, h, c, w):
        g = conv(jnp.concatenate([x, h], -1), w)
        i, fg, o, u = jnp.split(g, 4, -1)
        c = jax.nn.sigmoid(fg) * c + jax.nn.sigmoid(i) * jnp.tanh(u)
        return jax.nn.sigmoid(o) * jnp.tanh(c), c
    return f, (f32(8, 32, 32, 16), f32(8, 32, 32, 32), f32(8, 32, 32, 32), f32(3, 3, 48, 128, scale=0.05))
@prog("vae_step")
def _():
    def loss(ps, x, eps):
        enc, dec = ps
        h = mlp(enc, x); mu, lv = jnp.split(h, 2, 1)
        z = mu + jnp.exp(0.5 * lv) * eps
        xr = jax.nn.sigmoid(mlp(dec, z))
        rec = -jnp.sum(x * jnp.log(xr + 1e-7) + (1 - x) * jnp.log(1 - xr + 1e-7), 1)
        kl = -0.5 * jnp.sum(1 + lv - mu ** 2 - jnp.exp(lv), 1)
        return jnp.mean(rec + kl)
    ps = (params(784, 512, 64), params(32, 512, 784))
    return jax.value_and_grad(loss), (ps, R.random((256, 784)).astype(np.float32), f32(256, 32))
@prog("kv_decode_loop")
def _():
    d, V, T = 256, 1024, 64
    def f(emb, wq, wk, wv, wo, tok0):
        def step(i, s):
            tok, kc, vc, out = s
            x = emb[tok]                                      # B x d
            q, k, v = x @ wq, x @ wk, x @ wv
            kc = lax.dynamic_update_slice(kc, k[:, None], (0, i, 0))
            vc = lax.dynamic_update_slice(vc, v[:, None], (0, i, 0))
            a = jnp.einsum("bd,btd->bt", q, kc) / 16.0
            a = jnp.where(jnp.arange(T)[None] <= i, a, -1e9)
            y = jnp.einsum("bt,btd->bd", jax.nn.softmax(a, -1), vc) @ wo
            nxt = jnp.argmax(y @ emb.T, -1).astype(jnp.int32)
            return nxt, kc, vc, out.at[:, i].set(nxt)
        B = tok0.shape[0]
        z = jnp.zeros((B, T, d))
        return lax.fori_loop(0, 16, step, (tok0, z, z, jnp.zeros((B, 16), jnp.int32)))[3]
    return f, (f32(V, d, scale=0.1), f32(d, d, scale=0.06), f32(d, d, scale=0.06), f32(d, d, scale=0.06), f32(d, d, scale=0.06), ints(0, V, 8))
@prog("ensemble_vmap")
def _():
    def f(ps, x): return jax.vmap(lambda p: jax.nn.log_softmax(mlp(p, x)))(ps)
    ps = [(f32(8, a, b, scale=0.05), f32(8, b, scale=0.05)) for a, b in ((256, 512), (512, 512), (512, 10))]
    return f, (ps, f32(128, 256))
@prog("rmsnorm_swiglu")
def _():
    def f(x, g, w1, w3, w2):
        x = x * lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g
        return (jax.nn.silu(x @ w1) * (x @ w3)) @ w2
    return f, (f32(1024, 512), f32(512), f32(512, 1376, scale=0.04), f32(512, 1376, scale=0.04), f32(1376, 512, scale=0.03))
@prog("quaternion_rotate")
def _():
    def f(q, v):
        q = q / jnp.linalg.norm(q, axis=-1, keepdims=True)
        w, u = q[:, :1], q[:, 1:]
        t = 2 * jnp.cross(u, v)
        return v + w * t + jnp.cross(u, t)
    return f, (f32(1 << 20, 4), f32(1 << 20, 3))
@prog("batched_det_3x3")
def _():
    return (lambda a: jnp.linalg.det(a)), (f32(65536, 3, 3),)
@prog("batched_solve_4x4")
def _():
    return (lambda a, b: jnp.linalg.solve(a, b)), (f32(16384, 4, 4) + 4 * np.eye(4, dtype=np.float32), f32(16384, 4, 1))
@prog("soft_min_pairwise")
def _():
    def f(x, y):
        d = jnp.sum((x[:, None] - y[None]) ** 2, -1)
        return -0.1 * jax.nn.logsumexp(-d / 0.1, 1)
    return f, (f32(2048, 8), f32(2048, 8))
@prog("histogram_equalize")
def _():
    def f(img):
        h = jnp.bincount(img.reshape(-1), length=256)
        cdf = jnp.cumsum(h).astype(jnp.float32)
        lut = jnp.round(255 * (cdf - cdf[0]) / (cdf[-1] - cdf[0])).astype(jnp.uint8)
        return lut[img]
    return f, (ints(0, 200, 1024, 1024, dt=np.uint8).astype(np.int32),)
@prog("bilinear_pooling")
def _():
    def f(a, b):
        z = jnp.einsum("bni,bnj->bij", a, b).reshape(a.shape[0], -1) / a.shape[1]
        z = jnp.sign(z) * jnp.sqrt(jnp.abs(z) + 1e-8)
        return z / jnp.linalg.norm(z, axis=1, keepdims=True)
    return f, (f32(32, 196, 128), f32(32, 196, 128))
@prog("gumbel_softmax_st")
def _():
    def loss(l, g, w):
        y = jax.nn.softmax((l + g) / 0.5, -1)
        hard = jax.nn.one_hot(jnp.argmax(y, -1), y.shape[-1])
        z = lax.stop_gradient(hard - y) + y
        return jnp.sum((z @ w) ** 2)
    return jax.grad(loss, argnums=(0, 2)), (f32(4096, 512), f32(4096, 512), f32(512, 64, scale=0.1))
@prog("integral_image_box")
def _():
    def f(x):
        s = jnp.cumsum(jnp.cumsum(x, 0), 1)
        s = jnp.pad(s, ((1, 0), (1, 0)))
        r = 8
        return (s[2 * r:, 2 * r:] - s[:-2 * r, 2 * r:] - s[2 * r:, :-2 * r] + s[:-2 * r, :-2 * r]) / (4 * r * r)
    return f, (f32(1024, 1024),)
@prog("polynomial_features")
def _():
    def f(x, w):
        p = (x[:, :, None] * x[:, None, :]).reshape(x.shape[0], -1)
        return jnp.concatenate([x, p], 1) @ w
    return f, (f32(4096, 48), f32(48 + 48 * 48, 16, scale=0.02))
@prog("depthwise_sep_1d")
def _():
    def f(x, wd, wp):
        y = lax.conv_general_dilated(x, wd, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=x.shape[-1])
        return jax.nn.gelu(lax.conv_general_dilated(y, wp, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC")))
    return f, (f32(16, 2048, 128), f32(15, 1, 128, scale=0.1), f32(1, 128, 256, scale=0.1))
@prog("label_smooth_bf16_grad")
def _():
    def loss(ps, x, y):
        l = mlp(ps, x.astype(BF)).astype(jnp.float32)
        t = jax.nn.one_hot(y, l.shape[-1]) * 0.9 + 0.1 / l.shape[-1]
        return -jnp.mean(jnp.sum(t * jax.nn.log_softmax(l), -1))
    ps = [(w.astype(BF), b.astype(BF)) for w, b in params(256, 512, 1000)]
    return jax.grad(loss), (ps, f32(512, 256), ints(0, 1000, 512))

if __name__ == "__main__":
    U.main(P)
