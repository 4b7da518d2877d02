"""axle.jax.jit vs jax.jit: per-step time of real models and the bridge's per-call overhead.

    .venv/bin/python benchmarks/bridges_jax.py [--rounds 15] [--calls 20]

Each round times `calls` consecutive calls of each contender (dispatch included: the inputs
are jax arrays already on the device, every result is waited for with block_until_ready),
rounds alternate between the contenders (interleaved), and the figure is the median over
rounds of the per-call time, with the spread (min-max of the round medians).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _models():
    from axle.tools import bench_workloads as bw
    return {"mlp_inference (256x784-1024-1024-10)": bw.mlp_inference,
            "mlp_training step (128x784-512-512-10)": bw.mlp_training,
            "cnn_inference (16x32x32x3)": bw.cnn_inference,
            "gpt2_block (1x128x768)": bw.gpt2_block,
            "one_op (4-element add: dispatch only)": bw.one_op}


def _time(fn, calls: int) -> float:
    import jax
    start = time.perf_counter()
    for _ in range(calls):
        out = fn()
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / calls


def bench(rounds: int, calls: int, only: str = "") -> list:
    import jax
    import axle.jax
    rows = []
    for name, make in _models().items():
        if only and not any(word in name for word in only.split(",")):
            continue
        fn, args = make()
        args = jax.device_put(args)
        ours, ref = axle.jax.jit(fn), jax.jit(fn)
        jax.block_until_ready(ours(*args))
        jax.block_until_ready(ref(*args))
        entry = next(iter(ours._cache.values()))
        flat = [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]
        contenders = {"axle.jax.jit": lambda: ours(*args), "jax.jit": lambda: ref(*args),
                      "axle executable": lambda: entry.executable.execute(flat)}
        times = {k: [] for k in contenders}
        for _ in range(rounds):
            for k, f in contenders.items():
                times[k].append(_time(f, calls))
        row = {"model": name}
        for k, ts in times.items():
            row[k] = (statistics.median(ts), min(ts), max(ts))
        rows.append(row)
        print(_format_row(row), flush=True)
    return rows


def _us(t: float) -> str:
    return f"{t * 1e6:,.1f}"


def _format_row(row) -> str:
    a, j, e = row["axle.jax.jit"], row["jax.jit"], row["axle executable"]
    return (f"| {row['model']} | {_us(a[0])} ({_us(a[1])}-{_us(a[2])}) | {_us(j[0])} ({_us(j[1])}-{_us(j[2])}) | "
            f"{j[0] / a[0]:.2f}x | {_us(e[0])} | {_us(a[0] - e[0])} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--only", default="", help="comma-separated parts of model names (e.g. one_op,cnn)")
    a = ap.parse_args()
    print("| model | axle.jax.jit µs (spread) | jax.jit µs (spread) | speed-up (jax/axle) | "
          "axle executable µs | bridge overhead µs |")
    print("| --- | --- | --- | --- | --- | --- |")
    bench(a.rounds, a.calls, a.only)


if __name__ == "__main__":
    main()
