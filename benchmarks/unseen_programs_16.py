"""A sixteenth sweep of ordinary JAX programs outside `axle bench`: programs written with real JAX
libraries as users write them, and 64-bit and mixed-dtype programs, which the first fifteen sweeps
(all hand-written jax.numpy / lax) lacked.

flax.linen: a CNN train step with nn.BatchNorm in train mode (mutable batch_stats) and optax.adamw,
a 2-layer Transformer encoder (nn.MultiHeadDotProductAttention with a padding mask, dropout rngs)
trained by optax.chain(clip_by_global_norm, adamw on a warmup-cosine schedule), nn.RNN over an
nn.OptimizedLSTMCell trained by SGD with Nesterov momentum, an nn.scan'd nn.remat'd GRUCell's
gradient, an nn.Embed LM with tied output (Embed.attend) trained by optax.lion, a GroupNorm ResNet
trained by optax.lamb, an nn.ConvTranspose decoder trained with sigmoid_binary_cross_entropy, an
nn.vmap'd MLP ensemble, optax.MultiSteps gradient accumulation, an MLP-Mixer trained by
optax.adafactor. flax.nnx (the pure function of nnx.split / nnx.merge that nnx.jit stands for):
an MLP with nnx.BatchNorm and nnx.Dropout trained by adamw, a CNN's inference, a causal
Transformer LM train step with nnx.MultiHeadAttention, nnx.RNN over nnx.GRUCell's gradient.
optax alone: adamw + clip + warmup-cosine with a weight-decay mask over a GPT-like tree,
optax.contrib.muon (Newton-Schulz), optax.contrib.schedule_free_adamw, ctc_loss's gradient, a mix
of classification / regression losses' gradient, the NT-Xent contrastive loss's gradient.
equinox (the lowering eqx.filter_jit does: eqx.partition on eqx.is_array, eqx.combine inside):
eqx.nn.MLP trained by adam, an eqx.nn.Conv2d / MaxPool2d CNN train step, an eqx.nn.MultiheadAttention
block's gradient, an eqx.nn.LSTMCell under lax.scan's gradient, eqx.nn.BatchNorm with
eqx.nn.State under vmap(axis_name). 64-bit under `with jax.enable_x64(True)` (the harness sets
x64 off at import; each x64 program runs, lowers and is timed inside the context, the others are
untouched): adaptive Dormand-Prince odeint of a Lorenz ensemble, RK4 N-body, Newton on the Bratu
problem with jacfwd + solve, a GP's negative log marginal likelihood and its gradient (Cholesky),
f64 cumulative statistics, int64 gathers / segment sums / argsort, a complex128 spectral Poisson
solve and convolution. Mixed dtypes: float16 MLP and CNN inference (flax dtype / param_dtype),
uint32 hashing and bit manipulation, a bf16-compute / f32-master-weights train step with dynamic
loss scaling.

Train steps start from warm optimizer state and moved-off-init vectors (warm(), midway()): from a
fresh state adam / adafactor / lion normalize each gradient by itself, so gradients that are zero
but for rounding (a key projection's bias, a bias before a norm, a Mixer's token-mixing bias at
init) become whole-step differences between any two compilers. What remains: a lion step can still
flip the sign of an update whose direction is ~0 (a difference of exactly 2 lr in one element; it
depends on the inputs, which depend on the order the programs are made in), and the bf16 train
step's err is bf16 rounding (~1e-2).

The libraries are not in the project venv: install them beside it, without dependencies of jax's,
    .venv/bin/pip install --no-deps --target /work/sweep-libs-jax flax optax equinox absl-py \
        msgpack jaxtyping wadler_lindig rich pyyaml treescope chex toolz
(SWEEP_LIBS names another folder). Versions used first: flax 0.12.8, optax 0.2.8, equinox 0.13.8.

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_16.py [names]"""

import os
import sys

LIBS = os.environ.get("SWEEP_LIBS", "/work/sweep-libs-jax")
if not os.path.isdir(os.path.join(LIBS, "flax")):
    sys.exit(f"unseen_programs_16: flax / optax / equinox not found in {LIBS}; install them with\n"
             f"  .venv/bin/pip install --no-deps --target {LIBS} flax optax equinox absl-py msgpack "
             "jaxtyping wadler_lindig rich pyyaml treescope chex toolz\n(or set SWEEP_LIBS)")
sys.path.append(LIBS)  # (after the venv's own packages: jax, numpy and the rest stay the venv's)

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax
import ml_dtypes

import unseen_programs as U

import flax.linen as nn
from flax import nnx
import optax
import optax.contrib
import equinox as eqx

R, f32, unif, ints, key, pkey, mlp_params, mlp = U.helpers(16)
P, prog = U.sweep()
X64 = set()  # the programs run, lowered and timed under jax.enable_x64(True)
BF = ml_dtypes.bfloat16
tm = jax.tree_util.tree_map


def host(t):
    """A pytree of numpy arrays (what the harness passes both sides)."""
    return tm(np.asarray, t)


def K(i):
    return jax.random.PRNGKey(i)


def x64prog(name):
    def deco(f):
        X64.add(name)
        return prog(name)(f)
    return deco


def f64(*s, scale=1.0):
    return R.standard_normal(s) * scale


def warm(tx, p, steps=2, scale=1e-3):
    """tx's state a few steps into training (moments of random gradients). A step from fresh state
    divides each gradient by its own size (adam's first step is lr * sign(g)), so where a gradient
    is zero but for rounding (a key projection's bias under softmax, a bias before a norm) the two
    compilers' updates differ by whole steps; mid-training steps, as users run them, do not."""
    opt = tx.init(p)
    for _ in range(steps):
        opt = tx.update(tm(lambda a: f32(*np.shape(a), scale=scale), p), opt, p)[1]
    return opt


def midway(p, scale=0.02):
    """Parameters as training leaves them: the vectors (biases, norms' scales and shifts) moved off
    their initial zeros and ones. At the symmetric start some gradients are zero but for rounding
    (an MLP-Mixer's token-mixing bias), and a normalizing optimizer turns that noise into steps."""
    return tm(lambda a: a + f32(*a.shape, scale=scale) if np.ndim(a) == 1 else a, p)


def xent_int(logits, y):
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


# --- flax.linen --------------------------------------------------------------------------------

@prog("linen_cnn_bn_adamw_step")
def _():
    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x, train):
            for f in (32, 64, 128):
                x = nn.Conv(f, (3, 3), use_bias=False)(x)
                x = nn.BatchNorm(use_running_average=not train, momentum=0.9)(x)
                x = nn.max_pool(nn.relu(x), (2, 2), (2, 2))
            return nn.Dense(10)(x.mean((1, 2)))
    m = CNN()
    x, y = f32(32, 32, 32, 3), ints(0, 10, 32)
    v = m.init(K(0), x, train=False)
    tx = optax.adamw(1e-3, weight_decay=1e-4)
    def step(params, bstats, opt, x, y):  # a whole train step, batch statistics updated in train mode
        def loss(p):
            logits, upd = m.apply({"params": p, "batch_stats": bstats}, x, train=True, mutable=["batch_stats"])
            return xent_int(logits, y), upd["batch_stats"]
        (l, bs), g = jax.value_and_grad(loss, has_aux=True)(params)
        u, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, u), bs, opt, l
    return step, host((v["params"], v["batch_stats"], warm(tx, v["params"]), x, y))


@prog("linen_transformer_enc_train")
def _():
    B, L, D, H, V, C = 16, 64, 128, 4, 1000, 8
    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, mask, train):
            y = nn.LayerNorm()(x)
            y = nn.MultiHeadDotProductAttention(num_heads=H, dropout_rate=0.1, deterministic=not train)(y, y, mask=mask)
            x = x + nn.Dropout(0.1, deterministic=not train)(y)
            y = nn.Dense(D)(nn.gelu(nn.Dense(4 * D)(nn.LayerNorm()(x))))
            return x + nn.Dropout(0.1, deterministic=not train)(y)
    class Enc(nn.Module):
        @nn.compact
        def __call__(self, tok, train):
            x = nn.Embed(V, D)(tok) + self.param("pos", nn.initializers.normal(0.02), (L, D))
            mask = nn.make_attention_mask(tok > 0, tok > 0)
            for _ in range(2):
                x = Block()(x, mask, train)
            return nn.Dense(C)(nn.LayerNorm()(x).mean(1))
    m = Enc()
    tok = ints(1, V, B, L)
    tok[:, 48:] = np.where(R.random((B, 16)) < 0.5, 0, tok[:, 48:])  # some padding
    y = ints(0, C, B)
    p = m.init(K(1), tok, False)["params"]
    sched = optax.warmup_cosine_decay_schedule(0.0, 3e-4, 100, 1000)
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=0.01))
    def step(p, opt, tok, y, k):  # dropout in attention and residuals drawn from the 'dropout' rng
        def loss(p):
            return xent_int(m.apply({"params": p}, tok, True, rngs={"dropout": pkey(k)}), y)
        l, g = jax.value_and_grad(loss)(p)
        u, opt = tx.update(g, opt, p)
        return optax.apply_updates(p, u), opt, l
    return step, host((p, warm(tx, p), tok, y, key(3)))


@prog("linen_rnn_lstm_nesterov")
def _():
    B, T, Din, Hd, C = 32, 50, 32, 128, 5
    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.RNN(nn.OptimizedLSTMCell(Hd))(x)
            return nn.Dense(C)(h[:, -1])
    m = M()
    x, y = f32(B, T, Din), ints(0, C, B)
    p = m.init(K(2), x)["params"]
    tx = optax.sgd(optax.exponential_decay(0.05, 1000, 0.5), momentum=0.9, nesterov=True)
    def step(p, opt, x, y):  # nn.RNN (an nn.scan over the cell) classifier, SGD + Nesterov, decaying lr
        l, g = jax.value_and_grad(lambda p: xent_int(m.apply({"params": p}, x), y))(p)
        u, opt = tx.update(g, opt, p)
        return optax.apply_updates(p, u), opt, l
    return step, host((p, warm(tx, p), x, y))


@prog("linen_scan_remat_gru_grad")
def _():
    B, T, Din, Hd = 32, 64, 64, 128
    class Seq(nn.Module):
        @nn.compact
        def __call__(self, x):
            Cell = nn.scan(nn.remat(nn.GRUCell), variable_broadcast="params", split_rngs={"params": False},
                           in_axes=1, out_axes=1)
            h0 = jnp.zeros((x.shape[0], Hd))
            _, hs = Cell(Hd)(h0, x)
            return nn.Dense(Din)(hs)
    m = Seq()
    x = f32(B, T, Din)
    p = m.init(K(3), x)["params"]
    def g(p, x):  # next-step prediction, gradient through a scan of rematerialized GRU cells
        return jax.grad(lambda p: jnp.mean((m.apply({"params": p}, x)[:, :-1] - x[:, 1:]) ** 2))(p)
    return g, host((p, x))


@prog("linen_embed_lm_lion")
def _():
    B, L, D, V = 4, 64, 256, 4096
    class LM(nn.Module):
        @nn.compact
        def __call__(self, tok):
            emb = nn.Embed(V, D)
            x = emb(tok)
            x = x + nn.Dense(D)(nn.gelu(nn.Dense(2 * D)(nn.LayerNorm()(x))))
            return emb.attend(nn.LayerNorm()(x))  # tied output projection
    m = LM()
    tok = ints(0, V, B, L + 1)
    p = m.init(K(4), tok[:, :-1])["params"]
    tx = optax.lion(1e-4, weight_decay=0.01)
    def step(p, opt, tok):
        l, g = jax.value_and_grad(lambda p: xent_int(m.apply({"params": p}, tok[:, :-1]).reshape(-1, V), tok[:, 1:].reshape(-1)))(p)
        u, opt = tx.update(g, opt, p)
        return optax.apply_updates(p, u), opt, l
    return step, host((p, warm(tx, p), tok))


@prog("linen_resnet_groupnorm_lamb")
def _():
    class Res(nn.Module):
        f: int
        @nn.compact
        def __call__(self, x):
            y = nn.Conv(self.f, (3, 3))(nn.swish(nn.GroupNorm(8)(x)))
            y = nn.Conv(self.f, (3, 3))(nn.swish(nn.GroupNorm(8)(y)))
            if x.shape[-1] != self.f:
                x = nn.Conv(self.f, (1, 1))(x)
            return x + y
    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = Res(32)(nn.Conv(32, (3, 3))(x))
            x = Res(64)(nn.avg_pool(x, (2, 2), (2, 2)))
            return nn.Dense(10)(nn.GroupNorm(8)(x).mean((1, 2)))
    m = Net()
    x, y = f32(8, 32, 32, 3), ints(0, 10, 8)
    p = m.init(K(5), x)["params"]
    tx = optax.lamb(1e-3)
    def step(p, opt, x, y):
        l, g = jax.value_and_grad(lambda p: xent_int(m.apply({"params": p}, x), y))(p)
        u, opt = tx.update(g, opt, p)
        return optax.apply_updates(p, u), opt, l
    return step, host((p, warm(tx, p), x, y))


@prog("linen_convtranspose_decoder")
def _():
    class Dec(nn.Module):
        @nn.compact
        def __call__(self, z):
            h = nn.relu(nn.Dense(4 * 4 * 128)(z)).reshape(z.shape[0], 4, 4, 128)
            h = nn.relu(nn.ConvTranspose(64, (4, 4), strides=(2, 2))(h))
            h = nn.relu(nn.ConvTranspose(32, (4, 4), strides=(2, 2))(h))
            return nn.ConvTranspose(1, (4, 4), strides=(2, 2))(h)  # 32 x 32 logits
    m = Dec()
    z = f32(32, 32)
    tgt = unif(0, 1, 32, 32, 32, 1)
    p = m.init(K(6), z)["params"]
    tx = optax.adam(1e-3)
    def step(p, opt, z, t):  # a VAE decoder's reconstruction step, Bernoulli likelihood
        l, g = jax.value_and_grad(lambda p: optax.sigmoid_binary_cross_entropy(m.apply({"params": p}, z), t).sum((1, 2, 3)).mean())(p)
        u, opt = tx.update(g, opt, p)
        return optax.apply_updates(p, u), opt, l
    return step, host((p, warm(tx, p), z, tgt))


@prog("linen_vmap_ensemble")
def _():
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for w in (256, 256):
                x = nn.relu(nn.Dense(w)(x))
            return nn.Dense(10)(x)
    Ens = nn.vmap(MLP, variable_axes={"params": 0}, split_rngs={"params": True}, in_axes=None, out_axes=0, axis_size=8)
    m = Ens()
    x = f32(512, 64)
    p = m.init(K(7), x)["params"]
    def f(p, x):  # 8 independently initialized members, the predictive mean and its spread
        pr = jax.nn.softmax(m.apply({"params": p}, x), -1)
        return pr.mean(0), pr.std(0)
    return f, host((p, x))


@prog("linen_multisteps_mlp")
def _():
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for w in (512, 512):
                x = nn.gelu(nn.Dense(w)(x))
            return nn.Dense(10)(x)
    m = MLP()
    x, y = f32(128, 784), ints(0, 10, 128)
    p = m.init(K(8), x)["params"]
    tx = optax.MultiSteps(optax.adam(1e-3), every_k_schedule=4)
    opt = tx.init(p)
    for _ in range(3):  # the next update is the 4th mini-step: the inner adam applies
        opt = tx.update(tm(jnp.ones_like, p), opt, p)[1]
    def step(p, opt, x, y):  # gradient accumulation: inner update only on every 4th call (a cond)
        l, g = jax.value_and_grad(lambda p: xent_int(m.apply({"params": p}, x), y))(p)
        u, opt = tx.update(g, opt, p)
        return optax.apply_updates(p, u), opt, l
    return step, host((p, opt, x, y))


@prog("linen_mixer_adafactor")
def _():
    class MixerBlock(nn.Module):
        @nn.compact
        def __call__(self, x):
            y = nn.LayerNorm()(x).swapaxes(1, 2)
            y = nn.Dense(x.shape[1])(nn.gelu(nn.Dense(128)(y))).swapaxes(1, 2)
            x = x + y
            return x + nn.Dense(x.shape[2])(nn.gelu(nn.Dense(256)(nn.LayerNorm()(x))))
    class Mixer(nn.Module):
        @nn.compact
        def __call__(self, img):
            x = nn.Conv(128, (4, 4), strides=(4, 4))(img)
            x = x.reshape(x.shape[0], -1, 128)
            for _ in range(2):
                x = MixerBlock()(x)
            return nn.Dense(10)(nn.LayerNorm()(x).mean(1))
    m = Mixer()
    x, y = f32(24, 32, 32, 3), ints(0, 10, 24)
    p = m.init(K(9), x)["params"]
    p = midway(p)
    tx = optax.adafactor(1e-3)
    def step(p, opt, x, y):  # factored second moments over the matrices
        l, g = jax.value_and_grad(lambda p: xent_int(m.apply({"params": p}, x), y))(p)
        u, opt = tx.update(g, opt, p)
        return optax.apply_updates(p, u), opt, l
    return step, host((p, warm(tx, p), x, y))


# --- flax.nnx (the pure function nnx.jit traces: split the module's state, merge inside) --------

@prog("nnx_mlp_bn_dropout_adamw")
def _():
    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(784, 512, use_bias=False, rngs=rngs)
            self.bn = nnx.BatchNorm(512, rngs=rngs)
            self.do = nnx.Dropout(0.2)
            self.l2 = nnx.Linear(512, 10, rngs=rngs)
        def __call__(self, x, rngs):
            return self.l2(self.do(nnx.relu(self.bn(self.l1(x))), rngs=rngs))
    gd, params, bstats = nnx.split(MLP(nnx.Rngs(0)), nnx.Param, nnx.BatchStat)
    tx = optax.adamw(1e-3)
    def step(params, bstats, opt, x, y, k):  # nnx.value_and_grad over the merged module: the Params' gradient, BatchStats updated in place
        mod = nnx.merge(gd, params, bstats)
        l, g = nnx.value_and_grad(lambda mod: xent_int(mod(x, nnx.Rngs(dropout=pkey(k))), y))(mod)
        u, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, u), nnx.state(mod, nnx.BatchStat), opt, l
    return step, host((params, bstats, warm(tx, params), f32(256, 784), ints(0, 10, 256), key(5)))


@prog("nnx_cnn_infer")
def _():
    class CNN(nnx.Module):
        def __init__(self, rngs):
            self.c1 = nnx.Conv(3, 32, (3, 3), rngs=rngs)
            self.c2 = nnx.Conv(32, 64, (3, 3), strides=(2, 2), rngs=rngs)
            self.c3 = nnx.Conv(64, 128, (3, 3), strides=(2, 2), rngs=rngs)
            self.ln = nnx.LayerNorm(128, rngs=rngs)
            self.out = nnx.Linear(128, 10, rngs=rngs)
        def __call__(self, x):
            x = nnx.relu(self.c1(x))
            x = nnx.avg_pool(x, (2, 2), (2, 2))
            x = nnx.relu(self.c3(nnx.relu(self.c2(x))))
            return jax.nn.log_softmax(self.out(self.ln(x.mean((1, 2)))))
    gd, st = nnx.split(CNN(nnx.Rngs(1)))
    def f(st, x):
        return nnx.merge(gd, st)(x)
    return f, host((st, f32(64, 32, 32, 3)))


@prog("nnx_transformer_lm_adamw")
def _():
    B, L, D, H, V = 4, 128, 128, 4, 2048
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.ln1, self.ln2 = nnx.LayerNorm(D, rngs=rngs), nnx.LayerNorm(D, rngs=rngs)
            self.att = nnx.MultiHeadAttention(H, D, decode=False, rngs=rngs)
            self.f1, self.f2 = nnx.Linear(D, 4 * D, rngs=rngs), nnx.Linear(4 * D, D, rngs=rngs)
        def __call__(self, x, mask):
            x = x + self.att(self.ln1(x), mask=mask)
            return x + self.f2(nnx.gelu(self.f1(self.ln2(x))))
    class LM(nnx.Module):
        def __init__(self, rngs):
            self.emb = nnx.Embed(V, D, rngs=rngs)
            self.pos = nnx.Param(jax.random.normal(rngs.params(), (L, D)) * 0.02)
            self.blocks = nnx.List([Block(rngs) for _ in range(2)]) if hasattr(nnx, "List") else [Block(rngs) for _ in range(2)]
            self.ln = nnx.LayerNorm(D, rngs=rngs)
            self.head = nnx.Linear(D, V, rngs=rngs)
        def __call__(self, tok):
            x = self.emb(tok) + self.pos[...]
            mask = nnx.make_causal_mask(tok)
            for b in self.blocks:
                x = b(x, mask)
            return self.head(self.ln(x))
    gd, params = nnx.split(LM(nnx.Rngs(2)), nnx.Param)
    tx = optax.adamw(3e-4, b2=0.95, weight_decay=0.1)
    def step(params, opt, tok):
        def loss(p):
            return xent_int(nnx.merge(gd, p)(tok[:, :-1]).reshape(-1, V), tok[:, 1:].reshape(-1))
        l, g = jax.value_and_grad(loss)(params)
        u, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, u), opt, l
    return step, host((params, warm(tx, params), ints(0, V, B, L + 1)))


@prog("nnx_rnn_gru_grad")
def _():
    B, T, Din, Hd = 32, 64, 32, 128
    class M(nnx.Module):
        def __init__(self, rngs):
            self.rnn = nnx.RNN(nnx.GRUCell(Din, Hd, rngs=rngs), rngs=False)
            self.out = nnx.Linear(Hd, 1, rngs=rngs)
        def __call__(self, x):
            return self.out(self.rnn(x, initial_carry=jnp.zeros((x.shape[0], Hd))))[..., 0]
    gd, params = nnx.split(M(nnx.Rngs(3)), nnx.Param)
    def g(params, x, y):  # sequence regression, gradient through nnx.RNN's scan
        return jax.grad(lambda p: jnp.mean((nnx.merge(gd, p)(x) - y) ** 2))(params)
    return g, host((params, f32(B, T, Din), f32(B, T)))


# --- optax alone --------------------------------------------------------------------------------

def gpt_tree(d, layers, vocab):
    t = {"wte": f32(vocab, d, scale=0.02), "lnf": {"scale": np.ones(d, np.float32), "bias": np.zeros(d, np.float32)}}
    for i in range(layers):
        t[f"h{i}"] = {"qkv": {"kernel": f32(d, 3 * d, scale=0.02), "bias": np.zeros(3 * d, np.float32)},
                      "proj": {"kernel": f32(d, d, scale=0.02), "bias": np.zeros(d, np.float32)},
                      "fc": {"kernel": f32(d, 4 * d, scale=0.02), "bias": np.zeros(4 * d, np.float32)},
                      "out": {"kernel": f32(4 * d, d, scale=0.02), "bias": np.zeros(d, np.float32)},
                      "ln1": {"scale": np.ones(d, np.float32), "bias": np.zeros(d, np.float32)},
                      "ln2": {"scale": np.ones(d, np.float32), "bias": np.zeros(d, np.float32)}}
    return t


@prog("optax_adamw_clip_cosine_mask")
def _():
    p = gpt_tree(384, 4, 8192)  # about 10M parameters
    g = tm(lambda a: f32(*a.shape, scale=1e-3), p)
    sched = optax.warmup_cosine_decay_schedule(0.0, 6e-4, 2000, 100000, end_value=6e-5)
    decay_mask = lambda t: tm(lambda a: a.ndim >= 2, t)
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, b2=0.95, weight_decay=0.1, mask=decay_mask))
    opt = tx.init(p)
    opt = tx.update(g, opt, p)[1]  # one step in (nonzero moments, count 1)
    def upd(p, g, opt):
        u, opt = tx.update(g, opt, p)
        return optax.apply_updates(p, u), opt
    return upd, host((p, g, opt))


@prog("optax_muon_update")
def _():
    p = {f"l{i}": {"w": f32(256, 256, scale=0.06), "b": np.zeros(256, np.float32)} for i in range(2)}
    p["up"] = {"w": f32(256, 768, scale=0.06), "b": np.zeros(768, np.float32)}
    g = tm(lambda a: f32(*a.shape, scale=1e-2), p)
    tx = optax.contrib.muon(0.02, weight_decay=0.01)
    def upd(p, g, opt):  # Newton-Schulz orthogonalization of the matrices' momentum, adam for the vectors
        u, opt = tx.update(g, opt, p)
        return optax.apply_updates(p, u), opt
    return upd, host((p, g, tx.init(p)))


@prog("optax_schedule_free_adamw")
def _():
    p = gpt_tree(256, 4, 4096)
    g = tm(lambda a: f32(*a.shape, scale=1e-3), p)
    tx = optax.contrib.schedule_free_adamw(1e-3, warmup_steps=100, weight_decay=0.01)
    opt = tx.init(p)
    opt = tx.update(g, opt, p)[1]
    def upd(p, g, opt):  # the train-point update and the evaluation parameters
        u, opt = tx.update(g, opt, p)
        p = optax.apply_updates(p, u)
        return p, opt, optax.contrib.schedule_free_eval_params(opt, p)
    return upd, host((p, g, opt))


@prog("optax_ctc_loss_grad")
def _():
    B, T, Kc, N = 16, 128, 32, 24
    lab = ints(1, Kc, B, N)
    lpad = (np.arange(N)[None] >= ints(12, N + 1, B)[:, None]).astype(np.float32)
    tpad = (np.arange(T)[None] >= ints(96, T + 1, B)[:, None]).astype(np.float32)
    def f(logits, tpad, lab, lpad):  # CTC over padded utterances: the loss and its gradient in the logits
        return jax.value_and_grad(lambda lg: optax.ctc_loss(lg, tpad, lab, lpad).mean())(logits)
    return f, (f32(B, T, Kc), tpad, lab, lpad)


@prog("optax_losses_mix_grad")
def _():
    B, C = 256, 1000
    def f(lc, yc, lm, ym, pr, tr, ea, eb):  # a multi-task loss from optax.losses, gradient in every prediction
        def loss(lc, lm, pr, ea):
            return (optax.softmax_cross_entropy_with_integer_labels(lc, yc).mean()
                    + optax.sigmoid_binary_cross_entropy(lm, ym).mean()
                    + optax.huber_loss(pr, tr, delta=1.0).mean()
                    + optax.sigmoid_focal_loss(lm, ym, alpha=0.25, gamma=2.0).mean()
                    + (1 - optax.cosine_similarity(ea, eb)).mean()
                    + optax.kl_divergence(jax.nn.log_softmax(lc), jax.nn.softmax(lm)).mean())
        return jax.value_and_grad(loss, argnums=(0, 1, 2, 3))(lc, lm, pr, ea)
    return f, (f32(B, C), ints(0, C, B), f32(B, C), (unif(0, 1, B, C) < 0.05).astype(np.float32),
               f32(B, 64), f32(B, 64, scale=2.0), f32(B, 256), f32(B, 256))


@prog("optax_ntxent_grad")
def _():
    def f(z, lab):  # SimCLR's NT-Xent over 2 x 128 views (pairwise cosines by broadcasting), gradient in the embeddings
        return jax.value_and_grad(lambda z: optax.losses.ntxent(z, lab, temperature=0.1))(z)
    return f, (f32(256, 64), np.repeat(np.arange(128), 2).astype(np.int32))


# --- equinox (what eqx.filter_jit lowers: the array leaves in, the rest static) ----------------

@prog("eqx_mlp_adam_train")
def _():
    model = eqx.nn.MLP(784, 10, 512, 3, activation=jax.nn.gelu, key=K(10))
    params, static = eqx.partition(model, eqx.is_array)
    tx = optax.adam(1e-3)
    def step(params, opt, x, y):
        @eqx.filter_value_and_grad
        def loss(mdl):
            return xent_int(jax.vmap(mdl)(x), y)
        l, g = loss(eqx.combine(params, static))
        u, opt = tx.update(g, opt, params)
        return eqx.apply_updates(params, u), opt, l
    return step, host((params, warm(tx, params), f32(256, 784), ints(0, 10, 256)))


@prog("eqx_cnn_train")
def _():
    class CNN(eqx.Module):
        layers: list
        def __init__(self, key):
            k = jax.random.split(key, 4)
            self.layers = [eqx.nn.Conv2d(3, 32, 3, padding=1, key=k[0]), jax.nn.relu, eqx.nn.MaxPool2d(2, 2),
                           eqx.nn.Conv2d(32, 64, 3, padding=1, key=k[1]), jax.nn.relu, eqx.nn.MaxPool2d(2, 2),
                           eqx.nn.Conv2d(64, 64, 3, padding=1, key=k[2]), jax.nn.relu,
                           lambda x: x.mean((1, 2)), eqx.nn.Linear(64, 10, key=k[3])]
        def __call__(self, x):  # one CHW image
            for lay in self.layers:
                x = lay(x)
            return x
    params, static = eqx.partition(CNN(K(11)), eqx.is_array)
    tx = optax.adam(1e-3)
    def step(params, opt, x, y):
        l, g = eqx.filter_value_and_grad(lambda mdl: xent_int(jax.vmap(mdl)(x), y))(eqx.combine(params, static))
        u, opt = tx.update(g, opt, params)
        return eqx.apply_updates(params, u), opt, l
    return step, host((params, warm(tx, params), f32(32, 3, 32, 32), ints(0, 10, 32)))


@prog("eqx_mha_block_grad")
def _():
    D, H, L, B = 128, 4, 64, 16
    class Block(eqx.Module):
        ln1: eqx.nn.LayerNorm
        ln2: eqx.nn.LayerNorm
        att: eqx.nn.MultiheadAttention
        mlp: eqx.nn.MLP
        def __init__(self, key):
            k1, k2 = jax.random.split(key)
            self.ln1, self.ln2 = eqx.nn.LayerNorm(D), eqx.nn.LayerNorm(D)
            self.att = eqx.nn.MultiheadAttention(H, D, key=k1)
            self.mlp = eqx.nn.MLP(D, D, 4 * D, 1, activation=jax.nn.gelu, key=k2)
        def __call__(self, x):  # one [L, D] sequence, causal
            y = jax.vmap(self.ln1)(x)
            x = x + self.att(y, y, y, mask=jnp.tril(jnp.ones((L, L), bool)))
            return x + jax.vmap(self.mlp)(jax.vmap(self.ln2)(x))
    blocks = [Block(k) for k in jax.random.split(K(12), 2)]
    params, static = eqx.partition(blocks, eqx.is_array)
    def g(params, x, t):
        def loss(mdl):
            def one(s):
                for b in mdl:
                    s = b(s)
                return s
            return jnp.mean((jax.vmap(one)(x) - t) ** 2)
        return eqx.filter_grad(loss)(eqx.combine(params, static))
    return g, host((params, f32(B, L, D), f32(B, L, D)))


@prog("eqx_lstm_scan_grad")
def _():
    B, T, Din, Hd = 32, 64, 32, 128
    cell = eqx.nn.LSTMCell(Din, Hd, key=K(13))
    head = eqx.nn.Linear(Hd, 1, key=K(14))
    params, static = eqx.partition((cell, head), eqx.is_array)
    def g(params, xs, ys):
        def loss(mdl):
            cell, head = mdl
            def one(xs):  # one [T, Din] sequence under lax.scan
                def body(c, x):
                    c = cell(x, c)
                    return c, head(c[0])[0]
                return lax.scan(body, (jnp.zeros(Hd), jnp.zeros(Hd)), xs)[1]
            return jnp.mean((jax.vmap(one)(xs) - ys) ** 2)
        return eqx.filter_grad(loss)(eqx.combine(params, static))
    return g, host((params, f32(B, T, Din), f32(B, T)))


@prog("eqx_batchnorm_state")
def _():
    class Net(eqx.Module):
        l1: eqx.nn.Linear
        bn1: eqx.nn.BatchNorm
        l2: eqx.nn.Linear
        bn2: eqx.nn.BatchNorm
        l3: eqx.nn.Linear
        def __init__(self, key):
            k = jax.random.split(key, 3)
            self.l1 = eqx.nn.Linear(256, 512, use_bias=False, key=k[0])  # (no bias before a batch norm)
            self.l2 = eqx.nn.Linear(512, 512, use_bias=False, key=k[1])
            self.l3 = eqx.nn.Linear(512, 10, key=k[2])
            self.bn1, self.bn2 = eqx.nn.BatchNorm(512, "batch", mode="batch"), eqx.nn.BatchNorm(512, "batch", mode="batch")
        def __call__(self, x, state):
            x, state = self.bn1(self.l1(x), state)
            x, state = self.bn2(self.l2(jax.nn.relu(x)), state)
            return self.l3(jax.nn.relu(x)), state
    model, state = eqx.nn.make_with_state(Net)(K(15))
    params, static = eqx.partition(model, eqx.is_array)
    def f(params, state, x, y):  # batch statistics through vmap(axis_name='batch'), the new state out
        def loss(mdl):
            out, st = jax.vmap(mdl, axis_name="batch", in_axes=(0, None), out_axes=(0, None))(x, state)
            return xent_int(out, y), st
        (l, st), g = eqx.filter_value_and_grad(loss, has_aux=True)(eqx.combine(params, static))
        return l, g, st
    return f, host((params, state, f32(256, 256), ints(0, 10, 256)))


# --- 64-bit (under jax.enable_x64) --------------------------------------------------------------

@x64prog("f64_odeint_lorenz")
def _():
    from jax.experimental.ode import odeint
    def f(y0, ts, sig):  # adaptive Dormand-Prince (a while_loop of accepted / rejected steps) at rtol 1e-8
        def rhs(y, t, sig):
            x, yy, z = y[:, 0], y[:, 1], y[:, 2]
            return jnp.stack([sig * (yy - x), x * (28.0 - z) - yy, x * yy - 8.0 / 3.0 * z], -1)
        return odeint(rhs, y0, ts, sig, rtol=1e-8, atol=1e-8)
    return f, (f64(256, 3) + np.array([1.0, 1.0, 20.0]), np.linspace(0.0, 0.5, 6), np.float64(10.0))


@x64prog("f64_rk4_nbody")
def _():
    N, ST, dt = 128, 30, 1e-3
    def f(x, v, m):  # RK4 steps of softened gravity, all pairs
        def acc(x):
            d = x[None] - x[:, None]
            r2 = (d ** 2).sum(-1) + 1e-4
            return (d * (m[None, :, None] * r2[..., None] ** -1.5)).sum(1)
        def step(_, s):
            x, v = s
            k1x, k1v = v, acc(x)
            k2x, k2v = v + dt / 2 * k1v, acc(x + dt / 2 * k1x)
            k3x, k3v = v + dt / 2 * k2v, acc(x + dt / 2 * k2x)
            k4x, k4v = v + dt * k3v, acc(x + dt * k3x)
            return (x + dt / 6 * (k1x + 2 * k2x + 2 * k3x + k4x), v + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v))
        x, v = lax.fori_loop(0, ST, step, (x, v))
        ke = 0.5 * (m * (v ** 2).sum(-1)).sum()
        return x, v, ke
    return f, (f64(N, 3), f64(N, 3, scale=0.1), R.uniform(0.5, 1.5, N) / N)


@x64prog("f64_newton_bratu")
def _():
    n = 256
    h = 1.0 / (n + 1)
    def f(u0, lam):  # Newton on the 1-D Bratu problem, dense Jacobian by jacfwd, LU solve, until |du| < 1e-12
        def F(u):
            p = jnp.pad(u, 1)
            return (p[:-2] - 2 * u + p[2:]) / h ** 2 + lam * jnp.exp(u)
        def cond(c):
            return (c[1] > 1e-12) & (c[2] < 30)
        def body(c):
            u, _, it = c
            du = jnp.linalg.solve(jax.jacfwd(F)(u), -F(u))
            return u + du, jnp.max(jnp.abs(du)), it + 1
        u, r, it = lax.while_loop(cond, body, (u0, jnp.float64(1.0), 0))
        return u, it
    return f, (np.zeros(n), np.float64(2.0))


@x64prog("f64_gp_nll_grad")
def _():
    n, d = 384, 4
    x = R.uniform(-2, 2, (n, d))
    y = np.sin(x).sum(-1) + 0.05 * R.standard_normal(n)
    def f(logh, x, y):  # GP regression: the negative log marginal likelihood of an ARD RBF kernel and its gradient
        def nll(logh):
            ls, sf, sn = jnp.exp(logh[:d]), jnp.exp(logh[d]), jnp.exp(logh[d + 1])
            z = x / ls
            d2 = (z ** 2).sum(-1)[:, None] + (z ** 2).sum(-1)[None] - 2 * z @ z.T
            Kx = sf ** 2 * jnp.exp(-0.5 * jnp.maximum(d2, 0)) + (sn ** 2 + 1e-8) * jnp.eye(n)
            Lc = jnp.linalg.cholesky(Kx)
            a = jax.scipy.linalg.cho_solve((Lc, True), y)
            return 0.5 * y @ a + jnp.log(jnp.diag(Lc)).sum() + 0.5 * n * jnp.log(2 * jnp.pi)
        return jax.value_and_grad(nll)(logh)
    return f, (np.array([0.0, 0.0, 0.0, 0.0, 0.0, -2.0]), x, y)


@x64prog("f64_cumsum_stats")
def _():
    def f(x):  # running sums in float64: a random walk, its running mean and variance, a prefix-sum window mean
        c = jnp.cumsum(x, axis=-1)
        c2 = jnp.cumsum(x * x, axis=-1)
        k = jnp.arange(1, x.shape[-1] + 1, dtype=x.dtype)
        mean = c / k
        var = c2 / k - mean ** 2
        win = (c[:, 64:] - c[:, :-64]) / 64
        return c, var, win, jnp.cumprod(1 + 1e-3 * x, axis=-1)[:, -1]
    return f, (f64(256, 8192),)


@x64prog("i64_gather_segment_argsort")
def _():
    n, E, S = 200000, 1 << 20, 4096
    def f(vals, idx, seg, cnt):  # int64 indices, int64 segment ids and counts, an int64 argsort
        g = vals[idx]
        s = jax.ops.segment_sum(g, seg, num_segments=S)
        c = jax.ops.segment_sum(cnt, seg, num_segments=S)
        order = jnp.argsort(c, descending=True)
        return s, c, order, jnp.cumsum(c)
    return f, (f64(n), R.integers(0, n, E).astype(np.int64), R.integers(0, S, E).astype(np.int64),
               R.integers(0, 1 << 40, E).astype(np.int64))


@x64prog("c128_fft_poisson")
def _():
    N = 256
    kx = 2 * np.pi * np.fft.fftfreq(N, 1.0 / N)
    k2 = kx[:, None] ** 2 + kx[None] ** 2
    k2[0, 0] = 1.0
    def f(rho, psi, k2):  # spectral Poisson solve in complex128, a Schroedinger split step, a circular convolution
        phi = jnp.real(jnp.fft.ifft2(jnp.fft.fft2(rho) / k2 * (k2 != 1.0)))
        psi = jnp.fft.ifft2(jnp.exp(-0.5j * 1e-3 * k2) * jnp.fft.fft2(psi * jnp.exp(-1j * 1e-3 * phi)))
        conv = jnp.fft.irfft2(jnp.fft.rfft2(rho) * jnp.fft.rfft2(phi), s=rho.shape)
        return phi, jnp.real(psi), jnp.imag(psi), conv  # (the harness compares real parts)
    return f, (f64(N, N), (f64(N, N) + 1j * f64(N, N)).astype(np.complex128), k2)


# --- mixed dtypes ------------------------------------------------------------------------------

@prog("f16_mlp_infer")
def _():
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for w in (1024, 1024):
                x = nn.gelu(nn.Dense(w, dtype=jnp.float16, param_dtype=jnp.float16)(x))
            return nn.Dense(10, dtype=jnp.float16, param_dtype=jnp.float16)(x)
    m = MLP()
    x = f32(256, 784).astype(np.float16)
    p = m.init(K(16), x)["params"]
    return (lambda p, x: jax.nn.softmax(m.apply({"params": p}, x).astype(jnp.float32))), host((p, x))


@prog("f16_cnn_infer")
def _():
    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            for f in (32, 64, 128):
                x = nn.Conv(f, (3, 3), dtype=jnp.float16, param_dtype=jnp.float16)(x)
                x = nn.max_pool(nn.relu(x), (2, 2), (2, 2))
            return nn.Dense(10, dtype=jnp.float16, param_dtype=jnp.float16)(x.mean((1, 2)))
    m = CNN()
    x = f32(32, 32, 32, 3).astype(np.float16)
    p = m.init(K(17), x)["params"]
    return (lambda p, x: m.apply({"params": p}, x)), host((p, x))


@prog("u32_hash_bits")
def _():
    def f(x, seed):  # murmur3's finalizer, a xorshift round, rotate, popcount / clz, a bucket histogram
        h = x ^ seed
        h = h ^ (h >> 16); h = h * np.uint32(0x85EBCA6B)
        h = h ^ (h >> 13); h = h * np.uint32(0xC2B2AE35)
        h = h ^ (h >> 16)
        r = (h << 13) | (h >> 19)
        r = r ^ (r << 7); r = r ^ (r >> 9)
        pc = lax.population_count(r)
        lz = lax.clz(h)
        b = (h & np.uint32(1023)).astype(jnp.int32)
        hist = jnp.zeros(1024, jnp.int32).at[b].add(1)
        return h, r, pc.astype(jnp.uint8), lz, hist, jnp.bitwise_xor.reduce(r)
    return f, (R.integers(0, 1 << 32, 1 << 22, dtype=np.uint64).astype(np.uint32), np.uint32(0x9E3779B9))


@prog("bf16_mixed_loss_scale_train")
def _():
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for w in (1024, 1024):
                x = nn.gelu(nn.LayerNorm(dtype=jnp.bfloat16)(nn.Dense(w, dtype=jnp.bfloat16)(x)))
            return nn.Dense(10, dtype=jnp.bfloat16)(x)
    m = MLP()
    x, y = f32(256, 512), ints(0, 10, 256)
    p = midway(m.init(K(18), x)["params"])  # f32 master weights, bf16 compute
    tx = optax.adam(1e-3)
    def step(p, opt, scale, good, x, y):  # dynamic loss scaling: skip and halve on overflow, double every 200 good steps
        def loss(p):
            logits = m.apply({"params": p}, x.astype(jnp.bfloat16)).astype(jnp.float32)
            return xent_int(logits, y) * scale
        ls, g = jax.value_and_grad(loss)(p)
        g = tm(lambda a: a / scale, g)
        finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(a)) for a in jax.tree_util.tree_leaves(g)]))
        u, opt2 = tx.update(g, opt, p)
        p2 = optax.apply_updates(p, u)
        sel = lambda a, b: tm(lambda u, v: jnp.where(finite, u, v), a, b)
        good = jnp.where(finite, good + 1, 0)
        scale = jnp.where(finite, jnp.where(good >= 200, scale * 2, scale), scale / 2)
        return sel(p2, p), sel(opt2, opt), scale, jnp.where(good >= 200, 0, good), ls / scale
    return step, host((p, warm(tx, p), np.float32(2.0 ** 15), np.int32(199), x, y))


def main(table) -> None:
    """Bench the programs named on the command line (comma-separated), else all; the x64
    programs inside jax.enable_x64(True)."""
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else list(table)
    for n in names:
        try:
            if n in X64:
                with jax.enable_x64(True):
                    U.bench(n)
            else:
                U.bench(n)
        except Exception as e:  # a failure is a finding: report it and go on
            print(f"{n:22s} FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)


if __name__ == "__main__":
    main(P)
