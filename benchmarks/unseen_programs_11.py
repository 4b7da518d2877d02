"""An eleventh sweep of ordinary JAX programs outside `axle bench` (2026-11-28, tenth session):
kinds the first ten sweeps left out. Detection and vision models (Mask R-CNN ROIAlign on an
NCHW feature map, anchor decoding with greedy IoU NMS in a fori_loop, DETR's pairwise GIoU
matching cost and box losses with their gradient, DCNv2 deformable convolution with its
gradient, Swin's shifted-window attention with a relative-position bias table and shift mask,
StyleGAN2's modulated / demodulated convolution as a batch-grouped conv with its gradient),
attention and training variants (Perceiver latent cross-attention with its gradient,
Mixture-of-Depths token routing in bf16, Mamba-2's chunked state-space-duality scan, the SigLIP
pairwise sigmoid loss, the DPO preference loss, a WGAN-GP critic step with its double backprop,
sparsemax attention through sort and cumsum), classical probabilistic models (a linear-chain CRF
by a logsumexp scan with its gradient, LDA's variational E-step with digamma, NMF by
multiplicative updates, a neural-spline (rational-quadratic) flow with its gradient), SciPy-style
solvers (jax.scipy.sparse.linalg.gmres, jax.experimental.ode.odeint's adaptive Dormand-Prince
with the adjoint gradient, jax.scipy.optimize.minimize BFGS, jax.scipy.linalg.polar by QDWH, a
batched finite-horizon LQR Riccati scan), simulations and finance (nonlinear shallow-water
equations, 2-D pseudo-spectral Navier-Stokes, an MLS-MPM particle-grid step with scatter-adds,
Heston Monte Carlo paths), geometry, graphics and robotics (Moller-Trumbore ray-triangle tests,
point splatting with a scatter-min z-buffer, SMPL-style linear blend skinning over a kinematic
chain, the Chamfer distance gradient, damped-least-squares inverse kinematics with jacfwd),
signal and image work (jax.scipy.signal.welch, JPEG-style 8x8 block DCT with jax.scipy.fft.dctn,
a bilateral filter), integer and data work (HyperLogLog with clz and scatter-max, decision-forest
inference by per-level gathers, OCP MX-FP8 block scaling with frexp and float8_e4m3fn), RL and
black-box optimization (a vectorized CartPole rollout, OpenAI evolution strategies with
centred-rank shaping) and SciPy special functions (Hurwitz zeta, polygamma, expi, exp1, Bessel jn).

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_11.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy as jsp
import jax.scipy.fft
import jax.scipy.optimize
import jax.scipy.signal
import jax.scipy.sparse.linalg
from jax import lax
from jax.experimental.ode import odeint
import ml_dtypes

import unseen_programs as U

R, f32, unif, ints, key, pkey, mlp_params, mlp = U.helpers(11)
P, prog = U.sweep()
BF = ml_dtypes.bfloat16
def conv(x, w, stride=(1, 1), pad="SAME", dn=("NCHW", "OIHW", "NCHW"), **kw):
    return lax.conv_general_dilated(x, w, stride, pad, dimension_numbers=dn, **kw)


# --- detection and vision models ---------------------------------------------------------

@prog("roi_align")
def _():
    N, C, H, W, NB, S, SR = 2, 128, 64, 64, 64, 7, 2
    def f(feat, boxes, bidx):  # Mask R-CNN ROIAlign (aligned): 7x7 bins, 2x2 bilinear samples each, averaged
        x0, y0, x1, y1 = [boxes[:, i] for i in range(4)]
        bw = jnp.maximum(x1 - x0, 1.0) / S; bh = jnp.maximum(y1 - y0, 1.0) / S
        g = (jnp.arange(S * SR) + 0.5) / SR
        ys = y0[:, None] + g[None] * bh[:, None] - 0.5
        xs = x0[:, None] + g[None] * bw[:, None] - 0.5
        def split(p, n):
            p = jnp.clip(p, 0, n - 1)
            lo = jnp.floor(p).astype(jnp.int32)
            return lo, jnp.minimum(lo + 1, n - 1), p - lo
        yl, yh, wy = split(ys, H); xl, xh, wx = split(xs, W)
        ft = feat.transpose(0, 2, 3, 1)
        b = bidx[:, None, None]
        def at(yy, xx): return ft[b, yy[:, :, None], xx[:, None, :]]
        wy, wx = wy[:, :, None, None], wx[:, None, :, None]
        v = (at(yl, xl) * (1 - wy) * (1 - wx) + at(yl, xh) * (1 - wy) * wx
             + at(yh, xl) * wy * (1 - wx) + at(yh, xh) * wy * wx)
        return v.reshape(NB, S, SR, S, SR, C).mean((2, 4)).transpose(0, 3, 1, 2)
    xy = unif(0, 44, NB, 2); wh = unif(4, 20, NB, 2)
    return f, (f32(N, C, H, W), np.concatenate([xy, xy + wh], 1), ints(0, N, NB))

@prog("box_decode_nms")
def _():
    A, K, M = 16384, 1024, 100
    def f(anchors, deltas, scores):  # RPN proposals: decode deltas, top-1000, IoU matrix, greedy NMS at 0.7 by fori_loop
        wa = anchors[:, 2] - anchors[:, 0]; ha = anchors[:, 3] - anchors[:, 1]
        cx = anchors[:, 0] + 0.5 * wa + deltas[:, 0] * wa; cy = anchors[:, 1] + 0.5 * ha + deltas[:, 1] * ha
        w = wa * jnp.exp(jnp.minimum(deltas[:, 2], 4.0)); h = ha * jnp.exp(jnp.minimum(deltas[:, 3], 4.0))
        boxes = jnp.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], -1)
        s, i = lax.top_k(scores, K)
        b = boxes[i]
        area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        lt = jnp.maximum(b[:, None, :2], b[None, :, :2]); rb = jnp.minimum(b[:, None, 2:], b[None, :, 2:])
        inter = jnp.prod(jnp.clip(rb - lt, 0), -1)
        iou = inter / (area[:, None] + area[None] - inter)
        ar = jnp.arange(K)
        def body(j, keep): return keep & ~((iou[j] > 0.7) & (ar > j) & keep[j])
        keep = lax.fori_loop(0, K, body, jnp.ones(K, bool))
        order = jnp.argsort(~keep, stable=True)[:M]
        return b[order], jnp.where(keep[order], s[order], 0.0)
    xy = unif(0, 800, A, 2); wh = unif(16, 128, A, 2)
    return f, (np.concatenate([xy, xy + wh], 1), f32(A, 4, scale=0.1), f32(A))

@prog("detr_giou_cost_grad")
def _():
    B, Q, G, NC = 16, 300, 32, 92
    def xyxy(b): return jnp.concatenate([b[..., :2] - b[..., 2:] / 2, b[..., :2] + b[..., 2:] / 2], -1)
    def giou(a, b):
        ara = jnp.prod(a[..., 2:] - a[..., :2], -1); arb = jnp.prod(b[..., 2:] - b[..., :2], -1)
        inter = jnp.prod(jnp.clip(jnp.minimum(a[..., 2:], b[..., 2:]) - jnp.maximum(a[..., :2], b[..., :2]), 0), -1)
        union = ara + arb - inter
        encl = jnp.prod(jnp.maximum(a[..., 2:], b[..., 2:]) - jnp.minimum(a[..., :2], b[..., :2]), -1)
        return inter / union - (encl - union) / encl
    def loss(pred, logits, gt, gl):  # DETR: class + L1 + GIoU cost matrix, per-target argmin match, CE + box losses
        sp = jax.nn.sigmoid(pred)
        pb, gb = xyxy(sp), xyxy(gt)
        prob = jax.nn.softmax(logits, -1)
        cls = -jnp.take_along_axis(prob, jnp.broadcast_to(gl[:, None, :], (B, Q, G)), -1)
        l1 = jnp.sum(jnp.abs(sp[:, :, None] - gt[:, None]), -1)
        cost = cls + 5 * l1 - 2 * giou(pb[:, :, None], gb[:, None])
        j = jnp.argmin(lax.stop_gradient(cost), 1)
        pm = jnp.take_along_axis(sp, j[..., None], 1)
        tgt = jnp.full((B, Q), NC - 1).at[jnp.arange(B)[:, None], j].set(gl)
        ce = -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), tgt[..., None], -1))
        return ce + 5 * jnp.mean(jnp.abs(pm - gt)) + 2 * jnp.mean(1 - giou(xyxy(pm), gb))
    gt = np.concatenate([unif(0.2, 0.8, B, G, 2), unif(0.05, 0.3, B, G, 2)], -1)
    return jax.grad(loss, argnums=(0, 1)), (f32(B, Q, 4), f32(B, Q, NC), gt, ints(0, NC - 1, B, G))

@prog("deformable_conv_v2_grad")
def _():
    N, C, H, W, O, K = 2, 64, 32, 32, 64, 3
    def loss(w, x, off, msk):  # DCNv2: learned per-tap offsets and sigmoid masks, bilinear sampling, then a GEMM
        ky, kx = jnp.meshgrid(jnp.arange(K) - 1, jnp.arange(K) - 1, indexing="ij")
        py = jnp.arange(H)[None, :, None, None] + ky.reshape(-1) + off[..., 0]
        px = jnp.arange(W)[None, None, :, None] + kx.reshape(-1) + off[..., 1]
        y0, x0 = jnp.floor(py), jnp.floor(px)
        wy, wx = (py - y0)[..., None], (px - x0)[..., None]
        xt = x.transpose(0, 2, 3, 1)
        n = jnp.arange(N)[:, None, None, None]
        def tap(yy, xx):
            ok = (yy >= 0) & (yy <= H - 1) & (xx >= 0) & (xx <= W - 1)
            v = xt[n, jnp.clip(yy, 0, H - 1).astype(jnp.int32), jnp.clip(xx, 0, W - 1).astype(jnp.int32)]
            return v * ok[..., None]
        s = (tap(y0, x0) * (1 - wy) * (1 - wx) + tap(y0, x0 + 1) * (1 - wy) * wx
             + tap(y0 + 1, x0) * wy * (1 - wx) + tap(y0 + 1, x0 + 1) * wy * wx)
        s = s * jax.nn.sigmoid(msk)[..., None]
        return jnp.sum(jnp.tanh(jnp.einsum("nhwkc,kco->nohw", s, w)) ** 2)
    return jax.grad(loss, argnums=(0, 2, 3)), (f32(K * K, C, O, scale=0.04), f32(N, C, H, W), f32(N, H, W, K * K, 2), f32(N, H, W, K * K))

@prog("swin_window_attention")
def _():
    B, Hh, C, nh, ws, sh = 4, 56, 96, 3, 7, 3
    nW = (Hh // ws) ** 2
    def f(x, Wqkv, Wo, table, rel, mask):  # Swin: cyclic shift, 7x7 windows, relative-position bias gather, shift mask
        x = jnp.roll(x, (-sh, -sh), (1, 2))
        xw = x.reshape(B, Hh // ws, ws, Hh // ws, ws, C).transpose(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, C)
        qkv = (xw @ Wqkv).reshape(-1, ws * ws, 3, nh, C // nh).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = q @ k.swapaxes(-1, -2) / np.sqrt(C // nh) + table[rel].transpose(2, 0, 1)[None]
        s = s.reshape(B, nW, nh, ws * ws, ws * ws) + mask[None, :, None]
        a = jax.nn.softmax(s, -1).reshape(-1, nh, ws * ws, ws * ws)
        o = (a @ v).transpose(0, 2, 1, 3).reshape(-1, ws * ws, C) @ Wo
        o = o.reshape(B, Hh // ws, Hh // ws, ws, ws, C).transpose(0, 1, 3, 2, 4, 5).reshape(B, Hh, Hh, C)
        return jnp.roll(o, (sh, sh), (1, 2))
    img = np.zeros((Hh, Hh)); cnt = 0
    for a in (slice(0, -ws), slice(-ws, -sh), slice(-sh, None)):
        for b in (slice(0, -ws), slice(-ws, -sh), slice(-sh, None)):
            img[a, b] = cnt; cnt += 1
    mw = img.reshape(Hh // ws, ws, Hh // ws, ws).transpose(0, 2, 1, 3).reshape(-1, ws * ws)
    mask = np.where(mw[:, None, :] != mw[:, :, None], -100.0, 0.0).astype(np.float32)
    co = np.stack(np.meshgrid(np.arange(ws), np.arange(ws), indexing="ij")).reshape(2, -1)
    rl = co[:, :, None] - co[:, None, :] + ws - 1
    rel = (rl[0] * (2 * ws - 1) + rl[1]).astype(np.int32)
    return f, (f32(B, Hh, Hh, C), f32(C, 3 * C, scale=0.1), f32(C, C, scale=0.1), f32((2 * ws - 1) ** 2, nh, scale=0.02), rel, mask)

@prog("stylegan_modconv_grad")
def _():
    B, Ci, Co, H, Z = 4, 32, 32, 32, 512
    def loss(p, x, wl):  # StyleGAN2: per-sample style scales, demodulation, one conv grouped by sample (NCHW)
        A, w = p
        s = wl @ A + 1.0
        wm = w[None] * s[:, None, :, None, None]
        wm = wm * lax.rsqrt(jnp.sum(wm * wm, (2, 3, 4), keepdims=True) + 1e-8)
        y = conv(x.reshape(1, B * Ci, H, H), wm.reshape(B * Co, Ci, 3, 3), feature_group_count=B)
        return jnp.mean((jax.nn.leaky_relu(y, 0.2) * np.sqrt(2)) ** 2)
    return jax.grad(loss, argnums=(0, 1)), ((f32(Z, Ci, scale=0.02), f32(Co, Ci, 3, 3)), f32(B, Ci, H, H), f32(B, Z))


# --- attention and training variants -----------------------------------------------------

@prog("perceiver_cross_attn_grad")
def _():
    B, M, Din, L, D, H = 2, 1024, 64, 128, 256, 8
    def attn(q, kv, Wq, Wk, Wv, Wo):
        q = (q @ Wq).reshape(q.shape[0], -1, H, D // H); k = (kv @ Wk).reshape(kv.shape[0], -1, H, D // H)
        v = (kv @ Wv).reshape(kv.shape[0], -1, H, D // H)
        a = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(D // H), -1)
        return jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(q.shape[0], -1, D) @ Wo
    def ln(x): return (x - x.mean(-1, keepdims=True)) * lax.rsqrt(x.var(-1, keepdims=True) + 1e-5)
    def loss(p, x, y):  # Perceiver: latents cross-attend to 1024 inputs, one latent self-attention + MLP, pooled head
        lat, ca, sa, m1, m2, head = p
        z = jnp.broadcast_to(lat, (B, L, D))
        z = z + attn(ln(z), ln(x), *ca)
        z = z + attn(ln(z), ln(z), *sa)
        z = z + jax.nn.gelu(ln(z) @ m1) @ m2
        return jnp.mean((z.mean(1) @ head - y) ** 2)
    s = lambda n: 1 / np.sqrt(n)
    ca = (f32(D, D, scale=s(D)), f32(Din, D, scale=s(Din)), f32(Din, D, scale=s(Din)), f32(D, D, scale=s(D)))
    sa = tuple(f32(D, D, scale=s(D)) for _ in range(4))
    p = (f32(L, D, scale=0.02), ca, sa, f32(D, 4 * D, scale=s(D)), f32(4 * D, D, scale=s(4 * D)), f32(D, 10, scale=s(D)))
    return jax.grad(loss), (p, f32(B, M, Din), f32(B, 10))

@prog("mixture_of_depths_bf16")
def _():
    B, T, D, F, k = 4, 512, 512, 2048, 64
    def f(x, wr, w1, w2):  # Mixture-of-Depths: a router keeps the top 12.5% tokens per sequence for the MLP block
        r = jnp.dot(x, wr, preferred_element_type=jnp.float32)[..., 0]
        _, i = lax.top_k(r, k)
        i = jnp.sort(i, -1)
        xs = jnp.take_along_axis(x, i[..., None], 1)
        h = jax.nn.gelu(jnp.dot(xs, w1, preferred_element_type=jnp.float32)).astype(jnp.bfloat16)
        y = jnp.dot(h, w2, preferred_element_type=jnp.float32) * jax.nn.sigmoid(jnp.take_along_axis(r, i, 1))[..., None]
        return x.at[jnp.arange(B)[:, None], i].add(y.astype(jnp.bfloat16))
    return f, (f32(B, T, D).astype(BF), f32(D, 1, scale=0.05).astype(BF), f32(D, F, scale=0.04).astype(BF), f32(F, D, scale=0.02).astype(BF))

@prog("mamba2_ssd_chunked")
def _():
    b, l, h, p, n, cl = 2, 1024, 8, 64, 64, 128
    c = l // cl
    def segsum(x):
        T = x.shape[-1]
        xc = jnp.cumsum(x, -1)
        return jnp.where(jnp.tril(jnp.ones((T, T), bool)), xc[..., :, None] - xc[..., None, :], -jnp.inf)
    def f(X, A, Bm, Cm):  # Mamba-2 SSD: intra-chunk quadratic form by segsum, inter-chunk state recurrence
        X, Bm, Cm = [t.reshape(b, c, cl, *t.shape[2:]) for t in (X, Bm, Cm)]
        A = A.reshape(b, c, cl, h).transpose(0, 3, 1, 2)
        Acs = jnp.cumsum(A, -1)
        Lm = jnp.exp(segsum(A))
        Yd = jnp.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", Cm, Bm, Lm, X)
        decay = jnp.exp(Acs[..., -1:] - Acs)
        st = jnp.einsum("bclhn,bhcl,bclhp->bchpn", Bm, decay, X)
        st = jnp.concatenate([jnp.zeros_like(st[:, :1]), st], 1)
        dch = jnp.exp(segsum(jnp.pad(Acs[..., -1], ((0, 0), (0, 0), (1, 0)))))
        st = jnp.einsum("bhzc,bchpn->bzhpn", dch, st)[:, :-1]
        Yo = jnp.einsum("bclhn,bchpn,bhcl->bclhp", Cm, st, jnp.exp(Acs))
        return (Yd + Yo).reshape(b, l, h, p)
    return f, (f32(b, l, h, p), -np.abs(f32(b, l, h, scale=0.05)), f32(b, l, h, n, scale=0.2), f32(b, l, h, n, scale=0.2))

@prog("siglip_sigmoid_loss_grad")
def _():
    N, Di, Dt, E = 1024, 384, 256, 256
    def loss(p, img, txt):  # SigLIP: pairwise sigmoid loss over the N x N logits, learnable temperature and bias
        Wi, Wt, t, b = p
        zi = img @ Wi; zt = txt @ Wt
        zi = zi / jnp.linalg.norm(zi, axis=-1, keepdims=True); zt = zt / jnp.linalg.norm(zt, axis=-1, keepdims=True)
        lg = zi @ zt.T * jnp.exp(t) + b
        return -jnp.sum(jax.nn.log_sigmoid((2 * jnp.eye(N) - 1) * lg)) / N
    return jax.grad(loss), ((f32(Di, E, scale=Di ** -0.5), f32(Dt, E, scale=Dt ** -0.5), np.float32(np.log(10)), np.float32(-10)), f32(N, Di), f32(N, Dt))

@prog("dpo_loss_grad")
def _():
    Bp, T, D, V, beta = 4, 64, 128, 2048, 0.1
    def loss(W, hp, hr, Wref, tok, mask):  # DPO: chosen / rejected sequence log-probs of policy and reference
        def seq_lp(h, Wm):
            lp = jax.nn.log_softmax(h @ Wm, -1)
            return jnp.sum(jnp.take_along_axis(lp, tok[..., None], -1)[..., 0] * mask, -1)
        pl = seq_lp(hp, W); rl = lax.stop_gradient(seq_lp(hr, Wref))
        z = beta * ((pl[:Bp] - rl[:Bp]) - (pl[Bp:] - rl[Bp:]))
        return -jnp.mean(jax.nn.log_sigmoid(z))
    mask = (np.arange(T)[None] >= ints(16, 64, 2 * Bp)[:, None]).astype(np.float32)
    W = f32(D, V, scale=D ** -0.5)
    return jax.grad(loss), (W, f32(2 * Bp, T, D), f32(2 * Bp, T, D), W + f32(D, V, scale=0.01), ints(0, V, 2 * Bp, T), mask)

@prog("wgan_gp_grad")
def _():
    B, D = 256, 784
    def loss(p, real, fake, eps):  # WGAN-GP critic: Wasserstein term + gradient penalty on interpolates (double backprop)
        hid, wo = p  # no output bias: it cancels in the loss, and jit would drop the unused argument
        critic = lambda x: (jax.nn.leaky_relu(mlp(hid, x, lambda h: jax.nn.leaky_relu(h, 0.2)), 0.2) @ wo)[..., 0]
        xi = eps * real + (1 - eps) * fake
        g = jax.grad(lambda x: jnp.sum(critic(x)))(xi)
        gp = jnp.mean((jnp.sqrt(jnp.sum(g * g, -1) + 1e-12) - 1) ** 2)
        return jnp.mean(critic(fake)) - jnp.mean(critic(real)) + 10 * gp
    return jax.grad(loss), ((mlp_params(D, 512, 512), f32(512, 1, scale=512 ** -0.5)), f32(B, D), f32(B, D), unif(0, 1, B, 1))

@prog("sparsemax_attn_grad")
def _():
    B, H, T, Dh = 1, 4, 256, 64
    def sparsemax(z):
        zs = -jnp.sort(-z, -1)
        cs = jnp.cumsum(zs, -1)
        kk = jnp.arange(1, z.shape[-1] + 1, dtype=z.dtype)
        kz = jnp.sum(1 + kk * zs > cs, -1, keepdims=True)
        tau = (jnp.take_along_axis(cs, kz - 1, -1) - 1) / kz
        return jnp.maximum(z - tau, 0)
    def loss(q, k, v):  # sparsemax attention (sort, cumsum, threshold): sparse probabilities, gradient through the sort
        p = sparsemax(q @ k.swapaxes(-1, -2) / np.sqrt(Dh))
        return jnp.sum((p @ v) ** 2)
    return jax.grad(loss, argnums=(0, 1, 2)), (f32(B, H, T, Dh), f32(B, H, T, Dh), f32(B, H, T, Dh))


# --- classical probabilistic models --------------------------------------------------------

@prog("linear_chain_crf_grad")
def _():
    B, T, K = 64, 128, 32
    def nll(trans, em, tags, mask):  # linear-chain CRF: forward algorithm as a logsumexp scan minus the gold path score
        def step(a, x):
            e, m = x
            na = jax.nn.logsumexp(a[:, :, None] + trans[None], 1) + e
            return jnp.where(m[:, None], na, a), None
        aT, _ = lax.scan(step, em[:, 0], (em[:, 1:].swapaxes(0, 1), mask[:, 1:].T))
        ge = jnp.sum(jnp.take_along_axis(em, tags[..., None], -1)[..., 0] * mask, 1)
        gt = jnp.sum(trans[tags[:, :-1], tags[:, 1:]] * mask[:, 1:], 1)
        return jnp.mean(jax.nn.logsumexp(aT, -1) - ge - gt)
    mask = np.arange(T)[None] < ints(32, T + 1, B)[:, None]
    return jax.grad(nll, argnums=(0, 1)), (f32(K, K, scale=0.1), f32(B, T, K), ints(0, K, B, T), mask)

@prog("lda_variational_estep")
def _():
    Dn, V, K, it = 256, 2048, 32, 20
    def f(counts, log_beta, alpha):  # LDA variational E-step (Blei et al.): gamma / phi fixed point with digamma
        beta = jnp.exp(log_beta)
        def el(g): return jnp.exp(jsp.special.digamma(g) - jsp.special.digamma(g.sum(-1, keepdims=True)))
        def body(_, g):
            e = el(g)
            return alpha + e * ((counts / (e @ beta + 1e-30)) @ beta.T)
        g = lax.fori_loop(0, it, body, alpha + jnp.broadcast_to(counts.sum(-1, keepdims=True) / K, (Dn, K)))
        e = el(g)
        return g, (e.T @ (counts / (e @ beta + 1e-30))) * beta
    lb = jax.nn.log_softmax(f32(K, V, scale=2.0), -1)
    return f, (R.poisson(0.2, (Dn, V)).astype(np.float32), np.asarray(lb), np.float32(0.1))

@prog("nmf_multiplicative")
def _():
    M, N, r, it = 1024, 512, 32, 20
    def f(X, W, H):  # NMF by Lee-Seung multiplicative updates for ||X - WH||^2, then the residual norm
        def body(_, c):
            W, H = c
            H = H * (W.T @ X) / (W.T @ W @ H + 1e-9)
            W = W * (X @ H.T) / (W @ (H @ H.T) + 1e-9)
            return W, H
        W, H = lax.fori_loop(0, it, body, (W, H))
        return W, H, jnp.linalg.norm(X - W @ H)
    X = np.abs(f32(M, r)) @ np.abs(f32(r, N)) + 0.1 * np.abs(f32(M, N))
    return f, (X.astype(np.float32), unif(0.1, 1, M, r), unif(0.1, 1, r, N))

@prog("rq_spline_flow_grad")
def _():
    D, K, Bd, L, Bn = 16, 8, 3.0, 4, 2048
    def rqs(x, uw, uh, ud):
        w = 1e-3 + (1 - 1e-3 * K) * jax.nn.softmax(uw, -1); h = 1e-3 + (1 - 1e-3 * K) * jax.nn.softmax(uh, -1)
        pad = [(0, 0)] * (x.ndim) + [(1, 0)]
        cw = 2 * Bd * jnp.pad(jnp.cumsum(w, -1), pad) - Bd; ch = 2 * Bd * jnp.pad(jnp.cumsum(h, -1), pad) - Bd
        d = jnp.pad(jax.nn.softplus(ud) + 1e-3, [(0, 0)] * x.ndim + [(1, 1)], constant_values=1.0)
        inside = (x > -Bd) & (x < Bd)
        xc = jnp.clip(x, -Bd + 1e-5, Bd - 1e-5)
        idx = jnp.sum(xc[..., None] >= cw[..., 1:-1], -1)[..., None]
        tk = lambda a: jnp.take_along_axis(a, idx, -1)[..., 0]
        x0, wk, y0, hk = tk(cw), tk(cw[..., 1:] - cw[..., :-1]), tk(ch), tk(ch[..., 1:] - ch[..., :-1])
        d0, d1 = tk(d[..., :-1]), tk(d[..., 1:])
        s = hk / wk; th = (xc - x0) / wk; t1 = th * (1 - th)
        den = s + (d1 + d0 - 2 * s) * t1
        y = y0 + hk * (s * th * th + d0 * t1) / den
        ld = 2 * jnp.log(s) + jnp.log(d1 * th * th + 2 * s * t1 + d0 * (1 - th) ** 2) - 2 * jnp.log(den)
        return jnp.where(inside, y, x), jnp.where(inside, ld, 0.0)
    def nll(ps, x):  # neural spline flow: rational-quadratic spline couplings on alternating halves
        ld = 0.0
        for i, p in enumerate(ps):
            a, b = (x[:, :D // 2], x[:, D // 2:]) if i % 2 == 0 else (x[:, D // 2:], x[:, :D // 2])
            prm = mlp(p, a, jax.nn.relu).reshape(-1, D // 2, 3 * K - 1)
            b, l = rqs(b, prm[..., :K], prm[..., K:2 * K], prm[..., 2 * K:])
            ld = ld + l.sum(-1)
            x = jnp.concatenate([a, b], -1)
        return -jnp.mean(-0.5 * jnp.sum(x * x, -1) + ld)
    return jax.grad(nll), ([mlp_params(D // 2, 128, 128, D // 2 * (3 * K - 1), scale=0.5) for _ in range(L)], f32(Bn, D))


# --- SciPy-style solvers -----------------------------------------------------------------

@prog("gmres_scipy")
def _():
    n = 1024
    def f(A, b):  # jax.scipy.sparse.linalg.gmres, restart 32, up to 8 restarts, on a dense nonsymmetric system
        return jsp.sparse.linalg.gmres(lambda v: A @ v, b, tol=1e-5, restart=32, maxiter=8)[0]
    return f, (np.eye(n, dtype=np.float32) + f32(n, n, scale=0.9 / np.sqrt(n)), f32(n))

@prog("odeint_dopri5_grad")
def _():
    def loss(p, y0, ts):  # neural ODE: jax.experimental.ode.odeint (adaptive Dormand-Prince), adjoint gradient
        ys = odeint(lambda y, t, p: mlp(p, y, jnp.tanh), y0, ts, p, rtol=1e-4, atol=1e-4)
        return jnp.mean((ys[-1] - 1.0) ** 2) + 0.1 * jnp.mean(ys ** 2)
    return jax.grad(loss), (mlp_params(16, 64, 16, scale=1.5), f32(256, 16), np.linspace(0, 1, 5).astype(np.float32))

@prog("bfgs_minimize")
def _():
    def f(X, y):  # jax.scipy.optimize.minimize(method="BFGS") on L2-regularized logistic regression, 64 features
        def obj(w):
            z = X @ w
            return jnp.mean(jax.nn.softplus(z) - y * z) + 1e-3 * w @ w
        r = jsp.optimize.minimize(obj, jnp.zeros(X.shape[1]), method="BFGS", options=dict(maxiter=50))
        return r.x, r.fun
    X = f32(8192, 64)
    return f, (X, (R.uniform(size=8192) < 1 / (1 + np.exp(-X @ f32(64, scale=0.3)))).astype(np.float32))

@prog("polar_qdwh")
def _():
    return (lambda a: jsp.linalg.polar(a, method="qdwh")), (f32(384, 256),)

@prog("lqr_riccati_scan")
def _():
    Bt, T, n, m = 64, 100, 12, 4
    def f(A, Bm, Q, Rm, x0):  # finite-horizon LQR for 64 systems: backward Riccati scan with solves, forward rollout
        At = A.swapaxes(1, 2)
        def back(Pm, _):
            BtP = Bm.swapaxes(1, 2) @ Pm
            Kg = jnp.linalg.solve(Rm + BtP @ Bm, BtP @ A)
            Pm = Q + At @ Pm @ (A - Bm @ Kg)
            return 0.5 * (Pm + Pm.swapaxes(1, 2)), Kg
        _, Ks = lax.scan(back, jnp.broadcast_to(Q, (Bt, n, n)), None, length=T)
        def fwd(x, Kg):
            u = -jnp.einsum("bmn,bn->bm", Kg, x)
            x = jnp.einsum("bij,bj->bi", A, x) + jnp.einsum("bij,bj->bi", Bm, u)
            return x, (x, u)
        return lax.scan(fwd, x0, Ks[::-1])[1]
    A = np.eye(n, dtype=np.float32) + f32(Bt, n, n, scale=0.05)
    return f, (A, f32(Bt, n, m, scale=0.3), np.eye(n, dtype=np.float32), np.broadcast_to(0.1 * np.eye(m, dtype=np.float32), (Bt, m, m)).copy(), f32(Bt, n))


# --- simulations and finance -------------------------------------------------------------

@prog("shallow_water_2d")
def _():
    g, dt, steps = 9.81, 0.1, 100
    def f(h, hu, hv):  # nonlinear shallow-water equations, Lax-Friedrichs on a periodic 256x256 grid, 100 steps
        def flux(h, hu, hv):
            u, v = hu / h, hv / h
            return (hu, hu * u + 0.5 * g * h * h, hu * v), (hv, hu * v, hv * v + 0.5 * g * h * h)
        def step(_, U):
            F, G = flux(*U)
            out = []
            for q, fq, gq in zip(U, F, G):
                avg = 0.25 * (jnp.roll(q, 1, 0) + jnp.roll(q, -1, 0) + jnp.roll(q, 1, 1) + jnp.roll(q, -1, 1))
                out.append(avg - 0.5 * dt * (jnp.roll(fq, -1, 1) - jnp.roll(fq, 1, 1) + jnp.roll(gq, -1, 0) - jnp.roll(gq, 1, 0)))
            return tuple(out)
        return lax.fori_loop(0, steps, step, (h, hu, hv))
    yy, xx = np.mgrid[0:256, 0:256]
    h = (1 + 0.2 * np.exp(-((xx - 100) ** 2 + (yy - 140) ** 2) / 200.0)).astype(np.float32)
    return f, (h, np.zeros_like(h), np.zeros_like(h))

@prog("navier_stokes_spectral")
def _():
    N, dt, nu, steps = 256, 0.01, 1e-3, 20
    k = np.fft.fftfreq(N, 1.0 / N).astype(np.float32); kr = np.fft.rfftfreq(N, 1.0 / N).astype(np.float32)
    kx, ky = kr[None, :], k[:, None]
    k2 = kx ** 2 + ky ** 2; k2i = np.where(k2 == 0, 0, 1 / np.where(k2 == 0, 1, k2)).astype(np.float32)
    dealias = ((np.abs(kx) < N / 3) & (np.abs(ky) < N / 3)).astype(np.float32)
    def f(w0):  # 2-D incompressible vorticity, pseudo-spectral (rfft2), 2/3 dealiasing, Heun + implicit viscosity
        def rhs(wh):
            ph = wh * k2i
            u = jnp.fft.irfft2(1j * ky * ph, (N, N)); v = jnp.fft.irfft2(-1j * kx * ph, (N, N))
            wx = jnp.fft.irfft2(1j * kx * wh, (N, N)); wy = jnp.fft.irfft2(1j * ky * wh, (N, N))
            return -jnp.fft.rfft2(u * wx + v * wy) * dealias
        def step(_, wh):
            k1 = rhs(wh)
            k2_ = rhs(wh + dt * k1)
            return (wh + 0.5 * dt * (k1 + k2_)) / (1 + dt * nu * k2)
        return jnp.fft.irfft2(lax.fori_loop(0, steps, step, jnp.fft.rfft2(w0)), (N, N))
    yy, xx = np.mgrid[0:N, 0:N] * (2 * np.pi / N)
    return f, ((np.sin(xx) * np.cos(yy) + 0.3 * np.cos(3 * xx + 1) + 0.1 * f32(N, N)).astype(np.float32),)

@prog("mpm_p2g_g2p")
def _():
    n, G, steps = 8192, 64, 20
    dx, dt, E = 1.0 / G, 2e-4, 400.0
    pv = (dx * 0.5) ** 2; pm = pv
    offs = np.array([[i, j] for i in range(3) for j in range(3)], np.int32)
    def f(x, v, C, J):  # MLS-MPM (mpm88): quadratic B-spline P2G scatter-adds, grid update, G2P gathers
        def step(_, c):
            x, v, C, J = c
            Xp = x / dx
            base = jnp.floor(Xp - 0.5).astype(jnp.int32)
            fx = Xp - base
            w = jnp.stack([0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2])
            wt = w[offs[:, 0], :, 0] * w[offs[:, 1], :, 1]
            dpos = (offs[:, None, :] - fx[None]) * dx
            stress = -dt * 4 * E * pv * (J - 1) / dx ** 2
            aff = stress[:, None, None] * jnp.eye(2) + pm * C
            idx = ((base[None, :, 0] + offs[:, None, 0]) * G + base[None, :, 1] + offs[:, None, 1]).reshape(-1)
            mom = wt[..., None] * (pm * v[None] + jnp.einsum("nij,knj->kni", aff, dpos))
            gv = jnp.zeros((G * G, 2)).at[idx].add(mom.reshape(-1, 2))
            gm = jnp.zeros(G * G).at[idx].add((wt * pm).reshape(-1))
            gv = jnp.where(gm[:, None] > 0, gv / jnp.maximum(gm, 1e-20)[:, None], 0.0) + dt * jnp.array([0.0, -9.8])
            ii, jj = jnp.arange(G * G) // G, jnp.arange(G * G) % G
            gv = gv.at[:, 0].set(jnp.where((ii < 3) | (ii > G - 3), 0.0, gv[:, 0]))
            gv = gv.at[:, 1].set(jnp.where((jj < 3) | (jj > G - 3), 0.0, gv[:, 1]))
            gvp = gv[idx].reshape(9, n, 2)
            v = jnp.sum(wt[..., None] * gvp, 0)
            C = 4 * jnp.einsum("kn,kni,knj->nij", wt, gvp, dpos) / dx ** 2
            x = x + dt * v
            return x, v, C, J * (1 + dt * (C[:, 0, 0] + C[:, 1, 1]))
        return lax.fori_loop(0, steps, step, (x, v, C, J))
    return f, (unif(0.2, 0.6, n, 2), f32(n, 2, scale=0.5), np.zeros((n, 2, 2), np.float32), np.ones(n, np.float32))

@prog("heston_mc_paths")
def _():
    Pn, T = 4096, 252
    def f(k, s0, v0, kappa, theta, xi, rho, r, K):  # Heston: full-truncation Euler paths by scan, 32 strikes
        dt = 1.0 / T
        z = jax.random.normal(pkey(k), (T, 2, Pn))
        def step(c, zz):
            s, v = c
            vp = jnp.maximum(v, 0.0)
            sq = jnp.sqrt(vp * dt)
            z2 = rho * zz[0] + jnp.sqrt(1 - rho * rho) * zz[1]
            return (s + (r - 0.5 * vp) * dt + sq * zz[0], v + kappa * (theta - vp) * dt + xi * sq * z2), None
        (s, _), _ = lax.scan(step, (jnp.full(Pn, jnp.log(s0)), jnp.full(Pn, v0)), z)
        return jnp.exp(-r) * jnp.mean(jnp.maximum(jnp.exp(s)[None] - K[:, None], 0.0), 1)
    return f, (key(), np.float32(100), np.float32(0.04), np.float32(1.5), np.float32(0.04), np.float32(0.5),
               np.float32(-0.7), np.float32(0.02), np.linspace(70, 130, 32).astype(np.float32))


# --- geometry, graphics and robotics -----------------------------------------------------

@prog("ray_triangle_intersect")
def _():
    Rn, Tn = 2048, 128
    def f(o, d, v0, v1, v2):  # Moller-Trumbore, every ray against every triangle: nearest hit, id, barycentrics
        e1, e2 = v1 - v0, v2 - v0
        p = jnp.cross(d[:, None], e2[None])
        det = jnp.sum(e1[None] * p, -1)
        inv = 1.0 / det
        s = o[:, None] - v0[None]
        u = jnp.sum(s * p, -1) * inv
        q = jnp.cross(s, e1[None])
        v = jnp.sum(d[:, None] * q, -1) * inv
        t = jnp.sum(e2[None] * q, -1) * inv
        hit = (jnp.abs(det) > 1e-8) & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 1e-4)
        t = jnp.where(hit, t, jnp.inf)
        i = jnp.argmin(t, 1)
        pick = lambda a: jnp.take_along_axis(a, i[:, None], 1)[:, 0]
        tm = pick(t)
        return jnp.where(jnp.isinf(tm), -1.0, tm), jnp.where(jnp.isinf(tm), -1, i), pick(u), pick(v)
    c = f32(Tn, 3) * np.float32(2)
    d = f32(Rn, 3); d /= np.linalg.norm(d, axis=1, keepdims=True)
    return f, (np.zeros((Rn, 3), np.float32), d, c, c + f32(Tn, 3, scale=0.6), c + f32(Tn, 3, scale=0.6))

@prog("zbuffer_point_splat")
def _():
    Np, Hh, Ww = 262144, 256, 256
    def f(pts, col, Km, Rt):  # point-cloud render: project, z-buffer by scatter-min, winner's colour by scatter-set
        pc = pts @ Rt[:, :3].T + Rt[:, 3]
        uvw = pc @ Km.T
        z = uvw[:, 2]
        u = jnp.floor(uvw[:, 0] / z).astype(jnp.int32); v = jnp.floor(uvw[:, 1] / z).astype(jnp.int32)
        ok = (z > 0.1) & (u >= 0) & (u < Ww) & (v >= 0) & (v < Hh)
        pix = jnp.where(ok, v * Ww + u, Hh * Ww)
        zb = jnp.full(Hh * Ww + 1, jnp.inf).at[pix].min(z)
        win = ok & (z <= zb[pix])
        img = jnp.zeros((Hh * Ww + 1, 3)).at[jnp.where(win, pix, Hh * Ww)].set(col)
        return jnp.where(jnp.isinf(zb[:-1]), 0.0, zb[:-1]).reshape(Hh, Ww), img[:-1].reshape(Hh, Ww, 3)
    Km = np.array([[200, 0, 128], [0, 200, 128], [0, 0, 1]], np.float32)
    Rt = np.concatenate([np.eye(3), [[0], [0], [4]]], 1).astype(np.float32)
    return f, (f32(Np, 3), unif(0, 1, Np, 3), Km, Rt)

@prog("linear_blend_skinning")
def _():
    Bs, J, Vn = 16, 24, 6890
    parents = [-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21]
    def rodrigues(r):
        th = jnp.sqrt(jnp.sum(r * r, -1, keepdims=True) + 1e-8)
        k = r / th
        Kx = jnp.stack([jnp.zeros_like(k[:, 0]), -k[:, 2], k[:, 1], k[:, 2], jnp.zeros_like(k[:, 0]), -k[:, 0],
                        -k[:, 1], k[:, 0], jnp.zeros_like(k[:, 0])], -1).reshape(-1, 3, 3)
        s, c = jnp.sin(th)[..., None], jnp.cos(th)[..., None]
        return jnp.eye(3) + s * Kx + (1 - c) * Kx @ Kx
    def f(pose, betas, vt, sdirs, Jreg, wts):  # SMPL-style: shape blend, Rodrigues, kinematic chain, LBS
        v = vt + jnp.einsum("bk,vck->bvc", betas, sdirs)
        Jt = jnp.einsum("jv,bvc->bjc", Jreg, v)
        Rm = rodrigues(pose.reshape(-1, 3)).reshape(Bs, J, 3, 3)
        def T(Rj, t): return jnp.concatenate([jnp.concatenate([Rj, t[..., None]], -1), jnp.broadcast_to(jnp.array([0.0, 0, 0, 1]), (Bs, 1, 4))], -2)
        Gs = [T(Rm[:, 0], Jt[:, 0])]
        for j in range(1, J):
            Gs.append(Gs[parents[j]] @ T(Rm[:, j], Jt[:, j] - Jt[:, parents[j]]))
        Gm = jnp.stack(Gs, 1)
        Gm = Gm.at[..., :3, 3].add(-jnp.einsum("bjxy,bjy->bjx", Gm[..., :3, :3], Jt))
        Tv = jnp.einsum("vj,bjxy->bvxy", wts, Gm)
        return jnp.einsum("bvxy,bvy->bvx", Tv[..., :3, :3], v) + Tv[..., :3, 3]
    Jreg = np.abs(f32(J, Vn)); Jreg /= Jreg.sum(1, keepdims=True)
    wts = np.exp(3 * f32(Vn, J)); wts /= wts.sum(1, keepdims=True)
    return f, (f32(Bs, J * 3, scale=0.3), f32(Bs, 10), f32(Vn, 3), f32(Vn, 3, 10, scale=0.01), Jreg.astype(np.float32), wts.astype(np.float32))

@prog("chamfer_distance_grad")
def _():
    B, N, M = 2, 1024, 1024
    def loss(x, y):  # symmetric Chamfer distance between point clouds, gradient w.r.t. the predicted points
        d = jnp.sum(x * x, -1)[..., None] - 2 * x @ y.swapaxes(1, 2) + jnp.sum(y * y, -1)[:, None]
        return jnp.mean(jnp.min(d, 2)) + jnp.mean(jnp.min(d, 1))
    return jax.grad(loss), (f32(B, N, 3), f32(B, M, 3))

@prog("robot_ik_dls")
def _():
    Bn, it = 256, 10
    a = np.array([0, 0, 0, 0.0825, -0.0825, 0, 0.088], np.float32)
    dd = np.array([0.333, 0, 0.316, 0, 0.384, 0, 0.107], np.float32)
    al = np.array([0, -np.pi / 2, np.pi / 2, np.pi / 2, -np.pi / 2, np.pi / 2, np.pi / 2], np.float32)
    def fk(q):  # Panda-like DH chain, end-effector position
        T = jnp.eye(4)
        for i in range(7):
            ct, st, ca, sa = jnp.cos(q[i]), jnp.sin(q[i]), np.cos(al[i]), np.sin(al[i])
            A = jnp.array([[ct, -st, 0, a[i]], [st * ca, ct * ca, -sa, -sa * dd[i]], [st * sa, ct * sa, ca, ca * dd[i]], [0, 0, 0, 1]])
            T = T @ A
        return T[:3, 3]
    def f(q0, tgt):  # damped-least-squares IK for 256 targets: vmapped FK, jacfwd Jacobians, 10 iterations
        def body(_, q):
            e = tgt - jax.vmap(fk)(q)
            Jm = jax.vmap(jax.jacfwd(fk))(q)
            y = jnp.linalg.solve(Jm @ Jm.swapaxes(1, 2) + 0.01 * jnp.eye(3), e[..., None])
            return q + (Jm.swapaxes(1, 2) @ y)[..., 0]
        return lax.fori_loop(0, it, body, q0)
    q0 = f32(Bn, 7, scale=0.3)
    tgt = np.asarray(jax.vmap(fk)(q0 + f32(Bn, 7, scale=0.2)))
    return f, (q0, tgt)


# --- signal and image work ---------------------------------------------------------------

@prog("welch_psd")
def _():
    return (lambda x: jsp.signal.welch(x, fs=16000.0, nperseg=512, noverlap=256)), (f32(64, 32768),)

@prog("jpeg_dct_quant")
def _():
    Hh = 512
    qy = np.array([16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
                   18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99], np.float32).reshape(8, 8)
    M = np.array([[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]], np.float32)
    def f(img, Q):  # JPEG-style: YCbCr, 8x8 block DCT-II (jax.scipy.fft.dctn), quantize, dequantize, inverse, uint8
        x = img.astype(jnp.float32) @ M.T + jnp.array([0.0, 128, 128]) - 128
        bl = x.transpose(2, 0, 1).reshape(3, Hh // 8, 8, Hh // 8, 8).transpose(0, 1, 3, 2, 4)
        c = jnp.round(jsp.fft.dctn(bl, axes=(-2, -1), norm="ortho") / Q)
        r = jsp.fft.idctn(c * Q, axes=(-2, -1), norm="ortho").transpose(0, 1, 3, 2, 4).reshape(3, Hh, Hh).transpose(1, 2, 0)
        rgb = (r + 128 - jnp.array([0.0, 128, 128])) @ jnp.linalg.inv(M).T
        return c.astype(jnp.int16), jnp.clip(jnp.round(rgb), 0, 255).astype(jnp.uint8)
    yy, xx = np.mgrid[0:Hh, 0:Hh]
    img = np.stack([128 + 100 * np.sin(xx / 23.0), 128 + 80 * np.cos(yy / 17.0), 128 + 60 * np.sin((xx + yy) / 31.0)], -1) + R.normal(0, 8, (Hh, Hh, 3))
    return f, (np.clip(img, 0, 255).astype(np.uint8), np.stack([qy, 2 * qy, 2 * qy])[:, None, None])

@prog("bilateral_filter")
def _():
    r, ss, sr = 3, 2.0, 0.1
    def f(img):  # edge-preserving bilateral filter, 7x7 window of shifted slices over a reflect-padded NHWC batch
        H, W = img.shape[1:3]
        p = jnp.pad(img, ((0, 0), (r, r), (r, r), (0, 0)), mode="reflect")
        num = jnp.zeros_like(img); den = jnp.zeros_like(img)
        for dy in range(-r, r + 1):
            for dx in range(-r, r + 1):
                nb = p[:, r + dy:r + dy + H, r + dx:r + dx + W]
                w = np.exp(-(dy * dy + dx * dx) / (2 * ss * ss)) * jnp.exp(-((nb - img) ** 2) / (2 * sr * sr))
                num = num + w * nb; den = den + w
        return num / den
    return f, (unif(0, 1, 4, 256, 256, 3),)


# --- integer and data work ---------------------------------------------------------------

@prog("hyperloglog")
def _():
    p = 14
    m = 1 << p
    def f(keys):  # HyperLogLog: murmur3 fmix32, 2^14 registers by scatter-max of clz ranks, bias-corrected estimate
        h = keys
        h = h ^ (h >> 16); h = h * np.uint32(0x85ebca6b); h = h ^ (h >> 13); h = h * np.uint32(0xc2b2ae35); h = h ^ (h >> 16)
        idx = (h >> (32 - p)).astype(jnp.int32)
        rank = lax.clz((h << p) | np.uint32(1 << (p - 1))).astype(jnp.int32) + 1
        reg = jnp.zeros(m, jnp.int32).at[idx].max(rank)
        E = 0.7213 / (1 + 1.079 / m) * m * m / jnp.sum(jnp.exp2(-reg.astype(jnp.float32)))
        Vz = jnp.sum(reg == 0)
        return jnp.where((E <= 2.5 * m) & (Vz > 0), m * jnp.log(m / jnp.maximum(Vz, 1)), E), reg
    return f, (ints(0, 300000, 1 << 20, dt=np.int64).astype(np.uint32),)

@prog("decision_forest_traverse")
def _():
    Ntr, depth, Bn, F = 128, 8, 8192, 64
    ni = (1 << depth) - 1
    def f(X, feat, thr, leaf):  # forest inference: per-level gathers of split feature and threshold, leaf values summed
        tr = jnp.arange(Ntr)[None]
        def body(_, node):
            xv = jnp.take_along_axis(X, feat[tr, node], 1)
            return 2 * node + 1 + (xv > thr[tr, node]).astype(jnp.int32)
        node = lax.fori_loop(0, depth, body, jnp.zeros((Bn, Ntr), jnp.int32))
        return jnp.sum(leaf[tr, node - ni], 1)
    return f, (f32(Bn, F), ints(0, F, Ntr, ni), f32(Ntr, ni, scale=0.7), f32(Ntr, ni + 1, scale=0.1))

@prog("mx_fp8_block_matmul")
def _():
    M, K, N, BS = 256, 2048, 1024, 32
    def mxq(a):  # E8M0 power-of-two scale per 32 elements from frexp(amax), elements cast to float8_e4m3fn
        ab = a.reshape(a.shape[0], -1, BS)
        _, ex = jnp.frexp(jnp.max(jnp.abs(ab), -1, keepdims=True))
        e = (ex - 1 - 8).astype(jnp.int8)
        q = jnp.clip(ab * jnp.exp2(-e.astype(jnp.float32)), -448, 448).astype(jnp.float8_e4m3fn)
        return q, e
    def f(x, w):  # OCP MX-FP8: quantize activations and weights along K, dequantize to bf16, f32-accumulating GEMM
        xq, xe = mxq(x); wq, we = mxq(w.T)
        xd = (xq.astype(jnp.float32) * jnp.exp2(xe.astype(jnp.float32))).reshape(M, K).astype(jnp.bfloat16)
        wd = (wq.astype(jnp.float32) * jnp.exp2(we.astype(jnp.float32))).reshape(N, K).astype(jnp.bfloat16)
        return jnp.dot(xd, wd.T, preferred_element_type=jnp.float32), xq.view(jnp.uint8), xe
    return f, (f32(M, K), f32(K, N, scale=0.02))


# --- RL and black-box optimization ---------------------------------------------------------

@prog("cartpole_vmap_rollout")
def _():
    E, T = 2048, 200
    def f(p, s0):  # gymnax-style CartPole, 2048 envs, tanh-MLP policy with continuous force, scan with auto-reset
        def step(s, _):
            force = 10.0 * jnp.tanh(mlp(p, s, jnp.tanh)[:, 0])
            x, xd, th, thd = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
            ct, st = jnp.cos(th), jnp.sin(th)
            tmp = (force + 0.05 * thd * thd * st) / 1.1
            tha = (9.8 * st - ct * tmp) / (0.5 * (4.0 / 3.0 - 0.1 * ct * ct / 1.1))
            xa = tmp - 0.05 * tha * ct / 1.1
            ns = jnp.stack([x + 0.02 * xd, xd + 0.02 * xa, th + 0.02 * thd, thd + 0.02 * tha], -1)
            done = (jnp.abs(ns[:, 0]) > 2.4) | (jnp.abs(ns[:, 2]) > 0.2095)
            return jnp.where(done[:, None], s0, ns), 1.0 - done
        s, r = lax.scan(step, s0, None, length=T)
        return r.sum(0), s
    return f, (mlp_params(4, 64, 64, 1), unif(-0.05, 0.05, E, 4))

@prog("evolution_strategies")
def _():
    Pn, Bn, Din, Hd, sig = 256, 512, 32, 64, 0.02
    D = Din * Hd + Hd + Hd + 1
    def fwd(th, X):
        W1 = th[:Din * Hd].reshape(Din, Hd); b1 = th[Din * Hd:Din * Hd + Hd]
        w2 = th[Din * Hd + Hd:D - 1]
        return jnp.tanh(X @ W1 + b1) @ w2 + th[D - 1]
    def f(theta, k, X, y):  # OpenAI-ES: antithetic perturbations, vmapped fitness, centred ranks, gradient estimate
        eps = jax.random.normal(pkey(k), (Pn // 2, D))
        eps = jnp.concatenate([eps, -eps])
        F = jax.vmap(lambda t: -jnp.mean((fwd(t, X) - y) ** 2))(theta + sig * eps)
        rk = jnp.argsort(jnp.argsort(F)).astype(jnp.float32) / (Pn - 1) - 0.5
        return theta + 0.01 * (rk @ eps) / (Pn * sig), F.mean()
    X = f32(Bn, Din)
    return f, (f32(D, scale=0.1), key(), X, np.sin(X[:, 0]) + 0.5 * X[:, 1])


# --- SciPy special functions -------------------------------------------------------------

@prog("special_zeta_expi_jn")
def _():
    def f(x, s):  # Hurwitz zeta, trigamma, expi, exp1 and Bessel J_0..J_3 (jn by backward recurrence, on 1+x)
        return (jsp.special.zeta(s, x), jsp.special.polygamma(1, x), jsp.special.expi(x),
                jsp.special.exp1(x), jsp.special.bessel_jn(1 + x, v=3, n_iter=30))
    return f, (unif(0.1, 20, 1 << 14), unif(1.5, 6, 1 << 14))


if __name__ == "__main__":
    U.main(P)
