"""In-process A/B of two checkouts of axle on `axle bench` workloads: each checkout saves
AOT artifacts, then one process loads both and calls them alternately (rounds of 3 calls),
so that load on a shared machine hits both alike.

    # under checkout A (e.g. PYTHONPATH=/path/to/main), then under checkout B:
    python benchmarks/results/temps_ab.py save old DIR NAME...
    python benchmarks/results/temps_ab.py save new DIR NAME...
    python benchmarks/results/temps_ab.py run DIR NAME...      # [--rounds R]
"""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np


def _workload(name):
    import jax

    from axle.tools.bench_workloads import BENCH_WORKLOADS
    fn, args = BENCH_WORKLOADS[name]()
    flat = [np.ascontiguousarray(np.asarray(a)) for a in jax.tree_util.tree_leaves(args)]
    return fn, args, flat


def save(tag: str, folder: str, names: list) -> None:
    import jax

    import axle
    from axle.backends.cpu import disk_cache
    os.makedirs(folder, exist_ok=True)
    for name in names:
        fn, args, flat = _workload(name)
        with disk_cache.disabled():
            exe = axle.compile(jax.jit(fn).lower(*args).as_text())
            exe.execute(flat)
            axle.save(exe, os.path.join(folder, f"{name}.{tag}.axle"))


def run(folder: str, names: list, rounds: int) -> None:
    import axle
    for name in names:
        _, _, flat = _workload(name)
        exes = {t: axle.load(os.path.join(folder, f"{name}.{t}.axle")) for t in ("old", "new")}
        times: dict = {t: [] for t in exes}
        for e in exes.values():
            e.execute(flat)
        for _ in range(rounds):
            for t, e in exes.items():
                for _ in range(3):
                    t0 = time.perf_counter()
                    e.execute(flat)
                    times[t].append(time.perf_counter() - t0)
        med = {t: 1e3 * statistics.median(v) for t, v in times.items()}
        iqr = {t: (1e3 * np.percentile(v, 25), 1e3 * np.percentile(v, 75)) for t, v in times.items()}
        print(f"{name}: old {med['old']:.2f} ms ({iqr['old'][0]:.2f}-{iqr['old'][1]:.2f}), "
              f"new {med['new']:.2f} ms ({iqr['new'][0]:.2f}-{iqr['new'][1]:.2f}), "
              f"new/old {med['new'] / med['old']:.3f}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        rest = sys.argv[3:]
        rounds = 15
        if "--rounds" in rest:
            k = rest.index("--rounds")
            rounds = int(rest[k + 1])
            rest = rest[:k] + rest[k + 2:]
        run(sys.argv[2], rest, rounds)
