"""The benchmark workloads: real JAX programs at sizes that run 1-300 ms on two cores.

Each entry returns (function, example arguments as a pytree of numpy arrays). `axle bench`
lowers each with jax.jit(...).lower(...).as_text() and hands the same StableHLO text to
axle and to XLA (through jax.jit on the same function, which compiles that module).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from axle.tools.workloads import layernorm as _layernorm
from axle.tools.workloads import mlp_train_step, transformer_block


def _rng(seed: int):
    return np.random.default_rng(seed)


def _f32(r, *shape, scale=1.0):
    return (r.standard_normal(shape) * scale).astype(np.float32)


def gelu_bias_residual(rows: int = 1024, cols: int = 1024):
    """y = x + gelu(h + b): the epilogue of a transformer MLP (tanh GELU)."""
    import jax

    def fn(x, h, b):
        return x + jax.nn.gelu(h + b, approximate=True)
    r = _rng(10)
    return fn, (_f32(r, rows, cols), _f32(r, rows, cols), _f32(r, cols))


def softmax_rows(rows: int = 1024, cols: int = 1024):
    import jax

    def fn(x):
        return jax.nn.softmax(x, axis=-1)
    return fn, (_f32(_rng(11), rows, cols),)


def layernorm(rows: int = 1024, cols: int = 1024):
    r = _rng(12)
    return _layernorm, (_f32(r, rows, cols), _f32(r, cols), _f32(r, cols))


def reduce_axis0(rows: int = 8192, cols: int = 1024):
    """A large reduction over the leading (non-contiguous) axis."""
    import jax.numpy as jnp

    def fn(x):
        return jnp.sum(x, axis=0)
    return fn, (_f32(_rng(13), rows, cols),)


def mlp_inference(batch: int = 256, sizes=(784, 1024, 1024, 10)):
    import jax
    import jax.numpy as jnp

    def fn(params, x):
        for k, (w, b) in enumerate(params):
            x = x @ w + b
            if k < len(params) - 1:
                x = jax.nn.relu(x)
        return jax.nn.log_softmax(x) if x.shape[-1] > 1 else jnp.squeeze(x)
    r = _rng(14)
    params = [(_f32(r, a, b, scale=1 / np.sqrt(a)), np.zeros(b, np.float32)) for a, b in zip(sizes, sizes[1:])]
    return fn, (params, _f32(r, batch, sizes[0]))


def mlp_training(batch: int = 128, sizes=(784, 512, 512, 10)):
    import jax
    import jax.numpy as jnp

    def loss(params, x, y):
        for k, (w, b) in enumerate(params):
            x = x @ w + b
            if k < len(params) - 1:
                x = jax.nn.relu(x)
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(x) * y, axis=-1))

    def step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)
    r = _rng(15)
    params = [(_f32(r, a, b, scale=1 / np.sqrt(a)), np.zeros(b, np.float32)) for a, b in zip(sizes, sizes[1:])]
    y = np.eye(sizes[-1], dtype=np.float32)[r.integers(0, sizes[-1], batch)]
    return step, (params, _f32(r, batch, sizes[0]), y)


def cnn_inference(batch: int = 16, size: int = 32):
    """Two conv(3x3)-batchnorm(inference)-relu-maxpool stages and a dense head, NHWC."""
    import jax
    import jax.numpy as jnp

    def conv_bn_relu_pool(x, w, scale, shift):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jax.nn.relu(y * scale + shift)
        return jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def fn(p, x):
        x = conv_bn_relu_pool(x, p["w1"], p["s1"], p["t1"])
        x = conv_bn_relu_pool(x, p["w2"], p["s2"], p["t2"])
        x = x.reshape(x.shape[0], -1)
        return x @ p["wd"] + p["bd"]
    r = _rng(16)
    c1, c2 = 32, 64
    flat = (size // 4) * (size // 4) * c2
    p = {"w1": _f32(r, 3, 3, 3, c1, scale=0.2), "s1": _f32(r, c1) + 1, "t1": _f32(r, c1, scale=0.1),
         "w2": _f32(r, 3, 3, c1, c2, scale=0.05), "s2": _f32(r, c2) + 1, "t2": _f32(r, c2, scale=0.1),
         "wd": _f32(r, flat, 10, scale=1 / np.sqrt(flat)), "bd": np.zeros(10, np.float32)}
    return fn, (p, _f32(r, batch, size, size, 3))


def gpt2_block():
    """One GPT-2-small block: d_model 768, 12 heads, sequence 128, batch 1."""
    return transformer_block(batch=1, seq=128, d_model=768, heads=12)


def mini_gpt_training(batch: int = 8, seq: int = 64, d: int = 128, heads: int = 4, layers: int = 2,
                      vocab: int = 256):
    """A whole training step (embedding, blocks, LM head, cross-entropy, grad, SGD) of a tiny GPT."""
    import jax
    import jax.numpy as jnp

    ln = _layernorm

    def block(p, x):
        h = ln(x, p["g1"], p["b1"])
        q, k, v = jnp.split(h @ p["wqkv"], 3, axis=-1)

        def split(t):
            return t.reshape(batch, seq, heads, d // heads).transpose(0, 2, 1, 3)
        q, k, v = split(q), split(k), split(v)
        att = (q @ k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(d // heads))
        att = jnp.where(jnp.tril(jnp.ones((seq, seq), bool)), att, -1e9)
        o = (jax.nn.softmax(att, -1) @ v).transpose(0, 2, 1, 3).reshape(batch, seq, d)
        x = x + o @ p["wo"]
        h = ln(x, p["g2"], p["b2"])
        return x + jax.nn.gelu(h @ p["wfc"]) @ p["wproj"]

    def loss(params, tokens, targets):
        x = params["emb"][tokens] + params["pos"]
        for p in params["blocks"]:
            x = block(p, x)
        logits = ln(x, params["gf"], params["bf"]) @ params["emb"].T
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))

    def step(params, tokens, targets):
        g = jax.grad(loss)(params, tokens, targets)
        return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, params, g)
    r = _rng(17)

    def blk():
        return {"g1": np.ones(d, np.float32), "b1": np.zeros(d, np.float32), "wqkv": _f32(r, d, 3 * d, scale=0.02),
                "wo": _f32(r, d, d, scale=0.02), "g2": np.ones(d, np.float32), "b2": np.zeros(d, np.float32),
                "wfc": _f32(r, d, 4 * d, scale=0.02), "wproj": _f32(r, 4 * d, d, scale=0.02)}
    params = {"emb": _f32(r, vocab, d, scale=0.02), "pos": _f32(r, seq, d, scale=0.01),
              "blocks": [blk() for _ in range(layers)], "gf": np.ones(d, np.float32), "bf": np.zeros(d, np.float32)}
    tokens = r.integers(0, vocab, (batch, seq)).astype(np.int32)
    targets = r.integers(0, vocab, (batch, seq)).astype(np.int32)
    return step, (params, tokens, targets)


def one_op():
    """A single add of two 4-element vectors: what a call costs beyond the work."""
    def fn(x, y):
        return x + y
    return fn, (np.ones(4, np.float32), np.ones(4, np.float32))


BENCH_WORKLOADS: dict[str, Callable] = {
    "gelu_bias_residual": gelu_bias_residual,
    "softmax_rows": softmax_rows,
    "layernorm": layernorm,
    "reduce_axis0": reduce_axis0,
    "mlp_inference": mlp_inference,
    "mlp_training": mlp_training,
    "cnn_inference": cnn_inference,
    "gpt2_block": gpt2_block,
    "mini_gpt_training": mini_gpt_training,
    "small_mlp_train_step": mlp_train_step,
}

from axle.tools.bench_workloads_more import MORE_WORKLOADS  # noqa: E402  (issue 18's workloads)

BENCH_WORKLOADS.update(MORE_WORKLOADS)
