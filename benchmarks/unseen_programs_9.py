"""A ninth sweep of ordinary JAX programs outside `axle bench` (2026-11-28, eighth session):
kinds the first eight sweeps left out. FP8 storage and casts (e4m3 activations with amax
scaling, e5m2 gradients, e4m3-stored weights dequantized to bf16, an f8 x f8 dot), per-token
dynamic int8 quantization before an int32-accumulating matmul, jax.experimental.sparse BCOO
products (sparse @ dense, a sparse attention pattern), image work (map_coordinates warps,
scale_and_translate, dihedral augmentation, luma histograms), batched dense linear algebra
(LU and Cholesky solves, triangular solves with many right-hand sides, a 256x256 SVD, the
eigenvalues of nonsymmetric matrices, multivariate normal samples), special functions
(Bessel i0e/i1e, ndtri, log_ndtr) and the Poisson sampler, second-order autodiff (a Hessian,
an empirical NTK, the L-BFGS two-loop recursion), attention variants (Transformer-XL
relative shift, Performer random features, causal linear attention by cumsum, the RWKV
recurrence, Hyena's FFT long convolution), metric-learning losses (hard-mined triplets,
ArcFace), control flow and reductions (nested scans, reduce_precision, a two-operand
lax.reduce, all/any/prod), integer and bit work (murmur3 feature hashing, bitcasts with clz,
int16 PCM mixing and int8 saturation), an einops-style patchify, and simulations (lattice
Boltzmann, implicit heat steps solved by CG, SPH density and pressure forces).

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_9.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy as jsp
from jax import lax
from jax.experimental import sparse
import ml_dtypes

import unseen_programs as U

R = np.random.default_rng(9)
f32 = U.f32
P, prog = U.sweep()
BF = ml_dtypes.bfloat16
def ints(lo, hi, *s, dt=np.int32): return R.integers(lo, hi, s).astype(dt)
def key(seed=9): return np.asarray(jax.random.key_data(jax.random.PRNGKey(seed)))
def pkey(k): return jax.random.wrap_key_data(k)
def spd(*batch, n):
    a = f32(*batch, n, n)
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n, dtype=np.float32)).astype(np.float32)


# --- low precision: FP8 and dynamic int8 -------------------------------------------------

@prog("f8_casts")
def _():
    def f(x, g):  # FP8 training casts: activations to e4m3 by a per-tensor amax scale, grads to e5m2
        s = 448.0 / jnp.maximum(jnp.max(jnp.abs(x)), 1e-12)
        xq = (x * s).astype(jnp.float8_e4m3fn)
        sg = 57344.0 / jnp.maximum(jnp.max(jnp.abs(g)), 1e-12)
        gq = (g * sg).astype(jnp.float8_e5m2)
        return xq.astype(jnp.float32) / s, gq, sg
    return f, (f32(2048, 1024), f32(2048, 1024, scale=1e-3))

@prog("f8_weight_matmul")
def _():
    def f(x, wq, s):  # weights stored as e4m3 with per-output-channel scales, dequantized to bf16
        w = wq.astype(jnp.bfloat16) * s.astype(jnp.bfloat16)
        return jnp.dot(x, w, preferred_element_type=jnp.float32)
    return f, (f32(128, 1024).astype(BF), (f32(1024, 2048) * 64).astype(ml_dtypes.float8_e4m3fn), np.abs(f32(2048)) * 0.002)

@prog("f8_dot_direct")
def _():
    def f(a, b, sa, sb):  # an e4m3 x e4m3 GEMM with f32 accumulation and the two scales after
        return jnp.dot(a, b, preferred_element_type=jnp.float32) * (sa * sb)
    f8 = ml_dtypes.float8_e4m3fn
    return f, ((f32(256, 1024) * 32).astype(f8), (f32(1024, 1024) * 32).astype(f8), np.float32(1 / 32), np.float32(1 / 32))

@prog("int8_dynamic_token_matmul")
def _():
    def f(x, wq, sw):  # per-token dynamic activation quantization (SmoothQuant / LLM.int8 style)
        sx = jnp.max(jnp.abs(x), -1, keepdims=True) / 127.0
        xq = jnp.clip(jnp.round(x / sx), -127, 127).astype(jnp.int8)
        acc = lax.dot_general(xq, wq, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
        return acc.astype(jnp.float32) * sx * sw
    return f, (f32(256, 2048), ints(-127, 128, 2048, 2048, dt=np.int8), np.abs(f32(2048)) * 1e-3)


# --- sparse ----------------------------------------------------------------------------

@prog("bcoo_spmm")
def _():
    n = 8192
    idx = np.stack([np.repeat(np.arange(n), 16), R.integers(0, n, n * 16)], 1).astype(np.int32)
    def f(data, idx, b): return sparse.BCOO((data, idx), shape=(n, n)) @ b
    return f, (f32(n * 16), idx, f32(n, 64))

@prog("bcoo_sparse_attention")
def _():
    t, w, g = 2048, 32, 16  # each query: a causal local window of 32 keys and 16 random keys
    rows = np.repeat(np.arange(t), w + g)
    cols = np.concatenate([np.maximum(np.arange(t)[:, None] - np.arange(w)[None], 0),
                           R.integers(0, t, (t, g))], 1).reshape(-1)
    idx = np.stack([rows, cols], 1).astype(np.int32)
    def f(q, k, v, idx):
        r, c = idx[:, 0], idx[:, 1]
        s = jnp.sum(q[r] * k[c], -1) / 8.0
        m = jax.ops.segment_max(s, r, num_segments=t, indices_are_sorted=True)
        p = jnp.exp(s - m[r])
        z = jax.ops.segment_sum(p, r, num_segments=t, indices_are_sorted=True)
        return sparse.BCOO((p / z[r], idx), shape=(t, t)) @ v
    return f, (f32(t, 64), f32(t, 64), f32(t, 64), idx)


# --- images ----------------------------------------------------------------------------

@prog("map_coordinates_warp")
def _():
    def f(img, flow):  # warp every channel by a dense displacement field, bilinear, edge clamp
        h, w = img.shape[1:]
        yy, xx = jnp.meshgrid(jnp.arange(h, dtype=jnp.float32), jnp.arange(w, dtype=jnp.float32), indexing="ij")
        coords = [yy + flow[0], xx + flow[1]]
        return jax.vmap(lambda c: jsp.ndimage.map_coordinates(c, coords, order=1, mode="nearest"))(img)
    return f, (f32(24, 256, 256), f32(2, 256, 256, scale=4.0))

@prog("scale_and_translate")
def _():
    def f(img, scale, trans):
        return jax.image.scale_and_translate(img, (16, 192, 160, 3), (1, 2), scale, trans, method="linear", antialias=True)
    return f, (f32(16, 128, 128, 3), np.array([1.5, 1.25], np.float32), np.array([-3.0, 2.5], np.float32))

@prog("rot90_flip_augment")
def _():
    def f(x, mean, std):  # uint8 batch -> normalized, all eight dihedral views (test-time augmentation)
        x = (x.astype(jnp.float32) / 255.0 - mean) / std
        views = [jnp.rot90(x, k, (1, 2)) for k in range(4)]
        return jnp.concatenate(views + [jnp.flip(v, 2) for v in views], 0)
    return f, (ints(0, 256, 16, 128, 128, 3, dt=np.uint8), np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32))

@prog("grayscale_histogram")
def _():
    def f(img):  # PIL's integer luma, then per-image 256-bin histograms and their CDFs
        i = img.astype(jnp.int32)
        g = (i[..., 0] * 19595 + i[..., 1] * 38470 + i[..., 2] * 7471 + 32768) >> 16
        h = jax.vmap(lambda a: jnp.histogram(a, bins=256, range=(0.0, 256.0))[0])(g.reshape(g.shape[0], -1).astype(jnp.float32))
        return g.astype(jnp.uint8), h, jnp.cumsum(h, -1) / h.sum(-1, keepdims=True)
    return f, (ints(0, 256, 16, 256, 256, 3, dt=np.uint8),)


# --- linear algebra and multivariate sampling ------------------------------------------

@prog("lu_factor_solve")
def _():
    def f(a, b): return jsp.linalg.lu_solve(jsp.linalg.lu_factor(a), b)
    return f, (f32(32, 128, 128) + 8 * np.eye(128, dtype=np.float32), f32(32, 128, 64))

@prog("cho_solve_batched")
def _():
    def f(a, b): return jsp.linalg.cho_solve(jsp.linalg.cho_factor(a, lower=True), b)
    return f, (spd(128, n=64), f32(128, 64, 8))

@prog("trsm_batched_many_rhs")
def _():
    a = np.tril(f32(16, 128, 128)) + 12 * np.eye(128, dtype=np.float32)
    return (lambda a, b: jsp.linalg.solve_triangular(a, b, lower=True)), (a, f32(16, 128, 512))

@prog("svd_256_lowrank")
def _():
    def f(a):  # truncated SVD compression: singular values and the rank-32 reconstruction
        u, s, vt = jnp.linalg.svd(a, full_matrices=False)
        return s, (u[:, :32] * s[:32]) @ vt[:32]
    return f, (f32(256, 256),)

@prog("eig_nonsym")
def _():
    def f(a):  # spectra of nonsymmetric matrices (stability checks of linearized systems)
        w = jnp.linalg.eigvals(a)
        return jnp.sort(jnp.abs(w), -1), jnp.sort(w.real, -1)
    return f, (f32(16, 48, 48),)

@prog("multivariate_normal")
def _():
    def f(k, mean, cov): return jax.random.multivariate_normal(pkey(k), mean, cov, (8192,))
    return f, (key(), f32(64), spd(n=64))


# --- special functions and samplers ----------------------------------------------------

@prog("bessel_i0e_i1e")
def _():
    def f(x):  # von Mises log-normalizers and their derivative ratio
        return jsp.special.i0e(x), jsp.special.i1e(x) / jsp.special.i0e(x)
    return f, (f32(1 << 20, scale=5.0),)

@prog("ndtri_log_ndtr")
def _():
    def f(u, x): return jsp.special.ndtri(u), jsp.special.log_ndtr(x)
    return f, (R.uniform(1e-6, 1 - 1e-6, 1 << 20).astype(np.float32), f32(1 << 20, scale=8.0) - 4.0)

@prog("random_poisson")
def _():
    def f(k, lam): return jax.random.poisson(pkey(k), lam, (1 << 16,))
    return f, (key(), R.uniform(0.5, 40.0, 1 << 16).astype(np.float32))


# --- second-order autodiff and quasi-Newton --------------------------------------------

@prog("hessian_mlp")
def _():
    def loss(th, x, y):  # a tiny MLP with its parameters in one flat vector
        w1 = th[:512].reshape(32, 16); b1 = th[512:528]; w2 = th[528:544]; b2 = th[544]
        return jnp.mean((jnp.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)
    return jax.hessian(loss), (f32(545, scale=0.2), f32(256, 32), f32(256))

@prog("ntk_empirical")
def _():
    def mlp(p, x):
        for w, b in zip(p[0::2][:-1], p[1::2][:-1]):
            x = jnp.tanh(x @ w + b)
        return (x @ p[-2] + p[-1])[:, 0]
    def f(p, x1, x2):  # empirical neural tangent kernel J1 J2^T summed over parameter tensors
        j1 = jax.tree_util.tree_leaves(jax.jacrev(mlp)(p, x1))
        j2 = jax.tree_util.tree_leaves(jax.jacrev(mlp)(p, x2))
        k = sum(a.reshape(a.shape[0], -1) @ b.reshape(b.shape[0], -1).T for a, b in zip(j1, j2))
        # with the predictions too: the kernel alone never reads the last bias, and jax.jit
        # drops unused arguments, which the harness (passing every leaf) does not expect
        return k, mlp(p, x1)
    p = [f32(32, 128, scale=0.18), f32(128, scale=0.1), f32(128, 128, scale=0.09), f32(128, scale=0.1), f32(128, 1, scale=0.09), f32(1)]
    return f, (p, f32(64, 32), f32(64, 32))

@prog("lbfgs_two_loop")
def _():
    def f(g, S, Y):  # the L-BFGS search direction from a 10-pair history
        m = S.shape[0]
        rho = 1.0 / jnp.sum(S * Y, -1)
        def bwd(j, c):
            q, al = c
            i = m - 1 - j
            a = rho[i] * jnp.dot(S[i], q)
            return q - a * Y[i], al.at[i].set(a)
        q, al = lax.fori_loop(0, m, bwd, (g, jnp.zeros(m)))
        r = q * jnp.dot(S[-1], Y[-1]) / jnp.dot(Y[-1], Y[-1])
        def fwd(i, r): return r + S[i] * (al[i] - rho[i] * jnp.dot(Y[i], r))
        return -lax.fori_loop(0, m, fwd, r)
    S = f32(10, 1 << 18)
    return f, (f32(1 << 18), S, S + f32(10, 1 << 18, scale=0.3))


# --- attention variants ----------------------------------------------------------------

@prog("txl_rel_shift_attn")
def _():
    def rel_shift(x):  # Transformer-XL's pad-reshape-slice trick
        b, h, q, k = x.shape
        x = jnp.pad(x, ((0, 0), (0, 0), (0, 0), (1, 0)))
        return x.reshape(b, h, k + 1, q)[:, :, 1:].reshape(b, h, q, k)
    def f(q, k, v, r, u, w):
        t = q.shape[2]
        ac = jnp.einsum("bhqd,bhkd->bhqk", q + u[:, None], k)
        bd = rel_shift(jnp.einsum("bhqd,hkd->bhqk", q + w[:, None], r))
        s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), (ac + bd) / 8.0, -1e30)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)
    return f, (f32(4, 8, 256, 64), f32(4, 8, 256, 64), f32(4, 8, 256, 64), f32(8, 256, 64), f32(8, 64, scale=0.1), f32(8, 64, scale=0.1))

@prog("performer_favor")
def _():
    def phi(x, wr, is_q):  # FAVOR+ positive random features, stabilized as in the reference code
        x = x * 64 ** -0.25
        z = x @ wr.T - jnp.sum(x * x, -1, keepdims=True) / 2
        z = z - (jnp.max(z, -1, keepdims=True) if is_q else jnp.max(z))
        return jnp.exp(z) / np.sqrt(wr.shape[0])
    def f(q, k, v, wr):
        qp, kp = phi(q, wr, True), phi(k, wr, False)
        kv = jnp.einsum("bhtm,bhtd->bhmd", kp, v)
        z = jnp.einsum("bhtm,bhm->bht", qp, kp.sum(2))
        return jnp.einsum("bhtm,bhmd->bhtd", qp, kv) / z[..., None]
    return f, (f32(2, 4, 1024, 64), f32(2, 4, 1024, 64), f32(2, 4, 1024, 64), f32(128, 64))

@prog("linear_attention_cumsum")
def _():
    def f(q, k, v):  # causal linear attention (Katharopoulos et al.) as prefix sums of k v^T
        q, k = jax.nn.elu(q) + 1, jax.nn.elu(k) + 1
        kv = jnp.cumsum(jnp.einsum("bhtd,bhte->bhtde", k, v), axis=2)
        num = jnp.einsum("bhtd,bhtde->bhte", q, kv)
        den = jnp.einsum("bhtd,bhtd->bht", q, jnp.cumsum(k, 2))
        return num / den[..., None]
    return f, (f32(2, 4, 256, 32), f32(2, 4, 256, 32), f32(2, 4, 256, 32))

@prog("rwkv_wkv_scan")
def _():
    def f(w, u, k, v):  # RWKV-4's numerically stable WKV recurrence over time
        def step(c, kv):
            aa, bb, pp = c
            kt, vt = kv
            ww = u + kt
            p = jnp.maximum(pp, ww)
            e1, e2 = jnp.exp(pp - p), jnp.exp(ww - p)
            out = (e1 * aa + e2 * vt) / (e1 * bb + e2)
            ww = pp - jnp.exp(w)
            p = jnp.maximum(ww, kt)
            e1, e2 = jnp.exp(ww - p), jnp.exp(kt - p)
            return (e1 * aa + e2 * vt, e1 * bb + e2, p), out
        b, c = k.shape[1:]
        return lax.scan(step, (jnp.zeros((b, c)), jnp.zeros((b, c)), jnp.full((b, c), -1e38)), (k, v))[1]
    return f, (f32(512, scale=0.5), f32(512, scale=0.5), f32(512, 8, 512), f32(512, 8, 512))

@prog("hyena_fft_conv")
def _():
    def f(u, h, dbias, gate):  # a Hyena / S4 long convolution by zero-padded FFT, then the gate
        n = u.shape[-1]
        y = jnp.fft.irfft(jnp.fft.rfft(u, n=2 * n) * jnp.fft.rfft(h, n=2 * n), n=2 * n)[..., :n]
        return (y + u * dbias[:, None]) * jax.nn.sigmoid(gate)
    h = f32(256, 2048) * np.exp(-np.arange(2048, dtype=np.float32) / 300.0)
    return f, (f32(2, 256, 2048), h.astype(np.float32), f32(256), f32(2, 256, 2048))


# --- metric-learning losses ------------------------------------------------------------

@prog("triplet_hard_mining")
def _():
    def loss(e, lab):  # batch-hard triplet loss: hardest positive and negative per anchor
        e = e / jnp.linalg.norm(e, axis=1, keepdims=True)
        d = jnp.sqrt(jnp.maximum(2.0 - 2.0 * e @ e.T, 1e-12))
        same = lab[:, None] == lab[None, :]
        eye = jnp.eye(e.shape[0], dtype=bool)
        pos = jnp.argmax(jnp.where(same & ~eye, d, -1.0), 1)
        neg = jnp.argmax(jnp.where(same, -jnp.inf, -d), 1)
        dp = jnp.take_along_axis(d, pos[:, None], 1)[:, 0]
        dn = jnp.take_along_axis(d, neg[:, None], 1)[:, 0]
        return jnp.mean(jax.nn.relu(dp - dn + 0.2))
    return jax.value_and_grad(loss), (f32(1024, 128), ints(0, 64, 1024))

@prog("arcface_loss_grad")
def _():
    def loss(e, w, y):  # additive angular margin softmax over 4096 identities
        e = e / jnp.linalg.norm(e, axis=1, keepdims=True)
        w = w / jnp.linalg.norm(w, axis=0, keepdims=True)
        cos = jnp.clip(e @ w, -1 + 1e-6, 1 - 1e-6)
        th = jnp.arccos(jnp.take_along_axis(cos, y[:, None], 1))
        logits = 64.0 * cos.at[jnp.arange(e.shape[0]), y].set(jnp.cos(th + 0.5)[:, 0])
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))
    return jax.value_and_grad(loss, argnums=(0, 1)), (f32(128, 512), f32(512, 4096), ints(0, 4096, 128))


# --- control flow and reductions -------------------------------------------------------

@prog("nested_scan")
def _():
    def f(h0, xs, w, u):  # chunked RNN: an outer scan over chunks, an inner scan over steps
        def inner(h, x):
            h = jnp.tanh(x @ w + h @ u)
            return h, h
        def outer(h, xc):
            h, hs = lax.scan(inner, h, xc)
            return h, hs.mean(0)
        return lax.scan(outer, h0, xs)
    return f, (f32(32, 256), f32(8, 32, 32, 128), f32(128, 256, scale=0.08), f32(256, 256, scale=0.06))

@prog("reduce_precision_emul")
def _():
    def f(x, w):  # emulated low-precision numerics: e4m3 activations, bf16 weights, e5m2 copy
        xq = lax.reduce_precision(x, exponent_bits=4, mantissa_bits=3)
        wq = lax.reduce_precision(w, exponent_bits=8, mantissa_bits=7)
        return xq @ wq, lax.reduce_precision(x, exponent_bits=5, mantissa_bits=2)
    return f, (f32(256, 1024), f32(1024, 1024, scale=0.03))

@prog("variadic_reduce_argmin")
def _():
    def f(x):  # one lax.reduce over (value, index) pairs: argmin with the lowest index on ties
        idx = lax.broadcasted_iota(jnp.int32, x.shape, 1)
        def comb(a, b):
            take = (a[0] < b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
            return jnp.where(take, a[0], b[0]), jnp.where(take, a[1], b[1])
        return lax.reduce((x, idx), (np.float32(np.inf), np.int32(0)), comb, (1,))
    return f, (np.round(f32(1024, 4096) * 10) / 10,)

@prog("all_any_prod")
def _():
    def f(x, m):
        return (jnp.all(jnp.isfinite(x), axis=1), jnp.any(x > 4.0, axis=0), jnp.prod(1.0 + 0.01 * x, axis=1),
                jnp.all(m, axis=-1), jnp.any(m))
    return f, (f32(4096, 1024), R.random((4096, 64)) < 0.99)


# --- integers and bits -----------------------------------------------------------------

@prog("murmur3_feature_hash")
def _():
    def f(tok, val):  # the hashing trick: murmur3_32 of feature ids into 2^18 signed buckets
        def rotl(x, r): return (x << r) | (x >> (32 - r))
        k = rotl(tok * np.uint32(0xcc9e2d51), 15) * np.uint32(0x1b873593)
        h = rotl(np.uint32(42) ^ k, 13) * np.uint32(5) + np.uint32(0xe6546b64)
        h = h ^ np.uint32(4)
        h = h ^ (h >> 16); h = h * np.uint32(0x85ebca6b)
        h = h ^ (h >> 13); h = h * np.uint32(0xc2b2ae35)
        h = h ^ (h >> 16)
        b = (h & np.uint32((1 << 18) - 1)).astype(jnp.int32)
        return jax.ops.segment_sum(jnp.where((h >> 31) == 1, -val, val), b, num_segments=1 << 18), h
    return f, (R.integers(0, 2 ** 32, 1 << 20, dtype=np.uint64).astype(np.uint32), f32(1 << 20))

@prog("bitcast_fast_invsqrt")
def _():
    def f(x):  # float bit tricks: Quake's rsqrt, exponent / mantissa fields, leading zeros
        i = lax.bitcast_convert_type(x, jnp.int32)
        y = lax.bitcast_convert_type(np.int32(0x5f3759df) - (i >> 1), jnp.float32)
        y = y * (1.5 - 0.5 * x * y * y)
        e = ((i >> 23) & 0xff) - 127
        m = lax.bitcast_convert_type((i & 0x007fffff) | 0x3f800000, jnp.float32)
        u = lax.bitcast_convert_type(x, jnp.uint32)
        return y, e, m, lax.clz(u), lax.clz(i ^ (i >> 7)), lax.population_count(u)
    return f, (np.abs(f32(1 << 21)) + 1e-3,)

@prog("int_saturating_arith")
def _():
    def f(a, b, g, c, d):
        mix = (a.astype(jnp.int32) * g[0] + b.astype(jnp.int32) * g[1]) >> 8  # Q8 gains
        mix = jnp.clip(mix, -32768, 32767).astype(jnp.int16)
        hp = a - (a >> 3) + (b & np.int16(0x0ff0))  # native int16, wrapping
        sat = jnp.clip(c.astype(jnp.int16) + d.astype(jnp.int16), -128, 127).astype(jnp.int8)
        return mix, hp, sat, c + d, (c.astype(jnp.int16) * d).astype(jnp.int8)
    return f, (ints(-32768, 32768, 64, 16384, dt=np.int16), ints(-32768, 32768, 64, 16384, dt=np.int16),
               np.array([200, 90], np.int16), ints(-128, 128, 2048, 1024, dt=np.int8), ints(-128, 128, 2048, 1024, dt=np.int8))


# --- layout ----------------------------------------------------------------------------

@prog("einops_patchify_linear")
def _():
    def f(x, w, b):  # 'b (h p1) (w p2) c -> b (h w) (p1 p2 c)', then the patch projection (MAE)
        n, hh, ww, c = x.shape
        p = 16
        x = x.reshape(n, hh // p, p, ww // p, p, c).transpose(0, 1, 3, 2, 4, 5).reshape(n, (hh // p) * (ww // p), p * p * c)
        return x @ w + b, x
    return f, (f32(8, 224, 224, 3), f32(768, 384, scale=0.03), f32(384))


# --- simulations -----------------------------------------------------------------------

@prog("lattice_boltzmann")
def _():
    cx = np.array([0, 1, 0, -1, 0, 1, -1, -1, 1]); cy = np.array([0, 0, 1, 0, -1, 1, 1, -1, -1])
    wt = np.array([4 / 9] + [1 / 9] * 4 + [1 / 36] * 4, np.float32)
    opp = [0, 3, 4, 1, 2, 7, 8, 5, 6]
    def f(fin, obstacle):  # D2Q9 BGK: collide, bounce back at the obstacle, stream by rolls
        def step(_, fin):
            rho = fin.sum(0)
            ux = jnp.tensordot(cx.astype(np.float32), fin, 1) / rho
            uy = jnp.tensordot(cy.astype(np.float32), fin, 1) / rho
            cu = 3.0 * (cx[:, None, None] * ux + cy[:, None, None] * uy)
            feq = rho * wt[:, None, None] * (1 + cu + 0.5 * cu * cu - 1.5 * (ux * ux + uy * uy))
            fout = jnp.where(obstacle, fin[np.array(opp)], fin - (fin - feq) / 0.6)
            return jnp.stack([jnp.roll(fout[i], (cx[i], cy[i]), (0, 1)) for i in range(9)])
        return lax.fori_loop(0, 6, step, fin)
    yy, xx = np.mgrid[:256, :256]
    fin = (wt[:, None, None] * (1 + 0.01 * f32(9, 256, 256))).astype(np.float32)
    return f, (fin, (xx - 64) ** 2 + (yy - 128) ** 2 < 20 ** 2)

@prog("implicit_heat_cg")
def _():
    def lap(u):  # 5-point Laplacian, zero Dirichlet boundary
        up = jnp.pad(u, 1)
        return up[:-2, 1:-1] + up[2:, 1:-1] + up[1:-1, :-2] + up[1:-1, 2:] - 4 * u
    def f(u0):  # backward Euler steps of the heat equation, each (I - 2 L) u' = u solved by CG
        def A(x): return x - 2.0 * lap(x)
        def solve(b):
            tol = 1e-12 * jnp.sum(b * b)
            def cond(s): return (s[4] < 200) & (s[3] > tol)
            def body(s):
                x, r, p, rs, i = s
                ap = A(p)
                a = rs / jnp.sum(p * ap)
                x, r = x + a * p, r - a * ap
                rs2 = jnp.sum(r * r)
                return x, r, r + (rs2 / rs) * p, rs2, i + 1
            return lax.while_loop(cond, body, (b, b - A(b), b - A(b), jnp.sum((b - A(b)) ** 2), 0))[0]
        return lax.fori_loop(0, 4, lambda _, u: solve(u), u0)
    return f, (f32(256, 256),)

@prog("sph_density_force")
def _():
    def f(x, m):  # SPH: cubic-spline density sums, equation of state, symmetric pressure forces
        h, sigma = 1.0, 1.0 / np.pi
        d = x[:, None] - x[None]
        r = jnp.sqrt(jnp.sum(d * d, -1) + 1e-12)
        q = r / h
        w = sigma * jnp.where(q < 1, 1 - 1.5 * q ** 2 + 0.75 * q ** 3, jnp.where(q < 2, 0.25 * (2 - q) ** 3, 0.0))
        rho = w @ m
        p = 10.0 * (rho - 1.0)
        dw = sigma / h * jnp.where(q < 1, -3 * q + 2.25 * q ** 2, jnp.where(q < 2, -0.75 * (2 - q) ** 2, 0.0))
        pr = p / rho ** 2
        coef = m[None] * (pr[:, None] + pr[None]) * dw / r
        return rho, -jnp.sum(coef[..., None] * d, 1)
    return f, (R.uniform(0, 8, (1024, 3)).astype(np.float32), R.uniform(0.5, 1.5, 1024).astype(np.float32))


if __name__ == "__main__":
    U.main(P)
