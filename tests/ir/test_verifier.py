"""The verifier: every conformance program verifies; every bad program in
verify_cases.mlir is rejected at the right op with the right message; and unit tests of
the structural checks on IR built in Python."""
import os
import re

import pytest

from axle.ir import (Block, Module, Operation, Region, make_function, parse_module, split_cases)
from axle.ir.attributes import DenseArrayAttr, IntegerAttr, Location, StringAttr, SymbolRefAttr
from axle.ir.types import FunctionType, TensorType, element_type
from axle.ir.verifier import CHECKS, VerificationError, verify, verify_op

HERE = os.path.dirname(__file__)
CONFORMANCE = os.path.join(HERE, "..", "..", "..", "shared", "conformance")
CASES_FILE = os.path.join(HERE, "verify_cases.mlir")

f32 = element_type("f32")
i32 = element_type("i32")


def t(*shape, et=f32):
    return TensorType(tuple(shape), et)


# ====================================================================== conformance


@pytest.mark.skipif(not os.path.isdir(CONFORMANCE), reason="../shared/conformance is not beside the project")
def test_every_conformance_program_verifies():
    from axle.tools.conformance import collect_cases
    cases = collect_cases([CONFORMANCE])
    assert len(cases) > 2300, "the conformance tree looks incomplete"
    failed = []
    for c in cases:
        module = parse_module(c.text, c.file)
        try:
            verify(module)
        except VerificationError as e:
            failed.append(f"{c.name}: {e}")
    assert not failed, f"{len(failed)} of {len(cases)} failed to verify:\n" + "\n".join(failed[:30])


# ====================================================================== the case file

_EXPECT = re.compile(r"//\s*expected-error@\+1\s*\{\{(.*)\}\}\s*$")


def _cases():
    text = open(CASES_FILE, encoding="utf-8").read()
    out = []
    for first_line, chunk in split_cases(text):
        lines = chunk.split("\n")
        marks = [(k, _EXPECT.search(l)) for k, l in enumerate(lines) if _EXPECT.search(l)]
        if not marks:
            continue
        assert len(marks) == 1, f"case at line {first_line} has {len(marks)} expected errors"
        k, m = marks[0]
        out.append(pytest.param(chunk, k + 2, m.group(1), id=f"line{k + 2}"))
    return out


CASES = _cases()


def test_case_file_is_substantial():
    assert len(CASES) >= 80


def _indent(s: str) -> int:
    return len(s) - len(s.lstrip())


def _op_end(lines: list, k: int) -> int:
    """The last line of the op that starts on line k: an op with regions goes on over
    more indented lines, and (generic form) a line at its own indentation starting `}`."""
    end = k
    for j in range(k + 1, len(lines)):
        s = lines[j]
        if not s.strip():
            continue
        if _indent(s) > _indent(lines[k]):
            end = j
        elif _indent(s) == _indent(lines[k]) and s.strip().startswith("}"):
            end = j
            if not s.strip().startswith("}, {"):  # `}, {` opens the next region
                break
        else:
            break
    return end


@pytest.mark.parametrize("text,line,expected", CASES)
def test_bad_program_is_rejected(text, line, expected):
    lines = text.split("\n")
    # give the op on the marked line a location, so that the error can be checked to
    # point at it (and so that its message carries the location)
    end = _op_end(lines, line - 1)
    lines[end] = lines[end].rstrip() + f' loc("verify_cases.mlir":{line}:3)'
    module = parse_module("\n".join(lines), "verify_cases.mlir")
    with pytest.raises(VerificationError) as info:
        verify(module)
    err = info.value
    msg = str(err)
    assert expected in msg, f"expected {expected!r} in:\n{msg}"
    assert err.op is not None and err.op.location is not None, f"error not at an op with a location: {msg}"
    assert err.op.location.short() == f'"verify_cases.mlir":{line}:3', \
        f"error at {err.op.location.short()}, expected line {line}: {msg}"
    assert msg.startswith(err.op.where() + ": "), msg
    m = re.match(r"\(([CI]\d+)\)", expected)
    if m:
        assert err.constraint == m.group(1)


def test_the_good_twins_of_some_bad_cases_verify():
    good = """
func.func private @callee(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %p: tensor<f32>, %v: tensor<2xf32>) -> tensor<2x5xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  %1 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = stablehlo.pad %a, %p, low = [1, 0], high = [2, 0], interior = [2, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<7x3xf32>
  %3 = stablehlo.concatenate %a, %a, dim = 1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  %4 = "stablehlo.slice"(%a) {start_indices = array<i64: 0, 1>, limit_indices = array<i64: 2, 3>, strides = array<i64: 1, 2>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %5 = stablehlo.reshape %a : (tensor<2x3xf32>) -> tensor<6xf32>
  %6 = stablehlo.broadcast_in_dim %v, dims = [0] : (tensor<2xf32>) -> tensor<2x7xf32>
  %7 = func.call @callee(%v) : (tensor<2xf32>) -> tensor<2xf32>
  %8 = stablehlo.reduce(%a init: %p) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
  %9 = stablehlo.compare LT, %a, %a, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %10 = stablehlo.select %9, %a, %a : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x5xf32>
}
"""
    verify(parse_module(good, "good.mlir"))


def test_dynamic_dimensions_are_compatible_with_anything():
    text = """
func.func @main(%a: tensor<?x3xf32>, %b: tensor<2x?xf32>) -> tensor<?x?xf32> {
  %0 = stablehlo.add %a, %b : (tensor<?x3xf32>, tensor<2x?xf32>) -> tensor<?x?xf32>
  %1 = stablehlo.concatenate %a, %b, dim = 0 : (tensor<?x3xf32>, tensor<2x?xf32>) -> tensor<?x3xf32>
  %2 = stablehlo.transpose %a, dims = [1, 0] : (tensor<?x3xf32>) -> tensor<3x7xf32>
  %3 = stablehlo.reshape %a : (tensor<?x3xf32>) -> tensor<?xf32>
  func.return %0 : tensor<?x?xf32>
}
"""
    verify(parse_module(text, "dyn.mlir"))


# ====================================================================== IR built in Python


def _module_with(fn):
    m = Module()
    m.append(fn)
    return m


def _unary_fn(opname, arg, res, attrs=None):
    fn = make_function("main", [arg], [res])
    body = fn.body
    op = body.append(Operation(opname, [body.arguments[0]], [res], attrs or {},
                               location=Location("t.mlir:4:7")))
    body.append(Operation("func.return", [op.result]))
    return fn, op


def test_error_object_carries_op_constraint_and_location():
    perm = {"permutation": DenseArrayAttr(element_type("i64"), (1, 0))}
    fn, op = _unary_fn("stablehlo.transpose", t(2, 3), t(2, 3), perm)
    with pytest.raises(VerificationError) as info:
        verify(_module_with(fn))
    e = info.value
    assert e.op is op
    assert e.constraint == "C3"
    assert str(e) == ("'stablehlo.transpose' at t.mlir:4:7: (C3) result type must be tensor<3x2xf32>, "
                      "found tensor<2x3xf32>")
    assert isinstance(e, Exception)


def test_use_before_definition_is_rejected():
    fn = make_function("main", [t(2)], [t(2)])
    body = fn.body
    a = Operation("stablehlo.negate", [body.arguments[0]], [t(2)])
    b = Operation("stablehlo.negate", [a.result], [t(2)])
    body.append(b)  # uses a's result before a
    body.append(a)
    body.append(Operation("func.return", [b.result]))
    with pytest.raises(VerificationError, match="operand #0 .* is not defined before its use"):
        verify(_module_with(fn))


def test_values_of_another_function_are_not_visible():
    f1 = make_function("f", [t(2)], [t(2)])
    f1.body.append(Operation("func.return", [f1.body.arguments[0]]))
    f2 = make_function("main", [t(2)], [t(2)])
    f2.body.append(Operation("func.return", [f1.body.arguments[0]]))
    m = Module()
    m.append(f1)
    m.append(f2)
    with pytest.raises(VerificationError, match="not defined before its use"):
        verify(m)


def test_region_bodies_may_use_values_from_enclosing_blocks():
    text = """
func.func @main(%a: tensor<4xf32>, %i: tensor<f32>, %k: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.reduce(%a init: %i) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    reducer(%x: tensor<f32>, %y: tensor<f32>) {
      %s = stablehlo.add %x, %k : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
  func.return %0 : tensor<f32>
}
"""
    verify(parse_module(text, "r.mlir"))


def test_unknown_operation_is_rejected():
    fn, op = _unary_fn("stablehlo.frobnicate", t(2), t(2))
    with pytest.raises(VerificationError, match="unknown operation"):
        verify(_module_with(fn))


def test_result_count_is_checked():
    fn = make_function("main", [t(2)], [])
    body = fn.body
    body.append(Operation("stablehlo.negate", [body.arguments[0]], [t(2), t(2)]))
    body.append(Operation("func.return", []))
    with pytest.raises(VerificationError, match="expects 1 result, found 2"):
        verify(_module_with(fn))


def test_terminator_in_the_middle_of_a_block_is_rejected():
    fn = make_function("main", [t(2)], [t(2)])
    body = fn.body
    body.append(Operation("func.return", [body.arguments[0]]))
    body.append(Operation("func.return", [body.arguments[0]]))
    with pytest.raises(VerificationError, match="must be the last op of its block"):
        verify(_module_with(fn))


def test_empty_function_body_is_rejected():
    fn = make_function("main", [t(2)], [t(2)])
    with pytest.raises(VerificationError, match="is empty; it must end in func.return"):
        verify(_module_with(fn))


def test_entry_block_arguments_must_match_the_function_type():
    fn = make_function("main", [t(2)], [t(2)])
    fn.body.add_argument(t(3))
    fn.body.append(Operation("func.return", [fn.body.arguments[0]]))
    with pytest.raises(VerificationError, match=r"entry block arguments .* must match the function's inputs"):
        verify(_module_with(fn))


def test_call_result_types_must_match_the_callee():
    callee = make_function("g", [t(2)], [t(2)], visibility="private")
    callee.body.append(Operation("func.return", [callee.body.arguments[0]]))
    fn = make_function("main", [t(2)], [t(3)])
    call = fn.body.append(Operation("func.call", [fn.body.arguments[0]], [t(3)],
                                    {"callee": SymbolRefAttr(("g",))}))
    fn.body.append(Operation("func.return", [call.result]))
    m = Module()
    m.append(callee)
    m.append(fn)
    with pytest.raises(VerificationError, match=r"results \(tensor<3xf32>\) differ from @g's result types"):
        verify(m)


def test_duplicate_function_names_are_rejected():
    m = Module()
    for _ in range(2):
        fn = make_function("f", [], [])
        fn.body.append(Operation("func.return", []))
        m.append(fn)
    with pytest.raises(VerificationError, match="redefinition of symbol @f"):
        verify(m)


def test_declarations_need_no_body():
    m = Module()
    fn = make_function("ext", [t(2)], [t(2)], visibility="private")
    fn.regions[0].blocks.clear()
    m.append(fn)
    verify(m)


def test_verify_op_checks_a_single_op():
    fn, op = _unary_fn("stablehlo.sqrt", t(2, et=i32), t(2, et=i32))
    with pytest.raises(VerificationError, match=r"\(I1\)"):
        verify_op(op)
    fn2, op2 = _unary_fn("stablehlo.sqrt", t(2), t(2))
    verify_op(op2)


def test_verify_op_accepts_values_from_outside_but_not_bad_inner_order():
    text = """
func.func @main(%a: tensor<4xf32>, %i: tensor<f32>, %k: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.reduce(%a init: %i) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    reducer(%x: tensor<f32>, %y: tensor<f32>) {
      %s = stablehlo.add %x, %k : tensor<f32>
      %t = stablehlo.add %s, %y : tensor<f32>
      stablehlo.return %t : tensor<f32>
    }
  func.return %0 : tensor<f32>
}
"""
    m = parse_module(text, "r.mlir")
    reduce = m.function("main").body.operations[0]
    verify_op(reduce)  # %k comes from outside the reduce: fine
    body = reduce.regions[0].blocks[0]
    body.operations[0], body.operations[1] = body.operations[1], body.operations[0]
    with pytest.raises(VerificationError, match="not defined before its use"):
        verify_op(reduce)


def test_malformed_attributes_give_a_verification_error_not_a_crash():
    fn, op = _unary_fn("stablehlo.transpose", t(2, 3), t(3, 2), {"permutation": StringAttr("no")})
    with pytest.raises(VerificationError, match="permutation"):
        verify(_module_with(fn))
    fn = make_function("main", [], [t(3)])
    iota = fn.body.append(Operation("stablehlo.iota", [], [t(3)], {}))
    fn.body.append(Operation("func.return", [iota.result]))
    with pytest.raises(VerificationError, match="missing attribute 'iota_dimension'"):
        verify(_module_with(fn))


def test_ops_with_regions_need_return_terminators():
    fn = make_function("main", [t(2)], [t(2)])
    body = fn.body
    cond, loop = Region([Block([t(2)])]), Region([Block([t(2)])])
    w = Operation("stablehlo.while", [body.arguments[0]], [t(2)], {}, [cond, loop])
    body.append(w)
    body.append(Operation("func.return", [w.result]))
    with pytest.raises(VerificationError, match="is empty; it must end in stablehlo.return"):
        verify(_module_with(fn))


def test_check_table_is_keyed_by_op_name():
    for name in ("stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.iota", "stablehlo.convert",
                 "stablehlo.bitcast_convert", "stablehlo.uniform_quantize", "func.call", "func.func"):
        assert name in CHECKS


def test_get_tuple_element_of_a_non_tuple():
    fn, op = _unary_fn("stablehlo.get_tuple_element", t(2), t(2), {"index": IntegerAttr(0, i32)})
    with pytest.raises(VerificationError, match=r"\(I1\) operand must be a tuple"):
        verify(_module_with(fn))


def test_function_type_attribute_is_required():
    m = Module()
    fn = Operation("func.func", attributes={"sym_name": StringAttr("f")})
    fn.add_region(Region([Block()]))
    fn.body.append(Operation("func.return", []))
    m.append(fn)
    with pytest.raises(VerificationError, match="needs a function_type"):
        verify(m)
    assert FunctionType((), ())  # (the type the attribute should hold)
