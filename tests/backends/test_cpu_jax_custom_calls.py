"""Custom calls JAX emits for the CPU: ApproxTopK, shape_assertion, the GSPMD annotations
(Sharding, SPMDFullToShardShape, SPMDShardToFullShape) on one device, and host callbacks
(refused at compile time, naming the JAX API). Each program is lowered by jax 0.10.2 and
run by the interpreter and the CPU backend, compared with jax.jit."""
import numpy as np
import pytest

import axle
from axle.backends.cpu import Unsupported
from axle.interpreter import InterpreterError
from axle.interpreter.jax_targets import ShapeAssertionError

jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

RNG = np.random.default_rng(5)


def _both(text, *args):
    """(interpreter results, CPU results, CPU results without the passes) as tuples."""
    def tup(x):
        return tuple(np.asarray(v) for v in x) if isinstance(x, tuple) else (np.asarray(x),)
    return (tup(axle.interpret(text, *args)), tup(axle.compile(text)(*args)),
            tup(axle.compile(text, passes=False)(*args)))


def _against_jax(f, *args):
    text = jax.jit(f).lower(*args).as_text()
    want = jax.jit(f)(*args)
    want = tuple(np.asarray(w) for w in (want if isinstance(want, (tuple, list)) else (want,)))
    for got in _both(text, *args):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
    return text


APPROX = [
    ("max_k_last", lambda a: lax.approx_max_k(a, 3), (5, 32), np.float32),
    ("min_k_last", lambda a: lax.approx_min_k(a, 4), (5, 32), np.float32),
    ("max_k_dim0", lambda a: lax.approx_max_k(a, 2, reduction_dimension=0), (6, 7), np.float32),
    ("min_k_not_aggregated", lambda a: lax.approx_min_k(a, 3, reduction_dimension=0, recall_target=0.9,
                                                        aggregate_to_topk=False), (4, 16), np.float32),
    ("max_k_recall", lambda a: lax.approx_max_k(a, 5, recall_target=0.5), (3, 40), np.float32),
    ("max_k_3d_middle", lambda a: lax.approx_max_k(a, 2, reduction_dimension=1), (2, 9, 3), np.float32),
    ("max_k_f16", lambda a: lax.approx_max_k(a, 3), (4, 12), np.float16),
    ("max_k_bf16", lambda a: lax.approx_max_k(a, 3), (4, 12), jnp.bfloat16),
]


@pytest.mark.parametrize("name, f, shape, dtype", APPROX, ids=[a[0] for a in APPROX])
def test_approx_top_k_matches_jax(name, f, shape, dtype):
    x = (RNG.permutation(int(np.prod(shape))).reshape(shape) - 20).astype(np.float32) / 8.0  # distinct
    x = np.asarray(x).astype(dtype)
    text = _against_jax(f, x)
    assert "@ApproxTopK" in text


def test_approx_top_k_of_a_computed_operand_in_a_larger_program():
    def f(a, b):
        vals, idx = lax.approx_max_k(jnp.tanh(a @ b), 4)
        return vals * 2, idx + 1
    a = RNG.standard_normal((6, 8)).astype(np.float32)
    b = RNG.standard_normal((8, 20)).astype(np.float32)
    text = jax.jit(f).lower(a, b).as_text()
    want = jax.jit(f)(a, b)
    for got in _both(text, a, b):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
        np.testing.assert_array_equal(got[1], want[1])


def _exported(fn, spec, dtype=jnp.float32):
    """fn exported for arguments of the symbolic shapes `spec` (dims named once, in one scope)."""
    from jax import export
    names = []
    for s in spec:
        names += [d.strip() for d in s.split(",") if not d.strip().isdigit() and d.strip() not in names]
    dims = dict(zip(names, export.symbolic_shape(", ".join(names))))
    shapes = [tuple(int(d) if d.strip().isdigit() else dims[d.strip()] for d in s.split(",")) for s in spec]
    exp = export.export(jax.jit(fn))(*[jax.ShapeDtypeStruct(sh, dtype) for sh in shapes])
    return exp, exp.mlir_module()


def test_shape_assertion_passes_and_fails_like_jax():
    exp, text = _exported(lambda a: jnp.sum(a.reshape(-1, 2), axis=0), ["b, 4"])
    assert "@shape_assertion" in text
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    want = np.asarray(exp.call(x))
    exe = axle.compile(text)
    np.testing.assert_allclose(axle.interpret(text, x), want, rtol=1e-6)
    np.testing.assert_allclose(exe(x), want, rtol=1e-6)
    bad = np.ones((0, 4), np.float32)
    with pytest.raises(Exception) as jax_error:
        exp.call(bad)
    for run in (lambda: axle.interpret(text, bad), lambda: exe(bad)):
        with pytest.raises(ShapeAssertionError) as e:
            run()
        assert "Expected value >= 1 for dimension variable 'b'" in str(e.value)
        assert "'b' = 0" in str(e.value)  # the message formatted with the operand's value
        assert "'b' = 0" in str(jax_error.value)


def test_shape_assertion_with_two_dimension_variables():
    exp, text = _exported(lambda a, b: a @ b, ["m, k", "k, n"])
    a = RNG.standard_normal((3, 5)).astype(np.float32)
    b = RNG.standard_normal((5, 2)).astype(np.float32)
    np.testing.assert_allclose(axle.compile(text)(a, b), np.asarray(exp.call(a, b)), rtol=1e-5)
    np.testing.assert_allclose(axle.interpret(text, a, b), np.asarray(exp.call(a, b)), rtol=1e-5)
    bad = np.ones((4, 2), np.float32)
    # the arguments contradict each other (k = 5 and 4): the program cannot even be
    # specialized; the failing assertion says why, as JAX does
    for run in (lambda: axle.compile(text)(a, bad), lambda: axle.interpret(text, a, bad)):
        with pytest.raises(ShapeAssertionError, match=r"args\[1\].shape\[0\] \(= 4\) and the specification 'k' \(= 5\)"):
            run()


RUNTIME_ASSERT = """func.func @main(%n: tensor<i32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %c = stablehlo.constant dense<2> : tensor<i32>
  %p = stablehlo.compare GE, %n, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  stablehlo.custom_call @shape_assertion(%p, %n, %c) {api_version = 2 : i32, error_message = "n = {0} must be >= {1}", has_side_effect = true} : (tensor<i1>, tensor<i32>, tensor<i32>) -> ()
  %y = stablehlo.add %x, %x : tensor<3xf32>
  return %y : tensor<3xf32>
}"""


def test_shape_assertion_on_a_run_time_value_is_checked_natively():
    x = np.arange(3, dtype=np.float32)
    exe = axle.compile(RUNTIME_ASSERT)
    np.testing.assert_array_equal(exe(np.int32(5), x), 2 * x)
    for run in (lambda: axle.interpret(RUNTIME_ASSERT, np.int32(1), x), lambda: exe(np.int32(1), x)):
        with pytest.raises(ShapeAssertionError, match=r"^n = 1 must be >= 2$"):
            run()
    np.testing.assert_array_equal(exe(np.int32(2), x), 2 * x)  # the failure does not stick


def test_shape_assertion_that_always_fails_is_a_compile_error():
    text = RUNTIME_ASSERT.replace("%p = stablehlo.compare GE, %n, %c, SIGNED", "%p = stablehlo.compare LT, %c, %c, SIGNED")
    with pytest.raises(ShapeAssertionError):
        axle.compile(text.replace("(%p, %n, %c)", "(%p, %c, %c)"))


MESH = Mesh(np.array(jax.devices()[:1]), ("x",))


def test_gspmd_sharding_custom_calls_are_the_identity():
    x = RNG.standard_normal((4, 16)).astype(np.float32)
    prev = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        f = lambda a: lax.with_sharding_constraint(a * 2, NamedSharding(MESH, P("x")))  # noqa: E731
        text = jax.jit(f).lower(x).as_text()
        want = np.asarray(jax.jit(f)(x))
    finally:
        jax.config.update("jax_use_shardy_partitioner", prev)
    assert "@Sharding" in text
    for got in _both(text, x):
        np.testing.assert_array_equal(got[0], want)


SPMD = """func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = stablehlo.custom_call @Sharding(%x) {backend_config = "", mhlo.sharding = "{devices=[1,1]<=[1]}"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %2 = stablehlo.sine %1 : tensor<4x16xf32>
  %3 = stablehlo.custom_call @Sharding(%2) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {backend_config = "", mhlo.sharding = "{devices=[1,1]<=[1]}"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %4 : tensor<4x16xf32>
}"""


def test_spmd_shard_shape_calls_on_one_device():
    x = RNG.standard_normal((4, 16)).astype(np.float32)
    for got in _both(SPMD, x):
        np.testing.assert_allclose(got[0], np.sin(x), rtol=1e-6)


def test_spmd_shard_shape_that_splits_is_refused():
    text = SPMD.replace("@SPMDFullToShardShape(%0) {backend_config = \"\", mhlo.sharding = \"{manual}\"} : "
                        "(tensor<4x16xf32>) -> tensor<4x16xf32>",
                        "@SPMDFullToShardShape(%0) {backend_config = \"\", mhlo.sharding = \"{manual}\"} : "
                        "(tensor<4x16xf32>) -> tensor<2x16xf32>")
    text = text.replace("%2 = stablehlo.sine %1 : tensor<4x16xf32>", "%2 = stablehlo.sine %1 : tensor<2x16xf32>")
    text = text.replace("@Sharding(%2) {backend_config = \"\", mhlo.sharding = \"{manual}\"} : (tensor<4x16xf32>) -> tensor<4x16xf32>",
                        "@Sharding(%2) {backend_config = \"\", mhlo.sharding = \"{manual}\"} : (tensor<2x16xf32>) -> tensor<2x16xf32>")
    text = text.replace("@SPMDShardToFullShape(%3) {backend_config = \"\", mhlo.sharding = \"{devices=[1,1]<=[1]}\"} : (tensor<4x16xf32>)",
                        "@SPMDShardToFullShape(%3) {backend_config = \"\", mhlo.sharding = \"{devices=[1,1]<=[1]}\"} : (tensor<2x16xf32>)")
    x = np.zeros((4, 16), np.float32)
    with pytest.raises(InterpreterError, match="splits the array across devices"):
        axle.interpret(text, x)
    with pytest.raises(Unsupported, match="SPMDFullToShardShape"):
        axle.compile(text)


def _callback_programs():
    import jax.experimental  # noqa: F401

    def dbg(a):
        jax.debug.print("a = {}", a)
        return a + 1

    def io(a):
        jax.experimental.io_callback(lambda z: None, None, a)
        return a

    def cb(a):
        jax.debug.callback(lambda z: None, a)
        return a
    return {"pure_callback": lambda a: jax.pure_callback(lambda z: np.asarray(z) * 2,
                                                         jax.ShapeDtypeStruct(a.shape, a.dtype), a),
            "debug_print": dbg, "io_callback": io, "debug_callback": cb}


@pytest.mark.parametrize("name", ["pure_callback", "debug_print", "io_callback", "debug_callback"])
def test_host_callbacks_are_refused_naming_target_and_api(name):
    x = np.ones((2, 3), np.float32)
    text = jax.jit(_callback_programs()[name]).lower(x).as_text()
    with pytest.raises(Unsupported) as e:
        axle.compile(text)
    msg = str(e.value)
    assert "xla_ffi_python_cpu_callback" in msg and "jax.pure_callback" in msg and "jax.debug.print" in msg
    assert "cannot run it" in msg and "stablehlo.custom_call" in msg
    with pytest.raises(InterpreterError, match="xla_ffi_python_cpu_callback.*jax.pure_callback"):
        axle.interpret(text, x)


def test_unknown_target_still_says_how_to_register():
    text = SPMD.replace("@SPMDFullToShardShape", "@my.own_target")
    with pytest.raises(Unsupported, match="'my.own_target' is not registered .*axle.register_custom_call"):
        axle.compile(text)


def test_approx_top_k_options_as_plain_attributes():
    # older JAX wrote ApproxTopK's options as attributes of the op, not in mhlo.backend_config
    import re
    x = (RNG.permutation(64).reshape(4, 16) - 30).astype(np.float32)
    f = lambda a: lax.approx_min_k(a, 3)  # noqa: E731
    text = jax.jit(f).lower(x).as_text()
    text = re.sub(r"mhlo\.backend_config = \{([^}]*)\}", r"\1", text)
    assert "mhlo.backend_config" not in text and "top_k = 3" in text
    want = jax.jit(f)(x)
    for got in _both(text, x):
        np.testing.assert_array_equal(got[0], np.asarray(want[0]))
        np.testing.assert_array_equal(got[1], np.asarray(want[1]))


def test_malformed_approx_top_k_is_a_clear_error():
    text = """func.func @cmp(%a: tensor<f32>, %b: tensor<f32>) -> tensor<i1> {
  %0 = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
  return %0 : tensor<i1>
}
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x2xf32> {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.custom_call @ApproxTopK(%x, %c) {called_computations = [@cmp], mhlo.backend_config = {top_k = 3 : i64, reduction_dim = 1 : i64}} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}"""
    x = np.zeros((4, 8), np.float32)
    with pytest.raises(InterpreterError, match="less than top_k = 3"):
        axle.interpret(text, x)
    with pytest.raises(Unsupported, match="less than top_k = 3"):
        axle.compile(text)
