"""One executable called from 8 threads at once, 200 calls each: every result correct."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import axle

TEXT = """func.func @main(%x: tensor<32x64xf32>, %w: tensor<64x64xf32>) -> tensor<32x64xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
  %1 = stablehlo.tanh %0 : tensor<32x64xf32>
  return %1 : tensor<32x64xf32>
}"""
exe = axle.compile(TEXT)
rng = np.random.default_rng(0)
w = rng.standard_normal((64, 64)).astype(np.float32) / 8
xs = [rng.standard_normal((32, 64)).astype(np.float32) for _ in range(8)]
want = [exe(x, w) for x in xs]


def worker(t):
    return sum(not np.array_equal(exe(xs[t], w), want[t]) for _ in range(200))


with ThreadPoolExecutor(8) as pool:
    wrong = sum(pool.map(worker, range(8)))
print(f"8 threads x 200 calls: {8 * 200 - wrong} correct, {wrong} wrong")
assert wrong == 0
print("ok")
