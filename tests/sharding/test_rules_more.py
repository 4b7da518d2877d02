"""Propagation and partitioning of convolution, gather, scatter, sort, reverse (a
collective_permute) and control flow on a 2x2 mesh: each partitioned program equals the
unsharded one in the interpreter, on the interpreter and the CPU backend, with the
collectives the rule's choice implies."""
import numpy as np
import pytest

from axle.interpreter import interpret
from axle.sharding import partition, run_partitioned
from test_reshard import _module

F = "tensor<8x8xf32>"


def _check(module, backend, ints=()):
    rng = np.random.default_rng(0)
    args = []
    for i, a in enumerate(module.main.body.arguments):
        if i in ints:
            args.append(rng.integers(0, ints[i], a.type.shape).astype(np.int32))
        else:
            args.append(rng.standard_normal(a.type.shape).astype(np.float32))
    prog = partition(module)
    got = run_partitioned(prog, args, backend)
    want = interpret(module, *args)
    want = list(want) if isinstance(want, tuple) else [want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return prog


BACKENDS = ["interpreter", "cpu"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_reverse_of_a_sharded_dim_mirrors_the_blocks(backend):
    body = f"""    %0 = stablehlo.reverse %a0, dims = [0] : {F}
    return %0 : {F}"""
    prog = _check(_module(body, [(F, [["x"], ["y"]])], [(F, [["x"], ["y"]])]), backend)
    assert [c.kind for c in prog.collectives] == ["collective_permute"]
    assert "blocks mirrored over ['x']" in prog.report()


@pytest.mark.parametrize("backend", BACKENDS)
def test_sort_keeps_the_other_dims(backend):
    body = f"""    %0 = "stablehlo.sort"(%a0) ({{
      ^bb0(%u: tensor<f32>, %v: tensor<f32>):
        %p = stablehlo.compare LT, %u, %v : (tensor<f32>, tensor<f32>) -> tensor<i1>
        stablehlo.return %p : tensor<i1>
    }}) {{dimension = 1 : i64, is_stable = true}} : ({F}) -> {F}
    return %0 : {F}"""
    prog = _check(_module(body, [(F, [["x"], ["y"]])], [(F, [["x"], []])]), backend)
    assert [(c.kind, c.axes) for c in prog.collectives] == [("all_gather", ("y",))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_embedding_gather_keeps_batch_and_feature_axes(backend):
    body = """    %0 = "stablehlo.gather"(%a0, %a1) {dimension_numbers = #stablehlo.gather<offset_dims = [2],
      collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, slice_sizes = array<i64: 1, 8>}
      : (tensor<16x8xf32>, tensor<4x2xi32>) -> tensor<4x2x8xf32>
    return %0 : tensor<4x2x8xf32>"""
    m = _module(body, [("tensor<16x8xf32>", [[], ["y"]]), ("tensor<4x2xi32>", [["x"], []])],
                [("tensor<4x2x8xf32>", [["x"], [], ["y"]])])
    prog = _check(m, backend, ints={1: 16})
    assert prog.collectives == []  # table rows replicated, ids split by batch, features by "y"


@pytest.mark.parametrize("backend", BACKENDS)
def test_scatter_into_an_unindexed_sharded_dim(backend):
    body = f"""    %0 = "stablehlo.scatter"(%a0, %a1, %a2) ({{
      ^bb0(%u: tensor<f32>, %v: tensor<f32>):
        %s = stablehlo.add %u, %v : tensor<f32>
        stablehlo.return %s : tensor<f32>
    }}) {{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}}
      : ({F}, tensor<3x1xi32>, tensor<3x8xf32>) -> {F}
    return %0 : {F}"""
    m = _module(body, [(F, [[], ["y"]]), ("tensor<3x1xi32>", [[], []]), ("tensor<3x8xf32>", [[], []])],
                [(F, [[], ["y"]])])
    prog = _check(m, backend, ints={1: 8})
    assert prog.collectives == []  # the updates are sliced like the operand's columns


CONV = ("stablehlo.convolution(%a0, %a1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], "
        "window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}"
        " : (tensor<4x6x6x4xf32>, tensor<3x3x4x8xf32>) -> tensor<4x6x6x8xf32>")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("x_dims,k_dims,out_dims,kinds", [
    ([["x"], [], [], []], [[], [], [], ["y"]], [["x"], [], [], ["y"]], []),  # batch x filters: no bytes
    ([[], [], [], ["y"]], [[], [], ["y"], []], [[], [], [], []], ["all_reduce"]),  # input features: a sum
    ([[], ["x"], [], []], [[], [], [], []], [[], [], [], []], ["all_gather"]),  # spatial: gathered
])
def test_convolution(backend, x_dims, k_dims, out_dims, kinds):
    body = f"    %0 = {CONV}\n    return %0 : tensor<4x6x6x8xf32>"
    m = _module(body, [("tensor<4x6x6x4xf32>", x_dims), ("tensor<3x3x4x8xf32>", k_dims)],
                [("tensor<4x6x6x8xf32>", out_dims)])
    prog = _check(m, backend)
    assert [c.kind for c in prog.collectives] == kinds


@pytest.mark.parametrize("backend", BACKENDS)
def test_while_and_if_with_captured_sharded_values(backend):
    body = f"""    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%i = %c0, %x = %a0) : tensor<i32>, {F}
      cond {{
        %c3 = stablehlo.constant dense<3> : tensor<i32>
        %p = stablehlo.compare LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %p : tensor<i1>
      }} do {{
        %one = stablehlo.constant dense<1> : tensor<i32>
        %i1 = stablehlo.add %i, %one : tensor<i32>
        %x1 = stablehlo.add %x, %a1 : {F}
        stablehlo.return %i1, %x1 : tensor<i32>, {F}
      }}
    return %0#1 : {F}"""
    m = _module(body, [(F, [["x"], []]), (F, [[], ["y"]])], [(F, [["x"], []])])
    prog = _check(m, backend)
    assert "operands and captured values made whole" in prog.report()
    assert sorted(c.kind for c in prog.collectives) == ["all_gather", "all_gather"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_if_reading_a_sharded_value(backend):
    """(was refused before: "stablehlo.if is not partitioned yet")"""
    body = f"""    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %p = stablehlo.compare GT, %a1, %z : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %0 = "stablehlo.if"(%p) ({{
      %n = stablehlo.negate %a0 : {F}
      stablehlo.return %n : {F}
    }}, {{
      stablehlo.return %a0 : {F}
    }}) : (tensor<i1>) -> {F}
    return %0 : {F}"""
    for sign in (1, -1):
        m = _module(body, [(F, [["x"], ["y"]]), ("tensor<f32>", [])], [(F, [["x"], []])])
        _check(m, backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["conv_dp_tp", "embed_dp_tp"])
def test_jax_lowered_conv_gather_sort_reverse(jax_programs, name, backend):
    """The same ops as JAX lowers them with NamedShardings on a 2x2 mesh: equal to XLA's
    sharded jit and to the unsharded interpreter."""
    from axle.ir import parse_module
    p = jax_programs[name]
    m = parse_module(p["mlir"])
    prog = partition(m)
    got = run_partitioned(prog, p["args"], backend)
    want = interpret(m, *p["args"])
    want = list(want) if isinstance(want, tuple) else [want]
    for g, w, x in zip(got, want, p["outs"]):
        np.testing.assert_allclose(g, x, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    # batch x filters, ids x table features, rows sorted and reversed where they are: no bytes
    assert prog.collectives == []
