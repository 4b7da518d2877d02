"""axle's core never imports a frontend: parse, compile and run load neither jax nor TF."""
import subprocess
import sys

CODE = """
import sys, numpy as np, axle
from axle.ir import parse_module, parse_hlo
m = parse_hlo('''HloModule m
ENTRY main {
  x = f32[3] parameter(0)
  ROOT y = f32[3] add(x, x)
}''')
exe = axle.compile(m)
assert list(exe(np.ones(3, np.float32))) == [2, 2, 2]
bad = [name for name in ("jax", "jaxlib", "tensorflow", "axle.jax", "axle.tf") if name in sys.modules]
assert not bad, bad
print("ok")
"""


def test_core_does_not_import_frontends():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
