"""A fourth sweep of ordinary PyTorch modules through torch.compile(backend="axle"), of kinds
benchmarks/torch_programs.py, torch_programs_2.py and torch_programs_3.py do not have: hand-written
torchvision-style blocks in training (ResNeXt grouped bottlenecks, RegNetY with squeeze-excitation,
an Inception block with factorized 1x7 / 7x1 convolutions and a strided reduction, SqueezeNet fire
modules with ceil-mode pooling, a VGG stack), a 2-D U-Net with bilinear upsampling and skip
concatenations, a DCGAN generator (ConvTranspose2d + BatchNorm), a 3-D U-Net piece (ConvTranspose3d),
an ESRGAN dense block with PixelUnshuffle and nearest upsampling, Swin shifted-window attention
(torch.roll, relative position bias), a Perceiver latent cross-attention, LLaMA grouped-query
attention with complex RoPE (view_as_complex, enable_gqa), LoRA adapters over a frozen base, a full
nn.Transformer with padding masks, a BERT masked-LM head over boolean-mask selection, capsule
dynamic routing, a speech front end (torch.stft, mel filterbank), Tacotron location-sensitive
attention over nn.LSTMCell, a CRF forward algorithm, DLRM (per-sample-weighted EmbeddingBags, dot
interactions), TabNet (sparsemax, BatchNorm1d), a RealNVP / Glow flow, a convolutional VAE with
nn.Unflatten, graph attention (edge softmax), batch-hard triplet mining over torch.cdist, weighted
segmentation cross-entropy + Dice, regression losses, a YOLO head with GIoU, bfloat16 autocast and an
AdamW update with gradient clipping fused with the model. Same harness as torch_programs_2.py:
outputs, gradients and updated buffers against eager PyTorch, interleaved timing (medians),
fallbacks (the bridge's warning) and graph breaks.

Usage: AXLE_NUM_THREADS=1 python benchmarks/torch_programs_4.py [name,name,...]"""
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


def cbr(cin, cout, k, s=1, p=0, groups=1, eps=1e-5):  # conv, batch norm, ReLU
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, p, groups=groups, bias=False), nn.BatchNorm2d(cout, eps=eps),
                         nn.ReLU())


@prog("resnext_grouped_bottleneck_train")
def _():
    class Block(nn.Module):  # ResNeXt-50 32x4d style: 3x3 convolution in 32 groups
        def __init__(self, cin, width, cout, stride, groups=32):
            super().__init__()
            self.f = nn.Sequential(cbr(cin, width, 1), cbr(width, width, 3, stride, 1, groups=groups),
                                   nn.Conv2d(width, cout, 1, bias=False), bn(cout))
            self.sc = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), bn(cout))
                       if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return F.relu(self.f(x) + self.sc(x))
    return nn.Sequential(Block(64, 128, 256, 1), Block(256, 256, 512, 2)), (g(4, 64, 16, 16),)
@prog("regnety_se_block_train")
def _():
    class YBlock(nn.Module):  # RegNetY: group width 8, squeeze-excitation on a quarter of the input width
        def __init__(self, cin, w, stride, gw=8):
            super().__init__()
            self.a, self.b = cbr(cin, w, 1), cbr(w, w, 3, stride, 1, groups=w // gw)
            s = cin // 4
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(w, s, 1), nn.ReLU(), nn.Conv2d(s, w, 1),
                                    nn.Sigmoid())
            self.c = nn.Sequential(nn.Conv2d(w, w, 1, bias=False), bn(w))
            self.proj = (nn.Sequential(nn.Conv2d(cin, w, 1, stride, bias=False), bn(w))
                         if stride != 1 or cin != w else nn.Identity())

        def forward(self, x):
            h = self.b(self.a(x))
            return F.relu(self.c(h * self.se(h)) + self.proj(x))
    return nn.Sequential(YBlock(48, 104, 2), YBlock(104, 104, 1)), (g(8, 48, 28, 28),)
@prog("inception_factorized_branches_train")
def _():
    class M(nn.Module):  # InceptionA / C branches (1x7 then 7x1), then an InceptionB-style reduction
        def __init__(self, c=64):
            super().__init__()
            e = 1e-3
            self.b1 = cbr(c, 32, 1, eps=e)
            self.b5 = nn.Sequential(cbr(c, 24, 1, eps=e), cbr(24, 32, 5, p=2, eps=e))
            self.b3 = nn.Sequential(cbr(c, 32, 1, eps=e), cbr(32, 48, 3, p=1, eps=e), cbr(48, 48, 3, p=1, eps=e))
            self.b7 = nn.Sequential(cbr(c, 32, 1, eps=e), cbr(32, 32, (1, 7), p=(0, 3), eps=e),
                                    cbr(32, 32, (7, 1), p=(3, 0), eps=e))
            self.bp = cbr(c, 16, 1, eps=e)
            self.red = cbr(160, 64, 3, 2, eps=e)

        def forward(self, x):
            y = torch.cat([self.b1(x), self.b5(x), self.b3(x), self.b7(x),
                           self.bp(F.avg_pool2d(x, 3, 1, 1, count_include_pad=False))], 1)
            return torch.cat([self.red(y), F.max_pool2d(y, 3, 2)], 1)
    return M(), (g(4, 64, 17, 17),)
@prog("squeezenet_fire_ceil_pool_train")
def _():
    class Fire(nn.Module):
        def __init__(self, cin, s, e1, e3):
            super().__init__()
            self.sq, self.e1, self.e3 = nn.Conv2d(cin, s, 1), nn.Conv2d(s, e1, 1), nn.Conv2d(s, e3, 3, padding=1)

        def forward(self, x):
            h = F.relu(self.sq(x))
            return torch.cat([F.relu(self.e1(h)), F.relu(self.e3(h))], 1)
    m = nn.Sequential(nn.Conv2d(3, 64, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True), Fire(64, 16, 64, 64),
                      Fire(128, 16, 64, 64), nn.MaxPool2d(3, 2, ceil_mode=True), Fire(128, 32, 128, 128),
                      Fire(256, 32, 128, 128), nn.Dropout(0.0), nn.Conv2d(256, 10, 1), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten())
    return m, (g(8, 3, 64, 64),)
@prog("vgg_bn_maxpool_stack_train")
def _():
    def stage(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1), bn(cout), nn.ReLU(inplace=True),
                nn.Conv2d(cout, cout, 3, padding=1), bn(cout), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2)]
    m = nn.Sequential(*stage(3, 32), *stage(32, 64), *stage(64, 128), nn.Flatten(), nn.Linear(128 * 16, 256),
                      nn.ReLU(inplace=True), nn.Dropout(0.0), nn.Linear(256, 10))
    return m, (g(8, 3, 32, 32),)
@prog("unet2d_bilinear_skip_train")
def _():
    def dc(cin, cout):
        return nn.Sequential(cbr(cin, cout, 3, p=1), cbr(cout, cout, 3, p=1))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.inc, self.d1, self.d2 = dc(3, 16), dc(16, 32), dc(32, 64)
            self.u1, self.u2, self.out = dc(96, 32), dc(48, 16), nn.Conv2d(16, 2, 1)

        def forward(self, x):
            up = lambda t: F.interpolate(t, scale_factor=2, mode="bilinear", align_corners=True)  # noqa: E731
            a = self.inc(x)
            b = self.d1(F.max_pool2d(a, 2))
            c = self.d2(F.max_pool2d(b, 2))
            u = self.u1(torch.cat([up(c), b], 1))
            return self.out(self.u2(torch.cat([up(u), a], 1)))
    return M(), (g(2, 3, 64, 64),)
@prog("dcgan_generator_convtranspose_bn")
def _():
    def up(cin, cout, s=2, p=1):
        return [nn.ConvTranspose2d(cin, cout, 4, s, p, bias=False), bn(cout), nn.ReLU(True)]
    m = nn.Sequential(*up(64, 128, 1, 0), *up(128, 64), *up(64, 32), nn.ConvTranspose2d(32, 3, 4, 2, 1, bias=False),
                      nn.Tanh())
    return m, (g(16, 64, 1, 1),)
@prog("unet3d_convtranspose3d_train")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.inc = nn.Sequential(nn.Conv3d(1, 8, 3, padding=1, bias=False), bn(8, 3), nn.ReLU())
            self.down = nn.Sequential(nn.Conv3d(8, 16, 3, 2, 1), nn.ReLU())
            self.up = nn.ConvTranspose3d(16, 8, 2, stride=2)
            self.dec = nn.Sequential(nn.Conv3d(16, 8, 3, padding=1, bias=False), bn(8, 3), nn.ReLU(), nn.Conv3d(8, 2, 1))

        def forward(self, x):
            a = self.inc(x)
            return self.dec(torch.cat([self.up(self.down(a)), a], 1))
    return M(), (g(2, 1, 16, 32, 32),)
@prog("esrgan_rdb_pixelunshuffle_nearest")
def _():
    class RDB(nn.Module):  # residual dense block
        def __init__(self, c=32, gr=16):
            super().__init__()
            self.convs = nn.ModuleList(nn.Conv2d(c + i * gr, gr if i < 4 else c, 3, padding=1) for i in range(5))

        def forward(self, x):
            feats = [x]
            for i, cv in enumerate(self.convs):
                h = cv(torch.cat(feats, 1))
                if i < 4:
                    feats.append(F.leaky_relu(h, 0.2))
            return x + 0.2 * h

    class M(nn.Module):
        def __init__(self, c=32):
            super().__init__()
            self.unshuf, self.first = nn.PixelUnshuffle(2), nn.Conv2d(12, c, 3, padding=1)
            self.body, self.trunk = nn.Sequential(RDB(c), RDB(c)), nn.Conv2d(c, c, 3, padding=1)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.c1, self.last = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, 3, 3, padding=1)

        def forward(self, x):
            f = self.first(self.unshuf(x))
            f = f + self.trunk(self.body(f))
            return self.last(F.leaky_relu(self.c1(self.up(f)), 0.2))
    return M(), (g(2, 3, 64, 64),)
@prog("swin_shifted_window_block")
def _():
    part, unpart = window_partition, window_merge

    class Block(nn.Module):
        def __init__(self, d, nh, res, w, shift):
            super().__init__()
            self.nh, self.res, self.w, self.shift = nh, res, w, shift
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.table = nn.Parameter(torch.randn((2 * w - 1) ** 2, nh) * 0.02)
            co = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
            rel = (co[:, :, None] - co[:, None, :]).permute(1, 2, 0) + (w - 1)
            self.register_buffer("idx", rel[..., 0] * (2 * w - 1) + rel[..., 1])
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            if not shift:
                self.mask = None
            else:
                self.register_buffer("mask", shifted_window_mask(res, w, shift, part))

        def forward(self, x):  # [B, L, C]
            b, L, c = x.shape
            r, nh = self.res, self.nh
            h = self.n1(x).view(b, r, r, c)
            if self.shift:
                h = torch.roll(h, (-self.shift, -self.shift), (1, 2))
            win = part(h, self.w)
            bw, n, _ = win.shape
            q, k, v = self.qkv(win).view(bw, n, 3, nh, c // nh).permute(2, 0, 3, 1, 4)
            a = (q * (c // nh) ** -0.5) @ k.transpose(-2, -1)
            a = a + self.table[self.idx.view(-1)].view(n, n, nh).permute(2, 0, 1)[None]
            if self.mask is not None:
                nw = self.mask.shape[0]
                a = (a.view(bw // nw, nw, nh, n, n) + self.mask[None, :, None]).view(bw, nh, n, n)
            y = unpart(self.proj((a.softmax(-1) @ v).transpose(1, 2).reshape(bw, n, c)), self.w, b, r, r)
            if self.shift:
                y = torch.roll(y, (self.shift, self.shift), (1, 2))
            x = x + y.reshape(b, L, c)
            return x + self.mlp(self.n2(x))

    class M(nn.Module):
        def __init__(self, d=64, res=32):
            super().__init__()
            self.res = res
            self.blocks = nn.Sequential(Block(d, 2, res, 8, 0), Block(d, 2, res, 8, 4))
            self.ln, self.red = nn.LayerNorm(4 * d), nn.Linear(4 * d, 2 * d, bias=False)

        def forward(self, x):
            x = self.blocks(x)
            b, _, c = x.shape
            x = x.view(b, self.res, self.res, c)  # patch merging
            x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
            return self.red(self.ln(x.view(b, -1, 4 * c)))
    return M(), (g(2, 1024, 64),)
@prog("perceiver_latent_cross_attention")
def _():
    class M(nn.Module):
        def __init__(self, n=64, d=128, bands=15, res=32):
            super().__init__()
            self.latents = nn.Parameter(torch.randn(n, d) * 0.02)
            lin = torch.linspace(-1, 1, res)
            pos = torch.stack(torch.meshgrid(lin, lin, indexing="ij"), -1).view(-1, 2)
            fr = pos[..., None] * torch.linspace(1, res / 2, bands) * math.pi
            self.register_buffer("pe", torch.cat([pos, fr.sin().flatten(1), fr.cos().flatten(1)], -1))  # [HW, 62]
            din = 3 + 2 + 4 * bands
            self.ln_in, self.ln_lat = nn.LayerNorm(din), nn.LayerNorm(d)
            self.cross = nn.MultiheadAttention(d, 1, kdim=din, vdim=din, batch_first=True)
            self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
            layer = nn.TransformerEncoderLayer(d, 4, 2 * d, 0.0, "gelu", batch_first=True, norm_first=True)
            self.lat_attn = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(d, 10)

        def forward(self, img):
            b = img.shape[0]
            kv = self.ln_in(torch.cat([img.flatten(2).transpose(1, 2), self.pe.expand(b, -1, -1)], -1))
            lat = self.latents.expand(b, -1, -1)
            lat = lat + self.cross(self.ln_lat(lat), kv, kv, need_weights=False)[0]
            lat = self.lat_attn(lat + self.ff(lat))
            return self.head(lat.mean(1))
    return M(), (g(4, 3, 32, 32),)
@prog("llama_gqa_complex_rope")
def _():
    class Layer(nn.Module):
        def __init__(self, d, nh, nkv, f, gqa):
            super().__init__()
            self.nh, self.nkv, self.hd, self.gqa = nh, nkv, d // nh, gqa
            self.wq, self.wk = nn.Linear(d, d, bias=False), nn.Linear(d, nkv * self.hd, bias=False)
            self.wv, self.wo = nn.Linear(d, nkv * self.hd, bias=False), nn.Linear(d, d, bias=False)
            self.n1, self.n2 = nn.RMSNorm(d, eps=1e-5), nn.RMSNorm(d, eps=1e-5)
            self.w1, self.w3, self.w2 = nn.Linear(d, f, bias=False), nn.Linear(d, f, bias=False), \
                nn.Linear(f, d, bias=False)

        def forward(self, x, fc):
            b, s, d = x.shape

            def rot(t):  # LLaMA's apply_rotary_emb
                tc = torch.view_as_complex(t.float().reshape(*t.shape[:-1], -1, 2))
                return torch.view_as_real(tc * fc[None, :, None]).flatten(3).type_as(t)
            h = self.n1(x)
            q = rot(self.wq(h).view(b, s, self.nh, self.hd)).transpose(1, 2)
            k = rot(self.wk(h).view(b, s, self.nkv, self.hd)).transpose(1, 2)
            v = self.wv(h).view(b, s, self.nkv, self.hd).transpose(1, 2)
            if self.gqa:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            else:  # repeat_kv
                rep = self.nh // self.nkv
                k, v = (t[:, :, None].expand(b, self.nkv, rep, s, self.hd).reshape(b, self.nh, s, self.hd)
                        for t in (k, v))
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.wo(y.transpose(1, 2).reshape(b, s, d))
            h = self.n2(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    class M(nn.Module):
        def __init__(self, d=256, nh=8, nkv=2, s=128, f=704):
            super().__init__()
            hd = d // nh
            fr = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
            self.register_buffer("fc", torch.polar(torch.ones(s, hd // 2), torch.outer(torch.arange(s).float(), fr)))
            self.layers = nn.ModuleList([Layer(d, nh, nkv, f, False), Layer(d, nh, nkv, f, True)])

        def forward(self, x):
            for l in self.layers:
                x = l(x, self.fc)
            return x
    return M(), (g(2, 128, 256),)
@prog("lora_adapters_frozen_base")
def _():
    class LoRA(nn.Module):
        def __init__(self, i, o, r=8, alpha=16):
            super().__init__()
            self.base = nn.Linear(i, o)
            self.A, self.B = nn.Parameter(torch.randn(r, i) * 0.02), nn.Parameter(torch.randn(o, r) * 0.02)
            self.scale = alpha / r

        def forward(self, x):
            return self.base(x) + (x @ self.A.t() @ self.B.t()) * self.scale

    class Block(nn.Module):
        def __init__(self, d=256, nh=4):
            super().__init__()
            self.nh = nh
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.q, self.k, self.v, self.o = LoRA(d, d), nn.Linear(d, d), LoRA(d, d), nn.Linear(d, d)
            self.fc1, self.fc2 = LoRA(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, s, d = x.shape
            h = self.ln1(x)
            q, k, v = (m(h).view(b, s, self.nh, -1).transpose(1, 2) for m in (self.q, self.k, self.v))
            x = x + self.o(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
    m = nn.Sequential(Block(), Block())
    for n, p in m.named_parameters():
        p.requires_grad_(n.endswith(".A") or n.endswith(".B"))
    return m, (g(4, 96, 256),)
@prog("nn_transformer_seq2seq_masks")
def _():
    class M(nn.Module):
        def __init__(self, v=1000, d=128):
            super().__init__()
            self.d = d
            self.src_emb, self.tgt_emb = nn.Embedding(v, d, padding_idx=0), nn.Embedding(v, d, padding_idx=0)
            pos = torch.arange(64).float()[:, None] * torch.exp(torch.arange(0, d, 2).float() * (-math.log(1e4) / d))
            self.register_buffer("pe", torch.stack([pos.sin(), pos.cos()], -1).flatten(1))
            self.tf = nn.Transformer(d, 4, 2, 2, 256, 0.0, batch_first=True)
            self.gen = nn.Linear(d, v)

        def forward(self, src, tgt):
            sm, tm = src == 0, tgt == 0
            causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
            s = self.src_emb(src) * math.sqrt(self.d) + self.pe[: src.shape[1]]
            t = self.tgt_emb(tgt) * math.sqrt(self.d) + self.pe[: tgt.shape[1]]
            out = self.tf(s, t, tgt_mask=causal, src_key_padding_mask=sm, tgt_key_padding_mask=tm,
                          memory_key_padding_mask=sm, tgt_is_causal=True)
            return self.gen(out)

    def padded(b, s, seed):
        ids = ints(1000, b, s, lo=1, seed=seed)
        return ids.masked_fill(torch.arange(s)[None] >= ints(s + 1, b, lo=s // 2, seed=seed + 1)[:, None], 0)
    return M(), (padded(8, 40, 1), padded(8, 30, 3))
@prog("bert_mlm_boolean_mask_select")
def _():
    class M(nn.Module):
        def __init__(self, v=5000, d=128, s=64):
            super().__init__()
            self.tok, self.pos, self.typ = nn.Embedding(v, d), nn.Embedding(s, d), nn.Embedding(2, d)
            self.ln, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
            self.enc = nn.TransformerEncoderLayer(d, 4, 4 * d, 0.0, "gelu", batch_first=True)
            self.dense, self.bias = nn.Linear(d, d), nn.Parameter(torch.zeros(v))

        def forward(self, ids, types, labels):
            h = self.ln(self.tok(ids) + self.pos(torch.arange(ids.shape[1]))[None] + self.typ(types))
            h = self.enc(h)
            sel = labels != -100
            z = self.ln2(F.gelu(self.dense(h[sel]))) @ self.tok.weight.t() + self.bias  # tied decoder
            return F.cross_entropy(z, labels[sel])
    ids = ints(5000, 16, 64, seed=4)
    labels = torch.where(unif(16, 64, seed=5) < 0.15, ids, -100)
    return M(), (ids, (torch.arange(64) >= 32).long().expand(16, 64).contiguous(), labels)
@prog("capsule_dynamic_routing")
def _():
    def squash(s):
        n2 = (s * s).sum(-1, keepdim=True)
        return n2 / (1 + n2) * s / torch.sqrt(n2 + 1e-8)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.prim = nn.Conv2d(1, 64, 9), nn.Conv2d(64, 8 * 16, 9, stride=2)  # 28 -> 20 -> 6
            self.W = nn.Parameter(torch.randn(1, 16 * 36, 10, 16, 8) * 0.05)

        def forward(self, x, y):
            b = x.shape[0]
            u = squash(self.prim(F.relu(self.conv(x))).view(b, 16, 8, 36).permute(0, 1, 3, 2).reshape(b, 576, 8))
            u_hat = (self.W @ u[:, :, None, :, None]).squeeze(-1)  # [B, 576, 10, 16]
            logits = torch.zeros(b, 576, 10)
            for i in range(3):
                v = squash((logits.softmax(2)[..., None] * u_hat).sum(1))  # [B, 10, 16]
                if i < 2:
                    logits = logits + (u_hat * v[:, None]).sum(-1)
            ln = v.norm(dim=-1)
            t = F.one_hot(y, 10).float()
            loss = (t * F.relu(0.9 - ln) ** 2 + 0.5 * (1 - t) * F.relu(ln - 0.1) ** 2).sum(1).mean()
            return loss, ln
    return M(), (g(4, 1, 28, 28), ints(10, 4, seed=6))
@prog("speech_stft_logmel_cnn")
def _():
    class M(nn.Module):
        def __init__(self, n_fft=512, hop=160, win=400, mels=64, sr=16000):
            super().__init__()
            self.n_fft, self.hop, self.win = n_fft, hop, win
            self.register_buffer("window", torch.hann_window(win))
            hz = lambda m: 700 * (10 ** (m / 2595) - 1)  # noqa: E731
            pts = hz(torch.linspace(0, 2595 * math.log10(1 + sr / 2 / 700), mels + 2))
            f = torch.linspace(0, sr / 2, n_fft // 2 + 1)[:, None]
            lo, c, hi = pts[:-2], pts[1:-1], pts[2:]
            self.register_buffer("fb", torch.clamp(torch.minimum((f - lo) / (c - lo), (hi - f) / (hi - c)), min=0))
            self.conv = nn.Sequential(cbr(1, 32, 3, 2, 1), cbr(32, 32, 3, 2, 1))
            self.proj, self.cls = nn.Linear(32 * mels // 4, 256), nn.Linear(256, 35)

        def forward(self, wav):
            x = torch.cat([wav[:, :1], wav[:, 1:] - 0.97 * wav[:, :-1]], 1)  # pre-emphasis
            spec = torch.stft(x, self.n_fft, self.hop, self.win, self.window, center=True, return_complex=True)
            mel = torch.log(torch.matmul(self.fb.t(), spec.abs().pow(2)) + 1e-6)  # [B, mels, T]
            mel = (mel - mel.mean(-1, keepdim=True)) / (mel.std(-1, keepdim=True) + 1e-5)
            h = self.conv(mel[:, None]).permute(0, 3, 1, 2).flatten(2)  # [B, T / 4, 32 * mels / 4]
            return self.cls(F.relu(self.proj(h)).mean(1))
    return M(), (g(8, 16000),)
@prog("tacotron_location_attention_lstmcell")
def _():
    class M(nn.Module):
        def __init__(self, v=60, e=128, a=128, r=256, nmel=80):
            super().__init__()
            self.r, self.e = r, e
            self.emb = nn.Embedding(v, e)
            self.enc = nn.Sequential(nn.Conv1d(e, e, 5, padding=2, bias=False), bn(e, 1), nn.ReLU())
            self.prenet = nn.Sequential(nn.Linear(nmel, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU())
            self.cell = nn.LSTMCell(128 + e, r)
            self.q, self.mem = nn.Linear(r, a, bias=False), nn.Linear(e, a, bias=False)
            self.loc_conv, self.loc = nn.Conv1d(2, 32, 31, padding=15, bias=False), nn.Linear(32, a, bias=False)
            self.v, self.proj = nn.Linear(a, 1), nn.Linear(r + e, nmel)

        def forward(self, ids, valid, mels):  # mels [B, T, 80]: teacher forcing
            memory = self.enc(self.emb(ids).transpose(1, 2)).transpose(1, 2)
            pm = self.mem(memory)
            b, n, _ = memory.shape
            hx, cx, ctx = torch.zeros(b, self.r), torch.zeros(b, self.r), torch.zeros(b, self.e)
            w, wcum, prev = torch.zeros(b, n), torch.zeros(b, n), torch.zeros(b, mels.shape[2])
            outs, aligns = [], []
            for t in range(mels.shape[1]):
                hx, cx = self.cell(torch.cat([self.prenet(prev), ctx], -1), (hx, cx))
                loc = self.loc(self.loc_conv(torch.stack([w, wcum], 1)).transpose(1, 2))
                en = self.v(torch.tanh(self.q(hx)[:, None] + pm + loc)).squeeze(-1)
                w = torch.softmax(en.masked_fill(~valid, float("-inf")), -1)
                wcum = wcum + w
                ctx = torch.bmm(w[:, None], memory).squeeze(1)
                outs.append(self.proj(torch.cat([hx, ctx], -1)))
                aligns.append(w)
                prev = mels[:, t]
            return torch.stack(outs, 1), torch.stack(aligns, 1)
    valid = torch.arange(50)[None] < ints(51, 8, lo=30, seed=7)[:, None]
    return M(), (ints(60, 8, 50, seed=8), valid, g(8, 16, 80))
@prog("crf_forward_algorithm_loop")
def _():
    class M(nn.Module):
        def __init__(self, v=3000, d=128, k=12):
            super().__init__()
            self.emb, self.conv, self.em = nn.Embedding(v, d), nn.Conv1d(d, d, 3, padding=1), nn.Linear(d, k)
            self.trans = nn.Parameter(torch.randn(k, k) * 0.1)
            self.start, self.end = nn.Parameter(torch.randn(k) * 0.1), nn.Parameter(torch.randn(k) * 0.1)

        def forward(self, ids, tags, mask):  # mask: a prefix of each row
            e = self.em(F.relu(self.conv(self.emb(ids).transpose(1, 2))).transpose(1, 2))  # [B, T, K]
            mf = mask.float()
            emit = e.gather(2, tags[..., None]).squeeze(-1)
            last = tags.gather(1, (mask.sum(1) - 1)[:, None]).squeeze(1)
            score = (self.start[tags[:, 0]] + (emit * mf).sum(1) + (self.trans[tags[:, :-1], tags[:, 1:]] * mf[:, 1:]).sum(1)
                     + self.end[last])
            alpha = vit = self.start + e[:, 0]
            for t in range(1, e.shape[1]):
                m = mask[:, t, None]
                alpha = torch.where(m, torch.logsumexp(alpha[:, :, None] + self.trans + e[:, t, None], 1), alpha)
                vit = torch.where(m, (vit[:, :, None] + self.trans).amax(1) + e[:, t], vit)
            return (torch.logsumexp(alpha + self.end, 1) - score).mean(), (vit + self.end).amax(1)
    mask = torch.arange(40)[None] < ints(41, 32, lo=10, seed=9)[:, None]
    return M(), (ints(3000, 32, 40, seed=10), ints(12, 32, 40, seed=11), mask)
@prog("dlrm_weighted_embeddingbag_dot")
def _():
    sizes = (1000, 5000, 200, 20000, 50, 3000, 800, 10000)

    class M(nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.bot = nn.Sequential(nn.Linear(13, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, d),
                                     nn.ReLU())
            self.embs = nn.ModuleList(nn.EmbeddingBag(n, d, mode="sum") for n in sizes)
            f = len(sizes) + 1
            li, lj = torch.tril_indices(f, f, offset=-1)
            self.register_buffer("li", li)
            self.register_buffer("lj", lj)
            self.top = nn.Sequential(nn.Linear(d + f * (f - 1) // 2, 256), nn.ReLU(), nn.Linear(256, 64), nn.ReLU(),
                                     nn.Linear(64, 1))

        def forward(self, dense, y, *sparse):  # sparse: (indices, offsets, per-sample weights) per table
            x = self.bot(dense)
            es = [m(sparse[3 * i], sparse[3 * i + 1], per_sample_weights=sparse[3 * i + 2])
                  for i, m in enumerate(self.embs)]
            t = torch.stack([x] + es, 1)
            z = torch.bmm(t, t.transpose(1, 2))[:, self.li, self.lj]
            logit = self.top(torch.cat([x, z], 1)).squeeze(1)
            return F.binary_cross_entropy_with_logits(logit, y), torch.sigmoid(logit)
    b, sparse = 512, []
    for i, n in enumerate(sizes):
        lens = ints(6, b, lo=1, seed=20 + i)
        offs = torch.cat([torch.zeros(1, dtype=torch.long), lens.cumsum(0)[:-1]])
        tot = int(lens.sum())
        sparse += [ints(n, tot, seed=40 + i), offs, unif(tot, seed=60 + i)]
    return M(), (g(b, 13), (unif(b, seed=12) < 0.3).float(), *sparse)
@prog("tabnet_sparsemax_bn1d")
def _():
    def sparsemax(z):
        zs = torch.sort(z, -1, descending=True).values
        cs = zs.cumsum(-1) - 1
        k = ((torch.arange(1, z.shape[-1] + 1, dtype=z.dtype) * zs) > cs).sum(-1, keepdim=True)
        return torch.clamp(z - cs.gather(-1, k - 1) / k.to(z.dtype), min=0)

    class M(nn.Module):
        def __init__(self, cards=(10, 50, 200, 7, 31, 1000, 12, 4, 300, 24), nnum=6, e=8, nd=16, na=16, steps=3):
            super().__init__()
            self.nd, self.steps = nd, steps
            self.embs = nn.ModuleList(nn.Embedding(c, e) for c in cards)
            d, h = len(cards) * e + nnum, nd + na
            self.bn_in, self.shared = bn(d, 1), nn.Linear(d, 2 * h)
            self.bn_sh, self.bn_st = (nn.ModuleList(bn(2 * h, 1) for _ in range(steps + 1)) for _ in range(2))
            self.spec = nn.ModuleList(nn.Linear(h, 2 * h) for _ in range(steps + 1))
            self.att = nn.ModuleList(nn.Sequential(nn.Linear(na, d, bias=False), bn(d, 1)) for _ in range(steps))
            self.out = nn.Linear(nd, 2)

        def ft(self, x, i):  # feature transformer: a shared and a step-specific GLU layer
            h = F.glu(self.bn_sh[i](self.shared(x)))
            return (h + F.glu(self.bn_st[i](self.spec[i](h)))) * math.sqrt(0.5)

        def forward(self, cat, num):
            x = self.bn_in(torch.cat([m(cat[:, i]) for i, m in enumerate(self.embs)] + [num], 1))
            prior, a = torch.ones_like(x), self.ft(x, 0)[:, self.nd:]
            out, ent = 0, 0
            for s in range(self.steps):
                mask = sparsemax(self.att[s](a) * prior)
                prior = prior * (1.3 - mask)
                ent = ent + (-mask * torch.log(mask + 1e-10)).sum(1).mean()
                h = self.ft(mask * x, s + 1)
                out, a = out + F.relu(h[:, :self.nd]), h[:, self.nd:]
            return self.out(out), ent / self.steps
    cards = (10, 50, 200, 7, 31, 1000, 12, 4, 300, 24)
    return M(), (torch.stack([ints(c, 1024, seed=70 + i) for i, c in enumerate(cards)], 1), g(1024, 6))
@prog("realnvp_glow_flow_logdet")
def _():
    class M(nn.Module):
        def __init__(self, d=64, h=256, n=6):
            super().__init__()
            self.register_buffer("masks", torch.stack([(torch.arange(d) % 2 == i % 2).float() for i in range(n)]))
            self.nets = nn.ModuleList(nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                                                    nn.Linear(h, 2 * d)) for _ in range(n))
            self.scale = nn.Parameter(torch.zeros(n, d))
            self.loc, self.logs = nn.Parameter(torch.randn(d) * 0.1), nn.Parameter(torch.randn(d) * 0.1)  # ActNorm
            self.W = nn.Parameter(torch.linalg.qr(torch.randn(d, d))[0])  # invertible linear

        def forward(self, x):
            d = x.shape[1]
            z = ((x + self.loc) * torch.exp(self.logs)) @ self.W.t()
            logdet = self.logs.sum() + torch.linalg.slogdet(self.W)[1]
            for i, net in enumerate(self.nets):
                m = self.masks[i]
                s, t = net(z * m).chunk(2, -1)
                s = torch.tanh(s) * self.scale[i].exp() * (1 - m)
                z = z * torch.exp(s) + t * (1 - m)
                logdet = logdet + s.sum(1)
            logp = -0.5 * (z * z).sum(1) - 0.5 * d * math.log(2 * math.pi)
            return -(logp + logdet).mean() / (d * math.log(2)), z
    return M(), (g(512, 64),)
@prog("conv_vae_unflatten_elbo")
def _():
    class M(nn.Module):
        def __init__(self, zd=16):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(1, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 4, 2, 1), nn.ReLU(),
                                     nn.Flatten(), nn.Linear(64 * 49, 2 * zd))
            self.dec = nn.Sequential(nn.Linear(zd, 64 * 49), nn.ReLU(), nn.Unflatten(1, (64, 7, 7)),
                                     nn.ConvTranspose2d(64, 32, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(32, 1, 4, 2, 1))

        def forward(self, x, eps):
            mu, lv = self.enc(x).chunk(2, -1)
            logits = self.dec(mu + eps * torch.exp(0.5 * lv))
            rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.shape[0]
            kl = -0.5 * torch.mean(torch.sum(1 + lv - mu.pow(2) - lv.exp(), 1))
            return rec + kl, torch.sigmoid(logits)
    return M(), (unif(32, 1, 28, 28, seed=13), g(32, 16))
@prog("gat_edge_softmax")
def _():
    class GAT(nn.Module):
        def __init__(self, din, f, nh, concat):
            super().__init__()
            self.nh, self.f, self.concat = nh, f, concat
            self.w = nn.Linear(din, nh * f, bias=False)
            self.al, self.ar = nn.Parameter(torch.randn(nh, f) * 0.1), nn.Parameter(torch.randn(nh, f) * 0.1)
            self.bias = nn.Parameter(torch.zeros(nh * f if concat else f))

        def forward(self, x, src, dst):
            n = x.shape[0]
            h = self.w(x).view(n, self.nh, self.f)
            e = F.leaky_relu((h * self.al).sum(-1)[src] + (h * self.ar).sum(-1)[dst], 0.2)  # [E, H]
            emax = torch.full((n, self.nh), -1e30).scatter_reduce(0, dst[:, None].expand(-1, self.nh), e, "amax")
            a = torch.exp(e - emax[dst])
            alpha = a / torch.zeros(n, self.nh).index_add(0, dst, a)[dst]
            out = torch.zeros(n, self.nh, self.f).index_add(0, dst, alpha[..., None] * h[src])
            return (out.flatten(1) if self.concat else out.mean(1)) + self.bias

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = GAT(64, 16, 4, True), GAT(64, 16, 4, False)

        def forward(self, x, src, dst):
            return self.l2(F.elu(self.l1(x, src, dst)), src, dst)
    n = torch.arange(2000)
    return M(), (g(2000, 64), torch.cat([ints(2000, 16000, seed=14), n]), torch.cat([ints(2000, 16000, seed=15), n]))
@prog("batch_hard_triplet_cdist")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.f = nn.Sequential(nn.Linear(256, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, 128))

        def forward(self, x, y):
            e = F.normalize(self.f(x), dim=1)
            dist = torch.cdist(e, e)
            same = y[:, None] == y[None]
            eye = torch.eye(y.shape[0], dtype=torch.bool)
            pos, neg = same & ~eye, ~same
            hp, ip = dist.masked_fill(~pos, -1.0).max(1)  # hardest positive, hardest negative
            hn, ineg = dist.masked_fill(~neg, 1e9).min(1)
            tri = F.relu(hp - hn + 0.3).mean()
            con = (pos * dist.pow(2) + neg * F.relu(0.5 - dist).pow(2)).sum() / (y.shape[0] ** 2)
            swap = F.triplet_margin_loss(e, e[ip], e[ineg], margin=0.2, swap=True)
            return tri + con + swap
    return M(), (g(256, 256), ints(16, 256, seed=16))
@prog("segmentation_weighted_ce_dice")
def _():
    class M(nn.Module):
        def __init__(self, k=6):
            super().__init__()
            self.k = k
            self.net = nn.Sequential(cbr(3, 32, 3, p=1), nn.Conv2d(32, 32, 3, padding=2, dilation=2, bias=False),
                                     bn(32), nn.ReLU(), nn.Conv2d(32, k, 1))
            self.register_buffer("w", torch.tensor([0.5, 1.0, 2.0, 1.0, 1.5, 3.0]))

        def forward(self, x, tgt):
            z = self.net(x)
            ce = F.cross_entropy(z, tgt, weight=self.w, ignore_index=255)
            valid = (tgt != 255)[:, None]
            oh = F.one_hot(torch.where(tgt == 255, 0, tgt), self.k).permute(0, 3, 1, 2).float() * valid
            p = z.softmax(1) * valid
            inter, den = (p * oh).sum((0, 2, 3)), p.sum((0, 2, 3)) + oh.sum((0, 2, 3))
            return ce + 1 - ((2 * inter + 1) / (den + 1)).mean(), z
    tgt = ints(6, 4, 64, 64, seed=17)
    tgt[unif(4, 64, 64, seed=18) < 0.05] = 255
    return M(), (g(4, 3, 64, 64), tgt)
@prog("regression_losses_huber_gaussian")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.f = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 14))
            self.huber = nn.HuberLoss(delta=0.5)

        def forward(self, x, y, cnt, sign, cls):
            o = self.f(x)
            mu, lv, rate, rank, logits = o[:, 0], o[:, 1], o[:, 2], o[:, 3], o[:, 4:]
            return (self.huber(mu, y) + F.smooth_l1_loss(mu, y, beta=0.3) + F.l1_loss(mu, y)
                    + F.gaussian_nll_loss(mu, y, F.softplus(lv) + 1e-3)
                    + F.poisson_nll_loss(rate, cnt, log_input=True, full=True)
                    + F.margin_ranking_loss(rank[0::2], rank[1::2], sign[0::2], margin=0.1)
                    + F.hinge_embedding_loss(F.softplus(rank), sign) + F.soft_margin_loss(rank, sign)
                    + F.multi_margin_loss(logits, cls))
    return M(), (g(1024, 32), g(1024), ints(10, 1024, seed=19).float(), ints(2, 1024, seed=20).float() * 2 - 1,
                 ints(10, 1024, seed=21))
@prog("yolo_head_giou_loss")
def _():
    def giou(a, b):  # boxes (x1, y1, x2, y2)
        area = lambda t: (t[..., 2] - t[..., 0]) * (t[..., 3] - t[..., 1])  # noqa: E731
        inter = (torch.minimum(a[..., 2:], b[..., 2:]) - torch.maximum(a[..., :2], b[..., :2])).clamp(min=0).prod(-1)
        union = area(a) + area(b) - inter
        encl = (torch.maximum(a[..., 2:], b[..., 2:]) - torch.minimum(a[..., :2], b[..., :2])).prod(-1)
        return inter / union - (encl - union) / encl

    class M(nn.Module):
        def __init__(self, nc=20, na=3):
            super().__init__()
            self.nc, self.na = nc, na
            conv = lambda i, o: nn.Sequential(nn.Conv2d(i, o, 3, 2, 1, bias=False), bn(o), nn.SiLU())  # noqa: E731
            self.back = nn.Sequential(conv(3, 16), conv(16, 32), conv(32, 64))
            self.head = nn.Conv2d(64, na * (5 + nc), 1)
            self.register_buffer("anchors", torch.tensor([[10.0, 13], [16, 30], [33, 23]]))

        def forward(self, img, tbox, obj, tcls):
            p = self.head(self.back(img))
            b, _, h, w = p.shape
            p = p.view(b, self.na, 5 + self.nc, h, w).permute(0, 1, 3, 4, 2)
            gy, gx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            xy = (p[..., :2].sigmoid() * 2 - 0.5 + torch.stack([gx, gy], -1).float()) * 8
            wh = (p[..., 2:4].sigmoid() * 2) ** 2 * self.anchors[:, None, None]
            gi = giou(torch.cat([xy - wh / 2, xy + wh / 2], -1), tbox)
            objf = obj.float()
            npos = objf.sum().clamp(min=1)
            lbox = ((1 - gi) * objf).sum() / npos
            lobj = F.binary_cross_entropy_with_logits(p[..., 4], gi.detach().clamp(min=0) * objf)
            lcls = (F.binary_cross_entropy_with_logits(p[..., 5:], F.one_hot(tcls, self.nc).float(),
                                                       reduction="none").sum(-1) * objf).sum() / npos
            return lbox + lobj + lcls
    c, s = unif(8, 3, 8, 8, 2, seed=22) * 64, 8 + unif(8, 3, 8, 8, 2, seed=23) * 32
    return M(), (g(8, 3, 64, 64), torch.cat([c - s / 2, c + s / 2], -1), unif(8, 3, 8, 8, seed=24) < 0.1,
                 ints(20, 8, 3, 8, 8, seed=25))
@prog("autocast_bf16_cnn_train")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.f = nn.Sequential(cbr(3, 32, 3, p=1), nn.MaxPool2d(2), cbr(32, 64, 3, p=1), nn.MaxPool2d(2),
                                   cbr(64, 128, 3, p=1), nn.AdaptiveAvgPool2d(1), nn.Flatten())
            self.mlp = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 10))

        def forward(self, x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self.mlp(self.f(x)).float()
    return M(), (g(16, 3, 32, 32),)
@prog("adamw_clip_update_fused_with_model")
def _():
    class M(nn.Module):  # one clipped AdamW step (torch.optim.AdamW's math) and the loss at the new weights
        def __init__(self, step=10, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01, max_norm=1.0):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(128, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 10))
            self.hp = step, lr, b1, b2, eps, wd, max_norm

        def forward(self, x, y, *state):  # grads, exp_avg, exp_avg_sq per parameter
            step, lr, b1, b2, eps, wd, max_norm = self.hp
            ps = list(self.net.parameters())
            n = len(ps)
            gs, ms, vs = state[:n], state[n:2 * n], state[2 * n:]
            total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(gr) for gr in gs]))
            coef = (max_norm / (total + 1e-6)).clamp(max=1.0)  # clip_grad_norm_
            new, nm, nv = [], [], []
            for p, gr, m, v in zip(ps, gs, ms, vs):
                gr = gr * coef
                m = torch.lerp(m, gr, 1 - b1)
                v = v * b2 + (1 - b2) * gr * gr
                denom = (v / (1 - b2 ** step)).sqrt() + eps
                new.append(p * (1 - lr * wd) - (lr / (1 - b1 ** step)) * m / denom)
                nm.append(m.flatten())
                nv.append(v.flatten())
            h = F.gelu(F.linear(x, new[0], new[1]))
            h = F.gelu(F.linear(h, new[2], new[3]))
            return F.cross_entropy(F.linear(h, new[4], new[5]), y), torch.cat(nm), torch.cat(nv)
    m = M()
    shapes = [p.shape for p in m.parameters()]
    gs = [g(*s) * 0.01 for s in shapes]
    return m, (g(256, 128), ints(10, 256, seed=26), *gs, *(gr * 0.5 for gr in gs), *(gr * gr * 0.3 for gr in gs))


run = runner(P, EVAL, 34)


if __name__ == "__main__":
    T.main(P, run)
