"""The CPU backend against the interpreter for the ops added to make every conformance op
compile: CHLO special functions, complex functions, small floats, fft, dynamic-shape ops,
width-changing bitcasts, rng_bit_generator, scan, ragged_dot, map, tokens and print."""
import zlib

import ml_dtypes
import numpy as np
import pytest

import axle
from axle.interpreter.evaluator import run_function
from axle.ir import parse_module

RNG = np.random.default_rng(20240611)


@pytest.fixture(autouse=True)
def _seeded(request):
    """Each test draws the same numbers however the tests are spread over workers."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))

DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
          "complex<f32>": np.complex64, "complex<f64>": np.complex128}


def both(text, *args):
    """(cpu results, interpreter results), as lists of arrays."""
    exe = axle.compile(text, backend="cpu")
    got = exe.execute(list(args))
    want = run_function(parse_module(text), list(args), "main")
    return [np.asarray(g) for g in got], [np.asarray(w) for w in want]


def unary(op, ty, shape, result_ty=None):
    t = f"tensor<{'x'.join(map(str, shape))}x{ty}>"
    rt = f"tensor<{'x'.join(map(str, shape))}x{result_ty or ty}>"
    return f"""func.func @main(%x: {t}) -> {rt} {{
  %r = {op} %x : ({t}) -> {rt}
  return %r : {rt}
}}"""


def binary(op, ty, n):
    t = f"tensor<{n}x{ty}>"
    return f"""func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %r = {op} %x, %y : ({t}, {t}) -> {t}
  return %r : {t}
}}"""


def assert_close(got, want, rtol, atol=0.0):
    g, w = (np.asarray(a) for a in (got, want))
    assert g.shape == w.shape and g.dtype == w.dtype
    if g.dtype.kind == "c":
        assert_close(g.real, w.real, rtol, atol)
        assert_close(g.imag, w.imag, rtol, atol)
        return
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g64), np.isnan(w64))
    inf = np.isinf(w64)
    np.testing.assert_array_equal(g64[inf], w64[inf])
    fin = np.isfinite(w64)
    np.testing.assert_allclose(g64[fin], w64[fin], rtol=rtol, atol=atol)


def ulps(ty):
    """A relative tolerance of two units in the last place of type ty."""
    return 2 * float(ml_dtypes.finfo(DTYPES[ty]).eps) if ty != "f64" else 1e-13


def spread(n, lo, hi, specials=()):
    x = np.concatenate([RNG.uniform(lo, hi, n), np.asarray(specials, np.float64)])
    return x


# ---------------------------------------------------------------- CHLO special functions

SPECIAL_INPUTS = {
    "chlo.digamma": spread(300, -30, 30, [0, -0.0, -1, -2, 1, 2, 0.5, 1.4616321, 1e-8, -1e-8, 1e5, -np.inf,
                                          np.inf, np.nan]),
    "chlo.erf_inv": np.concatenate([spread(300, -1, 1, [0, -0.0, 1, -1, 1.5, -2, np.nan, 0.999999, 1e-30]),
                                    1 - 10.0 ** -RNG.uniform(1, 15, 40)]),
    "chlo.bessel_i1e": spread(300, -60, 60, [0, -0.0, 1e-10, 29.99, 30, 30.01, 500, -700, np.inf, -np.inf,
                                             np.nan]),
    "chlo.sinh": spread(300, -12, 12, [0, -0.0, 0.999, 1, -1, 1e-5, 88, -88, 100, np.inf, np.nan]),
    "chlo.cosh": spread(300, -12, 12, [0, -0.0, 1, 88, 89, -100, np.inf, np.nan]),
}


@pytest.mark.parametrize("op", sorted(SPECIAL_INPUTS))
@pytest.mark.parametrize("ty", ["f16", "bf16", "f32", "f64"])
def test_chlo_special_functions_match_interpreter(op, ty):
    with np.errstate(over="ignore"):
        x = SPECIAL_INPUTS[op].astype(DTYPES[ty])
    got, want = both(unary(op, ty, [x.size]), x)
    if ty == "f64":
        # f64 results come from different (equally accurate) algorithms than scipy's
        assert_close(got[0], want[0], rtol=1e-12, atol=1e-14)
    else:
        assert_close(got[0], want[0], rtol=ulps(ty))


@pytest.mark.parametrize("ty", ["f16", "f32"])
def test_sinh_cosh_follow_the_decomposition_bit_for_bit(ty):
    x = RNG.uniform(-10, 10, 500).astype(DTYPES[ty])
    for op in ("chlo.sinh", "chlo.cosh"):
        got, want = both(unary(op, ty, [x.size]), x)
        np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_zeta_and_polygamma_match_interpreter(ty):
    n = 400
    x = np.concatenate([RNG.uniform(0.5, 12, n), RNG.integers(-2, 8, 100).astype(float), [1, 2, 3, np.nan]])
    q = np.concatenate([RNG.uniform(-8, 25, n), RNG.uniform(-4, 4, 100), [1, 0, -2, 1]])
    dt = DTYPES[ty]
    tol = 1e-11 if ty == "f64" else ulps(ty)
    got, want = both(binary("chlo.zeta", ty, x.size), x.astype(dt), q.astype(dt))
    assert_close(got[0], want[0], rtol=tol)
    order = RNG.integers(-1, 6, x.size).astype(float)
    order[:30] += 0.5  # not natural numbers: NaN
    got, want = both(binary("chlo.polygamma", ty, x.size), order.astype(dt), q.astype(dt))
    assert_close(got[0], want[0], rtol=tol, atol=1e-12 if ty == "f64" else 0)


@pytest.mark.parametrize("ty,signed", [("i64", True), ("ui64", False), ("i32", True), ("ui32", False)])
def test_mulhi(ty, signed):
    bits = int(ty.lstrip("ui"))
    info = np.iinfo(f"{'' if signed else 'u'}int{bits}")
    dt = np.dtype(f"{'' if signed else 'u'}int{bits}")
    x = RNG.integers(info.min, info.max, 200, dtype=dt, endpoint=True)
    y = RNG.integers(info.min, info.max, 200, dtype=dt, endpoint=True)
    x[:3], y[:3] = [info.min, info.max, 0], [info.min, info.max, 5]
    got, want = both(binary("chlo.mulhi", ty, x.size), x, y)
    np.testing.assert_array_equal(got[0], want[0])


# ---------------------------------------------------------------- complex functions

COMPLEX_UNARY = ["chlo.acos", "chlo.acosh", "chlo.asin", "chlo.asinh", "chlo.atan", "chlo.atanh", "chlo.cosh",
                 "chlo.sinh", "stablehlo.exponential_minus_one", "stablehlo.log_plus_one"]


@pytest.mark.parametrize("op", COMPLEX_UNARY)
@pytest.mark.parametrize("ty", ["complex<f32>", "complex<f64>"])
def test_complex_functions_match_interpreter(op, ty):
    z = (RNG.uniform(-3, 3, 300) + 1j * RNG.uniform(-3, 3, 300)).astype(DTYPES[ty])
    z[:4] = [0, 1e-3 + 1e-3j, -0.5, 2j]
    got, want = both(unary(op, ty, [z.size]), z)
    assert_close(got[0], want[0], rtol=1e-5 if ty == "complex<f32>" else 1e-12, atol=1e-6 if ty == "complex<f32>"
                 else 1e-14)


@pytest.mark.parametrize("ty", ["complex<f32>", "complex<f64>"])
def test_complex_atan2(ty):
    y = (RNG.uniform(-3, 3, 200) + 1j * RNG.uniform(-3, 3, 200)).astype(DTYPES[ty])
    x = (RNG.uniform(-3, 3, 200) + 1j * RNG.uniform(-3, 3, 200)).astype(DTYPES[ty])
    got, want = both(binary("stablehlo.atan2", ty, y.size), y, x)
    assert_close(got[0], want[0], rtol=1e-5 if ty == "complex<f32>" else 1e-11, atol=1e-6 if ty == "complex<f32>"
                 else 1e-13)


# ---------------------------------------------------------------- small floats

SMALL_FLOATS = ["f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ", "f8E4M3", "f8E3M4",
                "f6E2M3FN", "f6E3M2FN", "f4E2M1FN"]


def small_dtype(name):
    from axle.ir.types import element_type
    return np.dtype(element_type(name).dtype)


@pytest.mark.parametrize("name", SMALL_FLOATS)
def test_small_float_conversions_round_like_ml_dtypes(name):
    dt = small_dtype(name)
    bits = RNG.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32)
    values = np.unique(np.arange(256, dtype=np.uint8).view(dt).astype(np.float64))
    values = values[np.isfinite(values)]
    mids = ((values[1:] + values[:-1]) / 2).astype(np.float32)
    x = np.concatenate([bits.view(np.float32), mids, np.nextafter(mids, np.float32(np.inf)),
                        np.nextafter(mids, np.float32(-np.inf)),
                        np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 1e30, -1e-30], np.float32)])
    n = x.size
    text = f"""func.func @main(%x: tensor<{n}xf32>, %d: tensor<{n}xf64>) -> (tensor<{n}x{name}>, tensor<{n}xf32>, tensor<{n}x{name}>) {{
  %y = stablehlo.convert %x : (tensor<{n}xf32>) -> tensor<{n}x{name}>
  %z = stablehlo.convert %y : (tensor<{n}x{name}>) -> tensor<{n}xf32>
  %w = stablehlo.convert %d : (tensor<{n}xf64>) -> tensor<{n}x{name}>
  return %y, %z, %w : tensor<{n}x{name}>, tensor<{n}xf32>, tensor<{n}x{name}>
}}"""
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.concatenate([x.astype(np.float64)[:-64], (mids.astype(np.float64) * (1 + 2.0 ** -40))[:32],
                            (mids.astype(np.float64) * (1 - 2.0 ** -40))[:32]])[:n]
        d = np.concatenate([d, np.zeros(n - d.size)])
        got, want = both(text, x, d)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


@pytest.mark.parametrize("name", ["f8E4M3FN", "f8E5M2FNUZ", "f8E3M4", "f6E2M3FN"])
def test_small_float_arithmetic_and_dot(name):
    dt = small_dtype(name)
    x = RNG.normal(0, 2, 64).astype(dt)
    y = RNG.normal(0, 2, 64).astype(dt)
    t = f"tensor<64x{name}>"
    text = f"""func.func @main(%x: {t}, %y: {t}) -> ({t}, {t}, {t}, tensor<{name}>, tensor<64xi1>) {{
  %a = stablehlo.add %x, %y : {t}
  %m = stablehlo.multiply %x, %y : {t}
  %q = stablehlo.divide %x, %y : {t}
  %d = stablehlo.dot_general %x, %y, contracting_dims = [0] x [0] : ({t}, {t}) -> tensor<{name}>
  %c = stablehlo.compare LT, %x, %y, TOTALORDER : ({t}, {t}) -> tensor<64xi1>
  return %a, %m, %q, %d, %c : {t}, {t}, {t}, tensor<{name}>, tensor<64xi1>
}}"""
    got, want = both(text, x, y)
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))
    assert_close(got[3].astype(np.float32), want[3].astype(np.float32), rtol=0.13)  # f32 vs f64 sums
    np.testing.assert_array_equal(got[4], want[4])


def test_small_float_bitcast_and_fnuz_total_order():
    x = np.arange(256, dtype=np.uint8)
    text = """func.func @main(%x: tensor<256xui8>) -> (tensor<256xf8E4M3FNUZ>, tensor<256xui8>, tensor<256xi1>) {
  %f = stablehlo.bitcast_convert %x : (tensor<256xui8>) -> tensor<256xf8E4M3FNUZ>
  %b = stablehlo.bitcast_convert %f : (tensor<256xf8E4M3FNUZ>) -> tensor<256xui8>
  %z = stablehlo.constant dense<0.0> : tensor<256xf8E4M3FNUZ>
  %c = stablehlo.compare LT, %f, %z, TOTALORDER : (tensor<256xf8E4M3FNUZ>, tensor<256xf8E4M3FNUZ>) -> tensor<256xi1>
  return %f, %b, %c : tensor<256xf8E4M3FNUZ>, tensor<256xui8>, tensor<256xi1>
}"""
    got, want = both(text, x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).view(np.uint8), np.asarray(w).view(np.uint8))


def test_f8e8m0_ops_match_the_interpreter():
    """f8E8M0FNU (powers of two, no sign, 0xFF is NaN): every code through negate, multiply
    and a total-order compare, bit for bit (negative results are NaN)."""
    x = np.arange(256, dtype=np.uint8)
    y = x[::-1].copy()
    text = """func.func @main(%x: tensor<256xui8>, %y: tensor<256xui8>) -> (tensor<256xf8E8M0FNU>, tensor<256xf8E8M0FNU>, tensor<256xi1>) {
  %a = stablehlo.bitcast_convert %x : (tensor<256xui8>) -> tensor<256xf8E8M0FNU>
  %b = stablehlo.bitcast_convert %y : (tensor<256xui8>) -> tensor<256xf8E8M0FNU>
  %n = stablehlo.negate %a : tensor<256xf8E8M0FNU>
  %m = stablehlo.multiply %a, %b : tensor<256xf8E8M0FNU>
  %c = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<256xf8E8M0FNU>, tensor<256xf8E8M0FNU>) -> tensor<256xi1>
  return %n, %m, %c : tensor<256xf8E8M0FNU>, tensor<256xf8E8M0FNU>, tensor<256xi1>
}"""
    got, want = both(text, x, y)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).view(np.uint8), np.asarray(w).view(np.uint8))


# ---------------------------------------------------------------- fft


def fft_case(kind, rank, real_ty):
    shape = [3, 5, 6, 4][: rank + 1]
    lengths = shape[1:]
    cty = "complex<f32>" if real_ty == "f32" else "complex<f64>"
    if kind == "RFFT":
        in_shape, in_ty = shape, real_ty
        out_shape, out_ty = shape[:-1] + [shape[-1] // 2 + 1], cty
    elif kind == "IRFFT":
        in_shape, in_ty = shape[:-1] + [shape[-1] // 2 + 1], cty
        out_shape, out_ty = shape, real_ty
    else:
        in_shape = out_shape = shape
        in_ty = out_ty = cty
    it = f"tensor<{'x'.join(map(str, in_shape))}x{in_ty}>"
    ot = f"tensor<{'x'.join(map(str, out_shape))}x{out_ty}>"
    text = f"""func.func @main(%x: {it}) -> {ot} {{
  %r = stablehlo.fft %x, type = {kind}, length = {lengths} : ({it}) -> {ot}
  return %r : {ot}
}}"""
    dt = DTYPES[in_ty]
    x = RNG.normal(size=in_shape)
    if in_ty.startswith("complex"):
        x = x + 1j * RNG.normal(size=in_shape)
    return text, x.astype(dt)


@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("real_ty", ["f32", "f64"])
def test_fft_matches_interpreter(kind, rank, real_ty):
    text, x = fft_case(kind, rank, real_ty)
    got, want = both(text, x)
    assert got[0].dtype == want[0].dtype
    np.testing.assert_array_equal(got[0], want[0])  # the same library calls (axle/interpreter/fft_library.py)


def test_fft_of_a_fused_producer_and_inside_a_loop():
    text = """func.func @main(%x: tensor<8xf32>) -> tensor<8xcomplex<f32>> {
  %n = stablehlo.negate %x : tensor<8xf32>
  %z = stablehlo.constant dense<0.0> : tensor<8xf32>
  %c = stablehlo.complex %n, %z : tensor<8xcomplex<f32>>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %v = %c) : tensor<i32>, tensor<8xcomplex<f32>>
  cond {
    %three = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %i1 = stablehlo.add %i, %one : tensor<i32>
    %f = stablehlo.fft %v, type = FFT, length = [8] : (tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>>
    stablehlo.return %i1, %f : tensor<i32>, tensor<8xcomplex<f32>>
  }
  return %r#1 : tensor<8xcomplex<f32>>
}"""
    x = RNG.normal(size=8).astype(np.float32)
    got, want = both(text, x)
    np.testing.assert_array_equal(got[0], want[0])


# ---------------------------------------------------------------- dynamic shapes at run time


def test_dynamic_shape_ops_with_run_time_operands():
    text = """func.func @main(%x: tensor<3x1xi64>, %s: tensor<3xi64>, %r: tensor<1xi64>, %lo: tensor<2xi64>, %hi: tensor<2xi64>, %in: tensor<2xi64>, %i2: tensor<2xi64>) -> (tensor<3x2x2xi64>, tensor<3xi64>, tensor<3x4xf32>, tensor<7x5xi64>) {
  %b = "stablehlo.dynamic_broadcast_in_dim"(%x, %s) {broadcast_dimensions = array<i64: 0, 2>} : (tensor<3x1xi64>, tensor<3xi64>) -> tensor<3x2x2xi64>
  %re = stablehlo.dynamic_reshape %x, %r : (tensor<3x1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %io = stablehlo.dynamic_iota %i2, dim = 1 : (tensor<2xi64>) -> tensor<3x4xf32>
  %z = stablehlo.constant dense<-1> : tensor<i64>
  %src = stablehlo.reshape %b : (tensor<3x2x2xi64>) -> tensor<6x2xi64>
  %sl = stablehlo.slice %src [0:5, 0:2] : (tensor<6x2xi64>) -> tensor<5x2xi64>
  %p = stablehlo.dynamic_pad %sl, %z, %lo, %hi, %in : (tensor<5x2xi64>, tensor<i64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<7x5xi64>
  return %b, %re, %io, %p : tensor<3x2x2xi64>, tensor<3xi64>, tensor<3x4xf32>, tensor<7x5xi64>
}"""
    args = [np.array([[1], [2], [3]]), np.array([3, 2, 2]), np.array([3]), np.array([1, -1]), np.array([1, 2]),
            np.array([0, 2]), np.array([3, 4])]
    got, want = both(text, *args)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    exe = axle.compile(text, backend="cpu")
    bad = list(args)
    bad[6] = np.array([3, 5])  # not the result type's shape
    with pytest.raises(ValueError, match="dynamic_iota"):
        exe(*bad)
    bad = list(args)
    bad[5] = np.array([-1, 2])  # negative interior padding
    with pytest.raises(ValueError, match="dynamic_pad"):
        exe(*bad)
    np.testing.assert_array_equal(exe(*args)[0], want[0])  # the error does not stick


def test_real_dynamic_slice_and_dynamic_gather():
    text = """func.func @main(%x: tensor<3x4x2xi64>, %i: tensor<2x3x2xi64>, %ss: tensor<3xi64>, %st: tensor<3xi64>, %li: tensor<3xi64>, %sd: tensor<3xi64>) -> (tensor<2x3x2x2xi64>, tensor<1x2x2xi64>) {
  %g = "stablehlo.dynamic_gather"(%x, %i, %ss) {dimension_numbers = #stablehlo.gather<offset_dims = [2, 3], collapsed_slice_dims = [0], start_index_map = [1, 0], index_vector_dim = 2>, indices_are_sorted = false} : (tensor<3x4x2xi64>, tensor<2x3x2xi64>, tensor<3xi64>) -> tensor<2x3x2x2xi64>
  %s = stablehlo.real_dynamic_slice %x, %st, %li, %sd : (tensor<3x4x2xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>) -> tensor<1x2x2xi64>
  return %g, %s : tensor<2x3x2x2xi64>, tensor<1x2x2xi64>
}"""
    x = np.arange(24).reshape(3, 4, 2)
    idx = np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]])
    args = [x, idx, np.array([1, 2, 2]), np.array([1, 0, 0]), np.array([2, 4, 2]), np.array([1, 2, 1])]
    got, want = both(text, *args)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    exe = axle.compile(text, backend="cpu")
    bad = list(args)
    bad[4] = np.array([2, 5, 2])  # limit past the dimension
    with pytest.raises(ValueError, match="real_dynamic_slice"):
        exe(*bad)


def test_shape_ops_with_constant_operands_become_static():
    text = """func.func @main(%x: tensor<2x3xf32>) -> (tensor<i32>, tensor<6xf32>, tensor<2x3xf32>) {
  %d = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x3xf32>) -> tensor<i32>
  %s = stablehlo.constant dense<6> : tensor<1xi64>
  %r = stablehlo.dynamic_reshape %x, %s : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<6xf32>
  %t = stablehlo.tuple %x, %r : tuple<tensor<2x3xf32>, tensor<6xf32>>
  %e = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2x3xf32>, tensor<6xf32>>) -> tensor<2x3xf32>
  %b:2 = stablehlo.optimization_barrier %e, %d : tensor<2x3xf32>, tensor<i32>
  return %b#1, %r, %b#0 : tensor<i32>, tensor<6xf32>, tensor<2x3xf32>
}"""
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    exe = axle.compile(text, backend="cpu", passes=False)
    got = exe.execute([x])
    want = run_function(parse_module(text), [x], "main")
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------- bitcast_convert across widths

BITCASTS = [("i1", [64], "i64", []), ("ui32", [3, 2], "ui64", [3]), ("ui64", [3], "ui32", [3, 2]),
            ("f32", [5], "i8", [5, 4]), ("i8", [2, 4], "f32", [2]), ("complex<f32>", [3], "f32", [3, 2]),
            ("f32", [2, 2], "complex<f32>", [2]),
            ("bf16", [4, 2], "f32", [4]), ("f16", [3], "ui8", [3, 2]), ("f8E4M3FN", [2, 4], "i32", [2]),
            ("i64", [2], "f8E5M2", [2, 8]), ("i4", [3, 2], "i8", [3]), ("i1", [8], "i1", [8])]


@pytest.mark.parametrize("src,sshape,dst,dshape", BITCASTS)
def test_bitcast_convert_across_widths(src, sshape, dst, dshape):
    from axle.ir.types import element_type
    sdt = np.dtype(element_type(src).dtype)
    n = int(np.prod(sshape))
    raw = RNG.integers(0, 256, n * sdt.itemsize, dtype=np.uint8)
    if src == "i1":
        x = RNG.integers(0, 2, sshape).astype(bool)
    elif src == "i4":
        x = RNG.integers(-8, 8, sshape).astype(sdt)
    else:
        x = raw.view(sdt).reshape(sshape)
    st = f"tensor<{'x'.join(map(str, sshape))}x{src}>"
    dt = f"tensor<{'x'.join(map(str, dshape)) + 'x' if dshape else ''}{dst}>"
    text = f"""func.func @main(%x: {st}) -> {dt} {{
  %r = stablehlo.bitcast_convert %x : ({st}) -> {dt}
  return %r : {dt}
}}"""
    got, want = both(text, x)
    assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
    if got[0].dtype == bool or got[0].dtype.itemsize == 0:
        np.testing.assert_array_equal(got[0], want[0])
    else:
        np.testing.assert_array_equal(np.ascontiguousarray(got[0]).view(np.uint8),
                                      np.ascontiguousarray(want[0]).view(np.uint8))


# ---------------------------------------------------------------- rng_bit_generator


@pytest.mark.parametrize("algorithm,state_n", [("THREE_FRY", 2), ("PHILOX", 2), ("PHILOX", 3), ("DEFAULT", 3)])
@pytest.mark.parametrize("out", [("ui64", [5, 3]), ("ui32", [3, 5]), ("ui32", [7]), ("f32", [2, 3, 3]),
                                 ("ui8", [9]), ("ui32", []), ("f16", [4, 4])])
def test_rng_bit_generator_matches_interpreter(algorithm, state_n, out):
    ty, shape = out
    ot = f"tensor<{'x'.join(map(str, shape)) + 'x' if shape else ''}{ty}>"
    st = f"tensor<{state_n}xui64>"
    text = f"""func.func @main(%s: {st}) -> ({st}, {ot}) {{
  %ns, %o = stablehlo.rng_bit_generator %s, algorithm = {algorithm} : ({st}) -> ({st}, {ot})
  return %ns, %o : {st}, {ot}
}}"""
    state = RNG.integers(0, 2 ** 63, state_n, dtype=np.uint64)
    state[-1] = np.uint64(2 ** 64 - 3)  # counters that wrap
    got, want = both(text, state)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).reshape(-1).view(np.uint8), np.asarray(w).reshape(-1).view(np.uint8))


# ---------------------------------------------------------------- scan, map, ragged_dot


SCAN = """func.func @main(%x: tensor<3x5xf32>, %i: tensor<3xf32>, %k: tensor<i32>) -> (tensor<3x5xf32>, tensor<3x5xi32>, tensor<3xf32>, tensor<i32>) {
  %io = stablehlo.iota dim = 1 : tensor<3x5xi32>
  %r:4 = chlo.scan(%x, %io) inits(%i, %k) dimension=1 REVERSE {
  ^bb0(%a: tensor<3xf32>, %b: tensor<3xi32>, %c: tensor<3xf32>, %d: tensor<i32>):
    %m = stablehlo.multiply %a, %c : tensor<3xf32>
    %s = stablehlo.add %m, %a : tensor<3xf32>
    %bs = stablehlo.broadcast_in_dim %d, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %t = stablehlo.add %b, %bs : tensor<3xi32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %d1 = stablehlo.add %d, %one : tensor<i32>
    stablehlo.return %s, %t, %s, %d1 : tensor<3xf32>, tensor<3xi32>, tensor<3xf32>, tensor<i32>
  } : (tensor<3x5xf32>, tensor<3x5xi32>, tensor<3xf32>, tensor<i32>) -> (tensor<3x5xf32>, tensor<3x5xi32>, tensor<3xf32>, tensor<i32>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<3x5xf32>, tensor<3x5xi32>, tensor<3xf32>, tensor<i32>
}"""


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_matches_interpreter(reverse):
    text = SCAN.replace("REVERSE", "attributes {is_reverse = true}" if reverse else "")
    args = [RNG.normal(size=(3, 5)).astype(np.float32), RNG.normal(size=3).astype(np.float32), np.array(7, np.int32)]
    got, want = both(text, *args)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_map_matches_interpreter():
    text = """func.func @main(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %r = "stablehlo.map"(%x, %y) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.multiply %a, %b : tensor<f32>
    %e = stablehlo.exponential %a : tensor<f32>
    %s = stablehlo.subtract %m, %e : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {dimensions = array<i64: 0, 1>} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}"""
    args = [RNG.normal(size=(4, 3)).astype(np.float32) for _ in range(2)]
    got, want = both(text, *args)
    assert_close(got[0], want[0], rtol=1e-6)


RAGGED = {
    "free": ("tensor<11x5xf32>", "tensor<3x5x7xf32>", "tensor<11x7xf32>",
             "lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], "
             "rhs_contracting_dimensions = [1], lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]"),
    "batched_free": ("tensor<2x11x5xf64>", "tensor<3x2x5x7xf64>", "tensor<2x11x7xf64>",
                     "lhs_batching_dimensions = [0], rhs_batching_dimensions = [1], lhs_contracting_dimensions = [2], "
                     "rhs_contracting_dimensions = [2], lhs_ragged_dimensions = [1], rhs_group_dimensions = [0]"),
    "contracting": ("tensor<4x11xf32>", "tensor<11x6xf32>", "tensor<3x4x6xf32>",
                    "lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], "
                    "rhs_contracting_dimensions = [0], lhs_ragged_dimensions = [1], rhs_group_dimensions = []"),
    "batch": ("tensor<9x4x5xi32>", "tensor<9x5x3xi32>", "tensor<9x4x3xi32>",
              "lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], "
              "rhs_contracting_dimensions = [1], lhs_ragged_dimensions = [0], rhs_group_dimensions = []"),
}


@pytest.mark.parametrize("mode", sorted(RAGGED))
def test_ragged_dot_matches_interpreter(mode):
    lt, rt, ot, dims = RAGGED[mode]
    text = f"""func.func @main(%l: {lt}, %r: {rt}, %g: tensor<3xi64>) -> {ot} {{
  %o = "chlo.ragged_dot"(%l, %r, %g) {{ragged_dot_dimension_numbers = #chlo.ragged_dot<{dims}>, precision_config = [#chlo<precision DEFAULT>, #chlo<precision DEFAULT>]}} : ({lt}, {rt}, tensor<3xi64>) -> {ot}
  return %o : {ot}
}}"""
    from axle.ir.types import element_type

    def arg(t):
        shape = [int(s) for s in t[len("tensor<"):-1].split("x")[:-1]]
        et = element_type(t[len("tensor<"):-1].split("x")[-1])
        if et.is_int:
            return RNG.integers(-5, 5, shape).astype(et.dtype)
        return RNG.normal(size=shape).astype(et.dtype)
    for sizes in ([4, 0, 5], [2, 3, 4], [11, 0, 0]):
        got, want = both(text, arg(lt), arg(rt), np.array(sizes, np.int64))
        assert_close(got[0], want[0], rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- tokens, print, collectives


def _run_case(text):
    from axle.tools.conformance import Case, run_case
    return run_case(Case("inline.mlir", 1, 0, text), "cpu", "default", 60)


def test_token_effects_in_parallel_programs():
    text = """module @m {
  func.func @send(%x: tensor<2xi64>, %t: !stablehlo.token) -> !stablehlo.token {
    %r = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>, is_host_transfer = true} : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
    return %r : !stablehlo.token
  }
  func.func @recv(%t: !stablehlo.token) -> (tensor<2xi64>, !stablehlo.token) {
    %v, %r = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 3>, is_host_transfer = true} : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
    %w = stablehlo.add %v, %v : tensor<2xi64>
    return %w, %r : tensor<2xi64>, !stablehlo.token
  }
  func.func @main() {
    %x = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
    %t = stablehlo.after_all : !stablehlo.token
    %r:3 = "interpreter.run_parallel"(%x, %t, %t) {programs = [[@send], [@recv]]} : (tensor<2xi64>, !stablehlo.token, !stablehlo.token) -> (!stablehlo.token, tensor<2xi64>, !stablehlo.token)
    check.expect_eq_const %r#1, dense<[6, 8]> : tensor<2xi64>
    func.return
  }
}"""
    result = _run_case(text)
    assert result.status == "passed", result.message


def test_print_runs_on_the_host(capfd):
    text = """func.func @main(%x: tensor<3xi32>) -> tensor<3xi32> {
  %y = stablehlo.add %x, %x : tensor<3xi32>
  "interpreter.print"(%y) : (tensor<3xi32>) -> ()
  return %y : tensor<3xi32>
}"""
    out = axle.compile(text, backend="cpu")(np.array([1, 2, 3], np.int32))
    np.testing.assert_array_equal(out, [2, 4, 6])
    assert "[2, 4, 6]" in capfd.readouterr().out


@pytest.mark.parametrize("ty,dist,lo,hi", [("f32", "UNIFORM", -2.0, 3.0), ("f64", "UNIFORM", 1.0, 1.0),
                                           ("f16", "NORMAL", 0.5, 2.0), ("f64", "NORMAL", 0.0, 1.0),
                                           ("i32", "UNIFORM", -5, 7), ("ui8", "UNIFORM", 3, 200),
                                           ("i64", "UNIFORM", 10, 2), ("bf16", "UNIFORM", 0, 1)])
def test_rng_matches_interpreter(ty, dist, lo, hi):
    from axle.ir.types import element_type
    text = f"""func.func @main(%a: tensor<{ty}>, %b: tensor<{ty}>, %s: tensor<2xi64>) -> tensor<4x5x{ty}> {{
  %r = stablehlo.rng %a, %b, %s, distribution = {dist} : (tensor<{ty}>, tensor<{ty}>, tensor<2xi64>) -> tensor<4x5x{ty}>
  return %r : tensor<4x5x{ty}>
}}"""
    dt = element_type(ty).dtype
    args = [np.array(lo).astype(dt), np.array(hi).astype(dt), np.array([4, 5])]
    got, want = both(text, *args)
    assert_close(got[0], want[0], rtol=1e-15)
    with pytest.raises(ValueError, match="stablehlo.rng"):
        axle.compile(text, backend="cpu")(args[0], args[1], np.array([5, 4]))


def test_deprecated_broadcast():
    text = """func.func @main(%x: tensor<3x2xf32>) -> tensor<4x5x3x2xf32> {
  %r = stablehlo.broadcast %x, sizes = [4, 5] : (tensor<3x2xf32>) -> tensor<4x5x3x2xf32>
  return %r : tensor<4x5x3x2xf32>
}"""
    x = RNG.normal(size=(3, 2)).astype(np.float32)
    got, want = both(text, x)
    np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("ty", ["f32", "f64", "complex<f32>", "complex<f64>"])
@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_matches_interpreter(ty, lower):
    n = 5
    m = RNG.normal(size=(3, n, n))
    if ty.startswith("complex"):
        m = m + 1j * RNG.normal(size=(3, n, n))
    spd = m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)
    spd[2, 1, 1] = -50.0  # not positive definite: NaNs
    x = spd.astype(DTYPES[ty])
    t = f"tensor<3x{n}x{n}x{ty}>"
    text = f"""func.func @main(%a: {t}) -> {t} {{
  %r = stablehlo.cholesky %a, lower = {'true' if lower else 'false'} : {t}
  return %r : {t}
}}"""
    got, want = both(text, x)
    assert_close(got[0], want[0], rtol=1e-6 if ty in ("f32", "complex<f32>") else 1e-13, atol=1e-12)


def test_batch_norm_ops_are_expanded():
    t, f = "tensor<4x3x5xf32>", "tensor<3xf32>"
    text = f"""func.func @main(%x: {t}, %s: {f}, %o: {f}, %m: {f}, %v: {f}, %g: {t}) -> ({t}, {t}, {f}, {f}, {t}, {f}, {f}) {{
  %r = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v) {{epsilon = 1.0e-3 : f32, feature_index = 1 : i64}} : ({t}, {f}, {f}, {f}, {f}) -> {t}
  %y, %bm, %bv = "stablehlo.batch_norm_training"(%x, %s, %o) {{epsilon = 1.0e-3 : f32, feature_index = 1 : i64}} : ({t}, {f}, {f}) -> ({t}, {f}, {f})
  %gx, %gs, %go = "stablehlo.batch_norm_grad"(%x, %s, %m, %v, %g) {{epsilon = 1.0e-3 : f32, feature_index = 1 : i64}} : ({t}, {f}, {f}, {f}, {t}) -> ({t}, {f}, {f})
  return %r, %y, %bm, %bv, %gx, %gs, %go : {t}, {t}, {f}, {f}, {t}, {f}, {f}
}}"""
    args = [RNG.normal(size=(4, 3, 5)), RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3),
            RNG.uniform(0.5, 2, 3), RNG.normal(size=(4, 3, 5))]
    got, want = both(text, *[a.astype(np.float32) for a in args])
    for g, w in zip(got, want):  # the expansion rounds in f32, the interpreter once from f64
        assert_close(g, w, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("real_ty", ["f32", "f64"])
@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_fft_writes_into_the_result_buffer(kind, real_ty, monkeypatch):
    """The native fft calls the library (pocketfft; ducc0 in 64-bit) with the result buffer
    as its output (no result array, no copy), with the bits of the interpreter's route."""
    from axle.backends.cpu import kernels_fft
    used = []
    real = kernels_fft._route

    def route(*a):
        run = real(*a)
        assert run is not None
        return lambda x, out: used.append(run(x, out)) or used[-1]
    monkeypatch.setattr(kernels_fft, "_route", route)
    monkeypatch.setattr(kernels_fft, "compute", None)  # (not called)
    from axle.backends.cpu import executable as cpu_exe
    cpu_exe.clear_memory_cache()  # (compiled here, with the routes above)
    text, x = fft_case(kind, 2, real_ty)
    got, want = both(text, x)
    np.testing.assert_array_equal(got[0], want[0])
    assert used and all(used)


def test_f16_result_of_an_f64_computation_links():
    """chlo.bessel_i1e on f32 is computed in f64; rounded on to f16, LLVM folds the two
    truncations into one double -> half conversion, a compiler-runtime call (__truncdfhf2)
    the JIT resolves from libgcc (llvm_env._libgcc_half_conversions)."""
    from axle.ir import parse_module
    text = """func.func @main(%a: tensor<8xf16>) -> tensor<8xf16> {
  %c = stablehlo.convert %a : (tensor<8xf16>) -> tensor<8xf32>
  %0 = chlo.bessel_i1e %c : tensor<8xf32> -> tensor<8xf32>
  %1 = stablehlo.convert %0 : (tensor<8xf32>) -> tensor<8xf16>
  return %1 : tensor<8xf16>
}"""
    x = np.linspace(-30, 30, 8).astype(np.float16)
    got = np.asarray(axle.compile(text, backend="cpu").execute([x])[0])
    want = np.asarray(axle.interpret(parse_module(text), x))
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-4)
