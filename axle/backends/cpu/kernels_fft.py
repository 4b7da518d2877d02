"""stablehlo.fft on the CPU backend: a call of pocketfft (scipy.fft) through a host callback.

The generated code calls one host callback with the op's key and a table of two buffer
pointers (operand, result). The callback views both buffers as numpy arrays and runs
scipy.fft's fftn / ifftn / rfftn / irfftn over the trailing `fft_length` dimensions, in
single precision for complex64 / float32 transforms and double precision otherwise — the
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


def _view(ptr: int, shape, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    buf = (ctypes.c_char * max(n * dt.itemsize, 1)).from_address(ptr)
    return np.frombuffer(buf, dtype=dt, count=n).reshape(shape)


def compute(fft_type: str, lengths: list, x: np.ndarray, out_shape, out_dtype) -> np.ndarray:
    """The transform of x over its trailing len(lengths) dimensions, as the interpreter does it."""
    import scipy.fft
    out_shape = tuple(out_shape)
    if x.size == 0 or 0 in out_shape:
        return np.zeros(out_shape, dtype=out_dtype)
    narrow = np.dtype(out_dtype) in (np.dtype(np.float32), np.dtype(np.complex64))
    if fft_type == "RFFT":
        values = x.astype(np.float32 if narrow else np.float64, copy=False)
    else:
        values = x.astype(np.complex64 if narrow else np.complex128, copy=False)
    axes = list(range(x.ndim - len(lengths), x.ndim))
    fn = {"FFT": scipy.fft.fftn, "IFFT": scipy.fft.ifftn, "RFFT": scipy.fft.rfftn,
          "IRFFT": scipy.fft.irfftn}[fft_type]
    with np.errstate(all="ignore"):
        result = fn(values, s=lengths, axes=axes, workers=_threads(values, len(lengths)))
    if result.shape != out_shape:
        raise ValueError(f"fft result shape {result.shape}, expected {out_shape}")
    return result.astype(out_dtype, copy=False)


# Elements from which a batch of transforms runs on as many of pocketfft's threads as axle's
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


def _pocketfft():
    """scipy's pocketfft binding (what scipy.fft calls), whose functions write into a given
    `out` array; None when this SciPy does not have it."""
    try:
        from scipy.fft._pocketfft import pypocketfft
    except ImportError:
        return None
    return pypocketfft


def _into(fft_type: str, lengths: list, x: np.ndarray, out: np.ndarray) -> bool:
    """The transform written straight into `out` (the result buffer) by the routine
    scipy.fft's rfftn / fftn / ifftn / irfftn call, with their normalization: the same
    bits, without a result array of SciPy's own to allocate (fresh pages every call) and
    copy. False when it does not apply (the caller goes through compute)."""
    p = _pocketfft()
    n = len(lengths)
    if p is None or x.size == 0 or out.size == 0:
        return False
    narrow = out.dtype in (np.dtype(np.float32), np.dtype(np.complex64))
    axes = list(range(x.ndim - n, x.ndim))
    workers = _threads(x, n)
    try:
        with np.errstate(all="ignore"):
            if fft_type == "RFFT":
                if list(x.shape[-n:]) != list(lengths):
                    return False
                p.r2c(x.astype(np.float32 if narrow else np.float64, copy=False), axes=axes, forward=True,
                      inorm=0, out=out, nthreads=workers)
            elif fft_type in ("FFT", "IFFT"):
                if list(x.shape[-n:]) != list(lengths):
                    return False
                p.c2c(x.astype(np.complex64 if narrow else np.complex128, copy=False), axes=axes,
                      forward=fft_type == "FFT", inorm=0 if fft_type == "FFT" else 2, out=out, nthreads=workers)
            else:  # IRFFT
                if list(out.shape[-n:]) != list(lengths) or x.shape[-1] != lengths[-1] // 2 + 1 \
                        or list(x.shape[-n:-1]) != list(lengths[:-1]):
                    return False
                p.c2r(x.astype(np.complex64 if narrow else np.complex128, copy=False), axes=axes,
                      lastsize=lengths[-1], forward=False, inorm=2, out=out, nthreads=workers)
    except (TypeError, ValueError, RuntimeError):  # a binding that changed: the public route
        return False
    return True


def _host(plan: tuple, table) -> None:
    """plan: (fft_type, lengths, in shape/dtype, out shape/dtype)."""
    fft_type, lengths, (ishape, idt), (oshape, odt) = plan
    x = _view(table[0], ishape, idt)
    out = _view(table[1], oshape, odt)
    if not _into(fft_type, lengths, x, out):
        np.copyto(out, compute(fft_type, lengths, x, oshape, odt))


_CALLBACK = HostCallback(_host)  # key -> the plan (host_callback.py)


@kernel("stablehlo.fft", memory_operands=True, check=_check)
def emit_fft(ctx: Context, op: Operation) -> None:
    b = ctx.b
    ctx.cacheable = False  # the callback's address and the key live in this process only
    ctx.host_callbacks = True
    ctx.host_ops.append(op.name)
    ctx.mark_library("pocketfft")
    it, ot = _ty(op.operands[0]), _ty(op.results[0])
    plan = (str(op.attr("fft_type")), [int(n) for n in op.attr("fft_length")],
            (tuple(it.shape), np.dtype(it.dtype)), (tuple(ot.shape), np.dtype(ot.dtype)))
    key = _CALLBACK.register(plan)
    v = op.operands[0]
    if ctx.has_buffer(v):
        src = ctx.buffer(v)
    else:  # a constant or a fused value: write it to a scratch buffer first
        src = ctx.temp(it)
        ctx.copy(v, src)
    _CALLBACK.emit_call(b, key, pointer_table(ctx, lambda: [src, ctx.buffer(op.results[0])], size=2))
