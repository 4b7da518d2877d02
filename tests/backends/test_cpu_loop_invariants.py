"""Loops whose bodies read weights passed through unchanged (lax.scan's closure): the
weights stop being loop state, what the body computes from them alone is computed once
before the loop (while-licm), and a bf16 dot with such an operand runs in f32 with the
weight widened once (cpu-widen-loop-dots). Results against jax.jit; the compiled plan has
the weight's convert outside the loop."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
from jax import lax  # noqa: E402

import axle  # noqa: E402

BF = ml_dtypes.bfloat16
R = np.random.default_rng(0)


def _gru(w, u, xs, h0):
    def step(h, x):
        z = jax.nn.sigmoid(x @ w[0] + h @ u[0])
        r = jax.nn.sigmoid(x @ w[1] + h @ u[1])
        n = jnp.tanh(x @ w[2] + (r * h) @ u[2])
        h = ((1 - z) * n + z * h).astype(h.dtype)
        return h, h
    return lax.scan(step, h0, xs)[1]


def _compile(fn, *args):
    text = jax.jit(fn).lower(*args).as_text()
    return axle.compile(text, backend="cpu")


@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-5), (BF, 1.6e-2)])
def test_scan_with_weights_read_through_the_loop(dtype, tol):
    args = (R.standard_normal((3, 24, 40)).astype(dtype) * 0.2, R.standard_normal((3, 40, 40)).astype(dtype) * 0.2,
            R.standard_normal((9, 5, 24)).astype(dtype), R.standard_normal((5, 40)).astype(dtype))
    exe = _compile(_gru, *args)
    got = exe.execute(list(args))[0].astype(np.float32)
    want = np.asarray(jax.jit(_gru)(*args)).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_bf16_weight_widened_once_outside_the_loop():
    from axle.backends.cpu.pipeline import cpu_pipeline
    from axle.ir import parse_module
    from axle.passes import PassManager
    args = (R.standard_normal((3, 24, 40)).astype(BF), R.standard_normal((3, 40, 40)).astype(BF),
            R.standard_normal((9, 5, 24)).astype(BF), R.standard_normal((5, 40)).astype(BF))
    module = parse_module(jax.jit(_gru).lower(*args).as_text())
    PassManager(cpu_pipeline(), verify_each=True).run(module)
    main = module.functions["main"]
    top = [o for o in main.body.operations]
    loop = next(o for o in top if o.name == "stablehlo.while")
    hoisted = [o for o in top if o.name == "stablehlo.convert" and str(o.results[0].type.element_type) == "f32"]
    assert len(hoisted) >= 6  # the six weight matrices, widened before the loop
    assert len(loop.operands) < 6  # the weights are no longer loop state
    inner = [o for o in loop.walk() if o.name == "stablehlo.dot_general"]
    assert inner and all(str(v.type.element_type) == "f32" for o in inner for v in o.operands)


def test_zero_trip_loop_and_value_hoisted_from_a_nested_loop():
    def f(w, x, n):
        def outer(i, acc):
            def inner(j, a):
                return a + jnp.tanh(w[0] * 2.0)[j % 4]
            return lax.fori_loop(0, n, inner, acc) * 0.5
        return lax.fori_loop(0, n, outer, x)
    w, x = R.standard_normal((3, 4)).astype(np.float32), R.standard_normal(4).astype(np.float32)
    for n in (0, 3):
        n = np.int32(n)
        exe = _compile(f, w, x, n)
        np.testing.assert_allclose(exe.execute([w, x, n])[0], np.asarray(jax.jit(f)(w, x, n)), rtol=1e-6, atol=1e-6)
