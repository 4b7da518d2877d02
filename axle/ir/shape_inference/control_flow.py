"""Shape inference rules of control flow: while, if, case."""
from __future__ import annotations

from axle.ir.types import TensorType
from axle.ir.shape_inference.core import (ResultTypeRequired, _Ctx, _result, _rule, _sig_text, i1, i32,
                                          is_compatible, region_signature)

# ---------------------------------------------------------------- control flow


@_rule("while")
def _while(c: _Ctx):
    T = list(c.types)
    if len(c.regions) >= 1:
        ins, outs = region_signature(c.regions[0])
        c.need(len(ins) == len(T) and all(is_compatible(a, b) for a, b in zip(ins, T))
               and len(outs) == 1 and isinstance(outs[0], TensorType) and outs[0].rank == 0
               and outs[0].element_type == i1, "C1",
               f"cond must have type ({', '.join(map(str, T))}) -> tensor<i1>, found {_sig_text(ins, outs)}")
    if len(c.regions) >= 2:
        ins, outs = region_signature(c.regions[1])
        ok = (len(ins) == len(T) == len(outs) and all(is_compatible(a, b) for a, b in zip(ins, T))
              and all(is_compatible(a, b) for a, b in zip(outs, T)))
        c.need(ok, "C2", f"body must have type ({', '.join(map(str, T))}) -> ({', '.join(map(str, T))}), "
               f"found {_sig_text(ins, outs)}")
    return [_result(t, "exact", "C3") for t in T]


def _branches(c: _Ctx, first: int, c_args: str, c_same: str, c_res: str):
    if len(c.regions) < 1:
        raise ResultTypeRequired("needs its branches to infer result types", None, c.name)
    sigs = [region_signature(r) for r in c.regions]
    for k, (ins, outs) in enumerate(sigs):
        c.need(not ins, c_args, f"branch #{k} must take no arguments, found {_sig_text(ins, outs)}")
    outs0 = sigs[0][1]
    for k, (_, outs) in enumerate(sigs[1:], 1):
        c.need(len(outs) == len(outs0) and all(is_compatible(a, b) for a, b in zip(outs, outs0)), c_same,
               f"branches must return the same types, found ({', '.join(map(str, outs0))}) and "
               f"({', '.join(map(str, outs))}) in branch #{k}")
    return [_result(t, "exact", c_res) for t in outs0]


@_rule("if")
def _if(c: _Ctx):
    c.count(1)
    p = c.tensor(0, "pred")
    c.need(p.rank == 0 and p.element_type == i1, "I1", f"pred must be tensor<i1>, found {p}")
    c.need(len(c.regions) in (0, 2), None, f"needs 2 branches, found {len(c.regions)}")
    return _branches(c, 0, "C1", "C2", "C3")


@_rule("case")
def _case(c: _Ctx):
    c.count(1)
    p = c.tensor(0, "index")
    c.need(p.rank == 0 and p.element_type == i32, "I1", f"index must be tensor<i32>, found {p}")
    if not c.regions:
        raise ResultTypeRequired("needs its branches to infer result types", None, c.name)
    return _branches(c, 0, "C2", "C3", "C4")
