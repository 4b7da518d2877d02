"""Mesh, PartitionSpec, NamedSharding, and their Shardy and GSPMD-string forms."""
import numpy as np
import pytest

from axle.ir import parse_module
from axle.ir.sdy import ShardingAttr
from axle.sharding import (Mesh, NamedSharding, P, ShardingError, default_mesh, from_hlo, from_sdy,
                           mesh_from_sdy, mesh_to_sdy, parse_hlo_sharding, to_hlo, to_sdy)

MESH = Mesh({"x": 2, "y": 2})


def test_mesh():
    m = Mesh((2, 3), ("a", "b"), device_ids=[5, 4, 3, 2, 1, 0])
    assert m.size == 6 and m.shape == {"a": 2, "b": 3}
    assert m.coords(5) == {"a": 0, "b": 0} and m.coords(0) == {"a": 1, "b": 2}
    assert m.groups(["b"]) == [[5, 4, 3], [2, 1, 0]]
    assert m.groups(["a"]) == [[5, 2], [4, 1], [3, 0]]
    assert MESH.groups(["y", "x"]) == [[0, 2, 1, 3]]  # ordered by y major
    for bad, msg in ((lambda: Mesh((2,), ("a", "b")), "axis names"),
                     (lambda: Mesh({"a": 2}, device_ids=[0, 0]), "permutation"),
                     (lambda: Mesh((2, 2), ("a", "a")), "distinct")):
        with pytest.raises(ShardingError, match=msg):
            bad()


def test_named_sharding_split_and_assemble():
    a = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    s = NamedSharding(MESH, P(("x", "y"), None))
    assert s.shard_shape(a.shape) == (2, 6)
    np.testing.assert_array_equal(s.shard(a, 2), a[4:6])  # device 2 = x 1, y 0 -> block 2
    assert np.array_equal(s.assemble({d: s.shard(a, d) for d in range(4)}, a.shape), a)
    s = NamedSharding(MESH, P("y", "x"))
    np.testing.assert_array_equal(s.shard(a, 1), a[4:8, 0:3])
    partial = NamedSharding(MESH, P(None, "x"), partial=("y",))
    blocks = {d: np.ones((8, 3), np.float32) for d in range(4)}
    np.testing.assert_array_equal(partial.assemble(blocks, (8, 6)), np.full((8, 6), 2.0))
    with pytest.raises(ShardingError, match="used twice"):
        NamedSharding(MESH, P("x", "x"))
    with pytest.raises(ShardingError, match="not one of"):
        NamedSharding(MESH, P("z"))
    with pytest.raises(ShardingError, match="does not divide"):
        NamedSharding(MESH, P("x")).shard_shape((3, 2))


HLO = [  # (spec, rank, GSPMD string)
    (P(), 2, "{replicated}"),
    (P("x", None), 2, "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"),
    (P(None, "y"), 2, "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"),
    (P("x", "y"), 2, "{devices=[2,2]0,1,2,3}"),
    (P("y", "x"), 2, "{devices=[2,2]0,2,1,3}"),
    (P(("x", "y")), 1, "{devices=[4]0,1,2,3}"),
    (P(("y", "x")), 1, "{devices=[4]0,2,1,3}"),
]


@pytest.mark.parametrize("spec,rank,text", HLO)
def test_gspmd_strings(spec, rank, text):
    s = NamedSharding(MESH, spec)
    assert str(to_hlo(s, rank)) == text
    hlo = parse_hlo_sharding(text)
    assert str(hlo) == text
    assert from_hlo(hlo, MESH, rank).same_as(s, rank)


def test_gspmd_iota_form_and_errors():
    assert parse_hlo_sharding("{devices=[2,2]<=[4]}").devices == (0, 1, 2, 3)
    assert parse_hlo_sharding("{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}").devices == (0, 2, 1, 3)
    assert str(parse_hlo_sharding("{maximal device=3}")) == "{maximal device=3}"
    with pytest.raises(ShardingError, match="maximal"):
        from_hlo(parse_hlo_sharding("{maximal device=0}"), MESH, 1)
    with pytest.raises(ShardingError, match="cannot read"):
        parse_hlo_sharding("{devices=2}")
    with pytest.raises(ShardingError, match="holds 4 devices, 3 listed"):
        parse_hlo_sharding("{devices=[2,2]0,1,2}")
    with pytest.raises(ShardingError, match="not a grouping"):
        from_hlo(parse_hlo_sharding("{devices=[4]0,3,1,2}"), MESH, 1)
    m = default_mesh(4)
    assert m.shape == {"_0": 2, "_1": 2}
    assert from_hlo(parse_hlo_sharding("{devices=[4,1]0,1,2,3}"), m, 2).dims(2) == (("_0", "_1"), ())


def test_shardy_round_trip():
    module = parse_module("""module {
  sdy.mesh @mesh = <["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>
  func.func @main(%a: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> tensor<8x8xf32> {
    return %a : tensor<8x8xf32>
  }
}""")
    mesh_op = module.operations[0]
    mesh = mesh_from_sdy(mesh_op.attributes["mesh"])
    assert mesh.device_ids == (3, 2, 1, 0) and mesh_to_sdy(mesh) == mesh_op.attributes["mesh"]
    attr = module.main.attributes["arg_attrs"].elements[0].get("sdy.sharding")
    assert isinstance(attr, ShardingAttr)
    s = from_sdy(attr, mesh)
    assert s.dims(2) == (("x",), ("y",))
    assert to_sdy(s, "mesh", 2) == attr
    assert str(to_sdy(NamedSharding(mesh, P(None, "x"), ("y",)), "mesh", 2)) == \
        '#sdy.sharding<@mesh, [{}, {"x"}], unreduced={"y"}>'
