"""Time per step of a sharded MLP training step and a GPT-2 style block on 1, 2 and 4 devices
of this machine: axle's partitioner + CPU backend (one thread per device, native
shared-memory collectives) against XLA (jax.jit with the same NamedShardings), interleaved in
one process; and the bytes axle's partitioned program communicates against the analytical
minimum (MLP). `--save DIR` also writes each program and its arguments for the MPI runs
(`mpiexec -n N python -m axle.sharding.mpi DIR/<name>.mlir DIR/<name>.npz out.npz --time 9`).

    .venv/bin/python benchmarks/results/gspmd_bench.py [--batch 256 --dim 512 --hidden 1024 --reps 15]
"""
import argparse
import os
import statistics
import time

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

from axle.ir import parse_module  # noqa: E402
from axle.sharding import partition  # noqa: E402
from axle.sharding.run import PartitionedRunner  # noqa: E402


def step(x, y, w1, w2):
    def loss(w1, w2):
        return jnp.mean((jnp.maximum(x @ w1, 0.0) @ w2 - y) ** 2)
    l, (g1, g2) = jax.value_and_grad(loss, argnums=(0, 1))(w1, w2)
    return w1 - 0.1 * g1, w2 - 0.1 * g2, l


def gpt_block(b=8, t=128, c=256, nh=8):
    hd = c // nh

    def layernorm(x):
        m = jnp.mean(x, axis=-1, keepdims=True)
        v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5)

    def gpt(x, wq, wk, wv, wo, w1, w2):
        h = layernorm(x)
        q, k, v = [(h @ w).reshape(b, t, nh, hd) for w in (wq, wk, wv)]
        s = jnp.einsum("bthd,bshd->bhts", q, k) / np.sqrt(hd)
        mask = jnp.arange(t)[:, None] >= jnp.arange(t)[None, :]
        p = jax.nn.softmax(jnp.where(mask, s, -1e9), axis=-1)
        a = jnp.einsum("bhts,bshd->bthd", p, v).reshape(b, t, c)
        x = x + a @ wo
        return x + jnp.tanh(layernorm(x) @ w1) @ w2
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((b, t, c)).astype(np.float32)]
    args += [(0.05 * rng.standard_normal(s)).astype(np.float32)
             for s in ((c, c), (c, c), (c, c), (c, c), (c, 4 * c), (4 * c, c))]
    return gpt, args


def gpt_layouts(n):
    col, row = (None, "model"), ("model", None)
    if n == 1:
        return {"1 device": ((1,), ("data",), [("data",)] + [()] * 6)}
    out = {f"dp {n}": ((n,), ("data",), [("data",)] + [()] * 6),
           f"tp {n}": ((n,), ("model",), [()] + [col, col, col, row, col, row])}
    if n == 4:
        out["dp 2 x tp 2"] = ((2, 2), ("data", "model"), [("data",)] + [col, col, col, row, col, row])
    return out


def layouts(n):
    if n == 1:
        return {"1 device": ((1,), ("data",), [("data",), ("data",), (), ()])}
    out = {f"dp {n}": ((n,), ("data",), [("data",), ("data",), (), ()]),
           f"tp {n}": ((n,), ("model",), [(), (), (None, "model"), ("model", None)])}
    if n == 4:
        out["dp 2 x tp 2"] = ((2, 2), ("data", "model"), [("data",), ("data",), (None, "model"), ("model", None)])
    return out


def minimum_bytes(name, n, b, d, h):
    params = 2 * d * h * 4
    ar = lambda s, g: n * 2 * (g - 1) * s // g  # noqa: E731  all_reduce, ring, on n devices
    if name.startswith("dp 2 x"):
        return ar(b // 2 * d * 4, 2) + ar(params // 2, 2) + ar(4, 2)
    if name.startswith("dp"):
        return ar(params, n) + ar(4, n)
    if name.startswith("tp"):
        return ar(b * d * 4, n)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=15)
    a, _ = ap.parse_known_args()
    b, d, h = a.batch, a.dim, a.hidden
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((b, d), (b, d), (d, h), (h, d))]
    args[2] *= 0.05
    args[3] *= 0.05
    ap.add_argument("--save", default=None, help="write <name>.mlir / <name>.npz here for MPI runs")
    ap.add_argument("--only", default=None, choices=(None, "mlp", "gpt"))
    a = ap.parse_args()
    import subprocess
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"{os.cpu_count()} cores; median [min-max] of {a.reps} interleaved steps, ms")
    gpt, gargs = gpt_block()
    benches = []
    if a.only in (None, "mlp"):
        benches.append((f"MLP training step B={b} D={d} H={h}", step, args, layouts,
                        lambda ins, mesh: (ins[2], ins[3], NamedSharding(mesh, P()))))
    if a.only in (None, "gpt"):
        benches.append(("GPT-2 block B=8 T=128 C=256 8 heads (forward)", gpt, gargs, gpt_layouts,
                        lambda ins, mesh: ins[0]))
    for title, fn, fargs, lay, outs_of in benches:
        print(f"\n{title}\n")
        print("| layout | axle ms/step | XLA ms/step | axle bytes/step | minimum | max abs diff vs XLA |")
        print("| --- | --- | --- | --- | --- | --- |")
        for n in (1, 2, 4):
            for name, (shape, names, specs) in lay(n).items():
                mesh = jax.make_mesh(shape, names, devices=jax.devices()[:n],
                                     axis_types=(jax.sharding.AxisType.Auto,) * len(shape))
                ins = tuple(NamedSharding(mesh, P(*s)) for s in specs)
                jitted = jax.jit(fn, in_shardings=ins, out_shardings=outs_of(ins, mesh), keep_unused=True)
                text = jitted.lower(*fargs).as_text()
                if a.save:
                    key = ("mlp_" if fn is step else "gpt_") + name.replace(" ", "")
                    os.makedirs(a.save, exist_ok=True)
                    with open(os.path.join(a.save, key + ".mlir"), "w") as fh:
                        fh.write(text)
                    np.savez(os.path.join(a.save, key + ".npz"), **{f"arg{i}": x for i, x in enumerate(fargs)})
                prog = partition(parse_module(text))
                runner = PartitionedRunner(prog, "cpu")
                dev_args = [jax.device_put(x, s) for x, s in zip(fargs, ins)]
                ours = runner(*fargs)
                theirs = jitted(*dev_args)
                theirs = [np.asarray(t) for t in (theirs if isinstance(theirs, (tuple, list)) else [theirs])]
                diff = max(float(np.abs(o - t).max()) for o, t in zip(ours, theirs))
                ta, tx = [], []
                for _ in range(a.reps):  # interleaved
                    t0 = time.perf_counter()
                    runner(*fargs)
                    ta.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    jax.block_until_ready(jitted(*dev_args))
                    tx.append(time.perf_counter() - t0)
                fmt = lambda t: f"{statistics.median(t) * 1e3:.1f} [{min(t) * 1e3:.1f}-{max(t) * 1e3:.1f}]"  # noqa: E731
                minimum = minimum_bytes(name, n, b, d, h) if fn is step else "-"
                print(f"| {name} | {fmt(ta)} | {fmt(tx)} | {prog.bytes_per_step()} | {minimum} | {diff:.1e} |",
                      flush=True)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
