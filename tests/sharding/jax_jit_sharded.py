"""axle.jax.jit with in_shardings / out_shardings on 4 host devices, against jax.jit.
Run as a script in a fresh process (XLA_FLAGS before jax is imported); prints OK lines."""
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

import axle.jax  # noqa: E402


def step(x, y, w1, w2):
    def loss(w1, w2):
        return jnp.mean((jnp.maximum(x @ w1, 0.0) @ w2 - y) ** 2)
    l, (g1, g2) = jax.value_and_grad(loss, argnums=(0, 1))(w1, w2)
    return w1 - 0.1 * g1, w2 - 0.1 * g2, l


def main(backend):
    mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    s = lambda *spec: NamedSharding(mesh, P(*spec))  # noqa: E731
    ins = (s("data", None), s("data", None), s(None, "model"), s("model", None))
    outs = (ins[2], ins[3], s())
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(sh).astype(np.float32) for sh in ((8, 16), (8, 16), (16, 32), (32, 16))]
    ours = axle.jax.jit(step, in_shardings=ins, out_shardings=outs, backend=backend)
    theirs = jax.jit(step, in_shardings=ins, out_shardings=outs)
    got = ours(*args)
    want = theirs(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)
    for g, want_sharding in zip(got, outs):  # sharded jax arrays, as jax.jit returns them
        assert isinstance(g, jax.Array) and g.sharding.is_equivalent_to(want_sharding, g.ndim), g.sharding
        assert len(g.addressable_shards) == 4
    # chain with JAX: axle's sharded outputs into jax.jit and sharded jax arrays into axle
    x_dev, y_dev = jax.device_put(args[0], ins[0]), jax.device_put(args[1], ins[1])
    want2 = theirs(x_dev, y_dev, want[0], want[1])
    got2 = theirs(x_dev, y_dev, got[0], got[1])
    got3 = ours(x_dev, y_dev, want[0], want[1])
    for a, b, c in zip(want2, got2, got3):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(np.asarray(c), np.asarray(a), rtol=2e-5, atol=2e-5)
    print("OK sharded outputs", [str(g.sharding.spec) for g in got])
    exe = ours.lower(*args).compile().executable
    kinds = [c.kind for c in exe.program.collectives]
    print("OK", backend, "collectives", kinds, "bytes", exe.program.bytes_per_step())
    got2 = ours(*[a + 1 for a in args])  # a second call on the same signature: no new compile
    np.testing.assert_allclose(np.asarray(got2[2]), np.asarray(theirs(*[a + 1 for a in args])[2]), rtol=2e-5)
    print("OK compiles", ours.compiles)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
