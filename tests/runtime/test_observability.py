"""axle.metrics(), AXLE_FLAGS=--explain_cache_misses, and one log record per compile."""
import logging

import numpy as np

import axle
from axle.backends.cpu import disk_cache
from axle.backends.cpu.executable import clear_memory_cache
from axle.flags import FLAGS

PROGRAM = """func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %0 = stablehlo.multiply %x, %x : tensor<{n}xf32>
  %1 = stablehlo.add %0, %x : tensor<{n}xf32>
  return %1 : tensor<{n}xf32>
}}"""


def test_metrics_count_compiles_cache_levels_and_executions(tmp_path):
    text = PROGRAM.format(n=37)
    clear_memory_cache()
    with disk_cache.using(str(tmp_path / "cache")):
        before = axle.metrics()
        exe = axle.compile(text)  # a cold compile: misses memory and disk, LLVM runs
        exe(np.ones(37, np.float32))
        exe(np.ones(37, np.float32))
        axle.compile(text)  # in memory
        clear_memory_cache()
        axle.compile(text)  # on disk
        after = axle.metrics()
    d = {k: after[k] - before[k] for k in after}
    assert d["compiles"] == 3 and d["native_compiles"] == 1
    assert d["memory_cache_misses"] == 2 and d["memory_cache_hits"] == 1
    assert d["disk_cache_misses"] == 1 and d["disk_cache_hits"] == 1
    assert d["executions"] == 2 and d["compile_seconds"] > 0 and d["llvm_seconds"] > 0
    assert set(axle.metrics()) == set(__import__("axle.counters").counters.COUNTERS)


def test_every_compile_is_logged_once(caplog):
    with caplog.at_level(logging.INFO, logger="axle.compile"):
        axle.compile(PROGRAM.format(n=38))
        axle.client().compile(PROGRAM.format(n=38))
        axle.compile(PROGRAM.format(n=38), backend="interpreter")
    records = [r for r in caplog.records if r.name == "axle.compile"]
    assert len(records) == 3
    assert all("compile @main on " in r.getMessage() for r in records)
    assert "interpreter" in records[2].getMessage()


def test_explain_cache_misses_names_what_changed(monkeypatch, caplog):
    assert "explain_cache_misses" in FLAGS and FLAGS["explain_cache_misses"].help
    monkeypatch.setenv("AXLE_FLAGS", "--explain_cache_misses")
    clear_memory_cache()
    dynamic = PROGRAM.format(n="?")
    with caplog.at_level(logging.WARNING, logger="axle.compile"):
        exe = axle.compile(dynamic)
        exe(np.ones(5, np.float32))
        exe(np.ones(6, np.float32))  # a new signature
        axle.compile(PROGRAM.format(n=39))
        axle.compile(PROGRAM.format(n=39), passes=False)  # other options
    messages = [r.getMessage() for r in caplog.records if "cache miss" in r.getMessage()]
    assert any("signature ([[5]] -> [[6]])" in m for m in messages), messages
    assert any("passes (True -> False)" in m for m in messages), messages
