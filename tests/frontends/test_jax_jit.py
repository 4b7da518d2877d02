"""axle.jax.jit against jax.jit: the same function, the same pytree arguments, equal results."""
import logging

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle.jax  # noqa: E402
from axle.tools import bench_workloads as bw  # noqa: E402


def _close(got, ref, rtol=2e-5, atol=2e-5):
    g, gt = jax.tree_util.tree_flatten(got)
    r, rt = jax.tree_util.tree_flatten(ref)
    assert gt == rt
    for a, b in zip(g, r):
        assert isinstance(a, jax.Array)
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


MODELS = {
    "mlp": lambda: bw.mlp_inference(batch=8, sizes=(32, 64, 64, 10)),
    "cnn": lambda: bw.cnn_inference(batch=2, size=8),
    "gpt2_block": lambda: bw.transformer_block(batch=2, seq=16, d_model=64, heads=4),
    "training_step": lambda: bw.mlp_training(batch=16, sizes=(32, 64, 10)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_jax_jit(name):
    fn, args = MODELS[name]()
    ours = axle.jax.jit(fn)
    _close(ours(*args), jax.jit(fn)(*args), rtol=1e-4, atol=1e-5)
    # jax arrays in: the same compiled entry serves them
    jargs = jax.device_put(args)
    _close(ours(*jargs), jax.jit(fn)(*jargs), rtol=1e-4, atol=1e-5)
    assert ours.compiles == 1


def test_training_loop_with_value_and_grad_and_donation():
    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] - y) ** 2)

    def step(p, x, y):
        value, g = jax.value_and_grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), value

    r = np.random.default_rng(0)
    p0 = {"w1": r.standard_normal((8, 16)).astype(np.float32) * 0.3, "b1": np.zeros(16, np.float32),
          "w2": r.standard_normal((16, 1)).astype(np.float32) * 0.3}
    x = r.standard_normal((32, 8)).astype(np.float32)
    y = np.sin(x[:, :1])
    ours, ref = axle.jax.jit(step, donate_argnums=0), jax.jit(step)
    pa, pr = jax.device_put(p0), jax.device_put(p0)
    losses = []
    for _ in range(5):
        old = pa
        pa, la = ours(pa, x, y)
        pr, lr = ref(pr, x, y)
        assert all(a.is_deleted() for a in jax.tree_util.tree_leaves(old))
        np.testing.assert_allclose(la, lr, rtol=1e-5)
        losses.append(float(la))
    _close(pa, pr, rtol=1e-4, atol=1e-6)
    assert losses[-1] < losses[0]
    with pytest.raises(RuntimeError, match="deleted"):
        ours(old, x, y)
    assert ours.compiles == 1


def test_vmap_and_scan():
    def cumulative(xs, w):
        def body(c, x):
            c = jnp.tanh(c @ w + x)
            return c, c.sum()
        return jax.lax.scan(body, jnp.zeros(xs.shape[-1]), xs)

    batched = jax.vmap(cumulative, in_axes=(0, None))
    r = np.random.default_rng(1)
    xs = r.standard_normal((3, 7, 5)).astype(np.float32)
    w = r.standard_normal((5, 5)).astype(np.float32) * 0.5
    _close(axle.jax.jit(batched)(xs, w), jax.jit(batched)(xs, w))


def test_static_args_weak_types_and_kwargs():
    def f(x, n, *, scale, mode="tanh"):
        y = jnp.tanh(x) if mode == "tanh" else jnp.sin(x)
        return y * scale + n

    ours = axle.jax.jit(f, static_argnames=("mode",))
    ref = jax.jit(f, static_argnames=("mode",))
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    _close(ours(x, 2, scale=0.5), ref(x, 2, scale=0.5))
    _close(ours(x, 3, scale=1.5), ref(x, 3, scale=1.5))   # python scalars: values are not in the key
    assert ours.compiles == 1
    _close(ours(x, 3, scale=1.5, mode="sin"), ref(x, 3, scale=1.5, mode="sin"))
    assert ours.compiles == 2
    # a weakly typed python float does not promote an f32 array; an f64 numpy one would under x64
    assert ours(x, 1, scale=2.0).dtype == np.float32
    # results keep jax's weak types
    g = (lambda a, b: (a * 2, b + 1))
    got, want = axle.jax.jit(g)(3.0, x), jax.jit(g)(3.0, x)
    assert [r.weak_type for r in got] == [r.weak_type for r in want] == [True, False]
    with pytest.raises(ValueError, match="hashable"):
        axle.jax.jit(lambda x, s: x, static_argnums=1)(x, [1, 2])


def test_recompile_explained(caplog):
    def f(p, x, n):
        return p["w"].sum() * x * n

    ours = axle.jax.jit(f, static_argnums=2, explain=True)
    p, x = {"w": np.ones(3, np.float32)}, np.ones(3, np.float32)
    ours(p, x, 1)
    with caplog.at_level(logging.WARNING, logger="axle.jax"):
        ours(p, x, 2)
        assert "static argument 2 'n' changed: 1 -> 2" in ours.last_miss
        ours(p, np.ones(4, np.float32), 2)
        assert "argument 1 'x': float32[3] -> float32[4]" in ours.last_miss
        ours({"w": np.ones(3, np.int32)}, x, 2)
        assert "argument 0 'p'['w']: float32[3] -> int32[3]" in ours.last_miss
    assert "recompiling" in caplog.text
    assert ours.compiles == 4
    ours(p, x, 2)  # cached: no new compile
    assert ours.compiles == 4


def test_pytree_structure_change_explained():
    ours = axle.jax.jit(lambda t: jax.tree_util.tree_map(lambda a: a + 1, t), explain=True)
    ours({"a": np.ones(2, np.float32)})
    out = ours({"a": np.ones(2, np.float32), "b": np.zeros(2, np.float32)})
    assert "pytree structure" in ours.last_miss
    np.testing.assert_array_equal(out["b"], np.ones(2, np.float32))


def test_lower_as_text_and_compile():
    def f(x, y):
        return jnp.dot(x, y).sum()

    ours = axle.jax.jit(f)
    x, y = np.ones((3, 4), np.float32), np.ones((4, 2), np.float32)
    lowered = ours.lower(x, y)
    assert "stablehlo.dot_general" in lowered.as_text()
    assert lowered.compiler_ir().function("main") is not None
    compiled = lowered.compile()
    assert float(compiled(x, y)) == 24.0
    assert ours.compiles == 1
    ours(x, y)
    assert ours.compiles == 1  # the call found the entry compile() made
    with pytest.raises(TypeError, match="another signature"):
        compiled(np.ones((2, 4), np.float32), y)
    # lowering with abstract arguments gives the entry that concrete ones then use
    abstract = axle.jax.jit(f).lower(jax.ShapeDtypeStruct((3, 4), np.float32), jax.ShapeDtypeStruct((4, 2), np.float32))
    assert float(abstract.compile()(x, y)) == 24.0


def test_decorator_and_interpreter_backend():
    @axle.jax.jit
    def f(x):
        return jnp.exp(x) - 1

    @axle.jax.jit(backend="interpreter")
    def g(x):
        return jnp.exp(x) - 1

    x = np.linspace(0, 1, 5, dtype=np.float32)
    _close(f(x), jax.jit(lambda x: jnp.exp(x) - 1)(x))
    _close(g(x), jax.jit(lambda x: jnp.exp(x) - 1)(x))
