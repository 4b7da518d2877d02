"""dot_general with fewer than 8 rows (8 with AVX-512's 32 registers; kernels_dot_skinny.py): matrix-vector products,
projections of a few rows, decode attention over a cache, against numpy in float64, in
every layout the two modes take (axpy: free dimension contiguous; dot: contracting
dimension contiguous), with vector and column tails, batched, f32 and f64, at the top
level and inside a while loop; split across the pool or not, the same bits, whatever
the thread count."""
import os
import subprocess
import sys

import numpy as np
import pytest

import axle
from axle.backends.cpu import disk_cache, kernels_dot_skinny, parallel
from axle.backends.cpu import executable as cpu_exe


def _dot_text(ls, rs, lb, rb, lc, rc, et="f32"):
    """A module with one dot_general of operands of shapes ls, rs (result shape computed)."""
    lfree = [d for d in range(len(ls)) if d not in lb and d not in lc]
    rfree = [d for d in range(len(rs)) if d not in rb and d not in rc]
    out = [ls[d] for d in lb] + [ls[d] for d in lfree] + [rs[d] for d in rfree]

    def ty(s):
        return "tensor<" + "".join(f"{x}x" for x in s) + et + ">"
    batching = f"batching_dims = {lb} x {rb}, " if lb else ""
    text = f"""func.func @main(%a: {ty(ls)}, %b: {ty(rs)}) -> {ty(out)} {{
      %0 = stablehlo.dot_general %a, %b, {batching}contracting_dims = {lc} x {rc} : ({ty(ls)}, {ty(rs)}) -> {ty(out)}
      return %0 : {ty(out)}
    }}"""
    return text, out


def _reference(a, b, lb, rb, lc, rc):
    """numpy in float64: the result in dot_general's order (batch, lhs free, rhs free)."""
    letters = iter("abcdefghijklmnop")
    la = [None] * a.ndim
    lr = [None] * b.ndim
    for x, y in zip(lb, rb):
        la[x] = lr[y] = next(letters)
    for x, y in zip(lc, rc):
        la[x] = lr[y] = next(letters)
    for d in range(a.ndim):
        la[d] = la[d] or next(letters)
    for d in range(b.ndim):
        lr[d] = lr[d] or next(letters)
    out = [la[d] for d in lb] + [la[d] for d in range(a.ndim) if d not in lb and d not in lc] + \
        [lr[d] for d in range(b.ndim) if d not in rb and d not in rc]
    return np.einsum(f"{''.join(la)},{''.join(lr)}->{''.join(out)}", a.astype(np.float64), b.astype(np.float64))


def _compile(text, min_work=None, monkeypatch=None):
    if monkeypatch is not None and min_work is not None:
        monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", min_work)
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(text, backend="cpu")
        cpu_exe.clear_memory_cache()
    return exe


def _libraries(exe):
    return {k.library for k in exe.program.kernels if k.library}


# (lhs shape, rhs shape, lhs batch, rhs batch, lhs contracting, rhs contracting, mode)
CASES = {
    "xW": ((3, 37), (37, 133), [], [], [1], [0], "axpy"),  # projection: rows of W contiguous
    "xWt": ((5, 70), (133, 70), [], [], [1], [1], "dot"),  # x . W^T: k contiguous in both
    "xtW": ((37, 4), (37, 150), [], [], [0], [0], "axpy"),  # lhs stored transposed
    "Wx": ((150, 37), (37,), [], [], [1], [0], "dot"),  # matrix @ vector
    "xtW_rhs_one_row": ((37, 150), (1, 37), [], [], [0], [1], "axpy"),  # the rhs has the one row
    "vec_vec": ((70,), (70,), [], [], [0], [0], "dot"),
    "scores": ((2, 3, 1, 20), (2, 3, 67, 20), [0, 1], [0, 1], [3], [3], "dot"),  # q . K over a cache
    "weighted": ((2, 3, 1, 67), (2, 3, 67, 20), [0, 1], [0, 1], [3], [2], "axpy"),  # p @ V
    "batched_rows": ((4, 6, 33), (4, 33, 290), [0], [0], [2], [1], "axpy"),
    # rows of W a multiple of 4 KiB / 2 KiB apart: shorter k blocks (L1 sets), k not a multiple
    "xW_page_rows": ((2, 70), (70, 1024), [], [], [1], [0], "axpy"),
    "xW_half_page_rows": ((3, 45), (45, 512), [], [], [1], [0], "axpy"),
    "k_one": ((3, 1), (1, 40), [], [], [1], [0], None),  # an outer product: a multiply (simplify)
    "rows_and_cols_small": ((7, 9), (9, 3), [], [], [1], [0], "axpy"),
    "W_times_few_columns": ((150, 37), (37, 3), [], [], [1], [0], "dot"),  # the small operand packed
    "batched_strided_small": ((2, 40, 5), (2, 90, 40), [0], [0], [1], [2], "dot"),  # packed per batch
}


@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_against_numpy(name, et):
    ls, rs, lb, rb, lc, rc, mode = CASES[name]
    text, out = _dot_text(ls, rs, lb, rb, lc, rc, et)
    r = np.random.default_rng(len(name))
    dt = np.float32 if et == "f32" else np.float64
    a, b = r.standard_normal(ls).astype(dt), r.standard_normal(rs).astype(dt)
    exe = _compile(text)
    if mode is None:
        assert not _libraries(exe) and not any(k.name == "stablehlo.dot_general" for k in exe.program.kernels)
    else:
        assert f"skinny.{mode}" in _libraries(exe)
    got = exe(a, b)
    assert got.shape == tuple(out) and got.dtype == dt
    tol = 1e-5 if et == "f32" else 1e-12
    np.testing.assert_allclose(got, _reference(a, b, lb, rb, lc, rc), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("m", range(1, 8))
@pytest.mark.parametrize("layout", ["axpy", "dot"])
def test_every_row_count(m, layout):
    """M = 1 .. 7 rows, N with a full block, vectors and a column tail, K with a vector tail."""
    k, n = 45, 301
    if layout == "axpy":
        text, _ = _dot_text((m, k), (k, n), [], [], [1], [0])
        shapes = ((m, k), (k, n))
    else:
        text, _ = _dot_text((m, k), (n, k), [], [], [1], [1])
        shapes = ((m, k), (n, k))
    r = np.random.default_rng(m)
    a, b = (r.standard_normal(s).astype(np.float32) for s in shapes)
    exe = _compile(text)
    assert f"skinny.{layout}" in _libraries(exe)
    want = a.astype(np.float64) @ (b.astype(np.float64) if layout == "axpy" else b.astype(np.float64).T)
    np.testing.assert_allclose(exe(a, b), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("registers", [16, 32])
def test_eight_columns_with_32_registers(registers, monkeypatch):
    """A @ v with v of 8 columns (a power iteration over 8 vectors) is a skinny dot where the
    host has 32 vector registers (AVX-512), and goes to BLAS with 16 (AVX2): right results
    both ways."""
    monkeypatch.setattr(kernels_dot_skinny, "_registers", lambda: registers)
    text, _ = _dot_text((301, 45), (45, 8), [], [], [1], [0])
    exe = _compile(text)
    assert ("skinny.dot" in _libraries(exe)) == (registers == 32)
    r = np.random.default_rng(8)
    a, b = r.standard_normal((301, 45)).astype(np.float32), r.standard_normal((45, 8)).astype(np.float32)
    np.testing.assert_allclose(exe(a, b), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)


def test_special_values_propagate():
    """inf and nan reach the results they touch (no masking, no reordering that hides them)."""
    text, _ = _dot_text((2, 40), (40, 50), [], [], [1], [0])
    a = np.ones((2, 40), np.float32)
    b = np.ones((40, 50), np.float32)
    a[1, 3] = np.inf
    b[7, 10] = np.nan
    got = _compile(text)(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)])


@pytest.mark.parametrize("ls,rs,lc,rc", [((8, 40), (40, 50), [1], [0]), ((37, 150), (2, 37), [0], [1])])
def test_layouts_not_taken(ls, rs, lc, rc):
    """Eight rows or more on both sides (BLAS / the GEMM kernels), or axpy results that
    would be stored lane by lane (the rhs holding 2-7 rows): other paths, right results."""
    text, _ = _dot_text(ls, rs, [], [], lc, rc)
    exe = _compile(text)
    assert not any(lib.startswith("skinny") for lib in _libraries(exe))
    r = np.random.default_rng(1)
    a, b = r.standard_normal(ls).astype(np.float32), r.standard_normal(rs).astype(np.float32)
    np.testing.assert_allclose(exe(a, b), _reference(a, b, [], [], lc, rc), rtol=1e-5, atol=1e-4)


def test_disabled_switch_takes_the_other_paths(monkeypatch):
    monkeypatch.setattr(kernels_dot_skinny, "ENABLED", [False])
    text, _ = _dot_text((3, 40), (40, 50), [], [], [1], [0])
    exe = _compile(text)
    assert not any(lib.startswith("skinny") for lib in _libraries(exe))


@pytest.mark.parametrize("name", ["xW", "xWt", "scores", "weighted", "batched_rows", "W_times_few_columns"])
def test_split_equals_serial(name, monkeypatch):
    """Cut into (batch, block of columns) units claimed by the pool, or serial: same bits."""
    if not parallel.available():
        pytest.skip("no thread pool here (one core, or not x86-64 Linux)")
    ls, rs, lb, rb, lc, rc, _ = CASES[name]
    if name == "xW":  # more columns than one block
        ls, rs = (3, 37), (37, 700)
    text, _ = _dot_text(ls, rs, lb, rb, lc, rc)
    r = np.random.default_rng(3)
    a, b = r.standard_normal(ls).astype(np.float32), r.standard_normal(rs).astype(np.float32)
    par = _compile(text, 1, monkeypatch)
    assert ".par" in par._static.optimized_ir
    ser = _compile(text, 1 << 62, monkeypatch)
    assert ".par" not in ser._static.optimized_ir
    np.testing.assert_array_equal(par(a, b), ser(a, b))


DECODE = """func.func @main(%q: tensor<4x8x1x64xf32>, %kc: tensor<4x8x300x64xf32>, %x: tensor<3x512xf32>, %w: tensor<512x700xf32>) -> (tensor<4x8x1x300xf32>, tensor<3x700xf32>) {
  %0 = stablehlo.dot_general %q, %kc, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3] : (tensor<4x8x1x64xf32>, tensor<4x8x300x64xf32>) -> tensor<4x8x1x300xf32>
  %1 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<3x512xf32>, tensor<512x700xf32>) -> tensor<3x700xf32>
  return %0, %1 : tensor<4x8x1x300xf32>, tensor<3x700xf32>
}"""

_CHILD = r"""
import sys, numpy as np, axle
from axle.backends.cpu import disk_cache
r = np.random.default_rng(21)
args = [r.standard_normal(s).astype(np.float32) for s in ((4, 8, 1, 64), (4, 8, 300, 64), (3, 512), (512, 700))]
with disk_cache.disabled():
    exe = axle.compile(open(sys.argv[1], encoding="utf-8").read(), backend="cpu")
outs = exe(*args)
print(''.join(o.tobytes().hex() for o in outs)[:: 7])
print(sum(1 for k in exe.program.kernels if (k.library or '').startswith('skinny')))
"""


@pytest.mark.skipif(not parallel.available(), reason="no thread pool here (one core, or not x86-64 Linux)")
def test_same_bits_with_one_or_two_threads(tmp_path):
    """AXLE_NUM_THREADS=1 and 2 in fresh processes: the same bytes."""
    mod = tmp_path / "decode.mlir"
    mod.write_text(DECODE)
    outs = []
    for n in ("1", "2"):
        env = dict(os.environ, AXLE_NUM_THREADS=n)
        env.pop("AXLE_FLAGS", None)
        p = subprocess.run([sys.executable, "-c", _CHILD, str(mod)], env=env, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout.split())
    assert outs[0][1] == "2"  # both dots took the kernel
    assert outs[0] == outs[1]


def test_inside_a_while_loop():
    """A matrix-vector product in a loop body (an RNN step): h = tanh(W h + x_t)."""
    text = """func.func @main(%w: tensor<96x96xf32>, %h0: tensor<96xf32>) -> tensor<96xf32> {
      %c0 = stablehlo.constant dense<0> : tensor<i32>
      %n = stablehlo.constant dense<5> : tensor<i32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %r:2 = stablehlo.while(%i = %c0, %h = %h0) : tensor<i32>, tensor<96xf32>
       cond {
        %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %lt : tensor<i1>
      } do {
        %d = stablehlo.dot_general %w, %h, contracting_dims = [1] x [0] : (tensor<96x96xf32>, tensor<96xf32>) -> tensor<96xf32>
        %t = stablehlo.tanh %d : tensor<96xf32>
        %i1 = stablehlo.add %i, %one : tensor<i32>
        stablehlo.return %i1, %t : tensor<i32>, tensor<96xf32>
      }
      return %r#1 : tensor<96xf32>
    }"""
    r = np.random.default_rng(4)
    w = (r.standard_normal((96, 96)) / 8).astype(np.float32)
    h = r.standard_normal(96).astype(np.float32)
    exe = _compile(text)
    assert any((k.library or "").startswith("skinny") for k in exe.program.kernels)
    want = h.astype(np.float64)
    for _ in range(5):
        want = np.tanh(w.astype(np.float64) @ want)
    np.testing.assert_allclose(exe(w, h), want, rtol=1e-5, atol=1e-5)


def test_jax_scan_and_decode_attention_match_jax():
    """Through jax.jit's lowering: a scan with a skinny projection per step, and attention
    of one query over a cache with a masked softmax."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def rnn(w, u, xs):
        def step(h, x):
            h = jnp.tanh(h @ w + x @ u)
            return h, h
        return jax.lax.scan(step, jnp.zeros((3, 64), jnp.float32), xs)[1]

    def attend(q, kc, vc, pos):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, kc) / 8.0
        s = jnp.where(jnp.arange(kc.shape[2])[None, None, None, :] <= pos[0], s, -1e30)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), vc)
    r = np.random.default_rng(6)
    f = lambda *s: r.standard_normal(s).astype(np.float32)  # noqa: E731
    for fn, args in ((rnn, (f(64, 64) / 8, f(32, 64) / 6, f(7, 3, 32))),
                     (attend, (f(2, 4, 1, 64), f(2, 4, 130, 64), f(2, 4, 130, 64), np.array([77], np.int32)))):
        text = jax.jit(fn).lower(*args).as_text()
        exe = _compile(text)
        assert any((k.library or "").startswith("skinny") for k in exe.program.kernels) or \
            "axle_skinny_" in exe._static.optimized_ir
        np.testing.assert_allclose(np.asarray(exe.execute(list(args))[0]), np.asarray(jax.jit(fn)(*args)),
                                   rtol=2e-5, atol=2e-5)



@pytest.mark.parametrize("rows,k,n,parts_bytes", [(1, 1000, 300, 1), (3, 517, 77, 1), (2, 600, 40, 1 << 62)])
def test_k_parts_over_a_large_operand(rows, k, n, parts_bytes, monkeypatch):
    """k cut into parts (the large-operand path, forced small here), partials added in
    part order: numpy's result; split across the pool or serial: the same bits; also with
    the rhs holding the one row."""
    monkeypatch.setattr(kernels_dot_skinny, "SPLIT_K_BYTES", parts_bytes)
    r = np.random.default_rng(k)
    for ls, rs, lc, rc in (((rows, k), (k, n), [1], [0]), ((k, n), (1, k), [0], [1])):
        text, _ = _dot_text(ls, rs, [], [], lc, rc)
        a, b = r.standard_normal(ls).astype(np.float32), r.standard_normal(rs).astype(np.float32)
        par = _compile(text, 1, monkeypatch)
        ser = _compile(text, 1 << 62, monkeypatch)
        assert "skinny.axpy" in _libraries(par)
        np.testing.assert_array_equal(par(a, b), ser(a, b))
        np.testing.assert_allclose(par(a, b), _reference(a, b, [], [], lc, rc), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("min_work", [1, 1 << 62])
def test_cache_update_of_a_parameter_is_a_copy_and_the_update(min_work, monkeypatch):
    """dynamic_update_slice of a parameter (whose buffer it may not take over, as in the
    bench's decode step): the operand copied (split across the pool or not), the update
    written at the clamped start, the argument left as it was."""
    text = """func.func @main(%c: tensor<3x5x301x7xf32>, %u: tensor<3x5x1x7xf32>, %p: tensor<i32>) -> (tensor<3x5x301x7xf32>, tensor<3x5x301x7xf32>) {
      %z = stablehlo.constant dense<0> : tensor<i32>
      %0 = stablehlo.dynamic_update_slice %c, %u, %z, %z, %p, %z : (tensor<3x5x301x7xf32>, tensor<3x5x1x7xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3x5x301x7xf32>
      %1 = stablehlo.add %c, %c : tensor<3x5x301x7xf32>
      return %0, %1 : tensor<3x5x301x7xf32>, tensor<3x5x301x7xf32>
    }"""
    exe = _compile(text, min_work, monkeypatch)
    assert (".par" in exe._static.optimized_ir) == (min_work == 1)
    r = np.random.default_rng(2)
    c = r.standard_normal((3, 5, 301, 7)).astype(np.float32)
    u = r.standard_normal((3, 5, 1, 7)).astype(np.float32)
    for pos in (0, 123, 300, 999, -4):
        keep = c.copy()
        got, twice = exe(c, u, np.array(pos, np.int32))
        want = c.copy()
        p = min(max(pos, 0), 300)
        want[:, :, p:p + 1, :] = u
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(twice, c + c)
        np.testing.assert_array_equal(c, keep)  # the argument is not written


@pytest.mark.parametrize("bits", [128, 256, 512])
def test_every_vector_width(bits, monkeypatch):
    """The code for AVX2 hosts (Zen 3: 256-bit vectors, 16 registers, so fewer columns per
    block) and SSE, emitted here as on such a host: numpy's results, in both modes, with
    tails of vectors and of columns, f32 and f64."""
    monkeypatch.setattr(kernels_dot_skinny, "_vector_bits", lambda: bits)
    r = np.random.default_rng(bits)
    for m in (1, 3, 7):
        for dt, et in ((np.float32, "f32"), (np.float64, "f64")):
            for ls, rs, lc, rc in (((m, 45), (45, 203), [1], [0]), ((m, 45), (203, 45), [1], [1])):
                text, _ = _dot_text(ls, rs, [], [], lc, rc, et)
                a, b = r.standard_normal(ls).astype(dt), r.standard_normal(rs).astype(dt)
                exe = _compile(text)
                assert f"_w{bits // int(et[1:])}" in exe._static.optimized_ir
                np.testing.assert_allclose(exe(a, b), _reference(a, b, [], [], lc, rc), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("m", [1, 2, 5])
def test_columns_summed_together_or_alone_give_the_same_bits(m, monkeypatch):
    """The dot mode sums J columns' lanes in one merged tree, the last columns of a block
    one by one: the same additions, so the same bits as one column at a time."""
    text, _ = _dot_text((m, 70), (131, 70), [], [], [1], [1])
    r = np.random.default_rng(m)
    a, b = r.standard_normal((m, 70)).astype(np.float32), r.standard_normal((131, 70)).astype(np.float32)
    grouped = _compile(text)
    assert "skinny.dot" in _libraries(grouped)
    real = kernels_dot_skinny._unroll
    monkeypatch.setattr(kernels_dot_skinny, "_unroll", lambda mode, rows: 1 if mode == "dot" else real(mode, rows))
    single = _compile(text)
    assert "_u1_" in single._static.optimized_ir
    # with 16 vector registers (AVX2) five rows leave room for one column at a time: then
    # the grouped kernel is the single one, and only the bits are compared
    assert ("_u1_" not in grouped._static.optimized_ir) == (real("dot", m) > 1)
    np.testing.assert_array_equal(grouped(a, b), single(a, b))
