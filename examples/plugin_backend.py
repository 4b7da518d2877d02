"""Backends are plugins: a distribution declares an entry point in the group
`axle.backends`. Here a tiny one is "installed" into a temporary folder on sys.path
(what pip leaves: the package and its .dist-info with entry_points.txt)."""
import os
import sys
import tempfile

import numpy as np

import axle

root = tempfile.mkdtemp()
os.makedirs(os.path.join(root, "numpy_backend"))
with open(os.path.join(root, "numpy_backend", "__init__.py"), "w") as f:
    f.write('''
class Executable:
    aliases = {}
    def __init__(self, module, entry):
        self.module, self.entry = module, entry
    def execute(self, args, donate=()):
        from axle.interpreter.evaluator import run_function
        return run_function(self.module, list(args), self.entry)

class Backend:
    name = "numpy"
    platform = "numpy"
    def compile(self, module, entry, options):
        return Executable(module, entry)
''')
info = os.path.join(root, "numpy_backend-0.1.dist-info")
os.makedirs(info)
with open(os.path.join(info, "METADATA"), "w") as f:
    f.write("Metadata-Version: 2.1\nName: numpy_backend\nVersion: 0.1\n")
with open(os.path.join(info, "entry_points.txt"), "w") as f:
    f.write("[axle.backends]\nnumpy = numpy_backend:Backend\n")
sys.path.insert(0, root)

print("backends:", axle.available_backends())
TEXT = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.sine %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}"""
x = np.linspace(0, 3, 4, dtype=np.float32)
print("numpy backend:", axle.compile(TEXT, backend="numpy")(x))
print("cpu backend:  ", axle.compile(TEXT, backend="cpu")(x))
try:
    axle.compile(TEXT, backend="tpu")
except axle.runtime.BackendError as e:
    print("absent:", e)
print("ok")
