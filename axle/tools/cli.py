"""The `axle` command line.

    axle opt FILE [-o OUT] [--passes default|a,b]
                                      parse, verify, optionally optimize, and print a module
    axle interpret FILE [--inputs x.npz] [--function NAME]
                                      run a module with the reference interpreter
    axle run FILE [--backend cpu] [--inputs x.npz] [--outputs y.npz] [--repeat N] [--buffers]
                                      compile, run, check against the interpreter, time
    axle conformance PATH...          run StableHLO conformance programs
    axle roundtrip PATH...            check parse -> print -> parse on .mlir files
    axle profile FILE [-o trace.json] [--repeat N] [--inputs x.npz]
                                      time every kernel natively; Chrome trace + kernel table
    axle explain FILE [-o report.html]
                                      roofline report: each kernel against this machine's limits
    axle compile FILE [-o out.ll] [--emit summary|llvm|llvm-opt|asm]
                                      compile for the CPU; fusion summary, LLVM IR or assembly
    axle viz FILE [-o graph.html|graph.svg]
                                      picture of the compiled program: fusion kernels, shapes
    axle demo [--out DIR]             the main job on the bundled GPT-2 style block
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def cmd_opt(a) -> int:
    from axle.ir import parse_module, print_module, split_cases
    from axle.ir.verifier import verify
    text = _read(a.file)
    name = "<stdin>" if a.file == "-" else a.file
    chunks = split_cases(text) if a.split_input_file else [(1, text)]
    out = []
    for _, chunk in chunks:
        m = parse_module(chunk, name)
        if not a.no_verify:
            verify(m)
        if a.passes:
            from axle.passes import PassManager, default_pipeline, make_pass
            pipeline = default_pipeline() if a.passes == "default" else [make_pass(p) for p in a.passes.split(",")]
            pm = PassManager.from_flags(pipeline, dump_to=a.dump_to, verify_each=not a.no_verify)
            pm.run(m)
            if a.timing:
                print(pm.timing_report(), file=sys.stderr)
        out.append(print_module(m, locations=not a.strip_locations))
    result = "// -----\n".join(out)
    if a.output:
        with open(a.output, "w", encoding="utf-8") as fh:
            fh.write(result)
    else:
        sys.stdout.write(result)
    return 0


def random_inputs(types, seed: int = 0) -> list:
    """Random arrays for the given tensor types: normal floats, small ints, random bools."""
    import numpy as np
    from axle.ir.types import TensorType
    rng = np.random.default_rng(seed)
    out = []
    for t in types:
        if not isinstance(t, TensorType) or not t.is_static:
            raise ValueError(f"cannot make a random argument of type {t}; pass --inputs")
        et = t.element_type
        if getattr(et, "is_bool", False):
            v = rng.integers(0, 2, t.shape).astype(bool)
        elif getattr(et, "is_int", False):
            v = rng.integers(0, 8, t.shape)
        elif getattr(et, "is_complex", False):
            v = rng.standard_normal(t.shape) + 1j * rng.standard_normal(t.shape)
        else:
            v = rng.standard_normal(t.shape)
        out.append(np.asarray(v).astype(t.dtype))
    return out


def cmd_interpret(a) -> int:
    import numpy as np
    from axle.ir import parse_module
    from axle.interpreter import interpret
    m = parse_module(_read(a.file), a.file)
    fn = m.function(a.function) if a.function else m.main
    args = []
    if a.inputs:
        data = np.load(a.inputs)
        args = [data[k] for k in (data.files if hasattr(data, "files") else [])]
    elif fn.function_type.inputs:
        args = random_inputs(fn.function_type.inputs, a.seed)
        print(f"@{fn.sym_name}: no --inputs given; using random arguments (seed {a.seed})")
    out = interpret(m, *args, function=fn.sym_name)
    outs = out if isinstance(out, tuple) else (() if out is None else (out,))
    for i, o in enumerate(outs):
        arr = np.asarray(o)
        print(f"result {i}: {arr.dtype}{list(arr.shape)}")
        print(np.array2string(arr, threshold=64, edgeitems=3))
    if a.outputs:
        np.savez(a.outputs, *[np.asarray(o) for o in outs])
    return 0


def describe(o, first: int = 6) -> str:
    """`f32[2,3] min .. max .. mean ..  first [...]`: one line about an array."""
    import numpy as np
    o = np.asarray(o)
    head = f"{o.dtype}{list(o.shape)}"
    if not o.size:
        return head + " (empty)"
    flat = o.reshape(-1)
    if o.dtype == bool:
        stats = f"{int(flat.sum())} of {flat.size} true"
    elif o.dtype.kind in "fiu" or o.dtype.kind == "V" or str(o.dtype) in ("bfloat16",):
        x = flat.astype(np.float64)
        stats = f"min {x.min():.6g} max {x.max():.6g} mean {x.mean():.6g}"
    elif o.dtype.kind == "c":
        stats = f"|x| max {np.abs(flat).max():.6g} mean {np.abs(flat).mean():.6g}"
    else:
        stats = ""
    vals = ", ".join(f"{v:.6g}" if isinstance(v, (float, np.floating)) else str(v) for v in flat[:first].tolist())
    return f"{head} {stats}  first [{vals}{', ...' if flat.size > first else ''}]"


def cmd_run(a) -> int:
    """Compile a module for a backend, run it, compare with the interpreter, time it."""
    import time

    import numpy as np
    from axle.interpreter.evaluator import run_function
    from axle.ir import parse_module, print_module
    from axle.tools.compile_cmd import lift_checks, read_module
    name, text, example_args = read_module(a.file)  # a file, '-' or jax:NAME
    m = parse_module(text, name)
    fn = m.function(a.function) if a.function else m.main
    lifted = lift_checks(m, fn.sym_name)  # a conformance program: checks run on the host
    if lifted is not None:
        text = print_module(m)
        example_args = lifted.args
    if a.inputs:
        data = np.load(a.inputs)
        args = [data[k] for k in data.files]
    elif example_args is not None:
        args = [np.asarray(x) for x in example_args]
        print(f"@{fn.sym_name}: the program's own inputs: " + ", ".join(f"{x.dtype}{list(x.shape)}" for x in args))
    else:
        args = random_inputs(fn.function_type.inputs, a.seed)
        print(f"@{fn.sym_name}: random arguments (seed {a.seed}): "
              + ", ".join(f"{x.dtype}{list(x.shape)}" for x in args))
    t0 = time.perf_counter()
    import axle
    ex = axle.compile(parse_module(text, name), backend=a.backend, entry=fn.sym_name)
    compile_s = time.perf_counter() - t0
    outs = ex.execute(args)
    n_own = lifted.num_results if lifted is not None else len(outs)
    for i, o in enumerate(outs[:n_own]):
        print(f"result {i}: {describe(o)}")
    if lifted is not None:
        lifted.run_checks(list(outs))  # raises CheckFailure (an InterpreterError) when one fails
        print(f"checks: {len(lifted.checks)} passed")
    if a.check and a.backend != "interpreter":
        ref = run_function(m, args, fn.sym_name)
        worst = 0.0
        for o, r in zip(outs, ref):
            o, r = np.asarray(o), np.asarray(r)
            if o.dtype.kind in "fc":
                worst = max(worst, float(np.max(np.abs(o.astype(np.complex128) - r.astype(np.complex128)),
                                                initial=0.0)))
            elif not np.array_equal(o, r):
                print(f"MISMATCH against the interpreter in an integer/bool result {o.dtype}{list(o.shape)}")
                return 1
        print(f"matches the interpreter (largest float difference {worst:.3g})")
    times = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        ex.execute(args)
        times.append(time.perf_counter() - t)
    times.sort()
    if times:
        print(f"{a.backend}: compile {compile_s * 1e3:.1f} ms; per call median {times[len(times) // 2] * 1e6:.1f} us "
              f"(min {times[0] * 1e6:.1f}, max {times[-1] * 1e6:.1f}) over {a.repeat} calls")
    if a.outputs:
        np.savez(a.outputs, *[np.asarray(o) for o in outs[:n_own]])
        print(f"wrote {a.outputs} ({n_own} array{'s' * (n_own != 1)}: arr_0 ...)")
    if a.buffers and hasattr(ex, "program"):
        print(ex.program.buffer_report())
    return 0


# subcommands living in their own modules, with their own parsers (--help, examples)
OWN_PARSERS = {
    "compile": ("axle.tools.compile_cmd", "compile for the CPU; print the fusion summary, LLVM IR or assembly"),
    "viz": ("axle.tools.viz", "draw the compiled program (fusion kernels, shapes) as SVG or HTML"),
    "demo": ("axle.tools.demo", "the main job: compile, check, time, summarize and draw the bundled model"),
    "bench": ("axle.tools.bench", "axle vs XLA (jax.jit) on the same StableHLO: speed, compile time, memory"),
    "flags": ("axle.flags", "list the AXLE_FLAGS flags and the environment variables axle reads"),
}


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="axle", description="axle: an ML compiler for StableHLO",
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("opt", help="parse, verify and print a module",
                       description="Parse a StableHLO module, verify it and print it back.",
                       epilog="example: axle opt model.mlir -o model.out.mlir")
    p.add_argument("file", help=".mlir file ('-' for stdin)")
    p.add_argument("-o", "--output", help="write here instead of stdout")
    p.add_argument("--split-input-file", action="store_true", help="treat '// -----' parts as separate modules")
    p.add_argument("--no-verify", action="store_true", help="skip the verifier")
    p.add_argument("--strip-locations", action="store_true", help="do not print loc(...)")
    p.add_argument("--passes", help="'default' or a comma-separated list of pass names to run")
    p.add_argument("--dump-to", help="write the module before/after the passes to this folder")
    p.add_argument("--timing", action="store_true", help="print the time spent in each pass")
    p.set_defaults(fn=cmd_opt)

    p = sub.add_parser("interpret", help="run a module with the reference interpreter",
                       epilog="example: axle interpret model.mlir --inputs args.npz")
    p.add_argument("file")
    p.add_argument("--inputs", help=".npz file whose arrays (in order) are the arguments")
    p.add_argument("--outputs", help="write the results to this .npz file")
    p.add_argument("--function", help="function to run (default: @main)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random arguments used without --inputs")
    p.set_defaults(fn=cmd_interpret)

    p = sub.add_parser("run", help="compile and run a module (random inputs if none), check and time it",
                       description="Compile MODULE for a backend, run it on --inputs (random arguments when "
                                   "none; a conformance program's own inputs, its checks run on the host), "
                                   "print each result (shape, dtype, min/max/mean, first values), compare "
                                   "with the interpreter and time the calls.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n  axle run model.mlir --backend cpu --repeat 100\n"
                              "  axle run model.mlir --inputs args.npz --outputs out.npz\n"
                              "  axle run jax:transformer_block --buffers")
    p.add_argument("file", metavar="MODULE", help=".mlir file, '-' for stdin, or jax:NAME (a workload)")
    p.add_argument("--backend", default="cpu", choices=("cpu", "interpreter"), help="what runs it (default cpu)")
    p.add_argument("--inputs", help=".npz file whose arrays (in order) are the arguments")
    p.add_argument("--outputs", help="write the results to this .npz file (arr_0, arr_1, ...)")
    p.add_argument("--function", help="function to run (default: @main)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random arguments")
    p.add_argument("--repeat", type=int, default=20, help="timed calls after the first")
    p.add_argument("--no-check", dest="check", action="store_false", help="do not compare with the interpreter")
    p.add_argument("--buffers", action="store_true", help="print the buffer assignment report")
    p.set_defaults(fn=cmd_run)

    sub.add_parser("conformance", help="run StableHLO conformance programs", add_help=False)
    sub.add_parser("roundtrip", help="check that .mlir files print and parse back equal", add_help=False)
    sub.add_parser("profile", help="time each kernel of a compiled module; write a Chrome trace",
                   add_help=False)
    sub.add_parser("explain", help="roofline report (HTML + PNG): each kernel against the machine",
                   add_help=False)
    for name, (_, text) in OWN_PARSERS.items():
        sub.add_parser(name, help=text, add_help=False)

    if argv and argv[0] == "conformance":
        from axle.tools.conformance import main as conf_main
        return conf_main(argv[1:])
    if argv and argv[0] in ("profile", "explain"):  # own parsers (--help, examples): tools/profile.py, explain.py
        import importlib
        return importlib.import_module(f"axle.tools.{argv[0]}").main(argv[1:])
    if argv and argv[0] in OWN_PARSERS:
        import importlib
        return importlib.import_module(OWN_PARSERS[argv[0]][0]).main(argv[1:])
    if argv and argv[0] == "roundtrip":
        from axle.tools.roundtrip import main as rt_main
        return rt_main(argv[1:])
    a = ap.parse_args(argv)
    if not getattr(a, "fn", None):
        ap.print_help()
        return 2
    from axle.ir.text.cursor import ParseError
    try:
        return a.fn(a)
    except ParseError as e:
        print(e, file=sys.stderr)
        return 1
    except Exception as e:
        from axle.interpreter.registry import InterpreterError
        from axle.interpreter.evaluator import ArgumentError
        try:
            from axle.ir.verifier import VerificationError
        except ImportError:  # pragma: no cover
            VerificationError = ()
        from axle.errors import Unsupported
        from axle.reproducer import InternalCompilerError
        if isinstance(e, (InterpreterError, ArgumentError, VerificationError, OSError, Unsupported)):
            print(f"axle {a.command}: error: {e}", file=sys.stderr)
            return 1
        if isinstance(e, InternalCompilerError):  # the traceback is in the reproducer's folder
            print(f"axle {a.command}: {e}", file=sys.stderr)
            return 3
        raise


if __name__ == "__main__":
    sys.exit(main())
