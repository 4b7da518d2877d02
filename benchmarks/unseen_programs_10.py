"""A tenth sweep of ordinary JAX programs outside `axle bench` (2026-11-28, ninth session):
kinds the first nine sweeps left out. LLM serving and training pieces (paged-KV-cache decode
attention through a block table, speculative-decoding verification by rejection sampling,
DeepSeek-style multi-head latent attention, LoRA adapter gradients, a top-k sparse
autoencoder, vocabulary-chunked cross-entropy by scan, lax.ragged_dot grouped expert GEMMs,
expert-choice routing, repetition / frequency penalties with top-k and min-p filtering, the
Muon optimizer's Newton-Schulz orthogonalization, VQ-VAE codebook losses, NF4 dequantized
matmuls), capsule-network dynamic routing, probabilistic programs (RealNVP coupling flows,
batched HMC leapfrog chains, a Kalman filter, a bootstrap particle filter with systematic
resampling, Black-Scholes Greeks by autodiff), dynamic programs (Levenshtein distance by
row scan and cummin, soft-DTW with its gradient), signal processing (a biquad IIR cascade
by scan, Griffin-Lim phase recovery with overlap-add, LPC by Levinson-Durbin, natural cubic
splines by lax.linalg.tridiagonal_solve), graphics (Mandelbrot in complex64, SDF sphere
tracing with autodiff normals, a differentiable 2-D Gaussian-splat rasterizer, an
Instant-NGP multiresolution hash-grid encoding), vision (Harris corners with non-maximum
suppression, 3-D max/avg pooling and their gradients), point clouds and molecules (farthest
point sampling with kNN grouping, SchNet energies and forces), simulations and graphs
(Conway's life, a P1 finite-element assembly solved by CG over segment sums, Bellman-Ford
over an edge list, connected components by label propagation in a while loop), a 13-qubit
state-vector simulator, bit work (CRC-32 by table, ChaCha20 blocks) and a factorization
machine's gradient.

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_10.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy as jsp
from jax import lax
import ml_dtypes

import unseen_programs as U

R, f32, unif, ints, key, pkey, mlp_params, mlp = U.helpers(10)
P, prog = U.sweep()
BF = ml_dtypes.bfloat16


# --- LLM serving and training pieces -----------------------------------------------------

@prog("paged_attention_decode")
def _():
    B, H, G, D, PS, NPG, MAXP = 8, 32, 8, 128, 16, 128, 16
    def f(q, kp, vp, table, lens):  # one decode step: K/V pages gathered through a block table
        k = kp[table].reshape(B, MAXP * PS, G, D)
        v = vp[table].reshape(B, MAXP * PS, G, D)
        qg = q.reshape(B, G, H // G, D)
        s = jnp.einsum("bgrd,btgd->bgrt", qg, k) / np.sqrt(D)
        valid = jnp.arange(MAXP * PS)[None] < lens[:, None]
        s = jnp.where(valid[:, None, None], s, -jnp.inf)
        p = jax.nn.softmax(s, -1)
        return jnp.einsum("bgrt,btgd->bgrd", p, v).reshape(B, H, D)
    table = R.permutation(NPG)[:B * MAXP].reshape(B, MAXP).astype(np.int32)
    return f, (f32(B, H, D), f32(NPG, PS, G, D), f32(NPG, PS, G, D), table, ints(100, MAXP * PS + 1, B))

@prog("speculative_verify")
def _():
    B, K, V = 8, 8, 32000
    def f(tl, dl, toks, u, k):  # accept draft tokens while u < p/q, then sample the residual
        p = jax.nn.softmax(tl[:, :K], -1); q = jax.nn.softmax(dl, -1)
        pt = jnp.take_along_axis(p, toks[..., None], -1)[..., 0]
        qt = jnp.take_along_axis(q, toks[..., None], -1)[..., 0]
        acc = (u < jnp.minimum(1.0, pt / qt)).astype(jnp.int32)
        n = jnp.sum(jnp.cumprod(acc, axis=1), axis=1)
        b = jnp.arange(B)
        idx = jnp.minimum(n, K - 1)
        resid = jnp.maximum(p[b, idx] - q[b, idx], 0.0)
        resid = resid / jnp.maximum(resid.sum(-1, keepdims=True), 1e-20)
        dist = jnp.where((n == K)[:, None], jax.nn.softmax(tl[b, n], -1), resid)
        tok = jax.random.categorical(pkey(k), jnp.log(dist + 1e-30), axis=-1)
        return n, tok
    return f, (f32(B, K + 1, V, scale=2.0), f32(B, K, V, scale=2.0), ints(0, V, B, K), unif(0, 1, B, K), key())

@prog("mla_attention")
def _():
    B, T, Dm, H, Dh, Dr, L = 1, 256, 768, 12, 64, 32, 256
    def f(x, Wdkv, Wuk, Wuv, Wq, Wqr, Wkr, Wo, g):  # DeepSeek-V2 multi-head latent attention
        c = x @ Wdkv
        c = c * lax.rsqrt(jnp.mean(c * c, -1, keepdims=True) + 1e-6) * g
        kn = (c @ Wuk).reshape(B, T, H, Dh)
        v = (c @ Wuv).reshape(B, T, H, Dh)
        q = (x @ Wq).reshape(B, T, H, Dh)
        qr = (x @ Wqr).reshape(B, T, H, Dr); kr = (x @ Wkr)[:, :, None, :]
        inv = 1.0 / (10000 ** (jnp.arange(0, Dr, 2) / Dr))
        ang = jnp.arange(T)[:, None] * inv[None]
        cos, sin = jnp.cos(ang)[None, :, None], jnp.sin(ang)[None, :, None]
        def rope(t):
            t1, t2 = t[..., ::2], t[..., 1::2]
            return jnp.concatenate([t1 * cos - t2 * sin, t1 * sin + t2 * cos], -1)
        qr, kr = rope(qr), rope(kr)
        s = (jnp.einsum("bqhd,bkhd->bhqk", q, kn) + jnp.einsum("bqhd,bkxd->bhqk", qr, kr)) / np.sqrt(Dh + Dr)
        s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -1e9)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v).reshape(B, T, H * Dh)
        return o @ Wo
    sc = lambda n: 1 / np.sqrt(n)
    return f, (f32(B, T, Dm), f32(Dm, L, scale=sc(Dm)), f32(L, H * Dh, scale=sc(L)), f32(L, H * Dh, scale=sc(L)),
               f32(Dm, H * Dh, scale=sc(Dm)), f32(Dm, H * Dr, scale=sc(Dm)), f32(Dm, Dr, scale=sc(Dm)),
               f32(H * Dh, Dm, scale=sc(H * Dh)), np.ones(L, np.float32))

@prog("lora_grad")
def _():
    r, alpha = 16, 32.0
    def loss(ad, W1, W2, x, y):  # frozen dense weights, gradients only for the low-rank adapters
        (A1, B1), (A2, B2) = ad
        h = jax.nn.gelu(x @ W1 + (alpha / r) * (x @ A1) @ B1)
        o = h @ W2 + (alpha / r) * (h @ A2) @ B2
        return jnp.mean((o - y) ** 2)
    ad = ((f32(1024, r, scale=0.03), f32(r, 1024, scale=0.01)), (f32(1024, r, scale=0.03), f32(r, 1024, scale=0.01)))
    return jax.grad(loss), (ad, f32(1024, 1024, scale=0.03), f32(1024, 1024, scale=0.03), f32(256, 1024), f32(256, 1024))

@prog("topk_sae_grad")
def _():
    N, D, M, K = 64, 512, 4096, 32
    def loss(p, x):  # TopK sparse autoencoder: keep the k largest latents, scatter them back
        We, be, Wd, bd = p
        pre = (x - bd) @ We + be
        v, i = lax.top_k(pre, K)
        z = jnp.zeros_like(pre).at[jnp.arange(N)[:, None], i].set(jax.nn.relu(v))
        xh = z @ Wd + bd
        return jnp.mean((xh - x) ** 2)
    p = (f32(D, M, scale=1 / np.sqrt(D)), np.zeros(M, np.float32), f32(M, D, scale=1 / np.sqrt(M)), np.zeros(D, np.float32))
    return jax.grad(loss), (p, f32(N, D))

@prog("chunked_vocab_xent_grad")
def _():
    N, D, V, C = 128, 256, 8192, 2048
    def loss(W, h, y):  # memory-efficient cross-entropy: online logsumexp over vocabulary chunks
        Wc = W.reshape(D, V // C, C).transpose(1, 0, 2)
        def body(c, a):
            m, s, ll = c
            w, j = a
            lg = h @ w
            mn = jnp.maximum(m, lg.max(-1))
            s = s * jnp.exp(m - mn) + jnp.exp(lg - mn[:, None]).sum(-1)
            inc = (y >= j * C) & (y < (j + 1) * C)
            pick = jnp.take_along_axis(lg, jnp.clip(y - j * C, 0, C - 1)[:, None], 1)[:, 0]
            return (mn, s, ll + jnp.where(inc, pick, 0.0)), None
        init = (jnp.full((N,), -1e30), jnp.zeros(N), jnp.zeros(N))
        (m, s, ll), _ = lax.scan(body, init, (Wc, jnp.arange(V // C)))
        return jnp.mean(m + jnp.log(s) - ll)
    return jax.grad(loss, argnums=(0, 1)), (f32(D, V, scale=0.05), f32(N, D), ints(0, V, N))

@prog("ragged_dot_moe")
def _():
    T, D, F, E = 1024, 256, 256, 8
    def f(x, w1, w2, gs):  # grouped expert GEMMs on expert-sorted tokens (lax.ragged_dot)
        h = jax.nn.silu(lax.ragged_dot(x, w1, gs))
        return lax.ragged_dot(h, w2, gs)
    cuts = np.sort(R.integers(0, T, E - 1))
    gs = np.diff(np.concatenate([[0], cuts, [T]])).astype(np.int32)
    return f, (f32(T, D), f32(E, D, F, scale=1 / 16), f32(E, F, D, scale=1 / 16), gs)

@prog("expert_choice_routing")
def _():
    N, D, F, E = 1024, 256, 512, 8
    C = N * 2 // E
    def f(x, Wg, W1, W2):  # each expert picks its top-C tokens; outputs scatter-added back
        g = jax.nn.softmax(x @ Wg, -1)
        gv, gi = lax.top_k(g.T, C)
        xe = x[gi]
        h = jax.nn.gelu(jnp.einsum("ecd,edf->ecf", xe, W1))
        y = jnp.einsum("ecf,efd->ecd", h, W2) * gv[..., None]
        return jnp.zeros((N, D)).at[gi.reshape(-1)].add(y.reshape(-1, D))
    return f, (f32(N, D), f32(D, E, scale=0.1), f32(E, D, F, scale=1 / 16), f32(E, F, D, scale=1 / 22))

@prog("logits_processors_sample")
def _():
    B, V, L = 4, 32000, 256
    def f(logits, prev, k):  # repetition + frequency penalties, temperature, top-k, min-p, sample
        b = jnp.arange(B)[:, None]
        g = jnp.take_along_axis(logits, prev, 1)
        logits = logits.at[b, prev].set(jnp.where(g > 0, g / 1.2, g * 1.2))
        counts = jnp.zeros((B, V)).at[b, prev].add(1.0)
        logits = (logits - 0.1 * counts) / 0.7
        kth = lax.top_k(logits, 50)[0][:, -1:]
        logits = jnp.where(logits < kth, -jnp.inf, logits)
        p = jax.nn.softmax(logits, -1)
        logits = jnp.where(p < 0.05 * p.max(-1, keepdims=True), -jnp.inf, logits)
        return jax.random.categorical(pkey(k), logits, axis=-1)
    return f, (f32(B, V, scale=3.0), ints(0, V, B, L), key())

@prog("muon_newton_schulz")
def _():
    shapes = [(192, 192)] * 4 + [(192, 384), (384, 192)]
    def ns(G):
        a, b, c = 3.4445, -4.7750, 2.0315
        X = G / (jnp.linalg.norm(G) + 1e-7)
        tr = G.shape[0] > G.shape[1]
        if tr: X = X.T
        for _ in range(5):
            A = X @ X.T
            X = a * X + (b * A + c * A @ A) @ X
        return X.T if tr else X
    def upd(ps, gs, ms):  # Muon: Nesterov momentum, then orthogonalize each matrix update
        out = []
        for p, g, m in zip(ps, gs, ms):
            m = 0.95 * m + g
            o = ns(g + 0.95 * m)
            out.append((p - 0.02 * max(1.0, p.shape[0] / p.shape[1]) ** 0.5 * o, m))
        return out
    return upd, ([f32(*s, scale=0.05) for s in shapes], [f32(*s, scale=0.01) for s in shapes], [f32(*s, scale=0.01) for s in shapes])

@prog("vq_codebook_grad")
def _():
    def f(z, cb, Wd):  # VQ-VAE: nearest code, straight-through, codebook + commitment losses, usage
        def loss(z, cb, Wd):
            d = jnp.sum(z * z, 1)[:, None] - 2 * z @ cb.T + jnp.sum(cb * cb, 1)[None]
            i = jnp.argmin(d, 1)
            q = cb[i]
            zq = z + lax.stop_gradient(q - z)
            rec = jnp.mean((jnp.tanh(zq @ Wd) - 0.5) ** 2)
            l = rec + jnp.mean((lax.stop_gradient(z) - q) ** 2) + 0.25 * jnp.mean((z - lax.stop_gradient(q)) ** 2)
            return l, i
        (l, i), g = jax.value_and_grad(loss, argnums=(0, 1, 2), has_aux=True)(z, cb, Wd)
        use = jax.ops.segment_sum(jnp.ones_like(i, jnp.float32), i, num_segments=cb.shape[0]) / i.shape[0]
        return l, g, jnp.exp(-jnp.sum(use * jnp.log(use + 1e-10)))
    return f, (f32(4096, 64), f32(512, 64), f32(64, 128, scale=0.1))

@prog("nf4_dequant_matmul")
def _():
    nf4 = np.array([-1.0, -0.6961928, -0.5250731, -0.3949175, -0.2844414, -0.1848489, -0.0910500, 0.0,
                    0.0795803, 0.1609302, 0.2461123, 0.3379152, 0.4407098, 0.5626170, 0.7229568, 1.0], np.float32)
    K, N, BS = 2048, 2048, 64
    def f(x, packed, absmax, table):  # QLoRA NF4: two 4-bit codes a byte, per-64-block absmax, bf16 GEMM
        idx = jnp.stack([packed >> 4, packed & 0xF], -1).reshape(K, N).astype(jnp.int32)
        w = (table[idx].reshape(-1, BS) * absmax[:, None]).reshape(K, N)
        return jnp.dot(x, w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)
    return f, (f32(32, K).astype(BF), ints(0, 256, K, N // 2, dt=np.uint8), unif(0.01, 0.05, K * N // BS), nf4)

@prog("capsule_routing")
def _():
    def f(u, W):  # CapsNet: prediction vectors, three routing-by-agreement iterations, squash
        uh = jnp.einsum("bid,ijkd->bijk", u, W)
        def squash(s):
            n2 = jnp.sum(s * s, -1, keepdims=True)
            return n2 / (1 + n2) * s / jnp.sqrt(n2 + 1e-8)
        b = jnp.zeros(uh.shape[:3])
        for _ in range(3):
            c = jax.nn.softmax(b, axis=2)
            v = squash(jnp.einsum("bij,bijk->bjk", c, uh))
            b = b + jnp.einsum("bijk,bjk->bij", uh, v)
        return v
    return f, (f32(8, 1152, 8), f32(1152, 10, 16, 8, scale=0.05))


# --- probabilistic programs --------------------------------------------------------------

@prog("realnvp_coupling_grad")
def _():
    D, Hd, L = 64, 256, 6
    def nll(ps, x):  # RealNVP: affine couplings on alternating halves, tanh-bounded log-scales
        ld = 0.0
        for i, p in enumerate(ps):
            x1, x2 = (x[:, :D // 2], x[:, D // 2:]) if i % 2 == 0 else (x[:, D // 2:], x[:, :D // 2])
            st = mlp(p, x1, jax.nn.relu)
            s, t = jnp.tanh(st[:, :D // 2]), st[:, D // 2:]
            x2 = x2 * jnp.exp(s) + t
            ld = ld + s.sum(-1)
            x = jnp.concatenate([x1, x2], -1)
        return -jnp.mean(-0.5 * jnp.sum(x * x, -1) - 0.5 * D * np.log(2 * np.pi) + ld)
    ps = [mlp_params(D // 2, Hd, Hd, D, scale=0.5) for _ in range(L)]
    return jax.grad(nll), (ps, f32(512, D))

@prog("hmc_leapfrog")
def _():
    C, N, Dd, LF, S = 64, 1024, 32, 8, 4
    def f(theta0, X, y, k):  # batched HMC chains on a Bayesian logistic regression posterior
        def logp(t):
            z = X @ t
            return jnp.sum(y * z - jax.nn.softplus(z)) - 0.5 * jnp.sum(t * t)
        glp = jax.vmap(jax.grad(logp))
        lp = jax.vmap(logp)
        def hmc(theta, kk):
            k1, k2 = jax.random.split(kk)
            p0 = jax.random.normal(k1, theta.shape)
            eps = 0.01
            def lf(_, c):
                t, p = c
                p = p + 0.5 * eps * glp(t)
                t = t + eps * p
                return t, p + 0.5 * eps * glp(t)
            t, p = lax.fori_loop(0, LF, lf, (theta, p0))
            logr = lp(t) - 0.5 * jnp.sum(p * p, -1) - lp(theta) + 0.5 * jnp.sum(p0 * p0, -1)
            acc = jnp.log(jax.random.uniform(k2, (C,))) < logr
            return jnp.where(acc[:, None], t, theta), acc.mean()
        return lax.scan(hmc, theta0, jax.random.split(pkey(k), S))
    X = f32(N, Dd)
    y = (R.uniform(size=N) < 1 / (1 + np.exp(-X @ f32(Dd)))).astype(np.float32)
    return f, (f32(C, Dd, scale=0.1), X, y, key())

@prog("kalman_filter_scan")
def _():
    B, T, S, O = 128, 100, 8, 4
    def f(ys, F, Hm, Q, Rn):  # batched Kalman filter with Cholesky-solved innovations + log-lik
        def step(c, y):
            m, Pm, ll = c
            m = m @ F.T
            Pm = F @ Pm @ F.T + Q
            Sm = Hm @ Pm @ Hm.T + Rn
            L = jnp.linalg.cholesky(Sm)
            HP = Hm @ Pm
            Kt = jax.vmap(lambda l, b: jsp.linalg.cho_solve((l, True), b))(L, HP)
            r = y - m @ Hm.T
            w = jax.vmap(lambda l, b: jsp.linalg.cho_solve((l, True), b))(L, r)
            m = m + jnp.einsum("bos,bo->bs", Kt, r)
            Pm = Pm - jnp.einsum("bos,bot->bst", HP, Kt)
            Pm = 0.5 * (Pm + Pm.transpose(0, 2, 1))
            ld = 2 * jnp.sum(jnp.log(jnp.diagonal(L, axis1=1, axis2=2)), -1)
            return (m, Pm, ll - 0.5 * (jnp.sum(r * w, -1) + ld)), m
        init = (jnp.zeros((B, S)), jnp.broadcast_to(jnp.eye(S), (B, S, S)), jnp.zeros(B))
        (m, Pm, ll), ms = lax.scan(step, init, ys)
        return ll, ms
    F = (0.98 * np.linalg.qr(f32(S, S))[0]).astype(np.float32)
    return f, (f32(T, B, O), F, f32(O, S, scale=0.5), (0.01 * np.eye(S)).astype(np.float32), (0.1 * np.eye(O)).astype(np.float32))

@prog("particle_filter")
def _():
    B, N, T = 8, 4096, 32
    def f(ys, noise, us):  # bootstrap filter, classic nonlinear growth model, systematic resampling
        def step(c, a):
            x, ll = c
            y, e, u, t = a
            x = 0.5 * x + 25 * x / (1 + x * x) + 8 * jnp.cos(1.2 * t) + 3.0 * e
            lw = -0.5 * (y[:, None] - x * x / 20) ** 2
            mx = lw.max(-1, keepdims=True)
            w = jnp.exp(lw - mx)
            sw = w.sum(-1, keepdims=True)
            cdf = jnp.cumsum(w / sw, -1)
            pos = (u[:, None] + jnp.arange(N)) / N
            idx = jnp.clip(jax.vmap(jnp.searchsorted)(cdf, pos), 0, N - 1)
            x = jnp.take_along_axis(x, idx, -1)
            return (x, ll + mx[:, 0] + jnp.log(sw[:, 0] / N)), x.mean(-1)
        (x, ll), means = lax.scan(step, (jnp.zeros((B, N)), jnp.zeros(B)), (ys, noise, us, jnp.arange(T, dtype=jnp.float32)))
        return ll, means
    return f, (f32(T, B, scale=5.0), f32(T, B, N), unif(0, 1, T, B))

@prog("black_scholes_greeks")
def _():
    def f(S, K, T, r, v):  # prices, delta, vega and gamma of European calls by autodiff
        def price(s, k, t, rr, vv):
            sq = vv * jnp.sqrt(t)
            d1 = (jnp.log(s / k) + (rr + 0.5 * vv * vv) * t) / sq
            return s * jsp.special.ndtr(d1) - k * jnp.exp(-rr * t) * jsp.special.ndtr(d1 - sq)
        g1 = jax.vmap(jax.grad(price, argnums=(0, 4)))
        gam = jax.vmap(jax.grad(jax.grad(price)))
        return jax.vmap(price)(S, K, T, r, v), g1(S, K, T, r, v), gam(S, K, T, r, v)
    n = 1 << 20
    return f, (unif(50, 150, n), unif(50, 150, n), unif(0.1, 2.0, n), unif(0.0, 0.05, n), unif(0.1, 0.6, n))


# --- dynamic programs --------------------------------------------------------------------

@prog("levenshtein_cummin")
def _():
    B, n, m = 512, 64, 64
    def f(a, b):  # edit distance: a scan over rows, the insertion chain as a cumulative min
        j = jnp.arange(m + 1, dtype=jnp.int32)
        def step(prev, ai):
            cost = (ai[:, None] != b).astype(jnp.int32)
            best = jnp.minimum(prev[:, :-1] + cost, prev[:, 1:] + 1)
            tmp = jnp.concatenate([prev[:, :1] + 1, best], 1)
            return lax.cummin(tmp - j, axis=1) + j, None
        last, _ = lax.scan(step, jnp.broadcast_to(j, (B, m + 1)), a.T)
        return last[:, -1]
    return f, (ints(0, 4, B, n), ints(0, 4, B, m))

@prog("soft_dtw_grad")
def _():
    B, n, m, d, gamma, BIG = 32, 64, 64, 8, 0.1, 1e10
    dd = np.arange(2, n + m + 1)[:, None]; ii = np.arange(n + 1)[None]
    jj = dd - ii
    ok = (ii >= 1) & (jj >= 1) & (jj <= m)
    gi, gj = np.clip(ii - 1, 0, n - 1), np.clip(jj - 1, 0, m - 1)
    def sdtw(x, y):  # soft-DTW (Cuturi & Blondel) by a scan over anti-diagonals
        D = jnp.sum((x[:, :, None] - y[:, None]) ** 2, -1)
        Dk = jnp.where(ok[None], D[:, gi, gj], BIG).transpose(1, 0, 2)
        def step(c, a):
            p2, p1 = c
            dk, okk = a
            sh = lambda v: jnp.concatenate([jnp.full((B, 1), BIG), v[:, :-1]], 1)
            z = jnp.stack([sh(p2), sh(p1), p1], 0)
            sm = -gamma * jax.nn.logsumexp(-z / gamma, axis=0)
            cur = jnp.where(okk[None], dk + sm, BIG)
            return (p1, cur), None
        d0 = jnp.full((B, n + 1), BIG).at[:, 0].set(0.0)
        (_, last), _ = lax.scan(step, (d0, jnp.full((B, n + 1), BIG)), (Dk, jnp.asarray(ok)))
        return jnp.sum(last[:, n])
    return jax.value_and_grad(sdtw), (f32(B, n, d), f32(B, m, d))


# --- signal processing -------------------------------------------------------------------

@prog("iir_biquad_scan")
def _():
    T, C = 8192, 128
    def f(x, sos):  # a 3-section biquad cascade (scipy sosfilt), transposed direct form II
        def step(z, xt):
            y = xt
            zs = []
            for s in range(3):
                b0, b1, b2, a1, a2 = sos[s, 0], sos[s, 1], sos[s, 2], sos[s, 4], sos[s, 5]
                z1, z2 = z[s]
                out = b0 * y + z1
                zs.append((b1 * y - a1 * out + z2, b2 * y - a2 * out))
                y = out
            return zs, y
        z0 = [(jnp.zeros(C), jnp.zeros(C)) for _ in range(3)]
        return lax.scan(step, z0, x)[1]
    sos = np.array([[0.0675, 0.1349, 0.0675, 1.0, -1.1430, 0.4128],
                    [1.0, 2.0, 1.0, 1.0, -1.2, 0.55], [1.0, -2.0, 1.0, 1.0, -1.6, 0.7]], np.float32)
    return f, (f32(T, C), sos)

@prog("griffin_lim")
def _():
    B, L, NF, HOP, IT = 8, 16384, 512, 128, 8
    nfr = (L - NF) // HOP + 1
    fidx = (np.arange(nfr)[:, None] * HOP + np.arange(NF)[None]).astype(np.int32)
    win = np.hanning(NF).astype(np.float32)
    wsum = np.zeros(L, np.float32)
    for i in range(nfr): wsum[i * HOP:i * HOP + NF] += win ** 2
    wsum = np.maximum(wsum, 1e-3)
    def f(mag, ph0):  # phase recovery: alternate STFT magnitude projection and overlap-add ISTFT
        def stft(x): return jnp.fft.rfft(x[:, fidx] * win, axis=-1)
        def istft(X):
            fr = jnp.fft.irfft(X, n=NF, axis=-1) * win
            return jnp.zeros((B, L)).at[:, fidx].add(fr) / wsum
        def body(_, ph):
            X = stft(istft(mag * ph))
            return X / jnp.maximum(jnp.abs(X), 1e-8)
        ph = lax.fori_loop(0, IT, body, ph0)
        return istft(mag * ph)
    ang = unif(-np.pi, np.pi, B, nfr, NF // 2 + 1)
    return f, (np.abs(f32(B, nfr, NF // 2 + 1)), np.exp(1j * ang).astype(np.complex64))

@prog("levinson_lpc")
def _():
    Bn, W, p = 2048, 400, 16
    def f(frames):  # LPC: windowed frames, autocorrelation by FFT, Levinson-Durbin recursion
        x = frames * jnp.hamming(W)
        X = jnp.fft.rfft(x, n=1024, axis=-1)
        r = jnp.fft.irfft(X * jnp.conj(X), n=1024, axis=-1)[:, :p + 1]
        r = r.at[:, 0].mul(1.0 + 1e-6)
        j = jnp.arange(p + 1)
        def body(i, c):
            a, e = c
            ri = jnp.take(r, jnp.clip(i - j, 0, p), axis=1)
            acc = jnp.sum(jnp.where(j < i, a * ri, 0.0), 1)
            k = -acc / e
            arev = jnp.where((j >= 1) & (j <= i), jnp.take(a, jnp.clip(i - j, 0, p), axis=1), 0.0)
            return a + k[:, None] * arev, e * (1 - k * k)
        a0 = jnp.zeros((Bn, p + 1)).at[:, 0].set(1.0)
        return lax.fori_loop(1, p + 1, body, (a0, r[:, 0]))
    t = np.arange(W)
    fr = np.sin(2 * np.pi * unif(0.01, 0.2, Bn, 1) * t) + 0.3 * f32(Bn, W)
    return f, (fr.astype(np.float32),)

@prog("cubic_spline_tridiag")
def _():
    B, n, Q = 64, 1024, 4096
    def f(x, y, xq):  # natural cubic splines: tridiagonal solve for the moments, evaluate by search
        h = jnp.diff(x, axis=-1)
        rhs = 6 * (jnp.diff(y[:, 1:], axis=-1) / h[:, 1:] - jnp.diff(y[:, :-1], axis=-1) / h[:, :-1])
        dl = jnp.concatenate([jnp.zeros((B, 1)), h[:, 1:-1]], 1)
        du = jnp.concatenate([h[:, 1:-1], jnp.zeros((B, 1))], 1)
        dg = 2 * (h[:, :-1] + h[:, 1:])
        Mi = lax.linalg.tridiagonal_solve(dl, dg, du, rhs[..., None])[..., 0]
        M = jnp.pad(Mi, ((0, 0), (1, 1)))
        i = jnp.clip(jax.vmap(jnp.searchsorted)(x, xq) - 1, 0, n - 2)
        g = lambda a, k: jnp.take_along_axis(a, k, 1)
        x0, x1, y0, y1, m0, m1 = g(x, i), g(x, i + 1), g(y, i), g(y, i + 1), g(M, i), g(M, i + 1)
        hh = x1 - x0; a = x1 - xq; b = xq - x0
        return (m0 * a ** 3 + m1 * b ** 3) / (6 * hh) + (y0 / hh - m0 * hh / 6) * a + (y1 / hh - m1 * hh / 6) * b
    x = np.cumsum(unif(0.5, 1.5, B, n), 1).astype(np.float32)
    return f, (x, np.sin(x / 10).astype(np.float32) + f32(B, n, scale=0.05), np.sort(R.uniform(x[:, :1], x[:, -1:], (B, Q)), 1).astype(np.float32))


# --- graphics ----------------------------------------------------------------------------

@prog("mandelbrot")
def _():
    def f(c):  # escape-time iteration counts in complex64, 128 iterations
        def body(_, s):
            z, n = s
            act = jnp.abs(z) <= 2.0
            return jnp.where(act, z * z + c, z), n + act.astype(jnp.int32)
        return lax.fori_loop(0, 128, body, (jnp.zeros_like(c), jnp.zeros(c.shape, jnp.int32)))[1]
    re, im = np.meshgrid(np.linspace(-2.2, 0.8, 384), np.linspace(-1.3, 1.3, 384))
    return f, ((re + 1j * im).astype(np.complex64),)

@prog("sdf_raymarch")
def _():
    Hh = Wd = 80
    def f(ctr, rad, light):  # sphere tracing a smooth union of spheres over a plane, autodiff normals
        def sdf(p):
            d = jnp.linalg.norm(p[None] - ctr, axis=-1) - rad
            k = 0.3
            sm = -k * jax.nn.logsumexp(-d / k)
            return jnp.minimum(sm, p[1] + 1.5)
        u, v = jnp.meshgrid(jnp.linspace(-1, 1, Wd), jnp.linspace(-1, 1, Hh))
        dirs = jnp.stack([u, -v, jnp.full_like(u, 1.5)], -1).reshape(-1, 3)
        dirs = dirs / jnp.linalg.norm(dirs, axis=-1, keepdims=True)
        o = jnp.array([0.0, 0.0, -4.0])
        def march(_, t): return t + jax.vmap(sdf)(o + t[:, None] * dirs)
        t = lax.fori_loop(0, 40, march, jnp.zeros(dirs.shape[0]))
        p = o + t[:, None] * dirs
        nrm = jax.vmap(jax.grad(sdf))(p)
        nrm = nrm / (jnp.linalg.norm(nrm, axis=-1, keepdims=True) + 1e-8)
        shade = jnp.clip(nrm @ light, 0, 1)
        return jnp.where(t < 20, shade, 0.0).reshape(Hh, Wd)
    return f, (f32(8, 3) * np.array([1.5, 0.7, 1.0], np.float32), unif(0.3, 0.8, 8), np.array([0.5, 0.7, -0.5], np.float32))

@prog("gaussian_splat_2d_grad")
def _():
    N, S = 128, 64
    def loss(p, target):  # differentiable 2-D Gaussian splatting: depth sort, front-to-back compositing
        mu, ls, rot, col, op, depth = p
        order = jnp.argsort(depth)
        mu, ls, rot, col, op = mu[order], ls[order], rot[order], col[order], op[order]
        c, s = jnp.cos(rot), jnp.sin(rot)
        sx, sy = jnp.exp(ls[:, 0]), jnp.exp(ls[:, 1])
        a = (c / sx) ** 2 + (s / sy) ** 2; b = c * s * (1 / sx ** 2 - 1 / sy ** 2); cc = (s / sx) ** 2 + (c / sy) ** 2
        g = jnp.linspace(0, 1, S)
        px = jnp.stack(jnp.meshgrid(g, g), -1).reshape(-1, 2)
        d = px[:, None] - mu[None]
        q = a * d[..., 0] ** 2 + 2 * b * d[..., 0] * d[..., 1] + cc * d[..., 1] ** 2
        alpha = jnp.minimum(jax.nn.sigmoid(op) * jnp.exp(-0.5 * q), 0.99)
        lt = jnp.cumsum(jnp.log1p(-alpha), axis=1)
        Tr = jnp.exp(jnp.concatenate([jnp.zeros((px.shape[0], 1)), lt[:, :-1]], 1))
        img = (Tr * alpha) @ jax.nn.sigmoid(col)
        return jnp.mean((img - target) ** 2)
    p = (unif(0, 1, N, 2), unif(-4, -2.5, N, 2), unif(0, np.pi, N), f32(N, 3), f32(N), unif(0, 1, N))
    return jax.grad(loss), (p, unif(0, 1, S * S, 3))

@prog("hash_grid_encoding_grad")
def _():
    Lv, Tsz, Fd, N = 16, 1 << 14, 2, 4096
    res = np.floor(16 * 1.38 ** np.arange(Lv)).astype(np.float32)
    primes = np.array([1, 2654435761, 805459861], np.uint32)
    corners = np.array([[i >> 2 & 1, i >> 1 & 1, i & 1] for i in range(8)], np.uint32)
    def loss(tables, mp, x, y):  # Instant-NGP multiresolution hash encoding + a tiny MLP
        feats = []
        for l in range(Lv):
            sx = x * res[l]
            x0 = jnp.floor(sx); w = sx - x0
            ci = x0.astype(jnp.uint32)[:, None, :] + corners[None]
            h = (ci[..., 0] * primes[0]) ^ (ci[..., 1] * primes[1]) ^ (ci[..., 2] * primes[2])
            e = tables[l][(h % Tsz).astype(jnp.int32)]
            wc = jnp.prod(jnp.where(corners[None] == 1, w[:, None, :], 1 - w[:, None, :]), -1)
            feats.append(jnp.sum(e * wc[..., None], 1))
        out = mlp(mp, jnp.concatenate(feats, -1), jax.nn.relu)
        return jnp.mean((out - y) ** 2)
    return jax.grad(loss, argnums=(0, 1)), (unif(-1e-4, 1e-4, Lv, Tsz, Fd), mlp_params(Lv * Fd, 64, 64, 4), unif(0, 1, N, 3), unif(0, 1, N, 4))


# --- vision ------------------------------------------------------------------------------

@prog("harris_corners")
def _():
    def f(img):  # Sobel gradients, Gaussian-blurred structure tensor, response, 7x7 NMS, top 256
        dn = ("NCHW", "OIHW", "NCHW")
        sob = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32)
        k = np.stack([sob, sob.T])[:, None]
        gxy = lax.conv_general_dilated(img[:, None], k, (1, 1), "SAME", dimension_numbers=dn)
        ix, iy = gxy[:, 0], gxy[:, 1]
        st = jnp.stack([ix * ix, iy * iy, ix * iy], 1)
        g1 = np.exp(-0.5 * (np.arange(-3, 4) / 1.5) ** 2).astype(np.float32); g1 /= g1.sum()
        st = lax.conv_general_dilated(st, np.tile(g1[None, None, :, None], (3, 1, 1, 1)), (1, 1), "SAME", dimension_numbers=dn, feature_group_count=3)
        st = lax.conv_general_dilated(st, np.tile(g1[None, None, None, :], (3, 1, 1, 1)), (1, 1), "SAME", dimension_numbers=dn, feature_group_count=3)
        a, b, c = st[:, 0], st[:, 1], st[:, 2]
        r = a * b - c * c - 0.05 * (a + b) ** 2
        mx = lax.reduce_window(r, -jnp.inf, lax.max, (1, 7, 7), (1, 1, 1), "SAME")
        r = jnp.where((r == mx) & (r > 0), r, 0.0).reshape(r.shape[0], -1)
        v, i = lax.top_k(r, 128)
        return v, i // img.shape[2], i % img.shape[2]
    return f, (unif(0, 1, 2, 160, 160),)

@prog("maxpool3d_grad")
def _():
    def loss(x):  # video pooling: 3x3x3 max (stride 2) and 2x2x2 average, gradients of both
        mp = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 3, 1), (1, 2, 2, 2, 1), "SAME")
        ap = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 2, 1), (1, 2, 2, 2, 1), "VALID") / 8
        return jnp.sum(mp ** 2) + jnp.sum(jnp.tanh(ap))
    return jax.grad(loss), (f32(1, 8, 32, 32, 32),)


# --- point clouds and molecules ----------------------------------------------------------

@prog("farthest_point_sampling")
def _():
    B, N, M, K = 4, 2048, 128, 32
    def f(pts):  # PointNet++ set abstraction: FPS centroids, then kNN groups in local coordinates
        def fps(p):
            def body(i, c):
                idx, dist, last = c
                dist = jnp.minimum(dist, jnp.sum((p - p[last]) ** 2, -1))
                nxt = jnp.argmax(dist).astype(jnp.int32)
                return idx.at[i].set(nxt), dist, nxt
            return lax.fori_loop(1, M, body, (jnp.zeros(M, jnp.int32), jnp.full(N, 1e10), jnp.int32(0)))[0]
        idx = jax.vmap(fps)(pts)
        ctr = jnp.take_along_axis(pts, idx[..., None], 1)
        d = jnp.sum(ctr ** 2, -1)[..., None] - 2 * ctr @ pts.transpose(0, 2, 1) + jnp.sum(pts ** 2, -1)[:, None]
        _, nb = lax.top_k(-d, K)
        grp = jax.vmap(lambda p, i: p[i])(pts, nb)
        return ctr, grp - ctr[:, :, None]
    return f, (unif(-1, 1, B, N, 3),)

@prog("schnet_forces")
def _():
    Bm, A, F, NR, cut = 4, 32, 64, 64, 5.0
    def energy(pos, z, p):  # SchNet: RBF-expanded distances, continuous-filter convolutions
        emb, blocks, out = p
        x = emb[z]
        d = pos[:, :, None] - pos[:, None]
        r = jnp.sqrt(jnp.sum(d * d, -1) + 1e-9)
        mu = jnp.linspace(0, cut, NR)
        rbf = jnp.exp(-10.0 * (r[..., None] - mu) ** 2)
        fc = 0.5 * (jnp.cos(np.pi * r / cut) + 1) * (r < cut) * (1 - jnp.eye(A))
        ssp = lambda t: jax.nn.softplus(t) - np.log(2.0)
        for (w1, w2, lin, o1, o2) in blocks:
            W = ssp(rbf @ w1) @ w2 * fc[..., None]
            m = jnp.einsum("bijf,bjf->bif", W, x @ lin)
            x = x + ssp(m @ o1) @ o2
        return jnp.sum(ssp(x @ out[0]) @ out[1])
    def f(pos, z, p):
        e, g = jax.value_and_grad(energy)(pos, z, p)
        return e, -g
    sc = lambda n: 1 / np.sqrt(n)
    blocks = [(f32(NR, F, scale=sc(NR)), f32(F, F, scale=sc(F)), f32(F, F, scale=sc(F)), f32(F, F, scale=sc(F)), f32(F, F, scale=sc(F))) for _ in range(3)]
    p = (f32(10, F), blocks, (f32(F, 32, scale=sc(F)), f32(32, 1, scale=sc(32))))
    return f, (unif(0, 4, Bm, A, 3), ints(0, 10, Bm, A), p)


# --- simulations and graphs --------------------------------------------------------------

@prog("game_of_life")
def _():
    def f(g):  # 64 generations of Conway's life on a torus, uint8 cells, neighbours by rolls
        def step(_, g):
            n = sum(jnp.roll(g, (dy, dx), (0, 1)) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)
            return ((n == 3) | ((g == 1) & (n == 2))).astype(jnp.uint8)
        return lax.fori_loop(0, 64, step, g)
    return f, ((R.uniform(size=(512, 512)) < 0.3).astype(np.uint8),)

@prog("fem_assembly_cg")
def _():
    n = 48
    xs = np.linspace(0, 1, n + 1)
    nodes = np.stack(np.meshgrid(xs, xs, indexing="ij"), -1).reshape(-1, 2).astype(np.float32)
    nid = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    a, b, c, d = nid[:-1, :-1].ravel(), nid[1:, :-1].ravel(), nid[1:, 1:].ravel(), nid[:-1, 1:].ravel()
    tri = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)]).astype(np.int32)
    bnd = np.zeros((n + 1, n + 1), np.float32); bnd[0] = bnd[-1] = bnd[:, 0] = bnd[:, -1] = 1
    inner = (1 - bnd.ravel()).astype(np.float32)
    NN = nodes.shape[0]
    def f(nodes, tri, kappa, inner):  # P1 stiffness assembled as COO by segment sums, CG solve
        p = nodes[tri]
        e1, e2 = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]
        det = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
        Jinv = jnp.stack([jnp.stack([e2[:, 1], -e1[:, 1]], -1), jnp.stack([-e2[:, 0], e1[:, 0]], -1)], -1) / det[:, None, None]
        gref = jnp.array([[-1.0, -1.0], [1.0, 0.0], [0.0, 1.0]])
        G = jnp.einsum("kd,edc->ekc", gref, Jinv)
        Ke = (0.5 * jnp.abs(det) * kappa)[:, None, None] * jnp.einsum("eic,ejc->eij", G, G)
        rows = jnp.repeat(tri, 3, axis=1).ravel(); cols = jnp.tile(tri, (1, 3)).ravel(); vals = Ke.ravel()
        def A(x):
            y = jax.ops.segment_sum(vals * (inner * x)[cols], rows, num_segments=NN)
            return inner * y + (1 - inner) * x
        b = inner * (1.0 / NN)
        def body(_, s):
            x, r, pp, rs = s
            ap = A(pp)
            al = rs / jnp.sum(pp * ap)
            x, r = x + al * pp, r - al * ap
            rs2 = jnp.sum(r * r)
            return x, r, r + rs2 / rs * pp, rs2
        x0 = jnp.zeros(NN)
        return lax.fori_loop(0, 100, body, (x0, b, b, jnp.sum(b * b)))[0]
    return f, (nodes, tri, unif(0.5, 2.0, tri.shape[0]), inner)

@prog("bellman_ford_edges")
def _():
    Nn, E = 16384, 131072
    def f(src, dst, w):  # single-source shortest paths: 40 relaxations by segment_min over edges
        d0 = jnp.full(Nn, jnp.inf).at[0].set(0.0)
        def body(_, d): return jnp.minimum(d, jax.ops.segment_min(d[src] + w, dst, num_segments=Nn))
        d = lax.fori_loop(0, 40, body, d0)
        return jnp.where(jnp.isinf(d), -1.0, d)
    return f, (ints(0, Nn, E), ints(0, Nn, E), unif(0.1, 1.0, E))

@prog("connected_components")
def _():
    B, S = 2, 128
    def f(mask):  # labels by min-propagation over 4-neighbours in a while loop until stable
        big = jnp.int32(1 << 30)
        lab0 = jnp.where(mask, jnp.arange(S * S, dtype=jnp.int32).reshape(S, S)[None], big)
        def nbmin(l):
            p = jnp.pad(l, ((0, 0), (1, 1), (1, 1)), constant_values=big)
            m = jnp.minimum(jnp.minimum(p[:, :-2, 1:-1], p[:, 2:, 1:-1]), jnp.minimum(p[:, 1:-1, :-2], p[:, 1:-1, 2:]))
            return jnp.where(mask, jnp.minimum(l, m), big)
        def cond(c): return c[1] & (c[2] < 4096)
        def body(c):
            l, _, it = c
            n = nbmin(l)
            return n, jnp.any(n != l), it + 1
        l, _, it = lax.while_loop(cond, body, (lab0, True, 0))
        return l, it
    sm = np.cumsum(np.cumsum(R.standard_normal((B, S + 8, S + 8)), 1), 2)
    sm = sm[:, 8:, 8:] - sm[:, :-8, 8:] - sm[:, 8:, :-8] + sm[:, :-8, :-8]
    return f, (sm > 2.0,)


# --- quantum, bits, recommendation -------------------------------------------------------

@prog("quantum_statevector")
def _():
    B, nq, Lr = 8, 13, 6
    bits = (np.arange(1 << nq)[:, None] >> (nq - 1 - np.arange(nq))[None]) & 1
    zsign = (1 - 2 * bits).astype(np.float32)
    czph = np.prod([np.where(bits[:, q] & bits[:, (q + 1) % nq], -1.0, 1.0) for q in range(nq)], 0).astype(np.complex64)
    def f(theta, phi):  # hardware-efficient ansatz: RY.RZ on every qubit, a CZ ring, <Z_q> readout
        psi = jnp.zeros((B, 1 << nq), jnp.complex64).at[:, 0].set(1.0)
        for l in range(Lr):
            for q in range(nq):
                t, p = theta[:, l, q] / 2, phi[:, l, q] / 2
                ry = jnp.stack([jnp.stack([jnp.cos(t), -jnp.sin(t)], -1), jnp.stack([jnp.sin(t), jnp.cos(t)], -1)], -2).astype(jnp.complex64)
                rz = jnp.stack([jnp.exp(-1j * p), jnp.exp(1j * p)], -1)
                g = rz[:, :, None] * ry
                s = psi.reshape(B, 1 << q, 2, 1 << (nq - 1 - q))
                psi = jnp.einsum("bij,bajc->baic", g, s).reshape(B, -1)
            psi = psi * czph
        return (jnp.abs(psi) ** 2) @ zsign
    return f, (unif(0, 2 * np.pi, B, Lr, nq), unif(0, 2 * np.pi, B, Lr, nq))

@prog("crc32_table")
def _():
    tab = np.zeros(256, np.uint32)
    for i in range(256):
        c = i
        for _ in range(8): c = (0xEDB88320 ^ (c >> 1)) if c & 1 else (c >> 1)
        tab[i] = c
    def f(msgs, table):  # zlib's CRC-32, one table lookup per byte, over a batch of 512-byte messages
        def body(i, crc):
            b = lax.dynamic_index_in_dim(msgs, i, 1, keepdims=False).astype(jnp.uint32)
            return table[((crc ^ b) & 0xFF).astype(jnp.int32)] ^ (crc >> 8)
        return ~lax.fori_loop(0, msgs.shape[1], body, jnp.full(msgs.shape[0], 0xFFFFFFFF, jnp.uint32))
    return f, (ints(0, 256, 8192, 512, dt=np.uint8), tab)

@prog("chacha20_block")
def _():
    def f(keyw, nonce, ctr):  # the ChaCha20 block function (RFC 8439) over 65536 counters
        def rotl(x, n): return (x << n) | (x >> (32 - n))
        consts = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
        n = ctr.shape[0]
        init = [jnp.full(n, c, jnp.uint32) for c in consts] + [jnp.broadcast_to(keyw[i], (n,)) for i in range(8)] + \
               [ctr] + [jnp.broadcast_to(nonce[i], (n,)) for i in range(3)]
        x = list(init)
        def qr(a, b, c, d):
            x[a] = x[a] + x[b]; x[d] = rotl(x[d] ^ x[a], 16)
            x[c] = x[c] + x[d]; x[b] = rotl(x[b] ^ x[c], 12)
            x[a] = x[a] + x[b]; x[d] = rotl(x[d] ^ x[a], 8)
            x[c] = x[c] + x[d]; x[b] = rotl(x[b] ^ x[c], 7)
        for _ in range(10):
            qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15)
            qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14)
        return jnp.stack([a + b for a, b in zip(x, init)], -1)
    return f, (ints(0, 1 << 32, 8, dt=np.int64).astype(np.uint32), ints(0, 1 << 32, 3, dt=np.int64).astype(np.uint32), np.arange(1, 65537, dtype=np.uint32))

@prog("factorization_machine_grad")
def _():
    Bn, Fl, Vf, K = 4096, 39, 10000, 16
    offs = (np.arange(Fl) * Vf).astype(np.int32)
    def loss(p, idx, y):  # a Criteo-style FM: field offsets, linear + pairwise terms by the sum-square trick
        w0, w, V = p
        ii = idx + offs
        e = V[ii]
        s = jnp.sum(e, 1)
        pair = 0.5 * jnp.sum(s * s - jnp.sum(e * e, 1), -1)
        logit = w0 + jnp.sum(w[ii], 1) + pair
        return jnp.mean(jax.nn.softplus(logit) - y * logit)
    p = (np.float32(0.0), f32(Fl * Vf, scale=0.01), f32(Fl * Vf, K, scale=0.01))
    return jax.grad(loss), (p, ints(0, Vf, Bn, Fl), (R.uniform(size=Bn) < 0.25).astype(np.float32))


if __name__ == "__main__":
    U.main(P)
