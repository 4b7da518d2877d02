"""Pass `spmd-partition`: the program one device runs, with the collectives it needs.

    prog = partition(module)              # PartitionedProgram
    prog.module                           # @main on local blocks, mhlo.num_partitions = N
    prog.report()                         # every collective: where, why, bytes

Runs `inline` and `sharding-propagation`, then rewrites @main op by op: each operand is
resharded to what its op's rule wants (reshard.py: local slices or collectives), the op is
cloned with local (per-device) result types, sharding constraints become the resharded value,
and each result is resharded to its requested sharding (or, unannotated, only its pending
sums are reduced). Assumes the plan's shardings divide every dimension they split (the
propagation checks). Leaves the input module unchanged; the output module has only @main.
The per-device program is the same on every device (SPMD); device p finds its block offsets
through `partition_id`. Collective groups use global device ids (`use_global_device_ids`,
one replica, N partitions).
"""
from __future__ import annotations

from dataclasses import dataclass

from axle.ir.attributes import IntegerAttr
from axle.ir.core import Module, OpResult, Operation, make_function
from axle.ir.types import TensorType, element_type
from axle.passes.dead_code import DeadCode
from axle.passes.inline import Inline, clone_ops, clone_region
from axle.sharding.mesh import Mesh, NamedSharding
from axle.sharding.propagation import ShardingPlan, propagate
from axle.sharding.reshard import Resharder


@dataclass
class PartitionedProgram:
    module: Module  # the per-device program
    mesh: Mesh
    plan: ShardingPlan
    in_shardings: list
    out_shardings: list
    global_in_types: list
    global_out_types: list
    collectives: list

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    def bytes_per_step(self) -> int:
        """Bytes all devices send in one call of the program (ring model, reshard.py)."""
        return sum(c.total_bytes for c in self.collectives)

    def report(self) -> str:
        lines = [self.plan.report().rstrip(), "", f"collectives inserted ({len(self.collectives)}):"]
        lines += ["  " + c.line() for c in self.collectives] or ["  none"]
        lines.append(f"total: {self.bytes_per_step()} B per step over {self.num_devices} devices")
        return "\n".join(lines) + "\n"


def _local_type(t: TensorType, s: NamedSharding) -> TensorType:
    return TensorType(s.shard_shape(t.shape), t.element_type)


_IDENTITY = ("sdy.sharding_constraint", "sdy.reshard")


def _max_channel(module) -> int:
    """The largest channel id the program uses itself (shard_map bodies): ours come after."""
    top = 0
    for op in module.walk():
        handle = op.attr("channel_handle")
        if isinstance(handle, dict):
            top = max(top, int(handle.get("handle", 0)))
    return top


def partition(module: Module, function: str = "main") -> PartitionedProgram:
    work = module.clone()
    Inline().run(work)
    plan = propagate(work, function)
    fn = work.function(function)
    mesh = plan.mesh
    outs = []
    for r, want in zip(fn.function_type.results, plan.outs):
        outs.append(want.normalized(len(r.shape)) if want is not None else None)
    ret = fn.body.terminator
    for i, v in enumerate(ret.operands):  # unannotated results: their sharding, sums reduced
        if outs[i] is None:
            s = plan.values[v]
            outs[i] = NamedSharding.from_dims(mesh, s.dims(len(v.type.shape)))
    in_types = [_local_type(a.type, s) for a, s in zip(fn.body.arguments, plan.args)]
    out_types = [_local_type(t, s) for t, s in zip(fn.function_type.results, outs)]
    new_fn = make_function(function, in_types, out_types)
    block = new_fn.body
    rs = Resharder(block, mesh, first_channel=_max_channel(work))
    local = {a: b for a, b in zip(fn.body.arguments, block.arguments)}
    shard_of = dict(zip(fn.body.arguments, plan.args))
    resharded: dict = {}

    def operand(v, want, consumer, why):
        key = (v, want)
        if key not in resharded:
            resharded[key] = (_rebroadcast(v, want, consumer, why)
                              or rs.reshard(local[v], v.type.shape, shard_of[v], want, consumer, why))
        return resharded[key]

    def _rebroadcast(v, want, consumer, why):
        """A broadcast_in_dim wanted split where it was made whole: broadcast the (sliced)
        operand straight to the local block instead of slicing the broadcast (no bytes)."""
        op = v.owner if isinstance(v, OpResult) else None
        if op is None or op.name != "stablehlo.broadcast_in_dim" or want.partial or shard_of[v].partial:
            return None
        rank = len(v.type.shape)
        have = shard_of[v].dims(rank)
        if any(h and h != w for h, w in zip(have, want.dims(rank))):
            return None
        x = op.operands[0]
        src = x.type.shape
        bdims = list(op.attr("broadcast_dimensions"))
        want_dims = want.dims(rank)
        x_dims = []
        for i, d in enumerate(bdims):
            if want_dims[d] and src[i] != v.type.shape[d]:
                x_dims.append(())  # a size-1 dim broadcast: every block is the same
            else:
                x_dims.append(want_dims[d])
        x_want = NamedSharding.from_dims(mesh, x_dims)
        if x_want.used_axes() - set(a for d in want_dims for a in d) or not x_want.divides(src):
            return None
        xl = operand(x, x_want, consumer, why)
        new = Operation(op.name, [xl], [_local_type(v.type, want)], dict(op.attributes), location=op.location)
        block.append(new)
        return new.result

    mapping = {}
    for choice in plan.choices:
        op = choice.op
        where = op.where() or op.name
        ins = [operand(v, w, where, f"operand {i} of {op.name}")
               for i, (v, w) in enumerate(zip(op.operands, choice.operands))]
        if op.name in _IDENTITY or (op.name == "stablehlo.custom_call"
                                    and op.attr("call_target_name") == "Sharding"):
            local[op.results[0]] = ins[0]
            shard_of[op.results[0]] = choice.results[0]
            continue
        if op.name == "sdy.manual_computation":  # shard_map: its body is the per-device code
            body = op.regions[0].blocks[0]
            inner = dict(zip(body.arguments, ins))
            cloned = clone_ops([o for o in body.operations if o.name != "sdy.return"], inner)
            fwd: dict = {}  # the body's own sharding constraints (partially manual regions): dropped
            for c in _drop_constraints(cloned, fwd):
                block.append(c)
            for r, v, s in zip(op.results, body.terminator.operands, choice.results):
                v = inner.get(v, v)
                local[r], shard_of[r] = fwd.get(v, v), s
            continue
        attrs = dict(op.attributes)
        attrs.update(choice.extra.get("local_attrs", {}))  # e.g. a gather's local slice_sizes
        new = Operation(op.name, ins, [_local_type(r.type, s) for r, s in zip(op.results, choice.results)],
                        attrs, location=op.location)
        for v in _captured(op):  # values the regions read from outside: made whole first
            mapping[v] = operand(v, NamedSharding(mesh), where, f"captured by a region of {op.name}")
        for region in op.regions:
            new.add_region(clone_region(region, mapping))
        block.append(new)
        for r, nr, s in zip(op.results, new.results, choice.results):
            local[r], shard_of[r] = nr, s
            nr.name_hint = r.name_hint
            if choice.extra.get("mirror_axes"):  # reverse of a sharded dim: blocks swap mirror-wise
                local[r] = rs.mirror(nr, choice.extra["mirror_axes"], where, f"{op.name} of a sharded dim")
    results = [operand(v, s, ret.where() or "func.return", f"result {i}")
               for i, (v, s) in enumerate(zip(ret.operands, outs))]
    block.append(Operation("func.return", results))
    out = Module(module.name)
    out.attributes["mhlo.num_partitions"] = IntegerAttr(mesh.size, element_type("i32"))
    out.attributes["mhlo.num_replicas"] = IntegerAttr(1, element_type("i32"))
    out.append(new_fn)
    DeadCode().run(out)  # whole values a rebroadcast replaced
    return PartitionedProgram(out, mesh, plan, list(plan.args), outs,
                              list(fn.function_type.inputs), list(fn.function_type.results), rs.collectives)


def _drop_constraints(ops: list, fwd: dict) -> list:
    """`ops` without sdy.sharding_constraint / sdy.reshard (at any depth): their uses read
    the constrained value (inside a manual region the code is per-device already)."""
    def visit(op_list):
        kept = []
        for o in op_list:
            o.operands[:] = [fwd.get(v, v) for v in o.operands]
            if o.name in _IDENTITY:
                fwd[o.results[0]] = o.operands[0]
                continue
            for rg in o.regions:
                for blk in rg.blocks:
                    blk.operations[:] = visit(blk.operations)
            kept.append(o)
        return kept
    return visit(ops)


def _captured(op) -> list:
    """Values defined outside `op` that its regions use, in first-use order."""
    nested = [o for o in op.walk() if o is not op]
    inside = {r for o in nested for r in o.results}
    inside |= {a for o in [op] + nested for rg in o.regions for blk in rg.blocks for a in blk.arguments}
    seen, out = set(), []
    for o in nested:
        for v in o.operands:
            if v not in inside and v not in seen:
                seen.add(v)
                out.append(v)
    return out


class SpmdPartition:
    """The pass form: replaces the module's contents with the per-device program; the
    PartitionedProgram is kept on `self.program`."""

    name = "spmd-partition"

    def __init__(self, function: str = "main"):
        self.function = function
        self.program = None

    def run(self, module: Module) -> bool:
        self.program = partition(module, self.function)
        module.operations[:] = self.program.module.operations
        module.attributes.update(self.program.module.attributes)
        return True
