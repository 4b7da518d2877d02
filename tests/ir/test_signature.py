"""Argument checking lives in the IR layer (axle/ir/signature.py): the interpreter and the
CPU executable raise the same ArgumentError, and the executable imports no interpreter."""
from __future__ import annotations

import ast
import os

import numpy as np
import pytest

import axle
from axle.errors import ArgumentError
from axle.interpreter.evaluator import run_function
from axle.ir import parse_module
from axle.ir.signature import check_arguments

TEXT = """func.func @main(%x: tensor<2x3xf32>, %n: tensor<i32>) -> tensor<2x3xf32> {
  %c = stablehlo.convert %n : (tensor<i32>) -> tensor<f32>
  %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
  %y = stablehlo.add %x, %b : tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}"""

BAD = [
    ([np.zeros((2, 3), np.float32)], "takes 2 argument"),
    ([np.zeros((2, 3), np.float64), np.int32(1)], "argument 0 of @main: expected dtype float32"),
    ([np.zeros((3, 2), np.float32), np.int32(1)], r"argument 0 of @main: expected shape f32\[2,3\]"),
    ([np.zeros((2, 3), np.float32), "one"], "argument 1 of @main: expected an array"),
]


def test_converts_what_may_be_converted():
    fn = parse_module(TEXT).function("main")
    out = check_arguments(fn, [[[1, 2, 3], [4, 5, 6]], 7])
    assert out[0].dtype == np.float32 and out[0].shape == (2, 3) and out[1].dtype == np.int32


@pytest.mark.parametrize("args,message", BAD)
def test_interpreter_and_cpu_raise_the_same_error(args, message):
    m = parse_module(TEXT)
    with pytest.raises(ArgumentError, match=message):
        check_arguments(m.function("main"), args)
    with pytest.raises(ArgumentError, match=message):
        run_function(m, args)
    exe = axle.compile(TEXT, backend="cpu")
    with pytest.raises(ArgumentError, match=message):
        exe(*args)
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(exe(x.tolist(), 2), x + 2)  # the checking path converts


def test_the_cpu_executable_imports_no_interpreter():
    import axle.backends.cpu.executable as ex
    tree = ast.parse(open(ex.__file__, encoding="utf-8").read())
    mods = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    mods += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in mods if m and m.startswith("axle.interpreter")]
    assert os.path.basename(check_arguments.__code__.co_filename) == "signature.py"
