"""A second sweep of ordinary PyTorch modules through torch.compile(backend="axle"), of kinds
benchmarks/torch_programs.py does not have (residual blocks with BatchNorm in train mode,
inverted residuals, ConvNeXt, ViT, GPT-2 / LLaMA blocks, RoPE, decoder layers, EmbeddingBag,
3-D convolutions, grid_sample, Unfold/Fold, CTC and other losses, parametrizations, scans,
sorting, scatter message passing, VAE, recommenders, TCN, PixelCNN, NeRF / SIREN, Conformer,
FNet's FFT). Same harness: forward outputs and one training step's gradients against eager
PyTorch, interleaved timing (medians). Also checked here: buffers a forward updates (BatchNorm
running statistics, spectral norm's power iteration) against eager's, and whether a graph fell
back to eager (the bridge's warning, otherwise silent) or Dynamo broke the graph.

Usage: AXLE_NUM_THREADS=1 python benchmarks/torch_programs_2.py [name,name,...]"""
import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_programs as T  # sets AXLE_NUM_THREADS / torch threads, registers the backend
from torch_programs import g, _loss, _rel
from axle.torch.backend import STATS, AxleFallbackWarning

def sweep():
    """A sweep's table: (programs by name, the names run in eval mode, the decorator that
    registers a program: @prog(name, eval=False))."""
    P, EVAL = {}, set()

    def prog(name, eval=False):
        def deco(f):
            P[name] = f
            if eval:
                EVAL.add(name)
            return f
        return deco
    return P, EVAL, prog


P, EVAL, prog = sweep()


def ints(hi, *s, lo=0, seed=0):
    return torch.randint(lo, hi, s, generator=torch.Generator().manual_seed(seed))


def window_partition(x, w):
    """Swin's windows: [B, H, W, C] -> [B * nW, w * w, C]."""
    b, h, ww, c = x.shape
    return x.view(b, h // w, w, ww // w, w, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, c)


def window_merge(x, w, b, h, ww):
    """window_partition's inverse: [B * nW, w * w, C] -> [B, H, W, C]."""
    return x.view(b, h // w, ww // w, w, w, -1).permute(0, 1, 3, 2, 4, 5).reshape(b, h, ww, -1)


def shifted_window_mask(res, w, shift, part):
    """Swin's attention mask for windows of w over a res x res map shifted by `shift`
    (-100 between pixels that came from different regions before the roll); part(x, w)
    splits [B, H, W, C] into windows."""
    img, cnt = torch.zeros(1, res, res, 1), 0
    for hs in (slice(0, -w), slice(-w, -shift), slice(-shift, None)):
        for ws in (slice(0, -w), slice(-w, -shift), slice(-shift, None)):
            img[:, hs, ws], cnt = cnt, cnt + 1
    mw = part(img, w).squeeze(-1)
    m = mw[:, None] - mw[:, :, None]
    return m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0)


def bn(c, d=2):
    return (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)[d - 1](c)


class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), bn(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), bn(cout)
        self.sc = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), bn(cout))
                   if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + self.sc(x))


@prog("resnet_basic_train")
def _():
    return nn.Sequential(Basic(64, 64, 1), Basic(64, 128, 2)), (g(4, 64, 16, 16),)
@prog("resnet_bottleneck_eval", eval=True)
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.f = nn.Sequential(nn.Conv2d(256, 64, 1, bias=False), bn(64), nn.ReLU(),
                                   nn.Conv2d(64, 64, 3, padding=1, bias=False), bn(64), nn.ReLU(),
                                   nn.Conv2d(64, 256, 1, bias=False), bn(256))

        def forward(self, x):
            return F.relu(self.f(x) + x)
    return M(), (g(4, 256, 14, 14),)
@prog("mobilenetv2_inverted_train")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.f = nn.Sequential(nn.Conv2d(24, 144, 1, bias=False), bn(144), nn.ReLU6(),
                                   nn.Conv2d(144, 144, 3, padding=1, groups=144, bias=False), bn(144), nn.ReLU6(),
                                   nn.Conv2d(144, 24, 1, bias=False), bn(24))

        def forward(self, x):
            return x + self.f(x)
    return M(), (g(8, 24, 28, 28),)
@prog("mbconv_se_silu", eval=True)
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.exp = nn.Sequential(nn.Conv2d(32, 128, 1, bias=False), bn(128), nn.SiLU(),
                                     nn.Conv2d(128, 128, 5, padding=2, groups=128, bias=False), bn(128), nn.SiLU())
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(128, 8, 1), nn.SiLU(),
                                    nn.Conv2d(8, 128, 1), nn.Sigmoid())
            self.proj = nn.Sequential(nn.Conv2d(128, 32, 1, bias=False), bn(32))

        def forward(self, x):
            h = self.exp(x)
            return x + self.proj(h * self.se(h))
    return M(), (g(8, 32, 28, 28),)
@prog("convnext_block")
def _():
    class M(nn.Module):
        def __init__(self, d=96):
            super().__init__()
            self.dw = nn.Conv2d(d, d, 7, padding=3, groups=d)
            self.ln = nn.LayerNorm(d, eps=1e-6)
            self.pw1, self.pw2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.gamma = nn.Parameter(torch.full((d,), 0.5))

        def forward(self, x):
            h = self.dw(x).permute(0, 2, 3, 1)
            h = self.gamma * self.pw2(F.gelu(self.pw1(self.ln(h))))
            return x + h.permute(0, 3, 1, 2)
    return M(), (g(4, 96, 14, 14),)
@prog("vit_tiny_cls")
def _():
    class M(nn.Module):
        def __init__(self, d=128):
            super().__init__()
            self.patch = nn.Conv2d(3, d, 4, stride=4)
            self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, 65, d) * 0.02)
            self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, activation="gelu",
                                                                   batch_first=True, norm_first=True) for _ in range(2))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, 10)

        def forward(self, x):
            h = self.patch(x).flatten(2).transpose(1, 2)
            h = torch.cat([self.cls.expand(h.shape[0], -1, -1), h], 1) + self.pos
            for b in self.blocks:
                h = b(h)
            return self.head(self.ln(h[:, 0]))
    return M(), (g(8, 3, 32, 32),)
@prog("gpt2_block_causal")
def _():
    class M(nn.Module):
        def __init__(self, d=256, h=4, s=128):
            super().__init__()
            self.h = h
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.register_buffer("bias", torch.tril(torch.ones(s, s)).view(1, 1, s, s))

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.c_attn(self.ln1(x)).split(d, 2)
            q, k, v = (t.view(b, s, self.h, d // self.h).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(self.bias[:, :, :s, :s] == 0, float("-inf")), dim=-1)
            x = x + self.c_proj((att @ v).transpose(1, 2).contiguous().view(b, s, d))
            return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
    return M(), (g(4, 128, 256),)
@prog("rope_attention")
def _():
    class M(nn.Module):
        def __init__(self, d=256, h=8, s=128):
            super().__init__()
            self.h, self.hd = h, d // h
            self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
            inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
            fr = torch.outer(torch.arange(s).float(), inv)
            emb = torch.cat([fr, fr], -1)
            self.register_buffer("cos", emb.cos())
            self.register_buffer("sin", emb.sin())

        def rot(self, t):
            t1, t2 = t[..., : self.hd // 2], t[..., self.hd // 2:]
            return t * self.cos + torch.cat([-t2, t1], -1) * self.sin

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = (w(x).view(b, s, self.h, self.hd).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
            y = F.scaled_dot_product_attention(self.rot(q), self.rot(k), v, is_causal=True)
            return self.wo(y.transpose(1, 2).reshape(b, s, d))
    return M(), (g(4, 128, 256),)
@prog("llama_rmsnorm_swiglu")
def _():
    class RMS(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return self.w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

    class M(nn.Module):
        def __init__(self, d=256, f=688):
            super().__init__()
            self.n = nn.ModuleList(RMS(d) for _ in range(2))
            self.w1 = nn.ModuleList(nn.Linear(d, f, bias=False) for _ in range(2))
            self.w3 = nn.ModuleList(nn.Linear(d, f, bias=False) for _ in range(2))
            self.w2 = nn.ModuleList(nn.Linear(f, d, bias=False) for _ in range(2))

        def forward(self, x):
            for i in range(2):
                h = self.n[i](x)
                x = x + self.w2[i](F.silu(self.w1[i](h)) * self.w3[i](h))
            return x
    return M(), (g(4, 128, 256),)
@prog("transformer_decoder_layer")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.dec = nn.TransformerDecoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(32))

        def forward(self, tgt, mem):
            return self.dec(tgt, mem, tgt_mask=self.mask, tgt_is_causal=True)
    return M(), (g(8, 32, 128), g(8, 48, 128))
@prog("embedding_bag")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.bag_mean = nn.EmbeddingBag(5000, 64, mode="mean")
            self.bag_sum = nn.EmbeddingBag(2000, 32, mode="sum")
            self.e = nn.Embedding(100, 32)
            self.out = nn.Linear(128, 10)

        def forward(self, flat, offsets, fixed, cat):
            h = torch.cat([self.bag_mean(flat, offsets), self.bag_sum(fixed), self.e(cat)], 1)
            return self.out(F.relu(h))
    offs = torch.cat([torch.zeros(1, dtype=torch.long), ints(30, 127, lo=1, seed=1).cumsum(0)])
    return M(), (ints(5000, int(offs[-1]) + 20, seed=2), offs, ints(2000, 128, 10, seed=3), ints(100, 128, seed=4))
@prog("unet1d_audio")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.inc = nn.Sequential(nn.Conv1d(1, 16, 7, padding=3), bn(16, 1), nn.ReLU())
            self.d1 = nn.Sequential(nn.Conv1d(16, 32, 4, 2, 1), nn.ReLU())
            self.d2 = nn.Sequential(nn.Conv1d(32, 64, 4, 2, 1), nn.ReLU())
            self.u2 = nn.ConvTranspose1d(64, 32, 4, 2, 1)
            self.m2 = nn.Sequential(nn.Conv1d(64, 32, 3, padding=1), nn.ReLU())
            self.u1 = nn.Upsample(scale_factor=2, mode="nearest")
            self.m1 = nn.Sequential(nn.Conv1d(48, 16, 3, padding=1), nn.ReLU(), nn.Conv1d(16, 1, 1))

        def forward(self, x):
            a = self.inc(x)
            b = self.d1(a)
            c = self.m2(torch.cat([self.u2(self.d2(b)), b], 1))
            return self.m1(torch.cat([self.u1(c), a], 1))
    return M(), (g(4, 1, 4096),)
@prog("conv3d_video_pool3d", eval=True)
def _():
    m = nn.Sequential(nn.Conv3d(3, 16, 3, padding=1), bn(16, 3), nn.ReLU(), nn.MaxPool3d(2),
                      nn.Conv3d(16, 32, 3, padding=1), nn.ReLU(), nn.AvgPool3d(2),
                      nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(32, 10))
    return m, (g(2, 3, 8, 32, 32),)
@prog("grid_sample_stn")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = nn.Sequential(nn.Conv2d(3, 8, 5, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
                                     nn.Flatten(), nn.Linear(128, 6))
            with torch.no_grad():
                self.loc[-1].weight.mul_(0.01)
                self.loc[-1].bias.copy_(torch.tensor([1.0, 0, 0, 0, 1, 0]))
            self.cls = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                     nn.Flatten(), nn.Linear(16, 10))

        def forward(self, x):
            theta = self.loc(x).view(-1, 2, 3)
            grid = F.affine_grid(theta, list(x.shape), align_corners=False)
            return self.cls(F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False))
    return M(), (g(8, 3, 32, 32),)
@prog("unfold_fold")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.un1, self.fold1 = nn.Unfold(4, stride=4), nn.Fold(32, 4, stride=4)
            self.mix = nn.Linear(128, 128)
            self.un2, self.fold2 = nn.Unfold(4, padding=1, stride=2), nn.Fold(32, 4, padding=1, stride=2)

        def forward(self, x):
            h = self.fold1(self.mix(self.un1(x).transpose(1, 2)).transpose(1, 2))
            return self.fold2(torch.tanh(self.un2(h)))  # overlapping windows: Fold sums them
    return M(), (g(8, 8, 32, 32),)
@prog("ctc_loss")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.f = nn.Sequential(nn.Linear(40, 128), nn.Tanh(), nn.Linear(128, 29))
            self.ctc = nn.CTCLoss(blank=0, reduction="mean")

        def forward(self, x, tgt, il, tl):
            return self.ctc(self.f(x).log_softmax(2), tgt, il, tl)
    return M(), (g(50, 8, 40), ints(29, 8, 20, lo=1, seed=5), torch.full((8,), 50, dtype=torch.long),
                 ints(21, 8, lo=10, seed=6))
@prog("ce_smooth_ignore_kl")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.f = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 1000))
            self.ce = nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=-100)
            self.kl = nn.KLDivLoss(reduction="batchmean")

        def forward(self, x, y, teacher):
            z = self.f(x)
            return self.ce(z, y) + self.kl(z.log_softmax(-1), teacher.softmax(-1))
    y = ints(1000, 1024, seed=7)
    y[::7] = -100
    return M(), (g(1024, 128), y, g(1024, 1000))
@prog("triplet_cosine")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.f = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 64))
            self.trip = nn.TripletMarginLoss(margin=1.0, p=2)

        def forward(self, a, p, n):
            ea, ep, en = self.f(a), self.f(p), self.f(n)
            return self.trip(ea, ep, en) + (1 - F.cosine_similarity(ea, ep, dim=1)).mean() \
                + F.cosine_similarity(ea, en, dim=1).clamp(min=0).mean()
    return M(), (g(512, 128), g(511, 128)[:1].expand(512, 128) + g(512, 128) * 0.1, g(513, 128)[:512])
@prog("activations_prelu_mish_glu")
def _():
    m = nn.Sequential(nn.Linear(256, 512), nn.PReLU(512), nn.Linear(512, 512), nn.Hardswish(),
                      nn.Linear(512, 1024), nn.GLU(-1), nn.Mish(), nn.Linear(512, 256), nn.SELU(),
                      nn.Linear(256, 256), nn.Softplus(), nn.Hardsigmoid())
    return m, (g(256, 256),)
@prog("weight_spectral_norm")
def _():
    sn, wn = nn.utils.parametrizations.spectral_norm, nn.utils.parametrizations.weight_norm
    m = nn.Sequential(sn(nn.Conv2d(3, 64, 4, 2, 1)), nn.LeakyReLU(0.2), sn(nn.Conv2d(64, 128, 4, 2, 1)),
                      nn.LeakyReLU(0.2), nn.Flatten(), wn(nn.Linear(128 * 64, 1)))
    return m, (g(8, 3, 32, 32),)
@prog("cumsum_cumprod_logcumsumexp")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(64, 64), nn.Linear(3 * 64, 32)

        def forward(self, x):  # x: [B, T, 64]
            h = self.a(x)
            surv = torch.cumprod(torch.sigmoid(h), 1)  # stick-breaking style survival
            return self.b(torch.cat([h.cumsum(1) / 16, surv, torch.logcumsumexp(h, 1)], -1))
    return M(), (g(32, 256, 64),)
@prog("sort_topk_argsort")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.s = nn.Linear(256, 512), nn.Linear(256, 512)
            self.out = nn.Linear(32 + 64 + 512, 10)

        def forward(self, x):
            h, sc = self.a(x), self.s(x)
            top = h.topk(32, dim=-1).values
            order = sc.argsort(dim=-1, descending=True)[:, :64]
            picked = torch.gather(h, 1, order)  # features ordered by another head's score
            srt = torch.sort(h, dim=-1).values
            return self.out(torch.cat([top, picked, srt], -1))
    return M(), (g(128, 256),)
@prog("gnn_scatter_add")
def _():
    class M(nn.Module):
        def __init__(self, d=64):
            super().__init__()
            self.msg = nn.ModuleList(nn.Linear(d, d) for _ in range(2))
            self.upd = nn.ModuleList(nn.Linear(2 * d, d) for _ in range(2))
            self.ew = nn.Linear(1, 1)

        def forward(self, x, src, dst, w):
            n = x.shape[0]
            deg = torch.zeros(n).scatter_add_(0, dst, torch.ones_like(w)).clamp(min=1)
            for l in range(2):
                m = self.msg[l](x[src]) * torch.sigmoid(self.ew(w[:, None]))
                agg = torch.zeros_like(x).index_add_(0, dst, m) / deg[:, None]
                x = F.relu(self.upd[l](torch.cat([x, agg], 1)))
            return x
    return M(), (g(2000, 64), ints(2000, 10000, seed=8), ints(2000, 10000, seed=9), g(10000))
@prog("vae_reparam")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(784, 400), nn.ReLU())
            self.mu, self.lv = nn.Linear(400, 20), nn.Linear(400, 20)
            self.dec = nn.Sequential(nn.Linear(20, 400), nn.ReLU(), nn.Linear(400, 784), nn.Sigmoid())

        def forward(self, x, eps):
            h = self.enc(x)
            mu, lv = self.mu(h), self.lv(h)
            r = self.dec(mu + eps * torch.exp(0.5 * lv))
            kl = -0.5 * torch.sum(1 + lv - mu.pow(2) - lv.exp())
            return (F.binary_cross_entropy(r, x, reduction="sum") + kl) / x.shape[0], r
    return M(), (torch.sigmoid(g(128, 784)), g(128, 20))
@prog("deep_cross_bilinear")
def _():
    class M(nn.Module):
        def __init__(self, nf=8, e=16, dd=13):
            super().__init__()
            self.emb = nn.ModuleList(nn.Embedding(1000 * (i + 1), e) for i in range(nf))
            d0 = dd + nf * e
            self.cross = nn.ModuleList(nn.Linear(d0, d0) for _ in range(3))
            self.deep = nn.Sequential(nn.Linear(d0, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU())
            self.bil = nn.Bilinear(e, e, 8)
            self.out = nn.Linear(d0 + 128 + 8 + nf * nf, 1)

        def forward(self, dense, sparse):
            es = [m(sparse[:, i]) for i, m in enumerate(self.emb)]
            x0 = torch.cat([dense] + es, 1)
            x = x0
            for c in self.cross:
                x = x0 * c(x) + x
            st = torch.stack(es, 1)
            fm = torch.einsum("bfd,bgd->bfg", st, st).flatten(1)  # pairwise interactions
            return self.out(torch.cat([x, self.deep(x0), self.bil(es[0], es[1]), fm], 1))
    return M(), (g(512, 13), ints(1000, 512, 8, seed=10))
@prog("tcn_dilated_causal")
def _():
    class Block(nn.Module):
        def __init__(self, c, dil):
            super().__init__()
            self.pad = 2 * dil
            self.c1, self.c2 = nn.Conv1d(c, c, 3, dilation=dil), nn.Conv1d(c, c, 3, dilation=dil)

        def forward(self, x):
            h = F.relu(self.c1(F.pad(x, (self.pad, 0))))
            return F.relu(x + self.c2(F.pad(h, (self.pad, 0))))
    m = nn.Sequential(*[Block(32, d) for d in (1, 2, 4, 8)], nn.Conv1d(32, 4, 1))
    return m, (g(4, 32, 512),)
@prog("pixelcnn_masked_conv")
def _():
    class MaskedConv(nn.Conv2d):
        def __init__(self, kind, *a, **k):
            super().__init__(*a, **k)
            kh, kw = self.kernel_size
            mask = torch.ones_like(self.weight)
            mask[:, :, kh // 2, kw // 2 + (kind == "B"):] = 0
            mask[:, :, kh // 2 + 1:] = 0
            self.register_buffer("mask", mask)

        def forward(self, x):
            return F.conv2d(x, self.weight * self.mask, self.bias, padding=self.padding)
    m = nn.Sequential(MaskedConv("A", 1, 64, 7, padding=3), nn.ReLU(), MaskedConv("B", 64, 64, 3, padding=1),
                      nn.ReLU(), MaskedConv("B", 64, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 16, 1))
    return m, (g(8, 1, 28, 28),)
@prog("nerf_posenc_siren")
def _():
    class M(nn.Module):
        def __init__(self, h=128, L=10):
            super().__init__()
            self.register_buffer("freqs", (2.0 ** torch.arange(L)) * math.pi)
            d = 3 + 6 * L
            self.l1 = nn.ModuleList([nn.Linear(d, h)] + [nn.Linear(h, h) for _ in range(2)])
            self.l2 = nn.ModuleList([nn.Linear(h + d, h), nn.Linear(h, h)])
            self.sigma, self.rgb = nn.Linear(h, 1), nn.Linear(h, 3)
            self.siren = nn.ModuleList([nn.Linear(3, h), nn.Linear(h, h), nn.Linear(h, 1)])

        def forward(self, p):
            xf = (p[..., None] * self.freqs).flatten(-2)
            enc = torch.cat([p, xf.sin(), xf.cos()], -1)
            h = enc
            for l in self.l1:
                h = F.relu(l(h))
            h = torch.cat([h, enc], -1)  # NeRF skip
            for l in self.l2:
                h = F.relu(l(h))
            s = p
            for i, l in enumerate(self.siren):
                s = l(s) if i == 2 else torch.sin((30.0 if i == 0 else 1.0) * l(s))
            return torch.cat([F.softplus(self.sigma(h)), torch.sigmoid(self.rgb(h)), s], -1)
    return M(), (torch.rand(2048, 3, generator=torch.Generator().manual_seed(11)) * 2 - 1,)
@prog("conformer_conv_module")
def _():
    class M(nn.Module):
        def __init__(self, d=144, k=31):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.pw1 = nn.Conv1d(d, 2 * d, 1)
            self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
            self.bn = nn.BatchNorm1d(d)
            self.pw2 = nn.Conv1d(d, d, 1)

        def forward(self, x):  # [B, T, D]
            h = F.glu(self.pw1(self.ln(x).transpose(1, 2)), dim=1)
            return x + self.pw2(F.silu(self.bn(self.dw(h)))).transpose(1, 2)
    return M(), (g(4, 100, 144),)
@prog("fnet_fft_mixing")
def _():
    class M(nn.Module):
        def __init__(self, d=256):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            x = self.ln1(x + torch.fft.fft2(x).real)  # token mixing over (seq, hidden)
            return self.ln2(x + self.ff(x))
    return M(), (g(8, 128, 256),)


def step_grads(model, m, args, restore) -> list:
    """The gradients of model's trainable parameters after one loss.backward() through m
    (the model itself or its compiled form), buffers restored first; zeros where none."""
    params = [p for p in model.parameters() if p.requires_grad]
    restore()
    model.zero_grad()
    _loss(m(*args)).backward()
    return [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in params]


def time_pair(f, g_, rounds=5, reps=3):
    """Median ms of f() and of g_(), interleaved over `rounds` rounds of `reps` calls."""
    import time
    import numpy as np
    ts = ([], [])
    for r in range(rounds):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            fn = (f, g_)[i]
            t = time.perf_counter()
            for _ in range(reps):
                fn()
            ts[i].append((time.perf_counter() - t) / reps)
    return np.median(ts[0]) * 1e3, np.median(ts[1]) * 1e3


def tensor_outputs(o):
    """The tensors of a module's output (one tensor, or a tuple / list of values)."""
    return [t for t in (o if isinstance(o, (tuple, list)) else (o,)) if isinstance(t, torch.Tensor)]


def grads_and_times(model, comp, args, restore, training: bool) -> tuple:
    """(max gradient difference against eager relative to the largest, the compiled
    backward's first call in s, forward ms compiled and eager, step ms compiled and eager)
    of one program; for inference (training False) the forward under no_grad twice."""
    import time
    gerr, t_bwd = 0.0, 0.0
    if training:
        ref = step_grads(model, model, args, restore)
        t0 = time.perf_counter()
        gg = step_grads(model, comp, args, restore)
        t_bwd = time.perf_counter() - t0
        scale = max((float(r.abs().max()) for r in ref), default=0.0) + 1e-30
        gerr = max((float((a.double() - r.double()).abs().max()) / scale for a, r in zip(gg, ref)), default=0.0)
        fa, fe = time_pair(lambda: comp(*args), lambda: model(*args))
        a, e = T.time_steps(comp, model, args)
    else:
        with torch.no_grad():
            fa, fe = time_pair(lambda: comp(*args), lambda: model(*args))
        a, e = fa, fe
    return gerr, t_bwd, fa, fe, a, e


def buffer_snapshot(model, extra=()) -> tuple:
    """(the model's floating-point buffers and `extra` tensors, restore()): restore puts back
    their values of now (BatchNorm running stats, spectral norm's u / v, KV caches), so that
    every call starts equal."""
    bufs = [b for b in model.buffers() if b.is_floating_point()] + list(extra)
    b0 = [b.detach().clone() for b in bufs]

    def restore():
        with torch.no_grad():
            for b, v in zip(bufs, b0):
                b.copy_(v)
    return bufs, restore


def runner(P, EVAL, width=28):
    """run(name): one module's forward, gradients and updated buffers against eager, its
    interleaved step times, and notes: fallbacks, graph breaks, frames Dynamo left whole to
    eager (nn.RNN / LSTM / GRU by default), graphs that never reached axle."""
    def run(name):
        torch._dynamo.reset()  # nn.Sequential.forward recompiles per module past Dynamo's limit
        torch._dynamo.utils.counters.clear()
        torch.manual_seed(0)
        model, args = P[name]()
        model.train(name not in EVAL)
        comp = torch.compile(model, backend="axle")
        bufs, restore = buffer_snapshot(model)
        calls0 = STATS["axle_calls"]
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always", AxleFallbackWarning)
            want = model(*args)
            bw = [b.clone() for b in bufs]
            restore()
            got = comp(*args)
            berr = max((_rel(b.nan_to_num(), w.nan_to_num()) for b, w in zip(bufs, bw)), default=0.0)  # -inf masks
            outs = lambda o: [t for t in (o if isinstance(o, (tuple, list)) else (o,)) if t.is_floating_point()]  # noqa: E731
            err = max(_rel(a, b) for a, b in zip(outs(got), outs(want)))
            ref, gg = step_grads(model, model, args, restore), step_grads(model, comp, args, restore)
            scale = max((float(r.abs().max()) for r in ref), default=0.0) + 1e-30
            gerr = max((float((a.double() - r.double()).abs().max()) / scale for a, r in zip(gg, ref)), default=0.0)
            a, e = T.time_steps(comp, model, args)
        notes = [str(w.message)[:400] for w in ws if issubclass(w.category, AxleFallbackWarning)]
        counters = torch._dynamo.utils.counters
        breaks = sum(counters["graph_break"].values())
        notes += [f"{breaks} graph break(s): " + "; ".join(
            r.strip().splitlines()[0] + " " + r.split("context:")[-1].strip().splitlines()[0][:80]
            for r in list(counters["graph_break"])[:2])] if breaks else []
        skipped = [r for r in counters["unimplemented"] if not breaks]  # a frame left whole to eager
        notes += [f"Dynamo left a frame to eager: {skipped[0].strip().splitlines()[0]}"] if skipped else []
        notes += ["no call ran on axle"] if STATS["axle_calls"] == calls0 else []
        print(f"{name:{width}s} step axle {a:8.2f} ms  eager {e:8.2f} ms  eager/axle {e / a:5.2f}  "
              f"fwd err {err:.1e}  grad err {gerr:.1e}" + (f"  buf err {berr:.1e}" if bufs else ""), flush=True)
        for n in notes:
            print(f"{'':{width}s} note: {n}", flush=True)
    return run


run = runner(P, EVAL)


if __name__ == "__main__":
    T.main(P, run)
