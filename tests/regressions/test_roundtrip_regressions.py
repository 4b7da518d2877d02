"""Regressions (issue 21): parse -> print -> parse must give an equal module, or the first
parse must already refuse the text with a ParseError that names the place."""
import numpy as np
import pytest

import axle
from axle.ir import ParseError, parse_module
from axle.ir.equality import modules_equal


def _roundtrip(text):
    m = parse_module(text)
    again = parse_module(str(m))
    assert modules_equal(m, again), str(m)
    return m


@pytest.mark.parametrize("n,et", [(4, "i4"), (20, "i4"), (20, "ui4"), (20, "i2"), (3, "ui2")])
def test_hex_encoded_sub_byte_constants(n, et):
    """One element per byte; bits above the element's width (0xF8 is the i4 -8) are not
    part of the value, so the parsed constant equals its printed (decimal) form."""
    data = bytes(((k * 37 + 0xF0) & 0xFF) for k in range(n))
    text = f"""
func.func @main() -> tensor<{n}x{et}> {{
  %0 = stablehlo.constant dense<"0x{data.hex().upper()}"> : tensor<{n}x{et}>
  return %0 : tensor<{n}x{et}>
}}"""
    m = _roundtrip(text)
    bits = int(et.lstrip("ui"))
    low = np.frombuffer(data, np.uint8) & ((1 << bits) - 1)
    want = low.astype(np.int64) - ((low >= (1 << (bits - 1))) << bits) if not et.startswith("u") else low
    np.testing.assert_array_equal(axle.interpret(m).astype(np.int64), want)
    np.testing.assert_array_equal(axle.compile(text)().astype(np.int64), want)


@pytest.mark.parametrize("text", [
    """func.func @main(%a: tensor<4xf32>) -> tensor<f32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [99999999999999999999] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}""",
    """func.func @main(%a: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  %0 = stablehlo.fft %a, type = FFT, length = [-99999999999999999999] : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  return %0 : tensor<4xcomplex<f32>>
}"""])
def test_short_form_integers_beyond_i64(text):
    """The short forms' lists are array<i64>: a value beyond i64 is a ParseError at the
    value (it used to parse, then print as a generic form that did not parse back)."""
    with pytest.raises(ParseError, match="does not fit in i64") as e:
        parse_module(text)
    assert ":3:" in str(e.value) or ":2:" in str(e.value)


@pytest.mark.parametrize("text", [
    """%0 = stablehlo.constant dense<1.0> : tensor<f32>
func.func @main() -> tensor<f32> {
  %0 = stablehlo.constant dense<1.0> : tensor<f32>
  return %0 : tensor<f32>
}""",
    """module {
  %0 = stablehlo.constant dense<1.0> : tensor<f32>
  func.func @main() -> tensor<f32> {
    return %0 : tensor<f32>
  }
}""",
    """%0 = stablehlo.constant dense<1.0> : tensor<f32>
%1 = stablehlo.add %0, %0 : tensor<f32>"""])
def test_ops_in_a_module_body(text):
    with pytest.raises(ParseError, match="defines values at module level"):
        parse_module(text)


def test_functions_at_top_level_still_parse():
    _roundtrip("""func.func @f(%a: tensor<f32>) -> tensor<f32> {
  return %a : tensor<f32>
}
func.func @main(%a: tensor<f32>) -> tensor<f32> {
  %0 = func.call @f(%a) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}""")
