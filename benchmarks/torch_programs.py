"""A sweep of ordinary PyTorch modules outside the bridge's test models, through
torch.compile(backend="axle"): each module's forward and one training step (loss.backward)
are checked against eager PyTorch (max relative difference of outputs and gradients) and
timed side by side with eager (interleaved rounds, medians). Written to find what the bridge
or the compiler does not take, or takes slowly: a failure or a ratio far below 1 is a gap.

Usage: AXLE_NUM_THREADS=1 python benchmarks/torch_programs.py [name,name,...]
(one thread for both: two thread pools in one process slow each other down; see
benchmarks/torch_bridge.py)."""
import os
import sys
import time
import warnings

os.environ.setdefault("AXLE_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import axle.torch  # noqa: E402,F401  (registers the backend)

torch.set_num_threads(int(os.environ["AXLE_NUM_THREADS"]))
warnings.filterwarnings("ignore")
P = {}


def prog(name):
    def deco(f):
        P[name] = f
        return f
    return deco


def g(*s):
    return torch.randn(*s, generator=torch.Generator().manual_seed(sum(s)))


@prog("conv_bn_pool")
def _():
    m = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(64, 10))
    return m, (g(16, 3, 32, 32),)
@prog("depthwise_separable")
def _():
    m = nn.Sequential(nn.Conv2d(32, 32, 3, padding=1, groups=32), nn.BatchNorm2d(32), nn.ReLU6(),
                      nn.Conv2d(32, 64, 1), nn.BatchNorm2d(64), nn.ReLU6())
    return m, (g(8, 32, 56, 56),)
@prog("transformer_encoder")
def _():
    m = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
    return m, (g(8, 128, 256),)
@prog("gru")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(64, 128, batch_first=True)
            self.out = nn.Linear(128, 10)

        def forward(self, x):
            return self.out(self.rnn(x)[0][:, -1])
    return M(), (g(16, 50, 64),)
@prog("conv_transpose_unet")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.down = nn.Conv2d(16, 32, 3, stride=2, padding=1)
            self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
            self.out = nn.Conv2d(32, 8, 3, padding=1)

        def forward(self, x):
            u = self.up(F.relu(self.down(x)))
            return self.out(torch.cat([x, u], 1))
    return M(), (g(4, 16, 64, 64),)
@prog("group_norm_silu")
def _():
    m = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.GroupNorm(8, 64), nn.SiLU(),
                      nn.Conv2d(64, 64, 3, padding=1), nn.GroupNorm(8, 64), nn.SiLU())
    return m, (g(4, 64, 32, 32),)
@prog("sdpa_attention")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(256, 768)
            self.o = nn.Linear(256, 256)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(x).view(b, s, 3, 4, 64).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o(y.transpose(1, 2).reshape(b, s, 256))
    return M(), (g(4, 128, 256),)
@prog("embedding_layernorm")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.e = nn.Embedding(10000, 256)
            self.ln = nn.LayerNorm(256)
            self.h = nn.Linear(256, 10000)

        def forward(self, ids):
            return self.h(self.ln(self.e(ids)).mean(1))
    return M(), (torch.randint(0, 10000, (32, 64), generator=torch.Generator().manual_seed(0)),)
@prog("interpolate_bilinear")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(8, 8, 3, padding=1)

        def forward(self, x):
            return self.c(F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False))
    return M(), (g(4, 8, 32, 32),)
@prog("conv1d_audio")
def _():
    m = nn.Sequential(nn.Conv1d(1, 32, 80, stride=4), nn.BatchNorm1d(32), nn.ReLU(), nn.MaxPool1d(4),
                      nn.Conv1d(32, 64, 3), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 12))
    return m, (g(8, 1, 8000),)
@prog("mlp_gelu_dropout0")
def _():
    m = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Dropout(0.0), nn.Linear(2048, 512), nn.LayerNorm(512))
    return m, (g(256, 512),)
@prog("lstm_bidirectional")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(32, 64, num_layers=2, batch_first=True, bidirectional=True)

        def forward(self, x):
            return self.rnn(x)[0].sum(1)
    return M(), (g(8, 40, 32),)
@prog("pixel_shuffle_sr")
def _():
    m = nn.Sequential(nn.Conv2d(3, 64, 5, padding=2), nn.Tanh(), nn.Conv2d(64, 3 * 16, 3, padding=1), nn.PixelShuffle(4))
    return m, (g(4, 3, 32, 32),)
@prog("instance_norm_leaky")
def _():
    m = nn.Sequential(nn.Conv2d(3, 32, 4, 2, 1), nn.InstanceNorm2d(32), nn.LeakyReLU(0.2),
                      nn.Conv2d(32, 64, 4, 2, 1), nn.InstanceNorm2d(64), nn.LeakyReLU(0.2))
    return m, (g(8, 3, 64, 64),)
@prog("multihead_attention_module")
def _():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.MultiheadAttention(128, 8, batch_first=True)

        def forward(self, x):
            return self.a(x, x, x, need_weights=False)[0]
    return M(), (g(8, 64, 128),)


def _loss(out):
    return sum(o.float().pow(2).mean() for o in (out if isinstance(out, (tuple, list)) else (out,)))


def _rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).abs().max() / (b.abs().max() + 1e-30))


def time_steps(comp, model, args, before=None) -> tuple:
    """Median ms of a training step (zero_grad, loss, backward) with comp and with model,
    interleaved over 5 rounds of 3 steps; `before` runs ahead of each step."""
    def step(m):
        if before is not None:
            before()
        m.zero_grad()
        _loss(m(*args)).backward()
    ts = {"axle": [], "eager": []}
    for r in range(5):
        for which, m in (("axle", comp), ("eager", model)) if r % 2 == 0 else (("eager", model), ("axle", comp)):
            t = time.perf_counter()
            for _ in range(3):
                step(m)
            ts[which].append((time.perf_counter() - t) / 3)
    return np.median(ts["axle"]) * 1e3, np.median(ts["eager"]) * 1e3


def run(name):
    torch.manual_seed(0)
    model, args = P[name]()
    model.train(False) if "bn" in name or "norm" in name else None
    comp = torch.compile(model, backend="axle")
    want = model(*args)
    got = comp(*args)
    err = _rel(got if not isinstance(got, tuple) else got[0], want if not isinstance(want, tuple) else want[0])
    # one training step's gradients
    model.zero_grad()
    _loss(model(*args)).backward()
    ref = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    _loss(comp(*args)).backward()
    # relative to the largest gradient of the model: a parameter whose true gradient is ~0
    # (a convolution's bias before a normalization) has no meaningful relative error itself
    scale = max((float(r.abs().max()) for r in ref), default=0.0) + 1e-30
    gerr = max((float((p.grad.double() - r.double()).abs().max()) / scale
                for p, r in zip(model.parameters(), ref)), default=0.0)

    a, e = time_steps(comp, model, args)
    print(f"{name:28s} step axle {a:8.2f} ms  eager {e:8.2f} ms  eager/axle {e / a:5.2f}  "
          f"fwd err {err:.1e}  grad err {gerr:.1e}", flush=True)


def main(table, run_one) -> None:
    """run_one(name) for the names on the command line (comma-separated), else all of table's."""
    for n in (sys.argv[1].split(",") if len(sys.argv) > 1 else list(table)):
        try:
            run_one(n)
        except Exception as ex:  # a failure is a finding
            print(f"{n:28s} FAILED {type(ex).__name__}: {str(ex)[:300]}", flush=True)


if __name__ == "__main__":
    main(P, run)
