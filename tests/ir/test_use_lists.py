"""Use lists (axle/ir/uses.py): exact under every mutation, and after every pass of the
pipelines on the conformance suites (check_use_lists compares them with a recomputation)."""
import os

import pytest

from axle.ir.core import Block, Module, Operation, Region, make_function
from axle.ir.text.reader import parse_module
from axle.ir.types import TensorType, f32
from axle.ir.uses import Use, check_use_lists

T = TensorType((2,), f32)
ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "conformance")


def _fn():
    m = Module()
    fn = m.append(make_function("main", [T, T], [T]))
    return m, fn, fn.body


def _users(v):
    return [(u.owner, u.index) for u in v.uses]


def test_creating_and_setting_operands_keeps_uses():
    m, fn, b = _fn()
    x, y = b.arguments
    add = b.append(Operation("stablehlo.add", [x, x], [T]))
    assert _users(x) == [(add, 0), (add, 1)] and x.users == [add] and not x.has_one_use()
    add.operands[1] = y
    assert _users(x) == [(add, 0)] and x.has_one_use() and _users(y) == [(add, 1)]
    add.operands = [y, y]
    assert x.use_empty() and _users(y) == [(add, 0), (add, 1)]
    add.operands.insert(0, x)
    assert _users(x) == [(add, 0)] and sorted(_users(y), key=lambda u: u[1]) == [(add, 1), (add, 2)]
    del add.operands[0]
    add.operands[:] = [x]
    add.operands.append(y)
    add.operands.extend([x])
    assert add.operands == [x, y, x] and sorted(i for _, i in _users(x)) == [0, 2]
    assert add.operands.pop() is x and _users(x) == [(add, 0)]
    b.append(Operation("func.return", [add.result]))
    assert check_use_lists(m) == []
    assert isinstance(x.uses[0], Use) and x.uses[0].owner is add and x.uses[0].index == 0


def test_replace_all_uses_with_and_erase():
    m, fn, b = _fn()
    x, y = b.arguments
    neg = b.append(Operation("stablehlo.negate", [x], [T]))
    mul = b.append(Operation("stablehlo.multiply", [neg.result, neg.result], [T]))
    ret = b.append(Operation("func.return", [mul.result]))
    with pytest.raises(ValueError, match="still used"):
        neg.erase()
    neg.result.replace_all_uses_with(y)
    assert mul.operands == [y, y] and neg.result.use_empty() and _users(y) == [(mul, 0), (mul, 1)]
    neg.erase()
    assert neg not in b.operations and neg.parent is None and x.use_empty()
    mul.result.replace_uses_with_if(x, lambda u: u.owner is not ret)
    assert ret.operands == [x] and check_use_lists(m) == []


def test_removing_moving_and_reinserting_ops():
    m, fn, b = _fn()
    x, y = b.arguments
    a = b.append(Operation("stablehlo.add", [x, y], [T]))
    n = b.append(Operation("stablehlo.negate", [a.result], [T]))
    b.append(Operation("func.return", [n.result]))
    b.operations.remove(n)  # out of the block: no longer a user
    assert a.result.use_empty() and n.parent is None
    b.operations.insert(1, n)  # back: a user again
    assert a.result.users == [n] and n.parent is b
    b.operations[:] = [a, b.operations[2]]  # a slice assignment that leaves n out
    assert a.result.use_empty()
    other = Block()
    other.append(a)  # inserted elsewhere, then dropped from the first block: a move
    b.operations[:] = [op for op in b.operations if op is not a]
    assert a.parent is other and x.users == [a]
    assert any("not in the module" in e for e in check_use_lists(m))  # `other` is not in m
    other.operations.remove(a)
    assert x.use_empty()
    del b.operations[0]
    assert check_use_lists(m) == []


def test_ops_in_regions_follow_their_ancestor():
    m, fn, b = _fn()
    x, y = b.arguments
    body = Block([T])
    inner = body.append(Operation("stablehlo.add", [body.arguments[0], y], [T]))  # reads outer y
    body.append(Operation("stablehlo.return", [inner.result]))
    w = Operation("stablehlo.map", [x], [T], {}, [Region([body])])
    b.append(w)
    b.append(Operation("func.return", [w.result]))
    assert y.users == [inner] and check_use_lists(m) == []
    b.operations.remove(w)  # the capture goes with the op
    assert y.use_empty() and not inner._linked
    late = body.append(Operation("stablehlo.negate", [y], [T]))  # into a detached region
    assert y.use_empty() and not late._linked
    b.insert(0, w)
    assert set(y.users) == {inner, late} and check_use_lists(m) == []


def test_the_checker_finds_stale_and_missing_uses():
    m, fn, b = _fn()
    x, y = b.arguments
    a = b.append(Operation("stablehlo.add", [x, y], [T]))
    b.append(Operation("func.return", [a.result]))
    Operation("stablehlo.negate", [x], [T])  # built and thrown away: still a user
    assert any("not in the module" in e for e in check_use_lists(m))
    m2, _, b2 = _fn()
    a2 = b2.append(Operation("stablehlo.negate", [b2.arguments[0]], [T]))
    b2.append(Operation("func.return", [a2.result]))
    list.__setitem__(a2.operands, 0, b2.arguments[1])  # behind the list's back
    errors = check_use_lists(m2)
    assert any("missing" in e for e in errors) and any("another value" in e for e in errors)


CLONE_TEXT = """
func.func private @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32> loc("here.py":3:4)
  return %0 : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<1.0> : tensor<4xf32>
  %w:2 = stablehlo.while(%i = %n, %v = %x) : tensor<i32>, tensor<4xf32>
   cond {
    %z = stablehlo.constant dense<0> : tensor<i32>
    %p = stablehlo.compare GT, %i, %z : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.subtract %i, %one : tensor<i32>
    %u = stablehlo.add %v, %c : tensor<4xf32>
    %r = func.call @f(%u) : (tensor<4xf32>) -> tensor<4xf32>
    stablehlo.return %j, %r : tensor<i32>, tensor<4xf32>
  }
  return %w#1 : tensor<4xf32>
}
"""


def _objects(m):
    ops = list(m.walk())
    values = [v for op in ops for v in op.results]
    values += [a for op in ops for r in op.regions for b in r.blocks for a in b.arguments]
    blocks = [b for op in ops for r in op.regions for b in r.blocks]
    return {id(o) for o in ops + values + blocks}


def test_clone_prints_identically_and_shares_nothing():
    m = parse_module(CLONE_TEXT, "clone.mlir")
    c = m.clone()
    assert str(c) == str(m) and c == m
    assert not (_objects(m) & _objects(c))  # ids of live objects: both modules are alive here
    assert check_use_lists(c) == [] and check_use_lists(m) == []
    add = next(op for op in c.walk() if op.name == "stablehlo.add")
    assert add.location == next(op for op in m.walk() if op.name == "stablehlo.add").location
    assert add.source == next(op for op in m.walk() if op.name == "stablehlo.add").source
    # mutating the clone leaves the original alone
    add.operands[1] = add.operands[0]
    c.operations.remove(c.functions["f"])
    assert str(m) == str(parse_module(CLONE_TEXT))


def _pipeline_checked(module):
    from axle.passes import PassManager
    from axle.passes.pipelines import cpu_pipeline
    seen = []

    def after(name, mod):
        errors = check_use_lists(mod)
        assert not errors, f"after pass '{name}': " + "; ".join(errors[:5])
        seen.append(name)
    PassManager(cpu_pipeline(), after_pass=after).run(module)
    return seen


def test_use_lists_stay_exact_through_the_pipeline_on_a_program():
    m = parse_module(CLONE_TEXT)
    assert check_use_lists(m) == []
    assert "inline" in _pipeline_checked(m)


def _conformance_cases(step):
    if not os.path.isdir(ROOT):
        pytest.skip("../shared/conformance is not beside the project")
    from axle.tools.conformance import collect_cases
    return collect_cases([ROOT])[::step]


def _sweep(cases):
    from axle.ir.text.cursor import ParseError
    from axle.ir.verifier import VerificationError, verify
    checked = 0
    for case in cases:
        try:
            m = parse_module(case.text, case.name if hasattr(case, "name") else None)
            verify(m)
        except (ParseError, VerificationError, ValueError):
            continue  # the cases that test the parser's and the verifier's errors
        assert check_use_lists(m) == [], case.path
        try:
            _pipeline_checked(m)
        except AssertionError:
            raise
        except Exception:
            continue  # a pass refusing a case is other tests' business; the lists were exact up to it
        checked += 1
    return checked


def test_use_lists_stay_exact_through_the_pipeline_on_sampled_conformance_cases():
    cases = _conformance_cases(4)
    assert _sweep(cases) > len(cases) // 2


@pytest.mark.slow
def test_use_lists_stay_exact_through_the_pipeline_on_every_conformance_case():
    cases = _conformance_cases(1)
    assert _sweep(cases) > len(cases) // 2
