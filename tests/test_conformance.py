"""The StableHLO conformance suites through the reference interpreter and the CPU backend.

Every case of ../shared/conformance (testdata, testdata/dynamic, testdata/quantized and
interpret, split on `// -----`) must pass through the interpreter and through the CPU
backend; nothing may be skipped silently. Each sweep runs in a couple of processes (the CPU
one compiles ~2400 programs from an empty cache: about a minute and a half on two cores).
"""
import os

import numpy as np
import pytest

from axle.tools.conformance import collect_cases, run_all

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "conformance")
pytestmark = pytest.mark.skipif(not os.path.isdir(ROOT), reason="../shared/conformance is not beside the project")


def test_interpreter_passes_every_conformance_case():
    cases = collect_cases([ROOT])
    assert len(cases) > 2300, "the conformance tree looks incomplete"
    results = run_all(cases, "interpreter", "none", jobs=2, timeout=120, progress=False)
    failed = [f"{r.name}: {r.message}" for r in results if r.status == "failed"]
    skipped = [f"{r.name}: {r.message}" for r in results if r.status == "skipped"]
    assert not failed, f"{len(failed)} failed:\n" + "\n".join(failed[:50])
    assert len(skipped) <= len(results) // 100, "more than 1% skipped:\n" + "\n".join(skipped)


def test_a_failing_check_fails_the_case(tmp_path):
    """The runner must not count a case whose check fails as passed."""
    bad = tmp_path / "bad.mlir"
    bad.write_text("""
func.func @main() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %b = stablehlo.add %a, %a : tensor<2xi32>
  check.expect_eq_const %b, dense<[2, 5]> : tensor<2xi32>
  func.return
}
""")
    results = run_all(collect_cases([str(bad)]), "interpreter", "none", jobs=1, timeout=30, progress=False)
    assert [r.status for r in results] == ["failed"]
    assert "expect_eq_const" in results[0].message or "differ" in results[0].message


def test_default_passes_keep_every_sampled_case_passing():
    """--passes default: inputs become arguments, the pipeline runs, checks run on the host.
    A third of the cases (every third one) keeps CI short; `-m slow` runs them all."""
    cases = collect_cases([ROOT])[::3]
    results = run_all(cases, "interpreter", "default", jobs=2, timeout=120, progress=False)
    failed = [f"{r.name}: {r.message}" for r in results if r.status == "failed"]
    assert not failed, f"{len(failed)} failed:\n" + "\n".join(failed[:50])


def test_cpu_backend_passes_every_case_natively():
    """The whole tree on the CPU backend, compiled from an empty cache: every case passes
    (the dynamic-shape ones compiled at concrete sizes and compared with the interpreter),
    every input arrives as a run-time argument, and no check reads a value the passes
    computed at compile time. Skipped: only what StableHLO itself marks RUN-DISABLED
    (inaccurate) and programs that break the spec once their shapes are static."""
    results = run_all(collect_cases([ROOT]), "cpu", "default", jobs=2, timeout=120, progress=False)
    failed = [f"{r.name}: {r.message}" for r in results if r.status == "failed"]
    assert not failed, f"{len(failed)} failed:\n" + "\n".join(failed[:50])
    skipped = [r for r in results if r.status == "skipped"]
    assert all("RUN-DISABLED" in r.message or "breaks" in r.message for r in skipped), \
        "\n".join(f"{r.name}: {r.message}" for r in skipped)
    assert len(skipped) <= 5, "\n".join(f"{r.name}: {r.message}" for r in skipped)
    passed = [r for r in results if r.status == "passed"]
    folded = [r.name for r in passed if r.how == "compile-time"]
    assert not folded, "answered at compile time:\n" + "\n".join(folded)
    assert all(r.how in ("native", "host-callback") for r in passed)
    assert sum(r.kind == "dynamic" for r in passed) >= 275  # of the 281 dynamic-shape programs
    host = {op for r in passed for op in r.host_ops}
    assert host <= HOST_CALLBACK_OPS, f"unexpected host callbacks: {host - HOST_CALLBACK_OPS}"


# what may run in Python through a host callback: collectives between simulated devices,
# the interpreter's probes and prints, infeed/outfeed, replica and partition ids, and FFT (pocketfft)
HOST_CALLBACK_OPS = {
    "stablehlo.all_gather", "stablehlo.all_reduce", "stablehlo.all_to_all", "stablehlo.collective_broadcast",
    "stablehlo.collective_permute", "stablehlo.collective_reduce", "stablehlo.reduce_scatter",
    "stablehlo.send", "stablehlo.recv", "stablehlo.infeed", "stablehlo.outfeed", "stablehlo.fft",
    "stablehlo.replica_id", "stablehlo.partition_id",  # (they read the simulated device in Python)
    "interpreter.probe", "interpreter.print", "check.expect_serialized_eq",
}


def test_a_case_answered_by_folding_is_counted_as_such(tmp_path):
    """The classification must be able to say "compile-time": a program whose checked value
    is a folded iota (no argument) is one when compiled with the folder."""
    from axle.ir import parse_module
    from axle.passes import PassManager, default_pipeline
    from axle.tools.conformance_cpu import constant_results, how_computed
    text = """
func.func @main(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %0 = stablehlo.iota dim = 0 : tensor<4xi32>
  %1 = stablehlo.add %0, %x : tensor<4xi32>
  return %0, %1 : tensor<4xi32>, tensor<4xi32>
}"""
    m = parse_module(text)
    before = constant_results(m, "main", [0, 1])
    assert before == [False, False]  # an iota is work for the backend
    PassManager(default_pipeline()).run(m)
    assert how_computed(m, "main", [1], [], before[1:])[0] == "native"
    assert how_computed(m, "main", [0, 1], [], before)[0] == "compile-time"


def test_inputs_are_lifted_scalars_and_splats_included():
    from axle.ir import parse_module
    from axle.tools.lifting import lift
    m = parse_module("""
func.func @main() {
  %a = stablehlo.constant dense<2.0> : tensor<f32>
  %b = stablehlo.constant dense<3.0> : tensor<4xf32>
  %c = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s = stablehlo.constant dense<4> : tensor<1xi64>
  %d = stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [] : (tensor<f32>, tensor<1xi64>) -> tensor<4xf32>
  %e = stablehlo.add %d, %b : tensor<4xf32>
  %f = stablehlo.multiply %e, %c : tensor<4xf32>
  check.expect_eq_const %f, dense<[5.0, 10.0, 15.0, 20.0]> : tensor<4xf32>
  check.expect_eq %a, %a : tensor<f32>
  func.return
}""")
    lifted = lift(m, "main")
    fn = lifted.module.function("main")
    consts = [op for op in fn.walk() if op.name == "stablehlo.constant"]
    # only the shape operand of dynamic_broadcast_in_dim stays a constant
    assert [tuple(op.results[0].type.shape) for op in consts] == [(1,)]
    assert [np.asarray(a).tolist() for a in lifted.args] == [2.0, [3.0] * 4, [1.0, 2.0, 3.0, 4.0]]
    # the checked values come back from the program; the expected constant stays on the host
    assert len(fn.function_type.results) == 2
    from axle.interpreter.evaluator import run_function
    lifted.run_checks(run_function(lifted.module, lifted.args, "main"))


@pytest.mark.slow
def test_default_passes_keep_every_case_passing():
    results = run_all(collect_cases([ROOT]), "interpreter", "default", jobs=2, timeout=120, progress=False)
    assert not [r for r in results if r.status == "failed"]
