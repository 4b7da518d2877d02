"""dot_generals that BLAS cannot take as they stand (other element types, dimension orders)
run through BLAS after packing (kernels_dot_packed.py) and give numpy's / XLA's results."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402

import axle  # noqa: E402


@pytest.fixture(autouse=True)
def _widening_path(monkeypatch):
    """These tests are about the packed BLAS path: the int8 / bf16 kernels of hosts with
    VNNI / AVX512-BF16 are tested in test_cpu_dot_lowp.py."""
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_lowp_dot=false")


def _compile(fn, *args):
    exe = axle.compile(jax.jit(fn).lower(*args).as_text(), backend="cpu")
    return exe, exe.execute(list(args))


def _libraries(exe):
    return [k.library for k in exe.program.kernels if k.library]


def _dot(pet):
    return lambda a, b: jax.lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=pet)


@pytest.mark.parametrize("dt,pet,ct", [(np.int8, jnp.int32, "s"), (np.uint8, jnp.int32, "d"),
                                       (np.int16, jnp.int32, "d"), (np.int8, jnp.int8, "s")])
def test_integer_dot_is_exact(dt, pet, ct):
    r = np.random.default_rng(0)
    info = np.iinfo(dt)
    a = r.integers(info.min, info.max + 1, (37, 300)).astype(dt)
    b = r.integers(info.min, info.max + 1, (300, 45)).astype(dt)
    a[0, :] = info.min  # the largest products
    b[:, 0] = info.min
    exe, (out,) = _compile(_dot(pet), a, b)
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.dtype(pet))  # wraps like int arithmetic
    np.testing.assert_array_equal(out, want)
    assert _libraries(exe) == [f"blas.{ct}gemm"]


@pytest.mark.parametrize("dt", [ml_dtypes.bfloat16, np.float16])
@pytest.mark.parametrize("pet", [jnp.float32, None])
def test_half_floats_accumulate_in_f32(dt, pet):
    r = np.random.default_rng(1)
    a = r.standard_normal((64, 200)).astype(dt)
    b = r.standard_normal((200, 48)).astype(dt)
    fn = _dot(pet) if pet is not None else (lambda x, y: x @ y)
    exe, (out,) = _compile(fn, a, b)
    want = np.asarray(jax.jit(fn)(a, b))
    assert out.dtype == want.dtype
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out.astype(np.float64), exact, rtol=2e-2, atol=0.15)
    assert _libraries(exe) == ["blas.sgemm"]


@pytest.mark.parametrize("spec", ["bhsd,bshd->bhs", "bhsd,dhe->bhse", "bhsd,bhtd->bsht", "ijk,kji->", "abc,cdb->dab"])
def test_awkward_einsums(spec):
    r = np.random.default_rng(2)
    lhs, rest = spec.split(",")
    rhs = rest.split("->")[0]
    size = dict(zip("abcdehijkst", (6, 7, 5, 9, 8, 3, 4, 10, 12, 11, 13)))
    x = r.standard_normal([size[c] for c in lhs]).astype(np.float32)
    y = r.standard_normal([size[c] for c in rhs]).astype(np.float32)
    if spec == "bhsd,bshd->bhs":
        y = y.reshape([size[c] for c in "bhsd"]).transpose(0, 2, 1, 3).copy()
    fn = lambda p, q: jnp.einsum(spec, p, q)  # noqa: E731
    exe, (out,) = _compile(fn, x, y)
    np.testing.assert_allclose(out, np.einsum(spec, x.astype(np.float64), y.astype(np.float64)),
                               rtol=1e-4, atol=1e-4)


def _cplx(r, shape, dt):
    return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dt)


@pytest.mark.parametrize("dt,p", [(np.complex64, "c"), (np.complex128, "z")])
@pytest.mark.parametrize("case", ["free_dims", "real_lhs", "einsum"])
def test_complex_dots(dt, p, case):
    """Complex dots in the layouts dot_views leave ([2, 512, 128] @ [128, N] read in place) and
    real x complex products: cgemm / zgemm after packing (the generated loop ran a linear
    recurrence's x @ (Br + 1j Bi) 5x slower than XLA)."""
    r = np.random.default_rng(7)
    if case == "free_dims":
        x, y, fn = _cplx(r, (2, 48, 32), dt), _cplx(r, (32, 40), dt), (lambda a, b: a @ b)
    elif case == "real_lhs":
        real = np.float32 if dt == np.complex64 else np.float64
        x, y, fn = r.standard_normal((2, 48, 32)).astype(real), _cplx(r, (32, 40), dt), (lambda a, b: a @ b)
    else:
        x, y = _cplx(r, (3, 16, 5, 8), dt), _cplx(r, (8, 5, 24), dt)
        fn = lambda a, b: jnp.einsum("bsdh,hde->bse", a, b)  # noqa: E731
    with jax.enable_x64(dt == np.complex128):
        exe, (out,) = _compile(fn, x, y)
        want = np.asarray(jax.jit(fn)(x, y))
    tol = 1e-4 if dt == np.complex64 else 1e-10
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol * np.abs(want).max())
    assert f"blas.{p}gemm" in _libraries(exe)
