"""Shared by tests/interpreter/test_lapack.py and tests/backends/test_cpu_lapack.py: the
programs of axle/tools/lapack_catalog.py, run by axle and compared with jax.jit's results.

JAX's CPU kernels and axle call the same LAPACK routines (SciPy's) with the same
arguments, so even decompositions with sign or phase freedom (QR, SVD, eigh, eig, Schur)
come out alike and are compared directly."""
import numpy as np

from axle.tools.lapack_catalog import CASES, lower_case, run_jax, variants

TOLERANCE = {"float32": (2e-4, 2e-4), "complex64": (2e-4, 2e-4), "float64": (1e-9, 1e-9),
             "complex128": (1e-9, 1e-9)}

# every target family at least once, every dtype, batched and not, forward and gradient
REPRESENTATIVE = [
    ("linalg.inv", "float32", False, False),  # getrf, trsm
    ("linalg.solve", "complex128", True, True),
    ("linalg.cholesky", "float64", False, True),  # potrf
    ("linalg.qr", "complex64", True, False),  # geqrf, ungqr
    ("linalg.svd.reduced", "float32", True, False),  # gesdd 'S'
    ("linalg.svd.values", "complex128", False, False),  # gesdd 'N'
    ("linalg.eigh", "complex64", False, True),  # heevd
    ("linalg.eigh", "float64", True, False),  # syevd
    ("linalg.eig", "float64", False, False),  # geev (real: eigenvectors unpacked)
    ("linalg.eig", "complex64", True, False),  # geev (complex)
    ("scipy.schur", "float32", False, False),  # gees
    ("scipy.schur", "complex128", True, False),
    ("scipy.hessenberg", "float64", False, False),  # gehrd, orgqr
    ("lax.tridiagonal", "complex128", False, False),  # hetrd
    ("lax.tridiagonal", "float32", True, False),  # sytrd
    ("lax.tridiagonal_solve", "float32", True, False),  # gtsv
    ("lax.qr.pivoting", "float64", False, False),  # geqp3
    ("lax.svd.qr", "complex64", False, False),  # gesvd
    ("lax.ormqr", "complex128", True, False),  # unmqr
    ("scipy.expm", "float32", False, False),
]


def all_variants():
    out = []
    for name, case in CASES.items():
        for dtype, batched, grad in variants(case):
            out.append((name, dtype, batched, grad))
    return out


def variant_id(v):
    name, dtype, batched, grad = v
    return f"{name}{'.grad' if grad else ''}-{dtype}{'-batched' if batched else ''}"


def lowered(v):
    """(text, args, jax results), or None when JAX itself cannot lower the program."""
    name, dtype, batched, grad = v
    try:
        text, fn, args = lower_case(CASES[name], dtype, batched, grad)
    except (NotImplementedError, ValueError, TypeError) as e:
        return None, str(e)
    return (text, args, run_jax(fn, args)), ""


def assert_matches(got, want, dtype):
    rtol, atol = TOLERANCE[dtype]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (k, g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"result {k}")


# singular, not positive definite, NaN / Inf inputs and empty batches: JAX's results (NaNs,
# info codes) and never a crash
BAD = {
    "singular": np.array([[1, 2, 3, 4], [2, 4, 6, 8], [1, 0, 1, 0], [0, 1, 1, 1]], np.float32),
    "not_pd": np.array([[1, 2, 0, 0], [2, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], np.float32),
    "nan": np.where(np.eye(4)[::-1] > 0, np.nan, np.eye(4)).astype(np.float32),
    "inf": np.where(np.eye(4)[::-1] > 0, np.inf, np.eye(4)).astype(np.float32),
}


def bad_input_cases():
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    return [
        ("inv", jnp.linalg.inv, BAD["singular"]),
        ("solve", lambda a: jnp.linalg.solve(a, jnp.ones(4)), BAD["singular"]),
        ("slogdet", jnp.linalg.slogdet, BAD["singular"]),
        ("lu", jsl.lu_factor, BAD["singular"]),
        ("cholesky", jnp.linalg.cholesky, BAD["not_pd"]),
        ("cholesky_nan", jnp.linalg.cholesky, BAD["nan"]),
        ("cho_solve", lambda a: jsl.cho_solve(jsl.cho_factor(a), jnp.ones(4)), BAD["not_pd"]),
        ("eig_nan", jnp.linalg.eig, BAD["nan"]),
        ("eigvals_inf", jnp.linalg.eigvals, BAD["inf"]),
        ("eig_complex_nan", jnp.linalg.eig, BAD["nan"].astype(np.complex64)),
        ("eigh_nan", jnp.linalg.eigh, BAD["nan"]),
        ("svd_nan", jnp.linalg.svd, BAD["nan"]),
        ("qr_nan", jnp.linalg.qr, BAD["nan"]),
        ("schur_nan", jsl.schur, BAD["nan"]),
        ("inv_empty_batch", jnp.linalg.inv, np.zeros((0, 4, 4), np.float32)),
        ("inv_0x0", jnp.linalg.inv, np.zeros((0, 0), np.float32)),
        ("svd_empty_batch", jnp.linalg.svd, np.zeros((0, 4, 3), np.float32)),
        ("eigh_0x0", jnp.linalg.eigh, np.zeros((2, 0, 0), np.float32)),
        ("eig_empty_batch", jnp.linalg.eig, np.zeros((0, 4, 4), np.float32)),
        ("cholesky_empty_batch", jnp.linalg.cholesky, np.zeros((0, 4, 4), np.float32)),
    ]


def bad_lowered(name):
    f, a = next((f, a) for n, f, a in bad_input_cases() if n == name)
    import jax
    text = jax.jit(f).lower(a).as_text()
    want = [np.asarray(x) for x in jax.tree_util.tree_leaves(jax.jit(f)(a))]
    return text, a, want
