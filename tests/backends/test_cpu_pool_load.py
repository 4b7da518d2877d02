"""The pool under load (parallel.py): a worker that holds a chunk for long, a busy machine.

The pool's entry point is called directly with a chunk function written in Python (a
ctypes callback), so a test decides how long a chunk takes on which thread: a worker
"descheduled" mid-chunk is a worker whose chunk sleeps.
"""
import ctypes
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from axle.backends.cpu import parallel
from axle.backends.cpu.llvm_env import EXTERNAL_SYMBOLS

pytestmark = pytest.mark.skipif(not parallel.available(), reason="no thread pool here (one core, or not x86-64 Linux)")

CHUNK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
RUN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_LOCK = threading.Lock()  # one test job at a time (the callbacks share `ran`)


def _run(n: int, chunk_s_on_worker: float, chunk_s_on_caller: float = 0.0) -> list:
    """Run one job of n chunks; returns [(chunk, thread)] in the order they finished."""
    ran = []

    def chunk(data, i, count, w):
        assert count == n
        time.sleep(chunk_s_on_worker if w else chunk_s_on_caller)
        ran.append((i, w))
    cb = CHUNK(chunk)
    RUN(EXTERNAL_SYMBOLS["axle_pool_run"])(ctypes.cast(cb, ctypes.c_void_p), None, n)
    return ran


def _wait_out_backoff():
    time.sleep(0.3)  # longer than the longest serial stretch after a stall (BACKOFF_MAX_CYCLES)


def test_every_chunk_runs_once_and_the_caller_waits_for_a_slow_worker():
    """A worker that holds its chunk far longer than the caller's chunks take (as when it
    is descheduled mid-chunk): the caller finishes the other chunks, sleeps until the
    worker's chunk is done (woken by the thread finishing the last chunk), and returns
    only then."""
    with _LOCK:
        _wait_out_backoff()
        for _ in range(20):  # until the worker took a chunk at all (it may start late)
            before = parallel.stats()
            ran = _run(16, 0.02)
            assert sorted(i for i, _ in ran) == list(range(16))  # each chunk exactly once
            after = parallel.stats()
            if any(w for _, w in ran):
                break
            _wait_out_backoff()
        else:
            pytest.skip("the pool's worker never took a chunk (machine too busy)")
        assert after["jobs"] == before["jobs"] + 1
        # the caller returned after the worker's chunk: it is in `ran`, and the caller slept
        # rather than spun while waiting for it (a 20 ms chunk against its ~0 ms ones)
        assert after["caller_sleeps"] > before["caller_sleeps"]
        assert after["caller_chunks"] - before["caller_chunks"] == sum(1 for _, w in ran if w == 0)


def test_a_stall_makes_the_next_kernels_serial_then_split_again():
    """A job that took longer than the caller alone would have is a stall: the next jobs
    run serially (all chunks on the caller), for a time proportional to what the stall
    lost, and split again afterwards."""
    with _LOCK:
        for _ in range(20):
            _wait_out_backoff()
            before = parallel.stats()
            ran = _run(8, 0.03)
            if any(w for _, w in ran):
                break
        else:
            pytest.skip("the pool's worker never took a chunk (machine too busy)")
        stalled = parallel.stats()
        assert stalled["stalls"] == before["stalls"] + 1
        ran = _run(8, 0.0)  # right after the stall: serial
        assert all(w == 0 for _, w in ran) and sorted(i for i, _ in ran) == list(range(8))
        after = parallel.stats()
        assert after["serial_backoff"] == stalled["serial_backoff"] + 1
        assert after["jobs"] == stalled["jobs"]
        _wait_out_backoff()
        _run(8, 0.0)
        assert parallel.stats()["jobs"] == after["jobs"] + 1  # split again


def test_a_late_worker_is_no_stall():
    """Chunks that take the caller as long as the worker: waiting for the worker's last
    chunk is shorter than running alone, so no stall and no serial stretch follows."""
    with _LOCK:
        _wait_out_backoff()
        before = parallel.stats()
        for _ in range(3):  # 20 ms chunks: a stall would need the worker away for ~150 ms
            _run(16, 0.02, 0.02)
        after = parallel.stats()
        assert after["jobs"] == before["jobs"] + 3
        assert after["stalls"] == before["stalls"]


def test_split_programs_beside_a_busy_process_give_the_serial_bits(monkeypatch):
    """With another process spinning (three runnable threads on two cores), split kernels
    return the same bits as on a quiet machine, whichever thread ran which chunk, the
    serial program's results (up to the reduction's order), and the pool does not hang."""
    import axle
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu import executable as cpu_exe
    text = """func.func @main(%x: tensor<257x131xf32>, %y: tensor<131xf32>) -> (tensor<257x131xf32>, tensor<131xf32>) {
      %b = stablehlo.broadcast_in_dim %y, dims = [1] : (tensor<131xf32>) -> tensor<257x131xf32>
      %0 = stablehlo.multiply %x, %b : tensor<257x131xf32>
      %1 = stablehlo.tanh %0 : tensor<257x131xf32>
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %2 = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [0] : (tensor<257x131xf32>, tensor<f32>) -> tensor<131xf32>
      return %1, %2 : tensor<257x131xf32>, tensor<131xf32>
    }"""

    def compile_with(min_work):
        monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", min_work)
        monkeypatch.setenv("AXLE_FLAGS", "--cpu_parallel=true")
        with disk_cache.disabled():
            cpu_exe.clear_memory_cache()
            exe = axle.compile(text)
            cpu_exe.clear_memory_cache()
        return exe
    par, ser = compile_with(1), compile_with(1 << 62)
    assert ".par" in par._static.optimized_ir and ".par" not in ser._static.optimized_ir
    r = np.random.default_rng(3)
    args = [r.standard_normal((257, 131)).astype(np.float32), r.standard_normal(131).astype(np.float32)]
    want = par(*args)
    for g, s in zip(want, ser(*args)):
        np.testing.assert_allclose(g, s, rtol=1e-5, atol=1e-5)
    spinner = subprocess.Popen([sys.executable, "-c", "while True:\n    pass"])
    try:
        time.sleep(0.2)
        before = parallel.stats()
        for _ in range(300):
            got = par(*args)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
        after = parallel.stats()
    finally:
        spinner.kill()
        spinner.wait()
    ran = (after["jobs"] - before["jobs"]) + (after["serial_backoff"] - before["serial_backoff"])
    assert ran >= 300  # each call ran its split kernels through the pool (split or serial)
