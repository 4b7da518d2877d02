"""The FFT library behind stablehlo.fft, one for the interpreter and the CPU backend alike (so
a compiled program's transforms are the interpreter's bit for bit).

Both candidates are Martin Reinecke's libraries, with one Python API (c2c, r2c, c2r writing
into `out`, normalization by `inorm`, `nthreads`):
* SciPy's pocketfft (scipy.fft._pocketfft.pypocketfft), always there with SciPy;
* ducc0.fft, pocketfft's successor and what XLA's CPU runtime calls, when it is installed.
Which one runs depends on the precision. On a Zen 4 core, one thread, the transforms in
64-bit (float64 / complex128) ran 1.3-2.1x faster in ducc0 (c2c of 256 x 256: 516 ->
279 us; a [64, 4096] c2c along axis 0: 1147 -> 539 us; r2c of [64, 1024]: 117 -> 85 us):
SciPy's build vectorizes doubles two to a register. In 32-bit ducc0 was 0.65-1.09x (r2c of
[64, 1024]: 80 -> 122 us), so those stay with pocketfft. Without either binding (a SciPy
that moved it), the public scipy.fft functions do the same transforms.
"""
from __future__ import annotations

import numpy as np

_BINDINGS: dict = {}
_NARROW = (np.dtype(np.float32), np.dtype(np.complex64))


def binding(double: bool):
    """The module whose c2c / r2c / c2r run transforms in 64-bit (double) or 32-bit
    precision, or None when neither library's binding imports."""
    if double not in _BINDINGS:
        mod = None
        if double:
            try:
                import ducc0.fft as mod
            except ImportError:
                mod = None
        if mod is None:
            try:
                from scipy.fft._pocketfft import pypocketfft as mod
            except ImportError:
                mod = None
        _BINDINGS[double] = mod
    return _BINDINGS[double]


def library_name(double: bool) -> str:
    mod = binding(double)
    return "ducc0" if mod is not None and mod.__name__.startswith("ducc0") else "pocketfft"


def caller(fft_type: str, lengths: list, ishape: tuple, oshape: tuple, double: bool):
    """`call(x, out, nthreads)` writing the transform of x (already in the precision's input
    dtype) over its trailing len(lengths) dimensions into `out`, with scipy.fft's default
    normalization (1/n on the inverse transforms); None when the shapes are not those the
    op's lengths give (the caller reports) or no binding imports."""
    p = binding(double)
    n = len(lengths)
    if p is None or len(ishape) < n:
        return None
    axes = list(range(len(ishape) - n, len(ishape)))
    if fft_type in ("FFT", "IFFT", "RFFT"):
        if list(ishape[-n:]) != list(lengths):
            return None
        if fft_type == "RFFT":
            return lambda x, out, w: p.r2c(x, axes=axes, forward=True, inorm=0, out=out, nthreads=w)
        fwd, norm = fft_type == "FFT", 0 if fft_type == "FFT" else 2
        return lambda x, out, w: p.c2c(x, axes=axes, forward=fwd, inorm=norm, out=out, nthreads=w)
    if fft_type != "IRFFT" or list(oshape[-n:]) != list(lengths) or ishape[-1] != lengths[-1] // 2 + 1 \
            or list(ishape[-n:-1]) != list(lengths[:-1]):
        return None
    last = lengths[-1]
    return lambda x, out, w: p.c2r(x, axes=axes, lastsize=last, forward=False, inorm=2, out=out, nthreads=w)


def transform(fft_type: str, lengths: list, x: np.ndarray, out_dtype, nthreads: int = 1) -> np.ndarray:
    """The transform of x over its trailing len(lengths) dimensions, in single precision when
    out_dtype is float32 / complex64 and double otherwise, as a new array of the precision's
    dtype (complex for FFT / IFFT / RFFT, real for IRFFT)."""
    double = np.dtype(out_dtype) not in _NARROW
    real_in = fft_type == "RFFT"
    in_dtype = (np.float64 if double else np.float32) if real_in else (np.complex128 if double else np.complex64)
    values = np.ascontiguousarray(x, dtype=in_dtype)
    n = len(lengths)
    if fft_type == "RFFT":
        shape = (*x.shape[:-1], lengths[-1] // 2 + 1)
    elif fft_type == "IRFFT":
        shape = (*x.shape[:-1], lengths[-1])
    else:
        shape = tuple(x.shape)
    out_kind = (np.float64 if double else np.float32) if fft_type == "IRFFT" else (np.complex128 if double else np.complex64)
    call = caller(fft_type, lengths, values.shape, shape, double)
    with np.errstate(all="ignore"):
        if call is not None:
            out = np.empty(shape, dtype=out_kind)
            call(values, out, nthreads)
            return out
        import scipy.fft
        fn = {"FFT": scipy.fft.fftn, "IFFT": scipy.fft.ifftn, "RFFT": scipy.fft.rfftn,
              "IRFFT": scipy.fft.irfftn}[fft_type]
        return np.asarray(fn(values, s=lengths, axes=list(range(x.ndim - n, x.ndim)), workers=nthreads))
