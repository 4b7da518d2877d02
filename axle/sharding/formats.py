"""Shardings as programs write them: Shardy attributes and GSPMD's `mhlo.sharding` strings.

    from_sdy(#sdy.sharding<@mesh, [{"x"}, {}], unreduced={"y"}>, mesh) -> NamedSharding
    to_sdy(sharding, "mesh", rank) -> ShardingAttr
    mesh_from_sdy(MeshAttr) / mesh_to_sdy(Mesh)
    parse_hlo_sharding("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}") -> HloSharding
    to_hlo(sharding, rank) -> HloSharding;  from_hlo(hlo, mesh, rank) -> NamedSharding

A GSPMD sharding is a tile assignment: an array of device ids shaped [tiles of dim 0, ...,
(replication)]. It names no mesh axes; `from_hlo` finds the grouping of `mesh`'s axes that
produces exactly that array (axes transposed into dimension order, then reshaped), and
`default_mesh(n)` gives the mesh to use when a program has only GSPMD strings: `n`'s prime
factors as axes `_0, _1, ...` over devices 0..n-1.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np

from axle.ir.sdy import AxisRef, DimSharding, MeshAttr, ShardingAttr
from axle.sharding.mesh import Mesh, NamedSharding, PartitionSpec, ShardingError


# ---------------------------------------------------------------- Shardy


def mesh_from_sdy(attr: MeshAttr) -> Mesh:
    return Mesh(dict(attr.axes), device_ids=attr.device_ids)


def mesh_to_sdy(mesh: Mesh) -> MeshAttr:
    ids = None if mesh.device_ids == tuple(range(mesh.size)) else mesh.device_ids
    return MeshAttr(tuple(mesh.axes), ids)


def _axis_names(refs, where: str) -> tuple[str, ...]:
    out = []
    for r in refs:
        if r.sub is not None:
            raise ShardingError(f"{where}: sub-axis {r} is not supported by the partitioner yet")
        out.append(r.name)
    return tuple(out)


def from_sdy(attr: ShardingAttr, mesh: Mesh) -> NamedSharding:
    """A Shardy sharding on `mesh` (the MeshAttr its symbol names, converted)."""
    where = str(attr)
    dims = [_axis_names(d.axes, where) for d in attr.dims]
    return NamedSharding.from_dims(mesh, dims, _axis_names(attr.unreduced, where))


def to_sdy(sharding: NamedSharding, mesh_name: str, rank: int) -> ShardingAttr:
    dims = tuple(DimSharding(tuple(AxisRef(a) for a in d)) for d in sharding.dims(rank))
    return ShardingAttr(mesh_name, dims, unreduced=tuple(AxisRef(a) for a in sharding.partial))


# ---------------------------------------------------------------- GSPMD strings


@dataclass(frozen=True)
class HloSharding:
    """`{replicated}`, `{maximal device=N}` or `{devices=[t0,t1,...]ids [last_tile_dim_replicate]}`."""

    kind: str  # "replicated" | "maximal" | "tiled"
    tile_shape: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    last_tile_dim_replicate: bool = False
    device: int = 0

    def tile_assignment(self) -> np.ndarray:
        return np.array(self.devices, dtype=np.int64).reshape(self.tile_shape)

    def __str__(self) -> str:
        if self.kind == "replicated":
            return "{replicated}"
        if self.kind == "maximal":
            return f"{{maximal device={self.device}}}"
        text = "{devices=[" + ",".join(map(str, self.tile_shape)) + "]" + ",".join(map(str, self.devices))
        return text + (" last_tile_dim_replicate}" if self.last_tile_dim_replicate else "}")


_TILED = re.compile(r"^\{devices=\[([0-9,\s]+)\]\s*([0-9,\s]+?)\s*(last_tile_dim_replicate)?\s*\}$")
_IOTA = re.compile(r"^\{devices=\[([0-9,\s]+)\]\s*<=\[([0-9,\s]+)\](?:T\(([0-9,\s]+)\))?\s*(last_tile_dim_replicate)?\s*\}$")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(t) for t in text.replace(" ", "").split(",") if t)


def parse_hlo_sharding(text: str) -> HloSharding:
    """Parses a GSPMD sharding string; the iota form `{devices=[2,2]<=[4]}` (and `<=[2,2]T(1,0)`)
    is read too. Raises ShardingError naming the text on anything else."""
    t = text.strip()
    if t == "{replicated}":
        return HloSharding("replicated")
    m = re.match(r"^\{maximal device=(\d+)\}$", t)
    if m:
        return HloSharding("maximal", device=int(m.group(1)))
    m = _TILED.match(t)
    if m:
        shape, devices = _ints(m.group(1)), _ints(m.group(2))
        last = bool(m.group(3))
    else:
        m = _IOTA.match(t)
        if not m:
            raise ShardingError(f"cannot read GSPMD sharding {text!r}: expected {{replicated}}, "
                                f"{{maximal device=N}} or {{devices=[...]ids [last_tile_dim_replicate]}}")
        shape, reshape = _ints(m.group(1)), _ints(m.group(2))
        perm = _ints(m.group(3)) if m.group(3) else tuple(range(len(reshape)))
        devices = tuple(np.arange(int(np.prod(reshape))).reshape(reshape).transpose(perm).reshape(-1))
        last = bool(m.group(4))
    if int(np.prod(shape, dtype=np.int64)) != len(devices):
        raise ShardingError(f"GSPMD sharding {text!r}: tile shape {list(shape)} holds "
                            f"{int(np.prod(shape))} devices, {len(devices)} listed")
    if sorted(devices) != list(range(len(devices))):
        raise ShardingError(f"GSPMD sharding {text!r}: device ids must be a permutation of 0..{len(devices) - 1}")
    return HloSharding("tiled", shape, tuple(int(d) for d in devices), last)


def to_hlo(sharding: NamedSharding, rank: int) -> HloSharding:
    if sharding.partial:
        raise ShardingError("a partial-sum sharding has no GSPMD string form here")
    mesh = sharding.mesh
    dims = sharding.dims(rank)
    used = [a for d in dims for a in d]
    if not used:
        return HloSharding("replicated")
    rest = [a for a in mesh.axis_names if a not in used]
    order = [mesh.axis_names.index(a) for a in used + rest]
    tiles = sharding.tiles(rank)
    repl = int(np.prod([mesh.axis_size(a) for a in rest], dtype=np.int64))
    shape = tuple(tiles) + ((repl,) if repl > 1 else ())
    devices = mesh.devices_array().transpose(order).reshape(-1)
    return HloSharding("tiled", shape, tuple(int(d) for d in devices), repl > 1)


def default_mesh(n: int) -> Mesh:
    """Prime factors of n as axes `_0, _1, ...` (largest first), devices 0..n-1 in order."""
    factors, k, p = [], n, 2
    while k > 1:
        while k % p == 0:
            factors.append(p)
            k //= p
        p += 1
    return Mesh(tuple(factors) or (1,), tuple(f"_{i}" for i in range(len(factors) or 1)))


def from_hlo(hlo: HloSharding, mesh: Mesh, rank: int) -> NamedSharding:
    """The NamedSharding on `mesh` whose tile assignment is `hlo`'s."""
    if hlo.kind == "replicated":
        return NamedSharding(mesh, PartitionSpec())
    if hlo.kind == "maximal":
        raise ShardingError(f"{hlo}: a value on one device (maximal) is not supported by the partitioner")
    tiles = list(hlo.tile_shape[:rank])
    if len(hlo.tile_shape) != rank + (1 if hlo.last_tile_dim_replicate else 0):
        raise ShardingError(f"{hlo}: tile shape of rank {len(hlo.tile_shape)} for a rank-{rank} tensor")
    if len(hlo.devices) != mesh.size:
        raise ShardingError(f"{hlo}: {len(hlo.devices)} devices, the mesh has {mesh.size}")
    target = hlo.tile_assignment().reshape(-1)
    names = mesh.axis_names
    arr = mesh.devices_array()
    for perm in itertools.permutations(range(len(names))):
        sizes = [mesh.axis_size(names[i]) for i in perm]
        groups, pos = [], 0
        for t in tiles:  # consecutive axes of the permutation whose product is the tile count
            g, prod = [], 1
            while prod < t and pos < len(sizes):
                g.append(perm[pos])
                prod *= sizes[pos]
                pos += 1
            if prod != t:
                break
            groups.append(g)
        else:
            if np.array_equal(arr.transpose(perm).reshape(-1), target):
                return NamedSharding.from_dims(mesh, [[names[i] for i in g] for g in groups])
    raise ShardingError(f"{hlo}: the tile assignment is not a grouping of the axes of {mesh}")
