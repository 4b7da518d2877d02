"""Unit tests of the contraction, linear algebra and random number ops (ops_linalg.py,
ops_rng.py), against hand-computed values, numpy/scipy, and literal transcriptions of the
spec's definitions."""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import axle.interpreter.ops_linalg  # noqa: F401  (registers the ops)
import axle.interpreter.ops_rng as ops_rng
from axle.interpreter.registry import InterpreterError, OpCall, lookup
from axle.ir.types import QuantizedType, TensorType, element_type, element_type_of, tensor


def tensor_type(x) -> TensorType:
    x = np.asarray(x)
    return TensorType(x.shape, element_type_of(x.dtype))


def run(name, operands, attrs, result_types, operand_types=None):
    operands = [np.asarray(x) for x in operands]
    if operand_types is None:
        operand_types = [tensor_type(x) for x in operands]
    call = OpCall(name, operands, list(operand_types), list(result_types), dict(attrs))
    return lookup(name)(call)


def dot_dims(lb=(), rb=(), lc=(), rc=()):
    return {"dot_dimension_numbers": {"lhs_batching_dimensions": list(lb), "rhs_batching_dimensions": list(rb),
                                      "lhs_contracting_dimensions": list(lc),
                                      "rhs_contracting_dimensions": list(rc)}}


# ---------------------------------------------------------------- dot_general, dot


def test_dot_general_spec_example():
    lhs = np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], np.int64)
    rhs = np.array([[[1, 0], [0, 1]], [[1, 0], [0, 1]]], np.int64)
    out = run("stablehlo.dot_general", [lhs, rhs], dot_dims([0], [0], [2], [1]), [tensor((2, 2, 2), "i64")])
    np.testing.assert_array_equal(out, lhs)


def test_dot_general_without_contraction_is_an_outer_product():
    lhs = np.array([[1, 2], [3, 4]], np.int64)
    rhs = np.eye(2, dtype=np.int64)
    out = run("stablehlo.dot_general", [lhs, rhs], dot_dims(), [tensor((2, 2, 2, 2), "i64")])
    np.testing.assert_array_equal(out, np.einsum("ab,cd->abcd", lhs, rhs))


def test_dot_general_dimension_order_and_several_contracting_dims():
    rng = np.random.default_rng(1)
    lhs = rng.integers(-9, 9, (3, 2, 4, 5)).astype(np.int32)  # batch 1, contract 0 and 3
    rhs = rng.integers(-9, 9, (5, 6, 2, 3)).astype(np.int32)  # batch 2, contract 3 and 0
    out = run("stablehlo.dot_general", [lhs, rhs], dot_dims([1], [2], [0, 3], [3, 0]), [tensor((2, 4, 6), "i32")])
    np.testing.assert_array_equal(out, np.einsum("abcd,dfba->bcf", lhs, rhs))


def test_dot_general_f32_adds_products_in_order():
    # cancellation: the exact sum is tiny, the f32 sequential sum differs from it
    lhs = np.array([[1e8, 1.0, -1e8, 3.0]], np.float32)
    rhs = np.array([[1.0], [1.0], [1.0], [0.5]], np.float32)
    out = run("stablehlo.dot_general", [lhs, rhs], dot_dims(lc=[1], rc=[0]), [tensor((1, 1), "f32")])
    expected = np.float32(0)
    for k in range(4):
        expected = expected + lhs[0, k] * rhs[k, 0]
    assert out.dtype == np.float32 and out[0, 0] == expected == np.float32(1.5)


def test_dot_general_bf16_accumulates_in_f32():
    lhs = np.full((1, 300), 1.0, ml_dtypes.bfloat16)
    rhs = np.full((300,), 1.0, ml_dtypes.bfloat16)
    out = run("stablehlo.dot_general", [lhs, rhs], dot_dims(lc=[1], rc=[0]), [tensor((1,), "bf16")])
    # a bf16 accumulator would stop at 256; f32 accumulation gives 300, rounded to bf16 (300 -> 300)
    assert out.dtype == ml_dtypes.bfloat16 and float(out[0]) == 300.0


def test_dot_general_preferred_element_types():
    lhs = np.array([[100, 100]], np.int8)
    rhs = np.array([[100], [100]], np.int8)
    wide = run("stablehlo.dot_general", [lhs, rhs], dot_dims(lc=[1], rc=[0]), [tensor((1, 1), "i32")])
    assert wide.dtype == np.int32 and wide[0, 0] == 20000
    narrow = run("stablehlo.dot_general", [lhs, rhs], dot_dims(lc=[1], rc=[0]), [tensor((1, 1), "i8")])
    assert narrow.dtype == np.int8 and narrow[0, 0] == 20000 % 256  # wraps around: 20000 = 78 * 256 + 32
    f = run("stablehlo.dot_general", [lhs.astype(np.float32), rhs.astype(np.float32)], dot_dims(lc=[1], rc=[0]),
            [tensor((1, 1), "f64")])
    assert f.dtype == np.float64 and f[0, 0] == 20000.0


def test_dot_general_unsigned_wraps():
    lhs = np.array([2 ** 63, 2 ** 63], np.uint64)
    out = run("stablehlo.dot_general", [lhs, np.array([1, 3], np.uint64)], dot_dims(lc=[0], rc=[0]),
              [tensor((), "ui64")])
    assert out == np.uint64(0)


def test_dot_general_bool_is_or_of_ands():
    lhs = np.array([[True, False], [False, False]])
    rhs = np.array([[True, True], [True, False]])
    out = run("stablehlo.dot_general", [lhs, rhs], dot_dims(lc=[1], rc=[0]), [tensor((2, 2), "i1")])
    np.testing.assert_array_equal(out, [[True, True], [False, False]])
    assert out.dtype == np.bool_


def test_dot_general_complex_does_not_conjugate():
    lhs = np.array([1 + 2j, 3 - 1j], np.complex64)
    rhs = np.array([2 - 1j, 1j], np.complex64)
    out = run("stablehlo.dot_general", [lhs, rhs], dot_dims(lc=[0], rc=[0]), [tensor((), "complex<f32>")])
    assert out.dtype == np.complex64 and out == (1 + 2j) * (2 - 1j) + (3 - 1j) * 1j


def test_dot_general_zero_sized_contraction_gives_zeros():
    out = run("stablehlo.dot_general", [np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32)],
              dot_dims(lc=[1], rc=[0]), [tensor((2, 3), "f32")])
    np.testing.assert_array_equal(out, np.zeros((2, 3)))


def test_legacy_dot():
    m = np.array([[1, 2], [3, 4]], np.int32)
    v = np.array([5, 6], np.int32)
    np.testing.assert_array_equal(run("stablehlo.dot", [m, v], {}, [tensor((2,), "i32")]), [17, 39])
    np.testing.assert_array_equal(run("stablehlo.dot", [m, m], {}, [tensor((2, 2), "i32")]), m @ m)
    assert run("stablehlo.dot", [v, v], {}, [tensor((), "i32")]) == 61


def test_quantized_operands_are_rejected_with_a_clear_error():
    q = QuantizedType(element_type("i8"), element_type("f32"), (0.5,), (0,))
    qt = TensorType((2,), q)
    call = OpCall("stablehlo.dot_general", [np.ones(2, np.int8)] * 2, [qt, qt], [TensorType((), q)],
                  dot_dims(lc=[0], rc=[0]))
    with pytest.raises(InterpreterError, match="dequantize_op_quantize"):
        lookup("stablehlo.dot_general")(call)


# ---------------------------------------------------------------- convolution


def conv_dims(lhs, rhs, out):
    """#stablehlo.conv<[lhs]x[rhs]->[out]> as the attribute dict, e.g. ("b01f", "01io", "b01f")."""
    spatial = lambda s: [s.index(c) for c in "0123" if c in s]  # noqa: E731
    return {"input_batch_dimension": lhs.index("b"), "input_feature_dimension": lhs.index("f"),
            "input_spatial_dimensions": spatial(lhs),
            "kernel_input_feature_dimension": rhs.index("i"), "kernel_output_feature_dimension": rhs.index("o"),
            "kernel_spatial_dimensions": spatial(rhs),
            "output_batch_dimension": out.index("b"), "output_feature_dimension": out.index("f"),
            "output_spatial_dimensions": spatial(out)}


def naive_convolution(lhs, rhs, dims, strides, padding, lhs_dilation, rhs_dilation, reversal, fgc, bgc):
    """The spec's definition, element by element (integers, so the result is exact)."""
    if fgc > 1:
        parts = zip(np.split(lhs, fgc, dims["input_feature_dimension"]),
                    np.split(rhs, fgc, dims["kernel_output_feature_dimension"]))
        return np.concatenate([naive_convolution(a, b, dims, strides, padding, lhs_dilation, rhs_dilation,
                                                 reversal, 1, 1) for a, b in parts], dims["output_feature_dimension"])
    if bgc > 1:
        parts = zip(np.split(lhs, bgc, dims["input_batch_dimension"]),
                    np.split(rhs, bgc, dims["kernel_output_feature_dimension"]))
        return np.concatenate([naive_convolution(a, b, dims, strides, padding, lhs_dilation, rhs_dilation,
                                                 reversal, 1, 1) for a, b in parts], dims["output_feature_dimension"])
    ispatial, kspatial, ospatial = (dims["input_spatial_dimensions"], dims["kernel_spatial_dimensions"],
                                    dims["output_spatial_dimensions"])
    sizes = [lhs.shape[d] for d in ispatial]
    kernel = [rhs.shape[d] for d in kspatial]
    counts = []
    for n, k, (lo, hi), ld, rd, s in zip(sizes, kernel, padding, lhs_dilation, rhs_dilation, strides):
        padded = lo + ((n - 1) * ld + 1 if n else 0) + hi
        span = (k - 1) * rd + 1 if k else 0
        counts.append(0 if padded == 0 or span > padded else (padded - span) // s + 1)
    shape = [0] * lhs.ndim
    shape[dims["output_batch_dimension"]] = lhs.shape[dims["input_batch_dimension"]]
    shape[dims["output_feature_dimension"]] = rhs.shape[dims["kernel_output_feature_dimension"]]
    for d, c in zip(ospatial, counts):
        shape[d] = c
    out = np.zeros(shape, np.int64)
    for r in np.ndindex(*shape):
        n, o = r[dims["output_batch_dimension"]], r[dims["output_feature_dimension"]]
        total = 0
        for kpos in np.ndindex(*kernel):
            lhs_index = [0] * lhs.ndim
            lhs_index[dims["input_batch_dimension"]] = n
            inside = True
            for i, (od, j, k) in enumerate(zip(ospatial, kpos, kernel)):
                jj = k - 1 - j if reversal[i] else j  # the reversed window meets rhs[j] at K-1-j
                q = r[od] * strides[i] + jj * rhs_dilation[i] - padding[i][0]
                if q < 0 or q % lhs_dilation[i] or q // lhs_dilation[i] >= sizes[i]:
                    inside = False
                lhs_index[ispatial[i]] = q // lhs_dilation[i]
            if not inside:
                continue
            for c in range(lhs.shape[dims["input_feature_dimension"]]):
                lhs_index[dims["input_feature_dimension"]] = c
                rhs_index = [0] * rhs.ndim
                for d, j in zip(kspatial, kpos):
                    rhs_index[d] = j
                rhs_index[dims["kernel_input_feature_dimension"]] = c
                rhs_index[dims["kernel_output_feature_dimension"]] = o
                total += int(lhs[tuple(lhs_index)]) * int(rhs[tuple(rhs_index)])
        out[r] = total
    return out


def conv_attrs(dims, strides, padding, lhs_dilation, rhs_dilation, reversal, fgc, bgc):
    return {"dimension_numbers": dims, "window_strides": strides, "padding": np.asarray(padding),
            "lhs_dilation": lhs_dilation, "rhs_dilation": rhs_dilation, "window_reversal": reversal,
            "feature_group_count": fgc, "batch_group_count": bgc}


SPEC_LHS = np.array([[[[1], [2], [5], [6]], [[3], [4], [7], [8]], [[10], [11], [14], [15]],
                      [[12], [13], [16], [17]]]], np.int64)


def test_convolution_spec_example_and_i8_to_i32():
    dims = conv_dims("b01f", "01io", "b01f")
    attrs = {"dimension_numbers": dims, "window_strides": [4, 4], "lhs_dilation": [2, 2]}
    out = run("stablehlo.convolution", [SPEC_LHS, np.ones((3, 3, 1, 1), np.int64)], attrs,
              [tensor((1, 2, 2, 1), "i64")])
    np.testing.assert_array_equal(out[0, :, :, 0], [[10, 26], [46, 62]])
    out = run("stablehlo.convolution", [SPEC_LHS.astype(np.int8), np.full((3, 3, 1, 1), 10, np.int8)], attrs,
              [tensor((1, 2, 2, 1), "i32")])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out[0, :, :, 0], [[100, 260], [460, 620]])


def test_dynamic_conv_takes_padding_as_operand():
    dims = conv_dims("b01f", "01io", "b01f")
    attrs = {"dimension_numbers": dims, "window_strides": [4, 4], "lhs_dilation": [2, 2]}
    out = run("stablehlo.dynamic_conv", [SPEC_LHS, np.ones((3, 3, 1, 1), np.int64), np.ones((2, 2), np.int64)],
              attrs, [tensor((1, 2, 2, 1), "i64")])
    np.testing.assert_array_equal(out[0, :, :, 0], [[1, 5], [10, 14]])


CONV_CASES = [
    # (lhs layout, rhs layout, out layout, lhs shape, rhs shape, strides, padding, lhs dil, rhs dil,
    #  reversal, feature groups, batch groups)
    ("b01f", "01io", "b01f", (1, 4, 4, 1), (1, 2, 1, 4), [4, 4], [[0, 0], [0, 0]], [2, 2], [1, 1], [0, 0], 1, 1),
    ("0b1f", "01io", "b01f", (1, 4, 4, 1), (1, 2, 1, 4), [4, 4], [[0, 0], [0, 0]], [2, 2], [1, 1], [0, 0], 1, 4),
    ("b0f1", "0i1o", "b01f", (1, 4, 4, 1), (1, 2, 1, 4), [4, 4], [[0, 0], [0, 0]], [2, 2], [1, 1], [0, 0], 2, 1),
    ("bf01", "oi01", "bf01", (2, 3, 5, 6), (4, 3, 2, 3), [1, 2], [[1, 2], [-1, 1]], [1, 2], [2, 1], [1, 0], 1, 1),
    ("f0b", "i0o", "0fb", (4, 7, 2), (2, 3, 6), [2], [[2, -1]], [3], [2], [1], 2, 1),
    ("b012f", "210io", "f012b", (2, 3, 2, 3, 2), (2, 2, 1, 2, 3), [1, 1, 2], [[0, 1], [1, 0], [0, 0]],
     [1, 2, 1], [1, 1, 2], [0, 1, 0], 1, 1),
    ("bf0", "oi0", "bf0", (4, 3, 5), (6, 3, 2), [1], [[0, 0]], [1], [1], [0], 1, 2),
    ("bf0", "oi0", "bf0", (1, 2, 0), (3, 2, 2), [1], [[0, 0]], [1], [1], [0], 1, 1),
    ("bf0", "oi0", "bf0", (1, 2, 3), (3, 2, 0), [1], [[0, 0]], [1], [1], [0], 1, 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution_matches_the_spec_definition(case):
    lhs_l, rhs_l, out_l, lhs_shape, rhs_shape, strides, padding, ld, rd, rev, fgc, bgc = case
    rng = np.random.default_rng(len(lhs_shape) + sum(lhs_shape))
    lhs = rng.integers(-5, 6, lhs_shape).astype(np.int64)
    rhs = rng.integers(-5, 6, rhs_shape).astype(np.int64)
    dims = conv_dims(lhs_l, rhs_l, out_l)
    reversal = [bool(v) for v in rev]
    expected = naive_convolution(lhs, rhs, dims, strides, padding, ld, rd, reversal, fgc, bgc)
    attrs = conv_attrs(dims, strides, padding, ld, rd, reversal, fgc, bgc)
    out = run("stablehlo.convolution", [lhs, rhs], attrs, [tensor(expected.shape, "i64")])
    np.testing.assert_array_equal(out, expected)
    # the same in f32 (small integers: exact)
    outf = run("stablehlo.convolution", [lhs.astype(np.float32), rhs.astype(np.float32)], attrs,
               [tensor(expected.shape, "f32")])
    np.testing.assert_array_equal(outf, expected.astype(np.float32))


# ---------------------------------------------------------------- chlo.ragged_dot


def ragged_attrs(lb=(), rb=(), lc=(), rc=(), ragged=(), group=()):
    return {"ragged_dot_dimension_numbers": {
        "lhs_batching_dimensions": list(lb), "rhs_batching_dimensions": list(rb),
        "lhs_contracting_dimensions": list(lc), "rhs_contracting_dimensions": list(rc),
        "lhs_ragged_dimensions": list(ragged), "rhs_group_dimensions": list(group)}}


def test_ragged_dot_ragged_free_dimension():
    rng = np.random.default_rng(3)
    lhs = rng.integers(-5, 5, (7, 4)).astype(np.int32)
    rhs = rng.integers(-5, 5, (3, 4, 2)).astype(np.int32)
    sizes = np.array([2, 0, 4], np.int64)  # row 6 is in no group: zeros
    out = run("chlo.ragged_dot", [lhs, rhs, sizes], ragged_attrs(lc=[1], rc=[1], ragged=[0], group=[0]),
              [tensor((7, 2), "i32")])
    expected = np.zeros((7, 2), np.int32)
    expected[0:2] = lhs[0:2] @ rhs[0]
    expected[2:6] = lhs[2:6] @ rhs[2]
    np.testing.assert_array_equal(out, expected)


def test_ragged_dot_ragged_contracting_and_batch_dimensions():
    rng = np.random.default_rng(4)
    lhs = rng.integers(-5, 5, (3, 5)).astype(np.int64)
    rhs = rng.integers(-5, 5, (5, 2)).astype(np.int64)
    sizes = np.array([2, 3], np.int64)
    out = run("chlo.ragged_dot", [lhs, rhs, sizes], ragged_attrs(lc=[1], rc=[0], ragged=[1]),
              [tensor((2, 3, 2), "i64")])
    np.testing.assert_array_equal(out, np.stack([lhs[:, :2] @ rhs[:2], lhs[:, 2:] @ rhs[2:]]))
    lhs = rng.integers(-5, 5, (4, 2, 3)).astype(np.int64)
    rhs = rng.integers(-5, 5, (4, 3, 2)).astype(np.int64)
    out = run("chlo.ragged_dot", [lhs, rhs, np.array([1, 2], np.int64)],
              ragged_attrs(lb=[0], rb=[0], lc=[2], rc=[1], ragged=[0]), [tensor((4, 2, 2), "i64")])
    expected = lhs @ rhs
    expected[3] = 0
    np.testing.assert_array_equal(out, expected)


# ---------------------------------------------------------------- fft


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_fft_and_ifft_match_numpy(dtype):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 4, 5)) + 1j * rng.standard_normal((3, 4, 5))).astype(dtype)
    et = "complex<f32>" if dtype == np.complex64 else "complex<f64>"
    for kind, fn in (("FFT", np.fft.fftn), ("IFFT", np.fft.ifftn)):
        out = run("stablehlo.fft", [x], {"fft_type": kind, "fft_length": [4, 5]}, [tensor(x.shape, et)])
        assert out.dtype == dtype
        np.testing.assert_allclose(out, fn(x.astype(np.complex128), axes=(1, 2)), rtol=1e-5, atol=1e-5)


def test_rfft_and_irfft_match_numpy():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 6, 8))
    out = run("stablehlo.fft", [x], {"fft_type": "RFFT", "fft_length": [6, 8]}, [tensor((2, 6, 5), "complex<f64>")])
    np.testing.assert_allclose(out, np.fft.rfftn(x, axes=(1, 2)), atol=1e-12)
    back = run("stablehlo.fft", [out], {"fft_type": "IRFFT", "fft_length": [6, 8]}, [tensor((2, 6, 8), "f64")])
    np.testing.assert_allclose(back, x, atol=1e-12)
    spec = run("stablehlo.fft", [np.array([1, 0, 0, 0], np.complex64)], {"fft_type": "FFT", "fft_length": [4]},
               [tensor((4,), "complex<f32>")])
    np.testing.assert_array_equal(spec, np.ones(4))


def test_fft_zero_sized():
    x = np.zeros((3, 0, 5), np.complex128)
    out = run("stablehlo.fft", [x], {"fft_type": "IRFFT", "fft_length": [8]}, [tensor((3, 0, 8), "f64")])
    assert out.shape == (3, 0, 8) and out.dtype == np.float64


# ---------------------------------------------------------------- triangular_solve, cholesky


@pytest.mark.parametrize("left_side,lower,unit,transpose",
                         list(itertools.product([True, False], [True, False], [True, False],
                                                ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])))
def test_triangular_solve_all_variants(left_side, lower, unit, transpose):
    rng = np.random.default_rng(7)
    n, m = 4, 3
    a = rng.standard_normal((2, n, n)) + 1j * rng.standard_normal((2, n, n)) + 4 * np.eye(n)
    b = rng.standard_normal((2, n, m) if left_side else (2, m, n)) + 1j * rng.standard_normal(
        (2, n, m) if left_side else (2, m, n))
    attrs = {"left_side": left_side, "lower": lower, "unit_diagonal": unit, "transpose_a": transpose}
    out = run("stablehlo.triangular_solve", [a, b], attrs, [tensor(b.shape, "complex<f64>")])
    tri = np.tril(a) if lower else np.triu(a)  # the other triangle must be ignored
    if unit:
        tri[:, np.arange(n), np.arange(n)] = 1
    op = {"NO_TRANSPOSE": tri, "TRANSPOSE": np.swapaxes(tri, 1, 2),
          "ADJOINT": np.conj(np.swapaxes(tri, 1, 2))}[transpose]
    np.testing.assert_allclose(op @ out if left_side else out @ op, b, atol=1e-10)


def test_triangular_solve_spec_example_in_f16():
    a = np.array([[1, 0, 0], [2, 4, 0], [3, 5, 6]], np.float16)
    b = np.array([[2, 0, 0], [4, 8, 0], [6, 10, 12]], np.float16)
    attrs = {"left_side": True, "lower": True, "unit_diagonal": False, "transpose_a": "NO_TRANSPOSE"}
    out = run("stablehlo.triangular_solve", [a, b], attrs, [tensor((3, 3), "f16")])
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, 2 * np.eye(3))


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_matches_numpy_and_reads_one_triangle(lower):
    rng = np.random.default_rng(8)
    m = rng.standard_normal((3, 4, 4)) + 1j * rng.standard_normal((3, 4, 4))
    a = m @ np.conj(np.swapaxes(m, 1, 2)) + 4 * np.eye(4)
    garbage = a + (np.triu(np.full((4, 4), 99.0), 1) if lower else np.tril(np.full((4, 4), 99.0), -1))
    out = run("stablehlo.cholesky", [garbage], {"lower": lower}, [tensor(a.shape, "complex<f64>")])
    expected = np.linalg.cholesky(a)
    if not lower:
        expected = np.conj(np.swapaxes(expected, 1, 2))
    np.testing.assert_allclose(out, expected, atol=1e-12)


def test_cholesky_spec_example_and_non_positive_definite():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 20.0, 26.0], [3.0, 26.0, 70.0]], np.float32)
    out = run("stablehlo.cholesky", [a], {"lower": True}, [tensor((3, 3), "f32")])
    np.testing.assert_allclose(out, [[1, 0, 0], [2, 4, 0], [3, 5, 6]], atol=1e-6)
    bad = np.stack([a, -a])
    out = run("stablehlo.cholesky", [bad], {"lower": True}, [tensor((2, 3, 3), "f32")])
    assert np.isnan(out[1]).all() and not np.isnan(out[0]).any()


# ---------------------------------------------------------------- batch norm

BN_OPERAND = np.array([[[1.0, 2.0], [3.0, 4.0]], [[3.0, 4.0], [1.0, 2.0]]])


def test_batch_norm_inference_and_training_spec_examples():
    ones = np.ones(2)
    attrs = {"epsilon": 0.0, "feature_index": 2}
    out = run("stablehlo.batch_norm_inference", [BN_OPERAND, ones, ones, np.array([2.0, 3.0]), ones], attrs,
              [tensor((2, 2, 2), "f64")])
    expected = [[[0.0, 0.0], [2.0, 2.0]], [[2.0, 2.0], [0.0, 0.0]]]
    np.testing.assert_array_equal(out, expected)
    output, mean, variance = run("stablehlo.batch_norm_training", [BN_OPERAND, ones, ones], attrs,
                                 [tensor((2, 2, 2), "f64"), tensor((2,), "f64"), tensor((2,), "f64")])
    np.testing.assert_array_equal(output, expected)
    np.testing.assert_array_equal(mean, [2.0, 3.0])
    np.testing.assert_array_equal(variance, [1.0, 1.0])


def test_batch_norm_grad_spec_example():
    ones = np.ones(2)
    grads = run("stablehlo.batch_norm_grad", [BN_OPERAND, ones, np.array([2.0, 3.0]), ones,
                                              np.full((2, 2, 2), 0.1)],
                {"epsilon": 0.0, "feature_index": 2},
                [tensor((2, 2, 2), "f64"), tensor((2,), "f64"), tensor((2,), "f64")])
    np.testing.assert_allclose(grads[0], np.zeros((2, 2, 2)), atol=1e-15)
    np.testing.assert_allclose(grads[1], [0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(grads[2], [0.4, 0.4])


def test_batch_norm_training_f32_with_epsilon():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    scale, offset = np.float32([1, 2, 3]), np.float32([0, -1, 1])
    output, mean, variance = run("stablehlo.batch_norm_training", [x, scale, offset],
                                 {"epsilon": 1e-3, "feature_index": 1},
                                 [tensor(x.shape, "f32"), tensor((3,), "f32"), tensor((3,), "f32")])
    m = x.astype(np.float64).mean(axis=(0, 2))
    v = x.astype(np.float64).var(axis=(0, 2))
    np.testing.assert_allclose(mean, m, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(variance, v, rtol=1e-5)
    normalized = (x - m[None, :, None]) / np.sqrt(v[None, :, None] + 1e-3)
    np.testing.assert_allclose(output, normalized * scale[None, :, None] + offset[None, :, None], rtol=1e-4,
                               atol=1e-5)
    assert output.dtype == np.float32


# ---------------------------------------------------------------- rng_bit_generator


def rng_bits(state, algorithm, out_shape, out_et, state_et="ui64"):
    state = np.asarray(state, np.uint64)
    return run("stablehlo.rng_bit_generator", [state], {"rng_algorithm": algorithm},
               [tensor(state.shape, state_et), tensor(out_shape, out_et)],
               operand_types=[tensor(state.shape, state_et)])


def test_threefry_spec_example():
    state, out = rng_bits([1, 2], "THREE_FRY", (2, 2), "ui64")
    np.testing.assert_array_equal(state, [1, 6])
    np.testing.assert_array_equal(out, np.array([[9236835810183407956, 16087790271692313299],
                                                 [18212823393184779219, 2658481902456610144]], np.uint64))


def test_threefry_and_philox_known_answers():
    # Random123's known-answer vectors for threefry2x32-20 and philox4x32-10
    u = lambda *v: [np.uint64(x) for x in v]  # noqa: E731
    assert [int(v) for v in ops_rng.threefry2x32(*u(0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344))] == \
        [0xC4923A9C, 0x483DF7A0]
    out = ops_rng.philox4x32(u(0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), *u(0xA4093822, 0x299F31D0))
    assert [int(v) for v in out] == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def test_threefry_32_bit_outputs_split_the_shape():
    key, counter = 0x0123456789ABCDEF, 40
    _, out = rng_bits([key, counter], "THREE_FRY", (3, 3), "ui32")  # no even dim: split the largest (0)
    y0, y1 = ops_rng.threefry2x32(np.uint64(counter) + np.arange(6, dtype=np.uint64) & np.uint64(0xFFFFFFFF),
                                  np.zeros(6, np.uint64), np.uint64(key & 0xFFFFFFFF), np.uint64(key >> 32))
    # half shape (2, 1, 3): block (i, 0, j) gives out[2i, j] and out[2i + 1, j]
    blocks0, blocks1 = y0.reshape(2, 3), y1.reshape(2, 3)
    np.testing.assert_array_equal(out, np.stack([blocks0, blocks1], axis=1).reshape(4, 3)[:3])
    state, narrow = rng_bits([key, counter], "THREE_FRY", (3, 3), "ui8")
    np.testing.assert_array_equal(narrow, out.astype(np.uint8))
    np.testing.assert_array_equal(state, [key, counter + 6])


def test_philox_state_layouts_and_float_outputs():
    key = 7
    state2, out2 = rng_bits([key, 5], "PHILOX", (5,), "ui32")
    words = ops_rng.philox4x32([np.uint64(5) + np.arange(2, dtype=np.uint64), np.zeros(2, np.uint64),
                                np.full(2, key, np.uint64), np.zeros(2, np.uint64)], np.uint64(key), np.uint64(0))
    np.testing.assert_array_equal(out2, np.stack(words, axis=-1).reshape(-1)[:5])
    np.testing.assert_array_equal(state2, [key, 7])  # 2-element state: key, low counter word
    state3, out3 = rng_bits([key, 2 ** 64 - 1, 9], "PHILOX", (3,), "ui64")
    np.testing.assert_array_equal(state3, [key, 1, 10])  # the 128-bit counter carries
    default_state, default_out = rng_bits([key, 5], "DEFAULT", (5,), "ui32")
    np.testing.assert_array_equal(default_out, out2)
    _, floats = rng_bits([key, 5], "PHILOX", (5,), "f32")
    np.testing.assert_array_equal(floats.view(np.uint32), out2)


def test_rng_uniform_and_normal_are_deterministic_and_in_range():
    shape = np.array([50, 40], np.int64)
    u = run("stablehlo.rng", [np.float32(-2), np.float32(3), shape], {"rng_distribution": "UNIFORM"},
            [tensor((50, 40), "f32")])
    assert u.dtype == np.float32 and u.min() >= -2 and u.max() < 3 and abs(float(u.mean()) - 0.5) < 0.2
    again = run("stablehlo.rng", [np.float32(-2), np.float32(3), shape], {"rng_distribution": "UNIFORM"},
                [tensor((50, 40), "f32")])
    np.testing.assert_array_equal(u, again)
    i = run("stablehlo.rng", [np.int8(-3), np.int8(4), shape], {"rng_distribution": "UNIFORM"},
            [tensor((50, 40), "i8")])
    assert i.dtype == np.int8 and set(np.unique(i)) == set(range(-3, 4))
    n = run("stablehlo.rng", [np.float64(10), np.float64(2), shape], {"rng_distribution": "NORMAL"},
            [tensor((50, 40), "f64")])
    assert abs(n.mean() - 10) < 0.3 and abs(n.std() - 2) < 0.3


def test_large_float_contractions_use_one_wide_matmul(monkeypatch):
    import axle.interpreter.ops_linalg as ops_linalg

    monkeypatch.setattr(ops_linalg, "SEQUENTIAL_LIMIT", 10)
    rng = np.random.default_rng(10)
    lhs, rhs = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
    out = run("stablehlo.dot_general", [lhs, rhs], dot_dims(lc=[1], rc=[0]), [tensor((6, 4), "f32")])
    np.testing.assert_array_equal(out, (lhs.astype(np.float64) @ rhs.astype(np.float64)).astype(np.float32))
    x = rng.integers(-4, 5, (1, 6, 2)).astype(np.float32)
    w = rng.integers(-4, 5, (3, 2, 2)).astype(np.float32)
    attrs = {"dimension_numbers": conv_dims("b0f", "0io", "b0f")}
    conv = run("stablehlo.convolution", [x, w], attrs, [tensor((1, 4, 2), "f32")])
    expected = naive_convolution(x.astype(np.int64), w.astype(np.int64), attrs["dimension_numbers"], [1],
                                 [[0, 0]], [1], [1], [False], 1, 1)
    np.testing.assert_array_equal(conv, expected.astype(np.float32))


def test_einsum_ops():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = run("stablehlo.einsum", [a, b], {"einsum_config": "ab,bc->ac"}, [tensor((2, 4), "i32")])
    np.testing.assert_array_equal(out, a @ b)
    out = run("stablehlo.unary_einsum", [a.astype(np.float32)], {"einsum_config": "ab->ba"}, [tensor((3, 2), "f32")])
    np.testing.assert_array_equal(out, a.T.astype(np.float32))
