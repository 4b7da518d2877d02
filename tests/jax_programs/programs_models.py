"""Small models, dtypes other than f32, closed-over constants, sharding annotations,
linear algebra and other programs that exercise what JAX emits for real code."""
import jax
import jax.numpy as jnp
import jax.scipy as jsp
import jax.scipy.linalg  # noqa: F401
import numpy as np
from jax import lax

from registry import bf16, f16, f32, family, i32, program, u8, Arg

family("models")


def _layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


@program("model_mlp", f32(16, 32), f32(32, 64), f32(64), f32(64, 10), f32(10), core=True)
def _(x, w1, b1, w2, b2):
    return jax.nn.log_softmax(jax.nn.gelu(x @ w1 + b1) @ w2 + b2)


@program("model_mlp_train_step", f32(16, 8), f32(16, 1), f32(8, 32), f32(32, 1), core=True)
def _(x, y, w1, w2):
    def loss(p):
        return jnp.mean((jnp.tanh(x @ p[0]) @ p[1] - y) ** 2)
    g = jax.grad(loss)((w1, w2))
    return w1 - 0.1 * g[0], w2 - 0.1 * g[1]


@program("model_cnn", f32(2, 16, 16, 3), f32(3, 3, 3, 8), f32(8), f32(3, 3, 8, 16), f32(16 * 16, 10),
         core=True)
def _(x, k1, b1, k2, wd):
    dn = ("NHWC", "HWIO", "NHWC")
    h = jax.nn.relu(lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn) + b1)
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = jax.nn.relu(lax.conv_general_dilated(h, k2, (2, 2), "SAME", dimension_numbers=dn))
    return h.reshape(2, -1) @ wd


@program("model_resnet_block", f32(1, 8, 8, 16), f32(3, 3, 16, 16), f32(3, 3, 16, 16), f32(16), f32(16))
def _(x, k1, k2, g, b):
    dn = ("NHWC", "HWIO", "NHWC")
    h = lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn)
    m, v = h.mean((0, 1, 2)), h.var((0, 1, 2))
    h = jax.nn.relu((h - m) * lax.rsqrt(v + 1e-5) * g + b)
    h = lax.conv_general_dilated(h, k2, (1, 1), "SAME", dimension_numbers=dn)
    return jax.nn.relu(h + x)


@program("model_attention_block", f32(2, 10, 32), f32(32, 96), f32(32, 32), f32(32), f32(32), core=True)
def _(x, wqkv, wo, g, b):
    h = _layer_norm(x, g, b)
    q, k, v = jnp.split(h @ wqkv, 3, axis=-1)
    q, k, v = (t.reshape(2, 10, 4, 8).transpose(0, 2, 1, 3) for t in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(8.0)
    mask = jnp.tril(jnp.ones((10, 10), bool))
    a = jax.nn.softmax(jnp.where(mask, s, -1e9), axis=-1) @ v
    return x + a.transpose(0, 2, 1, 3).reshape(2, 10, 32) @ wo


@program("model_transformer_mlp", f32(2, 6, 16), f32(16, 64), f32(64, 16), f32(16), f32(16))
def _(x, w1, w2, g, b):
    return x + jax.nn.gelu(_layer_norm(x, g, b) @ w1) @ w2


@program("model_lstm", f32(7, 3, 5), f32(5, 32), f32(8, 32), f32(32), core=True)
def _(xs, wx, wh, b):
    def cell(carry, x):
        h, c = carry
        z = x @ wx + h @ wh + b
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h
    (h, c), hs = lax.scan(cell, (jnp.zeros((3, 8)), jnp.zeros((3, 8))), xs)
    return h, hs


@program("model_gru", f32(6, 4), f32(4, 24), f32(8, 24))
def _(xs, wx, wh):
    def cell(h, x):
        zx, zh = x @ wx, h @ wh
        r = jax.nn.sigmoid(zx[:8] + zh[:8])
        z = jax.nn.sigmoid(zx[8:16] + zh[8:16])
        n = jnp.tanh(zx[16:] + r * zh[16:])
        h = (1 - z) * n + z * h
        return h, h
    return lax.scan(cell, jnp.zeros(8), xs)


@program("model_embedding_pool", i32(4, 9, lo=0, hi=50), f32(50, 12), f32(12, 3))
def _(tokens, table, w):
    e = table[tokens]
    return jax.nn.softmax(e.mean(axis=1) @ w)


@program("model_autoencoder_loss_grad", f32(8, 20), f32(20, 6), f32(6, 20))
def _(x, we, wd):
    def loss(we, wd):
        return jnp.mean((jax.nn.sigmoid(jnp.tanh(x @ we) @ wd) - jax.nn.sigmoid(x)) ** 2)
    return jax.grad(loss, argnums=(0, 1))(we, wd)


@program("model_vae_kl_reparam", f32(5, 4), f32(5, 4), f32(5, 4))
def _(mu, logvar, eps):
    z = mu + jnp.exp(0.5 * logvar) * eps
    kl = -0.5 * jnp.sum(1 + logvar - mu ** 2 - jnp.exp(logvar), axis=1)
    return z, kl


@program("model_adam_update", f32(32), f32(32), f32(32), f32(32))
def _(p, g, m, v):
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    return p - 1e-3 * (m / 0.1) / (jnp.sqrt(v / 0.001) + 1e-8), m, v


family("dtypes")


@program("bf16_elementwise", bf16(64), bf16(64), core=True)
def _(x, y):
    return jnp.tanh(x * y + x) * y - jnp.exp(-x * x)


@program("bf16_mlp", bf16(8, 16), bf16(16, 32), bf16(32, 4), core=True)
def _(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


@program("bf16_softmax_layernorm", bf16(4, 24))
def _(x):
    return jax.nn.softmax(x, axis=-1), _layer_norm(x, jnp.bfloat16(1.0), jnp.bfloat16(0.0))


@program("bf16_mixed_f32_accumulate", bf16(6, 20), bf16(20, 5))
def _(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32), a.astype(jnp.float32).sum(axis=1)


@program("f16_elementwise", f16(64), f16(64), core=True)
def _(x, y):
    return jnp.sin(x) * y + jnp.sqrt(jnp.abs(y))


@program("f16_matmul_softmax", f16(8, 16), f16(16, 8))
def _(a, b):
    return jax.nn.softmax(a @ b)


@program("f16_conv", f16(1, 8, 8, 2), f16(3, 3, 2, 4))
def _(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


@program("int8_matmul_int32", Arg((8, 16), "int8", "int", -20, 20), Arg((16, 4), "int8", "int", -20, 20),
         core=True)
def _(a, b):
    return lax.dot(a, b, preferred_element_type=jnp.int32)


@program("uint8_image_normalize", u8(2, 8, 8, 3))
def _(img):
    x = img.astype(jnp.float32) / 255.0
    return (x - jnp.array([0.485, 0.456, 0.406])) / jnp.array([0.229, 0.224, 0.225])


@program("int_quantize_dequantize", f32(32))
def _(x):
    scale = jnp.max(jnp.abs(x)) / 127.0
    q = jnp.clip(jnp.round(x / scale), -127, 127).astype(jnp.int8)
    return q, q.astype(jnp.float32) * scale


@program("uint32_hash_mix", Arg((16,), "uint32", "int", 0, 2**31))
def _(x):
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    return x ^ (x >> 15)


@program("int16_bool_convert", Arg((20,), "int16", "int", -300, 300))
def _(x):
    return x.astype(jnp.float32) * 0.5, (x > 0).astype(jnp.int32), x.astype(jnp.uint8)


family("consts")


W_CLOSED = np.random.default_rng(5).standard_normal((16, 8)).astype(np.float32)
K_CLOSED = np.random.default_rng(6).standard_normal((3, 3, 2, 4)).astype(np.float32)


@program("closed_over_weights_matmul", f32(4, 16))
def _(x):
    return jnp.tanh(x @ W_CLOSED)


@program("closed_over_kernel_conv", f32(1, 6, 6, 2))
def _(x):
    return lax.conv_general_dilated(x, K_CLOSED, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


@program("eye_matmul", f32(7, 16), core=True)
def _(a):
    return a @ jnp.eye(16)


@program("closed_over_bias_elementwise", f32(4, 8), core=True)
def _(x):
    return x + W_CLOSED[:4, :8] * 2.0


@program("image_resize_bilinear", f32(1, 8, 8, 3))
def _(img):
    return jax.image.resize(img, (1, 16, 12, 3), "bilinear")


@program("image_resize_nearest", f32(1, 8, 8, 3))
def _(img):
    return jax.image.resize(img, (1, 4, 16, 3), "nearest")


@program("approx_max_k", f32(4, 64), core=True)
def _(x):
    return lax.approx_max_k(x, 5)


@program("export_symbolic_batch", f32(5, 4), poly="(b, 4)")
def _(x):
    return jnp.sin(x) * x.shape[0] + x.sum(axis=0)


@program("export_symbolic_matmul", f32(3, 6), f32(6, 2), poly=["(b, k)", "(k, 2)"])
def _(a, b):
    return jax.nn.relu(a @ b)


family("sharding")


def _mesh():
    from jax.sharding import Mesh
    return Mesh(np.array(jax.devices()[:1]), ("x",))


@program("sharding_constraint", f32(8, 8), core=True)
def _(x):
    from jax.sharding import NamedSharding, PartitionSpec
    y = jax.lax.with_sharding_constraint(x * 2, NamedSharding(_mesh(), PartitionSpec("x")))
    return y + 1


@program("sharding_constraint_replicated", f32(8, 8), f32(8, 8))
def _(a, b):
    from jax.sharding import NamedSharding, PartitionSpec
    return jax.lax.with_sharding_constraint(a @ b, NamedSharding(_mesh(), PartitionSpec()))


family("linalg")


def _spd(a):
    return a @ a.T + 4 * jnp.eye(a.shape[0])


@program("linalg_inv", f32(5, 5))
def _(a):
    return jnp.linalg.inv(_spd(a))


@program("linalg_solve", f32(5, 5), f32(5, 2), core=True)
def _(a, b):
    return jnp.linalg.solve(_spd(a), b)


@program("linalg_det_slogdet", f32(4, 4))
def _(a):
    return jnp.linalg.det(a), jnp.linalg.slogdet(_spd(a))


@program("linalg_cholesky", f32(6, 6))
def _(a):
    return jnp.linalg.cholesky(_spd(a))


@program("linalg_qr", f32(6, 4))
def _(a):
    q, r = jnp.linalg.qr(a)
    return q @ r


@program("linalg_svd_values", f32(6, 4))
def _(a):
    return jnp.linalg.svd(a, compute_uv=False)


@program("linalg_eigh_values", f32(5, 5))
def _(a):
    return jnp.linalg.eigvalsh(_spd(a))


@program("linalg_lstsq_pinv", f32(8, 3), f32(8))
def _(a, b):
    return jnp.linalg.pinv(a) @ b


@program("linalg_norm_ord2", f32(5, 5))
def _(a):
    return jnp.linalg.norm(a, ord=2)


@program("linalg_scipy_lu_solve", f32(5, 5), f32(5))
def _(a, b):
    return jsp.linalg.lu_solve(jsp.linalg.lu_factor(_spd(a)), b)


@program("linalg_expm", f32(4, 4))
def _(a):
    return jsp.linalg.expm(a * 0.3)


@program("linalg_inv_grad", f32(4, 4))
def _(a):
    return jax.grad(lambda m: jnp.linalg.inv(_spd(m)).sum())(a)


@program("linalg_triangular_solve", f32(5, 5), f32(5, 3))
def _(a, b):
    return jsp.linalg.solve_triangular(jnp.tril(a) + 5 * jnp.eye(5), b, lower=True)


@program("linalg_norms_without_lapack", f32(5, 6), core=True)
def _(a):
    return jnp.linalg.norm(a), jnp.linalg.norm(a, ord=1), jnp.linalg.norm(a, ord=jnp.inf), jnp.trace(a[:, :5])
