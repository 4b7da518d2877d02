"""custom_call to targets registered by the user: interpreter and CPU backend run them."""
import numpy as np
import pytest

import axle
from axle.errors import Unsupported

TEXT = """
func.func @main(%x: tensor<4x5xf32>, %y: tensor<5xf32>) -> tensor<4x5xf32> {
  %e = stablehlo.exponential %x : tensor<4x5xf32>
  %c = stablehlo.custom_call @test.scaled_add(%e, %y) {backend_config = "", scale = 3.0 : f32} : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %r = stablehlo.negate %c : tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}
"""


def scaled_add(call):
    a, b = call.operands
    return (a * np.float32(call.attrs["scale"]) + b).astype(np.float32)


def test_registered_custom_call_runs_in_both():
    axle.register_custom_call("test.scaled_add", scaled_add)
    r = np.random.default_rng(7)
    x, y = r.standard_normal((4, 5)).astype(np.float32), r.standard_normal(5).astype(np.float32)
    want = -(np.exp(x) * 3 + y)
    np.testing.assert_allclose(axle.interpret(TEXT, x, y), want, rtol=1e-6)
    exe = axle.compile(TEXT)
    np.testing.assert_allclose(exe(x, y), want, rtol=1e-6)


def test_errors_in_the_target_reach_the_caller():
    def broken(call):
        raise ValueError("target failed")
    axle.register_custom_call("test.broken", broken)
    exe = axle.compile(TEXT.replace("test.scaled_add", "test.broken"))
    with pytest.raises(ValueError, match="target failed"):
        exe(np.zeros((4, 5), np.float32), np.zeros(5, np.float32))


def test_unregistered_target_is_a_compile_error():
    with pytest.raises(Unsupported, match="'test.nobody' is not registered"):
        axle.compile(TEXT.replace("test.scaled_add", "test.nobody"))
