"""Programs JAX lowers with NamedSharding on 4 forced host devices, made once per session in
a subprocess (XLA_FLAGS must be set before jax is imported, and other tests import jax)."""
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(__file__)


def _lower(tmp_path_factory, *flags):
    out = tmp_path_factory.mktemp("jax_programs") / "programs.npz"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "jax_programs.py"), str(out), *flags],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = np.load(out)
    programs = {}
    for key in data.files:
        name, _, part = key.rpartition(".")
        entry = programs.setdefault(name, {"args": {}, "outs": {}})
        if part == "mlir":
            entry["mlir"] = str(data[key])
        elif part.startswith("arg"):
            entry["args"][int(part[3:])] = data[key]
        else:
            entry["outs"][int(part[3:])] = data[key]
    for entry in programs.values():
        entry["args"] = [entry["args"][i] for i in sorted(entry["args"])]
        entry["outs"] = [entry["outs"][i] for i in sorted(entry["outs"])]
    return programs


@pytest.fixture(scope="session")
def jax_programs(tmp_path_factory):
    pytest.importorskip("jax")
    return _lower(tmp_path_factory)


@pytest.fixture(scope="session")
def jax_gspmd_programs(tmp_path_factory):
    pytest.importorskip("jax")
    return _lower(tmp_path_factory, "--gspmd")
