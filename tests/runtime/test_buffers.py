"""The PJRT-shaped API: clients, devices, Buffers, execute / execute_async, options."""
import os

import numpy as np
import pytest

import axle
from axle.interpreter import interpret
from axle.runtime import Buffer, BufferDeletedError, CompileOptions

MLP = os.path.join(os.path.dirname(axle.__file__), "examples", "mlp.mlir")


def _mlp_args(rng):
    shapes = [(4, 8), (8, 16), (16,), (16, 4), (4,)]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def test_client_devices_and_buffers():
    c = axle.client()
    assert c is axle.client("cpu")
    devs = axle.devices()
    assert devs == c.devices() and str(devs[0]) == "cpu:0"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = axle.device_put(x, devs[0])
    assert isinstance(b, Buffer) and b.shape == (2, 3) and b.dtype == np.float32 and b.device == devs[0]
    assert b.nbytes == 24 and b.is_ready() and not b.is_deleted
    a = np.asarray(b)
    assert np.shares_memory(a, np.asarray(b)), "np.asarray(buffer) copies host memory"
    assert not np.shares_memory(a, x), "device_put must own its memory (so that it can be donated)"
    np.testing.assert_array_equal(a, x)
    assert b.block_until_ready() is b
    b.delete()
    assert b.is_deleted
    with pytest.raises(BufferDeletedError, match="deleted by delete"):
        np.asarray(b)


def test_execute_returns_buffers_and_old_api_is_unchanged():
    text = open(MLP, encoding="utf-8").read()
    rng = np.random.default_rng(0)
    args = _mlp_args(rng)
    want = interpret(axle.parse_module(text), *args)
    old = axle.compile(text)  # the backend executable: numpy in, numpy out
    np.testing.assert_allclose(old(*args), want, rtol=1e-5, atol=1e-6)
    outs = old.execute(args)
    assert isinstance(outs, list) and isinstance(outs[0], np.ndarray)
    exe = axle.client().compile(text)
    bufs = exe.execute([axle.device_put(a) for a in args[:2]] + args[2:])  # Buffers and arrays mixed
    assert len(bufs) == 1 and isinstance(bufs[0], Buffer)
    np.testing.assert_allclose(np.asarray(bufs[0]), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exe(*args), want, rtol=1e-5, atol=1e-6)  # __call__: numpy
    chained = exe.execute([axle.device_put(a) for a in args])  # every argument a Buffer
    np.testing.assert_allclose(chained[0].to_numpy(), want, rtol=1e-5, atol=1e-6)


def test_execute_async_queues_in_order_and_reports_errors():
    text = """func.func @main(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
      %0 = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
      %c = stablehlo.constant dense<0.015625> : tensor<64x64xf32>
      %1 = stablehlo.multiply %0, %c : tensor<64x64xf32>
      return %1 : tensor<64x64xf32>
    }"""
    exe = axle.client().compile(text)
    x = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    want = x
    cur = axle.device_put(x)
    for _ in range(5):  # each call reads the previous call's pending output
        cur = exe.execute_async([cur])[0]
        want = (want @ want) * np.float32(1 / 64)
    assert isinstance(cur, Buffer)
    np.testing.assert_allclose(np.asarray(cur.block_until_ready()), want, rtol=2e-4, atol=1e-5)
    bad = exe.execute_async([np.zeros((3, 3), np.float32)])[0]  # the error surfaces when read
    with pytest.raises(TypeError, match="argument 0 of @main"):
        bad.block_until_ready()


def test_compile_options_object(tmp_path):
    text = open(MLP, encoding="utf-8").read()
    opts = CompileOptions(dump_to=str(tmp_path / "dump"), profile=True)
    exe = axle.client().compile(text, opts)
    dumped = sorted(os.listdir(tmp_path / "dump"))
    assert any(f.endswith(".imported.mlir") for f in dumped) and any(f.endswith(".optimized.mlir") for f in dumped)
    args = _mlp_args(np.random.default_rng(2))
    exe(*args)
    assert exe.kernel_durations().shape[0] == 1  # profile=True reached the backend
    with pytest.raises(ValueError, match="has 1 device"):
        axle.client().compile(text, device_assignment=[3])
    plain = axle.client().compile(text, passes=False)
    np.testing.assert_allclose(plain(*args), exe(*args), rtol=1e-5, atol=1e-6)


def test_interpreter_backend_through_the_client():
    text = open(MLP, encoding="utf-8").read()
    args = _mlp_args(np.random.default_rng(3))
    exe = axle.client("interpreter").compile(text)
    out = exe.execute(args)
    np.testing.assert_allclose(np.asarray(out[0]), interpret(axle.parse_module(text), *args), rtol=1e-6)
