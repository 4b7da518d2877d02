"""Every reshard the partitioner emits, on a 2x2 mesh (and a 4-way one), checked against the
unsharded program in the interpreter and on the CPU: which collectives, and the values."""
import numpy as np
import pytest

from axle.interpreter import interpret
from axle.ir import parse_module
from axle.sharding import partition, run_partitioned


def _spec(dims):
    return "[" + ", ".join("{" + ", ".join(f'"{a}"' for a in d) + "}" for d in dims) + "]"


def _module(body, args, results, mesh='["x"=2, "y"=2]'):
    """args/results: [(type, dims)]"""
    sig = ", ".join(f"%a{i}: {t} {{sdy.sharding = #sdy.sharding<@mesh, {_spec(d)}>}}" for i, (t, d) in enumerate(args))
    res = ", ".join(f"{t} {{sdy.sharding = #sdy.sharding<@mesh, {_spec(d)}>}}" for t, d in results)
    return parse_module(f"""module @m attributes {{mhlo.num_partitions = 4 : i32}} {{
  sdy.mesh @mesh = <{mesh}>
  func.func public @main({sig}) -> ({res}) {{
{body}
  }}
}}""")


def _check(module, backend="interpreter", seed=0):
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(a.type.shape).astype(np.float32) for a in module.main.body.arguments]
    prog = partition(module)
    got = run_partitioned(prog, args, backend)
    want = interpret(module, *args)
    want = list(want) if isinstance(want, tuple) else [want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return prog


T = "tensor<8x8xf32>"
NEG = "    %0 = stablehlo.negate %a0 : tensor<8x8xf32>\n    return %0 : tensor<8x8xf32>"

CASES = [  # (argument dims, result dims, collectives expected)
    ([["x"], []], [[], []], ["all_gather"]),  # gather the rows
    ([["x"], []], [[], ["x"]], ["all_to_all"]),  # move "x" from rows to columns
    ([[], []], [["x", "y"], []], []),  # only slices
    ([["x"], []], [["x", "y"], []], []),  # add a minor axis: a slice
    ([["x", "y"], []], [["x"], []], ["all_gather"]),  # drop the minor axis
    ([["x"], []], [["y"], []], ["all_gather"]),  # another axis: gather then slice
    ([["x"], ["y"]], [["y"], ["x"]], ["all_gather", "all_to_all"]),  # then "y" moves to rows
    ([["x", "y"], []], [[], []], ["all_gather"]),  # one gather over both axes
    ([["x", "y"], []], [[], ["x", "y"]], ["all_to_all"]),  # both axes move at once
]


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("src,dst,kinds", CASES)
def test_reshard(src, dst, kinds, backend):
    prog = _check(_module(NEG, [(T, src)], [(T, dst)]), backend)
    assert [c.kind for c in prog.collectives] == kinds, prog.report()


DOT = """    %0 = stablehlo.dot_general %a0, %a1, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    return %0 : tensor<8x8xf32>"""


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("out,kinds", [
    ([["x"], []], ["reduce_scatter"]),  # the pending sum lands split over rows
    ([[], ["x"]], ["reduce_scatter"]),
    ([[], []], ["all_reduce"]),
    ([["y"], []], ["all_reduce"]),  # a sum over x, then a slice over y
])
def test_contracting_dim_sharded(out, kinds, backend):
    args = [("tensor<8x16xf32>", [[], ["x"]]), ("tensor<16x8xf32>", [["x"], []])]
    prog = _check(_module(DOT, args, [(T, out)]), backend)
    assert [c.kind for c in prog.collectives] == kinds, prog.report()
    assert "pending sum over ['x']" in prog.collectives[0].why


def test_bytes_of_each_collective():
    prog = _check(_module(NEG, [(T, [["x"], []])], [(T, [[], []])]))
    (c,) = prog.collectives
    assert (c.group_size, c.bytes_per_device, c.total_bytes) == (2, 4 * 8 * 4, 4 * 4 * 8 * 4)
    args = [("tensor<8x16xf32>", [[], ["x"]]), ("tensor<16x8xf32>", [["x"], []])]
    prog = _check(_module(DOT, args, [(T, [["x"], []])]))
    (c,) = prog.collectives
    assert c.bytes_per_device == 8 * 8 * 4 // 2  # (g-1)/g of the 8x8 partial sum


def test_constraint_in_the_body():
    body = """    %0 = stablehlo.negate %a0 : tensor<8x8xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{}, {"y"}]> : tensor<8x8xf32>
    %2 = stablehlo.exponential %1 : tensor<8x8xf32>
    return %2 : tensor<8x8xf32>"""
    prog = _check(_module(body, [(T, [["y"], []])], [(T, [[], ["y"]])]))
    assert [c.kind for c in prog.collectives] == ["all_to_all"]
    assert "sharding_constraint" in prog.collectives[0].consumer
