"""Meshes and shardings with JAX's meaning.

    mesh = Mesh({"data": 2, "model": 2})                 # or Mesh((2, 2), ("data", "model"))
    s = NamedSharding(mesh, PartitionSpec("data", None))  # dim 0 split over "data"

A `Mesh` is an n-dimensional array of device ids with named axes (`device_ids` lists them in
row-major order of the axes; default 0..N-1). A `PartitionSpec` has one entry per tensor
dimension: None (not split), an axis name, or a tuple of axis names (split over their
product, the first the major one). Axes a spec does not name replicate the tensor.

`NamedSharding` adds what a partitioner needs beyond JAX's public record: `partial`, the mesh
axes over which the value is a partial sum (each device holds a summand; Shardy calls them
`unreduced`). The device at mesh coordinates c holds, along dimension d, the block whose
index is the mixed-radix number of c over d's axes (major first): `shard_index`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

import numpy as np


class ShardingError(ValueError):
    """A sharding that does not fit its mesh or its tensor."""


@dataclass(frozen=True)
class Mesh:
    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...]

    def __init__(self, shape, axis_names: Optional[Sequence[str]] = None,
                 device_ids: Optional[Sequence[int]] = None):
        if isinstance(shape, dict):
            axes = tuple((str(k), int(v)) for k, v in shape.items())
        else:
            shape = tuple(int(s) for s in shape)
            if axis_names is None or len(axis_names) != len(shape):
                raise ShardingError(f"Mesh: {len(shape)} axis sizes need as many axis names, "
                                    f"got {axis_names!r}")
            axes = tuple(zip((str(n) for n in axis_names), shape))
        names = [n for n, _ in axes]
        if len(set(names)) != len(names):
            raise ShardingError(f"Mesh: axis names must be distinct, got {names}")
        if any(s < 1 for _, s in axes):
            raise ShardingError(f"Mesh: axis sizes must be positive, got {dict(axes)}")
        size = int(np.prod([s for _, s in axes], dtype=np.int64))
        ids = tuple(range(size)) if device_ids is None else tuple(int(i) for i in device_ids)
        if sorted(ids) != list(range(size)):
            raise ShardingError(f"Mesh: device_ids must be a permutation of 0..{size - 1}, got {list(ids)}")
        object.__setattr__(self, "axes", axes)
        object.__setattr__(self, "device_ids", ids)

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.axes)

    @property
    def shape(self) -> dict:
        return dict(self.axes)

    @property
    def size(self) -> int:
        return len(self.device_ids)

    def axis_size(self, name: str) -> int:
        for n, s in self.axes:
            if n == name:
                return s
        raise ShardingError(f"mesh axis {name!r} is not one of {list(self.axis_names)}")

    def devices_array(self) -> np.ndarray:
        """Device ids shaped like the mesh."""
        return np.array(self.device_ids, dtype=np.int64).reshape([s for _, s in self.axes] or [1])

    def coords(self, device: int) -> dict:
        """{axis: coordinate} of a device id."""
        pos = self.device_ids.index(device)
        out = {}
        for name, s in reversed(self.axes):
            out[name] = pos % s
            pos //= s
        return out

    def groups(self, axes: Sequence[str]) -> list[list[int]]:
        """Device groups that differ only along `axes`: one group per coordinate of the other
        axes, each ordered by the mixed-radix index over `axes` (the first the major)."""
        for a in axes:
            self.axis_size(a)
        out: dict = {}
        for d in self.device_ids:
            c = self.coords(d)
            key = tuple(c[n] for n in self.axis_names if n not in axes)
            out.setdefault(key, []).append((tuple(c[a] for a in axes), d))
        return [[d for _, d in sorted(g)] for _, g in sorted(out.items())]

    def __str__(self) -> str:
        axes = ", ".join(f'"{n}"={s}' for n, s in self.axes)
        ids = "" if self.device_ids == tuple(range(self.size)) else f", device_ids={list(self.device_ids)}"
        return f"Mesh<[{axes}]{ids}>"


class PartitionSpec(tuple):
    """JAX's `PartitionSpec(*entries)`: per dimension None, an axis name or a tuple of names.
    Missing trailing entries mean None."""

    def __new__(cls, *entries):
        norm = []
        for e in entries:
            if e is None or isinstance(e, str):
                norm.append(e)
            elif isinstance(e, (tuple, list)) and all(isinstance(a, str) for a in e):
                norm.append(tuple(e) if len(e) != 1 else e[0])
            else:
                raise ShardingError(f"PartitionSpec entry must be None, an axis name or a tuple "
                                    f"of names, got {e!r}")
        return super().__new__(cls, norm)

    def __repr__(self) -> str:
        return "PartitionSpec(" + ", ".join(repr(e) for e in self) + ")"


P = PartitionSpec


def _entry_axes(e) -> tuple[str, ...]:
    if e is None:
        return ()
    return (e,) if isinstance(e, str) else tuple(e)


@dataclass(frozen=True)
class NamedSharding:
    """`mesh` + `spec` (JAX's meaning), plus `partial` axes (pending sums; see module doc)."""

    mesh: Mesh
    spec: PartitionSpec = field(default_factory=PartitionSpec)
    partial: tuple[str, ...] = ()

    def __post_init__(self):
        if not isinstance(self.spec, PartitionSpec):
            object.__setattr__(self, "spec", PartitionSpec(*self.spec))
        object.__setattr__(self, "partial", tuple(self.partial))
        seen = []
        for e in self.spec:
            for a in _entry_axes(e):
                self.mesh.axis_size(a)
                if a in seen:
                    raise ShardingError(f"{self.spec!r}: mesh axis {a!r} is used twice")
                seen.append(a)
        for a in self.partial:
            self.mesh.axis_size(a)
            if a in seen:
                raise ShardingError(f"axis {a!r} cannot both shard a dimension and be partial")

    # -- canonical views

    @classmethod
    def from_dims(cls, mesh: Mesh, dims: Sequence[Sequence[str]], partial: Iterable[str] = ()):
        return cls(mesh, PartitionSpec(*[None if not d else tuple(d) for d in dims]), tuple(partial))

    def dims(self, rank: int) -> tuple[tuple[str, ...], ...]:
        """Axes per dimension, padded with () to `rank`."""
        if len(self.spec) > rank:
            raise ShardingError(f"{self.spec!r} has {len(self.spec)} entries for a rank-{rank} tensor")
        return tuple(_entry_axes(e) for e in self.spec) + ((),) * (rank - len(self.spec))

    def used_axes(self) -> set:
        return {a for e in self.spec for a in _entry_axes(e)}

    def is_replicated(self) -> bool:
        return not self.used_axes() and not self.partial

    def normalized(self, rank: int) -> "NamedSharding":
        """Canonical form: one entry per dimension, partial axes sorted, and axes of size 1
        dropped (they split nothing; kept, they would make collectives over groups of one)."""
        one = {n for n, s in self.mesh.axes if s == 1}
        return NamedSharding.from_dims(self.mesh, [[a for a in d if a not in one] for d in self.dims(rank)],
                                       sorted(a for a in self.partial if a not in one))

    def same_as(self, other: "NamedSharding", rank: int) -> bool:
        return (self.dims(rank) == other.dims(rank) and set(self.partial) == set(other.partial))

    # -- shapes and shards

    def tiles(self, rank: int) -> list[int]:
        return [int(np.prod([self.mesh.axis_size(a) for a in d], dtype=np.int64)) for d in self.dims(rank)]

    def divides(self, shape: Sequence[int]) -> bool:
        return all(s % t == 0 for s, t in zip(shape, self.tiles(len(shape))))

    def shard_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        tiles = self.tiles(len(shape))
        for d, (s, t) in enumerate(zip(shape, tiles)):
            if s % t:
                raise ShardingError(f"dimension {d} of size {s} does not divide into {t} shards "
                                    f"({self.spec!r} on {self.mesh})")
        return tuple(s // t for s, t in zip(shape, tiles))

    def shard_index(self, device: int, rank: int) -> list[int]:
        c = self.mesh.coords(device)
        out = []
        for d in self.dims(rank):
            i = 0
            for a in d:
                i = i * self.mesh.axis_size(a) + c[a]
            out.append(i)
        return out

    def shard(self, array: np.ndarray, device: int) -> np.ndarray:
        """The block of a global array that `device` holds (not for partial shardings)."""
        if self.partial:
            raise ShardingError("cannot split a value into partial sums")
        local = self.shard_shape(array.shape)
        idx = self.shard_index(device, array.ndim)
        return array[tuple(slice(i * n, (i + 1) * n) for i, n in zip(idx, local))]

    def assemble(self, shards: dict, shape: Sequence[int]) -> np.ndarray:
        """The global array from {device: shard} (partial axes summed)."""
        shape = tuple(shape)
        first = next(iter(shards.values()))
        if not self.partial and len(shards) == self.mesh.size:  # each block once, no zero fill
            if not self.used_axes():
                return np.asarray(first).reshape(shape)
            local = self.shard_shape(shape)
            out = np.empty(shape, dtype=first.dtype)
            unused = [a for a in self.mesh.axis_names if a not in self.used_axes()]
            for dev, block in shards.items():
                c = self.mesh.coords(dev)
                if all(c[a] == 0 for a in unused):
                    idx = self.shard_index(dev, len(shape))
                    out[tuple(slice(i * n, (i + 1) * n) for i, n in zip(idx, local))] = block
            return out
        out = np.zeros(shape, dtype=first.dtype)
        seen = np.zeros(shape, dtype=bool)
        local = self.shard_shape(shape)
        for dev, block in shards.items():
            c = self.mesh.coords(dev)
            idx = self.shard_index(dev, len(shape))
            where = tuple(slice(i * n, (i + 1) * n) for i, n in zip(idx, local))
            if self.partial:
                if all(c[a] == 0 for a in self.mesh.axis_names if a not in self.partial
                       and a not in self.used_axes()):
                    out[where] += block
            elif not seen[where].all():
                out[where] = block
                seen[where] = True
        return out

    def __str__(self) -> str:
        def entry(e):
            return "None" if e is None else repr(e)
        text = f"P({', '.join(entry(e) for e in self.spec)})"
        if self.partial:
            text += " partial{" + ", ".join(self.partial) + "}"
        return text


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())
