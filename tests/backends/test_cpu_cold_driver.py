"""A large program's entry function, a driver that calls one kernel after another, is compiled
without LLVM's optimization (compiler._cold_driver: optnone); its kernels are optimized as
ever, and the results are the same."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402
from axle.backends.cpu import compiler, disk_cache  # noqa: E402
from axle.backends.cpu import executable as cpu_exe  # noqa: E402


def _program():
    def f(x, w):
        for _ in range(6):  # GEMMs between elementwise steps: kernels of their own
            x = jnp.tanh(x @ w) * 0.5 + x
        return x
    r = np.random.default_rng(2)
    return f, (r.standard_normal((16, 32)).astype(np.float32), r.standard_normal((32, 32)).astype(np.float32) * 0.2)


@pytest.mark.parametrize("limit,cold", [(10, True), (compiler.DRIVER_OPTNONE_INSTRUCTIONS, False)])
def test_large_driver_is_not_optimized(limit, cold, monkeypatch):
    monkeypatch.setattr(compiler, "DRIVER_OPTNONE_INSTRUCTIONS", limit)
    f, args = _program()
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(jax.jit(f).lower(*args).as_text(), backend="cpu")
    entry = next(line for line in exe.program.llvm_ir.splitlines() if '@"axle_entry"' in line and "define" in line)
    assert ("optnone" in entry) == cold, entry
    np.testing.assert_allclose(exe.execute(list(args))[0], np.asarray(jax.jit(f)(*args)), rtol=2e-5, atol=2e-5)
