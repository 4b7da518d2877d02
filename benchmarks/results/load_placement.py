"""Under one busy process: does anything about where or how long axle's pool threads run
help? Compiles bench workloads once, then times them (median of 7 interleaved rounds)
quiet and beside one busy process, under three settings switched between rounds:

  spin   worker spin before sleeping (pause instructions): 2000 (default), 20000, 200000
  slice  EEVDF slice of the pool's worker (sched_setattr sched_runtime): default vs 100 us
  pin    worker on CPU 0 and the calling thread on CPU 1 vs both free

Usage: python benchmarks/results/load_placement.py spin|slice|pin [workload,...]
(results of 2026-11-25: benchmarks/RESULTS.md, "Under load")."""
import ctypes
import os
import subprocess
import sys
import threading
import time

import jax
import numpy as np

import axle
from axle.backends.cpu import parallel
from axle.tools.bench_workloads import BENCH_WORKLOADS

MODE = sys.argv[1]
NAMES = (sys.argv[2] if len(sys.argv) > 2 else
         "gelu_bias_residual,softmax_rows,mlp_inference,conv_forms,argsort_rows").split(",")


class SchedAttr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32), ("flags", ctypes.c_uint64),
                ("nice", ctypes.c_int32), ("prio", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64),
                ("util_min", ctypes.c_uint32), ("util_max", ctypes.c_uint32)]


def worker_tid():
    return parallel._STATE["threads"][0].native_id


def set_spin(v):
    parallel._STATE["configure"](1, v)


def set_slice(ns):
    libc = ctypes.CDLL(None, use_errno=True)
    a = SchedAttr(size=ctypes.sizeof(SchedAttr), policy=0, runtime=ns)
    if libc.syscall(314, worker_tid(), ctypes.byref(a), 0) != 0:  # SYS_sched_setattr, x86-64
        raise OSError(ctypes.get_errno(), "sched_setattr")


def set_pin(on):
    me = threading.get_native_id()
    os.sched_setaffinity(worker_tid(), {0} if on else {0, 1})
    os.sched_setaffinity(me, {1} if on else {0, 1})


SETTINGS = {"spin": [(f"spin {v}", lambda v=v: set_spin(v)) for v in (2000, 20000, 200000)],
            "slice": [("default slice", lambda: set_slice(0)), ("100 us slice", lambda: set_slice(100_000))],
            "pin": [("free", lambda: set_pin(False)), ("pinned apart", lambda: set_pin(True))]}[MODE]


def per_call(exe, args):
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            exe(*args)
        d = time.perf_counter() - t
        if d > 0.05:
            return d / n
        n *= 2


def main():
    exes = {}
    for nm in NAMES:
        fn, args = BENCH_WORKLOADS[nm]()
        flat = jax.tree_util.tree_leaves(args)
        exe = axle.compile(jax.jit(fn).lower(*args).as_text())
        exe(*flat)
        exes[nm] = (exe, flat)
    assert parallel.available() and parallel._STATE["threads"], "needs axle's pool (2+ cores)"
    for load in (0, 1):
        procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
        time.sleep(0.5)
        times = {(nm, s): [] for nm in NAMES for s, _ in SETTINGS}
        try:
            for _ in range(7):
                for s, apply in SETTINGS:
                    apply()
                    for nm in NAMES:
                        times[(nm, s)].append(per_call(*exes[nm]))
        finally:
            for p in procs:
                p.kill()
            SETTINGS[0][1]()
        for nm in NAMES:
            print(f"busy={load} {nm}: " + "  ".join(f"{s} {np.median(times[(nm, s)]) * 1e3:.3f} ms"
                                                    for s, _ in SETTINGS))


if __name__ == "__main__":
    main()
