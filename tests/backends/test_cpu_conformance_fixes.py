"""What the native-only conformance run needed from the CPU backend and refine-shapes:
each checked against ml_dtypes, numpy or the interpreter."""
import ml_dtypes
import numpy as np

from axle.backends.cpu.executable import CpuExecutable
from axle.interpreter.evaluator import run_function
from axle.ir import parse_module


def _both(text, args):
    return CpuExecutable(parse_module(text)).execute(args), run_function(parse_module(text), args)


def test_f8e8m0fnu_conversions_are_those_of_ml_dtypes():
    t = ml_dtypes.float8_e8m0fnu
    r = np.random.default_rng(0)
    bits = np.concatenate([r.integers(0, 2**32, 50000, dtype=np.uint64).astype(np.uint32),
                           np.arange(0, 2**24, 4099, dtype=np.uint32),  # f32 subnormals and tiny normals
                           (np.arange(0, 255, dtype=np.uint32) << 23) | 0x400000])  # ties
    x = bits.view(np.float32)
    n = x.size
    codes = np.arange(256, dtype=np.uint8).view(t)
    text = f"""func.func @main(%x: tensor<{n}xf32>, %c: tensor<256xf8E8M0FNU>) -> (tensor<{n}xf8E8M0FNU>, tensor<256xf32>, tensor<256xf8E8M0FNU>) {{
  %0 = stablehlo.convert %x : (tensor<{n}xf32>) -> tensor<{n}xf8E8M0FNU>
  %1 = stablehlo.convert %c : (tensor<256xf8E8M0FNU>) -> tensor<256xf32>
  return %0, %1, %c : tensor<{n}xf8E8M0FNU>, tensor<256xf32>, tensor<256xf8E8M0FNU>
}}"""
    got = CpuExecutable(parse_module(text)).execute([x, codes])
    with np.errstate(invalid="ignore"):
        assert np.array_equal(got[0].view(np.uint8), x.astype(t).view(np.uint8))
    assert np.array_equal(got[1], codes.astype(np.float32), equal_nan=True)
    assert np.array_equal(got[2].view(np.uint8), codes.view(np.uint8))  # moved unchanged


def test_complex_cbrt_and_logistic():
    r = np.random.default_rng(1)
    for ct, npt in (("complex<f32>", np.complex64), ("complex<f64>", np.complex128)):
        z = (r.standard_normal(40) * 3 + 1j * r.standard_normal(40) * 3).astype(npt)
        z[:4] = [0, -8, 8j, -1 - 0j]
        text = f"""func.func @main(%z: tensor<40x{ct}>) -> (tensor<40x{ct}>, tensor<40x{ct}>) {{
  %0 = stablehlo.cbrt %z : tensor<40x{ct}>
  %1 = stablehlo.logistic %z : tensor<40x{ct}>
  return %0, %1 : tensor<40x{ct}>, tensor<40x{ct}>
}}"""
        got, want = _both(text, [z])
        tol = 1e-6 if npt is np.complex64 else 1e-13
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
        np.testing.assert_allclose(got[0] ** 3, z, rtol=50 * tol, atol=50 * tol)  # a cube root indeed
        np.testing.assert_allclose(got[1], 1 / (1 + np.exp(-z.astype(np.complex128))), rtol=tol, atol=tol)


def test_bitcast_convert_in_a_sort_comparator():
    """jnp.percentile sorts in total order through a comparator that bitcasts f32 to i32."""
    text = """func.func @main(%x: tensor<9xf32>) -> tensor<9xf32> {
  %0 = "stablehlo.sort"(%x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %ia = stablehlo.bitcast_convert %a : (tensor<f32>) -> tensor<i32>
    %ib = stablehlo.bitcast_convert %b : (tensor<f32>) -> tensor<i32>
    %c = stablehlo.compare LT, %ia, %ib, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 0 : i64, is_stable = true} : (tensor<9xf32>) -> tensor<9xf32>
  return %0 : tensor<9xf32>
}"""
    x = np.array([3, 1, -2, 0.5, 7, 2, -1, 0, 4], np.float32)
    got, want = _both(text, [x])
    np.testing.assert_array_equal(got[0], want[0])


def test_a_scalar_argument_stays_a_scalar():
    """Python scalars take the checking path: one program, for the declared 0-d signature."""
    text = """func.func @main(%a: tensor<f32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.broadcast_in_dim %a, dims = [] : (tensor<f32>) -> tensor<3xf32>
  %1 = stablehlo.add %0, %b : tensor<3xf32>
  return %1 : tensor<3xf32>
}"""
    exe = CpuExecutable(parse_module(text))
    np.testing.assert_array_equal(exe(2.0, [1.0, 2.0, 3.0]), [3, 4, 5])
    np.testing.assert_array_equal(exe(np.float32(1), np.ones(3, np.float32)), [2, 2, 2])
    assert list(exe._programs) == [((), (3,))]


def test_dynamic_programs_keep_declared_element_types_and_static_slices():
    """A dot_general f32 x f32 -> f64 stays f64 once refined; real_dynamic_slice(x, s, s + C)
    becomes a dynamic_slice of sizes C (JAX's lax.dynamic_slice with symbolic shapes)."""
    text = """func.func @main(%a: tensor<?x3xf32>, %b: tensor<?x3xf32>, %s: tensor<2xi32>) -> (tensor<?xf64>, tensor<?x2xf32>) {
  %0 = "stablehlo.dot_general"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>} : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?xf64>
  %1 = stablehlo.get_dimension_size %a, dim = 0 : (tensor<?x3xf32>) -> tensor<i32>
  %2 = stablehlo.reshape %1 : (tensor<i32>) -> tensor<1xi32>
  %3 = stablehlo.constant dense<2> : tensor<1xi32>
  %4 = stablehlo.concatenate %2, %3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %5 = stablehlo.add %s, %4 : tensor<2xi32>
  %6 = stablehlo.constant dense<1> : tensor<2xi32>
  %7 = stablehlo.real_dynamic_slice %a, %s, %5, %6 : (tensor<?x3xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x2xf32>
  return %0, %7 : tensor<?xf64>, tensor<?x2xf32>
}"""
    r = np.random.default_rng(2)
    a, b = r.standard_normal((4, 3)).astype(np.float32), r.standard_normal((4, 3)).astype(np.float32)
    s = np.array([0, 1], np.int32)
    got, want = _both(text, [a, b, s])
    assert got[0].dtype == np.float64 and got[0].shape == (4,)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[1], a[:, 1:3])
