"""Real programs written in JAX, lowered to StableHLO text: the workloads that tests and
benchmarks run through axle. Needs jax (`pip install -e '.[test]'` brings it).

Each workload is a function returning (jax function, example arguments as numpy arrays).
`stablehlo_text(name)` lowers one with jax.jit(...).lower(...).as_text().
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def _rng(seed=0):
    return np.random.default_rng(seed)


def mlp_train_step(batch: int = 32, sizes=(64, 128, 10)):
    """One SGD step of a 2-layer MLP with softmax cross-entropy (grad + update)."""
    import jax
    import jax.numpy as jnp

    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = jax.nn.relu(x @ w1 + b1)
        logits = h @ w2 + b2
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))

    def step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    r = _rng(0)
    d0, d1, d2 = sizes
    params = [(r.standard_normal((d0, d1), np.float32) * 0.1, np.zeros(d1, np.float32)),
              (r.standard_normal((d1, d2), np.float32) * 0.1, np.zeros(d2, np.float32))]
    x = r.standard_normal((batch, d0), np.float32)
    y = np.eye(d2, dtype=np.float32)[r.integers(0, d2, batch)]
    return step, (params, x, y)


def layernorm(x, g, b, eps: float = 1e-5):
    """Layer normalization over the last axis (as GPT-2 writes it), for JAX arrays."""
    import jax
    import jax.numpy as jnp
    mu = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, -1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + eps) * g + b


def transformer_block(batch: int = 2, seq: int = 16, d_model: int = 64, heads: int = 4):
    """A GPT-2 style pre-norm block: layernorm, causal multi-head attention, MLP with GELU."""
    import jax
    import jax.numpy as jnp

    def block(p, x):
        h = layernorm(x, p["ln1_g"], p["ln1_b"])
        qkv = h @ p["w_qkv"] + p["b_qkv"]
        q, k, v = jnp.split(qkv, 3, axis=-1)
        def heads_(t):
            return t.reshape(batch, seq, heads, d_model // heads).transpose(0, 2, 1, 3)
        q, k, v = heads_(q), heads_(k), heads_(v)
        att = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(d_model // heads).astype(np.float32)
        mask = jnp.tril(jnp.ones((seq, seq), bool))
        att = jnp.where(mask, att, -1e9)
        att = jax.nn.softmax(att, axis=-1)
        o = (att @ v).transpose(0, 2, 1, 3).reshape(batch, seq, d_model)
        x = x + o @ p["w_o"] + p["b_o"]
        h = layernorm(x, p["ln2_g"], p["ln2_b"])
        h = jax.nn.gelu(h @ p["w_fc"] + p["b_fc"])
        return x + h @ p["w_proj"] + p["b_proj"]

    r = _rng(1)
    d = d_model

    def w(*shape):
        return (r.standard_normal(shape) * 0.05).astype(np.float32)

    p = {"ln1_g": np.ones(d, np.float32), "ln1_b": np.zeros(d, np.float32),
         "w_qkv": w(d, 3 * d), "b_qkv": np.zeros(3 * d, np.float32), "w_o": w(d, d), "b_o": np.zeros(d, np.float32),
         "ln2_g": np.ones(d, np.float32), "ln2_b": np.zeros(d, np.float32), "w_fc": w(d, 4 * d),
         "b_fc": np.zeros(4 * d, np.float32), "w_proj": w(4 * d, d), "b_proj": np.zeros(d, np.float32)}
    x = r.standard_normal((batch, seq, d)).astype(np.float32)
    return block, (p, x)


WORKLOADS: dict[str, Callable] = {"mlp_train_step": mlp_train_step, "transformer_block": transformer_block}


def lower(name: str):
    """(StableHLO text, flat list of numpy arguments, jax function, pytree args) of a workload."""
    import jax
    fn, args = WORKLOADS[name]()
    text = jax.jit(fn).lower(*args).as_text()
    flat = [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]
    return text, flat, fn, args


def stablehlo_text(name: str) -> str:
    return lower(name)[0]
