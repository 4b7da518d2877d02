"""The conformance runner: runs StableHLO's test programs and counts what passes.

Each .mlir file, or each `// -----` part of it, is one case. A case with check ops
(`check.*`, `stablehlo.custom_call @check.*`) or with entry functions that take no
arguments is a *run* case: it passes when its entry functions run and every check
holds. A case whose @main takes arguments and has no check ops (all of
testdata/dynamic/) is a *verify* case: it passes when it parses, verifies and
round-trips through the printer. On the CPU backend it is a *dynamic* case as well: it is
compiled at concrete sizes and its results on random inputs are compared with the
interpreter's (conformance_cpu.run_dynamic_case).

On the CPU backend the inputs of run cases are lifted into run-time arguments
(lifting.py), and each passed case says whether it ran native code end to end, went
through host callbacks (which ops), or was answered at compile time (conformance_cpu.py;
a case the constant folder answers is compiled again without it).

Cases run in worker processes (--jobs); one past --timeout counts as failed. A case that
StableHLO itself marks `RUN-DISABLED(reason)` is still run: if it passes it counts as
passed; if it gives a wrong answer it is reported as skipped, with the upstream reason and
the failure; if the backend refuses it (not supported yet) it counts as failed.
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import re
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Optional

from axle.tools.roundtrip import mlir_files, roundtrip_case

BACKENDS = ("interpreter", "cpu")


@dataclass
class Case:
    file: str
    line: int
    index: int
    text: str

    @property
    def name(self) -> str:
        return f"{self.file}:{self.line}" if self.index else self.file


@dataclass
class Result:
    name: str
    kind: str  # "run" | "verify"
    status: str  # "passed" | "failed" | "skipped"
    message: str = ""
    seconds: float = 0.0
    how: str = ""  # cpu: "native" | "host-callback" | "compile-time" (conformance_cpu.py)
    host_ops: tuple = ()  # cpu: the ops that ran in Python through host callbacks


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _has_checks(module) -> bool:
    for op in module.walk():
        if op.name.startswith("check.") or (op.name == "stablehlo.custom_call"
                                            and str(op.attr("call_target_name", "")).startswith("check.")):
            return True
    return False


def entry_functions(module) -> list[str]:
    """@main if there is one; otherwise every public function without arguments."""
    fns = module.functions
    if "main" in fns:
        return ["main"]
    return [n for n, f in fns.items() if f.visibility == "public" and not f.function_type.inputs
            and not f.is_declaration]


def _run_lifted(case: Case, e: str, backend: str, passes: str, fold: bool = True) -> tuple:
    """Optimize (or compile) and run a copy of entry `e` whose inputs arrive as arguments and
    whose checks run on the host, so that folding cannot answer for the backend; raise on a
    failed check. Returns conformance_cpu.how_computed's answer for the CPU, else ("", [])."""
    from axle.ir import parse_module
    from axle.passes import PassManager, default_pipeline
    from axle.tools.lifting import lift
    lifted = lift(parse_module(case.text, case.file), e)
    checked = list(range(lifted.num_results, len(lifted.module.function(e).function_type.results)))
    if backend == "cpu":
        from axle.tools.conformance_cpu import constant_results
        before = constant_results(lifted.module, e, checked)
    if passes == "default":
        pipeline = default_pipeline()
        if not fold:
            from axle.passes import FixedPoint
            pipeline = [FixedPoint([p for p in s.passes if p.name != "constant-folding"], name=s.name)
                        if isinstance(s, FixedPoint) else s for s in pipeline]
        PassManager(pipeline, verify_each=True).run(lifted.module)
    programs = []
    if backend == "cpu" and any(op.name == "interpreter.run_parallel" for op in lifted.module.walk()):
        # the host program runs in the interpreter; each process's program is compiled
        # for a CPU device and meets the others through in-process collectives
        from axle.backends.cpu.multi import compiled_program_runner
        from axle.interpreter.evaluator import run_function
        runner = compiled_program_runner(lifted.module)
        outputs = run_function(lifted.module, lifted.args, e, program_runner=runner)
        programs = [p.program for ex in runner.executables.values()
                    for p in getattr(ex, "executable", ex)._programs.values()]
    elif backend == "cpu":
        from axle.backends.cpu.executable import CpuExecutable
        exe = CpuExecutable(lifted.module, e)
        outputs = exe.execute(lifted.args)
        programs = [p.program for p in exe._programs.values()]
    else:
        from axle.interpreter.evaluator import run_function
        outputs = run_function(lifted.module, lifted.args, e)
    lifted.run_checks(outputs)
    if backend != "cpu":
        return "", []
    from axle.tools.conformance_cpu import how_computed
    return how_computed(lifted.module, e, checked, programs, before)


def run_case(case: Case, backend: str, passes: str, timeout: float) -> Result:
    """Run one case in this process (with an alarm for the timeout)."""
    t0 = time.perf_counter()
    kind = "run"
    old = signal.signal(signal.SIGALRM, _alarm) if timeout else None
    if timeout:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        from axle.ir import parse_module
        from axle.ir.verifier import verify
        module = parse_module(case.text, case.file)
        verify(module)
        main = module.functions.get("main")
        if main is not None and main.function_type.inputs and not _has_checks(module):
            kind = "verify"
            why = roundtrip_case(case.text, case.file)
            if why is not None:
                return Result(case.name, kind, "failed", why, time.perf_counter() - t0)
            if backend == "cpu":  # compiled at concrete sizes, compared with the interpreter
                from axle.tools.conformance_cpu import InvalidProgram, run_dynamic_case
                kind = "dynamic"
                try:
                    how, host = run_dynamic_case(module, "main")
                except InvalidProgram as e:
                    return Result(case.name, kind, "skipped", str(e), time.perf_counter() - t0)
                return Result(case.name, kind, "passed", "", time.perf_counter() - t0, how, tuple(host))
            return Result(case.name, kind, "passed", "", time.perf_counter() - t0)
        entries = entry_functions(module)
        if not entries:
            return Result(case.name, kind, "skipped", "no entry function (no @main and no public "
                          "function without arguments)", time.perf_counter() - t0)
        from axle.interpreter import interpret
        from axle.interpreter.ops_check import reset_default_probes
        reset_default_probes()
        hows = []  # (how, host ops) per entry function (compiling backends)
        for e in entries:
            fn = module.functions[e]
            if fn.function_type.inputs:
                return Result(case.name, kind, "skipped", f"@{e} takes arguments and nothing provides them",
                              time.perf_counter() - t0)
            if passes == "none" and backend == "interpreter":
                from axle.interpreter.evaluator import run_function
                from axle.tools.lifting import check_name
                outs = run_function(module, [], e)
                ret = fn.body.operations[-1]
                for v, out in zip(ret.operands, outs):  # a returned check.eq must say true
                    owner = getattr(v, "owner", None)
                    if owner is not None and check_name(owner) == "check.eq" and not np.all(np.asarray(out)):
                        raise AssertionError(f"check.eq at {owner.where()} returned false")
                continue
            hows.append(_run_lifted(case, e, backend, passes))
            if backend == "cpu" and hows[-1][0] == "compile-time":
                # the passes folded what the checks read (an iota, say): compile it again
                # without the constant folder, so that the backend computes it
                hows[-1] = _run_lifted(case, e, backend, passes, fold=False)
        how, host = "", ()
        if backend == "cpu" and hows:  # the case is as weak as its weakest entry function
            order = ("native", "host-callback", "compile-time")
            how = max((h for h, _ in hows), key=order.index)
            host = tuple(sorted({op for _, ops in hows for op in ops}))
        return Result(case.name, kind, "passed", "", time.perf_counter() - t0, how, host)
    except _Timeout:
        return Result(case.name, kind, "failed", f"timeout after {timeout:g} s", time.perf_counter() - t0)
    except Exception as e:  # a failed case, whatever the error: report its first line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        if type(e).__name__ == "Unsupported":  # refused at compile time: say so plainly
            first = f"unsupported: {first}"
        elif not isinstance(e, (AssertionError,)) and type(e).__module__.startswith("axle") is False:
            first = f"{type(e).__name__}: {first}"
        return Result(case.name, kind, "failed", first[:500], time.perf_counter() - t0)
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def collect_cases(paths: list[str]) -> list[Case]:
    from axle.ir import split_cases
    cases = []
    for f in mlir_files(paths):
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        parts = split_cases(text)
        for i, (line, chunk) in enumerate(parts):
            if not chunk.strip() or all(l.strip().startswith("//") or not l.strip() for l in chunk.splitlines()):
                continue
            cases.append(Case(f, line, i if len(parts) > 1 else 0, chunk))
    return cases


_DISABLED = re.compile(r"^// RUN-DISABLED\(([^)]*)\)", re.M)


def _worker(args):
    case, backend, passes, timeout = args
    result = run_case(case, backend, passes, timeout)
    disabled = _DISABLED.search(case.text)
    if result.status == "failed" and disabled and not result.message.startswith("unsupported: "):
        # StableHLO's own runner does not run this case either; say so, with why it failed here
        result.status = "skipped"
        result.message = f"upstream marks it RUN-DISABLED({disabled.group(1)}); here: {result.message}"
    return result


def run_all(cases: list[Case], backend: str, passes: str, jobs: int, timeout: float,
            progress: bool) -> list[Result]:
    results: list[Result] = []
    work = [(c, backend, passes, timeout) for c in cases]
    # big cases first so that the pool's tail is short
    work.sort(key=lambda w: -len(w[0].text))
    t0 = time.perf_counter()
    bar = _progress_bar(len(cases)) if progress else None

    def show(n):
        if not progress:
            return
        failed = sum(r.status == "failed" for r in results)
        if bar is not None:  # tqdm: rate and time left as well
            bar.set_postfix_str(f"{failed} failed", refresh=False)
            bar.update(n - bar.n)
            return
        sys.stderr.write(f"\r[{n}/{len(cases)}] {failed} failed, {time.perf_counter() - t0:.0f}s ")
        sys.stderr.flush()

    if jobs <= 1:
        for w in work:
            results.append(_worker(w))
            show(len(results))
    else:
        ctx = mp.get_context("fork")
        # a worker is replaced after 50 chunks (200 cases), which bounds what one process
        # accumulates. (The SIGABRT that long-lived workers hit inside LLVM's link was
        # RuntimeDyld placing an object's code and data >2 GiB apart; llvm_env.py links
        # with JITLink since, in one allocation per object.)
        with ctx.Pool(jobs, maxtasksperchild=50) as pool:
            for r in pool.imap_unordered(_worker, work, chunksize=4):
                results.append(r)
                show(len(results))
    if bar is not None:
        bar.close()
    elif progress:
        sys.stderr.write("\n")
    return results


def _progress_bar(total: int):
    """A tqdm bar on stderr, or None without tqdm (then the plain progress line is used)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="conformance", unit="case", file=sys.stderr, dynamic_ncols=True,
                smoothing=0.05)


def native_summary(results: list[Result]) -> str:
    """What the passed cases of a compiling backend ran: native code end to end, host
    callbacks (with the ops that took them), or answers known at compile time."""
    passed = [r for r in results if r.status == "passed"]
    native = sum(r.how == "native" for r in passed)
    host = [r for r in passed if r.how == "host-callback"]
    folded = [r for r in passed if r.how == "compile-time"]
    ops: dict = {}
    for r in host:
        for op in r.host_ops:
            ops[op] = ops.get(op, 0) + 1
    lines = [f"passed cases: {native} ran native code end to end, {len(host)} went through host "
             f"callbacks, {len(folded)} were answered at compile time"]
    if ops:
        lines.append("host-callback ops (cases): " + ", ".join(f"{k} ({v})" for k, v in sorted(ops.items())))
    for r in folded:
        lines.append(f"ANSWERED AT COMPILE TIME {r.name}")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="axle conformance", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="example: axle conformance ../shared/conformance --jobs 2")
    ap.add_argument("paths", nargs="+", help=".mlir files or folders of them")
    ap.add_argument("--backend", default="interpreter", choices=BACKENDS, help="what runs the programs")
    ap.add_argument("--passes", default=None, choices=("none", "default"),
                    help="run the default pass pipeline first ('default'): inputs then become "
                         "arguments and checks run on the host, so folding cannot answer")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per case before it fails")
    ap.add_argument("--json", metavar="FILE", help="write every case's result to FILE")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    a = ap.parse_args(argv)
    if a.passes is None:  # compiling backends run the default pipeline unless told otherwise
        a.passes = "none" if a.backend == "interpreter" else "default"
    t0 = time.perf_counter()
    cases = collect_cases(a.paths)
    results = run_all(cases, a.backend, a.passes, a.jobs, a.timeout,
                      progress=sys.stderr.isatty() and not a.quiet)
    results.sort(key=lambda r: r.name)
    for r in results:
        if r.status == "failed":
            print(f"FAILED {r.name}: {r.message}")
    for r in results:
        if r.status == "skipped":
            print(f"SKIPPED {r.name}: {r.message}")
    wall = time.perf_counter() - t0
    for kind in ("run", "verify", "dynamic"):
        rs = [r for r in results if r.kind == kind]
        print(f"{kind} cases: {sum(r.status == 'passed' for r in rs)} passed, "
              f"{sum(r.status == 'failed' for r in rs)} failed, {sum(r.status == 'skipped' for r in rs)} skipped")
    if a.backend != "interpreter":
        print(native_summary(results))
    print(f"backend {a.backend}, passes {a.passes}, {len(results)} cases in {wall:.1f}s with {a.jobs} jobs")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"backend": a.backend, "passes": a.passes, "seconds": wall,
                       "results": [asdict(r) for r in results]}, fh, indent=1)
    n_pass = sum(r.status == "passed" for r in results)
    n_fail = sum(r.status == "failed" for r in results)
    n_skip = sum(r.status == "skipped" for r in results)
    print(f"conformance: {n_pass} passed, {n_fail} failed, {n_skip} skipped")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
