"""Pass "cpu-top-k": a sort whose results are read only as their first k elements along
the sorted dimension (what chlo.top_k expands to: sort, then slices [0, k)) becomes a
`cpu.top_k` op with results of that size, so that code generation needs no buffers of
the full sorted size (XLA's TopK custom call does the same).

    %s:2 = "stablehlo.sort"(%x, %i) ({comparator}) {dimension = 1, is_stable = true}
    %v = stablehlo.slice %s#0 [0:128, 0:16]      ->   %t:2 = "cpu.top_k"(%x, %i) ({comparator})
    %j = stablehlo.slice %s#1 [0:128, 0:16]              {dimension = 1, k = 16, is_stable = true}

`cpu.top_k` keeps the sort's operands, comparator and attributes, with `k` added; its
result r is the slice of the sort's result r: the first k elements of each sorted slice
(stable: ties in operand order). kernels_sort.py computes it by partial selection.
"""
from __future__ import annotations

from axle.ir import attributes as A
from axle.ir.core import Module, Operation
from axle.ir.ops import OPS, OpDef
from axle.ir.types import i64
from axle.passes import register_pass
from axle.passes.pass_manager import Pass

TOP_K = "cpu.top_k"
# the CPU backend's own op (the parser reads it in dumps of the lowered module)
OPS.setdefault(TOP_K, OpDef(TOP_K, -1, -1, 1, frozenset(), "generic", (),
                            "the first k of a sort along `dimension` (CPU backend)"))


def _rewrite(sort: Operation) -> bool:
    from axle.backends.cpu.kernels_sort import top_k_reads
    t = sort.results[0].type
    if not getattr(t, "is_static", False) or t.rank == 0 or len(sort.regions) != 1:
        return False
    dim = sort.attr("dimension", -1)
    dim = dim if dim >= 0 else t.rank + dim
    k = top_k_reads(sort, dim)
    if k is None or k < 1:
        return False
    readers = [list(r.users) for r in sort.results]
    types = []
    for r in sort.results:
        shape = list(r.type.shape)
        shape[dim] = k
        types.append(r.type.with_shape(shape))
    region = sort.regions.pop()
    attrs = dict(sort.attributes)
    attrs["dimension"] = A.IntegerAttr(dim, i64)
    attrs["k"] = A.IntegerAttr(k, i64)
    new = Operation(TOP_K, list(sort.operands), types, attrs, [region], location=sort.location)
    new.source = sort.source
    block = sort.parent
    block.insert(block.operations.index(sort), new)
    for users, top in zip(readers, new.results):
        for sl in set(users):
            sl.results[0].replace_all_uses_with(top)
            sl.erase()
    sort.erase()
    return True


@register_pass
class CpuTopK(Pass):
    """Pass 'cpu-top-k' (see the module docstring)."""

    name = "cpu-top-k"

    def run(self, module: Module) -> bool:
        sorts = [op for op in module.walk() if op.name == "stablehlo.sort"]
        changed = False
        for op in sorts:
            changed = _rewrite(op) or changed
        return changed
