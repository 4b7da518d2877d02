"""The CPU backend's code generation: one LLVM function per program.

`compile_function(module, entry)` turns a function (after the default passes) into LLVM
IR with one native entry, `void axle_entry(i8** buffers)`: buffers[0..n) are the
arguments, then the results, then one arena holding every temporary at an offset
fixed at compile time (abi.py).

Each block is planned before it is emitted (plan.py): the fusion plan (fusion.py: which
values get buffers, which ops each kernel computes, row fusion, pooled convolutions), the
schedule (scheduling.py) and the buffer decisions (in-place reuse, inplace.py; donation,
aliasing.py); block.py then emits the kernels in schedule order, each by its registered
kernel (registry.py; the modules are listed in kernel_set.py) or the loop kernel
(elementwise.py), with temporaries placed by the arena allocator (codegen/plans/arena.py).
The plans of a program are in Program.plans (docs/plans.md); `--dump_to` writes them.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from axle.backends.cpu import kernel_set, status
from axle.backends.cpu.abi import P8P, BufRef, emit_trampoline
from axle.backends.cpu.context import Context, _constant_global, _is_constant
from axle.codegen.emitter import _ty
from axle.backends.cpu.fusion import DUPLICATE_COST, MAX_FUSION_DEPTH
from axle.backends.cpu.kernel_timer import KernelTimer
from axle.backends.cpu.program import KernelInfo, Program
from axle.backends.cpu.registry import KERNELS, KernelDef, check_supported, checking, is_elementwise, kernel
from axle.codegen.scalar import I8
from axle.codegen.plans import graph
from axle.codegen.plans.arena import ALIGN, nbytes
from axle.codegen.plans.report import ProgramPlans
from axle.ir.core import Module

__all__ = ["compile_function", "load_kernels", "Program", "KernelInfo", "Context", "KernelDef", "KERNELS",
           "kernel", "check_supported", "is_elementwise", "nbytes", "ALIGN", "BufRef", "P8P",
           "DUPLICATE_COST", "MAX_FUSION_DEPTH", "_constant_global", "_is_constant"]


def load_kernels() -> None:
    """The modules that register kernels and scalar rules (KERNELS, RULES) are imported with
    this one (kernel_set.py); kept for callers that ask for them explicitly."""
    assert kernel_set.MODULES


def compile_function(module: Module, entry: str = "main", profile: bool = False,
                     aliases: Optional[dict] = None) -> Program:
    """Generate the program of `entry`. With `profile`, the code also reads a clock before and
    after each top-level kernel and keeps the times in the arena (profiling.py); without it,
    the code is exactly what it would be otherwise. `aliases` {result k: argument j} asks
    for result k to be written into argument j's memory (donation); the pairs that are safe
    end up in Program.aliases (aliasing.py)."""
    from axle.profiler import phase
    with phase("codegen", entry=entry, profile=profile):
        with graph.compilation(), checking():
            return _compile_function(module, entry, profile, {int(k): int(j) for k, j in (aliases or {}).items()})


def _compile_function(module: Module, entry: str, profile: bool, aliases: dict) -> Program:
    from axle.backends.cpu.prepare import check_lowered
    check_lowered(module)  # the cpu pipeline's lowering part ran (pipeline.py); rewrites nothing
    fn = module.function(entry)
    block = fn.body
    for a in block.arguments:
        _ty(a)
    mod = ir.Module(name="axle")
    fnty = ir.FunctionType(ir.VoidType(), [I8.as_pointer().as_pointer()])
    func = ir.Function(mod, fnty, "axle_entry")
    n_args = len(block.arguments)
    n_res = len(fn.function_type.results)
    ctx = Context(mod, func, n_args + n_res)
    ctx.aliases = aliases
    ctx.plans = ProgramPlans(entry, block)
    ctx.buffer_plan = ctx.plans.buffers
    ctx.buffer_plan.n_args, ctx.buffer_plan.arena_slot = n_args, n_args + n_res
    if profile:
        ctx.timer = KernelTimer(ctx)
    for i, a in enumerate(block.arguments):
        ctx.em.buffers[a] = BufRef(i)
        ctx.buffer_plan.add(value=a, place="argument", slot=i)
    ctx.emit_block(block, [BufRef(n_args + k) for k in range(n_res)])
    ctx.b.ret_void()
    _cold_driver(func)
    emit_trampoline(mod, func, n_args + n_res)
    profile_offset = ctx.timer.finish() if ctx.timer is not None else None
    status_offset = status.finish(ctx)
    ctx.buffer_plan.arena_bytes = ctx.offset
    from axle.backends.cpu.context import module_text
    text = module_text(mod, ctx.function_texts)
    _dismantle(mod)
    return Program(text, list(fn.function_type.inputs), list(fn.function_type.results), ctx.offset,
                   ctx.kernels, ctx.allocations, ctx.cacheable, ctx.host_callbacks, profile_offset,
                   ctx.aliases, ctx.alias_rejections,
                   sorted(set(ctx.host_ops)), status_offset, ctx.plans)


# An entry function of more instructions than this is compiled without optimization (LLVM's
# optnone): a large program's entry is a driver, one call per kernel with its pointer table
# built before it, and the kernels are functions of their own, optimized as ever. LLVM's
# function passes are superlinear on such a function: an unrolled GRU's forward, 2150 kernel
# calls in 45,000 lines, took 39 s to optimize; 13.6 s without the driver.
DRIVER_OPTNONE_INSTRUCTIONS = 8000


def _cold_driver(func: ir.Function) -> None:
    n = sum(len(blk.instructions) for blk in func.blocks)
    if n > DRIVER_OPTNONE_INSTRUCTIONS:
        func.attributes.add("noinline")
        func.attributes.add("optnone")


def _dismantle(mod: ir.Module) -> None:
    """Break the reference cycles of an llvmlite module that is no longer needed (functions
    and their blocks, blocks and their instructions point at each other), so reference
    counting frees its objects at once. Left to the cyclic collector, they were its first
    collection after the compile, inside the compile's time: up to 10% of it for a large
    program (mini_gpt_training: 84,000 objects, 0.1-0.2 s)."""
    for g in list(mod.globals.values()):
        for block in getattr(g, "blocks", ()):
            block.instructions = []
        if isinstance(g, ir.Function):
            g.blocks = []
    mod.globals.clear()
