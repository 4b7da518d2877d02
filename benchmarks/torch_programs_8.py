"""An eighth sweep of PyTorch programs through torch.compile(backend="axle"), of kinds
benchmarks/torch_programs.py - torch_programs_7.py do not have: torch.func transforms inside a model
(a physics-informed network's Laplacian by vmap(hessian), a Jacobian penalty by vmap(jacrev) and
vmap(jacfwd), DP-SGD per-sample gradients by vmap(grad) with per-sample clipping), SchNet energies and
forces (autograd.grad with create_graph over pairwise distances), torch.distributions beyond the
Normal (a mixture density network's MixtureSameFamily, Beta / Dirichlet / Categorical log-probs and
entropies: lgamma, digamma), torch.special (i0e, i1e, ndtri, log_ndtr, erfcx, xlogy, xlog1py, entr,
logit, sinc, erfinv, multigammaln), robust statistics (quantile, median, kthvalue, nanmean, cummax),
nn.MultiheadAttention returning per-head weights with kdim / vdim, antialiased bilinear / bicubic and
area resampling, a volumetric spatial transformer (affine_grid + grid_sample on 5-D volumes), an
nn.GRU bidirectional 2-layer feeding an LSTM with proj_size, STFT -> mask -> iSTFT speech
enhancement, a Fourier Neural Operator (rfftn / irfftn, complex weights as view_as_complex), compiled
optimizer steps (torch.compile(opt.step) for foreach Adam after a GradScaler-style unscale and clip;
a whole training step with loss.backward() inside the compiled function), one compiled model called
with two batch sizes (automatic dynamic shapes), forward / pre / full-backward module hooks,
PointNet++ set abstraction (farthest point sampling loop, ball query by sort), PNA aggregators
(scatter_reduce mean / amax / amin, degree scalers by index_add), a DDIM sampler loop, a Set
Transformer (ISAB, PMA with key padding), CRF Viterbi decoding with a backtrack, nn.AdaptiveLogSoftmax-
WithLoss, nn.Embedding(max_norm) renormalizing its weight in place, compact bilinear pooling (count
sketch by index_add, FFT product), rarely used layers (circular / reflect / replicate padding modes,
LocalResponseNorm, LPPool2d, ChannelShuffle, divisor_override, Softshrink / Tanhshrink /
LogSigmoid), ToMe token merging (bipartite matching, scatter_reduce mean), a LLaVA-style
masked_scatter of image features into token embeddings, a FastSpeech length regulator, NeRF's
hierarchical sampling (searchsorted inverse-CDF), and int4 weight-only dequantization (bit unpacking)
in a decode step.

Same harness as torch_programs_7.py (outputs, one training step's gradients and updated buffers
against eager PyTorch with a tolerance of 1e-4 relative to the largest value, integer outputs exactly;
interleaved medians of the training forward alone and of the whole step; the bridge's fallback
warnings, Dynamo's graph breaks; inference-only programs under torch.no_grad(); a closing table and
geometric mean), plus: programs whose forward rewrites parameters in place (embedding max_norm) have
their parameters restored before each call and compared as buffers; programs called first with other
inputs (another batch size: Dynamo's automatic dynamic shapes), with a count of the graphs compiled;
programs of recurrent layers run with torch._dynamo.config.allow_rnn; and function programs (an
optimizer step, a whole training step) compiled as functions on two identical states (eager's and
axle's), stepped twice, their outputs and states (parameters, optimizer moments) compared, then
timed call against call.

Usage: AXLE_NUM_THREADS=1 python benchmarks/torch_programs_8.py [name,name,...]
(about 10 minutes on 2 cores, two of them compiling the unrolled recurrent program)"""
import math
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_programs as T  # sets AXLE_NUM_THREADS / torch threads, registers the backend
from torch_programs import _rel, g
from torch_programs_2 import bn, buffer_snapshot, grads_and_times, ints, sweep, tensor_outputs as _outs, time_pair as _time
from axle.torch.backend import STATS, AxleFallbackWarning

P, EVAL, prog = sweep()
INFER = set()  # checked and timed under torch.no_grad(), no training step
FN = set()  # function programs: make() -> (step, args, state tensors); compiled as a function
TOL = 1e-4  # max relative difference (to the largest |value|) counted as correct in float32
D = torch.distributions


def infer(name):
    """Marks program `name` inference only (eval mode, no_grad)."""
    def deco(f):
        INFER.add(name)
        EVAL.add(name)
        return f
    return deco


def function_program(name):
    """Marks program `name` a function program: its builder returns make(), and make() a fresh
    (step, args, state) each call: step(*args) runs the function (mutating `state`, a list of tensors)."""
    def deco(f):
        FN.add(name)
        return prog(name)(f)
    return deco


def unif(*s, seed=0):
    return torch.rand(*s, generator=torch.Generator().manual_seed(seed))


def mlp(*dims, act=nn.ReLU, last=False):
    layers = []
    for i in range(len(dims) - 1):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2 or last:
            layers.append(act())
    return nn.Sequential(*layers)


# ---------------------------------------------------------------- torch.func and autograd in forward

@prog("pinn_poisson_vmap_hessian_laplacian")
def _():
    from torch.func import hessian, vmap

    class M(nn.Module):  # -lap u = f on the unit square, u = 0 on the boundary
        def __init__(self):
            super().__init__()
            self.net = mlp(2, 64, 64, 64, 1, act=nn.Tanh)
        def u(self, x):
            return self.net(x[None])[0, 0]
        def forward(self, xi, xb):
            lap = vmap(lambda x: torch.diagonal(hessian(self.u)(x)).sum())(xi)
            f = 2 * math.pi ** 2 * torch.sin(math.pi * xi[:, 0]) * torch.sin(math.pi * xi[:, 1])
            return (lap + f).pow(2).mean() + 10 * self.net(xb).pow(2).mean(), lap
    e = unif(64, seed=3)
    xb = torch.cat([torch.stack([e, torch.zeros(64)], 1), torch.stack([e, torch.ones(64)], 1),
                    torch.stack([torch.zeros(64), e], 1), torch.stack([torch.ones(64), e], 1)])
    return M(), (unif(256, 2, seed=1), xb)
@prog("jacobian_penalty_vmap_jacrev_jacfwd")
def _():
    from torch.func import jacfwd, jacrev, vmap

    class M(nn.Module):  # a contractive encoder: the Jacobian's Frobenius norm as a penalty
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(32, 128), nn.Softplus(), nn.Linear(128, 64), nn.Softplus(),
                                     nn.Linear(64, 16))
            self.head = nn.Linear(16, 10)
        def forward(self, x, y):
            z = self.enc(x)
            jr = vmap(jacrev(self.enc))(x)  # [B, 16, 32]
            jf = vmap(jacfwd(self.enc))(x[:32])  # forward mode on part of the batch
            return F.cross_entropy(self.head(z), y) + 1e-2 * jr.pow(2).sum((1, 2)).mean() + 1e-2 * jf.pow(2).mean(), jr
    return M(), (g(128, 32), ints(10, 128, seed=1))
@infer("dpsgd_per_sample_grads_vmap_clip")
@prog("dpsgd_per_sample_grads_vmap_clip")
def _():
    from torch.func import functional_call, grad, vmap

    class M(nn.Module):  # DP-SGD's noisy update: per-sample gradients clipped to C, summed, noised
        def __init__(self, c=1.0, sigma=0.8):
            super().__init__()
            self.c, self.sigma = c, sigma
            self.net = mlp(64, 128, 128, 10)
        def forward(self, x, y, noise):
            params = {k: v.detach() for k, v in self.net.named_parameters()}

            def loss_fn(p, xi, yi):
                return F.cross_entropy(functional_call(self.net, p, (xi[None],)), yi[None])
            grads = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)
            norms = torch.stack([t.flatten(1).norm(dim=1) for t in grads.values()], 1).norm(dim=1)
            factor = (self.c / (norms + 1e-6)).clamp(max=1.0)
            flat = torch.cat([(t * factor.view(-1, *[1] * (t.dim() - 1))).sum(0).flatten() for t in grads.values()])
            return (flat + self.sigma * self.c * noise) / x.shape[0], norms
    m = M()
    n = sum(p.numel() for p in m.parameters())
    return m, (g(128, 64), ints(10, 128, seed=1), g(n))
@prog("schnet_energy_forces_create_graph")
def _():
    class Interaction(nn.Module):  # continuous-filter convolution
        def __init__(self, d, k):
            super().__init__()
            self.filt = nn.Sequential(nn.Linear(k, d), nn.Softplus(), nn.Linear(d, d))
            self.in2f, self.f2out = nn.Linear(d, d, bias=False), nn.Sequential(nn.Linear(d, d), nn.Softplus(),
                                                                               nn.Linear(d, d))
        def forward(self, x, rbf, cut):  # x [B, N, d], rbf [B, N, N, k], cut [B, N, N]
            w = self.filt(rbf) * cut[..., None]
            return x + self.f2out((w * self.in2f(x)[:, None]).sum(2))

    class M(nn.Module):
        def __init__(self, d=64, k=32, rc=5.0):
            super().__init__()
            self.rc = rc
            self.emb = nn.Embedding(10, d)
            self.register_buffer("mu", torch.linspace(0, rc, k))
            self.blocks = nn.ModuleList(Interaction(d, k) for _ in range(3))
            self.out = nn.Sequential(nn.Linear(d, 32), nn.Softplus(), nn.Linear(32, 1))
        def energy(self, z, pos):
            n = pos.shape[1]
            d = ((pos[:, :, None] - pos[:, None]).pow(2).sum(-1) + 1e-8).sqrt()
            rbf = torch.exp(-10.0 * (d[..., None] - self.mu) ** 2)
            cut = 0.5 * (torch.cos(d * math.pi / self.rc) + 1) * (d < self.rc) * (1 - torch.eye(n))
            x = self.emb(z)
            for b in self.blocks:
                x = b(x, rbf, cut)
            return self.out(x).squeeze(-1).sum(1)
        def forward(self, z, pos, e_ref, f_ref):
            with torch.enable_grad():
                pos = pos.detach().requires_grad_(True)
                e = self.energy(z, pos)
                forces = -torch.autograd.grad(e.sum(), pos, create_graph=True)[0]
            return F.mse_loss(e, e_ref) + 10 * F.mse_loss(forces, f_ref), forces
    return M(), (ints(10, 8, 24, seed=1), 2.5 * g(8, 24, 3), g(8), g(8, 24, 3))


# ---------------------------------------------------------------- distributions and special functions

@prog("mdn_mixture_same_family_nll")
def _():
    class M(nn.Module):
        def __init__(self, k=8, d=2):
            super().__init__()
            self.k, self.d = k, d
            self.body = mlp(8, 128, 128, act=nn.Tanh, last=True)
            self.pi, self.mu, self.sig = nn.Linear(128, k), nn.Linear(128, k * d), nn.Linear(128, k * d)
        def forward(self, x, y):
            h = self.body(x)
            b = x.shape[0]
            comp = D.Independent(D.Normal(self.mu(h).view(b, self.k, self.d),
                                          F.softplus(self.sig(h)).view(b, self.k, self.d) + 1e-3), 1)
            gmm = D.MixtureSameFamily(D.Categorical(logits=self.pi(h)), comp)
            return -gmm.log_prob(y).mean(), gmm.mean, gmm.variance
    return M(), (g(512, 8), g(512, 2))
@prog("policy_beta_dirichlet_categorical_entropy")
def _():
    class M(nn.Module):  # actor-critic loss over a hybrid action: Beta, Dirichlet and Categorical heads
        def __init__(self, a=4, k=5, n=6):
            super().__init__()
            self.a = a
            self.trunk = mlp(32, 128, 128, act=nn.Tanh, last=True)
            self.beta, self.dir, self.cat, self.v = nn.Linear(128, 2 * a), nn.Linear(128, k), nn.Linear(128, n), \
                nn.Linear(128, 1)
        def forward(self, obs, a_cont, w, a_disc, adv, ret):
            h = self.trunk(obs)
            c1, c0 = (F.softplus(self.beta(h)) + 1.0).chunk(2, -1)
            beta, dirichlet = D.Beta(c1, c0), D.Dirichlet(F.softplus(self.dir(h)) + 0.1)
            cat = D.Categorical(logits=self.cat(h))
            lp = beta.log_prob(a_cont).sum(-1) + dirichlet.log_prob(w) + cat.log_prob(a_disc)
            ent = beta.entropy().sum(-1) + dirichlet.entropy() + cat.entropy()
            v = self.v(h).squeeze(-1)
            return -(lp * adv).mean() - 0.01 * ent.mean() + 0.5 * (v - ret).pow(2).mean(), lp
    b = 256
    w = unif(b, 5, seed=3) + 0.05
    return M(), (g(b, 32), unif(b, 4, seed=2) * 0.98 + 0.01, w / w.sum(-1, keepdim=True), ints(6, b, seed=4), g(b),
                 g(b) + 1)
@prog("special_functions_von_mises_probit")
def _():
    sp = torch.special

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = mlp(16, 64, 12, act=nn.Tanh)
        def forward(self, x, theta):
            a, b, c, d, e, f, h, k, m, n, o, q = self.net(x).unbind(-1)
            kappa = F.softplus(a) + 0.1
            vm = kappa * (torch.cos(theta - b) - 1) - torch.log(2 * math.pi * sp.i0e(kappa))  # von Mises log-density
            p = torch.sigmoid(c).clamp(1e-4, 1 - 1e-4)
            t1 = sp.ndtri(p) + sp.log_ndtr(d) + sp.logit(p, eps=1e-6) + sp.entr(p)
            s = torch.sigmoid(e)
            t2 = sp.xlogy(p, s) + sp.xlog1py(1 - p, -s) + sp.erfcx(F.softplus(f)) + sp.i1e(kappa)
            t3 = torch.lgamma(F.softplus(h) + 0.5) + torch.digamma(F.softplus(k) + 0.5) + sp.sinc(m)
            t4 = sp.erfinv(0.95 * torch.tanh(n)) + sp.multigammaln(F.softplus(o) + 2.0, 3) + sp.log1p(q.abs())
            return -(vm.mean()) + (t1 + t2 + t3 + t4).pow(2).mean(), torch.stack([vm, t1, t2, t3, t4], -1)
    return M(), (g(512, 16), (unif(512, seed=2) - 0.5) * 2 * math.pi)
@prog("robust_pool_quantile_median_kthvalue_nanmean")
def _():
    class M(nn.Module):  # robust set statistics over per-element features, some elements missing (NaN)
        def __init__(self):
            super().__init__()
            self.f = mlp(16, 64, 32)
            self.head = mlp(32 * 8, 128, 10)
            self.register_buffer("q", torch.tensor([0.1, 0.5, 0.9]))
        def forward(self, x, missing, y):  # x [B, N, 16], missing [B, N]
            h = self.f(x)  # [B, N, 32]
            med = h.median(1).values
            qs = torch.quantile(h, self.q, dim=1).permute(1, 0, 2).flatten(1)  # [B, 96]
            kth = h.kthvalue(5, dim=1).values
            s = h.sort(1).values
            trimmed = s[:, 6:-6].mean(1)
            nm = torch.nanmean(h.masked_fill(missing[..., None], float("nan")), 1)
            cm = h.cummax(1).values.mean(1)
            return F.cross_entropy(self.head(torch.cat([med, qs, kth, trimmed, nm, cm], 1)), y), qs
    return M(), (g(64, 48, 16), unif(64, 48, seed=1) < 0.2, ints(10, 64, seed=2))


# ---------------------------------------------------------------- attention, resampling, recurrent

@prog("mha_need_weights_per_head_kdim_vdim")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.MultiheadAttention(128, 8, kdim=64, vdim=96, batch_first=True)
            self.o = nn.Linear(128, 10)
        def forward(self, q, k, v, bias, kpm, y):
            out, w = self.a(q, k, v, key_padding_mask=kpm, attn_mask=bias, need_weights=True,
                            average_attn_weights=False)  # w [B, heads, L, S]
            ent = -(w * (w + 1e-9).log()).sum(-1).mean()  # an attention-entropy regularizer
            return F.cross_entropy(self.o(out.mean(1)), y) + 0.01 * ent, w
    b, l, s = 16, 48, 64
    kpm = torch.arange(s)[None] >= ints(s, b, lo=s // 2, seed=1)[:, None]
    bias = -0.1 * (torch.arange(l)[:, None] - torch.arange(s)[None]).abs().float()  # float (ALiBi-like) mask
    return M(), (g(b, l, 128), g(b, s, 64), g(b, s, 96), bias, kpm, ints(10, b, seed=2))
@prog("antialias_bilinear_bicubic_area_pyramid")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c0 = nn.Conv2d(3, 16, 3, padding=1)
            self.c1, self.c2, self.c3 = (nn.Conv2d(16, 16, 3, padding=1) for _ in range(3))
            self.out = nn.Conv2d(48, 3, 1)
        def forward(self, x):
            h = F.relu(self.c0(x))
            d1 = F.interpolate(h, scale_factor=0.5, mode="bilinear", antialias=True)
            d2 = F.interpolate(h, size=(37, 45), mode="bicubic", antialias=True, align_corners=False)
            d3 = F.interpolate(h, scale_factor=0.25, mode="area")
            size = h.shape[-2:]
            u = [F.interpolate(F.relu(c(d)), size=size, mode=mode) for c, d, mode in
                 ((self.c1, d1, "bilinear"), (self.c2, d2, "bicubic"), (self.c3, d3, "nearest-exact"))]
            return self.out(torch.cat(u, 1)) + x
    return M(), (g(4, 3, 96, 128),)
@prog("volumetric_stn_affine_grid_grid_sample_3d")
def _():
    class M(nn.Module):  # affine registration of 3-D volumes
        def __init__(self):
            super().__init__()
            self.loc = nn.Sequential(nn.Conv3d(2, 16, 3, 2, 1), nn.ReLU(), nn.Conv3d(16, 32, 3, 2, 1), nn.ReLU(),
                                     nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(32, 12))
            with torch.no_grad():
                self.loc[-1].weight.mul_(0.1)
                self.loc[-1].bias.copy_(torch.eye(3, 4).flatten() + 0.02 * torch.randn(12))
        def forward(self, moving, fixed):
            theta = self.loc(torch.cat([moving, fixed], 1)).view(-1, 3, 4)
            grid = F.affine_grid(theta, list(moving.shape), align_corners=False)
            warped = F.grid_sample(moving, grid, mode="bilinear", padding_mode="border", align_corners=False)
            return F.mse_loss(warped, fixed), warped
    return M(), (g(2, 1, 32, 32, 32), g(2, 1, 32, 32, 32).roll(2, -1))
@prog("gru_bidir_2layer_lstm_proj_size")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(40, 64, num_layers=2, bidirectional=True, batch_first=True)
            self.lstm = nn.LSTM(128, 128, proj_size=32, batch_first=True)
            self.out = nn.Linear(32, 20)
        def forward(self, x, y):
            h, _ = self.gru(x)
            o, _ = self.lstm(h)
            return F.cross_entropy(self.out(o).flatten(0, 1), y.flatten()), o
    return M(), (g(8, 50, 40), ints(20, 8, 50, seed=1)), {"rnn": True}
@prog("set_transformer_isab_pma_key_padding")
def _():
    class MAB(nn.Module):
        def __init__(self, d, h=4):
            super().__init__()
            self.att = nn.MultiheadAttention(d, h, batch_first=True)
            self.ln1, self.ln2, self.ff = nn.LayerNorm(d), nn.LayerNorm(d), mlp(d, 2 * d, d)
        def forward(self, q, k, kpm=None):
            h = self.ln1(q + self.att(q, k, k, key_padding_mask=kpm, need_weights=False)[0])
            return self.ln2(h + self.ff(h))

    class M(nn.Module):
        def __init__(self, d=64, m=16, s=4):
            super().__init__()
            self.inp = nn.Linear(3, d)
            self.ind = nn.ParameterList(nn.Parameter(torch.randn(1, m, d) * 0.1) for _ in range(2))
            self.mab1 = nn.ModuleList(MAB(d) for _ in range(2))
            self.mab2 = nn.ModuleList(MAB(d) for _ in range(2))
            self.seeds, self.pma = nn.Parameter(torch.randn(1, s, d) * 0.1), MAB(d)
            self.sab, self.out = MAB(d), nn.Linear(s * d, 1)
        def forward(self, x, kpm, y):  # sets [B, N, 3] padded, kpm True at padding
            h = self.inp(x)
            for ind, m1, m2 in zip(self.ind, self.mab1, self.mab2):  # ISAB
                hi = m1(ind.expand(x.shape[0], -1, -1), h, kpm)
                h = m2(h, hi)
            p = self.pma(self.seeds.expand(x.shape[0], -1, -1), h, kpm)
            p = self.sab(p, p)
            return F.mse_loss(self.out(p.flatten(1)).squeeze(-1), y)
    b, n = 32, 100
    kpm = torch.arange(n)[None] >= ints(n, b, lo=20, seed=1)[:, None]
    return M(), (g(b, n, 3), kpm, g(b))


# ---------------------------------------------------------------- signal processing

@prog("stft_mask_istft_speech_enhancement")
def _():
    class M(nn.Module):
        def __init__(self, n_fft=512, hop=128):
            super().__init__()
            self.n_fft, self.hop = n_fft, hop
            self.register_buffer("win", torch.hann_window(n_fft))
            f = n_fft // 2 + 1
            self.net = nn.Sequential(nn.Conv1d(f, 256, 3, padding=1), nn.ReLU(), nn.Conv1d(256, 256, 3, padding=1),
                                     nn.ReLU(), nn.Conv1d(256, f, 1))
        def forward(self, noisy, clean):
            spec = torch.stft(noisy, self.n_fft, self.hop, window=self.win, return_complex=True)
            mask = torch.sigmoid(self.net(torch.log1p(spec.abs())))
            est = torch.istft(spec * mask, self.n_fft, self.hop, window=self.win, length=noisy.shape[-1])
            e, c = est - est.mean(-1, keepdim=True), clean - clean.mean(-1, keepdim=True)
            proj = (e * c).sum(-1, keepdim=True) / (c.pow(2).sum(-1, keepdim=True) + 1e-8) * c
            sisnr = 10 * torch.log10(proj.pow(2).sum(-1) / ((e - proj).pow(2).sum(-1) + 1e-8) + 1e-8)
            return -sisnr.mean(), est
    t = torch.arange(16000) / 16000
    clean = torch.sin(2 * math.pi * 220 * t * (1 + unif(4, 1, seed=1))) * 0.5
    return M(), (clean + 0.1 * g(4, 16000), clean)
@prog("fno2d_rfftn_complex_weights")
def _():
    class Spectral(nn.Module):
        def __init__(self, c, m1, m2):
            super().__init__()
            self.m1, self.m2 = m1, m2
            self.w = nn.Parameter(torch.rand(2, c, c, m1, m2, 2) / (c * c))  # real pairs, view_as_complex
        def forward(self, x):
            b, c, h, w = x.shape
            xf = torch.fft.rfftn(x, dim=(-2, -1))
            wc = torch.view_as_complex(self.w)
            lo = torch.einsum("bixy,ioxy->boxy", xf[:, :, :self.m1, :self.m2], wc[0])
            hi = torch.einsum("bixy,ioxy->boxy", xf[:, :, -self.m1:, :self.m2], wc[1])
            out = torch.zeros(b, c, h, w // 2 + 1, dtype=xf.dtype)
            out[:, :, :self.m1, :self.m2] = lo
            out[:, :, -self.m1:, :self.m2] = hi
            return torch.fft.irfftn(out, s=(h, w), dim=(-2, -1))

    class M(nn.Module):
        def __init__(self, c=32, modes=12):
            super().__init__()
            self.lift = nn.Conv2d(3, c, 1)
            self.spec = nn.ModuleList(Spectral(c, modes, modes) for _ in range(4))
            self.pw = nn.ModuleList(nn.Conv2d(c, c, 1) for _ in range(4))
            self.proj = nn.Sequential(nn.Conv2d(c, 128, 1), nn.GELU(), nn.Conv2d(128, 1, 1))
        def forward(self, a, u):
            b, _, h, w = a.shape
            gy, gx = torch.meshgrid(torch.linspace(0, 1, h), torch.linspace(0, 1, w), indexing="ij")
            x = self.lift(torch.cat([a, gx.expand(b, 1, h, w), gy.expand(b, 1, h, w)], 1))
            for i, (s, p) in enumerate(zip(self.spec, self.pw)):
                x = s(x) + p(x)
                x = F.gelu(x) if i < 3 else x
            out = self.proj(x)
            return (out - u).flatten(1).norm(dim=1).div(u.flatten(1).norm(dim=1)).mean(), out
    return M(), (g(4, 1, 64, 64), g(4, 1, 64, 64))
@prog("compact_bilinear_pooling_count_sketch_fft")
def _():
    class M(nn.Module):
        def __init__(self, c=128, d=2048):
            super().__init__()
            self.d = d
            self.f = nn.Sequential(nn.Conv2d(3, 64, 3, 2, 1), bn(64), nn.ReLU(), nn.Conv2d(64, c, 3, 2, 1), bn(c),
                                   nn.ReLU())
            gen = torch.Generator().manual_seed(11)
            for i in (1, 2):
                self.register_buffer(f"h{i}", torch.randint(0, d, (c,), generator=gen))
                self.register_buffer(f"s{i}", torch.randint(0, 2, (c,), generator=gen).float() * 2 - 1)
            self.cls = nn.Linear(d, 20)
        def sketch(self, x, h, s):  # x [M, C] -> [M, D]
            return torch.zeros(x.shape[0], self.d).index_add(1, h, x * s)
        def forward(self, img, y):
            x = self.f(img)
            b, c = x.shape[:2]
            x = x.flatten(2).transpose(1, 2).reshape(-1, c)
            p1 = torch.fft.rfft(self.sketch(x, self.h1, self.s1))
            p2 = torch.fft.rfft(self.sketch(x, self.h2, self.s2))
            z = torch.fft.irfft(p1 * p2, n=self.d).view(b, -1, self.d).sum(1)
            z = F.normalize(torch.sign(z) * torch.sqrt(z.abs() + 1e-8), dim=-1)
            return F.cross_entropy(self.cls(z), y)
    return M(), (g(4, 3, 56, 56), ints(20, 4, seed=1))


# ---------------------------------------------------------------- compiled functions, shapes, hooks

@function_program("compiled_adam_foreach_unscale_clip_step")
def _():
    def make():
        torch.manual_seed(0)
        model = mlp(256, 512, 512, 512, 10, act=nn.GELU)
        params = list(model.parameters())
        opt = torch.optim.Adam(params, lr=1e-3, weight_decay=1e-4, foreach=True)
        scaled = [1024.0 * 0.01 * g(*p.shape) for p in params]  # what a scaled loss's backward leaves
        for p in params:
            p.grad = torch.zeros_like(p)
        inv, found = torch.tensor(1 / 1024.0), torch.zeros(1)

        def step():  # GradScaler.unscale_, clip_grad_norm_, Adam: one optimizer step
            torch._foreach_copy_([p.grad for p in params], scaled)
            found.zero_()
            torch._amp_foreach_non_finite_check_and_unscale_([p.grad for p in params], found, inv)
            total = nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
            opt.step()
            return total, found
        state = lambda: params + [t for p in params for k, t in opt.state[p].items() if k != "step"]  # noqa: E731
        return step, (), state
    return make
@function_program("compiled_whole_train_step_backward_sgd")
def _():
    def make():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1),
                              nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
        params = list(model.parameters())
        opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, foreach=True)

        def step(x, y):  # the user's whole step in one compiled function
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            return loss
        state = lambda: params + [opt.state[p]["momentum_buffer"] for p in params if p in opt.state]  # noqa: E731
        return step, (g(16, 3, 32, 32), ints(10, 16, seed=1)), state
    return make
@prog("dynamic_batch_two_sizes_encoder")
def _():
    class M(nn.Module):
        def __init__(self, d=128):
            super().__init__()
            self.emb = nn.Embedding(1000, d)
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 4 * d, 0.0, batch_first=True,
                                                                        norm_first=True), 2, enable_nested_tensor=False)
            self.out = nn.Linear(d, 5)
        def forward(self, ids, y):
            return F.cross_entropy(self.out(self.enc(self.emb(ids)).mean(1)), y)
    # called with batch 6, then 10 (the check and timing): Dynamo recompiles with a symbolic batch
    return M(), (ints(1000, 10, 32, seed=1), ints(5, 10, seed=2)), {"warm": [(ints(1000, 6, 32, seed=3),
                                                                               ints(5, 6, seed=4))]}
@prog("module_hooks_forward_pre_full_backward")
def _():
    class M(nn.Module):  # gram-matrix feature loss on hook-captured features; hooks that change values
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
                                     nn.Conv2d(64, 64, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                     nn.Linear(64, 10))
            self.feats = []
            for i in (1, 3, 5):
                self.net[i].register_forward_hook(lambda mod, inp, out: self.feats.append(out))
            self.net[0].register_forward_pre_hook(lambda mod, inp: (inp[0] - inp[0].mean((2, 3), keepdim=True),))
            self.net[8].register_forward_hook(lambda mod, inp, out: out * 0.5)  # temperature by a hook
            self.net[2].register_full_backward_hook(lambda mod, gin, gout: (gin[0] * 0.1,))  # gradient scaling
        def forward(self, x, y):
            self.feats.clear()
            logits = self.net(x)
            gram = sum((f.flatten(2) @ f.flatten(2).transpose(1, 2) / f[0].numel()).pow(2).mean() for f in self.feats)
            return F.cross_entropy(logits, y) + 0.1 * gram, logits
    return M(), (g(8, 3, 32, 32), ints(10, 8, seed=1))
@prog("embedding_max_norm_inplace_renorm")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5000, 64, max_norm=1.0)
            self.mlp = mlp(64, 128, 10)
        def forward(self, ids, y):
            return F.cross_entropy(self.mlp(self.emb(ids).mean(1)), y)
    return M(), (ints(5000, 64, 20, seed=1), ints(10, 64, seed=2)), {"params_as_buffers": True}


# ---------------------------------------------------------------- models

@prog("pointnet2_fps_ball_query_set_abstraction")
def _():
    def fps(xyz, n):  # farthest point sampling: [B, N, 3] -> [B, n] indices
        b = xyz.shape[0]
        dist, far, idx = torch.full(xyz.shape[:2], 1e10), torch.zeros(b, dtype=torch.long), []
        ar = torch.arange(b)
        for _ in range(n):
            idx.append(far)
            dist = torch.minimum(dist, (xyz - xyz[ar, far][:, None]).pow(2).sum(-1))
            far = dist.argmax(-1)
        return torch.stack(idx, 1)

    def ball_query(xyz, new, r, k):  # the first k points within r of each centroid (the centroid's own if fewer)
        n = xyz.shape[1]
        d = (new[:, :, None] - xyz[:, None]).pow(2).sum(-1)  # [B, S, N]
        idx = torch.arange(n).expand_as(d).masked_fill(d > r * r, n).sort(-1).values[..., :k]
        return torch.where(idx == n, idx[..., :1], idx)

    def gather(x, idx):  # x [B, N, C], idx [B, ...] -> [B, ..., C]
        b = x.shape[0]
        return x[torch.arange(b).view(b, *[1] * (idx.dim() - 1)), idx]

    class SA(nn.Module):
        def __init__(self, n, r, k, cin, dims):
            super().__init__()
            self.n, self.r, self.k = n, r, k
            layers, c = [], cin + 3
            for d in dims:
                layers += [nn.Conv2d(c, d, 1), bn(d), nn.ReLU()]
                c = d
            self.mlp = nn.Sequential(*layers)
        def forward(self, xyz, feat):
            new = gather(xyz, fps(xyz.detach(), self.n))
            idx = ball_query(xyz.detach(), new.detach(), self.r, self.k)
            grouped = torch.cat([gather(xyz, idx) - new[:, :, None], gather(feat, idx)], -1)  # [B, S, k, 3 + C]
            return new, self.mlp(grouped.permute(0, 3, 1, 2)).amax(-1).transpose(1, 2)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.sa1, self.sa2 = SA(64, 0.3, 16, 3, (32, 32, 64)), SA(16, 0.6, 16, 64, (64, 64, 128))
            self.head = nn.Sequential(nn.Linear(128 + 3, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                      nn.Linear(128, 10))
        def forward(self, xyz, y):
            p1, f1 = self.sa1(xyz, xyz)
            p2, f2 = self.sa2(p1, f1)
            h = torch.cat([p2, f2], -1).amax(1)
            return F.cross_entropy(self.head(h), y)
    x = g(8, 512, 3)
    return M(), (x / x.norm(dim=-1, keepdim=True).amax(1, keepdim=True), ints(10, 8, seed=1))
@prog("pna_scatter_reduce_aggregators_degree_scalers")
def _():
    class Layer(nn.Module):
        def __init__(self, d, de, avg_log):
            super().__init__()
            self.avg_log = avg_log
            self.msg = mlp(2 * d + de, d, d)
            self.upd = mlp(d + 12 * d, d, d)
        def forward(self, x, src, dst, ea):
            n, d = x.shape
            m = self.msg(torch.cat([x[dst], x[src], ea], 1))
            idx = dst[:, None].expand_as(m)
            z = torch.zeros(n, d)
            mean = z.scatter_reduce(0, idx, m, "mean", include_self=False)
            mx = z.scatter_reduce(0, idx, m, "amax", include_self=False)
            mn = z.scatter_reduce(0, idx, m, "amin", include_self=False)
            sq = z.scatter_reduce(0, idx, m * m, "mean", include_self=False)
            std = (F.relu(sq - mean * mean) + 1e-5).sqrt()
            deg = torch.zeros(n).index_add(0, dst, torch.ones(dst.shape[0])).clamp(min=1)
            agg = torch.cat([mean, mx, mn, std], 1)
            s = (deg + 1).log()[:, None] / self.avg_log
            return x + self.upd(torch.cat([x, agg, agg * s, agg / s], 1))

    class M(nn.Module):
        def __init__(self, d=32, de=8, avg_log=math.log(6.0)):
            super().__init__()
            self.inp, self.layers = nn.Linear(16, d), nn.ModuleList(Layer(d, de, avg_log) for _ in range(2))
            self.out = nn.Linear(d, 1)
        def forward(self, x, src, dst, ea, y):
            h = self.inp(x)
            for l in self.layers:
                h = l(h, src, dst, ea)
            return F.mse_loss(self.out(h).squeeze(-1), y)
    n, e = 2000, 10000
    return M(), (g(n, 16), ints(n, e, seed=1), ints(n, e, seed=2), g(e, 8), g(n))
@infer("ddim_sampler_10_steps_unet")
@prog("ddim_sampler_10_steps_unet")
def _():
    class Res(nn.Module):
        def __init__(self, cin, cout, tdim):
            super().__init__()
            self.n1, self.c1 = nn.GroupNorm(8, cin), nn.Conv2d(cin, cout, 3, padding=1)
            self.t = nn.Linear(tdim, cout)
            self.n2, self.c2 = nn.GroupNorm(8, cout), nn.Conv2d(cout, cout, 3, padding=1)
            self.sk = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()
        def forward(self, x, te):
            h = self.c1(F.silu(self.n1(x))) + self.t(te)[:, :, None, None]
            return self.sk(x) + self.c2(F.silu(self.n2(h)))

    class UNet(nn.Module):
        def __init__(self, c=32, tdim=128):
            super().__init__()
            self.tdim = tdim
            self.temb = nn.Sequential(nn.Linear(tdim, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
            self.inp = nn.Conv2d(3, c, 3, padding=1)
            self.d1, self.down = Res(c, c, tdim), nn.Conv2d(c, c, 3, 2, 1)
            self.d2, self.mid = Res(c, 2 * c, tdim), Res(2 * c, 2 * c, tdim)
            self.u2, self.up = Res(4 * c, c, tdim), nn.Conv2d(c, c, 3, padding=1)
            self.u1 = Res(2 * c, c, tdim)
            self.out = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1))
        def forward(self, x, t):
            half = self.tdim // 2
            f = torch.exp(-math.log(10000) * torch.arange(half) / half)
            te = self.temb(torch.cat([torch.sin(t[:, None] * f), torch.cos(t[:, None] * f)], 1))
            h1 = self.d1(self.inp(x), te)
            h2 = self.d2(self.down(h1), te)
            h = self.u2(torch.cat([self.mid(h2, te), h2], 1), te)
            h = self.up(F.interpolate(h, scale_factor=2, mode="nearest"))
            return self.out(self.u1(torch.cat([h, h1], 1), te))

    class M(nn.Module):
        def __init__(self, steps=10, total=1000):
            super().__init__()
            self.net = UNet()
            betas = torch.linspace(1e-4, 0.02, total)
            self.register_buffer("ac", torch.cumprod(1 - betas, 0))
            self.ts = list(range(total - 1, -1, -total // steps))
        def forward(self, x):  # deterministic DDIM (eta = 0)
            for i, t in enumerate(self.ts):
                a = self.ac[t]
                ap = self.ac[self.ts[i + 1]] if i + 1 < len(self.ts) else torch.tensor(1.0)
                eps = self.net(x, torch.full((x.shape[0],), float(t)))
                x0 = ((x - (1 - a).sqrt() * eps) / a.sqrt()).clamp(-1, 1)
                x = ap.sqrt() * x0 + (1 - ap).sqrt() * eps
            return x
    return M(), (g(4, 3, 32, 32),)
@infer("crf_viterbi_decode_backtrack")
@prog("crf_viterbi_decode_backtrack")
def _():
    class M(nn.Module):
        def __init__(self, v=3000, d=128, tags=9):
            super().__init__()
            self.tags = tags
            self.emb = nn.Embedding(v, d)
            self.enc = nn.Sequential(nn.Conv1d(d, d, 5, padding=2), nn.ReLU(), nn.Conv1d(d, d, 5, padding=2), nn.ReLU())
            self.em = nn.Linear(d, tags)
            self.trans, self.start, self.end = (nn.Parameter(torch.randn(*s)) for s in ((tags, tags), (tags,), (tags,)))
        def forward(self, ids, mask):  # mask [B, T] bool, True on tokens (right padding)
            em = self.em(self.enc(self.emb(ids).transpose(1, 2)).transpose(1, 2))  # [B, T, tags]
            score, hist = self.start + em[:, 0], []
            ident = torch.arange(self.tags).expand(ids.shape[0], -1)
            for t in range(1, ids.shape[1]):
                s, idx = (score[:, :, None] + self.trans + em[:, t, None]).max(1)
                m = mask[:, t, None]
                score, idx = torch.where(m, s, score), torch.where(m, idx, ident)  # padding: stay put
                hist.append(idx)
            score = score + self.end
            best, last = score.max(-1)
            path = [last]
            for idx in reversed(hist):
                last = idx.gather(1, last[:, None]).squeeze(1)
                path.append(last)
            return torch.stack(path[::-1], 1), best
    mask = torch.arange(40)[None] < ints(41, 32, lo=10, seed=2)[:, None]
    return M(), (ints(3000, 32, 40, seed=1), mask)
@prog("adaptive_log_softmax_with_loss_lm")
def _():
    class M(nn.Module):
        def __init__(self, v=10000, d=128):
            super().__init__()
            self.emb = nn.Embedding(v, d)
            self.conv = nn.Conv1d(d, d, 3)
            self.asm = nn.AdaptiveLogSoftmaxWithLoss(d, v, cutoffs=[1000, 4000], div_value=4.0)
        def forward(self, ids, tgt):
            h = F.gelu(self.conv(F.pad(self.emb(ids).transpose(1, 2), (2, 0)))).transpose(1, 2).flatten(0, 1)
            out = self.asm(h, tgt.flatten())
            return out.loss, self.asm.log_prob(h[:64])
    zipf = (unif(16, 64, seed=2) ** 3 * 10000).long().clamp(max=9999)  # frequent ids (the head) most often
    return M(), (ints(10000, 16, 64, seed=1), zipf)
@prog("layer_zoo_circular_lrn_lppool_channel_shuffle")
def _():
    m = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, padding_mode="circular"), nn.ReLU(), nn.LocalResponseNorm(5),
                      nn.Conv2d(32, 64, 3, padding=1, padding_mode="reflect", groups=4), nn.ChannelShuffle(4),
                      nn.Softshrink(0.1), nn.LPPool2d(2, 2), nn.Conv2d(64, 64, 3, padding=1, padding_mode="replicate",
                                                                       groups=8),
                      nn.Tanhshrink(), nn.ZeroPad2d((1, 0, 1, 0)), nn.AvgPool2d(3, 2, 1, divisor_override=4),
                      nn.Conv2d(64, 64, 1), nn.LogSigmoid(), nn.Hardtanh(-2, 0), nn.AdaptiveMaxPool2d(1),
                      nn.Flatten(), nn.Linear(64, 10))
    return m, (g(4, 3, 64, 64),)
@prog("tome_token_merging_vit_scatter_reduce_mean")
def _():
    def bipartite_merge(x, k, r):  # ToMe: merge r tokens of the even set into their most similar odd token
        k = k / k.norm(dim=-1, keepdim=True)
        a, b = k[:, ::2], k[:, 1::2]
        node_max, node_idx = (a @ b.transpose(1, 2)).max(-1)
        edge = node_max.argsort(-1, descending=True)[..., None]
        unm, src = edge[:, r:], edge[:, :r]
        dst = node_idx[..., None].gather(1, src)
        xa, xb = x[:, ::2], x[:, 1::2]
        c = x.shape[-1]
        keep = xa.gather(1, unm.expand(-1, -1, c))
        xb = xb.scatter_reduce(1, dst.expand(-1, -1, c), xa.gather(1, src.expand(-1, -1, c)), reduce="mean")
        return torch.cat([keep, xb], 1)

    class Block(nn.Module):
        def __init__(self, d, h, r):
            super().__init__()
            self.h, self.r = h, r
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, n, 3, self.h, -1).permute(2, 0, 3, 1, 4)
            x = x + self.o(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d))
            x = bipartite_merge(x, k.mean(1), self.r)
            return x + self.ff(self.n2(x))

    class M(nn.Module):
        def __init__(self, d=128):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 4, 4)
            self.pos = nn.Parameter(torch.randn(1, 64, d) * 0.02)
            self.blocks = nn.Sequential(*(Block(d, 4, 8) for _ in range(4)))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, 10)
        def forward(self, x, y):
            h = self.blocks(self.patch(x).flatten(2).transpose(1, 2) + self.pos)
            return F.cross_entropy(self.head(self.ln(h).mean(1)), y)
    return M(), (g(16, 3, 32, 32), ints(10, 16, seed=1))
@prog("llava_masked_scatter_image_features")
def _():
    class M(nn.Module):
        def __init__(self, v=2000, d=128, vd=96, img_tok=1999):
            super().__init__()
            self.img_tok = img_tok
            self.patch = nn.Conv2d(3, vd, 8, 8)
            self.venc = nn.TransformerEncoderLayer(vd, 4, 2 * vd, 0.0, batch_first=True, norm_first=True)
            self.proj = nn.Sequential(nn.Linear(vd, d), nn.GELU(), nn.Linear(d, d))
            self.emb = nn.Embedding(v, d)
            self.dec = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 4 * d, 0.0, batch_first=True,
                                                                        norm_first=True), 2, enable_nested_tensor=False)
            self.lm = nn.Linear(d, v)
        def forward(self, pix, ids, labels):
            feats = self.proj(self.venc(self.patch(pix).flatten(2).transpose(1, 2))).flatten(0, 1)  # [B * P, d]
            e = self.emb(ids)
            mask = (ids == self.img_tok)[..., None].expand_as(e)
            e = e.masked_scatter(mask, feats)
            s = ids.shape[1]
            causal = torch.triu(torch.full((s, s), float("-inf")), 1)
            logits = self.lm(self.dec(e, mask=causal, is_causal=True))
            return F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=-100)
    b, p, s = 4, 16, 64
    ids = ints(1999, b, s, seed=1)
    for i in range(b):
        ids[i, 2 + i:2 + i + p] = 1999  # the image's tokens at a different offset per sample
    labels = ids.masked_fill(ids == 1999, -100)
    return M(), (g(b, 3, 32, 32), ids, labels)
@prog("fastspeech_length_regulator_alignment")
def _():
    class ConvBlock(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.c, self.ln = nn.Conv1d(d, d, 3, padding=1), nn.LayerNorm(d)
        def forward(self, x):  # [B, T, d]
            return self.ln(x + F.relu(self.c(x.transpose(1, 2))).transpose(1, 2))

    class M(nn.Module):
        def __init__(self, d=128, mels=80, t_mel=320):
            super().__init__()
            self.t_mel = t_mel
            self.emb = nn.Embedding(60, d)
            self.enc = nn.Sequential(*(ConvBlock(d) for _ in range(3)))
            self.dur = nn.Sequential(ConvBlock(d), nn.Linear(d, 1))
            self.dec = nn.Sequential(*(ConvBlock(d) for _ in range(3)))
            self.mel = nn.Linear(d, mels)
        def forward(self, ph, ph_mask, dur, mel):  # durations from an aligner (ground truth in training)
            h = self.enc(self.emb(ph)) * ph_mask[..., None]
            logd = self.dur(h).squeeze(-1)
            dloss = (F.mse_loss(logd, torch.log1p(dur.float()), reduction="none") * ph_mask).sum() / ph_mask.sum()
            end = dur.cumsum(-1)
            pos = torch.arange(self.t_mel)[None, :, None]
            align = ((pos >= (end - dur)[:, None]) & (pos < end[:, None])).float()  # [B, T_mel, T_ph]
            out = self.mel(self.dec(align @ h))
            mmask = (torch.arange(self.t_mel)[None] < end[:, -1:]).float()[..., None]
            return (F.l1_loss(out, mel, reduction="none") * mmask).sum() / (mmask.sum() * out.shape[-1]) + dloss, out
    b, t = 8, 48
    lens = ints(t + 1, b, lo=30, seed=1)
    ph_mask = (torch.arange(t)[None] < lens[:, None]).float()
    dur = ints(7, b, t, lo=2, seed=2) * ph_mask.long()  # at most 6 * 48 = 288 frames
    return M(), (ints(60, b, t, seed=3), ph_mask, dur, g(b, 320, 80))
@prog("nerf_hierarchical_sampling_searchsorted")
def _():
    class Field(nn.Module):
        def __init__(self, freqs=6, d=128):
            super().__init__()
            self.register_buffer("f", 2.0 ** torch.arange(freqs) * math.pi)
            self.net = mlp(3 + 6 * freqs, d, d, d, act=nn.ReLU, last=True)
            self.sigma, self.rgb = nn.Linear(d, 1), nn.Linear(d, 3)
        def forward(self, p):
            e = p[..., None] * self.f
            h = self.net(torch.cat([p, torch.sin(e).flatten(-2), torch.cos(e).flatten(-2)], -1))
            return F.softplus(self.sigma(h)).squeeze(-1), torch.sigmoid(self.rgb(h))

    def render(field, o, d, z):
        sigma, rgb = field(o[:, None] + d[:, None] * z[..., None])
        delta = torch.cat([z[:, 1:] - z[:, :-1], torch.full_like(z[:, :1], 1e10)], -1)
        alpha = 1 - torch.exp(-sigma * delta)
        trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1 - alpha + 1e-10], -1), -1)[:, :-1]
        w = alpha * trans
        return (w[..., None] * rgb).sum(1), w

    def sample_pdf(bins, w, u):  # inverse-transform sampling of the coarse weights' histogram
        pdf = (w + 1e-5) / (w + 1e-5).sum(-1, keepdim=True)
        cdf = torch.cat([torch.zeros_like(pdf[:, :1]), pdf.cumsum(-1)], -1)
        inds = torch.searchsorted(cdf, u, right=True)
        below, above = (inds - 1).clamp(min=0), inds.clamp(max=cdf.shape[-1] - 1)
        c0, c1 = cdf.gather(1, below), cdf.gather(1, above)
        b0, b1 = bins.gather(1, below), bins.gather(1, above)
        den = torch.where(c1 - c0 < 1e-5, torch.ones_like(c1), c1 - c0)
        return b0 + (u - c0) / den * (b1 - b0)

    class M(nn.Module):
        def __init__(self, near=2.0, far=6.0, nc=32):
            super().__init__()
            self.coarse, self.fine = Field(), Field()
            self.register_buffer("zs", torch.linspace(near, far, nc + 1))
        def forward(self, o, d, jitter, u, target):
            z = self.zs[:-1] + (self.zs[1:] - self.zs[:-1]) * jitter  # stratified
            c_rgb, w = render(self.coarse, o, d, z)
            mids = 0.5 * (z[:, 1:] + z[:, :-1])
            zf = sample_pdf(mids, w[:, 1:-1].detach(), u)
            zall = torch.sort(torch.cat([z, zf], -1), -1).values
            f_rgb, _ = render(self.fine, o, d, zall)
            return F.mse_loss(c_rgb, target) + F.mse_loss(f_rgb, target), f_rgb
    r = 256
    dirs = F.normalize(g(r, 3) * 0.2 + torch.tensor([0.0, 0.0, 1.0]), dim=-1)
    return M(), (g(r, 3) * 0.1 - torch.tensor([0.0, 0.0, 4.0]), dirs, unif(r, 32, seed=1),
                 unif(r, 32, seed=2).sort(-1).values, unif(r, 3, seed=3))
@infer("int4_weight_only_dequant_decode_step")
@prog("int4_weight_only_dequant_decode_step")
def _():
    def quant4(w, gs=32):  # asymmetric per-group int4, two values per uint8
        o, i = w.shape
        wg = w.view(o, i // gs, gs)
        lo, hi = wg.amin(-1, keepdim=True), wg.amax(-1, keepdim=True)
        scale = (hi - lo).clamp(min=1e-6) / 15
        q = ((wg - lo) / scale).round().clamp(0, 15).to(torch.uint8).view(o, i)
        return q[:, ::2] | (q[:, 1::2] << 4), scale.squeeze(-1), lo.squeeze(-1)

    class Lin4(nn.Module):
        def __init__(self, i, o, gs=32, seed=0):
            super().__init__()
            self.gs = gs
            for k, v in zip(("packed", "scale", "zero"), quant4(g(o, i + seed)[:, :i] * i ** -0.5, gs)):
                self.register_buffer(k, v)
        def forward(self, x):
            lo, hi = self.packed & 0xF, self.packed >> 4
            q = torch.stack([lo, hi], -1).flatten(1).float()  # [O, I]
            o, i = q.shape
            w = (q.view(o, i // self.gs, self.gs) * self.scale[..., None] + self.zero[..., None]).view(o, i)
            return F.linear(x, w)

    class Layer(nn.Module):
        def __init__(self, d, f, seed):
            super().__init__()
            self.n1, self.n2 = nn.RMSNorm(d), nn.RMSNorm(d)
            self.qkv, self.o = Lin4(d, 3 * d, seed=seed + 1), Lin4(d, d, seed=seed + 2)
            self.gate, self.up = Lin4(d, f, seed=seed + 3), Lin4(d, f, seed=seed + 4)
            self.down = Lin4(f, d, seed=seed + 5)
        def forward(self, x, kc, vc):  # one new token attending to a cache of 127 past ones
            b, _, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, 1, 3, 8, d // 8).permute(2, 0, 3, 1, 4)
            k, v = torch.cat([kc, k], 2), torch.cat([vc, v], 2)
            x = x + self.o(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, 1, d))
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class M(nn.Module):
        def __init__(self, d=512, f=1536, v=4000):
            super().__init__()
            self.emb = nn.Embedding(v, d)
            self.layers = nn.ModuleList(Layer(d, f, 10 * i) for i in range(2))
            self.nf = nn.RMSNorm(d)
            wq = (g(v, d) * d ** -0.5)  # int8 per-channel weight-only head
            s = wq.abs().amax(1, keepdim=True) / 127
            self.register_buffer("head_q", (wq / s).round().to(torch.int8))
            self.register_buffer("head_s", s)
        def forward(self, tok, kc, vc):
            x = self.emb(tok)
            for i, l in enumerate(self.layers):
                x = l(x, kc[i], vc[i])
            logits = F.linear(self.nf(x), self.head_q.float()) * self.head_s.squeeze(1)
            return logits, logits.argmax(-1)
    return M(), (ints(4000, 4, 1, seed=1), g(2, 4, 8, 127, 64), g(2, 4, 8, 127, 64) * 0.5)


# ---------------------------------------------------------------- the harness

def _compare(got, want):
    """(max relative difference of the floating outputs, number of integer outputs that differ)."""
    fl = [(a, b) for a, b in zip(_outs(got), _outs(want)) if b.is_floating_point()]
    err = max((_rel(a, b) for a, b in fl), default=0.0)
    bad = sum(int(not torch.equal(a, b)) for a, b in zip(_outs(got), _outs(want)) if not b.is_floating_point())
    return err, bad


def _notes(ws, calls0):
    notes = [str(w.message)[:600] for w in ws if issubclass(w.category, AxleFallbackWarning)]
    counters = torch._dynamo.utils.counters
    breaks = sum(counters["graph_break"].values())
    notes += [f"{breaks} graph break(s): " + "; ".join(
        r.strip().splitlines()[0][:160] for r in list(counters["graph_break"])[:3])] if breaks else []
    skipped = [r for r in counters["unimplemented"] if not breaks]
    notes += [f"Dynamo left a frame to eager: {skipped[0].strip().splitlines()[0]}"] if skipped else []
    notes += ["no call ran on axle"] if STATS["axle_calls"] == calls0 else []
    return notes


RESULTS = {}


def run_function(name, width):
    """A function program: two identical states, one stepped by the function, one by its compiled form
    (twice each); outputs and states compared; then timed call against call."""
    make = P[name]()
    e_step, e_args, e_state = make()
    a_step, a_args, a_state = make()
    comp = torch.compile(a_step, backend="axle")
    calls0, c0 = STATS["axle_calls"], STATS["compiles"]
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always", AxleFallbackWarning)
        t0 = time.perf_counter()
        for _ in range(2):
            want, got = e_step(*e_args), comp(*a_args)
        first = time.perf_counter() - t0
        err, bad = _compare(got, want)
        sa, se = a_state(), e_state()
        scale = max((float(t.abs().max()) for t in se), default=0.0) + 1e-30
        serr = max((float((a.double() - b.double()).abs().max()) / scale for a, b in zip(sa, se)), default=0.0)
        serr = serr if len(sa) == len(se) else float("inf")
        a, e = _time(lambda: comp(*a_args), lambda: e_step(*e_args))
    notes = _notes(ws, calls0) + [f"{STATS['compiles'] - c0} graph(s) compiled by axle"]
    ok = err < TOL and serr < TOL and not bad
    RESULTS[name] = dict(ok=ok, err=max(err, serr), a=a, e=e, fa=None, fe=None, training=False, compile_s=first,
                         notes=notes)
    print(f"{name:{width}s} call axle {a:8.2f} ms  eager {e:8.2f} ms  eager/axle {e / a:5.2f}  err {err:.1e}  "
          f"state {serr:.1e}" + ("" if ok else "  NOT OK") + f"  first calls {first:5.1f} s", flush=True)
    for n in notes:
        print(f"{'':{width}s} note: {n}", flush=True)


def run(name, width=48):
    """One program: forward outputs (integer ones exactly), one training step's gradients and the buffers a
    forward updates against eager; the first compiled forward and backward (compile times); interleaved
    medians of the training forward alone and of the whole step (zero_grad, forward, loss.backward), or of
    the forward under no_grad for an inference program; and notes: fallbacks, graph breaks, frames Dynamo
    left to eager, graphs that never reached axle."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch.manual_seed(0)
    if name in FN:
        return run_function(name, width)
    built = P[name]()
    model, args, opts = built if len(built) == 3 else (*built, {})
    with torch._dynamo.config.patch(allow_rnn=bool(opts.get("rnn"))):
        _run(name, width, model, args, opts)


def _run(name, width, model, args, opts):
    training = name not in INFER
    model.train(name not in EVAL)
    comp = torch.compile(model, backend="axle")
    # (the forward rewrites parameters in place with params_as_buffers: restored, compared)
    bufs, restore = buffer_snapshot(model, model.parameters() if opts.get("params_as_buffers") else ())
    calls0, c0 = STATS["axle_calls"], STATS["compiles"]
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always", AxleFallbackWarning)
        with torch.set_grad_enabled(training):
            t0 = time.perf_counter()
            for w in opts.get("warm", ()):  # other inputs first (another batch size)
                comp(*w)
            restore()
            want = model(*args)
            bw = [b.detach().clone() for b in bufs]
            restore()
            got = comp(*args)
            t_fwd = time.perf_counter() - t0
        bscale = max((float(w.nan_to_num().abs().max()) for w in bw), default=0.0) + 1e-30
        berr = max((float((b.detach().nan_to_num() - w.nan_to_num()).abs().max()) / bscale
                    for b, w in zip(bufs, bw)), default=0.0)
        err, bad_ints = _compare(got, want)
        gerr, t_bwd, fa, fe, a, e = grads_and_times(model, comp, args, restore, training)
    notes = _notes(ws, calls0)
    notes += [f"{STATS['compiles'] - c0} graph(s) compiled by axle over {1 + len(opts['warm'])} input shapes"] \
        if opts.get("warm") else []
    notes += [f"{bad_ints} integer output(s) differ"] if bad_ints else []
    ok = err < TOL and gerr < TOL and berr < TOL and not bad_ints
    first = t_fwd + t_bwd
    RESULTS[name] = dict(ok=ok, err=max(err, gerr, berr), a=a, e=e, fa=fa, fe=fe, training=training,
                         compile_s=first, notes=notes)
    what = "step" if training else "infer"
    checks = (f"err {err:.1e}" + (f"  grad {gerr:.1e}" if training else "") + (f"  buf {berr:.1e}" if bufs else "")
              + ("" if ok else "  NOT OK"))
    print(f"{name:{width}s} {what} axle {a:8.2f} ms  eager {e:8.2f} ms  eager/axle {e / a:5.2f}  "
          + (f"fwd axle {fa:7.2f} eager {fe:7.2f} ({fe / fa:4.2f})  " if training else "")
          + f"{checks}  first calls {first:5.1f} s", flush=True)
    for n in notes:
        print(f"{'':{width}s} note: {n}", flush=True)


def summary():
    """The table of the programs run, the geometric mean of eager / axle, and the counts."""
    if not RESULTS:
        return
    print("\n| program | kind | correct? | max rel diff | fallback / graph breaks | fwd eager/axle | eager ms "
          "| axle ms | eager/axle | compile s |\n|---|---|---|---|---|---|---|---|---|---|")
    for n, v in RESULTS.items():
        kind = "fn" if n in FN else "step" if v["training"] else "infer"
        notes = "; ".join(x[:90] for x in v["notes"] if "compiled by axle" not in x) or "-"
        fwd = f"{v['fe'] / v['fa']:.2f}" if v["fa"] else "-"
        print(f"| {n} | {kind} | {'yes' if v['ok'] else 'NO'} | {v['err']:.1e} | {notes} | {fwd} | {v['e']:.2f} "
              f"| {v['a']:.2f} | {v['e'] / v['a']:.2f} | {v['compile_s']:.1f} |")
    gm = lambda r: float(np.exp(np.mean(np.log(r)))) if r else float("nan")  # noqa: E731
    whole = [v["e"] / v["a"] for v in RESULTS.values() if not any("runs eagerly" in x for x in v["notes"])]
    print(f"\n{len(RESULTS)} programs; geometric mean eager/axle {gm([v['e'] / v['a'] for v in RESULTS.values()]):.2f} "
          f"(training steps, inference forwards, function calls; {gm(whole):.2f} over the {len(whole)} without a "
          f"graph left to eager); {sum(v['ok'] for v in RESULTS.values())} within {TOL:g}; "
          f"{sum(bool([x for x in v['notes'] if 'compiled by axle' not in x]) for v in RESULTS.values())} with notes; "
          f"{sum(v['e'] / v['a'] < 0.8 for v in RESULTS.values())} below 0.8", flush=True)


if __name__ == "__main__":
    T.main(P, run)
    summary()
