"""`axle compile`: compile a module for the CPU and show what came out.

Runs the CPU pipeline and code generation on MODULE's entry function and prints (or
writes with -o) one of:

  summary    the fusion summary (default): how many kernels, the library calls, the ops
             fused into loops, temporary memory (arena peak against the sum of all
             temporaries) with the largest buffers, then one line per kernel
  llvm       the LLVM IR as generated (one function per top-level kernel, k<N>.<op>)
  llvm-opt   the LLVM IR after LLVM's optimization pipeline
  asm        the host assembly
  sharding   the SPMD partitioner's report (docs/sharding.md): the sharding chosen at each
             op and why, then every collective inserted (where, why, bytes moved)
  spmd       the per-device program the partitioner makes (MLIR text)

MODULE is a .mlir file, '-' for stdin, or jax:NAME for a JAX workload of
axle/tools/workloads.py (needs jax). A program with check ops (the StableHLO conformance
suites') is compiled as `axle conformance` does: checks out, constant inputs as arguments.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Optional

from axle.tools.cmd_io import read_module, report, user_error, write_output  # noqa: F401  (viz, demo, cli use them from here)

EPILOG = """examples:
  axle compile model.mlir                      (fusion summary)
  axle compile model.mlir --emit llvm -o model.ll
  axle compile jax:transformer_block --emit asm -o block.s
  axle compile sharded.mlir --emit sharding    (collectives inserted, and why)"""


@dataclass
class Built:
    """A module compiled for the CPU, without linking: what the tools look at."""
    name: str
    module: object  # the module after the pipeline
    entry: str
    program: object  # compiler.Program (llvm_ir, kernels, allocations)
    pipeline_seconds: float
    codegen_seconds: float
    lifted: object = None  # lifting.Lifted when the module had check ops (a conformance program)

    @property
    def function(self):
        """The entry function that was compiled (a lowered copy's, for quantized modules)."""
        top = [k for k in self.program.kernels if k.depth == 0]
        if top:
            fn = top[0].op.parent.parent.parent
            if fn is not None and fn.name == "func.func":
                return fn
        return self.module.function(self.entry)


def build(text: str, name: str = "module", function: Optional[str] = None, progress: bool = False) -> Built:
    """Parse, verify, run the CPU pipeline and generate code (an internal error leaves a
    reproducer, axle/reproducer.py). `progress` shows a bar on stderr (when it is a terminal)."""
    from axle.backends.cpu.compiler import compile_function
    from axle.ir import parse_module
    from axle.ir.verifier import verify
    from axle.reproducer import guard_codegen, run_pipeline
    bar = progress_bar(3, f"compile {name}", enabled=progress)
    try:
        bar.set_postfix_str("parse")
        m = parse_module(text, name)
        verify(m)
        entry = function or m.main.sym_name
        m.function(entry)
        lifted = lift_checks(m, entry)
        bar.update()
        bar.set_postfix_str("passes")
        t0 = time.perf_counter()
        run_pipeline(m, "cpu", entry=entry)
        t1 = time.perf_counter()
        bar.update()
        bar.set_postfix_str("codegen")
        with guard_codegen(m, entry):
            program = compile_function(m, entry)
        t2 = time.perf_counter()
        bar.update()
    finally:
        bar.close()
    return Built(name, m, entry, program, t1 - t0, t2 - t1, lifted)


def lift_checks(module, entry: str):
    """For a program with check ops (the conformance suites'): take the checks out to run on
    the host and make its constant inputs arguments (lifting.py), in place; else None."""
    from axle.tools.lifting import check_name, lift
    if not any(check_name(op) for op in module.walk()):
        return None
    return lift(module, entry)


def progress_bar(total: int, desc: str, enabled: bool = True):
    """A tqdm bar on stderr when it is a terminal (and tqdm is installed); else a stand-in."""
    if enabled and sys.stderr.isatty():
        try:
            from tqdm import tqdm
            return tqdm(total=total, desc=desc, file=sys.stderr, leave=False,
                        bar_format="{desc}: {bar:20} {n_fmt}/{total_fmt}{postfix} [{elapsed}]")
        except ImportError:
            pass
    return _NoBar()


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    @staticmethod
    def write(s: str) -> None:
        print(s)

    def set_postfix_str(self, s: str = "") -> None:
        pass

    def close(self) -> None:
        pass


def short_type(t) -> str:
    """tensor<32x64xf32> -> f32[32,64]."""
    from axle.ir.types import TensorType
    if isinstance(t, TensorType):
        return f"{t.element_type}[{','.join('?' if d is None else str(d) for d in t.shape)}]"
    return str(t)


def si(x: float) -> str:
    for div, p in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= div:
            return f"{x / div:.3g}{p}"
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def location(k) -> str:
    w = k.where()
    return w.split(" at ", 1)[1] if " at " in w else "-"


def fusion_summary(program, table: bool = True, title: str = "") -> str:
    """Kernels, library calls, fused ops, temporary memory; one line per kernel with `table`."""
    from collections import Counter
    ks = list(program.kernels)
    top = [k for k in ks if k.depth == 0]
    libs = Counter(k.library for k in ks if k.library)
    fused = sum(len(k.fused) for k in ks)
    head = f"{title}: " if title else ""
    lines = [f"{head}{len(ks)} kernels ({len(top)} top level, {len(ks) - len(top)} in while/if/case bodies), "
             f"{fused} ops fused into their loops",
             f"library calls: {sum(libs.values())}"
             + (" (" + ", ".join(f"{n} x{c}" for n, c in sorted(libs.items())) + ")" if libs else "")]
    lines.append(program.buffer_report())  # temporaries: peak (the arena) against their sum
    if table:
        lines.append("")
        lines.append(f"{'kernel':<8}{'op':<22}{'fused':>6}  {'library':<12}{'result':<20}{'bytes':>8}{'flops':>8}"
                     f"  location")
        for k in ks:
            name = ("  " * k.depth) + f"k{k.index}"
            res = ", ".join(short_type(r.type) for r in k.op.results) or "-"
            lines.append(f"{name:<8}{k.op.opname:<22}{len(k.fused):>6}  {k.library or '-':<12}{res:<20}"
                         f"{si(k.bytes_moved()):>8}{si(k.flops()):>8}  {location(k)}")
    return "\n".join(lines)


def optimized_ir(llvm_ir: str, opt: int = 3) -> str:
    """The program's LLVM IR after LLVM's pipeline (as the CPU backend runs it)."""
    mod, _ = _llvm_module(llvm_ir, opt)
    return str(mod)


def assembly(llvm_ir: str, opt: int = 3) -> str:
    mod, tm = _llvm_module(llvm_ir, opt)
    return tm.emit_assembly(mod)


def _llvm_module(llvm_ir: str, opt: int):
    from axle.backends.cpu import llvm_env
    tm = llvm_env.target_machine(opt)  # (initializes the native target)
    return llvm_env.optimized_module(llvm_ir, tm, opt), tm


def _emit_sharding(a, name: str, text: str) -> int:
    from axle.ir import parse_module
    from axle.sharding import partition
    prog = partition(parse_module(text, name), (a.function or "main").lstrip("@"))
    out = prog.report() if a.emit == "sharding" else str(prog.module) + "\n"
    if a.output:
        with open(a.output, "w", encoding="utf-8") as fh:
            fh.write(out)
        print(f"wrote {a.output} ({a.emit}, {len(prog.collectives)} collectives)")
    else:
        sys.stdout.write(out)
    return 0


def build_parser(prog: str = "axle compile") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module", metavar="MODULE", help=".mlir file, '-' for stdin, or jax:NAME (a workload)")
    ap.add_argument("-o", "--output", help="write here instead of stdout")
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu",
                    help="gpu: --emit summary|llvm|ptx without a GPU (docs/gpu.md)")
    ap.add_argument("--emit", choices=("summary", "plans", "llvm", "llvm-opt", "asm", "artifact", "sharding", "spmd",
                                       "ptx"),
                    default=None,
                    help="what to print (default: summary; plans: fusion plan, schedule and buffer "
                         "assignment, docs/plans.md; artifact when -o ends in .axle: an "
                         "ahead-of-time executable for axle.load, docs/runtime.md)")
    ap.add_argument("--function", help="function to compile (default: @main)")
    ap.add_argument("--opt", type=int, default=3, choices=(0, 1, 2, 3), help="LLVM level for llvm-opt/asm")
    ap.add_argument("--no-table", dest="table", action="store_false", help="summary without the kernel table")
    return ap


def main(argv: Optional[list] = None) -> int:
    a = build_parser().parse_args(argv)
    if a.emit is None:
        a.emit = "artifact" if a.output and a.output.endswith(".axle") else "summary"
    if a.backend == "gpu" or a.emit == "ptx":
        from axle.tools.gpu_cmd import emit_main
        return emit_main(a)
    if a.emit == "artifact":
        return _write_artifact(a)
    try:
        name, text, _ = read_module(a.module)
        if a.emit in ("sharding", "spmd"):
            return _emit_sharding(a, name, text)
        b = build(text, name, a.function, progress=True)
        if a.emit == "summary":
            out = fusion_summary(b.program, a.table, f"@{b.entry} of {name} after the cpu pipeline") + "\n"
        elif a.emit == "plans":
            out = str(b.program.plans)
        elif a.emit == "llvm":
            out = b.program.llvm_ir
        elif a.emit == "llvm-opt":
            out = optimized_ir(b.program.llvm_ir, a.opt)
        else:
            out = assembly(b.program.llvm_ir, a.opt)
    except Exception as e:
        code = report(e, "axle compile")
        if code is None:
            raise
        return code
    return write_output(a.output, out, f"{a.emit}, {len(out)} bytes; {len(b.program.kernels)} kernels, "
                        f"passes {b.pipeline_seconds * 1e3:.0f} ms, codegen {b.codegen_seconds * 1e3:.0f} ms")


def _write_artifact(a) -> int:
    """`axle compile model.mlir -o model.axle`: compile and save (axle.save)."""
    import time

    import axle
    if not a.output:
        print("axle compile: --emit artifact needs -o FILE.axle", file=sys.stderr)
        return 2
    try:
        name, text, _ = read_module(a.module)
        t0 = time.perf_counter()
        exe = axle.compile(text, entry=a.function or "main")
        axle.save(exe, a.output)
    except Exception as e:
        code = report(e, "axle compile")
        if code is None:
            raise
        return code
    import os
    print(f"wrote {a.output} (artifact, {os.path.getsize(a.output)} bytes; compile "
          f"{(time.perf_counter() - t0) * 1e3:.0f} ms); run it with axle.load('{a.output}')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
