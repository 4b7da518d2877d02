"""Programs the partitioner cannot take say so, naming the place; GSPMD in-body constraints."""
import numpy as np
import pytest

from axle.ir import parse_module
from axle.sharding import ShardingError, partition
from test_reshard import _check, _module


def test_uneven_split_is_refused():
    body = "    %0 = stablehlo.negate %a0 : tensor<6x8xf32>\n    return %0 : tensor<6x8xf32>"
    m = _module(body, [("tensor<6x8xf32>", [["x", "y"], []])], [("tensor<6x8xf32>", [[], []])])
    with pytest.raises(ShardingError, match="argument 0.*does not divide tensor<6x8xf32>"):
        partition(m)


def test_unknown_axis_and_two_meshes():
    body = "    %0 = stablehlo.negate %a0 : tensor<8x8xf32>\n    return %0 : tensor<8x8xf32>"
    m = _module(body, [("tensor<8x8xf32>", [["x"], []])], [("tensor<8x8xf32>", [[], []])], mesh='["x"=4]')
    text = str(m).replace('sdy.mesh @mesh = <["x"=4]>', 'sdy.mesh @mesh = <["x"=4]>\n  sdy.mesh @other = <["y"=2]>')
    with pytest.raises(ShardingError, match="one mesh per module"):
        partition(parse_module(text))


def test_gspmd_custom_call_constraint():
    m = parse_module("""module @m attributes {mhlo.num_partitions = 4 : i32} {
  func.func @main(%a: tensor<8x8xf32> {mhlo.sharding = "{devices=[4,1]<=[4]}"}) -> (tensor<8x8xf32> {mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.custom_call @Sharding(%a) {mhlo.sharding = "{devices=[1,4]<=[4]}"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = stablehlo.exponential %0 : tensor<8x8xf32>
    return %1 : tensor<8x8xf32>
  }
}""")
    prog = _check(m)
    assert [c.kind for c in prog.collectives] == ["all_to_all", "all_gather"]
    assert prog.plan.choices[1].results[0].dims(2) == ((), ("_0", "_1"))
    # all_to_all over the 4 devices: 3/4 of a 2x8 block; all_gather: 3 blocks of 8x2
    assert [c.bytes_per_device for c in prog.collectives] == [2 * 8 * 4 * 3 // 4, 3 * 8 * 2 * 4]
    np.testing.assert_equal(prog.num_devices, 4)
