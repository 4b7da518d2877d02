"""A fifth sweep of ordinary PyTorch modules through torch.compile(backend="axle"), of kinds
benchmarks/torch_programs.py - torch_programs_4.py do not have: PointNet (T-Nets, orthogonality
regularizer) and DGCNN EdgeConv over a dynamic top-k kNN graph, ConvNeXt V2 (GRN), distillation from
a frozen eval-mode teacher, a WGAN-GP critic (autograd.grad with create_graph), Switch top-1 routing
with expert capacity, a mean-teacher EMA by torch._foreach_lerp_ on buffers, StyleGAN2 modulated
convolution (batch folded into groups), AdaIN style transfer (reflection padding), an FPN with RoI
Align by grid_sample, DCNv2 deformable convolution by grid_sample, DeepLabV3 ASPP, a Mamba selective
scan, causal linear attention, Transformer-XL rel_shift with memory, MAE masking (argsort, gather),
Conv-TasNet (gLN, SI-SNR PIT), PatchTST (RevIN, replicate padding, Tensor.unfold), PPO (GAE loop,
clipped objective), SegNet max-unpooling, MixUp / CutMix soft targets, torch.nn.utils.prune hooks,
torch.autograd.Function (gradient reversal, memory-efficient swish), activation checkpointing, a GCN
over a sparse adjacency, a KV-cache decode step (index_copy_ into buffers), a torch.func ensemble
(vmap, functional_call), SwAV Sinkhorn-Knopp, the Lovasz hinge, DeepFM + CIN over hashed int64 ids.
Same harness as torch_programs_2.py: outputs, gradients and updated buffers against eager PyTorch,
interleaved timing (medians), fallbacks (the bridge's warning) and graph breaks.

Usage: AXLE_NUM_THREADS=1 python benchmarks/torch_programs_5.py [name,name,...]"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_programs as T  # sets AXLE_NUM_THREADS / torch threads, registers the backend
from torch_programs import g
from torch_programs_2 import bn, ints, runner, sweep

P, EVAL, prog = sweep()


def unif(*s, seed=0):
    return torch.rand(*s, generator=torch.Generator().manual_seed(seed))


def cbr(cin, cout, k, s=1, p=0, d=1):  # conv, batch norm, ReLU
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, p, dilation=d, bias=False), bn(cout), nn.ReLU())


@prog("pointnet_tnet_orthogonal_reg")
def _():
    def mlp(*cs):  # shared per-point MLP: Conv1d(k=1), BatchNorm1d, ReLU
        return nn.Sequential(*[m for a, b in zip(cs, cs[1:]) for m in (nn.Conv1d(a, b, 1), bn(b, 1), nn.ReLU())])

    class TNet(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k, self.f = k, mlp(k, 64, 128, 256)
            self.g = nn.Sequential(nn.Linear(256, 128), bn(128, 1), nn.ReLU(), nn.Linear(128, k * k))
        def forward(self, x):
            return self.g(self.f(x).max(2).values).view(-1, self.k, self.k) + torch.eye(self.k)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.t3, self.m1, self.t64, self.m2 = TNet(3), mlp(3, 64), TNet(64), mlp(64, 128, 256)
            self.head = nn.Sequential(nn.Linear(256, 128), bn(128, 1), nn.ReLU(), nn.Linear(128, 10))
        def forward(self, pts, y):  # pts [B, 3, N]
            x = self.m1(torch.bmm(self.t3(pts).transpose(1, 2), pts))
            t = self.t64(x)
            feat = self.m2(torch.bmm(t.transpose(1, 2), x)).max(2).values
            reg = (torch.bmm(t, t.transpose(1, 2)) - torch.eye(64)).pow(2).sum((1, 2)).mean()
            return F.cross_entropy(self.head(feat), y) + 1e-3 * reg
    return M(), (g(4, 3, 512), ints(10, 4))
@prog("dgcnn_edgeconv_knn_topk")
def _():
    def edge(x, k):  # [B, C, N] -> [B, 2C, N, k]: (neighbour - centre, centre) over the k nearest
        b, c, n = x.shape
        sq = (x * x).sum(1)
        idx = (2 * x.transpose(1, 2) @ x - sq[:, :, None] - sq[:, None, :]).topk(k, -1).indices
        xt = x.transpose(1, 2)
        nb = xt.reshape(b * n, c)[(idx + torch.arange(b)[:, None, None] * n).flatten()].view(b, n, k, c)
        ctr = xt[:, :, None].expand(-1, -1, k, -1)
        return torch.cat([nb - ctr, ctr], 3).permute(0, 3, 1, 2)

    class M(nn.Module):
        def __init__(self, k=16):
            super().__init__()
            ec = lambda i, o: nn.Sequential(nn.Conv2d(2 * i, o, 1, bias=False), bn(o), nn.LeakyReLU(0.2))  # noqa: E731
            self.k, self.e1, self.e2, self.e3 = k, ec(3, 64), ec(64, 64), ec(64, 128)
            self.fuse = nn.Sequential(nn.Conv1d(256, 512, 1, bias=False), bn(512, 1), nn.LeakyReLU(0.2))
            self.head = nn.Sequential(nn.Linear(1024, 256, bias=False), bn(256, 1), nn.LeakyReLU(0.2),
                                      nn.Linear(256, 10))
        def forward(self, pts, y):
            x1 = self.e1(edge(pts, self.k)).max(-1).values
            x2 = self.e2(edge(x1, self.k)).max(-1).values
            x3 = self.e3(edge(x2, self.k)).max(-1).values
            h = self.fuse(torch.cat([x1, x2, x3], 1))
            return F.cross_entropy(self.head(torch.cat([h.max(-1).values, h.mean(-1)], 1)), y)
    return M(), (g(4, 3, 128), ints(10, 4))
@prog("convnextv2_grn_stages_train")
def _():
    class LN2d(nn.Module):  # ConvNeXt's channels_first LayerNorm
        def __init__(self, c):
            super().__init__()
            self.w, self.b = nn.Parameter(torch.ones(c)), nn.Parameter(torch.zeros(c))
        def forward(self, x):
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            return self.w[:, None, None] * (x - u) / torch.sqrt(s + 1e-6) + self.b[:, None, None]

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.dw, self.ln = nn.Conv2d(d, d, 7, padding=3, groups=d), nn.LayerNorm(d, eps=1e-6)
            self.pw1, self.pw2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.gamma, self.beta = nn.Parameter(torch.randn(4 * d) * 0.1), nn.Parameter(torch.randn(4 * d) * 0.1)
        def forward(self, x):
            h = F.gelu(self.pw1(self.ln(self.dw(x).permute(0, 2, 3, 1))))
            gx = torch.norm(h, p=2, dim=(1, 2), keepdim=True)  # global response normalization
            h = self.gamma * (h * (gx / (gx.mean(-1, keepdim=True) + 1e-6))) + self.beta + h
            return x + self.pw2(h).permute(0, 3, 1, 2)
    m = nn.Sequential(nn.Conv2d(3, 48, 4, 4), LN2d(48), Block(48), Block(48), LN2d(48), nn.Conv2d(48, 96, 2, 2),
                      Block(96), Block(96))
    return m, (g(8, 3, 96, 96),)
@prog("kd_frozen_eval_teacher_kl_hint")
def _():
    def net(c):
        return nn.Sequential(cbr(3, c, 3, p=1), nn.MaxPool2d(2), cbr(c, 2 * c, 3, p=1), nn.MaxPool2d(2),
                             cbr(2 * c, 4 * c, 3, p=1))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.tf, self.sf = net(64), net(16)
            self.th, self.sh = (nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10))
                                for c in (256, 64))
            self.hint = nn.Conv2d(64, 256, 1)
            for p in [*self.tf.parameters(), *self.th.parameters()]:
                p.requires_grad_(False)
        def train(self, mode=True):  # the teacher stays in eval mode
            super().train(mode)
            self.tf.eval()
            return self
        def forward(self, x, y, t=4.0):
            with torch.no_grad():
                tf = self.tf(x)
                tl = self.th(tf)
            sf = self.sf(x)
            sl = self.sh(sf)
            kd = F.kl_div(F.log_softmax(sl / t, -1), F.log_softmax(tl / t, -1), reduction="batchmean", log_target=True)
            return 0.7 * kd * t * t + 0.3 * F.cross_entropy(sl, y) + F.mse_loss(self.hint(sf), tf)
    return M(), (g(16, 3, 32, 32), ints(10, 16))
@prog("wgan_gp_gradient_penalty")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.d = nn.Sequential(nn.Conv2d(3, 64, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(64, 128, 4, 2, 1),
                                   nn.LeakyReLU(0.2), nn.Conv2d(128, 256, 4, 2, 1), nn.LeakyReLU(0.2), nn.Flatten(),
                                   nn.Linear(256 * 16, 1))
        def forward(self, real, fake, eps):
            xh = (eps * real + (1 - eps) * fake).requires_grad_(True)
            gr, = torch.autograd.grad(self.d(xh).sum(), xh, create_graph=True)
            gp = ((gr.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
            return self.d(fake).mean() - self.d(real).mean() + 10 * gp
    return M(), (g(16, 3, 32, 32), unif(16, 3, 32, 32, seed=1) * 2 - 1, unif(16, 1, 1, 1, seed=2))
@prog("switch_moe_top1_capacity")
def _():
    class Switch(nn.Module):
        def __init__(self, d, e=8, f=256, cf=1.25):
            super().__init__()
            self.e, self.cf, self.ln, self.router = e, cf, nn.LayerNorm(d), nn.Linear(d, e, bias=False)
            self.w1 = nn.Parameter(torch.randn(e, d, f) * d ** -0.5)
            self.w2 = nn.Parameter(torch.randn(e, f, d) * f ** -0.5)
        def forward(self, x):
            b, s, d = x.shape
            t = self.ln(x).reshape(-1, d)
            n, e = t.shape[0], self.e
            cap = int(self.cf * n / e)
            p = self.router(t).softmax(-1)
            gate, idx = p.max(-1)
            oh = F.one_hot(idx, e).to(t.dtype)
            slot = ((oh.cumsum(0) - 1) * oh).sum(-1).long()  # position within the chosen expert
            keep = (slot < cap).to(t.dtype)  # tokens past capacity are dropped (residual only)
            disp = oh[:, :, None] * F.one_hot(slot.clamp(max=cap - 1), cap).to(t.dtype)[:, None] * keep[:, None, None]
            h = torch.bmm(F.gelu(torch.bmm(torch.einsum("nec,nd->ecd", disp, t), self.w1)), self.w2)
            y = torch.einsum("nec,ecd->nd", disp * gate[:, None, None], h)
            return x + y.view(b, s, d), e * (oh.mean(0) * p.mean(0)).sum()

    class M(nn.Module):
        def __init__(self, v=1000, d=128):
            super().__init__()
            self.emb, self.head = nn.Embedding(v, d), nn.Linear(d, v)
            self.layers = nn.ModuleList([Switch(d), Switch(d)])
        def forward(self, ids, tgt):
            x, aux = self.emb(ids), 0
            for l in self.layers:
                x, a = l(x)
                aux = aux + a
            return F.cross_entropy(self.head(x).flatten(0, 1), tgt.flatten()) + 0.01 * aux
    return M(), (ints(1000, 8, 64, seed=1), ints(1000, 8, 64, seed=2))
@prog("ema_mean_teacher_foreach_lerp")
def _():
    class M(nn.Module):
        def __init__(self, decay=0.99):
            super().__init__()
            self.decay = decay
            self.net = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
            for i, p in enumerate(self.net.parameters()):
                self.register_buffer(f"ema{i}", p.detach() + 0.01 * torch.randn_like(p))
        def forward(self, x, noise, y):
            e = [getattr(self, f"ema{i}") for i in range(6)]
            with torch.no_grad():  # timm's ModelEmaV3: one lerp over all the EMA weights
                torch._foreach_lerp_(e, list(self.net.parameters()), 1 - self.decay)
                t = F.linear(F.relu(F.linear(F.relu(F.linear(x, e[0], e[1])), e[2], e[3])), e[4], e[5])
            s = self.net(x + noise)
            return F.cross_entropy(s, y) + F.mse_loss(s.softmax(-1), t.softmax(-1))
    return M(), (g(512, 128), 0.1 * (unif(512, 128, seed=27) - 0.5), ints(10, 512))
@prog("stylegan2_modulated_conv_demod")
def _():
    class EqLinear(nn.Module):  # equalized learning rate
        def __init__(self, i, o, lr=1.0, bias=0.0):
            super().__init__()
            self.w, self.b = nn.Parameter(torch.randn(o, i) / lr), nn.Parameter(torch.full((o,), float(bias)))
            self.s, self.lr = lr / math.sqrt(i), lr
        def forward(self, x):
            return F.linear(x, self.w * self.s, self.b * self.lr)

    class ModConv(nn.Module):
        def __init__(self, ci, co, k, wd, up=False, res=None):
            super().__init__()
            self.w, self.aff, self.bias = nn.Parameter(torch.randn(co, ci, k, k)), EqLinear(wd, ci, bias=1.0), \
                nn.Parameter(torch.zeros(co))
            self.s, self.up, self.k, self.res = 1 / math.sqrt(ci * k * k), up, k, res
            if res:  # a styled 3x3 convolution: demodulated, with noise; else toRGB
                self.register_buffer("noise", torch.randn(1, 1, res, res))
                self.ns = nn.Parameter(torch.tensor(0.1))
        def forward(self, x, w):
            b, ci = x.shape[:2]
            wt = self.w[None] * self.s * self.aff(w)[:, None, :, None, None]
            if self.res:
                wt = wt * torch.rsqrt(wt.pow(2).sum((2, 3, 4), keepdim=True) + 1e-8)
            if self.up:
                x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
            h, ww = x.shape[2:]
            out = F.conv2d(x.reshape(1, -1, h, ww), wt.reshape(-1, ci, self.k, self.k), padding=self.k // 2,
                           groups=b).view(b, -1, h, ww) + self.bias[:, None, None]
            return F.leaky_relu(out + self.ns * self.noise, 0.2) * math.sqrt(2) if self.res else out

    class M(nn.Module):
        def __init__(self, zd=128, c=64):
            super().__init__()
            self.map = nn.Sequential(*[m for _ in range(4) for m in (EqLinear(zd, zd, lr=0.01), nn.LeakyReLU(0.2))])
            self.const = nn.Parameter(torch.randn(1, c, 4, 4))
            self.convs = nn.ModuleList(ModConv(i, o, 3, zd, up, r) for i, o, up, r in (
                (c, c, False, 4), (c, c, True, 8), (c, c, False, 8), (c, c, True, 16), (c, c, False, 16),
                (c, 32, True, 32), (32, 32, False, 32)))
            self.rgb = nn.ModuleList([ModConv(c, 3, 1, zd) for _ in range(3)] + [ModConv(32, 3, 1, zd)])
        def forward(self, z):
            w = self.map(F.normalize(z, dim=1) * math.sqrt(z.shape[1]))  # pixel norm, mapping network
            x = self.convs[0](self.const.expand(z.shape[0], -1, -1, -1), w)
            img = self.rgb[0](x, w)
            for i in range(3):
                x = self.convs[2 * i + 2](self.convs[2 * i + 1](x, w), w)
                img = F.interpolate(img, scale_factor=2, mode="bilinear", align_corners=False) + self.rgb[i + 1](x, w)
            return img
    return M(), (g(4, 128),)
@prog("adain_style_transfer_reflect_pad")
def _():
    def conv(i, o):
        return [nn.ReflectionPad2d(1), nn.Conv2d(i, o, 3), nn.ReLU()]

    def stats(f):
        return f.mean((2, 3), keepdim=True), (f.var((2, 3), keepdim=True) + 1e-5).sqrt()

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.e = nn.ModuleList([nn.Sequential(nn.Conv2d(3, 3, 1), *conv(3, 32)), nn.Sequential(
                nn.MaxPool2d(2), *conv(32, 64)), nn.Sequential(nn.MaxPool2d(2), *conv(64, 128))])
            self.e.requires_grad_(False)  # a frozen (VGG) encoder
            self.dec = nn.Sequential(*conv(128, 64), nn.Upsample(scale_factor=2), *conv(64, 64), *conv(64, 32),
                                     nn.Upsample(scale_factor=2), *conv(32, 32), nn.ReflectionPad2d(1),
                                     nn.Conv2d(32, 3, 3))
        def enc(self, x):
            fs = []
            for m in self.e:
                x = m(x)
                fs.append(x)
            return fs
        def forward(self, content, style):
            sf, c = self.enc(style), self.enc(content)[-1]
            (cm, cs), (sm, ss) = stats(c), stats(sf[-1])
            t = (c - cm) / cs * ss + sm
            out = self.dec(t)
            of = self.enc(out)
            ls = sum(F.mse_loss(a, b) for f, s in zip(of, sf) for a, b in zip(stats(f), stats(s)))
            return F.mse_loss(of[-1], t) + 10 * ls, out
    return M(), (g(2, 3, 64, 64), unif(2, 3, 64, 64, seed=3))
@prog("fpn_roi_align_grid_sample_heads")
def _():
    def roi_align(feat, rois, stride, out=7):  # rois [R, 5]: image, x1, y1, x2, y2 in pixels; one sample per bin
        h, w = feat.shape[2:]
        t = (torch.arange(out, dtype=feat.dtype) + 0.5) / out
        x1, y1, x2, y2 = rois[:, 1:].unbind(1)
        gx = (x1[:, None] + t * (x2 - x1)[:, None]) / (w * stride) * 2 - 1
        gy = (y1[:, None] + t * (y2 - y1)[:, None]) / (h * stride) * 2 - 1
        grid = torch.stack([gx[:, None, :].expand(-1, out, -1), gy[:, :, None].expand(-1, -1, out)], -1)
        return F.grid_sample(feat[rois[:, 0].long()], grid, align_corners=False)

    class M(nn.Module):
        def __init__(self, c=64, nc=21):
            super().__init__()
            self.nc, self.stem = nc, nn.Sequential(cbr(3, 32, 3, 2, 1), cbr(32, 32, 3, 2, 1))
            self.c3, self.c4 = cbr(32, 64, 3, 2, 1), cbr(64, 128, 3, 2, 1)
            self.lat = nn.ModuleList(nn.Conv2d(i, c, 1) for i in (32, 64, 128))
            self.smooth = nn.ModuleList(nn.Conv2d(c, c, 3, padding=1) for _ in range(3))
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(c * 49, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU())
            self.cls, self.box = nn.Linear(256, nc), nn.Linear(256, 4 * nc)
        def forward(self, img, rois, labels, tgt):
            c2 = self.stem(img)
            c3 = self.c3(c2)
            p4 = self.lat[2](self.c4(c3))  # top-down pathway, nearest upsampling, lateral 1x1
            p3 = self.lat[1](c3) + F.interpolate(p4, size=c3.shape[-2:], mode="nearest")
            p2 = self.lat[0](c2) + F.interpolate(p3, size=c2.shape[-2:], mode="nearest")
            ps = [s(p) for s, p in zip(self.smooth, (p2, p3, p4))]
            wh = (rois[:, 3] - rois[:, 1]) * (rois[:, 4] - rois[:, 2])
            lvl = torch.floor(3 + torch.log2(wh.sqrt() / 32 + 1e-6)).clamp(2, 4)  # the level by the box's size
            pooled = sum((lvl == i + 2).to(img.dtype)[:, None, None, None] * roi_align(p, rois, 4 * 2 ** i)
                         for i, p in enumerate(ps))
            h = self.head(pooled)
            d = self.box(h).view(-1, self.nc, 4)[torch.arange(labels.shape[0]), labels]
            return F.cross_entropy(self.cls(h), labels) + F.smooth_l1_loss(d, tgt, beta=1 / 9)
    c, s = unif(128, 2, seed=4) * 96, 8 + unif(128, 2, seed=5) * 64
    rois = torch.cat([ints(2, 128, 1, seed=6).float(), (c - s / 2).clamp(0, 95), (c + s / 2).clamp(1, 96)], 1)
    return M(), (g(2, 3, 96, 96), rois, ints(21, 128, seed=7), g(128, 4))
@prog("deformable_conv_v2_grid_sample")
def _():
    class DCN(nn.Module):  # modulated deformable 3x3 convolution: offsets and masks from a convolution
        def __init__(self, ci, co):
            super().__init__()
            self.off, self.w = nn.Conv2d(ci, 27, 3, padding=1), nn.Conv2d(ci * 9, co, 1, bias=False)
            ky, kx = torch.meshgrid(torch.arange(-1, 2), torch.arange(-1, 2), indexing="ij")
            self.register_buffer("ky", ky.reshape(1, 9, 1, 1).float())
            self.register_buffer("kx", kx.reshape(1, 9, 1, 1).float())
        def forward(self, x):
            b, c, h, w = x.shape
            o = self.off(x)
            ys = torch.arange(h, dtype=x.dtype)[:, None] + self.ky + o[:, :9]  # [B, 9, H, W]
            xs = torch.arange(w, dtype=x.dtype) + self.kx + o[:, 9:18]
            grid = torch.stack([xs * 2 / (w - 1) - 1, ys * 2 / (h - 1) - 1], -1).view(b, 9 * h, w, 2)
            s = F.grid_sample(x, grid, align_corners=True).view(b, c, 9, h, w) * torch.sigmoid(o[:, None, 18:])
            return self.w(s.reshape(b, c * 9, h, w))
    m = nn.Sequential(cbr(3, 32, 3, 1, 1), DCN(32, 64), bn(64), nn.ReLU(), nn.MaxPool2d(2), DCN(64, 64), bn(64),
                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    return m, (g(4, 3, 32, 32),)
@prog("deeplabv3_aspp_image_pooling")
def _():
    class M(nn.Module):
        def __init__(self, c=64, nc=8):
            super().__init__()
            self.back = nn.Sequential(cbr(3, 32, 3, 2, 1), cbr(32, 64, 3, 2, 1), cbr(64, 128, 3, 1, 2, 2))
            self.aspp = nn.ModuleList([cbr(128, c, 1)] + [cbr(128, c, 3, 1, r, r) for r in (6, 12, 18)])
            self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), cbr(128, c, 1))
            self.proj, self.head = cbr(5 * c, c, 1), nn.Sequential(cbr(c, c, 3, 1, 1), nn.Conv2d(c, nc, 1))
        def forward(self, x, tgt):
            f = self.back(x)
            br = [m(f) for m in self.aspp] + [F.interpolate(self.pool(f), size=f.shape[-2:], mode="bilinear")]
            y = F.interpolate(self.head(self.proj(torch.cat(br, 1))), size=x.shape[-2:], mode="bilinear")
            return F.cross_entropy(y, tgt), y
    return M(), (g(4, 3, 96, 96), ints(8, 4, 96, 96, seed=8))
@prog("mamba_selective_scan_loop")
def _():
    class Mamba(nn.Module):
        def __init__(self, d=64, n=16, k=4):
            super().__init__()
            di, self.r, self.n = 2 * d, math.ceil(d / 16), n
            self.norm, self.inp, self.out = nn.RMSNorm(d), nn.Linear(d, 2 * di, False), nn.Linear(di, d, False)
            self.conv = nn.Conv1d(di, di, k, groups=di, padding=k - 1)
            self.xp, self.dtp = nn.Linear(di, self.r + 2 * n, bias=False), nn.Linear(self.r, di)
            self.A_log = nn.Parameter(torch.log(torch.arange(1, n + 1).float()).repeat(di, 1))
            self.D = nn.Parameter(torch.ones(di))
        def forward(self, x):  # [B, L, d]
            b, l, _ = x.shape
            xi, z = self.inp(self.norm(x)).chunk(2, -1)
            xi = F.silu(self.conv(xi.transpose(1, 2))[..., :l].transpose(1, 2))  # causal depthwise convolution
            dt, B, C = self.xp(xi).split([self.r, self.n, self.n], -1)
            dt = F.softplus(self.dtp(dt))
            dA = torch.exp(dt[..., None] * -torch.exp(self.A_log))  # [B, L, di, n]
            dBx = dt[..., None] * B[:, :, None] * xi[..., None]
            h, ys = torch.zeros_like(dA[:, 0]), []
            for t in range(l):  # the selective scan, sequentially
                h = dA[:, t] * h + dBx[:, t]
                ys.append((h * C[:, t, None]).sum(-1))
            y = torch.stack(ys, 1) + xi * self.D
            return x + self.out(y * F.silu(z))
    return nn.Sequential(Mamba(), Mamba()), (g(4, 64, 64),)
@prog("linear_attention_causal_cumsum")
def _():
    class Layer(nn.Module):  # "Transformers are RNNs": elu + 1 feature map, causal prefix sums
        def __init__(self, d=128, nh=4):
            super().__init__()
            self.nh, self.qkv, self.o = nh, nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.nh, -1).permute(2, 0, 3, 1, 4)
            q, k = F.elu(q) + 1, F.elu(k) + 1
            kv = torch.einsum("bhsd,bhse->bhsde", k, v).cumsum(2)
            num = torch.einsum("bhsd,bhsde->bhse", q, kv)
            den = torch.einsum("bhsd,bhsd->bhs", q, k.cumsum(2))[..., None] + 1e-6
            x = x + self.o((num / den).transpose(1, 2).reshape(b, s, d))
            return x + self.mlp(self.ln2(x))
    return nn.Sequential(Layer(), Layer()), (g(1, 256, 128),)
@prog("transformer_xl_rel_shift_memory")
def _():
    class Layer(nn.Module):
        def __init__(self, d, nh):
            super().__init__()
            self.nh, self.dh = nh, d // nh
            self.qkv, self.r, self.o = (nn.Linear(d, m * d, bias=False) for m in (3, 1, 1))
            self.u, self.v = (nn.Parameter(torch.randn(nh, 1, d // nh) * 0.02) for _ in "uv")
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))
        def forward(self, x, mem, pos):
            b, q, d = x.shape
            kl = mem.shape[1] + q
            hq, hk, hv = self.qkv(torch.cat([mem, x], 1)).view(b, kl, 3, self.nh, self.dh).permute(2, 0, 3, 1, 4)
            hq = hq[:, :, -q:]
            r = self.r(pos).view(kl, self.nh, self.dh).transpose(0, 1)
            ac = (hq + self.u) @ hk.transpose(-1, -2)
            bd = (hq + self.v) @ r.transpose(-1, -2)
            bd = F.pad(bd, (1, 0)).view(b, self.nh, kl + 1, q)[:, :, 1:].reshape(b, self.nh, q, kl)  # rel_shift
            mask = torch.ones(q, kl, dtype=torch.bool).triu(1 + kl - q)
            a = ((ac + bd) * self.dh ** -0.5).masked_fill(mask, float("-inf")).softmax(-1)
            x = self.ln1(x + self.o((a @ hv).transpose(1, 2).reshape(b, q, d)))
            return self.ln2(x + self.ff(x))

    class M(nn.Module):
        def __init__(self, v=1000, d=128, nh=4, kl=128):
            super().__init__()
            self.d, self.emb, self.head = d, nn.Embedding(v, d), nn.Linear(d, v)
            self.layers = nn.ModuleList(Layer(d, nh) for _ in range(2))
            p = torch.arange(kl - 1, -1, -1.0)[:, None] * torch.exp(torch.arange(0, d, 2) * (-math.log(1e4) / d))
            self.register_buffer("pos", torch.cat([p.sin(), p.cos()], -1))
        def forward(self, ids, tgt, *mems):
            h, new = self.emb(ids) * math.sqrt(self.d), []
            for l, m in zip(self.layers, mems):
                new.append(h.detach())
                h = l(h, m, self.pos)
            return F.cross_entropy(self.head(h).flatten(0, 1), tgt.flatten()), *new
    return M(), (ints(1000, 8, 64, seed=9), ints(1000, 8, 64, seed=10), g(8, 64, 128), unif(8, 64, 128, seed=28) - 0.5)
@prog("mae_random_masking_argsort_gather")
def _():
    class M(nn.Module):
        def __init__(self, d=128, dd=64, p=4, n=64, keep=16):
            super().__init__()
            self.p, self.keep = p, keep
            self.patch = nn.Conv2d(3, d, p, p)
            self.pos, self.dpos = nn.Parameter(torch.randn(1, n, d) * 0.02), nn.Parameter(torch.randn(1, n, dd) * 0.02)
            lay = lambda w, k: nn.TransformerEncoder(nn.TransformerEncoderLayer(  # noqa: E731
                w, 4, 4 * w, 0.0, "gelu", batch_first=True, norm_first=True), k, enable_nested_tensor=False)
            self.enc, self.dec = lay(d, 2), lay(dd, 1)
            self.norm, self.embed = nn.LayerNorm(d), nn.Linear(d, dd)
            self.mask_tok = nn.Parameter(torch.randn(1, 1, dd) * 0.02)
            self.pred = nn.Linear(dd, p * p * 3)
        def forward(self, img, noise):
            x = self.patch(img).flatten(2).transpose(1, 2) + self.pos
            b, n, d = x.shape
            shuf, restore = noise.argsort(1), noise.argsort(1).argsort(1)
            x = torch.gather(x, 1, shuf[:, :self.keep, None].expand(-1, -1, d))  # the kept patches
            y = torch.cat([self.embed(self.norm(self.enc(x))), self.mask_tok.expand(b, n - self.keep, -1)], 1)
            y = torch.gather(y, 1, restore[..., None].expand(-1, -1, y.shape[2])) + self.dpos  # unshuffle
            pred = self.pred(self.dec(y))
            p, hw = self.p, img.shape[2] // self.p
            tgt = img.view(b, 3, hw, p, hw, p).permute(0, 2, 4, 3, 5, 1).reshape(b, n, -1)
            tgt = (tgt - tgt.mean(-1, keepdim=True)) / (tgt.var(-1, keepdim=True) + 1e-6).sqrt()  # norm_pix_loss
            mask = (restore >= self.keep).to(img.dtype)
            return (((pred - tgt) ** 2).mean(-1) * mask).sum() / mask.sum()
    return M(), (g(16, 3, 32, 32), unif(16, 64, seed=11))
@prog("conv_tasnet_gln_pit_sisnr")
def _():
    class GLN(nn.Module):  # global layer norm over channels and time
        def __init__(self, c):
            super().__init__()
            self.w, self.b = nn.Parameter(torch.ones(1, c, 1)), nn.Parameter(torch.zeros(1, c, 1))
        def forward(self, x):
            m = x.mean((1, 2), keepdim=True)
            return self.w * (x - m) / (((x - m) ** 2).mean((1, 2), keepdim=True) + 1e-8).sqrt() + self.b

    class Block(nn.Module):
        def __init__(self, c, h, dil):
            super().__init__()
            self.f = nn.Sequential(nn.Conv1d(c, h, 1), nn.PReLU(), GLN(h), nn.Conv1d(h, h, 3, padding=dil,
                                   dilation=dil, groups=h), nn.PReLU(), GLN(h), nn.Conv1d(h, c, 1))
        def forward(self, x):
            return x + self.f(x)

    def sisnr(e, r):
        e, r = e - e.mean(-1, keepdim=True), r - r.mean(-1, keepdim=True)
        s = (e * r).sum(-1, keepdim=True) * r / (r.pow(2).sum(-1, keepdim=True) + 1e-8)
        return 10 * torch.log10(s.pow(2).sum(-1) / ((e - s).pow(2).sum(-1) + 1e-8) + 1e-8)

    class M(nn.Module):
        def __init__(self, n=64, c=64, h=128, k=16):
            super().__init__()
            self.enc, self.dec = nn.Conv1d(1, n, k, k // 2, bias=False), nn.ConvTranspose1d(n, 1, k, k // 2, bias=False)
            self.sep = nn.Sequential(GLN(n), nn.Conv1d(n, c, 1), *[Block(c, h, 2 ** i) for i in range(6)], nn.PReLU(),
                                     nn.Conv1d(c, 2 * n, 1))
        def forward(self, mix, ref):  # [B, 1, T], the two sources [B, 2, T]
            w = F.relu(self.enc(mix))
            m = torch.sigmoid(self.sep(w)).view(mix.shape[0], 2, -1, w.shape[-1])
            est = self.dec((m * w[:, None]).flatten(0, 1)).view(mix.shape[0], 2, -1)
            return -torch.maximum(sisnr(est, ref).mean(1), sisnr(est, ref.flip(1)).mean(1)).mean()  # PIT
    ref = g(2, 2, 4000)
    return M(), (ref.sum(1, keepdim=True), ref)
@prog("patchtst_revin_tensor_unfold")
def _():
    class M(nn.Module):
        def __init__(self, c=7, L=336, H=96, pl=16, st=8, d=128):
            super().__init__()
            self.pl, self.st, n = pl, st, (L - pl) // st + 2
            self.aw, self.ab = nn.Parameter(torch.ones(c)), nn.Parameter(torch.zeros(c))
            self.proj, self.pos = nn.Linear(pl, d), nn.Parameter(torch.randn(n, d) * 0.02)
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 8, 256, 0.0, batch_first=True), 2,
                                             enable_nested_tensor=False)
            self.head = nn.Linear(n * d, H)
        def forward(self, x, y):  # history [B, L, C], future [B, H, C]
            mu, sd = x.mean(1, keepdim=True), (x.var(1, keepdim=True, unbiased=False) + 1e-5).sqrt()
            x = (x - mu) / sd * self.aw + self.ab  # RevIN
            p = F.pad(x.transpose(1, 2), (0, self.st), mode="replicate").unfold(-1, self.pl, self.st)
            b, c, n, _ = p.shape
            h = self.enc(self.proj(p).reshape(b * c, n, -1) + self.pos)
            out = self.head(h.reshape(b, c, -1)).transpose(1, 2)
            out = (out - self.ab) / (self.aw + 1e-10) * sd + mu
            return F.mse_loss(out, y), out
    return M(), (g(4, 336, 7), g(4, 96, 7))
@prog("ppo_gae_clipped_objective")
def _():
    class M(nn.Module):
        def __init__(self, obs=32, na=6, h=256, gamma=0.99, lam=0.95):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(obs, h), nn.Tanh(), nn.Linear(h, h), nn.Tanh())
            self.pi, self.v, self.gamma, self.lam = nn.Linear(h, na), nn.Linear(h, 1), gamma, lam
        def forward(self, obs, act, old_logp, rew, done, old_v):  # [T, N, ...]; old_v [T + 1, N]
            with torch.no_grad():  # generalized advantage estimation, backwards in time
                adv, last = [], torch.zeros_like(rew[0])
                for t in reversed(range(rew.shape[0])):
                    nd = 1 - done[t]
                    last = rew[t] + self.gamma * old_v[t + 1] * nd - old_v[t] + self.gamma * self.lam * nd * last
                    adv.append(last)
                adv = torch.stack(adv[::-1])
                ret = adv + old_v[:-1]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            h = self.body(obs)
            dist = torch.distributions.Categorical(logits=self.pi(h))
            v = self.v(h).squeeze(-1)
            ratio = torch.exp(dist.log_prob(act) - old_logp)
            pg = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
            vc = old_v[:-1] + (v - old_v[:-1]).clamp(-0.2, 0.2)
            vl = 0.5 * torch.max((v - ret) ** 2, (vc - ret) ** 2).mean()
            return pg + 0.5 * vl - 0.01 * dist.entropy().mean()
    t, n = 128, 16
    return M(), (g(t, n, 32), ints(6, t, n, seed=12), -2 * unif(t, n, seed=13), g(t, n),
                 (unif(t, n, seed=14) < 0.02).float(), g(t + 1, n))
@prog("segnet_maxpool_indices_unpool")
def _():
    class M(nn.Module):
        def __init__(self, nc=8):
            super().__init__()
            self.e1 = nn.Sequential(cbr(3, 32, 3, p=1), cbr(32, 32, 3, p=1))
            self.e2 = nn.Sequential(cbr(32, 64, 3, p=1), cbr(64, 64, 3, p=1))
            self.mid = nn.Sequential(cbr(64, 128, 3, p=1), cbr(128, 64, 3, p=1))
            self.d2 = nn.Sequential(cbr(64, 64, 3, p=1), cbr(64, 32, 3, p=1))
            self.d1 = nn.Sequential(cbr(32, 32, 3, p=1), nn.Conv2d(32, nc, 3, padding=1))
        def forward(self, x, tgt):
            h, i1 = F.max_pool2d(self.e1(x), 2, 2, return_indices=True)
            h, i2 = F.max_pool2d(self.e2(h), 2, 2, return_indices=True)
            h = F.max_unpool2d(self.d2(F.max_unpool2d(self.mid(h), i2, 2, 2)), i1, 2, 2)
            y = self.d1(h)
            return F.cross_entropy(y, tgt), y
    return M(), (g(2, 3, 64, 64), ints(8, 2, 64, 64, seed=15))
@prog("mixup_cutmix_soft_target_ce")
def _():
    class M(nn.Module):
        def __init__(self, nc=10, lam=0.7, box=(4, 20, 8, 24)):
            super().__init__()
            self.nc, self.lam, self.box = nc, lam, box
            self.net = nn.Sequential(cbr(3, 32, 3, p=1), cbr(32, 64, 3, 2, 1), cbr(64, 128, 3, 2, 1),
                                     nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, nc))
        def forward(self, x, y, perm):
            lam, (y1, y2, x1, x2) = self.lam, self.box
            xm = lam * x + (1 - lam) * x[perm]  # MixUp
            xc = x.clone()
            xc[:, :, y1:y2, x1:x2] = x[perm, :, y1:y2, x1:x2]  # CutMix
            lc = 1 - (y2 - y1) * (x2 - x1) / (x.shape[2] * x.shape[3])
            oh, ohp = F.one_hot(y, self.nc).float(), F.one_hot(y[perm], self.nc).float()
            t = torch.cat([lam * oh + (1 - lam) * ohp, lc * oh + (1 - lc) * ohp])
            return F.cross_entropy(self.net(torch.cat([xm, xc])), t, label_smoothing=0.1)
    return M(), (g(16, 3, 32, 32), ints(10, 16, seed=16), unif(16, seed=16).argsort())
@prog("prune_masks_forward_pre_hooks")
def _():
    import torch.nn.utils.prune as prune
    m = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
                      nn.Conv2d(64, 64, 3, 2, 1), nn.ReLU(), nn.Flatten(), nn.Linear(64 * 64, 256), nn.ReLU(),
                      nn.Linear(256, 10))
    prune.l1_unstructured(m[0], "weight", 0.3)
    prune.ln_structured(m[2], "weight", 0.25, n=2, dim=0)
    prune.l1_unstructured(m[4], "bias", 0.5)
    prune.global_unstructured([(m[7], "weight"), (m[9], "weight")], prune.L1Unstructured, amount=0.6)
    return m, (g(16, 3, 32, 32),)
@prog("dann_grad_reverse_autograd_function")
def _():
    class GradReverse(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, lam):
            ctx.lam = lam
            return x.view_as(x)
        @staticmethod
        def backward(ctx, gr):
            return -ctx.lam * gr, None

    class SwishFn(torch.autograd.Function):  # EfficientNet-PyTorch's memory-efficient swish
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * torch.sigmoid(x)
        @staticmethod
        def backward(ctx, gr):
            x, = ctx.saved_tensors
            s = torch.sigmoid(x)
            return gr * (s * (1 + x * (1 - s)))

    class Swish(nn.Module):
        def forward(self, x):
            return SwishFn.apply(x)

    class M(nn.Module):
        def __init__(self, lam=0.3):
            super().__init__()
            self.lam = lam
            self.feat = nn.Sequential(nn.Conv2d(3, 32, 5), bn(32), Swish(), nn.MaxPool2d(2), nn.Conv2d(32, 48, 5),
                                      bn(48), Swish(), nn.MaxPool2d(2), nn.Flatten())
            self.cls, self.dom = (nn.Sequential(nn.Linear(768, 100), Swish(), nn.Linear(100, o)) for o in (10, 1))
        def forward(self, xs, ys, xt):
            n, f = xs.shape[0], self.feat(torch.cat([xs, xt]))
            d = self.dom(GradReverse.apply(f, self.lam)).squeeze(1)
            dl = F.binary_cross_entropy_with_logits(d, torch.cat([torch.zeros(n), torch.ones(xt.shape[0])]))
            return F.cross_entropy(self.cls(f[:n]), ys) + dl
    return M(), (g(32, 3, 28, 28), ints(10, 32, seed=17), unif(32, 3, 28, 28, seed=18))
@prog("activation_checkpoint_encoder")
def _():
    from torch.utils.checkpoint import checkpoint

    class M(nn.Module):
        def __init__(self, d=256, n=2):
            super().__init__()
            self.layers = nn.ModuleList(nn.TransformerEncoderLayer(d, 4, 4 * d, 0.0, "gelu", batch_first=True,
                                                                   norm_first=True) for _ in range(n))
        def forward(self, x):
            for l in self.layers:
                x = checkpoint(l, x, use_reentrant=False)
            return x
    return M(), (g(2, 128, 256),)
@prog("gcn_sparse_adjacency_spmm")
def _():
    n, e = 2708, 5278  # Cora-sized
    src, dst = ints(n, e, seed=19), ints(n, e, seed=20)
    i = torch.cat([torch.stack([src, dst]), torch.stack([dst, src]), torch.arange(n).repeat(2, 1)], 1)
    a = torch.sparse_coo_tensor(i, torch.ones(i.shape[1]), (n, n)).coalesce()
    dis = torch.sparse.sum(a, 1).to_dense().pow(-0.5)
    ix = a.indices()
    adj = torch.sparse_coo_tensor(ix, dis[ix[0]] * a.values() * dis[ix[1]], (n, n)).coalesce()  # D^-1/2 (A + I) D^-1/2

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = nn.Linear(512, 64), nn.Linear(64, 7)
        def forward(self, x, adj, y):
            out = torch.sparse.mm(adj, self.l2(F.relu(torch.sparse.mm(adj, self.l1(x)))))
            return F.cross_entropy(out, y), out
    return M(), (g(n, 512), adj, ints(7, n, seed=21))
@prog("kv_cache_decode_step_index_copy", eval=True)
def _():
    class Layer(nn.Module):
        def __init__(self, b, d, nh, ml):
            super().__init__()
            self.nh, self.dh = nh, d // nh
            self.qkv, self.o, self.ln1, self.ln2 = nn.Linear(d, 3 * d), nn.Linear(d, d), nn.LayerNorm(d), \
                nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.register_buffer("kc", torch.randn(b, nh, ml, d // nh))  # a prefilled prompt's keys / values
            self.register_buffer("vc", torch.randn(b, nh, ml, d // nh))
        def forward(self, x, pos):  # one new token per sequence [B, 1, d], the cache slot it fills [1]
            b = x.shape[0]
            q, k, v = self.qkv(self.ln1(x)).view(b, 1, 3, self.nh, self.dh).permute(2, 0, 3, 1, 4)
            self.kc.index_copy_(2, pos, k.detach())
            self.vc.index_copy_(2, pos, v.detach())
            valid = (torch.arange(self.kc.shape[2]) <= pos)[None]
            y = F.scaled_dot_product_attention(q, self.kc, self.vc, attn_mask=valid)
            x = x + self.o(y.transpose(1, 2).reshape(b, 1, -1))
            return x + self.mlp(self.ln2(x))

    class M(nn.Module):
        def __init__(self, b=8, d=256, nh=4, ml=512):
            super().__init__()
            self.layers, self.head = nn.ModuleList(Layer(b, d, nh, ml) for _ in range(4)), nn.Linear(d, 8000)
        def forward(self, x, pos):
            for l in self.layers:
                x = l(x, pos)
            return self.head(x)
    return M(), (g(8, 1, 256), torch.tensor([300]))
@prog("torch_func_vmap_model_ensemble")
def _():
    from torch.func import functional_call, stack_module_state, vmap

    def mlp():
        return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))

    class M(nn.Module):
        def __init__(self, n=8):
            super().__init__()
            ps, _ = stack_module_state([mlp() for _ in range(n)])
            self.names, self.ps = list(ps), nn.ParameterList(nn.Parameter(p.detach()) for p in ps.values())
            self.base = (mlp().to("meta"),)  # not a submodule: its weights come from functional_call
        def forward(self, x, y):
            one = lambda ps, x: functional_call(self.base[0], dict(zip(self.names, ps)), (x,))  # noqa: E731
            logits = vmap(one, in_dims=(0, None))(tuple(self.ps), x)  # [n, B, 10]
            return F.cross_entropy(logits.flatten(0, 1), y.repeat(logits.shape[0])), logits.softmax(-1).mean(0)
    return M(), (g(512, 64), ints(10, 512, seed=22))
@prog("swav_sinkhorn_knopp_swapped")
def _():
    def sinkhorn(s, eps=0.05, iters=3):
        q = torch.exp(s / eps).t()
        q = q / q.sum()
        k, b = q.shape
        for _ in range(iters):
            q = q / q.sum(1, keepdim=True) / k
            q = q / q.sum(0, keepdim=True) / b
        return (q * b).t()

    class M(nn.Module):
        def __init__(self, k=128, d=64, t=0.1):
            super().__init__()
            self.t = t
            self.enc = nn.Sequential(cbr(3, 32, 3, 2, 1), cbr(32, 64, 3, 2, 1), cbr(64, 128, 3, 2, 1),
                                     nn.AdaptiveAvgPool2d(1), nn.Flatten())
            self.proj = nn.Sequential(nn.Linear(128, 256), bn(256, 1), nn.ReLU(), nn.Linear(256, d))
            self.protos = nn.Linear(d, k, bias=False)
        def forward(self, x1, x2):
            b = x1.shape[0]
            z = F.normalize(self.proj(self.enc(torch.cat([x1, x2]))), dim=1)
            s = z @ F.normalize(self.protos.weight, dim=1).t()
            with torch.no_grad():
                q1, q2 = sinkhorn(s[:b]), sinkhorn(s[b:])
            l1, l2 = F.log_softmax(s[:b] / self.t, 1), F.log_softmax(s[b:] / self.t, 1)
            return -0.5 * ((q1 * l2).sum(1).mean() + (q2 * l1).sum(1).mean())
    return M(), (g(64, 3, 32, 32), unif(64, 3, 32, 32, seed=23))
@prog("lovasz_hinge_sorted_errors")
def _():
    def lovasz_hinge(logit, lab):  # one image, flattened
        err = 1 - logit * (2 * lab - 1)
        es, perm = torch.sort(err, descending=True)
        gt = lab[perm]
        gts = gt.sum()
        jac = 1 - (gts - gt.cumsum(0)) / (gts + (1 - gt).cumsum(0))
        return torch.dot(F.relu(es), torch.cat([jac[:1], jac[1:] - jac[:-1]]))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(cbr(3, 32, 3, p=1), cbr(32, 32, 3, p=1), nn.Conv2d(32, 1, 1))
        def forward(self, x, lab):
            z = self.net(x).squeeze(1)
            lh = sum(lovasz_hinge(z[i].flatten(), lab[i].flatten()) for i in range(z.shape[0])) / z.shape[0]
            return lh + F.binary_cross_entropy_with_logits(z, lab)
    return M(), (g(4, 3, 64, 64), (unif(4, 64, 64, seed=24) < 0.3).float())
@prog("deepfm_cin_hashed_int64_ids")
def _():
    class M(nn.Module):
        def __init__(self, f=16, d=16, buckets=1 << 16, cin=(32, 32)):
            super().__init__()
            self.buckets = buckets
            self.emb, self.lin = nn.Embedding(buckets, d), nn.Embedding(buckets, 1)
            self.register_buffer("salt", torch.arange(f) * 1000003)
            self.cin = nn.ModuleList(nn.Conv1d(f * h, c, 1) for h, c in zip((f,) + cin[:-1], cin))
            self.dnn = nn.Sequential(nn.Linear(f * d, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                     nn.Linear(128, 1))
            self.out = nn.Linear(sum(cin), 1)
        def forward(self, raw, y):  # raw int64 ids [B, F]
            idx = (raw * 2654435761 + self.salt) % self.buckets  # the hashing trick
            e = self.emb(idx)
            fm = 0.5 * (e.sum(1).pow(2) - e.pow(2).sum(1)).sum(1)  # FM second-order term
            xs, h = [], e
            for conv in self.cin:  # compressed interaction network
                h = F.relu(conv(torch.einsum("bhd,bmd->bhmd", h, e).flatten(1, 2)))
                xs.append(h.sum(2))
            logit = (self.lin(idx).sum((1, 2)) + fm + self.dnn(e.flatten(1)).squeeze(1)
                     + self.out(torch.cat(xs, 1)).squeeze(1))
            return F.binary_cross_entropy_with_logits(logit, y), torch.sigmoid(logit)
    return M(), (ints(10 ** 9, 256, 16, seed=25), (unif(256, seed=26) < 0.2).float())


run = runner(P, EVAL, 34)


if __name__ == "__main__":
    T.main(P, run)
