"""`axle.jax.jit(f, in_shardings=, out_shardings=)` partitions and runs on 4 devices, equal
to jax.jit with the same shardings (in a subprocess: XLA_FLAGS must precede importing jax)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(__file__)


@pytest.mark.parametrize("backend", ["cpu"])
def test_axle_jax_jit_with_shardings(backend):
    pytest.importorskip("jax")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "jax_jit_sharded.py"), backend], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    # 2x2 training step: the model-axis partial sum, the loss and both weight gradients
    assert f"OK {backend} collectives ['all_reduce', 'all_reduce', 'all_reduce', 'all_reduce'] bytes 9232" \
        in proc.stdout
    assert "OK compiles 1" in proc.stdout
    # the results are jax arrays with the requested NamedShardings on XLA's 4 host devices
    assert "OK sharded outputs [\"P(None, 'model')\", \"P('model', None)\", 'P()']" in proc.stdout
