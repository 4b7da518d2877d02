"""Fork stress: one thread compiles new programs in a loop (so it is inside LLVM most of
the time) while the main thread forks; each child compiles and runs a new program and
checks its result against numpy. A child that does not finish within --child-timeout is
killed and counted as hung.

    python tests/fuzz/fork_stress.py --forks 20 [--threads 2] [--child-timeout 60]

Prints `forks=N hung=H failed=F` and exits 1 when H or F is not 0.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time

import numpy as np


def program(c: float) -> str:
    return f"""func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {{
  %c = stablehlo.constant dense<{c}> : tensor<64xf32>
  %0 = stablehlo.multiply %x, %c : tensor<64xf32>
  %1 = stablehlo.tanh %0 : tensor<64xf32>
  %2 = stablehlo.exponential %1 : tensor<64xf32>
  return %2 : tensor<64xf32>
}}"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--forks", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1, help="threads compiling while the main thread forks")
    ap.add_argument("--child-timeout", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    import axle
    from axle.backends.cpu import disk_cache
    rng = random.Random(a.seed)
    stop = threading.Event()

    def busy(t: int):
        with disk_cache.using(None):
            k = 0
            while not stop.is_set():
                axle.compile(program(1000 + 1000 * t + k))
                k += 1

    with disk_cache.using(None):
        axle.compile(program(0.5))  # LLVM, BLAS and the pool are up before the threads start
    threads = [threading.Thread(target=busy, args=(t,), daemon=True) for t in range(a.threads)]
    for t in threads:
        t.start()
    hung = failed = 0
    for i in range(a.forks):
        time.sleep(rng.random() * 0.2)
        pid = os.fork()
        if pid == 0:  # the child: compile a program nobody compiled before, run, check
            code = 1
            if os.environ.get("AXLE_FORK_STRESS_TRACE"):  # where a hung child is stuck
                import faulthandler
                faulthandler.dump_traceback_later(a.child_timeout * 0.8, exit=True)
            try:
                with disk_cache.using(None):
                    c = 2.0 + i / 7
                    x = np.linspace(-1, 1, 64).astype(np.float32)
                    got = axle.compile(program(c))(x)
                    code = 0 if np.allclose(got, np.exp(np.tanh(x * np.float32(c))), rtol=1e-5) else 2
            finally:
                os._exit(code)
        deadline = time.monotonic() + a.child_timeout
        status = None
        while time.monotonic() < deadline:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(st)
                break
            time.sleep(0.02)
        if status is None:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            hung += 1
            print(f"fork {i}: hung", flush=True)
        elif status != 0:
            failed += 1
            print(f"fork {i}: exit status {status}", flush=True)
    stop.set()
    print(f"forks={a.forks} hung={hung} failed={failed}", flush=True)
    return 1 if hung or failed else 0


if __name__ == "__main__":
    sys.exit(main())
