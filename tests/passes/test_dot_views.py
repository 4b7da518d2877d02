"""dot_views (inside transpose-fold): reshapes that merge dimensions of a dot operand are
folded into the dot. Properties on random dimension numbers (the CPU pipeline keeps the
interpreter's results, and the compiled program matches numpy), the run splitting itself,
and the attention pattern of a decode step (the cache is read in place: no reshape or
transpose of it feeds a dot)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axle.interpreter.evaluator import run_function
from axle.ir import parse_module
from axle.ir.verifier import verify
from axle.passes import PassManager
from axle.passes.dot_views import merge_runs
from axle.passes.pipelines import cpu_pipeline
from tests.passes.test_dot_canonicalize_property import dots


def test_merge_runs():
    assert merge_runs([4, 8, 64, 1024], [32, 64, 1024]) == [[0, 1], [2], [3]]
    assert merge_runs([16, 8, 128, 64], [16384, 1, 64]) == [[0, 1, 2], [], [3]]
    assert merge_runs([4, 1, 8], [32]) == [[0, 1, 2]]
    assert merge_runs([1, 4, 8], [1, 32]) == [[0], [1, 2]]
    assert merge_runs([4, 512], [32, 1, 64]) is None  # a split, not a merge
    assert merge_runs([6, 4], [4, 6]) is None
    assert merge_runs([2, 3, 1], [6]) == [[0, 1, 2]]


def _t(shape, et="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


@settings(max_examples=60, deadline=None)
@given(dots(), st.integers(0, 2**31 - 1))
def test_cpu_pipeline_keeps_dot_results(case, seed):
    text, ls, rs, et = case
    r = np.random.default_rng(seed)
    dt = np.float32 if et == "f32" else np.int32
    args = [r.integers(-5, 5, ls).astype(dt), r.integers(-5, 5, rs).astype(dt)]
    m = parse_module(text)
    verify(m)
    before = run_function(m, args)
    PassManager(cpu_pipeline(), verify_each=True).run(m)
    np.testing.assert_allclose(run_function(m, args)[0], before[0], rtol=1e-6)


ATTENTION = """
func.func @main(%q: tensor<4x8x1x64xf32>, %kc: tensor<4x8x1024x64xf32>, %vc: tensor<4x8x1024x64xf32>)
    -> tensor<4x8x1x64xf32> {
  %s = stablehlo.dot_general %q, %kc, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3]
     : (tensor<4x8x1x64xf32>, tensor<4x8x1024x64xf32>) -> tensor<4x8x1x1024xf32>
  %o = stablehlo.dot_general %s, %vc, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
     : (tensor<4x8x1x1024xf32>, tensor<4x8x1024x64xf32>) -> tensor<4x8x1x64xf32>
  return %o : tensor<4x8x1x64xf32>
}
"""

GROUPED = """
func.func @main(%x: tensor<6x5x4x3xf32>, %y: tensor<30x3x2xf32>) -> tensor<30x4x2xf32> {
  %a = stablehlo.reshape %x : (tensor<6x5x4x3xf32>) -> tensor<30x4x3xf32>
  %d = stablehlo.dot_general %a, %y, batching_dims = [0] x [0], contracting_dims = [2] x [1]
     : (tensor<30x4x3xf32>, tensor<30x3x2xf32>) -> tensor<30x4x2xf32>
  return %d : tensor<30x4x2xf32>
}
"""


@pytest.mark.parametrize("text,shapes,ref", [
    (ATTENTION, [(4, 8, 1, 64), (4, 8, 1024, 64), (4, 8, 1024, 64)],
     lambda q, k, v: np.einsum("bhqk,bhkd->bhqd", np.einsum("bhqd,bhkd->bhqk", q, k), v)),
    (GROUPED, [(6, 5, 4, 3), (30, 3, 2)], lambda x, y: np.einsum("bmk,bkn->bmn", x.reshape(30, 4, 3), y)),
])
def test_operands_read_in_place_and_compiled_results(text, shapes, ref):
    import axle
    r = np.random.default_rng(3)
    args = [r.standard_normal(s).astype(np.float32) for s in shapes]
    m = parse_module(text)
    PassManager(cpu_pipeline(), verify_each=True).run(m)
    from axle.ir.core import Operation
    for op in m.walk():
        if op.name == "stablehlo.dot_general":
            for v in op.operands:
                owner = getattr(v, "owner", None)
                if isinstance(owner, Operation) and owner.name in ("stablehlo.reshape", "stablehlo.transpose"):
                    src = owner.operands[0]
                    # a copy of an argument (the cache, x) would be made for the dot
                    assert isinstance(getattr(src, "owner", None), Operation) or np.prod(src.type.shape) < 300
    exe = axle.compile(text, backend="cpu")
    got = exe.execute(args)[0]
    want = ref(*[a.astype(np.float64) for a in args])
    np.testing.assert_allclose(np.asarray(got), want.reshape(np.asarray(got).shape), rtol=1e-4, atol=1e-4)
    if text is ATTENTION:
        assert exe.program.arena_bytes < 1024 * 64 * 32 * 4  # no copy of a cache


def test_folded_tensordot_leaves_no_reshape_chain():
    """tensordot over two dimensions on each side: once the operands are read in place and
    the result written in its own shape, the reshape to 2-D and back that canonicalization
    put around the dot must be gone (it was a copy of the whole result)."""
    import axle
    from axle.ir import print_module
    text = """func.func @main(%a: tensor<4x3x5x2xf32>, %b: tensor<2x6x3x7xf32>) -> tensor<4x5x6x7xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1, 3] x [2, 0] : (tensor<4x3x5x2xf32>, tensor<2x6x3x7xf32>) -> tensor<4x5x6x7xf32>
  return %0 : tensor<4x5x6x7xf32>
}"""
    m = parse_module(text)
    PassManager(cpu_pipeline()).run(m)
    assert "stablehlo.reshape" not in print_module(m)
    r = np.random.default_rng(3)
    a, b = r.standard_normal((4, 3, 5, 2)).astype(np.float32), r.standard_normal((2, 6, 3, 7)).astype(np.float32)
    got = axle.compile(text, backend="cpu").execute([a, b])[0]
    np.testing.assert_allclose(got, np.tensordot(a, b, axes=([1, 3], [2, 0])), rtol=1e-5, atol=1e-5)
