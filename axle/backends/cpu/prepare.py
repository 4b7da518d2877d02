"""What the CPU backend checks before code generation: that the lowering part of its
pipeline (pipeline.py) has run. It rewrites nothing; the rewrites that used to live here
are passes now:

* quantized types -> integer and float ops: passes/lower_quant.py ("lower-quant");
* Shardy ops, JAX's one-device custom calls: passes/jax_custom_calls.py;
* batch norm -> the spec's formulas: passes/expanders.py ("expand-batch-norm");
* `get_tuple_element` of a `tuple`: passes/forward_tuples.py;
* `optimization_barrier`: passes/drop_barriers.py;
* dynamic shape ops with constant shape operands: passes/static_shape_ops.py;
* `infeed`/`outfeed`/`send`/`recv` and dead token makers: lower_effects.py.

`check_lowered` refuses (Unsupported, naming the op) what none of them could lower and no
kernel takes; the other leftovers (a dynamic op with run-time shapes, a token that reaches
a call) are refused by the kernels as before. `prepare` runs the lowering on a copy, for a
backend that compiles outside the CPU pipeline (the GPU backend).
"""
from __future__ import annotations

from axle.backends.cpu.tokens import EFFECTS
from axle.errors import Unsupported
from axle.ir.core import Module

BATCH_NORM_OPS = ("stablehlo.batch_norm_inference", "stablehlo.batch_norm_training", "stablehlo.batch_norm_grad")
# ops that never reach code generation once lowered (the status matrix counts them as compiled)
HANDLED = EFFECTS + BATCH_NORM_OPS + ("stablehlo.get_dimension_size", "stablehlo.get_tuple_element", "stablehlo.tuple",
                     "stablehlo.optimization_barrier", "stablehlo.after_all", "stablehlo.create_token",
                     "sdy.sharding_constraint", "sdy.reshard", "sdy.manual_computation", "sdy.return")
# what the lowering passes leave only when they could not lower it
_LOWERED = BATCH_NORM_OPS + EFFECTS + ("stablehlo.optimization_barrier",)


def check_lowered(module: Module) -> None:
    """Raise Unsupported for the first op the lowering passes should have removed."""
    from axle.passes.lower_quant import quantized_ops
    for op in module.walk():
        if op.name == "sdy.manual_computation":
            raise Unsupported(f"{op.where()}: its body works on shards "
                              f"({', '.join(str(a.type) for a in op.regions[0].blocks[0].arguments)}) of "
                              f"{', '.join(str(v.type) for v in op.operands)}, which needs several devices; "
                              f"the cpu backend runs Shardy programs on one device (manual axes of size 1)")
        if op.name in _LOWERED:
            raise Unsupported(f"{op.where()}: {op.name} reached the cpu code generator; compile through "
                              f"the cpu pipeline (axle.backends.cpu.pipeline) or its lowering part")
    left = quantized_ops(module, first_only=True)
    if left:
        raise Unsupported(f"quantized {left[0].where()} is not supported by the cpu backend")


def prepare(module: Module) -> Module:
    """`module` lowered for code generation: a lowered copy (the caller's module is left as
    it is). Raises Unsupported for what cannot be lowered."""
    from axle.backends.cpu.pipeline import lowering_pipeline
    from axle.passes.pass_manager import PassError, PassManager
    module = module.clone()
    try:
        PassManager(lowering_pipeline()).run(module)
    except PassError as e:
        if isinstance(e.__cause__, Unsupported):
            raise e.__cause__ from None
        raise
    check_lowered(module)
    return module
