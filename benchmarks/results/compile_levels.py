"""Cold compile and run time per `axle bench` workload at LLVM optimization levels, in one
process (compile.md, round 4). The IR pipeline level of the module parts of a split compile
(every workload's module is over the split threshold) is set by wrapping
llvm_env._optimize_and_emit; code generation stays at level 3.

    python benchmarks/results/compile_levels.py "" O3,O1,O2 > levels.jsonl   # "" = every workload

Per workload: median of 3 cold compiles (caches off) per level, interleaved; then 9 rounds
of timed batches, levels alternating, median per call (ms). One JSON line per workload:
{"name": ..., "O3": [compile ms, run ms], ...}.
"""
import sys, json, statistics, time
import jax, numpy as np
import axle
from axle.backends.cpu import disk_cache, llvm_env, executable as cpu_exe
from axle.tools.bench_workloads import BENCH_WORKLOADS
from axle.tools.bench import _warm_up
_warm_up()
orig = llvm_env.compile_to_object
CFG = {"O3": (3, 3), "O1": (1, 3), "O2": (2, 3), "O1cg2": (1, 2)}
cur = ["O3"]
def patched_optimize_and_emit(mod, tm, opt, keep_ir=True, _o=llvm_env._optimize_and_emit):
    return _o(mod, tm, CFG[cur[0]][0], keep_ir)
llvm_env._optimize_and_emit = patched_optimize_and_emit
orig_borrow = llvm_env.borrowed_target_machine
llvm_env.borrowed_target_machine = lambda opt=3: orig_borrow(CFG[cur[0]][1])
configs = sys.argv[2].split(",")
names = sys.argv[1].split(",") if sys.argv[1] else list(BENCH_WORKLOADS)
for name in names:
    fn, args = BENCH_WORKLOADS[name]()
    text = jax.jit(fn).lower(*args).as_text()
    flat = [np.asarray(x) for x in jax.tree_util.tree_leaves(args)]
    exes, ct = {}, {c: [] for c in configs}
    for rep in range(3):
        for c in configs:
            cur[0] = c
            cpu_exe.clear_memory_cache()
            with disk_cache.disabled():
                t0 = time.perf_counter(); exes[c] = axle.compile(text, backend="cpu"); ct[c].append(time.perf_counter() - t0)
    rt = {c: [] for c in configs}
    for c in configs:
        exes[c].execute(flat)
    k = 1
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.05: exes[configs[0]].execute(flat); k += 1
    for rep in range(9):
        for c in (configs if rep % 2 == 0 else configs[::-1]):
            t0 = time.perf_counter()
            for _ in range(k): exes[c].execute(flat)
            rt[c].append((time.perf_counter() - t0) / k * 1e3)
    line = {"name": name}
    for c in configs:
        line[c] = (round(statistics.median(ct[c]) * 1e3, 1), round(statistics.median(rt[c]), 3))
    print(json.dumps(line), flush=True)
