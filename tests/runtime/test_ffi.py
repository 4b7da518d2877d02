"""Native custom calls with XLA's typed FFI ABI: handlers compiled by gcc in the test."""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import axle
from axle.backends.ffi import FfiCallError

HERE = os.path.join(os.path.dirname(__file__), "ffi")


def _include_dir():
    jax_ffi = pytest.importorskip("jax.ffi")
    d = jax_ffi.include_dir()
    if not os.path.exists(os.path.join(d, "xla", "ffi", "api", "c_api.h")):
        pytest.skip("jaxlib ships no xla/ffi/api/c_api.h")
    return d


def _build(tmp_path, source: str, compiler: str, extra=()):
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    out = str(tmp_path / (os.path.basename(source) + ".so"))
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", *extra, "-I", _include_dir(), os.path.join(HERE, source),
                    "-o", out], check=True, capture_output=True)
    return ctypes.CDLL(out)


PROGRAM = """func.func @main(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {{
  %e = stablehlo.exponential %x : tensor<3x5xf32>
  %0 = stablehlo.custom_call @{target}(%e) {{api_version = 4 : i32, backend_config = {{{attrs}}}}} : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %1 = stablehlo.add %0, %x : tensor<3x5xf32>
  return %1, %0 : tensor<3x5xf32>, tensor<3x5xf32>
}}"""


def test_c_handler_reads_buffers_and_attributes(tmp_path):
    lib = _build(tmp_path, "handlers.c", "gcc")
    axle.register_ffi_target("test_ffi.scale_offset", lib.scale_offset)
    text = PROGRAM.format(target="test_ffi.scale_offset", attrs='offset = 3 : i64, tag = "axle", factor = 2.5 : f32')
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    got, mid = axle.compile(text)(x)
    want_mid = np.exp(x) * np.float32(2.5) + np.float32(3)
    np.testing.assert_allclose(mid, want_mid, rtol=2e-6)
    np.testing.assert_allclose(got, want_mid + x, rtol=2e-6)
    # the handler checks the attributes it reads: a wrong one comes back as its error
    wrong = PROGRAM.format(target="test_ffi.scale_offset", attrs='offset = 3 : i64, tag = "else", factor = 2.5 : f32')
    with pytest.raises(FfiCallError, match="custom call 'test_ffi.scale_offset' failed: INVALID_ARGUMENT: tag"):
        axle.compile(wrong)(x)
    # a handler error leaves the executable usable; calls from several threads are fine
    from concurrent.futures import ThreadPoolExecutor
    exe = axle.compile(text)
    with ThreadPoolExecutor(4) as pool:
        for g, m in pool.map(lambda _: exe(x), range(16)):
            np.testing.assert_allclose(m, want_mid, rtol=2e-6)


def test_handler_error_is_a_python_exception(tmp_path):
    lib = _build(tmp_path, "handlers.c", "gcc")
    axle.register_ffi_target("test_ffi.always_fails", lib.always_fails)
    exe = axle.compile(PROGRAM.format(target="test_ffi.always_fails", attrs=""))
    for _ in range(2):
        with pytest.raises(FfiCallError, match=r"OUT_OF_RANGE: index 7 is out of range \[0, 4\)"):
            exe(np.ones((3, 5), np.float32))


def test_xla_cpp_binding_handler_runs_unchanged(tmp_path):
    lib = _build(tmp_path, "handler_ffi_h.cc", "g++", ["-std=c++17", "-w"])
    axle.register_ffi_target("test_ffi.scale_cpp", lib.ScaleCpp)
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    _, mid = axle.compile(PROGRAM.format(target="test_ffi.scale_cpp", attrs="factor = 0.5 : f32, offset = -2 : i64"))(x)
    np.testing.assert_allclose(mid, np.exp(x) * np.float32(0.5) - 2, rtol=2e-6)
    bad = PROGRAM.format(target="test_ffi.scale_cpp", attrs="factor = -1.0 : f32, offset = 0 : i64")
    with pytest.raises(FfiCallError, match="INVALID_ARGUMENT: negative factor"):
        axle.compile(bad)(x)
    wrong_type = PROGRAM.format(target="test_ffi.scale_cpp", attrs="factor = 1 : i32, offset = 0 : i64")
    with pytest.raises(FfiCallError, match="expected F32 but got S32"):  # the binding checks attribute types
        axle.compile(wrong_type)(x)


def test_registration_errors():
    with pytest.raises(ValueError, match="NULL"):
        axle.register_ffi_target("test_ffi.null", 0)
    with pytest.raises(TypeError, match="function pointer"):
        axle.register_ffi_target("test_ffi.py", "not a pointer")
    with pytest.raises(ValueError, match="platform 'gpu'"):
        axle.register_ffi_target("test_ffi.gpu", 1234, platform="gpu")


def test_array_and_dictionary_attributes_constant_operand_two_results(tmp_path):
    lib = _build(tmp_path, "handlers.c", "gcc")
    axle.register_ffi_target("test_ffi.array_and_dict", lib.array_and_dict)
    text = """func.func @main(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>) {
      %c = stablehlo.constant dense<[[1.5, 2.5], [-3.5, 4.0]]> : tensor<2x2xf32>
      %0:2 = stablehlo.custom_call @test_ffi.array_and_dict(%c) {api_version = 4 : i32,
          backend_config = {weights = array<i32: 1, 2, 3>, config = {bias = 0.25 : f32}}}
          : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
      %1 = stablehlo.add %0#0, %x : tensor<2x2xf32>
      return %1, %0#1 : tensor<2x2xf32>, tensor<2x2xi32>
    }"""
    x = np.ones((2, 2), np.float32)
    c = np.array([[1.5, 2.5], [-3.5, 4.0]], np.float32)
    y0, y1 = axle.compile(text)(x)
    np.testing.assert_array_equal(y0, c + np.float32(6.25) + x)
    np.testing.assert_array_equal(y1, c.astype(np.int32))
