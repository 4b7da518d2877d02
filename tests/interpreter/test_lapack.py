"""jaxlib's LAPACK custom calls (lapack_*_ffi) in the interpreter: every jnp.linalg /
jax.scipy.linalg program of the catalog gives jax.jit's results (the full sweep is slow)."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")

from axle.interpreter import InterpreterError  # noqa: E402
from axle.interpreter.evaluator import run_function  # noqa: E402
from axle.interpreter.lapack_plans import is_lapack_target, split_target  # noqa: E402
from axle.ir import parse_module  # noqa: E402
from lapack_helpers import (REPRESENTATIVE, all_variants, assert_matches, bad_input_cases, bad_lowered,  # noqa: E402
                            lowered, variant_id)


def _run(v):
    low, why = lowered(v)
    if low is None:
        pytest.skip(f"JAX does not lower this program: {why}")
    text, args, want = low
    got = run_function(parse_module(text), args)
    assert_matches(got, want, v[1])


@pytest.mark.parametrize("v", REPRESENTATIVE, ids=variant_id)
def test_representative_programs_match_jax(v):
    _run(v)


@pytest.mark.slow
@pytest.mark.parametrize("v", all_variants(), ids=variant_id)
def test_every_program_matches_jax(v):
    _run(v)


def test_target_names():
    assert split_target("lapack_sgetrf_ffi") == ("s", "getrf")
    assert split_target("lapack_zungqr_ffi") == ("z", "orgqr")
    assert split_target("lapack_cheevd_ffi") == ("c", "syevd")
    assert not is_lapack_target("lapack_qgetrf_ffi")
    assert not is_lapack_target("lapack_sgetrf")
    assert not is_lapack_target("xla_ffi_python_cpu_callback")


BAD_NAMES = [n for n, _, _ in bad_input_cases()]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_input_gives_jax_results(name):
    text, a, want = bad_lowered(name)
    got = run_function(parse_module(text), [a])
    assert_matches(got, want, "float32")


def test_unsupported_layout_is_a_clear_error():
    text = """
func.func @main(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[1, 0]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>)
  return %0#0 : tensor<3x3xf32>
}"""
    with pytest.raises(InterpreterError, match="lapack_spotrf_ffi: operand 0 has layout"):
        run_function(parse_module(text), [np.eye(3, dtype=np.float32)])


def test_wrong_signature_is_a_clear_error():
    text = """
func.func @main(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = stablehlo.custom_call @lapack_sgetrf_ffi(%a) : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}"""
    with pytest.raises(InterpreterError, match="takes 1 operand"):
        run_function(parse_module(text), [np.eye(3, dtype=np.float32)])
