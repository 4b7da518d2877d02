"""Host callbacks: compiled code calling back into Python, one mechanism for every kernel.

Collectives, custom calls, infeed/outfeed, FFT, failed run-time checks and shape
assertions run Python on the host in the middle of a native call. Each of them is one
`HostCallback`: a Python function, a table of payloads (what one compiled call site needs:
the op, a message, a plan) under integer keys, the lock that numbers them, and the ctypes
function pointer compiled code calls:

    %fn = inttoptr i64 <address> to void (i64, i8**)*
    call void %fn(i64 <key>, i8** <pointer table>)

`register(payload)` gives a call site its key (numbered from 0 per callback, in
registration order: axle.tools.replay writes keys and addresses as KEY and ADDR);
`pointer_table` fills a stack array of buffer pointers; `emit_call` emits the call. The
payloads live as long as the process (compiled code may run any time later; a program
with callbacks is never cached on disk: ctx.cacheable = False).

A callback never unwinds through native frames: an exception is recorded with
`record_error` (the first of a call wins), which sets the call's status word (status.py)
so that compiled code stops; the executable raises it after the native call returns
(`check_errors`). `device_context(ctx)` says which device a thread runs for (collectives
meet the other devices' threads through it).
"""
from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager
from typing import Any, Callable, Optional

import numpy as np
from llvmlite import ir

from axle import forks
from axle.codegen.emitter import _ty

I8P = ir.IntType(8).as_pointer()
I64 = ir.IntType(64)
ARGS = ctypes.POINTER(ctypes.c_void_p)  # i8**: the pointer table

_local = threading.local()  # per thread: ctx (the device), error, status_addr


@contextmanager
def device_context(ctx):
    """Run native code in this thread as the device whose ExecContext is `ctx`."""
    old = getattr(_local, "ctx", None)
    _local.ctx = ctx
    _local.error = None
    try:
        yield
    finally:
        _local.ctx = old


def current_device():
    """The ExecContext this thread runs for (None outside device_context)."""
    return getattr(_local, "ctx", None)


def record_error(e: BaseException) -> None:
    """In a host callback: keep the first exception of this call for check_errors and set
    the call's status word, so that the compiled code stops (status.py)."""
    if getattr(_local, "error", None) is None:
        _local.error = e
    addr = getattr(_local, "status_addr", None)
    if addr:
        ctypes.c_int64.from_address(addr).value = 1


def set_error(e: BaseException, first: bool = True) -> None:
    """Keep `e` as this call's error (only if none is kept yet, with `first`) without
    touching the status word: for a failure after which the compiled code may go on."""
    if not first or getattr(_local, "error", None) is None:
        _local.error = e


def start_call(addr) -> None:
    """Before a call of a program with callbacks: where its status word is, cleared."""
    _local.status_addr = addr
    if addr:
        ctypes.c_int64.from_address(addr).value = 0


def check_errors() -> None:
    """After a native call: raise the exception a callback of this thread recorded."""
    err = getattr(_local, "error", None)
    if err is not None:
        _local.error = None
        raise err


class HostCallback:
    """`fn(payload, args)` callable from compiled code as `void (i64 key, <arg> args)`.

    `arg` is the ctypes type of the second argument (default: the pointer table, i8**)
    and `ir_arg` its LLVM type. An exception escaping `fn` is recorded (record_error)."""

    def __init__(self, fn: Callable[[Any, Any], None], arg=ARGS, ir_arg: ir.Type = I8P.as_pointer()):
        self._fn = fn
        self.payloads: dict[int, Any] = {}
        self._lock = forks.lock()  # unlocked again in a forked child (axle/forks.py)
        self._cfunc = ctypes.CFUNCTYPE(None, ctypes.c_int64, arg)(self._call)  # kept alive here
        self.address = ctypes.cast(self._cfunc, ctypes.c_void_p).value
        self.ir_type = ir.FunctionType(ir.VoidType(), [I64, ir_arg])

    def _call(self, key: int, args) -> None:
        try:
            self._fn(self.payloads[key], args)
        except BaseException as e:  # must not unwind through native frames
            record_error(e)

    def register(self, payload: Any) -> int:
        """A new key for `payload` (what the call site's callback needs)."""
        with self._lock:
            key = len(self.payloads)
            self.payloads[key] = payload
        return key

    def emit_call(self, b: ir.IRBuilder, key: int, table: Optional[ir.Value] = None,
                  value: Optional[ir.Value] = None) -> None:
        """Emit `call void %fn(i64 key, arg)`: arg is `table` (a pointer table, cast to
        i8**), else `value` as it is, else a null pointer."""
        fn = b.inttoptr(ir.Constant(I64, self.address), self.ir_type.as_pointer())
        if table is not None:
            arg = b.bitcast(table, self.ir_type.args[1])
        elif value is not None:
            arg = value
        else:
            arg = ir.Constant(self.ir_type.args[1], None)
        b.call(fn, [ir.Constant(I64, key), arg])


def pointer_table(ctx, ptrs, cast: bool = True, size: Optional[int] = None) -> ir.Value:
    """A stack array of i8* holding `ptrs` (each cast to i8* first with `cast`). `ptrs` may
    be a function returning the list, called after the array is made (with `size`, the
    list's length): a kernel whose pointers emit code keeps its instructions' order."""
    b = ctx.b
    table = ctx.em.alloca(ir.ArrayType(I8P, max(len(ptrs) if size is None else size, 1)))
    if callable(ptrs):
        ptrs = ptrs()
    for i, p in enumerate(ptrs):
        if cast:  # (instructions in this order: the IR stays what it was, for process replay)
            b.store(b.bitcast(p, I8P), b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, i)], inbounds=True))
        else:
            b.store(p, b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, i)], inbounds=True))
    return table


def materialize(ctx, v):
    """The address of `v` for a pointer table: operands that are constants or fused values
    have no buffer, so they are written to a scratch buffer first."""
    dst = ctx.temp(_ty(v))
    ctx.copy(v, dst)
    return dst


def view(ptr: int, t) -> np.ndarray:
    """The buffer at address `ptr` (a callback's pointer table entry) as an array of type `t`."""
    n = int(np.prod(t.shape, dtype=np.int64))
    dt = np.dtype(t.dtype)
    buf = (ctypes.c_char * max(n * dt.itemsize, 1)).from_address(ptr)
    return np.frombuffer(buf, dtype=dt, count=n).reshape(t.shape)
