"""Observability: axle.metrics(), one log line per compile, and AXLE_FLAGS=--explain_cache_misses."""
import logging
import os

import numpy as np

os.environ["AXLE_FLAGS"] = "--explain_cache_misses"
logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s: %(message)s")
import axle  # noqa: E402

TEXT = """func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = stablehlo.exponential %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}"""
exe = axle.compile(TEXT)  # logged: "compile @main on cpu: ..."
exe(np.ones(3, np.float32))  # dynamic shapes: one program per signature
exe(np.ones(5, np.float32))  # explained: "... differs ... in signature ([[3]] -> [[5]])"
axle.compile(TEXT)  # the same module again: a memory-cache hit
for name, value in axle.metrics().items():
    print(f"{name:>20}: {value:.3f}" if isinstance(value, float) else f"{name:>20}: {value}")
print("ok")
