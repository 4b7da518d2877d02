"""`axle bench`'s per-workload measurement (axle.tools.bench.bench_workload: axle and XLA
interleaved in one process), before (the skinny-dot kernel off: kernels_dot_skinny.ENABLED)
and after, alternating in one process so that both see the same machine load.

    .venv/bin/python benchmarks/results/decode_bench_ab.py kv_decode_step,rnn_scan,gpt2_block 3
"""
import statistics
import sys

from axle.backends.cpu import kernels_dot_skinny
from axle.tools import bench

names = sys.argv[1].split(",")
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
res = {(n, v): [] for n in names for v in ("before", "after")}
for rep in range(reps):
    for n in names:
        for v in (("before", "after") if rep % 2 == 0 else ("after", "before")):
            kernels_dot_skinny.ENABLED[0] = v == "after"
            r = bench.bench_workload(n, log=lambda *a: None)
            assert r.ok, (n, v, r.max_rel_err)
            res[(n, v)].append((r.axle_ms, r.xla_ms, r.axle_compile_s))
            print(f"{n} {v}: axle {r.axle_ms:.3f} ms xla {r.xla_ms:.3f} ms  XLA/axle {r.xla_ms / r.axle_ms:.2f}"
                  f"  compile {r.axle_compile_s:.2f} s", flush=True)
print("\n| workload | variant | axle ms median (min-max) | XLA ms median (min-max) | XLA/axle median (min-max) "
      "| axle compile s |")
print("|---|---|---|---|---|---|")
for (n, v), xs in res.items():
    a, x, q = [t[0] for t in xs], [t[1] for t in xs], [t[1] / t[0] for t in xs]
    print(f"| {n} | {v} | {statistics.median(a):.3f} ({min(a):.3f}-{max(a):.3f}) | {statistics.median(x):.3f} "
          f"({min(x):.3f}-{max(x):.3f}) | {statistics.median(q):.2f} ({min(q):.2f}-{max(q):.2f}) "
          f"| {statistics.median([t[2] for t in xs]):.2f} |")
