"""Round trip: parse -> print -> parse gives an equal module, and printing is stable.

The full sweep over ../shared/conformance is marked slow (run with `-m slow`); the fast
test covers all of interpret/ and every 10th file of testdata/ (dynamic and quantized
included), and the parse-speed test times the whole tree."""
import glob
import os
import time

import numpy as np
import pytest

from axle.ir import parse_module, print_module, split_cases
from axle.ir.types import QuantizedType, TensorType
from axle.tools.roundtrip import mlir_files, roundtrip_case

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "conformance")
needs_suite = pytest.mark.skipif(not os.path.isdir(ROOT), reason="../shared/conformance is not beside the project")


def _check(files):
    bad = []
    for f in files:
        for line, case in split_cases(open(f, encoding="utf-8").read()):
            why = roundtrip_case(case, f)
            if why:
                bad.append(f"{f}:{line}: {why}")
    assert not bad, "\n".join(bad[:20])


@needs_suite
def test_roundtrip_sample_of_the_conformance_suites():
    files = mlir_files([os.path.join(ROOT, "interpret")]) + mlir_files([os.path.join(ROOT, "testdata")])[::10]
    assert len(files) > 250
    _check(files)


@needs_suite
@pytest.mark.slow
def test_roundtrip_all_of_the_conformance_suites():
    _check(mlir_files([ROOT]))


@needs_suite
def test_parse_speed_of_the_whole_tree():
    files = mlir_files([ROOT])
    t0 = time.perf_counter()
    n = 0
    for f in files:
        for _, case in split_cases(open(f, encoding="utf-8").read()):
            parse_module(case, f)
            n += 1
    seconds = time.perf_counter() - t0
    print(f"parsed {n} cases of {len(files)} files in {seconds:.1f}s")
    assert n > 2300


CONSTRUCTS = r'''
#loc1 = loc("model.py":10:3)
module @m attributes {mhlo.num_replicas = 1 : i32} {
  func.func public @main(%a: tensor<2x?xf32, #stablehlo.bounds<?, 8>> {jax.arg_info = "a"} loc("a.py":1:1),
                         %q: tensor<4x!quant.uniform<i8<-127:127>:f32:0, {0.5:1, 0.25:-2, 1.0:0, 2.0:3}>>,
                         %t: !stablehlo.token, %u: tuple<tensor<i2>, tensor<ui2>>)
      -> (tensor<3xf8E4M3FN> {jax.result_info = "r"}, tensor<2xcomplex<f64>>, tensor<0x3xf4E2M1FN>, tensor<3xi1>) {
    %0 = stablehlo.constant dense<[1.0, 0x7F, -448.0]> : tensor<3xf8E4M3FN> loc(#loc1)
    %1 = stablehlo.constant dense<[(1.5, -2.0), (0x7FF8000000000000, 0xFFF0000000000000)]> : tensor<2xcomplex<f64>>
    %2 = stablehlo.constant dense<> : tensor<0x3xf4E2M1FN>
    %3 = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
    %4:2 = "stablehlo.sort"(%3, %0) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%x: tensor<i1>, %y: tensor<i1>, %z: tensor<f8E4M3FN>, %w: tensor<f8E4M3FN>):
      %c = stablehlo.compare LT, %z, %w, FLOAT : (tensor<f8E4M3FN>, tensor<f8E4M3FN>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) : (tensor<3xi1>, tensor<3xf8E4M3FN>) -> (tensor<3xi1>, tensor<3xf8E4M3FN>) loc(fused["a", "b"])
    %5 = stablehlo.constant dense<"0x0000803F000000400000404000008040"> : tensor<2x2xf32>
    return %4#1, %1, %2, %4#0 : tensor<3xf8E4M3FN>, tensor<2xcomplex<f64>>, tensor<0x3xf4E2M1FN>, tensor<3xi1>
  }
}
'''


def test_constructs_roundtrip_and_mean_what_they_say():
    assert roundtrip_case(CONSTRUCTS, "constructs.mlir") is None
    m = parse_module(CONSTRUCTS, "constructs.mlir")
    fn = m.main
    a, q = fn.function_type.inputs[:2]
    assert a.shape == (2, None) and a.bounds == (None, 8)
    et = q.element_type
    assert isinstance(et, QuantizedType) and et.quantized_dimension == 0
    assert et.scales == (0.5, 0.25, 1.0, 2.0) and et.zero_points == (1, -2, 0, 3)
    assert (et.storage_min, et.storage_max) == (-127, 127)
    ops = fn.body.operations
    f8 = ops[0].attributes["value"].array
    assert np.isnan(float(f8[1])) and float(f8[2]) == -448.0
    assert ops[0].location.text == '"model.py":10:3'
    c = ops[1].attributes["value"].array
    assert c[0] == 1.5 - 2j and np.isnan(c[1].real) and c[1].imag == -np.inf
    assert ops[2].attributes["value"].array.shape == (0, 3)
    assert ops[5].attributes["value"].array.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert len(ops[4].results) == 2
