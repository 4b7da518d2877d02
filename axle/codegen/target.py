"""What differs between the machines axle generates code for: the `Target` an Emitter asks.

The elemental emitter, the loop emitters and the scalar rules (this folder) are written once
for every target. Where the generated code must differ, they ask `Emitter.target`, never
"which backend is this":

    intrinsic(em, name, t, args)   an LLVM intrinsic (llvm.fabs, llvm.exp, ...) on type t; a
                                   target without a lowering for one calls something else
    libm(em, name, args)           a C math function (expf, log1p, ...) by its libm name; the
                                   CPU calls libm, NVPTX calls libdevice's __nv_*
    fma_intrinsic                  "llvm.fma" where a fused multiply-add is one instruction,
                                   else "llvm.fmuladd" (LLVM may split it)
    constant_global(module, name, data)
                                   a read-only global holding `data`, returned as a generic
                                   (address space 0) pointer: what GEPs and loads expect;
                                   its own address space and alignment are the target's
    buffer_addrspace               the address space of the buffers a kernel is given
    vector_bits                    the widest vector register (loop kernels size their
                                   blocks by it)
    triple, data_layout            written into the LLVM module ("" leaves LLVM's default)

`Target` itself is the plain LLVM target: intrinsics as intrinsics, libm by its C names,
constants in address space 0. A backend subclasses it (axle/backends/cpu/target.py,
axle/backends/gpu/target.py) and overrides what its machine does differently.
Nothing here may import a backend: a Target is handed to the Emitter by the backend.
"""
from __future__ import annotations

from llvmlite import ir

from axle.errors import Unsupported

_I8 = ir.IntType(8)
_F32 = ir.FloatType()
_F16 = ir.HalfType()


class Target:
    name = "llvm"
    triple = ""  # "" = the LLVM module's default
    data_layout = ""
    vector_bits = 128
    buffer_addrspace = 0  # the address space of the buffers a kernel receives
    constant_addrspace = 0  # the address space constant globals are made in
    constant_align = 64  # bytes

    # -- math
    def has_fma(self) -> bool:
        """Whether a fused multiply-add is one instruction (llvm.fma is then exact and cheap)."""
        return False

    @property
    def fma_intrinsic(self) -> str:
        """The intrinsic for a*b+c in the vectorizable math (fastmath.py): llvm.fma rounds
        once; without hardware FMA, llvm.fmuladd lets LLVM split it (a software fma is slow)."""
        return "llvm.fma" if self.has_fma() else "llvm.fmuladd"

    def intrinsic(self, em, name: str, t: ir.Type, args):
        """`name` (an LLVM intrinsic overloaded on t) applied to args, all of type t."""
        args = list(args)
        fnty = ir.FunctionType(t, [t] * len(args))
        return em.b.call(em.module.declare_intrinsic(name, [t], fnty), args)

    def libm(self, em, name: str, args):
        """The C library's `name` (double) / `name`f (float); half computes in float."""
        t = args[0].type
        fname = {"float": name + "f", "double": name, "half": None}.get(str(t), "")
        if fname == "":
            raise Unsupported(f"math function '{name}' on {t} for the {self.name} target")
        if fname is None:  # compute in f32
            wide = self.libm(em, name, [em.b.fpext(a, _F32) for a in args])
            return em.b.fptrunc(wide, _F16)
        return em.b.call(self.declare(em.module, fname, t, [t] * len(args)), list(args))

    @staticmethod
    def declare(module: ir.Module, name: str, ret: ir.Type, params: list) -> ir.Function:
        """The module's declaration of external function `name` (made on first use)."""
        fn = module.globals.get(name)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(ret, list(params)), name)
        return fn

    # -- memory
    def constant_global(self, module: ir.Module, name: str, data: bytes):
        """A read-only internal global `name` holding `data`, as a generic i8-array pointer."""
        arr = ir.ArrayType(_I8, len(data))
        g = ir.GlobalVariable(module, arr, name, addrspace=self.constant_addrspace)
        g.global_constant = True
        g.linkage = "internal"
        g.align = self.constant_align
        g.initializer = ir.Constant(arr, bytearray(data))
        if self.constant_addrspace == 0:
            return g
        # a generic pointer to it: what the emitter's bitcasts and GEPs expect
        return ir.FormattedConstant(arr.as_pointer(), f"addrspacecast ({g.type} {g.get_reference()} to "
                                                      f"{arr.as_pointer()})")

    def setup_module(self, module: ir.Module) -> None:
        """Write the target's triple and data layout into `module` (where it has them)."""
        if self.triple:
            module.triple = self.triple
        if self.data_layout:
            module.data_layout = self.data_layout

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
