"""Buffer assignment: results written in place where that is safe, and only there."""
import numpy as np

import axle

UPDATE = """
func.func @main(%w: tensor<64x48xf32>, %x: tensor<32x64xf32>, %g: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %d = stablehlo.dot_general %x, %g, contracting_dims = [0] x [0] : (tensor<32x64xf32>, tensor<32x48xf32>) -> tensor<64x48xf32>
  %lr = stablehlo.constant dense<0.01> : tensor<64x48xf32>
  %s = stablehlo.multiply %lr, %d : tensor<64x48xf32>
  %r = stablehlo.subtract %w, %s : tensor<64x48xf32>
  return %r : tensor<64x48xf32>
}
"""

# %t is read transposed by its reader: computing in place would overwrite elements still to be read
TRANSPOSED = """
func.func @main(%x: tensor<40x40xf32>, %y: tensor<40x40xf32>) -> tensor<40x40xf32> {
  %t = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0] : (tensor<40x40xf32>, tensor<40x40xf32>) -> tensor<40x40xf32>
  %tt = stablehlo.transpose %t, dims = [1, 0] : (tensor<40x40xf32>) -> tensor<40x40xf32>
  %r = stablehlo.add %t, %tt : tensor<40x40xf32>
  return %r : tensor<40x40xf32>
}
"""

CHAIN = """
func.func @main(%x: tensor<50x60xf32>, %y: tensor<60x70xf32>, %b: tensor<70xf32>) -> tensor<50xf32> {
  %d = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0] : (tensor<50x60xf32>, tensor<60x70xf32>) -> tensor<50x70xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<70xf32>) -> tensor<50x70xf32>
  %e = stablehlo.add %d, %bb : tensor<50x70xf32>
  %f = stablehlo.tanh %e : tensor<50x70xf32>
  %g = stablehlo.multiply %f, %e : tensor<50x70xf32>
  %h = stablehlo.exponential %g : tensor<50x70xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%h init: %z) applies stablehlo.add across dimensions = [1] : (tensor<50x70xf32>, tensor<f32>) -> tensor<50xf32>
  %s2 = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1] : (tensor<50x70xf32>, tensor<f32>) -> tensor<50xf32>
  %r = stablehlo.add %s, %s2 : tensor<50xf32>
  return %r : tensor<50xf32>
}
"""


def _rand(*shapes):
    r = np.random.default_rng(6)
    return [r.standard_normal(s).astype(np.float32) for s in shapes]


def test_weight_update_needs_no_temporary():
    args = _rand((64, 48), (32, 64), (32, 48))
    exe = axle.compile(UPDATE)
    assert exe.program.arena_bytes == 0  # the dot writes into the result, the update runs in place
    np.testing.assert_allclose(exe(*args), axle.interpret(UPDATE, *args), rtol=1e-5, atol=1e-6)


def test_no_in_place_when_read_at_other_indices():
    args = _rand((40, 40), (40, 40))
    exe = axle.compile(TRANSPOSED)
    assert exe.program.arena_bytes > 0  # %t needs its own buffer
    np.testing.assert_allclose(exe(*args), axle.interpret(TRANSPOSED, *args), rtol=1e-5, atol=1e-5)


def test_temporaries_are_taken_over_by_elementwise_readers():
    args = _rand((50, 60), (60, 70), (70,))
    exe = axle.compile(CHAIN)
    np.testing.assert_allclose(exe(*args), axle.interpret(CHAIN, *args), rtol=1e-4, atol=1e-4)
    # every temporary is one [50, 70] f32 buffer: the chain shares them instead of adding up
    one = 50 * 70 * 4
    assert exe.program.arena_bytes <= 2 * ((one + 63) // 64 * 64)


DUS_CHAIN = """
func.func @main(%x: tensor<64x64xf32>, %u: tensor<8x64xf32>, %i: tensor<i32>) -> tensor<64x64xf32> {
  %e = stablehlo.exponential %x : tensor<64x64xf32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %a = stablehlo.dynamic_update_slice %e, %u, %i, %z : (tensor<64x64xf32>, tensor<8x64xf32>, tensor<i32>, tensor<i32>) -> tensor<64x64xf32>
  %t = stablehlo.tanh %a : tensor<64x64xf32>
  %b = stablehlo.dynamic_update_slice %t, %u, %z, %z : (tensor<64x64xf32>, tensor<8x64xf32>, tensor<i32>, tensor<i32>) -> tensor<64x64xf32>
  %c = stablehlo.sine %b : tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}
"""

# the update is read from the operand itself (a shifted slice): no in-place update
DUS_SELF = """
func.func @main(%x: tensor<64x64xf32>, %i: tensor<i32>) -> tensor<64x64xf32> {
  %e = stablehlo.exponential %x : tensor<64x64xf32>
  %s = stablehlo.slice %e [8:16, 0:64] : (tensor<64x64xf32>) -> tensor<8x64xf32>
  %n = stablehlo.negate %s : tensor<8x64xf32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %a = stablehlo.dynamic_update_slice %e, %n, %i, %z : (tensor<64x64xf32>, tensor<8x64xf32>, tensor<i32>, tensor<i32>) -> tensor<64x64xf32>
  %c = stablehlo.sine %a : tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}
"""


def test_dynamic_update_slice_in_place():
    x, u = _rand((64, 64), (8, 64))
    for start in (0, 13, 60, -5):
        i = np.array(start, np.int32)
        exe = axle.compile(DUS_CHAIN)
        np.testing.assert_allclose(exe(x, u, i), axle.interpret(DUS_CHAIN, x, u, i), rtol=1e-5, atol=1e-6)
    one = 64 * 64 * 4
    assert exe.program.arena_bytes <= 2 * one  # updates reuse their operand's buffer


def test_dynamic_update_slice_reading_its_operand_is_not_in_place():
    (x,) = _rand((64, 64))
    for start in (4, 8, 12, 40):
        i = np.array(start, np.int32)
        np.testing.assert_allclose(axle.compile(DUS_SELF)(x, i), axle.interpret(DUS_SELF, x, i), rtol=1e-5, atol=1e-6)


# %a dies (k1) before %r1 is written (k3): it may live in %r1's buffer, never in %r0's (written
# at k1); %b is read by the kernel writing %r1, so it needs arena memory
TWO_RESULTS = """
func.func @main(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %a = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %at = stablehlo.transpose %a, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %r0 = stablehlo.add %a, %at : tensor<64x64xf32>
  %b = stablehlo.dot_general %r0, %y, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %bt = stablehlo.transpose %b, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %r1 = stablehlo.add %b, %bt : tensor<64x64xf32>
  return %r0, %r1 : tensor<64x64xf32>, tensor<64x64xf32>
}
"""


def test_temporaries_live_in_result_buffers_until_they_are_written():
    args = _rand((64, 64), (64, 64))
    exe = axle.compile(TWO_RESULTS)
    prog = exe.program
    in_results = [a for a in prog.allocations if len(a) > 4]
    assert [a[4] for a in in_results] == [3]  # %a, in the buffer of result 1 (slot 2 + 1)
    assert prog.arena_bytes == 64 * 64 * 4  # only %b
    want = axle.interpret(TWO_RESULTS, *args)
    for got, ref in zip(exe(*args), want):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)
    # a second call reuses the same (now garbage-filled) result buffers' memory layout
    for got, ref in zip(exe(*args), want):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


# %w is passed through the loop unchanged: it needs no scratch buffer and no copy per trip
LOOP_INVARIANT = """
func.func @main(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %r:3 = stablehlo.while(%i = %i0, %a = %x, %b = %w) : tensor<i32>, tensor<64x64xf32>, tensor<64x64xf32>
    cond {
      %n = stablehlo.constant dense<5> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
      %t = stablehlo.tanh %d : tensor<64x64xf32>
      stablehlo.return %j, %t, %b : tensor<i32>, tensor<64x64xf32>, tensor<64x64xf32>
    }
  return %r#1 : tensor<64x64xf32>
}
"""


def test_loop_invariant_carried_values_need_no_scratch():
    x, w = _rand((64, 64), (64, 64))
    w *= 0.1
    exe = axle.compile(LOOP_INVARIANT)
    # 64x64 f32 buffers: the carried %b (result #2), the scratch for %t and the dot's
    # result, plus the counter's; a scratch for %b would be a fourth
    assert exe.program.arena_bytes <= 3 * 64 * 64 * 4 + 1024
    np.testing.assert_allclose(exe(x, w), axle.interpret(LOOP_INVARIANT, x, w), rtol=1e-5, atol=1e-5)


# in program order both dot results are live at once; run in the order dot, its reduction,
# dot, its reduction, one 64 KiB buffer serves both
TWO_BRANCHES = """
func.func @main(%x: tensor<64x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<64x256xf32>) -> (tensor<256xf32>, tensor<256xf32>) {
  %a = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  %b = stablehlo.dot_general %x, %w2, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %ta = stablehlo.tanh %a : tensor<64x256xf32>
  %c = stablehlo.reduce(%ta init: %z) applies stablehlo.add across dimensions = [0] : (tensor<64x256xf32>, tensor<f32>) -> tensor<256xf32>
  %tb = stablehlo.tanh %b : tensor<64x256xf32>
  %d = stablehlo.reduce(%tb init: %z) applies stablehlo.add across dimensions = [0] : (tensor<64x256xf32>, tensor<f32>) -> tensor<256xf32>
  return %c, %d : tensor<256xf32>, tensor<256xf32>
}
"""


def test_kernels_are_scheduled_for_low_peak_memory(monkeypatch):
    from axle.backends.cpu import executable as cpu_exe
    from axle.backends.cpu import scheduling
    args = _rand((64, 64), (64, 256), (64, 256))
    exe = axle.compile(TWO_BRANCHES)
    assert exe.program.arena_bytes == 64 * 256 * 4
    assert [k.op.name.split(".")[-1] for k in exe.program.kernels] == ["dot_general", "reduce"] * 2
    want = axle.interpret(TWO_BRANCHES, *args)
    for got, ref in zip(exe(*args), want):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)
    monkeypatch.setattr(scheduling, "SCHEDULE", False)  # program order: both dots live at once
    cpu_exe.clear_memory_cache()
    from axle.backends.cpu import disk_cache
    with disk_cache.disabled():
        assert axle.compile(TWO_BRANCHES).program.arena_bytes == 2 * 64 * 256 * 4
    cpu_exe.clear_memory_cache()


# %acc is only read by the add that makes its next value, at the same index: the body
# writes the new value straight into the carried buffer; %h is read by the dot, so it
# goes through a scratch buffer (the dot must see the old value while %h's next is made)
ACCUMULATE = """
func.func @main(%h0: tensor<32x32xf32>, %w: tensor<32x32xf32>) -> (tensor<32x32xf32>, tensor<32x32xf32>) {
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %z = stablehlo.constant dense<0.0> : tensor<32x32xf32>
  %r:4 = stablehlo.while(%i = %i0, %h = %h0, %acc = %z, %ww = %w) : tensor<i32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>
    cond {
      %n = stablehlo.constant dense<4> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %d = stablehlo.dot_general %h, %ww, contracting_dims = [1] x [0] : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
      %hn = stablehlo.tanh %d : tensor<32x32xf32>
      %sq = stablehlo.multiply %hn, %hn : tensor<32x32xf32>
      %an = stablehlo.add %acc, %sq : tensor<32x32xf32>
      stablehlo.return %j, %hn, %an, %ww : tensor<i32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>
    }
  return %r#1, %r#2 : tensor<32x32xf32>, tensor<32x32xf32>
}
"""


def test_accumulator_carried_in_place():
    from axle.backends.cpu.kernels_control import _updates_in_place
    from axle.ir.text import parse_module
    body = next(o for o in parse_module(ACCUMULATE).walk() if o.name == "stablehlo.while").regions[1].blocks[0]
    assert [_updates_in_place(body, k) for k in range(4)] == [True, False, True, False]  # i + 1 too
    h, w = _rand((32, 32), (32, 32))
    w *= 0.2
    exe = axle.compile(ACCUMULATE)
    for got, ref in zip(exe(h, w), axle.interpret(ACCUMULATE, h, w)):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
