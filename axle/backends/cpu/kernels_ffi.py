"""Native custom calls (XLA typed FFI, axle/backends/ffi.py) in compiled CPU code.

For each call the generated code fills, on its stack, one XLA_FFI_Buffer per operand and
result (dtype, data pointer, rank, dims), the argument and result pointer tables and an
XLA_FFI_CallFrame (stage EXECUTE, the process's XLA_FFI_Api), then calls the handler.
What does not change between calls (the dims arrays, the type tables, the attributes:
the op's `backend_config` dictionary, sorted by name) is made once at compile time in
process memory and kept as long as the process, so the program is not cacheable (like the
Python custom calls). A non-NULL XLA_FFI_Error is handed to a host callback that stores
it; the executable raises it after the native call returns.
"""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from axle.backends import ffi
from axle.codegen.scalar import I8, I64
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.host_callback import HostCallback, materialize, set_error
from axle.ir import attributes as A
from axle.ir.core import Operation
from axle.ir.types import TensorType

I32 = ir.IntType(32)
P8 = I8.as_pointer()
BUFFER = ir.LiteralStructType([I64, P8, I32, P8, I64, P8])  # XLA_FFI_Buffer
TABLE = ir.LiteralStructType([I64, P8, I64, P8, P8])  # XLA_FFI_Args / XLA_FFI_Rets
ATTRS = ir.LiteralStructType([I64, P8, I64, P8, P8, P8])  # XLA_FFI_Attrs
FRAME = ir.LiteralStructType([I64, P8, P8, P8, I32, TABLE, TABLE, ATTRS, P8])  # XLA_FFI_CallFrame
BUFFER_SIZE, TABLE_SIZE, ATTRS_SIZE, FRAME_SIZE = 48, 40, 48, 168  # XLA_FFI_STRUCT_SIZE of each
STAGE_EXECUTE = 3

_KEEP: list = []  # compile-time data referenced by generated code (lives with the process)


def _keep(obj) -> int:
    _KEEP.append(obj)
    return ctypes.addressof(obj)


class _ByteSpan(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _Scalar(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("value", ctypes.c_void_p)]


class _Array(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("size", ctypes.c_size_t), ("data", ctypes.c_void_p)]


class _Attrs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p), ("size", ctypes.c_int64),
                ("types", ctypes.c_void_p), ("names", ctypes.c_void_p), ("attrs", ctypes.c_void_p)]


def _scalar_dtype(t, where: str) -> tuple[int, np.dtype]:
    name = getattr(t, "name", None) or "i64"
    if name not in ffi.DATA_TYPES:
        raise Unsupported(f"{where}: FFI attribute of type {name}")
    from axle.ir.types import element_type
    return ffi.DATA_TYPES[name], np.dtype(element_type(name).dtype)


def _string(s: bytes) -> int:
    data = ctypes.create_string_buffer(s)
    _KEEP.append(data)
    return _keep(_ByteSpan(ctypes.addressof(data), len(s)))


def encode_attrs(entries, where: str) -> int:
    """Address of an XLA_FFI_Attrs for {name: attribute}, sorted by name (as XLA does)."""
    items = sorted(entries, key=lambda kv: kv[0].encode())
    n = len(items)
    types = (ctypes.c_int * max(n, 1))()
    names = (ctypes.c_void_p * max(n, 1))()
    values = (ctypes.c_void_p * max(n, 1))()
    for i, (name, a) in enumerate(items):
        names[i] = _string(name.encode())
        if isinstance(a, (A.IntegerAttr, A.FloatAttr, A.BoolAttr)):
            if isinstance(a, A.BoolAttr) or (isinstance(a, A.IntegerAttr) and getattr(a.type, "name", "") == "i1"):
                code, dt = 1, np.dtype(np.bool_)
            else:
                code, dt = _scalar_dtype(a.type if a.type is not None else
                                         type("T", (), {"name": "i64" if isinstance(a, A.IntegerAttr) else "f64"}),
                                         where)
            data = np.array(a.value, dtype=dt).reshape(1)
            _KEEP.append(data)
            types[i], values[i] = 3, _keep(_Scalar(code, data.ctypes.data))  # XLA_FFI_AttrType_SCALAR
        elif isinstance(a, A.StringAttr):
            types[i], values[i] = 4, _string(a.value.encode())  # STRING
        elif isinstance(a, A.DenseArrayAttr):
            code, dt = _scalar_dtype(a.element_type, where)
            data = np.array(a.values, dtype=dt)
            _KEEP.append(data)
            types[i], values[i] = 1, _keep(_Array(code, len(a.values), data.ctypes.data))  # ARRAY
        elif isinstance(a, A.DictAttr):
            types[i], values[i] = 2, encode_attrs(a.entries, where)  # DICTIONARY
        else:
            raise Unsupported(f"{where}: FFI attribute '{name}' of kind {type(a).__name__} (supported: "
                              f"integers, floats, bools, strings, dense arrays, dictionaries)")
    _KEEP.extend([types, names, values])
    return _keep(_Attrs(ATTRS_SIZE, None, n, ctypes.addressof(types), ctypes.addressof(names),
                        ctypes.addressof(values)))


def _attributes(op: Operation):
    cfg = op.attributes.get("backend_config") or op.attributes.get("mhlo.backend_config")
    if cfg is None or isinstance(cfg, A.StringAttr) and not cfg.value:
        return ()
    if not isinstance(cfg, A.DictAttr):
        raise Unsupported(f"{op.where()}: custom call '{op.attr('call_target_name')}' to a native FFI "
                          f"handler takes its attributes as a dictionary backend_config (api_version = 4), "
                          f"got {cfg}")
    return cfg.entries


def _fail(call: tuple, err: int) -> None:  # host callback: the handler returned an error
    code, message = ffi.take_error(err)
    target, where = call
    name = ffi.ERROR_CODES[code] if 0 <= code < len(ffi.ERROR_CODES) else str(code)
    set_error(ffi.FfiCallError(f"{where}: custom call '{target}' failed: {name}: {message}"), first=False)


# key -> (target, location) for error messages; called with the handler's error (i8*)
_FAIL = HostCallback(_fail, arg=ctypes.c_void_p, ir_arg=P8)


def _const_ptr(addr: int):
    return ir.Constant(I64, addr).inttoptr(P8)


def emit_ffi_call(ctx: Context, op: Operation, handler: int) -> None:
    b = ctx.b
    ctx.cacheable = False  # the handler's and the tables' addresses live in this process only
    ctx.host_callbacks = True
    target = op.attr("call_target_name")
    key = _FAIL.register((target, op.where()))
    attrs = encode_attrs(_attributes(op), op.where())
    values = list(op.operands) + list(op.results)
    n_in, n_out = len(op.operands), len(op.results)
    ptrs = [ctx.buffer(v) if ctx.has_buffer(v) else materialize(ctx, v) for v in op.operands]
    ptrs += [ctx.buffer(r) for r in op.results]
    bufs = ctx.em.alloca(ir.ArrayType(BUFFER, max(len(values), 1)))
    zero = ir.Constant(I32, 0)

    def field(ptr, *idx):
        return b.gep(ptr, [zero] + [ir.Constant(I32, i) for i in idx], inbounds=True)
    for i, (v, p) in enumerate(zip(values, ptrs)):
        t = v.type
        dims = (ctypes.c_int64 * max(len(t.shape), 1))(*t.shape)
        slot = b.gep(bufs, [ir.Constant(I64, 0), ir.Constant(I64, i)], inbounds=True)
        b.store(ir.Constant(I64, BUFFER_SIZE), field(slot, 0))
        b.store(ir.Constant(P8, None), field(slot, 1))
        b.store(ir.Constant(I32, ffi.DATA_TYPES[t.element_type.name]), field(slot, 2))
        b.store(b.bitcast(p, P8), field(slot, 3))
        b.store(ir.Constant(I64, len(t.shape)), field(slot, 4))
        b.store(_const_ptr(_keep(dims)), field(slot, 5))
    tables = []
    for lo, hi in ((0, n_in), (n_in, n_in + n_out)):
        table = ctx.em.alloca(ir.ArrayType(P8, max(hi - lo, 1)))
        for k in range(lo, hi):
            slot = b.gep(bufs, [ir.Constant(I64, 0), ir.Constant(I64, k)], inbounds=True)
            b.store(b.bitcast(slot, P8), b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, k - lo)], inbounds=True))
        kinds = (ctypes.c_int * max(hi - lo, 1))(*([1] * (hi - lo)))  # XLA_FFI_ArgType/RetType_BUFFER
        tables.append((hi - lo, _keep(kinds), table))
    frame = ctx.em.alloca(FRAME)
    b.store(ir.Constant(I64, FRAME_SIZE), field(frame, 0))
    b.store(ir.Constant(P8, None), field(frame, 1))
    b.store(_const_ptr(ffi.api_address()), field(frame, 2))
    b.store(ir.Constant(P8, None), field(frame, 3))  # no XLA_FFI_ExecutionContext
    b.store(ir.Constant(I32, STAGE_EXECUTE), field(frame, 4))
    for pos, (n, kinds, table) in zip((5, 6), tables):
        b.store(ir.Constant(I64, TABLE_SIZE), field(frame, pos, 0))
        b.store(ir.Constant(P8, None), field(frame, pos, 1))
        b.store(ir.Constant(I64, n), field(frame, pos, 2))
        b.store(_const_ptr(kinds), field(frame, pos, 3))
        b.store(b.bitcast(table, P8), field(frame, pos, 4))
    a = ctypes.cast(attrs, ctypes.POINTER(_Attrs)).contents
    b.store(ir.Constant(I64, ATTRS_SIZE), field(frame, 7, 0))
    b.store(ir.Constant(P8, None), field(frame, 7, 1))
    b.store(ir.Constant(I64, a.size), field(frame, 7, 2))
    b.store(_const_ptr(a.types), field(frame, 7, 3))
    b.store(_const_ptr(a.names), field(frame, 7, 4))
    b.store(_const_ptr(a.attrs), field(frame, 7, 5))
    b.store(ir.Constant(P8, None), field(frame, 8))
    fnty = ir.FunctionType(P8, [FRAME.as_pointer()])
    err = b.call(b.inttoptr(ir.Constant(I64, handler), fnty.as_pointer()), [frame])
    failed = b.icmp_unsigned("!=", b.ptrtoint(err, I64), ir.Constant(I64, 0))
    with b.if_then(failed, likely=False):
        _FAIL.emit_call(b, key, value=err)


def check_ffi_call(op: Operation) -> None:
    for v in list(op.operands) + list(op.results):
        if not isinstance(v.type, TensorType) or not v.type.is_static:
            raise Unsupported(f"{op.where()}: native custom call '{op.attr('call_target_name')}' on a value "
                              f"of type {v.type}")
        if v.type.element_type.name not in ffi.DATA_TYPES:
            raise Unsupported(f"{op.where()}: native custom call on element type {v.type.element_type.name}")
    if op.regions:
        raise Unsupported(f"{op.where()}: custom call '{op.attr('call_target_name')}' with regions")
