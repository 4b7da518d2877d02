"""A sixth sweep of ordinary PyTorch modules through torch.compile(backend="axle"), of kinds
benchmarks/torch_programs.py - torch_programs_5.py do not have: linear algebra inside models (a Glow
step with an LU-decomposed invertible 1x1 convolution and slogdet, RNN weights under
torch.nn.utils.parametrizations.orthogonal with its matrix_exp / Householder / Cayley maps, a
whitened sparse variational GP layer (cholesky, solve_triangular), decorrelated batch normalization
by a batched torch.linalg.eigh with running whitening buffers, an orthogonal Procrustes alignment by
torch.linalg.svd), Python loops in forward (GRUCell + LSTMCell unrolled over 32 steps, a
convolutional ODE-Net with fixed-step RK4, a RAFT update block over 4 refinements with a
grid_sample correlation lookup), recommenders and tabular models (EmbeddingBag with
include_last_offset, per_sample_weights, max mode and padding_idx; TabTransformer; a two-tower
retrieval model with in-batch softmax and logQ correction; top-k retrieval and re-ranking),
vision (a whole MobileNetV3-Small and EfficientNet-B0 stages with stochastic depth in eval, SwinV2
cosine attention with a continuous position-bias MLP and patch merging, CoordConv with a soft-argmax,
a U-Net decoder on odd sizes by F.interpolate(size=..., align_corners=True), PixelUnshuffle /
PixelShuffle with affine InstanceNorm2d and running statistics, a DeiT with a distillation token and
bicubic-resampled learned position embeddings), audio (a log-mel front end as a learnable conv1d
Fourier filterbank, a mu-law WaveNet over two dilation stacks), losses (focal, label smoothing,
semi-hard triplet mining, F.ctc_loss with concatenated targets and zero_infinity, KL between
full-covariance MultivariateNormals), normalization (GroupNorm, affine InstanceNorm2d, LayerNorm on
channels-last in a channels_last model; HiFi-GAN weight_norm and spectral_norm parametrizations),
optimizers (torch.optim's own functional AdamW and Nesterov SGD after a global-norm clip, a SAM
step by torch.autograd.grad and functional_call) and bfloat16 autocast over a small causal LM.
Same harness as torch_programs_2.py: outputs, gradients and updated buffers against eager PyTorch,
interleaved timing (medians), fallbacks (the bridge's warning) and graph breaks.

Usage: AXLE_NUM_THREADS=1 python benchmarks/torch_programs_6.py [name,name,...]"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_programs as T  # sets AXLE_NUM_THREADS / torch threads, registers the backend
from torch_programs import g
from torch_programs_2 import bn, ints, runner, shifted_window_mask, sweep, window_merge, window_partition

P, EVAL, prog = sweep()


def unif(*s, seed=0):
    return torch.rand(*s, generator=torch.Generator().manual_seed(seed))


def cbr(cin, cout, k, s=1, p=0, d=1):  # conv, batch norm, ReLU
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, p, dilation=d, bias=False), bn(cout), nn.ReLU())


def make_div(v, d=8):
    return max(d, int(v + d / 2) // d * d)


@prog("glow_lu_invconv1x1_slogdet_coupling")
def _():
    class ActNorm(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.loc = nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
            self.logs = nn.Parameter(torch.randn(1, c, 1, 1) * 0.1)
        def forward(self, x):
            return (x + self.loc) * self.logs.exp(), self.logs.sum() * x.shape[2] * x.shape[3]

    class InvConvLU(nn.Module):  # W = P L (U + diag(sign * exp(logs)))
        def __init__(self, c):
            super().__init__()
            p, l, u = torch.linalg.lu(torch.linalg.qr(torch.randn(c, c))[0])
            s = torch.diagonal(u)
            self.register_buffer("p", p)
            self.register_buffer("sign", torch.sign(s))
            self.register_buffer("lmask", torch.tril(torch.ones(c, c), -1))
            self.register_buffer("eye", torch.eye(c))
            self.l, self.u, self.logs = nn.Parameter(l), nn.Parameter(torch.triu(u, 1)), nn.Parameter(s.abs().log())
        def forward(self, x):
            up = self.u * self.lmask.t() + torch.diag(self.sign * self.logs.exp())
            w = self.p @ (self.l * self.lmask + self.eye) @ up
            return F.conv2d(x, w[:, :, None, None]), self.logs.sum() * x.shape[2] * x.shape[3]

    class InvConv(nn.Module):  # the plain one: slogdet of the weight
        def __init__(self, c):
            super().__init__()
            self.w = nn.Parameter(torch.linalg.qr(torch.randn(c, c))[0])
        def forward(self, x):
            return F.conv2d(x, self.w[:, :, None, None]), torch.linalg.slogdet(self.w)[1] * x.shape[2] * x.shape[3]

    class Coupling(nn.Module):
        def __init__(self, c, h=64):
            super().__init__()
            self.net = nn.Sequential(nn.Conv2d(c // 2, h, 3, padding=1), nn.ReLU(), nn.Conv2d(h, h, 1), nn.ReLU(),
                                     nn.Conv2d(h, c, 3, padding=1))
            with torch.no_grad():
                self.net[-1].weight.mul_(0.05)
        def forward(self, x):
            a, b = x.chunk(2, 1)
            s, t = self.net(a).chunk(2, 1)
            s = torch.sigmoid(s + 2.0)
            return torch.cat([a, (b + t) * s], 1), torch.log(s).flatten(1).sum(1)

    class M(nn.Module):
        def __init__(self, c=12, k=4):
            super().__init__()
            self.steps = nn.ModuleList(m for i in range(k)
                                       for m in (ActNorm(c), InvConvLU(c) if i % 2 == 0 else InvConv(c), Coupling(c)))
        def forward(self, x):  # dequantized images in [0, 1)
            z, logdet = F.pixel_unshuffle(x - 0.5, 2), 0
            for s in self.steps:
                z, ld = s(z)
                logdet = logdet + ld
            dim = z[0].numel()
            logp = -0.5 * (z.pow(2) + math.log(2 * math.pi)).flatten(1).sum(1)
            return (-(logp + logdet - dim * math.log(256)) / (dim * math.log(2))).mean(), z
    x = ((unif(8, 3, 32, 32, seed=1) * 255).floor() + unif(8, 3, 32, 32, seed=2)) / 256
    return M(), (x,)
@prog("orthogonal_parametrized_rnn_maps")
def _():
    orth = nn.utils.parametrizations.orthogonal

    class M(nn.Module):
        def __init__(self, i=16, h=128, o=64):
            super().__init__()
            self.inp = nn.Linear(i, h)
            self.rec = orth(nn.Linear(h, h, bias=False))  # square: matrix_exp
            self.proj = orth(nn.Linear(h, o), orthogonal_map="householder")
            self.mix = orth(nn.Linear(o, o, bias=False), orthogonal_map="cayley")
            self.head = nn.Linear(o, 10)
        def forward(self, x, y):  # [B, T, i]
            w = self.rec.weight  # the parametrization once, not per step
            u = self.inp(x)
            h = torch.zeros(x.shape[0], w.shape[0])
            for t in range(x.shape[1]):
                h = torch.tanh(u[:, t] + F.linear(h, w))
            return F.cross_entropy(self.head(F.relu(self.mix(self.proj(h)))), y)
    return M(), (g(32, 32, 16), ints(10, 32, seed=1))
@prog("svgp_whitened_cholesky_layer")
def _():
    class M(nn.Module):  # deep-kernel sparse variational GP (whitened), ELBO
        def __init__(self, d=8, f=16, m=64):
            super().__init__()
            self.feat = nn.Sequential(nn.Linear(d, 64), nn.Tanh(), nn.Linear(64, f))
            self.z = nn.Parameter(torch.randn(m, f))
            self.q_mu = nn.Parameter(torch.randn(m) * 0.1)
            self.q_l = nn.Parameter(0.01 * torch.randn(m, m))
            self.q_d = nn.Parameter(torch.full((m,), -1.0))
            self.log_ls, self.log_os, self.log_noise = (nn.Parameter(torch.tensor(v)) for v in (0.5, 0.0, -2.0))
        def k(self, a, b):
            sq = (a * a).sum(-1)[:, None] + (b * b).sum(-1)[None] - 2 * a @ b.t()
            return self.log_os.exp() * torch.exp(-0.5 * sq.clamp(min=0) / self.log_ls.exp() ** 2)
        def forward(self, x, y, n_total=10000):
            h = self.feat(x)
            m = self.z.shape[0]
            lz = torch.linalg.cholesky(self.k(self.z, self.z) + 1e-3 * torch.eye(m))
            a = torch.linalg.solve_triangular(lz, self.k(self.z, h), upper=False)  # [m, n]
            s = torch.tril(self.q_l, -1) + torch.diag(F.softplus(self.q_d) + 1e-4)
            mean = a.t() @ self.q_mu
            var = self.log_os.exp() - (a * a).sum(0) + (s.t() @ a).pow(2).sum(0)
            noise = self.log_noise.exp()
            ell = -0.5 * math.log(2 * math.pi) - 0.5 * torch.log(noise) - 0.5 * ((y - mean) ** 2 + var) / noise
            kl = 0.5 * (s.pow(2).sum() + self.q_mu.pow(2).sum() - m - 2 * torch.log(torch.diagonal(s)).sum())
            return -(ell.mean() * n_total - kl) / n_total, mean, var
    x = g(256, 8)
    return M(), (x, torch.sin(x.sum(1)) + 0.1 * g(256))
@prog("dbn_zca_whitening_eigh_running")
def _():
    class ZCA(nn.Module):  # decorrelated batch norm: group-wise ZCA by a batched eigh
        def __init__(self, c, groups=4, eps=1e-3, momentum=0.1):
            super().__init__()
            self.gr, self.eps, self.mom = groups, eps, momentum
            self.w, self.b = nn.Parameter(torch.ones(c)), nn.Parameter(torch.zeros(c))
            self.register_buffer("running_mean", torch.zeros(c))
            self.register_buffer("running_wm", torch.eye(c // groups).repeat(groups, 1, 1))
        def forward(self, x):  # [N, C]
            n, c = x.shape
            if self.training:
                mu = x.mean(0)
                xc = (x - mu).view(n, self.gr, -1).transpose(0, 1)  # [G, N, C/G]
                cov = xc.transpose(1, 2) @ xc / n + self.eps * torch.eye(c // self.gr)
                ev, v = torch.linalg.eigh(cov)
                wm = v @ torch.diag_embed(ev.rsqrt()) @ v.transpose(1, 2)
                with torch.no_grad():
                    self.running_mean.lerp_(mu, self.mom)
                    self.running_wm.lerp_(wm, self.mom)
            else:
                xc, wm = (x - self.running_mean).view(n, self.gr, -1).transpose(0, 1), self.running_wm
            return (xc @ wm).transpose(0, 1).reshape(n, c) * self.w + self.b

    m = nn.Sequential(nn.Linear(64, 128), ZCA(128), nn.ReLU(), nn.Linear(128, 128), ZCA(128), nn.ReLU(),
                      nn.Linear(128, 10))
    return m, (g(512, 64) @ g(64, 64) * 0.3,)
@prog("procrustes_svd_alignment")
def _():
    class M(nn.Module):  # align two views' embeddings by the orthogonal Procrustes rotation
        def __init__(self, d=32):
            super().__init__()
            self.ea = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, d))
            self.eb = nn.Sequential(nn.Linear(48, 128), nn.GELU(), nn.Linear(128, d))
        def forward(self, xa, xb):
            a, b = self.ea(xa), self.eb(xb)
            a, b = a - a.mean(0), b - b.mean(0)
            u, s, vh = torch.linalg.svd(a.t() @ b, full_matrices=False)
            r = u @ vh
            return (a @ r - b).pow(2).mean() - 1e-3 * s.sum() / a.shape[0], r
    return M(), (g(256, 64), g(256, 48))
@prog("gru_lstm_cells_unrolled_32")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Linear(40, 64)
            self.gru, self.lstm = nn.GRUCell(64, 128), nn.LSTMCell(128, 128)
            self.out = nn.Linear(128, 12)
        def forward(self, x, y):  # [B, 32, 40], per-step labels
            e = self.emb(x)
            b = x.shape[0]
            h1, h2, c2 = torch.zeros(b, 128), torch.zeros(b, 128), torch.zeros(b, 128)
            outs = []
            for t in range(x.shape[1]):
                h1 = self.gru(e[:, t], h1)
                h2, c2 = self.lstm(h1, (h2, c2))
                outs.append(h2)
            return F.cross_entropy(self.out(torch.stack(outs, 1)).flatten(0, 1), y.flatten())
    return M(), (g(16, 32, 40), ints(12, 16, 32, seed=1))
@prog("odenet_conv_rk4_groupnorm")
def _():
    class ConcatConv(nn.Module):  # the time as an extra channel
        def __init__(self, c):
            super().__init__()
            self.c = nn.Conv2d(c + 1, c, 3, padding=1)
        def forward(self, t, x):
            return self.c(torch.cat([x, torch.ones_like(x[:, :1]) * t], 1))

    class Func(nn.Module):
        def __init__(self, c=64):
            super().__init__()
            self.n1, self.n2, self.n3 = nn.GroupNorm(16, c), nn.GroupNorm(16, c), nn.GroupNorm(16, c)
            self.c1, self.c2 = ConcatConv(c), ConcatConv(c)
        def forward(self, t, x):
            return self.n3(self.c2(t, F.relu(self.n2(self.c1(t, F.relu(self.n1(x)))))))

    class M(nn.Module):
        def __init__(self, steps=4):
            super().__init__()
            self.steps = steps
            self.down = nn.Sequential(nn.Conv2d(1, 64, 3), nn.GroupNorm(16, 64), nn.ReLU(), nn.Conv2d(64, 64, 4, 2, 1),
                                      nn.GroupNorm(16, 64), nn.ReLU(), nn.Conv2d(64, 64, 4, 2, 1))
            self.f = Func()
            self.head = nn.Sequential(nn.GroupNorm(16, 64), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                      nn.Linear(64, 10))
        def forward(self, x, y):
            z, h, t = self.down(x), 1.0 / self.steps, 0.0
            for _ in range(self.steps):  # classic fixed-step RK4 from t = 0 to 1
                k1 = self.f(t, z)
                k2 = self.f(t + h / 2, z + h / 2 * k1)
                k3 = self.f(t + h / 2, z + h / 2 * k2)
                k4 = self.f(t + h, z + h * k3)
                z, t = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), t + h
            return F.cross_entropy(self.head(z), y)
    return M(), (g(8, 1, 28, 28), ints(10, 8, seed=1))
@prog("raft_update_block_4_iters")
def _():
    class M(nn.Module):
        def __init__(self, fd=64, hd=64, cd=32, r=3, h=8, w=12):
            super().__init__()
            self.hd, self.cd, self.h, self.w = hd, cd, h, w

            def enc(o, norm):
                return nn.Sequential(nn.Conv2d(3, 32, 7, 2, 3), norm(32), nn.ReLU(), nn.Conv2d(32, 48, 3, 2, 1),
                                     norm(48), nn.ReLU(), nn.Conv2d(48, o, 3, 2, 1))
            self.fnet, self.cnet = enc(fd, nn.InstanceNorm2d), enc(hd + cd, nn.BatchNorm2d)
            k = 2 * r + 1
            self.convc1, self.convc2 = nn.Conv2d(k * k, 64, 1), nn.Conv2d(64, 48, 3, padding=1)
            self.convf1, self.convf2 = nn.Conv2d(2, 32, 7, padding=3), nn.Conv2d(32, 16, 3, padding=1)
            self.conv = nn.Conv2d(64, 62, 3, padding=1)
            self.convz, self.convr, self.convq = (nn.Conv2d(hd + cd + 64, hd, 3, padding=1) for _ in range(3))
            self.fh = nn.Sequential(nn.Conv2d(hd, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 2, 3, padding=1))
            d = torch.linspace(-r, r, k)
            dy, dx = torch.meshgrid(d, d, indexing="ij")
            self.register_buffer("delta", torch.stack([dx, dy], -1)[None])  # (x, y) offsets [1, k, k, 2]
            ys, xs = torch.meshgrid(torch.arange(h).float(), torch.arange(w).float(), indexing="ij")
            self.register_buffer("coords0", torch.stack([xs, ys])[None])
        def forward(self, im1, im2, gt, iters=4):
            b, (h, w) = im1.shape[0], (self.h, self.w)
            f1, f2 = self.fnet(torch.cat([im1, im2])).chunk(2)
            corr = (f1.flatten(2).transpose(1, 2) @ f2.flatten(2)) / math.sqrt(f1.shape[1])  # all pairs
            corr = corr.reshape(b * h * w, 1, h, w)
            net, inp = self.cnet(im1).split([self.hd, self.cd], 1)
            net, inp = torch.tanh(net), F.relu(inp)
            c0 = self.coords0.expand(b, -1, -1, -1)
            c1, loss, flow_up = c0, 0, None
            for i in range(iters):
                c1 = c1.detach()
                cen = c1.permute(0, 2, 3, 1).reshape(b * h * w, 1, 1, 2) + self.delta
                grid = torch.stack([2 * cen[..., 0] / (w - 1) - 1, 2 * cen[..., 1] / (h - 1) - 1], -1)
                cf = F.grid_sample(corr, grid, align_corners=True).view(b, h, w, -1).permute(0, 3, 1, 2)
                flow = c1 - c0
                cor = F.relu(self.convc2(F.relu(self.convc1(cf))))
                flo = F.relu(self.convf2(F.relu(self.convf1(flow))))
                x = torch.cat([inp, F.relu(self.conv(torch.cat([cor, flo], 1))), flow], 1)
                hx = torch.cat([net, x], 1)
                z, rr = torch.sigmoid(self.convz(hx)), torch.sigmoid(self.convr(hx))
                net = (1 - z) * net + z * torch.tanh(self.convq(torch.cat([rr * net, x], 1)))  # ConvGRU
                c1 = c1 + self.fh(net)
                flow_up = F.interpolate(8 * (c1 - c0), scale_factor=8, mode="bilinear", align_corners=True)
                loss = loss + 0.8 ** (iters - i - 1) * (flow_up - gt).abs().mean()
            return loss, flow_up
    return M(), (g(2, 3, 64, 96), g(2, 3, 64, 96) * 0.5 + g(2, 3, 64, 96).roll(2, -1) * 0.5, g(2, 2, 64, 96))
@prog("embeddingbag_offsets_psw_max_padding")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.wsum = nn.EmbeddingBag(20000, 64, mode="sum", include_last_offset=True)
            self.maxb = nn.EmbeddingBag(5000, 32, mode="max")
            self.padm = nn.EmbeddingBag(1000, 32, mode="mean", padding_idx=0)
            self.mlp = nn.Sequential(nn.Linear(128 + 13, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU(),
                                     nn.Linear(64, 1))
        def forward(self, ids1, offs1, psw, ids2, offs2, ids3, dense, y):
            h = torch.cat([self.wsum(ids1, offs1, per_sample_weights=psw), self.maxb(ids2, offs2), self.padm(ids3),
                           dense], 1)
            return F.binary_cross_entropy_with_logits(self.mlp(h).squeeze(1), y)
    b = 256
    o1 = torch.cat([torch.zeros(1, dtype=torch.long), ints(40, b, lo=0, seed=1).cumsum(0)])  # empty bags too
    o2 = torch.cat([torch.zeros(1, dtype=torch.long), ints(20, b - 1, lo=1, seed=2).cumsum(0)])
    ids3 = ints(1000, b, 12, seed=3)
    ids3[:, 8:] = 0  # padding
    return M(), (ints(20000, int(o1[-1]), seed=4), o1, unif(int(o1[-1]), seed=5), ints(5000, int(o2[-1]) + 7, seed=6),
                 o2, ids3, g(b, 13), (unif(b, seed=7) < 0.3).float())
@prog("tabtransformer_column_embeddings")
def _():
    class M(nn.Module):
        def __init__(self, cards=(10, 25, 7, 100, 50, 12, 3, 40), nc=16, d=32):
            super().__init__()
            self.register_buffer("offs", torch.tensor((0,) + cards[:-1]).cumsum(0))
            self.emb = nn.Embedding(sum(cards), d - 8)
            self.col = nn.Parameter(torch.randn(len(cards), 8) * 0.1)  # shared column embedding (concatenated)
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 4 * d, 0.0, "gelu", batch_first=True), 3,
                                             enable_nested_tensor=False)
            self.ln = nn.LayerNorm(nc)
            self.mlp = nn.Sequential(nn.Linear(len(cards) * d + nc, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                     nn.Linear(128, 1))
        def forward(self, cat, cont, y):
            e = self.emb(cat + self.offs)
            e = torch.cat([e, self.col.expand(e.shape[0], -1, -1)], -1)
            h = torch.cat([self.enc(e).flatten(1), self.ln(cont)], 1)
            return F.binary_cross_entropy_with_logits(self.mlp(h).squeeze(1), y)
    cards = (10, 25, 7, 100, 50, 12, 3, 40)
    cat = torch.stack([ints(c, 256, seed=i) for i, c in enumerate(cards)], 1)
    return M(), (cat, g(256, 16), (unif(256, seed=9) < 0.4).float())
@prog("two_tower_inbatch_softmax_logq")
def _():
    class M(nn.Module):
        def __init__(self, ni=20000, nu=5000, d=64, t=0.05):
            super().__init__()
            self.t = t
            self.hist = nn.EmbeddingBag(ni, d, mode="mean")
            self.uid, self.iid, self.icat = nn.Embedding(nu, d), nn.Embedding(ni, d), nn.Embedding(200, 16)
            self.ut = nn.Sequential(nn.Linear(2 * d + 8, 256), nn.ReLU(), nn.Linear(256, d))
            self.it = nn.Sequential(nn.Linear(d + 16, 256), nn.ReLU(), nn.Linear(256, d))
            freq = 1.0 / (torch.arange(ni).float() + 10.0)  # Zipf-like sampling probabilities
            self.register_buffer("logq", (freq / freq.sum()).log())
        def forward(self, hist, offs, uid, dense, iid, icat):
            u = F.normalize(self.ut(torch.cat([self.hist(hist, offs), self.uid(uid), dense], 1)), dim=-1)
            v = F.normalize(self.it(torch.cat([self.iid(iid), self.icat(icat)], 1)), dim=-1)
            logits = u @ v.t() / self.t - self.logq[iid][None]  # logQ correction
            dup = (iid[None] == iid[:, None]) & ~torch.eye(iid.shape[0], dtype=torch.bool)
            logits = logits.masked_fill(dup, float("-inf"))  # the same item elsewhere in the batch is no negative
            return F.cross_entropy(logits, torch.arange(iid.shape[0]))
    b = 256
    offs = torch.cat([torch.zeros(1, dtype=torch.long), ints(30, b - 1, lo=1, seed=1).cumsum(0)])
    return M(), (ints(20000, int(offs[-1]) + 10, seed=2), offs, ints(5000, b, seed=3), g(b, 8), ints(1500, b, seed=4),
                 ints(200, b, seed=5))
@prog("two_tower_retrieval_topk_rerank", eval=True)
def _():
    class M(nn.Module):
        def __init__(self, d=64, k=50):
            super().__init__()
            self.k = k
            self.ut = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, d))
            self.rank = nn.Sequential(nn.Linear(3 * d, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 1))
        def forward(self, q, items):  # queries [B, 32], precomputed item tower [N, d]
            u = F.normalize(self.ut(q), dim=-1)
            s, idx = (u @ items.t()).topk(self.k, -1)
            cand = items[idx]  # [B, k, d]
            ue = u[:, None].expand(-1, self.k, -1)
            r = self.rank(torch.cat([ue, cand, ue * cand], -1)).squeeze(-1) + s
            return r.softmax(-1), idx
    return M(), (g(64, 32), F.normalize(g(8192, 64), dim=-1))
@prog("mobilenetv3_small_net", eval=True)
def _():
    class SE(nn.Module):
        def __init__(self, c):
            super().__init__()
            s = make_div(c // 4)
            self.f1, self.f2 = nn.Conv2d(c, s, 1), nn.Conv2d(s, c, 1)
        def forward(self, x):
            return x * F.hardsigmoid(self.f2(F.relu(self.f1(F.adaptive_avg_pool2d(x, 1)))))

    class Bneck(nn.Module):
        def __init__(self, cin, k, exp, cout, se, hs, s):
            super().__init__()
            act = nn.Hardswish if hs else nn.ReLU
            layers = [] if exp == cin else [nn.Conv2d(cin, exp, 1, bias=False), bn(exp), act()]
            layers += [nn.Conv2d(exp, exp, k, s, k // 2, groups=exp, bias=False), bn(exp), act()]
            layers += [SE(exp)] if se else []
            layers += [nn.Conv2d(exp, cout, 1, bias=False), bn(cout)]
            self.f, self.res = nn.Sequential(*layers), s == 1 and cin == cout
        def forward(self, x):
            return x + self.f(x) if self.res else self.f(x)
    cfg = [(16, 3, 16, 16, 1, 0, 2), (16, 3, 72, 24, 0, 0, 2), (24, 3, 88, 24, 0, 0, 1), (24, 5, 96, 40, 1, 1, 2),
           (40, 5, 240, 40, 1, 1, 1), (40, 5, 240, 40, 1, 1, 1), (40, 5, 120, 48, 1, 1, 1), (48, 5, 144, 48, 1, 1, 1),
           (48, 5, 288, 96, 1, 1, 2), (96, 5, 576, 96, 1, 1, 1), (96, 5, 576, 96, 1, 1, 1)]
    m = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), bn(16), nn.Hardswish(), *[Bneck(*c) for c in cfg],
                      nn.Conv2d(96, 576, 1, bias=False), bn(576), nn.Hardswish(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(1024, 1000))
    return m, (g(4, 3, 128, 128),)
@prog("efficientnet_b0_stages_stochastic_depth", eval=True)
def _():
    class StochasticDepth(nn.Module):  # torchvision.ops.StochasticDepth, "row" mode
        def __init__(self, p):
            super().__init__()
            self.p = p
        def forward(self, x):
            if not self.training or self.p == 0.0:
                return x
            keep = torch.empty(x.shape[0], 1, 1, 1).bernoulli_(1 - self.p)
            return x * keep / (1 - self.p)

    class MBConv(nn.Module):
        def __init__(self, cin, cout, k, s, e, sd):
            super().__init__()
            mid = cin * e
            bnx = lambda c: nn.BatchNorm2d(c, eps=1e-3)  # noqa: E731
            layers = [] if e == 1 else [nn.Conv2d(cin, mid, 1, bias=False), bnx(mid), nn.SiLU()]
            layers += [nn.Conv2d(mid, mid, k, s, k // 2, groups=mid, bias=False), bnx(mid), nn.SiLU()]
            sq = max(1, cin // 4)
            self.f = nn.Sequential(*layers)
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(mid, sq, 1), nn.SiLU(), nn.Conv2d(sq, mid, 1),
                                    nn.Sigmoid())
            self.proj, self.sd = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), bnx(cout)), StochasticDepth(sd)
            self.res = s == 1 and cin == cout
        def forward(self, x):
            h = self.f(x)
            h = self.proj(h * self.se(h))
            return x + self.sd(h) if self.res else h
    cfg = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3)]
    blocks, n, i = [], sum(c[-1] for c in cfg), 0
    for e, k, s, cin, cout, reps in cfg:
        for r in range(reps):
            blocks.append(MBConv(cin if r == 0 else cout, cout, k, s if r == 0 else 1, e, 0.2 * i / n))
            i += 1
    m = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32, eps=1e-3), nn.SiLU(), *blocks,
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(80, 100))
    return m, (g(4, 3, 112, 112),)
@prog("swinv2_cosine_attn_cpb_patch_merging")
def _():
    part, unpart = window_partition, window_merge

    class Block(nn.Module):  # SwinV2: scaled cosine attention, log-spaced continuous position bias, res-post-norm
        def __init__(self, d, nh, res, w, shift):
            super().__init__()
            self.nh, self.res, self.w, self.shift = nh, res, w, shift
            self.qkv, self.proj = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d)
            self.q_bias, self.v_bias = nn.Parameter(torch.randn(d) * 0.02), nn.Parameter(torch.randn(d) * 0.02)
            self.logit_scale = nn.Parameter(torch.log(10 * torch.ones(nh, 1, 1)))
            self.cpb = nn.Sequential(nn.Linear(2, 256), nn.ReLU(), nn.Linear(256, nh, bias=False))
            r = torch.arange(-(w - 1), w).float()
            tab = torch.stack(torch.meshgrid(r, r, indexing="ij"), -1) / (w - 1) * 8
            self.register_buffer("table", torch.sign(tab) * torch.log2(tab.abs() + 1.0) / math.log2(8))
            co = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
            rel = (co[:, :, None] - co[:, None, :]).permute(1, 2, 0) + (w - 1)
            self.register_buffer("idx", rel[..., 0] * (2 * w - 1) + rel[..., 1])
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            if not shift:
                self.mask = None
            else:
                self.register_buffer("mask", shifted_window_mask(res, w, shift, part))
        def attn(self, x):
            bw, n, c = x.shape
            bias = torch.cat([self.q_bias, torch.zeros_like(self.v_bias), self.v_bias])
            q, k, v = F.linear(x, self.qkv.weight, bias).view(bw, n, 3, self.nh, -1).permute(2, 0, 3, 1, 4)
            a = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
            a = a * torch.clamp(self.logit_scale, max=math.log(100.0)).exp()
            pb = self.cpb(self.table).view(-1, self.nh)[self.idx.view(-1)].view(n, n, self.nh).permute(2, 0, 1)
            a = a + 16 * torch.sigmoid(pb)[None]
            if self.mask is not None:
                nw = self.mask.shape[0]
                a = (a.view(bw // nw, nw, self.nh, n, n) + self.mask[None, :, None]).view(bw, self.nh, n, n)
            return self.proj((a.softmax(-1) @ v).transpose(1, 2).reshape(bw, n, c))
        def forward(self, x):  # [B, L, C]
            b, L, c = x.shape
            r = self.res
            h = x.view(b, r, r, c)
            if self.shift:
                h = torch.roll(h, (-self.shift, -self.shift), (1, 2))
            h = unpart(self.attn(part(h, self.w)), self.w, b, r, r)
            if self.shift:
                h = torch.roll(h, (self.shift, self.shift), (1, 2))
            x = x + self.n1(h.reshape(b, L, c))
            return x + self.n2(self.mlp(x))

    class Merge(nn.Module):  # SwinV2 patch merging: reduction, then norm
        def __init__(self, d, res):
            super().__init__()
            self.res, self.red, self.norm = res, nn.Linear(4 * d, 2 * d, bias=False), nn.LayerNorm(2 * d)
        def forward(self, x):
            b, _, c = x.shape
            x = x.view(b, self.res, self.res, c)
            x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
            return self.norm(self.red(x.reshape(b, -1, 4 * c)))

    class M(nn.Module):
        def __init__(self, d=64):
            super().__init__()
            self.patch, self.pn = nn.Conv2d(3, d, 4, 4), nn.LayerNorm(d)
            self.s1 = nn.Sequential(Block(d, 2, 16, 4, 0), Block(d, 2, 16, 4, 2), Merge(d, 16))
            self.s2 = nn.Sequential(Block(2 * d, 4, 8, 4, 0), Block(2 * d, 4, 8, 4, 2))
            self.norm, self.head = nn.LayerNorm(2 * d), nn.Linear(2 * d, 10)
        def forward(self, x, y):
            h = self.s2(self.s1(self.pn(self.patch(x).flatten(2).transpose(1, 2))))
            return F.cross_entropy(self.head(self.norm(h).mean(1)), y)
    return M(), (g(4, 3, 64, 64), ints(10, 4, seed=1))
@prog("coordconv_soft_argmax_keypoint")
def _():
    class AddCoords(nn.Module):
        def forward(self, x):
            b, _, h, w = x.shape
            yy = torch.linspace(-1, 1, h)[:, None].expand(h, w)
            xx = torch.linspace(-1, 1, w)[None].expand(h, w)
            c = torch.stack([xx, yy, torch.sqrt(xx * xx + yy * yy)])[None].expand(b, -1, -1, -1)
            return torch.cat([x, c], 1)

    class M(nn.Module):
        def __init__(self, c=16):
            super().__init__()
            self.f = nn.Sequential(AddCoords(), nn.Conv2d(4, c, 3, padding=1), nn.ReLU(), AddCoords(),
                                   nn.Conv2d(c + 3, c, 3, padding=1), nn.ReLU(), AddCoords(), nn.Conv2d(c + 3, 1, 1))
            self.beta = nn.Parameter(torch.tensor(5.0))
        def forward(self, x, tgt):
            b, _, h, w = x.shape
            p = (self.beta * self.f(x).flatten(1)).softmax(-1).view(b, h, w)  # spatial soft-argmax
            px = (p.sum(1) * torch.linspace(-1, 1, w)).sum(-1)
            py = (p.sum(2) * torch.linspace(-1, 1, h)).sum(-1)
            pred = torch.stack([px, py], -1)
            return F.smooth_l1_loss(pred, tgt, beta=0.1), pred
    b, s = 8, 48
    yi, xi = ints(s, b, seed=1), ints(s, b, seed=2)
    x = torch.zeros(b, 1, s, s)
    x[torch.arange(b), 0, yi, xi] = 1.0
    x = F.avg_pool2d(x, 3, 1, 1) * 9 + 0.05 * g(b, 1, s, s)
    return M(), (x, torch.stack([xi, yi], -1).float() / (s - 1) * 2 - 1)
@prog("unet_decoder_odd_sizes_align_corners")
def _():
    def dc(cin, cout):
        return nn.Sequential(cbr(cin, cout, 3, p=1), cbr(cout, cout, 3, p=1))

    class Up(nn.Module):
        def __init__(self, cin, cskip, cout):
            super().__init__()
            self.reduce, self.f = nn.Conv2d(cin, cout, 1), dc(cout + cskip, cout)
        def forward(self, x, skip):
            x = F.interpolate(self.reduce(x), size=skip.shape[-2:], mode="bilinear", align_corners=True)
            return self.f(torch.cat([x, skip], 1))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.e1, self.e2, self.e3, self.e4 = dc(3, 16), dc(16, 32), dc(32, 64), dc(64, 128)
            self.u3, self.u2, self.u1 = Up(128, 64, 64), Up(64, 32, 32), Up(32, 16, 16)
            self.out = nn.Conv2d(16, 5, 1)
        def forward(self, x, tgt):  # 75 x 99 -> 37 x 49 -> 18 x 24 -> 9 x 12
            a = self.e1(x)
            b = self.e2(F.max_pool2d(a, 2))
            c = self.e3(F.max_pool2d(b, 2))
            d = self.e4(F.max_pool2d(c, 2))
            y = self.out(self.u1(self.u2(self.u3(d, c), b), a))
            return F.cross_entropy(y, tgt), y
    return M(), (g(2, 3, 75, 99), ints(5, 2, 75, 99, seed=1))
@prog("pixel_unshuffle_shuffle_instnorm_affine")
def _():
    def icnr(conv, r):  # sub-pixel init: every r x r output block starts equal
        with torch.no_grad():
            o, i, k, _ = conv.weight.shape
            conv.weight.copy_(torch.randn(o // (r * r), i, k, k).mul(0.05).repeat_interleave(r * r, 0))
        return conv
    c = 48
    m = nn.Sequential(nn.PixelUnshuffle(2), nn.Conv2d(12, c, 3, padding=1),
                      nn.InstanceNorm2d(c, affine=True, track_running_stats=True), nn.PReLU(c),
                      nn.Conv2d(c, c, 3, padding=1), nn.InstanceNorm2d(c, affine=True), nn.PReLU(),
                      icnr(nn.Conv2d(c, 3 * 16, 3, padding=1), 4), nn.PixelShuffle(4))
    return m, (g(4, 3, 64, 64),)
@prog("deit_dist_token_bicubic_pos_embed")
def _():
    class Block(nn.Module):
        def __init__(self, d, nh):
            super().__init__()
            self.nh = nh
            self.n1, self.n2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 3 * d), nn.Linear(3 * d, d)
        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, n, 3, self.nh, -1).permute(2, 0, 3, 1, 4)
            a = ((q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5).softmax(-1)
            x = x + self.proj((a @ v).transpose(1, 2).reshape(b, n, d))
            return x + self.fc2(F.gelu(self.fc1(self.n2(x))))

    class M(nn.Module):
        def __init__(self, d=128, grid0=7, p=8):
            super().__init__()
            self.patch = nn.Conv2d(3, d, p, p)
            self.cls, self.dist = nn.Parameter(torch.randn(1, 1, d) * 0.02), nn.Parameter(torch.randn(1, 1, d) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, 2 + grid0 * grid0, d) * 0.02)  # learned at 56 x 56
            self.blocks = nn.Sequential(*[Block(d, 4) for _ in range(3)])
            self.norm, self.head, self.head_dist = nn.LayerNorm(d, eps=1e-6), nn.Linear(d, 100), nn.Linear(d, 100)
        def forward(self, x, y, y_teacher):
            h = self.patch(x)
            b, d, gh, gw = h.shape
            g0 = int(math.sqrt(self.pos.shape[1] - 2))
            pp = self.pos[:, 2:].reshape(1, g0, g0, d).permute(0, 3, 1, 2)
            pp = F.interpolate(pp, size=(gh, gw), mode="bicubic", align_corners=False).flatten(2).transpose(1, 2)
            h = torch.cat([self.cls.expand(b, -1, -1) + self.pos[:, :1], self.dist.expand(b, -1, -1) + self.pos[:, 1:2],
                           h.flatten(2).transpose(1, 2) + pp], 1)
            h = self.norm(self.blocks(h))
            zc, zd = self.head(h[:, 0]), self.head_dist(h[:, 1])
            return 0.5 * F.cross_entropy(zc, y) + 0.5 * F.cross_entropy(zd, y_teacher), (zc + zd) / 2
    return M(), (g(4, 3, 64, 64), ints(100, 4, seed=1), ints(100, 4, seed=2))
@prog("logmel_conv1d_fourier_filterbank_cnn")
def _():
    def mel_fb(nf, nm, sr):
        hz2mel, mel2hz = (lambda f: 2595 * math.log10(1 + f / 700)), (lambda m: 700 * (10 ** (m / 2595) - 1))
        pts = torch.tensor([mel2hz(m) for m in torch.linspace(hz2mel(0.0), hz2mel(sr / 2), nm + 2).tolist()])
        f = torch.linspace(0, sr / 2, nf)
        lo, c, hi = pts[:-2, None], pts[1:-1, None], pts[2:, None]
        return torch.clamp(torch.minimum((f - lo) / (c - lo), (hi - f) / (hi - c)), min=0)

    class M(nn.Module):
        def __init__(self, n_fft=400, hop=160, n_mels=40, sr=16000):
            super().__init__()
            self.hop, nf = hop, n_fft // 2 + 1
            n, k = torch.arange(n_fft).float(), torch.arange(nf).float()[:, None]
            win = torch.hann_window(n_fft, periodic=True)
            ang = 2 * math.pi * k * n / n_fft
            self.fourier = nn.Parameter(torch.cat([torch.cos(ang) * win, -torch.sin(ang) * win])[:, None])  # learnable
            self.register_buffer("mel", mel_fb(nf, n_mels, sr))
            self.cnn = nn.Sequential(cbr(1, 16, 3, p=1), nn.MaxPool2d(2), cbr(16, 32, 3, p=1), nn.MaxPool2d(2),
                                     cbr(32, 64, 3, p=1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 35))
        def forward(self, wav, y):
            spec = F.conv1d(F.pad(wav[:, None], (200, 200), mode="reflect"), self.fourier, stride=self.hop)
            re, im = spec.chunk(2, 1)
            lm = torch.log(torch.matmul(self.mel, re * re + im * im) + 1e-6)  # [B, mels, frames]
            lm = (lm - lm.mean((1, 2), keepdim=True)) / (lm.std((1, 2), keepdim=True) + 1e-5)
            return F.cross_entropy(self.cnn(lm[:, None]), y)
    return M(), (g(4, 16000) * 0.1, ints(35, 4, seed=1))
@prog("wavenet_mulaw_two_dilation_stacks")
def _():
    class Layer(nn.Module):
        def __init__(self, r, gate, skip, dil):
            super().__init__()
            self.dil = dil
            self.conv = nn.Conv1d(r, 2 * gate, 2, dilation=dil)
            self.res, self.skip = nn.Conv1d(gate, r, 1), nn.Conv1d(gate, skip, 1)
        def forward(self, x):
            h = self.conv(F.pad(x, (self.dil, 0)))
            a, b = h.chunk(2, 1)
            z = torch.tanh(a) * torch.sigmoid(b)
            return x + self.res(z), self.skip(z)

    class M(nn.Module):
        def __init__(self, q=256, r=32, gate=32, skip=64):
            super().__init__()
            self.emb = nn.Embedding(q, r)
            self.layers = nn.ModuleList(Layer(r, gate, skip, 2 ** i) for _ in range(2) for i in range(8))
            self.out = nn.Sequential(nn.ReLU(), nn.Conv1d(skip, 128, 1), nn.ReLU(), nn.Conv1d(128, q, 1))
        def forward(self, ids):  # mu-law codes [B, T + 1]: predict each next sample
            x, s = self.emb(ids[:, :-1]).transpose(1, 2), 0
            for l in self.layers:
                x, sk = l(x)
                s = s + sk
            return F.cross_entropy(self.out(s), ids[:, 1:])
    t = torch.linspace(0, 60, 513)
    wav = 0.6 * torch.sin(t[None] * torch.tensor([[1.0], [1.7]])) + 0.05 * g(2, 513)
    mu = torch.sign(wav) * torch.log1p(255 * wav.abs().clamp(max=1)) / math.log(256)
    return M(), (((mu + 1) / 2 * 255 + 0.5).long().clamp(0, 255),)
@prog("losses_focal_smoothing_semihard_triplet")
def _():
    class M(nn.Module):
        def __init__(self, nc=10, eps=0.1, gamma=2.0, margin=0.2):
            super().__init__()
            self.eps, self.gamma, self.margin = eps, gamma, margin
            self.body = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU())
            self.emb, self.cls = nn.Linear(128, 32), nn.Linear(128, nc)
            self.register_buffer("alpha", torch.linspace(0.5, 1.5, nc))
        def forward(self, x, y):
            h = self.body(x)
            e, z = F.normalize(self.emb(h), dim=-1), self.cls(h)
            lp = z.log_softmax(-1)
            nll = -lp.gather(1, y[:, None]).squeeze(1)
            ls = ((1 - self.eps) * nll - self.eps * lp.mean(-1)).mean()  # label smoothing
            pt = torch.exp(-nll)
            focal = (self.alpha[y] * (1 - pt) ** self.gamma * nll).mean()
            # FaceNet semi-hard mining: for each (anchor, positive), the closest negative farther than the positive
            sq = (e * e).sum(1)
            d = (sq[:, None] + sq[None] - 2 * e @ e.t()).clamp(min=1e-12).sqrt()
            same = y[:, None] == y[None]
            pos = same & ~torch.eye(y.shape[0], dtype=torch.bool)
            neg = ~same
            dap, dan = d[:, :, None], d[:, None, :]  # [a, p, 1], [a, 1, n]
            semi = neg[:, None, :] & (dan > dap)
            semi_d = torch.where(semi, dan.expand_as(semi), torch.full_like(dan.expand_as(semi), 1e4)).min(-1).values
            hard_d = torch.where(neg, d, torch.full_like(d, -1e4)).max(-1).values[:, None].expand_as(semi_d)
            dn = torch.where(semi.any(-1), semi_d, hard_d)
            trip = (F.relu(d - dn + self.margin) * pos).sum() / pos.sum().clamp(min=1)
            # and torch's own loss on the hardest triplet per anchor, cosine distance
            pi = torch.where(pos, d, torch.full_like(d, -1.0)).argmax(1)
            ni = torch.where(neg, d, torch.full_like(d, 1e4)).argmin(1)
            tl = F.triplet_margin_with_distance_loss(
                e, e[pi], e[ni], distance_function=lambda a, b: 1 - F.cosine_similarity(a, b), margin=0.3)
            return ls + focal + trip + tl
    return M(), (g(128, 64), ints(10, 128, seed=1))
@prog("ctc_conv_concat_targets_zero_infinity")
def _():
    class M(nn.Module):
        def __init__(self, nc=30):
            super().__init__()
            self.f = nn.Sequential(nn.Conv1d(80, 128, 5, 2, 2), bn(128, 1), nn.ReLU(),
                                   nn.Conv1d(128, 128, 3, padding=1), bn(128, 1), nn.ReLU(),
                                   nn.Conv1d(128, 128, 3, padding=2, dilation=2), nn.ReLU())
            self.out = nn.Linear(128, nc)
        def forward(self, feats, targets, in_lens, tgt_lens):  # feats [B, 80, T]; targets 1-D, concatenated
            lp = self.out(self.f(feats).transpose(1, 2)).log_softmax(-1).transpose(0, 1)  # [T / 2, B, C]
            return F.ctc_loss(lp, targets, (in_lens + 1) // 2, tgt_lens, blank=0, reduction="mean", zero_infinity=True)
    tl = ints(30, 8, lo=8, seed=1)
    tl[3] = 70  # longer than its input: an infinite loss, zeroed
    il = torch.tensor([200, 196, 190, 60, 180, 200, 150, 170])
    return M(), (g(8, 80, 200), ints(30, int(tl.sum()), lo=1, seed=2), il, tl)
@prog("kl_full_cov_mvn_distributions")
def _(closed_form=False):
    D = torch.distributions

    class M(nn.Module):
        def __init__(self, i=32, d=8):
            super().__init__()
            self.d, self.closed_form = d, closed_form
            self.enc = nn.Sequential(nn.Linear(i, 128), nn.Tanh(), nn.Linear(128, d + d * d + 2 * d))
            self.dec = nn.Sequential(nn.Linear(d, 128), nn.Tanh(), nn.Linear(128, i))
            self.p_mu, self.p_raw = nn.Parameter(torch.zeros(d)), nn.Parameter(torch.eye(d) + 0.1 * torch.randn(d, d))
            self.register_buffer("tri", torch.tril(torch.ones(d, d), -1))
        def tril(self, raw):
            return raw * self.tri + torch.diag_embed(F.softplus(torch.diagonal(raw, dim1=-2, dim2=-1)) + 1e-3)
        def forward(self, x, eps, tgt):
            d = self.d
            mu, raw, m2, s2 = self.enc(x).split([d, d * d, d, d], -1)
            q = D.MultivariateNormal(mu, scale_tril=self.tril(raw.view(-1, d, d)))
            p = D.MultivariateNormal(self.p_mu, scale_tril=self.tril(self.p_raw))
            if self.closed_form:  # what D.kl_divergence computes, written out with triangular solves
                lp, lq = p.scale_tril.expand(x.shape[0], d, d), q.scale_tril
                m = torch.linalg.solve_triangular(lp, lq, upper=False)
                y = torch.linalg.solve_triangular(lp, (p.loc - mu)[..., None], upper=False).squeeze(-1)
                logdiag = lambda t: torch.log(torch.diagonal(t, dim1=-2, dim2=-1)).sum(-1)  # noqa: E731
                ld = logdiag(lp) - logdiag(lq)
                kl_full = (0.5 * (m.pow(2).sum((-2, -1)) + y.pow(2).sum(-1) - d) + ld).mean()
            else:
                kl_full = D.kl_divergence(q, p).mean()
            qd = D.Independent(D.Normal(m2, F.softplus(s2) + 1e-3), 1)
            kl_diag = D.kl_divergence(qd, D.Independent(D.Normal(torch.zeros_like(m2), torch.ones_like(m2)), 1)).mean()
            z = mu + (q.scale_tril @ eps[..., None]).squeeze(-1)  # rsample with the given noise
            rec = F.mse_loss(self.dec(z), x)
            return rec + 0.1 * (kl_full + kl_diag) - 0.01 * q.log_prob(tgt).mean(), z
    return M(), (g(256, 32), g(256, 8), g(257, 8)[:256])
@prog("kl_full_cov_closed_form_solve_triangular")
def _():
    return P["kl_full_cov_mvn_distributions"](closed_form=True)
@prog("norms_gn_instnorm_affine_ln_channels_last")
def _():
    class M(nn.Module):
        def __init__(self, c=32, h=64):
            super().__init__()
            self.c1, self.gn = nn.Conv2d(c, h, 3, padding=1), nn.GroupNorm(8, h)
            self.c2 = nn.Conv2d(h, h, 3, padding=1)
            self.inorm = nn.InstanceNorm2d(h, affine=True, track_running_stats=True)
            self.ln, self.c3 = nn.LayerNorm(h), nn.Conv2d(h, c, 1)
        def forward(self, x):
            h = F.silu(self.gn(self.c1(x)))
            h = F.relu(self.inorm(self.c2(h)))
            h = self.ln(h.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)  # LayerNorm over channels, channels-last view
            return x + self.c3(h)
    return M().to(memory_format=torch.channels_last), (g(8, 32, 16, 16).to(memory_format=torch.channels_last),)
@prog("hifigan_weight_norm_mrf_spectral_norm_disc")
def _():
    wn, sn = nn.utils.parametrizations.weight_norm, nn.utils.parametrizations.spectral_norm

    class ResBlock(nn.Module):  # multi-receptive-field fusion
        def __init__(self, c, k, dils=(1, 3, 5)):
            super().__init__()
            self.a = nn.ModuleList(wn(nn.Conv1d(c, c, k, dilation=d, padding=d * (k - 1) // 2)) for d in dils)
            self.b = nn.ModuleList(wn(nn.Conv1d(c, c, k, padding=(k - 1) // 2)) for _ in dils)
        def forward(self, x):
            for a, b in zip(self.a, self.b):
                x = x + b(F.leaky_relu(a(F.leaky_relu(x, 0.1)), 0.1))
            return x

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = wn(nn.Conv1d(80, 128, 7, padding=3))
            self.ups = nn.ModuleList([wn(nn.ConvTranspose1d(128, 64, 16, 8, 4)),
                                      wn(nn.ConvTranspose1d(64, 32, 8, 4, 2))])
            self.mrf = nn.ModuleList(nn.ModuleList([ResBlock(c, 3), ResBlock(c, 7)]) for c in (64, 32))
            self.post = wn(nn.Conv1d(32, 1, 7, padding=3))
            self.disc = nn.ModuleList([sn(nn.Conv1d(1, 16, 15, 1, 7)), sn(nn.Conv1d(16, 64, 41, 4, 20, groups=4)),
                                       sn(nn.Conv1d(64, 128, 41, 4, 20, groups=16)),
                                       sn(nn.Conv1d(128, 1, 3, padding=1))])
        def forward(self, mel, wav):
            x = self.pre(mel)
            for up, rbs in zip(self.ups, self.mrf):
                x = up(F.leaky_relu(x, 0.1))
                x = sum(rb(x) for rb in rbs) / len(rbs)
            y = torch.tanh(self.post(F.leaky_relu(x)))
            feats, h = [], y
            for i, c in enumerate(self.disc):
                h = c(h)
                if i < len(self.disc) - 1:
                    h = F.leaky_relu(h, 0.1)
                    feats.append(h)
            return ((h - 1) ** 2).mean() + 45 * F.l1_loss(y, wav), y
    return M(), (g(2, 80, 32), 0.3 * g(2, 1, 1024))
@prog("optim_functional_adamw_sgd_nesterov_clip")
def _():
    from torch.func import functional_call
    from torch.optim.adamw import adamw
    from torch.optim.sgd import sgd

    class M(nn.Module):  # a clipped step of torch.optim's own AdamW (body) and Nesterov SGD (head), then the loss
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU())
            self.head = nn.Linear(256, 10)
        def forward(self, x, y, *state):  # grads (body, head), exp_avg, exp_avg_sq (body), momentum (head)
            names = [n for n, _ in self.body.named_parameters()]
            pb = [p.clone() for p in self.body.parameters()]
            ph = [p.clone() for p in self.head.parameters()]
            nb, nh = len(pb), len(ph)
            gs = [t.clone() for t in state[:nb + nh]]
            total = nn.utils.get_total_norm(gs)  # clip_grad_norm_(max_norm=1.0)
            torch._foreach_mul_(gs, (1.0 / (total + 1e-6)).clamp(max=1.0))
            ea = [t.clone() for t in state[nb + nh:2 * nb + nh]]
            es = [t.clone() for t in state[2 * nb + nh:3 * nb + nh]]
            mom = [t.clone() for t in state[3 * nb + nh:]]
            steps = [torch.tensor(9.0) for _ in pb]
            adamw(pb, gs[:nb], ea, es, [], steps, foreach=False, amsgrad=False, beta1=0.9, beta2=0.999,
                  lr=1e-2, weight_decay=0.05, eps=1e-8, maximize=False)
            sgd(ph, gs[nb:], mom, foreach=False, weight_decay=1e-4, momentum=0.9, lr=0.1, dampening=0.0,
                nesterov=True, maximize=False)
            out = F.linear(functional_call(self.body, dict(zip(names, pb)), (x,)), ph[0], ph[1])
            return F.cross_entropy(out, y), torch.cat([t.flatten() for t in ea + es + mom])
    m = M()
    bs, hs = [p.shape for p in m.body.parameters()], [p.shape for p in m.head.parameters()]
    gs = [g(*s) * 0.05 for s in bs + hs]
    return m, (g(256, 64), ints(10, 256, seed=1), *gs, *(0.02 * (unif(*s, seed=3) - 0.5) for s in bs),
               *(1e-4 * unif(*s, seed=2) for s in bs), *(0.01 * g(*s) for s in hs))
@prog("sam_autograd_grad_functional_call")
def _():
    from torch.func import functional_call

    class M(nn.Module):  # sharpness-aware minimization: the loss at w + rho * g / |g|
        def __init__(self, rho=0.05):
            super().__init__()
            self.rho = rho
            self.net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
        def forward(self, x, y):
            ps = dict(self.net.named_parameters())
            loss = F.cross_entropy(functional_call(self.net, ps, (x,)), y)
            grads = torch.autograd.grad(loss, list(ps.values()))
            scale = self.rho / (nn.utils.get_total_norm(grads) + 1e-12)
            adv = {k: p + (gr * scale).detach() for (k, p), gr in zip(ps.items(), grads)}
            return F.cross_entropy(functional_call(self.net, adv, (x,)), y)
    return M(), (g(256, 64), ints(10, 256, seed=1))
@prog("autocast_bf16_causal_lm_tied")
def _():
    class Block(nn.Module):
        def __init__(self, d, nh):
            super().__init__()
            self.nh = nh
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.nh, -1).permute(2, 0, 3, 1, 4)
            x = x + self.o(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d))
            return x + self.fc2(F.gelu(self.fc1(self.n2(x)), approximate="tanh"))

    class M(nn.Module):
        def __init__(self, v=2000, d=128, s=64):
            super().__init__()
            self.emb, self.pos = nn.Embedding(v, d), nn.Parameter(torch.randn(s, d) * 0.02)
            self.blocks, self.nf = nn.ModuleList(Block(d, 4) for _ in range(2)), nn.LayerNorm(d)
            nn.init.normal_(self.emb.weight, std=0.02)
        def forward(self, ids, tgt):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                h = self.emb(ids) + self.pos
                for b in self.blocks:
                    h = b(h)
                logits = F.linear(self.nf(h), self.emb.weight)  # tied output embedding
            return F.cross_entropy(logits.float().flatten(0, 1), tgt.flatten())
    return M(), (ints(2000, 8, 64, seed=1), ints(2000, 8, 64, seed=2))


run = runner(P, EVAL, 42)


if __name__ == "__main__":
    T.main(P, run)
