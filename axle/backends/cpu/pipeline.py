"""The CPU backend's pipeline: the optimizing passes, then the lowering passes code
generation needs.

`cpu_pipeline()` (the "cpu" pipeline of axle/reproducer.py, what `axle.compile` runs) is
the target-independent optimizations of passes/pipelines.py followed by
`lowering_pipeline()`. Compiling with `passes=False` runs the lowering part alone: it is
required (the backend refuses what it leaves) and does nothing to a module it has already
lowered. So the module `--dump_to` writes as optimized is exactly what code generation
sees, and compiling that dump again with `passes=False` gives the same LLVM IR.

After the lowering part (the backend checks it, prepare.check_lowered):
* no quantized type remains (lower-quant; an op it cannot lower raises Unsupported);
* no Shardy op or one-device JAX custom call remains (jax-custom-calls; a
  `sdy.manual_computation` over several devices is refused);
* no batch_norm op, `optimization_barrier`, `get_tuple_element` of a `tuple`, or dynamic
  shape op with constant shape operands remains;
* `infeed`/`outfeed`/`send`/`recv` are `cpu.host_effect` ops, and no token maker whose
  token reaches nothing remains.
"""
from __future__ import annotations

from axle.passes import PASSES, FixedPoint
from axle.passes import pipelines


def lowering_pipeline() -> list:
    """The passes that make a module what the CPU code generator takes (each is a no-op on
    a module without the ops it lowers)."""
    from axle.backends.cpu.lower_effects import CpuLowerEffects
    from axle.backends.cpu.conv_rows_layout import CpuConvRowsLayout
    from axle.backends.cpu.lower_top_k import CpuTopK
    from axle.backends.cpu.lowp_dot_results import CpuLowpDotResults
    from axle.backends.cpu.hoist_dot_packing import CpuHoistDotPacking
    from axle.backends.cpu.widen_convolutions import CpuWidenConvolutions
    from axle.backends.cpu.widen_loop_dots import CpuWidenLoopDots
    from axle.passes.lower_quant import LowerQuant
    return [
        # quantized types first: what it emits (converts, dots, clamps) is what the rest sees
        LowerQuant(target="cpu"),
        # Shardy ops and one-device custom calls left by a pipeline that did not run it
        PASSES["jax-custom-calls"](),
        # batch norm becomes elementwise ops, broadcasts and reductions
        PASSES["expand-batch-norm"](),
        # these feed each other (a forwarded tuple exposes a constant shape operand, a
        # lowered effect leaves a token maker nothing reads): to a fixed point
        FixedPoint([PASSES["forward-tuples"](), PASSES["drop-optimization-barriers"](),
                    PASSES["static-shape-ops"](), CpuLowerEffects()], name="cpu-lower", max_iterations=10),
        # a sort read only as its first k elements (top_k) gets results k long
        CpuTopK(),
        # bf16 / f16 / small-integer convolutions in f32 or f64, the convolution kernels' types
        CpuWidenConvolutions(),
        # convolutions with a few features innermost (NHWC RGB filters) in a layout with a
        # spatial dimension innermost, where the rows kernel vectorizes them
        CpuConvRowsLayout(),
        # the elementwise ops between two such layout changes (bias, batch norm, ReLU) in the
        # convolutions' layout, the transposes moved down until they cancel
        PASSES["sink-transposes"](),
        # bf16 / f16 sums and products (reduce, reduce_window) accumulate in f32, as XLA's do
        PASSES["widen-lowp-reductions"](),
        # bf16 / f16 dots in loops with an operand from outside in f32, and that operand's
        # convert (with whatever else became invariant) moved out of the loop
        CpuWidenLoopDots(),
        # bf16 x bf16 -> bf16 dots as bf16 -> f32 ones (the bf16 kernel's) and a convert
        CpuLowpDotResults(),
        # a loop-invariant dot operand in an order BLAS does not read: transposed once,
        # before the loop, instead of packed on every trip
        CpuHoistDotPacking(),
        PASSES["while-licm"](),
        # the converts made above for several dots of one operand are one (CSE), and what
        # the rewrites left unread goes (DCE)
        PASSES["cse"](),
        PASSES["dce"](),
    ]


def cpu_pipeline() -> list:
    """Optimizations (passes/pipelines.py, looked up when called), then the lowering."""
    return pipelines.cpu_pipeline() + lowering_pipeline()
