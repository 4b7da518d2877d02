"""stablehlo.fft on the CPU backend: a call of pocketfft or ducc0 (axle/interpreter/fft_library.py)
through a host callback.

The generated code calls one host callback with the op's key and a table of two buffer
pointers (operand, result). The callback views both buffers as numpy arrays and runs the
transform over the trailing `fft_length` dimensions, in single precision for complex64 /
float32 transforms and double precision otherwise, writing into the result buffer — the
same library calls the interpreter makes (axle/interpreter/ops_linalg.py), so the results
are the interpreter's bit for bit.

An error raised in the callback is never let through the native frames: it is kept in the
thread's error slot that kernels_collective.check_errors() re-raises after the native call
returns (the program is marked `host_callbacks`). The callback's address and the key live
in this process only, so such programs are kept out of the disk cache.
"""
from __future__ import annotations

import ctypes

import numpy as np

from axle.interpreter import fft_library
from axle.codegen.emitter import _ty
from axle.errors import Unsupported
from axle.backends.cpu.context import Context
from axle.backends.cpu.registry import kernel
from axle.backends.cpu.host_callback import HostCallback, pointer_table
from axle.ir.core import Operation

_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


def _check(op: Operation) -> None:
    it, ot = _ty(op.operands[0]), _ty(op.results[0])
    fft_type = str(op.attr("fft_type"))
    lengths = [int(n) for n in op.attr("fft_length")]
    if fft_type not in _TYPES:
        raise Unsupported(f"{op.where()}: fft_type {fft_type}")
    ok_in = ("f32", "f64") if fft_type == "RFFT" else ("complex<f32>", "complex<f64>")
    ok_out = ("f32", "f64") if fft_type == "IRFFT" else ("complex<f32>", "complex<f64>")
    if it.element_type.name not in ok_in or ot.element_type.name not in ok_out:
        raise Unsupported(f"{op.where()}: fft {fft_type} of {it.element_type} -> {ot.element_type}")
    if not 1 <= len(lengths) <= 3 or len(lengths) > it.rank:
        raise Unsupported(f"{op.where()}: fft over {len(lengths)} dimensions of a rank-{it.rank} operand")


VIEWS = 64  # buffer views kept per process (a loop's FFTs find theirs again every trip)
_views: dict = {}  # (address, shape, dtype) -> the array viewing it


def _view(ptr: int, shape, dtype) -> np.ndarray:
    """The buffer at `ptr` as an array. The views of the last VIEWS buffers are kept: a
    loop calls its FFTs on the same arena buffers every trip, and making a view (a ctypes
    type, frombuffer, reshape) cost more than a small transform. A kept view is only
    used when compiled code passes its address again, so the memory is live then."""
    key = (ptr, shape, dtype)
    v = _views.get(key)
    if v is None:
        dt = np.dtype(dtype)
        n = 1
        for d in shape:
            n *= d
        buf = (ctypes.c_char * max(n * dt.itemsize, 1)).from_address(ptr)
        v = np.frombuffer(buf, dtype=dt, count=n).reshape(shape)
        if len(_views) >= VIEWS:
            try:  # (another thread's callback may change the table meanwhile)
                _views.pop(next(iter(_views)), None)
            except (RuntimeError, StopIteration):
                pass
        _views[key] = v
    return v


def compute(fft_type: str, lengths: list, x: np.ndarray, out_shape, out_dtype) -> np.ndarray:
    """The transform of x over its trailing len(lengths) dimensions, as the interpreter does it."""
    out_shape = tuple(out_shape)
    if x.size == 0 or 0 in out_shape:
        return np.zeros(out_shape, dtype=out_dtype)
    result = fft_library.transform(fft_type, lengths, x, out_dtype, _threads(x, len(lengths)))
    if result.shape != out_shape:
        raise ValueError(f"fft result shape {result.shape}, expected {out_shape}")
    return result.astype(out_dtype, copy=False)


# Elements from which a batch of transforms runs on as many of the library's threads as axle's
# pool has (the pool's own threads wait for this call; the same values on any count). Its
# threads split each pass over an axis statically and join after it: for a [2, 256, 256]
# rfft2 in a loop (Cahn-Hilliard, 30 steps) two threads took 0.3-4 ms a call against 0.26
# on one with another process on the machine, and 2.7 against 1.4 ms a step; from 4 Mi
# elements ([4, 1024, 1024]: 32 -> 20 ms) the split pays.
THREADS_MIN_ELEMENTS = 1 << 22


def _threads(x: np.ndarray, n: int) -> int:
    if x.size < THREADS_MIN_ELEMENTS or x.ndim <= n:
        return 1
    from axle.backends.cpu.parallel import thread_count
    return max(1, thread_count())


def _route(fft_type: str, lengths: list, ishape: tuple, idt, oshape: tuple, odt):
    """`run(x, out)` writing the transform straight into `out` (the result buffer) by the
    library routine (fft_library.caller), with scipy.fft's normalization: the interpreter's
    bits, without a result array to allocate (fresh pages every call) and copy; None when
    it does not apply (the callback goes through compute). Decided once per call site: a
    loop's small transforms spent more time in the checks and views around the call than
    in the transform."""
    n = len(lengths)
    size = int(np.prod(ishape, dtype=np.int64))
    if size == 0 or int(np.prod(oshape, dtype=np.int64)) == 0:
        return None
    double = np.dtype(odt) not in (np.dtype(np.float32), np.dtype(np.complex64))
    call = fft_library.caller(fft_type, lengths, ishape, oshape, double)
    if call is None:
        return None
    workers = 1 if size < THREADS_MIN_ELEMENTS or len(ishape) <= n else None
    if fft_type == "RFFT":
        want = np.dtype(np.float64 if double else np.float32)
    else:
        want = np.dtype(np.complex128 if double else np.complex64)
    convert = np.dtype(idt) != want

    def run(x, out) -> bool:
        if convert:  # (a conversion may warn: pocketfft itself sets no flags numpy reports)
            with np.errstate(all="ignore"):
                x = x.astype(want)
        try:
            call(x, out, workers or _threads(x, n))
        except (TypeError, ValueError, RuntimeError):  # a binding that changed: the public route
            return False
        return True
    return run


def _host(plan: tuple, table) -> None:
    """plan: (fft_type, lengths, in shape/dtype, out shape/dtype, _route's function or None)."""
    fft_type, lengths, (ishape, idt), (oshape, odt), run = plan
    x = _view(table[0], ishape, idt)
    out = _view(table[1], oshape, odt)
    if run is None or not run(x, out):
        np.copyto(out, compute(fft_type, lengths, x, oshape, odt))


_CALLBACK = HostCallback(_host)  # key -> the plan (host_callback.py)


@kernel("stablehlo.fft", memory_operands=True, check=_check)
def emit_fft(ctx: Context, op: Operation) -> None:
    b = ctx.b
    ctx.cacheable = False  # the callback's address and the key live in this process only
    ctx.host_callbacks = True
    ctx.host_ops.append(op.name)
    it, ot = _ty(op.operands[0]), _ty(op.results[0])
    ctx.mark_library(fft_library.library_name(ot.element_type.bitwidth > 32 if ot.element_type.is_float
                                              else ot.element_type.bitwidth > 64))
    fft_type, lengths = str(op.attr("fft_type")), [int(n) for n in op.attr("fft_length")]
    ins, outs = (tuple(it.shape), np.dtype(it.dtype)), (tuple(ot.shape), np.dtype(ot.dtype))
    plan = (fft_type, lengths, ins, outs, _route(fft_type, lengths, *ins, *outs))
    key = _CALLBACK.register(plan)
    v = op.operands[0]
    if ctx.has_buffer(v):
        src = ctx.buffer(v)
    else:  # a constant or a fused value: write it to a scratch buffer first
        src = ctx.temp(it)
        ctx.copy(v, src)
    _CALLBACK.emit_call(b, key, pointer_table(ctx, lambda: [src, ctx.buffer(op.results[0])], size=2))
