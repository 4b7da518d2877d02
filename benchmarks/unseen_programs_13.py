"""A thirteenth sweep of ordinary JAX programs outside `axle bench` (2026-11-29, twelfth session):
kinds the first twelve sweeps left out. Language-model pieces (Gemma-2 style soft-capped
sliding-window GQA attention with its gradient, packed sequences with per-document RoPE positions
and a block-diagonal causal mask, a decode step over an int8 KV cache with per-token scales,
Switch-style capacity-factor dispatch by one-hot einsums with its gradient, RetNet's chunkwise
retention, the gated delta rule scanned with its gradient, xLSTM's parallel mLSTM with its
gradient, BitNet b1.58 ternary / int8 quantization-aware training through straight-through
estimators, differential attention in bf16), vision (a ConvNeXt-V2 block with global response
normalization and its gradient, MaxViT block and grid attention, an FPN top-down path in NCHW with
its gradient, DeepLab's ASPP with dilations 6 / 12 / 18 in NCHW, a gated PixelCNN with masked
convolutions and its gradient, involution through conv_general_dilated_patches, a neural-style
Gram loss differentiated with respect to the image, a spatial transformer's affine sampler with
its gradient, CutMix / MixUp on a uint8 batch), numerics with loops (a multigrid V-cycle for
periodic Poisson, red-black SOR, Peaceman-Rachford ADI by tridiagonal solves, Stam's stable
fluids, molecular dynamics with cell-list neighbour tables, a Kalman filter with an RTS smoother,
SVGD with the median heuristic, Langevin sampling of an energy model, a deep equilibrium layer
with an implicit custom_vjp gradient, the sliced Wasserstein gradient through sorts, a Glow
step in NCHW with a slogdet, Lanczos with full reorthogonalization), recommendation, graph and
data work (a field-aware FM gradient, DIN target attention with its gradient, an ALS user solve,
GraphSAGE with sampled neighbours from a CSR, NDCG / AUC / MRR by argsorts, lax.approx_max_k
retrieval, run-length encoding by scatters) and training steps (SAM with AdamW, microbatch gradient
accumulation by scan in bf16 with f32 master weights and clipping, Sophia with Hutchinson's
Hessian estimate).

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_13.py [names]"""

import itertools

import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy as jsp
from jax import lax
import ml_dtypes

import unseen_programs as U

R, f32, unif, ints, key, pkey, mlp_params, mlp = U.helpers(13)
P, prog = U.sweep()
BF = ml_dtypes.bfloat16
NCHW, NHWC = ("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC")
def conv(x, w, stride=(1, 1), pad="SAME", dn=NCHW, **kw):
    return lax.conv_general_dilated(x, w, stride, pad, dimension_numbers=dn, **kw)
ln, mha = U.ln, U.mha
xent = U.xent
def gnorm(t): return jnp.sqrt(sum(jnp.sum(jnp.square(a.astype(jnp.float32))) for a in jax.tree_util.tree_leaves(t)))
def orth(n): return np.linalg.qr(R.standard_normal((n, n)))[0].astype(np.float32)


# --- language models ---------------------------------------------------------------------

@prog("softcap_swa_gqa_grad")
def _():
    B, L, D, H, KV, hd, W, cap = 2, 256, 384, 6, 2, 64, 96, 50.0
    i = np.arange(L)
    mask = (i[:, None] >= i[None]) & (i[:, None] - i[None] < W)
    def loss(p, x):  # Gemma-2 attention: GQA, logits soft-capped by cap * tanh(s / cap), sliding-window causal mask
        wq, wk, wv, wo = p
        q = (x @ wq).reshape(B, L, KV, H // KV, hd)
        k = (x @ wk).reshape(B, L, KV, hd); v = (x @ wv).reshape(B, L, KV, hd)
        s = cap * jnp.tanh(jnp.einsum("blgrd,bmgd->bgrlm", q, k) / np.sqrt(hd) / cap)
        a = jax.nn.softmax(jnp.where(mask, s, -1e30), -1)
        o = jnp.einsum("bgrlm,bmgd->blgrd", a, v).reshape(B, L, H * hd)
        return jnp.mean((o @ wo) ** 2)
    sc = D ** -0.5
    p = [f32(D, H * hd, scale=2 * sc), f32(D, KV * hd, scale=2 * sc), f32(D, KV * hd, scale=sc), f32(H * hd, D, scale=sc)]
    return jax.grad(loss), (p, f32(B, L, D))

@prog("packed_doc_rope_attn")
def _():
    B, L, H, hd = 2, 512, 8, 64
    idx = jnp.arange(L)
    def f(q, k, v, seg):  # packed sequences: positions restart per document (cummax of starts), RoPE there, block-diagonal causal mask
        start = jnp.concatenate([jnp.ones((B, 1), bool), seg[:, 1:] != seg[:, :-1]], 1)
        pos = (idx - lax.cummax(jnp.where(start, idx, 0), axis=1)).astype(jnp.float32)
        ang = pos[..., None] / 10000.0 ** (jnp.arange(0, hd, 2) / hd)
        cos, sin = jnp.cos(ang)[:, :, None], jnp.sin(ang)[:, :, None]
        def rope(t):
            t1, t2 = t[..., ::2], t[..., 1::2]
            return jnp.stack([t1 * cos - t2 * sin, t1 * sin + t2 * cos], -1).reshape(t.shape)
        s = jnp.einsum("blhd,bmhd->bhlm", rope(q), rope(k)) / np.sqrt(hd)
        m = (seg[:, :, None] == seg[:, None]) & (idx[:, None] >= idx[None])
        return jnp.einsum("bhlm,bmhd->blhd", jax.nn.softmax(jnp.where(m[:, None], s, -jnp.inf), -1), v)
    seg = np.sort(R.integers(0, 7, (B, L)), axis=1).astype(np.int32)
    return f, (f32(B, L, H, hd), f32(B, L, H, hd), f32(B, L, H, hd), seg)

@prog("int8_kv_cache_decode")
def _():
    B, KV, G, S, hd = 4, 8, 4, 1024, 128
    def f(q, kn, vn, kc, ks, vc, vs, lens):  # one decode step: quantize the new K / V per token, write at each row's length, dequantize, masked GQA
        def quant(t):
            s = jnp.max(jnp.abs(t), -1, keepdims=True) / 127 + 1e-8
            return jnp.clip(jnp.round(t / s), -127, 127).astype(jnp.int8), s
        kq, ksn = quant(kn); vq, vsn = quant(vn)
        put = jax.vmap(lambda c, new, l: lax.dynamic_update_slice(c, new[:, None], (0, l, 0)))
        kc, ks, vc, vs = put(kc, kq, lens), put(ks, ksn, lens), put(vc, vq, lens), put(vs, vsn, lens)
        s = jnp.einsum("bkgd,bksd->bkgs", q, kc.astype(jnp.float32) * ks) / np.sqrt(hd)
        s = jnp.where(jnp.arange(S) <= lens[:, None, None, None], s, -jnp.inf)
        o = jnp.einsum("bkgs,bksd->bkgd", jax.nn.softmax(s, -1), vc.astype(jnp.float32) * vs)
        return o, kc, ks, vc, vs
    i8 = lambda: ints(-127, 128, B, KV, S, hd, dt=np.int8)
    sc = lambda: unif(0.005, 0.02, B, KV, S, 1)
    return f, (f32(B, KV, G, hd), f32(B, KV, hd), f32(B, KV, hd), i8(), sc(), i8(), sc(), ints(100, S - 1, B))

@prog("moe_capacity_dispatch_grad")
def _():
    T, D, F, E, C = 512, 256, 512, 8, 80
    def loss(p, x):  # Switch routing: top-1 expert, slot by cumsum of the one-hot, capacity drop, dispatch / combine einsums, balance loss
        wr, w1, w2 = p
        probs = jax.nn.softmax(x @ wr, -1)
        oh = jax.nn.one_hot(jnp.argmax(probs, -1), E)
        slot = (jnp.cumsum(oh, 0) * oh - 1).astype(jnp.int32)
        disp = jax.nn.one_hot(slot, C) * ((slot < C) & (oh > 0))[..., None]
        comb = disp * jnp.sum(probs * oh, -1)[:, None, None]
        h = jax.nn.gelu(jnp.einsum("ecd,edf->ecf", jnp.einsum("tec,td->ecd", disp, x), w1))
        y = jnp.einsum("tec,ecd->td", comb, jnp.einsum("ecf,efd->ecd", h, w2))
        return jnp.mean((y - x) ** 2) + 0.01 * E * jnp.sum(oh.mean(0) * probs.mean(0))
    return jax.grad(loss), ((f32(D, E, scale=0.3), f32(E, D, F, scale=D ** -0.5), f32(E, F, D, scale=F ** -0.5)), f32(T, D))

@prog("retnet_chunkwise")
def _():
    B, H, L, hd, Cn = 2, 8, 1024, 64, 64
    lg = np.log(1 - 2.0 ** (-5 - np.arange(H))).astype(np.float32)[:, None]
    i = np.arange(Cn)
    Dm = np.where(i[:, None] >= i[None], np.exp(lg[..., None] * (i[:, None] - i[None])), 0).astype(np.float32)
    dq, dk, gC = np.exp(lg * (i + 1))[..., None], np.exp(lg * (Cn - 1 - i))[..., None], np.exp(lg * Cn)[..., None]
    def f(q, k, v):  # RetNet retention, chunkwise: decay-masked parallel retention in a chunk plus a scanned state across chunks, group norm
        n = L // Cn
        q, k, v = [t.reshape(B, H, n, Cn, hd).transpose(2, 0, 1, 3, 4) for t in (q, k, v)]
        def step(S, c):
            qc, kc, vc = c
            o = (qc @ kc.swapaxes(-1, -2) * Dm) @ vc + (qc * dq) @ S
            return gC * S + (kc * dk).swapaxes(-1, -2) @ vc, o
        _, o = lax.scan(step, jnp.zeros((B, H, hd, hd)), (q, k, v))
        o = o.transpose(1, 2, 0, 3, 4).reshape(B, H, L, hd)
        return (o - o.mean(-1, keepdims=True)) * lax.rsqrt(o.var(-1, keepdims=True) + 1e-5)
    return f, (f32(B, H, L, hd, scale=hd ** -0.5), f32(B, H, L, hd, scale=hd ** -0.5), f32(B, H, L, hd))

@prog("gated_deltanet_scan_grad")
def _():
    B, H, L, dk, dv = 2, 4, 128, 64, 64
    def loss(q, k, v, a, b):  # gated delta rule: S_t = a_t S_{t-1} (I - b_t k_t k_t^T) + b_t v_t k_t^T, o_t = S_t q_t, by lax.scan
        k = k / jnp.linalg.norm(k, axis=-1, keepdims=True)
        def step(S, c):
            qt, kt, vt, at, bt = c
            S = at[..., None, None] * S
            S = S + bt[..., None, None] * (vt - jnp.einsum("bhvk,bhk->bhv", S, kt))[..., None] * kt[..., None, :]
            return S, jnp.einsum("bhvk,bhk->bhv", S, qt)
        mv = lambda t: jnp.moveaxis(t, 2, 0)
        _, o = lax.scan(step, jnp.zeros((B, H, dv, dk)), (mv(q), mv(k), mv(v), mv(a), mv(b)))
        return jnp.mean(o ** 2)
    return jax.grad(loss, argnums=(0, 1, 2)), (f32(B, H, L, dk, scale=dk ** -0.5), f32(B, H, L, dk), f32(B, H, L, dv),
                                               unif(0.9, 1.0, B, H, L), unif(0.1, 0.9, B, H, L))

@prog("mlstm_parallel_grad")
def _():
    B, H, L, hd = 2, 8, 256, 64
    i = np.arange(L)
    def loss(q, k, v, ig, fg):  # xLSTM mLSTM parallel form: cumulated log-sigmoid forget gates, exp input gates, row-max stabilizer, normalizer
        lf = jnp.cumsum(jax.nn.log_sigmoid(fg), -1)
        Dl = jnp.where(i[:, None] >= i[None], lf[..., :, None] - lf[..., None, :] + ig[..., None, :], -jnp.inf)
        m = jnp.max(Dl, -1, keepdims=True)
        C = (q @ k.swapaxes(-1, -2) / np.sqrt(hd)) * jnp.exp(Dl - m)
        h = (C / jnp.maximum(jnp.abs(C.sum(-1, keepdims=True)), jnp.exp(-m))) @ v
        return jnp.mean(h ** 2)
    return jax.grad(loss, argnums=(0, 1, 2, 3, 4)), (f32(B, H, L, hd), f32(B, H, L, hd), f32(B, H, L, hd), f32(B, H, L), f32(B, H, L) + 3)

@prog("bitnet_ternary_qat_grad")
def _():
    T, D, F = 256, 256, 768
    def ste(x, q): return x + lax.stop_gradient(q - x)
    def bitlinear(x, w):  # RMS norm, per-token absmax int8 activations, absmean ternary weights, straight-through gradients
        x = x * lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6)
        sx = 127 / jnp.maximum(jnp.max(jnp.abs(x), -1, keepdims=True), 1e-5)
        sw = jnp.maximum(jnp.mean(jnp.abs(w)), 1e-5)
        return ste(x, jnp.clip(jnp.round(x * sx), -128, 127) / sx) @ ste(w, jnp.clip(jnp.round(w / sw), -1, 1) * sw)
    def loss(p, x, y):
        h = jax.nn.silu(bitlinear(x, p[0])) * bitlinear(x, p[1])
        return jnp.mean((bitlinear(h, p[2]) - y) ** 2)
    def away(w):  # weights kept 0.1 away from the ternary rounding boundaries w / mean|w| = +-0.5, +-1.5
        for _ in range(4):
            sw = np.abs(w).mean(); r = w / sw
            w = ((np.round(r) + np.clip(r - np.round(r), -0.4, 0.4)) * sw).astype(np.float32)
        return w
    return jax.grad(loss), ((away(f32(D, F, scale=D ** -0.5)), away(f32(D, F, scale=D ** -0.5)), away(f32(F, D, scale=F ** -0.5))), f32(T, D), f32(T, D))

@prog("diff_attention_bf16")
def _():
    B, L, D, H = 4, 256, 512, 4
    hd = D // H // 2
    mask = np.tril(np.ones((L, L), bool))
    def f(x, wq, wk, wv, wo, lam):  # Differential Transformer: two causal softmax maps per head subtracted with lambda, per-head RMS norm, bf16
        q = (x @ wq).reshape(B, L, H, 2, hd); k = (x @ wk).reshape(B, L, H, 2, hd); v = (x @ wv).reshape(B, L, H, 2 * hd)
        s = jnp.einsum("blhtd,bmhtd->bhtlm", q, k, preferred_element_type=jnp.float32) / np.sqrt(hd)
        a = jax.nn.softmax(jnp.where(mask, s, -jnp.inf), -1)
        a = (a[:, :, 0] - lam * a[:, :, 1]).astype(jnp.bfloat16)
        o = jnp.einsum("bhlm,bmhd->blhd", a, v, preferred_element_type=jnp.float32)
        o = 0.2 * o * lax.rsqrt(jnp.mean(o * o, -1, keepdims=True) + 1e-6)
        return o.reshape(B, L, D).astype(jnp.bfloat16) @ wo
    w = lambda: f32(D, D, scale=D ** -0.5).astype(BF)
    return f, (f32(B, L, D).astype(BF), w(), w(), w(), w(), np.float32(0.6))


# --- vision ------------------------------------------------------------------------------

@prog("convnextv2_grn_grad")
def _():
    B, S, C = 2, 28, 96
    def loss(p, x):  # ConvNeXt-V2 block, NHWC: 7x7 depthwise, LN, 4x MLP with global response normalization
        dw, w1, gam, bet, w2 = p
        h = jax.nn.gelu(ln(conv(x, dw, dn=NHWC, feature_group_count=C)) @ w1)
        g = jnp.sqrt(jnp.sum(h * h, axis=(1, 2), keepdims=True))
        h = gam * (h * (g / (g.mean(-1, keepdims=True) + 1e-6))) + bet + h
        return jnp.mean((x + h @ w2) ** 2)
    p = (f32(7, 7, 1, C, scale=0.1), f32(C, 4 * C, scale=C ** -0.5), f32(4 * C, scale=0.1), f32(4 * C, scale=0.1), f32(4 * C, C, scale=(4 * C) ** -0.5))
    return jax.grad(loss), (p, f32(B, S, S, C))

@prog("maxvit_block_grid_attn")
def _():
    B, S, C, Pw, H = 4, 56, 64, 7, 2
    n = S // Pw
    def f(x, w1, o1, w2, o2):  # MaxViT: attention in 7x7 windows, then in a 7x7 dilated grid, by reshape / transpose partitions (NHWC)
        t = x.reshape(B, n, Pw, n, Pw, C).transpose(0, 1, 3, 2, 4, 5).reshape(-1, Pw * Pw, C)
        t = t + mha(ln(t), w1, o1, H)
        x = t.reshape(B, n, n, Pw, Pw, C).transpose(0, 1, 3, 2, 4, 5).reshape(B, S, S, C)
        t = x.reshape(B, Pw, n, Pw, n, C).transpose(0, 2, 4, 1, 3, 5).reshape(-1, Pw * Pw, C)
        t = t + mha(ln(t), w2, o2, H)
        return t.reshape(B, n, n, Pw, Pw, C).transpose(0, 3, 1, 4, 2, 5).reshape(B, S, S, C)
    sc = C ** -0.5
    return f, (f32(B, S, S, C), f32(C, 3 * C, scale=sc), f32(C, C, scale=sc), f32(C, 3 * C, scale=sc), f32(C, C, scale=sc))

@prog("fpn_topdown_nchw_grad")
def _():
    B, C = 2, 64
    chans, sizes = (64, 128, 256, 512), (48, 24, 12, 6)
    def up2(t): return jnp.repeat(jnp.repeat(t, 2, 2), 2, 3)
    def loss(p, feats):  # FPN: 1x1 laterals, nearest 2x upsampling top-down, 3x3 smoothing per level, NCHW
        lat, smooth = p
        t = conv(feats[3], lat[3]); out = jnp.mean(conv(t, smooth[3]) ** 2)
        for i in (2, 1, 0):
            t = up2(t) + conv(feats[i], lat[i])
            out = out + jnp.mean(conv(t, smooth[i]) ** 2)
        return out
    lat = [f32(C, c, 1, 1, scale=c ** -0.5) for c in chans]; smooth = [f32(C, C, 3, 3, scale=(9 * C) ** -0.5) for _ in chans]
    return jax.grad(loss, argnums=(0, 1)), ((lat, smooth), [f32(B, c, s, s) for c, s in zip(chans, sizes)])

@prog("aspp_nchw")
def _():
    B, Cin, S, C = 2, 128, 33, 64
    def f(x, w0, w6, w12, w18, wp, wproj):  # DeepLab ASPP: 1x1, three dilated 3x3 (6, 12, 18), image pooling, concat, 1x1 projection
        br = [jax.nn.relu(conv(x, w0))] + [jax.nn.relu(conv(x, w, rhs_dilation=(r, r))) for w, r in ((w6, 6), (w12, 12), (w18, 18))]
        br.append(jnp.broadcast_to(jax.nn.relu(conv(x.mean((2, 3), keepdims=True), wp)), br[0].shape))
        return jax.nn.relu(conv(jnp.concatenate(br, 1), wproj))
    w3 = lambda: f32(C, Cin, 3, 3, scale=(9 * Cin) ** -0.5)
    return f, (f32(B, Cin, S, S), f32(C, Cin, 1, 1, scale=Cin ** -0.5), w3(), w3(), w3(), f32(C, Cin, 1, 1, scale=Cin ** -0.5),
               f32(C, 5 * C, 1, 1, scale=(5 * C) ** -0.5))

@prog("pixelcnn_gated_grad")
def _():
    B, S, C, K = 8, 28, 32, 3
    mA = np.ones((5, 5, 1, 1), np.float32); mA[2, 2:] = 0; mA[3:] = 0
    mB = np.ones((K, K, 1, 1), np.float32); mB[1, 2:] = 0; mB[2:] = 0
    def loss(p, x, y):  # PixelCNN: mask-A 5x5 then mask-B 3x3 convs with gated tanh * sigmoid units and residuals, 16-level softmax
        w0, ws, wout = p
        h = conv(x, w0 * mA, dn=NHWC)
        h = jnp.tanh(h[..., :C]) * jax.nn.sigmoid(h[..., C:])
        for w in ws:
            g = conv(h, w * mB, dn=NHWC)
            h = h + jnp.tanh(g[..., :C]) * jax.nn.sigmoid(g[..., C:])
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ wout) * jax.nn.one_hot(y, 16), -1))
    p = (f32(5, 5, 1, 2 * C, scale=0.3), [f32(K, K, C, 2 * C, scale=(9 * C) ** -0.5) for _ in range(4)], f32(C, 16, scale=C ** -0.5))
    y = ints(0, 16, B, S, S)
    return jax.grad(loss), (p, (y[..., None] / 15.0).astype(np.float32), y)

@prog("involution_nchw")
def _():
    B, C, S, K, G, r = 2, 64, 28, 7, 4, 4
    def f(x, w1, w2):  # involution: a K x K kernel per pixel and group from a 1x1 bottleneck, applied to the unfolded patches
        k = conv(jax.nn.relu(conv(x, w1)), w2).reshape(B, G, K * K, S, S)
        pt = lax.conv_general_dilated_patches(x, (K, K), (1, 1), "SAME").reshape(B, G, C // G, K * K, S, S)
        return jnp.einsum("bgkhw,bgckhw->bgchw", k, pt).reshape(B, C, S, S)
    return f, (f32(B, C, S, S), f32(C // r, C, 1, 1, scale=C ** -0.5), f32(G * K * K, C // r, 1, 1, scale=(C // r) ** -0.5 / K))

@prog("style_gram_input_grad")
def _():
    B, S = 2, 64
    ws = [f32(3, 3, a, b, scale=(9 * a) ** -0.5 * 1.4) for a, b in ((3, 32), (32, 32), (32, 64), (64, 64))]
    def feats(ws, x):
        out = []
        for i, w in enumerate(ws):
            x = jax.nn.relu(conv(x, w, dn=NHWC)); out.append(x)
            if i % 2: x = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4
        return out
    def gram(t): t = t.reshape(t.shape[0], -1, t.shape[-1]); return t.swapaxes(1, 2) @ t / t.shape[1]
    def loss(img, ws, grams, content):  # neural style: VGG-like features, Gram matrices against a style image, content term; d/d image
        fs = feats(ws, img)
        return sum(jnp.sum((gram(t) - g) ** 2) for t, g in zip(fs, grams)) + 1e-2 * jnp.sum((fs[2] - content) ** 2)
    style, cont = unif(0, 1, B, S, S, 3), unif(0, 1, B, S, S, 3)
    grams = [np.asarray(gram(t)) for t in jax.jit(feats)(ws, style)]
    return jax.grad(loss), (unif(0, 1, B, S, S, 3), ws, grams, np.asarray(jax.jit(feats)(ws, cont)[2]))

@prog("stn_affine_grad")
def _():
    B, C, H, W, K = 16, 16, 48, 48, 10
    ys, xs = np.meshgrid(np.linspace(-1, 1, H), np.linspace(-1, 1, W), indexing="ij")
    base = np.stack([xs, ys, np.ones_like(xs)], -1).astype(np.float32)
    def sample(img, theta):  # affine_grid + bilinear grid_sample with zero padding, align_corners=True
        g = base @ theta.T
        gx, gy = (g[..., 0] + 1) * (W - 1) / 2, (g[..., 1] + 1) * (H - 1) / 2
        x0, y0 = jnp.floor(gx), jnp.floor(gy); wx, wy = gx - x0, gy - y0
        def at(yy, xx):
            ok = (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
            return img[:, jnp.clip(yy, 0, H - 1).astype(jnp.int32), jnp.clip(xx, 0, W - 1).astype(jnp.int32)] * ok
        return at(y0, x0) * (1 - wx) * (1 - wy) + at(y0, x0 + 1) * wx * (1 - wy) + at(y0 + 1, x0) * (1 - wx) * wy + at(y0 + 1, x0 + 1) * wx * wy
    def loss(p, x, y):  # spatial transformer: a localization head predicts theta, the sampler warps NCHW maps, gradients to theta and image
        wloc, wcls = p
        theta = np.array([[0.9, 0, 0], [0, 0.9, 0]], np.float32) + (x.mean(1).reshape(B, -1) @ wloc).reshape(B, 2, 3)
        return xent(jax.vmap(sample)(x, theta).reshape(B, -1) @ wcls, y)
    return jax.grad(loss, argnums=(0, 1)), ((f32(H * W, 6, scale=0.002), f32(C * H * W, K, scale=0.01)), f32(B, C, H, W), ints(0, K, B))

@prog("cutmix_mixup_u8")
def _():
    B, S, K = 64, 96, 100
    ii = np.arange(S)
    def f(k, img, y):  # uint8 batch to normalized f32, a partner by permutation, per-sample CutMix box or MixUp blend, mixed one-hot labels
        k1, k2, k3, k4 = jax.random.split(pkey(k), 4)
        x = (img.astype(jnp.float32) / 255 - jnp.array([0.485, 0.456, 0.406])) / jnp.array([0.229, 0.224, 0.225])
        perm = jax.random.permutation(k1, B)
        lam = jax.random.uniform(k2, (B,))
        cut = jax.random.bernoulli(k3, 0.5, (B,))
        c = jax.random.uniform(k4, (B, 2)) * S
        h = jnp.sqrt(1 - lam) * S / 2
        lo, hi = jnp.clip(c - h[:, None], 0, S).astype(jnp.int32), jnp.clip(c + h[:, None], 0, S).astype(jnp.int32)
        box = ((ii >= lo[:, :1]) & (ii < hi[:, :1]))[:, :, None] & ((ii >= lo[:, 1:]) & (ii < hi[:, 1:]))[:, None, :]
        lam_c = 1 - jnp.prod(hi - lo, -1) / S ** 2
        xp = x[perm]
        out = jnp.where(cut[:, None, None, None], jnp.where(box[..., None], xp, x), lam[:, None, None, None] * x + (1 - lam[:, None, None, None]) * xp)
        lm = jnp.where(cut, lam_c, lam)[:, None]
        oh = jax.nn.one_hot(y, K)
        return out, lm * oh + (1 - lm) * oh[perm]
    return f, (key(3), ints(0, 256, B, S, S, 3, dt=np.uint8), ints(0, K, B))


# --- numerics with loops -----------------------------------------------------------------

@prog("multigrid_vcycle_poisson")
def _():
    B, N, LV, CY = 4, 256, 6, 6
    def lap(u, h): return (jnp.roll(u, 1, -1) + jnp.roll(u, -1, -1) + jnp.roll(u, 1, -2) + jnp.roll(u, -1, -2) - 4 * u) / h ** 2
    def smooth(u, f, h, n=3): return lax.fori_loop(0, n, lambda i, u: u + 0.8 * h * h / 4 * (f + lap(u, h)), u)
    def vcycle(u, f, h, l):  # weighted Jacobi sweeps by fori_loop, full-weighting restriction by reshape-mean, piecewise-constant prolongation
        u = smooth(u, f, h)
        if l == LV - 1: return smooth(u, f, h, 30)
        r = f + lap(u, h)
        m = u.shape[-1] // 2
        e = vcycle(jnp.zeros((B, m, m)), r.reshape(B, m, 2, m, 2).mean((2, 4)), 2 * h, l + 1)
        return smooth(u + jnp.repeat(jnp.repeat(e, 2, -1), 2, -2), f, h)
    def f(rhs):  # periodic -lap u = f, mean-free, CY V-cycles in a fori_loop
        rhs = rhs - rhs.mean((1, 2), keepdims=True)
        u = lax.fori_loop(0, CY, lambda i, u: vcycle(u, rhs, 1.0 / N, 0), jnp.zeros_like(rhs))
        return u - u.mean((1, 2), keepdims=True)
    return f, (f32(B, N, N),)

@prog("red_black_sor")
def _():
    N, IT, om = 256, 100, 1.9
    ii = np.arange(N)
    red = (ii[:, None] + ii[None]) % 2 == 0
    def f(rhs, u):  # Dirichlet Poisson by red-black SOR: each colour a masked stencil update of the interior, in a fori_loop
        h2 = 1.0 / (N + 1) ** 2
        def half(u, mask):
            inner = u[1:-1, 1:-1]
            gs = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] + h2 * rhs)
            return u.at[1:-1, 1:-1].set(jnp.where(mask, inner + om * (gs - inner), inner))
        return lax.fori_loop(0, IT, lambda i, u: half(half(u, red), ~red), u)
    u0 = np.zeros((N + 2, N + 2), np.float32); u0[0] = 1; u0[:, -1] = np.linspace(1, 0, N + 2)
    return f, (f32(N, N, scale=10.0), u0)

@prog("adi_heat_tridiag")
def _():
    B, N, ST, r = 2, 256, 10, 2.0
    dl = np.broadcast_to(np.r_[0, np.full(N - 1, -r)], (B, N)).astype(np.float32)
    du = np.broadcast_to(np.r_[np.full(N - 1, -r), 0], (B, N)).astype(np.float32)
    d = np.full((B, N), 1 + 2 * r, np.float32)
    def f(u0):  # Peaceman-Rachford ADI for u_t = lap u: explicit along one axis, tridiagonal solves along the other, then swap
        def expl(u):
            p = jnp.pad(u, ((0, 0), (1, 1), (0, 0)))
            return u + r * (p[:, :-2] - 2 * u + p[:, 2:])
        def step(i, u):
            u = lax.linalg.tridiagonal_solve(dl, d, du, expl(u).swapaxes(1, 2))
            return lax.linalg.tridiagonal_solve(dl, d, du, expl(u).swapaxes(1, 2))
        return lax.fori_loop(0, ST, step, u0)
    return f, (unif(0, 1, B, N, N),)

@prog("stable_fluids")
def _():
    N, ST, JI, dt = 192, 4, 40, 0.5
    ys, xs = np.meshgrid(np.arange(N, dtype=np.float32), np.arange(N, dtype=np.float32), indexing="ij")
    rl = jnp.roll
    def bilerp(q, x, y):
        x0, y0 = jnp.floor(x), jnp.floor(y); tx, ty = x - x0, y - y0
        x0, y0 = x0.astype(jnp.int32) % N, y0.astype(jnp.int32) % N
        x1, y1 = (x0 + 1) % N, (y0 + 1) % N
        return (q[y0, x0] * (1 - tx) + q[y0, x1] * tx) * (1 - ty) + (q[y1, x0] * (1 - tx) + q[y1, x1] * tx) * ty
    def f(u, v, dens):  # Stam's stable fluids, periodic: semi-Lagrangian advection by bilinear gathers, Jacobi pressure, projection
        def step(_, s):
            u, v, dd = s
            bx, by = xs - dt * u, ys - dt * v
            u, v, dd = bilerp(u, bx, by), bilerp(v, bx, by), bilerp(dd, bx, by)
            div = 0.5 * (rl(u, -1, 1) - rl(u, 1, 1) + rl(v, -1, 0) - rl(v, 1, 0))
            p = lax.fori_loop(0, JI, lambda i, p: (rl(p, 1, 0) + rl(p, -1, 0) + rl(p, 1, 1) + rl(p, -1, 1) - div) / 4, jnp.zeros_like(div))
            return u - 0.5 * (rl(p, -1, 1) - rl(p, 1, 1)), v - 0.5 * (rl(p, -1, 0) - rl(p, 1, 0)), dd
        return lax.fori_loop(0, ST, step, (u, v, dens))
    k = np.fft.fftfreq(N)
    sm = lambda: np.real(np.fft.ifft2(np.fft.fft2(R.standard_normal((N, N))) * np.exp(-(k[:, None] ** 2 + k ** 2) * 800))).astype(np.float32)
    u, v = sm(), sm()
    return f, (u * 2 / np.abs(u).max(), v * 2 / np.abs(v).max(), unif(0, 1, N, N))

@prog("md_cell_list_lj")
def _():
    n1, nc, cap, rc, dt = 12, 6, 16, 2.2, 0.002
    N, L = n1 ** 3, n1 * 1.12
    cs = L / nc
    off = np.array(list(itertools.product((-1, 0, 1), repeat=3)), np.int32)
    def forces(x):  # cell ids, stable argsort, per-cell tables by scatter, 27 neighbour cells gathered, minimum-image LJ
        c = jnp.floor(x / cs).astype(jnp.int32) % nc
        cid = (c[:, 0] * nc + c[:, 1]) * nc + c[:, 2]
        o = jnp.argsort(cid); sc = cid[o]
        rank = jnp.arange(N) - jnp.searchsorted(sc, jnp.arange(nc ** 3))[sc]
        table = jnp.full((nc ** 3, cap), N, jnp.int32).at[sc, rank].set(o.astype(jnp.int32), mode="drop")
        nb = (c[:, None, :] + off) % nc
        nbr = table[(nb[..., 0] * nc + nb[..., 1]) * nc + nb[..., 2]].reshape(N, 27 * cap)
        d = x[:, None] - jnp.concatenate([x, jnp.zeros((1, 3))])[nbr]
        d = d - L * jnp.round(d / L)
        r2 = jnp.sum(d * d, -1)
        ok = (nbr != jnp.arange(N)[:, None]) & (nbr < N) & (r2 < rc * rc)
        r2 = jnp.where(ok, r2, 1.0)
        i6 = 1 / r2 ** 3
        return jnp.sum(jnp.where(ok, 24 * (2 * i6 * i6 - i6) / r2, 0.0)[..., None] * d, 1)
    def f(x, v):  # velocity Verlet, 3 steps, neighbour tables rebuilt every step
        def step(i, s):
            x, v, F = s
            v = v + 0.5 * dt * F; x = (x + dt * v) % L
            F = forces(x)
            return x, v + 0.5 * dt * F, F
        return lax.fori_loop(0, 3, step, (x, v, forces(x)))[:2]
    g = np.stack(np.meshgrid(*[np.arange(n1)] * 3, indexing="ij"), -1).reshape(-1, 3) * 1.12 + 0.3
    return f, ((g + f32(N, 3, scale=0.03)).astype(np.float32), f32(N, 3, scale=0.5))

@prog("kalman_rts_smoother")
def _():
    B, T, n, m = 64, 100, 8, 4
    def f(A, Q, Hm, Rm, ys, m0, P0):  # batched Kalman filter scan, then the RTS smoother scanned backwards, batched small solves
        mT = lambda X: X.swapaxes(-1, -2)
        def filt(c, y):
            mf, Pf = c
            mp = jnp.einsum("bij,bj->bi", A, mf); Pp = A @ Pf @ mT(A) + Q
            S = Hm @ Pp @ mT(Hm) + Rm
            K = mT(jnp.linalg.solve(S, Hm @ Pp))
            mf = mp + jnp.einsum("bij,bj->bi", K, y - jnp.einsum("bij,bj->bi", Hm, mp))
            Pf = Pp - K @ S @ mT(K)
            return (mf, Pf), (mf, Pf, mp, Pp)
        _, (mf, Pf, mp, Pp) = lax.scan(filt, (m0, P0), ys)
        def smooth(c, z):
            ms, Ps = c
            mf_, Pf_, mpn, Ppn = z
            G = mT(jnp.linalg.solve(Ppn, A @ Pf_))
            ms = mf_ + jnp.einsum("bij,bj->bi", G, ms - mpn)
            Ps = Pf_ + G @ (Ps - Ppn) @ mT(G)
            return (ms, Ps), (ms, Ps)
        _, (ms, Ps) = lax.scan(smooth, (mf[-1], Pf[-1]), (mf[:-1], Pf[:-1], mp[1:], Pp[1:]), reverse=True)
        return ms, Ps
    A = np.stack([0.97 * orth(n) for _ in range(B)]); Hm = f32(B, m, n, scale=0.5)
    Q = np.broadcast_to(0.1 * np.eye(n, dtype=np.float32), (B, n, n)).copy(); Rm = np.broadcast_to(0.5 * np.eye(m, dtype=np.float32), (B, m, m)).copy()
    xs, x = [], f32(B, n)
    for _ in range(T):
        x = np.einsum("bij,bj->bi", A, x) + f32(B, n, scale=0.3); xs.append(np.einsum("bij,bj->bi", Hm, x) + f32(B, m, scale=0.7))
    return f, (A, Q, Hm, Rm, np.stack(xs).astype(np.float32), np.zeros((B, n), np.float32), Q * 10)

@prog("svgd_gmm")
def _():
    N, d, K, ST = 256, 16, 4, 5
    def logp(x, mu): return jax.nn.logsumexp(-0.5 * jnp.sum((x - mu) ** 2, -1))
    def f(x, mu):  # Stein variational gradient descent: vmapped score, RBF kernel with the median heuristic (a sort of N^2 distances)
        def step(i, x):
            g = jax.vmap(jax.grad(logp), (0, None))(x, mu)
            diff = x[:, None] - x[None]
            d2 = jnp.sum(diff ** 2, -1)
            h = jnp.median(d2) / np.log(N + 1)
            k = jnp.exp(-d2 / h)
            return x + 0.2 * (k @ g + 2 / h * jnp.sum(k[..., None] * diff, 1)) / N
        return lax.fori_loop(0, ST, step, x)
    return f, (f32(N, d), f32(K, d, scale=2.0))

@prog("langevin_ebm_sampling")
def _():
    B, d, ST = 256, 64, 20
    def f(k, ps, x0):  # SGLD on an MLP energy: grad w.r.t. the samples, a fresh normal per step by fold_in, in a fori_loop
        E = lambda x: jnp.sum(mlp(ps, x, jax.nn.swish))
        def step(i, x):
            return x - 0.05 * jax.grad(E)(x) + 0.05 * jax.random.normal(jax.random.fold_in(pkey(k), i), x.shape)
        x = lax.fori_loop(0, ST, step, x0)
        return x, mlp(ps, x, jax.nn.swish)[:, 0]
    return f, (key(5), mlp_params(d, 128, 128, 1), f32(B, d))

@prog("deq_implicit_grad")
def _():
    B, D = 256, 256
    def solve(W, Ux):
        def body(c): z, _, i = c; return jnp.tanh(z @ W + Ux), z, i + 1
        cond = lambda c: (jnp.max(jnp.abs(c[0] - c[1])) > 1e-5) & (c[2] < 100)
        return lax.while_loop(cond, body, (jnp.tanh(Ux), jnp.zeros_like(Ux), 0))[0]
    @jax.custom_vjp
    def fixed(W, U, x): return solve(W, x @ U)
    def fwd(W, U, x):
        z = solve(W, x @ U); return z, (W, U, x, z)
    def bwd(res, g):  # implicit function theorem: u = g + u J by fixed-point iteration, then one vjp
        W, U, x, z = res
        _, vjp = jax.vjp(lambda W, U, x, z: jnp.tanh(z @ W + x @ U), W, U, x, z)
        def body(c): u, _, i = c; return vjp(u)[3] + g, u, i + 1
        cond = lambda c: (jnp.max(jnp.abs(c[0] - c[1])) > 1e-6) & (c[2] < 100)
        return vjp(lax.while_loop(cond, body, (g, jnp.zeros_like(g), 0))[0])[:3]
    fixed.defvjp(fwd, bwd)
    def loss(W, U, x, y): return jnp.mean((fixed(W, U, x) - y) ** 2)  # deep equilibrium layer z = tanh(z W + x U)
    return jax.grad(loss, argnums=(0, 1)), (orth(D) * 0.5, f32(D, D, scale=D ** -0.5), f32(B, D), f32(B, D, scale=0.5))

@prog("sliced_wasserstein_grad")
def _():
    N, d, Pn = 2048, 32, 64
    def loss(x, y, proj):  # sliced Wasserstein-2: random projections, sort both clouds per projection (stable), match in order
        return jnp.mean((jnp.sort(x @ proj, axis=0) - jnp.sort(y @ proj, axis=0)) ** 2) / d
    dy = lambda a: (np.round(a * 8) / 8).astype(np.float32)  # dyadic data: the projections are exact in f32 (equal keys tie exactly)
    return jax.grad(loss), (dy(f32(N, d)), dy(f32(N, d) * 1.5 + 0.5), dy(f32(d, Pn)))

@prog("glow_nchw_grad")
def _():
    B, S, C, Hd, K = 16, 16, 12, 64, 4
    def squeeze(x): b, c, h, w = x.shape; return x.reshape(b, c, h // 2, 2, w // 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(b, 4 * c, h // 2, w // 2)
    def loss(p, x):  # Glow: squeeze, K x (actnorm, invertible 1x1 conv with slogdet, affine coupling by a conv net), Gaussian NLL
        x = squeeze(x); ld = 0.0
        for s_, b_, W, w1, w2, w3 in p:
            x = (x + b_) * jnp.exp(s_); ld = ld + S * S * jnp.sum(s_)
            x = jnp.einsum("ij,bjhw->bihw", W, x); ld = ld + S * S * jnp.linalg.slogdet(W)[1]
            xa, xb = x[:, :C // 2], x[:, C // 2:]
            h = conv(jax.nn.relu(conv(jax.nn.relu(conv(xa, w1)), w2)), w3)
            sc = jax.nn.sigmoid(h[:, C // 2:] + 2.0)
            x = jnp.concatenate([xa, (xb + h[:, :C // 2]) * sc], 1); ld = ld + jnp.sum(jnp.log(sc), (1, 2, 3))
        return -jnp.mean(-0.5 * jnp.sum(x ** 2, (1, 2, 3)) + ld) / (C * S * S)
    p = [(f32(C, 1, 1, scale=0.05), f32(C, 1, 1, scale=0.05), orth(C), f32(Hd, C // 2, 3, 3, scale=(4.5 * C) ** -0.5),
          f32(Hd, Hd, 1, 1, scale=Hd ** -0.5), f32(C, Hd, 3, 3, scale=0.01)) for _ in range(K)]
    return jax.grad(loss), (p, unif(-0.5, 0.5, B, 3, 2 * S, 2 * S))

@prog("lanczos_reorth")
def _():
    n, m = 1536, 48
    def f(A, v0):  # Lanczos with full reorthogonalization against the stored basis, then the tridiagonal's top Ritz values
        Q = jnp.zeros((m + 1, n)).at[0].set(v0 / jnp.linalg.norm(v0))
        def body(j, c):
            Q, al, be = c
            q = Q[j]
            w = A @ q
            a = w @ q
            w = w - a * q - jnp.where(j > 0, be[j - 1], 0.0) * Q[jnp.maximum(j - 1, 0)]
            w = w - Q.T @ (Q @ w)
            b = jnp.linalg.norm(w)
            return Q.at[j + 1].set(w / b), al.at[j].set(a), be.at[j].set(b)
        Q, al, be = lax.fori_loop(0, m, body, (Q, jnp.zeros(m), jnp.zeros(m)))
        T = jnp.diag(al) + jnp.diag(be[:-1], 1) + jnp.diag(be[:-1], -1)
        return jnp.linalg.eigvalsh(T)[-6:]
    X = f32(n, n); ev = np.r_[np.linspace(10, 5, 6), np.linspace(1, 0, n - 6)].astype(np.float32)
    Qm = np.linalg.qr(X)[0].astype(np.float32)
    return f, (((Qm * ev) @ Qm.T).astype(np.float32), f32(n))


# --- recommendation, graphs and data -------------------------------------------------------

@prog("field_aware_fm_grad")
def _():
    B, F, V, k = 2048, 16, 40000, 8
    tri = np.triu(np.ones((F, F), np.float32), 1)
    def loss(emb, lin, idx, y):  # FFM: each feature's latent vector towards each other field, pairwise <v_i,f(j), v_j,f(i)>, BCE
        e = emb[idx]  # [B, F, F, k]
        logit = jnp.sum(jnp.einsum("bijk,bjik->bij", e, e) * tri, (1, 2)) + lin[idx].sum(-1)
        return jnp.mean(jax.nn.softplus(logit) - y * logit)
    idx = (np.arange(F) * (V // F) + R.integers(0, V // F, (B, F))).astype(np.int32)
    return jax.grad(loss, argnums=(0, 1)), (f32(V, F, k, scale=0.05), f32(V, scale=0.01), idx, unif(0, 1, B).round())

@prog("din_target_attention_grad")
def _():
    B, L, V, E = 512, 64, 50000, 32
    def loss(p, item, hist, lens, y):  # DIN: attention MLP over [h, t, h - t, h * t] per behaviour, length mask, weighted sum pooling
        emb, w1, b1, w2, top = p
        h, t = emb[hist], emb[item][:, None]
        feat = jnp.concatenate([h, jnp.broadcast_to(t, h.shape), h - t, h * t], -1)
        a = jnp.where(jnp.arange(L) < lens[:, None], (jax.nn.sigmoid(feat @ w1 + b1) @ w2)[..., 0], 0.0)
        u = jnp.sum(a[..., None] * h, 1)
        logit = mlp(top, jnp.concatenate([u, t[:, 0], u * t[:, 0]], -1), jax.nn.relu)[:, 0]
        return jnp.mean(jax.nn.softplus(logit) - y * logit)
    p = (f32(V, E, scale=0.1), f32(4 * E, 64, scale=0.1), np.zeros(64, np.float32), f32(64, 1, scale=0.1), mlp_params(3 * E, 128, 64, 1))
    return jax.grad(loss), (p, ints(0, V, B), ints(0, V, B, L), ints(1, L + 1, B), unif(0, 1, B).round())

@prog("als_user_solve")
def _():
    Uu, I, k, M = 2048, 8192, 32, 64
    def f(itemf, idx, r, cnt, lam):  # ALS half-step: gather each user's rated item factors, normal equations, batched Cholesky solve
        mask = (jnp.arange(M) < cnt[:, None]).astype(jnp.float32)
        Y = itemf[idx] * mask[..., None]
        A = jnp.einsum("umk,uml->ukl", Y, Y) + lam * jnp.eye(k)
        return jsp.linalg.cho_solve(jsp.linalg.cho_factor(A), jnp.einsum("umk,um->uk", Y, r * mask)[..., None])[..., 0]
    return f, (f32(I, k, scale=0.3), ints(0, I, Uu, M), unif(1, 5, Uu, M), ints(5, M + 1, Uu), np.float32(0.5))

@prog("graphsage_sampled_grad")
def _():
    Nn, Din, Dh, K, B, s1, s2 = 20000, 64, 128, 16, 512, 10, 5
    deg = R.integers(1, 30, Nn); indptr = np.r_[0, np.cumsum(deg)].astype(np.int32)
    indices = R.integers(0, Nn, indptr[-1]).astype(np.int32)
    def loss(p, k, feats, indptr, indices, batch, y):  # two-hop GraphSAGE: uniform neighbour samples from a CSR, mean aggregators
        W1, W2 = p
        k1, k2 = jax.random.split(pkey(k))
        def sample(kk, nodes, s):
            d = indptr[nodes + 1] - indptr[nodes]
            r = jax.random.randint(kk, nodes.shape + (s,), 0, 1 << 30) % d[..., None]
            return indices[indptr[nodes][..., None] + r]
        n1 = sample(k1, batch, s1); n2 = sample(k2, n1, s2)
        h1 = jax.nn.relu(jnp.concatenate([feats[n1], feats[n2].mean(2)], -1) @ W1)
        h0 = jax.nn.relu(jnp.concatenate([feats[batch], feats[n1].mean(1)], -1) @ W1)
        z = jnp.concatenate([h0, h1.mean(1)], -1)
        return xent((z * lax.rsqrt(jnp.sum(z * z, -1, keepdims=True) + 1e-6)) @ W2 * 4, y)
    p = (f32(2 * Din, Dh, scale=(2 * Din) ** -0.5), f32(2 * Dh, K, scale=(2 * Dh) ** -0.5))
    return jax.grad(loss), (p, key(7), f32(Nn, Din), indptr, indices, ints(0, Nn, B), ints(0, K, B))

@prog("ranking_ndcg_auc_mrr")
def _():
    Q, N = 128, 1024
    disc = 1 / np.log2(np.arange(N) + 2.0)
    def f(s, rel):  # per-query ranking metrics: NDCG and NDCG@10 by argsort / sort, AUC by rank sums (argsort of argsort), MRR
        g = jnp.take_along_axis(rel, jnp.argsort(-s, axis=-1), -1).astype(jnp.float32)
        ideal = -jnp.sort(-rel.astype(jnp.float32), -1)
        gain = lambda t, n: jnp.sum((2 ** t[:, :n] - 1) * disc[:n], -1)
        ndcg, ndcg10 = gain(g, N) / gain(ideal, N), gain(g, 10) / gain(ideal, 10)
        pos = rel >= 3
        rank = jnp.argsort(jnp.argsort(s, -1), -1) + 1
        npos = pos.sum(-1); nneg = N - npos
        auc = (jnp.sum(jnp.where(pos, rank, 0), -1) - npos * (npos + 1) / 2) / (npos * nneg)
        mrr = 1.0 / (1 + jnp.argmax(g >= 3, -1))
        return ndcg, ndcg10, auc, mrr
    rel = np.minimum(R.poisson(0.8, (Q, N)), 4).astype(np.int32)
    return f, ((rel * 0.5 + R.standard_normal((Q, N))).astype(np.float32), rel)

@prog("approx_max_k_mips")
def _():
    Q, N, d, k = 128, 32768, 64, 16
    def f(q, db):  # maximum inner product search: scores matmul, lax.approx_max_k (recall target 0.95)
        return lax.approx_max_k(q @ db.T, k, recall_target=0.95)
    return f, (f32(Q, d), f32(N, d))

@prog("run_length_encode")
def _():
    B, N = 256, 4096
    def f(x):  # per-row RLE: run starts by comparison, run ids by cumsum, values by scatter-set and lengths by scatter-add
        start = jnp.concatenate([jnp.ones((B, 1), bool), x[:, 1:] != x[:, :-1]], 1)
        rid = jnp.cumsum(start, 1) - 1
        rows = jnp.arange(B)[:, None]
        return jnp.zeros((B, N), x.dtype).at[rows, rid].set(x), jnp.zeros((B, N), jnp.int32).at[rows, rid].add(1), rid[:, -1] + 1
    x = np.cumsum(R.random((B, N)) < 0.2, 1) % 7
    return f, (x.astype(np.int32),)


# --- training steps ------------------------------------------------------------------------

@prog("sam_adamw_step")
def _():
    B, D, Hd, K = 128, 784, 512, 10
    def loss(p, x, y): return xent(mlp(p, x, jax.nn.relu), y)
    def step(p, m, v, t, x, y):  # sharpness-aware minimization: ascend to p + rho g / |g|, take that gradient, AdamW with bias correction
        g = jax.grad(loss)(p, x, y)
        n = gnorm(g)
        g = jax.grad(loss)(jax.tree_util.tree_map(lambda a, b: a + 0.05 * b / (n + 1e-12), p, g), x, y)
        tm = jax.tree_util.tree_map
        m = tm(lambda a, b: 0.9 * a + 0.1 * b, m, g); v = tm(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        t = t + 1
        c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
        p = tm(lambda a, mm, vv: a - 1e-3 * (mm / c1 / (jnp.sqrt(vv / c2) + 1e-8) + 0.01 * a), p, m, v)
        return p, m, v, t
    p = mlp_params(D, Hd, Hd, K)
    z = jax.tree_util.tree_map(np.zeros_like, p)
    return step, (p, z, jax.tree_util.tree_map(lambda a: np.full_like(a, 1e-6), p), np.int32(9), f32(B, D), ints(0, K, B))

@prog("grad_accum_bf16_master")
def _():
    M, mb, D, F, V = 8, 32, 256, 1024, 512
    def loss(pb, x, y):
        h = jax.nn.gelu(x.astype(jnp.bfloat16) @ pb[0])
        return xent((h @ pb[1]).astype(jnp.float32), y)
    def step(master, m, v, xs, ys):  # bf16 compute copies of f32 master weights, gradients summed over microbatches by scan, clip, AdamW
        pb = [a.astype(jnp.bfloat16) for a in master]
        def acc(gs, xy):
            g = jax.grad(loss)(pb, *xy)
            return [a + b.astype(jnp.float32) for a, b in zip(gs, g)], None
        g, _ = lax.scan(acc, [jnp.zeros_like(a) for a in master], (xs, ys))
        g = [a / M for a in g]
        sc = jnp.minimum(1.0, 1.0 / (gnorm(g) + 1e-6))
        m = [0.9 * a + 0.1 * sc * b for a, b in zip(m, g)]; v = [0.95 * a + 0.05 * (sc * b) ** 2 for a, b in zip(v, g)]
        return [p - 1e-3 * (a / (jnp.sqrt(b) + 1e-8) + 0.1 * p) for p, a, b in zip(master, m, v)], m, v
    p = [f32(D, F, scale=D ** -0.5), f32(F, V, scale=F ** -0.5)]
    return step, (p, [np.zeros_like(a) for a in p], [np.full_like(a, 1e-4) for a in p], f32(M, mb, D), ints(0, V, M, mb))

@prog("sophia_hutchinson_step")
def _():
    B, D, Hd, K = 256, 128, 256, 10
    def loss(p, x, y): return xent(mlp(p, x, jnp.tanh), y)
    def step(p, m, h, k, x, y):  # Sophia: gradient EMA, Hutchinson diagonal Hessian u * (H u) by forward-over-reverse, clipped ratio
        tm = jax.tree_util.tree_map
        leaves, tdef = jax.tree_util.tree_flatten(p)
        ks = jax.random.split(pkey(k), len(leaves))
        u = jax.tree_util.tree_unflatten(tdef, [jax.random.rademacher(kk, a.shape, jnp.float32) for kk, a in zip(ks, leaves)])
        g, hu = jax.jvp(jax.grad(loss), (p, x, y), (u, jnp.zeros_like(x), np.zeros(y.shape, jax.dtypes.float0)))
        m = tm(lambda a, b: 0.96 * a + 0.04 * b, m, g)
        h = tm(lambda a, b, c: 0.99 * a + 0.01 * b * c, h, u, hu)
        return tm(lambda a, mm, hh: a * (1 - 1e-4) - 1e-3 * jnp.clip(mm / jnp.maximum(0.05 * hh, 1e-12), -1, 1), p, m, h), m, h
    p = mlp_params(D, Hd, Hd, K)
    z = jax.tree_util.tree_map(np.zeros_like, p)
    return step, (p, z, jax.tree_util.tree_map(lambda a: np.full_like(a, 1e-3), p), key(11), f32(B, D), ints(0, K, B))


if __name__ == "__main__":
    U.main(P)
