"""Transpose folding (pass "transpose-fold"): dots read and write transposed data directly.

GEMM libraries take each operand as stored or transposed at no cost, so a transpose that
only feeds a dot_general is wasted memory traffic. Two rewrites:

* dot_general(transpose(x, perm), y) -> dot_general(x, y) with the operand's batching and
  contracting dimensions mapped through perm. Exact whenever perm keeps the operand's free
  (result-producing) dimensions in their relative order, because dot_general lays out its
  result as batch dims, then lhs free dims in order, then rhs free dims in order. Same for
  the rhs.
* transpose(dot_general(a, b)) that swaps the lhs-free and rhs-free parts of a result with
  one free dimension per side -> dot_general(b, a) (Cᵀ = Bᵀ Aᵀ), when the dot has no other
  reader.

Runs in the CPU pipeline after dot-canonicalize (which introduces the transposes); the
transposes left without readers are removed by dce. Quantized dots are left alone.
"""
from __future__ import annotations

from axle.ir import attributes as A
from axle.ir.core import Operation
from axle.ir.types import TensorType
from axle.passes.registry import register_pass
from axle.passes.pass_manager import Pass
from axle.passes.rewrite import Builder, replace_values, walk_blocks


def _ints(xs):
    return A.ArrayAttr(tuple(A.IntegerAttr(int(x)) for x in xs))


def _dims(op: Operation) -> dict:
    dn = op.attr("dot_dimension_numbers")
    return {k: list(dn[k]) for k in ("lhs_batching_dimensions", "rhs_batching_dimensions",
                                     "lhs_contracting_dimensions", "rhs_contracting_dimensions")}


def _numbers(d: dict) -> A.StructAttr:
    order = ("lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
             "rhs_contracting_dimensions")
    return A.StructAttr("stablehlo.dot", tuple((k, _ints(d[k])) for k in order if d[k] or "contracting" in k))


def _plain(*vals) -> bool:
    return all(isinstance(v.type, TensorType) and v.type.is_static and not v.type.is_quantized for v in vals)


def _fold_operand(op: Operation, side: str) -> bool:
    k = 0 if side == "lhs" else 1
    v = op.operands[k]
    t = getattr(v, "owner", None)
    if not isinstance(t, Operation) or t.name != "stablehlo.transpose" or not _plain(v, t.operands[0]):
        return False
    perm = [int(p) for p in t.attr("permutation")]
    d = _dims(op)
    batch, contract = d[f"{side}_batching_dimensions"], d[f"{side}_contracting_dimensions"]
    free = [i for i in range(len(perm)) if i not in batch and i not in contract]
    mapped_free = [perm[i] for i in free]
    if mapped_free != sorted(mapped_free):
        return False
    d[f"{side}_batching_dimensions"] = [perm[i] for i in batch]
    d[f"{side}_contracting_dimensions"] = [perm[i] for i in contract]
    op.operands[k] = t.operands[0]
    op.attributes["dot_dimension_numbers"] = _numbers(d)
    return True


def _fold_result(tr: Operation) -> bool:
    dot = getattr(tr.operands[0], "owner", None)
    if not isinstance(dot, Operation) or dot.name != "stablehlo.dot_general" or not dot.results[0].has_one_use():
        return False
    if not _plain(*dot.operands, dot.results[0]):
        return False
    d = _dims(dot)
    lt, rt = dot.operands[0].type, dot.operands[1].type
    nb = len(d["lhs_batching_dimensions"])
    lfree = lt.rank - nb - len(d["lhs_contracting_dimensions"])
    rfree = rt.rank - nb - len(d["rhs_contracting_dimensions"])
    perm = [int(p) for p in tr.attr("permutation")]
    if lfree != 1 or rfree != 1 or perm != list(range(nb)) + [nb + 1, nb]:
        return False
    swapped = {"lhs_batching_dimensions": d["rhs_batching_dimensions"],
               "rhs_batching_dimensions": d["lhs_batching_dimensions"],
               "lhs_contracting_dimensions": d["rhs_contracting_dimensions"],
               "rhs_contracting_dimensions": d["lhs_contracting_dimensions"]}
    attrs = {"dot_dimension_numbers": _numbers(swapped)}
    for key in ("precision_config", "algorithm"):
        if key in dot.attributes:
            attrs[key] = dot.attributes[key]
    b = Builder.before(tr)
    new = b.create("stablehlo.dot_general", [dot.operands[1], dot.operands[0]], [tr.results[0].type], attrs)
    return new.results[0]


@register_pass
class TransposeFold(Pass):
    name = "transpose-fold"

    def run(self, module) -> bool:
        changed = False
        for _ in range(2):  # a dot made from a folded result may read transposes itself
            step = self._once(module)
            changed |= step
            if not step:
                break
        if changed:
            # a dot that now writes its result in the shape its reader reshaped it back to
            # leaves reshape(reshape(x)) -> x chains (a 12 MB copy of a tensordot's result)
            from axle.passes.simplify import reshape_chains
            reshape_chains(module)
            from axle.passes.registry import PASSES
            PASSES["dce"]().run(module)
        return changed

    def _once(self, module) -> bool:
        from axle.passes.dot_views import fold_reshapes
        changed = False
        mapping = {}  # transposes' results -> the swapped dots' (replaced once the walk is done)
        for block in list(walk_blocks(module)):
            for op in list(block.operations):
                if op.name == "stablehlo.dot_general" and _plain(*op.operands, op.results[0]) \
                        and not op.results[0].use_empty():
                    new = fold_reshapes(op, _dims(op), _numbers)  # merging reshapes (dot_views.py)
                    if new is not None:
                        mapping[op.results[0]] = new
                        changed = True
                        continue
                    for side in ("lhs", "rhs"):
                        changed |= _fold_operand(op, side)
                elif op.name == "stablehlo.transpose" and _plain(op.operands[0]):
                    new = _fold_result(op)
                    if new:
                        mapping[op.results[0]] = new
                        changed = True
        replace_values(mapping)
        return changed
