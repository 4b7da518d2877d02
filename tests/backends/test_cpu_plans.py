"""The CPU backend's plans as text (like XLA's RunAndFilecheckHloRewrite): fusion plan,
schedule and buffer assignment, computed before emission (codegen/plans/, docs/plans.md),
checked with FileCheck lines; each program is also run against the interpreter, so that
a plan the text promises is one that computes the right values."""
import os

import numpy as np
import pytest

import axle
from axle.backends.cpu import disk_cache
from axle.backends.cpu import executable as cpu_exe
from axle.backends.cpu.compiler import compile_function
from axle.ir import parse_module
from axle.tools.filecheck import CheckFailure, directives, filecheck


def plans_of(text: str) -> str:
    return str(compile_function(parse_module(text), "main").plans)


def check(text: str, checks: str) -> str:
    out = plans_of(text)
    filecheck(out, directives(checks))
    return out


def agrees_with_interpreter(text: str, shapes: list, seed: int = 0) -> None:
    r = np.random.default_rng(seed)
    args = [r.standard_normal(s).astype(np.float32) for s in shapes]
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        got = axle.compile(text)(*args)
        cpu_exe.clear_memory_cache()
    got = got if isinstance(got, (list, tuple)) else [got]
    want = axle.interpret(text, *args)
    want = want if isinstance(want, (list, tuple)) else [want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


CHAIN = """
func.func @main(%x: tensor<128x256xf32>, %y: tensor<128x256xf32>, %z: tensor<128x256xf32>) -> tensor<128x256xf32> {
  %m = stablehlo.multiply %x, %y : tensor<128x256xf32>
  %a = stablehlo.add %m, %z : tensor<128x256xf32>
  %e = stablehlo.exponential %a : tensor<128x256xf32>
  return %e : tensor<128x256xf32>
}
"""


def test_elementwise_chain_is_one_loop_kernel():
    check(CHAIN, """
    // CHECK-LABEL: fusion plan of @main
    // CHECK-NEXT: kernel 0 loop [%m = multiply, %a = add, %e = exponential] -> %e f32[128,256] reads %x, %y, %z
    // CHECK-NOT: kernel 1
    // CHECK-LABEL: buffer assignment: arena 0 bytes at the peak; 0 temporaries
    // CHECK: %e f32[128,256]  result 0  live 0..
    """)
    agrees_with_interpreter(CHAIN, [(128, 256)] * 3)


REDUCE = """
func.func @main(%x: tensor<64x128xf32>, %y: tensor<64x128xf32>) -> tensor<64xf32> {
  %d = stablehlo.subtract %x, %y : tensor<64x128xf32>
  %sq = stablehlo.multiply %d, %d : tensor<64x128xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<64x128xf32>, tensor<f32>) -> tensor<64xf32>
  return %s : tensor<64xf32>
}
"""


def test_reduce_with_elementwise_producers_is_one_input_fusion():
    check(REDUCE, """
    // CHECK: kernel 0 input [%d = subtract, %sq = multiply, %zero = constant, %s = reduce] -> %s f32[64] reads %x, %y
    // CHECK-NOT: kernel 1
    """)
    agrees_with_interpreter(REDUCE, [(64, 128)] * 2)


DOT_EPILOGUE = """
func.func @main(%x: tensor<32x64xf32>, %w: tensor<64x128xf32>, %b: tensor<128xf32>) -> tensor<32x128xf32> {
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<128xf32>) -> tensor<32x128xf32>
  %y = stablehlo.add %d, %bb : tensor<32x128xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<32x128xf32>
  %r = stablehlo.maximum %y, %zero : tensor<32x128xf32>
  return %r : tensor<32x128xf32>
}
"""


def test_dot_with_bias_relu_epilogue_runs_in_the_result_buffer():
    """The library call writes straight into the result; its bias + relu epilogue is one
    loop kernel that overwrites it in place: no temporary at all."""
    check(DOT_EPILOGUE, """
    // CHECK: kernel 0 library [%d = dot_general] -> %d f32[32,128] reads %x, %w
    // CHECK-NEXT: kernel 1 loop [%bb = broadcast_in_dim, %y = add, %zero = constant, %r = maximum] -> %r f32[32,128] reads %b, %d
    // CHECK-LABEL: buffer assignment: arena 0 bytes at the peak; 0 temporaries
    // CHECK: %d f32[32,128]  result 0  live 0..
    // CHECK-NEXT: %r f32[32,128]  result 0 in place of %d  live 1..
    """)
    agrees_with_interpreter(DOT_EPILOGUE, [(32, 64), (64, 128), (128,)])


# %t dies where %u is made, and %u reads it at the index it writes: %u takes %t's buffer
IN_PLACE = """
func.func @main(%x: tensor<48x48xf32>, %y: tensor<48x48xf32>) -> tensor<48xf32> {
  %t = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0] : (tensor<48x48xf32>, tensor<48x48xf32>) -> tensor<48x48xf32>
  %tt = stablehlo.transpose %t, dims = [1, 0] : (tensor<48x48xf32>) -> tensor<48x48xf32>
  %w = stablehlo.dot_general %tt, %y, contracting_dims = [1] x [0] : (tensor<48x48xf32>, tensor<48x48xf32>) -> tensor<48x48xf32>
  %s = stablehlo.sine %w : tensor<48x48xf32>
  %u = stablehlo.add %s, %w : tensor<48x48xf32>
  %v = stablehlo.dot_general %u, %u, contracting_dims = [1] x [0] : (tensor<48x48xf32>, tensor<48x48xf32>) -> tensor<48x48xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%v init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<48x48xf32>, tensor<f32>) -> tensor<48xf32>
  return %r : tensor<48xf32>
}
"""


def test_dead_temporary_is_reused_in_place():
    out = check(IN_PLACE, """
    // CHECK: kernel 3 loop [%s = sine, %u = add] -> %u f32[48,48] reads %w
    // CHECK-LABEL: buffer assignment:
    // CHECK: %w f32[48,48]  9216 B  arena +[[OFF:[0-9]+]]
    // CHECK: %u f32[48,48]  9216 B  arena +{{[0-9]+}} in place of %w
    """.replace("[[OFF:[0-9]+]]", "{{[0-9]+}}"))
    w = next(line for line in out.splitlines() if line.strip().startswith("%w "))
    u = next(line for line in out.splitlines() if line.strip().startswith("%u "))
    assert w.split("arena +")[1].split()[0] == u.split("arena +")[1].split()[0]  # the same block
    agrees_with_interpreter(IN_PLACE, [(48, 48)] * 2)


TWO_BRANCHES = """
func.func @main(%x: tensor<64x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<64x256xf32>) -> (tensor<256xf32>, tensor<256xf32>) {
  %a = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  %b = stablehlo.dot_general %x, %w2, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %ta = stablehlo.tanh %a : tensor<64x256xf32>
  %c = stablehlo.reduce(%ta init: %z) applies stablehlo.add across dimensions = [0] : (tensor<64x256xf32>, tensor<f32>) -> tensor<256xf32>
  %tb = stablehlo.tanh %b : tensor<64x256xf32>
  %d = stablehlo.reduce(%tb init: %z) applies stablehlo.add across dimensions = [0] : (tensor<64x256xf32>, tensor<f32>) -> tensor<256xf32>
  return %c, %d : tensor<256xf32>, tensor<256xf32>
}
"""


def test_schedule_runs_each_reduction_after_its_dot_to_lower_peak_memory():
    check(TWO_BRANCHES, """
    // CHECK-LABEL: schedule of @main: 4 kernels, reordered for peak memory: 131072 -> 65536 bytes
    // CHECK-NEXT: 0 kernel 0 %a = dot_general (frees 0, allocates 65536)
    // CHECK-NEXT: 1 kernel 1 %c = reduce (frees 65536, allocates 0)
    // CHECK-NEXT: 2 kernel 2 %b = dot_general (frees 0, allocates 65536)
    // CHECK-NEXT: 3 kernel 3 %d = reduce (frees 65536, allocates 0)
    // CHECK-LABEL: buffer assignment: arena 65536 bytes at the peak; 2 temporaries, 131072 bytes if none shared
    // CHECK: %a f32[64,256]  65536 B  arena +0  live 0..1
    // CHECK: %b f32[64,256]  65536 B  arena +0  live 2..3
    """)
    agrees_with_interpreter(TWO_BRANCHES, [(64, 64), (64, 256), (64, 256)])


SOFTMAX = """
func.func @main(%x: tensor<32x100xf32>) -> tensor<32x100xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<32x100xf32>, tensor<f32>) -> tensor<32xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<32xf32>) -> tensor<32x100xf32>
  %d = stablehlo.subtract %x, %mb : tensor<32x100xf32>
  %e = stablehlo.exponential %d : tensor<32x100xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<32x100xf32>, tensor<f32>) -> tensor<32xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<32xf32>) -> tensor<32x100xf32>
  %y = stablehlo.divide %e, %sb : tensor<32x100xf32>
  return %y : tensor<32x100xf32>
}
"""


def test_softmax_is_one_row_fusion():
    check(SOFTMAX, """
    // CHECK: kernel 0 row [{{.*}}%m = reduce, {{.*}}%s = reduce, {{.*}}%y = divide] -> %y f32[32,100] reads %x
    // CHECK-SAME: rows over 1 dim(s), per row %m, %s; keeps %e in the result row
    // CHECK-NOT: kernel 1
    // CHECK: arena 0 bytes at the peak
    """)
    agrees_with_interpreter(SOFTMAX, [(32, 100)])


LOOP = """
func.func @main(%x: tensor<16xf32>, %n: tensor<i32>) -> tensor<16xf32> {
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %i0, %acc = %x) : tensor<i32>, tensor<16xf32>
    cond {
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %t = stablehlo.tanh %acc : tensor<16xf32>
      %a = stablehlo.add %acc, %t : tensor<16xf32>
      stablehlo.return %i1, %a : tensor<i32>, tensor<16xf32>
    }
  return %r#1 : tensor<16xf32>
}
"""


def test_control_flow_bodies_have_plans_of_their_own():
    out = check(LOOP, """
    // CHECK: kernel 0 control [%i0 = constant, %r#0 = while] -> %r#0 i32[], %r#1 f32[16] reads %x, %n
    // CHECK-NEXT: kernel 1 loop [%c = compare]
    // CHECK-NEXT: kernel 2 loop [%one = constant, %i1 = add]
    // CHECK-NEXT: kernel 3 loop [%t = tanh, %a = add] -> %a f32[16]
    """)
    lines = out.splitlines()
    assert lines[1].startswith("kernel 0") and all(x.startswith("  kernel ") for x in lines[2:5])
    r = np.random.default_rng(3)
    x = r.standard_normal(16).astype(np.float32)
    n = np.array(5, np.int32)
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        got = axle.compile(LOOP)(x, n)
    np.testing.assert_allclose(got, axle.interpret(LOOP, x, n), rtol=1e-5, atol=1e-6)


def test_pooled_convolution_has_no_buffer():
    from test_cpu_conv_gemm import pooled_text
    text, shapes, _ = pooled_text(2, (12, 10), 3, 16, 3, (2, 2), (2, 2))
    check(text, """
    // CHECK: kernel 0 pooled-convolution [%c = convolution, {{.*}}%p = reduce_window] -> %p f32[2,6,5,16]
    // CHECK-SAME: computes %c a few rows at a time
    // CHECK-NOT: kernel 1
    // CHECK-LABEL: buffer assignment:
    // CHECK-NOT: %c f32
    """)


def test_a_wrong_plan_fails_the_check():
    """The checks above can fail: the same chain is not two kernels."""
    with pytest.raises(CheckFailure):
        check(CHAIN, "// CHECK: kernel 1 loop")


def test_dump_to_writes_the_plans_beside_the_llvm_module(tmp_path, monkeypatch):
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        axle.compile(DOT_EPILOGUE, dump_to=str(tmp_path / "opt"))
        cpu_exe.clear_memory_cache()
        monkeypatch.setenv("AXLE_FLAGS", f"--dump_to={tmp_path / 'flag'}")
        axle.compile(TWO_BRANCHES)
        cpu_exe.clear_memory_cache()
    files = sorted(os.listdir(tmp_path / "opt"))
    assert "000.main.cpu.ll" in files and "000.main.cpu.plans.txt" in files, files
    text = (tmp_path / "opt" / "000.main.cpu.plans.txt").read_text(encoding="utf-8")
    filecheck(text, directives("""
    // CHECK-LABEL: fusion plan of @main
    // CHECK: kernel 0 library [%d = dot_general]
    // CHECK-LABEL: schedule of @main: 2 kernels
    // CHECK-LABEL: buffer assignment:
    """))
    flagged = (tmp_path / "flag" / "000.main.cpu.plans.txt").read_text(encoding="utf-8")
    assert "reordered for peak memory" in flagged


def test_axle_compile_emits_the_plans(tmp_path):
    from axle.tools.compile_cmd import main
    src = tmp_path / "m.mlir"
    src.write_text(TWO_BRANCHES)
    out = tmp_path / "plans.txt"
    assert main([str(src), "--emit", "plans", "-o", str(out)]) == 0
    filecheck(out.read_text(encoding="utf-8"), directives("""
    // CHECK-LABEL: fusion plan of @main
    // CHECK: kernel 3 input [%z = constant, %tb = tanh, %d = reduce]
    // CHECK-LABEL: schedule of @main: 4 kernels, reordered for peak memory
    // CHECK-LABEL: buffer assignment: arena 65536 bytes at the peak
    """))
