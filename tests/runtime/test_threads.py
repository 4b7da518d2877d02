"""Thread safety: one executable called from 8 threads at once; compiles from several
threads at once."""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import axle
from axle.interpreter import interpret

BLOCK = """func.func @main(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %1 = stablehlo.tanh %0 : tensor<16x32xf32>
  %2 = stablehlo.add %1, %x : tensor<16x32xf32>
  return %2 : tensor<16x32xf32>
}"""
THREADS, CALLS = 8, 200


def test_one_executable_from_eight_threads():
    exe = axle.compile(BLOCK)
    rt = axle.client().compile(BLOCK)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((32, 32)).astype(np.float32) / 8
    inputs = [rng.standard_normal((16, 32)).astype(np.float32) for _ in range(THREADS)]
    want = [exe(x, w) for x in inputs]  # each thread has its own input: a mix-up shows
    np.testing.assert_allclose(want[0], interpret(axle.parse_module(BLOCK), inputs[0], w), rtol=1e-5, atol=1e-5)
    barrier = threading.Barrier(THREADS)

    def worker(t):
        barrier.wait()
        bad = 0
        for i in range(CALLS):
            out = exe(inputs[t], w) if i % 2 else np.asarray(rt.execute([inputs[t], w])[0])
            bad += not np.array_equal(out, want[t])
        return bad
    with ThreadPoolExecutor(THREADS) as pool:
        bad = list(pool.map(worker, range(THREADS)))
    assert bad == [0] * THREADS


def test_compiles_from_several_threads(monkeypatch, tmp_path):
    from axle.backends.cpu.executable import clear_memory_cache
    monkeypatch.setenv("AXLE_CACHE_DIR", str(tmp_path))  # a cold cache: every thread compiles
    clear_memory_cache()
    before = axle.metrics()["native_compiles"]
    texts = [BLOCK.replace("tanh", op) for op in ("tanh", "exponential", "negate", "abs")] * 2  # repeats too
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    w = rng.standard_normal((32, 32)).astype(np.float32) / 8
    barrier = threading.Barrier(len(texts))

    def work(text):
        barrier.wait()
        return axle.compile(text)(x, w)
    with ThreadPoolExecutor(len(texts)) as pool:
        outs = list(pool.map(work, texts))
    assert axle.metrics()["native_compiles"] - before >= 4
    for text, out in zip(texts, outs):
        np.testing.assert_allclose(out, interpret(axle.parse_module(text), x, w), rtol=1e-5, atol=1e-5)


def test_dynamic_shapes_compiled_from_several_threads_at_once():
    text = """func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
      %0 = stablehlo.exponential %x : tensor<?xf32>
      %1 = stablehlo.add %0, %x : tensor<?xf32>
      return %1 : tensor<?xf32>
    }"""
    exe = axle.compile(text)
    sizes = [3, 5, 7, 11, 3, 5, 7, 11]
    barrier = threading.Barrier(len(sizes))

    def work(n):
        x = np.linspace(-1, 1, n, dtype=np.float32)
        barrier.wait()
        return x, [exe(x) for _ in range(20)]
    with ThreadPoolExecutor(len(sizes)) as pool:
        for x, outs in pool.map(work, sizes):
            want = interpret(axle.parse_module(text), x)
            for out in outs:
                np.testing.assert_allclose(out, want, rtol=1e-6)
