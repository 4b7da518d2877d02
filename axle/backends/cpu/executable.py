"""The CPU executable: native code behind one foreign call per execution.

Arguments are checked (count, shape, dtype) before any native code runs; results are
allocated here, the pointer table is filled, and `axle_entry(buffers)` runs the program.

Programs with dynamic dimensions (`?`) are specialized to the shapes of the arguments at
call time (shape refinement, passes/refine_shapes.py) and one native program is kept per
concrete signature. Compiled programs are also cached in memory by a fingerprint of the
module text (locations and names excluded by printing without locations), the entry and
the signature, so compiling the same module twice costs nothing the second time.
"""
from __future__ import annotations

import ctypes
import hashlib
import threading

import numpy as np

from axle.backends.cpu.compiler import Program, compile_function
from axle.backends.cpu.llvm_env import compile_ir
from axle.backends.cpu.scalar import Unsupported
from axle.interpreter.evaluator import check_arguments
from axle.ir.core import Module
from axle.ir.types import TensorType

_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def fingerprint(module: Module) -> str:
    from axle.ir.text.printer import print_module
    return hashlib.sha256(print_module(module, locations=False).encode()).hexdigest()


class NativeProgram:
    """One compiled signature: the JIT-linked code and what calling it needs."""

    def __init__(self, program: Program):
        self.program = program
        self._jit, addrs, self.optimized_ir = compile_ir(program.llvm_ir, ["axle_entry"])
        self._fn = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p))(addrs["axle_entry"])
        self._local = threading.local()  # arena and pointer table per thread (devices run in threads)

    def _scratch(self):
        loc = self._local
        if not hasattr(loc, "table"):
            loc.arena = np.empty(max(self.program.arena_bytes, 1) + 64, dtype=np.uint8)
            base = loc.arena.ctypes.data
            loc.arena_ptr = base + (-base % 64)
            n = len(self.program.arg_types) + len(self.program.result_types) + 1
            loc.table = (ctypes.c_void_p * n)()
        return loc

    def run(self, args: list) -> list:
        outs = [np.empty(t.shape, dtype=t.dtype) for t in self.program.result_types]
        loc = self._scratch()
        table = loc.table
        k = 0
        for a in args:
            table[k] = a.ctypes.data
            k += 1
        for o in outs:
            table[k] = o.ctypes.data
            k += 1
        table[k] = loc.arena_ptr
        self._fn(table)
        from axle.backends.cpu.kernels_collective import check_errors
        check_errors()  # an error raised by a host callback (collectives) during the call
        return outs


class CpuExecutable:
    def __init__(self, module: Module, entry: str = "main"):
        self.module = module
        self.entry = entry
        self.function = module.function(entry)
        self.fingerprint = fingerprint(module)
        types = self.function.function_type.inputs
        for t in list(types) + list(self.function.function_type.results):
            if not isinstance(t, TensorType):
                raise Unsupported(f"@{entry} takes or returns a value of type {t}; the cpu backend "
                                  f"passes only tensors across its entry")
        self.dynamic = any(isinstance(t, TensorType) and not t.is_static for t in types)
        self._programs: dict = {}
        if not self.dynamic:
            self._native(tuple(t.shape for t in types))

    def _native(self, signature: tuple) -> NativeProgram:
        prog = self._programs.get(signature)
        if prog is not None:
            return prog
        key = (self.fingerprint, self.entry, signature)
        with _CACHE_LOCK:
            prog = _CACHE.get(key)
        if prog is None:
            module = self.module
            if self.dynamic:
                from axle.ir import parse_module, print_module
                from axle.passes.refine_shapes import fully_static, specialize
                module = specialize(parse_module(print_module(module)), self.entry, list(signature))
                if not fully_static(module, self.entry):
                    raise Unsupported(f"@{self.entry}: shapes still dynamic after specializing to "
                                      f"{[list(s) for s in signature]} (they depend on data)")
            prog = NativeProgram(compile_function(module, self.entry))
            with _CACHE_LOCK:
                _CACHE[key] = prog
        self._programs[signature] = prog
        return prog

    @property
    def program(self) -> Program:
        """The program of the (first) compiled signature."""
        return next(iter(self._programs.values())).program

    def execute(self, args) -> list:
        args = [np.ascontiguousarray(a) for a in check_arguments(self.function, args)]
        return self._native(tuple(a.shape for a in args)).run(args)

    def __call__(self, *args):
        out = self.execute(list(args))
        if len(out) == 1:
            return out[0]
        return tuple(out)
