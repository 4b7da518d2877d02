"""Shardy (`sdy`) attributes: meshes and tensor shardings, as JAX writes them.

    sdy.mesh @mesh = <["x"=2, "y"=4], device_ids=[...]>          MeshAttr
    #sdy.sharding<@mesh, [{"x"}, {"y", ?}p1], replicated={"z"}>   ShardingAttr
    #sdy.sharding_per_value<[<@mesh, [{}, {}]>, ...]>              ShardingPerValueAttr
    manual_axes={"x", "y"}                                          ManualAxesAttr

A dimension's sharding (DimSharding) lists the mesh axes it is split over, major first;
an axis may be a sub-axis `"x":(1)2` (pre-size 1, size 2); `?` marks the dimension open
(propagation may add axes), `pN` its priority. These are the records a partitioner reads
(`mesh`, `dims`, `replicated`, `unreduced`); until one exists, axle runs sharded
programs on one device. Immutable, hashable, printed as MLIR text; `to_python()` gives
plain dicts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from axle.ir.attributes import Attribute, format_symbol, quote_string


@dataclass(frozen=True)
class MeshAttr(Attribute):
    """`<["x"=2, "y"=4], device_ids=[...]>`; `device_ids` None when the default order."""

    axes: tuple[tuple[str, int], ...]
    device_ids: Optional[tuple[int, ...]] = None

    @property
    def size(self) -> int:
        n = 1  # a mesh without axes (`<[], device_ids=[k]>`: JAX's "maximal" mesh) is one device
        for _, s in self.axes:
            n *= s
        return n

    def axis_size(self, name: str) -> Optional[int]:
        return dict(self.axes).get(name)

    def to_python(self):
        return {"axes": [{"name": n, "size": s} for n, s in self.axes],
                "device_ids": None if self.device_ids is None else list(self.device_ids)}

    def __str__(self) -> str:
        axes = ", ".join(f"{quote_string(n)}={s}" for n, s in self.axes)
        ids = "" if self.device_ids is None else ", device_ids=[" + ", ".join(map(str, self.device_ids)) + "]"
        return f"<[{axes}]{ids}>"


@dataclass(frozen=True)
class AxisRef:
    """A mesh axis, or the sub-axis `"x":(pre_size)size` of it."""

    name: str
    sub: Optional[tuple[int, int]] = None  # (pre-size, size)

    def __str__(self) -> str:
        text = quote_string(self.name)
        return text if self.sub is None else f"{text}:({self.sub[0]}){self.sub[1]}"

    def to_python(self):
        return self.name if self.sub is None else {"name": self.name, "pre_size": self.sub[0], "size": self.sub[1]}


def _axes_text(axes) -> str:
    return ", ".join(str(a) for a in axes)


@dataclass(frozen=True)
class DimSharding:
    """`{"x", "y"}` (closed), `{"x", ?}` / `{?}` (open), with an optional priority `pN`."""

    axes: tuple[AxisRef, ...] = ()
    closed: bool = True
    priority: Optional[int] = None

    def __str__(self) -> str:
        body = _axes_text(self.axes)
        if not self.closed:
            body = body + ", ?" if body else "?"
        return "{" + body + "}" + (f"p{self.priority}" if self.priority is not None else "")

    def to_python(self):
        return {"axes": [a.to_python() for a in self.axes], "closed": self.closed, "priority": self.priority}


@dataclass(frozen=True)
class ShardingAttr(Attribute):
    """A tensor's sharding: its mesh (a symbol of an `sdy.mesh`, or a mesh written inline),
    one DimSharding per dimension, and axes it is replicated / unreduced over."""

    mesh: Union[str, MeshAttr]
    dims: tuple[DimSharding, ...]
    replicated: tuple[AxisRef, ...] = ()
    unreduced: tuple[AxisRef, ...] = ()

    def body(self) -> str:
        """The `<...>` form used inside lists and ops."""
        mesh = format_symbol(self.mesh) if isinstance(self.mesh, str) else str(self.mesh)
        text = f"<{mesh}, [" + ", ".join(str(d) for d in self.dims) + "]"
        if self.replicated:
            text += ", replicated={" + _axes_text(self.replicated) + "}"
        if self.unreduced:
            text += ", unreduced={" + _axes_text(self.unreduced) + "}"
        return text + ">"

    def to_python(self):
        return {"mesh": self.mesh if isinstance(self.mesh, str) else self.mesh.to_python(),
                "dims": [d.to_python() for d in self.dims],
                "replicated": [a.to_python() for a in self.replicated],
                "unreduced": [a.to_python() for a in self.unreduced]}

    def __str__(self) -> str:
        return "#sdy.sharding" + self.body()


@dataclass(frozen=True)
class ShardingPerValueAttr(Attribute):
    """`#sdy.sharding_per_value<[<...>, ...]>`: one sharding per result of an op."""

    shardings: tuple[ShardingAttr, ...]

    def to_python(self):
        return [s.to_python() for s in self.shardings]

    def __str__(self) -> str:
        return "#sdy.sharding_per_value<[" + ", ".join(s.body() for s in self.shardings) + "]>"


@dataclass(frozen=True)
class ManualAxesAttr(Attribute):
    """`{"x", "y"}`: the mesh axes a manual computation's body is manual over."""

    axes: tuple[str, ...]

    def to_python(self):
        return list(self.axes)

    def __str__(self) -> str:
        return "{" + ", ".join(quote_string(a) for a in self.axes) + "}"


def mesh_of(module, sharding: ShardingAttr) -> Optional[MeshAttr]:
    """The MeshAttr a sharding refers to (its `sdy.mesh` in module), or None if not found."""
    if isinstance(sharding.mesh, MeshAttr):
        return sharding.mesh
    for op in module.operations if module is not None else ():
        if op.name == "sdy.mesh" and op.attr("sym_name") == sharding.mesh:
            return op.attributes.get("mesh")
    return None
