"""A twelfth sweep of ordinary JAX programs outside `axle bench` (2026-11-28, eleventh session):
kinds the first eleven sweeps left out. Audio front ends and DSP (MFCCs with jax.scipy.fft.dct and
deltas, trainable PCEN with its IIR smoother scanned, YIN pitch tracking from an FFT
cross-correlation, rational 2/3 polyphase resampling as one lhs-dilated strided conv, a
periodized db4 wavelet decomposition and reconstruction, the analytic signal with jnp.unwrap),
video models (TimeSformer's divided space-time attention, the temporal shift module before an
NCHW conv with its gradient, an R(2+1)D block in NCDHW with its gradient), classical vision
(Laplacian-pyramid blending with depthwise strided and lhs-dilated convs, Canny with a hysteresis
while_loop, Horn-Schunck optical flow, RAFT's correlation-pyramid lookup, a Hough transform by
scatter-add voting, CT filtered back-projection, RANSAC homographies by batched 8x9 SVDs),
geometric and scientific models (an EGNN layer stack with its gradient, DeepWalk random walks
over a CSR graph, AlphaFold2's triangle updates and triangle attention, PointNet++ ball query and
grouping, particle-mesh gravity with CIC scatter and an FFT Poisson solve, Lenia), classical
statistics and numerics (the GP marginal-likelihood gradient through a Cholesky, a Baum-Welch
EM step, t-SNE with its perplexity bisection, FISTA for the lasso, Longstaff-Schwartz American
option pricing), dynamic programs (Smith-Waterman with affine gaps over anti-diagonals, 0/1
knapsack with backtracking), models (DCN-v2 cross layers with embedding gradients, ToMe token
merging, Reformer LSH attention, product-quantization ADC search, a spiking LIF network with a
custom_vjp surrogate gradient, a Burgers PINN with nested grads, the complex-valued LRU by
associative_scan with its gradient, a DP-SGD step with per-example conv gradients) and data
work (BPE merge rounds by bincount, UTF-8 decoding with clz, a sort-based group-by).

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_12.py [names]"""

import itertools

import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy as jsp
import jax.scipy.fft
from jax import lax

import unseen_programs as U

R, f32, unif, ints, key, pkey, mlp_params, mlp = U.helpers(12)
P, prog = U.sweep()
def conv(x, w, stride=(1, 1), pad="SAME", dn=("NCHW", "OIHW", "NCHW"), **kw):
    return lax.conv_general_dilated(x, w, stride, pad, dimension_numbers=dn, **kw)
ln, mha = U.ln, U.mha
def smooth_images(B, H, sigma=4.0):  # low-pass filtered noise in [0, 1]
    k = np.fft.fftfreq(H)
    g = np.exp(-2 * (np.pi * sigma) ** 2 * (k[:, None] ** 2 + k[None] ** 2))
    x = np.real(np.fft.ifft2(np.fft.fft2(R.standard_normal((B, H, H))) * g))
    return ((x - x.min()) / (x.max() - x.min())).astype(np.float32)
SOBEL = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32) / 8


# --- audio and signal processing ---------------------------------------------------------

@prog("mfcc_deltas")
def _():
    B, T, NF, HOP, NM, NC, sr = 8, 32000, 512, 160, 64, 13, 16000
    nfr = 1 + (T - NF) // HOP
    def f(x, mel):  # MFCC: frames by gather, Hann window, power rfft, mel matmul, log, DCT-II (ortho), deltas, delta-deltas
        fr = x[:, jnp.arange(nfr)[:, None] * HOP + jnp.arange(NF)] * jnp.hanning(NF)
        lm = jnp.log(jnp.abs(jnp.fft.rfft(fr, axis=-1)) ** 2 @ mel + 1e-6)
        c = jsp.fft.dct(lm, type=2, norm="ortho", axis=-1)[..., :NC]
        def delta(c):
            p = jnp.pad(c, ((0, 0), (2, 2), (0, 0)), mode="edge")
            return sum(n * (p[:, 2 + n:2 + n + nfr] - p[:, 2 - n:2 - n + nfr]) for n in (1, 2)) / 10
        d = delta(c)
        return jnp.concatenate([c, d, delta(d)], -1)
    hz = 700 * (10 ** (np.linspace(0, 2595 * np.log10(1 + sr / 2 / 700), NM + 2) / 2595) - 1)
    fb = np.fft.rfftfreq(NF, 1 / sr)
    lo, ce, hi = hz[:-2, None], hz[1:-1, None], hz[2:, None]
    mel = np.maximum(0, np.minimum((fb - lo) / (ce - lo), (hi - fb) / (hi - ce))).T.astype(np.float32)
    return f, (f32(B, T, scale=0.1), mel)

@prog("pcen_scan_grad")
def _():
    B, T, M = 16, 400, 128
    def loss(p, E):  # trainable PCEN: per-channel smoother M_t = (1-s) M_t-1 + s E_t by lax.scan, AGC, root compression
        ls, la, ld, lr = p
        s = jax.nn.sigmoid(ls)
        def step(m, e):
            m = (1 - s) * m + s * e
            return m, m
        _, Ms = lax.scan(step, E[:, 0], E.swapaxes(0, 1))
        a, d, r = jnp.exp(la), jnp.exp(ld), jnp.exp(lr)
        y = (E / (1e-6 + Ms.swapaxes(0, 1)) ** a + d) ** r - d ** r
        return jnp.mean((y - 0.5) ** 2)
    c = lambda v: np.full(M, v, np.float32)
    return jax.grad(loss), ((c(-3.7), c(np.log(0.98)), c(np.log(2.0)), c(np.log(0.5))), np.abs(f32(B, T, M)) ** 2)

@prog("yin_pitch")
def _():
    B, N, W, TM, sr, n = 256, 2048, 1024, 512, 16000, 4096
    def f(x):  # YIN: difference function from an FFT cross-correlation and cumsum energies, CMNDF, first dip, parabolic fit
        r = jnp.fft.irfft(jnp.conj(jnp.fft.rfft(x[:, :W], n)) * jnp.fft.rfft(x, n), n)[:, :TM]
        c = jnp.pad(jnp.cumsum(x * x, -1), ((0, 0), (1, 0)))
        e = c[:, W:W + TM] - c[:, :TM]
        d = e[:, :1] + e - 2 * r
        tau = jnp.arange(TM)
        cm = jnp.where(tau == 0, 1.0, d * tau / jnp.maximum(jnp.cumsum(d, -1), 1e-9))
        below = (cm < 0.15) & (tau >= 2)
        t0 = jnp.where(below.any(-1), jnp.argmax(below, -1), jnp.argmin(jnp.where(tau >= 2, cm, jnp.inf), -1))
        inc = jnp.concatenate([cm[:, 1:] >= cm[:, :-1], jnp.ones((B, 1), bool)], 1)
        t0 = jnp.clip(jnp.argmax(inc & (tau >= t0[:, None]), -1), 1, TM - 2)
        g = lambda o: jnp.take_along_axis(cm, (t0 + o)[:, None], 1)[:, 0]
        a, b, cc = g(-1), g(0), g(1)
        den = a - 2 * b + cc
        return sr / (t0 + 0.5 * (a - cc) / jnp.where(jnp.abs(den) > 1e-9, den, 1.0)), b
    t = np.arange(N) / sr; f0 = unif(80, 400, B, 1)
    return f, ((np.sin(2 * np.pi * f0 * t) + 0.5 * np.sin(4 * np.pi * f0 * t) + f32(B, N, scale=0.1)).astype(np.float32),)

@prog("polyphase_resample")
def _():
    B, T, L, M, K = 2, 24000, 2, 3, 121
    def f(x, h):  # 48 kHz -> 32 kHz: zero-stuffing by lhs_dilation, Kaiser-windowed sinc low-pass, stride-3 decimation, one conv
        y = lax.conv_general_dilated(x[:, None], h[None, None], (M,), [(K // 2, K // 2)], lhs_dilation=(L,),
                                     dimension_numbers=("NCH", "OIH", "NCH"))
        return L * y[:, 0]
    n = np.arange(K) - K // 2
    return f, (f32(B, T), (np.sinc(n / M) / M * np.kaiser(K, 8.0)).astype(np.float32))

@prog("dwt_db4_denoise")
def _():
    B, N, LV = 32, 8192, 5
    h = np.array([-0.010597401784997278, 0.032883011666982945, 0.030841381835986965, -0.18703481171888114,
                  -0.02798376941698385, 0.6308807679295904, 0.7148465705525415, 0.23037781330885523], np.float32)
    K = len(h)
    def cv(a, w, s): return lax.conv_general_dilated(a[:, None], w[None, None], (s,), "VALID", dimension_numbers=("NCH", "OIH", "NCH"))[:, 0]
    def f(x, lo, hi):  # 5-level periodized db4 DWT by stride-2 convs on wrap-padded signals, soft thresholds, inverse
        a, ds = x, []
        for _ in range(LV):
            ap = jnp.concatenate([a, a[:, :K - 2]], 1)
            a, d = cv(ap, lo, 2), cv(ap, hi, 2)
            thr = 1.25 * jnp.mean(jnp.abs(d), -1, keepdims=True) * np.sqrt(2 * np.log(N))
            ds.append(jnp.sign(d) * jnp.maximum(jnp.abs(d) - thr, 0))
        for d in ds[::-1]:
            n = 2 * a.shape[1]
            up = lambda c: jnp.stack([c, jnp.zeros_like(c)], -1).reshape(B, n)
            wrap = lambda u: jnp.concatenate([u[:, n - (K - 1):], u], 1)
            a = cv(wrap(up(a)), lo[::-1], 1) + cv(wrap(up(d)), hi[::-1], 1)
        return a
    g = (h[::-1] * (-1.0) ** np.arange(K)).astype(np.float32)
    t = np.linspace(0, 1, N)
    clean = np.sign(np.sin(2 * np.pi * unif(2, 9, B, 1) * t)) * unif(0.5, 2, B, 1)
    return f, ((clean + f32(B, N, scale=0.3)).astype(np.float32), h, g)

@prog("hilbert_envelope")
def _():
    B, N, sr = 32, 16384, 16000
    def f(x):  # analytic signal: complex FFT, negative frequencies zeroed, envelope, jnp.unwrap'ed phase, instantaneous frequency
        hm = np.zeros(N, np.float32); hm[0] = hm[N // 2] = 1; hm[1:N // 2] = 2
        z = jnp.fft.ifft(jnp.fft.fft(x) * hm)
        return jnp.abs(z), jnp.diff(jnp.unwrap(jnp.angle(z))) * sr / (2 * np.pi)
    t = np.arange(N) / sr
    x = (1 + 0.5 * np.sin(2 * np.pi * 3 * t)) * np.sin(2 * np.pi * (unif(200, 800, B, 1) + 400 * t) * t)
    return f, (x.astype(np.float32),)


# --- video models --------------------------------------------------------------------------

@prog("timesformer_divided_attn")
def _():
    B, T, S, D, H = 1, 8, 196, 192, 3
    def f(x, p):  # TimeSformer block: temporal attention over 8 frames per patch, then spatial over 196 patches, then MLP
        tq, to, sq, so, w1, w2 = p
        xt = x.transpose(0, 2, 1, 3).reshape(B * S, T, D)
        x = x + mha(ln(xt), tq, to, H).reshape(B, S, T, D).transpose(0, 2, 1, 3)
        x = x + mha(ln(x.reshape(B * T, S, D)), sq, so, H).reshape(B, T, S, D)
        return x + jax.nn.gelu(ln(x) @ w1) @ w2
    s = D ** -0.5
    p = (f32(D, 3 * D, scale=s), f32(D, D, scale=s), f32(D, 3 * D, scale=s), f32(D, D, scale=s), f32(D, 4 * D, scale=s), f32(4 * D, D, scale=s / 2))
    return f, (f32(B, T, S, D), p)

@prog("tsm_conv_grad")
def _():
    N, T, C, H = 1, 8, 64, 20
    def loss(w, x):  # temporal shift module: 1/8 of channels shifted forward, 1/8 backward in time, then 3x3 NCHW convs
        x5 = x.reshape(N, T, C, H, H); fo = C // 8
        z = jnp.zeros_like(x5[:, :1, :fo])
        sh = jnp.concatenate([jnp.concatenate([x5[:, 1:, :fo], z], 1), jnp.concatenate([z, x5[:, :-1, fo:2 * fo]], 1),
                              x5[:, :, 2 * fo:]], 2)
        y = conv(jax.nn.relu(conv(sh.reshape(N * T, C, H, H), w[0])), w[1])
        return jnp.mean(jax.nn.relu(y + x) ** 2)
    return jax.grad(loss, argnums=(0, 1)), ((f32(C, C, 3, 3, scale=0.04), f32(C, C, 3, 3, scale=0.04)), f32(N * T, C, H, H))

@prog("r2plus1d_ncdhw_grad")
def _():
    N, C, T, H, Mid = 1, 24, 8, 20, 48
    dn = ("NCDHW", "OIDHW", "NCDHW")
    def loss(p, x):  # R(2+1)D: (1x3x3 spatial conv, ReLU, 3x1x1 temporal conv) twice in NCDHW, residual, ReLU
        y = x
        for ws, wt in p:
            y = conv(jax.nn.relu(conv(y, ws, (1, 1, 1), dn=dn)), wt, (1, 1, 1), dn=dn)
        return jnp.mean(jax.nn.relu(y + x) ** 2)
    p = [(f32(Mid, C, 1, 3, 3, scale=(9 * C) ** -0.5), f32(C, Mid, 3, 1, 1, scale=(3 * Mid) ** -0.5)) for _ in range(2)]
    return jax.grad(loss), (p, f32(N, C, T, H, H))


# --- classical vision ----------------------------------------------------------------------

@prog("laplacian_pyramid_blend")
def _():
    B, C, H, LV = 1, 3, 128, 5
    k1 = np.array([1, 4, 6, 4, 1], np.float32) / 16
    gk = np.tile(np.outer(k1, k1), (C, 1, 1, 1))
    def down(x): return conv(x, gk, (2, 2), [(2, 2), (2, 2)], feature_group_count=C)
    def up(x): return conv(x, 4 * gk, (1, 1), [(2, 3), (2, 3)], lhs_dilation=(2, 2), feature_group_count=C)
    def gauss(x):
        gs = [x]
        for _ in range(LV - 1): gs.append(down(gs[-1]))
        return gs
    def f(a, b, m):  # Burt-Adelson blending: Gaussian / Laplacian pyramids (depthwise 5x5 stride 2, lhs-dilated up), collapse
        lap = lambda gs: [g0 - up(g1) for g0, g1 in zip(gs[:-1], gs[1:])] + [gs[-1]]
        bl = [w * x + (1 - w) * y for w, x, y in zip(gauss(m), lap(gauss(a)), lap(gauss(b)))]
        out = bl[-1]
        for l in bl[-2::-1]: out = l + up(out)
        return out
    m = np.broadcast_to((np.arange(H) < H // 2).astype(np.float32), (B, C, H, H)).copy()
    return f, (smooth_images(B * C, H).reshape(B, C, H, H), smooth_images(B * C, H, 2.0).reshape(B, C, H, H), m)

@prog("canny_edges")
def _():
    B, H = 2, 256
    g1 = np.exp(-0.5 * (np.arange(5) - 2.0) ** 2 / 1.4 ** 2); gk = np.outer(g1, g1) / g1.sum() ** 2
    def f(img):  # Canny: 5x5 Gaussian, Sobel, NMS along 4 quantized directions, double threshold, hysteresis while_loop
        x = conv(img[:, None], gk[None, None].astype(np.float32))
        g = conv(x, np.stack([SOBEL, SOBEL.T])[:, None])
        gx, gy = g[:, 0], g[:, 1]
        mag = jnp.hypot(gx, gy)
        q = jnp.round(jnp.arctan2(gy, gx) / (np.pi / 4)).astype(jnp.int32) % 4
        p = jnp.pad(mag, ((0, 0), (1, 1), (1, 1)))
        sh = lambda dy, dx: p[:, 1 + dy:1 + dy + H, 1 + dx:1 + dx + H]
        offs = [(0, 1), (1, 1), (1, 0), (1, -1)]
        n1 = jnp.select([q == i for i in range(4)], [sh(dy, dx) for dy, dx in offs])
        n2 = jnp.select([q == i for i in range(4)], [sh(-dy, -dx) for dy, dx in offs])
        nms = jnp.where((mag >= n1) & (mag >= n2), mag, 0.0)
        hi = 0.3 * nms.max((1, 2), keepdims=True)
        weak = nms > 0.4 * hi
        def body(c):
            e = jnp.where(weak, lax.reduce_window(c[0], 0.0, lax.max, (1, 3, 3), (1, 1, 1), "SAME"), 0.0)
            return e, jnp.any(e != c[0])
        return lax.while_loop(lambda c: c[1], body, ((nms > hi).astype(jnp.float32), jnp.array(True)))[0]
    img = (smooth_images(B, H, 6.0) > 0.5).astype(np.float32) * 0.8 + smooth_images(B, H, 1.0) * 0.2
    return f, (img + f32(B, H, H, scale=0.02),)

@prog("horn_schunck_flow")
def _():
    B, H, it, al = 1, 256, 80, 0.1
    kx = np.array([[-1, 1], [-1, 1]], np.float32) * 0.25
    avg = np.tile(np.array([[1, 2, 1], [2, 0, 2], [1, 2, 1]], np.float32)[None, None] / 12, (2, 1, 1, 1))
    def f(I1, I2):  # Horn-Schunck optical flow: 2x2x2 finite differences, 100 Jacobi iterations of the averaged (u, v) update
        d = lambda I, k: conv(I[:, None], k[None, None], pad=[(0, 1), (0, 1)])[:, 0]
        Ix = d(I1, kx) + d(I2, kx); Iy = d(I1, kx.T) + d(I2, kx.T); It = d(I2 - I1, np.full((2, 2), 0.25, np.float32))
        den = al ** 2 + Ix ** 2 + Iy ** 2
        def body(_, uv):
            m = conv(uv, avg, feature_group_count=2)
            t = (Ix * m[:, 0] + Iy * m[:, 1] + It) / den
            return jnp.stack([m[:, 0] - Ix * t, m[:, 1] - Iy * t], 1)
        return lax.fori_loop(0, it, body, jnp.zeros((B, 2, H, H)))
    I = smooth_images(B, H + 4, 3.0)
    return f, (I[:, 2:-2, 2:-2].copy(), I[:, 1:-3, 3:-1].copy())

@prog("raft_corr_lookup")
def _():
    B, H, W, D, LV, r = 2, 32, 40, 256, 4, 4
    def f(f1, f2, flow):  # RAFT: all-pairs correlation volume, 4-level avg-pool pyramid, bilinear 9x9 window lookups per level
        corr = jnp.einsum("bhwd,bijd->bhwij", f1, f2).reshape(B * H * W, H, W) / np.sqrt(D)
        n = jnp.arange(B * H * W)[:, None, None]
        yy, xx = jnp.meshgrid(jnp.arange(H), jnp.arange(W), indexing="ij")
        ctr = (jnp.stack([yy, xx], -1)[None] + flow).reshape(-1, 2)
        dl = jnp.arange(-r, r + 1, dtype=jnp.float32)
        out = []
        for l in range(LV):
            h, w = corr.shape[1:]
            py = ctr[:, 0, None, None] / 2 ** l + dl[None, :, None] + 0 * dl[None, None, :]
            px = ctr[:, 1, None, None] / 2 ** l + dl[None, None, :] + 0 * dl[None, :, None]
            y0, x0 = jnp.floor(py), jnp.floor(px)
            wy, wx = py - y0, px - x0
            def at(yi, xi):
                ok = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
                return jnp.where(ok, corr[n, jnp.clip(yi, 0, h - 1).astype(jnp.int32), jnp.clip(xi, 0, w - 1).astype(jnp.int32)], 0.0)
            out.append((at(y0, x0) * (1 - wy) * (1 - wx) + at(y0, x0 + 1) * (1 - wy) * wx
                        + at(y0 + 1, x0) * wy * (1 - wx) + at(y0 + 1, x0 + 1) * wy * wx).reshape(-1, (2 * r + 1) ** 2))
            corr = lax.reduce_window(corr, 0.0, lax.add, (1, 2, 2), (1, 2, 2), "VALID") / 4
        return jnp.concatenate(out, -1).reshape(B, H, W, -1)
    return f, (f32(B, H, W, D), f32(B, H, W, D), f32(B, H, W, 2, scale=3.0))

@prog("hough_lines")
def _():
    B, H, NP, NT, K = 2, 256, 4096, 180, 16
    diag = int(np.ceil(H * np.sqrt(2))); NR = 2 * diag + 1
    def f(img):  # Hough: Sobel magnitude, the 4096 strongest pixels vote over 180 angles by scatter-add, 5x5 NMS, top-16 lines
        g = conv(img[:, None], np.stack([SOBEL, SOBEL.T])[:, None])
        w, idx = lax.top_k(jnp.hypot(g[:, 0], g[:, 1]).reshape(B, -1), NP)
        ys, xs = (idx // H).astype(jnp.float32), (idx % H).astype(jnp.float32)
        th = (jnp.arange(NT) + 0.5) * (np.pi / NT)
        rho = xs[..., None] * jnp.cos(th) + ys[..., None] * jnp.sin(th)
        ri = jnp.clip(jnp.floor(rho).astype(jnp.int32) + diag, 0, NR - 1)
        acc = jnp.zeros((B, NT, NR)).at[jnp.arange(B)[:, None, None], jnp.arange(NT), ri].add(1.0)
        mx = lax.reduce_window(acc, -jnp.inf, lax.max, (1, 5, 5), (1, 1, 1), "SAME")
        v, i = lax.top_k(jnp.where(acc == mx, acc, 0.0).reshape(B, -1), K)
        return v, th[i // NR], i % NR - diag
    img = np.zeros((B, H, H), np.float32)
    for b in range(B):
        for _ in range(8):
            (x0, y0), (x1, y1) = R.integers(0, H, (2, 2)); t = np.linspace(0, 1, 2 * H)
            img[b, np.round(y0 + t * (y1 - y0)).astype(int), np.round(x0 + t * (x1 - x0)).astype(int)] = 1.0
    return f, (img + f32(B, H, H, scale=0.05),)

@prog("ct_filtered_backprojection")
def _():
    B, NA, ND, N = 1, 120, 192, 128
    def f(sino):  # CT FBP: Ram-Lak ramp filter by rfft / irfft, each pixel linearly interpolates its detector bin at 180 angles
        q = jnp.fft.irfft(jnp.fft.rfft(sino, 2 * ND) * (2 * np.abs(np.fft.rfftfreq(2 * ND))).astype(np.float32), 2 * ND)[..., :ND]
        th = np.linspace(0, np.pi, NA, endpoint=False).astype(np.float32)
        c = jnp.arange(N, dtype=jnp.float32) - (N - 1) / 2
        t = c[None, None] * np.cos(th)[:, None, None] + c[None, :, None] * np.sin(th)[:, None, None] + (ND - 1) / 2
        t0 = jnp.clip(jnp.floor(t), 0, ND - 2); w = t - t0; i0 = t0.astype(jnp.int32)
        a = jnp.arange(NA)[:, None, None]
        return jnp.sum(q[:, a, i0] * (1 - w) + q[:, a, i0 + 1] * w, 1) * (np.pi / NA)
    return f, (np.abs(smooth_images(B, ND, 2.0)[:, :NA]) * 10,)

@prog("ransac_homography")
def _():
    NP, NH, thr = 1024, 512, 0.01
    def rows(s, d):
        x, y, u, v = s[..., 0], s[..., 1], d[..., 0], d[..., 1]
        o, z = jnp.ones_like(x), jnp.zeros_like(x)
        return jnp.stack([jnp.stack([-x, -y, -o, z, z, z, u * x, u * y, u], -1),
                          jnp.stack([z, z, z, -x, -y, -o, v * x, v * y, v], -1)], -2)
    def f(src, dst, k):  # RANSAC: 512 random 4-point samples, 8x9 DLT systems by batched SVD, inlier counts, refit by eigh
        idx = jax.random.randint(pkey(k), (NH, 4), 0, NP)
        Hs = jnp.linalg.svd(rows(src[idx], dst[idx]).reshape(NH, 8, 9))[2][:, -1].reshape(NH, 3, 3)
        pr = jnp.einsum("hij,nj->hni", Hs, jnp.concatenate([src, jnp.ones((NP, 1))], -1))
        inl = jnp.sum((pr[..., :2] / pr[..., 2:] - dst) ** 2, -1) < thr ** 2
        cnt = inl.sum(-1)
        w = jnp.repeat(inl[jnp.argmax(cnt)].astype(jnp.float32), 2)[:, None]
        A = rows(src, dst).reshape(2 * NP, 9) * w
        Hf = jnp.linalg.eigh(A.T @ A)[1][:, 0].reshape(3, 3)
        return Hf / Hf[2, 2], cnt
    H0 = np.array([[1.05, 0.1, 0.05], [-0.08, 0.95, -0.1], [0.1, 0.05, 1.0]])
    src = unif(-1, 1, NP, 2); ph = np.c_[src, np.ones(NP)] @ H0.T
    dst = ph[:, :2] / ph[:, 2:] + f32(NP, 2, scale=0.002)
    out = R.uniform(size=NP) < 0.3
    dst[out] = unif(-1, 1, int(out.sum()), 2)
    return f, (src, dst.astype(np.float32), key())


# --- geometric and scientific models ------------------------------------------------------

@prog("egnn_grad")
def _():
    N, E, D, L = 512, 4096, 64, 2
    def loss(p, h, x, src, dst, tgt):  # EGNN: edge MLP on (h_i, h_j, |x_i-x_j|^2), equivariant coordinate and node updates
        deg = jax.ops.segment_sum(jnp.ones(E), src, N)[:, None] + 1
        for pe, px, ph in p:
            rel = x[src] - x[dst]
            m = jax.nn.silu(mlp(pe, jnp.concatenate([h[src], h[dst], jnp.sum(rel * rel, -1, keepdims=True)], -1), jax.nn.silu))
            x = x + jax.ops.segment_sum(rel * mlp(px, m, jax.nn.silu), src, N) / deg
            h = h + mlp(ph, jnp.concatenate([h, jax.ops.segment_sum(m, src, N)], -1), jax.nn.silu)
        return jnp.mean((x - tgt) ** 2) + jnp.mean(h ** 2)
    p = [(mlp_params(2 * D + 1, D, D), mlp_params(D, D, 1, scale=0.1), mlp_params(2 * D, D, D, scale=0.5)) for _ in range(L)]
    src = np.repeat(np.arange(N), E // N).astype(np.int32)
    x = f32(N, 3)
    return jax.grad(loss), (p, f32(N, D), x, src, ints(0, N, E), x + f32(N, 3, scale=0.1))

@prog("random_walks_csr")
def _():
    N, Dg, L = 16384, 16, 40
    def f(indptr, indices, k):  # DeepWalk: a 40-step uniform random walk from every node of a CSR graph, fori_loop + gathers
        def body(i, walks):
            cur = walks[:, i]
            lo = indptr[cur]; deg = indptr[cur + 1] - lo
            u = jax.random.uniform(jax.random.fold_in(pkey(k), i), (N,))
            return walks.at[:, i + 1].set(indices[lo + jnp.minimum((u * deg).astype(jnp.int32), deg - 1)])
        return lax.fori_loop(0, L, body, jnp.zeros((N, L + 1), jnp.int32).at[:, 0].set(jnp.arange(N)))
    deg = R.integers(1, 2 * Dg, N)
    indptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int32)
    return f, (indptr, ints(0, N, int(indptr[-1])), key())

@prog("af2_triangle_update")
def _():
    N, C, H = 96, 32, 4
    def tri_mul(z, mask, p, eq):
        pa, pag, pb, pbg, pg, po = p
        zn = ln(z)
        a = jax.nn.sigmoid(zn @ pag) * (zn @ pa) * mask[..., None]
        b = jax.nn.sigmoid(zn @ pbg) * (zn @ pb) * mask[..., None]
        return z + jax.nn.sigmoid(zn @ pg) * (ln(jnp.einsum(eq, a, b)) @ po)
    def f(z, mask, po, pi, pt):  # AlphaFold2 pair stack: triangle multiplications (outgoing, incoming), triangle attention
        z = tri_mul(z, mask, po, "ikc,jkc->ijc")
        z = tri_mul(z, mask, pi, "kic,kjc->ijc")
        wq, wk, wv, wb, wg, wo = pt
        zn = ln(z)
        q, k, v = [(zn @ w_).reshape(N, N, H, C // H) for w_ in (wq, wk, wv)]
        lg = (jnp.einsum("ijhd,ikhd->ihjk", q, k) / np.sqrt(C // H) + (zn @ wb).transpose(2, 0, 1)[None]
              + (1e9 * (mask - 1))[:, None, None, :])
        o = jnp.einsum("ihjk,ikhd->ijhd", jax.nn.softmax(lg, -1), v).reshape(N, N, C)
        return z + (jax.nn.sigmoid(zn @ wg) * o) @ wo
    w = lambda o=C: f32(C, o, scale=C ** -0.5)
    mask = np.ones((N, N), np.float32); mask[:, 84:] = 0; mask[84:] = 0
    return f, (f32(N, N, C), mask, tuple(w() for _ in range(6)), tuple(w() for _ in range(6)), (w(), w(), w(), w(H), w(), w()))

@prog("pointnet2_ball_query")
def _():
    B, N, S, K, r, Cf = 1, 2048, 256, 32, 0.2, 64
    def f(xyz, feat, cidx, p):  # PointNet++ set abstraction: ball query (first 32 in radius by top_k), grouping, MLP, max-pool
        b = jnp.arange(B)[:, None]
        cen = xyz[b, cidx]
        d2 = jnp.sum(cen ** 2, -1)[..., None] + jnp.sum(xyz ** 2, -1)[:, None] - 2 * jnp.einsum("bsc,bnc->bsn", cen, xyz)
        idx = -lax.top_k(-jnp.where(d2 < r * r, jnp.arange(N), N), K)[0]
        idx = jnp.where(idx == N, idx[..., :1], idx)
        bb = b[..., None]
        g = jnp.concatenate([(xyz[bb, idx] - cen[:, :, None]) / r, feat[bb, idx]], -1)
        return cen, jnp.max(jax.nn.relu(mlp(p, g, jax.nn.relu)), 2)
    return f, (unif(0, 1, B, N, 3), f32(B, N, Cf), ints(0, N, B, S), mlp_params(3 + Cf, 64, 64, 128))

@prog("particle_mesh_gravity")
def _():
    Np, G = 65536, 64
    k = 2 * np.pi * np.fft.fftfreq(G); kz = 2 * np.pi * np.fft.rfftfreq(G)
    K3 = np.stack(np.meshgrid(k, k, kz, indexing="ij")).astype(np.float32)
    k2 = (K3 ** 2).sum(0); k2[0, 0, 0] = 1.0
    def f(pos, m):  # particle-mesh gravity: CIC deposit by 8 scatter-adds, Poisson solve by rfftn, spectral gradient, CIC gather
        g = pos * G; i0 = jnp.floor(g); w = g - i0; i0 = i0.astype(jnp.int32)
        cs = [(np.array(c), jnp.prod(jnp.where(np.array(c, bool), w, 1 - w), -1)) for c in itertools.product((0, 1), repeat=3)]
        rho = jnp.zeros((G, G, G))
        for c, wt in cs:
            ix = (i0 + c) % G
            rho = rho.at[ix[:, 0], ix[:, 1], ix[:, 2]].add(m * wt)
        phik = -jnp.fft.rfftn(rho - rho.mean()) / k2
        F = jnp.stack([-jnp.fft.irfftn(1j * K3[i] * phik, (G, G, G)) for i in range(3)], -1)
        return sum(F[(i0 + c)[:, 0] % G, (i0 + c)[:, 1] % G, (i0 + c)[:, 2] % G] * wt[:, None] for c, wt in cs)
    return f, (np.mod(0.5 + f32(Np, 3, scale=0.15), 1.0).astype(np.float32), unif(0.5, 1.5, Np))

@prog("lenia_fft")
def _():
    B, H, Rk, steps = 4, 256, 13, 10
    def f(A, K):  # Lenia: ring kernel convolution by rfft2 / irfft2, Gaussian growth, 10 clipped Euler steps in fori_loop
        Kf = jnp.fft.rfft2(K)
        def body(_, A):
            U = jnp.fft.irfft2(jnp.fft.rfft2(A) * Kf, s=(H, H))
            return jnp.clip(A + 0.1 * (2 * jnp.exp(-(U - 0.15) ** 2 / (2 * 0.015 ** 2)) - 1), 0, 1)
        return lax.fori_loop(0, steps, body, A)
    d = np.fft.fftfreq(H, 1 / H)
    rr = np.sqrt(d[:, None] ** 2 + d[None] ** 2) / Rk
    K = np.where(rr < 1, np.exp(4 - 1 / np.maximum(4 * rr * (1 - rr), 1e-9)), 0)
    return f, (smooth_images(B, H, 3.0), (K / K.sum()).astype(np.float32))


# --- statistics and numerics ---------------------------------------------------------------

@prog("gp_ard_mll_grad")
def _():
    N, D = 512, 8
    def nll(p, X, y):  # exact GP: ARD RBF kernel, Cholesky, negative log marginal likelihood, value and hyperparameter gradient
        lls, lsf, lsn = p
        Z = X / jnp.exp(lls); sq = jnp.sum(Z * Z, -1)
        K = (jnp.exp(2 * lsf) * jnp.exp(-0.5 * jnp.maximum(sq[:, None] + sq[None] - 2 * Z @ Z.T, 0))
             + (jnp.exp(2 * lsn) + 1e-4) * jnp.eye(N))
        L = jnp.linalg.cholesky(K)
        a = jsp.linalg.cho_solve((L, True), y)
        return 0.5 * y @ a + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * N * np.log(2 * np.pi)
    X = f32(N, D)
    y = (np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + f32(N, scale=0.1)).astype(np.float32)
    return jax.value_and_grad(nll), ((np.zeros(D, np.float32), np.float32(0.0), np.float32(-1.0)), X, y)

@prog("hmm_baum_welch")
def _():
    Bn, T, S, V = 32, 500, 32, 64
    def f(lA, lB, lpi, obs):  # Baum-Welch EM step: scaled forward / backward scans, posteriors, expected counts, new A, B, pi
        A, Bm, pi = jax.nn.softmax(lA, -1), jax.nn.softmax(lB, -1), jax.nn.softmax(lpi)
        em = Bm.T[obs.T]
        def fwd(a, e):
            a = (a @ A) * e; c = a.sum(-1, keepdims=True)
            return a / c, (a / c, c)
        a0 = pi * em[0]; c0 = a0.sum(-1, keepdims=True); a0 = a0 / c0
        _, (al, cs) = lax.scan(fwd, a0, em[1:])
        al = jnp.concatenate([a0[None], al]); cs = jnp.concatenate([c0[None], cs])
        def bwd(b, x):
            b = ((b * x[0]) @ A.T) / x[1]
            return b, b
        _, be = lax.scan(bwd, jnp.ones((Bn, S)), (em[1:], cs[1:]), reverse=True)
        be = jnp.concatenate([be, jnp.ones((1, Bn, S))])
        gam = al * be
        xi = jnp.einsum("tbi,tbj->ij", al[:-1], em[1:] * be[1:] / cs[1:]) * A
        nB = jnp.einsum("tbs,tbv->sv", gam, jax.nn.one_hot(obs.T, V))
        return xi / xi.sum(-1, keepdims=True), nB / nB.sum(-1, keepdims=True), gam[0].mean(0), jnp.sum(jnp.log(cs))
    return f, (f32(S, S), f32(S, V), f32(S), ints(0, V, Bn, T))

@prog("tsne_gradient")
def _():
    N, D, perp, steps = 768, 50, 30.0, 10
    def f(X, Y):  # t-SNE: per-point bandwidths by 40 bisection steps on log beta (all rows), symmetric P, 10 gradient steps
        sq = jnp.sum(X * X, -1); D2 = jnp.maximum(sq[:, None] + sq[None] - 2 * X @ X.T, 0)
        off = 1 - jnp.eye(N)
        def cond_p(beta):
            Pm = jnp.exp(-(D2 - jnp.min(D2 + 1e9 * (1 - off), -1, keepdims=True)) * beta[:, None]) * off
            s = Pm.sum(-1)
            return Pm / s[:, None], jnp.log(s) + beta * jnp.sum(D2 * Pm, -1) / s - beta * jnp.min(D2 + 1e9 * (1 - off), -1)
        def bis(_, c):
            lo, hi = c; mid = (lo + hi) / 2
            big = cond_p(jnp.exp(mid))[1] > np.log(perp)
            return jnp.where(big, mid, lo), jnp.where(big, hi, mid)
        lo, hi = lax.fori_loop(0, 40, bis, (jnp.full(N, -12.0), jnp.full(N, 4.0)))
        Pc = cond_p(jnp.exp((lo + hi) / 2))[0]
        Pm = (Pc + Pc.T) / (2 * N)
        def step(i, Y):
            sy = jnp.sum(Y * Y, -1)
            num = off / (1 + sy[:, None] + sy[None] - 2 * Y @ Y.T)
            G = (jnp.where(i < 5, 12.0, 1.0) * Pm - num / num.sum()) * num
            return Y - 200.0 * 4 * (G.sum(1)[:, None] * Y - G @ Y)
        return lax.fori_loop(0, steps, step, Y)
    return f, (f32(N, D), f32(N, 2, scale=1e-2))

@prog("fista_lasso")
def _():
    M, N, B, it = 256, 1024, 8, 40
    def f(A, Y, lam):  # FISTA lasso for 32 signals: Lipschitz constant by 30 power iterations, 100 accelerated prox-grad steps
        def pw(_, v):
            w = A.T @ (A @ v)
            return w / jnp.linalg.norm(w)
        v = lax.fori_loop(0, 30, pw, jnp.ones(N))
        L = jnp.linalg.norm(A.T @ (A @ v))
        def body(_, c):
            x, z, t = c
            u = z - A.T @ (A @ z - Y) / L
            xn = jnp.sign(u) * jnp.maximum(jnp.abs(u) - lam / L, 0)
            tn = (1 + jnp.sqrt(1 + 4 * t * t)) / 2
            return xn, xn + (t - 1) / tn * (xn - x), tn
        return lax.fori_loop(0, it, body, (jnp.zeros((N, B)), jnp.zeros((N, B)), jnp.float32(1.0)))[0]
    A = f32(M, N, scale=M ** -0.5)
    Xs = f32(N, B) * (R.uniform(size=(N, B)) < 0.02)
    return f, (A, (A @ Xs + f32(M, B, scale=0.01)).astype(np.float32), np.float32(0.05))

@prog("longstaff_schwartz")
def _():
    Pn, T = 8192, 50
    def f(k, S0, K, r, sig):  # American put (Longstaff-Schwartz): GBM paths, backward scan of Hermite regressions on ITM paths
        dt = 1.0 / T
        Z = jax.random.normal(pkey(k), (T, Pn))
        S = S0 * jnp.exp(jnp.cumsum((r - 0.5 * sig ** 2) * dt + sig * np.sqrt(dt) * Z, 0))
        disc = jnp.exp(-r * dt)
        def step(cf, s):
            pay = jnp.maximum(K - s, 0); itm = (pay > 0).astype(jnp.float32)
            x = s / K; m = jnp.sum(itm * x) / jnp.sum(itm)
            z = (x - m) / (jnp.sqrt(jnp.sum(itm * (x - m) ** 2) / jnp.sum(itm)) + 1e-6)
            X = jnp.stack([jnp.ones_like(z), z, z * z - 1, z ** 3 - 3 * z], -1)
            Xw = X * itm[:, None]
            beta = jnp.linalg.solve(Xw.T @ X + 1e-6 * jnp.eye(4), Xw.T @ (cf * disc))
            ex = (pay > X @ beta) & (pay > 0)
            return jnp.where(ex, pay, cf * disc), None
        cf = lax.scan(step, jnp.maximum(K - S[-1], 0), S[:-1], reverse=True)[0] * disc
        return jnp.mean(cf), jnp.std(cf) / np.sqrt(Pn)
    return f, (key(), np.float32(36.0), np.float32(40.0), np.float32(0.06), np.float32(0.2))


# --- dynamic programs ----------------------------------------------------------------------

@prog("smith_waterman_affine")
def _():
    B, L, go, ge = 32, 256, -11.0, -1.0
    def f(a, b, S):  # Smith-Waterman with affine gaps (Gotoh), batched, wavefront over anti-diagonals by lax.scan
        i = jnp.arange(L + 1)
        sh = lambda v, fill: jnp.concatenate([jnp.full_like(v[:, :1], fill), v[:, :-1]], 1)
        ai = a[:, jnp.clip(i - 1, 0, L - 1)]
        def step(c, d):
            H2, H1, E1, F1, best = c
            j = d - i
            ok = (i >= 1) & (j >= 1) & (j <= L)
            s = S[ai, b[:, jnp.clip(j - 1, 0, L - 1)]]
            E = jnp.where(ok, jnp.maximum(E1 + ge, H1 + go), -1e9)
            F = jnp.where(ok, jnp.maximum(sh(F1, -1e9) + ge, sh(H1, 0.0) + go), -1e9)
            H = jnp.where(ok, jnp.maximum(jnp.maximum(sh(H2, 0.0) + s, 0.0), jnp.maximum(E, F)), 0.0)
            return (H1, H, E, F, jnp.maximum(best, H.max(-1))), None
        z, n = jnp.zeros((B, L + 1)), jnp.full((B, L + 1), -1e9)
        return lax.scan(step, (z, z, n, n, jnp.zeros(B)), jnp.arange(2, 2 * L + 1))[0][4]
    S = ints(-4, 5, 21, 21).astype(np.float32); S = np.triu(S) + np.triu(S, 1).T + np.diag(ints(4, 12, 21))
    a = ints(0, 21, B, L)
    b = np.where(R.uniform(size=(B, L)) < 0.3, ints(0, 21, B, L), np.roll(a, 7, 1)).astype(np.int32)
    return f, (a, b, S.astype(np.float32))

@prog("knapsack_dp")
def _():
    B, NI, CAP = 32, 200, 1000
    def f(w, v):  # 0/1 knapsack DP over 200 items by lax.scan (shifted gather per instance), backtracking by a reverse scan
        c = jnp.arange(CAP + 1)
        def step(best, x):
            wi, vi = x
            src = c[None] - wi[:, None]
            cand = jnp.where(src >= 0, jnp.take_along_axis(best, jnp.maximum(src, 0), 1) + vi[:, None], -1)
            return jnp.maximum(best, cand), cand > best
        best, takes = lax.scan(step, jnp.zeros((B, CAP + 1), jnp.int32), (w.T, v.T))
        def back(cap, x):
            t = jnp.take_along_axis(x[0], cap[:, None], 1)[:, 0]
            return cap - jnp.where(t, x[1], 0), t
        return best[:, -1], lax.scan(back, jnp.full((B,), CAP), (takes, w.T), reverse=True)[1].T
    return f, (ints(5, 60, B, NI), ints(1, 100, B, NI))


# --- models ----------------------------------------------------------------------------------

@prog("dcnv2_cross_grad")
def _():
    B, NF, V, E, ND = 512, 26, 4000, 16, 13
    D0 = ND + NF * E
    def loss(p, dense, sparse, y):  # DCN-v2: 26 embedding gathers + dense features, 3 cross layers beside a deep MLP, BCE
        emb, cross, deep, head = p
        x0 = jnp.concatenate([dense, emb[sparse + jnp.arange(NF) * V].reshape(B, -1)], -1)
        x = x0
        for W, b in cross: x = x0 * (x @ W + b) + x
        z = (jnp.concatenate([x, jax.nn.relu(mlp(deep, x0, jax.nn.relu))], -1) @ head)[:, 0]
        return jnp.mean(jax.nn.softplus(z) - y * z)
    p = (f32(NF * V, E, scale=0.05), mlp_params(D0, D0, D0, D0, scale=0.3), mlp_params(D0, 512, 256),
         f32(D0 + 256, 1, scale=0.02))
    return jax.grad(loss), (p, f32(B, ND), ints(0, V, B, NF), (R.uniform(size=B) < 0.25).astype(np.float32))

@prog("tome_merge")
def _():
    B, N, D, r, L = 4, 197, 192, 16, 4
    def f(x, p):  # ToMe: MLP blocks, each followed by bipartite soft matching and size-weighted merging of 16 token pairs
        size = jnp.ones((B, N, 1)); bi = jnp.arange(B)[:, None]
        for (w1, w2), wk in p:
            x = x + jax.nn.gelu(ln(x) @ w1) @ w2
            k = x @ wk; k = k / jnp.linalg.norm(k, axis=-1, keepdims=True)
            sc = (k[:, ::2] @ k[:, 1::2].swapaxes(1, 2)).at[:, 0].set(-jnp.inf)
            order = jnp.argsort(-sc.max(-1), -1)
            unm, srci = order[:, r:], order[:, :r]
            dsti = jnp.take_along_axis(sc.argmax(-1), srci, 1)
            xs = x * size
            xa, xb, sa, sb = xs[:, ::2], xs[:, 1::2], size[:, ::2], size[:, 1::2]
            xb = xb.at[bi, dsti].add(xa[bi, srci]); sb = sb.at[bi, dsti].add(sa[bi, srci])
            size = jnp.concatenate([sa[bi, unm], sb], 1)
            x = jnp.concatenate([xa[bi, unm], xb], 1) / size
        return x, size
    p = [((f32(D, 4 * D, scale=D ** -0.5), f32(4 * D, D, scale=(4 * D) ** -0.5 / 2)), f32(D, 64, scale=D ** -0.5)) for _ in range(L)]
    return f, (f32(B, N, D), p)

@prog("reformer_lsh_attention")
def _():
    B, H, L, dh, nb, cs = 1, 2, 4096, 64, 64, 64
    def f(qk, v, Rr):  # Reformer LSH attention: rotation hashing, sort by (bucket, pos), chunked attention to own + previous chunk
        rot = jnp.einsum("bhld,dr->bhlr", qk, Rr)
        bk = jnp.argmax(jnp.concatenate([rot, -rot], -1), -1)
        perm = jnp.argsort(bk * L + jnp.arange(L), -1)
        g = lambda t: jnp.take_along_axis(t, perm[..., None], 2)
        sq, sv = g(qk), g(v)
        ch = lambda t: t.reshape(B, H, L // cs, cs, *t.shape[3:])
        back = lambda t: jnp.concatenate([t, jnp.roll(t, 1, 2)], 3)
        kc = back(ch(sq / jnp.linalg.norm(sq, axis=-1, keepdims=True)))
        pq = ch(perm); pk = back(pq)
        lg = jnp.einsum("bhnqd,bhnkd->bhnqk", ch(sq), kc) / np.sqrt(dh)
        lg = jnp.where(pq[..., None] == pk[..., None, :], -1e5, lg)
        o = jnp.einsum("bhnqk,bhnkd->bhnqd", jax.nn.softmax(lg, -1), back(ch(sv))).reshape(B, H, L, dh)
        return jnp.take_along_axis(o, jnp.argsort(perm, -1)[..., None], 2)
    return f, (f32(B, H, L, dh), f32(B, H, L, dh), f32(dh, nb // 2))

@prog("pq_adc_search")
def _():
    Q, NB, M, Ks, ds, k = 16, 16384, 16, 256, 8, 100
    def f(q, cb, codes):  # product-quantization ADC: per-query LUTs vs 16 sub-codebooks, uint8 code gather-sum, top-100
        lut = jnp.sum((q.reshape(Q, M, 1, ds) - cb[None]) ** 2, -1)
        dist = jnp.sum(lut[:, jnp.arange(M)[None], codes.astype(jnp.int32)], -1)
        nd, ni = lax.top_k(-dist, k)
        return -nd, ni
    return f, (f32(Q, M * ds), f32(M, Ks, ds), ints(0, Ks, NB, M, dt=np.uint8))

@prog("snn_lif_surrogate_grad")
def _():
    T, B, Din, Hd, O = 50, 32, 700, 256, 20
    @jax.custom_vjp
    def spike(v): return (v > 0).astype(v.dtype)
    spike.defvjp(lambda v: (spike(v), v), lambda v, g: (g / (1 + 10 * jnp.abs(v)) ** 2,))
    def loss(p, x, y):  # spiking RNN: LIF scan with reset by subtraction, custom_vjp fast-sigmoid surrogate, leaky readout, CE
        W1, Wr, W2 = p
        def step(c, it):
            v, s, u = c
            v = 0.95 * v + it + s @ Wr - s
            s = spike(v - 1.0)
            u = 0.9 * u + s @ W2
            return (v, s, u), u
        _, us = lax.scan(step, (jnp.zeros((B, Hd)), jnp.zeros((B, Hd)), jnp.zeros((B, O))), x @ W1)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(us.max(0)), y[:, None], 1))
    p = (f32(Din, Hd, scale=0.1), f32(Hd, Hd, scale=0.03), f32(Hd, O, scale=0.1))
    return jax.grad(loss), (p, (R.uniform(size=(T, B, Din)) < 0.05).astype(np.float32), ints(0, O, B))

@prog("pinn_burgers_grad")
def _():
    Nc, N0, nu = 2048, 256, 0.01 / np.pi
    def loss(p, tx, x0, xb):  # Burgers PINN: u_t + u u_x - nu u_xx by nested jax.grad under vmap, initial / boundary terms
        u = lambda t, x: mlp(p, jnp.stack([t, x]), jnp.tanh)[0]
        ut, ux = jax.grad(u, 0), jax.grad(u, 1)
        uxx = jax.grad(ux, 1)
        res = jax.vmap(lambda t, x: ut(t, x) + u(t, x) * ux(t, x) - nu * uxx(t, x))(tx[:, 0], tx[:, 1])
        ui = jax.vmap(lambda x: u(0.0, x))(x0)
        return jnp.mean(res ** 2) + jnp.mean((ui + jnp.sin(np.pi * x0)) ** 2) + jnp.mean(jax.vmap(u)(xb[:, 0], xb[:, 1]) ** 2)
    tx = np.stack([unif(0, 1, Nc), unif(-1, 1, Nc)], 1)
    xb = np.stack([unif(0, 1, N0), np.sign(f32(N0))], 1).astype(np.float32)
    return jax.grad(loss), (mlp_params(2, 64, 64, 64, 1), tx, unif(-1, 1, N0), xb)

@prog("lru_complex_scan_grad")
def _():
    B, L, Hd, N = 2, 512, 128, 128
    def loss(p, x, y):  # LRU: complex diagonal recurrence by lax.associative_scan over time in complex64, Re(C h) + D x
        nu, th, Br, Bi, Cr, Ci, Dd = p
        lam = jnp.exp(-jnp.exp(nu) + 1j * jnp.exp(th))
        Bu = (x @ (Br + 1j * Bi)) * jnp.sqrt(1 - jnp.abs(lam) ** 2)
        _, h = lax.associative_scan(lambda a, b: (a[0] * b[0], b[0] * a[1] + b[1]), (jnp.broadcast_to(lam, Bu.shape), Bu), axis=1)
        return jnp.mean(((h @ (Cr + 1j * Ci)).real + x * Dd - y) ** 2)
    s = lambda n: f32(n, n, scale=(2 * n) ** -0.5)
    p = (np.log(-np.log(unif(0.9, 0.999, N))), np.log(unif(0.001, 0.3, N)), s(Hd), s(Hd), s(N), s(N), f32(Hd))
    return jax.grad(loss), (p, f32(B, L, Hd), f32(B, L, Hd))

@prog("dpsgd_per_example_cnn")
def _():
    B = 64
    dn = ("NHWC", "HWIO", "NHWC")
    def net(p, x):
        (w1, b1), (w2, b2), (w3, b3) = p
        h = jax.nn.relu(conv(x[None], w1, (2, 2), dn=dn) + b1)
        h = jax.nn.relu(conv(h, w2, (2, 2), dn=dn) + b2)
        return h.reshape(-1) @ w3 + b3
    def f(p, x, y, k):  # DP-SGD: per-example CNN gradients by vmap(grad), per-example clipping over the pytree, Gaussian noise
        g = jax.vmap(jax.grad(lambda p, x, y: -jax.nn.log_softmax(net(p, x))[y]), (None, 0, 0))(p, x, y)
        gl, tdef = jax.tree_util.tree_flatten(g)
        sc = jnp.minimum(1.0, 1.0 / (jnp.sqrt(sum(jnp.sum(t.reshape(B, -1) ** 2, 1) for t in gl)) + 1e-6))
        ks = jax.random.split(pkey(k), len(gl))
        new = [w - 0.1 * (jnp.tensordot(sc, t, 1) + 1.1 * jax.random.normal(kk, w.shape)) / B
               for w, t, kk in zip(jax.tree_util.tree_leaves(p), gl, ks)]
        return tdef.unflatten(new)
    p = [(f32(5, 5, 1, 32, scale=0.2), np.zeros(32, np.float32)), (f32(3, 3, 32, 64, scale=0.06), np.zeros(64, np.float32)),
         (f32(7 * 7 * 64, 10, scale=0.02), np.zeros(10, np.float32))]
    return f, (p, unif(0, 1, B, 28, 28, 1), ints(0, 10, B), key())


# --- integer and data work -------------------------------------------------------------------

@prog("bpe_merge_rounds")
def _():
    N, V, RN = 1 << 17, 512, 8
    VT = V + RN
    def f(tok):  # BPE training: 8 rounds of pair counts by bincount, best pair, non-overlapping replace, cumsum compaction
        def body(rd, t):
            a, b = t[:-1], t[1:]
            ok = (a >= 0) & (b >= 0)
            best = jnp.argmax(jnp.bincount(jnp.where(ok, a * VT + b, 0), weights=ok.astype(jnp.int32), length=VT * VT))
            m = (a == best // VT) & (b == best % VT)
            m = m & ~jnp.concatenate([jnp.zeros(1, bool), m[:-1]])
            t = jnp.where(jnp.concatenate([m, jnp.zeros(1, bool)]), V + rd, t)
            keep = ~jnp.concatenate([jnp.zeros(1, bool), m]) & (t >= 0)
            return jnp.full(N, -1, jnp.int32).at[jnp.where(keep, jnp.cumsum(keep) - 1, N)].set(t, mode="drop")
        return lax.fori_loop(0, RN, body, tok)
    pr = 1.0 / np.arange(1, V + 1); pr /= pr.sum()
    return f, (R.choice(V, N, p=pr).astype(np.int32),)

@prog("utf8_decode")
def _():
    N = 1 << 19
    def f(b):  # UTF-8 decoding: lengths from the lead byte's leading ones (clz), code points by shifts / masks, compaction
        x = b.astype(jnp.uint32)
        n1 = lax.clz(~x << 24)
        ln_ = jnp.where(n1 == 0, 1, n1)
        lead = n1 != 1
        c1, c2, c3 = [jnp.concatenate([x[k:], jnp.zeros(k, jnp.uint32)]) for k in (1, 2, 3)]
        ct = lambda c: (c & 0xC0) == 0x80
        cases = [ln_ == k for k in (1, 2, 3, 4)]
        cp = jnp.select(cases, [x, ((x & 0x1F) << 6) | (c1 & 0x3F), ((x & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (c2 & 0x3F),
                                ((x & 0x07) << 18) | ((c1 & 0x3F) << 12) | ((c2 & 0x3F) << 6) | (c3 & 0x3F)], 0)
        ok = lead & jnp.select(cases, [True, ct(c1), ct(c1) & ct(c2), ct(c1) & ct(c2) & ct(c3)], False)
        cp = jnp.where(ok, cp, 0xFFFD)
        out = jnp.zeros(N, jnp.uint32).at[jnp.where(lead, jnp.cumsum(lead) - 1, N)].set(cp, mode="drop")
        return out, jnp.sum(lead), jnp.sum(lead & ~ok)
    kind = R.choice(4, 350000, p=[0.6, 0.25, 0.12, 0.03])
    cp = np.select([kind == 0, kind == 1, kind == 2], [R.integers(32, 127, kind.size), R.integers(0x80, 0x800, kind.size),
                   R.integers(0xE000, 0x10000, kind.size)], R.integers(0x10000, 0x110000, kind.size))
    data = np.frombuffer("".join(map(chr, cp)).encode("utf-8")[:N], np.uint8)
    return f, (data.copy(),)

@prog("groupby_aggregate")
def _():
    N, G = 1 << 16, 4096
    def f(k, v, w):  # dataframe group-by: stable argsort by key, group ids by diff + cumsum, sorted segment stats, rank in group
        o = jnp.argsort(k, stable=True)
        ks, vs, ws = k[o], v[o], w[o]
        start = jnp.concatenate([jnp.ones(1, bool), ks[1:] != ks[:-1]])
        gid = jnp.cumsum(start) - 1
        seg = lambda x, op=jax.ops.segment_sum: op(x, gid, G, indices_are_sorted=True)
        cnt = seg(jnp.ones(N)); sw = seg(ws); wm = seg(ws * vs) / jnp.maximum(sw, 1e-9)
        mx = jnp.where(cnt > 0, seg(vs, jax.ops.segment_max), 0.0)
        wvar = seg(ws * (vs - wm[gid]) ** 2) / jnp.maximum(sw, 1e-9)
        rank = jnp.arange(N) - seg(jnp.where(start, jnp.arange(N), 0))[gid]
        return seg(jnp.where(start, ks, 0)), cnt, seg(vs) / jnp.maximum(cnt, 1), mx, wvar, jnp.zeros(N, jnp.int32).at[o].set(rank)
    z = np.minimum(R.zipf(1.3, N), G) - 1
    return f, (R.permutation(G)[z].astype(np.int32), f32(N), unif(0.1, 2, N))


if __name__ == "__main__":
    U.main(P)
