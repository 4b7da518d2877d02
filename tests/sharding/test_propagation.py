"""Sharding propagation: the choice at each op, its explanation, and that the partitioned
program still computes the unsharded result (interpreter)."""

from axle.sharding.propagation import propagate
from test_reshard import _check, _module


def _choices(module):
    plan = propagate(module)
    return plan, {c.op.name.split(".")[-1]: c for c in plan.choices}


def _dims(choice, i=0):
    r = choice.op.results[i]
    return choice.results[i].dims(len(r.type.shape)), tuple(choice.results[i].partial)


def test_dot_batch_and_free_dims():
    body = """    %0 = stablehlo.dot_general %a0, %a1, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
    return %0 : tensor<4x8x8xf32>"""
    m = _module(body, [("tensor<4x8x16xf32>", [["x"], ["y"], []]), ("tensor<4x16x8xf32>", [[], [], []])],
                [("tensor<4x8x8xf32>", [["x"], ["y"], []])])
    plan, c = _choices(m)
    assert _dims(c["dot_general"]) == ((("x",), ("y",), ()), ())
    assert c["dot_general"].operands[1].dims(3) == (("x",), (), ())  # the batch dim is sliced to match
    assert _check(m).collectives == []


def test_contracting_one_side_slice_or_gather():
    """lhs contracting dim split over x, rhs whole: slicing rhs (free) leaves a pending sum whose
    all_reduce moves the 8x8 result; gathering lhs moves 8x1024. Slicing wins here, gathering
    when the result is the bigger one."""
    body = """    %0 = stablehlo.dot_general %a0, %a1, contracting_dims = [1] x [0] : (tensor<8x1024xf32>, tensor<1024x8xf32>) -> tensor<8x8xf32>
    return %0 : tensor<8x8xf32>"""
    m = _module(body, [("tensor<8x1024xf32>", [[], ["x"]]), ("tensor<1024x8xf32>", [[], []])],
                [("tensor<8x8xf32>", [[], []])])
    plan, c = _choices(m)
    assert _dims(c["dot_general"]) == (((), ()), ("x",))
    assert "other side sliced, pending sum" in c["dot_general"].note
    assert [k.kind for k in _check(m).collectives] == ["all_reduce"]
    body = """    %0 = stablehlo.dot_general %a0, %a1, contracting_dims = [1] x [0] : (tensor<64x4xf32>, tensor<4x64xf32>) -> tensor<64x64xf32>
    return %0 : tensor<64x64xf32>"""
    m = _module(body, [("tensor<64x4xf32>", [[], ["x"]]), ("tensor<4x64xf32>", [[], []])],
                [("tensor<64x64xf32>", [[], []])])
    plan, c = _choices(m)
    assert _dims(c["dot_general"]) == (((), ()), ())
    assert "gathered (all_gather" in c["dot_general"].note
    assert [k.kind for k in _check(m).collectives] == ["all_gather"]


def test_reshape_transpose_broadcast():
    body = """    %0 = stablehlo.reshape %a0 : (tensor<8x4x4xf32>) -> tensor<8x16xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [1, 2] : (tensor<16x8xf32>) -> tensor<2x16x8xf32>
    %3 = stablehlo.reshape %2 : (tensor<2x16x8xf32>) -> tensor<32x8xf32>
    return %3 : tensor<32x8xf32>"""
    m = _module(body, [("tensor<8x4x4xf32>", [["x"], [], ["y"]])], [("tensor<32x8xf32>", [[], ["x"]])])
    plan, c = _choices(m)
    ch = [x for x in plan.choices]
    assert ch[0].results[0].dims(2) == (("x",), ())  # y on a minor merged dim is gathered
    assert "dims [2] gathered" in ch[0].note
    assert ch[1].results[0].dims(2) == ((), ("x",))
    assert ch[2].results[0].dims(3) == ((), (), ("x",))
    assert ch[3].results[0].dims(2) == ((), ("x",))
    prog = _check(m)
    assert [k.kind for k in prog.collectives] == ["all_gather"]


def test_reduce_add_is_pending_max_gathers():
    body = """    %c = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = stablehlo.reduce(%a0 init: %c) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %m = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.reduce(%a0 init: %m) applies stablehlo.maximum across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %2 = stablehlo.add %0, %1 : tensor<8xf32>
    return %2 : tensor<8xf32>"""
    m = _module(body, [("tensor<8x8xf32>", [["x"], ["y"]])], [("tensor<8xf32>", [["y"]])])
    plan = propagate(m)
    red = [c for c in plan.choices if c.op.name == "stablehlo.reduce"]
    assert tuple(red[0].results[0].partial) == ("x",) and "pending sum" in red[0].note
    assert red[1].results[0].partial == () and "gathered first" in red[1].note
    add = [c for c in plan.choices if c.op.name == "stablehlo.add"][0]
    assert "pending sums are reduced first" in add.note
    kinds = sorted(k.kind for k in _check(m).collectives)
    assert kinds == ["all_gather", "all_reduce"]


def test_convert_keeps_a_float_sum_and_no_rule_gathers():
    body = """    %0 = stablehlo.dot_general %a0, %a1, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = stablehlo.convert %0 : (tensor<8x8xf32>) -> tensor<8x8xf64>
    %2 = stablehlo.slice %1 [0:4, 0:8] : (tensor<8x8xf64>) -> tensor<4x8xf64>
    return %2 : tensor<4x8xf64>"""
    m = _module(body, [("tensor<8x8xf32>", [[], ["x"]]), ("tensor<8x8xf32>", [["x"], []])],
                [("tensor<4x8xf64>", [[], []])])
    plan, c = _choices(m)
    assert tuple(c["convert"].results[0].partial) == ("x",)
    assert "no sharding rule for stablehlo.slice" in c["slice"].note
    prog = _check(m)
    assert [(k.kind, k.value) for k in prog.collectives] == [("all_reduce", "tensor<8x8xf64>")]
    assert "'stablehlo.slice'" in prog.collectives[0].consumer


def test_report_names_every_op():
    body = """    %0 = stablehlo.negate %a0 : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>"""
    prog = _check(_module(body, [("tensor<8x8xf32>", [["x"], []])], [("tensor<8x8xf32>", [[], []])]))
    text = prog.report()
    assert "arg 0 tensor<8x8xf32>: P('x', None)" in text
    assert "'stablehlo.negate' at" in text and "follows operand 0" in text
    # a 4x8 f32 block (128 B) to the one other device of its group, on 4 devices
    assert "all_gather" in text and "total: 512 B per step over 4 devices" in text


def test_scalar_operands_of_clamp_and_select():
    body = """    %lo = stablehlo.constant dense<-0.5> : tensor<f32>
    %hi = stablehlo.constant dense<0.5> : tensor<f32>
    %0 = stablehlo.clamp %lo, %a0, %hi : (tensor<f32>, tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
    %t = stablehlo.constant dense<true> : tensor<i1>
    %1 = stablehlo.select %t, %0, %a0 : (tensor<i1>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    return %1 : tensor<8x8xf32>"""
    m = _module(body, [("tensor<8x8xf32>", [["x"], ["y"]])], [("tensor<8x8xf32>", [["x"], ["y"]])])
    plan, c = _choices(m)
    assert _dims(c["clamp"]) == ((("x",), ("y",)), ())
    assert _dims(c["select"]) == ((("x",), ("y",)), ())
    assert _check(m).collectives == []
