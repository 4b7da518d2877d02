"""In-process A/B of two thread-pool runtimes, quiet and beside one busy process.

    git show acda185:axle/backends/cpu/parallel.py > /tmp/old_parallel.py
    .venv/bin/python benchmarks/results/pool_ab.py /tmp/old_parallel.py WORKLOADS ROUNDS OUT.json
    .venv/bin/python benchmarks/results/pool_ab.py --summary OUT1.json [OUT2.json ...]

Both runtimes are linked into one process: the old one from the given parallel.py (its
`_start()`), the new one from this checkout. Each workload is compiled twice, identical
code whose `axle_pool_run` is bound at link time to one pool or the other (their results
are checked equal), and XLA runs the same module. Rounds alternate quiet and busy: one
spinning process (`while True: pass`) is paused with SIGSTOP for quiet batches and resumed
with SIGCONT for busy ones, and within a state the old pool, the new one and XLA take
turns (order rotated per round), each a batch of about 30 ms after 10 ms idle. On a machine
shared with other work, the figures to read are the per-round ratios (same round, same
state, neighbouring batches): busy / quiet of each runtime (its slowdown) and new / old.
"""
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import time

import numpy as np

TARGET_S = 0.03


def measure(old_path: str, names: list, rounds: int) -> dict:
    import jax

    import axle
    from axle.backends.cpu import disk_cache, parallel
    from axle.backends.cpu import executable as cpu_exe
    from axle.backends.cpu.llvm_env import EXTERNAL_SYMBOLS
    from axle.tools.bench_workloads import BENCH_WORKLOADS
    assert parallel.available(), "no thread pool here"
    new_addr = EXTERNAL_SYMBOLS.pop("axle_pool_run")  # (the old runtime defines it again)
    spec = importlib.util.spec_from_file_location("old_parallel", old_path)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    assert old._start()
    addrs = {"old": EXTERNAL_SYMBOLS["axle_pool_run"], "new": new_addr}
    progs = {}
    for nm in names:
        fn, args = BENCH_WORKLOADS[nm]()
        text = jax.jit(fn).lower(*args).as_text()
        flat = [np.ascontiguousarray(np.asarray(a)) for a in jax.tree_util.tree_leaves(args)]
        exes = {}
        for v, addr in addrs.items():
            EXTERNAL_SYMBOLS["axle_pool_run"] = addr
            cpu_exe.clear_memory_cache()
            with disk_cache.disabled():
                exes[v] = axle.compile(text, backend="cpu")
        for a, b in zip(exes["old"].execute(flat), exes["new"].execute(flat)):
            assert np.array_equal(np.asarray(a), np.asarray(b)), nm
        jitted, dev = jax.jit(fn), jax.device_put(args)
        jax.block_until_ready(jitted(*dev))
        progs[nm] = {"old": lambda e=exes["old"], f=flat: e.execute(f),
                     "new": lambda e=exes["new"], f=flat: e.execute(f),
                     "xla": lambda j=jitted, d=dev: jax.block_until_ready(j(*d))}
    EXTERNAL_SYMBOLS["axle_pool_run"] = new_addr

    def batch(f):
        f()
        f()
        t0 = time.perf_counter()
        f()
        k = max(1, min(3000, int(TARGET_S / max(time.perf_counter() - t0, 1e-6))))
        time.sleep(0.01)
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(k):
            f()
        return (time.perf_counter() - t0) / k, (time.process_time() - c0) / k

    out = {nm: {v: {"quiet": [], "busy": [], "cpu_quiet": [], "cpu_busy": []} for v in ("old", "new", "xla")}
           for nm in names}
    pool = {nm: {"quiet": {}, "busy": {}} for nm in names}
    spinner = subprocess.Popen([sys.executable, "-c", "while True:\n    pass"])
    os.kill(spinner.pid, signal.SIGSTOP)
    try:
        for r in range(rounds):
            for state in (("quiet", "busy") if r % 2 == 0 else ("busy", "quiet")):
                os.kill(spinner.pid, signal.SIGCONT if state == "busy" else signal.SIGSTOP)
                time.sleep(0.05)
                for nm in names:
                    order = ["old", "new", "xla"][r % 3:] + ["old", "new", "xla"][:r % 3]
                    for v in order:
                        s0 = parallel.stats()
                        t, c = batch(progs[nm][v])
                        if v == "new":
                            for k, x in parallel.stats().items():
                                pool[nm][state][k] = pool[nm][state].get(k, 0) + x - s0[k]
                        out[nm][v][state].append(1e3 * t)
                        out[nm][v]["cpu_" + state].append(1e3 * c)
    finally:
        spinner.kill()
        spinner.wait()
    for nm in names:
        out[nm]["pool_new"] = pool[nm]
    return out


def summary(files: list) -> str:
    agg: dict = {}
    for f in files:
        with open(f) as fh:
            for nm, vs in json.load(fh).items():
                for v, d in vs.items():
                    if v == "pool_new":
                        continue
                    for k, xs in d.items():
                        agg.setdefault(nm, {}).setdefault(v, {}).setdefault(k, []).extend(xs)
    med = statistics.median
    lines = ["| workload | old: quiet -> busy ms, slowdown | new: quiet -> busy ms, slowdown | "
             "XLA: quiet -> busy ms, slowdown | new / old, quiet | new / old, busy | "
             "new's slowdown / XLA's |", "|---|---|---|---|---|---|---|"]
    for nm, a in agg.items():
        cells, slow = [], {}
        for v in ("old", "new", "xla"):
            slow[v] = [b / q for q, b in zip(a[v]["quiet"], a[v]["busy"])]
            cells.append(f"{med(a[v]['quiet']):.3f} -> {med(a[v]['busy']):.3f}, {med(slow[v]):.2f}x "
                         f"({np.percentile(slow[v], 25):.2f}-{np.percentile(slow[v], 75):.2f})")
        ratio = {s: [n / o for n, o in zip(a["new"][s], a["old"][s])] for s in ("quiet", "busy")}
        rel = med(slow["new"]) / med(slow["xla"])
        lines.append(f"| {nm} | " + " | ".join(cells) + " | " + " | ".join(
            f"{med(ratio[s]):.2f} ({np.percentile(ratio[s], 25):.2f}-{np.percentile(ratio[s], 75):.2f})"
            for s in ("quiet", "busy")) + f" | {rel:.2f}{' *' if rel > 1.25 else ''} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--summary":
        print(summary(sys.argv[2:]))
    else:
        result = measure(sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]))
        with open(sys.argv[4], "w") as fh:
            json.dump(result, fh)
        print(summary([sys.argv[4]]))
