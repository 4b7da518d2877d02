"""An eighth sweep (2026-11-28, seventh session): whole training steps of the models users
train, at modest but real sizes, each a jitted step computing the loss, the gradients and
an AdamW update with gradient clipping: a CIFAR ResNet, ConvNeXt and MBConv (squeeze-excite)
blocks, an MLP-Mixer, a small GPT, a BERT-style encoder layer with padding masks, a
Conformer block, a wav2vec-style 1-D conv feature extractor, a mixture of experts with
top-2 routing, a graph attention network, an LSTM language model, a diffusion U-Net piece
with time embeddings and group norm, SimCLR's NT-Xent loss, knowledge distillation, a
seq2seq attention decoder, DLRM, and bf16 mixed precision variants.

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_8.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

import unseen_programs as U

R = np.random.default_rng(8)
f32 = U.f32
P, prog = U.sweep()
def ints(lo, hi, *s, dt=np.int32): return R.integers(lo, hi, s).astype(dt)
def W(*s): return f32(*s, scale=float(np.prod(s[:-1])) ** -0.5)


def adamw_step(loss):
    """(params, opt state, batch...) -> (loss, params, opt state): AdamW with global-norm
    clipping at 1.0, as optax.chain(clip_by_global_norm, adamw) computes it."""
    def step(p, m, v, *batch):
        l, g = jax.value_and_grad(loss)(p, *batch)
        leaves = jax.tree_util.tree_leaves(g)
        gn = jnp.sqrt(sum(jnp.sum(x * x) for x in leaves))
        g = jax.tree_util.tree_map(lambda x: x * jnp.minimum(1.0, 1.0 / (gn + 1e-6)), g)
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        p = jax.tree_util.tree_map(lambda w, a, b: w - 1e-3 * (a / (jnp.sqrt(b) + 1e-8) + 1e-4 * w), p, m, v)
        return l, p, m, v
    return step


def opt(p):
    z = jax.tree_util.tree_map(np.zeros_like, p)
    return (p, z, jax.tree_util.tree_map(np.zeros_like, p))


def conv(x, w, s=1, groups=1, pad="SAME"):
    return lax.conv_general_dilated(x, w, (s, s), pad, dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=groups)


def bn(x, g, b):  # training-mode batch norm over N, H, W
    m = x.mean((0, 1, 2)); v = x.var((0, 1, 2))
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def ln(x, g, b):
    m = x.mean(-1, keepdims=True); v = x.var(-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def xent(logits, y):
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))


def mha(x, wqkv, wo, heads, mask=None):
    b, t, d = x.shape
    q, k, v = jnp.split(x @ wqkv, 3, -1)
    q, k, v = (a.reshape(b, t, heads, d // heads) for a in (q, k, v))
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d // heads)
    if mask is not None:
        s = jnp.where(mask, s, -1e9)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v).reshape(b, t, d) @ wo


@prog("resnet_cifar_step")
def _():
    def block(x, p, s):
        h = jax.nn.relu(bn(conv(x, p["c1"], s), p["g1"], p["b1"]))
        h = bn(conv(h, p["c2"]), p["g2"], p["b2"])
        sc = conv(x, p["sc"], s) if "sc" in p else x
        return jax.nn.relu(h + sc)
    def blk(ci, co, sc):
        d = {"c1": W(3, 3, ci, co), "g1": np.ones(co, np.float32), "b1": np.zeros(co, np.float32),
             "c2": W(3, 3, co, co), "g2": np.ones(co, np.float32), "b2": np.zeros(co, np.float32)}
        if sc: d["sc"] = W(1, 1, ci, co)
        return d
    p = {"stem": W(3, 3, 3, 32), "b1": blk(32, 32, False), "b2": blk(32, 64, True), "b3": blk(64, 128, True), "fc": W(128, 10)}
    def loss(p, x, y):
        h = jax.nn.relu(conv(x, p["stem"]))
        h = block(h, p["b1"], 1); h = block(h, p["b2"], 2); h = block(h, p["b3"], 2)
        return xent(h.mean((1, 2)) @ p["fc"], y)
    return adamw_step(loss), (*opt(p), f32(32, 32, 32, 3), ints(0, 10, 32))
@prog("convnext_block_step")
def _():
    p = {"dw": W(7, 7, 1, 96), "g": np.ones(96, np.float32), "b": np.zeros(96, np.float32), "w1": W(96, 384), "w2": W(384, 96), "gamma": np.full(96, 1e-1, np.float32)}
    def loss(p, x):
        h = conv(x, p["dw"], groups=96)
        h = jax.nn.gelu(ln(h, p["g"], p["b"]) @ p["w1"]) @ p["w2"]
        return jnp.mean((x + p["gamma"] * h) ** 2)
    return adamw_step(loss), (*opt(p), f32(16, 28, 28, 96))
@prog("mbconv_se_step")
def _():
    p = {"ex": W(1, 1, 32, 128), "dw": W(3, 3, 1, 128), "se1": W(128, 8), "se2": W(8, 128), "pr": W(1, 1, 128, 32),
         "g1": np.ones(128, np.float32), "b1": np.zeros(128, np.float32), "g2": np.ones(128, np.float32), "b2": np.zeros(128, np.float32)}
    def loss(p, x):
        h = jax.nn.silu(bn(conv(x, p["ex"]), p["g1"], p["b1"]))
        h = jax.nn.silu(bn(conv(h, p["dw"], groups=128), p["g2"], p["b2"]))
        s = jax.nn.sigmoid(jax.nn.silu(h.mean((1, 2)) @ p["se1"]) @ p["se2"])
        return jnp.mean((x + conv(h * s[:, None, None], p["pr"])) ** 2)
    return adamw_step(loss), (*opt(p), f32(32, 32, 32, 32))
@prog("mlp_mixer_step")
def _():
    p = {"tok1": W(64, 256), "tok2": W(256, 64), "ch1": W(128, 512), "ch2": W(512, 128), "g": np.ones(128, np.float32), "b": np.zeros(128, np.float32), "head": W(128, 10)}
    def loss(p, x, y):
        h = x + (jax.nn.gelu(ln(x, p["g"], p["b"]).transpose(0, 2, 1) @ p["tok1"]) @ p["tok2"]).transpose(0, 2, 1)
        h = h + jax.nn.gelu(ln(h, p["g"], p["b"]) @ p["ch1"]) @ p["ch2"]
        return xent(h.mean(1) @ p["head"], y)
    return adamw_step(loss), (*opt(p), f32(64, 64, 128), ints(0, 10, 64))
@prog("gpt_small_step")
def _():
    d, L, V, T = 192, 2, 2048, 128
    p = {"emb": W(V, d), "pos": f32(T, d, scale=0.02), "layers": [{"wqkv": W(d, 3 * d), "wo": W(d, d), "w1": W(d, 4 * d), "w2": W(4 * d, d),
         "g1": np.ones(d, np.float32), "b1": np.zeros(d, np.float32), "g2": np.ones(d, np.float32), "b2": np.zeros(d, np.float32)} for _ in range(L)]}
    mask = np.tril(np.ones((T, T), bool))
    def loss(p, tok):
        h = p["emb"][tok[:, :-1]] + p["pos"][:T - 1]
        for lp in p["layers"]:
            h = h + mha(ln(h, lp["g1"], lp["b1"]), lp["wqkv"], lp["wo"], 6, mask[:T - 1, :T - 1])
            h = h + jax.nn.gelu(ln(h, lp["g2"], lp["b2"]) @ lp["w1"]) @ lp["w2"]
        logits = h @ p["emb"].T
        return xent(logits.reshape(-1, V), tok[:, 1:].reshape(-1))
    return adamw_step(loss), (*opt(p), ints(0, V, 8, T))
@prog("bert_layer_padmask_step")
def _():
    d = 256
    p = {"wqkv": W(d, 3 * d), "wo": W(d, d), "w1": W(d, 4 * d), "w2": W(4 * d, d), "g1": np.ones(d, np.float32), "b1": np.zeros(d, np.float32),
         "g2": np.ones(d, np.float32), "b2": np.zeros(d, np.float32)}
    def loss(p, x, lens):
        keep = jnp.arange(x.shape[1])[None, :] < lens[:, None]
        h = ln(x + mha(x, p["wqkv"], p["wo"], 4, keep[:, None, None, :]), p["g1"], p["b1"])
        h = ln(h + jax.nn.gelu(h @ p["w1"]) @ p["w2"], p["g2"], p["b2"])
        return jnp.sum(jnp.where(keep[..., None], h, 0) ** 2) / jnp.sum(lens)
    return adamw_step(loss), (*opt(p), f32(8, 256, d), ints(64, 257, 8))
@prog("conformer_block_step")
def _():
    d = 144
    p = {"wqkv": W(d, 3 * d), "wo": W(d, d), "pw1": W(d, 2 * d), "dw": W(31, 1, d), "pw2": W(d, d), "f1": W(d, 4 * d), "f2": W(4 * d, d),
         "g": np.ones(d, np.float32), "b": np.zeros(d, np.float32)}
    def loss(p, x):
        h = x + 0.5 * (jax.nn.silu(ln(x, p["g"], p["b"]) @ p["f1"]) @ p["f2"])
        h = h + mha(ln(h, p["g"], p["b"]), p["wqkv"], p["wo"], 4)
        c = jax.nn.glu(ln(h, p["g"], p["b"]) @ p["pw1"])
        c = lax.conv_general_dilated(c, p["dw"], (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=d)
        h = h + jax.nn.silu(c) @ p["pw2"]
        return jnp.mean(ln(h, p["g"], p["b"]) ** 2)
    return adamw_step(loss), (*opt(p), f32(8, 200, d))
@prog("wav2vec_feature_step")
def _():
    ks = [(10, 5), (3, 2), (3, 2), (3, 2), (2, 2)]
    p = [W(k, 1 if i == 0 else 128, 128) for i, (k, _) in enumerate(ks)]
    def loss(p, x):
        h = x[..., None]
        for w, (k, s) in zip(p, ks):
            h = jax.nn.gelu(lax.conv_general_dilated(h, w, (s,), "VALID", dimension_numbers=("NWC", "WIO", "NWC")))
        return jnp.mean(h ** 2)
    return adamw_step(loss), (*opt(p), f32(4, 16000))
@prog("moe_top2_step")
def _():
    d, E, F = 128, 8, 256
    p = {"gate": W(d, E), "w1": W(E, d, F), "w2": W(E, F, d)}
    def loss(p, x):
        g = jax.nn.softmax(x @ p["gate"])
        v, i = lax.top_k(g, 2)
        disp = jax.nn.one_hot(i, E) * v[..., None]  # N x 2 x E
        comb = disp.sum(1)  # N x E
        h = jax.nn.relu(jnp.einsum("nd,edf->nef", x, p["w1"]))
        y = jnp.einsum("nef,efd->ned", h, p["w2"])
        aux = jnp.sum(g.mean(0) * comb.mean(0)) * E
        return jnp.mean((jnp.einsum("ne,ned->nd", comb, y) - x) ** 2) + 0.01 * aux
    return adamw_step(loss), (*opt(p), f32(1024, d))
@prog("gat_step")
def _():
    n, d = 1024, 64
    p = {"w": W(d, d), "a1": W(d, 1), "a2": W(d, 1), "out": W(d, 8)}
    adj = (R.random((n, n)) < 0.01) | np.eye(n, dtype=bool)
    def loss(p, x, y, adj):
        h = x @ p["w"]
        e = jax.nn.leaky_relu(h @ p["a1"] + (h @ p["a2"]).T, 0.2)
        a = jax.nn.softmax(jnp.where(adj, e, -1e9), 1)
        return xent(jax.nn.elu(a @ h) @ p["out"], y)
    return adamw_step(loss), (*opt(p), f32(n, d), ints(0, 8, n), adj)
@prog("lstm_lm_step")
def _():
    V, d = 1000, 256
    p = {"emb": W(V, d), "wx": W(d, 4 * d), "wh": W(d, 4 * d), "b": np.zeros(4 * d, np.float32), "out": W(d, V)}
    def loss(p, tok):
        x = p["emb"][tok[:, :-1]].transpose(1, 0, 2)
        def cell(c, xt):
            h, s = c
            z = xt @ p["wx"] + h @ p["wh"] + p["b"]
            i, f, g, o = jnp.split(z, 4, -1)
            s = jax.nn.sigmoid(f) * s + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(s)
            return (h, s), h
        _, hs = lax.scan(cell, (jnp.zeros((tok.shape[0], d)), jnp.zeros((tok.shape[0], d))), x)
        return xent((hs.transpose(1, 0, 2) @ p["out"]).reshape(-1, V), tok[:, 1:].reshape(-1))
    return adamw_step(loss), (*opt(p), ints(0, V, 32, 33))
@prog("diffusion_unet_piece_step")
def _():
    def gn(x, g, b, G=8):
        n, h, w, c = x.shape
        xg = x.reshape(n, h, w, G, c // G)
        m = xg.mean((1, 2, 4), keepdims=True); v = xg.var((1, 2, 4), keepdims=True)
        return ((xg - m) * lax.rsqrt(v + 1e-5)).reshape(n, h, w, c) * g + b
    p = {"c1": W(3, 3, 64, 64), "c2": W(3, 3, 64, 64), "t": W(128, 64), "g": np.ones(64, np.float32), "b": np.zeros(64, np.float32), "down": W(3, 3, 64, 128), "up": W(3, 3, 128, 64)}
    def loss(p, x, t, noise):
        te = jnp.concatenate([jnp.sin(t[:, None] * jnp.exp(-jnp.arange(64) / 8.0)), jnp.cos(t[:, None] * jnp.exp(-jnp.arange(64) / 8.0))], 1)
        h = conv(jax.nn.silu(gn(x, p["g"], p["b"])), p["c1"]) + (te @ p["t"])[:, None, None]
        h = x + conv(jax.nn.silu(gn(h, p["g"], p["b"])), p["c2"])
        d = jax.nn.silu(conv(h, p["down"], 2))
        u = jax.image.resize(d, (d.shape[0], 32, 32, 128), "nearest")
        return jnp.mean((conv(u, p["up"]) + h - noise) ** 2)
    return adamw_step(loss), (*opt(p), f32(8, 32, 32, 64), R.random(8).astype(np.float32) * 1000, f32(8, 32, 32, 64))
@prog("simclr_ntxent_step")
def _():
    p = {"w1": W(512, 512), "w2": W(512, 128)}
    def loss(p, a, b):
        z = jnp.concatenate([jax.nn.relu(a @ p["w1"]) @ p["w2"], jax.nn.relu(b @ p["w1"]) @ p["w2"]])
        z = z / jnp.linalg.norm(z, axis=1, keepdims=True)
        s = z @ z.T / 0.1 - 1e9 * jnp.eye(z.shape[0])
        n = a.shape[0]
        tgt = jnp.concatenate([jnp.arange(n, 2 * n), jnp.arange(n)])
        return xent(s, tgt)
    return adamw_step(loss), (*opt(p), f32(512, 512), f32(512, 512))
@prog("distill_kl_step")
def _():
    p = {"w1": W(784, 512), "w2": W(512, 100)}
    def loss(p, x, tl):
        s = jax.nn.relu(x @ p["w1"]) @ p["w2"]
        pt = jax.nn.softmax(tl / 4.0)
        return jnp.sum(pt * (jnp.log(pt + 1e-9) - jax.nn.log_softmax(s / 4.0))) / x.shape[0] * 16
    return adamw_step(loss), (*opt(p), f32(512, 784), f32(512, 100))
@prog("seq2seq_attn_decoder_step")
def _():
    d, V = 256, 1000
    p = {"emb": W(V, d), "wq": W(d, d), "wc": W(2 * d, d), "wh": W(d, d), "out": W(d, V)}
    def loss(p, enc, tok):
        def step(h, t):
            q = h @ p["wq"]
            a = jax.nn.softmax(jnp.einsum("bd,btd->bt", q, enc), -1)
            ctx = jnp.einsum("bt,btd->bd", a, enc)
            h = jnp.tanh(jnp.concatenate([p["emb"][t], ctx], -1) @ p["wc"] + h @ p["wh"])
            return h, h @ p["out"]
        _, logits = lax.scan(step, jnp.zeros((enc.shape[0], d)), tok[:, :-1].T)
        return xent(logits.reshape(-1, V), tok[:, 1:].T.reshape(-1))
    return adamw_step(loss), (*opt(p), f32(32, 64, d, scale=0.1), ints(0, V, 32, 25))
@prog("dlrm_step")
def _():
    p = {"emb": [W(20000, 32) for _ in range(8)], "bot": W(13, 32), "top1": W(32 + 36, 128), "top2": W(128, 1)}
    def loss(p, dense, ids, y):
        z = jnp.stack([jax.nn.relu(dense @ p["bot"])] + [e[ids[:, i]] for i, e in enumerate(p["emb"])], 1)
        zz = z @ z.transpose(0, 2, 1)
        i, j = np.tril_indices(9, -1)
        h = jnp.concatenate([z[:, 0], zz[:, i, j]], 1)
        logit = (jax.nn.relu(h @ p["top1"]) @ p["top2"])[:, 0]
        return jnp.mean(jax.nn.softplus(logit) - y * logit)
    return adamw_step(loss), (*opt(p), f32(2048, 13), ints(0, 20000, 2048, 8), (R.random(2048) > 0.5).astype(np.float32))
@prog("bf16_mlp_mixed_step")
def _():
    p = {"w1": W(512, 2048), "w2": W(2048, 512), "w3": W(512, 10)}
    def loss(p, x, y):
        c = lambda a: a.astype(jnp.bfloat16)
        h = jax.nn.gelu(c(x) @ c(p["w1"]))
        h = jax.nn.gelu(h @ c(p["w2"]))
        return xent((h @ c(p["w3"])).astype(jnp.float32), y)
    return adamw_step(loss), (*opt(p), f32(256, 512), ints(0, 10, 256))
@prog("bf16_gpt_block_step")
def _():
    d = 256
    p = {"wqkv": W(d, 3 * d), "wo": W(d, d), "w1": W(d, 4 * d), "w2": W(4 * d, d), "g": np.ones(d, np.float32), "b": np.zeros(d, np.float32)}
    mask = np.tril(np.ones((128, 128), bool))
    def loss(p, x):
        c = lambda t: jax.tree_util.tree_map(lambda a: a.astype(jnp.bfloat16), t)
        q = c(p)
        h = c(x)
        h = h + mha(ln(h, q["g"], q["b"]), q["wqkv"], q["wo"], 4, mask)
        h = h + jax.nn.gelu(ln(h, q["g"], q["b"]) @ q["w1"]) @ q["w2"]
        return jnp.mean(h.astype(jnp.float32) ** 2)
    return adamw_step(loss), (*opt(p), f32(8, 128, d))
@prog("vit_tiny_step")
def _():
    d = 192
    p = {"patch": W(16 * 16 * 3, d), "cls": f32(1, 1, d, scale=0.02), "pos": f32(1, 65, d, scale=0.02), "wqkv": W(d, 3 * d), "wo": W(d, d),
         "w1": W(d, 4 * d), "w2": W(4 * d, d), "g": np.ones(d, np.float32), "b": np.zeros(d, np.float32), "head": W(d, 100)}
    def loss(p, img, y):
        n = img.shape[0]
        x = img.reshape(n, 8, 16, 8, 16, 3).transpose(0, 1, 3, 2, 4, 5).reshape(n, 64, -1) @ p["patch"]
        x = jnp.concatenate([jnp.broadcast_to(p["cls"], (n, 1, d)), x], 1) + p["pos"]
        x = x + mha(ln(x, p["g"], p["b"]), p["wqkv"], p["wo"], 3)
        x = x + jax.nn.gelu(ln(x, p["g"], p["b"]) @ p["w1"]) @ p["w2"]
        return xent(ln(x[:, 0], p["g"], p["b"]) @ p["head"], y)
    return adamw_step(loss), (*opt(p), f32(32, 128, 128, 3), ints(0, 100, 32))

if __name__ == "__main__":
    U.main(P)
