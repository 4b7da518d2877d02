"""jax.numpy and jax.lax programs."""
import jax
import jax.numpy as jnp
from jax import lax

from registry import boolean, f32, family, i32, program

family("jnp")


@program("jnp_add_mul", f32(8, 16), f32(8, 16), core=True)
def _(x, y):
    return x * y + x - y / (1.0 + jnp.abs(y))


@program("jnp_broadcast_ops", f32(8, 1, 16), f32(4, 1))
def _(x, y):
    return jnp.maximum(x, y) - jnp.minimum(x, 2 * y)


@program("jnp_where", f32(10, 10), f32(10, 10))
def _(x, y):
    return jnp.where(x > y, x, y * 2)


@program("jnp_clip", f32(64), core=True)
def _(x):
    return jnp.clip(x, -0.5, 0.75)


@program("jnp_sum_axes", f32(6, 7, 8))
def _(x):
    return x.sum(axis=(0, 2)), x.sum(), x.mean(axis=1)


@program("jnp_max_min_reduce", f32(9, 13), core=True)
def _(x):
    return x.max(axis=0), x.min(axis=1), x.argmax(axis=1), x.argmin(axis=0)


@program("jnp_prod_cumsum", f32(5, 6))
def _(x):
    return jnp.prod(x, axis=1), jnp.cumsum(x, axis=0), jnp.cumprod(x * 0.5, axis=1)


@program("jnp_var_std", f32(20, 30))
def _(x):
    return x.var(axis=0), x.std(axis=1)


@program("jnp_matmul", f32(16, 32), f32(32, 8), core=True)
def _(x, y):
    return x @ y


@program("jnp_batched_matmul", f32(4, 8, 16), f32(4, 16, 5))
def _(x, y):
    return jnp.matmul(x, y)


@program("jnp_einsum_attention", f32(2, 6, 8), f32(2, 7, 8), core=True)
def _(q, k):
    return jnp.einsum("bqd,bkd->bqk", q, k)


@program("jnp_einsum_outer", f32(5), f32(7))
def _(a, b):
    return jnp.einsum("i,j->ij", a, b)


@program("jnp_tensordot", f32(3, 4, 5), f32(4, 5, 6))
def _(a, b):
    return jnp.tensordot(a, b, axes=2)


@program("jnp_dot_vec", f32(40), f32(40))
def _(a, b):
    return jnp.dot(a, b), jnp.vdot(a, b), jnp.inner(a, b)


@program("jnp_transpose_reshape", f32(4, 6, 8), core=True)
def _(x):
    return x.transpose(2, 0, 1).reshape(8, 24) + 1


@program("jnp_concat_stack", f32(3, 4), f32(3, 4))
def _(a, b):
    return jnp.concatenate([a, b], axis=1), jnp.stack([a, b]), jnp.hstack([a, b])


@program("jnp_split", f32(12, 6))
def _(x):
    a, b, c = jnp.split(x, 3)
    return a * b + c


@program("jnp_pad_modes", f32(5, 6))
def _(x):
    return jnp.pad(x, ((1, 2), (0, 3))), jnp.pad(x, 2, mode="reflect"), jnp.pad(x, 1, mode="edge")


@program("jnp_roll_flip", f32(7, 9))
def _(x):
    return jnp.roll(x, 3, axis=1), jnp.flip(x, axis=0), jnp.rot90(x)


@program("jnp_tile_repeat", f32(3, 4))
def _(x):
    return jnp.tile(x, (2, 3)), jnp.repeat(x, 2, axis=0)


@program("jnp_sort_argsort", f32(6, 17), core=True)
def _(x):
    return jnp.sort(x, axis=1), jnp.argsort(x, axis=0)


@program("jnp_take_index", f32(10, 8), i32(6, lo=0, hi=10))
def _(x, idx):
    return x[idx], jnp.take(x, idx, axis=0, mode="clip")


@program("jnp_fancy_update", f32(10, 8), i32(4, lo=0, hi=10), f32(4, 8), core=True)
def _(x, idx, u):
    return x.at[idx].add(u), x.at[idx].set(u), x.at[2:5, 1].multiply(3.0)


@program("jnp_take_along_axis", f32(5, 9), i32(5, 3, lo=0, hi=9))
def _(x, idx):
    return jnp.take_along_axis(x, idx, axis=1)


@program("jnp_dynamic_index", f32(12, 5), i32(lo=0, hi=12))
def _(x, i):
    return x[i], lax.dynamic_slice_in_dim(x, i, 3)


@program("jnp_trig", f32(50))
def _(x):
    return jnp.sin(x), jnp.cos(x), jnp.tan(x * 0.3), jnp.arctan2(x, x + 2)


@program("jnp_exp_log", f32(50, kind="positive"), core=True)
def _(x):
    return jnp.exp(x), jnp.log(x), jnp.log1p(x), jnp.expm1(-x), jnp.sqrt(x), jnp.power(x, 1.7)


@program("jnp_hyperbolic", f32(40, kind="unit"))
def _(x):
    return jnp.sinh(x), jnp.cosh(x), jnp.tanh(x), jnp.arcsinh(x), jnp.arctanh(x)


@program("jnp_rounding", f32(30))
def _(x):
    y = x * 3.3
    return jnp.floor(y), jnp.ceil(y), jnp.round(y), jnp.trunc(y), jnp.sign(y)


@program("jnp_logaddexp_hypot", f32(30), f32(30))
def _(x, y):
    return jnp.logaddexp(x, y), jnp.hypot(x, y), jnp.copysign(x, y)


@program("jnp_int_ops", i32(20, lo=-50, hi=50), i32(20, lo=1, hi=9), core=True)
def _(a, b):
    return a // b, a % b, a * b, jnp.abs(a), a << 2, a >> 1, a & b, a | b, a ^ b


@program("jnp_bool_logic", boolean(16), boolean(16))
def _(a, b):
    return a & b, a | ~b, jnp.logical_xor(a, b), jnp.any(a), jnp.all(b)


@program("jnp_isfinite_nan", f32(20))
def _(x):
    y = jnp.log(x)  # NaN for negatives
    return jnp.isnan(y), jnp.isfinite(y), jnp.nan_to_num(y), jnp.nansum(y)


@program("jnp_linspace_arange", f32(10))
def _(x):
    return x + jnp.linspace(0, 1, 10), x * jnp.arange(10)


@program("jnp_tri_masks", f32(8, 8))
def _(x):
    return jnp.tril(x), jnp.triu(x, 1), jnp.where(jnp.tri(8, dtype=bool), x, -jnp.inf).max(axis=1)


@program("jnp_outer_ops", f32(6), f32(7))
def _(a, b):
    return jnp.outer(a, b), jnp.subtract.outer(a, b), jnp.kron(a[:2], b[:3])


@program("jnp_cross_norm", f32(10, 3), f32(10, 3))
def _(a, b):
    return jnp.cross(a, b), jnp.linalg.norm(a, axis=1), jnp.linalg.norm(b)


@program("jnp_diff_convolve", f32(20), f32(5))
def _(x, k):
    return jnp.diff(x), jnp.convolve(x, k), jnp.correlate(x, k, mode="same")


@program("jnp_histogram_like", f32(64))
def _(x):
    bins = jnp.linspace(-3, 3, 9)
    return jnp.searchsorted(bins, x), jnp.digitize(x, bins)


@program("jnp_unique_size", i32(30, lo=0, hi=8))
def _(x):
    return jnp.unique(x, size=8, fill_value=-1)


@program("jnp_where_cumulative", f32(5, 7))
def _(x):
    return jnp.cumsum(jnp.where(x > 0, x, 0.0), axis=1), jnp.maximum.accumulate(x, axis=1)


@program("jnp_meshgrid_polyval", f32(8), f32(9))
def _(a, b):
    xx, yy = jnp.meshgrid(a, b)
    return jnp.polyval(jnp.array([1.0, -2.0, 0.5]), xx * yy)


@program("jnp_complex", f32(12), f32(12))
def _(re, im):
    z = lax.complex(re, im)
    w = z * z + jnp.conj(z) / (1 + jnp.abs(z))
    return jnp.real(w), jnp.imag(w), jnp.abs(jnp.exp(z * 0.3)), jnp.angle(z)


family("lax")


@program("lax_conv_nchw", f32(2, 3, 12, 12), f32(8, 3, 3, 3), core=True)
def _(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME")


@program("lax_conv_strided_dilated", f32(1, 4, 15, 15), f32(6, 4, 3, 3))
def _(x, w):
    return lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (2, 0)), rhs_dilation=(2, 1))


@program("lax_conv_nhwc_groups", f32(2, 9, 9, 6), f32(3, 3, 3, 4))
def _(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=2)


@program("lax_conv_1d", f32(3, 5, 20), f32(7, 5, 4))
def _(x, w):
    return lax.conv_general_dilated(x, w, (2,), "SAME")


@program("lax_conv_transpose", f32(1, 8, 8, 3), f32(3, 3, 3, 5))
def _(x, w):
    return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


@program("lax_reduce_window_pool", f32(2, 10, 10, 3), core=True)
def _(x):
    mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    avg = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4
    return mx, avg


@program("lax_dot_general_dims", f32(3, 4, 5), f32(5, 3, 6))
def _(a, b):
    return lax.dot_general(a, b, (((2,), (0,)), ((0,), (1,))))


@program("lax_dot_preferred", f32(6, 7), f32(7, 8))
def _(a, b):
    return lax.dot(a, b, precision=lax.Precision.HIGHEST, preferred_element_type=jnp.float32)


@program("lax_scan_like_cumsum", f32(4, 50))
def _(x):
    return lax.cumsum(x, axis=1), lax.cummax(x, axis=1), lax.cumlogsumexp(x, axis=1)


@program("lax_gather_scatter", f32(8, 6), i32(5, 1, lo=0, hi=8), f32(5, 6), core=True)
def _(x, idx, upd):
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    s = lax.scatter_add(x, idx, upd, dn)
    m = lax.scatter_max(x, idx, upd, dn)
    return s, m


@program("lax_select_n_clamp", i32(10, lo=0, hi=3), f32(10), f32(10), f32(10))
def _(w, a, b, c):
    return lax.select_n(w, a, b, c), lax.clamp(-0.5, a, 0.5)


@program("lax_bitcast_convert", f32(10))
def _(x):
    bits = lax.bitcast_convert_type(x, jnp.int32)
    return bits, lax.bitcast_convert_type(bits ^ 1, jnp.float32), lax.convert_element_type(x * 100, jnp.int8)


@program("lax_integer_pow_rsqrt", f32(20, kind="positive"))
def _(x):
    return lax.integer_pow(x, 3), lax.rsqrt(x), lax.cbrt(x), lax.logistic(x)


@program("lax_top_k", f32(5, 20), core=True)
def _(x):
    return lax.top_k(x, 4)


@program("lax_population_count_clz", i32(16, lo=-1000, hi=1000))
def _(x):
    return lax.population_count(x), lax.clz(x), lax.shift_right_logical(x, 3)


@program("lax_reduce_precision_nextafter", f32(16))
def _(x):
    return lax.reduce_precision(x, 5, 10), lax.nextafter(x, jnp.zeros_like(x))


@program("lax_iota_broadcast", f32(4, 5))
def _(x):
    return x + lax.broadcasted_iota(jnp.float32, (4, 5), 1) * lax.broadcasted_iota(jnp.float32, (4, 5), 0)


@program("lax_rev_pad_interior", f32(4, 6))
def _(x):
    return lax.rev(x, (0,)), lax.pad(x, 0.0, ((1, 0, 1), (0, 2, 2)))


@program("lax_sort_multi", f32(30), i32(30))
def _(k, v):
    return lax.sort((k, v), num_keys=1)
