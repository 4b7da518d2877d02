"""Which kernels SciPy's OpenBLAS runs for axle's GEMMs (blas._prefer_avx512_kernels).

Each case runs in a fresh interpreter: OpenBLAS picks its kernels once per process, and
this machine's environment may set OPENBLAS_CORETYPE, which axle must respect."""
import json
import subprocess
import sys

from axle.flags import child_environment

PROBE = r"""
import ctypes, json
import numpy as np
import axle
from axle.backends.cpu import blas, llvm_env
lib = blas._openblas()
lib.scipy_openblas_get_corename.restype = ctypes.c_char_p
before = lib.scipy_openblas_get_corename().decode()
blas.available()
feats = llvm_env.host_cpu()[1].split(",")
rng = np.random.default_rng(0)
a = rng.standard_normal((96, 200)).astype(np.float32)
b = rng.standard_normal((200, 130)).astype(np.float32)
text = '''func.func @main(%a: tensor<96x200xf32>, %b: tensor<200x130xf32>) -> tensor<96x130xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<96x200xf32>, tensor<200x130xf32>) -> tensor<96x130xf32>
  return %0 : tensor<96x130xf32>
}'''
out = np.asarray(axle.compile(text)(a, b))
err = float(np.abs(out - a.astype(np.float64) @ b).max())
print(json.dumps({"before": before, "core": lib.scipy_openblas_get_corename().decode(), "err": err,
                  "avx512": all(f in feats for f in blas.AVX512_NEEDS)}))
"""


def _probe(**env):
    environ = child_environment(**{k: v for k, v in env.items() if v is not None})
    for k, v in env.items():
        if v is None:
            environ.pop(k, None)
    r = subprocess.run([sys.executable, "-c", PROBE], env=environ, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


AVX512_CORES = ("SkylakeX", "Cooperlake", "SapphireRapids")


def test_avx512_host_gets_avx512_kernels_unless_told_otherwise():
    got = _probe(OPENBLAS_CORETYPE=None, AXLE_FLAGS=None)
    assert got["err"] < 1e-3
    if not got["avx512"]:
        assert got["core"] == got["before"]  # nothing to gain: OpenBLAS's own choice stays
    else:
        assert got["core"] in AVX512_CORES


def test_users_coretype_and_flag_are_respected():
    got = _probe(OPENBLAS_CORETYPE="Haswell", AXLE_FLAGS=None)
    assert got["before"] == got["core"] == "Haswell" and got["err"] < 1e-3
    got = _probe(OPENBLAS_CORETYPE=None, AXLE_FLAGS="--cpu_blas_avx512=false")
    assert got["core"] == got["before"] and got["err"] < 1e-3
