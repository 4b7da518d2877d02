"""The JAX bridge: `axle.jax.jit` (jax.jit's signature; JAX lowers, axle compiles and runs)
and `axle.jax.ffi` (an axle executable called from inside a jax.jit program).

Needs jax (`pip install axle[jax]`). axle's core never imports this package.
"""
from axle.jax.jit import Compiled, Jitted, Lowered, jit

__all__ = ["jit", "Jitted", "Lowered", "Compiled", "ffi_call", "register_ffi_executable"]


def __getattr__(name):  # the FFI half loads llvmlite and registers with XLA: only on use
    if name in ("ffi_call", "register_ffi_executable"):
        from axle.jax import ffi
        return getattr(ffi, name)
    raise AttributeError(f"module 'axle.jax' has no attribute {name!r}")
