"""A fourteenth sweep of ordinary JAX programs outside `axle bench` (2026-11-29, thirteenth session):
kinds the first thirteen sweeps left out. Language-model training and serving (GRPO's
group-normalized clipped policy loss with a k3 KL penalty and its gradient, a real CTC loss over
blank-interleaved labels with its gradient, BigBird block-sparse attention in bf16 by gathered key
blocks, H2O heavy-hitter KV-cache eviction by top_k over accumulated attention, GPTQ's column-wise
4-bit quantization with Cholesky error feedback in a fori_loop, 2:4 structured sparsity with SR-STE,
a K-FAC preconditioned step, a Hessian-free step by Gauss-Newton products in CG, FedAvg's vmapped
clients each scanning local SGD), self-supervised and vision work (MAE random masking with argsort
and unshuffling, DINO's centred and sharpened teacher with an EMA update, the Lovasz-softmax loss
through per-class sorts, a neural cellular automaton trained through its rollout, Chambolle-Pock TV
denoising, Richardson-Lucy deconvolution by FFTs, non-local means by shifted box filters),
generative models and neural fields (a rectified-flow matching step, a SIREN SDF with the eikonal
double backprop, NeRF hierarchical inverse-transform sampling by searchsorted, a Fourier neural
operator's truncated-mode spectral convolution with its gradient), sequence and audio models (an S4D
Vandermonde kernel in complex64 with FFT convolution and its gradient, Conv-TasNet's TCN with gLN and
a permutation-invariant SI-SNR gradient, GCC-PHAT time delays with parabolic peak refinement), RL and
control (C51's distributional projection by scatter-adds, SAC's tanh-Gaussian actor and temperature
losses, MPPI planning for a planar quadrotor), physics and chemistry (a 2-D FDTD Yee scheme,
Cahn-Hilliard by semi-implicit spectral steps, a restricted Hartree-Fock SCF loop with eigh, an MPS
expectation by left / right environment scans, cloth by position-based dynamics over an edge list),
geometry (ICP with batched Kabsch SVDs, batched PnP by Levenberg-Marquardt with jacfwd), statistics
and classical ML (an SVGP ELBO gradient, Bayes-by-backprop, GBDT histogram split finding,
NeuralSort's relaxed permutations, long-only portfolios by projected gradient onto the simplex) and
integer data work (SHA-256 compression on uint32, a count-min sketch with a Bloom filter).

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_14.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy as jsp
from jax import lax
from jax.flatten_util import ravel_pytree
import ml_dtypes

import unseen_programs as U

R, f32, unif, ints, key, pkey, mlp_params, mlp = U.helpers(14)
P, prog = U.sweep()
BF = ml_dtypes.bfloat16
NCW, NHWC = ("NCH", "OIH", "NCH"), ("NHWC", "HWIO", "NHWC")
def conv(x, w, stride=(1, 1), pad="SAME", dn=NHWC, **kw):
    return lax.conv_general_dilated(x, w, stride, pad, dimension_numbers=dn, **kw)
ln, mha, tm = U.ln, U.mha, jax.tree_util.tree_map
xent = U.xent
def spd(n, eps=1.0): a = f32(n, n); return (a @ a.T / n + eps * np.eye(n)).astype(np.float32)


# --- language-model training and serving ---------------------------------------------------

@prog("grpo_loss_grad")
def _():
    Q, G, T, D, V = 4, 8, 32, 128, 2048
    def loss(W, h, tok, old_lp, ref_lp, rew, lens):  # GRPO: group-normalized rewards, clipped token ratios, k3 KL to a reference, length mask
        lp = jnp.take_along_axis(jax.nn.log_softmax(h @ W), tok[..., None], -1)[..., 0]
        r = rew.reshape(Q, G); adv = ((r - r.mean(1, keepdims=True)) / (r.std(1, keepdims=True) + 1e-4)).reshape(-1, 1)
        ratio = jnp.exp(lp - old_lp); pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 0.8, 1.2) * adv)
        kl = jnp.exp(ref_lp - lp) - (ref_lp - lp) - 1
        m = (jnp.arange(T) < lens[:, None]).astype(jnp.float32)
        return jnp.mean(jnp.sum((pg + 0.04 * kl) * m, 1) / m.sum(1))
    W, h, tok = f32(D, V, scale=D ** -0.5), f32(Q * G, T, D), ints(0, V, Q * G, T)
    lp = np.take_along_axis(np.asarray(jax.nn.log_softmax(h @ W)), tok[..., None], -1)[..., 0]
    return jax.grad(loss), (W, h, tok, (lp + f32(Q * G, T, scale=0.2)).astype(np.float32), (lp + f32(Q * G, T, scale=0.2)).astype(np.float32),
                            unif(0, 1, Q * G), ints(8, T + 1, Q * G))

@prog("ctc_loss_grad")
def _():
    B, T, K, S, NEG = 16, 200, 64, 40, -1e30
    def loss(logits, labels, llen, tlen):  # CTC: blank-interleaved labels, stay / advance / skip transitions by a logsumexp scan, length masks
        lp = jax.nn.log_softmax(logits)
        ext = jnp.zeros((B, 2 * S + 1), jnp.int32).at[:, 1::2].set(labels)
        e = jnp.take_along_axis(lp, jnp.broadcast_to(ext[:, None], (B, T, 2 * S + 1)), -1)
        skip = jnp.concatenate([jnp.zeros((B, 2), bool), (ext[:, 2:] != ext[:, :-2]) & (ext[:, 2:] != 0)], 1)
        a0 = jnp.full((B, 2 * S + 1), NEG).at[:, :2].set(e[:, 0, :2])
        def step(a, c):
            (et, t) = c
            a1 = jnp.concatenate([jnp.full((B, 1), NEG), a[:, :-1]], 1)
            a2 = jnp.where(skip, jnp.concatenate([jnp.full((B, 2), NEG), a[:, :-2]], 1), NEG)
            new = jax.nn.logsumexp(jnp.stack([a, a1, a2]), 0) + et
            return jnp.where((t < tlen)[:, None], new, a), None
        a, _ = lax.scan(step, a0, (e[:, 1:].swapaxes(0, 1), jnp.arange(1, T)))
        ll = jnp.logaddexp(jnp.take_along_axis(a, 2 * llen[:, None], 1), jnp.take_along_axis(a, 2 * llen[:, None] - 1, 1))[:, 0]
        return -jnp.mean(ll / llen)
    llen = ints(20, S + 1, B)
    lab = np.where(np.arange(S) < llen[:, None], ints(1, K, B, S), 0).astype(np.int32)
    return jax.grad(loss), (f32(B, T, K), lab, llen, ints(150, T + 1, B))

@prog("bigbird_block_sparse_bf16")
def _():
    B, H, L, hd, bs = 2, 4, 1024, 64, 64; nb = L // bs
    rnd = np.stack([R.choice(np.setdiff1d(np.arange(1, nb - 1), [i - 1, i, i + 1]), 3, replace=False) for i in range(nb)])
    idx = jnp.asarray(np.concatenate([(np.arange(nb)[:, None] + [-1, 0, 1]) % nb, np.tile([[0, nb - 1]], (nb, 1)), rnd], 1).astype(np.int32))
    def f(q, k, v):  # BigBird: each query block sees 3 window, 2 global and 3 random key blocks (gathered); the first block attends fully
        qb, kb, vb = (t.reshape(B, H, nb, bs, hd) for t in (q, k, v))
        kg, vg = kb[:, :, idx].reshape(B, H, nb, 8 * bs, hd), vb[:, :, idx].reshape(B, H, nb, 8 * bs, hd)
        s = jnp.einsum("bhnqd,bhnkd->bhnqk", qb, kg, preferred_element_type=jnp.float32) / 8.0
        o = jnp.einsum("bhnqk,bhnkd->bhnqd", jax.nn.softmax(s, -1).astype(jnp.bfloat16), vg, preferred_element_type=jnp.float32)
        sg = jnp.einsum("bhqd,bhkd->bhqk", qb[:, :, 0], k, preferred_element_type=jnp.float32) / 8.0
        og = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(sg, -1).astype(jnp.bfloat16), v, preferred_element_type=jnp.float32)
        return o.at[:, :, 0].set(og).reshape(B, H, L, hd).astype(jnp.bfloat16)
    return f, tuple(f32(B, H, L, hd).astype(BF) for _ in range(3))

@prog("h2o_kv_eviction_bf16")
def _():
    B, H, S, hd, keep, recent = 4, 8, 2048, 128, 1024, 128
    def f(q, kc, vc, acc):  # H2O decode step: attend over the bf16 cache, accumulate attention mass, keep the top heavy hitters plus a recent window
        s = jnp.einsum("bhd,bhsd->bhs", q, kc, preferred_element_type=jnp.float32) / np.sqrt(hd)
        p = jax.nn.softmax(s, -1); o = jnp.einsum("bhs,bhsd->bhd", p.astype(jnp.bfloat16), vc, preferred_element_type=jnp.float32)
        acc = acc + p; _, sel = lax.top_k(jnp.where(jnp.arange(S) >= S - recent, jnp.inf, acc), keep)
        sel = jnp.sort(sel, -1); g = lambda t: jnp.take_along_axis(t, sel[..., None], 2)
        return o, g(kc), g(vc), jnp.take_along_axis(acc, sel, -1)
    bf = lambda *s: f32(*s).astype(BF)
    return f, (bf(B, H, hd), bf(B, H, S, hd), bf(B, H, S, hd), unif(0, 3, B, H, S))

@prog("gptq_int4_quantize")
def _():
    O, I, N = 256, 512, 2048
    def f(W, X):  # GPTQ: H = 2 X^T X damped, upper Cholesky of H^-1, per column round-to-int4 with the error pushed into later columns
        H = 2 * X.T @ X / N; H = H + 0.01 * jnp.mean(jnp.diag(H)) * jnp.eye(I)
        Hi = jnp.linalg.cholesky(jnp.linalg.inv(H)).T
        s = jnp.max(jnp.abs(W), 1) / 7
        def body(i, c):
            W, Q = c; w = W[:, i]
            q = jnp.clip(jnp.round(w / s), -8, 7)
            err = (w - q * s) / Hi[i, i]
            W = W - err[:, None] * jnp.where(jnp.arange(I) > i, Hi[i], 0.0)
            return W, Q.at[:, i].set(q.astype(jnp.int8))
        _, Q = lax.fori_loop(0, I, body, (W, jnp.zeros((O, I), jnp.int8)))
        Wq = Q.astype(jnp.float32) * s[:, None]
        return jnp.sum((X @ (Wq - W).T) ** 2, 0) / N, Wq
    return f, (f32(O, I, scale=I ** -0.5), f32(N, I) * unif(0.2, 2, I))

@prog("sparse_24_srste_grad")
def _():
    T, D, F = 256, 512, 1024
    def mask24(w):  # keep the 2 largest |w| of each group of 4 input rows
        g = jnp.abs(w).reshape(-1, 4, w.shape[1])
        return (jnp.sum(g[:, None, :] > g[:, :, None], 2) < 2).reshape(w.shape)
    def loss(p, x, y):  # 2:4 sparse training: straight-through masked weights, SR-STE decay of the pruned weights
        out, reg = x, 0.0
        for i, w in enumerate(p):
            m = lax.stop_gradient(mask24(w)); out = out @ (w + lax.stop_gradient(w * m - w))
            reg = reg + 0.5 * 2e-4 * jnp.sum((w * ~m) ** 2)
            if i == 0: out = jax.nn.relu(out)
        return jnp.mean((out - y) ** 2) + reg
    return jax.grad(loss), ([f32(D, F, scale=D ** -0.5), f32(F, D, scale=F ** -0.5)], f32(T, D), f32(T, D))

@prog("kfac_mlp_step")
def _():
    B, dims = 512, (256, 256, 256, 10)
    def fwd(p, eps, x):
        acts, h = [], x
        for i, ((w, b), e) in enumerate(zip(p, eps)):
            acts.append(jnp.concatenate([h, jnp.ones((B, 1))], 1)); h = h @ w + b + e
            if i < len(p) - 1: h = jnp.tanh(h)
        return h, acts
    def step(p, As, Gs, x, y):  # K-FAC: activation and pre-activation-gradient factors (EMA), damped Cholesky solves on both sides
        eps = [jnp.zeros((B, w.shape[1])) for w, _ in p]
        (l, acts), (gp, ge) = jax.value_and_grad(lambda p, e: (lambda o: (xent(o[0], y), o[1]))(fwd(p, e, x)), (0, 1), has_aux=True)(p, eps)
        new_p, nA, nG = [], [], []
        for (w, b), (gw, gb), a, g, A, G in zip(p, gp, acts, ge, As, Gs):
            A = 0.95 * A + 0.05 * a.T @ a / B; G = 0.95 * G + 0.05 * B * g.T @ g
            dW = jnp.concatenate([gw, gb[None]], 0)
            cA = jsp.linalg.cho_factor(A + 1e-2 * jnp.eye(A.shape[0])); cG = jsp.linalg.cho_factor(G + 1e-2 * jnp.eye(G.shape[0]))
            u = jsp.linalg.cho_solve(cG, jsp.linalg.cho_solve(cA, dW).T).T
            new_p.append((w - 0.05 * u[:-1], b - 0.05 * u[-1])); nA.append(A); nG.append(G)
        return l, new_p, nA, nG
    p = mlp_params(*dims)
    return step, (p, [np.eye(a + 1, dtype=np.float32) for a in dims[:-1]], [np.eye(b, dtype=np.float32) for b in dims[1:]], f32(B, dims[0]), ints(0, 10, B))

@prog("hessian_free_cg_step")
def _():
    B, K, IT = 256, 10, 20
    def step(p, x, y):  # Hessian-free: Gauss-Newton products J^T H_softmax J v by jvp / vjp, damped CG in a fori_loop, then the update
        flat, unrav = ravel_pytree(p)
        out = lambda f: mlp(unrav(f), x, jnp.tanh)
        logits, vjp = jax.vjp(out, flat); pr = jax.nn.softmax(logits)
        g = vjp((pr - jax.nn.one_hot(y, K)) / B)[0]
        def Gv(v):
            jv = jax.jvp(out, (flat,), (v,))[1]
            return vjp((pr * jv - pr * jnp.sum(pr * jv, -1, keepdims=True)) / B)[0] + 1e-3 * v
        def body(i, c):
            d, r, q, rr = c
            Aq = Gv(q); al = rr / (q @ Aq)
            d, r = d + al * q, r - al * Aq; rn = r @ r
            return d, r, r + rn / rr * q, rn
        d = lax.fori_loop(0, IT, body, (jnp.zeros_like(g), -g, -g, g @ g))[0]
        return unrav(flat + d)
    return step, (mlp_params(128, 256, 256, K), f32(B, 128), ints(0, K, B))

@prog("fedavg_local_sgd")
def _():
    C, ST, mb, d, K = 16, 10, 32, 64, 10
    def local(p, xs, ys):
        def sgd(p, xy): return tm(lambda a, g: a - 0.1 * g, p, jax.grad(lambda p: xent(mlp(p, xy[0], jax.nn.relu), xy[1]))(p)), None
        return lax.scan(sgd, p, (xs, ys))[0]
    def f(p, mom, xs, ys, n):  # FedAvg: every client runs local SGD by scan (vmapped), deltas averaged by data size, server momentum
        cl, w = jax.vmap(local, (None, 0, 0))(p, xs, ys), n / n.sum()
        delta = tm(lambda c, a: jnp.tensordot(w, c, 1) - a, cl, p)
        mom = tm(lambda m, dd: 0.9 * m + dd, mom, delta)
        return tm(lambda a, m: a + m, p, mom), mom
    p = mlp_params(d, 128, K)
    return f, (p, tm(np.zeros_like, p), f32(C, ST, mb, d), ints(0, K, C, ST, mb), unif(50, 500, C))


# --- self-supervised and vision ----------------------------------------------------------------

@prog("mae_random_mask_grad")
def _():
    B, S, Pp, D, Dd, H, keep = 16, 64, 8, 192, 128, 4, 16; n = (S // Pp) ** 2
    def block(t, w):
        t = t + mha(ln(t), w[0], w[1], H)
        return t + jax.nn.gelu(ln(t) @ w[2]) @ w[3]
    def loss(p, img, k):  # MAE: per-image noise argsort, keep 25% of patches, encoder on the kept ones, mask tokens, unshuffle, masked MSE
        pe, pos, enc, dec_in, mtok, dpos, dec, head = p
        x = img.reshape(B, S // Pp, Pp, S // Pp, Pp, 3).transpose(0, 1, 3, 2, 4, 5).reshape(B, n, -1)
        ids = jnp.argsort(jax.random.uniform(pkey(k), (B, n)), -1); restore = jnp.argsort(ids, -1)
        t = jnp.take_along_axis(x @ pe + pos, ids[:, :keep, None], 1)
        for w in enc: t = block(t, w)
        t = jnp.concatenate([ln(t) @ dec_in, jnp.broadcast_to(mtok, (B, n - keep, Dd))], 1)
        t = jnp.take_along_axis(t, restore[..., None], 1) + dpos
        pred = block(t, dec) @ head
        tgt = (x - x.mean(-1, keepdims=True)) * lax.rsqrt(x.var(-1, keepdims=True) + 1e-6)
        m = (restore >= keep).astype(jnp.float32)
        return jnp.sum(jnp.mean((pred - tgt) ** 2, -1) * m) / m.sum()
    bw = lambda c: [f32(c, 3 * c, scale=c ** -0.5), f32(c, c, scale=c ** -0.5), f32(c, 4 * c, scale=c ** -0.5), f32(4 * c, c, scale=(4 * c) ** -0.5)]
    p = (f32(3 * Pp * Pp, D, scale=0.05), f32(n, D, scale=0.02), [bw(D), bw(D)], f32(D, Dd, scale=D ** -0.5), f32(Dd, scale=0.02),
         f32(n, Dd, scale=0.02), bw(Dd), f32(Dd, 3 * Pp * Pp, scale=Dd ** -0.5))
    return jax.grad(loss), (p, unif(0, 1, B, S, S, 3), key(3))

@prog("dino_center_ema_step")
def _():
    B, Din, Hd, Kp, ng, nl = 64, 384, 512, 2048, 2, 4
    def net(p, x):
        w1, w2, v = p; z = jax.nn.gelu(x @ w1) @ w2
        z = z / jnp.linalg.norm(z, axis=-1, keepdims=True)
        return z @ (v / jnp.linalg.norm(v, axis=0, keepdims=True))
    def loss(ps, pt, center, views):  # DINO: teacher on global crops, centred and sharpened; student on all crops; cross-entropy over pairs
        t = jax.nn.softmax((net(pt, views[:ng]) - center) / 0.04, -1)
        s = jax.nn.log_softmax(net(ps, views) / 0.1, -1)
        tot = sum(-jnp.mean(jnp.sum(t[i] * s[j], -1)) for i in range(ng) for j in range(ng + nl) if i != j)
        return tot / (ng * (ng + nl - 1)), t
    def step(ps, pt, center, views):  # SGD on the student, EMA teacher 0.996, center EMA from the teacher outputs
        (l, _), g = jax.value_and_grad(loss, has_aux=True)(ps, pt, center, views)
        ps = tm(lambda a, b: a - 0.01 * b, ps, g); pt = tm(lambda a, b: 0.996 * a + 0.004 * b, pt, ps)
        center = 0.9 * center + 0.1 * jnp.mean(net(pt, views[:ng]), (0, 1))
        return l, ps, pt, center
    p = (f32(Din, Hd, scale=Din ** -0.5), f32(Hd, 256, scale=Hd ** -0.5), f32(256, Kp))
    return step, (p, tm(lambda a: (a + f32(*a.shape, scale=0.01)).astype(np.float32), p), f32(Kp, scale=0.1), f32(ng + nl, B, Din))

@prog("lovasz_softmax_grad")
def _():
    B, S, C = 2, 64, 21
    def loss(logits, y):  # Lovasz-softmax: per class, errors sorted descending, the Jaccard extension's gradient from cumsums, dot product
        p = jax.nn.softmax(logits, -1).reshape(-1, C).T
        fg = (y.reshape(1, -1) == jnp.arange(C)[:, None]).astype(jnp.float32)
        err = jnp.abs(fg - p); o = jnp.argsort(-err, -1)
        es, fs = jnp.take_along_axis(err, o, -1), jnp.take_along_axis(fg, o, -1)
        gts = fs.sum(-1, keepdims=True)
        jac = 1 - (gts - jnp.cumsum(fs, -1)) / (gts + jnp.cumsum(1 - fs, -1))
        jac = jnp.concatenate([jac[:, :1], jac[:, 1:] - jac[:, :-1]], -1)
        present = gts[:, 0] > 0
        return jnp.sum(jnp.where(present, jnp.sum(es * lax.stop_gradient(jac), -1), 0)) / present.sum()
    return jax.grad(loss), (f32(B, S, S, C, scale=2.0), ints(0, C, B, S, S))

@prog("neural_ca_bptt_grad")
def _():
    B, S, C, Hd, ST = 2, 32, 16, 128, 10
    sob = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32) / 8
    idk = np.zeros((3, 3), np.float32); idk[1, 1] = 1
    kern = jnp.asarray(np.tile(np.stack([idk, sob, sob.T], -1)[:, :, None, :], (1, 1, 1, C)))  # [3, 3, 1, 3C], depthwise
    def alive(x): return lax.reduce_window(x[..., 3:4], -jnp.inf, lax.max, (1, 3, 3, 1), (1, 1, 1, 1), "SAME") > 0.1
    def loss(p, x0, target, k):  # growing NCA: identity + Sobel depthwise perception, 1x1 MLP update, stochastic cell updates, alive masks
        w1, b1, w2 = p
        def step(x, i):
            pre = alive(x); dx = jax.nn.relu(conv(x, kern, feature_group_count=C) @ w1 + b1) @ w2
            upd = jax.random.uniform(jax.random.fold_in(pkey(k), i), (B, S, S, 1)) < 0.5
            x = x + dx * upd; return x * (pre & alive(x)), None
        x, _ = lax.scan(step, x0, jnp.arange(ST))
        return jnp.mean((x[..., :4] - target) ** 2)
    x0 = np.zeros((B, S, S, C), np.float32); x0[:, S // 2, S // 2, 3:] = 1
    return jax.grad(loss), ((f32(3 * C, Hd, scale=0.1), np.zeros(Hd, np.float32), f32(Hd, C, scale=0.02)), x0, unif(0, 1, B, S, S, 4), key(5))

@prog("tv_chambolle_pock")
def _():
    B, S, IT, lam = 2, 192, 50, 0.15
    def grad2(u): return jnp.stack([jnp.pad(u[:, 1:] - u[:, :-1], ((0, 0), (0, 1), (0, 0))), jnp.pad(u[:, :, 1:] - u[:, :, :-1], ((0, 0), (0, 0), (0, 1)))], -1)
    def div2(p):
        px, py = p[..., 0], p[..., 1]
        dx = jnp.concatenate([px[:, :1], px[:, 1:-1] - px[:, :-2], -px[:, -2:-1]], 1)
        dy = jnp.concatenate([py[:, :, :1], py[:, :, 1:-1] - py[:, :, :-2], -py[:, :, -2:-1]], 2)
        return dx + dy
    def f(g):  # ROF TV denoising by the primal-dual algorithm: dual ascent with pointwise ball projection, primal prox, extrapolation
        tau = sig = 1 / np.sqrt(8)
        def body(i, c):
            u, ub, p = c; p = p + sig * grad2(ub)
            p = p / jnp.maximum(1, jnp.sqrt(jnp.sum(p * p, -1, keepdims=True)) / lam)
            un = (u + tau * div2(p) + tau * g) / (1 + tau)
            return un, 2 * un - u, p
        return lax.fori_loop(0, IT, body, (g, g, jnp.zeros(g.shape + (2,))))[0]
    clean = np.kron(R.random((B, 16, 16)), np.ones((S // 16, S // 16))).astype(np.float32)
    return f, ((clean + 0.1 * R.standard_normal(clean.shape)).astype(np.float32),)

@prog("richardson_lucy_fft")
def _():
    B, S, IT = 4, 128, 20
    yy, xx = np.meshgrid(np.fft.fftfreq(S) * S, np.fft.fftfreq(S) * S, indexing="ij")
    psf = np.exp(-(yy ** 2 + xx ** 2) / (2 * 2.5 ** 2)); psf /= psf.sum()
    Hf = np.fft.rfft2(psf).astype(np.complex64)
    def f(obs, Hf):  # Richardson-Lucy: est *= K^T (obs / K est), the blur and its adjoint as rfft2 products, in a fori_loop
        blur = lambda x, h: jnp.fft.irfft2(jnp.fft.rfft2(x) * h, s=(S, S))
        return lax.fori_loop(0, IT, lambda i, e: e * blur(obs / jnp.maximum(blur(e, Hf), 1e-6), jnp.conj(Hf)), jnp.full_like(obs, obs.mean()))
    img = unif(0, 1, B, S, S)
    obs = np.maximum(np.fft.irfft2(np.fft.rfft2(img) * Hf, s=(S, S)), 0) + 0.01
    return f, (obs.astype(np.float32), Hf)

@prog("nonlocal_means")
def _():
    B, S, Pr, Sr, h = 2, 128, 2, 5, 0.15
    def f(img):  # NLM: for each of 11x11 search offsets (fori_loop, dynamic slices) patch distances by a 5x5 box filter, exp weights
        pad = jnp.pad(img, ((0, 0), (Sr, Sr), (Sr, Sr)), mode="reflect")
        box = lambda t: lax.reduce_window(t, 0.0, lax.add, (1, 2 * Pr + 1, 2 * Pr + 1), (1, 1, 1), "SAME") / (2 * Pr + 1) ** 2
        def body(o, c):
            num, den = c
            sh = lax.dynamic_slice(pad, (0, o // (2 * Sr + 1), o % (2 * Sr + 1)), (B, S, S))
            w = jnp.exp(-jnp.maximum(box((img - sh) ** 2) - 2 * 0.05 ** 2, 0) / h ** 2)
            return num + w * sh, den + w
        num, den = lax.fori_loop(0, (2 * Sr + 1) ** 2, body, (jnp.zeros_like(img), jnp.zeros_like(img)))
        return num / den
    clean = np.kron(R.random((B, 16, 16)), np.ones((8, 8)))
    return f, ((clean + 0.05 * R.standard_normal(clean.shape)).astype(np.float32),)


# --- generative models and neural fields ---------------------------------------------------------

@prog("flow_matching_grad")
def _():
    B, d, Hd = 512, 64, 512
    def temb(t): fr = jnp.exp(-np.log(1000) * jnp.arange(32) / 32); return jnp.concatenate([jnp.sin(t * fr * 1000), jnp.cos(t * fr * 1000)], -1)
    def loss(p, x1, k):  # rectified flow: x_t on the straight path from noise, an MLP with sinusoidal time features regresses x1 - x0
        k1, k2 = jax.random.split(pkey(k))
        x0, t = jax.random.normal(k1, x1.shape), jax.random.uniform(k2, (B, 1))
        v = mlp(p, jnp.concatenate([(1 - t) * x0 + t * x1, temb(t)], -1), jax.nn.silu)
        return jnp.mean((v - (x1 - x0)) ** 2)
    return jax.grad(loss), (mlp_params(d + 64, Hd, Hd, Hd, d), f32(B, d), key(4))

@prog("siren_eikonal_grad")
def _():
    N, Hd = 1024, 128
    def siren(p, x):
        for i, (w, b) in enumerate(p[:-1]): x = jnp.sin((30.0 if i == 0 else 1.0) * (x @ w + b))
        return (x @ p[-1][0] + p[-1][1])[..., 0]
    def loss(p, pts, nrm, free):  # SIREN SDF: zero level set with normals on surface samples, eikonal |grad f| = 1 off the surface
        g = jax.vmap(jax.grad(siren, 1), (None, 0))
        gs, gf = g(p, pts), g(p, free)
        return (jnp.mean(jnp.abs(siren(p, pts))) + 0.1 * jnp.mean(1 - jnp.sum(gs * nrm, -1) / (jnp.linalg.norm(gs, axis=-1) + 1e-6))
                + 0.05 * jnp.mean((jnp.linalg.norm(gf, axis=-1) - 1) ** 2) + 0.1 * jnp.mean(jnp.exp(-100 * jnp.abs(siren(p, free)))))
    dims = (3, Hd, Hd, Hd, 1)
    p = [(unif(-1 / a, 1 / a, a, b) if i == 0 else unif(-np.sqrt(6 / a), np.sqrt(6 / a), a, b), unif(-0.1, 0.1, b)) for i, (a, b) in enumerate(zip(dims, dims[1:]))]
    pts = f32(N, 3); pts /= np.linalg.norm(pts, axis=1, keepdims=True)
    return jax.grad(loss), (p, (pts * 0.5).astype(np.float32), pts.astype(np.float32), unif(-1, 1, N, 3))

@prog("nerf_hierarchical")
def _():
    Rn, Nc, Nf, Hd = 256, 32, 64, 128
    def enc(x): fr = 2.0 ** jnp.arange(6); e = (x[..., None, :] * fr[:, None]).reshape(*x.shape[:-1], -1); return jnp.concatenate([x, jnp.sin(e), jnp.cos(e)], -1)
    def render(p, o, d, z):
        raw = mlp(p, enc(o[:, None] + d[:, None] * z[..., None]), jax.nn.relu)
        dl = jnp.concatenate([z[:, 1:] - z[:, :-1], jnp.full((Rn, 1), 1e3)], -1)
        al = 1 - jnp.exp(-jax.nn.relu(raw[..., 3]) * dl)
        w = al * jnp.cumprod(jnp.concatenate([jnp.ones((Rn, 1)), 1 - al[:, :-1] + 1e-10], -1), -1)
        return jnp.sum(w[..., None] * jax.nn.sigmoid(raw[..., :3]), 1), jnp.sum(w * z, -1), w
    def f(pc, pf, o, d, u):  # coarse pass, weights -> pdf -> cdf, inverse-transform samples by searchsorted per ray, sorted merge, fine pass
        zc = jnp.broadcast_to(jnp.linspace(2.0, 6.0, Nc), (Rn, Nc)); w = render(pc, o, d, zc)[2]
        mid = 0.5 * (zc[:, 1:] + zc[:, :-1])
        pdf = (w[:, 1:-1] + 1e-5) / jnp.sum(w[:, 1:-1] + 1e-5, -1, keepdims=True)
        cdf = jnp.concatenate([jnp.zeros((Rn, 1)), jnp.cumsum(pdf, -1)], -1)
        i = jax.vmap(lambda c, uu: jnp.searchsorted(c, uu, side="right"))(cdf, u)
        lo, hi = jnp.maximum(i - 1, 0), jnp.minimum(i, Nc - 2)
        g = lambda a, j: jnp.take_along_axis(a, j, -1)
        den = jnp.where(g(cdf, hi) - g(cdf, lo) < 1e-5, 1.0, g(cdf, hi) - g(cdf, lo))
        zf = g(mid, lo) + (u - g(cdf, lo)) / den * (g(mid, hi) - g(mid, lo))
        rgb, depth, _ = render(pf, o, d, jnp.sort(jnp.concatenate([zc, lax.stop_gradient(zf)], -1), -1))
        return rgb, depth
    d = f32(Rn, 3); d /= np.linalg.norm(d, axis=1, keepdims=True)
    return f, (mlp_params(39, Hd, Hd, 4), mlp_params(39, Hd, Hd, 4), f32(Rn, 3, scale=0.1), d.astype(np.float32), np.sort(unif(0, 1, Rn, Nf), -1))

@prog("fno_spectral_conv_grad")
def _():
    B, S, C, m, Lyr = 4, 64, 32, 12, 2
    def spectral(x, wr, wi):  # keep the lowest m x m modes (both signs of ky), complex channel mixing, zero the rest
        xf, w = jnp.fft.rfft2(x, axes=(1, 2)), wr + 1j * wi
        lo = jnp.einsum("bxyi,ioxy->bxyo", xf[:, :m, :m], w[0]); hi = jnp.einsum("bxyi,ioxy->bxyo", xf[:, -m:, :m], w[1])
        out = jnp.zeros((B, S, S // 2 + 1, C), jnp.complex64).at[:, :m, :m].set(lo).at[:, -m:, :m].set(hi)
        return jnp.fft.irfft2(out, s=(S, S), axes=(1, 2))
    def loss(p, a, u):  # Fourier neural operator: lift, spectral + pointwise layers with GELU, project, relative L2 loss
        lift, layers, proj = p; x = a @ lift
        for wr, wi, w in layers: x = jax.nn.gelu(spectral(x, wr, wi) + x @ w)
        out = (x @ proj)[..., 0]
        return jnp.mean(jnp.linalg.norm((out - u).reshape(B, -1), axis=-1) / jnp.linalg.norm(u.reshape(B, -1), axis=-1))
    sc = 1 / (C * C)
    p = (f32(3, C, scale=0.5), [(unif(0, sc, 2, C, C, m, m), unif(0, sc, 2, C, C, m, m), f32(C, C, scale=C ** -0.5)) for _ in range(Lyr)], f32(C, 1, scale=C ** -0.5))
    return jax.grad(loss), (p, f32(B, S, S, 3), f32(B, S, S))


# --- sequence and audio models -------------------------------------------------------------

@prog("s4d_vandermonde_grad")
def _():
    B, H, N, L = 2, 64, 32, 1024
    def loss(p, u, y):  # S4D-Lin: ZOH-discretized diagonal SSM, kernel by a complex Vandermonde product, FFT causal conv, D skip, GELU
        log_dt, Are, Aim, Cre, Cim, Dsk, Wo = p
        A = -jnp.exp(Are) + 1j * Aim; dtA = jnp.exp(log_dt)[:, None] * A
        Cp = (Cre + 1j * Cim) * (jnp.exp(dtA) - 1) / A
        K = 2 * jnp.real(jnp.einsum("hn,hnl->hl", Cp, jnp.exp(dtA[..., None] * jnp.arange(L))))
        yk = jnp.fft.irfft(jnp.fft.rfft(u, n=2 * L) * jnp.fft.rfft(K, n=2 * L), n=2 * L)[..., :L]
        out = jnp.einsum("bhl,hk->bkl", jax.nn.gelu(yk + Dsk[:, None] * u), Wo)
        return jnp.mean((out - y) ** 2)
    p = (unif(np.log(1e-3), np.log(1e-1), H), np.full((H, N), np.log(0.5), np.float32), np.tile(np.pi * np.arange(N, dtype=np.float32), (H, 1)),
         f32(H, N, scale=0.5 ** 0.5), f32(H, N, scale=0.5 ** 0.5), f32(H), f32(H, H, scale=H ** -0.5))
    return jax.grad(loss), (p, f32(B, H, L), f32(B, H, L))

@prog("conv_tasnet_sisnr_grad")
def _():
    B, T, N, Bn, Hc, K, X = 2, 2000, 128, 64, 128, 16, 4
    def gln(x, g, b): m = x.mean((1, 2), keepdims=True); v = x.var((1, 2), keepdims=True); return g[:, None] * (x - m) * lax.rsqrt(v + 1e-8) + b[:, None]
    def c1(x, w, **kw): return lax.conv_general_dilated(x, w, (1,), "SAME", dimension_numbers=NCW, **kw)
    def sisnr(s, t):
        s, t = s - s.mean(-1, keepdims=True), t - t.mean(-1, keepdims=True)
        proj = jnp.sum(s * t, -1, keepdims=True) / jnp.sum(t * t, -1, keepdims=True) * t
        return 10 * jnp.log10(jnp.sum(proj ** 2, -1) / jnp.sum((s - proj) ** 2, -1) + 1e-8)
    def loss(p, mix, src):  # Conv-TasNet, NCW: strided encoder, TCN (1x1, PReLU, gLN, dilated depthwise), sigmoid masks, transposed decoder, PIT SI-SNR
        enc, bott, blocks, mk, dec = p
        w = jax.nn.relu(lax.conv_general_dilated(mix, enc, (K // 2,), "VALID", dimension_numbers=NCW))
        x = c1(w, bott)
        for i, (w1, a1, g1, b1, dw, a2, g2, b2, w2) in enumerate(blocks):
            h = gln(jnp.where(c1(x, w1) > 0, c1(x, w1), a1 * c1(x, w1)), g1, b1)
            h = c1(h, dw, rhs_dilation=(2 ** i,), feature_group_count=Hc)
            x = x + c1(gln(jnp.where(h > 0, h, a2 * h), g2, b2), w2)
        masks = jax.nn.sigmoid(c1(x, mk)).reshape(B, 2, N, -1)
        est = jax.vmap(lambda m: lax.conv_transpose(m, dec, (K // 2,), "VALID", dimension_numbers=NCW), 1, 1)(masks * w[:, None]).reshape(B, 2, -1)[..., :T]
        pit = jnp.maximum(sisnr(est, src).mean(-1), sisnr(est, src[:, ::-1]).mean(-1))
        return -jnp.mean(pit)
    blk = lambda: (f32(Hc, Bn, 1, scale=Bn ** -0.5), np.float32(0.25), np.ones(Hc, np.float32), np.zeros(Hc, np.float32), f32(Hc, 1, 3, scale=0.5),
                   np.float32(0.25), np.ones(Hc, np.float32), np.zeros(Hc, np.float32), f32(Bn, Hc, 1, scale=Hc ** -0.5))
    p = (f32(N, 1, K, scale=0.25), f32(Bn, N, 1, scale=N ** -0.5), [blk() for _ in range(X)], f32(2 * N, Bn, 1, scale=Bn ** -0.5), f32(1, N, K, scale=N ** -0.5))
    src = f32(B, 2, T)
    return jax.grad(loss), (p, src.sum(1, keepdims=True), src)

@prog("gcc_phat_tdoa")
def _():
    M, F, n, ml = 8, 64, 1024, 24
    pi, pj = np.triu_indices(M, 1)
    def f(frames):  # GCC-PHAT: rfft per mic and frame, phase-transform-weighted cross spectra per pair, irfft, peak in +-ml lags, parabolic fit
        X = jnp.fft.rfft(frames * jnp.hanning(n), axis=-1)
        cs = X[:, pi] * jnp.conj(X[:, pj])
        cc = jnp.fft.irfft(cs / (jnp.abs(cs) + 1e-9), n=n, axis=-1)
        cc = jnp.concatenate([cc[..., -ml:], cc[..., :ml + 1]], -1)
        k = jnp.clip(jnp.argmax(cc, -1), 1, 2 * ml - 1)
        y0, y1, y2 = (jnp.take_along_axis(cc, (k + o)[..., None], -1)[..., 0] for o in (-1, 0, 1))
        return k - ml + 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2 - 1e-9), cc.max(-1)
    src, delays = R.standard_normal(F * n + 64), R.integers(0, 20, M)
    frames = np.stack([src[dl:dl + F * n].reshape(F, n) for dl in delays], 1) + 0.3 * R.standard_normal((F, M, n))
    return f, (frames.astype(np.float32),)


# --- RL and control ----------------------------------------------------------------------------

@prog("c51_projection_grad")
def _():
    B, d, A, Na, vmin, vmax, gam = 256, 64, 6, 51, -10.0, 10.0, 0.99
    z = np.linspace(vmin, vmax, Na).astype(np.float32); dz = (vmax - vmin) / (Na - 1)
    def dist(p, s): return jax.nn.softmax(mlp(p, s, jax.nn.relu).reshape(-1, A, Na), -1)
    def loss(p, pt, s, a, r, s2, done):  # C51 with double-DQN action choice: Bellman-shifted atoms projected by floor / ceil scatter-adds, CE
        a2 = jnp.argmax(jnp.sum(dist(p, s2) * z, -1), -1)
        pn = jnp.take_along_axis(dist(pt, s2), a2[:, None, None], 1)[:, 0]
        b = (jnp.clip(r[:, None] + gam * (1 - done[:, None]) * z, vmin, vmax) - vmin) / dz
        l, u = jnp.floor(b).astype(jnp.int32), jnp.ceil(b).astype(jnp.int32)
        l = jnp.where((u > 0) & (l == u), l - 1, l); u = jnp.where((l < Na - 1) & (l == u), u + 1, u)
        rows = jnp.arange(B)[:, None]
        m = jnp.zeros((B, Na)).at[rows, l].add(pn * (u - b)).at[rows, u].add(pn * (b - l))
        lp = jax.nn.log_softmax(mlp(p, s, jax.nn.relu).reshape(-1, A, Na), -1)
        return -jnp.mean(jnp.sum(lax.stop_gradient(m) * jnp.take_along_axis(lp, a[:, None, None], 1)[:, 0], -1))
    p = mlp_params(d, 256, 256, A * Na)
    return jax.grad(loss), (p, tm(lambda t: (t + f32(*t.shape, scale=0.01)).astype(np.float32), p), f32(B, d), ints(0, A, B), f32(B, scale=3),
                            f32(B, d), (unif(0, 1, B) < 0.1).astype(np.float32))

@prog("sac_actor_alpha_grad")
def _():
    B, ds, da = 256, 32, 6
    def loss(pa, log_alpha, q1, q2, s, k):  # SAC: tanh-squashed reparameterized Gaussian, log-prob correction, min of twin Qs, temperature loss
        out = mlp(pa, s, jax.nn.relu)
        mu, log_std = out[:, :da], jnp.clip(out[:, da:], -5, 2)
        eps = jax.random.normal(pkey(k), mu.shape); act = jnp.tanh(mu + jnp.exp(log_std) * eps)
        logp = jnp.sum(-0.5 * eps ** 2 - log_std - 0.5 * np.log(2 * np.pi) - jnp.log(1 - act ** 2 + 1e-6), -1)
        sa = jnp.concatenate([s, act], -1)
        q = jnp.minimum(mlp(q1, sa, jax.nn.relu), mlp(q2, sa, jax.nn.relu))[:, 0]
        return jnp.mean(lax.stop_gradient(jnp.exp(log_alpha)) * logp - q) + jnp.mean(-log_alpha * lax.stop_gradient(logp - da))
    return jax.grad(loss, argnums=(0, 1)), (mlp_params(ds, 256, 256, 2 * da), np.float32(-1.0), mlp_params(ds + da, 256, 256, 1), mlp_params(ds + da, 256, 256, 1),
                                            f32(B, ds), key(8))

@prog("mppi_quadrotor")
def _():
    K, T, IT, dt, lam = 1024, 50, 3, 0.05, 1.0
    def dyn(x, u):  # planar quadrotor: [px, py, th, vx, vy, om], two thrusts
        th = x[..., 2]; f = u[..., 0] + u[..., 1]
        acc = jnp.stack([-f * jnp.sin(th), f * jnp.cos(th) - 9.81, 5.0 * (u[..., 1] - u[..., 0])], -1)
        return x + dt * jnp.concatenate([x[..., 3:], acc], -1)
    def f(x0, U, k, goal):  # MPPI: K noisy control sequences rolled out by scan, path costs, softmin weights, weighted noise update; 3 rounds
        def it(i, U):
            eps = 1.5 * jax.random.normal(jax.random.fold_in(pkey(k), i), (K, T, 2))
            us = jnp.clip(U + eps, 0, 15)
            def roll(x, u):
                x = dyn(x, u)
                return x, jnp.sum((x[:, :2] - goal) ** 2, -1) + 0.1 * x[:, 2] ** 2 + 0.01 * jnp.sum(x[:, 3:] ** 2, -1)
            _, c = lax.scan(roll, jnp.broadcast_to(x0, (K, 6)), us.swapaxes(0, 1))
            cost = c.sum(0) + 0.01 * jnp.sum(U * eps, (1, 2))
            w = jax.nn.softmax(-(cost - cost.min()) / lam)
            return U + jnp.einsum("k,ktu->tu", w, eps)
        U = lax.fori_loop(0, IT, it, U)
        return U, lax.scan(lambda x, u: (dyn(x, u), x), x0, U)[1]
    return f, (np.zeros(6, np.float32), np.full((T, 2), 4.905, np.float32), key(9), np.array([1.0, 2.0], np.float32))


# --- physics and chemistry -------------------------------------------------------------------

@prog("fdtd_yee_2d")
def _():
    S, ST = 256, 200
    def f(eps_r, sigma):  # TMz Yee scheme: staggered Hx / Hy / Ez updates with a lossy border, a soft sinusoidal point source
        ca = (1 - sigma) / (1 + sigma); cb = 0.5 / eps_r / (1 + sigma)
        def step(t, c):
            ez, hx, hy = c
            hx = hx - 0.5 * (jnp.pad(ez[1:] - ez[:-1], ((0, 1), (0, 0))))
            hy = hy + 0.5 * (jnp.pad(ez[:, 1:] - ez[:, :-1], ((0, 0), (0, 1))))
            curl = hy - jnp.pad(hy[:, :-1], ((0, 0), (1, 0))) - hx + jnp.pad(hx[:-1], ((1, 0), (0, 0)))
            ez = ca * ez + cb * curl; return ez.at[S // 3, S // 2].add(jnp.sin(0.2 * t.astype(jnp.float32))), hx, hy
        return lax.fori_loop(0, ST, step, (jnp.zeros((S, S)),) * 3)
    ii = np.arange(S); edge = np.minimum(np.minimum(ii, S - 1 - ii)[:, None], np.minimum(ii, S - 1 - ii)[None])
    sigma = np.where(edge < 20, 0.3 * ((20 - edge) / 20) ** 3, 0).astype(np.float32)
    eps_r = np.where((ii[:, None] - 160) ** 2 + (ii[None] - 128) ** 2 < 40 ** 2, 4.0, 1.0).astype(np.float32)
    return f, (eps_r, sigma)

@prog("cahn_hilliard_spectral")
def _():
    B, S, ST, dt, gam = 2, 256, 30, 0.5, 1.0
    k = 2 * np.pi * np.fft.fftfreq(S); kr = 2 * np.pi * np.fft.rfftfreq(S)
    k2 = (k[:, None] ** 2 + kr[None] ** 2).astype(np.float32)
    def f(c, k2):  # semi-implicit Fourier spectral Cahn-Hilliard: c_hat <- (c_hat - dt k^2 F[c^3 - c]) / (1 + dt gam k^4)
        def step(i, c):
            ch = (jnp.fft.rfft2(c) - dt * k2 * jnp.fft.rfft2(c ** 3 - c)) / (1 + dt * gam * k2 ** 2)
            return jnp.fft.irfft2(ch, s=(S, S))
        return lax.fori_loop(0, ST, step, c)
    return f, (f32(B, S, S, scale=0.05), k2)

@prog("hartree_fock_scf")
def _():
    n, nocc, naux, IT = 32, 8, 96, 30
    def f(Hc, S, Bt):  # restricted HF: Fock from a density-fitted ERI tensor (J and K einsums), orthogonalize by S^-1/2, eigh, damped density
        eri = jnp.einsum("pij,pkl->ijkl", Bt, Bt)
        e, U = jnp.linalg.eigh(S)
        X = U * lax.rsqrt(e) @ U.T
        def dens(F):
            _, C = jnp.linalg.eigh(X @ F @ X)
            Co = (X @ C)[:, :nocc]
            return Co @ Co.T
        def fock(D): return Hc + 2 * jnp.einsum("ijkl,kl->ij", eri, D) - jnp.einsum("ikjl,kl->ij", eri, D)
        D = lax.fori_loop(0, IT, lambda i, D: 0.5 * D + 0.5 * dens(fock(D)), dens(Hc))
        return jnp.sum(D * (Hc + fock(D))), D
    Bt = f32(naux, n, n, scale=0.05); Bt = (Bt + Bt.swapaxes(1, 2)) / 2
    Hc = -np.diag(np.linspace(10, 1, n)).astype(np.float32) + f32(n, n, scale=0.1); Hc = (Hc + Hc.T) / 2
    S0 = f32(n, n, scale=0.05); S0 = np.eye(n, dtype=np.float32) + (S0 + S0.T) / 2
    return f, (Hc.astype(np.float32), S0.astype(np.float32), Bt.astype(np.float32))

@prog("mps_expectation_scan")
def _():
    L, chi, d = 128, 64, 2
    Z = np.diag([1.0, -1.0]).astype(np.float32)
    def f(A):  # MPS <Z_i> profile: normalized left environments by scan, right environments by a reverse scan, one local contraction per site
        def lstep(E, a):
            E = jnp.einsum("ab,asc,bsd->cd", E, a, a); return E / jnp.trace(E), E
        def rstep(E, a):
            E = jnp.einsum("cd,asc,bsd->ab", E, a, a); return E / jnp.trace(E), E
        _, Ls = lax.scan(lstep, jnp.eye(chi), A)
        _, Rs = lax.scan(rstep, jnp.eye(chi), A, reverse=True)
        Ls = jnp.concatenate([jnp.eye(chi)[None] / chi, Ls[:-1]]); Rs = jnp.concatenate([Rs[1:], jnp.eye(chi)[None] / chi])
        num = jnp.einsum("iab,iasc,st,ibtd,icd->i", Ls, A, Z, A, Rs)
        den = jnp.einsum("iab,iasc,ibsd,icd->i", Ls, A, A, Rs)
        return num / den
    return f, (f32(L, chi, d, chi, scale=(chi * d) ** -0.5),)

@prog("cloth_pbd_edges")
def _():
    G, ST, IT, dt = 48, 20, 4, 1 / 60
    ij = np.arange(G * G).reshape(G, G)
    e = np.concatenate([np.stack([a.ravel(), b.ravel()], 1) for a, b in ((ij[:, :-1], ij[:, 1:]), (ij[:-1], ij[1:]), (ij[:-1, :-1], ij[1:, 1:]),
                                                                        (ij[:-1, 1:], ij[1:, :-1]), (ij[:, :-2], ij[:, 2:]), (ij[:-2], ij[2:]))]).astype(np.int32)
    pin = np.zeros(G * G, np.float32); pin[[0, G - 1]] = 1
    def f(x0, rest, ctr):  # cloth: Verlet prediction, Jacobi PBD distance constraints by edge scatter-adds averaged per vertex, sphere collision
        cnt = jnp.zeros(G * G).at[e[:, 0]].add(1).at[e[:, 1]].add(1)
        def step(i, c):
            x, xp = c
            xn = jnp.where(pin[:, None] > 0, x, 2 * x - xp + dt * dt * jnp.array([0.5, -9.8, 0.0]))
            def relax(j, y):
                dv = y[e[:, 1]] - y[e[:, 0]]
                ln_ = jnp.linalg.norm(dv, axis=-1, keepdims=True)
                corr = 0.5 * (ln_ - rest[:, None]) * dv / (ln_ + 1e-9)
                dlt = jnp.zeros_like(y).at[e[:, 0]].add(corr).at[e[:, 1]].add(-corr)
                y = y + (1 - pin[:, None]) * 1.5 * dlt / cnt[:, None]
                dc = y - ctr; r = jnp.linalg.norm(dc, axis=-1, keepdims=True)
                return jnp.where(r < 0.3, ctr + dc / r * 0.3, y)
            return lax.fori_loop(0, IT, relax, xn), x
        return lax.fori_loop(0, ST, step, (x0, x0))[0]
    gx, gz = np.meshgrid(np.linspace(-0.5, 0.5, G), np.linspace(-0.5, 0.5, G))
    x0 = np.stack([gx.ravel(), np.zeros(G * G), gz.ravel()], 1).astype(np.float32)
    return f, (x0, np.linalg.norm(x0[e[:, 1]] - x0[e[:, 0]], axis=1).astype(np.float32), np.array([0.05, -0.35, 0.02], np.float32))


# --- geometry ------------------------------------------------------------------------------

def _rot(w):  # Rodrigues' formula, batched
    th = jnp.sqrt(jnp.sum(w * w, -1) + 1e-12)[..., None, None]
    kx = jnp.cross(jnp.eye(3), (w / th[..., 0])[..., None, :])
    return jnp.eye(3) + jnp.sin(th) * kx + (1 - jnp.cos(th)) * kx @ kx

@prog("icp_kabsch")
def _():
    B, N, IT = 4, 512, 8
    def f(src, dst):  # ICP: nearest neighbours by the expanded distance matrix and argmin, Kabsch by batched 3x3 SVD with a reflection fix
        def body(i, c):
            Rm, t = c
            x = src @ Rm.swapaxes(1, 2) + t[:, None]
            d2 = jnp.sum(x * x, -1)[:, :, None] - 2 * x @ dst.swapaxes(1, 2) + jnp.sum(dst * dst, -1)[:, None]
            m = jnp.take_along_axis(dst, jnp.argmin(d2, -1)[..., None], 1)
            cs, cm = src.mean(1, keepdims=True), m.mean(1, keepdims=True)
            Hm = (src - cs).swapaxes(1, 2) @ (m - cm)
            Uu, _, Vt = jnp.linalg.svd(Hm)
            sg = jnp.sign(jnp.linalg.det(Vt.swapaxes(1, 2) @ Uu.swapaxes(1, 2)))
            Rm = Vt.swapaxes(1, 2) @ (Uu * jnp.stack([jnp.ones(B), jnp.ones(B), sg], -1)[:, None]).swapaxes(1, 2)
            return Rm, (cm - cs @ Rm.swapaxes(1, 2))[:, 0]
        return lax.fori_loop(0, IT, body, (jnp.broadcast_to(jnp.eye(3), (B, 3, 3)), jnp.zeros((B, 3))))
    src = unif(-1, 1, B, N, 3)
    Rt = np.asarray(_rot(f32(B, 3, scale=0.15)))
    return f, (src, (np.einsum("bij,bnj->bni", Rt, src) + f32(B, 1, 3, scale=0.05) + f32(B, N, 3, scale=0.005)).astype(np.float32))

@prog("pnp_levenberg_marquardt")
def _():
    Bc, Np, IT = 64, 256, 10
    def resid(q, X, uv):
        x = X @ _rot(q[:3]).T + q[3:]
        return (500 * x[:, :2] / x[:, 2:] - uv).ravel()
    def solve1(q, X, uv):  # per camera: jacfwd residual Jacobian, damped normal equations, accept / reject with the lambda schedule
        def body(i, c):
            q, lam = c
            r = resid(q, X, uv); J = jax.jacfwd(resid)(q, X, uv)
            JtJ = J.T @ J
            dq = jnp.linalg.solve(JtJ + lam * jnp.diag(jnp.diag(JtJ)), -J.T @ r)
            ok = jnp.sum(resid(q + dq, X, uv) ** 2) < jnp.sum(r ** 2)
            return jnp.where(ok, q + dq, q), jnp.where(ok, lam * 0.3, lam * 5)
        return lax.fori_loop(0, IT, body, (q, 1e-3))[0]
    def f(q0, X, uv): return jax.vmap(solve1)(q0, X, uv)  # batched PnP
    X = np.concatenate([unif(-1, 1, Bc, Np, 2), unif(4, 8, Bc, Np, 1)], -1)
    qt = np.concatenate([f32(Bc, 3, scale=0.1), f32(Bc, 3, scale=0.2)], -1)
    xc = np.einsum("bij,bnj->bni", np.asarray(jax.vmap(_rot)(qt[:, :3])), X) + qt[:, None, 3:]
    uv = 500 * xc[..., :2] / xc[..., 2:] + f32(Bc, Np, 2, scale=0.5)
    return f, ((qt + f32(Bc, 6, scale=0.05)).astype(np.float32), X, uv.astype(np.float32))


# --- statistics and classical ML -------------------------------------------------------------

@prog("svgp_elbo_grad")
def _():
    N, d, M = 2048, 8, 128
    def kern(a, b, ls, var): a, b = a / ls, b / ls; return var * jnp.exp(-0.5 * jnp.maximum(jnp.sum(a * a, -1)[:, None] - 2 * a @ b.T + jnp.sum(b * b, -1), 0))
    def elbo(p, x, y):  # whitened SVGP: Kmm Cholesky, A = Lm^-1 Kmn by triangular solve, predictive moments, Gaussian expected log lik, KL
        Z, log_ls, log_var, log_noise, m, Lraw = p
        ls, var, noise = jnp.exp(log_ls), jnp.exp(log_var), jnp.exp(log_noise)
        Lm = jnp.linalg.cholesky(kern(Z, Z, ls, var) + 1e-4 * jnp.eye(M))
        A = jsp.linalg.solve_triangular(Lm, kern(Z, x, ls, var), lower=True)
        Ls = jnp.tril(Lraw, -1) + jnp.diag(jnp.exp(jnp.diag(Lraw)))
        mu = A.T @ m
        v = var - jnp.sum(A * A, 0) + jnp.sum((Ls.T @ A) ** 2, 0)
        ell = jnp.sum(-0.5 * np.log(2 * np.pi) - 0.5 * log_noise - 0.5 * ((y - mu) ** 2 + v) / noise)
        kl = 0.5 * (jnp.sum(Ls ** 2) + m @ m - M - 2 * jnp.sum(jnp.diag(Lraw)))
        return -(ell - kl) / N
    x = f32(N, d); y = (np.sin(x[:, 0] * 2) + 0.5 * x[:, 1] + 0.1 * R.standard_normal(N)).astype(np.float32)
    p = (x[R.choice(N, M, replace=False)] + f32(M, d, scale=0.01), np.zeros(d, np.float32), np.float32(0.0), np.float32(-2.0), f32(M, scale=0.1),
         np.tril(f32(M, M, scale=0.01)) - 1.0 * np.eye(M, dtype=np.float32))
    return jax.grad(elbo), (p, x, y)

@prog("bayes_by_backprop_grad")
def _():
    B, D, Hd, K, Sm = 128, 784, 256, 10, 4
    def loss(p, x, y, k):  # mean-field Gaussian weights (softplus scales), Sm reparameterized samples by vmap, closed-form KL to N(0, 1)
        def nll(eps):
            ws = tm(lambda mu, rho, e: mu + jax.nn.softplus(rho) * e, p["mu"], p["rho"], eps)
            return xent(jax.nn.relu(x @ ws[0] + ws[1]) @ ws[2] + ws[3], y)
        leaves, tdef = jax.tree_util.tree_flatten(p["mu"])
        ks = jax.random.split(pkey(k), len(leaves))
        eps = jax.tree_util.tree_unflatten(tdef, [jax.random.normal(kk, (Sm,) + a.shape) for kk, a in zip(ks, leaves)])
        kl = sum(jnp.sum(0.5 * (jax.nn.softplus(r) ** 2 + m ** 2 - 1) - jnp.log(jax.nn.softplus(r))) for m, r in
                 zip(jax.tree_util.tree_leaves(p["mu"]), jax.tree_util.tree_leaves(p["rho"])))
        return jnp.mean(jax.vmap(nll)(eps)) + kl / 60000
    mu = [f32(D, Hd, scale=D ** -0.5), np.zeros(Hd, np.float32), f32(Hd, K, scale=Hd ** -0.5), np.zeros(K, np.float32)]
    return jax.grad(loss), ({"mu": mu, "rho": tm(lambda a: np.full_like(a, -5.0), mu)}, unif(0, 1, B, D), ints(0, K, B), key(10))

@prog("gbdt_histogram_split")
def _():
    N, F, nb, nodes, lam = 65536, 32, 64, 8, 1.0
    def f(bins, g, h, node):  # histogram GBDT level: (node, feature, bin) gradient / hessian sums by one scatter-add, cumsum, best gain split
        key_ = (node[:, None] * F + jnp.arange(F)) * nb + bins.astype(jnp.int32)
        hist = jnp.zeros((nodes * F * nb, 2)).at[key_.ravel()].add(jnp.repeat(jnp.stack([g, h], -1), F, 0)).reshape(nodes, F, nb, 2)
        cl = jnp.cumsum(hist, 2)
        tot = cl[:, :1, -1:]
        sc = lambda s: s[..., 0] ** 2 / (s[..., 1] + lam)
        gain = jnp.where(jnp.arange(nb) < nb - 1, sc(cl) + sc(tot - cl) - sc(tot), -jnp.inf).reshape(nodes, -1)
        best = jnp.argmax(gain, -1)
        bf, bt = best // nb, best % nb
        go_right = jnp.take_along_axis(bins, bf[node][:, None], 1)[:, 0].astype(jnp.int32) > bt[node]
        return gain.max(-1), bf, bt, 2 * node + go_right
    dy = lambda a: (np.round(a * 64) / 64).astype(np.float32)  # dyadic values: every histogram sum is exact in f32 in any order
    return f, (ints(0, nb, N, F, dt=np.uint8), dy(np.clip(f32(N), -2, 2)), dy(unif(0, 1, N)), ints(0, nodes, N))

@prog("neuralsort_rank_grad")
def _():
    B, n, d = 128, 128, 32
    i = np.arange(1, n + 1, dtype=np.float32)
    def loss(w, x, perm):  # NeuralSort: P_hat = softmax(((n + 1 - 2i) s - A_s 1) / tau) row-wise, CE against the true sorting permutation
        s = x @ w
        As = jnp.abs(s[:, :, None] - s[:, None, :])
        Ph = jax.nn.log_softmax(((n + 1 - 2 * i)[None, :, None] * s[:, None, :] - As.sum(-1)[:, None, :]) / 0.5, -1)
        return -jnp.mean(jnp.take_along_axis(Ph, perm[..., None], -1))
    x = f32(B, n, d); wt = f32(d)
    return jax.grad(loss), (f32(d, scale=0.1), x, np.argsort(-(x @ wt + 0.5 * R.standard_normal((B, n))), -1).astype(np.int32))

@prog("simplex_portfolio_pgd")
def _():
    B, n, IT, gam = 16, 256, 100, 0.5
    def proj(v):  # Euclidean projection onto the probability simplex by sort, cumsum and the last positive index
        u = -jnp.sort(-v, -1)
        css = jnp.cumsum(u, -1) - 1
        k = jnp.arange(1, n + 1)
        rho = jnp.sum(u - css / k > 0, -1, keepdims=True)
        return jnp.maximum(v - jnp.take_along_axis(css, rho - 1, -1) / rho, 0)
    def f(Sig, mu):  # long-only mean-variance portfolios: projected gradient descent, batched over universes, in a fori_loop
        lr = 1 / jnp.linalg.norm(Sig, ord="fro", axis=(1, 2))[:, None]
        w = lax.fori_loop(0, IT, lambda i, w: proj(w - lr * (jnp.einsum("bij,bj->bi", Sig, w) - gam * mu)), jnp.full((B, n), 1 / n))
        return w, jnp.einsum("bi,bij,bj->b", w, Sig, w)
    Fm = f32(B, n, 8, scale=0.3)
    return f, ((Fm @ Fm.swapaxes(1, 2) + np.eye(n) * unif(0.01, 0.05, B, n)[..., None]).astype(np.float32), f32(B, n, scale=0.05))


# --- integer data work ---------------------------------------------------------------------

_K256 = np.array([int((p ** (1 / 3) % 1) * 2 ** 32) for p in [q for q in range(2, 312) if all(q % r for r in range(2, q))][:64]], np.uint32)

@prog("sha256_blocks")
def _():
    N = 16384
    def rotr(x, n): return (x >> np.uint32(n)) | (x << np.uint32(32 - n))
    def f(msg):  # SHA-256 of one padded 64-byte block per message: schedule and 64 compression rounds in fori_loops, uint32 arithmetic
        W = jnp.concatenate([msg.T, jnp.zeros((48, N), jnp.uint32)])
        def sched(t, W):
            w15, w2 = W[t - 15], W[t - 2]
            s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >> np.uint32(3)); s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >> np.uint32(10))
            return W.at[t].set(W[t - 16] + s0 + W[t - 7] + s1)
        W = lax.fori_loop(16, 64, sched, W)
        h0 = jnp.asarray(np.array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19], np.uint32))
        def rnd(t, s):
            a, b, c, d, e, f_, g, h = s
            t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f_) ^ (~e & g)) + jnp.asarray(_K256)[t] + W[t]
            t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))
            return t1 + t2, a, b, c, d + t1, e, f_, g
        out = lax.fori_loop(0, 64, rnd, tuple(jnp.full((N,), v) for v in h0))
        return jnp.stack(out, 1) + h0
    m = ints(0, 256, N, 64, dt=np.uint8); m[:, 55:] = 0; m[:, 55] = 0x80; m[:, 62:] = [1, 0xB8]  # 55 message bytes, standard padding
    return f, (m.reshape(N, 16, 4).astype(np.uint32) @ np.array([1 << 24, 1 << 16, 1 << 8, 1], np.uint32),)

@prog("countmin_bloom_sketch")
def _():
    N, Qn, d, w, kb, mb = 1 << 19, 1 << 16, 4, 1 << 16, 4, 1 << 22
    def f(keys, qs, seeds):  # multiply-shift hashes (uint32 wraparound), count-min by scatter-adds, a Bloom filter by scatter-set, queries
        hsh = lambda x, s, bits: ((x[:, None] * (2 * s + 1)) ^ (x[:, None] >> np.uint32(15)) * np.uint32(0x2c1b3c6d)) >> np.uint32(32 - bits)
        cm = jnp.zeros((d, w), jnp.int32).at[jnp.arange(d), hsh(keys, seeds[:d], 16).astype(jnp.int32)].add(1)
        bl = jnp.zeros(mb, bool).at[hsh(keys, seeds[d:], 22).astype(jnp.int32)].set(True)
        est = jnp.min(cm[jnp.arange(d), hsh(qs, seeds[:d], 16).astype(jnp.int32)], -1)
        return est, jnp.all(bl[hsh(qs, seeds[d:], 22).astype(jnp.int32)], -1), cm.sum()
    keys = (R.zipf(1.3, N) % (1 << 30)).astype(np.uint32)
    return f, (keys, np.concatenate([keys[:Qn // 2], ints(0, 1 << 30, Qn // 2, dt=np.uint32)]), ints(1, 1 << 30, d + kb, dt=np.uint32))


if __name__ == "__main__":
    U.main(P)
