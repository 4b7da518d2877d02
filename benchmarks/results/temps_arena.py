"""Peak temporary memory of `axle bench` workloads: axle's arena (buffer assignment) and
XLA's memory_analysis().temp_size_in_bytes, the figures `axle bench` reports, without the
timing runs. Optionally writes each program's plans (fusion plan, schedule, buffer
assignment) to a folder, and checks the outputs against jax.jit.

    .venv/bin/python benchmarks/results/temps_arena.py [--plans DIR] [--check] [NAME ...]
"""
from __future__ import annotations

import argparse
import os

import numpy as np


def main() -> None:
    import jax

    import axle
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu import executable as cpu_exe
    from axle.tools.bench_workloads import BENCH_WORKLOADS
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--plans", help="write NAME.plans.txt here")
    ap.add_argument("--check", action="store_true", help="compare the outputs with jax.jit")
    a = ap.parse_args()
    for name in a.names or list(BENCH_WORKLOADS):
        fn, args = BENCH_WORKLOADS[name]()
        low = jax.jit(fn).lower(*args)
        xla = low.compile().memory_analysis().temp_size_in_bytes
        cpu_exe.clear_memory_cache()
        with disk_cache.disabled():
            exe = axle.compile(low.as_text(), backend="cpu")
        prog = exe.program
        line = f"{name}: axle {prog.arena_bytes} B, XLA {xla} B"
        if a.check:
            flat = [np.ascontiguousarray(np.asarray(x)) for x in jax.tree_util.tree_leaves(args)]
            got = exe.execute(flat)
            want = [np.asarray(x) for x in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]
            err = max((float(np.max(np.abs(np.asarray(g, np.float64) - w)) / (np.max(np.abs(w)) + 1e-30))
                       if w.size else 0.0) for g, w in zip(got, want))
            line += f", max rel err {err:.1e}"
        print(line, flush=True)
        if a.plans:
            os.makedirs(a.plans, exist_ok=True)
            with open(os.path.join(a.plans, f"{name}.plans.txt"), "w", encoding="utf-8") as fh:
                fh.write(str(prog.plans))


if __name__ == "__main__":
    main()
