"""The Shardy (sdy) dialect: parsed into structured attributes and ops, printed back (round
trip), verified, and run on one device by the interpreter and the CPU backend. Programs come
from jax 0.10.2 (`jax.jit(f).lower(...).as_text()`); the 2-device shard_map text below was
taken the same way with XLA_FLAGS=--xla_force_host_platform_device_count=2."""
import numpy as np
import pytest

import axle
from axle.interpreter import InterpreterError
from axle.ir import sdy as S
from axle.ir.text.cursor import ParseError
from axle.ir.text.printer import print_module
from axle.ir.verifier import VerificationError, verify

jax = pytest.importorskip("jax")
jnp = jax.numpy
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

MESH = Mesh(np.array(jax.devices()[:1]), ("x",))
MESH2 = Mesh(np.array(jax.devices()[:1]).reshape(1, 1), ("a", "b"))
X = np.random.default_rng(3).standard_normal((4, 16)).astype(np.float32)

# jax.shard_map(lambda a: a * 2 + psum(sum(a), "x"), mesh of 2 devices, in/out P("x"))
SHARD_MAP_2 = """module @jit__lambda attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}}
  func.func public @main(%arg0: tensor<4x16xf32>) -> (tensor<4x16xf32> {jax.result_info = "result"}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%arg1: tensor<2x16xf32>) {
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x16xf32>
      %2 = stablehlo.multiply %arg1, %1 : tensor<2x16xf32>
      %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %3 = stablehlo.reduce(%arg1 init: %cst_0) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16xf32>, tensor<f32>) -> tensor<f32>
      %4 = "stablehlo.all_reduce"(%3) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %7 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %7 : tensor<f32>
      }) : (tensor<f32>) -> tensor<f32>
      %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f32>) -> tensor<2x16xf32>
      %6 = stablehlo.add %2, %5 : tensor<2x16xf32>
      sdy.return %6 : tensor<2x16xf32>
    } : (tensor<4x16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}
"""

# the same program on a mesh of one device (JAX drops manual_computation when every manual
# axis has size 1, so this one is written by hand in JAX's form): runs on one device
SHARD_MAP_1 = SHARD_MAP_2.replace('"x"=2', '"x"=1').replace("size = 2", "size = 1") \
    .replace("2x16xf32", "4x16xf32").replace("[[0, 1]]> : tensor<1x2xi64>", "[[0]]> : tensor<1x1xi64>")


def _round_trip(text: str):
    m = axle.parse_module(text)
    verify(m)
    printed = print_module(m)
    again = axle.parse_module(printed)
    assert again == m
    assert print_module(again) == printed
    return m


def _jax_programs():
    s = NamedSharding(MESH, P("x", None))

    def dbg(a):
        jax.debug.print("a {}", a)
        return a + 1

    def io(a):
        jax.experimental.io_callback(lambda z: None, None, a)
        return a * 2
    import jax.experimental  # noqa: F401
    return {
        "with_sharding_constraint": jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, NamedSharding(MESH, P("x")))),
        "in_out_shardings": jax.jit(lambda a: a * 3, in_shardings=s, out_shardings=s),
        "constraint_open": jax.jit(lambda a: jax.lax.with_sharding_constraint(jnp.sin(a), NamedSharding(MESH, P()))),
        "two_axes": jax.jit(lambda a: jax.lax.with_sharding_constraint(a + 1, NamedSharding(MESH2, P(("a", "b"), None)))),
        "unconstrained": jax.jit(lambda a: jax.lax.with_sharding_constraint(
            a - 1, NamedSharding(MESH2, P(P.UNCONSTRAINED, "b")))),
        "nested_jit": jax.jit(lambda a: jax.jit(lambda b: b * 2, out_shardings=NamedSharding(MESH2, P("a")))(a) + 1),
        "debug_print": jax.jit(dbg),
        "io_callback": jax.jit(io),
    }


@pytest.mark.parametrize("name", sorted(_jax_programs()))
def test_jax_programs_round_trip(name):
    f = _jax_programs()[name]
    text = f.lower(X).as_text()
    assert "sdy." in text
    m = _round_trip(text)
    assert any(op.name == "sdy.mesh" for op in m.operations)


def test_structured_attributes():
    text = _jax_programs()["in_out_shardings"].lower(X).as_text()
    m = axle.parse_module(text)
    mesh_op = next(op for op in m.operations if op.name == "sdy.mesh")
    assert mesh_op.attributes["mesh"] == S.MeshAttr((("x", 1),))
    arg = dict(m.main.attributes["arg_attrs"].elements[0].entries)["sdy.sharding"]
    assert isinstance(arg, S.ShardingAttr)
    assert arg.mesh == "mesh"
    assert arg.dims == (S.DimSharding((S.AxisRef("x"),)), S.DimSharding(()))
    cb = axle.parse_module(_jax_programs()["debug_print"].lower(X).as_text())
    call = next(op for op in cb.walk() if op.name == "stablehlo.custom_call")
    per_value = call.attributes["sdy.sharding"]
    assert isinstance(per_value, S.ShardingPerValueAttr)
    assert per_value.shardings[0].mesh == "maximal_mesh_0"
    mesh = next(op for op in cb.operations if op.name == "sdy.mesh").attributes["mesh"]
    assert mesh.axes == () and mesh.device_ids == (0,) and mesh.size == 1


def test_manual_computation_round_trip_and_structure():
    m = _round_trip(SHARD_MAP_2)
    op = next(o for o in m.walk() if o.name == "sdy.manual_computation")
    assert op.attributes["manual_axes"] == S.ManualAxesAttr(("x",))
    assert len(op.attributes["in_shardings"].shardings) == 1
    assert op.regions[0].blocks[0].arguments[0].type.shape == (2, 16)
    assert op.regions[0].blocks[0].operations[-1].name == "sdy.return"


def test_sharding_syntax_round_trips():
    text = """module {
  sdy.mesh @m = <["a"=2, "b"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>
  sdy.mesh @empty = <[]>
  func.func @main(%x: tensor<8x8x8xf32> {sdy.sharding = #sdy.sharding<@m, [{"a", ?}p1, {"b":(1)2}, {?}], replicated={"b":(2)2}>}) -> (tensor<8x8x8xf32> {sdy.sharding = #sdy.sharding<<["c"=2]>, [{"c"}, {}, {}], unreduced={}>}) {
    %0 = sdy.sharding_constraint %x <@m, [{}, {"a"}, {"b"}p0]> : tensor<8x8x8xf32>
    %1 = sdy.reshard %0 <@m, [{}, {}, {}], replicated={"a", "b"}> : tensor<8x8x8xf32>
    return %1 : tensor<8x8x8xf32>
  }
}
"""
    m = _round_trip(text)
    arg = dict(m.main.attributes["arg_attrs"].elements[0].entries)["sdy.sharding"]
    assert arg.dims[0] == S.DimSharding((S.AxisRef("a"),), closed=False, priority=1)
    assert arg.dims[1].axes == (S.AxisRef("b", (1, 2)),)
    assert arg.replicated == (S.AxisRef("b", (2, 2)),)
    x = np.random.default_rng(0).standard_normal((8, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(axle.interpret(text, x), x)
    np.testing.assert_array_equal(axle.compile(text)(x), x)


@pytest.mark.parametrize("bad, message", [
    ('%0 = sdy.sharding_constraint %x <@nomesh, [{}, {}, {}]> : tensor<8x8x8xf32>', "not an sdy.mesh"),
    ('%0 = sdy.sharding_constraint %x <@m, [{}, {}]> : tensor<8x8x8xf32>', "2 dimension shardings for a value of rank 3"),
    ('%0 = sdy.sharding_constraint %x <@m, [{"q"}, {}, {}]> : tensor<8x8x8xf32>', 'uses axis "q"'),
    ('%0 = sdy.sharding_constraint %x <@m, [{"a"}, {"a"}, {}]> : tensor<8x8x8xf32>', "more than once"),
    ('%0 = sdy.sharding_constraint %x <@m, [{"b":(1)3}, {}, {}]> : tensor<8x8x8xf32>', "does not divide"),
])
def test_verifier_rejects_bad_shardings(bad, message):
    text = f"""module {{
  sdy.mesh @m = <["a"=2, "b"=4]>
  func.func @main(%x: tensor<8x8x8xf32>) -> tensor<8x8x8xf32> {{
    {bad}
    return %0 : tensor<8x8x8xf32>
  }}
}}"""
    with pytest.raises(VerificationError, match=message):
        verify(axle.parse_module(text))


def test_verifier_checks_manual_computation_local_types():
    bad = SHARD_MAP_2.replace('out_shardings=[<@mesh, [{"x"}, {}]>]', 'out_shardings=[<@mesh, [{}, {}]>]')
    with pytest.raises(VerificationError, match="result #0 .* has local type tensor<4x16xf32>, but the body uses"):
        verify(axle.parse_module(bad))
    with pytest.raises(VerificationError, match="permutation"):
        verify(axle.parse_module(SHARD_MAP_2.replace('<["x"=2]>', '<["x"=2], device_ids=[0, 0]>')))


@pytest.mark.parametrize("bad, message", [
    ('<@mesh, [{"x"}, {}]', "to close the sharding"),
    ('<@mesh, [{?, "x"}, {}]>', "the open marker comes last"),
    ('<mesh, [{"x"}, {}]>', "expected a mesh name"),
])
def test_parse_errors_name_the_place(bad, message):
    text = SHARD_MAP_2.replace('in_shardings=[<@mesh, [{"x"}, {}]>]', f"in_shardings=[{bad}]")
    with pytest.raises(ParseError, match=message):
        axle.parse_module(text)


@pytest.mark.parametrize("name", ["with_sharding_constraint", "in_out_shardings", "constraint_open", "two_axes",
                                  "unconstrained", "nested_jit"])
def test_one_device_meaning_matches_jax(name):
    f = _jax_programs()[name]
    text = f.lower(X).as_text()
    want = np.asarray(f(X))
    np.testing.assert_allclose(axle.interpret(text, X), want, rtol=1e-6)
    np.testing.assert_allclose(axle.compile(text)(X), want, rtol=1e-6)
    if " call @" not in text:  # without the passes nothing inlines calls (the CPU backend needs that)
        np.testing.assert_allclose(axle.compile(text, passes=False)(X), want, rtol=1e-6)


def test_manual_computation_inlined_on_one_device():
    m = _round_trip(SHARD_MAP_1)
    assert any(op.name == "sdy.manual_computation" for op in m.walk())
    want = X * 2 + X.sum()
    np.testing.assert_allclose(axle.interpret(SHARD_MAP_1, X), want, rtol=1e-5)
    np.testing.assert_allclose(axle.compile(SHARD_MAP_1)(X), want, rtol=1e-5)
    np.testing.assert_allclose(axle.compile(SHARD_MAP_1, passes=False)(X), want, rtol=1e-5)


def test_manual_computation_on_several_devices_is_refused():
    with pytest.raises(InterpreterError, match="needs several devices"):
        axle.interpret(SHARD_MAP_2, X)
    from axle.backends.cpu import Unsupported
    with pytest.raises(Unsupported, match=r"sdy.manual_computation.*shards \(tensor<2x16xf32>\) of "
                                          r"tensor<4x16xf32>, which needs several devices"):
        axle.compile(SHARD_MAP_2)


def test_pass_removes_sdy_ops_and_keeps_the_mesh():
    from axle.passes import make_pass
    m = axle.parse_module(SHARD_MAP_1)
    assert make_pass("jax-custom-calls").run(m)
    verify(m)
    names = {op.name for op in m.walk()}
    assert "sdy.manual_computation" not in names and "sdy.return" not in names
    assert "sdy.mesh" in names  # kept for the partitioner to come


def test_explicit_axes_and_reshard():
    from jax.sharding import AxisType
    mesh = jax.make_mesh((1,), ("x",), axis_types=(AxisType.Explicit,))

    def f(a):
        return jax.sharding.reshard(a, P("x")) * 2
    with jax.set_mesh(mesh):
        g = jax.jit(f)
        text = g.lower(X).as_text()
        want = np.asarray(g(X))
    m = _round_trip(text)
    res = dict(m.main.attributes["res_attrs"].elements[0].entries)["sdy.sharding"]
    assert res.dims[0].axes == (S.AxisRef("x"),)
    np.testing.assert_allclose(axle.interpret(text, X), want, rtol=1e-6)
    np.testing.assert_allclose(axle.compile(text)(X), want, rtol=1e-6)
