"""An axle executable inside a jax.jit program through XLA's typed FFI (a handler emitted
with llvmlite): results equal to JAX's own, bad buffers refused with an XLA error."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import axle  # noqa: E402
import axle.jax  # noqa: E402
from axle.tools import bench_workloads as bw  # noqa: E402


def _block():
    fn, (p, x) = bw.transformer_block(batch=1, seq=8, d_model=32, heads=2)
    flat = jax.tree_util.tree_leaves((p, x))
    tree = jax.tree_util.tree_structure((p, x))

    def flat_fn(*a):
        return fn(*jax.tree_util.tree_unflatten(tree, a))
    return flat_fn, flat


def test_axle_block_inside_jax_jit_with_gradients_around_it():
    flat_fn, flat = _block()
    blk = axle.jax.ffi_call(jax.jit(flat_fn).lower(*flat).as_text())

    def mixed(scale, *a):  # JAX ops before and after axle's code, in one jax.jit program
        y = blk(*a[:-1], a[-1] * scale)[0]
        return jnp.tanh(y).sum(), y

    def ref(scale, *a):
        y = flat_fn(*a[:-1], a[-1] * scale)
        return jnp.tanh(y).sum(), y

    for scale in (1.0, 0.5):
        got, want = jax.jit(mixed)(np.float32(scale), *flat), jax.jit(ref)(np.float32(scale), *flat)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    assert "custom_call" in jax.jit(mixed).lower(np.float32(1), *flat).as_text()


def test_same_executable_registers_once_and_runs_eagerly():
    exe = axle.compile("""func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<f32>) {
      %0 = stablehlo.multiply %a, %b : tensor<4xf32>
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %1 = stablehlo.reduce(%0 init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
      return %0, %1 : tensor<4xf32>, tensor<f32>
    }""")
    f, g = axle.jax.ffi_call(exe), axle.jax.ffi_call(exe)
    assert f.target_name == g.target_name
    a, b = jnp.arange(4.0), jnp.full(4, 2.0)
    prod, total = f(a, b)
    np.testing.assert_array_equal(prod, [0, 2, 4, 6])
    assert float(total) == 12.0
    with pytest.raises(TypeError, match="argument 1 must be float32"):
        f(a, jnp.ones(3))


def test_handler_refuses_wrong_buffers_with_an_xla_error():
    exe = axle.compile("""func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = stablehlo.add %a, %a : tensor<4xf32>
      return %0 : tensor<4xf32>
    }""")
    name = axle.jax.register_ffi_executable(exe)
    # past the Python checks, straight to the native handler: shape, dtype, count
    for args, results, what in [((jnp.ones(5),), jax.ShapeDtypeStruct((4,), jnp.float32), "operand 0"),
                                ((jnp.ones(4, jnp.int32),), jax.ShapeDtypeStruct((4,), jnp.float32), "operand 0"),
                                ((jnp.ones(4),), jax.ShapeDtypeStruct((4, 1), jnp.float32), "result 0"),
                                ((jnp.ones(4), jnp.ones(4)), jax.ShapeDtypeStruct((4,), jnp.float32), "expected 1 operands")]:
        with pytest.raises(Exception, match=what):
            jax.block_until_ready(jax.ffi.ffi_call(name, results)(*args))
    np.testing.assert_array_equal(jax.ffi.ffi_call(name, jax.ShapeDtypeStruct((4,), jnp.float32))(jnp.ones(4)), 2.0)
