"""A fourth sweep of ordinary JAX programs outside `axle bench` (2026-11-28, fifth
session): mixture-of-experts routing, grouped-query and sliding-window attention, beam
search, vocabulary-sized losses, Sinkhorn iterations, 3-D and large-kernel convolutions,
pixel shuffles, strided slices, scatter-max, random permutations and choices, complex
elementwise math, bisection loops, big scalar reductions.

Same harness as unseen_programs.py. Usage: python benchmarks/unseen_programs_4.py [names]"""

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax
import ml_dtypes

import unseen_programs as U

R = np.random.default_rng(3)
f32 = U.f32
BF = ml_dtypes.bfloat16
P, prog = U.sweep()
def ints(lo, hi, *s, dt=np.int32): return R.integers(lo, hi, s).astype(dt)

@prog("moe_route")
def _():
    def f(x, wg, we):
        logits = x @ wg                                   # tokens x experts
        vals, idx = lax.top_k(jax.nn.softmax(logits), 2)  # top-2 experts per token
        disp = jax.nn.one_hot(idx, wg.shape[1]) * vals[..., None]   # t x 2 x e
        comb = disp.sum(1)                                # t x e
        h = jnp.einsum("td,edf->tef", x, we)              # every expert on every token
        return jnp.einsum("te,tef->tf", comb, jax.nn.gelu(h))
    return f, (f32(512, 128), f32(128, 8, scale=0.1), f32(8, 128, 256, scale=0.05))
@prog("gqa_attention")
def _():
    def f(q, k, v):  # 16 query heads share 4 key/value heads
        b, s, hq, d = q.shape
        q = q.reshape(b, s, 4, hq // 4, d)
        a = jnp.einsum("bqgrd,bkgd->bgrqk", q, k) / np.sqrt(d)
        a = jax.nn.softmax(a, axis=-1)
        return jnp.einsum("bgrqk,bkgd->bqgrd", a, v).reshape(b, s, hq, d)
    return f, (f32(2, 256, 16, 64), f32(2, 256, 4, 64), f32(2, 256, 4, 64))
@prog("sliding_window_attn")
def _():
    def f(q, k, v):
        s = q.shape[1]
        i = jnp.arange(s)
        mask = (i[:, None] >= i[None, :]) & (i[:, None] - i[None, :] < 64)
        a = jnp.einsum("bqhd,bkhd->bhqk", q, k) / 8.0
        a = jnp.where(mask, a, -1e9)
        return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(a, -1), v)
    return f, (f32(2, 512, 8, 64), f32(2, 512, 8, 64), f32(2, 512, 8, 64))
@prog("alibi_bias")
def _():
    def f(s):
        h, n = s.shape[1], s.shape[2]
        slopes = 2.0 ** (-8.0 * (jnp.arange(h) + 1) / h)
        pos = jnp.arange(n)
        bias = slopes[:, None, None] * (pos[None, None, :] - pos[None, :, None])
        return jax.nn.softmax(s + bias[None], -1)
    return f, (f32(4, 8, 256, 256),)
@prog("beam_step")
def _():
    def f(logp, scores):  # beams x vocab
        tot = scores[:, None] + jax.nn.log_softmax(logp, -1)
        v, i = lax.top_k(tot.reshape(-1), 8)
        return v, i // logp.shape[1], i % logp.shape[1]
    return f, (f32(8, 32000), f32(8))
@prog("vocab_xent_bf16")
def _():
    def loss(l, y):
        l = l.astype(jnp.float32)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(l), y[:, None], 1))
    return jax.value_and_grad(loss), (f32(256, 32000).astype(BF), ints(0, 32000, 256))
@prog("sinkhorn")
def _():
    def f(c):
        def body(_, uv):
            u, v = uv
            u = -jax.nn.logsumexp(-c / 0.1 + v[None, :], axis=1)
            v = -jax.nn.logsumexp(-c / 0.1 + u[:, None], axis=0)
            return u, v
        u, v = lax.fori_loop(0, 20, body, (jnp.zeros(c.shape[0]), jnp.zeros(c.shape[1])))
        return jnp.exp(-c / 0.1 + u[:, None] + v[None, :])
    return f, (np.abs(f32(256, 256)),)
@prog("bisection_while")
def _():
    def f(y):  # solve x^3 + x = y elementwise by bisection until converged
        def cond(s): return jnp.max(s[1] - s[0]) > 1e-5
        def body(s):
            lo, hi = s; mid = (lo + hi) / 2
            big = mid ** 3 + mid > y
            return jnp.where(big, lo, mid), jnp.where(big, mid, hi)
        lo, hi = lax.while_loop(cond, body, (jnp.full_like(y, -10.0), jnp.full_like(y, 10.0)))
        return (lo + hi) / 2
    return f, (f32(65536),)
@prog("conv3d_grad")
def _():
    def loss(x, w):
        y = lax.conv_general_dilated(x, w, (1, 1, 1), "SAME", dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))
        return jnp.sum(y ** 2)
    return jax.grad(loss, argnums=(0, 1)), (f32(2, 8, 16, 16, 16), f32(3, 3, 3, 16, 16, scale=0.05))
@prog("alexnet_stem")
def _():
    def f(x, w): return jax.nn.relu(lax.conv_general_dilated(x, w, (4, 4), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    return f, (f32(8, 227, 227, 3), f32(11, 11, 3, 64, scale=0.05))
@prog("mobilenet_block_grad")
def _():
    def loss(x, wd, wp):
        y = lax.conv_general_dilated(x, wd, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=x.shape[-1])
        y = jax.nn.relu6(y)
        y = lax.conv_general_dilated(y, wp, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum(y ** 2)
    return jax.grad(loss, argnums=(0, 1, 2)), (f32(8, 32, 32, 64), f32(3, 3, 1, 64, scale=0.1), f32(1, 1, 64, 128, scale=0.1))
@prog("pixel_shuffle")
def _():
    def f(x):  # depth to space, r = 2, then a 3x3 conv
        n, h, w, c = x.shape
        y = x.reshape(n, h, w, 2, 2, c // 4).transpose(0, 1, 3, 2, 4, 5).reshape(n, 2 * h, 2 * w, c // 4)
        return y
    return f, (f32(8, 64, 64, 64),)
@prog("upsample_conv")
def _():
    def f(x, w):
        y = jnp.repeat(jnp.repeat(x, 2, axis=1), 2, axis=2)
        return lax.conv_general_dilated(y, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return f, (f32(4, 32, 32, 64), f32(3, 3, 64, 32, scale=0.05))
@prog("strided_slices")
def _(): return (lambda x: x[:, ::2] * x[:, 1::2] + x[::2, :].sum(0)[::2]), (f32(2048, 2048),)
@prog("concat_many")
def _(): return (lambda xs: jnp.concatenate([jnp.tanh(x) for x in xs], axis=1)), ([f32(1024, 32) for _ in range(32)],)
@prog("scatter_max")
def _(): return (lambda x, i, u: x.at[i].max(u)), (f32(4096, 64), ints(0, 4096, 32768), f32(32768, 64))
@prog("scatter_mul_1d")
def _(): return (lambda x, i, u: x.at[i].multiply(u)), (f32(1 << 16), ints(0, 1 << 16, 1 << 18), 1 + 0.01 * f32(1 << 18))
@prog("vmap_dynamic_slice")
def _(): return (jax.vmap(lambda x, i: lax.dynamic_slice(x, (i, 0), (16, 64)))), (f32(512, 256, 64), ints(0, 240, 512))
@prog("random_permutation")
def _(): return (lambda k: jax.random.permutation(k, 1 << 18)), (jax.random.PRNGKey(0),)
@prog("random_choice_noreplace")
def _(): return (lambda k, p: jax.random.choice(k, 65536, (1024,), replace=False, p=p)), (jax.random.PRNGKey(1), np.full(65536, 1 / 65536, np.float32))
@prog("random_categorical")
def _(): return (lambda k, l: jax.random.categorical(k, l, axis=-1)), (jax.random.PRNGKey(2), f32(1024, 1000))
@prog("complex_elementwise")
def _():
    def f(z): return jnp.abs(jnp.exp(z) * jnp.conj(z)) + jnp.angle(z)
    return f, ((f32(1 << 20) + 1j * f32(1 << 20)).astype(np.complex64),)
@prog("atan2_hypot")
def _(): return (lambda a, b: jnp.arctan2(a, b) + jnp.hypot(a, b)), (f32(1 << 21), f32(1 << 21))
@prog("pow_float")
def _(): return (lambda x: jnp.abs(x) ** 2.5 + jnp.sqrt(jnp.abs(x)) ** 1.3), (f32(1 << 21),)
@prog("sum_all_16m")
def _(): return (lambda x: (jnp.sum(x), jnp.argmax(x))), (f32(1 << 24),)
@prog("global_pools")
def _(): return (lambda x: (jnp.max(x, (1, 2)), jnp.mean(x, (1, 2)))), (f32(32, 28, 28, 256),)
@prog("bce_logits_grad")
def _():
    def loss(l, y): return jnp.mean(jnp.maximum(l, 0) - l * y + jnp.log1p(jnp.exp(-jnp.abs(l))))
    return jax.grad(loss), (f32(4096, 512), (R.random((4096, 512)) > 0.5).astype(np.float32))
@prog("nan_handling")
def _():
    def f(x):
        x = jnp.where(x > 2.0, jnp.nan, x)
        return jnp.nansum(x, 1), jnp.nanmax(x, 1), jnp.nan_to_num(x).mean()
    return f, (f32(4096, 1024),)
@prog("tril_matmul")
def _(): return (lambda a, b: jnp.tril(a) @ b), (f32(1024, 1024), f32(1024, 1024))
@prog("broadcast_batched_mm")
def _(): return (lambda a, b: jnp.matmul(a, b)), (f32(8, 1, 64, 64), f32(1, 16, 64, 64))
@prog("cumsum_mask_positions")
def _(): return (lambda m: jnp.cumsum(m.astype(jnp.int32), axis=1) * m), ((R.random((256, 4096)) > 0.3),)
@prog("percentile")
def _(): return (lambda x: jnp.percentile(x, jnp.array([5.0, 50.0, 95.0]), axis=1)), (f32(1024, 1024),)
@prog("selu_mish")
def _(): return (lambda x: jax.nn.selu(x) + x * jnp.tanh(jax.nn.softplus(x))), (f32(1 << 21),)
@prog("remainder_int")
def _(): return (lambda a, b: (a % b) + (a // b)), (ints(-100000, 100000, 1 << 20), ints(1, 1000, 1 << 20))
@prog("eigvalsh_256")
def _(): return (lambda a: jnp.linalg.eigvalsh(a + a.T)), (f32(256, 256),)
@prog("expm")
def _(): return (lambda a: jax.scipy.linalg.expm(a)), (f32(16, 64, 64, scale=0.05),)
@prog("lstsq_pinv")
def _(): return (lambda a, b: jnp.linalg.pinv(a) @ b), (f32(256, 64), f32(256, 16))
@prog("gru_bf16_scan")
def _():
    def cell(h, x, w, u):
        z = jax.nn.sigmoid(x @ w[0] + h @ u[0]); r = jax.nn.sigmoid(x @ w[1] + h @ u[1])
        n = jnp.tanh(x @ w[2] + (r * h) @ u[2])
        return (1 - z) * n + z * h
    def f(w, u, xs, h0):
        def step(h, x):
            h = cell(h, x, w, u).astype(BF); return h, h
        return lax.scan(step, h0, xs)[1]
    return f, (f32(3, 128, 256, scale=0.05).astype(BF), f32(3, 256, 256, scale=0.05).astype(BF), f32(32, 16, 128).astype(BF), f32(16, 256).astype(BF))
@prog("scan_unrolled")
def _():
    def f(a, xs):
        def step(c, x): c = jnp.tanh(c @ a + x); return c, c.sum()
        return lax.scan(step, jnp.zeros(a.shape[0]), xs, unroll=4)
    return f, (f32(256, 256, scale=0.05), f32(128, 256))
@prog("dct_via_matmul")
def _():
    n = 64
    k = np.arange(n)
    m = np.cos(np.pi / n * (k[None, :] + 0.5) * k[:, None]).astype(np.float32)
    return (lambda x: jnp.einsum("ij,bjk,lk->bil", m, x, m)), (f32(256, 64, 64),)

if __name__ == "__main__":
    U.main(P)
