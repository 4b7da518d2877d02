"""Results recycled across calls (backends/cpu/result_pool.py): a large result lands in the
block a dropped result of an earlier call left, so its pages are not faulted again; a block
comes back only once every view of it is gone; small results and --result_pool_bytes=0 use
fresh arrays. Values are checked against numpy on every call."""
import gc
import resource

import numpy as np

import axle
from axle import flags
from axle.backends.cpu import result_pool

TEXT = """
func.func @main(%a: tensor<512x256xf32>, %s: tensor<f32>) -> (tensor<512x256xf32>, tensor<4xf32>) {
  %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<512x256xf32>
  %m = stablehlo.multiply %a, %sb : tensor<512x256xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.slice %a [0:1, 0:4] : (tensor<512x256xf32>) -> tensor<1x4xf32>
  %v = stablehlo.reshape %r : (tensor<1x4xf32>) -> tensor<4xf32>
  return %m, %v : tensor<512x256xf32>, tensor<4xf32>
}
"""


def _setup():
    exe = axle.compile(TEXT, backend="cpu")
    a = np.random.default_rng(0).standard_normal((512, 256)).astype(np.float32)
    return exe, a


def test_dropped_results_are_reused_without_page_faults():
    exe, a = _setup()
    first = exe.execute([a, np.float32(2.0)])
    np.testing.assert_array_equal(first[0], a * 2)
    where = first[0].ctypes.data
    del first
    gc.collect()
    held = result_pool.held_bytes()
    assert held >= a.nbytes  # the dropped result's block, on its free list
    faults = 0
    for k in range(5):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        out = exe.execute([a, np.float32(k)])
        faults += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        np.testing.assert_array_equal(out[0], a * np.float32(k))
        np.testing.assert_array_equal(out[1], a[0, :4])
        assert out[0].ctypes.data == where  # the same block every call
        assert result_pool.held_bytes() == held - a.nbytes  # taken off the list while in use
        assert out[0].flags.c_contiguous and out[0].flags.writeable
        del out
    # 512 KiB of results per call is 128 pages: five fresh calls would fault 640 times
    assert faults < 64, faults


def test_a_live_view_keeps_its_block():
    exe, a = _setup()
    out = exe.execute([a, np.float32(3.0)])
    view = out[0][10:20, ::3]
    kept = view.copy()
    del out
    gc.collect()
    again = exe.execute([a, np.float32(-1.0)])
    np.testing.assert_array_equal(view, kept)  # not overwritten by the next call
    lo, hi = again[0].ctypes.data, again[0].ctypes.data + again[0].nbytes
    assert not lo <= view.ctypes.data < hi
    np.testing.assert_array_equal(again[0], -a)
    del view, again
    gc.collect()
    assert result_pool.held_bytes() > 0


def test_small_results_and_a_zero_pool_are_plain_arrays():
    exe, a = _setup()
    out = exe.execute([a, np.float32(1.0)])
    assert out[1].flags.owndata and not out[0].flags.owndata
    with flags.scoped_env(AXLE_FLAGS="--result_pool_bytes=0"):
        plain = exe.execute([a, np.float32(1.0)])
        assert plain[0].flags.owndata
        np.testing.assert_array_equal(plain[0], a)
