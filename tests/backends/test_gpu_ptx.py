"""The gpu backend without a GPU: it registers and imports, refuses to compile with an error
naming the fallback, emits PTX that ptxas accepts, refuses what NVPTX cannot lower with
Unsupported (never an LLVM fatal error), and its kernels compute what the CPU backend
computes when run on the host simulator (axle/backends/gpu/simulate.py)."""
import os

import numpy as np
import pytest

import axle
from axle.backends.gpu import NoGpuError, Unsupported, emit_llvm, emit_ptx, gpu_present
from axle.backends.gpu.nvptx import find_libdevice, find_ptxas, ptxas, ptx_version
from axle.backends.gpu.simulate import Simulated

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "conformance", "testdata")
needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed (pip install nvidia-cuda-nvcc-cu12)")

FUSED = """
func.func @main(%a: tensor<5x7xf32>, %b: tensor<7xf32>) -> (tensor<7x5xf32>, tensor<5xf32>) {
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<7xf32>) -> tensor<5x7xf32>
  %s = stablehlo.add %a, %bb : tensor<5x7xf32>
  %e = stablehlo.exponential %s : tensor<5x7xf32>
  %t = stablehlo.transpose %e, dims = [1, 0] : (tensor<5x7xf32>) -> tensor<7x5xf32>
  %z = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %r = stablehlo.reduce(%e init: %z) applies stablehlo.maximum across dimensions = [1] : (tensor<5x7xf32>, tensor<f32>) -> tensor<5xf32>
  return %t, %r : tensor<7x5xf32>, tensor<5xf32>
}
"""

SORT = """
func.func @main(%a: tensor<4x9xi32>) -> tensor<4x9xi32> {
  %s = "stablehlo.sort"(%a) ({
  ^bb0(%x: tensor<i32>, %y: tensor<i32>):
    %c = stablehlo.compare GT, %x, %y, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 1 : i64, is_stable = true} : (tensor<4x9xi32>) -> tensor<4x9xi32>
  return %s : tensor<4x9xi32>
}
"""


def test_gpu_is_a_registered_backend_that_imports_without_cuda():
    assert "gpu" in axle.available_backends()
    from axle.runtime.registry import get_backend
    assert get_backend("gpu").name == "gpu"


@pytest.mark.skipif(gpu_present()[0], reason="a GPU is present: the no-GPU error does not apply")
def test_compiling_without_a_gpu_says_so_and_names_the_fallback():
    with pytest.raises(NoGpuError, match='backend="cpu"') as e:
        axle.compile(FUSED, backend="gpu")
    assert "no" in str(e.value).lower() and "CuPy" in str(e.value)
    with pytest.raises(NoGpuError, match='backend="cpu"'):
        axle.client("gpu").compile(FUSED)


def test_ptx_is_for_sm90_with_a_ptx_version_ptxas_12_9_accepts():
    ptx = emit_ptx(FUSED)
    assert ".target sm_90" in ptx and ptx_version(ptx) == "8.8"
    assert ".visible .entry k0_" in ptx and "%tid.x" in ptx and "ld.global" in ptx
    assert "call" not in ptx.split(".entry", 1)[1]  # exp is inline code, no libm


@needs_ptxas
@pytest.mark.parametrize("text", [FUSED, SORT], ids=["fused", "sort"])
def test_ptxas_accepts_the_ptx(text):
    messages = ptxas(emit_ptx(text))
    assert "Compiling entry function" in messages


F64_EXP = """
func.func @main(%a: tensor<8xf64>) -> tensor<8xf64> {
  %e = stablehlo.exponential %a : tensor<8xf64>
  return %e : tensor<8xf64>
}"""


def test_what_nvptx_cannot_lower_is_unsupported_naming_the_op(monkeypatch):
    c64_log = """
func.func @main(%a: tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>> {
  %e = stablehlo.log %a : tensor<8xcomplex<f32>>
  return %e : tensor<8xcomplex<f32>>
}"""
    with pytest.raises(Unsupported, match=r"'stablehlo.log'.*gpu backend.*'clog'"):
        emit_ptx(c64_log)  # libm's complex functions are not in libdevice
    from axle.backends.gpu import nvptx
    monkeypatch.setattr(nvptx, "find_libdevice", lambda: None)
    with pytest.raises(Unsupported, match=r"'stablehlo.exponential'.*gpu backend.*llvm.exp.f64.*no libdevice"):
        emit_ptx(F64_EXP)  # LLVM would die with a fatal error on llvm.exp.f64


@pytest.mark.skipif(find_libdevice() is None, reason="libdevice not installed (pip install nvidia-cuda-nvcc-cu12)")
def test_f64_math_goes_through_libdevice():
    ptx = emit_ptx(F64_EXP)
    assert "llvm.exp" not in ptx and ".extern" not in ptx  # linked and inlined, nothing left to resolve
    if find_ptxas() is not None:
        ptxas(ptx)
    a = np.linspace(-5, 5, 8)
    (got,) = Simulated(emit_llvm(F64_EXP)).run([a])  # the host stand-in: libm's exp
    np.testing.assert_allclose(got, np.exp(a), rtol=1e-15)


def test_the_cli_prints_ptx(capsys):
    from axle.tools.compile_cmd import main
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(FUSED)
    try:
        assert main([f.name, "--backend", "gpu", "--emit", "ptx"]) == 0
        assert ".target sm_90" in capsys.readouterr().out
        assert main([f.name, "--backend", "gpu"]) == 0
        out = capsys.readouterr().out
        assert "k2_reduce" in out and "3 kernels, 1 temporaries" in out and ".mlir:8:" in out
    finally:
        os.unlink(f.name)


@pytest.mark.parametrize("block,grid", [(1, 1), (4, 3), (32, 5), (128, 1)])
def test_simulated_kernels_match_the_cpu_backend_for_any_grid(block, grid):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal(7).astype(np.float32)
    want = axle.compile(FUSED, backend="cpu")(a, b)
    got = Simulated(emit_llvm(FUSED), block=block, grid=grid).run([a, b])
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


DOT = """
func.func @main(%a: tensor<2x5x7xf32>, %b: tensor<2x7x3xf32>) -> tensor<2x5x3xf32> {
  %d = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x5x7xf32>, tensor<2x7x3xf32>) -> tensor<2x5x3xf32>
  %r = stablehlo.tanh %d : tensor<2x5x3xf32>
  return %r : tensor<2x5x3xf32>
}
"""


@pytest.mark.parametrize("block,grid", [(1, 1), (4, 3)])
def test_batched_dot_is_one_thread_per_output_and_matches_the_cpu(block, grid):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 5, 7)).astype(np.float32), rng.standard_normal((2, 7, 3)).astype(np.float32)
    prog = emit_llvm(DOT)
    assert [k.kind for k in prog.kernels] == ["dot", "elementwise"]
    (got,) = Simulated(prog, block=block, grid=grid).run([a, b])
    np.testing.assert_allclose(got, np.tanh(a @ b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, axle.compile(DOT, backend="cpu")(a, b), rtol=1e-6, atol=1e-7)
    if find_ptxas() is not None:
        ptxas(emit_ptx(DOT))


POOL = """
func.func @main(%a: tensor<6x9xf32>) -> tensor<3x8xf32> {
  %z = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %r = "stablehlo.reduce_window"(%a, %z) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %m = stablehlo.maximum %x, %y : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 2, 1>,
      padding = dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>} : (tensor<6x9xf32>, tensor<f32>) -> tensor<3x8xf32>
  return %r : tensor<3x8xf32>
}
"""


@pytest.mark.parametrize("block,grid", [(1, 1), (5, 2)])
def test_reduce_window_is_one_thread_per_output_and_matches_the_cpu(block, grid):
    a = np.random.default_rng(3).standard_normal((6, 9)).astype(np.float32)
    prog = emit_llvm(POOL)
    assert [k.kind for k in prog.kernels] == ["grid"]
    (got,) = Simulated(prog, block=block, grid=grid).run([a])
    np.testing.assert_array_equal(got, axle.compile(POOL, backend="cpu")(a))
    padded = np.pad(a, ((0, 0), (1, 0)), constant_values=-np.inf)
    want = np.array([[padded[2 * i:2 * i + 2, j:j + 3].max() for j in range(8)] for i in range(3)])
    np.testing.assert_array_equal(got, want)


def test_the_one_thread_fallback_sorts_like_the_cpu():
    a = np.random.default_rng(1).integers(-50, 50, (4, 9)).astype(np.int32)
    prog = emit_llvm(SORT)
    assert [k.kind for k in prog.kernels] == ["serial"]
    (got,) = Simulated(prog).run([a])
    np.testing.assert_array_equal(got, -np.sort(-a, axis=1))


def _sweep(every):
    from axle.tools.ptx_check import run
    results = run([ROOT], jobs=2, every=every, simulate=True)
    failed = [f"{r['name']}: {r['message']}" for r in results if r["status"] == "failed"]
    wrong = [f"{r['name']}: {r['sim']}" for r in results if r["status"] == "accepted" and r["sim"] != "passed"]
    return results, failed, wrong


@needs_ptxas
@pytest.mark.skipif(not os.path.isdir(ROOT), reason="../shared/conformance is not beside the project")
def test_sampled_conformance_cases_pass_ptxas_and_the_simulator():
    """Every 40th case: ptxas accepts the PTX or the backend refuses the case naming the op;
    what ptxas accepts gives the suites' answers on the host simulator."""
    results, failed, wrong = _sweep(40)
    assert not failed, "\n".join(failed)
    assert not wrong, "\n".join(wrong)
    run_cases = [r for r in results if r["status"] != "verify"]
    accepted = sum(r["status"] == "accepted" for r in run_cases)
    assert accepted >= 0.8 * len(run_cases), f"only {accepted} of {len(run_cases)} accepted"


@pytest.mark.slow
@needs_ptxas
@pytest.mark.skipif(not os.path.isdir(ROOT), reason="../shared/conformance is not beside the project")
def test_every_conformance_case_passes_ptxas_or_is_unsupported():
    results, failed, wrong = _sweep(1)
    assert not failed, "\n".join(failed[:50])
    assert not wrong, "\n".join(wrong[:50])
