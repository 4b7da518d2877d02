"""Checking the gpu backend's PTX on the conformance suites with ptxas (no GPU needed).

Each run case is lifted as the CPU conformance run lifts it (inputs become arguments,
checks run on the host), optimized by the default pipeline, emitted as PTX and assembled
by ptxas for sm_90. A case is `accepted` when ptxas accepts the PTX of every entry,
`unsupported` when the backend refuses it at compile time (Unsupported, naming the op),
`failed` otherwise (an exception, ptxas refusing the PTX, or a crash of the process: the
cases run in worker processes, so an LLVM fatal error is counted, not fatal), and
`verify` for the suites' verify-only cases (nothing to run).

    python -m axle.tools.ptx_check [--jobs 2] [--every N] [--json out.json] PATH...
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
from collections import Counter


def check_case(case, gpu: str = "sm_90", simulate: bool = False) -> dict:
    """{status, message, op, kernels, ptx_bytes, sim} for one conformance case. With
    `simulate`, a case ptxas accepts also runs on the host through simulate.py and its
    checks are evaluated: sim is "passed" or "failed: why" ("" when not simulated)."""
    from axle.backends.gpu import emit_llvm
    from axle.backends.gpu.nvptx import PtxasError, ir_to_ptx, ptxas
    from axle.errors import Unsupported
    from axle.ir import parse_module
    from axle.passes import PassManager, default_pipeline
    from axle.tools.conformance import _has_checks, entry_functions
    from axle.tools.lifting import lift
    out = {"name": case.name, "status": "accepted", "message": "", "op": "", "kernels": 0, "ptx_bytes": 0, "sim": "", "serial": 0}
    sims = []
    try:
        module = parse_module(case.text, case.file)
        main = module.functions.get("main")
        if main is not None and main.function_type.inputs and not _has_checks(module):
            out["status"] = "verify"
            return out
        entries = entry_functions(module)
        if not entries:
            out["status"] = "verify"
            return out
        for e in entries:
            lifted = lift(parse_module(case.text, case.file), e)
            PassManager(default_pipeline(), verify_each=False).run(lifted.module)
            if any(op.name == "interpreter.run_parallel" for op in lifted.module.walk()):
                raise Unsupported("'interpreter.run_parallel': not supported by the gpu backend yet")
            prog = emit_llvm(lifted.module, e, passes=False)
            ptx = ir_to_ptx(prog.llvm_ir)
            ptxas(ptx)
            out["kernels"] += len(prog.kernels)
            out["serial"] += sum(k.kind == "serial" for k in prog.kernels)
            out["ptx_bytes"] += len(ptx)
            if simulate:
                sims.append((prog, lifted))
        for prog, lifted in sims:  # only when every entry's PTX passed ptxas
            from axle.backends.gpu.simulate import Simulated
            try:
                lifted.run_checks(Simulated(prog).run(lifted.args))
            except Exception as e:  # noqa: BLE001 - a wrong result or a failure, reported
                out["sim"] = f"failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"
                break
        else:
            out["sim"] = "passed" if sims else ""
    except Unsupported as e:
        out["status"] = "unsupported"
        out["message"] = str(e).splitlines()[0][:300]
        m = re.search(r"'([a-z_]+\.[a-z_0-9.]+)'", str(e))
        out["op"] = m.group(1) if m else str(e).split(":")[0][:60]
        f = re.search(r"(?:function|intrinsic) '([^']+)'", str(e))
        if f:
            out["op"] += f" ({f.group(1)})"
    except PtxasError as e:
        out["status"] = "failed"
        out["message"] = "ptxas: " + str(e)[:300]
    except Exception as e:  # noqa: BLE001 - every other failure is counted as failed
        out["status"] = "failed"
        out["message"] = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}"
    return out


def _worker(paths: list, indices: list, simulate: bool) -> None:
    from axle.tools.conformance import collect_cases
    cases = collect_cases(paths)
    for i in indices:
        print(json.dumps({"start": i}), flush=True)
        r = check_case(cases[i], simulate=simulate)
        r["index"] = i
        print(json.dumps(r), flush=True)


def _run_share(paths: list, indices: list, results: dict, names: dict, simulate: bool) -> None:
    """Run a share of the cases in worker processes; a crash marks the case in progress."""
    todo = list(indices)
    while todo:
        p = subprocess.Popen([sys.executable, "-m", "axle.tools.ptx_check", "--worker",
                              ",".join(map(str, todo)), *(["--simulate"] if simulate else []), *paths],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        current = None
        for line in p.stdout:
            msg = json.loads(line)
            if "start" in msg:
                current = msg["start"]
            else:
                results[msg["index"]] = msg
                current = None
        err = p.stderr.read()
        p.wait()
        done = set(results)
        if current is not None:  # the process died inside this case
            tail = (err.strip().splitlines() or ["?"])[-1][:300]
            results[current] = {"name": names[current], "index": current, "status": "failed", "op": "",
                                "message": f"crashed (exit {p.returncode}): {tail}", "kernels": 0, "ptx_bytes": 0}
            done.add(current)
        elif p.returncode != 0 and not [i for i in todo if i not in done]:
            break
        rest = [i for i in todo if i not in done]
        if len(rest) == len(todo):  # no progress: give up on the rest
            for i in rest:
                results[i] = {"name": names[i], "index": i, "status": "failed", "op": "",
                              "message": f"worker exited {p.returncode}: {err[-300:]}", "kernels": 0, "ptx_bytes": 0}
            break
        todo = rest


def run(paths: list, jobs: int = 2, every: int = 1, simulate: bool = False) -> list:
    from axle.tools.conformance import collect_cases
    cases = collect_cases(paths)
    names = {i: c.name for i, c in enumerate(cases)}
    chosen = list(range(0, len(cases), every))
    results: dict = {}
    shares = [chosen[k::jobs] for k in range(jobs)]
    threads = [threading.Thread(target=_run_share, args=(paths, s, results, names, simulate)) for s in shares if s]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [results[i] for i in chosen]


def summary(results: list) -> str:
    st = Counter(r["status"] for r in results)
    ops = Counter(r["op"] for r in results if r["status"] == "unsupported")
    lines = [f"cases: {len(results)}; accepted by ptxas: {st['accepted']}; unsupported: {st['unsupported']}; "
             f"failed: {st['failed']}; verify-only (nothing to run): {st['verify']}"]
    serial = sum(1 for r in results if r["status"] == "accepted" and r.get("serial"))
    lines.append(f"of the accepted, {serial} use a one-thread fallback kernel (serial.py)")
    sim = Counter(r.get("sim", "")[:6] for r in results if r["status"] == "accepted")
    if sim.get("passed", 0) or sim.get("failed", 0):
        lines.append(f"of the accepted, run on the host simulator with the suites' checks: "
                     f"{sim['passed']} passed, {sim['failed']} failed")
    lines.append("unsupported, by op: " + ", ".join(f"{o} {n}" for o, n in ops.most_common()))
    for r in results:
        if r["status"] == "failed":
            lines.append(f"FAILED {r['name']}: {r['message']}")
        elif r.get("sim", "").startswith("failed"):
            lines.append(f"SIMULATION {r['name']}: {r['sim']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m axle.tools.ptx_check")
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--every", type=int, default=1, help="check every N-th case only")
    ap.add_argument("--json", help="write every case's result here")
    ap.add_argument("--simulate", action="store_true", help="also run accepted cases on the host simulator")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker is not None:
        _worker(a.paths, [int(x) for x in a.worker.split(",") if x], a.simulate)
        return 0
    from axle.backends.gpu.nvptx import find_ptxas
    if find_ptxas() is None:
        print("ptxas not found: pip install nvidia-cuda-nvcc-cu12", file=sys.stderr)
        return 2
    results = run(a.paths, a.jobs, a.every, a.simulate)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    print(summary(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
