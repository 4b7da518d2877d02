"""The CPU backend's vectorizable f32 transcendentals (axle/codegen/fastmath.py), compiled
through the real backend and checked against float64 references rounded to the result type:
ulp distance over sweeps of the whole f32 range and dense sweeps where the approximations
switch, exact results for special values, every f16/bf16 value, and vectorized loops."""
import re

import ml_dtypes
import numpy as np
import pytest
import scipy.special as sp

import axle

N = 1 << 21

# op -> (float64 reference, max ulp distance from the f32-rounded reference, dense range)
FUNCS = {
    "stablehlo.exponential": (np.exp, 1, (-105.0, 90.0)),
    "stablehlo.exponential_minus_one": (np.expm1, 2, (-20.0, 90.0)),
    "stablehlo.log": (np.log, 2, (0.0, 4.0)),
    "stablehlo.log_plus_one": (np.log1p, 2, (-1.0, 4.0)),
    "stablehlo.tanh": (np.tanh, 2, (-10.0, 10.0)),
    "stablehlo.logistic": (sp.expit, 2, (-105.0, 30.0)),
    "chlo.erf": (sp.erf, 2, (-4.5, 4.5)),
    "chlo.erfc": (sp.erfc, 1, (-4.0, 10.5)),
    "stablehlo.sine": (np.sin, 1, (-30.0, 30.0)),
    "stablehlo.cosine": (np.cos, 1, (-30.0, 30.0)),
    # f32 only (f16 / bf16 keep the f64 iteration of scalar_special.py, also checked here)
    # (odd: -0 -> -0, where scipy's erfinv gives +0)
    "chlo.erf_inv": (lambda x: np.copysign(sp.erfinv(x), x), 1, (-1.0, 1.0)),
    # (odd as well; f32 only, polynomials in f64 where the f64 function loops; for tiny x
    # i1e(x) = x/2 (1 - |x| + ...) is just below x/2, where scipy's is just above: a
    # denormal x/2 rounds the other way at the ties)
    "chlo.bessel_i1e": (lambda x: np.copysign(np.where(np.abs(x) < 1e-30, np.abs(x) / 2 * (1 - 2.0 ** -52),
                                                       sp.i1e(np.abs(x))), x), 1, (-40.0, 40.0)),
}

F32 = np.finfo(np.float32)
SPECIALS = np.array([
    0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0,
    F32.tiny, -F32.tiny, F32.smallest_subnormal, -F32.smallest_subnormal, 3 * F32.smallest_subnormal,
    F32.tiny / 3, -F32.tiny / 3, F32.max, -F32.max, F32.eps, -F32.eps, 1e-30, -1e-30, 1e-8, -1e-8,
    # exp / expm1 / logistic: overflow, the last normal and the last denormal results
    88.72283, 88.72284, 88.7, 89.0, -87.33654, -87.33655, -103.27893, -103.972, -103.973, -104.0, -1e9,
    -17.33, -17.34, 0.3465736, -0.3465736, 0.35, -0.35,
    # log / log1p: the reduction's boundaries, -1 and below
    0.70710677, 0.7071068, 1.4142135, 1.4142137, -0.9999999, -1.0000001, -0.29289323, 0.41421357,
    16777216.0, 33554432.0, 1e30,
    # erf_inv: the switch to (1 - x)(1 + x), the switch of polynomial (w = 5), next to +-1
    0.50000006, 0.49999997, 0.99662, 0.99663, 0.9966306, 0.99999994, -0.99999994, 0.9999999, 1.0000001,
    # tanh / erf: where the approximations switch and where they saturate
    0.625, -0.625, 0.62499994, 0.875, -0.875, 0.87499994, 3.92, 3.9192059, 4.0, 9.01, 9.1, 10.0, 20.0,
    # erfc: the last normal and the last denormal results, the clamp
    9.194, 9.195, 10.05, 10.06, 10.07, 10.2, 10.200001, -9.5, -10.3,
    # bessel_i1e: where the polynomials switch
    8.0, -8.0, 7.9999995, 8.000001, 30.0, 1e4, -1e4,
], dtype=np.float32)


def _text(op, n, ty="f32"):
    t = f"tensor<{n}x{ty}>"
    return f"func.func @main(%x: {t}) -> {t} {{ %0 = {op} %x : {t} return %0 : {t} }}"


def _points(lo, hi):
    """N inputs: strided bit patterns over the whole f32 range (both signs, denormals, inf,
    NaN), a dense sweep of [lo, hi], and the special values."""
    k = N // 2
    strided = (np.arange(k, dtype=np.uint64) * ((1 << 32) // k + 1) % (1 << 32)).astype(np.uint32).view(np.float32)
    dense = np.linspace(lo, hi, N - k - SPECIALS.size, dtype=np.float32)
    return np.concatenate([strided, dense, SPECIALS])


def _ordered(a):
    """f32 -> integers in the order of the values (so ulp distance is a difference)."""
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def _ulp_distance(got, want):
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    d = np.abs(_ordered(got) - _ordered(want))
    # non-finite expected values and zeros (signed) must be matched exactly
    exact = ~np.isfinite(want) | ~np.isfinite(got) | (want == 0) | (got == 0)
    return np.where(same, 0, np.where(exact, np.iinfo(np.int64).max, d))


@pytest.mark.parametrize("op", list(FUNCS))
def test_f32_ulp_error(op):
    ref, max_ulp, (lo, hi) = FUNCS[op]
    x = _points(lo, hi)
    got = axle.compile(_text(op, x.size), backend="cpu")(x)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64)).astype(np.float32)
    d = _ulp_distance(got, want)
    i = int(np.argmax(d))
    assert d[i] <= max_ulp, f"{op}({x[i]!r}) = {got[i]!r}, want {want[i]!r} ({d[i]} ulp)"


@pytest.mark.parametrize("op", list(FUNCS))
def test_special_values_exactly(op):
    ref = FUNCS[op][0]
    got = axle.compile(_text(op, SPECIALS.size), backend="cpu")(SPECIALS)
    with np.errstate(all="ignore"):
        want = ref(SPECIALS.astype(np.float64)).astype(np.float32)
    nan = np.isnan(want)
    assert np.isnan(got[nan]).all()
    for g, w, x in zip(got[~nan], want[~nan], SPECIALS[~nan]):
        if w == 0 or not np.isfinite(w):  # +-0, +-inf: bit-exact
            assert g == w and np.signbit(g) == np.signbit(w), f"{op}({x!r}) = {g!r}, want {w!r}"


@pytest.mark.parametrize("ty,dtype", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
@pytest.mark.parametrize("op", list(FUNCS))
def test_every_half_precision_value(op, ty, dtype):
    """f16 and bf16 compute in f32 and round once: within 1 ulp of the narrow type."""
    ref = FUNCS[op][0]
    x = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    got = axle.compile(_text(op, x.size, ty), backend="cpu")(x)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64)).astype(dtype)
    g, w = got.astype(np.float32), want.astype(np.float32)
    same = (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
    bits = lambda a: np.where(a.view(np.int16) < 0, -(a.view(np.uint16).astype(np.int64) & 0x7FFF),
                              a.view(np.uint16).astype(np.int64))
    close = np.isfinite(w) & np.isfinite(g) & (np.abs(bits(got) - bits(want)) <= 1) & (g != 0) & (w != 0)
    bad = ~(same | close)
    assert not bad.any(), f"{op} {ty}: {x[bad][:5]} -> {got[bad][:5]}, want {want[bad][:5]}"


@pytest.mark.parametrize("op", list(FUNCS))
def test_loop_is_vectorized_without_libm_calls(op):
    n = 4096
    exe = axle.compile(_text(op, n), backend="cpu")
    exe(np.linspace(-3, 3, n, dtype=np.float32))
    ir = exe._native(((n,),)).optimized_ir
    assert re.search(r"<(4|8|16) x float>", ir), "the loop did not vectorize"
    called = set(re.findall(r"call [^@]*@([\w.$]+)", ir))
    libm = {"expf", "expm1f", "logf", "log1pf", "tanhf", "erff", "erfcf", "erfc", "sinf", "cosf", "llvm.sin.f32", "llvm.cos.f32", "llvm.exp.f32", "llvm.log.f32"}
    assert not called & libm, f"calls {called & libm}"


def test_fused_chain_vectorizes_and_matches():
    """A GELU-like chain (erf, tanh, logistic, exp, log1p fused in one loop)."""
    n = 1 << 16
    t = f"tensor<{n}xf32>"
    text = f"""func.func @main(%x: {t}) -> {t} {{
  %a = chlo.erf %x : {t} -> {t}
  %b = stablehlo.tanh %x : {t}
  %c = stablehlo.logistic %x : {t}
  %d = stablehlo.exponential %x : {t}
  %e = stablehlo.log_plus_one %d : {t}
  %s1 = stablehlo.add %a, %b : {t}
  %s2 = stablehlo.multiply %s1, %c : {t}
  %s3 = stablehlo.subtract %s2, %e : {t}
  return %s3 : {t}
}}"""
    x = np.linspace(-8, 8, n, dtype=np.float32)
    exe = axle.compile(text, backend="cpu")
    got = exe(x)
    x64 = x.astype(np.float64)
    want = (sp.erf(x64) + np.tanh(x64)) * sp.expit(x64) - np.log1p(np.exp(x64))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    ir = exe._native(((n,),)).optimized_ir
    assert re.search(r"<(4|8|16) x float>", ir)


@pytest.mark.parametrize("op", ["stablehlo.exponential", "stablehlo.log_plus_one", "stablehlo.tanh"])
def test_f64_keeps_libm_accuracy(op):
    ref = FUNCS[op][0]
    x = np.linspace(-0.99, 30, 10001)
    got = axle.compile(_text(op, x.size, "f64"), backend="cpu")(x)
    np.testing.assert_allclose(got, ref(x), rtol=4e-16, atol=0)


def _pow_text(n, ty="f32"):
    t = f"tensor<{n}x{ty}>"
    return f"func.func @main(%x: {t}, %y: {t}) -> {t} {{ %0 = stablehlo.power %x, %y : {t} return %0 : {t} }}"


def test_power_f32_ulp_error():
    """pow computes log2 and exp2 in f64: within 1 ulp over random bit patterns, results
    across the whole range (denormals and overflow included), x near 1 with large y, and
    negative x with integer y."""
    rng = np.random.default_rng(7)
    k = N // 4
    bits = lambda: rng.integers(0, 1 << 32, k, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x1 = rng.uniform(0, 100, k).astype(np.float32)
    y1 = (rng.uniform(-160, 160, k) / np.maximum(np.abs(np.log2(x1.astype(np.float64))), 1e-3)).astype(np.float32)
    x2 = (1 + rng.uniform(-1e-3, 1e-3, k)).astype(np.float32)
    y2 = rng.uniform(-1e5, 1e5, k).astype(np.float32)
    x3 = rng.uniform(-10, 10, k).astype(np.float32)
    y3 = rng.integers(-40, 40, k).astype(np.float32)
    x = np.concatenate([bits(), x1, x2, x3])
    y = np.concatenate([bits(), y1, y2, y3])
    got = axle.compile(_pow_text(x.size), backend="cpu")(x, y)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    d = _ulp_distance(got, want)
    i = int(np.argmax(d))
    assert d[i] <= 1, f"pow({x[i]!r}, {y[i]!r}) = {got[i]!r}, want {want[i]!r} ({d[i]} ulp)"


def test_power_special_values_like_the_c_library():
    sp_ = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0,
                    F32.smallest_subnormal, -F32.smallest_subnormal, F32.max, 0.3, -7.5, 2.0**25, -(2.0**25) - 2],
                   dtype=np.float32)
    x, y = (a.ravel() for a in np.meshgrid(sp_, sp_))
    got = axle.compile(_pow_text(x.size), backend="cpu")(x, y)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    assert (_ulp_distance(got, want) <= 1).all(), [(a, b, g, w) for a, b, g, w in zip(x, y, got, want)
                                                   if _ulp_distance(np.array([g]), np.array([w]))[0] > 1]


@pytest.mark.parametrize("ty,dtype", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
def test_power_half_precision(ty, dtype):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 1 << 16, 1 << 16, dtype=np.uint32).astype(np.uint16).view(dtype)
    y = rng.uniform(-6, 6, 1 << 16).astype(dtype)
    got = axle.compile(_pow_text(x.size, ty), backend="cpu")(x, y)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(dtype)
    g, w = got.astype(np.float32), want.astype(np.float32)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    with np.errstate(all="ignore"):  # one ulp of the narrow type
        close = np.isfinite(w) & (np.abs(g - w) <= np.abs(w) * 2.0 ** -(10 if ty == "f16" else 7))
    assert (same | close).all()


def test_power_loop_is_vectorized():
    n = 4096
    exe = axle.compile(_pow_text(n), backend="cpu")
    exe(np.ones(n, np.float32), np.ones(n, np.float32))
    ir = exe._native(((n,), (n,))).optimized_ir
    assert re.search(r"<(4|8|16) x (float|double)>", ir)
    assert not set(re.findall(r"call [^@]*@([\w.$]+)", ir)) & {"powf", "llvm.pow.f32", "pow"}


def _atan2_text(n, ty="f32"):
    t = f"tensor<{n}x{ty}>"
    return f"func.func @main(%y: {t}, %x: {t}) -> {t} {{ %0 = stablehlo.atan2 %y, %x : {t} return %0 : {t} }}"


def test_atan2_f32_ulp_error_and_special_values():
    """atan2 computes in f64 and rounds once: within 1 ulp of the f32-rounded reference over
    random bit patterns (both operands), values of every magnitude, and where the reduction
    switches (|y| / |x| near tan(pi/8) and 1); the C library's results for every pair of
    zeros, infinities, NaN, denormals and ones of both signs, signed zeros included."""
    rng = np.random.default_rng(11)
    k = N // 4
    bits = lambda: rng.integers(0, 1 << 32, k, dtype=np.uint64).astype(np.uint32).view(np.float32)
    mag = lambda: (rng.standard_normal(k) * 10.0 ** rng.integers(-30, 30, k)).astype(np.float32)
    x3 = rng.uniform(-5, 5, k).astype(np.float32)
    y3 = (x3 * rng.choice([0.41421356, 1.0, 2.4142135, -1.0], k) * (1 + rng.uniform(-1e-6, 1e-6, k))).astype(np.float32)
    sp_ = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, F32.smallest_subnormal,
                    -F32.smallest_subnormal, F32.max, -F32.max], dtype=np.float32)
    ys, xs = (a.ravel() for a in np.meshgrid(sp_, sp_))
    y = np.concatenate([bits(), mag(), y3, ys])
    x = np.concatenate([bits(), mag(), x3, xs])
    got = axle.compile(_atan2_text(x.size), backend="cpu")(y, x)
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(np.float32)
    d = _ulp_distance(got, want)
    i = int(np.argmax(d))
    assert d[i] <= 1, f"atan2({y[i]!r}, {x[i]!r}) = {got[i]!r}, want {want[i]!r} ({d[i]} ulp)"


@pytest.mark.parametrize("ty,dtype", [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
def test_atan2_half_precision(ty, dtype):
    rng = np.random.default_rng(5)
    y = rng.integers(0, 1 << 16, 1 << 16, dtype=np.uint32).astype(np.uint16).view(dtype)
    x = rng.permutation(np.arange(1 << 16, dtype=np.uint16)).view(dtype)
    got = axle.compile(_atan2_text(x.size, ty), backend="cpu")(y, x)
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(dtype)
    g, w = got.astype(np.float32), want.astype(np.float32)
    same = (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
    close = np.isfinite(w) & (np.abs(g - w) <= np.abs(w) * 2.0 ** -(10 if ty == "f16" else 7))
    assert (same | close).all()


def test_atan2_loop_is_vectorized():
    n = 4096
    exe = axle.compile(_atan2_text(n), backend="cpu")
    exe(np.ones(n, np.float32), np.ones(n, np.float32))
    ir = exe._native(((n,), (n,))).optimized_ir
    assert re.search(r"<(4|8|16) x (float|double)>", ir)
    assert not set(re.findall(r"call [^@]*@([\w.$]+)", ir)) & {"atan2f", "atan2"}


@pytest.mark.parametrize("op", ["stablehlo.atan2", "stablehlo.power", "stablehlo.sine", "chlo.erfc"])
def test_f64_evaluated_f32_result_converted_to_f16(op):
    """An f32 result computed in f64, converted to f16 in the same loop (PyTorch's f16 ops
    run in f32): LLVM must not merge the two roundings into an f64 -> f16 truncation (a
    runtime call the JIT cannot resolve)."""
    two = op in ("stablehlo.atan2", "stablehlo.power")
    t = f"""func.func @main(%x: tensor<64xf16>) -> tensor<64xf16> {{
  %y = stablehlo.convert %x : (tensor<64xf16>) -> tensor<64xf32>
  %0 = {op} {"%y, %y" if two else "%y"} : tensor<64xf32>
  %1 = stablehlo.convert %0 : (tensor<64xf32>) -> tensor<64xf16>
  return %1 : tensor<64xf16>
}}"""
    x = np.linspace(0.1, 3, 64, dtype=np.float16)
    got = axle.compile(t, backend="cpu")(x)
    xd = x.astype(np.float64)
    ref = {"stablehlo.atan2": np.arctan2(xd, xd), "stablehlo.power": xd ** xd, "stablehlo.sine": np.sin(xd),
           "chlo.erfc": sp.erfc(xd)}[op]
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=2e-3, atol=1e-4)


def test_complex64_exp_within_one_ulp_and_c99_special_values():
    """complex<f32> exp is exp(re) in f64 times fastmath's cos and sin (vectorized): each
    part within 1 ulp of numpy's complex128 exp rounded to complex64, and the C99 special
    values (signed zeros, infinities, NaN in either part) exactly as numpy gives them."""
    rng = np.random.default_rng(9)
    n = 1 << 18
    r = np.concatenate([rng.uniform(-100, 100, n), rng.standard_normal(n)]).astype(np.float32)
    i = np.concatenate([rng.uniform(-1e4, 1e4, n), rng.standard_normal(n) * 10.0 ** rng.integers(-10, 6, n)])
    sp_ = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 88.0, 89.0, -104.0], np.float32)
    a, b = (m.ravel() for m in np.meshgrid(sp_, sp_))
    z = np.empty(2 * n + a.size, np.complex64)
    z.real = np.concatenate([r, a])
    z.imag = np.concatenate([i.astype(np.float32), b])
    t = f"tensor<{z.size}xcomplex<f32>>"
    got = axle.compile(f"func.func @main(%z: {t}) -> {t} {{ %0 = stablehlo.exponential %z : {t} "
                       f"return %0 : {t} }}", backend="cpu")(z)
    with np.errstate(all="ignore"):
        want = np.exp(z.astype(np.complex128)).astype(np.complex64)
    for part in ("real", "imag"):
        d = _ulp_distance(getattr(got, part).copy(), getattr(want, part).copy())
        k = int(np.argmax(d))
        assert d[k] <= 1, f"exp({z[k]!r}).{part} = {getattr(got, part)[k]!r}, want {getattr(want, part)[k]!r}"


def _unary(op, x, ty="f32"):
    return axle.compile(_text(op, x.size, ty), backend="cpu")(x)


def _lgamma_points():
    k = N // 4
    strided = (np.arange(k, dtype=np.uint64) * ((1 << 32) // k + 1) % (1 << 32)).astype(np.uint32).view(np.float32)
    dense = np.linspace(-10, 12, k, dtype=np.float32)
    rng = np.random.default_rng(2)
    near = np.concatenate([1 + rng.uniform(-1e-3, 1e-3, 4096), 2 + rng.uniform(-1e-3, 1e-3, 4096)]).astype(np.float32)
    return np.concatenate([strided, dense, near])


def test_lgamma_f32_accuracy_and_special_values():
    """lgamma in f64 (shift to 8, Stirling, reflection below 1/2; atanh-series logs):
    within 2 ulp of scipy's gammaln for x > 0 (the zeros at 1 and 2 included: exactly 0
    there, 2 ulp next to them), within 8 ulp for x < 0 away from lgamma's own zeros (where
    the reflection cancels); +inf at the poles and at +-inf (the C library's), NaN at NaN."""
    x = _lgamma_points()
    got = _unary("chlo.lgamma", x)
    want64 = sp.gammaln(x.astype(np.float64))
    with np.errstate(over="ignore"):
        want = want64.astype(np.float32)
    fin = np.isfinite(want) & (np.abs(want) > 1e-3)
    ulps = np.abs(got[fin].astype(np.float64) - want64[fin]) / np.spacing(np.abs(want[fin])).astype(np.float64)
    pos = x[fin] > 0
    assert ulps[pos].max() <= 2 and ulps[~pos].max() <= 8, (ulps[pos].max(), ulps[~pos].max())
    near = (np.abs(want) <= 1e-3) & (x > 0)
    np.testing.assert_allclose(got[near], want64[near], rtol=3e-7, atol=0)
    spc = np.array([0.0, -0.0, -1.0, -2.0, -3e9, np.inf, -np.inf, np.nan, 1.0, 2.0], np.float32)
    got = _unary("chlo.lgamma", spc)
    assert (got[:7] == np.inf).all() and np.isnan(got[7]) and (got[8:] == 0).all()


def test_digamma_f32_matches_the_f64_implementation():
    """digamma of f32 (vectorized, in f64, the loop's steps unrolled) against the f64
    implementation rounded: within 1 ulp for x > 0, 16 for x < 0 (the reflection's cot
    cancels next to psi's zeros); NaN at the poles and -inf, inf at inf."""
    x = _lgamma_points()
    got = _unary("chlo.digamma", x)
    ref = _unary("chlo.digamma", x.astype(np.float64), "f64")
    with np.errstate(over="ignore", invalid="ignore"):
        want = ref.astype(np.float32)
    assert (np.isnan(got) == np.isnan(want)).all()
    fin = np.isfinite(want) & (np.abs(want) > 1e-3)
    ulps = np.abs(got[fin].astype(np.float64) - ref[fin]) / np.spacing(np.abs(want[fin])).astype(np.float64)
    pos = x[fin] > 0
    assert ulps[pos].max() <= 1 and ulps[~pos].max() <= 16, (ulps[pos].max(), ulps[~pos].max())
    spc = np.array([0.0, -1.0, -4.0, -np.inf, np.inf, np.nan], np.float32)
    got = _unary("chlo.digamma", spc)
    assert np.isnan(got[[0, 1, 2, 3, 5]]).all() and got[4] == np.inf


@pytest.mark.parametrize("op", ["chlo.lgamma", "chlo.digamma"])
def test_gamma_functions_vectorize(op):
    n = 4096
    exe = axle.compile(_text(op, n), backend="cpu")
    exe(np.linspace(0.5, 3, n, dtype=np.float32))
    ir = exe._native(((n,),)).optimized_ir
    assert re.search(r"<(4|8|16) x (float|double)>", ir)
    assert not set(re.findall(r"call [^@]*@([\w.$]+)", ir)) & {"lgammaf", "lgamma", "axle.special.digamma"}


def test_f64_tanh_within_two_ulp_and_special_values():
    """f64 tanh (fastmath.tanh_f64, no libm call): against mpmath on the boundary of its two
    forms, near zero, the saturation and random f64 inputs; special values exactly."""
    mpmath = pytest.importorskip("mpmath")
    r = np.random.default_rng(9)
    small = 0.54930614433405484570
    x = np.concatenate([
        r.uniform(-1.5, 1.5, 3000), r.uniform(-25, 25, 3000), np.linspace(small - 1e-6, small + 1e-6, 401),
        np.linspace(18.5, 22.5, 101), 10.0 ** r.uniform(-310, 0, 1000) * r.choice([-1.0, 1.0], 1000)])
    got = axle.compile(_text("stablehlo.tanh", x.size, "f64"), backend="cpu")(x)
    want = np.array([float(mpmath.tanh(mpmath.mpf(float(v)))) for v in x])
    ulp = np.abs(got - want) / np.spacing(np.maximum(np.abs(want), np.finfo(np.float64).tiny))
    i = int(np.argmax(ulp))
    assert ulp[i] <= 2, f"tanh({x[i]!r}) = {got[i]!r}, want {want[i]!r}"
    sv = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e308, -1e308, 30.0, -30.0])
    out = axle.compile(_text("stablehlo.tanh", sv.size, "f64"), backend="cpu")(sv)
    with np.errstate(all="ignore"):
        ref = np.tanh(sv)
    assert np.array_equal(out, ref, equal_nan=True) and np.array_equal(np.signbit(out), np.signbit(ref))
