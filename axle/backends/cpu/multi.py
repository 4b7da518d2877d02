"""Running programs on several CPU devices of one host, one thread per device.

`compiled_program_runner(module)` gives the `program_runner` the interpreter's
`interpreter.run_parallel` uses: each process's function is compiled once (per
signature) for the CPU and called in that process's thread, with the device's context
set so that its collectives meet the other devices (kernels_collective.py).
"""
from __future__ import annotations

import threading

from axle.backends.cpu.tokens import executable_for
from axle.backends.cpu.kernels_collective import device_context
from axle.ir.core import Module


def compiled_program_runner(module: Module):
    executables: dict[str, object] = {}  # CpuExecutable, or its token-stripping wrapper
    lock = threading.Lock()

    def run(name: str, args, ctx):
        with lock:
            ex = executables.get(name)
            if ex is None:
                ex = executables[name] = executable_for(module, name)  # (tokens: tokens.py)
        with device_context(ctx):
            return ex.execute(list(args))

    run.executables = executables  # what was compiled (the conformance runner reads it)
    return run
