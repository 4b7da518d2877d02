"""Runtime measurements (benchmarks/results/runtime.md): execute overhead with Buffers vs
numpy arrays, the copy saved by donating a KV cache to a decode step, AOT load vs cold
compile of the GPT-2 block, 8 threads x 200 calls. Rounds are interleaved; medians and
the spread (min..max of the round medians) are printed.

    .venv/bin/python benchmarks/runtime_bench.py [--rounds 7]
"""
import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import axle
from axle.interpreter import interpret

GPT2 = os.path.join(os.path.dirname(axle.__file__), "examples", "gpt2_block.mlir")
SMALL = """func.func @main(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %0 = stablehlo.add %x, %y : tensor<16xf32>
  return %0 : tensor<16xf32>
}"""
H, T, D = 32, 1024, 64  # heads, cache length, head size: each cache 8 MiB
DECODE = f"""func.func @main(%k: tensor<{H}x{T}x{D}xf32>, %v: tensor<{H}x{T}x{D}xf32>, %q: tensor<{H}x1x{D}xf32>,
                      %nk: tensor<{H}x1x{D}xf32>, %nv: tensor<{H}x1x{D}xf32>, %pos: tensor<i32>)
    -> (tensor<{H}x1x{D}xf32>, tensor<{H}x{T}x{D}xf32>, tensor<{H}x{T}x{D}xf32>) {{
  %z = stablehlo.constant dense<0> : tensor<i32>
  %k2 = stablehlo.dynamic_update_slice %k, %nk, %z, %pos, %z : (tensor<{H}x{T}x{D}xf32>, tensor<{H}x1x{D}xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<{H}x{T}x{D}xf32>
  %v2 = stablehlo.dynamic_update_slice %v, %nv, %z, %pos, %z : (tensor<{H}x{T}x{D}xf32>, tensor<{H}x1x{D}xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<{H}x{T}x{D}xf32>
  %s = stablehlo.dot_general %q, %k2, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<{H}x1x{D}xf32>, tensor<{H}x{T}x{D}xf32>) -> tensor<{H}x1x{T}xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %m = stablehlo.reduce(%s init: %ninf) applies stablehlo.maximum across dimensions = [2] : (tensor<{H}x1x{T}xf32>, tensor<f32>) -> tensor<{H}x1xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0, 1] : (tensor<{H}x1xf32>) -> tensor<{H}x1x{T}xf32>
  %d = stablehlo.subtract %s, %mb : tensor<{H}x1x{T}xf32>
  %e = stablehlo.exponential %d : tensor<{H}x1x{T}xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %sum = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [2] : (tensor<{H}x1x{T}xf32>, tensor<f32>) -> tensor<{H}x1xf32>
  %sb = stablehlo.broadcast_in_dim %sum, dims = [0, 1] : (tensor<{H}x1xf32>) -> tensor<{H}x1x{T}xf32>
  %p = stablehlo.divide %e, %sb : tensor<{H}x1x{T}xf32>
  %o = stablehlo.dot_general %p, %v2, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<{H}x1x{T}xf32>, tensor<{H}x{T}x{D}xf32>) -> tensor<{H}x1x{D}xf32>
  return %o, %k2, %v2 : tensor<{H}x1x{D}xf32>, tensor<{H}x{T}x{D}xf32>, tensor<{H}x{T}x{D}xf32>
}}"""


def med(xs):
    return float(np.median(xs))


def per_call(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def rounds_table(variants: dict, rounds: int, n: int) -> dict:
    """{name: [per-call seconds per round]}, variants interleaved in every round."""
    out = {k: [] for k in variants}
    for _ in range(rounds):
        for k, fn in variants.items():
            out[k].append(per_call(fn, n))
    return out


def fmt(xs, scale=1e6, unit="us"):
    return f"{med(xs) * scale:.1f} {unit} ({min(xs) * scale:.1f}..{max(xs) * scale:.1f})"


def overhead(rounds):
    print("\n## Execute overhead: Buffers vs numpy arrays\n")
    for label, text in (("add f32[16]", SMALL), ("GPT-2 block", open(GPT2).read())):
        back = axle.compile(text)
        rt = axle.client().compile(text)
        rng = np.random.default_rng(0)
        args = [rng.standard_normal(t.shape).astype(t.dtype) for t in back.program.arg_types]
        bufs = [axle.device_put(a) for a in args]
        n = 2000 if label.startswith("add") else 20
        res = rounds_table({
            "axle.compile exe(*numpy) -> numpy": lambda: back(*args),
            "client exe.execute(numpy) -> Buffers": lambda: rt.execute(args),
            "client exe.execute(Buffers) -> Buffers": lambda: rt.execute(bufs),
        }, rounds if label.startswith("add") else 3 * rounds, n)
        print(f"{label}, {n} calls per round, {rounds if label.startswith('add') else 3 * rounds} rounds: median per call (spread of round medians)\n")
        print("| call | per call |\n| --- | --- |")
        for k, xs in res.items():
            print(f"| `{k}` | {fmt(xs)} |")
        print()


def donation(rounds):
    print(f"\n## Donation: KV-cache decode step (caches f32[{H},{T},{D}], {H * T * D * 4 >> 20} MiB each)\n")
    rng = np.random.default_rng(1)
    k = rng.standard_normal((H, T, D)).astype(np.float32)
    v = rng.standard_normal((H, T, D)).astype(np.float32)
    q, nk, nv = (rng.standard_normal((H, 1, D)).astype(np.float32) for _ in range(3))
    pos = np.array(17, np.int32)
    want = interpret(axle.parse_module(DECODE), k, v, q, nk, nv, pos)
    donating = axle.client().compile(DECODE, donate_argnums=(0, 1))
    plain = axle.client().compile(DECODE)
    print(f"aliases (result: argument): {donating.input_output_aliases}; "
          f"rejected: {donating.program.alias_rejections or 'none'}")
    got = donating.execute([axle.device_put(k), axle.device_put(v), q, nk, nv, pos])
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5)
    state = {"k": axle.device_put(k), "v": axle.device_put(v)}
    kb, vb = axle.device_put(k), axle.device_put(v)

    def step_donated():
        _, state["k"], state["v"] = donating.execute([state["k"], state["v"], q, nk, nv, pos])

    def step_plain():
        plain.execute([kb, vb, q, nk, nv, pos])
    res = rounds_table({"donated (caches updated in place)": step_donated,
                        "not donated (caches copied to new outputs)": step_plain}, rounds, 20)
    print("\n| decode step | per step |\n| --- | --- |")
    for key, xs in res.items():
        print(f"| {key} | {fmt(xs)} |")
    saved = med(res["not donated (caches copied to new outputs)"]) - med(res["donated (caches updated in place)"])
    print(f"\nsaved per step: {saved * 1e6:.0f} us and {2 * H * T * D * 4 >> 20} MiB of copies "
          f"(plus {2 * H * T * D * 4 >> 20} MiB of fresh output memory)")


# argv: what, path, "warm" (import SciPy's BLAS and axle's CPU modules before the clock starts)
CHILD = """
import time, sys
import axle
if sys.argv[3] == "warm":
    import numpy, scipy.linalg.cython_blas, axle.backends.cpu.executable, axle.backends.cpu.artifact, axle.runtime
t0 = time.perf_counter()
if sys.argv[1] == "compile":
    axle.compile(open(sys.argv[2]).read())
else:
    axle.load(sys.argv[2])
print(time.perf_counter() - t0)
"""


def aot(rounds):
    print("\n## AOT: load of the GPT-2 block's artifact vs a cold compile, each in a new process\n")
    import tempfile
    path = os.path.join(tempfile.mkdtemp(), "gpt2.axle")
    axle.save(axle.compile(open(GPT2).read()), path)
    env = dict(os.environ, AXLE_CACHE_DIR="off")
    res = {(w, m): [] for w in ("cold", "warm") for m in ("compile", "load")}
    for _ in range(rounds):
        for (w, m), xs in res.items():
            xs.append(float(subprocess.run([sys.executable, "-c", CHILD, m, GPT2 if m == "compile" else path, w],
                                           env=env, check=True, capture_output=True, text=True).stdout))
    print(f"artifact: {os.path.getsize(path)} bytes; {rounds} rounds, interleaved; the clock starts after "
          f"`import axle`; 'imports first': SciPy's BLAS and axle's CPU modules imported before it starts\n")
    print("| | as a program starts | imports first |\n| --- | --- | --- |")
    print(f"| cold compile (`axle.compile`, disk cache off) | {fmt(res['cold', 'compile'], 1e3, 'ms')} | "
          f"{fmt(res['warm', 'compile'], 1e3, 'ms')} |")
    print(f"| load (`axle.load`: read, check, link the object code) | {fmt(res['cold', 'load'], 1e3, 'ms')} | "
          f"{fmt(res['warm', 'load'], 1e3, 'ms')} |")
    print(f"\nload / compile: {med(res['cold', 'load']) / med(res['cold', 'compile']):.3f} as a program starts, "
          f"{med(res['warm', 'load']) / med(res['warm', 'compile']):.3f} with imports first")


def threads():
    print("\n## Threads: one executable, 8 threads x 200 calls\n")
    text = open(GPT2).read()
    exe = axle.compile(text)
    rng = np.random.default_rng(2)
    inputs = [[rng.standard_normal(t.shape).astype(t.dtype) for t in exe.program.arg_types] for _ in range(8)]
    want = [exe(*a) for a in inputs]

    def worker(t):
        return sum(not np.array_equal(exe(*inputs[t]), want[t]) for _ in range(200))
    t0 = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        wrong = sum(pool.map(worker, range(8)))
    dt = time.perf_counter() - t0
    t1 = time.perf_counter()
    for _ in range(200):
        exe(*inputs[0])
    single = (time.perf_counter() - t1) / 200
    print(f"GPT-2 block: {1600 - wrong} of 1600 results bit-identical to the single-threaded ones, "
          f"{wrong} wrong; {dt:.2f} s in all ({dt / 1600 * 1e6:.0f} us per call; one thread alone: "
          f"{single * 1e6:.0f} us per call)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="overhead,donation,aot,threads")
    a = ap.parse_args()
    import platform
    print(f"# runtime measurements\n\nmachine: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores (shared with other work), Python {platform.python_version()}, "
          f"numpy {np.__version__}, axle {axle.__version__}")
    for part in a.only.split(","):
        {"overhead": lambda: overhead(a.rounds), "donation": lambda: donation(a.rounds),
         "aot": lambda: aot(a.rounds), "threads": threads}[part]()


if __name__ == "__main__":
    main()
