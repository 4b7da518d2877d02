"""Kernels that are the same code on other buffers are compiled once per program
(context.py: kernel functions take the addresses of their buffers as arguments; _dedupe):
a model's repeated layers share one function each, and the results are those of the
program compiled with a function per kernel, bit for bit, and agree with XLA."""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import axle
from axle.backends.cpu import disk_cache
from axle.backends.cpu import executable as cpu_exe


def _layers(depth: int, width: int = 96, batch: int = 64):
    def f(x, ws, bs):
        for w, b in zip(ws, bs):
            x = jax.nn.gelu(x @ w + b) + x  # residual: the same kernels every layer
            x = x / (1.0 + jnp.mean(x * x, axis=-1, keepdims=True))
        return x
    r = np.random.default_rng(depth)
    x = r.standard_normal((batch, width)).astype(np.float32)
    ws = [(r.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32) for _ in range(depth)]
    bs = [r.standard_normal((width,)).astype(np.float32) for _ in range(depth)]
    return f, (x, ws, bs)


def _compile(text: str, monkeypatch, dedupe: bool):
    monkeypatch.setenv("AXLE_FLAGS", f"--cpu_dedupe_kernels={'true' if dedupe else 'false'}")
    cpu_exe.clear_memory_cache()
    with disk_cache.disabled():
        return axle.compile(text, backend="cpu")


def _kernel_functions(exe) -> list:
    return re.findall(r'^define internal void @"(k\d+\.[^"]*?)"\(', exe.program.llvm_ir, re.M)


@pytest.mark.parametrize("depth", [1, 4])
def test_repeated_layers_share_their_kernels(depth, monkeypatch):
    f, args = _layers(depth)
    text = jax.jit(f).lower(*args).as_text()
    flat = [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]
    once = _compile(text, monkeypatch, True)
    each = _compile(text, monkeypatch, False)
    top = sum(1 for k in each.program.kernels if k.depth == 0)
    own = [n for n in _kernel_functions(each) if not n.endswith(".par") and ".par." not in n]
    assert len(own) == top  # without deduplication every top-level kernel has its function
    shared = [n for n in _kernel_functions(once) if not n.endswith(".par") and ".par." not in n]
    sharing = [k for k in once.program.kernels if k.depth == 0 and k.shares is not None]
    assert len(sharing) == top - len(shared)  # each kernel without a function of its own says whose it runs
    assert all(k.shares < k.index for k in sharing)
    assert not any(k.shares is not None for k in each.program.kernels)
    if depth == 1:
        assert len(shared) == top
    else:  # layers 2..4 call layer 1's functions: about a quarter of the kernels' code
        assert len(shared) < top * 0.5, (len(shared), top)
        assert len(once.program.llvm_ir) < 0.6 * len(each.program.llvm_ir)
    got, ref = once.execute(flat), each.execute(flat)
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)
    expected = jax.jit(f)(*args)
    np.testing.assert_allclose(got[0], np.asarray(expected), rtol=2e-4, atol=2e-4)



def test_identical_loops_share_the_loop_kernel(monkeypatch):
    """Two while loops doing the same work on other buffers (their bodies' GEMMs split
    across the pool, reading the kernel's buffer array): one function for both."""
    def f(a, b, w):
        def body(i, x):
            return jnp.tanh(x @ w + 0.1 * i)
        return jax.lax.fori_loop(0, 5, body, a), jax.lax.fori_loop(0, 5, body, b)
    r = np.random.default_rng(3)
    a, b = (r.standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    w = (r.standard_normal((256, 256)) / 16).astype(np.float32)
    text = jax.jit(f).lower(a, b, w).as_text()
    once = _compile(text, monkeypatch, True)
    each = _compile(text, monkeypatch, False)
    loops = [k for k in once.program.kernels if k.depth == 0]
    assert [k.shares for k in loops] == [None, loops[0].index]
    got, ref = once.execute([a, b, w]), each.execute([a, b, w])
    for g, x in zip(got, ref):
        np.testing.assert_array_equal(g, x)
    for g, x in zip(got, jax.jit(f)(a, b, w)):
        np.testing.assert_allclose(g, np.asarray(x), rtol=1e-5, atol=1e-5)
