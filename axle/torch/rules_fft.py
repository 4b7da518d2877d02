"""Complex tensors and FFTs: _fft_r2c / _fft_c2r / _fft_c2c (torch.fft's ops over any list
of dimensions and normalization), view_as_real / view_as_complex, conj, real / imag,
complex, abs and angle of complex values.

StableHLO's fft transforms the trailing dimensions: the transformed ones are moved last
(in order) and moved back. Its inverse transforms (IFFT, IRFFT) divide by the signal size;
torch's normalization modes (0: none, 1: 1 / sqrt(n), 2: 1 / n) apply to either direction,
so an inverse is rescaled by n or sqrt(n) where torch does not divide."""
from __future__ import annotations

import math

from axle.torch.dtypes import COMPLEX
from axle.torch.registry import Unsupported, V, aten, dim, rule, shape_of

_COMPLEX_OF = {"f32": "complex<f32>", "f64": "complex<f64>", "f16": "complex<f32>", "bf16": "complex<f32>"}


def _part(em, x: V, which: str) -> V:
    return em.op(f"stablehlo.{which}", [x], x.shape, COMPLEX[x.dtype])


def _make(em, re: V, im: V) -> V:
    return em.op("stablehlo.complex", [re, im], re.shape, _COMPLEX_OF[re.dtype])


def _fft(em, x: V, dims: list, kind: str, lengths: list, out_shape, out_dtype: str) -> V:
    """stablehlo.fft of kind over `dims` (moved last, in order, then back)."""
    dims = [dim(d, x.rank) for d in dims]
    rest = [d for d in range(x.rank) if d not in dims]
    perm = rest + dims
    xt = x if perm == list(range(x.rank)) else em.transpose(x, perm)
    shape_t = [out_shape[d] for d in perm]
    y = em.op("stablehlo.fft", [xt], shape_t, out_dtype,
              f"fft_type = #stablehlo<fft_type {kind}>, fft_length = array<i64: {', '.join(map(str, lengths))}>")
    if perm == list(range(x.rank)):
        return y
    return em.transpose(y, [perm.index(d) for d in range(x.rank)])


def _scale(em, y: V, factor: float) -> V:
    if factor == 1:
        return y
    return em.binary("multiply", y, em.const(factor, y.dtype, y.shape))


def _norm(mode: int, n: int, inverse: bool) -> float:
    """The factor torch applies (mode 0: none, 1: 1 / sqrt(n), 2: 1 / n), relative to what
    StableHLO gives (its inverses already divide by n)."""
    want = {0: 1.0, 1: 1 / math.sqrt(n), 2: 1 / n}[mode]
    return want * n if inverse else want


@rule(aten._fft_r2c.default)
def _r2c(em, out, x, dims, normalization, onesided):
    dims = [dim(d, x.rank) for d in dims]
    n = math.prod(x.shape[d] for d in dims)
    if onesided:
        y = _fft(em, x, dims, "RFFT", [x.shape[d] for d in dims], shape_of(out), out[1])
    else:
        xc = em.convert(x, out[1])
        y = _fft(em, xc, dims, "FFT", [x.shape[d] for d in dims], shape_of(out), out[1])
    return _scale(em, y, _norm(normalization, n, False))


@rule(aten._fft_c2r.default)
def _c2r(em, out, x, dims, normalization, last_dim_size):
    dims = [dim(d, x.rank) for d in dims]
    shape = shape_of(out)
    lengths = [shape[d] for d in dims]
    if x.shape[dims[-1]] < last_dim_size // 2 + 1:
        raise Unsupported("_fft_c2r with fewer input frequencies than the output needs")
    if x.shape[dims[-1]] != last_dim_size // 2 + 1:  # the frequencies the inverse reads
        limit = list(x.shape)
        limit[dims[-1]] = last_dim_size // 2 + 1
        x = em.slice(x, [0] * x.rank, limit, [1] * x.rank)
    y = _fft(em, x, dims, "IRFFT", lengths, shape, out[1])
    return _scale(em, y, _norm(normalization, math.prod(lengths), True))


@rule(aten._fft_c2c.default)
def _c2c(em, out, x, dims, normalization, forward):
    dims = [dim(d, x.rank) for d in dims]
    n = math.prod(x.shape[d] for d in dims)
    y = _fft(em, x, dims, "FFT" if forward else "IFFT", [x.shape[d] for d in dims], x.shape, out[1])
    return _scale(em, y, _norm(normalization, n, not forward))


@rule(aten.view_as_real.default)
def _view_as_real(em, out, x):
    parts = [em.reshape(_part(em, x, p), tuple(x.shape) + (1,)) for p in ("real", "imag")]
    return em.concat(parts, x.rank)


@rule(aten.view_as_complex.default)
def _view_as_complex(em, out, x):
    lead = list(x.shape[:-1])
    re = em.reshape(em.slice(x, [0] * x.rank, lead + [1], [1] * x.rank), tuple(lead))
    im = em.reshape(em.slice(x, [0] * (x.rank - 1) + [1], lead + [2], [1] * x.rank), tuple(lead))
    return _make(em, re, im)


@rule(aten._conj.default, aten.conj_physical.default, aten._conj_physical.default)
def _conj(em, out, x):
    if not isinstance(x, V):  # a Python number
        return x.conjugate() if isinstance(x, complex) else x
    if x.dtype not in COMPLEX:
        return x
    return _make(em, _part(em, x, "real"), em.unary("negate", _part(em, x, "imag")))


@rule(aten.real.default)
def _real(em, out, x):
    return _part(em, x, "real") if x.dtype in COMPLEX else x


@rule(aten.imag.default)
def _imag(em, out, x):
    return _part(em, x, "imag")


@rule(aten.complex.default)
def _complex(em, out, re, im):
    part = COMPLEX[out[1]]
    return _make(em, em.convert(re, part), em.convert(im, part))


@rule(aten.angle.default)
def _angle(em, out, x):
    if x.dtype not in COMPLEX:
        raise Unsupported("angle of a real tensor")
    return em.op("stablehlo.atan2", [_part(em, x, "imag"), _part(em, x, "real")], x.shape, COMPLEX[x.dtype])
