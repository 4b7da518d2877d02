"""Loading a GpuProgram's PTX through CuPy and launching its kernels.

NOT YET RUN ON A GPU: written in a session without one (docs/gpu.md). The design follows
facts measured earlier on an H100 (../shared/DESIGN.md): CuPy's RawModule loads llvmlite's
PTX (8-14 ms per module), a launch from Python costs ~8 us. Buffers are CuPy arrays; every
kernel gets every buffer's device pointer, in the program's order (arguments, results,
temporaries). Launch shapes: elementwise and reduce kernels 256 threads per block and at
most 32 blocks per SM (grid-stride loops cover the rest); one-thread fallbacks 1 x 1.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

BLOCK = 256


class CupyExecutable:
    """execute(list of numpy arrays) -> list of numpy arrays, through the device."""

    def __init__(self, prog, ptx: str):
        import cupy as cp
        self.cp = cp
        self.prog = prog
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "axle.ptx")
            with open(path, "w") as f:
                f.write(ptx)
            self.module = cp.RawModule(path=path)
            self.functions = [self.module.get_function(k.name) for k in prog.kernels]
        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        self.launches = []
        for k in prog.kernels:
            if k.kind == "serial":
                self.launches.append(((1,), (1,)))
            else:
                blocks = max(1, min(-(-k.threads // BLOCK), 32 * sms))
                self.launches.append(((blocks,), (BLOCK,)))

    def _check(self, args: list) -> list:
        prog = self.prog
        if len(args) != len(prog.args):
            raise ValueError(f"expected {len(prog.args)} arguments, got {len(args)}")
        out = []
        for i, (t, a) in enumerate(zip(prog.args, args)):
            want = np.dtype(t.element_type.np_dtype)
            shape = tuple(t.shape)
            if tuple(np.shape(a)) != shape or np.asarray(a).dtype != want:
                raise ValueError(f"argument {i}: expected {want}{list(shape)}, got "
                                 f"{np.asarray(a).dtype}{list(np.shape(a))}")
            out.append(a)
        return out

    def execute_device(self, args: list) -> list:
        """Arguments as CuPy (or numpy) arrays; results as CuPy arrays (stay on the device)."""
        cp, prog = self.cp, self.prog
        bufs = [cp.ascontiguousarray(cp.asarray(a)) for a in self._check(args)]
        outs = [cp.empty(tuple(t.shape), np.dtype(t.element_type.np_dtype)) for t in prog.results]
        temps = [cp.empty(tuple(t.shape), np.dtype(t.element_type.np_dtype)) for t in prog.temps]
        scratch = cp.empty(max(prog.scratch_bytes, 1), np.uint8)
        params = tuple(bufs + outs + temps + [scratch])
        for fn, (grid, block) in zip(self.functions, self.launches):
            fn(grid, block, params)
        return outs

    def execute(self, args: list, donate=()) -> list:
        outs = self.execute_device([np.asarray(a) for a in args])
        return [self.cp.asnumpy(o) for o in outs]

    def __call__(self, *args):
        outs = self.execute(list(args))
        return outs[0] if len(outs) == 1 else tuple(outs)
