"""Cold compile per `axle bench` workload, XLA and axle interleaved in one process, with CPU
times and the critical path of a compile split over threads (figures in compile.md).

    python benchmarks/results/compile_time.py t1,t2 "" 3 out.json     # this checkout
    PYTHONPATH=/path/to/other/checkout python ... main "" 3 main.json  # another axle, as it is

Configurations: `tN` sets --cpu_compile_threads=N; `main` changes nothing (an axle without the
flag). Per workload and configuration: the median over the repeats of the wall time, the
process CPU time (getrusage: every thread) and the critical path (the CPU time outside the
LLVM parts plus the longest part's thread CPU time: the wall time on free cores). XLA:
`lowered.compile()` after `jax.clear_caches()`; axle: `axle.compile` with both caches off.
"""
import json
import math
import os
import resource
import statistics
import sys
import time

import jax

import axle
from axle.backends.cpu import disk_cache, llvm_env
from axle.backends.cpu import executable as cpu_exe
from axle.tools.bench_workloads import BENCH_WORKLOADS

PARTS: list = []
if hasattr(llvm_env, "_compile_alone"):
    _alone = llvm_env._compile_alone

    def _timed(text, opt, *rest):
        c0 = time.thread_time()
        try:
            return _alone(text, opt, *rest)
        finally:
            PARTS.append(time.thread_time() - c0)
    llvm_env._compile_alone = _timed


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _gm(v) -> float:
    return math.exp(sum(map(math.log, v)) / len(v))


def main(configs, names, reps, path):
    print("axle from", axle.__file__, file=sys.stderr)
    out = {}
    for name in names:
        fn, args = BENCH_WORKLOADS[name]()
        text = jax.jit(fn).lower(*args).as_text()
        rows = {k: [] for k in ["xla"] + configs}
        for _ in range(reps):
            jax.clear_caches()
            low = jax.jit(fn).lower(*args)
            c0, t0 = _cpu(), time.perf_counter()
            low.compile()
            w, c = time.perf_counter() - t0, _cpu() - c0
            rows["xla"].append((w, c, c))
            for cfg in configs:
                if cfg != "main":
                    os.environ["AXLE_FLAGS"] = f"--cpu_compile_threads={cfg[1:]}"
                cpu_exe.clear_memory_cache()
                PARTS.clear()
                with disk_cache.disabled():
                    c0, t0 = _cpu(), time.perf_counter()
                    axle.compile(text, backend="cpu")
                    w, c = time.perf_counter() - t0, _cpu() - c0
                rows[cfg].append((w, c, c - sum(PARTS) + max(PARTS) if PARTS else c))
        out[name] = {k: [statistics.median(r[i] for r in v) for i in range(3)] for k, v in rows.items()}
        print(name.ljust(22), " | ".join(f"{k} wall {v[0]:.3f} cpu {v[1]:.3f} crit {v[2]:.3f}"
                                         for k, v in out[name].items()), flush=True)
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    for cfg in configs:
        print(f"{cfg}: geomean XLA/axle wall {_gm([o['xla'][0] / o[cfg][0] for o in out.values()]):.3f}, "
              f"XLA cpu / axle cpu {_gm([o['xla'][1] / o[cfg][1] for o in out.values()]):.3f}, "
              f"XLA cpu / axle critical path {_gm([o['xla'][1] / o[cfg][2] for o in out.values()]):.3f}")


if __name__ == "__main__":
    main(sys.argv[1].split(","), sys.argv[2].split(",") if sys.argv[2] else list(BENCH_WORKLOADS),
         int(sys.argv[3]), sys.argv[4])
