"""More `axle bench` workloads: the kinds of programs users run beyond the first ten
(issue 18): sorting and top-k, convolution gradients and the other convolution forms,
scans, a KV-cache decode step, training at realistic sizes, integer and bf16 matmuls,
cumulative reductions and einsums with awkward axis orders; then random normals, a
scatter-add, a mixed uint8 x int8 einsum and a bf16 convolution, which a sweep of programs
outside the suite found 14-60x slower than XLA (benchmarks/unseen_programs.py).

Each entry returns (function, example arguments), as in bench_workloads.py.
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def _rng(seed: int):
    return np.random.default_rng(seed)


def _f32(r, *shape, scale=1.0):
    return (r.standard_normal(shape) * scale).astype(np.float32)


def topk_sort(rows: int = 128, cols: int = 4096, k: int = 16, n: int = 262144):
    """lax.top_k (k=16) over rows, and a stable argsort-style sort of 262,144 values."""
    import jax
    import jax.numpy as jnp

    def fn(x, v):
        vals, idx = jax.lax.top_k(x, k)
        return vals, idx, jnp.sort(v, stable=True)
    r = _rng(30)
    return fn, (_f32(r, rows, cols), _f32(r, n))


def argsort_rows(rows: int = 256, cols: int = 1024):
    """argsort of each row (a two-operand sort: values and their indices)."""
    import jax.numpy as jnp

    def fn(x):
        return jnp.argsort(x, axis=-1)
    return fn, (_f32(_rng(31), rows, cols),)


def conv_backward(batch: int = 16, size: int = 16, cin: int = 64, cout: int = 64):
    """Input and filter gradients of a 3x3 SAME convolution, NHWC."""
    import jax

    def loss(x, w):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return (y * y).sum()

    def fn(x, w):
        return jax.grad(loss, argnums=(0, 1))(x, w)
    r = _rng(32)
    return fn, (_f32(r, batch, size, size, cin), _f32(r, 3, 3, cin, cout, scale=0.05))


def conv_forms(batch: int = 8):
    """The other convolution forms: strided, rhs-dilated, NCHW, depthwise (grouped), 1-D."""
    import jax

    def fn(x, w_s, w_d, xc, wc, w_g, s1, w1):
        a = jax.lax.conv_general_dilated(x, w_s, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        d = jax.lax.conv_general_dilated(x, w_d, (1, 1), "SAME", rhs_dilation=(2, 2),
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        c = jax.lax.conv_general_dilated(xc, wc, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        g = jax.lax.conv_general_dilated(x, w_g, (1, 1), "SAME", feature_group_count=x.shape[-1],
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        o = jax.lax.conv_general_dilated(s1, w1, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))
        return a, d, c, g, o
    r = _rng(33)
    x = _f32(r, batch, 32, 32, 32)
    return fn, (x, _f32(r, 3, 3, 32, 64, scale=0.1), _f32(r, 3, 3, 32, 32, scale=0.1),
                _f32(r, batch, 32, 32, 32), _f32(r, 32, 32, 3, 3, scale=0.1), _f32(r, 3, 3, 1, 32, scale=0.3),
                _f32(r, batch, 512, 64), _f32(r, 5, 64, 64, scale=0.05))


def transposed_conv(batch: int = 8, size: int = 16, cin: int = 64, cout: int = 32):
    """A stride-2 transposed convolution (lhs-dilated), as decoders and U-Nets use."""
    import jax

    def fn(x, w):
        return jax.lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    r = _rng(34)
    return fn, (_f32(r, batch, size, size, cin), _f32(r, 3, 3, cin, cout, scale=0.05))


def rnn_scan(steps: int = 64, batch: int = 32, din: int = 256, dh: int = 512):
    """An Elman RNN by lax.scan: a GEMM per step inside a while loop."""
    import jax
    import jax.numpy as jnp

    def fn(wx, wh, b, xs, h0):
        def cell(h, x):
            h = jnp.tanh(x @ wx + h @ wh + b)
            return h, h
        return jax.lax.scan(cell, h0, xs)
    r = _rng(35)
    return fn, (_f32(r, din, dh, scale=1 / 16), _f32(r, dh, dh, scale=1 / 23), np.zeros(dh, np.float32),
                _f32(r, steps, batch, din), np.zeros((batch, dh), np.float32))


def kv_decode_step(batch: int = 4, heads: int = 8, cache: int = 1024, dh: int = 64):
    """One decode step with a KV cache: write this step's key/value at `pos`
    (dynamic_update_slice), attend with a mask over the filled part, project out."""
    import jax
    import jax.numpy as jnp

    d = heads * dh

    def fn(p, kc, vc, x, pos):
        pos = pos[0]
        q = (x @ p["wq"]).reshape(batch, heads, 1, dh)
        k = (x @ p["wk"]).reshape(batch, heads, 1, dh)
        v = (x @ p["wv"]).reshape(batch, heads, 1, dh)
        kc = jax.lax.dynamic_update_slice(kc, k, (0, 0, pos, 0))
        vc = jax.lax.dynamic_update_slice(vc, v, (0, 0, pos, 0))
        s = jnp.einsum("bhqd,bhkd->bhqk", q, kc) / np.float32(np.sqrt(dh))
        s = jnp.where(jnp.arange(cache)[None, None, None, :] <= pos, s, -1e30)
        o = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), vc).reshape(batch, d)
        return o @ p["wo"], kc, vc
    r = _rng(36)
    p = {k: _f32(r, d, d, scale=1 / np.sqrt(d)) for k in ("wq", "wk", "wv", "wo")}
    return fn, (p, _f32(r, batch, heads, cache, dh), _f32(r, batch, heads, cache, dh), _f32(r, batch, d),
                np.array([700], np.int32))


def _mlp(batch, sizes, seed):
    r = _rng(seed)
    params = [(_f32(r, a, b, scale=1 / np.sqrt(a)), np.zeros(b, np.float32)) for a, b in zip(sizes, sizes[1:])]
    x = _f32(r, batch, sizes[0])
    y = np.eye(sizes[-1], dtype=np.float32)[r.integers(0, sizes[-1], batch)]
    return params, x, y


def _mlp_loss(params, x, y):
    import jax
    import jax.numpy as jnp
    for k, (w, b) in enumerate(params):
        x = x @ w + b
        if k < len(params) - 1:
            x = jax.nn.relu(x)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(x) * y, axis=-1))


def mlp_big_forward(batch: int = 256, sizes=(784, 1024, 1024, 10)):
    """Forward pass and loss of an MLP 784-1024-1024-10 at batch 256."""
    params, x, y = _mlp(batch, sizes, 37)
    return _mlp_loss, (params, x, y)


def mlp_big_training(batch: int = 256, sizes=(784, 1024, 1024, 10)):
    """A whole SGD step of the MLP 784-1024-1024-10 at batch 256."""
    import jax

    def step(params, x, y):
        g = jax.grad(_mlp_loss)(params, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, params, g)
    params, x, y = _mlp(batch, sizes, 38)
    return step, (params, x, y)


def int8_matmul(m: int = 256, k: int = 1024, n: int = 1024):
    """int8 x int8 -> int32 matmul (quantized inference), then dequantized to f32."""
    import jax
    import jax.numpy as jnp

    def fn(a, b, scale):
        acc = jax.lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
        return acc.astype(jnp.float32) * scale
    r = _rng(39)
    return fn, (r.integers(-128, 128, (m, k)).astype(np.int8), r.integers(-128, 128, (k, n)).astype(np.int8),
                np.array([1e-4], np.float32))


def bf16_matmul(m: int = 256, k: int = 1024, n: int = 1024):
    """bf16 x bf16 matmul with f32 accumulation and result (mixed precision)."""
    import jax
    import jax.numpy as jnp
    import ml_dtypes

    def fn(a, b):
        return jax.lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32)
    r = _rng(40)
    return fn, (_f32(r, m, k).astype(ml_dtypes.bfloat16), _f32(r, k, n, scale=0.03).astype(ml_dtypes.bfloat16))


def cumulative(rows: int = 256, cols: int = 4096):
    """cumsum, cummax and logcumsumexp along rows, cumprod along columns."""
    import jax
    import jax.numpy as jnp

    def fn(x):
        return (jnp.cumsum(x, axis=1), jax.lax.cummax(x, axis=1), jax.nn.logsumexp(x, axis=1),
                jax.lax.cumlogsumexp(x, axis=1), jnp.cumprod(1 + 0.001 * x, axis=0))
    return fn, (_f32(_rng(41), rows, cols),)


def einsum_orders(b: int = 16, h: int = 8, s: int = 128, d: int = 64):
    """Einsums whose dimension orders BLAS does not take directly."""
    import jax.numpy as jnp

    def fn(x, y, w):
        a = jnp.einsum("bhsd,bshd->bhs", x, y.transpose(0, 2, 1, 3))  # batched dot over the last axis
        c = jnp.einsum("bhsd,dhe->bhse", x, w)  # a head axis batch in the middle of the weights
        e = jnp.einsum("bhsd,bhtd->bsht", x, y)  # result in another order
        return a, c, e
    r = _rng(42)
    return fn, (_f32(r, b, h, s, d), _f32(r, b, h, s, d), _f32(r, d, h, d, scale=0.1))


def random_normal(rows: int = 1024, cols: int = 1024):
    """jax.random.normal: threefry2x32's rounds (a loop of five trips), uniform bits to
    floats, erf_inv (dropout masks, noise and initializers are made this way)."""
    import jax

    def fn(key):
        return jax.random.normal(jax.random.wrap_key_data(key), (rows, cols))
    return fn, (np.array([0, 42], np.uint32),)


def scatter_add_rows(n: int = 10000, d: int = 64, updates: int = 50000):
    """x.at[i].add(u): rows gathered by index and added back (embedding gradients)."""
    def fn(x, i, u):
        return x.at[i].add(u)
    r = _rng(43)
    return fn, (_f32(r, n, d), r.integers(0, n, updates).astype(np.int32), _f32(r, updates, d))


def mixed_int8_einsum(b: int = 8, m: int = 128, k: int = 512, n: int = 256):
    """A batched uint8 x int8 -> int32 einsum (JAX widens both operands to int32 first)."""
    import jax.numpy as jnp

    def fn(a, w):
        return jnp.einsum("bmk,bkn->bmn", a, w, preferred_element_type=jnp.int32)
    r = _rng(44)
    return fn, (r.integers(0, 256, (b, m, k)).astype(np.uint8), r.integers(-128, 128, (b, k, n)).astype(np.int8))


def bf16_conv(n: int = 8, hw: int = 32, c: int = 64):
    """A 3x3 SAME convolution of bf16 images and filters with f32 results."""
    import jax
    import jax.numpy as jnp
    import ml_dtypes

    def fn(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                            preferred_element_type=jnp.float32)
    r = _rng(45)
    return fn, (_f32(r, n, hw, hw, c).astype(ml_dtypes.bfloat16), _f32(r, 3, 3, c, c, scale=0.05).astype(ml_dtypes.bfloat16))


MORE_WORKLOADS: dict[str, Callable] = {
    "topk_sort": topk_sort,
    "argsort_rows": argsort_rows,
    "conv_backward": conv_backward,
    "conv_forms": conv_forms,
    "transposed_conv": transposed_conv,
    "rnn_scan": rnn_scan,
    "kv_decode_step": kv_decode_step,
    "mlp_big_forward": mlp_big_forward,
    "mlp_big_training": mlp_big_training,
    "int8_matmul": int8_matmul,
    "bf16_matmul": bf16_matmul,
    "cumulative": cumulative,
    "einsum_orders": einsum_orders,
    # found by a sweep of programs outside the suite (benchmarks/unseen_programs.py)
    "random_normal": random_normal,
    "scatter_add_rows": scatter_add_rows,
    "mixed_int8_einsum": mixed_int8_einsum,
    "bf16_conv": bf16_conv,
}
