"""An axle executable called from inside a `jax.jit` program, through XLA's typed FFI.

    exe = axle.compile(stablehlo_text)              # or an axle executable you already have
    fast_block = axle.jax.ffi_call(exe)              # a JAX function: usable under jax.jit
    y = jax.jit(lambda x, w: fast_block(x, w)[0] * 2)(x, w)

For each executable, a small handler with XLA's FFI calling convention
(`XLA_FFI_Error* handler(XLA_FFI_CallFrame*)`, the ABI of `xla/ffi/api/c_api.h`, which jaxlib
ships under jax.ffi.include_dir()) is emitted as LLVM IR with llvmlite and linked into the
process; `jax.ffi.register_ffi_target` registers it for the CPU platform. At run time XLA
calls the handler with its buffers; the handler

- answers XLA's metadata query (the `XLA_FFI_Extension_Metadata` extension: API version 0.1,
  no traits) and returns at once for the instantiate/prepare/initialize stages;
- checks the number of operands and results, and each buffer's element type, rank and
  dimensions against the executable's signature; a mismatch returns an XLA FFI error (made
  with the call frame's `XLA_FFI_Error_Create`) naming the buffer, never a bad memory access;
- takes a spin lock (the executable's scratch arena is shared by all callers), fills axle's
  pointer table with the buffers' data pointers and the arena, calls axle's native entry
  `axle_entry(table)`, releases the lock and returns NULL (success).

The call is not traced by JAX: no gradient (wrap it in jax.custom_vjp for that) and no vmap.
"""
from __future__ import annotations

import ctypes
import itertools
import threading

import numpy as np

# XLA_FFI_DataType codes (c_api.h)
FFI_DTYPES = {np.dtype(np.bool_): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3, np.dtype(np.int32): 4,
              np.dtype(np.int64): 5, np.dtype(np.uint8): 6, np.dtype(np.uint16): 7, np.dtype(np.uint32): 8,
              np.dtype(np.uint64): 9, np.dtype(np.float16): 10, np.dtype(np.float32): 11,
              np.dtype(np.float64): 12, np.dtype(np.complex64): 15, np.dtype(np.complex128): 18}

# offsets in the x86-64 / aarch64 layout of c_api.h's structs
CALLFRAME_EXTENSION, CALLFRAME_API, CALLFRAME_STAGE = 8, 16, 32
CALLFRAME_ARGS_SIZE, CALLFRAME_ARGS, CALLFRAME_RETS_SIZE, CALLFRAME_RETS = 56, 72, 96, 112
BUFFER_DTYPE, BUFFER_DATA, BUFFER_RANK, BUFFER_DIMS = 16, 24, 32, 40
EXTENSION_TYPE, METADATA_EXTENSION_METADATA = 8, 24
METADATA_MAJOR, METADATA_MINOR, METADATA_TRAITS = 24, 28, 32
API_ERROR_CREATE = 48
STAGE_EXECUTE, EXTENSION_METADATA, ERROR_INVALID_ARGUMENT = 3, 1, 3

_REGISTERED: dict = {}          # name -> _Handler (keeps code, arena and executable alive)
_LOCK = threading.Lock()
_COUNTER = itertools.count()


def _signature(types):
    out = []
    for t in types:
        dt = np.dtype(t.dtype)
        if dt not in FFI_DTYPES:
            raise NotImplementedError(f"axle.jax.ffi_call: element type {t.element_type} cannot cross the FFI")
        out.append((tuple(int(d) for d in t.shape), dt))
    return out


def handler_ir(name: str, entry_addr: int, arena_addr: int, ins: list, outs: list) -> str:
    """LLVM IR of the FFI handler `name` for an entry with these (shape, dtype) ins and outs."""
    from llvmlite import ir
    i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
    i8p = i8.as_pointer()
    mod = ir.Module(name=name)
    lock = ir.GlobalVariable(mod, i32, name=f"{name}_lock")
    lock.initializer = i32(0)
    fn = ir.Function(mod, ir.FunctionType(i8p, [i8p]), name=name)
    frame = fn.args[0]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    null = ir.Constant(i8p, None)

    def load(ptr, offset, ty):
        return b.load(b.bitcast(b.gep(ptr, [i64(offset)]), ty.as_pointer()))

    def store(value, ptr, offset):
        b.store(value, b.bitcast(b.gep(ptr, [i64(offset)]), value.type.as_pointer()))

    def cstring(text: str):
        data = bytearray(text.encode()) + b"\0"
        g = ir.GlobalVariable(mod, ir.ArrayType(i8, len(data)), name=f"{name}_msg{len(mod.globals)}")
        g.global_constant, g.linkage = True, "internal"
        g.initializer = ir.Constant(ir.ArrayType(i8, len(data)), data)
        return b.bitcast(g, i8p)

    def fail(message: str):  # return api->XLA_FFI_Error_Create({28, NULL, message, INVALID_ARGUMENT})
        api = load(frame, CALLFRAME_API, i8p)
        create = b.bitcast(load(api, API_ERROR_CREATE, i8p), ir.FunctionType(i8p, [i8p]).as_pointer())
        args = b.bitcast(b.alloca(ir.ArrayType(i64, 4)), i8p)
        store(i64(28), args, 0)
        store(null, args, 8)
        store(cstring(message), args, 16)
        store(i32(ERROR_INVALID_ARGUMENT), args, 24)
        b.ret(b.call(create, [args]))

    # the metadata query and the stages before execution
    ext = load(frame, CALLFRAME_EXTENSION, i8p)
    has_ext, no_ext = fn.append_basic_block("has_ext"), fn.append_basic_block("stage")
    b.cbranch(b.icmp_unsigned("!=", ext, null), has_ext, no_ext)
    b.position_at_end(has_ext)
    meta_bb = fn.append_basic_block("metadata")
    b.cbranch(b.icmp_unsigned("==", load(ext, EXTENSION_TYPE, i32), i32(EXTENSION_METADATA)), meta_bb, no_ext)
    b.position_at_end(meta_bb)
    meta = load(ext, METADATA_EXTENSION_METADATA, i8p)
    store(i32(0), meta, METADATA_MAJOR)
    store(i32(1), meta, METADATA_MINOR)
    store(i32(0), meta, METADATA_TRAITS)
    b.ret(null)
    b.position_at_end(no_ext)
    execute, skip = fn.append_basic_block("execute"), fn.append_basic_block("skip")
    b.cbranch(b.icmp_unsigned("==", load(frame, CALLFRAME_STAGE, i32), i32(STAGE_EXECUTE)), execute, skip)
    b.position_at_end(skip)
    b.ret(null)

    b.position_at_end(execute)
    counts_ok, bad_counts = fn.append_basic_block("counts_ok"), fn.append_basic_block("bad_counts")
    ok = b.and_(b.icmp_signed("==", load(frame, CALLFRAME_ARGS_SIZE, i64), i64(len(ins))),
                b.icmp_signed("==", load(frame, CALLFRAME_RETS_SIZE, i64), i64(len(outs))))
    b.cbranch(ok, counts_ok, bad_counts)
    b.position_at_end(bad_counts)
    fail(f"{name}: expected {len(ins)} operands and {len(outs)} results")
    b.position_at_end(counts_ok)
    table = b.alloca(ir.ArrayType(i8p, len(ins) + len(outs) + 1))
    slot = 0
    for kind, offset, specs in (("operand", CALLFRAME_ARGS, ins), ("result", CALLFRAME_RETS, outs)):
        array = load(frame, offset, i8p)
        for k, (shape, dtype) in enumerate(specs):
            buf = load(array, 8 * k, i8p)
            what = f"{name}: {kind} {k} must be {dtype.name}{list(shape)}"
            head_ok = b.and_(b.icmp_signed("==", load(buf, BUFFER_DTYPE, i32), i32(FFI_DTYPES[dtype])),
                             b.icmp_signed("==", load(buf, BUFFER_RANK, i64), i64(len(shape))))
            dims_bb, bad_bb = fn.append_basic_block(f"{kind}{k}_dims"), fn.append_basic_block(f"{kind}{k}_bad")
            b.cbranch(head_ok, dims_bb, bad_bb)
            b.position_at_end(bad_bb)
            fail(what)
            b.position_at_end(dims_bb)
            dims = load(buf, BUFFER_DIMS, i8p)
            good = ir.Constant(ir.IntType(1), 1)
            for d, size in enumerate(shape):  # rank checked first: dims has len(shape) entries
                good = b.and_(good, b.icmp_signed("==", load(dims, 8 * d, i64), i64(size)))
            next_bb, bad_dims = fn.append_basic_block(f"{kind}{k}_ok"), fn.append_basic_block(f"{kind}{k}_baddims")
            b.cbranch(good, next_bb, bad_dims)
            b.position_at_end(bad_dims)
            fail(what)
            b.position_at_end(next_bb)
            b.store(load(buf, BUFFER_DATA, i8p), b.gep(table, [i32(0), i32(slot)]))
            slot += 1
    b.store(b.inttoptr(i64(arena_addr), i8p), b.gep(table, [i32(0), i32(slot)]))
    # one caller at a time: the arena is shared
    spin = fn.append_basic_block("spin")
    run = fn.append_basic_block("run")
    b.branch(spin)
    b.position_at_end(spin)
    got = b.cmpxchg(lock, i32(0), i32(1), "acquire", "monotonic")
    b.cbranch(b.extract_value(got, 1), run, spin)
    b.position_at_end(run)
    entry_ty = ir.FunctionType(ir.VoidType(), [i8p.as_pointer()])
    b.call(b.inttoptr(i64(entry_addr), entry_ty.as_pointer()), [b.bitcast(table, i8p.as_pointer())])
    b.store_atomic(i32(0), lock, "release", 4)
    b.ret(null)
    return str(mod)


class _Handler:
    def __init__(self, name: str, executable):
        from axle.backends.cpu.llvm_env import compile_ir
        native = getattr(executable, "_static", None)
        if native is None:
            raise NotImplementedError("axle.jax.ffi_call: the executable must be a CPU executable with static "
                                      "shapes (compiled by axle.compile(..., backend='cpu'))")
        if native.program.host_callbacks:
            raise NotImplementedError("axle.jax.ffi_call: programs with host callbacks (Python custom calls, "
                                      "collectives) cannot run inside XLA")
        self.name, self.executable, self.native = name, executable, native
        self.ins = _signature(native.program.arg_types)
        self.outs = _signature(native.program.result_types)
        self.arena = np.zeros(max(native.program.arena_bytes, 1) + 64, np.uint8)
        arena_addr = self.arena.ctypes.data + (-self.arena.ctypes.data % 64)
        entry = ctypes.cast(native._fn, ctypes.c_void_p).value
        self.ir = handler_ir(name, entry, arena_addr, self.ins, self.outs)
        self._keep, addrs, _ = compile_ir(self.ir, [name], opt=2)
        self.fn = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(addrs[name])


def register_ffi_executable(executable, name: str | None = None) -> str:
    """Register an axle CPU executable as an XLA FFI target for the CPU; returns its name."""
    import jax
    with _LOCK:
        for existing, h in _REGISTERED.items():
            if h.executable is executable and (name is None or name == existing):
                return existing
        name = name or f"axle_exe_{next(_COUNTER)}"
        if name in _REGISTERED:
            raise ValueError(f"axle.jax: FFI target '{name}' is already registered")
        handler = _Handler(name, executable)
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(handler.fn), platform="cpu")
        _REGISTERED[name] = handler
        return name


def ffi_call(executable, name: str | None = None):
    """A JAX function that runs an axle executable (or StableHLO text / module, compiled for
    the CPU) inside JAX programs, jax.jit included; returns a list of results."""
    import jax
    if isinstance(executable, str) or not hasattr(executable, "execute"):
        import axle
        executable = axle.compile(executable, backend="cpu")
    target = register_ffi_executable(executable, name)
    handler = _REGISTERED[target]
    results = [jax.ShapeDtypeStruct(s, d) for s, d in handler.outs]
    call = jax.ffi.ffi_call(target, results)

    def run(*args):
        if len(args) != len(handler.ins):
            raise TypeError(f"{target}: expected {len(handler.ins)} arguments, got {len(args)}")
        for k, (a, (shape, dtype)) in enumerate(zip(args, handler.ins)):
            if tuple(a.shape) != shape or np.dtype(a.dtype) != dtype:
                raise TypeError(f"{target}: argument {k} must be {dtype.name}{list(shape)}, "
                                f"got {np.dtype(a.dtype).name}{list(a.shape)}")
        return list(call(*args))
    run.target_name = target
    return run
