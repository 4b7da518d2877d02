"""Single skinny dots: axle (the skinny kernel) vs axle (the path before it: BLAS, packed)
vs jax.jit, interleaved in one process (median of ROUNDS rounds).

    .venv/bin/python benchmarks/results/decode_micro.py [ROUNDS] [VECTOR_BITS]

VECTOR_BITS (256) emits the code an AVX2 host (Zen 3) gets, on this machine.
"""
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import axle
from axle.backends.cpu import disk_cache, kernels_dot_skinny
from axle.backends.cpu import executable as cpu_exe

CASES = [
    ("x[1,4096] @ W[4096,4096]", lambda a, b: a @ b, (1, 4096), (4096, 4096)),
    ("x[1,1024] @ W[1024,1024]", lambda a, b: a @ b, (1, 1024), (1024, 1024)),
    ("x[4,512] @ W[512,512]", lambda a, b: a @ b, (4, 512), (512, 512)),
    ("x[7,2048] @ W[2048,2048]", lambda a, b: a @ b, (7, 2048), (2048, 2048)),
    ("W[4096,4096] @ v[4096]", lambda a, b: a @ b, (4096, 4096), (4096,)),
    ("x[2,1024] @ W[3000,1024]^T", lambda a, b: a @ b.T, (2, 1024), (3000, 1024)),
    ("q[4,8,1,64] . K[4,8,1024,64]", lambda a, b: jnp.einsum("bhqd,bhkd->bhqk", a, b), (4, 8, 1, 64), (4, 8, 1024, 64)),
    ("p[4,8,1,1024] @ V[4,8,1024,64]", lambda a, b: jnp.einsum("bhqk,bhkd->bhqd", a, b), (4, 8, 1, 1024),
     (4, 8, 1024, 64)),
]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    if len(sys.argv) > 2:
        kernels_dot_skinny._vector_bits = lambda: int(sys.argv[2])
    r = np.random.default_rng(0)
    print("| dot | bytes read | axle skinny us | axle before us | jax.jit us | XLA/skinny | before/skinny | GB/s skinny |")
    print("|---|---|---|---|---|---|---|---|")
    for name, fn, sa, sb in CASES:
        a, b = r.standard_normal(sa).astype(np.float32), r.standard_normal(sb).astype(np.float32)
        text = jax.jit(fn).lower(a, b).as_text()
        exes = {}
        for k, on in (("skinny", True), ("before", False)):
            kernels_dot_skinny.ENABLED[0] = on
            with disk_cache.disabled():
                cpu_exe.clear_memory_cache()
                exes[k] = axle.compile(text, backend="cpu")
                cpu_exe.clear_memory_cache()
        kernels_dot_skinny.ENABLED[0] = True
        assert any((k.library or "").startswith("skinny") for k in exes["skinny"].program.kernels)
        jf = jax.jit(fn)
        da, db = jax.device_put(a), jax.device_put(b)
        want = np.asarray(jf(da, db))
        for e in exes.values():
            np.testing.assert_allclose(e(a, b), want, rtol=1e-3, atol=1e-3)
        calls = {"skinny": lambda: exes["skinny"](a, b), "before": lambda: exes["before"](a, b),
                 "xla": lambda: jax.block_until_ready(jf(da, db))}
        t0 = time.perf_counter()
        calls["xla"]()
        n = max(3, int(2e-2 / max(1e-6, time.perf_counter() - t0)))
        ts = {k: [] for k in calls}
        for _ in range(rounds):
            for k, c in calls.items():
                c()
                t0 = time.perf_counter()
                for _ in range(n):
                    c()
                ts[k].append((time.perf_counter() - t0) / n * 1e6)
        med = {k: statistics.median(v) for k, v in ts.items()}
        nbytes = a.nbytes + b.nbytes
        print(f"| {name} | {nbytes / 2**20:.2f} MiB | {med['skinny']:.1f} | {med['before']:.1f} | {med['xla']:.1f} | "
              f"{med['xla'] / med['skinny']:.2f} | {med['before'] / med['skinny']:.2f} | "
              f"{nbytes / med['skinny'] / 1e3:.1f} |", flush=True)


if __name__ == "__main__":
    main()
