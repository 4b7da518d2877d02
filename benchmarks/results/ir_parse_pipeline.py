"""Parse + default-pipeline time on the bench workloads' modules (issue 14, branch `ir`).

    # once: lower every bench workload with jax and keep the StableHLO text
    .venv/bin/python benchmarks/results/ir_parse_pipeline.py lower /tmp/ir_bench_mlir
    # time parse and parse + default pipeline (CPU time of the process), `--rounds` times each,
    # print medians (ms)
    .venv/bin/python benchmarks/results/ir_parse_pipeline.py time /tmp/ir_bench_mlir --rounds 5

To compare two trees, run the `time` command of each alternately (A B A B ...) with
PYTHONPATH pointing at the tree; the text files are the same for both.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def lower(out: str) -> None:
    import jax
    from axle.tools.bench_workloads import BENCH_WORKLOADS
    os.makedirs(out, exist_ok=True)
    for name, make in BENCH_WORKLOADS.items():
        fn, args = make()
        text = jax.jit(fn).lower(*args).as_text()
        with open(os.path.join(out, name + ".mlir"), "w") as fh:
            fh.write(text)
        print(name, len(text))


def time_all(src: str, rounds: int) -> dict:
    from axle.ir.text.reader import parse_module
    from axle.passes import PassManager, default_pipeline
    res = {}
    for fname in sorted(os.listdir(src)):
        if not fname.endswith(".mlir"):
            continue
        text = open(os.path.join(src, fname)).read()
        parse, total = [], []
        for _ in range(rounds):
            t0 = time.process_time()
            m = parse_module(text)
            t1 = time.process_time()
            PassManager(default_pipeline()).run(m)
            t2 = time.process_time()
            parse.append((t1 - t0) * 1e3)
            total.append((t2 - t0) * 1e3)
        res[fname[:-5]] = {"parse_ms": statistics.median(parse), "total_ms": statistics.median(total),
                           "parse_min_ms": min(parse), "total_min_ms": min(total),
                           "ops": sum(1 for _ in m.walk())}
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["lower", "time"])
    ap.add_argument("dir")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "lower":
        lower(a.dir)
        return 0
    res = time_all(a.dir, a.rounds)
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:<28}{v['ops']:>7} ops  parse {v['parse_ms']:8.2f} ms  parse+pipeline {v['total_ms']:8.2f} ms")
        print(f"{'total':<40}parse {sum(v['parse_ms'] for v in res.values()):8.2f} ms  "
              f"parse+pipeline {sum(v['total_ms'] for v in res.values()):8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
