"""Donation and input/output aliasing: tf.aliasing_output, jax.buffer_donor, donate_argnums."""
import numpy as np
import pytest

import axle
from axle.interpreter import interpret
from axle.runtime import BufferDeletedError, DonationError

KV = """func.func @main(%cache: tensor<4x64x16xf32>, %new: tensor<4x1x16xf32>, %pos: tensor<i32>) -> tensor<4x64x16xf32> {
  %z = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.dynamic_update_slice %cache, %new, %z, %pos, %z : (tensor<4x64x16xf32>, tensor<4x1x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<4x64x16xf32>
  return %0 : tensor<4x64x16xf32>
}"""


def _kv_args(rng):
    return [rng.standard_normal((4, 64, 16)).astype(np.float32), rng.standard_normal((4, 1, 16)).astype(np.float32),
            np.array(9, np.int32)]


def test_donated_buffer_becomes_the_output():
    rng = np.random.default_rng(0)
    cache, new, pos = _kv_args(rng)
    want = interpret(axle.parse_module(KV), cache, new, pos)
    exe = axle.client().compile(KV, donate_argnums=(0,))
    assert exe.input_output_aliases == {0: 0}
    b = axle.device_put(cache)
    memory = np.asarray(b)
    out = exe.execute([b, new, pos])[0]
    np.testing.assert_array_equal(np.asarray(out), want)
    assert np.shares_memory(np.asarray(out), memory), "the output was not written into the donated memory"
    assert b.is_deleted
    with pytest.raises(BufferDeletedError, match=r"argument 0 of @main: .*donated to argument 0 of @main"):
        exe.execute([b, new, pos])
    # numpy arrays at a donated position are copied: the caller's array is left alone
    before = cache.copy()
    np.testing.assert_array_equal(exe(cache, new, pos), want)
    np.testing.assert_array_equal(cache, before)
    # the backend executable takes donation per call: the array comes back as the output
    mine = cache.copy()
    got = axle.compile(KV, donate=(0,)).execute([mine, new, pos], donate=(0,))[0]
    assert got is mine
    np.testing.assert_array_equal(got, want)


def test_module_attributes_as_jax_writes_them():
    aliased = KV.replace("%cache: tensor<4x64x16xf32>", "%cache: tensor<4x64x16xf32> {tf.aliasing_output = 0 : i32}")
    assert axle.client().compile(aliased).input_output_aliases == {0: 0}
    donor = KV.replace("%cache: tensor<4x64x16xf32>", "%cache: tensor<4x64x16xf32> {jax.buffer_donor = true}")
    exe = axle.client().compile(donor)
    assert exe.input_output_aliases == {0: 0} and exe.donated == {0}
    bad = KV.replace("%cache: tensor<4x64x16xf32>", "%cache: tensor<4x64x16xf32> {tf.aliasing_output = 3 : i32}")
    with pytest.raises(DonationError, match="tf.aliasing_output = 3"):
        axle.compile(bad)
    with pytest.raises(DonationError, match="donate_argnums"):
        axle.compile(KV, donate_argnums=(5,))


def test_jax_lowered_donation():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def step(cache, new, pos):
        return jax.lax.dynamic_update_slice(cache, new, (0, pos, 0)), jnp.sum(new)
    rng = np.random.default_rng(1)
    cache, new, pos = _kv_args(rng)
    text = jax.jit(step, donate_argnums=0).lower(cache, new, pos).as_text()
    assert "tf.aliasing_output" in text or "jax.buffer_donor" in text
    exe = axle.client().compile(text)
    assert exe.input_output_aliases == {0: 0}
    got = exe.execute([axle.device_put(cache), new, pos])
    want = step(cache, new, pos)
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=1e-5)


def _one_arg(body: str, t: str = "tensor<16x16xf32>") -> str:
    return f"func.func @main(%a: {t}, %g: {t}) -> {t} {{\n{body}\n}}"


CASES = {  # name -> (program, whether memory may be shared)
    "sgd": (_one_arg("""%lr = stablehlo.constant dense<0.5> : tensor<16x16xf32>
  %d = stablehlo.dot_general %g, %g, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %s = stablehlo.multiply %lr, %d : tensor<16x16xf32>
  %0 = stablehlo.subtract %a, %s : tensor<16x16xf32>
  return %0 : tensor<16x16xf32>"""), True),
    "transpose": (_one_arg("""%t = stablehlo.transpose %a, dims = [1, 0] : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %0 = stablehlo.add %t, %g : tensor<16x16xf32>
  return %0 : tensor<16x16xf32>"""), False),
    "reverse_plus_self": (_one_arg("""%r = stablehlo.reverse %a, dims = [0] : tensor<16x16xf32>
  %0 = stablehlo.add %r, %a : tensor<16x16xf32>
  return %0 : tensor<16x16xf32>"""), False),
    "returned_unchanged": ("""func.func @main(%a: tensor<16x16xf32>, %g: tensor<16x16xf32>) -> (tensor<16x16xf32>) {
  return %a : tensor<16x16xf32>
}""", True),
    "constant_result": (_one_arg("""%c = stablehlo.constant dense<1.5> : tensor<16x16xf32>
  %0 = stablehlo.add %a, %g : tensor<16x16xf32>
  return %c : tensor<16x16xf32>"""), True),
    "softmax_rows": (_one_arg("""%z = stablehlo.constant dense<0.0> : tensor<f32>
  %e = stablehlo.exponential %a : tensor<16x16xf32>
  %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1] : (tensor<16x16xf32>, tensor<f32>) -> tensor<16xf32>
  %b = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<16xf32>) -> tensor<16x16xf32>
  %0 = stablehlo.divide %e, %b : tensor<16x16xf32>
  return %0 : tensor<16x16xf32>"""), None),
    "matmul": (_one_arg("""%0 = stablehlo.dot_general %a, %g, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %0 : tensor<16x16xf32>"""), False),
    "read_after": (_one_arg("""%0 = stablehlo.add %a, %g : tensor<16x16xf32>
  %d = stablehlo.dot_general %a, %0, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %1 = stablehlo.multiply %d, %0 : tensor<16x16xf32>
  return %1 : tensor<16x16xf32>"""), None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_donation_is_correct_whether_or_not_memory_is_shared(name):
    text, shared = CASES[name]
    rng = np.random.default_rng(2)
    a, g = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    want = interpret(axle.parse_module(text), a, g)
    exe = axle.client().compile(text, donate_argnums=(0,))
    b = axle.device_put(a)
    memory = np.asarray(b)
    out = np.asarray(exe.execute([b, g])[0])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    assert b.is_deleted
    if shared is not None:
        assert (exe.input_output_aliases == {0: 0}) == shared, exe.program.alias_rejections
        assert np.shares_memory(out, memory) == shared


def test_donation_with_execute_async_chains_decode_steps():
    rng = np.random.default_rng(3)
    cache, _, _ = _kv_args(rng)
    rows = [rng.standard_normal((4, 1, 16)).astype(np.float32) for _ in range(6)]
    exe = axle.client().compile(KV, donate_argnums=(0,))
    first = axle.device_put(cache)
    memory = np.asarray(first)
    cur = first
    for pos, row in enumerate(rows):  # queued: each step donates the previous step's pending output
        nxt = exe.execute_async([cur, row, np.int32(pos)])[0]
        assert cur.is_deleted
        cur = nxt
    want = cache.copy()
    want[:, :6] = np.concatenate(rows, axis=1)
    np.testing.assert_array_equal(np.asarray(cur.block_until_ready()), want)
    assert np.shares_memory(np.asarray(cur), memory)
    with pytest.raises(BufferDeletedError, match="execute_async"):
        exe.execute_async([first, rows[0], np.int32(0)])
