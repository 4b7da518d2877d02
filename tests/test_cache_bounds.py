"""Caches are bounded: each stops growing at its bound (a flag) and still answers right."""
from __future__ import annotations

import ast
import os

import numpy as np
import pytest

import axle
from axle.lru import LRU

ROOT = os.path.dirname(axle.__file__)


def test_lru_evicts_the_least_recently_used():
    c = LRU(3)
    for k in range(3):
        c[k] = k * 10
    assert c.get(0) == 0  # 0 is now the most recently used
    c[3] = 30
    assert list(c) == [2, 0, 3] and c.evictions == 1 and 1 not in c
    assert c[2] == 20 and list(c) == [0, 3, 2]
    c[4] = 40
    assert list(c) == [3, 2, 4] and len(c) == 3
    bound = [2]
    d = LRU(lambda: bound[0])  # the bound is read on every insertion
    for k in range(5):
        d[k] = k
    assert list(d) == [3, 4]
    bound[0] = 0  # no limit
    for k in range(5, 10):
        d[k] = k
    assert len(d) == 7


def _program(n: int) -> str:
    return f"""func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %y = stablehlo.multiply %x, %x : tensor<{n}xf32>
  %z = stablehlo.add %y, %x : tensor<{n}xf32>
  return %z : tensor<{n}xf32>
}}"""


def test_executable_memory_cache_stops_at_its_bound(monkeypatch):
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu.executable import _CACHE, clear_memory_cache
    monkeypatch.setenv("AXLE_FLAGS", "--memory_cache_programs=2")
    clear_memory_cache()
    with disk_cache.disabled():
        for n in (3, 4, 5, 6, 3):
            x = np.arange(n, dtype=np.float32)
            out = axle.compile(_program(n), backend="cpu")(x)
            np.testing.assert_array_equal(out, x * x + x)
            assert len(_CACHE) <= 2
        assert len(_CACHE) == 2 and _CACHE.evictions >= 3
    clear_memory_cache()


def test_dynamic_executable_keeps_a_bounded_number_of_signatures(monkeypatch):
    from axle.backends.cpu.executable import CpuExecutable
    from axle.ir import parse_module
    monkeypatch.setenv("AXLE_FLAGS", "--jit_cache_entries=2")
    text = """func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %y = stablehlo.add %x, %x : tensor<?xf32>
  return %y : tensor<?xf32>
}"""
    exe = CpuExecutable(parse_module(text))
    for n in (2, 3, 4, 5, 2):
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(exe.execute([x])[0], 2 * x)
        assert len(exe._programs) <= 2


def test_jax_jit_cache_stops_at_its_bound(monkeypatch):
    pytest.importorskip("jax")
    import jax.numpy as jnp
    import axle.jax
    monkeypatch.setenv("AXLE_FLAGS", "--jit_cache_entries=2")
    f = axle.jax.jit(lambda x: jnp.sin(x) * 2.0)
    for n in (2, 3, 4, 5, 3):
        x = np.linspace(0, 1, n, dtype=np.float32)
        np.testing.assert_allclose(np.asarray(f(x)), np.sin(x) * 2.0, rtol=1e-6)
        assert f._cache_size() <= 2
    assert f._cache_size() == 2


def test_unbounded_lru_caches_only_on_functions_without_arguments():
    """`lru_cache(maxsize=None)` / `functools.cache` is allowed where it holds one value
    (a function of no arguments: a lazy constant); anything keyed by arguments is bounded."""
    offenders = []
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(folder, f)
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for d in node.decorator_list:
                    text = ast.unparse(d)
                    unbounded = text.endswith("cache") or "maxsize=None" in text
                    if ("lru_cache" in text or text.endswith("cache")) and unbounded:
                        a = node.args
                        if a.args or a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg:
                            offenders.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}: {node.name}")
    assert not offenders, "bound these caches:\n" + "\n".join(offenders)


@pytest.mark.filterwarnings("ignore:os.fork")
def test_a_forked_child_keeps_its_parents_programs_out_of_the_cache():
    """A child process never frees (by eviction) a JIT its parent made."""
    import multiprocessing as mp
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu.executable import _CACHE, clear_memory_cache
    clear_memory_cache()
    with disk_cache.disabled():
        axle.compile(_program(9), backend="cpu")
    assert len(_CACHE) == 1
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        sizes = pool.apply(_child_cache_sizes)
    assert sizes == (0, 1, 1)  # empty after the fork; the parent's program kept aside
    assert len(_CACHE) == 1
    clear_memory_cache()


def _child_cache_sizes():
    from axle.backends.cpu import executable
    before = len(executable._CACHE)
    with __import__("axle.backends.cpu.disk_cache", fromlist=["x"]).disabled():
        axle.compile(_program(10), backend="cpu")
    return before, len(executable._CACHE), len(executable._INHERITED)
