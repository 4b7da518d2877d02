"""Result-type inference: agreement with every op of the conformance programs, unit tests
per op, and property tests against numpy's own shape rules."""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axle.ir.attributes import (ArrayAttr, BoolAttr, ConvDimensionNumbersAttr, DenseArrayAttr,
                                DenseElementsAttr, EnumAttr, IntegerAttr, StructAttr)
from axle.ir.shape_inference import (SUPPORTED_OPS, InferenceError, ResultTypeRequired, baseline_element,
                                     infer_result_types, infer_results, is_compatible, shapes_compatible,
                                     supports)
from axle.ir.types import (TOKEN, FunctionType, QuantizedType, TensorType, TupleType, element_type)

CONFORMANCE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "conformance")

f32, f64, i1, i32, i64 = (element_type(n) for n in ("f32", "f64", "i1", "i32", "i64"))
c64 = element_type("complex<f32>")


def t(*shape, et=f32):
    return TensorType(tuple(shape), et)


def arr(*xs):
    return DenseArrayAttr(i64, tuple(xs))


def ints(*xs):
    return ArrayAttr(tuple(IntegerAttr(x) for x in xs))


def infer(name, types, attrs=None, regions=()):
    return infer_result_types("stablehlo." + name if "." not in name else name, types, attrs or {}, regions)


def scalar_body(*ets, out=None):
    """The signature of a reduction body over element types `ets`."""
    ins = tuple(TensorType((), e) for e in ets) * 2
    outs = tuple(TensorType((), e) for e in (out or ets))
    return FunctionType(ins, outs)


# ====================================================================== conformance


@pytest.mark.skipif(not os.path.isdir(CONFORMANCE), reason="../shared/conformance is not beside the project")
def test_inferred_types_agree_with_every_conformance_op():
    from axle.ir import parse_module
    from axle.tools.conformance import collect_cases
    equal = compatible = free = 0
    bad = []
    ops_seen = set()
    for c in collect_cases([CONFORMANCE]):
        for op in parse_module(c.text, c.file).walk():
            if not supports(op.name):
                continue
            ops_seen.add(op.name)
            got = infer_results(op.name, op.operand_types, op.attributes, op.regions)
            assert len(got) == len(op.results), f"{c.name}: {op.name}"
            plain = infer_result_types(op.name, op.operand_types, op.attributes, op.regions)
            assert plain == [g.type for g in got]
            for g, r in zip(got, op.results):
                if g.type == r.type:
                    equal += 1
                elif is_compatible(g.type, r.type):
                    compatible += 1  # dynamic dimensions on one side
                elif g.match in ("baseline", "shape") and shapes_compatible(g.type.shape, r.type.shape) and (
                        g.match == "shape"
                        or baseline_element(g.type.element_type) == baseline_element(r.type.element_type)):
                    # quantization scales / the preferred element type are free; the rest agrees
                    free += 1
                else:
                    bad.append(f"{c.name}: {op.name}: inferred {g.type}, program says {r.type}")
    assert not bad, "\n".join(bad[:30])
    assert equal > 15000 and compatible + free < 200, (equal, compatible, free)
    assert len(ops_seen) >= 70


# ====================================================================== elementwise


def test_elementwise_keeps_the_operand_type():
    assert infer("add", [t(2, 3), t(2, 3)]) == [t(2, 3)]
    assert infer("and", [t(4, et=i1), t(4, et=i1)]) == [t(4, et=i1)]
    assert infer("negate", [t(5, et=i32)]) == [t(5, et=i32)]
    assert infer("shift_left", [t(5, et=i32), t(5, et=i32)]) == [t(5, et=i32)]
    assert infer("popcnt", [t(5, et=i64)]) == [t(5, et=i64)]


def test_elementwise_merges_dynamic_dimensions():
    assert infer("add", [t(None, 3), t(2, None)]) == [t(2, 3)]
    assert infer("multiply", [t(None), t(None)]) == [t(None)]


def test_elementwise_results_that_change_the_element_type():
    lt = {"comparison_direction": EnumAttr("stablehlo", "comparison_direction", "LT")}
    assert infer("compare", [t(3), t(3)], lt) == [t(3, et=i1)]
    assert infer("is_finite", [t(3)]) == [t(3, et=i1)]
    assert infer("abs", [t(3, et=c64)]) == [t(3)]
    assert infer("abs", [t(3, et=i32)]) == [t(3, et=i32)]
    assert infer("real", [t(3, et=c64)]) == [t(3)]
    assert infer("imag", [t(3, et=element_type("complex<f64>"))]) == [t(3, et=f64)]
    assert infer("complex", [t(3), t(3)]) == [t(3, et=c64)]
    q = QuantizedType(element_type("i8"), f32, (0.5,), (1,))
    assert infer("uniform_dequantize", [t(3, et=q)]) == [t(3)]


@pytest.mark.parametrize("name,et", [("and", f32), ("not", f32), ("sqrt", i32), ("shift_left", f32),
                                     ("popcnt", f32), ("floor", i32), ("abs", element_type("ui8")),
                                     ("atan2", i32), ("subtract", i1), ("real", i32)])
def test_elementwise_rejects_wrong_element_kinds(name, et):
    n = 1 if name in ("not", "sqrt", "popcnt", "floor", "abs", "real") else 2
    with pytest.raises(InferenceError) as info:
        infer(name, [t(2, et=et)] * n)
    assert info.value.constraint == "I1"


def test_elementwise_shape_mismatch_names_the_constraint():
    with pytest.raises(InferenceError) as info:
        infer("add", [t(2), t(3)])
    assert info.value.constraint == "C1"
    assert "'stablehlo.add': (C1) operand shapes must match, found [2], [3]" == str(info.value)


def test_compare_type_must_fit_the_element_type():
    attrs = {"comparison_direction": EnumAttr("stablehlo", "comparison_direction", "LT"),
             "compare_type": EnumAttr("stablehlo", "comparison_type", "UNSIGNED")}
    with pytest.raises(InferenceError, match=r"\(C3\)"):
        infer("compare", [t(2, et=i32), t(2, et=i32)], attrs)
    assert infer("compare", [t(2, et=element_type("ui32"))] * 2, attrs) == [t(2, et=i1)]
    assert infer("compare", [t(2, et=i1)] * 2, attrs) == [t(2, et=i1)]


def test_select_and_clamp():
    assert infer("select", [t(et=i1), t(2, 3), t(2, 3)]) == [t(2, 3)]
    assert infer("select", [t(2, 3, et=i1), t(2, 3), t(2, 3)]) == [t(2, 3)]
    with pytest.raises(InferenceError, match=r"\(C1\)"):
        infer("select", [t(3, et=i1), t(2), t(2)])
    assert infer("clamp", [t(), t(4), t()]) == [t(4)]
    with pytest.raises(InferenceError, match=r"\(C3\)"):
        infer("clamp", [t(et=i32), t(4), t()])


# ====================================================================== shapes


def test_transpose():
    assert infer("transpose", [t(2, 3, 4)], {"permutation": arr(2, 0, 1)}) == [t(4, 2, 3)]
    with pytest.raises(InferenceError, match=r"\(C2\)"):
        infer("transpose", [t(2, 3)], {"permutation": arr(0, 2)})


def test_transpose_moves_the_quantization_dimension():
    q = QuantizedType(element_type("i8"), f32, (0.5, 0.25), (0, 0), quantized_dimension=0)
    (r,) = infer("transpose", [t(2, 3, et=q)], {"permutation": arr(1, 0)})
    assert r.shape == (3, 2) and r.element_type.quantized_dimension == 1


def test_slice():
    attrs = {"start_indices": arr(1, 0), "limit_indices": arr(8, 3), "strides": arr(3, 1)}
    assert infer("slice", [t(8, 3)], attrs) == [t(3, 3)]
    assert infer("slice", [t(None, 3)], attrs) == [t(3, 3)]
    with pytest.raises(InferenceError, match=r"\(C3\)"):
        infer("slice", [t(5, 3)], attrs)


def test_dynamic_slice_and_update_slice():
    idx = t(et=i32)
    assert infer("dynamic_slice", [t(5, 6), idx, idx], {"slice_sizes": arr(2, 3)}) == [t(2, 3)]
    with pytest.raises(InferenceError, match=r"\(C3\)"):
        infer("dynamic_slice", [t(5, 6), idx, t(et=i64)], {"slice_sizes": arr(2, 3)})
    assert infer("dynamic_update_slice", [t(5, 6), t(2, 3), idx, idx]) == [t(5, 6)]
    with pytest.raises(InferenceError, match=r"\(C3\)"):
        infer("dynamic_update_slice", [t(5, 6), t(2), idx, idx])


def test_concatenate():
    assert infer("concatenate", [t(2, 3), t(4, 3), t(1, 3)], {"dimension": IntegerAttr(0, i64)}) == [t(7, 3)]
    assert infer("concatenate", [t(None, 3), t(4, 3)], {"dimension": IntegerAttr(0, i64)}) == [t(None, 3)]
    assert infer("concatenate", [t(2, None), t(4, 3)], {"dimension": IntegerAttr(0, i64)}) == [t(6, 3)]


def test_pad_with_negative_edges_and_interior():
    attrs = {"edge_padding_low": arr(1, -1), "edge_padding_high": arr(2, 0), "interior_padding": arr(1, 0)}
    assert infer("pad", [t(3, 4), t()], attrs) == [t(8, 3)]


def test_reverse_broadcast_and_get_dimension_size():
    assert infer("reverse", [t(2, 3)], {"dimensions": arr(1)}) == [t(2, 3)]
    assert infer("broadcast", [t(2, 3)], {"broadcast_sizes": arr(4)}) == [t(4, 2, 3)]
    assert infer("get_dimension_size", [t(2, 3)], {"dimension": IntegerAttr(1, i64)}) == [t(et=i32)]


def test_tuples_tokens_and_constants():
    tt = TupleType((t(2), t(et=i32)))
    assert infer("tuple", [t(2), t(et=i32)]) == [tt]
    assert infer("get_tuple_element", [tt], {"index": IntegerAttr(1, i32)}) == [t(et=i32)]
    with pytest.raises(InferenceError, match=r"\(C1\)"):
        infer("get_tuple_element", [tt], {"index": IntegerAttr(2, i32)})
    assert infer("after_all", [TOKEN, TOKEN]) == [TOKEN]
    v = DenseElementsAttr(t(2), np.array([1, 2], np.float32))
    assert infer("constant", [], {"value": v}) == [t(2)]


# ====================================================================== contractions


def _dot(lb=(), rb=(), lc=(), rc=()):
    fields = []
    for k, v in (("lhs_batching_dimensions", lb), ("rhs_batching_dimensions", rb),
                 ("lhs_contracting_dimensions", lc), ("rhs_contracting_dimensions", rc)):
        if v:
            fields.append((k, ints(*v)))
    return {"dot_dimension_numbers": StructAttr("stablehlo.dot", tuple(fields))}


def test_dot_general():
    assert infer("dot_general", [t(7, 2, 3), t(7, 3, 5)], _dot([0], [0], [2], [1])) == [t(7, 2, 5)]
    assert infer("dot_general", [t(2, 3), t(3, 5)], _dot(lc=[1], rc=[0])) == [t(2, 5)]
    assert infer("dot_general", [t(2, 3), t(4, 5)], {}) == [t(2, 3, 4, 5)]  # an outer product
    with pytest.raises(InferenceError, match=r"\(C9\)"):
        infer("dot_general", [t(7, 2, 3), t(6, 3, 5)], _dot([0], [0], [2], [1]))
    with pytest.raises(InferenceError, match=r"\(C1\)"):
        infer("dot_general", [t(7, 2), t(7, 2)], _dot([0], [], [], []))


def test_dot_general_element_type_is_free():
    (r,) = infer_results("stablehlo.dot_general", [t(2, 3, et=i32), t(3, 5, et=i32)], _dot(lc=[1], rc=[0]))
    assert r.type == t(2, 5, et=i32) and r.match == "shape"


def _conv_dn(n_spatial=2):
    s = tuple(range(1, n_spatial + 1))
    return ConvDimensionNumbersAttr(0, n_spatial + 1, s, n_spatial, n_spatial + 1, tuple(range(n_spatial)),
                                    0, n_spatial + 1, s)


def test_convolution():
    attrs = {"dimension_numbers": _conv_dn(), "window_strides": arr(2, 1),
             "padding": DenseElementsAttr(t(2, 2, et=i64), np.array([[1, 1], [0, 0]], np.int64)),
             "rhs_dilation": arr(1, 2), "feature_group_count": IntegerAttr(1, i64),
             "batch_group_count": IntegerAttr(1, i64)}
    # lhs [b, 0, 1, f] = 1x5x7x2, rhs [0, 1, i, o] = 3x3x2x4
    # dim 0: (5 + 2 - 3) // 2 + 1 = 3; dim 1: window 3 dilated by 2 = 5, (7 - 5) // 1 + 1 = 3
    assert infer("convolution", [t(1, 5, 7, 2), t(3, 3, 2, 4)], attrs) == [t(1, 3, 3, 4)]
    bad = dict(attrs, feature_group_count=IntegerAttr(2, i64))
    with pytest.raises(InferenceError, match=r"\(C14\)"):
        infer("convolution", [t(1, 5, 7, 2), t(3, 3, 2, 4)], bad)


def test_fft():
    attrs = lambda kind, *n: {"fft_type": EnumAttr("stablehlo", "fft_type", kind), "fft_length": arr(*n)}  # noqa
    assert infer("fft", [t(3, 8)], attrs("RFFT", 8)) == [t(3, 5, et=c64)]
    assert infer("fft", [t(3, 5, et=c64)], attrs("IRFFT", 8)) == [t(3, 8)]
    assert infer("fft", [t(4, 4, et=c64)], attrs("FFT", 4, 4)) == [t(4, 4, et=c64)]
    with pytest.raises(InferenceError, match=r"\(C4\)"):
        infer("fft", [t(3, 8)], attrs("RFFT", 6))


def test_cholesky_and_triangular_solve():
    assert infer("cholesky", [t(2, 3, 3)], {"lower": BoolAttr(True)}) == [t(2, 3, 3)]
    assert infer("triangular_solve", [t(3, 3), t(3, 4)], {"left_side": BoolAttr(True)}) == [t(3, 4)]
    assert infer("triangular_solve", [t(4, 4), t(3, 4)], {"left_side": BoolAttr(False)}) == [t(3, 4)]
    with pytest.raises(InferenceError, match=r"\(C3\)"):
        infer("triangular_solve", [t(3, 3), t(3, 4)], {"left_side": BoolAttr(False)})


def test_batch_norm_training():
    res = infer("batch_norm_training", [t(2, 3, 4), t(3), t(3)], {"feature_index": IntegerAttr(1, i64)})
    assert res == [t(2, 3, 4), t(3), t(3)]
    with pytest.raises(InferenceError, match=r"\(C3\)"):
        infer("batch_norm_training", [t(2, 3, 4), t(4), t(3)], {"feature_index": IntegerAttr(1, i64)})


# ====================================================================== gather / scatter


def _gather_attrs(offset, collapsed, sim, ivd, sizes, **batch):
    fields = [("offset_dims", ints(*offset)), ("collapsed_slice_dims", ints(*collapsed))]
    for k in ("operand_batching_dims", "start_indices_batching_dims"):
        if batch.get(k):
            fields.append((k, ints(*batch[k])))
    fields += [("start_index_map", ints(*sim)), ("index_vector_dim", IntegerAttr(ivd))]
    return {"dimension_numbers": StructAttr("stablehlo.gather", tuple(fields)), "slice_sizes": arr(*sizes)}


def test_gather():
    # rows of a 5x4 matrix picked by 3 indices: result 3x4
    assert infer("gather", [t(5, 4), t(3, 1, et=i32)], _gather_attrs([1], [0], [0], 1, [1, 4])) == [t(3, 4)]
    # offset dims first, batch dims after: result 2x2x6 (slices 2x2, index batch 6)
    assert infer("gather", [t(5, 4), t(6, 2, et=i32)], _gather_attrs([0, 1], [], [0, 1], 1, [2, 2])) \
        == [t(2, 2, 6)]
    # batching dims
    a = _gather_attrs([2], [1], [1], 2, [1, 1, 4], operand_batching_dims=[0], start_indices_batching_dims=[0])
    assert infer("gather", [t(3, 5, 4), t(3, 2, 1, et=i32)], a) == [t(3, 2, 4)]
    with pytest.raises(InferenceError, match=r"\(C4\)"):
        infer("gather", [t(5, 4), t(6, 2, et=i32)], _gather_attrs([1, 0], [], [0, 1], 1, [2, 2]))


def test_scatter_result_types_come_from_inputs_and_body():
    dn = StructAttr("stablehlo.scatter", (("update_window_dims", ints(1)), ("inserted_window_dims", ints(0)),
                                          ("scatter_dims_to_operand_dims", ints(0)),
                                          ("index_vector_dim", IntegerAttr(1))))
    types = [t(5, 4), t(3, 1, et=i32), t(3, 4)]
    assert infer("scatter", types, {"scatter_dimension_numbers": dn}, [scalar_body(f32)]) == [t(5, 4)]
    with pytest.raises(InferenceError, match=r"\(C4\)"):
        infer("scatter", [t(5, 4), t(3, 1, et=i32), t(2, 4)], {"scatter_dimension_numbers": dn})


# ====================================================================== reductions and control flow


def test_reduce_with_and_without_a_body():
    attrs = {"dimensions": arr(1)}
    assert infer("reduce", [t(4, 5), t()], attrs) == [t(4)]
    assert infer("reduce", [t(4, 5), t()], attrs, [scalar_body(f32)]) == [t(4)]
    # a body that accumulates in a wider type promotes the result
    assert infer("reduce", [t(4, 5), t()], attrs, [scalar_body(f64)]) == [t(4, et=f64)]
    # two inputs (argmax-style)
    assert infer("reduce", [t(4, 5), t(4, 5, et=i32), t(), t(et=i32)], attrs, [scalar_body(f32, i32)]) \
        == [t(4), t(4, et=i32)]
    with pytest.raises(InferenceError, match=r"\(C6\)"):
        infer("reduce", [t(4, 5), t()], attrs, [scalar_body(element_type("f16"))])


def test_reduce_window():
    attrs = {"window_dimensions": arr(2, 3), "window_strides": arr(2, 1),
             "padding": DenseElementsAttr(t(2, 2, et=i64), np.array([[0, 1], [1, 1]], np.int64)),
             "base_dilations": arr(1, 1), "window_dilations": arr(1, 2)}
    # dim 0: (4 + 1 - 2) // 2 + 1 = 2; dim 1: window 3 dilated by 2 = 5, (6 + 2 - 5) + 1 = 4
    assert infer("reduce_window", [t(4, 6), t()], attrs, [scalar_body(f32)]) == [t(2, 4)]


def test_sort_while_if_case_map():
    cmp = FunctionType((t(), t()), (t(et=i1),))
    assert infer("sort", [t(4)], {"dimension": IntegerAttr(0, i64)}, [cmp]) == [t(4)]
    with pytest.raises(InferenceError, match=r"\(C5\)"):
        infer("sort", [t(4)], {"dimension": IntegerAttr(0, i64)}, [FunctionType((t(), t()), (t(),))])
    cond = FunctionType((t(2), t(et=i32)), (t(et=i1),))
    body = FunctionType((t(2), t(et=i32)), (t(2), t(et=i32)))
    assert infer("while", [t(2), t(et=i32)], {}, [cond, body]) == [t(2), t(et=i32)]
    br = FunctionType((), (t(3),))
    assert infer("if", [t(et=i1)], {}, [br, br]) == [t(3)]
    assert infer("case", [t(et=i32)], {}, [br, br, br]) == [t(3)]
    with pytest.raises(ResultTypeRequired):
        infer("if", [t(et=i1)], {})
    add = FunctionType((t(), t()), (t(et=i32),))
    assert infer("map", [t(4), t(4)], {"dimensions": arr(0)}, [add]) == [t(4, et=i32)]


def test_collectives():
    groups = DenseElementsAttr(t(1, 2, et=i64), np.array([[0, 1]], np.int64))
    assert infer("all_gather", [t(2, 2)], {"all_gather_dim": IntegerAttr(1, i64), "replica_groups": groups}) \
        == [t(2, 4)]
    assert infer("all_to_all", [t(4, 6)], {"split_dimension": IntegerAttr(0, i64),
                                           "concat_dimension": IntegerAttr(1, i64),
                                           "split_count": IntegerAttr(2, i64), "replica_groups": groups}) \
        == [t(2, 12)]
    assert infer("reduce_scatter", [t(4, 6)], {"scatter_dimension": IntegerAttr(0, i64), "replica_groups": groups},
                 [FunctionType((t(), t()), (t(),))]) == [t(2, 6)]
    assert infer("all_reduce", [t(4)], {"replica_groups": groups}, [FunctionType((t(), t()), (t(),))]) == [t(4)]


def test_ops_that_need_an_explicit_result_type():
    for name, types in [("reshape", [t(6)]), ("broadcast_in_dim", [t(3)]), ("convert", [t(3)]),
                        ("iota", []), ("bitcast_convert", [t(3)]), ("uniform_quantize", [t(3)]),
                        ("dynamic_reshape", [t(6), t(2, et=i32)]), ("custom_call", [t(3)])]:
        with pytest.raises(ResultTypeRequired, match="must be given explicitly"):
            infer(name, types)
        assert not supports("stablehlo." + name)


def test_supported_op_list_covers_the_brief():
    for name in ["add", "compare", "transpose", "slice", "concatenate", "pad", "dot_general", "reduce",
                 "select", "clamp", "get_dimension_size", "tuple", "get_tuple_element", "gather",
                 "reduce_window", "convolution", "fft", "dynamic_slice", "dynamic_update_slice", "real",
                 "imag", "complex", "abs", "is_finite", "scatter", "sort", "while", "if", "case"]:
        assert "stablehlo." + name in SUPPORTED_OPS


# ====================================================================== properties against numpy

shapes = st.lists(st.integers(0, 4), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(shapes, st.randoms(use_true_random=False))
def test_transpose_agrees_with_numpy(shape, rnd):
    perm = list(range(len(shape)))
    rnd.shuffle(perm)
    (r,) = infer("transpose", [t(*shape)], {"permutation": arr(*perm)})
    assert r.shape == np.zeros(shape).transpose(perm).shape


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_slice_agrees_with_numpy(data):
    shape = data.draw(shapes)
    start, limit, stride = [], [], []
    for n in shape:
        s = data.draw(st.integers(0, n))
        start.append(s)
        limit.append(data.draw(st.integers(s, n)))
        stride.append(data.draw(st.integers(1, 3)))
    (r,) = infer("slice", [t(*shape)], {"start_indices": arr(*start), "limit_indices": arr(*limit),
                                        "strides": arr(*stride)})
    expect = np.zeros(shape)[tuple(slice(a, b, c) for a, b, c in zip(start, limit, stride))].shape
    assert r.shape == expect


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_pad_agrees_with_a_reference(data):
    shape = data.draw(shapes)
    lo = [data.draw(st.integers(0, 3)) for _ in shape]
    hi = [data.draw(st.integers(0, 3)) for _ in shape]
    it = [data.draw(st.integers(0, 2)) for _ in shape]
    (r,) = infer("pad", [t(*shape), t()], {"edge_padding_low": arr(*lo), "edge_padding_high": arr(*hi),
                                           "interior_padding": arr(*it)})
    x = np.zeros(shape)
    for d, k in enumerate(it):  # interior padding: insert k zeros between neighbours
        if x.shape[d] > 1 and k:
            idx = np.repeat(np.arange(1, x.shape[d]), k)
            x = np.insert(x, idx, 0, axis=d)
    x = np.pad(x, list(zip(lo, hi)))
    assert r.shape == x.shape


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_dot_general_agrees_with_einsum(data):
    nb, nc, nl, nr = (data.draw(st.integers(0, 2)) for _ in range(4))
    sizes = [data.draw(st.integers(1, 3)) for _ in range(nb + nc + nl + nr)]
    b, c, l, r = sizes[:nb], sizes[nb:nb + nc], sizes[nb + nc:nb + nc + nl], sizes[nb + nc + nl:]
    # lay out lhs as a random permutation of batch+contracting+free dims, same for rhs
    lhs_dims = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("l", i) for i in range(nl)]
    rhs_dims = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("r", i) for i in range(nr)]
    lhs_dims = data.draw(st.permutations(lhs_dims))
    rhs_dims = data.draw(st.permutations(rhs_dims))
    size = {"b": b, "c": c, "l": l, "r": r}
    lhs_shape = [size[k][i] for k, i in lhs_dims]
    rhs_shape = [size[k][i] for k, i in rhs_dims]
    attrs = _dot([lhs_dims.index(("b", i)) for i in range(nb)], [rhs_dims.index(("b", i)) for i in range(nb)],
                 [lhs_dims.index(("c", i)) for i in range(nc)], [rhs_dims.index(("c", i)) for i in range(nc)])
    (res,) = infer("dot_general", [t(*lhs_shape), t(*rhs_shape)], attrs)
    letters = {("b", i): "abc"[i] for i in range(nb)}
    letters.update({("c", i): "def"[i] for i in range(nc)})
    letters.update({("l", i): "ghi"[i] for i in range(nl)})
    letters.update({("r", i): "jkl"[i] for i in range(nr)})
    lhs_sub = "".join(letters[d] for d in lhs_dims)
    rhs_sub = "".join(letters[d] for d in rhs_dims)
    out_sub = ("".join(letters[("b", i)] for i in range(nb))
               + "".join(letters[d] for d in lhs_dims if d[0] == "l")
               + "".join(letters[d] for d in rhs_dims if d[0] == "r"))
    expect = np.einsum(f"{lhs_sub},{rhs_sub}->{out_sub}", np.zeros(lhs_shape), np.zeros(rhs_shape)).shape
    assert res.shape == expect


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_concatenate_agrees_with_numpy(data):
    shape = data.draw(shapes)
    dim = data.draw(st.integers(0, len(shape) - 1))
    n = data.draw(st.integers(1, 3))
    parts = []
    for _ in range(n):
        s = list(shape)
        s[dim] = data.draw(st.integers(0, 4))
        parts.append(s)
    (r,) = infer("concatenate", [t(*s) for s in parts], {"dimension": IntegerAttr(dim, i64)})
    assert r.shape == np.concatenate([np.zeros(s) for s in parts], axis=dim).shape


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_reduce_window_agrees_with_a_sliding_window(data):
    n = data.draw(st.integers(1, 8))
    w = data.draw(st.integers(1, 4))
    s = data.draw(st.integers(1, 3))
    lo, hi = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))
    attrs = {"window_dimensions": arr(w), "window_strides": arr(s),
             "padding": DenseElementsAttr(t(1, 2, et=i64), np.array([[lo, hi]], np.int64))}
    (r,) = infer("reduce_window", [t(n), t()], attrs)
    padded = n + lo + hi
    count = len(range(0, padded - w + 1, s)) if padded >= w else 0
    assert r.shape == (count,)
