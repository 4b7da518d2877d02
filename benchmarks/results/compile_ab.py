"""Cold compile and run time per `axle bench` workload for one axle tree, to alternate with
another tree in separate processes (compile.md, round 2):

    AXLE_SRC=/path/to/other/tree python compile_ab.py main NAME[,NAME] >> ab.jsonl
    python compile_ab.py branch NAME[,NAME] >> ab.jsonl

AXLE_SRC: import axle from that folder instead of the installed (editable) one. Prints one
JSON line per workload: median wall and CPU time of 3 cold compiles (caches off), median
and best of 15 timed batches (>= 50 ms each) of the compiled program."""
import os, sys
if os.environ.get("AXLE_SRC"):
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower() and "editable" not in repr(f).lower()]
    sys.path.insert(0, os.environ["AXLE_SRC"])
import json, statistics, sys, time, resource
import jax, numpy as np
import axle
from axle.backends.cpu import disk_cache
from axle.backends.cpu import executable as cpu_exe
from axle.tools.bench_workloads import BENCH_WORKLOADS
tag, names = sys.argv[1], sys.argv[2].split(",")
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
for name in names:
    fn, args = BENCH_WORKLOADS[name]()
    text = jax.jit(fn).lower(*args).as_text()
    flat = [np.asarray(x) for x in jax.tree_util.tree_leaves(args)]
    cw, cc = [], []
    for _ in range(3):
        cpu_exe.clear_memory_cache()
        with disk_cache.disabled():
            c0, t0 = cpu(), time.perf_counter()
            exe = axle.compile(text, backend="cpu")
            cw.append(time.perf_counter() - t0); cc.append(cpu() - c0)
    exe.execute(flat)
    t0 = time.perf_counter(); k = 0
    while time.perf_counter() - t0 < 0.05: exe.execute(flat); k += 1
    k = max(1, k)
    ts = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(k): exe.execute(flat)
        ts.append((time.perf_counter() - t0) / k * 1e3)
    print(json.dumps({"tag": tag, "name": name, "compile_wall": statistics.median(cw), "compile_cpu": statistics.median(cc),
                      "run_med_ms": statistics.median(ts), "run_min_ms": min(ts)}), flush=True)
