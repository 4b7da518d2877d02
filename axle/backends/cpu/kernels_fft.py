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
    if "pocketfft" not in _BINDING:
        try:
            from scipy.fft._pocketfft import pypocketfft
        except ImportError:
            pypocketfft = None
        _BINDING["pocketfft"] = pypocketfft
    return _BINDING["pocketfft"]


_BINDING: dict = {}


def _route(fft_type: str, lengths: list, ishape: tuple, idt, oshape: tuple, odt):
    """`run(x, out)` writing the transform straight into `out` (the result buffer) by the
    routine scipy.fft's rfftn / fftn / ifftn / irfftn call, with their normalization: the
    same bits, without a result array of SciPy's own to allocate (fresh pages every call)
    and copy; None when it does not apply (the callback goes through compute). Decided
    once per call site: a loop's small transforms spent more time in the checks and
    views around the call than in pocketfft."""
    p = _pocketfft()
    n = len(lengths)
    size = int(np.prod(ishape, dtype=np.int64))
    if p is None or size == 0 or int(np.prod(oshape, dtype=np.int64)) == 0:
        return None
    narrow = np.dtype(odt) in (np.dtype(np.float32), np.dtype(np.complex64))
    axes = list(range(len(ishape) - n, len(ishape)))
    workers = 1 if size < THREADS_MIN_ELEMENTS or len(ishape) <= n else None
    if fft_type == "RFFT":
        want = np.dtype(np.float32 if narrow else np.float64)
        if list(ishape[-n:]) != list(lengths):
            return None
        call = lambda x, out, w: p.r2c(x, axes=axes, forward=True, inorm=0, out=out, nthreads=w)  # noqa: E731
    elif fft_type in ("FFT", "IFFT"):
        want = np.dtype(np.complex64 if narrow else np.complex128)
        if list(ishape[-n:]) != list(lengths):
            return None
        fwd, norm = fft_type == "FFT", 0 if fft_type == "FFT" else 2
        call = lambda x, out, w: p.c2c(x, axes=axes, forward=fwd, inorm=norm, out=out, nthreads=w)  # noqa: E731
    else:  # IRFFT
        want = np.dtype(np.complex64 if narrow else np.complex128)
        if list(oshape[-n:]) != list(lengths) or ishape[-1] != lengths[-1] // 2 + 1 \
                or list(ishape[-n:-1]) != list(lengths[:-1]):
            return None
        last = lengths[-1]
        call = lambda x, out, w: p.c2r(x, axes=axes, lastsize=last, forward=False, inorm=2,  # noqa: E731
                                       out=out, nthreads=w)
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
    ctx.mark_library("pocketfft")
    it, ot = _ty(op.operands[0]), _ty(op.results[0])
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
