"""Running programs on several CPU devices of one host, one thread per device.

`compiled_program_runner(module)` gives the `program_runner` the interpreter's
`interpreter.run_parallel` uses: each process's function is compiled once (per
signature) for the CPU and called in that process's thread. The thread is bound to the
run's native communicator (collectives_native.py: one per process grid, device id =
replica * num_partitions + partition), so that collectives compiled to native calls meet
the other devices in shared memory; collectives that still call back into the runtime
meet them through the device's context (kernels_collective.py). A device that fails
aborts the communicator, so that the others leave their collectives and the run raises.
"""
from __future__ import annotations

import threading
import time

from axle import forks
from axle.backends.cpu.token_executable import executable_for
from axle.backends.cpu.kernels_collective import device_context
from axle.ir.core import Module

_COMM_LOCK = forks.lock()


def grid_communicator(grid):
    """The native communicator of a process grid (made by its first device)."""
    with _COMM_LOCK:
        comm = getattr(grid, "_axle_native_comm", None)
        if comm is None:
            from axle.backends.cpu.collectives_native import Communicator
            comm = Communicator(grid.num_replicas * grid.num_partitions, grid.num_partitions)
            grid._axle_native_comm = comm
            threading.Thread(target=_watch, args=(grid, comm), daemon=True, name="axle-comm-watch").start()
        return comm


def _watch(grid, comm, period: float = 0.05) -> None:
    """Abort the communicator when the grid fails (a device raised in Python, perhaps before
    it ever reached compiled code), so that devices waiting in a collective leave; ends when
    every device has finished."""
    while not comm.finished:
        if getattr(grid, "_failure", None) is not None:
            comm.abort()
            return
        time.sleep(period)


def run_bound(comm, device: int, fn):
    """fn() with this thread bound to `device` of `comm`; aborts the communicator on failure."""
    comm.bind(device)
    try:
        out = fn()
        comm.check()
        return out
    except BaseException:
        comm.abort()
        raise
    finally:
        comm.unbind()
        comm.done += 1


def compiled_program_runner(module: Module):
    executables: dict[str, object] = {}  # CpuExecutable, or its token-stripping wrapper
    lock = threading.Lock()

    def run(name: str, args, ctx):
        with lock:
            ex = executables.get(name)
            if ex is None:
                ex = executables[name] = executable_for(module, name)  # (tokens: tokens.py)
        comm = getattr(ctx, "native_comm", None) or grid_communicator(ctx.grid)
        device = getattr(ctx, "device_id", None)
        if device is None:
            device = ctx.replica_id * ctx.grid.num_partitions + ctx.partition_id
        with device_context(ctx):
            return run_bound(comm, device, lambda: ex.execute(list(args)))

    run.executables = executables  # what was compiled (the conformance runner reads it)
    return run
