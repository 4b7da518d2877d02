"""The op table's traits answer what passes used to ask by lists of names, and axle/ir
imports nothing of axle above it (imports inside functions included)."""
import ast
import os

from axle.ir.core import Operation
from axle.ir.ops import (COLLECTIVE, COMMUTATIVE, ELEMENTWISE, HOST_IO, ISOLATED, MOVEMENT, NO_FOLD, OPAQUE_EFFECTS,
                         SIDE_EFFECT, SYMBOL, TERMINATOR, has_trait, lookup, names_with)
from axle.ir.types import TensorType, f32
from axle.passes.rewrite import is_pure

IR = os.path.join(os.path.dirname(__file__), "..", "..", "axle", "ir")


def test_traits_cover_the_families_passes_asked_by_name():
    sh = "stablehlo."
    assert has_trait(sh + "convert", ELEMENTWISE) and has_trait("chlo.erf", ELEMENTWISE)
    assert not has_trait(sh + "bitcast_convert", ELEMENTWISE)
    assert {sh + n for n in ("reshape", "transpose", "broadcast_in_dim", "slice", "pad", "concatenate",
                             "reverse", "gather", "dynamic_slice")} <= names_with(MOVEMENT)
    assert not names_with(MOVEMENT) & names_with(ELEMENTWISE)
    assert names_with(HOST_IO) == {sh + n for n in ("infeed", "outfeed", "send", "recv")}
    assert names_with(HOST_IO) <= names_with(SIDE_EFFECT)
    assert names_with(COLLECTIVE) <= names_with(SIDE_EFFECT)
    assert has_trait(sh + "add", COMMUTATIVE) and not has_trait(sh + "subtract", COMMUTATIVE)
    assert names_with(ISOLATED) == {"func.func", "sdy.manual_computation"}
    assert "func.func" in names_with(SYMBOL)
    assert {"func.return", sh + "return", "sdy.return"} == names_with(TERMINATOR)
    assert has_trait(Operation(sh + "while"), OPAQUE_EFFECTS) and not has_trait("no.such_op", ELEMENTWISE)
    assert lookup(sh + "dynamic_pad").shape_operands == (2, 3, 4) and lookup(sh + "add").shape_operands == ()


def test_is_pure_reads_the_traits():
    t = TensorType((2,), f32)
    # the ops is_pure refused by name before: calls, loops, conditionals, composites, rng
    for name in ["func.call", "stablehlo.while", "stablehlo.if", "stablehlo.case", "stablehlo.composite",
                 "stablehlo.rng", "stablehlo.rng_bit_generator", "interpreter.run_parallel"]:
        assert has_trait(name, OPAQUE_EFFECTS) and not is_pure(Operation(name, [], [t]))
    for name in names_with(SIDE_EFFECT) | names_with(TERMINATOR) | {"func.func"}:
        assert not is_pure(Operation(name, [], [t]))
    assert is_pure(Operation("stablehlo.add", [], [t])) and is_pure(Operation("stablehlo.reshape", [], [t]))


def test_no_fold_is_what_constant_folding_never_folds():
    assert names_with(NO_FOLD) == {"stablehlo.constant", "stablehlo.rng", "stablehlo.rng_bit_generator",
                                   "stablehlo.custom_call", "stablehlo.infeed", "stablehlo.optimization_barrier",
                                   "interpreter.probe", "check.eq", "stablehlo.replica_id", "stablehlo.partition_id"}


def _axle_imports(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in ast.walk(tree):  # module level and inside functions
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] if node.module != "axle" else [f"axle.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for n in names:
            if n == "axle" or n.startswith("axle."):
                yield n, node.lineno


def test_the_ir_imports_nothing_above_it():
    allowed = ("axle.ir", "axle.errors", "axle.flags")
    bad = []
    for root, _, files in os.walk(IR):
        for f in files:
            if f.endswith(".py"):
                p = os.path.join(root, f)
                bad += [f"{os.path.relpath(p, IR)}:{line}: {n}" for n, line in _axle_imports(p)
                        if not any(n == a or n.startswith(a + ".") for a in allowed)]
    assert not bad, bad


def test_no_file_of_the_ir_is_over_800_lines():
    for root, _, files in os.walk(IR):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(root, f), encoding="utf-8") as fh:
                    assert sum(1 for _ in fh) <= 800, f
