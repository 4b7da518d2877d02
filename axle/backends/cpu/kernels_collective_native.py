"""Collectives compiled to calls of the native runtime (collectives_native.py).

`emit_native(ctx, op)` emits one call of `axle_coll_<op>` with the op's operand and result
buffers, its groups (a constant array in the program) and the constants of its layout, and
returns True; it returns False for what the runtime does not do (the caller then uses the
host callback of kernels_collective.py):

* several operands (the tuple form), dynamic shapes, empty `replica_groups` (their size
  depends on the grid), groups of unequal size;
* cross_replica_and_partition groups (a channel without `use_global_device_ids`);
* a reduction body other than one `add`/`multiply`/`maximum`/`minimum`/`and`/`or`/`xor` of
  its two arguments, or on an element type without that reduction (bf16, complex);
* buffers of 2 GiB or more (MPI counts are ints); collective_broadcast.

Group ids stay as the op writes them (device, partition or replica ids); the runtime maps
them to devices with the communicator's partition count, so the code does not depend on
the grid and stays cacheable.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from axle.backends.cpu.host_callback import materialize
from axle.codegen.scalar import I8, I64

NATIVE_OPS = ("stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter",
              "stablehlo.all_to_all", "stablehlo.collective_permute", "stablehlo.partition_id",
              "stablehlo.replica_id")
_BODY = {"stablehlo.add": "add", "stablehlo.multiply": "mul", "stablehlo.maximum": "max",
         "stablehlo.minimum": "min", "stablehlo.and": "and", "stablehlo.or": "or", "stablehlo.xor": "xor"}
_TYPES = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16", "int32": "i32",
          "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "pred"}
_LIMIT = 2 ** 31 - 1
P8 = I8.as_pointer()


def _static(t) -> bool:
    return hasattr(t, "shape") and getattr(t, "is_static", True) and all(
        isinstance(s, int) and s >= 0 for s in t.shape)


def _dtype(t):
    return np.dtype(t.element_type.dtype)


def _channel(op) -> int:
    h = op.attr("channel_handle")
    if isinstance(h, dict):
        return int(h.get("handle", 0))
    return int(h) if h is not None else int(op.attr("channel_id") or 0)


def _mode(op):
    """0: device ids, 1: partition ids, 2: replica ids; None: not native."""
    reduction = op.name in ("stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter")
    if reduction:
        if "use_global_device_ids" in op.attributes:
            return 0
        return None if _channel(op) > 0 else 2
    return 1 if _channel(op) > 0 else 2


def _id_rows(attr):
    if attr is None:
        return None
    a = np.asarray(attr.to_python() if hasattr(attr, "to_python") else attr)
    if a.size == 0:
        return None
    a = a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
    rows = [[int(i) for i in r if i >= 0] for r in a]
    if len({len(r) for r in rows}) != 1 or not rows[0]:
        return None
    return rows


def _reduction(op, t):
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return None
    block = op.regions[0].blocks[0]
    ops = list(block.operations)
    if len(ops) != 2 or ops[0].name not in _BODY or ops[1].operands[0] is not ops[0].results[0]:
        return None
    args = list(block.arguments)
    if set(ops[0].operands) != set(args) or len(args) != 2:
        return None
    from axle.backends.cpu.collectives_ir import reduction_code
    key = _TYPES.get(_dtype(t).name)
    return None if key is None else reduction_code(_BODY[ops[0].name], key)


def _groups_global(ctx, values, name):
    arr = ir.ArrayType(I64, max(len(values), 1))
    g = ir.GlobalVariable(ctx.mod, arr, ctx.mod.get_unique_name(name))
    g.global_constant = True
    g.linkage = "internal"
    g.initializer = ir.Constant(arr, [int(v) for v in values] or [0])
    return ctx.b.bitcast(g, I64.as_pointer())


def _call(ctx, name, args):
    fn = ctx.mod.globals.get(name)
    if fn is None:
        ret = I64 if name.endswith("_id") else ir.VoidType()
        fn = ir.Function(ctx.mod, ir.FunctionType(ret, [a.type for a in args]), name)
    return ctx.b.call(fn, args)


def _c(v: int):
    return ir.Constant(I64, int(v))


def emit_native(ctx, op) -> bool:
    """Emit `op` as a call of the native runtime; False when it cannot (see module doc)."""
    if op.name not in NATIVE_OPS:
        return False
    from axle.backends.cpu.collectives_native import runtime
    runtime()  # the names the call links against
    if op.name in ("stablehlo.partition_id", "stablehlo.replica_id"):
        r = op.results[0]
        v = _call(ctx, f"axle_coll_{op.name.split('.')[1]}", [])
        width = _dtype(r.type).itemsize * 8
        ctx.b.store(ctx.b.trunc(v, ir.IntType(width)) if width < 64 else v,
                    ctx.b.bitcast(ctx.buffer(r), ir.IntType(width).as_pointer()))
        return True
    if len(op.operands) != 1 or len(op.results) != 1:
        return False
    x, r = op.operands[0], op.results[0]
    if not (_static(x.type) and _static(r.type)):
        return False
    es = _dtype(x.type).itemsize
    shape = list(x.type.shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * es
    if nbytes > _LIMIT or int(np.prod(r.type.shape, dtype=np.int64)) * es > _LIMIT:
        return False
    mode = _mode(op)
    if mode is None:
        return False
    if op.name == "stablehlo.collective_permute":
        pairs = _id_rows(op.attributes.get("source_target_pairs"))
        if pairs is None or len(pairs[0]) != 2:
            return False
        args = [_c(nbytes), _c(mode), _groups_global(ctx, [q for p in pairs for q in p], "axle_coll_pairs"),
                _c(len(pairs))]
    else:
        rows = _id_rows(op.attributes.get("replica_groups"))
        if rows is None:
            return False
        g = len(rows[0])
        group = [_c(mode), _groups_global(ctx, [q for row in rows for q in row], "axle_coll_groups"),
                 _c(len(rows)), _c(g)]
        if op.name == "stablehlo.all_reduce":
            code = _reduction(op, x.type)
            if code is None:
                return False
            args = [_c(code), _c(es), _c(nbytes // es)] + group
        elif op.name == "stablehlo.all_gather":
            d = int(op.attr("all_gather_dim"))
            outer = int(np.prod(shape[:d], dtype=np.int64))
            args = [_c(outer), _c(nbytes // max(outer, 1))] + group
        elif op.name == "stablehlo.reduce_scatter":
            code = _reduction(op, x.type)
            d = int(op.attr("scatter_dimension"))
            if code is None or shape[d] % g:
                return False
            outer = int(np.prod(shape[:d], dtype=np.int64))
            inner = int(np.prod(r.type.shape[d:], dtype=np.int64))
            args = [_c(code), _c(es), _c(outer), _c(inner)] + group
        else:  # all_to_all
            sd, cd = int(op.attr("split_dimension")), int(op.attr("concat_dimension"))
            if int(op.attr("split_count")) != g or shape[sd] % g:
                return False
            piece = list(shape)
            piece[sd] //= g
            bs = int(np.prod(piece[sd:], dtype=np.int64)) * es
            bc = int(np.prod(piece[cd:], dtype=np.int64)) * es
            total = int(np.prod(piece, dtype=np.int64)) * es
            args = [_c(bs), _c(bc), _c(total), _c(min(bs, bc))] + group
    src = ctx.buffer(x) if ctx.has_buffer(x) else materialize(ctx, x)
    args += [ctx.b.bitcast(src, P8), ctx.b.bitcast(ctx.buffer(r), P8)]
    _call(ctx, f"axle_coll_{op.name.split('.')[1]}", args)
    return True
