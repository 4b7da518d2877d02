"""Regressions (issue 21): an elementwise chain of more than ~325 ops was an internal
compiler error (RecursionError in the CPU backend's fused-producer walks); nested while
loops compiled in time quadratic in their depth. Chains of 5000 ops go through every stage;
the CPU backend gives a chain longer than MAX_FUSION_DEPTH fused ops a buffer."""
import time

import numpy as np
import pytest

import axle
from axle.ir import parse_module
from axle.ir.verifier import verify
from axle.passes.pipelines import default_pipeline
from axle.passes.pass_manager import PassManager

UNARY = ["sine", "cosine", "abs", "negate", "tanh"]


def chain(n: int, binary: bool = False) -> str:
    lines = ["func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {", "  %v0 = stablehlo.abs %x : tensor<8xf32>"]
    for i in range(1, n):
        if binary and i % 2:
            lines.append(f"  %v{i} = stablehlo.add %v{i - 1}, %x : tensor<8xf32>")
        else:
            lines.append(f"  %v{i} = stablehlo.{UNARY[i % len(UNARY)]} %v{i - 1} : tensor<8xf32>")
    lines += [f"  return %v{n - 1} : tensor<8xf32>", "}"]
    return "\n".join(lines)


X = np.linspace(-1, 1, 8).astype(np.float32)


def test_5000_op_chain_parse_verify_print_interpret_optimize():
    text = chain(5000, binary=True)
    m = parse_module(text)
    verify(m)
    again = parse_module(str(m))
    want = axle.interpret(again, X)
    PassManager(default_pipeline()).run(again)
    verify(again)
    np.testing.assert_allclose(axle.interpret(again, X), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [400, 1500])
def test_long_chain_compiles_for_the_cpu(n):
    text = chain(n, binary=True)
    np.testing.assert_allclose(axle.compile(text)(X), axle.interpret(parse_module(text), X), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_5000_op_chain_compiles_for_the_cpu():
    text = chain(5000)
    np.testing.assert_allclose(axle.compile(text)(X), axle.interpret(parse_module(text), X), rtol=1e-5, atol=1e-6)
