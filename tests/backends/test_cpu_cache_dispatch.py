"""The disk compilation cache (keys, corruption, eviction), the fast call path and BLAS dots."""
import os

import numpy as np
import pytest

import axle
from axle.backends.cpu import disk_cache
from axle.backends.cpu import executable as cpu_exe
from axle.interpreter.evaluator import ArgumentError

TEXT = """
func.func @main(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = stablehlo.broadcast_in_dim %y, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %1 = stablehlo.add %x, %0 : tensor<4x8xf32>
  %2 = stablehlo.exponential %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
"""
# the same program with other value names and source locations
RENAMED = """
func.func @main(%lhs: tensor<4x8xf32> loc("a.py":1:1), %bias: tensor<8xf32>) -> tensor<4x8xf32> {
  %b = stablehlo.broadcast_in_dim %bias, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32> loc("a.py":2:2)
  %s = stablehlo.add %lhs, %b : tensor<4x8xf32>
  %e = stablehlo.exponential %s : tensor<4x8xf32> loc("b.py":9:9)
  return %e : tensor<4x8xf32>
}
"""


def _args():
    r = np.random.default_rng(0)
    return r.standard_normal((4, 8)).astype(np.float32), r.standard_normal(8).astype(np.float32)


def _entries(d):
    return [os.path.join(root, f) for root, _, fs in os.walk(d) for f in fs if f.endswith(".axc")]


def test_disk_cache_hit_ignores_names_and_locations(tmp_path):
    x, y = _args()
    with disk_cache.using(str(tmp_path)):
        cpu_exe.clear_memory_cache()
        first = axle.compile(TEXT)
        assert not first.loaded_from_disk and len(_entries(tmp_path)) == 1
        cpu_exe.clear_memory_cache()
        second = axle.compile(RENAMED)
        assert second.loaded_from_disk
        np.testing.assert_array_equal(second(x, y), first(x, y))
        np.testing.assert_allclose(second(x, y), np.exp(x + y), rtol=1e-6)


def test_disk_cache_key_changes_with_program(tmp_path):
    with disk_cache.using(str(tmp_path)):
        cpu_exe.clear_memory_cache()
        axle.compile(TEXT)
        cpu_exe.clear_memory_cache()
        other = axle.compile(TEXT.replace("exponential", "tanh"))
        assert not other.loaded_from_disk and len(_entries(tmp_path)) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupted_entry_is_recompiled_not_trusted(tmp_path, damage):
    x, y = _args()
    with disk_cache.using(str(tmp_path)):
        cpu_exe.clear_memory_cache()
        good = axle.compile(TEXT)(x, y)
        (path,) = _entries(tmp_path)
        data = open(path, "rb").read()
        if damage == "truncate":
            data = data[: len(data) // 2]
        elif damage == "flip":
            k = len(data) // 2
            data = data[:k] + bytes([data[k] ^ 0x40]) + data[k + 1:]
        elif damage == "garbage":
            data = b"\x80\x04not an entry" * 10
        else:
            data = b""
        open(path, "wb").write(data)
        cpu_exe.clear_memory_cache()
        again = axle.compile(TEXT)
        assert not again.loaded_from_disk
        np.testing.assert_array_equal(again(x, y), good)
        # the bad entry was replaced by a good one
        cpu_exe.clear_memory_cache()
        assert axle.compile(TEXT).loaded_from_disk


def test_lru_eviction_keeps_the_cap(tmp_path, monkeypatch):
    """With a cap that holds the two newest entries and not three, the oldest go."""
    fns = ["exponential", "tanh", "log", "sine", "cosine"]

    def fill(where):
        made = []
        with disk_cache.using(str(where)):
            for fn in fns:
                cpu_exe.clear_memory_cache()
                before = set(_entries(where))
                axle.compile(TEXT.replace("exponential", fn))
                made += sorted(set(_entries(where)) - before)
        return made
    sizes = [os.path.getsize(p) for p in fill(tmp_path / "all")]
    assert len(sizes) == len(fns)
    monkeypatch.setenv("AXLE_CACHE_MAX_BYTES", str(sizes[-1] + sizes[-2] + min(sizes[-3], sizes[-2]) // 2))
    made = fill(tmp_path / "capped")
    assert sorted(_entries(tmp_path / "capped")) == sorted(made[-2:])


def test_cache_off(tmp_path):
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        assert not axle.compile(TEXT).loaded_from_disk
    assert disk_cache.cache_dir() is not None or os.environ.get("AXLE_CACHE_DIR") in ("off", "0", "")


def test_fast_and_checking_paths_agree():
    x, y = _args()
    exe = axle.compile(TEXT)
    want = np.exp(x + y)
    np.testing.assert_allclose(exe(x, y), want, rtol=1e-6)  # fast path
    np.testing.assert_allclose(exe(x.tolist(), y), want, rtol=1e-6)  # converted
    xt = np.asfortranarray(x)
    np.testing.assert_allclose(exe(xt, y), want, rtol=1e-6)  # non-contiguous input copied
    big = np.zeros((8, 16), np.float32)[::2, ::2]
    np.testing.assert_allclose(exe(big, y), np.exp(big + y), rtol=1e-6)  # strided view
    with pytest.raises(ArgumentError, match="argument 0"):
        exe(x.astype(np.float64), y)
    with pytest.raises(ArgumentError, match="argument 1"):
        exe(x, np.zeros(7, np.float32))
    with pytest.raises(ArgumentError, match="takes 2"):
        exe(x)


@pytest.mark.parametrize("dtype,et", [(np.float32, "f32"), (np.float64, "f64"), (np.complex64, "complex<f32>")])
@pytest.mark.parametrize("batch", [False, True])
def test_blas_dot_matches_numpy(dtype, et, batch, monkeypatch):
    # BLAS itself (few-row f32 dots take axle's kernel where the host has one:
    # test_cpu_dot_lowp.py)
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_lowp_dot=false")
    m, k, n = 33, 65, 17
    b = "5x" if batch else ""
    bd = "batching_dims = [0] x [0], " if batch else ""
    c = [2, 1] if batch else [1, 0]
    text = f"""func.func @main(%a: tensor<{b}{m}x{k}x{et}>, %b: tensor<{b}{k}x{n}x{et}>) -> tensor<{b}{m}x{n}x{et}> {{
      %0 = stablehlo.dot_general %a, %b, {bd}contracting_dims = [{c[0]}] x [{c[1]}] : (tensor<{b}{m}x{k}x{et}>, tensor<{b}{k}x{n}x{et}>) -> tensor<{b}{m}x{n}x{et}>
      return %0 : tensor<{b}{m}x{n}x{et}>
    }}"""
    r = np.random.default_rng(1)
    lead = (5,) if batch else ()
    a = r.standard_normal(lead + (m, k)).astype(dtype)
    bb = r.standard_normal(lead + (k, n)).astype(dtype)
    if np.iscomplexobj(a):
        a = a + 1j * r.standard_normal(a.shape).astype(dtype)
    exe = axle.compile(text)
    assert [kk.library for kk in exe.program.kernels] == [f"blas.{'sdc'[[np.float32, np.float64, np.complex64].index(dtype)]}gemm"]
    want = np.matmul(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64), bb)
    np.testing.assert_allclose(exe(a, bb), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(exe(a, bb), axle.interpret(text, a, bb), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("lhs_t", [False, True])
@pytest.mark.parametrize("rhs_t", [False, True])
@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize("out_t", [False, True])
def test_transposed_operands_fold_into_blas(lhs_t, rhs_t, batch, out_t, monkeypatch):
    """transpose-fold + BLAS 'T' flags: dots of transposed operands (and transposed results)
    run without transpose kernels and give numpy's results (BLAS itself: axle's own kernels
    read transposed operands in place too, test_cpu_dot_lowp.py)."""
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_lowp_dot=false")
    m, k, n, bsz = 21, 34, 13, 3
    pre = [bsz] if batch else []
    ls = pre + ([k, m] if lhs_t else [m, k])
    rs = pre + ([n, k] if rhs_t else [k, n])

    def tt(shape):
        return f"tensor<{'x'.join(map(str, shape))}xf32>"
    perm = (lambda r: f"dims = [{', '.join(map(str, list(range(len(pre))) + [r - 1, r - 2]))}]")
    lines = []
    a, bname = "%a", "%b"
    if lhs_t:
        lines.append(f"%at = stablehlo.transpose %a, {perm(len(ls))} : ({tt(ls)}) -> {tt(pre + [m, k])}")
        a = "%at"
    if rhs_t:
        lines.append(f"%bt = stablehlo.transpose %b, {perm(len(rs))} : ({tt(rs)}) -> {tt(pre + [k, n])}")
        bname = "%bt"
    bd = "batching_dims = [0] x [0], " if batch else ""
    c = (2, 1) if batch else (1, 0)
    lines.append(f"%d = stablehlo.dot_general {a}, {bname}, {bd}contracting_dims = [{c[0]}] x [{c[1]}] : "
                 f"({tt(pre + [m, k])}, {tt(pre + [k, n])}) -> {tt(pre + [m, n])}")
    res, rt = "%d", pre + [m, n]
    if out_t:
        lines.append(f"%r = stablehlo.transpose %d, {perm(len(rt))} : ({tt(rt)}) -> {tt(pre + [n, m])}")
        res, rt = "%r", pre + [n, m]
    text = (f"func.func @main(%a: {tt(ls)}, %b: {tt(rs)}) -> {tt(rt)} {{\n  " + "\n  ".join(lines)
            + f"\n  return {res} : {tt(rt)}\n}}")
    r = np.random.default_rng(4)
    x = r.standard_normal(ls).astype(np.float32)
    y = r.standard_normal(rs).astype(np.float32)
    exe = axle.compile(text)
    assert [kk.name for kk in exe.program.kernels] == ["stablehlo.dot_general"]
    assert exe.program.kernels[0].library == "blas.sgemm"
    want = axle.interpret(text, x, y)
    np.testing.assert_allclose(exe(x, y), want, rtol=1e-4, atol=1e-4)
