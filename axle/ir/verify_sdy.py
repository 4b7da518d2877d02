"""Verifier rules of the Shardy (`sdy`) ops and sharding attributes (registered into
verify_base.CHECKS; the attributes are in sdy.py).

* a sharding names an `sdy.mesh` of the module (or carries its mesh inline), has one
  dimension sharding per dimension of its value, and uses each mesh axis once, by a name
  the mesh has; a mesh's axes have distinct names and its device_ids, when given, are a
  permutation of 0..size-1 (one id for a mesh without axes);
* `sdy.sharding_constraint` / `sdy.reshard` keep their operand's type;
* `sdy.manual_computation` has one in-sharding per operand and one out-sharding per
  result, a body argument per operand and `sdy.return` values per result, whose types
  are the global types with each dimension divided by the sizes of the manual axes that
  shard it;
* `sdy.sharding` on a function's arguments/results and on ops (one sharding per result)
  follows the same rules.
"""
from __future__ import annotations

from axle.ir import sdy as S
from axle.ir.attributes import ArrayAttr, DictAttr
from axle.ir.core import Operation
from axle.ir.types import FunctionType, TensorType
from axle.ir.verify_base import _check, _fail, _need


def _mesh(v, op: Operation, sh: S.ShardingAttr) -> S.MeshAttr:
    if isinstance(sh.mesh, S.MeshAttr):
        return sh.mesh
    m = v.symbols.get(sh.mesh) if v.module is not None else None
    if m is None or m.name != "sdy.mesh":
        _fail(op, f"sharding {sh.body()} refers to @{sh.mesh}, which is not an sdy.mesh of the module")
    return m.attributes["mesh"]


def check_sharding(v, op: Operation, sh: S.ShardingAttr, t, what: str) -> S.MeshAttr:
    mesh = _mesh(v, op, sh)
    if isinstance(t, TensorType):
        _need(len(sh.dims) == t.rank, op, None,
              f"{what}: sharding {sh.body()} has {len(sh.dims)} dimension shardings for a value of rank "
              f"{t.rank} ({t})")
    used = []
    for d in sh.dims:
        used += list(d.axes)
    used += list(sh.replicated) + list(sh.unreduced)
    for a in used:
        size = mesh.axis_size(a.name)
        _need(size is not None, op, None, f"{what}: sharding {sh.body()} uses axis \"{a.name}\", which mesh "
                                          f"{mesh} does not have")
        if a.sub is not None:
            pre, sz = a.sub
            _need(pre >= 1 and sz > 1 and size % (pre * sz) == 0, op, None,
                  f"{what}: sub-axis {a} does not divide axis \"{a.name}\" of size {size}")
    whole = [a for a in used if a.sub is None]
    names = [a.name for a in whole]
    _need(len(set(names)) == len(names) and len(set(used)) == len(used), op, None,
          f"{what}: sharding {sh.body()} uses an axis more than once")
    return mesh


@_check("sdy.mesh")
def _mesh_op(v, op):
    mesh = op.attributes.get("mesh")
    _need(isinstance(mesh, S.MeshAttr), op, None, "sdy.mesh needs a mesh attribute <[...]>")
    names = [n for n, _ in mesh.axes]
    _need(len(set(names)) == len(names), op, None, f"mesh axis names repeat: {names}")
    _need(all(s >= 1 for _, s in mesh.axes), op, None, "mesh axis sizes must be positive")
    if mesh.device_ids is not None:
        ids = sorted(mesh.device_ids)
        if mesh.axes:
            _need(ids == list(range(mesh.size)), op, None,
                  f"device_ids {list(mesh.device_ids)} must be a permutation of 0..{mesh.size - 1}")
        else:
            _need(len(ids) == 1 and ids[0] >= 0, op, None,
                  "a mesh without axes names exactly one device (device_ids=[k])")


@_check("sdy.sharding_constraint", "sdy.reshard")
def _constraint(v, op):
    sh = op.attributes.get("sharding")
    _need(isinstance(sh, S.ShardingAttr), op, None, "needs a sharding <@mesh, [...]>")
    _need(op.operands[0].type == op.results[0].type, op, None,
          f"result type {op.results[0].type} must equal the operand type {op.operands[0].type}")
    check_sharding(v, op, sh, op.operands[0].type, "operand")


def _local_type(t, sh: S.ShardingAttr, mesh: S.MeshAttr, manual: set):
    """The type a manual computation's body sees for a value of global type t."""
    if not isinstance(t, TensorType):
        return t
    shape = []
    for dim, d in zip(t.shape, sh.dims):
        n = 1
        for a in d.axes:
            if a.name in manual:
                n *= a.sub[1] if a.sub is not None else mesh.axis_size(a.name)
        shape.append(None if dim is None else (dim // n if dim % n == 0 else -1))
    return TensorType(tuple(shape), t.element_type, t.bounds, t.encoding) if -1 not in shape else None


@_check("sdy.manual_computation")
def _manual(v, op):
    ins, outs = op.attributes.get("in_shardings"), op.attributes.get("out_shardings")
    axes = op.attributes.get("manual_axes")
    _need(isinstance(ins, S.ShardingPerValueAttr) and isinstance(outs, S.ShardingPerValueAttr)
          and isinstance(axes, S.ManualAxesAttr), op, None, "needs in_shardings, out_shardings and manual_axes")
    _need(len(ins.shardings) == len(op.operands), op, None,
          f"{len(ins.shardings)} in_shardings for {len(op.operands)} operands")
    _need(len(outs.shardings) == len(op.results), op, None,
          f"{len(outs.shardings)} out_shardings for {len(op.results)} results")
    block = op.regions[0].blocks[0]
    ret = block.operations[-1]
    _need(len(block.arguments) == len(op.operands), op, None,
          f"the body takes {len(block.arguments)} arguments for {len(op.operands)} operands")
    _need(len(ret.operands) == len(op.results), ret, None,
          f"sdy.return gives {len(ret.operands)} values for {len(op.results)} results")
    manual = set(axes.axes)
    pairs = [("operand", i, g.type, a.type, s) for i, (g, a, s) in
             enumerate(zip(op.operands, block.arguments, ins.shardings))]
    pairs += [("result", i, g.type, r.type, s) for i, (g, r, s) in
              enumerate(zip(op.results, ret.operands, outs.shardings))]
    for what, i, glob, local, sh in pairs:
        mesh = check_sharding(v, op, sh, glob, f"{what} #{i}")
        for name in manual:
            _need(mesh.axis_size(name) is not None, op, None, f"manual axis \"{name}\" is not an axis of {mesh}")
        want = _local_type(glob, sh, mesh, manual)
        _need(want == local, op, None,
              f"{what} #{i} of global type {glob} sharded {sh.body()} over manual axes {axes} has local type "
              f"{want if want is not None else '(not divisible)'}, but the body uses {local}")


def check_sharding_attrs(v, op: Operation) -> None:
    """`sdy.sharding` on any op (one per result) and on a function's arguments / results."""
    sh = op.attributes.get("sdy.sharding")
    if isinstance(sh, S.ShardingPerValueAttr) and op.results:
        _need(len(sh.shardings) == len(op.results), op, None,
              f"sdy.sharding has {len(sh.shardings)} shardings for {len(op.results)} results")
        for i, (s, r) in enumerate(zip(sh.shardings, op.results)):
            check_sharding(v, op, s, r.type, f"result #{i}")
    if op.name != "func.func":
        return
    ft = getattr(op.attributes.get("function_type"), "type", None)
    if not isinstance(ft, FunctionType):
        return  # the function's own check says what is wrong
    for key, types in (("arg_attrs", ft.inputs), ("res_attrs", ft.results)):
        arr = op.attributes.get(key)
        if not isinstance(arr, ArrayAttr):
            continue
        for i, (d, t) in enumerate(zip(arr.elements, types)):
            if isinstance(d, DictAttr):
                s = dict(d.entries).get("sdy.sharding")
                if isinstance(s, S.ShardingAttr):
                    check_sharding(v, op, s, t, f"{key[:3]} #{i}")
