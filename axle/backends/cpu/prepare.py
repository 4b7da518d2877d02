"""Rewrites the CPU backend applies before code generation (on a copy of the module, and
only when one of the ops below is present), so that ops with no run-time work need no
kernel:

* `get_dimension_size` of a static dimension and the dynamic shape ops whose shape
  operands are constants (`dynamic_iota`, `dynamic_broadcast_in_dim`, `dynamic_reshape`,
  `dynamic_pad`, `real_dynamic_slice`, `dynamic_gather`, `dynamic_conv`) become their
  static forms (the refine-shapes pass's patterns, passes/refine_shapes.py);
* `get_tuple_element` of a `tuple` is the tuple's operand (tuples left without users go);
* `optimization_barrier` is its operands (it only constrains optimizations that move
  computations across it; the code generated here is in program order anyway);
* `after_all` / `create_token` whose token reaches nothing but other token makers (or
  nothing) goes;
* `batch_norm_inference` / `_training` / `_grad` become the elementwise ops, broadcasts and
  reductions of the spec's formulas (the expand-batch-norm patterns, passes/expanders.py;
  rounding in the element type may differ from the interpreter's f64 by a few ulps);
* the token-threaded effects (`infeed`, `outfeed`, `send`, `recv`) become `cpu.host_effect`
  ops without token operands and results (tokens.py), so tokens need no buffers.

What remains (a dynamic op with run-time shapes, a token used by an effect) is refused by
the backend as before.
"""
from __future__ import annotations

from axle.backends.cpu.tokens import EFFECTS, strip_effect
from axle.ir.core import Module, Operation
from axle.passes.rewrite import Patterns, apply_patterns, use_counts, walk_blocks

P = Patterns("cpu-prepare", erase_replaced=("stablehlo.optimization_barrier",) + EFFECTS)

_SHAPE_OPS = ("stablehlo.get_dimension_size", "stablehlo.dynamic_iota", "stablehlo.dynamic_broadcast_in_dim",
              "stablehlo.dynamic_reshape", "stablehlo.dynamic_pad", "stablehlo.real_dynamic_slice",
              "stablehlo.dynamic_gather", "stablehlo.dynamic_conv")
BATCH_NORM_OPS = ("stablehlo.batch_norm_inference", "stablehlo.batch_norm_training", "stablehlo.batch_norm_grad")
OPS = _SHAPE_OPS + EFFECTS + BATCH_NORM_OPS + ("stablehlo.get_tuple_element", "stablehlo.optimization_barrier",
                              "stablehlo.after_all", "stablehlo.create_token")
# ops that never reach code generation once prepared (the status matrix counts them as compiled)
HANDLED = EFFECTS + BATCH_NORM_OPS + ("stablehlo.get_dimension_size", "stablehlo.get_tuple_element", "stablehlo.tuple",
                     "stablehlo.optimization_barrier", "stablehlo.after_all", "stablehlo.create_token",
                     "sdy.sharding_constraint", "sdy.reshard", "sdy.manual_computation", "sdy.return")


@P.on("stablehlo.get_tuple_element")
def _tuple_element(op: Operation, b):
    src = getattr(op.operands[0], "owner", None)
    if not isinstance(src, Operation) or src.name != "stablehlo.tuple":
        return None
    return [src.operands[op.attr("index")]]


@P.on("stablehlo.optimization_barrier")
def _barrier(op: Operation, b):
    return list(op.operands)


@P.on(*EFFECTS)
def _effect(op: Operation, b):
    return strip_effect(op, b)


def _drop_dead(module: Module) -> bool:
    """Remove tuples without users and token makers whose tokens nothing else reads."""
    changed_any = False
    while True:
        uses = use_counts(module)
        changed = False
        for block in walk_blocks(module):
            keep = []
            for op in block.operations:
                if op.name in ("stablehlo.after_all", "stablehlo.create_token", "stablehlo.tuple") and \
                        all(uses.get(id(r), 0) == 0 for r in op.results):
                    changed = True
                    continue
                keep.append(op)
            block.operations[:] = keep
        changed_any |= changed
        if not changed:
            return changed_any


def _jax_ops(module: Module) -> bool:
    """Whether Shardy ops or JAX's one-device custom calls remain (the default pipeline's
    jax-custom-calls pass removes them; here when compiling without the passes)."""
    from axle.interpreter.jax_targets import IDENTITY_TARGETS
    return any((op.name.startswith("sdy.") and op.name != "sdy.mesh") or (op.name == "stablehlo.custom_call" and op.attr(
        "call_target_name") in IDENTITY_TARGETS + ("ApproxTopK",)) for op in module.walk())


def prepare(module: Module) -> Module:
    """`module` itself when none of the ops above occurs, else a rewritten copy."""
    jax_ops = _jax_ops(module)
    if not jax_ops and not any(op.name in OPS for op in module.walk()):
        return module
    from axle.passes.lower_quant import clone_module
    from axle.passes.refine_shapes import PATTERNS as SHAPES, refine_types
    module = clone_module(module)
    if jax_ops:
        from axle.passes.jax_custom_calls import JaxCustomCalls
        JaxCustomCalls().run(module)
        for op in module.walk():
            if op.name == "sdy.manual_computation":
                from axle.errors import Unsupported
                raise Unsupported(f"{op.where()}: its body works on shards "
                                  f"({', '.join(str(a.type) for a in op.regions[0].blocks[0].arguments)}) of "
                                  f"{', '.join(str(v.type) for v in op.operands)}, which needs several devices; "
                                  f"the cpu backend runs Shardy programs on one device (manual axes of size 1)")
    if any(op.name in BATCH_NORM_OPS for op in module.walk()):
        from axle.passes.expanders import BATCH_NORM
        apply_patterns(module, BATCH_NORM)
    for _ in range(10):
        changed = apply_patterns(module, P)
        changed |= apply_patterns(module, SHAPES)
        if changed:
            refine_types(module)
        changed |= _drop_dead(module)
        if not changed:
            break
    return module
