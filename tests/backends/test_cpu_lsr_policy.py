"""Loop strength reduction runs only in program modules that ask for it (llvm_env.LSR_METADATA):
the direct convolution with few input channels does, elementwise code does not."""
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


@pytest.mark.parametrize("cin,lsr", [(3, True), (32, False)])
def test_direct_convolution_asks_for_lsr_with_few_channels_and_is_right(monkeypatch, cin, lsr):
    # the direct kernel generated into the program (by default it is a call of the library
    # routine, conv_runtime.py, compiled with LSR on everything)
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_conv_library=false")
    r = np.random.default_rng(0)
    x = r.standard_normal((2, 12, 12, cin), np.float32)
    w = r.standard_normal((3, 3, cin, 16), np.float32)
    exe, calls = _compile_recording(monkeypatch, _conv, x, w)
    assert [k.library for k in exe.program.kernels] == [None]  # the direct kernel
    assert (f"!{llvm_env.LSR_METADATA} " in exe.program.llvm_ir) == lsr
    assert calls == ([] if lsr else ["-disable-lsr=1", "-disable-lsr=0"])
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
