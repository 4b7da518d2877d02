"""Code-generation time of the CPU backend on a few bench workloads (benchmarks/results/plans.md).

    python benchmarks/results/plans_compile_time.py texts DIR      # write DIR/<workload>.mlir (needs jax)
    python benchmarks/results/plans_compile_time.py time DIR REPS  # JSON: seconds per compile_function
    python benchmarks/results/plans_compile_time.py calls DIR      # JSON: Python calls per compile_function

Compare two trees by running the same command with PYTHONPATH set to each, alternating.
"""
import cProfile
import json
import pstats
import sys
import time

WORKLOADS = ["gpt2_block", "mini_gpt_training", "cnn_inference", "mlp_training", "softmax_rows", "layernorm"]


def optimized(folder: str) -> dict:
    import axle
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu.executable import clear_memory_cache
    mods = {}
    for n in WORKLOADS:
        clear_memory_cache()
        with disk_cache.disabled():
            exe = axle.compile(open(f"{folder}/{n}.mlir").read(), backend="cpu")
        mods[n] = exe._optimized_module()
    return mods


def main() -> None:
    cmd, folder = sys.argv[1], sys.argv[2]
    if cmd == "texts":
        import jax
        from axle.tools.bench_workloads import BENCH_WORKLOADS
        for n in WORKLOADS:
            fn, args = BENCH_WORKLOADS[n]()
            open(f"{folder}/{n}.mlir", "w").write(jax.jit(fn).lower(*args).as_text())
        return
    from axle.backends.cpu.compiler import compile_function
    mods = optimized(folder)
    out: dict = {n: [] for n in WORKLOADS}
    if cmd == "time":
        for _ in range(int(sys.argv[3])):
            for n in WORKLOADS:
                t0 = time.perf_counter()
                compile_function(mods[n], "main")
                out[n].append(time.perf_counter() - t0)
    else:
        for n in WORKLOADS:
            compile_function(mods[n], "main")
            pr = cProfile.Profile()
            pr.enable()
            compile_function(mods[n], "main")
            pr.disable()
            out[n] = pstats.Stats(pr).total_calls
    print(json.dumps(out))


if __name__ == "__main__":
    main()
