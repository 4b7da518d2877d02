"""Every IR-to-IR lowering of the CPU backend is a pass of its pipeline: the module that
--dump_to writes as optimized is what code generation sees (compiling that dump again
with passes=False gives the same LLVM IR), and compiling never changes the caller's module."""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from axle.backends import cpu
from axle.backends.cpu import disk_cache
from axle.backends.cpu.executable import clear_memory_cache
from axle.interpreter.evaluator import run_function
from axle.ir import parse_module, print_module
from axle.tools.replay import normalize

QUANT = "tensor<6x!quant.uniform<i8:f32, 0.1:2>>"
PROGRAMS = {
    "quantized": f"""func.func @main(%x: tensor<6xf32>, %y: tensor<6xf32>) -> tensor<6xf32> {{
  %a = stablehlo.uniform_quantize %x : (tensor<6xf32>) -> {QUANT}
  %b = stablehlo.uniform_quantize %y : (tensor<6xf32>) -> {QUANT}
  %c = stablehlo.add %a, %b : {QUANT}
  %d = stablehlo.uniform_dequantize %c : ({QUANT}) -> tensor<6xf32>
  return %d : tensor<6xf32>
}}""",
    "batch_norm": """func.func @main(%x: tensor<4x3xf32>, %s: tensor<3xf32>, %o: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<4x3xf32> {
  %r = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v) {epsilon = 1.0e-3 : f32, feature_index = 1 : i64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}""",
    "tuple_and_barrier": """func.func @main(%x: tensor<5xf32>, %y: tensor<5xf32>) -> tensor<5xf32> {
  %t = stablehlo.tuple %x, %y : tuple<tensor<5xf32>, tensor<5xf32>>
  %a = stablehlo.get_tuple_element %t[1] : (tuple<tensor<5xf32>, tensor<5xf32>>) -> tensor<5xf32>
  %b:2 = stablehlo.optimization_barrier %a, %x : tensor<5xf32>, tensor<5xf32>
  %c = stablehlo.subtract %b#0, %b#1 : tensor<5xf32>
  return %c : tensor<5xf32>
}""",
    "dynamic_shape_ops": """func.func @main(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %s = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %b = stablehlo.dynamic_broadcast_in_dim %x, %s, dims = [1] : (tensor<3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<3xf32>) -> tensor<i32>
  %f = stablehlo.convert %n : (tensor<i32>) -> tensor<f32>
  %g = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
  %r = stablehlo.multiply %b, %g : tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}""",
    "tokens_outfeed": """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %y = stablehlo.add %x, %x : tensor<4xf32>
  %u = "stablehlo.outfeed"(%y, %t) {outfeed_config = ""} : (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token
  %v = stablehlo.after_all %u : !stablehlo.token
  return %y : tensor<4xf32>
}""",
}
RUNNABLE = ("quantized", "batch_norm", "tuple_and_barrier", "dynamic_shape_ops")


def _args(fn, rng):
    return [rng.uniform(0.5, 2.0, size=t.shape).astype(t.dtype) for t in fn.function_type.inputs]


def _compile_and_dump(module, folder, passes):
    clear_memory_cache()
    with disk_cache.disabled():
        exe = cpu.compile(module, passes=passes, dump_to=str(folder))
    optimized = sorted(glob.glob(os.path.join(folder, "*.optimized.mlir")))
    llvm = sorted(glob.glob(os.path.join(folder, "*.cpu.ll")))
    assert optimized and len(llvm) == 1, os.listdir(folder)
    with open(optimized[-1], encoding="utf-8") as fh:
        opt = fh.read()
    with open(llvm[0], encoding="utf-8") as fh:
        ir = normalize(fh.read())
    return exe, opt, ir


@pytest.mark.parametrize("passes", [True, False])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_dumped_module_is_what_codegen_sees(name, passes, tmp_path):
    module = parse_module(PROGRAMS[name])
    exe, optimized, ir = _compile_and_dump(module, tmp_path / "first", passes)
    # what the lowering passes exist for is gone from the dump ...
    lowered = parse_module(optimized)
    names = {op.name for op in lowered.walk()}
    assert not names & {"stablehlo.batch_norm_inference", "stablehlo.tuple", "stablehlo.get_tuple_element",
                        "stablehlo.optimization_barrier", "stablehlo.dynamic_broadcast_in_dim",
                        "stablehlo.get_dimension_size", "stablehlo.outfeed", "stablehlo.uniform_quantize",
                        "stablehlo.create_token", "stablehlo.after_all"}, names
    assert "quant" not in optimized
    if name == "tokens_outfeed":
        assert "cpu.host_effect" in names
    # ... and compiling the dump without passes generates the same code
    _, again, ir2 = _compile_and_dump(lowered, tmp_path / "second", False)
    assert ir2 == ir
    assert print_module(parse_module(again), canonical=True) == print_module(lowered, canonical=True)
    if name in RUNNABLE:
        args = _args(module.function("main"), np.random.default_rng(0))
        want = run_function(parse_module(PROGRAMS[name]), args)
        got = exe.execute(args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_a_refused_quantized_op_names_the_reason():
    from axle.errors import Unsupported
    text = """func.func @main(%a: tensor<2x2xi32>, %b: tensor<2x2xi32>) -> tensor<2x2xi32> {
  %qa = stablehlo.bitcast_convert %a : (tensor<2x2xi32>) -> tensor<2x2x!quant.uniform<i32:f32, 0.5>>
  %qb = stablehlo.bitcast_convert %b : (tensor<2x2xi32>) -> tensor<2x2x!quant.uniform<i32:f32, 0.5>>
  %r = stablehlo.dot_general %qa, %qb, contracting_dims = [1] x [0] : (tensor<2x2x!quant.uniform<i32:f32, 0.5>>, tensor<2x2x!quant.uniform<i32:f32, 0.5>>) -> tensor<2x2x!quant.uniform<i32:f32, 0.25>>
  %o = stablehlo.bitcast_convert %r : (tensor<2x2x!quant.uniform<i32:f32, 0.25>>) -> tensor<2x2xi32>
  return %o : tensor<2x2xi32>
}"""
    for passes in (True, False):
        clear_memory_cache()
        with disk_cache.disabled(), pytest.raises(Unsupported, match="quantized .*dot_general.*cpu backend: "):
            cpu.compile(parse_module(text), passes=passes)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiling_leaves_the_callers_module_as_it_was(name):
    module = parse_module(PROGRAMS[name])
    before = print_module(module)
    for passes in (True, False):
        clear_memory_cache()
        with disk_cache.disabled():
            exe = cpu.compile(module, passes=passes)
        assert print_module(module) == before
        assert exe.source_module is module and exe.module is not module
    if name in RUNNABLE:  # the interpreter still runs the caller's module
        args = _args(module.function("main"), np.random.default_rng(1))
        want = run_function(parse_module(PROGRAMS[name]), args)
        got = run_function(module, args)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_allclose(exe.execute(args)[0], want[0], rtol=1e-5, atol=1e-6)


def test_a_cache_hit_makes_no_copy():
    module = parse_module(PROGRAMS["batch_norm"])
    clear_memory_cache()
    with disk_cache.disabled():
        first = cpu.compile(module)
        second = cpu.compile(module)
    assert first.module is not module and second.module is module  # the program came from the cache
    assert print_module(module) == print_module(parse_module(PROGRAMS["batch_norm"]))


@pytest.mark.parametrize("passes", [True, False])
def test_dynamic_programs_are_lowered_after_specializing(passes):
    """Quantized ops on dynamic shapes are lowered once the shapes are known (the lowering
    part runs again on each specialized module), not refused by the pipeline."""
    q = "tensor<?x!quant.uniform<i8:f32, 0.1:2>>"
    text = f"""func.func @main(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> {{
  %a = stablehlo.uniform_quantize %x : (tensor<?xf32>) -> {q}
  %b = stablehlo.uniform_quantize %y : (tensor<?xf32>) -> {q}
  %c = stablehlo.add %a, %b : {q}
  %d = stablehlo.uniform_dequantize %c : ({q}) -> tensor<?xf32>
  return %d : tensor<?xf32>
}}"""
    clear_memory_cache()
    with disk_cache.disabled():
        exe = cpu.compile(parse_module(text), passes=passes)
        for n in (3, 7):
            x, y = np.linspace(-1, 1, n, dtype=np.float32), np.linspace(0, 2, n, dtype=np.float32)
            np.testing.assert_array_equal(exe.execute([x, y])[0], run_function(parse_module(text), [x, y])[0])


def test_a_static_form_that_breaks_the_spec_is_left_for_specialization():
    """static-shape-ops keeps an op whose static form shape inference refuses (the pass
    changes nothing; the backend or refine-shapes reports it)."""
    from axle.passes import PassManager, make_pass
    text = """func.func @main(%x: tensor<1x8x4xf32>, %w: tensor<2x4x4xf32>) -> tensor<1x4x4xf32> {
  %p = stablehlo.constant dense<0> : tensor<1x2xi32>
  %r = "stablehlo.dynamic_conv"(%x, %w, %p) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>, feature_group_count = 1 : i64, window_strides = array<i64: 2, 2>} : (tensor<1x8x4xf32>, tensor<2x4x4xf32>, tensor<1x2xi32>) -> tensor<1x4x4xf32>
  return %r : tensor<1x4x4xf32>
}"""
    m = parse_module(text)
    before = print_module(m)
    PassManager([make_pass("static-shape-ops")]).run(m)
    assert print_module(m) == before
