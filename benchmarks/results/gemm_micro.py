"""Single f32 GEMMs: axle (compiled from jax.jit(...).lower(...).as_text()) against jax.jit, interleaved in one process.

Usage: LAYOUT=nn|nt|tn REPS=7 python benchmarks/results/gemm_micro.py 256x784x1024,8x1024x1024
(MxKxN; nn: a @ b, nt: a @ b.T with b stored [N, K], tn: a.T @ b with a stored [K, M])."""
import os, sys, time
import numpy as np
import jax
import axle

SHAPES = [s.split("x") for s in (sys.argv[1].split(",") if len(sys.argv) > 1 else
          ["256x784x1024", "256x1024x1024", "1024x768x768", "8x1024x1024", "256x1024x10"])]
LAYOUT = os.environ.get("LAYOUT", "nn")  # nn, nt (x @ W.T), tn (x.T @ y)
REPS = int(os.environ.get("REPS", "7"))

def timeit(f, n):
    ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return ts

for s in SHAPES:
    m, k, n = map(int, s)
    r = np.random.default_rng(0)
    if LAYOUT == "nn":
        a, b = r.standard_normal((m, k), np.float32), r.standard_normal((k, n), np.float32); fn = lambda a, b: a @ b
    elif LAYOUT == "nt":
        a, b = r.standard_normal((m, k), np.float32), r.standard_normal((n, k), np.float32); fn = lambda a, b: a @ b.T
    else:
        a, b = r.standard_normal((k, m), np.float32), r.standard_normal((k, n), np.float32); fn = lambda a, b: a.T @ b
    exe = axle.compile(jax.jit(fn).lower(a, b).as_text(), backend="cpu")
    jf = jax.jit(fn)
    libs = {kk.library for kk in exe.program.kernels if kk.library}
    got = np.asarray(exe.execute([a, b])[0]); want = np.asarray(jf(a, b))
    err = float(np.abs(got - want).max() / (np.abs(want).max() + 1e-9))
    inner = max(1, int(2e9 / (2 * m * n * k)))
    ax, xl = [], []
    for _ in range(REPS):
        ax += [min(timeit(lambda: exe.execute([a, b]), inner))]
        xl += [min(timeit(lambda: jf(a, b).block_until_ready(), inner))]
    fl = 2 * m * n * k / 1e9
    print(f"{LAYOUT} {m}x{k}x{n} {sorted(libs)} axle {fl/np.median(ax):.0f} GF/s (min-med {fl/np.max(ax):.0f}-{fl/np.min(ax):.0f}) xla {fl/np.median(xl):.0f} ratio {np.median(xl)/np.median(ax):.2f} err {err:.1e}", flush=True)
