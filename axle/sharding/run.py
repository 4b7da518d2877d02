"""Running a partitioned program on the N devices of this process.

    outs = run_partitioned(prog, [x, w1, w2], backend="cpu")   # global numpy arrays in and out

The global arguments are split by their shardings (device p gets its block), device p runs
the per-device program as partition p of a 1 x N grid (axle/interpreter/collectives.py: one
thread per device, collectives meet at a rendezvous), and the results are put back together
from the blocks by their shardings. `backend="interpreter"` evaluates the program with the
reference interpreter, `"cpu"` compiles it once for the CPU backend and runs it on each device
(collectives call back into the runtime: axle/backends/cpu/kernels_collective.py).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from axle.interpreter.collectives import run_parallel


def _runner(prog, backend: str):
    if backend == "interpreter":
        from axle.interpreter.evaluator import Evaluator
        ev = Evaluator(prog.module)
        return lambda name, args, ctx: ev.call_function(name, args, ctx)
    if backend == "cpu":
        from axle.backends.cpu.multi import compiled_program_runner
        return compiled_program_runner(prog.module)
    raise ValueError(f"run_partitioned: unknown backend {backend!r}; known: interpreter, cpu")


class PartitionedRunner:
    """Keeps the per-device runner (compiled executables) across calls."""

    def __init__(self, prog, backend: str = "cpu", function: str = "main"):
        self.prog = prog
        self.function = function
        self.run_function = _runner(prog, backend)

    def __call__(self, *args) -> list:
        prog = self.prog
        if len(args) != len(prog.in_shardings):
            raise ValueError(f"the program takes {len(prog.in_shardings)} arguments, got {len(args)}")
        n = prog.num_devices
        flat = []
        for p in range(n):
            for i, (a, s, t) in enumerate(zip(args, prog.in_shardings, prog.global_in_types)):
                a = np.asarray(a)
                if tuple(a.shape) != tuple(t.shape):
                    raise ValueError(f"argument {i}: expected shape {list(t.shape)}, got {list(a.shape)}")
                flat.append(np.asarray(s.shard(a.astype(t.element_type.dtype, copy=False), p), order="C"))  # (0-d stays 0-d)
        k = len(args)
        results, _grid = run_parallel([[self.function] * n], flat, self.run_function, lambda name: k)
        m = len(prog.out_shardings)
        outs = []
        for j, (s, t) in enumerate(zip(prog.out_shardings, prog.global_out_types)):
            shards = {p: np.asarray(results[p * m + j]) for p in range(n)}
            outs.append(s.assemble(shards, t.shape))
        return outs


def run_partitioned(prog, args: Sequence, backend: str = "cpu") -> list:
    return PartitionedRunner(prog, backend)(*args)


class ShardedExecutable:
    """A module annotated for several devices, partitioned and run on this process's N
    devices: `execute(global arrays) -> global arrays`, like a one-device executable
    (what `axle.jax.jit(..., in_shardings=, out_shardings=)` runs). `program` is the
    PartitionedProgram (its `report()` lists the collectives)."""

    def __init__(self, module, backend: str = "cpu", function: str = "main"):
        from axle.sharding.partitioner import partition
        self.program = partition(module, function)
        self._runner = PartitionedRunner(self.program, backend, function)

    def execute(self, args) -> list:
        return self._runner(*args)

    def __call__(self, *args):
        outs = self.execute(args)
        return outs[0] if len(outs) == 1 else tuple(outs)


def is_sharded(module) -> bool:
    """Whether a module asks for several devices (mhlo.num_partitions > 1)."""
    n = module.attributes.get("mhlo.num_partitions")
    return n is not None and getattr(n, "value", 1) > 1
