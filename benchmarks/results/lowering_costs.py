"""Figures of benchmarks/results/lowering.md: the cost of compiling a copy of the caller's
module (clone_module) and of the CPU pipeline's lowering part, on the large bench workloads.

    .venv/bin/python benchmarks/results/lowering_costs.py [WORKLOAD ...]
"""
import statistics
import sys
import time

import jax

from axle.backends import cpu
from axle.backends.cpu import disk_cache
from axle.backends.cpu.executable import clear_memory_cache
from axle.backends.cpu.pipeline import lowering_pipeline
from axle.ir import parse_module
from axle.passes.lower_quant import clone_module
from axle.passes.pass_manager import PassManager
from axle.passes.pipelines import cpu_pipeline
from axle.reproducer import run_pipeline
from axle.tools.bench_workloads import BENCH_WORKLOADS


def spread(xs) -> str:
    return f"{statistics.median(xs):.1f} ({min(xs):.1f}-{max(xs):.1f})"


def main(names) -> None:
    texts = {}
    for nm in names:
        fn, args = BENCH_WORKLOADS[nm]()
        texts[nm] = jax.jit(fn).lower(*args).as_text()
    print("| workload | ops | clone ms (median, min-max of 7) | cpu pipeline ms | whole compile ms | clone / compile |")
    print("|---|---|---|---|---|---|")
    for nm, text in texts.items():
        m = parse_module(text)
        clones, pipe, comp = [], [], []
        for _ in range(7):
            t0 = time.perf_counter()
            clone_module(m)
            clones.append(1e3 * (time.perf_counter() - t0))
        for _ in range(3):
            c = clone_module(m)
            t0 = time.perf_counter()
            run_pipeline(c, "cpu")
            pipe.append(1e3 * (time.perf_counter() - t0))
            clear_memory_cache()
            with disk_cache.disabled():
                t0 = time.perf_counter()
                cpu.compile(parse_module(text))
                comp.append(1e3 * (time.perf_counter() - t0))
        c, p, w = statistics.median(clones), statistics.median(pipe), statistics.median(comp)
        print(f"| {nm} | {sum(1 for _ in m.walk())} | {spread(clones)} | {p:.0f} | {w:.0f} | {100 * c / w:.2f}% |",
              flush=True)
    print("\n| workload | lowering part, ms | again (no-op), ms |\n|---|---|---|")
    for nm, text in texts.items():
        m = parse_module(text)
        PassManager(cpu_pipeline()).run(m)
        first, again = [], []
        for _ in range(5):
            c = clone_module(m)
            t0 = time.perf_counter()
            PassManager(lowering_pipeline()).run(c)
            first.append(1e3 * (time.perf_counter() - t0))
            t0 = time.perf_counter()
            PassManager(lowering_pipeline()).run(c)
            again.append(1e3 * (time.perf_counter() - t0))
        print(f"| {nm} | {spread(first)} | {spread(again)} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["mini_gpt_training", "mlp_training", "cnn_inference", "gpt2_block", "mlp_inference"])
