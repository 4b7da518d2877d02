"""The generated code of convolution kernels stays compact: LLVM's compile time follows the
size of the IR (docs/compile-time.md), so loops that run the same code per channel, per tap
or per pass of a short outer loop are run-time loops, not copies. Generous bounds: the direct
conv below has 44 kB of IR (83 kB with blocks of 12 pixels and a remainder block, 153 kB
with 3 channels unrolled besides); the gradients 82 kB (114 kB with their loops of 3 taps
copied), with the interpreter's values checked on the same programs."""
import numpy as np
import pytest

import axle
from axle.backends.cpu import disk_cache, parallel
from axle.backends.cpu import executable as cpu_exe



def conv_text(n, hw, cin, cout):
    """A 3x3 SAME convolution, NHWC x HWIO -> NHWC."""
    h, w = hw
    it, kt, ot = (f"tensor<{n}x{h}x{w}x{cin}xf32>", f"tensor<3x3x{cin}x{cout}xf32>",
                  f"tensor<{n}x{h}x{w}x{cout}xf32>")
    text = f"""func.func @main(%x: {it}, %w: {kt}) -> {ot} {{
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
       window = {{stride = [1, 1], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]}}
       {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : ({it}, {kt}) -> {ot}
  return %0 : {ot}
}}"""
    return text, (n, h, w, cin), (3, 3, cin, cout)


def _fresh(text):
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(text, backend="cpu")
        cpu_exe.clear_memory_cache()
    return exe


@pytest.mark.parametrize("cin,bound_kb", [(3, 70), (32, 70)])
def test_direct_conv_ir_is_one_copy_per_channel_loop(cin, bound_kb, monkeypatch):
    """A 3x3 SAME conv with few input channels (an image's first layer) emits its channel loop
    once, as a run-time loop, like the conv with many channels: the IR does not grow with
    the number of channels."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_parallel=true")
    text, xs, ws = conv_text(2, (32, 32), cin, 32)
    exe = _fresh(text)
    assert [k.library for k in exe.program.kernels] == [None]  # the direct kernel
    size = len(exe.program.llvm_ir)
    assert size < bound_kb * 1000, f"direct conv ({cin} channels): {size} characters of IR"
    r = np.random.default_rng(11)
    x, w = r.standard_normal(xs).astype(np.float32), r.standard_normal(ws).astype(np.float32)
    np.testing.assert_allclose(exe(x, w), axle.interpret(text, x, w), rtol=1e-4, atol=1e-4)


def test_conv_gradients_ir_is_compact(monkeypatch):
    """Input and filter gradients of a 3x3 SAME conv (the general kernel: loops of 3 taps
    that hold loops are run-time loops after their first trip)."""
    jax = pytest.importorskip("jax")
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_parallel=true")

    def loss(x, w):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return (y * y).sum()
    r = np.random.default_rng(12)
    x = r.standard_normal((4, 16, 16, 32)).astype(np.float32)
    w = r.standard_normal((3, 3, 32, 32)).astype(np.float32)
    fn = jax.grad(loss, argnums=(0, 1))
    text = jax.jit(fn).lower(x, w).as_text()
    exe = _fresh(text)
    size = len(exe.program.llvm_ir)
    assert size < 105_000, f"conv gradients: {size} characters of IR"
    got = exe.execute([x, w])
    want = [np.asarray(t) for t in jax.jit(fn)(x, w)]
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-2 * float(np.abs(e).max()))
