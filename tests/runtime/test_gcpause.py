"""The garbage collector is held off while a program compiles, and put back as it was."""
import gc
import threading

import numpy as np

import axle
from axle import gcpause
from axle.backends.cpu import plugin

TEXT = """
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def _compile_seeing_gc(monkeypatch):
    seen = []
    real = plugin.CpuBackend.compile

    def spy(self, *a, **k):
        seen.append(gc.isenabled())
        return real(self, *a, **k)
    monkeypatch.setattr(plugin.CpuBackend, "compile", spy)
    exe = axle.compile(TEXT, backend="cpu")
    a = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(exe(a, a), a + a)
    return seen


def test_compile_runs_with_the_collector_off_and_restores_it(monkeypatch):
    assert gc.isenabled()
    assert _compile_seeing_gc(monkeypatch) == [False]
    assert gc.isenabled()


def test_a_collector_the_program_turned_off_stays_off(monkeypatch):
    gc.disable()
    try:
        assert _compile_seeing_gc(monkeypatch) == [False]
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_compile_errors_restore_the_collector():
    try:
        axle.compile("func.func @main( {", backend="cpu")
    except Exception:  # noqa: BLE001 - any parse error will do
        pass
    assert gc.isenabled()


def test_nested_and_concurrent_pauses_end_with_the_last_one():
    inside = threading.Event()
    release = threading.Event()
    states = []

    def other():
        with gcpause.paused():
            inside.set()
            release.wait(10)
            states.append(gc.isenabled())

    t = threading.Thread(target=other)
    with gcpause.paused():
        t.start()
        inside.wait(10)
        with gcpause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread is still compiling
    release.set()
    t.join(10)
    assert states == [False]
    assert gc.isenabled()
