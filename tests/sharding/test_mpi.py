"""The partitioned MLP training step on 2 and 4 MPI processes (mpiexec, mpi4py with the
`mpich` wheel: the `mpi` extra), equal to XLA's result of the same sharded jit."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mpi4py", reason="mpi4py is in the `test` and `mpi` extras (pip install -e '.[mpi]')")


def _mpiexec():
    exe = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return exe if os.path.exists(exe) else shutil.which("mpiexec")


@pytest.mark.parametrize("name,n,backend", [
    ("step_dp2", 2, "cpu"), ("step_tp2", 2, "interpreter"),
    pytest.param("step_dp_tp", 4, "cpu", marks=pytest.mark.slow)])  # 4 processes on this 2-core machine
def test_training_step_on_mpi_processes(jax_programs, tmp_path, name, n, backend):
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec (the `mpich` wheel of the `mpi` extra provides one)")
    p = jax_programs[name]
    (tmp_path / "m.mlir").write_text(p["mlir"])
    np.savez(tmp_path / "args.npz", **{f"arg{i}": a for i, a in enumerate(p["args"])})
    proc = subprocess.run([mpiexec, "-n", str(n), sys.executable, "-m", "axle.sharding.mpi",
                           str(tmp_path / "m.mlir"), str(tmp_path / "args.npz"), str(tmp_path / "out.npz"),
                           "--backend", backend], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = np.load(tmp_path / "out.npz")
    for i, want in enumerate(p["outs"]):
        np.testing.assert_allclose(out[f"out{i}"], want, rtol=2e-5, atol=2e-5)


def test_world_size_must_match(jax_programs, tmp_path):
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec")
    p = jax_programs["step_dp_tp"]
    (tmp_path / "m.mlir").write_text(p["mlir"])
    np.savez(tmp_path / "args.npz", **{f"arg{i}": a for i, a in enumerate(p["args"])})
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, "-m", "axle.sharding.mpi",
                           str(tmp_path / "m.mlir"), str(tmp_path / "args.npz"), str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "partitioned for 4 devices, the MPI world has 2 processes" in proc.stderr
