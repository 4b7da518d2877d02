"""LLVM work of one program spread over threads (llvm_split.py, llvm_env.compile_to_object):
the split keeps what the inliner merges together, defines each function and global once,
and the program it links gives the results of the module compiled whole."""
import ctypes
import re
import threading

import llvmlite.binding as llvm
import numpy as np
import pytest

import axle
from axle.backends.cpu import disk_cache, llvm_env
from axle.backends.cpu import executable as cpu_exe
from axle.codegen.llvm_split import SMALL_CONSTANT, split_module

BIG = ", ".join(f"float {float(i)}" for i in range(SMALL_CONSTANT // 8))
N_BIG = SMALL_CONSTANT // 8
HAND_WRITTEN = f'''; ModuleID = "t"
target triple = "unknown-unknown-unknown"
target datalayout = ""

@"small" = internal constant [2 x float] [float 1.5, float 2.5]
@"big" = internal constant [{N_BIG} x float] [{BIG}]
declare float @"llvm.sqrt.f32"(float %".1")

define void @"entry"(float* %".1")
{{
entry:
  call void @"k0"(float* %".1")
  call void @"k1"(float* %".1")
  call void @"k2"(float* %".1")
  %"f" = bitcast void (float*)* @"k2" to i8*
  ret void
}}

define internal float @"helper"(float %".1")
{{
entry:
  %".2" = call float @"llvm.sqrt.f32"(float %".1")
  ret float %".2"
}}

define internal void @"k0"(float* %".1") noinline nounwind
{{
entry:
  %".2" = getelementptr inbounds [2 x float], [2 x float]* @"small", i64 0, i64 1
  %".3" = load float, float* %".2"
  %".4" = call float @"helper"(float %".3")
  store float %".4", float* %".1"
  ret void
}}

define internal void @"k1"(float* %".1") noinline nounwind
{{
entry:
  %".2" = getelementptr inbounds [{N_BIG} x float], [{N_BIG} x float]* @"big", i64 0, i64 5
  %".3" = load float, float* %".2"
  %".4" = getelementptr inbounds [2 x float], [2 x float]* @"small", i64 0, i64 0
  %".5" = load float, float* %".4"
  %".6" = fadd float %".3", %".5"
  %".7" = getelementptr inbounds float, float* %".1", i64 1
  store float %".6", float* %".7"
  ret void
}}

define internal void @"k2"(float* %".1") noinline nounwind
{{
entry:
  %".2" = getelementptr inbounds [{N_BIG} x float], [{N_BIG} x float]* @"big", i64 0, i64 7
  %".3" = load float, float* %".2"
  %".4" = getelementptr inbounds float, float* %".1", i64 2
  store float %".3", float* %".4"
  ret void
}}
'''


def _defined(part: str) -> list:
    return re.findall(r'^define [^@]*@"([^"]+)"', part, re.M)


def test_split_groups_callers_with_inlinable_callees_and_users_of_a_big_global():
    parts = split_module(HAND_WRITTEN, 2)
    assert parts is not None and len(parts) == 2
    where = {name: k for k, part in enumerate(parts) for name in _defined(part)}
    assert sorted(where) == ["entry", "helper", "k0", "k1", "k2"]  # each defined once
    assert sum(len(_defined(p)) for p in parts) == 5
    assert where["helper"] == where["k0"]  # an inlinable callee stays with its caller
    assert where["k1"] == where["k2"]  # both read the big constant: one definition of it
    assert sum('@"big" = internal constant' in p for p in parts) == 1
    # the small constant is copied into each part that reads it; k1/k2 named from another
    # part are external and declared there
    assert all(p.count('@"small" = internal constant') == 1 for p in parts
               if re.search(r'@"(k0|k1)"\(float', p))
    for part in parts:
        mod = llvm.parse_assembly(part)  # each part is a module LLVM takes
        mod.verify()
    moved = [k for k in ("k0", "k1", "k2") if where[k] != where["entry"]]
    assert moved  # the kernels do not all stay with the entry
    for k in moved:  # external where defined, declared where called
        assert f'define void @"{k}"' in parts[where[k]]
        assert f'declare void @"{k}"(float* %".1")' in parts[where["entry"]]


def test_split_declines_small_or_unknown_modules():
    assert split_module(HAND_WRITTEN, 1) is None
    one = HAND_WRITTEN.split('define internal float @"helper"')[0]
    one = one.replace('  call void @"k0"(float* %".1")\n  call void @"k1"(float* %".1")\n'
                      '  call void @"k2"(float* %".1")\n  %"f" = bitcast void (float*)* @"k2" to i8*\n', "")
    assert split_module(one, 2) is None  # one function: nothing to spread
    assert split_module(HAND_WRITTEN + "module asm \"nop\"\n", 2) is None  # text it does not know


def _run_hand_written(monkeypatch, threads: int) -> tuple:
    monkeypatch.setattr(llvm_env, "SPLIT_MIN_CHARS", 0)
    monkeypatch.setenv("AXLE_FLAGS", f"--cpu_compile_threads={threads}")
    _, obj = llvm_env.compile_to_object(HAND_WRITTEN)
    handle, addrs = llvm_env.link_object(obj, ["entry"])
    out = (ctypes.c_float * 3)()
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addrs["entry"])(ctypes.addressof(out))
    return len(llvm_env.object_images(obj)), list(out)


def test_split_module_links_and_computes_what_the_whole_one_does(monkeypatch):
    n_whole, whole = _run_hand_written(monkeypatch, 1)
    n_split, split = _run_hand_written(monkeypatch, 2)
    assert (n_whole, n_split) == (1, 2)
    assert whole == split == [pytest.approx(2.5 ** 0.5), 6.5, 7.0]


def test_packed_objects_round_trip_and_bad_packing_is_refused():
    objs = [b"\x7fELF-one", b"\x7fELF-second"]
    packed = llvm_env.pack_objects(objs)
    assert llvm_env.object_images(packed) == objs
    assert llvm_env.object_images(b"\x7fELF-plain") == [b"\x7fELF-plain"]
    with pytest.raises(ValueError, match="packed object code"):
        llvm_env.object_images(packed[:-1])
    with pytest.raises(ValueError, match="packed object code"):
        llvm_env.object_images(packed[:10])


PROGRAM = """func.func @main(%x: tensor<4x18x18x8xf32>, %w: tensor<3x3x8x16xf32>, %v: tensor<16x32xf32>) -> (tensor<4x32xf32>, tensor<4x16x16x16xf32>) {
  %c = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
       window = {stride = [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]}
       {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<4x18x18x8xf32>, tensor<3x3x8x16xf32>) -> tensor<4x16x16x16xf32>
  %t = stablehlo.tanh %c : tensor<4x16x16x16xf32>
  %z = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %m = stablehlo.reduce(%t init: %z) applies stablehlo.maximum across dimensions = [1, 2] : (tensor<4x16x16x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %d = stablehlo.dot_general %m, %v, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %e = stablehlo.exponential %d : tensor<4x32xf32>
  return %e, %t : tensor<4x32xf32>, tensor<4x16x16x16xf32>
}"""


def _args(seed=0):
    r = np.random.default_rng(seed)
    return [r.standard_normal(s).astype(np.float32) * 0.3 for s in [(4, 18, 18, 8), (3, 3, 8, 16), (16, 32)]]


def _compile(monkeypatch, threads: int):
    monkeypatch.setattr(llvm_env, "SPLIT_MIN_CHARS", 0)
    monkeypatch.setenv("AXLE_FLAGS", f"--cpu_compile_threads={threads}")
    with disk_cache.disabled():
        cpu_exe.clear_memory_cache()
        exe = axle.compile(PROGRAM)
        cpu_exe.clear_memory_cache()
    return exe


def test_program_compiled_on_threads_equals_whole_module_bit_for_bit(monkeypatch):
    whole = _compile(monkeypatch, 1)
    split = _compile(monkeypatch, 2)
    assert len(llvm_env.object_images(whole._static.object_code)) == 1
    assert len(llvm_env.object_images(split._static.object_code)) == 2
    args = _args()
    got_whole, got_split = whole(*args), split(*args)
    for a, b in zip(got_whole, got_split):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    ref = axle.compile(PROGRAM, backend="interpreter")(*args)
    for a, b in zip(got_split, ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)


def test_split_program_loads_from_the_disk_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(llvm_env, "SPLIT_MIN_CHARS", 0)
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_compile_threads=2")
    args = _args(1)
    with disk_cache.using(str(tmp_path)):
        cpu_exe.clear_memory_cache()
        first = axle.compile(PROGRAM)
        cpu_exe.clear_memory_cache()
        again = axle.compile(PROGRAM)
        cpu_exe.clear_memory_cache()
    assert again.loaded_from_disk and len(llvm_env.object_images(again._static.object_code)) == 2
    for a, b in zip(first(*args), again(*args)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_programs_compiled_on_several_threads_at_once(monkeypatch):
    monkeypatch.setattr(llvm_env, "SPLIT_MIN_CHARS", 0)
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_compile_threads=2")
    texts = [PROGRAM.replace("stablehlo.tanh", op) for op in
             ("stablehlo.tanh", "stablehlo.logistic", "stablehlo.sine", "stablehlo.cosine")]
    results: dict = {}

    def work(k):
        try:
            with disk_cache.disabled():
                results[k] = axle.compile(texts[k])(*_args(k))
        except BaseException as e:  # noqa: BLE001 - reported below
            results[k] = e

    cpu_exe.clear_memory_cache()
    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cpu_exe.clear_memory_cache()
    for k, text in enumerate(texts):
        assert not isinstance(results[k], BaseException), results[k]
        ref = axle.compile(text, backend="interpreter")(*_args(k))
        for a, b in zip(results[k], ref):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)



def test_compiles_on_several_threads_leave_the_locale_alone(monkeypatch):
    """llvmlite's module printer sets the process's locale to "C" and back; two threads
    printing at once used to leave it at "C" (after which open() read text as ASCII)."""
    import locale
    monkeypatch.setattr(llvm_env, "SPLIT_MIN_CHARS", 0)
    monkeypatch.setenv("AXLE_FLAGS", "--cpu_compile_threads=4")
    before = locale.setlocale(locale.LC_CTYPE)
    for _ in range(200):
        llvm_env.compile_to_object(HAND_WRITTEN, 0)
        assert locale.setlocale(locale.LC_CTYPE) == before
