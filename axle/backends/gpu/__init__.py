"""The GPU backend (NVIDIA, through LLVM's NVPTX target): StableHLO -> PTX kernels.

What exists (docs/gpu.md): PTX generation for elementwise (fused) programs and reductions
(other ops: the CPU's kernels run by one GPU thread), checked with ptxas and a host
simulator without a GPU. `compile` raises NoGpuError when no GPU/CuPy is present (naming
the fallback `backend="cpu"`); with one it loads the PTX through CuPy (launch.py, not yet
run on a GPU).
"""
from __future__ import annotations

from axle.errors import Unsupported


class NoGpuError(RuntimeError):
    """No usable NVIDIA GPU (or no CuPy) in this process."""


class GpuNotImplemented(RuntimeError):
    """A GPU is present, but running compiled kernels on it is not written yet."""


def gpu_present() -> tuple[bool, str]:
    """(True, device name) when CuPy imports and sees a CUDA device; else (False, why)."""
    try:
        import cupy  # noqa: F401
    except Exception as e:  # ImportError, or a CuPy without its CUDA libraries
        return False, f"CuPy is not importable ({type(e).__name__}: {e})"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return False, f"CuPy finds no CUDA device ({type(e).__name__}: {e})"
    if n < 1:
        return False, "CuPy finds no CUDA device"
    return True, str(cupy.cuda.runtime.getDeviceProperties(0).get("name", b"?"))


def require_gpu() -> None:
    ok, why = gpu_present()
    if not ok:
        raise NoGpuError(f"the gpu backend needs an NVIDIA GPU and CuPy, and none is present here: {why}. "
                         "Use backend=\"cpu\" (or axle.backends.gpu.emit_ptx(module) to inspect the PTX "
                         "without a GPU).")


def emit_llvm(module, entry: str = "main", passes: bool = True, filename: str = "<string>"):
    """The GpuProgram (NVPTX LLVM IR + kernel list) of `entry`, after the default pipeline
    (run in place on `module` when it is an axle.ir.Module). Raises Unsupported naming
    the op and the gpu backend for what cannot be emitted, including calls NVPTX cannot
    lower (checked here, before LLVM sees them)."""
    from axle.backends.gpu.codegen import emit_program
    from axle.backends.gpu.nvptx import check_calls, redirect_calls
    from axle.ir.core import Module
    if not isinstance(module, Module):
        from axle.ir.text import parse_module
        module = parse_module(module, filename)
    if passes:
        from axle.reproducer import run_pipeline
        run_pipeline(module, "cpu", entry=entry)
    prog = emit_program(module, entry)
    redirect = check_calls(prog.module, {k.name: k.where for k in prog.kernels})
    if redirect:  # math intrinsics NVPTX cannot select: through libdevice
        prog.llvm_ir = redirect_calls(prog.llvm_ir, redirect)
    return prog


def emit_ptx(module, entry: str = "main", passes: bool = True, gpu: str = "sm_90") -> str:
    """PTX text for `entry` of `module` (an axle.ir.Module or StableHLO text), for `gpu`."""
    from axle.backends.gpu.nvptx import ir_to_ptx
    return ir_to_ptx(emit_llvm(module, entry, passes).llvm_ir, cpu=gpu)


def compile(module, entry: str = "main", passes: bool = True, **options):
    """Compile for the GPU. Without a GPU/CuPy: NoGpuError naming the fallback. With one:
    a CupyExecutable (launch.py), which has NOT yet been run on a GPU (docs/gpu.md)."""
    require_gpu()
    if options:
        raise GpuNotImplemented(f"gpu backend: options {sorted(options)} are not supported yet")
    from axle.backends.gpu.launch import CupyExecutable
    from axle.backends.gpu.nvptx import ir_to_ptx
    import cupy
    cc = cupy.cuda.Device().compute_capability  # e.g. "90"
    prog = emit_llvm(module, entry, passes)
    return CupyExecutable(prog, ir_to_ptx(prog.llvm_ir, cpu=f"sm_{cc}"))


__all__ = ["compile", "emit_ptx", "Unsupported", "NoGpuError", "GpuNotImplemented", "gpu_present"]
