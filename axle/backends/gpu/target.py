"""NVIDIA GPUs (LLVM's NVPTX) as a codegen Target (axle/codegen/target.py).

What differs from the plain LLVM target:
* math: libm functions are libdevice's `__nv_name` / `__nv_namef` (half computes in f32),
  and the math intrinsics NVPTX cannot select (llvm.exp, llvm.sin, ... on any float type)
  are libdevice calls too, when libdevice is found (nvptx.find_libdevice); the others stay
  intrinsics. Whatever is left that NVPTX cannot lower is caught by nvptx.check_calls
  before LLVM sees it.
* FMA is one instruction on every GPU: llvm.fma.
* constants live in the global address space (NVPTX has no generic globals), 16-byte
  aligned, and are used through a generic pointer (an addrspacecast constant expression);
  buffers arrive as global-address-space pointers.
* one thread holds no vector registers wider than 32 bits (the warp is the vector).
"""
from __future__ import annotations

from llvmlite import ir

from axle.backends.gpu import nvptx
from axle.backends.gpu.nvptx import _LIBDEVICE_INTRINSICS, TRIPLE
from axle.codegen.target import Target
from axle.errors import Unsupported

GLOBAL = 1  # NVPTX's global address space
_F32 = ir.FloatType()
_F16 = ir.HalfType()


class GpuTarget(Target):
    name = "gpu"
    triple = TRIPLE
    vector_bits = 32
    buffer_addrspace = GLOBAL
    constant_addrspace = GLOBAL
    constant_align = 16

    def has_fma(self) -> bool:
        return True

    def intrinsic(self, em, name: str, t: ir.Type, args):
        """Math intrinsics NVPTX cannot select become libdevice calls; the others stay."""
        base = name[len("llvm."):] if name.startswith("llvm.") else None
        if base in _LIBDEVICE_INTRINSICS and base != "powi" and nvptx.find_libdevice() is not None \
                and str(t) in ("half", "float", "double"):
            return self.libm(em, _LIBDEVICE_INTRINSICS[base], args)
        return super().intrinsic(em, name, t, args)

    def libm(self, em, name: str, args):
        """libm's `name` through libdevice (`__nv_name`, `__nv_namef`; half computes in f32),
        linked when the PTX is made (nvptx.ir_to_ptx)."""
        t = args[0].type
        if str(t) == "half":
            wide = self.libm(em, name, [em.b.fpext(a, _F32) for a in args])
            return em.b.fptrunc(wide, _F16)
        fname = {"float": f"__nv_{name}f", "double": f"__nv_{name}"}.get(str(t))
        if fname is None:
            raise Unsupported(f"math function '{name}' for {t} in the gpu backend")
        return em.b.call(self.declare(em.module, fname, t, [a.type for a in args]), list(args))


GPU = GpuTarget()
