"""Sharding: meshes, shardings, propagation, the SPMD partitioner (docs/sharding.md)."""
from axle.sharding.mesh import Mesh, NamedSharding, P, PartitionSpec, ShardingError, replicated
from axle.sharding.formats import (HloSharding, default_mesh, from_hlo, from_sdy, mesh_from_sdy, mesh_to_sdy,
                                   parse_hlo_sharding, to_hlo, to_sdy)

__all__ = ["Mesh", "NamedSharding", "P", "PartitionSpec", "ShardingError", "replicated", "HloSharding",
           "default_mesh", "from_hlo", "from_sdy", "mesh_from_sdy", "mesh_to_sdy", "parse_hlo_sharding",
           "to_hlo", "to_sdy", "partition", "run_partitioned"]


def partition(module, function: str = "main"):
    from axle.sharding.partitioner import partition as _partition
    return _partition(module, function)


def run_partitioned(prog, args, backend: str = "cpu"):
    from axle.sharding.run import run_partitioned as _run
    return _run(prog, args, backend)
