"""Reading the shardings a program is annotated with.

* the mesh: the module's `sdy.mesh` (one; several must be equal), else `default_mesh(n)` for
  `mhlo.num_partitions = n` when the program uses GSPMD strings only, else a 1-device mesh;
* arguments and results: `sdy.sharding` (`#sdy.sharding<...>`) or `mhlo.sharding` ("{...}")
  in `arg_attrs` / `res_attrs`; unannotated means replicated;
* in the body: `sdy.sharding_constraint`, `sdy.reshard`, and GSPMD's
  `custom_call @Sharding {mhlo.sharding = "..."}`.
"""
from __future__ import annotations

from typing import Optional

from axle.ir.attributes import ArrayAttr, DictAttr, IntegerAttr, StringAttr
from axle.ir.sdy import ShardingAttr, ShardingPerValueAttr
from axle.sharding.formats import default_mesh, from_hlo, from_sdy, mesh_from_sdy, parse_hlo_sharding
from axle.sharding.mesh import Mesh, NamedSharding, ShardingError


def module_mesh(module) -> Mesh:
    meshes = {}
    for op in module.operations:
        if op.name == "sdy.mesh":
            meshes[op.attr("sym_name")] = mesh_from_sdy(op.attributes["mesh"])
    distinct = {m for m in meshes.values() if m.size > 1}
    if len(distinct) > 1:
        raise ShardingError(f"the partitioner handles one mesh per module, found "
                            f"{', '.join(f'@{k} = {v}' for k, v in meshes.items())}")
    if distinct:
        return next(iter(distinct))
    if meshes:  # a one-device mesh (its axes of size 1 may still be named)
        return next(iter(meshes.values()))
    n = module.attributes.get("mhlo.num_partitions")
    n = n.value if isinstance(n, IntegerAttr) else 1
    return default_mesh(n) if n > 1 else Mesh((1,), ("_0",))


def _from_attr(attr, mesh: Mesh, rank: int, where: str) -> Optional[NamedSharding]:
    if isinstance(attr, ShardingPerValueAttr) and len(attr.shardings) == 1:
        attr = attr.shardings[0]
    if isinstance(attr, ShardingAttr):
        if isinstance(attr.mesh, str) or attr.mesh is None:
            return from_sdy(attr, mesh)
        inline = mesh_from_sdy(attr.mesh)
        if inline.size == 1:
            return NamedSharding(mesh)
        return from_sdy(attr, inline)
    if isinstance(attr, StringAttr):
        try:
            return from_hlo(parse_hlo_sharding(attr.value), mesh, rank)
        except ShardingError as e:
            raise ShardingError(f"{where}: {e}") from None
    return None


def _dict_sharding(d, mesh, rank, where) -> Optional[NamedSharding]:
    if not isinstance(d, DictAttr):
        return None
    for key in ("sdy.sharding", "mhlo.sharding"):
        attr = d.get(key)
        if attr is not None:
            return _from_attr(attr, mesh, rank, f"{where} ({key})")
    return None


def function_shardings(fn, mesh: Mesh):
    """(argument shardings, result shardings) of a func.func; None where not annotated."""
    ft = fn.function_type
    out = []
    for key, types, what in (("arg_attrs", ft.inputs, "argument"), ("res_attrs", ft.results, "result")):
        attrs = fn.attributes.get(key)
        entries = attrs.elements if isinstance(attrs, ArrayAttr) else ()
        out.append([_dict_sharding(entries[i] if i < len(entries) else None, mesh, len(t.shape),
                                   f"@{fn.sym_name} {what} {i}") for i, t in enumerate(types)])
    return out[0], out[1]


def constraint_sharding(op, mesh: Mesh) -> NamedSharding:
    attr = op.attributes.get("sharding") or op.attributes.get("mhlo.sharding")
    rank = len(op.results[0].type.shape)
    s = _from_attr(attr, mesh, rank, op.where())
    if s is None:
        raise ShardingError(f"{op.where()}: {op.name} without a sharding it can read")
    return s
