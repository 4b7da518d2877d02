"""Pass "cpu-lowp-dot-results": bf16 x bf16 -> bf16 dots through the bf16 GEMM kernel.

The bf16 kernel (lowp_runtime.py, AVX512-BF16 `vdpbf16ps`) takes bf16 operands and writes
f32 sums; a dot whose result is bf16 (a bf16 model's projections, x @ W in bf16 throughout)
went to the generic path instead: both operands converted to f32 copies and BLAS's sgemm,
as fast as XLA and half as fast as the kernel (a [2048, 1024] x [1024, 1024] bf16 product:
6 ms against 3). Rewritten as

    %y = stablehlo.dot_general %a, %b : (bf16, bf16) -> bf16
  ->
    %s = stablehlo.dot_general %a, %b : (bf16, bf16) -> f32
    %y = stablehlo.convert %s : bf16

which computes what the generic path did: products of bf16 are exact in f32, the sums are
f32 (XLA's CPU accumulates bf16 dots in f32 too), and the result is rounded once. Only on
hosts with the bf16 kernel, for dots it takes (lowp_plan); quantized dots are lowered before.
"""
from __future__ import annotations

from axle.ir.core import Module
from axle.ir.types import TensorType, element_type
from axle.passes import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder


@register_pass
class CpuLowpDotResults(Pass):
    """Pass 'cpu-lowp-dot-results' (see the module docstring)."""

    name = "cpu-lowp-dot-results"

    def run(self, module: Module) -> bool:
        from axle.backends.cpu.kernels_dot_lowp import lowp_plan
        from axle.backends.cpu.lowp_runtime import supported_kinds
        if "bf16" not in supported_kinds():
            return False
        changed = False
        f32 = element_type("f32")
        for op in [o for o in module.walk() if o.name == "stablehlo.dot_general"]:
            res = op.results[0]
            types = [v.type for v in (*op.operands, res)]
            if not all(isinstance(t, TensorType) and t.is_static and str(t.element_type) == "bf16" for t in types):
                continue
            b = Builder.before(op)
            wide = b.create(op.name, list(op.operands), [TensorType(res.type.shape, f32)], dict(op.attributes))
            if lowp_plan(wide) is None:  # not a dot the kernel takes (too small, too large)
                wide.erase()
                continue
            narrow = b.create("stablehlo.convert", [wide.results[0]], [res.type], {})
            res.replace_all_uses_with(narrow.results[0])
            op.erase()
            changed = True
        return changed
