"""A third sweep of ordinary JAX programs outside `axle bench` (2026-11-28, fourth
session): vmapped models, distances, variadic reductions, 2-D FFTs, image dtype
conversions, random sampling, scatter-set, segment max, tiling and repeats.

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_3.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax
import ml_dtypes

import unseen_programs as U

R = np.random.default_rng(2)
f32 = U.f32
BF = ml_dtypes.bfloat16
P, prog = U.sweep()
def ints(lo, hi, *s, dt=np.int32): return R.integers(lo, hi, s).astype(dt)

@prog("vmap_mlp")
def _():
    def mlp(p, x): return jnp.tanh(x @ p[0]) @ p[1]
    def f(p, xs): return jax.vmap(mlp, in_axes=(None, 0))(p, xs)
    return f, ([f32(64, 128, scale=0.1), f32(128, 10, scale=0.1)], f32(32, 256, 64))
@prog("per_example_mlp")
def _():
    def mlp(p, x): return jnp.tanh(x @ p[0]) @ p[1]
    return (lambda ps, xs: jax.vmap(mlp)(ps, xs)), ([f32(64, 32, 64, scale=0.1), f32(64, 64, 16, scale=0.1)], f32(64, 128, 32))
@prog("cosine_sim")
def _():
    def f(a, b):
        a = a / jnp.linalg.norm(a, axis=1, keepdims=True); b = b / jnp.linalg.norm(b, axis=1, keepdims=True)
        return a @ b.T
    return f, (f32(1024, 256), f32(2048, 256))
@prog("l1_pairwise")
def _(): return (lambda a, b: jnp.abs(a[:, None, :] - b[None, :, :]).sum(-1)), (f32(256, 64), f32(512, 64))
@prog("xent_int_labels_grad")
def _():
    def loss(l, y): return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(l), y[:, None], 1))
    return jax.grad(loss), (f32(256, 10000), ints(0, 10000, 256))
@prog("einsum_three")
def _(): return (lambda a, b, c: jnp.einsum("ij,jk,kl->il", a, b, c)), (f32(256, 512), f32(512, 64), f32(64, 512))
@prog("conv_bn_relu_infer")
def _():
    def f(x, w, g, b, m, v):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jax.nn.relu((y - m) * lax.rsqrt(v + 1e-5) * g + b)
    return f, (f32(8, 56, 56, 64), f32(3, 3, 64, 64, scale=0.05), f32(64), f32(64), f32(64), np.abs(f32(64)) + 0.5)
@prog("max_and_argmax")
def _(): return (lambda x: (jnp.max(x, -1), jnp.argmax(x, -1))), (f32(2048, 1000),)
@prog("lax_map_chunks")
def _(): return (lambda x, w: lax.map(lambda c: jnp.tanh(c @ w), x)), (f32(16, 128, 256), f32(256, 256, scale=0.05))
@prog("fft2_complex")
def _(): return (lambda x: jnp.fft.fft2(x)), ((f32(16, 256, 256) + 1j * f32(16, 256, 256)).astype(np.complex64),)
@prog("irfft_signal")
def _(): return (lambda x: jnp.fft.irfft(jnp.fft.rfft(x) * 0.5)), (f32(128, 8192),)
@prog("convolve_1d")
def _(): return (lambda x, k: jnp.convolve(x, k, mode="same")), (f32(1 << 16), f32(63))
@prog("u8_image_normalize")
def _():
    def f(img, mean, std): return ((img.astype(jnp.float32) / 255.0 - mean) / std).transpose(0, 3, 1, 2)
    return f, (ints(0, 255, 32, 224, 224, 3, dt=np.uint8), np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32))
@prog("f32_to_u8")
def _(): return (lambda x: jnp.clip(jnp.round(x * 255.0), 0, 255).astype(jnp.uint8)), (np.abs(f32(32, 224, 224, 3)) * 0.3,)
@prog("bit_ops_u8")
def _(): return (lambda a, b: ((a & b) ^ (a >> 2)) | (b << 1)), (ints(0, 255, 4096, 1024, dt=np.uint8), ints(0, 255, 4096, 1024, dt=np.uint8))
@prog("argsort_axis0")
def _(): return (lambda x: jnp.argsort(x, axis=0)), (f32(4096, 64),)
@prog("topk_bf16")
def _(): return (lambda x: lax.top_k(x, 8)), (f32(512, 4096).astype(BF),)
@prog("one_hot_embed")
def _(): return (lambda i, t: jax.nn.one_hot(i, 2048) @ t), (ints(0, 2048, 512), f32(2048, 256))
@prog("polyval")
def _(): return (lambda c, x: jnp.polyval(c, x)), (f32(12), f32(1 << 20))
@prog("matrix_power")
def _(): return (lambda a: jnp.linalg.matrix_power(a, 12)), (f32(64, 64, 64, scale=0.2),)
@prog("logsumexp_bf16")
def _(): return (lambda x: jax.nn.logsumexp(x, axis=-1)), (f32(2048, 2048).astype(BF),)
@prog("random_uniform_bernoulli")
def _():
    def f(k):
        key = jax.random.wrap_key_data(k)
        a, b = jax.random.split(key)
        return jax.random.uniform(a, (1024, 1024)) * jax.random.bernoulli(b, 0.3, (1024, 1024))
    return f, (np.array([3, 4], np.uint32),)
@prog("segment_max")
def _(): return (lambda d, s: jax.ops.segment_max(d, s, num_segments=512)), (f32(100000, 32), ints(0, 512, 100000))
@prog("tile_repeat")
def _(): return (lambda x: jnp.tile(x, (4, 2)) + jnp.repeat(x, 2, axis=1).repeat(4, axis=0)), (f32(512, 512),)
@prog("gather_2d_index")
def _(): return (lambda x, i, j: x[i, j]), (f32(2048, 2048), ints(0, 2048, 1 << 18), ints(0, 2048, 1 << 18))
@prog("scatter_set")
def _(): return (lambda x, i, u: x.at[i].set(u)), (f32(100000, 16), R.permutation(100000)[:50000].astype(np.int32), f32(50000, 16))
@prog("sort_rows_axis0_int")
def _(): return (lambda x: jnp.sort(x, axis=0)), (ints(-1000, 1000, 8192, 32),)
@prog("dropout_attention")
def _():
    def f(q, k, v, key):
        s = jax.nn.softmax(jnp.einsum("bqd,bkd->bqk", q, k) / 8.0)
        keep = jax.random.bernoulli(jax.random.wrap_key_data(key), 0.9, s.shape)
        return jnp.einsum("bqk,bkd->bqd", jnp.where(keep, s / 0.9, 0.0), v)
    return f, (f32(16, 256, 64), f32(16, 256, 64), f32(16, 256, 64), np.array([5, 6], np.uint32))
@prog("depthwise_nchw")
def _():
    def f(x, w): return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"), feature_group_count=64)
    return f, (f32(16, 64, 56, 56), f32(64, 1, 3, 3, scale=0.1))
@prog("smooth_rows_1d")
def _():
    def f(x, k): return lax.conv_general_dilated(x[:, None, :], k[None, None, :], (1,), "SAME")[:, 0, :]
    return f, (f32(256, 4096), f32(31))
@prog("huber_grad")
def _():
    def loss(p, y): return jnp.mean(jnp.where(jnp.abs(p - y) < 1.0, 0.5 * (p - y) ** 2, jnp.abs(p - y) - 0.5))
    return jax.grad(loss), (f32(1 << 20), f32(1 << 20))
@prog("softplus_chain")
def _(): return (lambda x: jax.nn.softplus(x) * jax.nn.silu(x) + jax.nn.mish(x) if hasattr(jax.nn, "mish") else jax.nn.softplus(x) * jax.nn.silu(x)), (f32(2048, 2048),)

if __name__ == "__main__":
    U.main(P)
