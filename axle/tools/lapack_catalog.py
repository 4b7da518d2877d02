"""The linear-algebra programs JAX lowers to LAPACK custom calls on the CPU, as a catalog.

Each case is a `jnp.linalg` / `jax.scipy.linalg` / `jax.lax.linalg` function with inputs
of a given kind (a general, symmetric positive definite, Hermitian or triangular matrix,
with a right-hand side...). `lower_case` lowers it with `jax.jit(f).lower(...).as_text()`
for one dtype (f32, f64, c64, c128), unbatched or with a batch dimension, forward or as a
gradient (reverse mode through `jax.grad`, or forward mode through `jax.jvp`).

Run `python -m axle.tools.lapack_catalog` to lower every case and print the table of
custom-call targets JAX emitted, with their types, layouts and attributes (the source of
docs/lapack.md); `--markdown` prints it as a markdown table. Needs jax
(`pip install -e '.[test]'`).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

DTYPES = ("float32", "float64", "complex64", "complex128")
N = 4  # the matrices' order (tall ones are N+2 x N)
BATCH = 2


@dataclass
class Case:
    name: str
    make: Callable  # () -> the jax function (imports jax lazily)
    inputs: tuple  # kinds of the arguments, see `_matrix`
    complex_ok: bool = True
    grad: bool = True  # whether JAX differentiates it (reverse mode)
    jvp: bool = False  # forward mode instead of reverse mode for the gradient program
    batch_ok: bool = True  # whether the function takes a batch of matrices
    invariant: Optional[Callable] = None  # (outputs) -> arrays compared instead of outputs
    note: str = ""
    tags: tuple = field(default_factory=tuple)


def _matrix(kind: str, dtype, batch: tuple, rng) -> np.ndarray:
    """One argument of kind `kind`: sq (general, well conditioned), spd (Hermitian positive
    definite), sym (Hermitian), lower / upper (triangular, well conditioned), tall
    (N+2 x N), wide (N x N+2), rhs (N x 3), vec (N), vec6 (N+2), diag (N, entries near 4),
    small (norm below 1, for expm)."""
    dt = np.dtype(dtype)
    shapes = {"tall": (N + 2, N), "wide": (N, N + 2), "rhs": (N, 3), "vec": (N,), "vec6": (N + 2,), "tall3": (N + 2, 3), "rhs3": (3, N + 2),
              "diag": (N,)}
    shape = batch + shapes.get(kind, (N, N))

    def draw():
        x = rng.standard_normal(shape)
        if dt.kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        return x
    x = draw()
    eye = np.eye(N)
    if kind == "sq":
        x = x + N * eye
    elif kind == "spd":
        x = x @ np.conj(np.swapaxes(x, -1, -2)) + N * eye
    elif kind == "sym":
        x = x + np.conj(np.swapaxes(x, -1, -2))
    elif kind == "lower":
        x = np.tril(x) + N * eye
    elif kind == "upper":
        x = np.triu(x) + N * eye
    elif kind == "diag":
        x = x + 4
    elif kind == "small":
        x = x / (2 * N)
    return x.astype(dt)


def inputs(case: Case, dtype, batched: bool, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    batch = (BATCH,) if batched else ()
    return [_matrix(k, dtype, batch, rng) for k in case.inputs]


def _reconstruct_qr(out):
    q, r = out
    return [q @ r]


def _abs_vals(out):
    return [np.sort(np.abs(np.asarray(o)), axis=-1) for o in out]


def _cases() -> list:
    def jnp_linalg(name, **kw):
        def make():
            import jax.numpy as jnp
            f = getattr(jnp.linalg, name)
            return (lambda *a: f(*a, **kw)) if kw else f
        return make

    def jsl(name, **kw):
        def make():
            import jax.scipy.linalg as s
            f = getattr(s, name)
            return (lambda *a: f(*a, **kw)) if kw else f
        return make

    def lax_linalg(name, **kw):
        def make():
            import jax.lax.linalg as x
            f = getattr(x, name)
            return (lambda *a: f(*a, **kw)) if kw else f
        return make

    def lu_solve():
        import jax.scipy.linalg as s
        return lambda a, b: s.lu_solve(s.lu_factor(a), b)

    def cho_solve():
        import jax.scipy.linalg as s
        return lambda a, b: s.cho_solve(s.cho_factor(a, lower=True), b)

    def householder():
        import jax.lax.linalg as x
        import jax.numpy as jnp

        def f(a):
            r = jnp.linalg.qr(a, mode="raw")
            return x.householder_product(jnp.swapaxes(r[0], -1, -2), r[1])
        return f

    def qr_multiply():
        import jax.scipy.linalg as s
        return lambda a, c: s.qr_multiply(a, c)

    def ormqr():
        import jax.lax.linalg as x
        import jax.numpy as jnp

        def f(a, c):
            r, tau = jnp.linalg.qr(a, mode="raw")
            return x.ormqr(jnp.swapaxes(r, -1, -2), tau, c, left=True, transpose=True)
        return f

    def svd_qr():
        import jax.lax.linalg as x
        return lambda a: x.svd(a, full_matrices=False, algorithm=x.SvdAlgorithm.QR)

    return [
        Case("linalg.inv", jnp_linalg("inv"), ("sq",)),
        Case("linalg.solve", jnp_linalg("solve"), ("sq", "rhs")),
        Case("linalg.det", jnp_linalg("det"), ("sq",)),
        Case("linalg.slogdet", jnp_linalg("slogdet"), ("sq",)),
        Case("linalg.cholesky", jnp_linalg("cholesky"), ("spd",)),
        Case("linalg.qr", jnp_linalg("qr"), ("tall",)),
        Case("linalg.qr.complete", jnp_linalg("qr", mode="complete"), ("tall",)),
        Case("linalg.qr.r", jnp_linalg("qr", mode="r"), ("tall",)),
        Case("linalg.qr.raw", jnp_linalg("qr", mode="raw"), ("tall",), grad=False),
        Case("linalg.svd", jnp_linalg("svd"), ("tall",), grad=False),
        Case("linalg.svd.reduced", jnp_linalg("svd", full_matrices=False), ("wide",)),
        Case("linalg.svd.values", jnp_linalg("svd", compute_uv=False), ("tall",)),
        Case("linalg.svdvals", jnp_linalg("svdvals"), ("wide",)),
        Case("linalg.eigh", jnp_linalg("eigh"), ("sym",)),
        Case("linalg.eigh.upper", jnp_linalg("eigh", UPLO="U"), ("sym",)),
        Case("linalg.eigvalsh", jnp_linalg("eigvalsh"), ("sym",)),
        Case("linalg.eig", jnp_linalg("eig"), ("sq",), grad=False),  # JAX: no eigenvector derivative
        Case("linalg.eigvals", jnp_linalg("eigvals"), ("sq",), jvp=True),
        Case("linalg.lstsq", jnp_linalg("lstsq"), ("tall", "vec6"), grad=False, batch_ok=False),
        Case("linalg.pinv", jnp_linalg("pinv"), ("tall",)),
        Case("linalg.norm.2", jnp_linalg("norm", ord=2, axis=(-2, -1)), ("sq",)),
        Case("linalg.norm.nuc", jnp_linalg("norm", ord="nuc", axis=(-2, -1)), ("sq",)),
        Case("linalg.norm.-2", jnp_linalg("norm", ord=-2, axis=(-2, -1)), ("sq",)),
        Case("linalg.matrix_rank", jnp_linalg("matrix_rank"), ("tall",), grad=False),
        Case("linalg.cond", jnp_linalg("cond"), ("sq",)),
        Case("linalg.matrix_power.-3", jnp_linalg("matrix_power", n=-3), ("sq",)),
        Case("scipy.lu", jsl("lu"), ("sq",), batch_ok=False),
        Case("scipy.lu_factor", jsl("lu_factor"), ("sq",), grad=False),
        Case("scipy.lu_solve", lu_solve, ("sq", "rhs")),
        Case("scipy.solve.pos", jsl("solve", assume_a="pos"), ("spd", "rhs")),
        Case("scipy.solve.sym", jsl("solve", assume_a="sym"), ("sym", "rhs")),
        Case("scipy.inv", jsl("inv"), ("sq",)),
        Case("scipy.det", jsl("det"), ("sq",)),
        Case("scipy.cholesky.upper", jsl("cholesky"), ("spd",)),
        Case("scipy.cho_solve", cho_solve, ("spd", "rhs")),
        Case("scipy.solve_triangular", jsl("solve_triangular", lower=True), ("lower", "rhs")),
        Case("scipy.solve_triangular.upper_T", jsl("solve_triangular", trans=1), ("upper", "rhs")),
        Case("scipy.solve_triangular.unit_H", jsl("solve_triangular", lower=True, trans=2,
                                                  unit_diagonal=True), ("lower", "rhs")),
        Case("scipy.expm", jsl("expm"), ("small",)),
        Case("scipy.schur", jsl("schur"), ("sq",), grad=False),
        Case("scipy.schur.complex", jsl("schur", output="complex"), ("sq",), grad=False),
        Case("scipy.hessenberg", jsl("hessenberg", calc_q=True), ("sq",), grad=False),
        Case("scipy.sqrtm", jsl("sqrtm"), ("spd",), grad=False, batch_ok=False),
        Case("scipy.polar", jsl("polar", method="svd"), ("sq",)),
        Case("scipy.eigh", jsl("eigh"), ("sym",)),
        Case("scipy.svd", jsl("svd"), ("tall",), grad=False),
        Case("scipy.qr", jsl("qr"), ("tall",)),
        Case("scipy.solve_sylvester", jsl("solve_sylvester"), ("sq", "sq", "sq"), grad=False),
        Case("lax.tridiagonal", lax_linalg("tridiagonal", lower=True), ("sym",), grad=False),
        Case("lax.householder_product", householder, ("tall",), grad=False),
        Case("lax.eig.left", lax_linalg("eig", compute_left_eigenvectors=True,
                                        compute_right_eigenvectors=False), ("sq",), grad=False),
        Case("lax.qr.pivoting", lax_linalg("qr", pivoting=True, full_matrices=False), ("tall",), grad=False),
        Case("lax.svd.qr", svd_qr, ("tall",), grad=False),
        Case("lax.ormqr", ormqr, ("tall", "tall3"), grad=False),
        Case("scipy.qr_multiply", qr_multiply, ("tall", "rhs3"), grad=False, batch_ok=False),
        Case("lax.tridiagonal_solve", lax_linalg("tridiagonal_solve"),
             ("vec", "diag", "vec", "rhs"), grad=False),
    ]


CASES = {c.name: c for c in _cases()}


def _weights(leaves, rng) -> list:
    return [rng.standard_normal(np.shape(x)) for x in leaves]


def program(case: Case, dtype, batched: bool, grad: bool, seed: int = 0):
    """(jax function, its arguments): the case itself, or its gradient program."""
    import jax
    import jax.numpy as jnp
    f = case.make()
    args = inputs(case, dtype, batched, seed)
    if not grad:
        return f, args
    with jax.enable_x64(True):
        outs = jax.tree_util.tree_leaves(jax.eval_shape(f, *args))
    rng = np.random.default_rng(seed + 1)
    weights = [w if np.issubdtype(o.dtype, np.inexact) else None for w, o in zip(_weights(outs, rng), outs)]

    def loss(*a):
        total = 0.0
        for leaf, w in zip(jax.tree_util.tree_leaves(f(*a)), weights):
            if w is not None:
                total = total + jnp.sum(jnp.real(leaf) * w) + jnp.sum(jnp.imag(leaf) * w * 0.5)
        return total
    if case.jvp:
        tangents = [np.asarray(rng.standard_normal(np.shape(x)), dtype=x.dtype) for x in args]
        return (lambda *a: jax.jvp(f, tuple(a), tuple(tangents))[1]), args
    return jax.grad(loss, argnums=tuple(range(len(args)))), args


def lower_case(case: Case, dtype, batched: bool = False, grad: bool = False, seed: int = 0):
    """(StableHLO text, jax function, arguments) of one case, lowered with x64 enabled."""
    import jax
    fn, args = program(case, dtype, batched, grad, seed)
    with jax.enable_x64(True):
        text = jax.jit(fn).lower(*args).as_text()
    return text, fn, args


def run_jax(fn, args) -> list:
    """jax.jit's own results (x64 enabled), as numpy arrays."""
    import jax
    with jax.enable_x64(True):
        return [np.asarray(x) for x in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]


def variants(case: Case):
    """(dtype, batched, grad) of every program of a case."""
    for dtype in DTYPES:
        if np.dtype(dtype).kind == "c" and not case.complex_ok:
            continue
        for batched in (False, True):
            if batched and not case.batch_ok:
                continue
            for grad in (False, True) if (case.grad or case.jvp) else (False,):
                yield dtype, batched, grad


# ---------------------------------------------------------------- the table of targets

def custom_calls(text: str) -> list:
    """[(target, operand types, result types, attributes as Python values)] of a program."""
    from axle.ir import parse_module
    m = parse_module(text)
    out = []
    for op in m.walk():
        if op.name == "stablehlo.custom_call":
            attrs = {k: a.to_python() for k, a in op.attributes.items()}
            out.append((attrs.get("call_target_name"), [str(v.type) for v in op.operands],
                        [str(r.type) for r in op.results], attrs))
    return out


def _generic(target: str) -> str:
    """lapack_sgetrf_ffi -> lapack_?getrf_ffi."""
    return re.sub(r"^lapack_[sdcz]", "lapack_?", target)


def enumerate_targets(progress=None) -> dict:
    """{generic target: {"targets": set, "used_by": set, "examples": [...]}} over every
    variant of every case."""
    table: dict = {}
    failures = []
    for case in CASES.values():
        for dtype, batched, grad in variants(case):
            label = f"{case.name}{'.grad' if grad else ''}"
            try:
                text, _, _ = lower_case(case, dtype, batched, grad)
            except Exception as e:  # JAX cannot lower it: reported, not hidden
                failures.append((label, dtype, f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"))
                continue
            for target, ins, outs, attrs in custom_calls(text):
                entry = table.setdefault(_generic(target), {"targets": set(), "used_by": set(), "examples": {}})
                entry["targets"].add(target)
                entry["used_by"].add(label)
                cfg = attrs.get("mhlo.backend_config") or {}
                key = (tuple(sorted(cfg)), len(ins), len(outs))
                entry["examples"].setdefault(key, (target, ins, outs, attrs))
            if progress:
                progress(label, dtype, batched)
    table["__failures__"] = failures
    return table


def _layouts(attrs, key) -> str:
    return ", ".join("[" + ",".join(str(int(i)) for i in np.asarray(x).ravel()) + "]"
                     for x in attrs.get(key, []))


def report(table: dict, markdown: bool = False) -> str:
    lines = []
    failures = table.pop("__failures__", [])
    for generic in sorted(table):
        e = table[generic]
        lines.append(f"## {generic}" if markdown else f"{generic}")
        lines.append(f"targets: {', '.join(sorted(e['targets']))}")
        lines.append(f"used by: {', '.join(sorted(e['used_by']))}")
        for target, ins, outs, attrs in e["examples"].values():
            cfg = attrs.get("mhlo.backend_config") or {}
            fa = attrs.get("mhlo.frontend_attributes") or {}
            lines.append(f"  e.g. {target}: ({', '.join(ins)}) -> ({', '.join(outs)})")
            lines.append(f"    backend_config {dict(cfg)}, num_batch_dims {fa.get('num_batch_dims')}, "
                         f"operand_layouts {_layouts(attrs, 'operand_layouts')}, "
                         f"result_layouts {_layouts(attrs, 'result_layouts')}")
        lines.append("")
    for label, dtype, why in failures:
        lines.append(f"JAX did not lower {label} for {dtype}: {why}")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    table = enumerate_targets()
    print(report(table, markdown="--markdown" in argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
