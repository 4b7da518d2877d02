"""jax.nn, jax.scipy (special, signal, stats), jax.random and jnp.fft programs."""
import jax
import jax.numpy as jnp
import jax.scipy as jsp
import jax.scipy.signal  # noqa: F401
import jax.scipy.special  # noqa: F401
import jax.scipy.stats  # noqa: F401

from registry import f32, family, i32, key, program

family("nn")


@program("nn_activations", f32(64), core=True)
def _(x):
    return (jax.nn.relu(x), jax.nn.gelu(x), jax.nn.gelu(x, approximate=False), jax.nn.silu(x),
            jax.nn.sigmoid(x), jax.nn.softplus(x), jax.nn.elu(x), jax.nn.leaky_relu(x), jax.nn.selu(x))


@program("nn_more_activations", f32(64))
def _(x):
    return (jax.nn.celu(x), jax.nn.hard_tanh(x), jax.nn.relu6(x), jax.nn.hard_sigmoid(x),
            jax.nn.hard_swish(x), jax.nn.log_sigmoid(x), jax.nn.mish(x), jax.nn.squareplus(x))


@program("nn_softmax", f32(6, 33), core=True)
def _(x):
    return jax.nn.softmax(x, axis=-1), jax.nn.log_softmax(x, axis=0)


@program("nn_logsumexp", f32(5, 40))
def _(x):
    return jax.nn.logsumexp(x, axis=1), jsp.special.logsumexp(x)


@program("nn_one_hot", i32(12, lo=0, hi=10))
def _(i):
    return jax.nn.one_hot(i, 10)


@program("nn_standardize", f32(7, 24))
def _(x):
    return jax.nn.standardize(x, axis=-1)


@program("nn_glu", f32(4, 16))
def _(x):
    return jax.nn.glu(x)


@program("nn_dot_product_attention", f32(2, 9, 4, 8), f32(2, 9, 4, 8), f32(2, 9, 4, 8), core=True)
def _(q, k, v):
    return jax.nn.dot_product_attention(q, k, v, is_causal=True)


@program("nn_initializers_free_matmul", f32(8, 16), f32(16, 4))
def _(x, w):
    return jax.nn.relu(x @ w).sum(axis=0)


family("scipy")


@program("scipy_special_erf", f32(50), core=True)
def _(x):
    return jsp.special.erf(x), jsp.special.erfc(x), jsp.special.erfinv(x * 0.3)


@program("scipy_special_gamma", f32(40, kind="positive"))
def _(x):
    return jsp.special.gammaln(x), jsp.special.digamma(x), jsp.special.gamma(x)


@program("scipy_special_igamma", f32(30, kind="positive"), f32(30, kind="positive"))
def _(a, x):
    return jsp.special.gammainc(a, x), jsp.special.gammaincc(a, x)


@program("scipy_special_bessel", f32(30))
def _(x):
    return jsp.special.i0e(x), jsp.special.i1e(x), jsp.special.i0(x), jsp.special.i1(x)


@program("scipy_special_betainc", f32(20, kind="positive"), f32(20, kind="positive"), f32(20, kind="prob"))
def _(a, b, x):
    return jsp.special.betainc(a, b, x), jsp.special.betaln(a, b)


@program("scipy_special_xlogy_entr", f32(30, kind="positive"), f32(30))
def _(x, y):
    return jsp.special.xlogy(x, y * y), jsp.special.xlog1py(x, y * y), jsp.special.entr(x)


@program("scipy_special_expit_logit", f32(30, kind="prob"))
def _(p):
    return jsp.special.logit(p), jsp.special.expit(p), jsp.special.ndtri(p), jsp.special.ndtr(p)


@program("scipy_special_zeta_polygamma", f32(20, kind="positive"))
def _(x):
    return jsp.special.zeta(x + 1.5, 2.0), jsp.special.polygamma(1, x)


@program("scipy_signal_convolve", f32(30), f32(5), core=True)
def _(x, k):
    return jsp.signal.convolve(x, k), jsp.signal.correlate(x, k, mode="same")


@program("scipy_signal_convolve2d", f32(12, 12), f32(3, 3))
def _(x, k):
    return jsp.signal.convolve2d(x, k, mode="same")


@program("scipy_stats_norm", f32(40), core=True)
def _(x):
    return jsp.stats.norm.pdf(x), jsp.stats.norm.cdf(x), jsp.stats.norm.logpdf(x, 0.5, 2.0)


@program("scipy_stats_distributions", f32(40, kind="positive"))
def _(x):
    return (jsp.stats.gamma.logpdf(x, 2.0), jsp.stats.beta.logpdf(x / 4, 2.0, 3.0),
            jsp.stats.expon.cdf(x), jsp.stats.t.logpdf(x, 3.0), jsp.stats.laplace.pdf(x))


@program("scipy_stats_poisson_bernoulli", i32(20, lo=0, hi=10), f32(20, kind="prob"))
def _(k, p):
    return jsp.stats.poisson.logpmf(k, 3.0), jsp.stats.bernoulli.logpmf(k % 2, p)


@program("scipy_stats_multivariate_diag", f32(10, 3))
def _(x):
    return jsp.stats.norm.logpdf(x).sum(axis=1)


family("random")


@program("random_normal_uniform", key(), core=True)
def _(k):
    k1, k2 = jax.random.split(k)
    return jax.random.normal(k1, (8, 5)), jax.random.uniform(k2, (7,))


@program("random_bits_randint", key())
def _(k):
    return jax.random.bits(k, (10,)), jax.random.randint(k, (10,), 0, 100)


@program("random_permutation_choice", key())
def _(k):
    return jax.random.permutation(k, 16), jax.random.choice(k, 10, (4,), replace=False)


@program("random_categorical_bernoulli", key(), f32(4, 6))
def _(k, logits):
    return jax.random.categorical(k, logits), jax.random.bernoulli(k, 0.3, (12,))


@program("random_gamma_beta", key())
def _(k):
    return jax.random.gamma(k, 2.5, (6,)), jax.random.beta(k, 2.0, 3.0, (6,))


@program("random_truncated_normal_dropout", key(), f32(6, 6))
def _(k, x):
    keep = jax.random.bernoulli(k, 0.8, x.shape)
    return jax.random.truncated_normal(k, -1.0, 1.0, (5,)), jnp.where(keep, x / 0.8, 0.0)


@program("random_fold_in_split", key())
def _(k):
    ks = jax.random.split(jax.random.fold_in(k, 7), 3)
    return jax.vmap(lambda kk: jax.random.normal(kk, (2,)))(ks)


@program("random_threefry_key_array", key())
def _(k):
    return jax.random.exponential(k, (4,)), jax.random.laplace(k, (4,)), jax.random.gumbel(k, (4,))


family("fft")


@program("fft_fft_ifft", f32(16), f32(16), core=True)
def _(re, im):
    z = jax.lax.complex(re, im)
    return jnp.fft.fft(z), jnp.fft.ifft(z)


@program("fft_rfft_irfft", f32(4, 32))
def _(x):
    return jnp.fft.rfft(x), jnp.fft.irfft(jnp.fft.rfft(x), n=32)


@program("fft_fft2", f32(8, 8))
def _(x):
    return jnp.fft.fft2(x), jnp.fft.rfftn(x)


@program("fft_convolution", f32(32), f32(32))
def _(a, b):
    return jnp.fft.irfft(jnp.fft.rfft(a) * jnp.fft.rfft(b), n=32)


@program("fft_shift_freq", f32(10))
def _(x):
    return jnp.fft.fftshift(x) * jnp.fft.fftfreq(10), jnp.fft.ifftshift(x)
