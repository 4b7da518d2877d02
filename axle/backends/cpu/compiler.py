"""The CPU backend's code generation: one LLVM function per program.

`compile_function(module, entry)` turns a function (after the default passes) into LLVM
IR with one native entry, `void axle_entry(i8** buffers)`: buffers[0..n) are the
arguments, then the results, then one arena holding every temporary at an offset
fixed at compile time. An op's value is *materialized* (given a buffer) when it is a
result, has several users, is not fusible, or feeds a kernel that reads memory (dot);
every other fusible op is computed inside the loop of the kernel that reads it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from llvmlite import ir

from axle.backends.cpu import scalar as S
from axle.backends.cpu.emitter import FUSIBLE, Emitter, _ty
from axle.backends.cpu.scalar import I8, I64, Unsupported
from axle.ir.core import Module, Operation, Value
from axle.ir.types import TensorType

KERNELS = {"stablehlo.reduce", "stablehlo.dot_general"}
ALIGN = 64


@dataclass
class Program:
    llvm_ir: str
    arg_types: list
    result_types: list
    arena_bytes: int
    kernels: list = field(default_factory=list)  # (op name, location, materialized shape) per kernel


def _nbytes(t: TensorType) -> int:
    return int(np.prod(t.shape, dtype=np.int64)) * np.dtype(t.dtype).itemsize


def compile_function(module: Module, entry: str = "main") -> Program:
    fn = module.function(entry)
    block = fn.body
    ret = block.operations[-1]
    ops = block.operations[:-1]
    for a in block.arguments:
        _ty(a)
    for op in ops:
        if op.name not in FUSIBLE and op.name not in KERNELS:
            raise Unsupported(f"{op.where()} is not supported by the cpu backend yet")
        for r in op.results:
            _ty(r)
        if op.name == "stablehlo.reduce":
            _check_reduce_body(op)
    uses: dict[int, int] = {}
    for op in ops + [ret]:
        for v in op.operands:
            uses[id(v)] = uses.get(id(v), 0) + 1
    returned = {id(v) for v in ret.operands}
    materialized = []
    for op in ops:
        for r in op.results:
            if op.name in KERNELS or id(r) in returned or uses.get(id(r), 0) > 1:
                materialized.append(r)
        if op.name == "stablehlo.dot_general":
            for v in op.operands:  # dots read their operands many times: give them memory
                owner = getattr(v, "owner", None)
                if isinstance(owner, Operation) and owner.name != "stablehlo.constant" and v not in materialized:
                    materialized.append(v)

    mod = ir.Module(name="axle")
    fnty = ir.FunctionType(ir.VoidType(), [I8.as_pointer().as_pointer()])
    func = ir.Function(mod, fnty, "axle_entry")
    bufs = func.args[0]
    b = ir.IRBuilder(func.append_basic_block("entry"))
    em = Emitter(mod, b, {})

    def slot(i):
        return b.load(b.gep(bufs, [ir.Constant(I64, i)], inbounds=True))

    n_args = len(block.arguments)
    for i, a in enumerate(block.arguments):
        em.buffers[id(a)] = slot(i)
    # results: the value's own buffer is the result buffer the caller passes
    result_slot = {}
    copies = []
    for k, v in enumerate(ret.operands):
        if id(v) in result_slot or not isinstance(getattr(v, "owner", None), Operation) \
                or v.owner.name == "stablehlo.constant" and v not in materialized:
            copies.append((k, v))
        else:
            result_slot[id(v)] = n_args + k
    arena = slot(n_args + len(ret.operands))
    offset = 0
    for v in materialized:
        if id(v) in result_slot:
            em.buffers[id(v)] = slot(result_slot[id(v)])
        else:
            em.buffers[id(v)] = b.gep(arena, [ir.Constant(I64, offset)], inbounds=True)
            offset += (_nbytes(_ty(v)) + ALIGN - 1) // ALIGN * ALIGN
    kernels = []
    done = set()
    for op in ops:
        if not any(id(r) in em.buffers and r in materialized for r in op.results):
            continue
        if id(op) in done:
            continue
        done.add(id(op))
        kernels.append((op.name, op.where(), list(_ty(op.results[0]).shape)))
        if op.name == "stablehlo.reduce":
            _emit_reduce(em, op)
        elif op.name == "stablehlo.dot_general":
            _emit_dot(em, op)
        else:
            _emit_elementwise(em, op)
    for k, v in copies:
        t = _ty(v)
        dst = slot(n_args + k)
        em.loop_nest(t.shape, lambda idx, v=v, t=t, dst=dst: S.store(
            b, em.value_at(v, idx), em.element_ptr(dst, t.element_type, em.linear(idx, t.shape)), t.element_type))
        kernels.append(("copy", "", list(t.shape)))
    b.ret_void()
    return Program(str(mod), list(fn.function_type.inputs), list(fn.function_type.results), offset, kernels)


def _check_reduce_body(op: Operation) -> None:
    from axle.backends.cpu.scalar_ops import RULES
    for o in op.regions[0].blocks[0].operations:
        if o.name not in RULES and o.name not in ("stablehlo.return", "stablehlo.convert", "stablehlo.constant"):
            raise Unsupported(f"{o.where()} inside the body of {op.where()}")


def _emit_elementwise(em: Emitter, op: Operation) -> None:
    r = op.results[0]
    t = _ty(r)
    et = t.element_type
    dst = em.buffers[id(r)]

    def body(idx):
        S.store(em.b, em.op_at(op, idx), em.element_ptr(dst, et, em.linear(idx, t.shape)), et)

    em.loop_nest(t.shape, body)


def _emit_reduce(em: Emitter, op: Operation) -> None:
    b = em.b
    n = len(op.results)
    inputs, inits = op.operands[:n], op.operands[n:]
    dims = sorted(op.attr("dimensions"))
    in_t = _ty(inputs[0])
    out_ts = [_ty(r) for r in op.results]
    kept = [d for d in range(in_t.rank) if d not in dims]
    region = op.regions[0]
    body_ets = [a.type.element_type for a in region.blocks[0].arguments[:n]]

    def body(out_idx):
        accs = []
        for init, et in zip(inits, body_ets):
            slot = em.alloca(S.reg_type(et))
            b.store(em.value_at(init, []), slot)
            accs.append(slot)
        red_shape = [in_t.shape[d] for d in dims]

        def inner(red_idx):
            full = [None] * in_t.rank
            for d, i in zip(kept, out_idx):
                full[d] = i
            for d, i in zip(dims, red_idx):
                full[d] = i
            elems = [em.value_at(v, full) for v in inputs]
            cur = [b.load(a) for a in accs]
            new = em.region_scalars(region, cur + elems)
            for a, v in zip(accs, new):
                b.store(v, a)

        em.loop_nest(red_shape, inner)
        for a, r, t in zip(accs, op.results, out_ts):
            S.store(b, b.load(a), em.element_ptr(em.buffers[id(r)], t.element_type, em.linear(out_idx, t.shape)),
                    t.element_type)

    em.loop_nest([out_ts[0].shape[i] for i in range(out_ts[0].rank)], body)


def _emit_dot(em: Emitter, op: Operation) -> None:
    b = em.b
    lhs, rhs = op.operands
    lt, rt_, ot = _ty(lhs), _ty(rhs), _ty(op.results[0])
    dn = op.attr("dot_dimension_numbers")
    lb, rb = dn["lhs_batching_dimensions"], dn["rhs_batching_dimensions"]
    lc, rc = dn["lhs_contracting_dimensions"], dn["rhs_contracting_dimensions"]
    lfree = [d for d in range(lt.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rt_.rank) if d not in rb and d not in rc]
    oet = ot.element_type
    lhs_et, rhs_et = lt.element_type, rt_.element_type
    if oet.is_float:
        acc_et = __import__("axle.ir.types", fromlist=["f32"]).f32 if oet.bitwidth <= 32 else oet
    else:
        acc_et = oet
    from axle.backends.cpu.scalar_ops import RULES, convert
    add, mul = RULES["stablehlo.add"], RULES["stablehlo.multiply"]
    dst = em.buffers[id(op.results[0])]

    def body(oidx):
        nb = len(lb)
        bidx, li, ri = oidx[:nb], oidx[nb:nb + len(lfree)], oidx[nb + len(lfree):]
        acc = em.alloca(S.reg_type(acc_et))
        b.store(S.constant(acc_et, 0), acc)

        def inner(cidx):
            lfull, rfull = [None] * lt.rank, [None] * rt_.rank
            for d, i in zip(lb, bidx):
                lfull[d] = i
            for d, i in zip(rb, bidx):
                rfull[d] = i
            for d, i in zip(lfree, li):
                lfull[d] = i
            for d, i in zip(rfree, ri):
                rfull[d] = i
            for d, i in zip(lc, cidx):
                lfull[d] = i
            for d, i in zip(rc, cidx):
                rfull[d] = i
            x = convert(em, lhs_et, acc_et, em.value_at(lhs, lfull))
            y = convert(em, rhs_et, acc_et, em.value_at(rhs, rfull))
            p = mul(em, acc_et, [x, y], op)
            b.store(add(em, acc_et, [b.load(acc), p], op), acc)

        em.loop_nest([lt.shape[d] for d in lc], inner)
        out = S.finish(b, convert(em, acc_et, oet, b.load(acc)), oet)
        S.store(b, out, em.element_ptr(dst, oet, em.linear(oidx, ot.shape)), oet)

    em.loop_nest(list(ot.shape), body)
