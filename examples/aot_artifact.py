"""Ahead-of-time: compile the GPT-2 block once, save it, and run it in a new process that
links the saved object code (LLVM never runs there)."""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import axle

model = os.path.join(os.path.dirname(axle.__file__), "examples", "gpt2_block.mlir")
path = os.path.join(tempfile.mkdtemp(), "gpt2_block.axle")
t0 = time.perf_counter()
exe = axle.compile(open(model).read())  # (or: axle compile gpt2_block.mlir -o gpt2_block.axle)
axle.save(exe, path)
print(f"compiled and saved in {time.perf_counter() - t0:.2f} s: {path} ({os.path.getsize(path)} bytes)")

args = [np.random.default_rng(0).standard_normal(t.shape).astype(t.dtype) for t in exe.program.arg_types]
np.savez(path + ".npz", *args)
np.save(path + ".want.npy", exe(*args))
child = f"""
import time, numpy as np, axle
t0 = time.perf_counter()
exe = axle.load({path!r})
print(f"new process: loaded in {{(time.perf_counter() - t0) * 1e3:.1f}} ms, "
      f"LLVM compiles: {{axle.metrics()['native_compiles']}}")
data = np.load({path + '.npz'!r})
got = exe(*[data[f'arr_{{i}}'] for i in range(len(data.files))])
np.testing.assert_allclose(got, np.load({path + '.want.npy'!r}), rtol=1e-5, atol=1e-5)
"""
subprocess.run([sys.executable, "-c", child], check=True, env=dict(os.environ, AXLE_CACHE_DIR="off"))
print("ok")
