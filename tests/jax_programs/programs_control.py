"""Control flow, gradients and vmap."""
import jax
import jax.numpy as jnp
from jax import lax

from registry import f32, family, i32, program

family("control")


@program("control_cond", f32(), f32(5), core=True)
def _(p, x):
    return lax.cond(p > 0, lambda v: jnp.sin(v), lambda v: jnp.cos(v) * 2, x)


@program("control_switch", i32(lo=-1, hi=4), f32(5))
def _(i, x):
    return lax.switch(i, [lambda v: v + 1, lambda v: v * v, lambda v: -v], x)


@program("control_while", f32(6), core=True)
def _(x):
    def cond(c):
        return c[0] < 10

    def body(c):
        return c[0] + 1, c[1] * 0.9 + jnp.sin(c[1])
    return lax.while_loop(cond, body, (0, x))


@program("control_while_data_dependent", f32(kind="positive"))
def _(x):
    return lax.while_loop(lambda v: v < 100.0, lambda v: v * 1.7 + 0.1, x)


@program("control_fori_loop", f32(4, 4))
def _(x):
    return lax.fori_loop(0, 5, lambda i, v: v @ v * 0.1 + i, x)


@program("control_scan_cumulative", f32(12, 3), core=True)
def _(xs):
    def step(c, x):
        c = c * 0.5 + x
        return c, c.sum()
    return lax.scan(step, jnp.zeros(3), xs)


@program("control_scan_rnn", f32(10, 4), f32(4, 8), f32(8, 8))
def _(xs, wx, wh):
    def step(h, x):
        h = jnp.tanh(x @ wx + h @ wh)
        return h, h
    return lax.scan(step, jnp.zeros(8), xs)


@program("control_scan_reverse_unroll", f32(9))
def _(xs):
    return lax.scan(lambda c, x: (c + x, c * x), 0.0, xs, reverse=True, unroll=3)


@program("control_map", f32(5, 6))
def _(xs):
    return lax.map(lambda r: jnp.sort(r)[::-1] * r.max(), xs)


@program("control_nested_cond_in_scan", f32(8))
def _(xs):
    def step(c, x):
        c = lax.cond(x > 0, lambda: c + x, lambda: c * 0.5)
        return c, c
    return lax.scan(step, 1.0, xs)


@program("control_associative_scan", f32(16))
def _(x):
    return lax.associative_scan(jnp.add, x), lax.associative_scan(jnp.maximum, x)


@program("control_checkpoint_remat", f32(16))
def _(x):
    f = jax.checkpoint(lambda v: jnp.sin(v) * jnp.cos(v))
    return jax.grad(lambda v: f(v).sum())(x)


family("grad")


@program("grad_scalar_function", f32(10), core=True)
def _(x):
    return jax.grad(lambda v: jnp.sum(jnp.tanh(v) ** 2 + jnp.sin(v)))(x)


@program("grad_value_and_grad_mlp", f32(8, 4), f32(4, 16), f32(16, 2))
def _(x, w1, w2):
    def loss(w1, w2):
        return jnp.mean((jax.nn.relu(x @ w1) @ w2) ** 2)
    return jax.value_and_grad(loss, argnums=(0, 1))(w1, w2)


@program("grad_softmax_xent", f32(6, 10), i32(6, lo=0, hi=10), core=True)
def _(logits, labels):
    def loss(lg):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(lg), labels[:, None], axis=1))
    return jax.grad(loss)(logits)


@program("grad_jacfwd_jacrev", f32(4))
def _(x):
    f = lambda v: jnp.stack([v[0] * v[1], jnp.sin(v[2]), v.sum() ** 2])  # noqa: E731
    return jax.jacfwd(f)(x), jax.jacrev(f)(x)


@program("grad_hessian", f32(3))
def _(x):
    return jax.hessian(lambda v: jnp.sum(v ** 3 * v[0]))(x)


@program("grad_jvp_vjp", f32(7), f32(7))
def _(x, t):
    y, jt = jax.jvp(jnp.sin, (x,), (t,))
    _, vjp = jax.vjp(lambda v: v * jnp.exp(v), x)
    return y, jt, vjp(t)[0]


@program("grad_through_while", f32())
def _(x):
    return jax.grad(lambda v: lax.fori_loop(0, 4, lambda i, a: a * v + 1.0, 1.0))(x)


@program("grad_through_scan", f32(5), f32(3))
def _(xs, w):
    def loss(w):
        c, _ = lax.scan(lambda c, x: (jnp.tanh(c * w + x), None), jnp.zeros(3), xs)
        return c.sum()
    return jax.grad(loss)(w)


@program("grad_conv", f32(1, 2, 8, 8), f32(3, 2, 3, 3))
def _(x, w):
    return jax.grad(lambda w: jnp.sum(lax.conv_general_dilated(x, w, (1, 1), "SAME") ** 2))(w)


@program("grad_maxpool", f32(1, 6, 6, 2))
def _(x):
    def pool(v):
        return lax.reduce_window(v, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID").sum()
    return jax.grad(pool)(x)


@program("grad_custom_jvp_logsumexp", f32(4, 9))
def _(x):
    return jax.grad(lambda v: jax.nn.logsumexp(v, axis=1).sum())(x)


@program("grad_sort_gather", f32(12))
def _(x):
    return jax.grad(lambda v: jnp.sort(v)[-3:].sum() + v[jnp.argmax(v)])(x)


family("vmap")


@program("vmap_matvec", f32(6, 5, 4), f32(6, 4), core=True)
def _(m, v):
    return jax.vmap(jnp.dot)(m, v)


@program("vmap_in_axes", f32(3, 7), f32(7))
def _(a, b):
    return jax.vmap(lambda r, s: r * s + r.sum(), in_axes=(1, 0))(a, b)


@program("vmap_nested", f32(2, 3, 4))
def _(x):
    return jax.vmap(jax.vmap(lambda r: jnp.outer(r, r).trace()))(x)


@program("vmap_per_example_grad", f32(8, 3), f32(8), f32(3))
def _(xs, ys, w):
    def loss(w, x, y):
        return (jnp.dot(x, w) - y) ** 2
    return jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)


@program("vmap_cond", f32(6), f32(6))
def _(p, x):
    return jax.vmap(lambda a, b: lax.cond(a > 0, jnp.sin, jnp.cos, b))(p, x)


@program("vmap_while", f32(5, kind="positive"))
def _(x):
    return jax.vmap(lambda v: lax.while_loop(lambda u: u < 50.0, lambda u: u * 2.0, v))(x)


@program("vmap_dynamic_slice", f32(4, 10), i32(4, lo=0, hi=7))
def _(x, i):
    return jax.vmap(lambda r, s: lax.dynamic_slice(r, (s,), (3,)))(x, i)


@program("vmap_random", i32(4, lo=0, hi=1000))
def _(seeds):
    return jax.vmap(lambda s: jax.random.normal(jax.random.PRNGKey(s), (3,)))(seeds)
