"""`axle profile`: where the time of a compiled program goes, kernel by kernel.

Compiles a module for the CPU with native kernel timing (`profile=True`), runs it
(random arguments unless --inputs), writes a Chrome trace (compile phases, every call
and every kernel of every call; open it in ui.perfetto.dev or chrome://tracing) and
prints a table of the top-level kernels: median time, share of the kernels' total,
bytes moved, flops, and the GB/s and GFLOP/s they reach.

MODULE is a .mlir file, '-' for stdin, or `jax:NAME` for a JAX workload of
axle/tools/workloads.py (lowered with jax, run on its own example arguments).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Optional

import numpy as np

EPILOG = """examples:
  axle profile model.mlir -o trace.json --repeat 50
  axle profile model.mlir --inputs args.npz --sort time
  axle profile jax:transformer_block -o transformer.json
then open the trace in https://ui.perfetto.dev (or chrome://tracing)."""


@dataclass
class KernelStat:
    """One top-level kernel of a profiled program and its measured times."""
    position: int  # among the top-level kernels (the trace's k<position>)
    info: object  # compiler.KernelInfo
    seconds: np.ndarray  # one per timed call

    @property
    def label(self) -> str:
        from axle.backends.cpu.profiling import kernel_label
        return kernel_label(self.info, self.position)

    @property
    def median(self) -> float:
        return float(np.median(self.seconds)) if len(self.seconds) else 0.0

    @property
    def bytes(self) -> int:
        return int(self.info.bytes_moved())

    @property
    def flops(self) -> int:
        return int(self.info.flops())

    @property
    def gbps(self) -> float:
        return self.bytes / self.median / 1e9 if self.median > 0 else 0.0

    @property
    def gflops(self) -> float:
        return self.flops / self.median / 1e9 if self.median > 0 else 0.0

    @property
    def intensity(self) -> float:
        """Arithmetic intensity: flops per byte moved."""
        return self.flops / self.bytes if self.bytes else 0.0


@dataclass
class ProfileResult:
    name: str
    executable: object  # ProfiledExecutable
    kernels: list  # KernelStat per top-level kernel, in program order
    call_seconds: np.ndarray  # wall time of each timed call (Python dispatch included)
    compile_seconds: float
    profiler: object  # axle.profiler.Profiler of the run
    outputs: list

    @property
    def kernel_total(self) -> float:
        return sum(k.median for k in self.kernels)

    @property
    def call_median(self) -> float:
        return float(np.median(self.call_seconds)) if len(self.call_seconds) else 0.0


def load_module(spec: str, function: Optional[str] = None, inputs: Optional[str] = None, seed: int = 0):
    """(name, module text, arguments) for MODULE (a file, '-', or jax:NAME)."""
    if spec.startswith("jax:"):
        from axle.tools.workloads import WORKLOADS, lower
        wl = spec[4:]
        if wl not in WORKLOADS:
            raise ValueError(f"unknown workload '{wl}'; known: {', '.join(sorted(WORKLOADS))}")
        text, args, _, _ = lower(wl)
    else:
        from axle.tools.cli import _read
        text = _read(spec)
        args = None
    if inputs:
        data = np.load(inputs)
        args = [data[k] for k in data.files]
    return spec, text, args


def run_profile(text: str, args: Optional[list] = None, name: str = "module", function: Optional[str] = None,
                repeat: int = 20, warmup: int = 1, trace_path: Optional[str] = None, seed: int = 0,
                quiet: bool = True) -> ProfileResult:
    """Compile `text` with profiling inside an axle.profiler trace, run it `warmup + repeat`
    times, write the trace to `trace_path` (when given), and return the measurements."""
    from axle import profiler
    from axle.backends.cpu import compile as cpu_compile
    from axle.ir import parse_module
    with profiler.trace(trace_path) as prof:
        with profiler.phase("compile", file=name) as info:
            t0 = profiler.now_ns()
            m = parse_module(text, name)
            fn = m.function(function) if function else m.main
            ex = cpu_compile(m, fn.sym_name, profile=True)
            compile_s = (profiler.now_ns() - t0) * 1e-9
            info["entry"] = fn.sym_name
        if args is None:
            from axle.tools.cli import random_inputs
            args = random_inputs(fn.function_type.inputs, seed)
            if not quiet:
                print(f"@{fn.sym_name}: random arguments (seed {seed}): "
                      + ", ".join(f"{x.dtype}{list(x.shape)}" for x in args))
        args = [np.require(a, requirements="C") for a in args]  # (ascontiguousarray makes a 0-d array 1-d)
        outs = None
        for _ in range(max(warmup, 0)):
            outs = ex.execute(args)
        ex.reset_profile()
        for _ in range(max(repeat, 1)):
            outs = ex.execute(args)
    calls = list(ex.calls)
    program = calls[-1].program
    calls = [c for c in calls if c.program is program]
    durations = np.stack([c.durations_ns for c in calls]) * 1e-9
    stats = [KernelStat(i, k, durations[:, i]) for i, k in enumerate(calls[-1].kernels)]
    call_s = np.array([(c.end_ns - c.start_ns) * 1e-9 for c in calls])
    return ProfileResult(name, ex, stats, call_s, compile_s, prof, list(outs))


def si(x: float, unit: str = "") -> str:
    """1234567 -> '1.23M' (powers of 1000)."""
    for div, p in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= div:
            return f"{x / div:.3g}{p}{unit}"
    return f"{x:.3g}{unit}" if isinstance(x, float) else f"{x}{unit}"


def format_table(res: ProfileResult, sort: str = "program", top: Optional[int] = None) -> str:
    from axle.backends.cpu.profiling import location
    rows = list(res.kernels)
    if sort == "time":
        rows.sort(key=lambda k: -k.median)
    if top:
        rows = rows[:top]
    total = res.kernel_total or 1.0
    head = (f"{'kernel':<22}{'time us':>10}{'%':>7}{'bytes':>9}{'flops':>9}{'GB/s':>8}{'GFLOP/s':>9}"
            f"  {'fused':>5}  {'library':<12}{'location'}")
    lines = [head, "-" * len(head)]
    for k in rows:
        lines.append(f"{k.label:<22}{k.median * 1e6:>10.2f}{100 * k.median / total:>6.1f}%{si(k.bytes):>9}"
                     f"{si(k.flops):>9}{k.gbps:>8.2f}{k.gflops:>9.2f}  {len(k.info.fused):>5}  "
                     f"{k.info.library or '-':<12}{_short_loc(location(k.info))}")
    lines.append("-" * len(head))
    n = len(res.call_seconds)
    lines.append(f"{len(res.kernels)} kernels: {res.kernel_total * 1e6:.2f} us of kernels per call (medians); "
                 f"a call takes {res.call_median * 1e6:.2f} us median over {n} call{'s' * (n != 1)} "
                 f"(the rest: dispatch, argument checks, result copies); compile {res.compile_seconds * 1e3:.0f} ms")
    return "\n".join(lines)


def _short_loc(where: str, width: int = 60) -> str:
    return where if len(where) <= width else "..." + where[-(width - 3):]


def build_parser(prog: str = "axle profile") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module", metavar="MODULE", help=".mlir file, '-' for stdin, or jax:NAME (a workload)")
    ap.add_argument("-o", "--output", default="trace.json", help="Chrome trace JSON to write (default trace.json)")
    ap.add_argument("--repeat", type=int, default=20, help="timed calls (default 20)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls first (default 1; they are in the trace)")
    ap.add_argument("--inputs", help=".npz file whose arrays (in order) are the arguments")
    ap.add_argument("--function", help="function to compile (default: @main)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random arguments")
    ap.add_argument("--sort", choices=("program", "time"), default="program",
                    help="kernel order of the table: program order or slowest first")
    ap.add_argument("--top", type=int, help="show only this many rows")
    return ap


def main(argv: Optional[list] = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        name, text, args = load_module(a.module, a.function, a.inputs, a.seed)
        res = run_profile(text, args, name, a.function, a.repeat, a.warmup, a.output, a.seed, quiet=False)
    except Exception as e:  # the errors a user can fix: say what, not a traceback
        msg = _user_error(e)
        if msg is None:
            raise
        print(f"axle profile: error: {msg}", file=sys.stderr)
        return 1
    print(format_table(res, a.sort, a.top))
    print(f"trace: {a.output} ({len(res.profiler.events)} events; open it in https://ui.perfetto.dev)")
    return 0


def _user_error(e: Exception) -> Optional[str]:
    from axle.errors import Unsupported
    from axle.interpreter.evaluator import ArgumentError
    from axle.ir.text.cursor import ParseError
    if isinstance(e, (ParseError, Unsupported, ArgumentError, OSError, ValueError, KeyError)):
        return str(e)
    return None


if __name__ == "__main__":
    sys.exit(main())
