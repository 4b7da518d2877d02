"""dot_general's bookkeeping that every target's dot kernels share: the dimension numbers
as lists (DotDims), the accumulator type, and the element types a kernel can hold in
registers (check_dot)."""
from __future__ import annotations

from axle.codegen import scalar as S
from axle.codegen.emitter import _ty
from axle.ir.core import Operation
from axle.ir.types import f32


def accumulator_type(et):
    """What dot-like kernels sum in: f32 for floats of 32 bits or less, else the type itself."""
    return (f32 if et.bitwidth <= 32 else et) if et.is_float else et


def check_dot(op: Operation) -> None:
    """Raises Unsupported for operand or result element types without registers."""
    for v in list(op.operands) + list(op.results):
        S.reg_type(_ty(v).element_type)


class DotDims:
    """dot_general's dimension numbers as lists: batch (lb, rb), contracting (lc, rc) and
    free (lfree, rfree) dimensions of each operand. Result index = batch, lhs free, rhs free."""

    def __init__(self, op: Operation):
        dn = op.attr("dot_dimension_numbers")
        lrank, rrank = _ty(op.operands[0]).rank, _ty(op.operands[1]).rank
        self.lb, self.rb = list(dn["lhs_batching_dimensions"]), list(dn["rhs_batching_dimensions"])
        self.lc, self.rc = list(dn["lhs_contracting_dimensions"]), list(dn["rhs_contracting_dimensions"])
        self.lfree = [d for d in range(lrank) if d not in self.lb and d not in self.lc]
        self.rfree = [d for d in range(rrank) if d not in self.rb and d not in self.rc]
        self.lrank, self.rrank = lrank, rrank

    def split_result_index(self, oidx):
        """(batch, lhs free, rhs free) parts of a result index."""
        nb, nl = len(self.lb), len(self.lfree)
        return oidx[:nb], oidx[nb:nb + nl], oidx[nb + nl:]

    def operand_indices(self, bidx, li, ri, cidx):
        """The lhs and rhs indices that one product term of result (bidx, li, ri) reads at
        contracting index cidx."""
        lfull, rfull = [None] * self.lrank, [None] * self.rrank
        for dims, idx, full in ((self.lb, bidx, lfull), (self.rb, bidx, rfull), (self.lfree, li, lfull),
                                (self.rfree, ri, rfull), (self.lc, cidx, lfull), (self.rc, cidx, rfull)):
            for d, i in zip(dims, idx):
                full[d] = i
        return lfull, rfull


def run_stride(t, dims: list):
    """The element stride of dimensions `dims` of row-major tensor type t read in their listed
    order as one linear index, or None when they do not form one strided run (0 when every
    one has extent 1): how dot kernels read an operand's batch, free or contracting
    dimensions in place."""
    strides = [1] * t.rank
    for d in range(t.rank - 2, -1, -1):
        strides[d] = strides[d + 1] * t.shape[d + 1]
    dims = [d for d in dims if t.shape[d] != 1]
    if not dims:
        return 0
    for a, b in zip(dims, dims[1:]):
        if strides[a] != strides[b] * t.shape[b]:
            return None
    return strides[dims[-1]]
