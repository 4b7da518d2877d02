"""The cyclic garbage collector's collections inside `axle.compile` (compile.md, round 4):
per workload and compile, each collection's generation, time and objects freed, recorded
with gc.callbacks.

    python benchmarks/results/compile_gc.py mini_gpt_training,kv_decode_step
"""
import sys, time, gc, jax
import axle
from axle.backends.cpu import disk_cache, executable as cpu_exe
from axle.tools.bench_workloads import BENCH_WORKLOADS
from axle.tools.bench import _warm_up
_warm_up()
ev = []
t = {}
def cb(phase, info):
    if phase == "start": t["s"] = time.perf_counter()
    else: ev.append((info["generation"], time.perf_counter() - t["s"], info["collected"]))
gc.callbacks.append(cb)
for name in sys.argv[1].split(","):
    fn, args = BENCH_WORKLOADS[name]()
    text = jax.jit(fn).lower(*args).as_text()
    for _ in range(3):
        cpu_exe.clear_memory_cache()
        with disk_cache.disabled():
            ev.clear(); t0 = time.perf_counter(); axle.compile(text, backend="cpu"); dt = time.perf_counter() - t0
        print(f"{name}: compile {dt*1e3:.1f} ms; collections inside: " + ", ".join(f"gen{g} {d*1e3:.1f} ms ({c} freed)" for g, d, c in ev))
