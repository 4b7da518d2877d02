"""Clients, devices and Buffers: execute returns Buffers, execute_async returns at once."""
import numpy as np

import axle

TEXT = """func.func @main(%x: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %0 = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %c = stablehlo.constant dense<0.00390625> : tensor<256x256xf32>
  %1 = stablehlo.multiply %0, %c : tensor<256x256xf32>
  return %1 : tensor<256x256xf32>
}"""

client = axle.client()  # the cpu backend's client
device = client.devices()[0]
exe = client.compile(TEXT)
x = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)

buf = axle.device_put(x, device)
out = exe.execute([buf])[0]  # a Buffer on cpu:0
print(out, out.shape, out.dtype)
assert np.shares_memory(np.asarray(out), np.asarray(out))  # host memory: np.asarray does not copy

cur, want = buf, x
for _ in range(4):  # queued: each call reads the previous call's output when it is ready
    cur = exe.execute_async([cur])[0]
    want = (want @ want) / 256
print("queued:", cur)
np.testing.assert_allclose(np.asarray(cur.block_until_ready()), want, rtol=1e-3, atol=1e-5)
print("ok")
