"""Quantization: uniform_quantize / uniform_dequantize and quantized_call (ops_quant.py)."""
import numpy as np

from axle.ir.types import QuantizedType, TensorType, element_type, tensor
from axle.interpreter import ops_quant
from axle.interpreter.ops_quant import is_quantized_call, quantized_call, requantize
from axle.interpreter.registry import OpCall, lookup


def qtype(storage="i8", scales=(1.0,), zero_points=(0,), axis=None, expressed="f32",
          smin=None, smax=None):
    return QuantizedType(element_type(storage), element_type(expressed), tuple(scales),
                         tuple(zero_points), axis, smin, smax)


def qtensor(shape, q):
    return TensorType(tuple(shape), q)


def call(name, operands, operand_types, result_types, attrs=None, regions=()):
    return OpCall(name, [np.asarray(o) for o in operands], list(operand_types),
                  list(result_types), attrs or {}, list(regions))


def quantize_op(x, result_type, operand_type=None):
    x = np.asarray(x)
    operand_type = operand_type or tensor(x.shape, "f32")
    return lookup("stablehlo.uniform_quantize")(
        call("stablehlo.uniform_quantize", [x], [operand_type], [result_type]))


def dequantize_op(x, operand_type):
    x = np.asarray(x)
    result = tensor(x.shape, operand_type.element_type.expressed_type)
    return lookup("stablehlo.uniform_dequantize")(
        call("stablehlo.uniform_dequantize", [x], [operand_type], [result]))


PER_AXIS_A = qtype(scales=(0.1, 0.5), zero_points=(-30, -20), axis=0)
PER_AXIS_B = qtype(scales=(0.1, 0.2), zero_points=(-20, -30), axis=0)


# ---------------------------------------------------------------- quantize / dequantize


def test_uniform_quantize_per_axis_spec_example():
    result = quantize_op(np.array([4.0, 15.0], np.float32), qtensor([2], PER_AXIS_A))
    assert result.dtype == np.int8
    np.testing.assert_array_equal(result, [10, 10])


def test_uniform_requantize_per_axis_spec_example():
    x = np.array([10, 10], np.int8)
    result = quantize_op(x, qtensor([2], PER_AXIS_B), qtensor([2], PER_AXIS_A))
    np.testing.assert_array_equal(result, [20, 45])


def test_uniform_dequantize_per_axis_spec_example():
    result = dequantize_op(np.array([10, 10], np.int8), qtensor([2], PER_AXIS_A))
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, [4.0, 15.0], rtol=1e-6)


def test_quantize_rounds_half_to_even_and_clamps():
    q = qtype(scales=(0.5,), zero_points=(0,))
    x = np.array([0.25, 0.75, 1.25, -0.25, 1000.0, -1000.0, np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(quantize_op(x, qtensor([8], q)),
                                  [0, 2, 2, 0, 127, -128, 127, -128])


def test_quantize_nan_gives_zero_storage():
    q = qtype(scales=(0.714,), zero_points=(-128,))
    np.testing.assert_array_equal(quantize_op(np.array([np.nan], np.float32), qtensor([1], q)),
                                  [0])


def test_quantize_respects_narrow_storage_range_and_sub_byte_storage():
    narrow = qtype(scales=(1.0,), zero_points=(0,), smin=-100, smax=100)
    np.testing.assert_array_equal(quantize_op(np.float32([-500, 7, 500]), qtensor([3], narrow)),
                                  [-100, 7, 100])
    i4 = qtype("i4", scales=(0.5,), zero_points=(1,))
    result = quantize_op(np.float32([-10, 0.0, 1.0, 10]), qtensor([4], i4))
    assert result.dtype == element_type("i4").dtype
    np.testing.assert_array_equal(result.astype(np.int64), [-8, 1, 3, 7])
    u4 = qtype("ui4", scales=(1.0,), zero_points=(8,))
    np.testing.assert_array_equal(
        quantize_op(np.float32([-9, 0, 7.6]), qtensor([3], u4)).astype(np.int64), [0, 8, 15])


def test_quantize_per_axis_along_inner_dimension():
    q = qtype(scales=(1.0, 0.5, 0.25), zero_points=(0, 1, -1), axis=1)
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(quantize_op(x, qtensor([2, 3], q)), [[1, 3, 3], [1, 3, 3]])
    back = dequantize_op(np.array([[1, 3, 3], [1, 3, 3]], np.int8), qtensor([2, 3], q))
    np.testing.assert_array_equal(back, np.ones((2, 3)))


def test_quantize_and_dequantize_with_bf16_expressed_type():
    q = qtype(scales=(0.5,), zero_points=(3,), expressed="bf16")
    x = np.array([1.0, -2.5], element_type("bf16").dtype)
    stored = quantize_op(x, qtensor([2], q), tensor([2], "bf16"))
    np.testing.assert_array_equal(stored, [5, -2])
    back = dequantize_op(stored, qtensor([2], q))
    assert back.dtype == element_type("bf16").dtype
    np.testing.assert_array_equal(back.astype(np.float32), [1.0, -2.5])


def test_zero_sized_tensors():
    q = qtype(scales=(0.5,))
    assert quantize_op(np.zeros((0, 3), np.float32), qtensor([0, 3], q)).shape == (0, 3)
    assert dequantize_op(np.zeros((2, 0), np.int8), qtensor([2, 0], q)).shape == (2, 0)


def test_requantize_uses_merged_scale_in_f32():
    source = qtype(scales=(0.1,), zero_points=(-30,))
    target = qtype(scales=(0.5,), zero_points=(-20,))
    # merged scale 0.2, merged zero point -20 + 30 * 0.2 = -14
    np.testing.assert_array_equal(requantize(np.int8([-20, -10, 127]), source, target),
                                  [-18, -16, 11])
    # to an i32 intermediate there is no clamping
    wide = qtype("i32", scales=(0.001,), zero_points=(0,))
    np.testing.assert_array_equal(requantize(np.int8([100]), source, wide), [13000])


# ---------------------------------------------------------------- quantized_call


def float_add(c):
    assert all(t.element_type.name == "f32" for t in c.operand_types + c.result_types)
    return (c.operands[0] + c.operands[1]).astype(np.float32)


def float_multiply(c):
    return (c.operands[0] * c.operands[1]).astype(np.float32)


def test_is_quantized_call():
    q = qtensor([2], qtype(scales=(0.5,)))
    f = tensor([2], "f32")
    assert is_quantized_call(call("stablehlo.add", [[1, 2], [1, 2]], [q, q], [q]))
    assert is_quantized_call(call("stablehlo.compare", [[1, 2], [1, 2]], [q, q],
                                  [tensor([2], "i1")]))
    assert not is_quantized_call(call("stablehlo.add", [[1.0], [1.0]], [f, f], [f]))
    assert not is_quantized_call(call("stablehlo.uniform_quantize", [[1.0, 2.0]], [f], [q]))


def test_quantized_add_spec_interpret_example():
    lhs_t = qtensor([2], qtype(scales=(0.1,), zero_points=(-30,)))
    rhs_t = qtensor([2], qtype(scales=(0.5,), zero_points=(-20,)))
    lhs = quantize_op(np.float32([1.0, 2.0]), lhs_t)
    rhs = quantize_op(np.float32([3.0, 4.0]), rhs_t)
    c = call("stablehlo.add", [lhs, rhs], [lhs_t, rhs_t], [rhs_t])
    result = quantized_call(float_add, c)
    assert result.dtype == np.int8
    np.testing.assert_array_equal(result, [-12, -8])


def test_quantized_add_clamps_to_storage_range():
    t = qtensor([2], qtype(scales=(1.0,), zero_points=(0,)))
    result = quantized_call(float_add, call("stablehlo.add", [np.int8([100, -100]),
                                                              np.int8([100, -100])], [t, t], [t]))
    np.testing.assert_array_equal(result, [127, -128])


def test_quantized_add_per_axis_i32():
    q = qtype("i32", scales=(1.0, 2.0), zero_points=(1, -1), axis=0)
    t = qtensor([2], q)
    result = quantized_call(float_add, call("stablehlo.add", [np.int32([5, 5]), np.int32([5, 5])],
                                            [t, t], [t]))
    np.testing.assert_array_equal(result, [9, 11])  # (5 - zp) + (5 - zp) + zp


def test_dequantize_op_quantize_for_multiply():
    lhs_t = qtensor([3], qtype(scales=(0.5,), zero_points=(0,)))
    rhs_t = qtensor([3], qtype(scales=(0.25,), zero_points=(4,)))
    out_t = qtensor([3], qtype(scales=(0.1,), zero_points=(-10,)))
    lhs, rhs = np.int8([2, 4, -6]), np.int8([8, 0, 12])  # 1, 2, -3 and 1, -1, 2
    result = quantized_call(float_multiply, call("stablehlo.multiply", [lhs, rhs],
                                                 [lhs_t, rhs_t], [out_t]))
    np.testing.assert_array_equal(result, [0, -30, -70])  # 1, -2, -6 -> /0.1 - 10


def test_dequantize_op_quantize_per_axis_result():
    in_t = qtensor([2, 2], qtype(scales=(1.0,), zero_points=(0,)))
    out_t = qtensor([2, 2], qtype(scales=(1.0, 0.5), zero_points=(0, 2), axis=1))
    result = quantized_call(lambda c: -c.operands[0], call(
        "stablehlo.negate", [np.int8([[1, 2], [3, 4]])], [in_t], [out_t]))
    np.testing.assert_array_equal(result, [[-1, -2], [-3, -6]])


def test_compare_dequantizes_and_compares_as_floats():
    seen = {}

    def compare(c):
        seen.update(c.attrs)
        assert c.operand_types[0].element_type.name == "f32"
        return c.operands[0] < c.operands[1]

    a_t = qtensor([2], qtype(scales=(1.0,), zero_points=(0,)))
    b_t = qtensor([2], qtype(scales=(0.1,), zero_points=(0,)))
    result = quantized_call(compare, call("stablehlo.compare", [np.int8([1, 3]), np.int8([20, 20])],
                                          [a_t, b_t], [tensor([2], "i1")],
                                          {"comparison_direction": "LT",
                                           "compare_type": "SIGNED"}))
    np.testing.assert_array_equal(result, [True, False])
    assert seen["compare_type"] == "FLOAT"


def test_data_movement_runs_on_storage_values():
    seen = []

    def transpose(c):
        seen.append((c.operand_types[0], c.result_types[0]))
        return np.transpose(c.operands[0], c.attrs["permutation"])

    q = qtype("i32", scales=(1e-9,), zero_points=(5,))
    big = np.int32([[123456789, -2], [3, 2147483647]])
    result = quantized_call(transpose, call("stablehlo.transpose", [big], [qtensor([2, 2], q)],
                                            [qtensor([2, 2], q)], {"permutation": [1, 0]}))
    np.testing.assert_array_equal(result, big.T)  # exact, even where f32 could not be
    assert seen == [(tensor([2, 2], "i32"), tensor([2, 2], "i32"))]


def test_maximum_with_equal_types_runs_on_storage_and_otherwise_dequantizes():
    t = qtensor([2], qtype("i32", scales=(1e-9,), zero_points=(0,)))
    x, y = np.int32([123456789, 5]), np.int32([123456788, 6])
    result = quantized_call(lambda c: np.maximum(*c.operands),
                            call("stablehlo.maximum", [x, y], [t, t], [t]))
    np.testing.assert_array_equal(result, [123456789, 6])
    other = qtensor([2], qtype("i32", scales=(2e-9,), zero_points=(0,)))
    result = quantized_call(lambda c: np.maximum(*c.operands),
                            call("stablehlo.maximum", [np.int32([4, 10]), np.int32([3, 3])],
                                 [t, other], [t]))
    np.testing.assert_array_equal(result, [6, 10])


def test_reshape_with_different_scales_requantizes():
    a = qtensor([2], qtype(scales=(1.0,), zero_points=(0,)))
    b = qtensor([2], qtype(scales=(0.5,), zero_points=(0,)))
    result = quantized_call(lambda c: c.operands[0].reshape(c.result_types[0].shape),
                            call("stablehlo.reshape", [np.int8([3, -4])], [a], [b]))
    np.testing.assert_array_equal(result, [6, -8])


def test_multiple_results_are_each_quantized():
    t = qtensor([2], qtype(scales=(0.5,), zero_points=(0,)))

    def two(c):
        return [c.operands[0] * 2, c.operands[0] * 3]

    result = quantized_call(two, call("stablehlo.batch_norm_training", [np.int8([1, 2])], [t],
                                      [t, t]))
    np.testing.assert_array_equal(result[0], [2, 4])
    np.testing.assert_array_equal(result[1], [3, 6])


# ---------------------------------------------------------------- dot_general / convolution


def float_matmul(c):
    dims = c.attrs["dot_dimension_numbers"]
    assert dims["lhs_contracting_dimensions"] == [1]
    out = c.operands[0].astype(np.float64) @ c.operands[1].astype(np.float64)
    return out.astype(c.result_types[0].element_type.dtype)


MATMUL = {"dot_dimension_numbers": {"lhs_batching_dimensions": [], "rhs_batching_dimensions": [],
                                    "lhs_contracting_dimensions": [1],
                                    "rhs_contracting_dimensions": [0]}}


def test_quantized_dot_general_in_integers():
    lhs_t = qtensor([2, 2], qtype(scales=(0.5,), zero_points=(1,)))
    rhs_t = qtensor([2, 2], qtype(scales=(0.25,), zero_points=(0,)))
    out_t = qtensor([2, 2], qtype("i32", scales=(0.1,), zero_points=(3,)))
    lhs, rhs = np.int8([[1, 2], [3, 4]]), np.int8([[1, 0], [2, 1]])
    result = quantized_call(float_matmul, call("stablehlo.dot_general", [lhs, rhs],
                                               [lhs_t, rhs_t], [out_t], MATMUL))
    # raw = lhs @ rhs = [[5, 2], [11, 4]], zero-point part = [[3, 1], [3, 1]],
    # combined scale 1.25: trunc(raw * 1.25) + 3 - trunc(offset * 1.25)
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, [[6, 4], [13, 7]])


def test_quantized_dot_general_truncates_where_float_rounding_would_differ():
    lhs_t = qtensor([1, 1], qtype(scales=(1.0,), zero_points=(0,)))
    rhs_t = qtensor([1, 1], qtype(scales=(1.0,), zero_points=(0,)))
    out_t = qtensor([1, 1], qtype("i32", scales=(0.4,), zero_points=(0,)))
    result = quantized_call(float_matmul, call("stablehlo.dot_general",
                                               [np.int8([[3]]), np.int8([[1]])],
                                               [lhs_t, rhs_t], [out_t], MATMUL))
    np.testing.assert_array_equal(result, [[7]])  # 3 / 0.4 = 7.5 -> 7 (truncation)


def test_hybrid_dot_general_dequantizes_rhs_only():
    lhs_t = tensor([1, 2], "f32")
    rhs_t = qtensor([2, 1], qtype(scales=(0.5,), zero_points=(0,)))
    out_t = tensor([1, 1], "f32")
    result = quantized_call(float_matmul, call("stablehlo.dot_general",
                                               [np.float32([[1.5, 2.0]]), np.int8([[2], [4]])],
                                               [lhs_t, rhs_t], [out_t], MATMUL))
    np.testing.assert_allclose(result, [[5.5]])  # 1.5 * 1 + 2 * 2


def naive_conv_nhwc(c):
    """NHWC x HWIO convolution with padding only (no strides/dilations), in float64."""
    lhs, rhs = (x.astype(np.float64) for x in c.operands)
    pad = np.asarray(c.attrs.get("padding", np.zeros((2, 2), int)))
    lhs = np.pad(lhs, [(0, 0), tuple(pad[0]), tuple(pad[1]), (0, 0)])
    kh, kw = rhs.shape[:2]
    oh, ow = lhs.shape[1] - kh + 1, lhs.shape[2] - kw + 1
    out = np.zeros((lhs.shape[0], oh, ow, rhs.shape[3]))
    for i in range(oh):
        for j in range(ow):
            out[:, i, j, :] = np.einsum("bhwi,hwio->bo", lhs[:, i:i + kh, j:j + kw, :], rhs)
    return out.astype(c.result_types[0].element_type.dtype)


NHWC = {"dimension_numbers": {
    "input_batch_dimension": 0, "input_feature_dimension": 3, "input_spatial_dimensions": [1, 2],
    "kernel_input_feature_dimension": 2, "kernel_output_feature_dimension": 3,
    "kernel_spatial_dimensions": [0, 1], "output_batch_dimension": 0,
    "output_feature_dimension": 3, "output_spatial_dimensions": [1, 2]},
    "padding": np.array([[1, 1], [1, 1]])}


def test_quantized_convolution_in_integers_pads_with_the_zero_point():
    rng = np.random.default_rng(0)
    lhs = rng.integers(-128, 128, (1, 3, 3, 2)).astype(np.int8)
    rhs = rng.integers(-128, 128, (2, 2, 2, 3)).astype(np.int8)
    lhs_t = qtensor(lhs.shape, qtype(scales=(0.02,), zero_points=(-7,)))
    rhs_t = qtensor(rhs.shape, qtype(scales=(0.03,), zero_points=(0,)))
    out_t = qtensor((1, 4, 4, 3), qtype("i32", scales=(0.0005,), zero_points=(11,)))
    result = quantized_call(naive_conv_nhwc, call("stablehlo.convolution", [lhs, rhs],
                                                  [lhs_t, rhs_t], [out_t], NHWC))
    # independent reference: pad lhs with its zero point, integer conv, zero point offset
    padded = np.pad(lhs.astype(np.int64), [(0, 0), (1, 1), (1, 1), (0, 0)], constant_values=-7)
    raw = np.zeros((1, 4, 4, 3), np.int64)
    for i in range(4):
        for j in range(4):
            raw[:, i, j, :] = np.einsum("bhwi,hwio->bo", padded[:, i:i + 2, j:j + 2, :],
                                        rhs.astype(np.int64))
    offset = -7 * rhs.astype(np.int64).sum(axis=(0, 1, 2))
    scale = np.float32(0.02 * 0.03 / 0.0005)
    expected = (np.trunc(raw.astype(np.float32) * scale).astype(np.int64) + 11
                - np.trunc(offset.astype(np.float32) * scale).astype(np.int64))
    np.testing.assert_array_equal(result, expected)
    # and it is close to the float answer
    exact = naive_conv_nhwc(call("c", [(lhs.astype(np.float64) + 7) * 0.02,
                                       rhs.astype(np.float64) * 0.03], [], [tensor((1, 4, 4, 3),
                                                                                    "f64")], NHWC))
    np.testing.assert_allclose((result - 11) * 0.0005, exact, atol=0.0011)


def test_quantized_convolution_with_nonzero_rhs_zero_point_dequantizes():
    lhs = np.int8([[[[1]], [[2]]]]).reshape(1, 2, 1, 1)
    rhs = np.int8([[[[3]]]])
    lhs_t = qtensor(lhs.shape, qtype(scales=(1.0,), zero_points=(0,)))
    rhs_t = qtensor(rhs.shape, qtype(scales=(1.0,), zero_points=(1,)))
    out_t = qtensor((1, 2, 1, 1), qtype("i32", scales=(0.4,), zero_points=(0,)))
    attrs = dict(NHWC, padding=np.zeros((2, 2), int))
    result = quantized_call(naive_conv_nhwc, call("stablehlo.convolution", [lhs, rhs],
                                                  [lhs_t, rhs_t], [out_t], attrs))
    np.testing.assert_array_equal(result.reshape(-1), [5, 10])  # 2/0.4, 4/0.4 (rounded)


def test_native_ops_are_not_routed():
    assert "stablehlo.all_reduce" in ops_quant.NATIVE_OPS
    q = qtensor([2], qtype(scales=(0.5,)))
    assert not is_quantized_call(call("stablehlo.all_reduce", [[1, 2]], [q], [q]))


def test_requantize_between_per_tensor_and_per_axis_and_across_axes():
    per_tensor = qtype(scales=(0.5,), zero_points=(0,))
    per_axis = qtype(scales=(0.25, 1.0), zero_points=(1, -1), axis=1)
    x = np.int8([[2, 4], [-6, 8]])  # 1, 2, -3, 4
    np.testing.assert_array_equal(requantize(x, per_tensor, per_axis), [[5, 1], [-11, 3]])
    np.testing.assert_array_equal(requantize(np.int8([[5, 1], [-11, 3]]), per_axis, per_tensor),
                                  x)
    other_axis = qtype(scales=(0.25, 1.0), zero_points=(0, 0), axis=0)
    # dequantized [[1, 2], [-3, 4]] quantized along dimension 0
    np.testing.assert_array_equal(requantize(np.int8([[5, 1], [-11, 3]]), per_axis, other_axis),
                                  [[4, 8], [-3, 4]])
