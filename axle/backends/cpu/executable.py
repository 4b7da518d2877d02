"""The CPU executable: native code behind one foreign call per execution.

Arguments are checked (count, shape, dtype) before any native code runs; results are
allocated here, the pointer table is filled, and `axle_entry(buffers)` runs the program.
"""
from __future__ import annotations

import ctypes
from typing import Optional

import numpy as np

from axle.backends.cpu.compiler import Program, compile_function
from axle.backends.cpu.llvm_env import compile_ir
from axle.interpreter.evaluator import check_arguments
from axle.ir.core import Module


class CpuExecutable:
    def __init__(self, module: Module, entry: str = "main"):
        self.module = module
        self.entry = entry
        self.function = module.function(entry)
        self.program: Program = compile_function(module, entry)
        self._jit, addrs, self.optimized_ir = compile_ir(self.program.llvm_ir, ["axle_entry"])
        self._fn = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p))(addrs["axle_entry"])
        self._arena = np.empty(max(self.program.arena_bytes, 1) + 64, dtype=np.uint8)
        base = self._arena.ctypes.data
        self._arena_ptr = base + (-base % 64)
        n = len(self.program.arg_types) + len(self.program.result_types) + 1
        self._table = (ctypes.c_void_p * n)()

    def execute(self, args) -> list:
        args = check_arguments(self.function, args)
        args = [np.ascontiguousarray(a) for a in args]
        outs = [np.empty(t.shape, dtype=t.dtype) for t in self.program.result_types]
        table = self._table
        k = 0
        for a in args:
            table[k] = a.ctypes.data
            k += 1
        for o in outs:
            table[k] = o.ctypes.data
            k += 1
        table[k] = self._arena_ptr
        self._fn(table)
        return outs

    def __call__(self, *args):
        out = self.execute(list(args))
        if len(out) == 1:
            return out[0]
        return tuple(out)
