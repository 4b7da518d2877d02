"""Element mappers for the fusible ops that are not scalar rules: real / imag / complex,
map and broadcast, dynamic_slice and gather (clamped start indices, as the spec says, so
that no read leaves its operand). Registered into emitter.ELEMENT_MAPPERS on import: a
backend imports this module before it decides what fuses. The index helpers (an index
element as i64, clamping) are shared with the backends' indexing kernels.
"""
from __future__ import annotations

from axle.codegen import scalar as S
from axle.codegen.emitter import _ty, element_mapper
from axle.codegen.scalar import I64
from axle.codegen.scalar_ops import make
from axle.errors import Unsupported
from axle.ir.core import Operation


def index_i64(em, v, idx):
    """An index element (any integer type) as i64, sign- or zero-extended."""
    et = _ty(v).element_type
    x = em.value_at(v, idx)
    if et.is_bool:
        return em.b.zext(x, I64)
    if et.bitwidth == 64:
        return x
    return em.b.zext(x, I64) if et.is_unsigned else em.b.sext(x, I64)


def start_index(em, v, idx):
    """A start index as i64 for clamping: a ui64 value at or above 2^63 (negative as i64)
    saturates to the largest i64, so that it clamps to the end, not the start."""
    x = index_i64(em, v, idx)
    et = _ty(v).element_type
    if et.is_unsigned and et.bitwidth == 64:
        big = em.const_i64(2**63 - 1)
        x = em.b.select(em.b.icmp_signed("<", x, em.const_i64(0)), big, x)
    return x


def clamp(em, x, lo: int, hi: int):
    b = em.b
    x = b.select(b.icmp_signed("<", x, em.const_i64(lo)), em.const_i64(lo), x)
    return b.select(b.icmp_signed(">", x, em.const_i64(hi)), em.const_i64(hi), x)


def start_vector(em, indices, batch_index: list, index_vector_dim: int):
    """The start index vector for one batch position (index_vector_dim == rank means the
    indices are scalars)."""
    it = _ty(indices)
    if index_vector_dim >= it.rank:
        return [start_index(em, indices, batch_index)]
    out = []
    for k in range(it.shape[index_vector_dim]):
        full = batch_index[:index_vector_dim] + [em.const_i64(k)] + batch_index[index_vector_dim:]
        out.append(start_index(em, indices, full))
    return out


@element_mapper("stablehlo.dynamic_slice")
def dynamic_slice_at(em, op: Operation, idx):
    """result[i] = operand[i + clamp(start, 0, dim - size)]."""
    operand = op.operands[0]
    shape = _ty(operand).shape
    sizes = op.attr("slice_sizes")
    src = []
    for d, i in enumerate(idx):
        start = clamp(em, start_index(em, op.operands[1 + d], []), 0, shape[d] - sizes[d])
        src.append(em.b.add(i, start))
    return em.value_at(operand, src)


@element_mapper("stablehlo.gather")
def gather_at(em, op: Operation, idx):
    """The spec's gather: operand index = clamped start + batching index + offset index."""
    operand, indices = op.operands
    ot = _ty(operand)
    dn = op.attr("dimension_numbers")
    sizes = op.attr("slice_sizes")
    offset_dims = dn["offset_dims"]
    collapsed, obatch = dn["collapsed_slice_dims"], dn["operand_batching_dims"]
    ibatch, start_map, ivd = dn["start_indices_batching_dims"], dn["start_index_map"], dn["index_vector_dim"]
    rank = len(idx)
    batch_dims = [d for d in range(rank) if d not in offset_dims]
    batch_index = [idx[d] for d in batch_dims]
    start = start_vector(em, indices, batch_index, ivd)
    full = [em.const_i64(0)] * ot.rank
    for d_start, d_operand in enumerate(start_map):
        full[d_operand] = clamp(em, start[d_start], 0, ot.shape[d_operand] - sizes[d_operand])
    for d_operand, d_start in zip(obatch, ibatch):
        full[d_operand] = batch_index[d_start - (0 if d_start < ivd else 1)]
    offsets = iter(idx[d] for d in offset_dims)
    b = em.b
    for d in range(ot.rank):
        if d in collapsed or d in obatch:
            continue
        full[d] = b.add(full[d], next(offsets))
    return em.value_at(operand, full)


@element_mapper("stablehlo.real", "stablehlo.imag")
def real_imag_at(em, op: Operation, idx):
    """real/imag of a complex element; of a real element: itself / zero."""
    v = op.operands[0]
    et = _ty(v).element_type
    x = em.value_at(v, idx)
    if not et.is_complex:
        return x if op.name == "stablehlo.real" else S.constant(et, 0)
    return em.b.extract_value(x, 0 if op.name == "stablehlo.real" else 1)


@element_mapper("stablehlo.complex")
def complex_at(em, op: Operation, idx):
    """complex(re, im) element."""
    t = S.reg_type(_ty(op.results[0]).element_type)
    return make(em.b, t, em.value_at(op.operands[0], idx), em.value_at(op.operands[1], idx))


@element_mapper("stablehlo.map")
def map_at(em, op: Operation, idx):
    """The body applied to the operands' elements at idx (map's dimensions must be all of
    them, in order, which the spec requires)."""
    rank = _ty(op.results[0]).rank
    if list(op.attr("dimensions", list(range(rank)))) != list(range(rank)):
        raise Unsupported(f"{op.where()}: map over dimensions {list(op.attr('dimensions'))}")
    return em.region_scalars(op.regions[0], [em.value_at(v, idx) for v in op.operands])[0]


@element_mapper("stablehlo.broadcast")
def broadcast_at(em, op: Operation, idx):
    """result[new..., i...] = operand[i...]."""
    rank = _ty(op.operands[0]).rank
    return em.value_at(op.operands[0], list(idx[len(idx) - rank:]) if rank else [])
