"""Loop strength reduction runs only in program modules that ask for it (llvm_env.LSR_METADATA):
the direct convolution does, elementwise code does not; runtime kernels always get it."""
import jax
import numpy as np
import pytest

import axle
from axle.backends.cpu import disk_cache, llvm_env
from axle.backends.cpu import executable as cpu_exe


def _conv(x, w):
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _compile_recording(monkeypatch, fn, *args):
    calls = []
    real = llvm_env.llvm.set_option
    monkeypatch.setattr(llvm_env.llvm, "set_option", lambda name, opt: (calls.append(opt), real(name, opt)))
    text = jax.jit(fn).lower(*args).as_text()
    cpu_exe.clear_memory_cache()
    with disk_cache.disabled():
        exe = axle.compile(text, backend="cpu")
    return exe, calls


def test_direct_convolution_keeps_lsr_and_is_right(monkeypatch):
    r = np.random.default_rng(0)
    x = r.standard_normal((2, 12, 12, 3), np.float32)
    w = r.standard_normal((3, 3, 3, 16), np.float32)
    exe, calls = _compile_recording(monkeypatch, _conv, x, w)
    assert f"!{llvm_env.LSR_METADATA} " in exe.program.llvm_ir
    assert calls == []  # LSR left on for the whole module
    np.testing.assert_allclose(exe(x, w), np.asarray(jax.jit(_conv)(x, w)), rtol=1e-4, atol=1e-4)


def test_elementwise_program_compiles_without_lsr_and_restores_it(monkeypatch):
    x = np.linspace(-3, 3, 4096, dtype=np.float32).reshape(64, 64)
    f = lambda a: jax.nn.gelu(a) * 2 + a  # noqa: E731
    exe, calls = _compile_recording(monkeypatch, f, x)
    assert llvm_env.LSR_METADATA not in exe.program.llvm_ir
    assert calls == ["-disable-lsr=1", "-disable-lsr=0"]  # off for this module, then back on
    np.testing.assert_allclose(exe(x), np.asarray(jax.jit(f)(x)), rtol=1e-5, atol=1e-5)


def test_strength_reduction_argument_is_checked():
    with pytest.raises(ValueError, match="strength_reduction"):
        llvm_env.compile_to_object("", 3, strength_reduction="some")
