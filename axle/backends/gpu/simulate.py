"""Running the gpu backend's kernels on the host CPU, one simulated thread after another.

A testing tool for machines without a GPU: the NVPTX-flavoured LLVM IR of a GpuProgram is
retargeted to the host (the `ptx_kernel` convention dropped, the special registers
tid/ntid/ctaid/nctaid read from a global the driver sets, global-address-space pointers
kept: on x86 address space 1 is ordinary memory; libdevice's `__nv_X` calls libm's `X`), JIT-compiled for the host here
(`_host_jit`: llvmlite's LLJIT, never the CPU backend's setup), and each kernel is called once per (block, thread) of a small grid, in order.
The kernels never synchronize between threads, so running the threads one after another
computes what the device computes; it checks the index arithmetic of the grid-stride
loops (every element written exactly once whatever the grid), the per-output-thread
reductions and the one-thread fallback against the interpreter, not the PTX itself (ptxas
checks that).
"""
from __future__ import annotations

import ctypes
import re

import numpy as np

from axle.ir.types import TensorType

_SREGS = ("tid", "ntid", "ctaid", "nctaid")


def host_ir(llvm_ir: str) -> str:
    text = llvm_ir.replace("ptx_kernel ", "")
    text = re.sub(r'^target triple = .*$', "", text, flags=re.M)
    defs = ["@axle_sim_regs = global [4 x i32] zeroinitializer"]
    for k, r in enumerate(_SREGS):
        text = re.sub(rf'declare i32 @"?llvm\.nvvm\.read\.ptx\.sreg\.{r}\.x"?\(\)\s*\n', "", text)
        text = re.sub(rf'@"?llvm\.nvvm\.read\.ptx\.sreg\.{r}\.x"?', f"@axle_sim_{r}", text)
        defs.append(f"define i32 @axle_sim_{r}() {{\n  %p = getelementptr [4 x i32], [4 x i32]* @axle_sim_regs, "
                    f"i64 0, i64 {k}\n  %v = load i32, i32* %p\n  ret i32 %v\n}}")
    # libdevice's __nv_X is libm's X on the host (same contract, not the same bits)
    text = re.sub(r'@"?__nv_(\w+)"?\(', r'@"\1"(', text)
    from axle.backends.gpu.nvptx import redirect_calls
    text = redirect_calls(text, {})  # one declaration per function
    if "llvm.nvvm." in text:
        raise NotImplementedError("the simulator handles only the tid/ntid/ctaid/nctaid registers")
    return text + "\n" + "\n".join(defs) + "\n"


def _host_jit(text: str, exports: list):
    """Verify, optimize (O2) and JIT-link host LLVM IR; returns (keep-alive handle, {name: address})."""
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(text)
    mod.verify()  # (an LLVM fatal error would kill the process)
    tm = _host_machine()
    mod.triple, mod.data_layout = llvm.get_process_triple(), str(tm.target_data)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
    pb.getModulePassManager().run(mod, pb)
    lib = llvm.JITLibraryBuilder().add_ir(str(mod)).add_current_process()
    for name in exports:
        lib.export_symbol(name)
    # (each JIT owns its machine; JITLink keeps the object in one allocation: llvm_env.py)
    jit = llvm.create_lljit_compiler(_host_machine(), use_jit_link=True)
    _count[0] += 1
    tracker = lib.link(jit, f"axle_sim_{_count[0]}")
    # freed with the handle: a JIT kept for the process holds its memory mappings for good
    # (see backends/cpu/llvm_env.py, below link_object)
    return (jit, tracker), {name: tracker[name] for name in exports}


_count = [0]


def _host_machine():
    """A target machine for this host's CPU and features (half conversions as F16C
    instructions, not libgcc calls the JIT cannot resolve)."""
    import llvmlite.binding as llvm
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2, reloc="pic",
        codemodel="small")


def _np_dtype(t: TensorType) -> np.dtype:
    return t.element_type.np_dtype


class Simulated:
    """A GpuProgram made callable on the host: `run(args) -> list of numpy results`."""

    def __init__(self, prog, block: int = 4, grid: int = 3):
        self.prog = prog
        self.block, self.grid = block, grid
        names = [k.name for k in prog.kernels]
        self._handle, self.addresses = _host_jit(host_ir(prog.llvm_ir), names + ["axle_sim_regs"])
        n = len(prog.args) + len(prog.results) + len(prog.temps) + 1  # + scratch
        self.fns = {nm: ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n))(self.addresses[nm]) for nm in names}
        self.regs = (ctypes.c_int32 * 4).from_address(self.addresses["axle_sim_regs"])

    def run(self, args: list) -> list:
        prog = self.prog
        arrays = []
        for t, a in zip(prog.args, args):
            arrays.append(np.ascontiguousarray(np.asarray(a, dtype=_np_dtype(t))))
        outs = [np.empty(t.shape, _np_dtype(t)) for t in prog.results]
        temps = [np.empty(t.shape, _np_dtype(t)) for t in prog.temps]
        bufs = arrays + outs + temps + [np.zeros(max(prog.scratch_bytes, 1), np.uint8)]
        ptrs = [b.ctypes.data if b.size else None for b in bufs]
        for k in prog.kernels:
            grid, block = (1, 1) if k.kind == "serial" else (self.grid, self.block)
            self.regs[1], self.regs[3] = block, grid
            for c in range(grid):
                for t in range(block):
                    self.regs[0], self.regs[2] = t, c
                    self.fns[k.name](*ptrs)
        return outs
