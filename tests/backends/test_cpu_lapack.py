"""jaxlib's LAPACK custom calls (lapack_*_ffi) compiled by the CPU backend: native calls of
SciPy's LAPACK. Every jnp.linalg / jax.scipy.linalg program of the catalog compiles and
gives jax.jit's results (the full sweep, forward and gradients, is slow)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")

import axle  # noqa: E402
from axle.errors import Unsupported  # noqa: E402
from lapack_helpers import REPRESENTATIVE, all_variants, assert_matches, bad_lowered, lowered, variant_id  # noqa: E402


def _outputs(exe, args):
    got = exe(*args)
    return list(got) if isinstance(got, (list, tuple)) else [got]


def _run(v):
    low, why = lowered(v)
    if low is None:
        pytest.skip(f"JAX does not lower this program: {why}")
    text, args, want = low
    exe = axle.compile(text, backend="cpu")
    assert_matches(_outputs(exe, args), want, v[1])
    return exe


@pytest.mark.parametrize("v", REPRESENTATIVE, ids=variant_id)
def test_representative_programs_match_jax(v):
    _run(v)


@pytest.mark.slow
@pytest.mark.parametrize("v", all_variants(), ids=variant_id)
def test_every_program_matches_jax(v):
    _run(v)


def test_lapack_runs_natively_and_reports_the_routine():
    exe = _run(("linalg.inv", "float64", True, False))
    libs = {k.library for k in exe.program.kernels if k.library}
    assert {"lapack.dgetrf", "blas.dtrsm"} <= libs, libs
    assert not exe.program.host_callbacks  # no trip through Python


@pytest.mark.parametrize("name", ["inv", "solve", "lu", "cholesky", "cho_solve", "eig_nan", "eigvals_inf",
                                  "eig_complex_nan", "eigh_nan", "svd_nan", "schur_nan", "inv_empty_batch",
                                  "inv_0x0", "svd_empty_batch", "eigh_0x0", "eig_empty_batch"])
def test_bad_input_gives_jax_results(name):
    text, a, want = bad_lowered(name)
    exe = axle.compile(text, backend="cpu")
    assert_matches(_outputs(exe, [a]), want, "float32")


def test_unsupported_layout_is_a_compile_error():
    text = """
func.func @main(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[1, 0]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>)
  return %0#0 : tensor<3x3xf32>
}"""
    with pytest.raises(Unsupported, match="lapack_spotrf_ffi: operand 0 has layout"):
        axle.compile(text, backend="cpu")


def test_other_custom_calls_still_reach_the_registered_target():
    axle.register_custom_call("test.lapack_neighbour", lambda call: call.operands[0] * 2)
    text = """
func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.custom_call @test.lapack_neighbour(%a) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}"""
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(axle.compile(text, backend="cpu")(x), x * 2)


POTRF = """
func.func @main(%a: tensor<2x3x3xf64>) -> (tensor<2x3x3xf64>, tensor<2xi32>) {
  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>]} : (tensor<2x3x3xf64>) -> (tensor<2x3x3xf64>, tensor<2xi32>)
  return %0#0, %0#1 : tensor<2x3x3xf64>, tensor<2xi32>
}"""


def test_object_code_from_the_disk_cache_finds_lapack(tmp_path):
    """A process that loads a LAPACK program from the disk cache (never compiling one) binds
    the routines at link time."""
    import subprocess
    import sys
    script = f"""
import numpy as np, axle
a = np.array([[[4., 2, 0], [2, 3, 0], [0, 0, 1]], [[1., 2, 0], [2, 1, 0], [0, 0, 1]]])
l, info = axle.compile({POTRF!r}, backend="cpu")(a)
print(info.tolist(), round(float(l[0, 1, 0]), 6), round(float(l[0, 1, 1]), 6))
"""
    env = dict(__import__("os").environ, AXLE_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    # potrf on the lower triangle: l10 = 2 / 2, l11 = sqrt(3 - 1); the second matrix is not
    # positive definite (info 2, the order of the failing minor)
    assert runs[0].stdout.split() == runs[1].stdout.split() == ["[0,", "2]", "1.0", "1.414214"]
    assert any(tmp_path.iterdir())


def test_potrf_matches_the_interpreter_on_hand_written_text():
    a = np.random.default_rng(3).standard_normal((2, 3, 3))
    a = a @ np.swapaxes(a, 1, 2) + 3 * np.eye(3)
    a[1, 0, 0] = -1.0  # not positive definite: info 1
    got = axle.compile(POTRF, backend="cpu")(a)
    want = axle.interpret(POTRF, a)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert got[1].tolist() == [0, 1]
    np.testing.assert_allclose(np.tril(got[0][0]), np.linalg.cholesky(a[0]), rtol=1e-12)


@pytest.mark.parametrize("kind", ["lu_solve", "cholesky_solve", "eig", "svd"])
def test_batches_on_the_pool_match_serial_and_jax(kind):
    """Batches large enough to be shared across the pool's threads (each thread its own
    workspaces, each element copied in and out next to its call): the same results as the
    serial loop, as whole-batch copies and as jax.jit, over two batch dimensions, NaN batch
    elements (geev's finite check, per element) included."""
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu import executable as cpu_exe
    from axle.backends.cpu import kernels_lapack as KL
    r = np.random.default_rng(5)
    a = r.standard_normal((4, 6, 48, 48)).astype(np.float32)
    b = r.standard_normal((4, 6, 48, 5)).astype(np.float32)
    fns = {
        "lu_solve": (lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b), (a + 8 * np.eye(48, dtype=np.float32), b)),
        "cholesky_solve": (lambda a, b: jsl.cho_solve(jsl.cho_factor(a), b),
                           (a @ np.swapaxes(a, -1, -2) + 48 * np.eye(48, dtype=np.float32), b)),
        "eig": (lambda a: jnp.sort_complex(jnp.linalg.eigvals(a)),
                (np.where(np.arange(24).reshape(4, 6, 1, 1) == 9, np.nan, a).astype(np.float32),)),
        "svd": (lambda a: jnp.linalg.svd(a, compute_uv=False), (a,)),
    }
    fn, args = fns[kind]
    text = jax.jit(fn).lower(*args).as_text()
    want = np.asarray(jax.jit(fn)(*args))
    outs = []
    # (on the pool, per-element copies from this matrix size): the pool; serial; whole-batch copies
    for parallel, per_element in ((True, 256), (False, 256), (False, 1 << 30)):
        old = KL.PARALLEL_BATCH, KL.PER_ELEMENT_MIN_SIZE
        KL.PARALLEL_BATCH, KL.PER_ELEMENT_MIN_SIZE = parallel, per_element
        try:
            with disk_cache.disabled():
                cpu_exe.clear_memory_cache()
                outs.append(np.asarray(axle.compile(text, backend="cpu")(*args)))
        finally:
            KL.PARALLEL_BATCH, KL.PER_ELEMENT_MIN_SIZE = old
            cpu_exe.clear_memory_cache()
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])
    fin = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(outs[0]), fin)
    np.testing.assert_allclose(outs[0][fin], want[fin], rtol=2e-3, atol=2e-3)


def test_operand_producers_fuse_into_the_copy_in():
    """cho_factor(S + lambda I): jaxlib's transpose to column-major and the shift are read by
    the potrf call's copy-in (kernels_lapack._fused_operands), not written to a buffer of
    their own first; the results stay jax's."""
    import jax.numpy as jnp
    import jax.scipy as jsp
    r = np.random.default_rng(5)
    a = r.standard_normal((6, 12, 12)).astype(np.float32)
    s = a @ a.transpose(0, 2, 1) / 12 + np.eye(12, dtype=np.float32)
    b = r.standard_normal((6, 12, 2)).astype(np.float32)

    def f(s, b):
        return jsp.linalg.cho_solve(jsp.linalg.cho_factor(s + 0.5 * jnp.eye(12)), b)
    exe = axle.compile(jax.jit(f).lower(s, b).as_text(), backend="cpu")
    potrf = [k for k in exe.program.kernels if k.library == "lapack.spotrf"]
    assert len(potrf) == 1 and {o.name for o in potrf[0].fused} >= {"stablehlo.transpose", "stablehlo.add"}
    np.testing.assert_allclose(np.asarray(exe.execute([s, b])[0]), np.asarray(jax.jit(f)(s, b)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("nrhs", [4, 1])
def test_triangular_solves_on_row_major_buffers(left, lower, transpose, unit, nrhs, monkeypatch):
    """Real triangular solves run on the row-major buffers (kernels_lapack._trsm_in_place:
    the other side and triangle of the column-major routine; one right-hand side through
    trsv): every side, triangle, transposition and diagonal, batched, against numpy and
    against the copying path."""
    import jax
    from jax import lax
    from axle.backends.cpu import kernel_set  # noqa: F401  (the kernels, in their order)
    from axle.backends.cpu import disk_cache, kernels_lapack
    from axle.backends.cpu import executable as cpu_exe
    r = np.random.default_rng(3)
    a = (r.standard_normal((3, 6, 6)) * 0.3 + 3 * np.eye(6)).astype(np.float32)
    b = r.standard_normal((3, 6, nrhs) if left else (3, nrhs, 6)).astype(np.float32)
    f = jax.jit(lambda a, b: lax.linalg.triangular_solve(a, b, left_side=left, lower=lower,
                                                         transpose_a=transpose, unit_diagonal=unit))
    text = f.lower(a, b).as_text()
    outs = []
    for in_place in (True, False):
        monkeypatch.setattr(kernels_lapack, "TRSM_IN_PLACE", in_place)
        with disk_cache.disabled():
            cpu_exe.clear_memory_cache()
            exe = axle.compile(text, backend="cpu")
            outs.append(exe.execute([a, b])[0])
            if in_place:
                libs = {k.library for k in exe.program.kernels}
                assert ("blas.strsv" if nrhs == 1 else "blas.strsm") in libs, libs
            cpu_exe.clear_memory_cache()
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t = t - t * np.eye(6) + np.eye(6)
    op = np.swapaxes(t, -1, -2) if transpose else t
    want = np.linalg.solve(op, b) if left else np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2),
                                                                             np.swapaxes(b, -1, -2)), -1, -2)
    np.testing.assert_allclose(outs[0], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("left,lower,trans,unit", [
    (True, True, "NO_TRANSPOSE", False), (True, False, "TRANSPOSE", False), (False, True, "ADJOINT", True),
    (False, False, "NO_TRANSPOSE", True), (True, True, "TRANSPOSE", True), (False, True, "TRANSPOSE", False)])
def test_stablehlo_triangular_solve_of_order_16_and_more_on_blas(dtype, left, lower, trans, unit):
    """stablehlo.triangular_solve (PyTorch's cholesky_solve and solve_triangular reach it)
    from order BLAS_MIN_ORDER on: BLAS's trsm on the row-major buffers, against numpy and
    the interpreter, batched."""
    m, k = 20, 7
    bshape = (2, m, k) if left else (2, k, m)
    t = {"f32": "f32", "f64": "f64"}[dtype]
    text = f"""func.func @main(%a: tensor<2x{m}x{m}x{t}>, %b: tensor<{'x'.join(map(str, bshape))}x{t}>) -> tensor<{'x'.join(map(str, bshape))}x{t}> {{
      %0 = "stablehlo.triangular_solve"(%a, %b) {{left_side = {str(left).lower()}, lower = {str(lower).lower()},
           unit_diagonal = {str(unit).lower()}, transpose_a = #stablehlo<transpose {trans}>}}
           : (tensor<2x{m}x{m}x{t}>, tensor<{'x'.join(map(str, bshape))}x{t}>) -> tensor<{'x'.join(map(str, bshape))}x{t}>
      return %0 : tensor<{'x'.join(map(str, bshape))}x{t}>
    }}"""
    r = np.random.default_rng(4)
    npt = np.float32 if dtype == "f32" else np.float64
    a = (r.standard_normal((2, m, m)) * 0.2 + 3 * np.eye(m)).astype(npt)
    b = r.standard_normal(bshape).astype(npt)
    exe = axle.compile(text, backend="cpu")
    got = exe.execute([a, b])[0]
    assert any("trsm" in (k.library or "") for k in exe.program.kernels)
    tri = np.tril(a) if lower else np.triu(a)
    if unit:
        tri = tri - tri * np.eye(m) + np.eye(m)
    op = tri if trans == "NO_TRANSPOSE" else np.swapaxes(tri, -1, -2)
    want = np.linalg.solve(op, b) if left else np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2),
                                                                             np.swapaxes(b, -1, -2)), -1, -2)
    tol = 1e-4 if dtype == "f32" else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    ref = axle.interpret(text, a, b)
    np.testing.assert_allclose(got, ref[0] if isinstance(ref, (list, tuple)) else ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solves_with_one_right_hand_side_call_trsv(dtype):
    """jnp.linalg.solve / lu_solve with a vector (the triangular factor read through the
    info check's select: the copying path) and a right-side solve of one row: trsv, not
    trsm with one column, against numpy, batched."""
    import jax
    import jax.numpy as jnp
    r = np.random.default_rng(5)
    n = 24
    a = (r.standard_normal((3, n, n)) + n * np.eye(n)).astype(dtype)
    b = r.standard_normal((3, n)).astype(dtype)
    fns = {
        "solve": (lambda a, b: jnp.linalg.solve(a, b[..., None])[..., 0], np.linalg.solve(a, b[..., None])[..., 0]),
        "lu_solve_T": (lambda a, b: jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(a), b[..., None], trans=1)[..., 0],
                       np.linalg.solve(np.swapaxes(a, 1, 2), b[..., None])[..., 0]),
        "right_upper_T": (lambda a, b: jax.lax.linalg.triangular_solve(a, b[:, None, :], left_side=False, lower=False,
                                                                      transpose_a=True)[:, 0],
                          np.linalg.solve(np.triu(a), b[..., None])[..., 0]),
    }
    tol = 1e-4 if dtype == np.float32 else 1e-11
    with jax.enable_x64(dtype == np.float64):
        for name, (f, want) in fns.items():
            exe = axle.compile(jax.jit(f).lower(a, b).as_text(), backend="cpu")
            libs = {k.library for k in exe.program.kernels if k.library}
            assert any(lib.endswith("trsv") for lib in libs) and not any(lib.endswith("trsm") for lib in libs), libs
            np.testing.assert_allclose(exe.execute([a, b])[0], want, rtol=tol, atol=tol, err_msg=name)
