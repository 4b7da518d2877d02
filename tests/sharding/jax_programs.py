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
    # on 2 of the 4 devices (the MPI tests run them as 2 processes)
    "dp2": ((2,), ("data",), (("data", None), ("data", None), (None, None), (None, None))),
    "tp2": ((2,), ("model",), ((None, None), (None, None), (None, "model"), ("model", None))),
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
        mesh = jax.make_mesh(shape, names, devices=jax.devices()[:int(np.prod(shape))],
                             axis_types=(jax.sharding.AxisType.Auto,) * len(shape))
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
    if not gspmd:
        add_gpt_block(jax, jnp, np, NamedSharding, P, rng, saved)
        add_shard_map(jax, np, P, rng, saved)
        add_shard_map_mixed(jax, jnp, np, NamedSharding, P, rng, saved)
        add_conv_and_embedding(jax, jnp, np, NamedSharding, P, rng, saved)
        add_partial_manual(jax, jnp, np, NamedSharding, P, rng, saved)
    np.savez(out_path, **saved)


def add_gpt_block(jax, jnp, np, NamedSharding, P, rng, saved):
    # a GPT-2 style block: layernorm, causal attention (heads split by the model axis), MLP
    gb, gt, gc, nh = 4, 8, 16, 4
    hd = gc // nh

    def layernorm(x):
        m = jnp.mean(x, axis=-1, keepdims=True)
        v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5)

    def gpt(x, wq, wk, wv, wo, w1, w2):
        h = layernorm(x)
        q, k, v = [(h @ w).reshape(gb, gt, nh, hd) for w in (wq, wk, wv)]
        s = jnp.einsum("bthd,bshd->bhts", q, k) / np.sqrt(hd)
        mask = jnp.arange(gt)[:, None] >= jnp.arange(gt)[None, :]
        s = jnp.where(mask, s, -1e9)
        p = jax.nn.softmax(s, axis=-1)
        a = jnp.einsum("bhts,bshd->bthd", p, v).reshape(gb, gt, gc)
        x = x + a @ wo
        return x + jnp.tanh(layernorm(x) @ w1) @ w2

    gargs = [rng.standard_normal((gb, gt, gc)).astype(np.float32)]
    gargs += [(0.25 * rng.standard_normal(s)).astype(np.float32)
              for s in ((gc, gc), (gc, gc), (gc, gc), (gc, gc), (gc, 4 * gc), (4 * gc, gc))]
    col, row = (None, "model"), ("model", None)
    for layout, (shape, names, x_spec, w_specs) in {
            "dp": ((4,), ("data",), ("data", None, None), [(None, None)] * 6),
            "tp": ((4,), ("model",), (None, None, None), [col, col, col, row, col, row]),
            "dp_tp": ((2, 2), ("data", "model"), ("data", None, None), [col, col, col, row, col, row])}.items():
        mesh = jax.make_mesh(shape, names)
        ins = tuple(NamedSharding(mesh, P(*s)) for s in [x_spec] + w_specs)
        jitted = jax.jit(gpt, in_shardings=ins, out_shardings=ins[0], keep_unused=True)
        key = f"gpt_{layout}"
        saved[key + ".mlir"] = np.array(jitted.lower(*gargs).as_text())
        for i, a in enumerate(gargs):
            saved[f"{key}.arg{i}"] = a
        saved[f"{key}.out0"] = np.asarray(jitted(*gargs))



def add_shard_map(jax, np, P, rng, saved):
    """A shard_map (sdy.manual_computation with a psum inside): row-split x @ w by hand."""
    from jax.sharding import AxisType
    mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

    def body(x, w):
        return jax.lax.psum(x @ w, "model")

    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("data", "model"), P("model", None)),
                              out_specs=P("data", None)))
    args = [rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((16, 8)).astype(np.float32)]
    saved["shmap_dp_tp.mlir"] = np.array(f.lower(*args).as_text())
    for i, a in enumerate(args):
        saved[f"shmap_dp_tp.arg{i}"] = a
    saved["shmap_dp_tp.out0"] = np.asarray(f(*args))


def add_conv_and_embedding(jax, jnp, np, NamedSharding, P, rng, saved):
    """A convolution layer (batch over "data", filters over "model") and an embedding lookup
    (ids over "data", the table's features over "model"), then a sort and a reverse."""
    from jax.sharding import AxisType
    mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

    def conv(x, k):
        y = jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.tanh(y)

    def embed(table, ids):
        e = jnp.take(table, ids, axis=0)
        return jnp.sort(e, axis=1), e[:, ::-1, :]

    cases = {
        "conv_dp_tp": (conv, [rng.standard_normal((4, 6, 6, 4)).astype(np.float32),
                              (0.3 * rng.standard_normal((3, 3, 4, 8))).astype(np.float32)],
                       [P("data", None, None, None), P(None, None, None, "model")]),
        "embed_dp_tp": (embed, [rng.standard_normal((16, 8)).astype(np.float32),
                                rng.integers(0, 16, (4, 6)).astype(np.int32)],
                        [P(None, "model"), P("data", None)]),
    }
    for key, (fn, args, specs) in cases.items():
        jitted = jax.jit(fn, in_shardings=tuple(NamedSharding(mesh, s) for s in specs))
        saved[key + ".mlir"] = np.array(jitted.lower(*args).as_text())
        for i, a in enumerate(args):
            saved[f"{key}.arg{i}"] = a
        res = jitted(*args)
        for i, r in enumerate(res if isinstance(res, tuple) else (res,)):
            saved[f"{key}.out{i}"] = np.asarray(r)


def add_partial_manual(jax, jnp, np, NamedSharding, P, rng, saved):
    """A shard_map manual over "model" only ("data" stays automatic): a row-split matmul."""
    from jax.sharding import AxisType
    mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)

    def body(x, w):
        return jax.lax.psum(x @ w, "model")

    def f(x, w):
        y = jax.shard_map(body, mesh=mesh, in_specs=(P(None, "model"), P("model", None)), out_specs=P(),
                          axis_names={"model"})(x, w)
        return jnp.tanh(y)
    args = [rng.standard_normal((8, 16)).astype(np.float32), (0.3 * rng.standard_normal((16, 8))).astype(np.float32)]
    dev = [jax.device_put(args[0], NamedSharding(mesh, P("data", "model"))),
           jax.device_put(args[1], NamedSharding(mesh, P("model", None)))]
    jitted = jax.jit(f)
    saved["shmap_partial.mlir"] = np.array(jitted.lower(*dev).as_text())
    for i, a in enumerate(args):
        saved[f"shmap_partial.arg{i}"] = a
    saved["shmap_partial.out0"] = np.asarray(jitted(*dev))


def add_shard_map_mixed(jax, jnp, np, NamedSharding, P, rng, saved):
    """Automatic ops around a shard_map: a column-split matmul (partitioned by axle), then a
    hand-written row-split matmul with its psum (the manual region), then a loss."""
    from jax.sharding import AxisType
    mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

    def rowsplit(h, w):
        return jax.lax.psum(h @ w, "model")

    def f(x, w1, w2):
        h = jnp.tanh(x @ w1)
        y = jax.shard_map(rowsplit, mesh=mesh, in_specs=(P("data", "model"), P("model", None)),
                          out_specs=P("data", None))(h, w2)
        return jnp.mean((y - x) ** 2), y

    ins = (NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P(None, "model")),
           NamedSharding(mesh, P("model", None)))
    jitted = jax.jit(f, in_shardings=ins)
    args = [rng.standard_normal((8, 16)).astype(np.float32), (0.3 * rng.standard_normal((16, 32))).astype(np.float32),
            (0.3 * rng.standard_normal((32, 16))).astype(np.float32)]
    saved["shmap_mixed.mlir"] = np.array(jitted.lower(*args).as_text())
    for i, a in enumerate(args):
        saved[f"shmap_mixed.arg{i}"] = a
    for i, r in enumerate(jitted(*args)):
        saved[f"shmap_mixed.out{i}"] = np.asarray(r)


if __name__ == "__main__":
    main(sys.argv[1], "--gspmd" in sys.argv[2:])
