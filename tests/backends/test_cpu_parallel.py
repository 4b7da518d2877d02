"""Kernels split across threads (parallel.py) give the serial results, bit for bit."""
import numpy as np
import pytest

import axle
from axle.backends.cpu import disk_cache, parallel
from axle.backends.cpu import executable as cpu_exe

pytestmark = pytest.mark.skipif(not parallel.available(), reason="no thread pool here (one core, or not x86-64 Linux)")

PROGRAMS = {
    "elementwise": ("""func.func @main(%x: tensor<67x129xf32>, %y: tensor<129xf32>) -> tensor<67x129xf32> {
      %b = stablehlo.broadcast_in_dim %y, dims = [1] : (tensor<129xf32>) -> tensor<67x129xf32>
      %0 = stablehlo.multiply %x, %b : tensor<67x129xf32>
      %1 = stablehlo.tanh %0 : tensor<67x129xf32>
      return %1 : tensor<67x129xf32>
    }""", [(67, 129), (129,)]),
    "row_sum": ("""func.func @main(%x: tensor<67x129xf32>) -> tensor<67xf32> {
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<67x129xf32>, tensor<f32>) -> tensor<67xf32>
      return %0 : tensor<67xf32>
    }""", [(67, 129)]),
    "column_max": ("""func.func @main(%x: tensor<5x67x129xf32>) -> tensor<5x129xf32> {
      %z = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %0 = stablehlo.reduce(%x init: %z) applies stablehlo.maximum across dimensions = [1] : (tensor<5x67x129xf32>, tensor<f32>) -> tensor<5x129xf32>
      return %0 : tensor<5x129xf32>
    }""", [(5, 67, 129)]),
    # the leading axis kept, a short innermost one: split by rows, the sum over the middle
    # axis reassociated (vectorized along it) with the power fused into it
    "middle_sum_short_rows": ("""func.func @main(%x: tensor<37x67x3xf32>) -> tensor<37x3xf32> {
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %a = stablehlo.abs %x : tensor<37x67x3xf32>
      %e = stablehlo.constant dense<-1.5> : tensor<37x67x3xf32>
      %p = stablehlo.power %a, %e : tensor<37x67x3xf32>
      %0 = stablehlo.reduce(%p init: %z) applies stablehlo.add across dimensions = [1] : (tensor<37x67x3xf32>, tensor<f32>) -> tensor<37x3xf32>
      return %0 : tensor<37x3xf32>
    }""", [(37, 67, 3)]),
    "int_column_sum": ("""func.func @main(%x: tensor<67x131xi32>) -> tensor<131xi32> {
      %z = stablehlo.constant dense<0> : tensor<i32>
      %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<67x131xi32>, tensor<i32>) -> tensor<131xi32>
      return %0 : tensor<131xi32>
    }""", [(67, 131)]),
    "gemm_batches": ("""func.func @main(%a: tensor<5x17x20xf32>, %b: tensor<5x20x23xf32>) -> tensor<5x17x23xf32> {
      %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<5x17x20xf32>, tensor<5x20x23xf32>) -> tensor<5x17x23xf32>
      return %0 : tensor<5x17x23xf32>
    }""", [(5, 17, 20), (5, 20, 23)]),
    "conv_tiles": ("""func.func @main(%x: tensor<3x19x17x4xf32>, %w: tensor<3x3x4x6xf32>) -> tensor<3x19x17x6xf32> {
      %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
           window = {stride = [1, 1], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]}
           {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<3x19x17x4xf32>, tensor<3x3x4x6xf32>) -> tensor<3x19x17x6xf32>
      return %0 : tensor<3x19x17x6xf32>
    }""", [(3, 19, 17, 4), (3, 3, 4, 6)]),
}


def _compile(text, min_work, monkeypatch, parallel_on=True):
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", min_work)
    # on is the default, unless the environment says otherwise; GEMMs through BLAS (the
    # skinny f32 kernel of kernels_dot_lowp.py is tested in test_cpu_dot_lowp.py)
    monkeypatch.setenv("AXLE_FLAGS", f"--cpu_parallel={'true' if parallel_on else 'false'} --cpu_lowp_dot=false")
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(text)
        cpu_exe.clear_memory_cache()
    return exe


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_parallel_equals_serial_and_interpreter(name, monkeypatch):
    text, shapes = PROGRAMS[name]
    r = np.random.default_rng(5)
    args = [(r.integers(-1000, 1000, s).astype(np.int32) if "int" in name else r.standard_normal(s).astype(np.float32))
            for s in shapes]
    if name == "conv_tiles":  # small tiles: many of them, a partial last one (generated or library path)
        from axle.backends.cpu import kernels_conv, kernels_conv_general
        monkeypatch.setattr(kernels_conv, "PATCH_BYTES", 36 * 4 * 50)
        monkeypatch.setattr(kernels_conv_general, "PATCH_BYTES", 36 * 4 * 50)
        monkeypatch.setattr(kernels_conv_general, "MIN_TILE", 50)
    par = _compile(text, 1, monkeypatch)
    assert ".par" in par._static.optimized_ir  # really split
    ser = _compile(text, 1 << 62, monkeypatch)
    assert ".par" not in ser._static.optimized_ir
    got = par(*args)
    np.testing.assert_array_equal(got, ser(*args))
    want = axle.interpret(text, *args)
    if "int" in name:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_programs_called_from_several_threads_at_once(monkeypatch):
    """The pool runs one job at a time; a caller finding it busy runs its chunks itself."""
    import threading
    text, shapes = PROGRAMS["elementwise"]
    r = np.random.default_rng(8)
    args = [r.standard_normal(s).astype(np.float32) for s in shapes]
    par = _compile(text, 1, monkeypatch)
    want = _compile(text, 1 << 62, monkeypatch)(*args)
    bad = []

    def run():
        for _ in range(200):
            if not np.array_equal(par(*args), want):
                bad.append(1)
    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_forked_child_runs_split_kernels_without_workers(monkeypatch):
    """fork() keeps only the calling thread: the child's pool has no workers, and its caller
    runs every chunk (instead of waiting for threads that do not exist)."""
    import multiprocessing
    text, shapes = PROGRAMS["elementwise"]
    r = np.random.default_rng(9)
    args = [r.standard_normal(s).astype(np.float32) for s in shapes]
    par = _compile(text, 1, monkeypatch)
    want = par(*args)  # the parent's pool has run it (workers started)
    _FORKED[:] = [par, args]  # inherited by the child (executables do not pickle)
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            got = pool.apply_async(_run_forked).get(timeout=60)
    finally:
        _FORKED.clear()
    np.testing.assert_array_equal(got, want)


GEMM = ("""func.func @main(%a: tensor<9x20xf32>, %b: tensor<20x75xf32>) -> tensor<9x75xf32> {
      %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<9x20xf32>, tensor<20x75xf32>) -> tensor<9x75xf32>
      return %0 : tensor<9x75xf32>
    }""", [(9, 20), (20, 75)])


_FORKED: list = []


def _run_forked():
    exe, args = _FORKED
    return exe(*args)


@pytest.mark.parametrize("shape", [(9, 20, 75), (75, 20, 9), (130, 7, 300)])
def test_large_gemm_is_split_into_blocks_on_the_pool(shape, monkeypatch):
    """A single large GEMM is cut into blocks (of columns or of rows) that axle's pool
    claims, each a single-threaded BLAS call: OpenBLAS's own threads are never used (they
    wait for each other on a busy machine). Same results as one serial call."""
    from axle.backends.cpu import blas
    monkeypatch.setattr(blas, "BLOCK_MIN", 2)
    m, k, n = shape
    text = GEMM[0].replace("9x20", f"{m}x{k}").replace("20x75", f"{k}x{n}").replace("9x75", f"{m}x{n}")
    r = np.random.default_rng(10)
    args = [r.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n))]
    par = _compile(text, 1, monkeypatch)
    assert ".par" in par._static.optimized_ir
    assert "axle_blas_set_num_threads_local(i32 1)" in par._static.optimized_ir
    ser = _compile(text, 1 << 62, monkeypatch)
    assert ".par" not in ser._static.optimized_ir
    np.testing.assert_allclose(par(*args), ser(*args), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(par(*args), args[0].astype(np.float64) @ args[1], rtol=1e-4, atol=1e-4)


# reductions over the leading axis with small results: the axis is cut into parts whose
# partial results are combined in part order (kernels.py, _reduce_leading_in_parts)
LEADING = {
    "sum": ("""func.func @main(%x: tensor<67x129xf32>) -> tensor<129xf32> {
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<67x129xf32>, tensor<f32>) -> tensor<129xf32>
      return %0 : tensor<129xf32>
    }""", [(67, 129)]),
    "sum_two_axes": ("""func.func @main(%x: tensor<6x11x33xf32>) -> tensor<33xf32> {
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<6x11x33xf32>, tensor<f32>) -> tensor<33xf32>
      return %0 : tensor<33xf32>
    }""", [(6, 11, 33)]),
    "max": ("""func.func @main(%x: tensor<67x5x7xf32>) -> tensor<5x7xf32> {
      %z = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %0 = stablehlo.reduce(%x init: %z) applies stablehlo.maximum across dimensions = [0] : (tensor<67x5x7xf32>, tensor<f32>) -> tensor<5x7xf32>
      return %0 : tensor<5x7xf32>
    }""", [(67, 5, 7)]),
    "argmax": ("""func.func @main(%x: tensor<67x129xf32>) -> (tensor<129xf32>, tensor<129xi32>) {
      %i = stablehlo.iota dim = 0 : tensor<67x129xi32>
      %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %zero = stablehlo.constant dense<0> : tensor<i32>
      %0:2 = stablehlo.reduce(%x init: %ninf), (%i init: %zero) across dimensions = [0] : (tensor<67x129xf32>, tensor<67x129xi32>, tensor<f32>, tensor<i32>) -> (tensor<129xf32>, tensor<129xi32>)
       reducer(%a: tensor<f32>, %c: tensor<f32>) (%ai: tensor<i32>, %ci: tensor<i32>) {
        %gt = stablehlo.compare GT, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %eq = stablehlo.compare EQ, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %lt = stablehlo.compare LT, %ai, %ci : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %tie = stablehlo.and %eq, %lt : tensor<i1>
        %pick = stablehlo.or %gt, %tie : tensor<i1>
        %v = stablehlo.select %pick, %a, %c : tensor<i1>, tensor<f32>
        %j = stablehlo.select %pick, %ai, %ci : tensor<i1>, tensor<i32>
        stablehlo.return %v, %j : tensor<f32>, tensor<i32>
      }
      return %0#0, %0#1 : tensor<129xf32>, tensor<129xi32>
    }""", [(67, 129)]),
}


@pytest.mark.parametrize("name", sorted(LEADING))
def test_leading_axis_reduction_in_parts(name, monkeypatch):
    """Split across the pool or run part after part: the same parts, the same bits; and
    the interpreter's result (exactly where the combiner is exact)."""
    text, shapes = LEADING[name]
    r = np.random.default_rng(11)
    args = [r.standard_normal(s).astype(np.float32) for s in shapes]
    par = _compile(text, 1, monkeypatch)
    assert ".par" in par._static.optimized_ir  # really split
    ser = _compile(text, 1, monkeypatch, parallel_on=False)
    assert ".par" not in ser._static.optimized_ir
    got, again = par(*args), ser(*args)
    got = got if isinstance(got, (list, tuple)) else [got]
    again = again if isinstance(again, (list, tuple)) else [again]
    want = axle.interpret(text, *args)
    want = want if isinstance(want, (list, tuple)) else [want]
    for g, a, w in zip(got, again, want):
        np.testing.assert_array_equal(g, a)
        if name.startswith("sum"):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(g, w)


def test_leading_axis_reduction_needs_no_temporaries():
    """The parts' partial results live on the kernel's stack, not in the arena."""
    text, shapes = LEADING["sum"]
    big = text.replace("67x129", "8192x1024").replace("129x", "1024x").replace("<129", "<1024")
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(big)
        cpu_exe.clear_memory_cache()
    assert exe._static.program.arena_bytes == 0
    x = np.random.default_rng(12).standard_normal((8192, 1024)).astype(np.float32)
    np.testing.assert_allclose(exe(x), x.astype(np.float64).sum(0), rtol=1e-4, atol=1e-3)


def test_a_loop_with_a_fused_row_reduction_is_split_across_threads():
    """logsumexp's last kernel computes a 2048-element sum per result inside its loop: its
    work counts the reduction (costs.element_work), so it runs on the pool like the work
    it is, with the results of one thread."""
    import jax
    import jax.numpy as jnp
    import axle
    from axle.backends.cpu import parallel
    if parallel.thread_count() < 2:
        pytest.skip("one thread")
    x = np.random.default_rng(0).standard_normal((512, 2048)).astype(np.float32)
    exe = axle.compile(jax.jit(lambda x: jax.nn.logsumexp(x, axis=-1)).lower(x).as_text(), backend="cpu")
    got = exe.execute([x])[0]
    np.testing.assert_allclose(got, np.asarray(jax.nn.logsumexp(x, axis=-1)), rtol=1e-6, atol=1e-5)
    ir = exe._native(((512, 2048),)).optimized_ir
    import re
    assert re.search(r"@k\d+\.add\.par\b", ir), "the kernel with the fused sum ran on one thread"


def test_a_lone_transcendental_kernel_counts_its_own_op():
    """A kernel that is one sine over 64K elements (a branch of a lax.switch) is 64K x
    TRANSCENDENTAL_WORK simple ops: the kernel's own op counts with the ones fused into it
    (it ran on one thread when only the fused ones counted), and the split gives the
    serial results."""
    if parallel.thread_count() < 2:
        pytest.skip("one thread")
    text = """func.func @main(%x: tensor<65536xf32>) -> tensor<65536xf32> {
      %0 = stablehlo.sine %x : tensor<65536xf32>
      return %0 : tensor<65536xf32>
    }"""
    x = (np.random.default_rng(1).standard_normal(65536) * 10).astype(np.float32)
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(text)
        cpu_exe.clear_memory_cache()
    import re
    assert re.search(r"@k\d+\.sine\.par\b", exe._native(((65536,),)).optimized_ir), "the sine ran on one thread"
    np.testing.assert_allclose(exe.execute([x])[0], np.sin(x.astype(np.float64)), rtol=0, atol=1e-6)


@pytest.mark.parametrize("form", ["switch", "cond"])
def test_branches_of_a_case_or_if_share_their_loops(form):
    """The kernels of a lax.switch / lax.cond branch inside a loop (a sine, a cosine over
    64K elements) run on the pool like a while body's (they ran on one thread), with the
    results of jax.jit."""
    import re
    import jax
    import jax.numpy as jnp
    from jax import lax
    if parallel.thread_count() < 2:
        pytest.skip("one thread")
    r = np.random.default_rng(3)
    x = r.standard_normal(1 << 16).astype(np.float32)
    ops = r.integers(0, 3, 12).astype(np.int32)
    if form == "switch":
        def body(i, v, ops):
            return lax.switch(ops[i], [jnp.sin, jnp.cos, lambda a: a * 0.5 + 1.0], v)
    else:
        def body(i, v, ops):
            return lax.cond(ops[i] > 0, jnp.sin, jnp.cos, v)
    fn = jax.jit(lambda x, ops: lax.fori_loop(0, 12, lambda i, v: body(i, v, ops), x))
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(fn.lower(x, ops).as_text(), backend="cpu")
        cpu_exe.clear_memory_cache()
    ir = exe._native(((1 << 16,), (12,))).optimized_ir
    # (the pool's chunk functions are named after the top-level kernel, the loop)
    assert len(re.findall(r"define [^@]*@k\d+\.while\.par", ir)) >= 2, "the branches' kernels ran on one thread"
    np.testing.assert_allclose(exe.execute([x, ops])[0], np.asarray(fn(x, ops)), rtol=2e-6, atol=2e-6)


def test_every_kernel_of_a_stencil_loop_runs_on_the_pool():
    """A 2-D FDTD step in a fori_loop (two staggered updates through one-row / one-column
    pads, a third with a point source added by a scatter): each of its kernels is split
    across threads. Before, the update whose pad left 255 of 256 rows in the interior box
    fell just under the threshold that the whole kernel met and the scatter computed its
    fused operand on one thread: 2 threads ran the loop slower than 1. Results as
    jax.jit's."""
    import re
    import jax
    import jax.numpy as jnp
    from jax import lax
    if parallel.thread_count() < 2:
        pytest.skip("one thread")
    S = 256

    def f(ca, cb):
        def step(t, c):
            ez, hx, hy = c
            hx = hx - 0.5 * jnp.pad(ez[1:] - ez[:-1], ((0, 1), (0, 0)))
            hy = hy + 0.5 * jnp.pad(ez[:, 1:] - ez[:, :-1], ((0, 0), (0, 1)))
            curl = hy - jnp.pad(hy[:, :-1], ((0, 0), (1, 0))) - hx + jnp.pad(hx[:-1], ((1, 0), (0, 0)))
            ez = (ca * ez + cb * curl).at[S // 3, S // 2].add(jnp.sin(0.2 * t.astype(jnp.float32)))
            return ez, hx, hy
        return lax.fori_loop(0, 20, step, (jnp.zeros((S, S)),) * 3)
    r = np.random.default_rng(4)
    ca = (0.9 + 0.1 * r.random((S, S))).astype(np.float32)
    cb = (0.5 * r.random((S, S))).astype(np.float32)
    fn = jax.jit(f)
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(fn.lower(ca, cb).as_text(), backend="cpu")
        cpu_exe.clear_memory_cache()
    ir = exe._native(((S, S), (S, S))).optimized_ir
    assert len(re.findall(r"define [^@]*@k\d+\.while\.par", ir)) >= 3, "a kernel of the loop ran on one thread"
    for got, want in zip(exe.execute([ca, cb]), fn(ca, cb)):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-5)
