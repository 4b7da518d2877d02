"""Kernels split across threads (parallel.py) give the serial results, bit for bit."""
import numpy as np
import pytest

import axle
from axle.backends.cpu import disk_cache, parallel
from axle.backends.cpu import executable as cpu_exe

pytestmark = pytest.mark.skipif(not parallel.available(), reason="libgomp is not installed")

PROGRAMS = {
    "elementwise": ("""func.func @main(%x: tensor<67x129xf32>, %y: tensor<129xf32>) -> tensor<67x129xf32> {
      %b = stablehlo.broadcast_in_dim %y, dims = [1] : (tensor<129xf32>) -> tensor<67x129xf32>
      %0 = stablehlo.multiply %x, %b : tensor<67x129xf32>
      %1 = stablehlo.tanh %0 : tensor<67x129xf32>
      return %1 : tensor<67x129xf32>
    }""", [(67, 129), (129,)]),
    "row_sum": ("""func.func @main(%x: tensor<67x129xf32>) -> tensor<67xf32> {
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<67x129xf32>, tensor<f32>) -> tensor<67xf32>
      return %0 : tensor<67xf32>
    }""", [(67, 129)]),
    "column_max": ("""func.func @main(%x: tensor<5x67x129xf32>) -> tensor<5x129xf32> {
      %z = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %0 = stablehlo.reduce(%x init: %z) applies stablehlo.maximum across dimensions = [1] : (tensor<5x67x129xf32>, tensor<f32>) -> tensor<5x129xf32>
      return %0 : tensor<5x129xf32>
    }""", [(5, 67, 129)]),
    "int_column_sum": ("""func.func @main(%x: tensor<67x131xi32>) -> tensor<131xi32> {
      %z = stablehlo.constant dense<0> : tensor<i32>
      %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<67x131xi32>, tensor<i32>) -> tensor<131xi32>
      return %0 : tensor<131xi32>
    }""", [(67, 131)]),
}


def _compile(text, min_work, monkeypatch):
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", min_work)
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(text)
        cpu_exe.clear_memory_cache()
    return exe


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_parallel_equals_serial_and_interpreter(name, monkeypatch):
    text, shapes = PROGRAMS[name]
    r = np.random.default_rng(5)
    args = [(r.integers(-1000, 1000, s).astype(np.int32) if "int" in name else r.standard_normal(s).astype(np.float32))
            for s in shapes]
    par = _compile(text, 1, monkeypatch)
    assert ".par" in par._static.optimized_ir  # really split
    ser = _compile(text, 1 << 62, monkeypatch)
    assert ".par" not in ser._static.optimized_ir
    got = par(*args)
    np.testing.assert_array_equal(got, ser(*args))
    want = axle.interpret(text, *args)
    if "int" in name:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
