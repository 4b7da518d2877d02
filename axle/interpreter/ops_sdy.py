"""Shardy (`sdy`) ops on one device: what a sharded program computes when every shard is
the whole array (the meaning axle gives them until a partitioner reads the shardings).

* `sdy.sharding_constraint` / `sdy.reshard`: the operand (a sharding changes where data
  lives, never its value);
* `sdy.manual_computation`: its body run on the operands, when the body's arguments have
  the operands' types (every manual axis has size 1); a body that works on smaller
  shards needs several devices and is refused.
"""
from __future__ import annotations

from axle.interpreter.registry import InterpreterError, OpCall, register


@register("sdy.sharding_constraint", "sdy.reshard")
def sharding_constraint(call: OpCall):
    return call.operands[0]


@register("sdy.manual_computation")
def manual_computation(call: OpCall):
    body = call.regions[0]
    block = body.region.blocks[0]
    want = [a.type for a in block.arguments]
    if want != list(call.operand_types):
        shapes = ", ".join(f"{t} -> {w}" for t, w in zip(call.operand_types, want))
        raise InterpreterError(f"sdy.manual_computation {call.location}: its body works on shards "
                               f"({shapes}), which needs several devices; axle runs Shardy programs on "
                               f"one device (every manual axis must have size 1)")
    return list(body(*call.operands))
