"""Process replay: record the LLVM IR the CPU backend generates for a set of programs, and
compare two recordings.

A refactoring of code generation should not change the code it generates (or each change
should be explained). `record` compiles every StableHLO conformance case (as the conformance
runner does: inputs lifted to arguments, checks on the host) and every `axle bench`
workload with the in-memory and disk caches off and `--dump_to` set, and keeps each
program's LLVM IR (before LLVM's optimizer) under OUT/<program>/NNN.<entry>.cpu.ll.
Addresses the IR embeds (host callbacks, constants' pointers) differ between processes
and are written as `ADDR`. `compare A B` says which programs' IR is the same, which
differs (with the first differing line), and which were recorded on one side only.

    python -m axle.tools.replay record OUT [--cases PATH ...] [--no-workloads] [-j 2]
    python -m axle.tools.replay compare OLD NEW [--show 20]
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from typing import Optional

DEFAULT_CASES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "conformance")
_ADDRESS = re.compile(r"\b(i64|i32) (-?\d{9,})\b")
# a host callback's first argument: the key of the Python function, numbered per process
_CALLBACK_KEY = re.compile(r'(call void %"[^"]+"\()i64 \d+(, i8\*\* )')


def normalize(ir_text: str) -> str:
    """The IR with what differs between processes replaced: addresses (large integer
    constants) and the keys of host callbacks (numbered in registration order)."""
    return _CALLBACK_KEY.sub(r"\1i64 KEY\2", _ADDRESS.sub(lambda m: f"{m.group(1)} ADDR", ir_text))


def _safe(name: str) -> str:
    """A folder name for a case: its path from the conformance root on (so that recordings
    made in different checkouts line up), with its line for a file of several cases."""
    name = name.replace(os.sep, "/")
    if "/conformance/" in name:
        name = name.split("/conformance/", 1)[1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")[-150:]


def _collect(folder: str, out: str) -> int:
    files = sorted(f for f in os.listdir(folder) if f.endswith(".cpu.ll")) if os.path.isdir(folder) else []
    if not files:
        return 0
    os.makedirs(out, exist_ok=True)
    seen: dict = {}
    for f in files:  # NNN.<entry>.cpu.ll -> <entry>.K.cpu.ll: programs compiled on several
        # threads at once (one per device) are numbered in no fixed order; entries are
        entry = f.split(".", 1)[1][:-len(".cpu.ll")]
        k = seen[entry] = seen.get(entry, -1) + 1
        with open(os.path.join(folder, f), encoding="utf-8") as fh:
            text = normalize(fh.read())
        with open(os.path.join(out, f"{entry}.{k}.cpu.ll"), "w", encoding="utf-8") as fh:
            fh.write(text)
    return len(files)


def _record_case(args) -> tuple:
    case, out_root = args
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu.executable import clear_memory_cache
    from axle.tools.conformance import run_case
    from axle.flags import scoped_env
    tmp = tempfile.mkdtemp(prefix="axle-replay-")
    try:
        with scoped_env(AXLE_FLAGS=f"--dump_to={tmp}"):
            clear_memory_cache()
            with disk_cache.disabled():
                result = run_case(case, "cpu", "default", timeout=120.0)
        n = _collect(tmp, os.path.join(out_root, "conformance", _safe(case.name)))
        return case.name, result.status, n
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def record_workloads(out_root: str, names: Optional[list] = None, log=print) -> dict:
    import jax

    import axle
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu.executable import clear_memory_cache
    from axle.tools.bench_workloads import BENCH_WORKLOADS
    counts = {}
    for name in names or list(BENCH_WORKLOADS):
        fn, args = BENCH_WORKLOADS[name]()
        text = jax.jit(fn).lower(*args).as_text()
        tmp = tempfile.mkdtemp(prefix="axle-replay-")
        try:
            clear_memory_cache()
            with disk_cache.disabled():
                axle.compile(text, backend="cpu", dump_to=tmp)
            counts[name] = _collect(tmp, os.path.join(out_root, "workloads", name))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log(f"  workload {name}: {counts[name]} program(s)")
    return counts


def record(out_root: str, case_paths: list, workloads: bool = True, jobs: int = 2, log=print) -> dict:
    from multiprocessing import get_context

    from axle.tools.conformance import collect_cases
    os.makedirs(out_root, exist_ok=True)
    cases = collect_cases(case_paths) if case_paths else []
    statuses = {}
    if cases:
        work = [(c, out_root) for c in cases]
        if jobs > 1:
            with get_context("fork").Pool(jobs, maxtasksperchild=50) as pool:
                done = pool.imap_unordered(_record_case, work, chunksize=4)
                for name, status, n in done:
                    statuses[name] = [status, n]
        else:
            for w in work:
                name, status, n = _record_case(w)
                statuses[name] = [status, n]
        log(f"conformance: {len(cases)} cases, "
            f"{sum(1 for s, _ in statuses.values() if s == 'passed')} passed, "
            f"{sum(n for _, n in statuses.values())} programs recorded")
    if workloads:
        statuses.update({f"workload:{k}": ["recorded", v] for k, v in record_workloads(out_root, log=log).items()})
    with open(os.path.join(out_root, "index.json"), "w", encoding="utf-8") as fh:
        json.dump(statuses, fh, indent=0, sort_keys=True)
    return statuses


def _programs(root: str) -> dict:
    """{relative folder/file: sha256 of its text} for every recorded .ll under root."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".cpu.ll"):
                path = os.path.join(dirpath, f)
                with open(path, "rb") as fh:
                    out[os.path.relpath(path, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def compare(old: str, new: str, show: int = 20, log=print) -> dict:
    a, b = _programs(old), _programs(new)
    same = sorted(k for k in a if k in b and a[k] == b[k])
    differ = sorted(k for k in a if k in b and a[k] != b[k])
    only_old = sorted(k for k in a if k not in b)
    only_new = sorted(k for k in b if k not in a)
    log(f"replay: {len(same)} programs identical, {len(differ)} differ, {len(only_old)} only in "
        f"{old}, {len(only_new)} only in {new}")
    for k in differ[:show]:
        with open(os.path.join(old, k), encoding="utf-8") as fh:
            x = fh.read().splitlines()
        with open(os.path.join(new, k), encoding="utf-8") as fh:
            y = fh.read().splitlines()
        diff = [l for l in difflib.unified_diff(x, y, lineterm="", n=0) if not l.startswith(("---", "+++"))]
        log(f"  differs: {k} ({sum(1 for l in diff if l[:1] in '+-')} lines)")
        for l in diff[:6]:
            log(f"      {l[:160]}")
    for k in (only_old + only_new)[:show]:
        log(f"  one side only: {k}")
    return {"same": same, "differ": differ, "only_old": only_old, "only_new": only_new}


def main(argv: Optional[list] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m axle.tools.replay", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="record the LLVM IR of the conformance cases and workloads")
    r.add_argument("out")
    r.add_argument("--cases", nargs="*", default=None, help="conformance files or folders "
                   "(default: ../shared/conformance)")
    r.add_argument("--no-workloads", action="store_true")
    r.add_argument("--workloads-only", action="store_true")
    r.add_argument("-j", "--jobs", type=int, default=2)
    c = sub.add_parser("compare", help="compare two recordings")
    c.add_argument("old")
    c.add_argument("new")
    c.add_argument("--show", type=int, default=20)
    a = p.parse_args(argv)
    if a.cmd == "record":
        paths = [] if a.workloads_only else (a.cases if a.cases else [os.path.normpath(DEFAULT_CASES)])
        record(a.out, paths, workloads=not a.no_workloads, jobs=a.jobs)
        return 0
    res = compare(a.old, a.new, a.show)
    return 0 if not (res["differ"] or res["only_old"] or res["only_new"]) else 1


if __name__ == "__main__":
    sys.exit(main())
