"""JAX's custom calls and Shardy ops, given their single-device meaning (pass "jax-custom-calls").

Guarantees, for every op the rewrite understands (anywhere in the module):
* `custom_call @Sharding / @SPMDFullToShardShape / @SPMDShardToFullShape` whose result type
  equals its operand's, `sdy.sharding_constraint` and `sdy.reshard`: replaced by their operand (on one
  device a shard is the whole array);
* `sdy.manual_computation` whose body arguments have the operands' types (every manual
  axis of size 1): its body is inlined in place of the op;
* `custom_call @ApproxTopK`: a stable `stablehlo.sort` of its inputs along `reduction_dim`
  with the comparator of `called_computations` as its region, then a `stablehlo.slice`
  to the result's size (the exact top k satisfies ApproxTopK's contract; this is XLA's
  CPU fallback too).
Leaves alone: `shape_assertion` (a run-time check the backends implement), calls that
really split arrays across devices (a mesh of several devices: a later partitioner's
work), the sharding attributes on functions and `sdy.mesh` (kept for that partitioner).
Runs first in the default pipeline, before inline erases the comparator functions it reads.
"""
from __future__ import annotations

from axle.interpreter.jax_targets import IDENTITY_TARGETS, approx_top_k_params
from axle.interpreter.registry import InterpreterError
from axle.ir import attributes as A
from axle.ir.clone import clone_region
from axle.ir.core import Block, Module, Operation, Region
from axle.ir.types import TensorType, i64
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Patterns, apply_patterns

PATTERNS = Patterns("jax-custom-calls", erase_replaced=("stablehlo.custom_call", "sdy.sharding_constraint",
                                                        "sdy.reshard", "sdy.manual_computation"))


@PATTERNS.on("sdy.sharding_constraint", "sdy.reshard")
def _constraint(op: Operation, b):
    return [op.operands[0]]


@PATTERNS.on("stablehlo.custom_call")
def _identity(op: Operation, b):
    if op.attr("call_target_name") not in IDENTITY_TARGETS:
        return None
    if len(op.operands) != 1 or len(op.results) != 1 or op.operands[0].type != op.results[0].type:
        return None
    return [op.operands[0]]


@PATTERNS.on("sdy.manual_computation")
def _manual(op: Operation, b):
    body = op.regions[0].blocks[0]
    if [a.type for a in body.arguments] != [v.type for v in op.operands]:
        return None  # shards smaller than the arrays: needs several devices
    for a, v in zip(body.arguments, op.operands):
        a.replace_all_uses_with(v)
    ret = body.operations[-1]
    for inner in body.operations[:-1]:
        b.block.insert(b.index, inner)
        b.index += 1
    body.operations[:] = [ret]
    return list(ret.operands)


def _comparator_region(module: Module, name: str) -> Region:
    """A copy of function @name's body as a sort comparator (func.return -> stablehlo.return)."""
    fn = module.function(name)
    region = clone_region(fn.regions[0], {})
    block = region.blocks[0]
    ret = block.operations[-1]
    new = Operation("stablehlo.return", list(ret.operands), [], {}, location=ret.location)
    block.operations[-1] = new
    return region


def _approx_top_k(module: Module):
    def rewrite(op: Operation, b):
        if op.attr("call_target_name") != "ApproxTopK":
            return None
        try:
            n, dim, comp = approx_top_k_params(op)
        except InterpreterError:
            return None  # malformed: the backend refuses it with the interpreter's message
        inputs = op.operands[:n]
        types = [v.type for v in inputs]
        if not all(isinstance(t, TensorType) and t.is_static for t in types):
            return None
        sort = b.create("stablehlo.sort", inputs, types,
                        {"dimension": A.IntegerAttr(dim, i64), "is_stable": A.BoolAttr(True)},
                        [_comparator_region(module, comp)])
        out = []
        for r, t in zip(op.results, types):
            size = r.type.shape[dim]
            sorted_value = sort.results[len(out)]
            if size == t.shape[dim]:
                out.append(sorted_value)
                continue
            limits = list(t.shape)
            limits[dim] = size
            out.append(b.create("stablehlo.slice", [sorted_value], [r.type],
                                {"start_indices": A.DenseArrayAttr(i64, (0,) * t.rank),
                                 "limit_indices": A.DenseArrayAttr(i64, tuple(limits)),
                                 "strides": A.DenseArrayAttr(i64, (1,) * t.rank)}).result)
        return out
    return rewrite


@register_pass
class JaxCustomCalls(Pass):
    name = "jax-custom-calls"

    def run(self, module: Module) -> bool:
        patterns = Patterns(PATTERNS.name, PATTERNS.erase_replaced)
        for name in ("sdy.sharding_constraint", "sdy.reshard", "sdy.manual_computation", "stablehlo.custom_call"):
            for pat in PATTERNS.for_op(name):
                patterns.on(name)(pat)
        patterns.on("stablehlo.custom_call")(_approx_top_k(module))
        return apply_patterns(module, patterns)
