"""`axle demo`: the main job, end to end, on the bundled GPT-2 style block.

1. reads axle/examples/gpt2_block.mlir (JAX's StableHLO for a transformer block; the
   weights are its arguments) and makes arguments for it: weights drawn like an
   initializer (N(0, 0.02) matrices, unit layernorm gains), x ~ N(0, 1);
2. compiles it for the CPU (pipeline, fusion, LLVM; the disk cache may answer);
3. checks the result against the reference interpreter;
4. times a call (median of --repeat calls);
5. prints the fusion summary: kernels, library calls, peak temporary memory against the
   sum of all temporaries;
6. draws the compiled program (`axle viz`): graph.html (zoom, pan, click a kernel) and
   graph.svg;
7. profiles it kernel by kernel into a Chrome trace (`axle profile`), when that tool is
   there;
and says where it wrote everything (build/demo by default; outputs are never committed).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Optional

import numpy as np

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "gpt2_block.mlir")

EPILOG = """examples:
  axle demo                                  (writes build/demo/graph.html, graph.svg, trace.json)
  axle demo --out /tmp/demo --repeat 500
  axle demo --model axle/examples/mlp.mlir   (any module; random arguments unless named like the block's)"""


def example_arguments(fn, seed: int = 0) -> list:
    """Arguments for a function whose parameters are named like the block's (w_*, b_*,
    ln*_g, ln*_b, x): initializer-like values; anything else: random (cli.random_inputs)."""
    from axle.ir.types import TensorType
    from axle.tools.cli import random_inputs
    rng = np.random.default_rng(seed)
    out = []
    for a in fn.body.arguments:
        t = a.type
        name = a.name_hint if isinstance(a.name_hint, str) else ""
        if not (isinstance(t, TensorType) and t.is_static and np.dtype(t.dtype).kind == "f"):
            out.append(random_inputs([t], seed + len(out))[0])
            continue
        if name.startswith("w_"):
            v = rng.standard_normal(t.shape) * 0.02
        elif name.startswith("ln") and name.endswith("_g"):
            v = 1.0 + 0.1 * rng.standard_normal(t.shape)
        elif name.startswith("b_") or (name.startswith("ln") and name.endswith("_b")):
            v = 0.02 * rng.standard_normal(t.shape)
        else:
            v = rng.standard_normal(t.shape)
        out.append(np.asarray(v).astype(t.dtype))
    return out


def output_dir(path: Optional[str]) -> str:
    """--out, else build/demo under the current folder, else a temporary folder."""
    for candidate in ([path] if path else [os.path.join("build", "demo")]):
        try:
            os.makedirs(candidate, exist_ok=True)
            if os.access(candidate, os.W_OK):
                return candidate
        except OSError:
            if path:
                raise
    return tempfile.mkdtemp(prefix="axle-demo-")


def run_demo(model: str = EXAMPLE, out: Optional[str] = None, repeat: int = 200, seed: int = 0,
             profile: bool = True, log=print) -> dict:
    """The demo's steps; returns what it measured and wrote (for tests)."""
    import axle
    from axle.interpreter.evaluator import run_function
    from axle.ir import parse_module
    from axle.tools import viz
    from axle.tools.compile_cmd import build, fusion_summary, progress_bar, si
    result: dict = {"files": {}}
    bar = progress_bar(6, "axle demo")
    if log is print:
        log = bar.write  # above the progress bar, when there is one
    try:
        out = output_dir(out)
        name = os.path.basename(model)
        with open(model, encoding="utf-8") as fh:
            text = fh.read()
        m = parse_module(text, name)
        fn = m.main
        args = example_arguments(fn, seed)
        log(f"model: {model}")
        log(f"  @{fn.sym_name}: {len(args)} arguments, {sum(a.nbytes for a in args) / 1e3:.1f} KB: "
            + ", ".join(f"{a.name_hint}={a.type.element_type}{list(a.type.shape)}"
                        for a in fn.body.arguments[:6]) + (", ..." if len(args) > 6 else ""))
        # 2. compile
        bar.set_postfix_str("compile")
        t0 = time.perf_counter()
        ex = axle.compile(parse_module(text, name), backend="cpu", entry=fn.sym_name)
        compile_s = time.perf_counter() - t0
        cached = " (from the disk cache)" if getattr(ex, "loaded_from_disk", False) else ""
        log(f"compiled for the cpu in {compile_s * 1e3:.0f} ms{cached}")
        bar.update()
        # 3. check
        bar.set_postfix_str("check")
        outs = ex.execute(args)
        ref = run_function(m, args, fn.sym_name)
        worst, scale = 0.0, 0.0
        for o, r in zip(outs, ref):
            o, r = np.asarray(o, np.float64), np.asarray(r, np.float64)
            worst = max(worst, float(np.max(np.abs(o - r), initial=0.0)))
            scale = max(scale, float(np.max(np.abs(r), initial=0.0)))
        ok = all(np.allclose(np.asarray(o, np.float64), np.asarray(r, np.float64), rtol=1e-4, atol=1e-4)
                 for o, r in zip(outs, ref))
        result.update(max_abs_diff=worst, matches=ok)
        log(f"{'matches' if ok else 'DOES NOT MATCH'} the interpreter: largest difference {worst:.3g} "
            f"(results up to {scale:.3g})")
        bar.update()
        # 4. time
        bar.set_postfix_str("time")
        for _ in range(3):
            ex.execute(args)
        times = []
        for _ in range(max(repeat, 1)):
            t = time.perf_counter()
            ex.execute(args)
            times.append(time.perf_counter() - t)
        med = float(np.median(times))
        result["median_seconds"] = med
        log(f"per call: median {med * 1e6:.1f} us over {len(times)} calls (min {min(times) * 1e6:.1f} us)")
        bar.update()
        # 5. fusion summary
        bar.set_postfix_str("summary")
        built = build(text, name, fn.sym_name)
        program = built.program
        result["kernels"] = len(program.kernels)
        result["library_calls"] = sum(1 for k in program.kernels if k.library)
        flops = sum(k.flops() for k in program.kernels if k.depth == 0)
        log("")
        log(fusion_summary(program, table=False, title=f"fusion of @{built.entry}"))
        log(f"per call: {si(flops)} flops, {flops / med / 1e9:.3g} GFLOP/s at the median")
        bar.update()
        # 6. picture
        bar.set_postfix_str("viz")
        pic = viz.Picture(built)
        for ext in ("html", "svg"):
            path = os.path.join(out, f"graph.{ext}")
            viz.write(pic, path)
            result["files"][ext] = path
        bar.update()
        # 7. trace
        bar.set_postfix_str("profile")
        trace_line = None
        if profile:
            try:
                from axle.tools.profile import run_profile
            except ImportError:
                run_profile = None
                trace_line = "trace: skipped (the profiler, axle/tools/profile.py, is not there)"
            if run_profile is not None:
                path = os.path.join(out, "trace.json")
                res = run_profile(text, args, name, fn.sym_name, repeat=20, trace_path=path)
                result["files"]["trace"] = path
                slow = sorted(res.kernels, key=lambda k: -k.median)[:3]
                trace_line = (f"trace: {path} ({len(res.profiler.events)} events; open it in https://ui.perfetto.dev); "
                              "slowest kernels: " + ", ".join(f"{k.label} {k.median * 1e6:.1f} us" for k in slow))
        bar.update()
    finally:
        bar.close()
    log("")
    log(f"picture: {result['files']['html']} (open in a browser: zoom, pan, click a kernel) "
        f"and {result['files']['svg']}")
    if trace_line:
        log(trace_line)
    result["out"] = out
    return result


def build_parser(prog: str = "axle demo") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=EXAMPLE, help="the module to run (default: the bundled gpt2_block.mlir)")
    ap.add_argument("--out", help="folder for graph.html, graph.svg, trace.json (default build/demo)")
    ap.add_argument("--repeat", type=int, default=200, help="timed calls (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the arguments")
    ap.add_argument("--no-profile", dest="profile", action="store_false", help="skip the kernel trace")
    return ap


def main(argv: Optional[list] = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        res = run_demo(a.model, a.out, a.repeat, a.seed, a.profile)
    except Exception as e:
        from axle.tools.compile_cmd import report
        code = report(e, "axle demo")
        if code is None:
            raise
        return code
    return 0 if res["matches"] else 1


if __name__ == "__main__":
    sys.exit(main())
