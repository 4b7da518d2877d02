"""Sharded MLP programs lowered by JAX on 4 host devices, with XLA's results.

Run as a script (in a fresh process, so that XLA_FLAGS takes effect before jax is imported):
    python tests/sharding/jax_programs.py OUT.npz [--gspmd]
writes, per program NAME: NAME.mlir (the StableHLO text), NAME.arg<i>, NAME.out<i> (XLA's
results of the same sharded jit). `--gspmd` lowers with `jax_use_shardy_partitioner=False`
(`mhlo.sharding` strings instead of Shardy).
"""
import os
import sys

B, D, H = 8, 16, 32
LR = 0.1

# the three parallelisms: mesh shape, axis names, specs of (x, y, w1, w2)
LAYOUTS = {
    "dp": ((4,), ("data",), (("data", None), ("data", None), (None, None), (None, None))),
    "tp": ((4,), ("model",), ((None, None), (None, None), (None, "model"), ("model", None))),
    "dp_tp": ((2, 2), ("data", "model"), (("data", None), ("data", None), (None, "model"), ("model", None))),
}


def main(out_path, gspmd=False):
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    if gspmd:
        jax.config.update("jax_use_shardy_partitioner", False)

    def forward(x, w1, w2):
        return jnp.maximum(x @ w1, 0.0) @ w2

    def loss(w1, w2, x, y):
        return jnp.mean((forward(x, w1, w2) - y) ** 2)

    def step(x, y, w1, w2):
        l, (g1, g2) = jax.value_and_grad(loss, argnums=(0, 1))(w1, w2, x, y)
        return w1 - LR * g1, w2 - LR * g2, l

    def fwd(x, y, w1, w2):
        return forward(x, w1, w2)

    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((B, D), (B, D), (D, H), (H, D))]
    args[2] *= 0.25
    args[3] *= 0.25
    saved = {}
    for layout, (shape, names, specs) in LAYOUTS.items():
        mesh = jax.make_mesh(shape, names)
        ins = tuple(NamedSharding(mesh, P(*s)) for s in specs)
        for name, fn, outs in (("fwd", fwd, NamedSharding(mesh, P(*specs[0]))),
                               ("step", step, (ins[2], ins[3], NamedSharding(mesh, P())))):
            jitted = jax.jit(fn, in_shardings=ins, out_shardings=outs, keep_unused=True)
            key = f"{name}_{layout}"
            saved[key + ".mlir"] = np.array(jitted.lower(*args).as_text())
            result = jitted(*args)
            result = result if isinstance(result, tuple) else (result,)
            for i, a in enumerate(args):
                saved[f"{key}.arg{i}"] = a
            for i, r in enumerate(result):
                saved[f"{key}.out{i}"] = np.asarray(r)
    np.savez(out_path, **saved)


if __name__ == "__main__":
    main(sys.argv[1], "--gspmd" in sys.argv[2:])
