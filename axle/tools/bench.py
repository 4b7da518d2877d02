"""`axle bench`: axle's CPU backend against XLA's, on the same StableHLO, in one process.

For every workload (bench_workloads.py) the JAX function is lowered once with
jax.jit(...).lower(...).as_text(); axle compiles that text, XLA compiles the same module
through jax.jit. Then:

* outputs: axle's results are checked against XLA's (max relative difference reported; a
  workload whose outputs disagree is marked and left out of the geometric mean);
* run time: both are called in interleaved rounds (axle, XLA, XLA, axle, ...), each round a
  batch of calls long enough to read the clock well; per-call medians over rounds and the
  spread (min-max of the rounds, in % of the median) are reported;
* cold compile: XLA's `lowered.compile()` after `jax.clear_caches()`, axle's parse + passes +
  codegen + LLVM with its caches off (median of three; one-time process set-up, such as
  LLVM's targets and axle's thread-pool runtime, is done before the first);
* warm start: axle's compile of the same text in a fresh in-memory state, loading native code
  from the disk cache (AXLE_CACHE_DIR);
* peak temporary memory: axle's arena (buffer assignment) against XLA's
  `compiled.memory_analysis().temp_size_in_bytes`; and, for reference, the same figure from
  XLA with its YNNPACK fusions turned off (in a subprocess: XLA's flags are per process),
  because memory_analysis counts none of the buffers YNNPACK allocates for itself.

The table ends with the geometric mean of XLA time / axle time (> 1: axle is faster), and
`--write` records it all in benchmarks/RESULTS.md with the machine, versions and date.
"""
from __future__ import annotations

import math
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np


@dataclass
class Result:
    name: str
    ops: int = 0
    axle_ms: float = math.nan
    xla_ms: float = math.nan
    axle_spread: float = 0.0
    xla_spread: float = 0.0
    max_rel_err: float = math.nan
    ok: bool = False
    axle_compile_s: float = math.nan
    xla_compile_s: float = math.nan
    warm_start_ms: float = math.nan
    axle_temp_bytes: int = 0
    xla_temp_bytes: int = 0
    xla_own_temp_bytes: int = -1  # XLA with its YNNPACK fusions off (-1: not measured)
    kernels: int = 0
    library_calls: int = 0
    error: Optional[str] = None
    extra: dict = field(default_factory=dict)

    @property
    def speedup(self) -> float:
        return self.xla_ms / self.axle_ms


def _median_spread(samples: list) -> tuple[float, float]:
    med = statistics.median(samples)
    spread = 100.0 * (max(samples) - min(samples)) / med if med > 0 else 0.0
    return med, spread


SETTLE_S = 0.02  # idle time before each timed batch


def _time_interleaved(calls: dict, rounds: int, target_s: float = 0.05) -> dict:
    """Per-call seconds for each callable: median over `rounds` rounds and the spread.
    Each round runs each callable `n` times back to back (n chosen so a batch takes about
    target_s), alternating the order between rounds. Each batch starts after SETTLE_S of
    idle time: a runtime's worker threads spin for a while after its last call (XLA's
    do), and on two cores that spinning would otherwise slow the batch that follows it,
    whichever runtime that is."""
    names = list(calls)
    for nm in names:  # warm-up
        for _ in range(3):
            calls[nm]()
    per = {}
    for nm in names:
        t0 = time.perf_counter()
        calls[nm]()
        per[nm] = max(time.perf_counter() - t0, 1e-7)
    n = {nm: max(1, min(20000, int(target_s / per[nm]))) for nm in names}
    samples: dict = {nm: [] for nm in names}
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for nm in order:
            fn = calls[nm]
            k = n[nm]
            time.sleep(SETTLE_S)
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            samples[nm].append((time.perf_counter() - t0) / k)
    return {nm: _median_spread(s) for nm, s in samples.items()}


def _count_ops(module) -> int:
    return sum(1 for _ in module.function("main").body.operations)


def _compare(ours: list, theirs: list) -> float:
    worst = 0.0
    for a, b in zip(ours, theirs):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return math.inf
        scale = max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-6)
        if b.size:
            worst = max(worst, float(np.max(np.abs(a - b))) / scale)
    return worst


def pool_summary(st: dict) -> str:
    """One line of the thread pool's counters over a timing (parallel.stats() differences)."""
    jobs = st.get("jobs", 0)
    serial = st.get("serial_backoff", 0) + st.get("serial_busy", 0)
    work = max(st.get("work_cycles", 0), 1)
    return (f"{jobs} split jobs, {serial} run serially ({st.get('serial_backoff', 0)} by backoff), "
            f"{st.get('stalls', 0)} stalls, caller waited {100.0 * st.get('wait_cycles', 0) / work:.0f}% of its "
            f"own work time, slept {st.get('caller_sleeps', 0)} times, ran "
            f"{st.get('caller_chunks', 0) / max(jobs, 1):.1f} chunks per job")


def bench_workload(name: str, rounds: int = 7, compile_repeats: int = 3, log=print,
                   pool_stats: bool = False) -> Result:
    import jax

    from axle.backends.cpu import executable as cpu_exe
    from axle.tools.bench_workloads import BENCH_WORKLOADS
    res = Result(name)
    fn, args = BENCH_WORKLOADS[name]()
    jitted = jax.jit(fn)
    lowered = jitted.lower(*args)
    text = lowered.as_text()
    flat = [np.ascontiguousarray(np.asarray(a)) for a in jax.tree_util.tree_leaves(args)]

    # XLA: cold compile (caches cleared), memory, outputs
    xla_times = []
    for _ in range(compile_repeats):
        jax.clear_caches()
        low = jax.jit(fn).lower(*args)
        t0 = time.perf_counter()
        compiled = low.compile()
        xla_times.append(time.perf_counter() - t0)
    res.xla_compile_s = statistics.median(xla_times)
    try:
        res.xla_temp_bytes = int(compiled.memory_analysis().temp_size_in_bytes)
    except Exception:  # noqa: BLE001 - memory analysis is optional in some builds
        res.xla_temp_bytes = -1
    dev_args = jax.device_put(args)
    expected = [np.asarray(x) for x in jax.tree_util.tree_leaves(jitted(*dev_args))]

    # axle: cold compile with caches off, then a disk-cache warm start
    import axle
    from axle.backends.cpu import disk_cache
    axle_times = []
    exe = None
    for _ in range(compile_repeats):
        cpu_exe.clear_memory_cache()
        with disk_cache.disabled():
            t0 = time.perf_counter()
            exe = axle.compile(text, backend="cpu")
            axle_times.append(time.perf_counter() - t0)
    res.axle_compile_s = statistics.median(axle_times)
    with tempfile.TemporaryDirectory() as cache_dir:
        with disk_cache.using(cache_dir):
            cpu_exe.clear_memory_cache()
            axle.compile(text, backend="cpu")  # stores
            warm = []
            for _ in range(3):
                cpu_exe.clear_memory_cache()
                t0 = time.perf_counter()
                w = axle.compile(text, backend="cpu")
                warm.append(time.perf_counter() - t0)
                if not w.loaded_from_disk:
                    raise RuntimeError(f"{name}: warm start did not load from the disk cache")
            res.warm_start_ms = 1e3 * statistics.median(warm)
    prog = exe.program
    res.ops = _count_ops(exe.module)
    res.kernels = sum(1 for k in prog.kernels if k.depth == 0)
    res.library_calls = sum(1 for k in prog.kernels if k.library)
    res.axle_temp_bytes = prog.arena_bytes

    out = exe.execute(flat)
    res.max_rel_err = _compare(out, expected)
    res.ok = res.max_rel_err <= 2e-3

    def run_axle():
        exe.execute(flat)

    def run_xla():
        jax.block_until_ready(jitted(*dev_args))
    from axle.backends.cpu import parallel
    before = parallel.stats()
    t = _time_interleaved({"axle": run_axle, "xla": run_xla}, rounds)
    res.extra["pool"] = {k: v - before[k] for k, v in parallel.stats().items()}
    (res.axle_ms, res.axle_spread), (res.xla_ms, res.xla_spread) = \
        [(1e3 * m, s) for m, s in (t["axle"], t["xla"])]
    log(f"  {name}: axle {res.axle_ms:.3f} ms, xla {res.xla_ms:.3f} ms, x{res.speedup:.2f}, "
        f"compile {res.axle_compile_s:.2f}s vs {res.xla_compile_s:.2f}s, err {res.max_rel_err:.1e}")
    if pool_stats:
        log("    pool: " + pool_summary(res.extra["pool"]))
    return res


# XLA_FLAGS that turn off XLA's YNNPACK fusions (jax 0.10.2): what remains is XLA's own
# emitted code and buffer assignment
NO_YNN_FLAGS = "--xla_cpu_experimental_ynn_fusion_type="


def xla_own_temps(names: list, timeout_s: float = 300) -> dict:
    """{workload: XLA's temp bytes with its YNNPACK fusions off}, measured in a subprocess
    ({} when that fails: the figure is a reference, not a result)."""
    import json
    import subprocess
    code = ("import json, sys, jax\n"
            "from axle.tools.bench_workloads import BENCH_WORKLOADS\n"
            "out = {}\n"
            "for nm in sys.argv[1:]:\n"
            "    fn, args = BENCH_WORKLOADS[nm]()\n"
            "    c = jax.jit(fn).lower(*args).compile()\n"
            "    out[nm] = int(c.memory_analysis().temp_size_in_bytes)\n"
            "print(json.dumps(out))\n")
    from axle.flags import child_environment
    env = child_environment()  # (the one place axle reads the environment: axle/flags.py)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + NO_YNN_FLAGS).strip()
    try:
        done = subprocess.run([sys.executable, "-c", code, *names], env=env, capture_output=True, text=True,
                              timeout=timeout_s, check=True)
        got = json.loads(done.stdout.strip().splitlines()[-1])
        return {k: int(v) for k, v in got.items()}
    except (subprocess.SubprocessError, ValueError, IndexError, OSError):
        return {}


def overhead(rounds: int = 9) -> tuple[float, float, float, float]:
    """Per-call microseconds of a one-op program (4-element add): axle, jax.jit, spreads."""
    import jax

    import axle
    from axle.tools.bench_workloads import one_op
    from axle.backends.cpu import lowp_runtime
    lowp_runtime.register()
    fn, args = one_op()
    text = jax.jit(fn).lower(*args).as_text()
    exe = axle.compile(text, backend="cpu")
    jitted = jax.jit(fn)
    dev = jax.device_put(args)
    x, y = args
    t = _time_interleaved({"axle": lambda: exe(x, y),
                           "xla": lambda: jax.block_until_ready(jitted(*dev))}, rounds, target_s=0.05)
    return 1e6 * t["axle"][0], 1e6 * t["xla"][0], t["axle"][1], t["xla"][1]


def geomean(xs: list) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def _fmt_bytes(n: int) -> str:
    if n < 0:
        return "n/a"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def table(results: list, over: Optional[tuple]) -> str:
    head = ("| workload | ops | kernels | lib calls | axle ms (spread) | XLA ms (spread) | XLA/axle | "
            "max rel err | compile axle s | compile XLA s | warm start ms | temp axle | temp XLA | "
            "temp XLA w/o YNN |")
    lines = [head, "|" + "---|" * head.count("|")[:-1] if False else "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        if r.error:
            lines.append(f"| {r.name} | error: {r.error} |" + " |" * (head.count("|") - 3))
            continue
        lines.append(
            f"| {r.name} | {r.ops} | {r.kernels} | {r.library_calls} | {r.axle_ms:.3f} ({r.axle_spread:.0f}%) | "
            f"{r.xla_ms:.3f} ({r.xla_spread:.0f}%) | {r.speedup:.2f} | {r.max_rel_err:.1e}{'' if r.ok else ' WRONG'} | "
            f"{r.axle_compile_s:.2f} | {r.xla_compile_s:.2f} | {r.warm_start_ms:.1f} | "
            f"{_fmt_bytes(r.axle_temp_bytes)} | {_fmt_bytes(r.xla_temp_bytes)} | "
            f"{_fmt_bytes(r.xla_own_temp_bytes)} |")
    good = [r for r in results if not r.error and r.ok]
    lines.append("")
    lines.append(f"geometric mean of XLA time / axle time: {geomean([r.speedup for r in good]):.2f} "
                 f"over {len(good)} workloads (min {min((r.speedup for r in good), default=math.nan):.2f})")
    lines.append(f"geometric mean of XLA compile / axle compile: "
                 f"{geomean([r.xla_compile_s / r.axle_compile_s for r in good]):.2f}")
    if over:
        a, x, sa, sx = over
        lines.append(f"per-call overhead, one-op program: axle {a:.1f} us ({sa:.0f}%), jax.jit {x:.1f} us ({sx:.0f}%)")
    return "\n".join(lines)


def machine() -> str:
    import jax
    import llvmlite
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import axle
    from axle.flags import flags_text
    flags = flags_text() or "none"
    return (f"{cpu}, {os.cpu_count()} cores; AXLE_FLAGS {flags}; Python {platform.python_version()}, numpy {np.__version__}, "
            f"jax/jaxlib {jax.__version__}, llvmlite {llvmlite.__version__}, axle {axle.__version__}")


def _warm_up() -> None:
    """One-time process set-up outside the compile timings, as for XLA (whose backend is up
    before its first timed compile, its runtime library compiled into jaxlib): LLVM's
    targets, the thread pool's runtime, the BLAS symbols, axle's runtime routines (GEMM
    kernels and convolutions, lowp_runtime.py: loaded from the disk cache, or compiled
    once per machine), jax itself."""
    import jax

    import axle
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu import executable as cpu_exe
    from axle.tools.bench_workloads import one_op
    from axle.backends.cpu import lowp_runtime
    lowp_runtime.register()
    fn, args = one_op()
    text = jax.jit(fn).lower(*args).as_text()
    with disk_cache.disabled():
        axle.compile(text, backend="cpu")(*args)
    cpu_exe.clear_memory_cache()
    jax.jit(fn)(*args)


def run(names: Optional[list] = None, rounds: int = 7, write: Optional[str] = None, log=print,
        pool_stats: bool = False) -> list:
    from axle.tools.bench_workloads import BENCH_WORKLOADS
    names = names or list(BENCH_WORKLOADS)
    _warm_up()
    results = []
    for nm in names:
        try:
            results.append(bench_workload(nm, rounds=rounds, log=log, pool_stats=pool_stats))
        except Exception as e:  # noqa: BLE001 - one failing workload must not hide the others
            r = Result(nm, error=f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
            log(f"  {nm}: {r.error}")
            results.append(r)
    own = xla_own_temps([r.name for r in results if not r.error])
    for r in results:
        r.xla_own_temp_bytes = own.get(r.name, -1)
    over = overhead()
    text = table(results, over)
    print(text)
    if write:
        with open(write, "w", encoding="utf-8") as fh:
            fh.write("# Benchmark results\n\n")
            fh.write(f"Generated by `axle bench --write {os.path.basename(write)}` on "
                     f"{time.strftime('%Y-%m-%d %H:%M')}; {machine()}.\n\n")
            fh.write("Per-call times are medians over interleaved rounds (spread = (max-min)/median of "
                     "the rounds); compile times are cold (caches off); warm start loads from the disk "
                     "cache; temp = peak temporary memory (axle: buffer-assignment arena; XLA: "
                     "memory_analysis().temp_size_in_bytes; w/o YNN: the same with XLA's YNNPACK fusions "
                     "off, whose own buffers memory_analysis does not count).\n\n")
            fh.write(text + "\n")
    return results


def main(argv: Optional[list] = None) -> int:
    import argparse
    from axle.tools.bench_workloads import BENCH_WORKLOADS
    p = argparse.ArgumentParser(prog="axle bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="example: axle bench --only softmax_rows,layernorm --rounds 5")
    p.add_argument("--only", help="comma-separated workloads (default: all): " + ", ".join(BENCH_WORKLOADS))
    p.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds")
    p.add_argument("--write", metavar="FILE", help="write the table to FILE (e.g. benchmarks/RESULTS.md)")
    p.add_argument("--background", type=int, default=0, metavar="N",
                   help="run N busy processes (one spinning Python loop each) beside the measurement: "
                        "a machine that is busy with other work")
    p.add_argument("--pool-stats", action="store_true",
                   help="print the thread pool's counters over each workload's timing (split jobs, jobs run "
                        "serially after a stall, the caller's waiting): how the pool copes with a busy machine")
    p.add_argument("--json", metavar="FILE", help="also write the per-workload figures as JSON to FILE")
    a = p.parse_args(argv)
    if a.background < 0:
        print("axle bench: --background expects N >= 0", file=sys.stderr)
        return 2
    names = a.only.split(",") if a.only else None
    for nm in names or []:
        if nm not in BENCH_WORKLOADS:
            print(f"axle bench: unknown workload '{nm}'; known: {', '.join(BENCH_WORKLOADS)}", file=sys.stderr)
            return 2
    with background_load(a.background):
        results = run(names, a.rounds, a.write, log=lambda s: print(s, file=sys.stderr), pool_stats=a.pool_stats)
    if a.json:
        import dataclasses
        import json
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump({"background": a.background, "machine": machine(),
                       "results": [dataclasses.asdict(r) for r in results]}, fh, indent=1, default=str)
    return 1 if any(r.error or not r.ok for r in results) else 0


# a busy loop that stops when its parent (the bench, whose pid is its argument) has gone
SPINNER = "import os, sys\nparent = int(sys.argv[1])\nwhile os.getppid() == parent:\n    pass"


class background_load:
    """Context manager: n busy processes (each a Python loop that never sleeps) running
    while the block runs, terminated after it (also on errors). Each also ends by itself
    once the bench is gone (its parent changes: a bench killed by a signal skips __exit__;
    such a spinner outliving it once halved every later measurement on the machine)."""

    def __init__(self, n: int):
        self.n = n
        self.procs: list = []

    def __enter__(self):
        import subprocess
        for _ in range(self.n):
            self.procs.append(subprocess.Popen([sys.executable, "-c", SPINNER, str(os.getpid())],
                                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        if self.n:
            time.sleep(0.5)  # let them start spinning
            print(f"axle bench: {self.n} busy background process(es) running", file=sys.stderr)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except Exception:  # noqa: BLE001 - a process that ignores terminate is killed
                p.kill()
        self.procs = []
        return False


if __name__ == "__main__":
    sys.exit(main())
