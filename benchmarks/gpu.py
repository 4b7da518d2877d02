"""The gpu backend on a GPU machine: conformance on `gpu` vs `cpu`, and the benchmark
workloads vs XLA's GPU backend through JAX on the same machine.

NOT YET RUN ON A GPU. Written in a session without one (docs/gpu.md, benchmarks/results/gpu.md);
meant for the `device` tool, from the repository root:

    python benchmarks/gpu.py conformance [--every N]   # gpu vs cpu on ../shared/conformance/testdata
    python benchmarks/gpu.py workloads [--repeat 20]    # axle gpu vs jax.jit on the GPU
    python benchmarks/gpu.py bandwidth                   # per-kernel achieved GB/s vs a device copy

Timings: CUDA events around each call after 3 warm-up calls, median of --repeat; the peer
runs interleaved with axle in the same process. Prints one table per mode.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
CONFORMANCE = os.path.join(HERE, "..", "..", "shared", "conformance", "testdata")


def _need_gpu():
    from axle.backends.gpu import require_gpu
    require_gpu()  # NoGpuError naming the fallback when there is none


def conformance(every: int) -> int:
    """Each run case lifted as the CPU conformance run lifts it; passes when its checks hold
    on the gpu backend's outputs. Counts passed / unsupported (by op) / failed, gpu and cpu."""
    from collections import Counter

    from axle.backends.cpu.executable import CpuExecutable
    from axle.backends.gpu import Unsupported, emit_llvm
    from axle.backends.gpu.launch import CupyExecutable
    from axle.backends.gpu.nvptx import ir_to_ptx
    from axle.ir import parse_module
    from axle.passes import PassManager, default_pipeline
    from axle.tools.conformance import _has_checks, collect_cases, entry_functions
    from axle.tools.lifting import lift
    import cupy
    cc = cupy.cuda.Device().compute_capability
    counts = {"gpu": Counter(), "cpu": Counter()}
    ops = Counter()
    for case in collect_cases([CONFORMANCE])[::every]:
        module = parse_module(case.text, case.file)
        main = module.functions.get("main")
        if (main is not None and main.function_type.inputs and not _has_checks(module)) or not entry_functions(module):
            continue
        for backend in ("gpu", "cpu"):
            try:
                for e in entry_functions(module):
                    lifted = lift(parse_module(case.text, case.file), e)
                    PassManager(default_pipeline()).run(lifted.module)
                    if backend == "gpu":
                        prog = emit_llvm(lifted.module, e, passes=False)
                        outs = CupyExecutable(prog, ir_to_ptx(prog.llvm_ir, cpu=f"sm_{cc}")).execute(lifted.args)
                    else:
                        outs = CpuExecutable(lifted.module, e).execute(lifted.args)
                    lifted.run_checks(outs)
                counts[backend]["passed"] += 1
            except Unsupported as ex:
                counts[backend]["unsupported"] += 1
                if backend == "gpu":
                    ops[str(ex).split("'")[1] if "'" in str(ex) else str(ex)[:40]] += 1
            except Exception as ex:  # noqa: BLE001 - counted and shown
                counts[backend]["failed"] += 1
                print(f"{backend} FAILED {case.name}: {type(ex).__name__}: {str(ex)[:200]}")
    for b in ("gpu", "cpu"):
        print(f"{b}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts[b].items())))
    print("gpu unsupported by op: " + ", ".join(f"{o} {n}" for o, n in ops.most_common()))
    return 0


def _time_cuda(fn, repeat: int) -> list:
    import cupy
    for _ in range(3):
        fn()
    cupy.cuda.Device().synchronize()
    out = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        out.append(cupy.cuda.get_elapsed_time(start, stop) * 1e-3)
    return out


def workloads(repeat: int) -> int:
    """axle gpu vs jax.jit (XLA GPU) on the benchmark workloads; geometric mean of XLA/axle."""
    import cupy
    import jax
    from axle.backends.gpu import Unsupported, emit_llvm
    from axle.backends.gpu.launch import CupyExecutable
    from axle.backends.gpu.nvptx import ir_to_ptx
    from axle.tools.bench_workloads import BENCH_WORKLOADS
    cc = cupy.cuda.Device().compute_capability
    ratios = []
    print(f"{'workload':<22} {'axle ms':>9} {'xla ms':>9} {'xla/axle':>9}  max |diff|")
    for name, make in BENCH_WORKLOADS.items():
        fn, args = make()
        flat = jax.tree_util.tree_leaves(args)
        text = jax.jit(fn).lower(*args).as_text()
        try:
            prog = emit_llvm(text)
            exe = CupyExecutable(prog, ir_to_ptx(prog.llvm_ir, cpu=f"sm_{cc}"))
        except Unsupported as e:
            print(f"{name:<22} unsupported: {str(e)[:100]}")
            continue
        dev_args = [cupy.asarray(a) for a in flat]
        jitted = jax.jit(fn)
        jargs = jax.device_put(args)
        ours = exe.execute_device(dev_args)
        theirs = jax.tree_util.tree_leaves(jitted(*jargs))
        diff = max(float(np.max(np.abs(cupy.asnumpy(o).astype(np.float64) - np.asarray(t, np.float64))))
                   if o.size else 0.0 for o, t in zip(ours, theirs))
        ta, tx = [], []
        for _ in range(3):  # interleaved rounds
            ta += _time_cuda(lambda: exe.execute_device(dev_args), repeat)
            tx += _time_cuda(lambda: jax.block_until_ready(jitted(*jargs)), repeat)
        a, x = statistics.median(ta), statistics.median(tx)
        ratios.append(x / a)
        print(f"{name:<22} {a * 1e3:9.3f} {x * 1e3:9.3f} {x / a:9.2f}  {diff:.3g}")
    if ratios:
        print(f"geometric mean of xla/axle over {len(ratios)} workloads: "
              f"{float(np.exp(np.mean(np.log(ratios)))):.3f}")
    return 0


def bandwidth(repeat: int) -> int:
    """Achieved bandwidth of the elementwise and reduce kernels of each workload vs a device copy."""
    import cupy
    from axle.backends.gpu import Unsupported, emit_llvm
    from axle.backends.gpu.nvptx import ir_to_ptx
    from axle.backends.gpu.launch import CupyExecutable
    from axle.tools.bench_workloads import BENCH_WORKLOADS
    import jax
    n = 1 << 26
    src, dst = cupy.ones(n, np.float32), cupy.empty(n, np.float32)
    copy_s = statistics.median(_time_cuda(lambda: cupy.copyto(dst, src), repeat))
    copy_bw = 2 * 4 * n / copy_s
    print(f"device copy: {copy_bw / 1e9:.0f} GB/s")
    cc = cupy.cuda.Device().compute_capability
    for name, make in BENCH_WORKLOADS.items():
        fn, args = make()
        try:
            prog = emit_llvm(jax.jit(fn).lower(*args).as_text())
            exe = CupyExecutable(prog, ir_to_ptx(prog.llvm_ir, cpu=f"sm_{cc}"))
        except Unsupported as e:
            print(f"{name}: unsupported: {str(e)[:100]}")
            continue
        bufs = [cupy.asarray(a) for a in jax.tree_util.tree_leaves(args)]
        bufs += [cupy.empty(tuple(t.shape), np.dtype(t.element_type.np_dtype)) for t in prog.results + prog.temps]
        bufs.append(cupy.empty(max(prog.scratch_bytes, 1), np.uint8))
        for k, f, (grid, block) in zip(prog.kernels, exe.functions, exe.launches):
            s = statistics.median(_time_cuda(lambda: f(grid, block, tuple(bufs)), repeat))
            print(f"  {name:<20} {k.name:<28} {k.kind:<12} {s * 1e6:9.1f} us")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("conformance", "workloads", "bandwidth"))
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args(argv)
    _need_gpu()
    t0 = time.perf_counter()
    code = {"conformance": lambda: conformance(a.every), "workloads": lambda: workloads(a.repeat),
            "bandwidth": lambda: bandwidth(a.repeat)}[a.mode]()
    print(f"({time.perf_counter() - t0:.1f} s)")
    return code


if __name__ == "__main__":
    sys.exit(main())
