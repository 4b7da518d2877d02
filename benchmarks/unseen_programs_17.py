"""A seventeenth sweep of ordinary JAX programs outside `axle bench`: library functions and
transformations the first sixteen sweeps did not call, and small models of kinds not seen.

SciPy-style special functions and distributions (jax.scipy.stats logpdf / logpmf of nine
distributions, their cdf / sf / logcdf, the gradient of a gamma / beta / Student-t likelihood
through digamma, a Gaussian copula by erfinv and ndtr, logsumexp with signed weights b= and
return_sign, a batched Wishart log-density with multigammaln and slogdet, a von Mises mixture EM
step with i0e / i1e, real spherical harmonics by sph_harm_y, Fresnel / Dawson / Spence / erfcx /
sici), random samplers with rejection loops inside Monte-Carlo estimators (a beta-binomial
posterior predictive by jax.random.beta and binomial, eleven heavy-tailed samplers, weighted
choice without replacement and multinomial counts, Haar-random orthogonal matrices and the unit
ball, row-wise independent permutations), transformations (jax.linear_transpose of a conv and
matmul, jax.linearize applied to many tangents under vmap, custom_jvp and custom_vjp functions
inside a gradient, jax.checkpoint with the checkpoint_dots and save_only_these_names policies,
forward-mode sensitivities by jacfwd through an RK4 fori_loop, a continuous normalizing flow with
the exact Jacobian trace by jacfwd inside an RK4 scan), control flow (fori_loop with a traced trip
count, nested while_loops under vmap with different trip counts, lax.cond and lax.switch under
vmap, lax.map with batch_size, a scan whose every step runs a fixed-point while_loop), jax.numpy
functions (jnp.gradient for divergence and vorticity, pad modes linear_ramp / maximum / mean /
odd-symmetric, nan-aware statistics and nanquantile, put_along_axis, partition / argpartition,
piecewise and vectorize with a signature, segment_prod / segment_min with sorted indices,
fftconvolve, softmax / log_softmax / standardize with where= and their gradient), jax.nn
(dot_product_attention with a bias, a mask, is_causal and grouped KV heads, with its gradient; an
MLP of glu / celu / selu / squareplus / mish / hard_tanh / sparse_plus and its gradient) and
models (a Set Transformer with ISAB and PMA and its gradient, modern Hopfield retrieval, a KAN
layer with cubic B-spline bases by Cox-de Boor and its gradient, an echo state network with a
ridge readout, a neural ODE's gradient through an RK4 scan, a MADE masked autoregressive flow's
log-likelihood gradient, the Frechet (FID) distance through jax.scipy.linalg.sqrtm, STFT / ISTFT
round trip by jax.scipy.signal).

Differences in err that are not axle's: activation_zoo_mlp_grad (~2e-4) and
set_transformer_isab_pma_grad (~3e-5) are XLA's distance from an f64 evaluation (axle's is ~1e-6);
beta_binomial_predictive (~6e-4) is one binomial draw of 32768 taking another accept / reject path
after ulp-level differences; echo_state_ridge (~1e-3) is the f32 ridge solve's conditioning (both
compilers are that far from f64). The loop programs are written so that rounding does not change
trip counts (a monotone Newton target, tolerances above f32 noise).

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_17.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy as jsp
import jax.scipy.stats as st
import jax.scipy.special as sp
from jax import lax

import unseen_programs as U

R, f32, unif, ints, key, pkey, mlp_params, mlp = U.helpers(17)
P, prog = U.sweep()
NHWC = ("NHWC", "HWIO", "NHWC")
def conv(x, w, stride=(1, 1), pad="SAME", **kw):
    return lax.conv_general_dilated(x, w, stride, pad, dimension_numbers=NHWC, **kw)


# --- special functions and distributions -------------------------------------------------------

@prog("stats_logpdf_zoo")
def _():
    B, N = 64, 4096
    def f(xp, u, z, k, ang, prm):  # per-row parameters, mean log-density per distribution
        a, b, df, loc, sc, mu = prm[:, 0:1], prm[:, 1:2], prm[:, 2:3], prm[:, 3:4], prm[:, 4:5], prm[:, 5:6]
        ls = [st.gamma.logpdf(xp, a, scale=sc), st.beta.logpdf(u, a, b), st.t.logpdf(z, df, loc, sc),
              st.cauchy.logpdf(z, loc, sc), st.laplace.logpdf(z, loc, sc), st.logistic.logpdf(z, loc, sc),
              st.poisson.logpmf(k, mu), st.nbinom.logpmf(k, a, 1 / (1 + b)), st.vonmises.logpdf(ang - loc, a)]
        return jnp.stack([l.mean(-1) for l in ls], -1)
    prm = np.stack([unif(0.5, 4, B), unif(0.5, 4, B), unif(1, 10, B), f32(B, scale=0.3), unif(0.5, 2, B), unif(1, 20, B)], -1)
    return f, (unif(0.01, 8, B, N), unif(0.01, 0.99, B, N), f32(B, N, scale=2), ints(0, 30, B, N).astype(np.float32),
               unif(-np.pi, np.pi, B, N), prm.astype(np.float32))

@prog("stats_cdf_sf_zoo")
def _():
    N = 1 << 16
    def f(x, u, k, a, b):  # tail probabilities: normal logcdf, gamma / chi2 (gammainc), beta (betainc), poisson (gammaincc)
        return (st.norm.logcdf(x), st.gamma.cdf(k + u, a), st.chi2.sf(k + u, 2 * b), st.beta.cdf(u, a, b),
                st.poisson.cdf(k, a * 4), st.logistic.sf(x), st.laplace.cdf(x))
    return f, (f32(N, scale=3), unif(0.01, 0.99, N), ints(0, 20, N).astype(np.float32), unif(0.5, 5, N), unif(0.5, 5, N))

@prog("dist_mle_digamma_grad")
def _():
    B, N = 32, 8192
    def nll(p, xp, u, z):  # negative log-likelihood of gamma, beta and Student-t with log-parameters per row
        a, b, df, sc = (jnp.exp(p[:, i:i + 1]) for i in range(4))
        return -(st.gamma.logpdf(xp, a, scale=sc).mean() + st.beta.logpdf(u, a, b).mean() + st.t.logpdf(z, df, 0.0, sc).mean())
    return jax.value_and_grad(nll), (f32(B, 4, scale=0.3), unif(0.01, 8, B, N), unif(0.01, 0.99, B, N), f32(B, N, scale=2))

@prog("gaussian_copula_erfinv")
def _():
    N, D = 65536, 16
    A = f32(D, D, scale=0.3); C = A @ A.T + np.eye(D, dtype=np.float32)
    d = np.sqrt(np.diag(C)); C = (C / d[:, None] / d[None]).astype(np.float32)
    def f(u, corr):  # uniforms -> normal scores by erfinv -> correlated by a Cholesky factor -> uniforms by ndtr, copula log-density
        z = jnp.sqrt(2.0) * sp.erfinv(2 * u - 1)
        L = jnp.linalg.cholesky(corr)
        y = z @ L.T
        quad = jnp.sum(jsp.linalg.solve_triangular(L, y.T, lower=True) ** 2, 0)
        logc = -0.5 * quad + 0.5 * jnp.sum(z ** 2, -1) - jnp.sum(jnp.log(jnp.diag(L)))
        return sp.ndtr(y), logc
    return f, (unif(0.001, 0.999, N, D), C)

@prog("logsumexp_signed_b")
def _():
    def f(a, w):  # log |sum w exp(a)| with its sign (signed weights), and the scipy form with b= over the other axis
        l, s = jax.nn.logsumexp(a, axis=-1, b=w, return_sign=True)
        return l, s, sp.logsumexp(a, axis=0, b=jnp.abs(w))
    return f, (f32(512, 2048, scale=3), f32(512, 2048))

@prog("wishart_logpdf_batched")
def _():
    B, p, df = 4096, 8, 12.0
    def f(X, S):  # Wishart log-density of B 8x8 SPD matrices under B scale matrices: multigammaln, slogdet, trace(S^-1 X)
        _, ldX = jnp.linalg.slogdet(X); _, ldS = jnp.linalg.slogdet(S)
        tr = jnp.trace(jnp.linalg.solve(S, X), axis1=-2, axis2=-1)
        return ((df - p - 1) / 2 * ldX - tr / 2 - df * p / 2 * np.log(2.0) - df / 2 * ldS - sp.multigammaln(df / 2, p))
    def spd(n):
        a = f32(n, p, p, scale=0.4)
        return (a @ a.transpose(0, 2, 1) + np.eye(p, dtype=np.float32)).astype(np.float32)
    return f, (spd(B), spd(B))

@prog("vonmises_mixture_em")
def _():
    N, K = 65536, 8
    def f(th, mu, kap, w):  # one EM step: responsibilities with i0e, kappa update by Banerjee's A^-1 approximation, i1e/i0e
        ll = kap * (jnp.cos(th[:, None] - mu) - 1) - jnp.log(2 * jnp.pi * sp.i0e(kap)) + jnp.log(w)
        r = jax.nn.softmax(ll, -1)
        nk = r.sum(0)
        C, S = (r * jnp.cos(th)[:, None]).sum(0), (r * jnp.sin(th)[:, None]).sum(0)
        Rb = jnp.sqrt(C ** 2 + S ** 2) / nk
        kn = Rb * (2 - Rb ** 2) / (1 - Rb ** 2)
        A = sp.i1e(kn) / sp.i0e(kn)
        return jnp.arctan2(S, C), kn, nk / N, A, jax.nn.logsumexp(ll, -1).mean()
    th = np.concatenate([R.vonmises(m, 4.0, N // 4) for m in (-2.0, -0.5, 1.0, 2.5)]).astype(np.float32)
    return f, (th, unif(-3, 3, K), unif(1, 5, K), np.full(K, 1 / K, np.float32))

@prog("sph_harm_y_lmax8")
def _():
    L, N = 8, 1024
    ls = np.array([l for l in range(L + 1) for m in range(-l, l + 1)], np.int32)
    ms = np.array([m for l in range(L + 1) for m in range(-l, l + 1)], np.int32)
    def f(theta, phi):  # real spherical harmonics up to l = 8 of N directions (sph_harm_y over 81 (l, m) pairs, flattened)
        K = len(ls)
        n = jnp.broadcast_to(jnp.asarray(ls)[:, None], (K, N)).ravel(); m = jnp.broadcast_to(jnp.asarray(ms)[:, None], (K, N)).ravel()
        Y = sp.sph_harm_y(n, jnp.abs(m), jnp.tile(theta, K), jnp.tile(phi, K), n_max=L).reshape(K, N)
        mm = jnp.asarray(ms)[:, None]
        return jnp.where(mm > 0, np.sqrt(2) * Y.real, jnp.where(mm < 0, np.sqrt(2) * Y.imag, Y.real))
    return f, (unif(0, np.pi, N), unif(0, 2 * np.pi, N))

@prog("special_fresnel_dawsn_spence")
def _():
    N = 1 << 17
    def f(x, y):
        s, c = sp.fresnel(x)
        si, ci = sp.sici(y)
        return s, c, sp.dawsn(x), sp.spence(y), sp.erfcx(x), si, ci
    return f, (unif(-3, 8, N), unif(0.01, 10, N))


# --- random samplers in Monte-Carlo estimators ---------------------------------------------------

@prog("beta_binomial_predictive")
def _():
    B, S = 128, 256
    def f(k, a, b, n):  # posterior predictive of a beta-binomial per arm: p ~ Beta, y ~ Binomial(n, p), mean / var / P(y > n/2)
        k1, k2 = jax.random.split(pkey(k))
        p = jax.random.beta(k1, a[:, None], b[:, None], (B, S))
        y = jax.random.binomial(k2, n[:, None], p, (B, S))
        return y.mean(-1), y.var(-1), (y > n[:, None] / 2).mean(-1)
    return f, (key(), unif(1, 20, B), unif(1, 20, B), ints(5, 60, B).astype(np.float32))

@prog("random_heavy_tail_zoo")
def _():
    n = (64, 1024)
    def f(k):  # eleven samplers, robust location / scale summaries (median-free: trimmed by clip)
        ks = jax.random.split(pkey(k), 11)
        xs = [jax.random.t(ks[0], 3.0, n), jax.random.cauchy(ks[1], n), jax.random.laplace(ks[2], n),
              jax.random.logistic(ks[3], n), jax.random.weibull_min(ks[4], 1.0, 1.5, n), jax.random.pareto(ks[5], 3.0, n),
              jax.random.lognormal(ks[6], 0.5, n), jax.random.rayleigh(ks[7], 1.0, n), jax.random.wald(ks[8], 1.0, n),
              jax.random.chisquare(ks[9], 4.0, n), jax.random.f(ks[10], 5.0, 7.0, n)]
        return jnp.stack([jnp.clip(x, -20, 20).mean(-1) for x in xs]), jnp.stack([jnp.abs(jnp.clip(x, -20, 20)).std(-1) for x in xs])
    return f, (key(),)

@prog("weighted_choice_multinomial")
def _():
    B, V, K = 64, 10000, 100
    def f(k, logits):  # per-row weighted sampling of K of V without replacement, and multinomial counts of 1000 draws
        ks = jax.random.split(pkey(k), B + 1)
        p = jax.nn.softmax(logits, -1)
        pick = jax.vmap(lambda kk, pp: jax.random.choice(kk, V, (K,), replace=False, p=pp))(ks[:B], p)
        cnt = jax.random.multinomial(ks[B], 1000.0, p[:, :64] / p[:, :64].sum(-1, keepdims=True))
        return pick, cnt
    return f, (key(), f32(B, V, scale=2))

@prog("random_orthogonal_ball")
def _():
    def f(k, x):  # 32 Haar-random 64x64 rotations applied to data, and uniform points in the 16-ball
        k1, k2 = jax.random.split(pkey(k))
        Q = jax.random.orthogonal(k1, 64, (32,))
        b = jax.random.ball(k2, 16, shape=(8192,))
        return jnp.einsum("rij,nj->rni", Q, x).std(1), jnp.linalg.norm(b, axis=-1).mean(), b.T @ b / 8192
    return f, (key(), f32(2048, 64))

@prog("permutation_independent_rows")
def _():
    def f(k, x):  # row-wise independent shuffles (a permutation test's null: 16 shuffles of a 2 x 512 split)
        ks = jax.random.split(pkey(k), 16)
        xs = jax.vmap(lambda kk: jax.random.permutation(kk, x, axis=-1, independent=True))(ks)
        return (xs[..., :512].mean(-1) - xs[..., 512:].mean(-1)).T
    return f, (key(), f32(32, 1024))


# --- transformations -----------------------------------------------------------------------------

@prog("linear_transpose_conv_matmul")
def _():
    x0 = f32(32, 32, 32, 16)
    def f(w, M, ct):  # the transpose (adjoint) of x -> conv(x, w) @ M, by jax.linear_transpose
        lin = lambda x: conv(x, w, (2, 2)) @ M
        return jax.linear_transpose(lin, jax.ShapeDtypeStruct(x0.shape, jnp.float32))(ct)[0]
    return f, (f32(3, 3, 16, 32, scale=0.1), f32(32, 48, scale=0.2), f32(32, 16, 16, 48))

@prog("linearize_vmap_tangents")
def _():
    ps = mlp_params(128, 256, 256, 64)
    def f(ps, x, ts):  # one linearization of an MLP at x, pushed forward along 64 tangent directions
        y, jvp = jax.linearize(lambda z: mlp(ps, z, jnp.tanh), x)
        return y, jax.vmap(jvp)(ts)
    return f, (ps, f32(256, 128), f32(64, 256, 128))

@prog("custom_jvp_safe_grad")
def _():
    @jax.custom_jvp
    def safe_norm(x):
        return jnp.sqrt(jnp.sum(x * x, -1))
    @safe_norm.defjvp
    def _(pr, tg):
        (x,), (t,) = pr, tg
        n = safe_norm(x)
        return n, jnp.sum(x * t, -1) / jnp.maximum(n, 1e-6)
    @jax.custom_jvp
    def softplus_inv(y):
        return y + jnp.log(-jnp.expm1(-y))
    softplus_inv.defjvps(lambda t, ans, y: t / -jnp.expm1(-y))
    ps = mlp_params(64, 256, 256, 16)
    def loss(ps, x, y):  # a loss through custom-jvp functions (norm safe at 0, softplus inverse), reverse mode
        o = mlp(ps, x, jax.nn.silu)
        d = safe_norm(o.reshape(-1, 4, 4) - y.reshape(-1, 4, 4))
        return jnp.mean(d) + 1e-3 * jnp.mean(softplus_inv(jax.nn.softplus(o) + 1e-3) ** 2)
    y = f32(1024, 16); y[:64] = 0
    return jax.grad(loss), (ps, f32(1024, 64), y)

@prog("custom_vjp_grad_reversal")
def _():
    @jax.custom_vjp
    def grl(x, lam):
        return x
    grl.defvjp(lambda x, lam: (x, lam), lambda lam, g: (-lam * g, 0.0))
    @jax.custom_vjp
    def clip_grad(x):
        return x
    clip_grad.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -0.01, 0.01),))
    fe, cl, dm = mlp_params(256, 512, 256), mlp_params(256, 10), mlp_params(256, 128, 2)
    def loss(p, x, y, d):  # domain-adversarial training: a gradient reversal layer before the domain head, clipped features' gradient
        fe, cl, dm = p
        h = clip_grad(jax.nn.relu(mlp(fe, x)))
        return U.xent(mlp(cl, h), y) + U.xent(mlp(dm, grl(h, 0.3)), d)
    return jax.grad(loss), ((fe, cl, dm), f32(512, 256), ints(0, 10, 512), ints(0, 2, 512))

@prog("remat_checkpoint_dots_grad")
def _():
    L, D = 4, 512
    Ws = [(f32(D, 4 * D, scale=D ** -0.5), f32(4 * D, D, scale=(4 * D) ** -0.5)) for _ in range(L)]
    def loss(Ws, x):  # residual MLP blocks each rematerialized with policy checkpoint_dots (matmul outputs saved)
        blk = jax.checkpoint(lambda h, w: h + jax.nn.gelu(U.ln(h) @ w[0]) @ w[1], policy=jax.checkpoint_policies.checkpoint_dots)
        for w in Ws:
            x = blk(x, w)
        return jnp.mean(x ** 2)
    return jax.grad(loss), (Ws, f32(128, D))

@prog("remat_save_names_scan_grad")
def _():
    from jax.ad_checkpoint import checkpoint_name
    L, B, T, D, H = 4, 2, 128, 256, 4
    W = (f32(L, D, 3 * D, scale=D ** -0.5), f32(L, D, D, scale=D ** -0.5), f32(L, D, 4 * D, scale=D ** -0.5), f32(L, 4 * D, D, scale=(4 * D) ** -0.5))
    def block(x, w):
        qkv = checkpoint_name(U.ln(x) @ w[0], "qkv")
        q, k, v = qkv.reshape(B, T, 3, H, D // H).transpose(2, 0, 3, 1, 4)
        a = jax.nn.softmax(q @ k.swapaxes(-1, -2) / 8 + jnp.triu(jnp.full((T, T), -1e9), 1), -1)
        o = checkpoint_name((a @ v).transpose(0, 2, 1, 3).reshape(B, T, D) @ w[1], "attn_out")
        x = x + o
        return x + jax.nn.gelu(U.ln(x) @ w[2]) @ w[3], None
    def loss(W, x):  # scanned layers, remat policy save_only_these_names("qkv", "attn_out")
        blk = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names("qkv", "attn_out"))
        return jnp.mean(lax.scan(blk, x, W)[0] ** 2)
    return jax.grad(loss), (W, f32(B, T, D))

@prog("jacfwd_rk4_sensitivity")
def _():
    N = 64
    def f(th, x0):  # d x(T) / d theta of a damped coupled-oscillator network integrated by 200 RK4 steps (forward mode)
        def sim(th):
            K = th[:N * 4].reshape(N, 4); c = th[N * 4:]
            def rhs(s):
                x, v = s[:N], s[N:]
                cpl = K[:, 0] * (jnp.roll(x, 1) - x) + K[:, 1] * (jnp.roll(x, -1) - x)
                return jnp.concatenate([v, cpl - K[:, 2] * jnp.sin(x) - c * v + K[:, 3]])
            def step(_, s):
                h = 0.01
                k1 = rhs(s); k2 = rhs(s + h / 2 * k1); k3 = rhs(s + h / 2 * k2); k4 = rhs(s + h * k3)
                return s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            return lax.fori_loop(0, 200, step, x0)
        return jax.jacfwd(sim)(th)
    return f, (np.concatenate([unif(0.5, 1.5, N * 4), unif(0.05, 0.2, N)]).astype(np.float32), f32(2 * N, scale=0.5))

@prog("cnf_exact_trace_rk4")
def _():
    D, B, ST = 8, 512, 20
    ps = mlp_params(D + 1, 64, 64, D)
    def f(ps, x):  # continuous normalizing flow: dz/dt = g(z, t), dlogp/dt = -tr(dg/dz) by jacfwd, RK4 under scan
        def g(z, t): return mlp(ps, jnp.concatenate([z, t[None]]), jnp.tanh)
        def dyn(s, t):
            z = s[:, :D]
            dz = jax.vmap(g, (0, None))(z, t)
            tr = jax.vmap(lambda zz: jnp.trace(jax.jacfwd(g)(zz, t)))(z)
            return jnp.concatenate([dz, -tr[:, None]], -1)
        def step(s, t):
            h = 1.0 / ST
            k1 = dyn(s, t); k2 = dyn(s + h / 2 * k1, t + h / 2); k3 = dyn(s + h / 2 * k2, t + h / 2); k4 = dyn(s + h * k3, t + h)
            return s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), None
        s, _ = lax.scan(step, jnp.concatenate([x, jnp.zeros((B, 1))], -1), jnp.linspace(0, 1, ST + 1)[:-1])
        z, dlogp = s[:, :D], s[:, D]
        return jnp.mean(st.norm.logpdf(z).sum(-1) - dlogp)
    return f, (ps, f32(B, D))


# --- control flow --------------------------------------------------------------------------------

@prog("fori_traced_trip_count")
def _():
    def f(A, v, n):  # power iteration with a trip count that is an argument (a while loop, not a scan)
        def body(_, c):
            v, lam = c
            w = A @ v
            return w / jnp.linalg.norm(w, axis=0), jnp.sum(v * w, 0)
        return lax.fori_loop(0, n, body, (v, jnp.zeros(v.shape[1])))
    A = f32(1024, 1024); A = (A + A.T) / 2
    return f, (A.astype(np.float32), f32(1024, 8), np.int32(50))

@prog("nested_while_vmap")
def _():
    def solve(a, b):  # damped Newton on a monotone f(x) = a x + b sin x - 1 + x^3 / 10 (|b| < a) with a backtracking line search (inner while), per element
        fx = lambda x: a * x + b * jnp.sin(x) - 1 + 0.1 * x ** 3
        def outer_c(c): return (jnp.abs(fx(c[0])) > 1e-4) & (c[1] < 50)
        def outer_b(c):
            x, it = c
            d = -fx(x) / (a + b * jnp.cos(x) + 0.3 * x ** 2)
            def in_c(s): return (jnp.abs(fx(x + s * d)) > (1 - 1e-4 * s) * jnp.abs(fx(x))) & (s > 1e-4)
            s = lax.while_loop(in_c, lambda s: s * 0.5, 1.0)
            return x + s * d, it + 1
        return lax.while_loop(outer_c, outer_b, (jnp.float32(3.0), 0))
    return jax.vmap(solve), (unif(0.5, 3, 8192), unif(-0.45, 0.45, 8192))

@prog("cond_switch_vmap")
def _():
    D = 128
    Ws = f32(4, D, D, scale=D ** -0.5)
    def f(x, c, e, Ws):  # per-example lax.cond (matmul branch or elementwise branch) and lax.switch over 4 experts, under vmap
        # (batched predicates make both into selects; the closed-over weights become per-example operands)
        def one(x, c, e):
            h = lax.cond(c > 0, lambda z: jnp.tanh(z @ Ws[0]), lambda z: z * jax.nn.sigmoid(z), x)
            return lax.switch(e, [lambda z, i=i: jax.nn.gelu(z @ Ws[i]) for i in range(4)], h)
        return jax.vmap(one)(x, c, e)
    return f, (f32(512, D), f32(512), ints(0, 4, 512), Ws)

@prog("lax_map_batch_size")
def _():
    ps = mlp_params(64, 256, 256, 1)
    def f(ps, x):  # per-example input gradients of an MLP by lax.map with batch_size=128 (vmap inside chunks)
        g = lambda z: jax.grad(lambda zz: mlp(ps, zz, jax.nn.softplus)[0])(z)
        return lax.map(g, x, batch_size=128)
    return f, (ps, f32(8192, 64))

@prog("scan_fixed_point_while")
def _():
    N, T = 256, 100
    A = f32(N, N, scale=0.5 / np.sqrt(N))
    def f(A, x0, u):  # implicit Euler x' = tanh(A x) - x + u_t: each scan step solves its fixed point by a while_loop
        def step(x, ut):
            h = 0.1
            def c(s): return (s[2] > 1e-5) & (s[1] < 100)
            def b(s):
                y = s[0]
                yn = (x + h * (jnp.tanh(y @ A.T) + ut)) / (1 + h)
                return yn, s[1] + 1, jnp.max(jnp.abs(yn - y))
            y, it, _ = lax.while_loop(c, b, (x, 0, jnp.float32(1.0)))
            return y, it
        return lax.scan(step, x0, u)
    return f, (A, f32(64, N), f32(T, 64, N, scale=0.3))


# --- jax.numpy functions -------------------------------------------------------------------------

@prog("jnp_gradient_div_curl")
def _():
    N = 96
    def f(u, v, w):  # divergence and vorticity magnitude of a 3-D velocity field by jnp.gradient (2nd-order, one-sided edges)
        du, dv, dw = (jnp.gradient(c, 0.1, 0.1, 0.2) for c in (u, v, w))
        div = du[0] + dv[1] + dw[2]
        curl = jnp.stack([dw[1] - dv[2], du[2] - dw[0], dv[0] - du[1]], -1)
        return div, jnp.linalg.norm(curl, axis=-1)
    return f, (f32(N, N, N), f32(N, N, N), f32(N, N, N))

@prog("pad_modes_ramp_stat")
def _():
    def f(x):  # the pad modes no sweep used: linear_ramp, maximum, mean, minimum over a window, odd-symmetric reflect
        return (jnp.pad(x, ((0, 0), (8, 8), (8, 8)), mode="linear_ramp", end_values=0.5),
                jnp.pad(x, ((0, 0), (4, 4), (4, 4)), mode="maximum"),
                jnp.pad(x, ((0, 0), (4, 4), (4, 4)), mode="mean", stat_length=5),
                jnp.pad(x, ((0, 0), (3, 3), (3, 3)), mode="minimum"),
                jnp.pad(x, ((0, 0), (6, 6), (6, 6)), mode="reflect", reflect_type="odd"))
    return f, (f32(32, 256, 256),)

@prog("nan_stats_nanquantile")
def _():
    x = f32(128, 2048); x[R.random(x.shape) < 0.1] = np.nan
    def f(x):  # nan-aware row statistics: nanmean / nanstd / nanvar / nanmin / nanargmax / nanquantile(0.1, 0.5, 0.9)
        return (jnp.nanmean(x, -1), jnp.nanstd(x, -1), jnp.nanvar(x, 0), jnp.nanmin(x, -1), jnp.nanargmax(x, -1),
                jnp.nanquantile(x, jnp.array([0.1, 0.5, 0.9]), axis=-1), jnp.nanpercentile(x, 75.0, axis=0))
    return f, (x,)

@prog("put_along_axis_topk")
def _():
    def f(x, v):  # keep the top 32 of each row's 4096 (put_along_axis of the top values into zeros), and overwrite a column set
        tv, ti = lax.top_k(x, 32)
        kept = jnp.put_along_axis(jnp.zeros_like(x), ti, tv, axis=-1, inplace=False)
        idx = jnp.argsort(x[:, :64], -1)[:, :16]
        return kept, jnp.put_along_axis(x, idx, v, axis=-1, inplace=False)
    return f, (f32(512, 4096), f32(512, 16))

@prog("partition_argpartition")
def _():
    def f(x):  # the 100 smallest of each row (unordered) by jnp.partition / argpartition, and a kth-value threshold mask
        p = jnp.partition(x, 100, axis=-1)
        ap = jnp.argpartition(x, 100, axis=-1)[:, :100]
        return p[:, :100].sum(-1), jnp.take_along_axis(x, ap, -1).max(-1), x <= p[:, 100:101]
    return f, (f32(512, 4096),)

@prog("piecewise_vectorize")
def _():
    def f(x, a, b):  # jnp.piecewise with four pieces; jnp.vectorize with a core signature (n),(n)->() (cosine + huber distance)
        pw = jnp.piecewise(x, [x < -1, (x >= -1) & (x < 0), (x >= 0) & (x < 2)],
                           [lambda t: -1 - jnp.log(-t), lambda t: t ** 3, lambda t: jnp.sin(t), lambda t: jnp.sqrt(t)])
        def dist(u, w):
            c = u @ w / (jnp.linalg.norm(u) * jnp.linalg.norm(w))
            r = u - w
            return 1 - c + jnp.sum(jnp.where(jnp.abs(r) < 1, 0.5 * r ** 2, jnp.abs(r) - 0.5))
        return pw, jnp.vectorize(dist, signature="(n),(n)->()")(a, b)
    return f, (f32(1 << 20, scale=2), f32(64, 64, 64), f32(64, 64))

@prog("segment_prod_min_sorted")
def _():
    n, S = 1 << 18, 4096
    seg = np.sort(ints(0, S, n))
    def f(x, seg):  # per-segment product (survival of hazards), min and max with indices_are_sorted=True
        surv = jax.ops.segment_prod(1 - x, seg, S, indices_are_sorted=True)
        return (surv, jax.ops.segment_min(x, seg, S, indices_are_sorted=True),
                jax.ops.segment_max(x, seg, S, indices_are_sorted=True))
    return f, (unif(0, 0.05, n), seg)

@prog("fftconvolve_2d_same")
def _():
    def f(img, ker):  # batched 2-D FFT convolution with a 31x31 kernel, mode="same", by jax.scipy.signal.fftconvolve under vmap
        return jax.vmap(lambda im: jsp.signal.fftconvolve(im, ker, mode="same"))(img)
    g = np.exp(-((np.arange(31) - 15) ** 2) / 50.0); g = np.outer(g, g)
    return f, (f32(16, 256, 256), (g / g.sum()).astype(np.float32))

@prog("masked_softmax_where_grad")
def _():
    def loss(x, m):  # softmax / log_softmax / standardize with where= (masked positions excluded), and their gradient
        p = jax.nn.softmax(x, axis=-1, where=m)
        lp = jax.nn.log_softmax(x, axis=-1, where=m)
        s = jax.nn.standardize(x, axis=-1, where=m)
        return jnp.sum(jnp.where(m, p * lp + 0.1 * s ** 2, 0.0))
    m = R.random((512, 1024)) < 0.7; m[:, 0] = True
    return jax.grad(loss), (f32(512, 1024, scale=2), m)


# --- jax.nn --------------------------------------------------------------------------------------

@prog("dpa_bias_mask_gqa_grad")
def _():
    B, T, N, K, Hd = 4, 256, 8, 2, 64
    def loss(q, k, v, bias, mask):  # jax.nn.dot_product_attention with an additive bias, a key-padding mask, is_causal and 2 KV heads
        o = jax.nn.dot_product_attention(q, k, v, bias=bias, mask=mask, is_causal=True)
        return jnp.sum(o ** 2)
    mask = np.ones((B, 1, 1, T), bool); mask[1, ..., 200:] = False; mask[3, ..., 100:] = False
    return jax.grad(loss, argnums=(0, 1, 2, 3)), (f32(B, T, N, Hd), f32(B, T, K, Hd), f32(B, T, K, Hd), f32(1, N, T, T, scale=0.5), mask)

@prog("activation_zoo_mlp_grad")
def _():
    D = 512
    Ws = [f32(D, 2 * D, scale=D ** -0.5)] + [f32(D, D, scale=D ** -0.5) for _ in range(6)]
    def loss(Ws, x):  # glu, celu, selu, squareplus, mish, hard_tanh, sparse_plus, log_sigmoid in one MLP, gradient
        h = jax.nn.glu(x @ Ws[0])
        for W, act in zip(Ws[1:], [jax.nn.celu, jax.nn.selu, jax.nn.squareplus, jax.nn.mish, jax.nn.hard_tanh, jax.nn.sparse_plus]):
            h = act(h @ W)
        return -jnp.mean(jax.nn.log_sigmoid(h))
    return jax.grad(loss), (Ws, f32(512, D))


# --- models --------------------------------------------------------------------------------------

@prog("set_transformer_isab_pma_grad")
def _():
    B, N, D, M, H = 16, 512, 128, 16, 4
    def mab(x, y, p):  # multihead attention block: x attends to y, residual, rFF
        n, l, _ = x.shape
        q = (x @ p[0]).reshape(n, l, H, D // H).transpose(0, 2, 1, 3)
        k, v = (y @ p[1]).reshape(n, y.shape[1], 2, H, D // H).transpose(2, 0, 3, 1, 4)
        a = jax.nn.softmax(q @ k.swapaxes(-1, -2) / np.sqrt(D // H), -1)
        h = U.ln(x + (a @ v).transpose(0, 2, 1, 3).reshape(n, l, D))
        return U.ln(h + jax.nn.relu(h @ p[2]))
    def mp(): return [f32(D, D, scale=D ** -0.5), f32(D, 2 * D, scale=D ** -0.5), f32(D, D, scale=D ** -0.5)]
    p = {"emb": f32(3, D), "I1": f32(M, D), "I2": f32(M, D), "S": f32(1, D), "m": [mp() for _ in range(5)], "out": f32(D, 1, scale=0.1)}
    def loss(p, x, y):  # ISAB x2 (inducing points) then PMA pooling, regression of a set statistic
        h = x @ p["emb"]
        for i, I in ((0, p["I1"]), (2, p["I2"])):
            hi = mab(jnp.broadcast_to(I, (B, M, D)), h, p["m"][i])
            h = mab(h, hi, p["m"][i + 1])
        z = mab(jnp.broadcast_to(p["S"], (B, 1, D)), h, p["m"][4])
        return jnp.mean((z[:, 0] @ p["out"] - y) ** 2)
    return jax.grad(loss), (p, f32(B, N, 3), f32(B, 1))

@prog("hopfield_retrieval")
def _():
    def f(X, xi, beta):  # modern Hopfield network: three updates xi <- X^T softmax(beta X xi), energies at the end
        def upd(_, s): return jax.nn.softmax(beta * s @ X.T, -1) @ X
        s = lax.fori_loop(0, 3, upd, xi)
        E = -jax.nn.logsumexp(beta * s @ X.T, -1) / beta + 0.5 * jnp.sum(s ** 2, -1)
        return s, E
    X = f32(4096, 256) / 16
    return f, (X.astype(np.float32), (X[:512] + f32(512, 256, scale=0.03)).astype(np.float32), np.float32(8.0))

@prog("kan_bspline_grad")
def _():
    G, k = 8, 3
    grid = np.linspace(-1 - k * 2 / G, 1 + k * 2 / G, G + 2 * k + 1).astype(np.float32)
    def bases(x):  # cubic B-spline bases of x on a uniform extended grid, Cox-de Boor recursion
        g = jnp.asarray(grid)
        Bs = ((x[..., None] >= g[:-1]) & (x[..., None] < g[1:])).astype(x.dtype)
        for d in range(1, k + 1):
            Bs = ((x[..., None] - g[:-(d + 1)]) / (g[d:-1] - g[:-(d + 1)]) * Bs[..., :-1]
                  + (g[d + 1:] - x[..., None]) / (g[d + 1:] - g[1:-d]) * Bs[..., 1:])
        return Bs
    def layer(p, x):  # phi_ij(x_i) = w_b silu(x_i) + sum_c c_ijc B_c(x_i), summed over inputs i
        return jax.nn.silu(x) @ p[0] + jnp.einsum("bic,ioc->bo", bases(x), p[1])
    p = [(f32(64, 64, scale=0.1), f32(64, 64, G + k, scale=0.1)), (f32(64, 10, scale=0.1), f32(64, 10, G + k, scale=0.1))]
    def loss(p, x, y):
        return U.xent(layer(p[1], jnp.tanh(layer(p[0], x))), y)
    return jax.grad(loss), (p, unif(-1, 1, 512, 64), ints(0, 10, 512))

@prog("echo_state_ridge")
def _():
    N, T, Din = 500, 1000, 3
    W = f32(N, N) * (R.random((N, N)) < 0.02)
    W = (W * 0.9 / np.max(np.abs(np.linalg.eigvals(W)))).astype(np.float32)
    def f(W, Win, u, y):  # leaky echo state network driven by a 3-D series (scan), ridge-regression readout by a solve
        def step(h, ut):
            h = 0.7 * h + 0.3 * jnp.tanh(W @ h + Win @ ut)
            return h, h
        _, H = lax.scan(step, jnp.zeros(N), u)
        H = H[200:]
        Wout = jnp.linalg.solve(H.T @ H + 10 * jnp.eye(N), H.T @ y[200:])
        return Wout, jnp.mean((H @ Wout - y[200:]) ** 2)
    t = np.arange(T + 1) * 0.05
    s = np.stack([np.sin(t), np.sin(1.7 * t) * np.cos(0.3 * t), np.cos(2.3 * t)], -1).astype(np.float32)
    return f, (W, f32(N, Din, scale=0.5), s[:-1], s[1:])

@prog("neural_ode_rk4_grad")
def _():
    D, B, ST = 32, 128, 40
    ps = mlp_params(D, 128, 128, D)
    def loss(ps, x, y):  # neural ODE with fixed-step RK4 under scan, reverse mode through the scan
        def f(z): return mlp(ps, z, jnp.tanh)
        def step(z, _):
            h = 1.0 / ST
            k1 = f(z); k2 = f(z + h / 2 * k1); k3 = f(z + h / 2 * k2); k4 = f(z + h * k3)
            return z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), None
        return jnp.mean((lax.scan(step, x, None, ST)[0] - y) ** 2)
    return jax.grad(loss), (ps, f32(B, D), f32(B, D))

@prog("made_maf_loglik_grad")
def _():
    D, Hd, L = 32, 256, 3
    deg_in = np.arange(1, D + 1)
    def masks(perm):
        d_in = deg_in[perm]; d_h = (np.arange(Hd) % (D - 1)) + 1
        return (d_h[None] >= d_in[:, None]).astype(np.float32), (d_in[None] > d_h[:, None]).astype(np.float32), d_in
    ms, perms = [], []
    for l in range(L):
        perm = R.permutation(D) if l else np.arange(D)
        m1, m2, _ = masks(perm); ms.append((m1, m2)); perms.append(perm)
    p = [(f32(D, Hd, scale=D ** -0.5), f32(Hd, 2 * D, scale=0.01 * Hd ** -0.5)) for _ in range(L)]
    def loss(p, x):  # masked autoregressive flow of three MADE layers (shift and log-scale), density evaluation direction
        ld = 0.0
        for (W1, W2), (m1, m2) in zip(p, ms):
            h = jax.nn.relu(x @ (W1 * m1))
            mu, a = jnp.split(h @ (W2 * jnp.concatenate([m2, m2], 1)), 2, -1)
            a = jnp.tanh(a)
            x = (x - mu) * jnp.exp(-a)
            ld = ld - a.sum(-1)
            x = x[:, ::-1]
        return -jnp.mean(st.norm.logpdf(x).sum(-1) + ld)
    return jax.grad(loss), (p, f32(1024, D))

@prog("fid_sqrtm")
def _():
    D = 128
    def f(fa, fb):  # Frechet distance of two feature sets: means, covariances and the trace of sqrtm(S1 S2)
        m1, m2 = fa.mean(0), fb.mean(0)
        s1, s2 = jnp.cov(fa, rowvar=False), jnp.cov(fb, rowvar=False)
        cs = jsp.linalg.sqrtm(s1 @ s2)
        return jnp.sum((m1 - m2) ** 2) + jnp.trace(s1) + jnp.trace(s2) - 2 * jnp.trace(cs).real
    return f, (f32(2048, D), f32(2048, D, scale=1.2) + 0.1)

@prog("stft_istft_roundtrip")
def _():
    def f(x):  # STFT (Hann, 512 / 128 hop), spectral gating of small bins, ISTFT back
        _, _, Z = jsp.signal.stft(x, nperseg=512, noverlap=384)
        mag = jnp.abs(Z)
        Z = Z * (mag > 0.3 * jnp.median(mag, axis=-1, keepdims=True))
        return jsp.signal.istft(Z, nperseg=512, noverlap=384)[1]
    return f, (f32(8, 32768),)


if __name__ == "__main__":
    U.main(P)
